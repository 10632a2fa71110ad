"""Transform semantics MLX programs rely on (issue 9, B6): container types
survive grad and vmap, assignments into list arguments reach the caller,
keyword arguments without argnames, comparison tangents, exact products."""

import collections

import numpy as np
import pytest

import ferrox as fx

P = collections.namedtuple("P", "w b")


class Params(list):
    pass


def test_namedtuple_through_grad_and_vmap():
    x, y = fx.array([1.0, 2.0]), fx.array([3.0, -1.0])
    g = fx.grad(lambda p: (p.w * p.b).sum())(P(x, y))
    assert isinstance(g, P)
    assert g.w.tolist() == [3.0, -1.0] and g.b.tolist() == [1.0, 2.0]
    out = fx.vmap(lambda p: P(p.w * 2, p.b))(P(fx.ones((2, 3)), fx.ones((2,))))
    assert isinstance(out, P) and out.w.shape == (2, 3)
    v, g = fx.value_and_grad(lambda p: ((p.w**2).sum(), P(p.w, p.b)))(P(x, y))
    assert isinstance(v, tuple) and isinstance(v[1], P)


def test_list_subclass_and_dict_keep_their_type():
    x, y = fx.array([1.0, 2.0]), fx.array([3.0, -1.0])
    g = fx.grad(lambda l: (l[0] * l[1]).sum())(Params([x, y]))
    assert isinstance(g, Params)
    g = fx.grad(lambda d: (d["a"] ** 2).sum())({"a": x})
    assert isinstance(g, dict) and g["a"].tolist() == [2.0, 4.0]


def test_assignment_into_a_list_argument_reaches_the_caller():
    x, y, z = fx.array([1.0, 2.0]), fx.array([3.0, -1.0]), fx.array([5.0])

    def f(arrs):
        arrs[1] = arrs[0] * 2
        return arrs[1].sum()

    arrs = [x, y, z]
    g = fx.grad(f)(arrs)
    assert g[0].tolist() == [2.0, 2.0]
    assert arrs[0] is x and arrs[2] is z  # untouched entries keep their identity
    assert arrs[1] is not y and arrs[1].tolist() == [2.0, 4.0]


def test_keyword_arguments_without_argnames_give_the_plain_gradient():
    x, y = fx.array([1.0, 2.0]), fx.array([3.0, -1.0])
    g = fx.grad(lambda a, y: (a * y).sum())(x, y=y)
    assert isinstance(g, fx.array) and g.tolist() == [3.0, -1.0]


def test_jvp_of_a_comparison_has_the_tangent_dtype():
    x = fx.array([1.0, 2.0], dtype=fx.float16)
    _, (t,) = fx.jvp(lambda a: a > 1, [x], [fx.ones_like(x)])
    assert t.dtype == fx.float16 and t.tolist() == [0.0, 0.0]


def test_vmap_axes_in_every_tree_form():
    a, b = fx.ones((2, 3)), fx.ones((3,))
    assert fx.vmap(lambda l: l[0] + l[1], in_axes=([0, None],))([a, b]).shape == (2, 3)
    assert fx.vmap(lambda d: d["x"] + d["y"], in_axes=({"x": 0, "y": None},))({"x": a, "y": b}).shape == (2, 3)
    out = fx.vmap(lambda x: {"p": x, "q": x.sum()}, out_axes={"p": 1, "q": 0})(a)
    assert out["p"].shape == (3, 2) and out["q"].shape == (2,)
    out = fx.vmap(lambda x: (x, [x * 2]), out_axes=(0, [-1]))(a)
    assert out[0].shape == (2, 3) and out[1][0].shape == (3, 2)
    np.testing.assert_array_equal(np.array(out[1][0]), np.full((3, 2), 2.0))


def test_prod_derivatives_are_exact_with_zeros():
    g = fx.grad(lambda a: fx.prod(a))(fx.array([0.0, 2.0, 3.0]))
    assert g.tolist() == [6.0, 0.0, 0.0]
    g = fx.grad(lambda a: fx.prod(a))(fx.array([0.0, 0.0, 3.0]))
    assert g.tolist() == [0.0, 0.0, 0.0]
    x = np.array([[0.0, 2.0, 3.0], [1.0, 0.0, 4.0]])
    g = fx.grad(lambda a: fx.prod(a, axis=0).sum())(fx.array(x, dtype=fx.float64))
    np.testing.assert_array_equal(np.array(g), [[1.0, 0.0, 4.0], [0.0, 2.0, 3.0]])
    g = fx.grad(lambda a: fx.prod(a, axis=(0, 1)))(fx.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(np.array(g), [[24.0, 12.0], [8.0, 6.0]])
    _, (t,) = fx.jvp(lambda a: fx.prod(a), [fx.array([0.0, 2.0])], [fx.array([1.0, 1.0])])
    assert t.tolist() == 2.0


def test_grad_fills_a_module_in_place_and_restores_it():
    """As MLX: a dict subclass (an nn.Module) given to grad reaches the
    function as the same object, holding the traced parameters; its own
    arrays are back afterwards, and the gradient is a plain dict."""
    import ferrox.nn as nn

    model = nn.Linear(2, 2)
    weight = model.weight
    seen = []

    def loss(m, x):
        seen.append(m is model and m.weight is not weight)
        return m(x).sum()

    g = fx.grad(loss)(model, fx.ones((3, 2)))
    assert seen == [True]
    assert type(g) is dict and set(g) == {"weight", "bias"}
    assert model.weight is weight
    np.testing.assert_allclose(np.array(g["bias"]), [3.0, 3.0])
    np.testing.assert_allclose(np.array(g["weight"]), np.full((2, 2), 3.0))

    def failing(m, x):
        raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        fx.grad(failing)(model, fx.ones((3, 2)))
    assert model.weight is weight
