"""Normalization layers: ``LayerNorm``, ``RMSNorm``, ``InstanceNorm``,
``GroupNorm`` and ``BatchNorm``.

``LayerNorm`` and ``RMSNorm`` normalize over the last axis with the fused
kernels ``ferrox.fast.layer_norm`` / ``ferrox.fast.rms_norm``;
``InstanceNorm`` and ``GroupNorm`` (``pytorch_compatible``) use
``fast.layer_norm`` too, as MLX's do."""

import math
from typing import Optional

import ferrox as fx
from ferrox.nn.layers.base import Module


class LayerNorm(Module):
    r"""Layer normalization over the last axis:
    :math:`y = \frac{x - E[x]}{\sqrt{Var[x] + \epsilon}} \gamma + \beta`,
    with per-feature ``weight`` :math:`\gamma` (ones) and ``bias``
    :math:`\beta` (zeros).

    Args:
        dims: the size of the last axis.
        eps: added to the variance for numerical stability. Default ``1e-5``.
        affine: learn ``weight`` (and ``bias``). Default ``True``.
        bias: with ``affine``, learn ``bias`` too. Default ``True``.
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = True, bias: bool = True):
        super().__init__()
        if eps <= 0.0:
            raise ValueError(f"[LayerNorm] 'eps' must be positive but got {eps}.")
        if affine:
            self.weight = fx.ones((dims,))
            if bias:
                self.bias = fx.zeros((dims,))
        self.eps = eps
        self.dims = dims

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x: fx.array) -> fx.array:
        weight = self["weight"] if "weight" in self else None
        bias = self["bias"] if "bias" in self else None
        return fx.fast.layer_norm(x, weight, bias, self.eps)


class RMSNorm(Module):
    r"""Root-mean-square normalization over the last axis:
    :math:`y = \frac{x}{\sqrt{E[x^2] + \epsilon}} \gamma`, with per-feature
    ``weight`` :math:`\gamma` (ones).

    Args:
        dims: the size of the last axis.
        eps: added to the mean square for numerical stability. Default ``1e-5``.
    """

    def __init__(self, dims: int, eps: float = 1e-5):
        super().__init__()
        if eps <= 0.0:
            raise ValueError(f"[RMSNorm] 'eps' must be positive but got {eps}.")
        self.weight = fx.ones((dims,))
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"

    def __call__(self, x: fx.array) -> fx.array:
        return fx.fast.rms_norm(x, self["weight"], self.eps)


def _check_channels(name: str, x: fx.array, channels: int) -> None:
    """A ValueError naming the layer unless ``x``'s last axis has
    ``channels`` entries."""
    if x.shape[-1] != channels:
        raise ValueError(f"[{name}] Expected an input with {channels} features in its last axis but got {x.shape[-1]}.")


class InstanceNorm(Module):
    r"""Instance normalization of ``[N, ..., C]`` inputs: each sample's
    channels are normalized over the spatial axes,
    :math:`y = \frac{x - E[x]}{\sqrt{Var[x] + \epsilon}} \gamma + \beta`,
    with the arithmetic of :class:`LayerNorm`.

    Args:
        dims: the number of channels ``C``.
        eps: added to the variance for numerical stability. Default ``1e-5``.
        affine: learn per-channel ``weight`` :math:`\gamma` (ones) and ``bias``
            :math:`\beta` (zeros). Default ``False``.
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = False):
        super().__init__()
        if eps <= 0.0:
            raise ValueError(f"[InstanceNorm] 'eps' must be positive but got {eps}.")
        if affine:
            self.weight = fx.ones((dims,))
            self.bias = fx.zeros((dims,))
        self.dims = dims
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x: fx.array) -> fx.array:
        if x.ndim < 3:
            raise ValueError(
                f"[InstanceNorm] InstanceNorm expects inputs with at least 3 dimensions (N, ..., C) but the input "
                f"has {x.ndim} dimensions."
            )
        _check_channels("InstanceNorm", x, self.dims)
        batch, *spatial, features = x.shape
        # [N, *spatial, C] -> [N, C, prod(spatial)], normalized over the last axis, and back.
        channels_first = fx.transpose(x, (0, x.ndim - 1, *range(1, x.ndim - 1)))
        y = fx.fast.layer_norm(channels_first.reshape(batch, features, -1), None, None, self.eps)
        y = fx.transpose(y.reshape(batch, features, *spatial), (0, *range(2, len(spatial) + 2), 1))
        return (self.weight * y + self.bias) if "weight" in self else y


class GroupNorm(Module):
    r"""Group normalization of ``[N, ..., C]`` inputs: the channels are
    split into ``num_groups`` groups and each sample's group is normalized
    over its channels and the spatial axes,
    :math:`y = \frac{x - E[x]}{\sqrt{Var[x] + \epsilon}} \gamma + \beta`.

    As in MLX, channel ``c`` belongs to group ``c % num_groups`` unless
    ``pytorch_compatible``, which groups consecutive channels (group ``c //
    (C / num_groups)``, as PyTorch) and computes with :class:`LayerNorm`'s
    arithmetic.

    Args:
        num_groups: the number of groups; must divide ``dims``.
        dims: the number of channels ``C``.
        eps: added to the variance for numerical stability. Default ``1e-5``.
        affine: learn per-channel ``weight`` :math:`\gamma` (ones) and ``bias``
            :math:`\beta` (zeros). Default ``True``.
        pytorch_compatible: group as PyTorch does. Default ``False``.
    """

    def __init__(
        self,
        num_groups: int,
        dims: int,
        eps: float = 1e-5,
        affine: bool = True,
        pytorch_compatible: bool = False,
    ):
        super().__init__()
        if eps <= 0.0:
            raise ValueError(f"[GroupNorm] 'eps' must be positive but got {eps}.")
        if num_groups <= 0:
            raise ValueError(f"The number of groups ({num_groups}) must be a positive integer.")
        if dims <= 0:
            raise ValueError(f"The number of features ({dims}) must be a positive integer.")
        if dims % num_groups != 0:
            raise ValueError(
                f"The number of features ({dims}) must be evenly divisible by the number of groups ({num_groups})."
            )
        if affine:
            self.bias = fx.zeros((dims,))
            self.weight = fx.ones((dims,))
        self.num_groups = num_groups
        self.dims = dims
        self.eps = eps
        self.pytorch_compatible = pytorch_compatible

    def _extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.dims}, eps={self.eps}, "
            f"affine={'weight' in self}, pytorch_compatible={self.pytorch_compatible}"
        )

    def _pytorch_compatible_group_norm(self, x: fx.array) -> fx.array:
        """Normalizes groups of consecutive channels."""
        batch, *rest, dims = x.shape
        group_size = dims // self.num_groups
        x = x.reshape(batch, -1, self.num_groups, group_size)
        x = x.transpose(0, 2, 1, 3).reshape(batch, self.num_groups, -1)
        x = fx.fast.layer_norm(x, None, None, self.eps)
        x = x.reshape(batch, self.num_groups, -1, group_size)
        return x.transpose(0, 2, 1, 3).reshape(batch, *rest, dims)

    def _group_norm(self, x: fx.array) -> fx.array:
        """Normalizes the groups of channels ``c % num_groups``."""
        batch, *rest, dims = x.shape
        x = x.reshape(batch, -1, self.num_groups)
        means = fx.mean(x, axis=1, keepdims=True)
        var = fx.var(x, axis=1, keepdims=True)
        x = (x - means) * fx.rsqrt(var + self.eps)
        return x.reshape(batch, *rest, dims)

    def __call__(self, x: fx.array) -> fx.array:
        if x.ndim < 2:
            raise ValueError(
                f"[GroupNorm] Expected an input with at least 2 dimensions (N, ..., C) but got {x.ndim} dimensions."
            )
        _check_channels("GroupNorm", x, self.dims)
        x = self._pytorch_compatible_group_norm(x) if self.pytorch_compatible else self._group_norm(x)
        return (self.weight * x + self.bias) if "weight" in self else x


class BatchNorm(Module):
    r"""Batch normalization of ``NC``, ``NLC`` or ``NHWC`` inputs: each
    feature is normalized over the batch and spatial axes,
    :math:`y = \frac{x - E[x]}{\sqrt{Var[x] + \epsilon}} \gamma + \beta`.

    In training mode the batch statistics normalize the input and, with
    ``track_running_stats``, update ``running_mean`` and ``running_var``
    (the unbiased variance) by :math:`r \leftarrow (1 - m) r + m s`; in
    evaluation mode the running statistics normalize instead. The running
    statistics are frozen (never trainable), also after :meth:`unfreeze`.

    Args:
        num_features: the number of features ``C``.
        eps: added to the variance for numerical stability. Default ``1e-5``.
        momentum: the weight :math:`m` of a batch in the running statistics. Default ``0.1``.
        affine: learn per-feature ``weight`` :math:`\gamma` (ones) and ``bias``
            :math:`\beta` (zeros). Default ``True``.
        track_running_stats: keep ``running_mean`` (zeros) and ``running_var`` (ones). Default ``True``.
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
    ):
        super().__init__()
        if eps <= 0.0:
            raise ValueError(f"[BatchNorm] 'eps' must be positive but got {eps}.")
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = fx.ones((num_features,))
            self.bias = fx.zeros((num_features,))
        if track_running_stats:
            self.running_mean = fx.zeros((num_features,))
            self.running_var = fx.ones((num_features,))
            self.freeze(keys=["running_mean", "running_var"], recurse=False)

    def unfreeze(self, *args, **kwargs) -> Module:
        """:meth:`Module.unfreeze`, keeping ``running_mean`` and
        ``running_var`` frozen."""
        super().unfreeze(*args, **kwargs)
        self.freeze(keys=["running_mean", "running_var"], recurse=False)
        return self

    def _extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, "
            f"momentum={self.momentum}, affine={'weight' in self}, "
            f"track_running_stats={self.track_running_stats}"
        )

    def _calc_stats(self, x: fx.array, ddof: int = 0):
        """The mean and variance (with ``ddof``) of each feature over the
        batch and spatial axes."""
        axes = tuple(range(0, x.ndim - 1))
        return fx.mean(x, axis=axes), fx.var(x, axis=axes, ddof=ddof)

    def __call__(self, x: fx.array) -> fx.array:
        if x.ndim < 2 or x.ndim > 4:
            raise ValueError(f"[BatchNorm] Expected input tensor to have 2, 3 or 4 dimensions, but got {x.ndim}")
        _check_channels("BatchNorm", x, self.num_features)
        if self.training and math.prod(x.shape[:-1]) == 1:
            raise ValueError("[BatchNorm] BatchNorm training requires more than one value per channel.")

        mean, var = self._calc_stats(x)
        if self.training and self.track_running_stats:
            mu = self.momentum
            _, unbiased_var = self._calc_stats(x, ddof=1)
            self.running_mean = (1 - mu) * self.running_mean + mu * mean
            self.running_var = (1 - mu) * self.running_var + mu * unbiased_var
        elif self.track_running_stats:
            mean = self.running_mean
            var = self.running_var

        x = (x - mean) * fx.rsqrt(var + self.eps)
        return (self.weight * x + self.bias) if "weight" in self else x
