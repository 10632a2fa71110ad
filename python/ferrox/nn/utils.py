"""Transforms over a module's parameters (MLX's ``mlx.nn.utils``):
``value_and_grad``, ``checkpoint`` and ``average_gradients``."""

from functools import wraps
from typing import Any, Callable, Optional

import ferrox as fx
from ferrox.nn.layers.base import Module
from ferrox.utils import tree_flatten, tree_map, tree_unflatten


def value_and_grad(model: Module, fn: Callable) -> Callable:
    """Returns a function computing ``fn(*args, **kwargs)`` and its gradient
    with respect to ``model.trainable_parameters()`` (a tree of the same
    structure). ``fn`` returns a scalar array, or a tuple whose first entry
    is one (the rest is returned as it is)."""

    def inner_fn(params, *args, **kwargs):
        model.update(params)
        return fn(*args, **kwargs)

    value_grad_fn = fx.value_and_grad(inner_fn)

    @wraps(fn)
    def wrapped_value_grad_fn(*args, **kwargs):
        return value_grad_fn(model.trainable_parameters(), *args, **kwargs)

    return wrapped_value_grad_fn


_ARRAY = object()  # marks where an array argument goes


def checkpoint(module: Module, fn: Optional[Callable] = None) -> Callable:
    """Returns ``fn`` (default: ``module`` itself) with gradient
    checkpointing: its intermediate results are recomputed in the backward
    pass instead of being kept, with gradients flowing to the module's
    trainable parameters and to the array arguments (anywhere in nested
    lists, tuples and dicts; other arguments are passed as they are).
    ``fn`` returns an array or a tuple of arrays."""
    if fn is None:
        # The module itself, not its __call__, so a later patch of __call__ counts.
        fn = module

    @wraps(fn)
    def wrapped_checkpointed_fn(*args, **kwargs):
        params = tree_flatten(module.trainable_parameters())
        inputs = []

        def take(x):
            if isinstance(x, fx.array):
                inputs.append(x)
                return _ARRAY
            return x

        skeleton = tree_map(take, (args, kwargs))

        def inner_fn(*arrays):
            module.update(tree_unflatten(list(zip((k for k, _ in params), arrays[: len(params)]))))
            rest = iter(arrays[len(params) :])
            call_args, call_kwargs = tree_map(lambda x: next(rest) if x is _ARRAY else x, skeleton)
            return fn(*call_args, **call_kwargs)

        return fx.checkpoint(inner_fn)(*(p for _, p in params), *inputs)

    return wrapped_checkpointed_fn


def average_gradients(
    gradients: Any,
    group: Optional[Any] = None,
    all_reduce_size: int = 32 * 1024**2,
    communication_stream: Optional[fx.Stream] = None,
) -> Any:
    """Averages ``gradients`` (a tree of arrays) across the processes of
    ``group`` (default: the global group). ferrox has no distributed
    backend yet, so the only group is the single process and the gradients
    come back unchanged; a group of another size is a ValueError.
    ``all_reduce_size`` and ``communication_stream`` are MLX's batching and
    stream controls for the all-reduce."""
    size = 1 if group is None else group.size()
    if size == 1:
        return gradients
    raise ValueError(f"[average_gradients] ferrox has no distributed backend; got a group of size {size}.")
