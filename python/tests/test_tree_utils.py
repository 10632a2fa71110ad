"""ferrox.utils: the tree utilities of mlx.utils (examples from MLX's
docs, edge cases, and random trees against mlx.utils when it is
importable), and the transforms walking trees the same way."""

from typing import NamedTuple

import numpy as np
import pytest

import ferrox as fx
from ferrox.utils import tree_flatten, tree_map, tree_map_with_path, tree_merge, tree_reduce, tree_unflatten

try:
    import mlx.utils as mlx_utils
except ImportError:  # the comparisons with MLX need it
    mlx_utils = None

needs_mlx = pytest.mark.skipif(mlx_utils is None, reason="mlx is not importable")


class Pair(NamedTuple):
    a: object
    b: object


# --------------------------------------------------------------------------
# the examples of MLX's docs
# --------------------------------------------------------------------------


def test_docs_examples():
    assert tree_flatten([[[0]]]) == [("0.0.0", 0)]
    assert tree_flatten([[[0]]], prefix=".hello") == [("hello.0.0.0", 0)]
    assert tree_flatten({"a": {"b": 1}}, destination={}) == {"a.b": 1}
    assert tree_unflatten([("hello.world", 42)]) == {"hello": {"world": 42}}
    assert tree_unflatten({"hello.world": 42}) == {"hello": {"world": 42}}
    assert tree_reduce(lambda acc, x: acc + x, {"a": [1, 2, 3], "b": [4, 5]}, 0) == 15
    paths = []
    tree_map_with_path(lambda path, _: paths.append(path), {"model": [{"w": 0, "b": 1}, {"w": 0, "b": 1}]})
    assert paths == ["model.0.w", "model.0.b", "model.1.w", "model.1.b"]


def test_tree_map_squares_parameters():
    params = {"weight": fx.array([[1.0, -2.0]]), "bias": fx.array([3.0])}
    squared = tree_map(lambda x: x * x, params)
    assert list(squared) == ["weight", "bias"]
    assert squared["weight"].tolist() == [[1.0, 4.0]] and squared["bias"].tolist() == [9.0]


# --------------------------------------------------------------------------
# tree_flatten / tree_unflatten
# --------------------------------------------------------------------------


def test_flatten_leaves_order_and_destination():
    tree = {"a": [1, (2, 3)], "b": {"c": 4}, "d": 5}
    flat = tree_flatten(tree)
    assert flat == [("a.0", 1), ("a.1.0", 2), ("a.1.1", 3), ("b.c", 4), ("d", 5)]
    dest = [("x", 0)]
    assert tree_flatten(tree, destination=dest) is dest and dest[1:] == flat
    assert tree_flatten(tree, prefix="pre") == [("re." + k, v) for k, v in flat]  # first character dropped
    assert tree_flatten(7) == [("", 7)] and tree_flatten([]) == [] and tree_flatten({}) == []
    with pytest.raises(ValueError, match="Destination should be either a list or a dictionary"):
        tree_flatten(tree, destination=(1,))


def test_flatten_is_leaf():
    tree = {"a": [1, 2], "b": (3, [4])}
    flat = tree_flatten(tree, is_leaf=lambda x: isinstance(x, list))
    assert flat == [("a", [1, 2]), ("b.0", 3), ("b.1", [4])]
    assert tree_flatten(tree, is_leaf=lambda x: x is tree) == [("", tree)]


def test_unflatten_lists_dicts_and_gaps():
    assert tree_unflatten([("0", "a"), ("1", "b")]) == ["a", "b"]
    assert tree_unflatten([("2", "c"), ("0", "a")]) == ["a", {}, "c"]  # gaps become {}
    assert tree_unflatten([("01", 1), ("1", 2)]) == {"01": 1, "1": 2}  # not one index twice
    assert tree_unflatten([("a.0", 1), ("a.x", 2)]) == {"a": {"0": 1, "x": 2}}
    assert tree_unflatten([("", 3)]) == 3
    assert tree_unflatten([]) == [] and tree_unflatten({}) == []
    tree = {"layers": [{"w": 1, "b": 2}, {"w": 3}], "head": {"w": 4}}
    assert tree_unflatten(tree_flatten(tree)) == tree
    assert tree_unflatten(tree_flatten(tree, destination={})) == tree


# --------------------------------------------------------------------------
# tree_map / tree_map_with_path
# --------------------------------------------------------------------------


class MyDict(dict):
    pass


def test_tree_map_keeps_container_types():
    tree = [1, (2, Pair(3, [4])), MyDict(k=5)]
    out = tree_map(lambda x: x * 10, tree)
    assert out == [10, (20, Pair(30, [40])), {"k": 50}]
    assert type(out[1]) is tuple and type(out[1][1]) is Pair and type(out[2]) is dict
    assert tree_map(lambda x: -x, 3) == -3
    assert tree_map(lambda x: x, []) == [] and tree_map(lambda x: x, ()) == ()


def test_tree_map_rest_and_is_leaf():
    a = {"x": [1, 2], "y": 3}
    b = {"x": [10, 20], "y": 30, "extra": 0}  # a superset of a
    assert tree_map(lambda u, v: u + v, a, b) == {"x": [11, 22], "y": 33}
    out = tree_map(lambda v: len(v), {"x": [1, 2], "y": [3]}, is_leaf=lambda v: isinstance(v, list))
    assert out == {"x": 2, "y": 1}
    with pytest.raises(KeyError):
        tree_map(lambda u, v: u + v, {"z": 1}, {"y": 2})


def test_tree_map_with_path():
    tree = {"a": [1, Pair(2, 3)], "b": 4}
    out = tree_map_with_path(lambda p, x: f"{p}={x}", tree)
    assert out == {"a": ["a.0=1", Pair("a.1.0=2", "a.1.1=3")], "b": "b=4"}  # tuple paths are indices
    assert tree_map_with_path(lambda p, x: p, [1], path="root") == ["root.0"]
    assert tree_map_with_path(lambda p, x: p, 5) is None
    assert tree_map_with_path(lambda p, x, y: (p, x + y), [1], [2]) == [("0", 3)]
    assert tree_map_with_path(lambda p, x: p, {"a": [1, 2]}, is_leaf=lambda v: isinstance(v, list)) == {"a": "a"}


# --------------------------------------------------------------------------
# tree_reduce / tree_merge
# --------------------------------------------------------------------------


def test_tree_reduce():
    tree = {"a": [1, 2, (3,)], "b": {"c": 4}}
    assert tree_reduce(lambda acc, x: acc + x, tree) == 10  # first leaf starts
    assert tree_reduce(lambda acc, x: acc + [x], tree, []) == [1, 2, 3, 4]
    assert tree_reduce(lambda acc, x: acc + x, []) is None
    assert tree_reduce(lambda acc, x: acc + x, 7, 1) == 8
    counts = tree_reduce(lambda acc, x: acc + len(x), {"a": [1, 2], "b": [3]}, 0, is_leaf=lambda v: isinstance(v, list))
    assert counts == 3
    arrays = {"w": fx.ones((2, 3)), "b": [fx.ones((4,))]}
    assert tree_reduce(lambda acc, p: acc + p.size, arrays, 0) == 10


def test_tree_merge():
    a = {"x": {"p": 1}, "l": [1, {}], "only_a": 2}
    b = {"x": {"q": 2}, "l": [{}, 3], "only_b": ()}
    assert tree_merge(a, b) == {"x": {"p": 1, "q": 2}, "l": [1, 3], "only_a": 2, "only_b": ()}
    assert tree_merge([1, 2], [{}, {}, 3]) == [1, 2, 3]
    assert tree_merge(Pair(1, {}), Pair({}, 2)) == Pair(1, 2)
    assert tree_merge({"a": 1}, {"a": 2}, lambda u, v: u + v) == {"a": 3}
    assert tree_merge([], []) == [] and tree_merge({}, {}) == {}
    assert tree_merge(None, 5) == 5 and tree_merge(5, None) == 5 and tree_merge(5, {}) == 5
    with pytest.raises(ValueError, match="no merge function was provided"):
        tree_merge({"a": 1}, {"a": 2})
    with pytest.raises(ValueError, match="Cannot merge list with dict"):
        tree_merge([], {})
    # An empty subtree merged with nothing stays (MLX raises here).
    assert tree_merge({"a": []}, {"b": 1}) == {"a": [], "b": 1}


# --------------------------------------------------------------------------
# against mlx.utils on random trees
# --------------------------------------------------------------------------


def random_tree(rng, depth=0):
    kind = rng.integers(0, 5) if depth < 4 else 4
    n = int(rng.integers(0, 4))
    if kind == 0:
        return [random_tree(rng, depth + 1) for _ in range(n)]
    if kind == 1:
        return tuple(random_tree(rng, depth + 1) for _ in range(n))
    if kind == 2:
        return {f"k{i}": random_tree(rng, depth + 1) for i in range(n)}
    if kind == 3:
        return Pair(random_tree(rng, depth + 1), random_tree(rng, depth + 1))
    return int(rng.integers(0, 100))


@needs_mlx
def test_random_trees_against_mlx(rng):
    for _ in range(200):
        tree = random_tree(rng)
        assert tree_flatten(tree) == mlx_utils.tree_flatten(tree)
        assert tree_flatten(tree, prefix=".p", destination={}) == mlx_utils.tree_flatten(
            tree, prefix=".p", destination={}
        )
        flat = tree_flatten(tree)
        if flat:
            assert tree_unflatten(flat) == mlx_utils.tree_unflatten(flat)
        assert tree_map(lambda x: x + 1, tree) == mlx_utils.tree_map(lambda x: x + 1, tree)
        is_tuple = lambda v: type(v) is tuple  # noqa: E731
        assert tree_map(repr, tree, is_leaf=is_tuple) == mlx_utils.tree_map(repr, tree, is_leaf=is_tuple)
        assert tree_map_with_path(lambda p, x: (p, x), tree) == mlx_utils.tree_map_with_path(lambda p, x: (p, x), tree)
        assert tree_reduce(lambda a, x: a + [x], tree, []) == mlx_utils.tree_reduce(lambda a, x: a + [x], tree, [])
        other = tree_map(lambda x: -x, tree)
        assert tree_merge(tree, other, max) == mlx_utils.tree_merge(tree, other, max)


# --------------------------------------------------------------------------
# the transforms walk trees the same way
# --------------------------------------------------------------------------


def test_transforms_keep_tree_types_and_order():
    x = fx.array([1.0, 2.0])
    tree = {"a": Pair(x, [x * 2, (x * 3,)]), "b": {}}

    def loss(t):
        return (t["a"].a * t["a"].b[0] * t["a"].b[1][0]).sum()

    g = fx.grad(loss)(tree)
    assert type(g["a"]) is Pair and type(g["a"].b[1]) is tuple and g["b"] == {}
    # d/dx0 of x0 * (2 x) * (3 x) is 6 x^2 for each array's own factor pair
    np.testing.assert_allclose(np.array(g["a"].a), 6 * np.array([1.0, 4.0]))
    flat_fx = [k for k, _ in tree_flatten(g)]
    assert flat_fx == ["a.0", "a.1.0", "a.1.1.0"]
    out = fx.vmap(lambda t: tree_map(lambda v: v * 2, t))({"p": fx.ones((3, 2)), "q": [fx.ones((3,))]})
    assert out["p"].shape == (3, 2) and out["q"][0].shape == (3,)


def test_transforms_reject_what_tree_utils_accept():
    with pytest.raises(ValueError, match="grad"):
        fx.grad(lambda t: t[0].sum())([fx.ones((2,)), 3])
    loop = [fx.ones((2,))]
    loop.append(loop)
    with pytest.raises(ValueError, match="reference to itself"):
        fx.grad(lambda t: t[0].sum())(loop)
