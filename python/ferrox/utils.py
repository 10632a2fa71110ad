"""Utilities for Python trees (nested lists, tuples and dicts), as
``mlx.utils``: ``tree_flatten``, ``tree_unflatten``, ``tree_map``,
``tree_map_with_path``, ``tree_reduce`` and ``tree_merge``.

The node helpers ``_is_node``, ``_children`` and ``_rebuild`` are the one
tree implementation that the function transforms (``ferrox._autodiff``),
``ferrox.nn`` and ``ferrox.optimizers`` walk trees with."""

from collections import defaultdict
from itertools import zip_longest
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

__all__ = ["tree_flatten", "tree_unflatten", "tree_map", "tree_map_with_path", "tree_reduce", "tree_merge"]


def _is_node(tree: Any) -> bool:
    """Whether ``tree`` is an inner node (a list, tuple or dict, subclasses
    included) rather than a leaf."""
    return isinstance(tree, (list, tuple, dict))


def _children(node: Union[list, tuple, dict]) -> Iterable[Tuple[Any, Any]]:
    """The ``(key, child)`` pairs of a node: its keys for a dict, its indices
    for a list or tuple, in order."""
    return node.items() if isinstance(node, dict) else enumerate(node)


def _rebuild(node: Union[list, tuple, dict], values: Iterable[Any]) -> Any:
    """A node of the same kind as ``node`` holding ``values`` (one per child,
    in the order of ``_children``): a plain dict with the same keys for a
    dict, a NamedTuple built from its fields, else ``type(node)(values)``."""
    if isinstance(node, dict):
        return dict(zip(node.keys(), values))
    kind = type(node)
    if hasattr(node, "_fields"):
        return kind(*values)
    return kind(values)


def tree_map(fn: Callable, tree: Any, *rest: Any, is_leaf: Optional[Callable] = None) -> Any:
    """Applies ``fn`` to the leaves of ``tree`` and returns a tree of the same
    structure with the results.

    Every tree in ``rest`` must be a superset of ``tree``; its values at the
    same locations are passed to ``fn`` as extra positional arguments (like
    :func:`itertools.starmap`). ``is_leaf(node)`` may declare inner nodes
    leaves. Dicts come back as plain dicts, tuples as their own type.

    .. code-block:: python

        model.update(tree_map(lambda x: x * x, model.parameters()))

    Args:
        fn (callable): Function applied to the leaves (of ``tree`` and the matching ones of ``rest``).
        tree (Any): A tree of lists, tuples and dicts.
        *rest (Any): Trees with ``tree``'s structure whose leaves are passed too.
        is_leaf (callable, optional): Marks subtrees to treat as leaves.

    Returns:
        Any: A tree of ``tree``'s structure holding ``fn``'s results.
    """
    if (is_leaf is not None and is_leaf(tree)) or not _is_node(tree):
        return fn(tree, *rest)
    return _rebuild(
        tree,
        (tree_map(fn, child, *(r[k] for r in rest), is_leaf=is_leaf) for k, child in _children(tree)),
    )


def tree_map_with_path(
    fn: Callable,
    tree: Any,
    *rest: Any,
    is_leaf: Optional[Callable] = None,
    path: Optional[Any] = None,
) -> Any:
    """As :func:`tree_map`, but ``fn`` receives the dot-separated path of each
    leaf first (``"model.0.w"``), prefixed with ``path`` when given; a tree
    that is itself a leaf gets ``path`` (``None`` by default).

    Args:
        fn (callable): Function applied to each path and the leaves.
        tree (Any): A tree of lists, tuples and dicts.
        *rest (Any): Trees with ``tree``'s structure whose leaves are passed too.
        is_leaf (callable, optional): Marks subtrees to treat as leaves.
        path (str, optional): Prefix of the paths.

    Returns:
        Any: A tree of ``tree``'s structure holding ``fn``'s results.
    """
    if (is_leaf is not None and is_leaf(tree)) or not _is_node(tree):
        return fn(path, tree, *rest)
    prefix = f"{path}." if path else ""
    return _rebuild(
        tree,
        (
            tree_map_with_path(fn, child, *(r[k] for r in rest), is_leaf=is_leaf, path=f"{prefix}{k}")
            for k, child in _children(tree)
        ),
    )


def tree_flatten(
    tree: Any,
    prefix: str = "",
    is_leaf: Optional[Callable] = None,
    destination: Optional[Union[List[Tuple[str, Any]], Dict[str, Any]]] = None,
) -> Union[List[Tuple[str, Any]], Dict[str, Any]]:
    """Flattens ``tree`` to ``(key, leaf)`` pairs whose keys are the
    dot-separated paths of the leaves.

    ``prefix`` is prepended to every key; its first character is always
    dropped (``prefix=".hello"`` gives ``"hello.0"``). ``is_leaf(node)`` may
    declare inner nodes leaves. ``destination`` (a list or a dict) receives
    the pairs and is returned; a new list by default.

    .. code-block:: python

        tree_flatten([[[0]]])                          # [("0.0.0", 0)]
        tree_flatten([[[0]]], prefix=".hello")         # [("hello.0.0.0", 0)]
        tree_flatten({"a": {"b": 1}}, destination={})  # {"a.b": 1}

    Args:
        tree (Any): A tree of lists, tuples and dicts.
        prefix (str, optional): Prefix of the keys.
        is_leaf (callable, optional): Marks subtrees to treat as leaves.
        destination (list or dict, optional): Where to put the pairs.

    Returns:
        list(tuple(str, Any)) or dict: The ``(path, leaf)`` pairs, paths dot-separated.
    """
    if destination is None:
        destination = []
    if isinstance(destination, list):
        add = destination.extend
    elif isinstance(destination, dict):
        add = destination.update
    else:
        raise ValueError("Destination should be either a list or a dictionary or None")
    if (is_leaf is not None and is_leaf(tree)) or not _is_node(tree):
        add([(prefix[1:], tree)])
        return destination
    for key, child in _children(tree):
        tree_flatten(child, f"{prefix}.{key}", is_leaf, destination)
    return destination


def tree_unflatten(tree: Union[List[Tuple[str, Any]], Dict[str, Any]]) -> Any:
    """Rebuilds a tree from its flat representation (the list of pairs or
    the dict :func:`tree_flatten` returns). A level whose keys are all
    integers becomes a list (missing indices filled with ``{}``), any other
    level a dict; a single pair with the empty key is the leaf itself.

    .. code-block:: python

        tree_unflatten([("hello.world", 42)])  # {"hello": {"world": 42}}

    Args:
        tree (list or dict): ``(path, leaf)`` pairs as ``tree_flatten`` makes them.

    Returns:
        Any: The tree.
    """
    items = list(tree.items()) if isinstance(tree, dict) else list(tree)
    if len(items) == 1 and items[0][0] == "":
        return items[0][1]
    children = defaultdict(list)
    for key, value in items:
        head, _, tail = key.partition(".")
        children[head].append((tail, value))
    indices = {}
    for name in children:
        try:
            indices[int(name)] = name
        except ValueError:
            return {name: tree_unflatten(sub) for name, sub in children.items()}
    if len(indices) != len(children):  # "01" and "1" name different children
        return {name: tree_unflatten(sub) for name, sub in children.items()}
    out = []
    for i, name in sorted(indices.items()):
        out.extend({} for _ in range(i - len(out)))
        out.append(tree_unflatten(children[name]))
    return out


def tree_reduce(fn: Callable, tree: Any, initializer: Any = None, is_leaf: Optional[Callable] = None) -> Any:
    """Folds the leaves of ``tree`` into one value: ``acc = fn(acc, leaf)``
    for each leaf in order, starting from ``initializer`` (or the first leaf
    when it is ``None``).

    .. code-block:: python

        tree_reduce(lambda acc, x: acc + x, {"a": [1, 2, 3], "b": [4, 5]}, 0)  # 15

    Args:
        fn (callable): ``fn(accumulator, leaf)``.
        tree (Any): A tree of lists, tuples and dicts.
        initializer (Any, optional): First accumulator (the first leaf when None).
        is_leaf (callable, optional): Marks subtrees to treat as leaves.

    Returns:
        Any: The accumulated value.
    """
    if (is_leaf is not None and is_leaf(tree)) or not _is_node(tree):
        return tree if initializer is None else fn(initializer, tree)
    accumulator = initializer
    for _, child in _children(tree):
        accumulator = tree_reduce(fn, child, accumulator, is_leaf)
    return accumulator


def tree_merge(tree_a: Any, tree_b: Any, merge_fn: Optional[Callable] = None) -> Any:
    """Merges two trees into one holding the values of both (a deep
    ``dict.update``). Empty containers and ``None`` count as empty subtrees;
    where both trees have a leaf at the same place, ``merge_fn(a, b)`` gives
    the value, and without ``merge_fn`` that is a ValueError.

    Args:
        tree_a (Any): First tree.
        tree_b (Any): Second tree.
        merge_fn (callable, optional): Combines two leaves at the same place (an error when both exist and it is None).

    Returns:
        Any: The merged tree.
    """
    empty_a = _is_node(tree_a) and len(tree_a) == 0
    empty_b = _is_node(tree_b) and len(tree_b) == 0
    if empty_a and empty_b:
        if type(tree_a) is not type(tree_b):
            raise ValueError(f"Cannot merge {type(tree_a).__name__} with {type(tree_b).__name__}")
        return type(tree_a)()
    if tree_a is None or empty_a:
        # MLX raises here when the other side is missing too; an empty
        # subtree merged with nothing stays the empty subtree.
        return tree_a if tree_b is None else tree_b
    if tree_b is None or empty_b:
        return tree_a
    if isinstance(tree_a, (list, tuple)) and isinstance(tree_b, (list, tuple)):
        return _rebuild(tree_a, [tree_merge(a, b, merge_fn) for a, b in zip_longest(tree_a, tree_b)])
    if isinstance(tree_a, dict) and isinstance(tree_b, dict):
        keys = list(tree_a) + [k for k in tree_b if k not in tree_a]
        return {k: tree_merge(tree_a.get(k), tree_b.get(k), merge_fn) for k in keys}
    if merge_fn is None:
        raise ValueError("Trees contain elements at the same locations but no merge function was provided")
    return merge_fn(tree_a, tree_b)
