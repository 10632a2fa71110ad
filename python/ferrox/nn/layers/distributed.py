"""Layers and helpers for sharding a model over a group of processes
(``ferrox.nn.layers.distributed``, as ``mlx.nn.layers.distributed``):
tensor-parallel linear layers (plain and quantized), :func:`shard_linear`,
:func:`shard_inplace`, fully sharded modules and :func:`sum_gradients`.

With ferrox's single-process group (see :mod:`ferrox.distributed`) every
layer computes what the unsharded layer computes, so programs written for
several processes run unchanged in one.
"""

import math
from functools import lru_cache, reduce
from typing import Callable, Optional, Union

import ferrox as mx
import ferrox.distributed  # noqa: F401  (mx.distributed in annotations)
from ferrox.nn.layers.base import Module
from ferrox.nn.layers.linear import Linear
from ferrox.nn.layers.quantized import _quantized_product
from ferrox.utils import tree_flatten, tree_map_with_path, tree_unflatten


@lru_cache
def sum_gradients(group):
    """An identity function whose vjp sums the cotangent over ``group``.

    Args:
        group (ferrox.distributed.Group): The group to sum gradients over.

    Returns:
        Callable: ``f(x) -> x`` whose gradient is the ``all_sum`` of the
        incoming gradient (the plain identity for a group of one).
    """
    if group.size() == 1:
        return lambda x: x

    @mx.custom_function
    def f(x):
        return x

    @f.vjp
    def f(x, dx, _):
        return mx.distributed.all_sum(dx, group=group)

    return f


def _split(weight, segments, axis):
    """Equivalent to mx.split but allows for fractional segments."""
    if isinstance(segments, int) or isinstance(segments[0], int):
        return mx.split(weight, segments, axis=axis)

    N = weight.shape[axis]
    indices = [int(s * N) for s in segments]
    return mx.split(weight, indices, axis=axis)


def _shard(
    parameters: dict,
    sharding_predicate: Callable,
    group: Optional[mx.distributed.Group] = None,
):
    """Returns a new parameter tree with the weights sharded according to the
    sharding_predicate.

    The sharding predicate should return the sharding axis and optionally also
    the segments that comprise the weight.
    """
    group = group or mx.distributed.init()
    N = group.size()
    r = group.rank()

    def _shard_fn(path, weight):
        if not isinstance(weight, mx.array):
            return weight

        s = sharding_predicate(path, weight)
        if s is None:
            return weight

        axis = None
        segments = 1
        if isinstance(s, int):
            axis = s
        elif isinstance(s, tuple):
            axis, segments = s
        else:
            raise ValueError(
                "The sharding function should return int or tuple[int, list]"
            )

        return mx.contiguous(
            mx.concatenate(
                [_split(part, N, axis)[r] for part in _split(weight, segments, axis)],
                axis=axis,
            )
        )

    return tree_map_with_path(_shard_fn, parameters)


def _all_to_sharded(segments):
    """Simple predicate to shard fully connected layers such that a common
    representation becomes a sharded representation."""

    def _shard_fn(path, weight):
        if path.endswith("bias"):
            return -1, segments
        return max(weight.ndim - 2, 0), segments

    return _shard_fn


def _sharded_to_all(segments):
    """Simple predicate to shard fully connected layers such that a sharded
    representation becomes a common representation."""

    def _shard_fn(path, weight):
        if path.endswith("bias"):
            return None
        return -1, segments

    return _shard_fn


def _check_sharding(sharding):
    if sharding not in ("all-to-sharded", "sharded-to-all"):
        raise ValueError(
            (
                f"Sharding type {sharding=} not supported, "
                "choose one of 'all-to-sharded' or 'sharded-to-all'"
            )
        )


def shard_inplace(
    module: Module,
    sharding: Union[str, Callable],
    *,
    segments: Union[int, list] = 1,
    group: Optional[mx.distributed.Group] = None,
):
    """Shard a module in-place by updating its parameter dictionary with the
    sharded parameter dictionary.

    The ``sharding`` argument can be any callable that given the path and the
    weight returns the sharding axis and optionally also the segments that
    comprise the unsharded weight. For instance if the weight is a fused QKV
    matrix the segments should be 3.

    .. note::
        The module doesn't change so in order for distributed communication to
        happen the module needs to natively support it and for it to be enabled.

    Args:
        module (ferrox.nn.Module): The parameters of this module will be sharded
            in-place.
        sharding (str or callable): One of "all-to-sharded" and
            "sharded-to-all" or a callable that returns the sharding axis and
            segments.
        segments (int or list): The segments to use if ``sharding`` is a
            string. Default: ``1``.
        group (ferrox.distributed.Group): The distributed group to shard
            across. If not set, the global group will be used. Default: ``None``.

    Returns:
        None: ``module`` is updated in place.
    """
    if isinstance(sharding, str):
        _check_sharding(sharding)
        sharding = (
            _all_to_sharded(segments)
            if sharding == "all-to-sharded"
            else _sharded_to_all(segments)
        )
    module.update(_shard(module.parameters(), sharding, group))


def shard_linear(
    module: Module,
    sharding: str,
    *,
    segments: Union[int, list] = 1,
    group: Optional[mx.distributed.Group] = None,
):
    """Create a new linear layer that has its parameters sharded and also
    performs distributed communication either in the forward or backward
    pass.

    .. note::
        Contrary to ``shard_inplace``, the original layer is not changed but a
        new layer is returned.

    Args:
        module (ferrox.nn.Module): The linear layer to be sharded.
        sharding (str): One of "all-to-sharded" and
            "sharded-to-all" that defines the type of sharding to perform.
        segments (int or list): The segments to use. Default: ``1``.
        group (ferrox.distributed.Group): The distributed group to shard
            across. If not set, the global group will be used. Default: ``None``.

    Returns:
        ferrox.nn.Module: The sharded layer: :class:`AllToShardedLinear` or
        :class:`ShardedToAllLinear` for a :class:`~ferrox.nn.Linear`, their
        quantized counterparts for a quantized linear layer.
    """
    _check_sharding(sharding)
    fns = {
        ("all-to-sharded", True): AllToShardedLinear.from_linear,
        ("all-to-sharded", False): QuantizedAllToShardedLinear.from_quantized_linear,
        ("sharded-to-all", True): ShardedToAllLinear.from_linear,
        ("sharded-to-all", False): QuantizedShardedToAllLinear.from_quantized_linear,
    }
    return fns[sharding, isinstance(module, Linear)](
        module, segments=segments, group=group
    )


class AllToShardedLinear(Module):
    """Each member of the group applies part of the affine transformation such
    that the result is sharded across the group.

    The gradients are automatically aggregated from each member of the group.

    Args:
        input_dims (int): The dimensionality of the input features
        output_dims (int): The dimensionality of the output features
        bias (bool, optional): If set to ``False`` the layer will not use a
            bias. Default is ``True``.
        group (mx.distributed.Group, optional): The sharding will happen across
            this group. If not set then the global group is used. Default is
            ``None``.
    """

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        bias: bool = True,
        group: Optional[mx.distributed.Group] = None,
    ):
        super().__init__()

        # Initialize the parameters
        scale = math.sqrt(1.0 / input_dims)
        self.group = group or mx.distributed.init()
        N = self.group.size()

        if (output_dims % N) != 0:
            raise ValueError(
                f"Cannot shard the output of size {output_dims} across {N} devices."
            )

        self.weight = mx.random.uniform(
            low=-scale,
            high=scale,
            shape=(output_dims // N, input_dims),
        )
        if bias:
            self.bias = mx.random.uniform(
                low=-scale,
                high=scale,
                shape=(output_dims // N,),
            )

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        N = self.group.size()
        out_dims *= N
        return f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        """Applies this member's part of the affine transformation.

        Args:
            x (array): The input, of ``input_dims`` features.

        Returns:
            array: This member's shard of the output features.
        """
        # Aggregate the gradients coming from each shard
        x = sum_gradients(self.group)(x)

        # Compute the affine projection
        if "bias" in self:
            x = mx.addmm(self["bias"], x, self["weight"].T)
        else:
            x = x @ self["weight"].T
        return x

    @classmethod
    def from_linear(
        cls,
        linear_layer: Module,
        *,
        segments: Union[int, list] = 1,
        group: Optional[mx.distributed.Group] = None,
    ):
        """Builds the sharded layer from a :class:`~ferrox.nn.Linear`.

        Args:
            linear_layer (ferrox.nn.Module): The linear layer to shard.
            segments (int or list): The segments of the weight (e.g. 3 for a
              fused QKV projection). Default: ``1``.
            group (ferrox.distributed.Group, optional): The group to shard
              across; the global group if not set. Default: ``None``.

        Returns:
            The new layer holding this member's shard of the parameters.
        """
        group = group or mx.distributed.init()
        output_dims, input_dims = linear_layer.weight.shape

        sl = cls(input_dims, output_dims, hasattr(linear_layer, "bias"), group)
        sl.update(_shard(linear_layer.parameters(), _all_to_sharded(segments), group))

        return sl


class ShardedToAllLinear(Module):
    """Each member of the group applies part of the affine transformation and
    then aggregates the results.

    All nodes will have the same exact result after this layer.

    :class:`ShardedToAllLinear` provides a classmethod :meth:`from_linear` to
    convert linear layers to sharded :obj:`ShardedToAllLinear` layers.

    Args:
        input_dims (int): The dimensionality of the input features
        output_dims (int): The dimensionality of the output features
        bias (bool, optional): If set to ``False`` the layer will not use a
            bias. Default is ``True``.
        group (mx.distributed.Group, optional): The sharding will happen across
            this group. If not set then the global group is used. Default is
            ``None``.
    """

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        bias: bool = True,
        group: Optional[mx.distributed.Group] = None,
    ):
        super().__init__()

        # Initialize the parameters
        scale = math.sqrt(1.0 / input_dims)
        self.group = group or mx.distributed.init()
        N = self.group.size()

        if (input_dims % N) != 0:
            raise ValueError(
                f"The input of size {input_dims} cannot be sharded across {N} devices."
            )

        self.weight = mx.random.uniform(
            low=-scale,
            high=scale,
            shape=(output_dims, input_dims // N),
        )
        if bias:
            self.bias = mx.random.uniform(
                low=-scale,
                high=scale,
                shape=(output_dims,),
            )

    def _extra_repr(self) -> str:
        N = self.group.size()
        out_dims, in_dims = self.weight.shape
        in_dims *= N
        return f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        """Applies this member's part and sums the parts over the group.

        Args:
            x (array): This member's shard of the input features.

        Returns:
            array: The full output, the same on every member.
        """
        x = x @ self["weight"].T

        x = mx.distributed.all_sum(x, group=self.group)

        if "bias" in self:
            x = x + self["bias"]

        return x

    @classmethod
    def from_linear(
        cls,
        linear_layer: Module,
        *,
        segments: Union[int, list] = 1,
        group: Optional[mx.distributed.Group] = None,
    ):
        """Builds the sharded layer from a :class:`~ferrox.nn.Linear`.

        Args:
            linear_layer (ferrox.nn.Module): The linear layer to shard.
            segments (int or list): The segments of the weight (e.g. 3 for a
              fused QKV projection). Default: ``1``.
            group (ferrox.distributed.Group, optional): The group to shard
              across; the global group if not set. Default: ``None``.

        Returns:
            The new layer holding this member's shard of the parameters.
        """
        group = group or mx.distributed.init()
        output_dims, input_dims = linear_layer.weight.shape

        sl = cls(input_dims, output_dims, hasattr(linear_layer, "bias"), group)
        sl.update(_shard(linear_layer.parameters(), _sharded_to_all(segments), group))

        return sl


class QuantizedAllToShardedLinear(Module):
    """Each member of the group applies part of the affine transformation with
    a quantized matrix such that the result is sharded across the group.

    It is the quantized equivalent of :class:`ferrox.nn.AllToShardedLinear`.
    Similar to :class:`ferrox.nn.QuantizedLinear` its parameters are frozen and
    will not be included in any gradient computation.

    Args:
        input_dims (int): The dimensionality of the input features.
        output_dims (int): The dimensionality of the output features.
        bias (bool, optional): If set to ``False`` then the layer will not use
            a bias. Default: ``True``.
        group_size (int, optional): The group size to use for the quantized
            weight. See :func:`~ferrox.quantize`. Default: ``64``.
        bits (int, optional): The bit width to use for the quantized weight.
            See :func:`~ferrox.quantize`. Default: ``4``.
        mode (str, optional): The quantization method to use (see
            :func:`~ferrox.quantize`). Default: ``"affine"``.
        group (mx.distributed.Group, optional): The sharding will happen across
            this group. If not set then the global group is used. Default is
            ``None``.
    """

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        bias: bool = True,
        group_size: int = 64,
        bits: int = 4,
        mode: str = "affine",
        group: Optional[mx.distributed.Group] = None,
    ):
        super().__init__()

        # Quantization config
        self.group_size = group_size
        self.bits = bits
        self.mode = mode

        # Initialize the quantized weight
        scale = math.sqrt(1.0 / input_dims)
        self.group = group or mx.distributed.init()
        N = self.group.size()

        if (output_dims % N) != 0:
            raise ValueError(
                f"Cannot shard the output of size {output_dims} across {N} devices."
            )

        weight = mx.random.uniform(
            low=-scale,
            high=scale,
            shape=(output_dims // N, input_dims),
        )
        self.weight, self.scales, *biases = mx.quantize(
            weight, group_size, bits, mode=mode
        )
        self.biases = biases[0] if biases else None

        # And bias if needed
        if bias:
            self.bias = mx.zeros((output_dims // N,))

        # Freeze this model's parameters
        self.freeze()

    def unfreeze(self, *args, **kwargs):
        """Unfreezes the layers this one contains; its own quantized
        parameters stay frozen.

        Args:
            *args: Positional arguments of :meth:`Module.unfreeze`.
            **kwargs: Keyword arguments of :meth:`Module.unfreeze`.

        Returns:
            The module.
        """
        super().unfreeze(*args, **kwargs)
        return self.freeze(recurse=False)

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        in_dims = (in_dims * 32) // self.bits
        out_dims *= self.group.size()
        return (
            f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}, "
            f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}"
        )

    def __call__(self, x: mx.array) -> mx.array:
        """Applies this member's part of the quantized transformation.

        Args:
            x (array): The input, of ``input_dims`` features.

        Returns:
            array: This member's shard of the output features.
        """
        # Aggregate the gradients coming from each shard
        x = sum_gradients(self.group)(x)

        x = _quantized_product(self, x)
        if "bias" in self:
            x = x + self["bias"]
        return x

    @classmethod
    def from_quantized_linear(
        cls,
        quantized_linear_layer: Module,
        *,
        segments: Union[int, list] = 1,
        group: Optional[mx.distributed.Group] = None,
    ):
        """Builds the sharded layer from a quantized linear layer (one with
        ``weight``, ``scales``, optional ``biases``/``bias``, ``group_size``,
        ``bits`` and ``mode``, as MLX's ``QuantizedLinear``).

        Args:
            quantized_linear_layer (ferrox.nn.Module): The layer to shard.
            segments (int or list): The segments of the weight. Default: ``1``.
            group (ferrox.distributed.Group, optional): The group to shard
              across; the global group if not set. Default: ``None``.

        Returns:
            The new layer holding this member's shard of the parameters.
        """
        group = group or mx.distributed.init()
        output_dims, input_dims = quantized_linear_layer.weight.shape
        input_dims = (input_dims * 32) // quantized_linear_layer.bits

        sl = cls(
            input_dims,
            output_dims,
            hasattr(quantized_linear_layer, "bias"),
            group_size=quantized_linear_layer.group_size,
            bits=quantized_linear_layer.bits,
            mode=getattr(quantized_linear_layer, "mode", "affine"),
            group=group,
        )
        sl.update(
            _shard(
                quantized_linear_layer.parameters(),
                _all_to_sharded(segments),
                group,
            )
        )

        return sl


class QuantizedShardedToAllLinear(Module):
    """Each member of the group applies part of the affine transformation using
    the quantized matrix and then aggregates the results.

    All nodes will have the same exact result after this layer.

    It is the quantized equivalent of :class:`ferrox.nn.ShardedToAllLinear`.
    Similar to :class:`ferrox.nn.QuantizedLinear` its parameters are frozen and
    will not be included in any gradient computation.

    Args:
        input_dims (int): The dimensionality of the input features.
        output_dims (int): The dimensionality of the output features.
        bias (bool, optional): If set to ``False`` then the layer will not use
            a bias. Default: ``True``.
        group_size (int, optional): The group size to use for the quantized
            weight. See :func:`~ferrox.quantize`. Default: ``64``.
        bits (int, optional): The bit width to use for the quantized weight.
            See :func:`~ferrox.quantize`. Default: ``4``.
        mode (str, optional): The quantization method to use (see
            :func:`~ferrox.quantize`). Default: ``"affine"``.
        group (mx.distributed.Group, optional): The sharding will happen across
            this group. If not set then the global group is used. Default is
            ``None``.
    """

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        bias: bool = True,
        group_size: int = 64,
        bits: int = 4,
        mode: str = "affine",
        group: Optional[mx.distributed.Group] = None,
    ):
        super().__init__()

        # Quantization config
        self.group_size = group_size
        self.bits = bits
        self.mode = mode

        # Initialize the quantized weight
        scale = math.sqrt(1.0 / input_dims)
        self.group = group or mx.distributed.init()
        N = self.group.size()

        if (input_dims % N) != 0:
            raise ValueError(
                f"The input of size {input_dims} cannot be sharded across {N} devices."
            )

        weight = mx.random.uniform(
            low=-scale,
            high=scale,
            shape=(output_dims, input_dims // N),
        )
        self.weight, self.scales, *biases = mx.quantize(
            weight, group_size, bits, mode=mode
        )
        self.biases = biases[0] if biases else None

        # And bias if needed
        if bias:
            self.bias = mx.zeros((output_dims,))

        # Freeze this model's parameters
        self.freeze()

    def unfreeze(self, *args, **kwargs):
        """Unfreezes the layers this one contains; its own quantized
        parameters stay frozen.

        Args:
            *args: Positional arguments of :meth:`Module.unfreeze`.
            **kwargs: Keyword arguments of :meth:`Module.unfreeze`.

        Returns:
            The module.
        """
        super().unfreeze(*args, **kwargs)
        return self.freeze(recurse=False)

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        in_dims = (in_dims * 32) // self.bits * self.group.size()
        return (
            f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}, "
            f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}"
        )

    def __call__(self, x: mx.array) -> mx.array:
        """Applies this member's quantized part and sums the parts over
        the group.

        Args:
            x (array): This member's shard of the input features.

        Returns:
            array: The full output, the same on every member.
        """
        x = _quantized_product(self, x)
        x = mx.distributed.all_sum(x, group=self.group)
        if "bias" in self:
            x = x + self["bias"]
        return x

    @classmethod
    def from_quantized_linear(
        cls,
        quantized_linear_layer: Module,
        *,
        segments: Union[int, list] = 1,
        group: Optional[mx.distributed.Group] = None,
    ):
        """Builds the sharded layer from a quantized linear layer (one with
        ``weight``, ``scales``, optional ``biases``/``bias``, ``group_size``,
        ``bits`` and ``mode``, as MLX's ``QuantizedLinear``).

        Args:
            quantized_linear_layer (ferrox.nn.Module): The layer to shard.
            segments (int or list): The segments of the weight. Default: ``1``.
            group (ferrox.distributed.Group, optional): The group to shard
              across; the global group if not set. Default: ``None``.

        Returns:
            The new layer holding this member's shard of the parameters.
        """
        group = group or mx.distributed.init()
        output_dims, input_dims = quantized_linear_layer.weight.shape
        input_dims = (input_dims * 32) // quantized_linear_layer.bits

        sl = cls(
            input_dims,
            output_dims,
            hasattr(quantized_linear_layer, "bias"),
            group_size=quantized_linear_layer.group_size,
            bits=quantized_linear_layer.bits,
            mode=getattr(quantized_linear_layer, "mode", "affine"),
            group=group,
        )
        sl.update(
            _shard(
                quantized_linear_layer.parameters(),
                _sharded_to_all(segments),
                group,
            )
        )

        return sl


def _make_gather_fn(group, full_shapes, shard_sizes, compute_dtype):
    N = group.size()
    indices = reduce(lambda acc, w: acc + [acc[-1] + w], shard_sizes, [0])
    split_indices = indices[1:-1]
    shard_shapes = [(shape[0] // N,) + tuple(shape[1:]) for shape in full_shapes]

    def _maybe_cast(x, dtype):
        if dtype is None or x.dtype == dtype:
            return x
        return x.astype(dtype)

    # ferrox's custom_function takes arrays (not lists) as arguments: the
    # shards come one argument each.
    @mx.custom_function
    def gather(*shards):
        shard = mx.concatenate(
            [_maybe_cast(s.reshape(1, -1), compute_dtype) for s in shards], axis=1
        )
        full = mx.distributed.all_gather(shard, group=group)
        parts = mx.split(full, split_indices, axis=1)
        return [p.reshape(shape) for p, shape in zip(parts, full_shapes)]

    @gather.vjp
    def gather_vjp(shards, cotangents, _):
        shards = [shards] if isinstance(shards, mx.array) else list(shards)
        local_full = mx.concatenate([c.reshape(N, -1) for c in cotangents], axis=1)
        local_shard = mx.distributed.sum_scatter(local_full, group=group) / N
        parts = mx.split(local_shard, split_indices, axis=1)
        return [
            _maybe_cast(p.reshape(shape), s.dtype)
            for p, shape, s in zip(parts, shard_shapes, shards)
        ]

    return gather


def _maybe_shard(m, k, v):
    if isinstance(v, FullyShardedModule):
        return False
    return Module.valid_parameter_filter(m, k, v)


class FullyShardedModule(Module):
    """Wrap a module so each member of the group holds only a shard of its
    parameters.

    The full parameters are gathered for the forward pass and the gradients
    are reduce-scattered in the backward pass, so during training
    each member of the group stores and updates only its own shard.

    Every parameter is sharded along axis 0, so each parameter's size along
    that axis must be divisible by the size of ``group``.

    Use :func:`~ferrox.nn.layers.distributed.fully_shard` to wrap a module.

    Args:
        module (ferrox.nn.Module): The module whose parameters will be sharded.
        group (ferrox.distributed.Group, optional): The group to shard
            across. If not set, the global group is used. Default: ``None``.
        compute_dtype (ferrox.Dtype, optional): If set, the gathered
            parameters are cast to this dtype for the forward pass.
            Default: ``None``.
    """

    def __init__(
        self,
        module: Module,
        group: Optional[mx.distributed.Group] = None,
        compute_dtype: Optional[mx.Dtype] = None,
    ):
        super().__init__()
        group = group or mx.distributed.init()
        N = group.size()

        shard_params = module.filter_and_map(_maybe_shard)
        flat = tree_flatten(shard_params)
        for path, a in flat:
            if a.ndim == 0:
                raise ValueError(
                    f"Cannot shard parameter '{path}' because it is a scalar."
                )
            if a.shape[0] % N != 0:
                raise ValueError(
                    f"Cannot shard parameter '{path}' with shape {a.shape} "
                    f"across {N} devices: axis 0 must be divisible by {N}."
                )

        super(Module, self).__setattr__("_paths", [k for k, _ in flat])
        full_shapes = [a.shape for _, a in flat]
        shard_sizes = [a.size // N for _, a in flat]

        module.update(_shard(shard_params, lambda p, w: 0, group))

        self.module = module
        self._gather_fn = _make_gather_fn(
            group, full_shapes, shard_sizes, compute_dtype
        )

    def _extra_repr(self) -> str:
        return f"num_sharded_params={len(self._paths)}"

    def _gathered_call(self, fn, *args, **kwargs):
        shard_tree = self.module.filter_and_map(_maybe_shard)
        shards = [a for _, a in tree_flatten(shard_tree)]
        fulls = self._gather_fn(*shards)
        self.module.update(tree_unflatten(list(zip(self._paths, fulls))))
        try:
            return fn(*args, **kwargs)
        finally:
            self.module.update(shard_tree)

    def __call__(self, *args, **kwargs):
        """Calls the wrapped module with its full parameters gathered.

        Args:
            *args: Positional arguments of the wrapped module.
            **kwargs: Keyword arguments of the wrapped module.

        Returns:
            What the wrapped module returns.
        """
        return self._gathered_call(self.module, *args, **kwargs)

    def as_linear(self, *args, **kwargs):
        """Calls the wrapped module's ``as_linear`` (e.g. a tied embedding)
        with its full parameters gathered.

        Args:
            *args: Positional arguments of ``as_linear``.
            **kwargs: Keyword arguments of ``as_linear``.

        Returns:
            What the wrapped module's ``as_linear`` returns.
        """
        return self._gathered_call(self.module.as_linear, *args, **kwargs)


def fully_shard(
    module: Module,
    *,
    group: Optional[mx.distributed.Group] = None,
    compute_dtype: Optional[mx.Dtype] = None,
) -> Module:
    """Wrap ``module`` in a :class:`FullyShardedModule`.

    Args:
        module (ferrox.nn.Module): The module to wrap.
        group (ferrox.distributed.Group, optional): The group to shard
            across. If not set, the global group is used. Default: ``None``.
        compute_dtype (ferrox.Dtype, optional): If set, the gathered
            parameters are cast to this dtype for the forward pass.
            Default: ``None``.

    Returns:
        The wrapped :class:`FullyShardedModule`, or ``module`` unchanged.
    """
    group = group or mx.distributed.init()
    if group.size() == 1:
        return module
    if isinstance(module, FullyShardedModule):
        return module

    wrapped = FullyShardedModule(module, group=group, compute_dtype=compute_dtype)
    return wrapped if wrapped._paths else module
