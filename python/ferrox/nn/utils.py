"""Transforms over a module's parameters (MLX's ``mlx.nn.utils``):
``value_and_grad``, ``checkpoint`` and ``average_gradients``."""

from functools import wraps
from typing import Any, Callable, Optional, Tuple

import ferrox as fx
from ferrox.nn.layers.base import Module
from ferrox.utils import tree_flatten, tree_map, tree_reduce, tree_unflatten


def value_and_grad(model: Module, fn: Callable) -> Callable:
    """Returns a function computing ``fn(*args, **kwargs)`` and its gradient
    with respect to ``model.trainable_parameters()`` (a tree of the same
    structure). ``fn`` returns a scalar array, or a tuple whose first entry
    is one (the rest is returned as it is).

    Args:
        model (Module): The model whose trainable parameters to differentiate.
        fn (callable): Loss function, called with the arguments of the returned function.

    Returns:
        callable: A function returning ``(loss, gradients)``, the gradients a tree like ``model.trainable_parameters()``.
    """

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
    ``fn`` returns an array or a tuple of arrays.

    Args:
        module (Module): The module.
        fn (callable, optional): Function to call instead of ``module.__call__``.

    Returns:
        callable: ``fn`` recomputing its intermediates in the backward pass.
    """
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
    stream controls for the all-reduce.

    Args:
        gradients (Any): Tree of gradient arrays.
        group (Group, optional): Group to average over; the global group when None.
        all_reduce_size (int, optional): Bytes of gradients reduced together.
        communication_stream (Stream, optional): Stream of the communication.

    Returns:
        Any: The averaged gradients (the input on a group of one process).
    """
    size = 1 if group is None else group.size()
    if size == 1:
        return gradients
    raise ValueError(f"[average_gradients] ferrox has no distributed backend; got a group of size {size}.")


def clip_grad_norm_sharded(gradients: Any, max_norm: float, group: Optional[Any] = None) -> Tuple[Any, fx.array]:
    """Clip the global norm of gradients that are sharded across a group.

    The sharded counterpart of :func:`ferrox.optimizers.clip_grad_norm`: each
    member holds a shard of the gradients, so the local squared norms are
    summed over the group (``ferrox.distributed.all_sum``) before rescaling.

    Args:
        gradients (Any): A tree of this member's gradient arrays.
        max_norm (float): The largest allowed global norm.
        group (ferrox.distributed.Group, optional): The group the gradients
            are sharded across; the global group if ``None``. Default: ``None``.

    Returns:
        (Any, array): The (possibly rescaled) local gradients and the global
        gradient norm.
    """
    import ferrox.distributed as dist

    local_norm_squared = tree_reduce(lambda acc, g: acc + g.square().sum(), gradients, 0.0)
    grad_norm = fx.sqrt(dist.all_sum(local_norm_squared, group=group))
    normalizer = fx.minimum(max_norm / (grad_norm + 1e-6), 1.0)
    return tree_map(lambda g: g * normalizer, gradients), grad_norm
