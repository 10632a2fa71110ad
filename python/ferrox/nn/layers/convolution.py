"""Convolution layers: ``Conv1d``, ``Conv2d`` and ``Conv3d`` (channels last,
MLX's weight layout ``[out_channels, *kernel_size, in_channels / groups]``)."""

import math
from typing import Sequence, Union

import ferrox as fx
from ferrox.nn.layers.base import Module


def _check_input(name: str, x: fx.array, spatial_dims: int, in_channels: int) -> None:
    """A ValueError naming the layer unless ``x`` is ``[N, *spatial, C_in]``
    with ``spatial_dims`` spatial axes and ``in_channels`` channels (the
    inputs the convolution op itself accepts)."""
    if x.ndim != spatial_dims + 2:
        raise ValueError(
            f"[{name}] Invalid input array with {x.ndim} dimensions for {spatial_dims}D convolution. "
            f"Expected an array with {spatial_dims + 2} dimensions following the format [N, ..., C_in]."
        )
    if x.shape[-1] != in_channels:
        raise ValueError(f"[{name}] Expected an input with {in_channels} channels but got {x.shape[-1]} channels.")


def _tuple(value: Union[int, Sequence[int]], n: int):
    """An int repeated ``n`` times; anything else unchanged (as MLX)."""
    return (value,) * n if isinstance(value, int) else value


def _uniform_weight(shape: Sequence[int], fan_in: int) -> fx.array:
    r"""A weight of ``shape`` drawn from :math:`\mathcal{U}(-k, k)`, :math:`k = 1/\sqrt{\text{fan\_in}}`."""
    scale = math.sqrt(1 / fan_in)
    return fx.random.uniform(low=-scale, high=scale, shape=shape)


def _check_groups(in_channels: int, groups: int) -> None:
    """A ValueError unless ``groups`` divides ``in_channels`` (MLX's message)."""
    if in_channels % groups != 0:
        raise ValueError(
            f"The number of input channels ({in_channels}) must be divisible by the number of groups ({groups})"
        )


class Conv1d(Module):
    r"""A 1-dimensional convolution over a channels-last input ``[N, L, C]``.

    ``weight`` has shape ``[out_channels, kernel_size, in_channels / groups]``
    and is initialized from :math:`\mathcal{U}(-k, k)`, :math:`k =
    1/\sqrt{\text{in\_channels}/\text{groups} \cdot \text{kernel\_size}}`;
    ``bias`` (``[out_channels]``) starts at zero.

    Args:
        in_channels: the number of input channels.
        out_channels: the number of output channels.
        kernel_size: the size of the filters.
        stride: the stride of the filter. Default ``1``.
        padding: zeros added on both sides of the input. Default ``0``.
        dilation: the dilation of the filter. Default ``1``.
        groups: the number of channel groups. Default ``1``.
        bias: whether to add a learned bias. Default ``True``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: int = 0,
        dilation: int = 1,
        groups: int = 1,
        bias: bool = True,
    ):
        super().__init__()
        _check_groups(in_channels, groups)
        self.weight = _uniform_weight(
            (out_channels, kernel_size, in_channels // groups), in_channels // groups * kernel_size
        )
        if bias:
            self.bias = fx.zeros((out_channels,))
        self.padding = padding
        self.dilation = dilation
        self.stride = stride
        self.groups = groups

    def _extra_repr(self) -> str:
        return (
            f"{self.weight.shape[-1] * self.groups}, {self.weight.shape[0]}, "
            f"kernel_size={self.weight.shape[1]}, stride={self.stride}, "
            f"padding={self.padding}, dilation={self.dilation}, "
            f"groups={self.groups}, bias={'bias' in self}"
        )

    def __call__(self, x: fx.array) -> fx.array:
        _check_input("Conv1d", x, 1, self.weight.shape[-1] * self.groups)
        y = fx.conv1d(x, self.weight, self.stride, self.padding, self.dilation, self.groups)
        if "bias" in self:
            y = y + self.bias
        return y


class Conv2d(Module):
    r"""A 2-dimensional convolution over a channels-last input ``[N, H, W, C]``.

    ``weight`` has shape ``[out_channels, kH, kW, in_channels / groups]`` and
    is initialized from :math:`\mathcal{U}(-k, k)`, :math:`k =
    1/\sqrt{\text{in\_channels}/\text{groups} \cdot kH \cdot kW}`; ``bias``
    (``[out_channels]``) starts at zero. ``kernel_size``, ``stride`` and
    ``padding`` given as an int apply to both spatial axes.

    Args:
        in_channels: the number of input channels.
        out_channels: the number of output channels.
        kernel_size: the size of the filters (int or pair).
        stride: the stride of the filter (int or pair). Default ``1``.
        padding: zeros added on both sides of each spatial axis (int or pair). Default ``0``.
        dilation: the dilation of the filter (int or pair). Default ``1``.
        groups: the number of channel groups. Default ``1``.
        bias: whether to add a learned bias. Default ``True``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Union[int, tuple],
        stride: Union[int, tuple] = 1,
        padding: Union[int, tuple] = 0,
        dilation: Union[int, tuple] = 1,
        groups: int = 1,
        bias: bool = True,
    ):
        super().__init__()
        _check_groups(in_channels, groups)
        kernel_size, stride, padding = (_tuple(v, 2) for v in (kernel_size, stride, padding))
        self.weight = _uniform_weight(
            (out_channels, *kernel_size, in_channels // groups), in_channels // groups * kernel_size[0] * kernel_size[1]
        )
        if bias:
            self.bias = fx.zeros((out_channels,))
        self.padding = padding
        self.stride = stride
        self.dilation = dilation
        self.groups = groups

    def _extra_repr(self) -> str:
        return (
            f"{self.weight.shape[-1] * self.groups}, {self.weight.shape[0]}, "
            f"kernel_size={self.weight.shape[1:3]}, stride={self.stride}, "
            f"padding={self.padding}, dilation={self.dilation}, "
            f"groups={self.groups}, bias={'bias' in self}"
        )

    def __call__(self, x: fx.array) -> fx.array:
        _check_input("Conv2d", x, 2, self.weight.shape[-1] * self.groups)
        y = fx.conv2d(x, self.weight, self.stride, self.padding, self.dilation, self.groups)
        if "bias" in self:
            y = y + self.bias
        return y


class Conv3d(Module):
    r"""A 3-dimensional convolution over a channels-last input ``[N, D, H, W,
    C]``.

    ``weight`` has shape ``[out_channels, kD, kH, kW, in_channels]`` and is
    initialized from :math:`\mathcal{U}(-k, k)`, :math:`k =
    1/\sqrt{\text{in\_channels} \cdot kD \cdot kH \cdot kW}`; ``bias``
    (``[out_channels]``) starts at zero. ``kernel_size``, ``stride`` and
    ``padding`` given as an int apply to all three spatial axes.

    Args:
        in_channels: the number of input channels.
        out_channels: the number of output channels.
        kernel_size: the size of the filters (int or triple).
        stride: the stride of the filter (int or triple). Default ``1``.
        padding: zeros added on both sides of each spatial axis (int or triple). Default ``0``.
        dilation: the dilation of the filter (int or triple). Default ``1``.
        bias: whether to add a learned bias. Default ``True``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Union[int, tuple],
        stride: Union[int, tuple] = 1,
        padding: Union[int, tuple] = 0,
        dilation: Union[int, tuple] = 1,
        bias: bool = True,
    ):
        super().__init__()
        kernel_size, stride, padding = (_tuple(v, 3) for v in (kernel_size, stride, padding))
        self.weight = _uniform_weight((out_channels, *kernel_size, in_channels), in_channels * math.prod(kernel_size))
        if bias:
            self.bias = fx.zeros((out_channels,))
        self.padding = padding
        self.stride = stride
        self.dilation = dilation

    def _extra_repr(self) -> str:
        return (
            f"{self.weight.shape[-1]}, {self.weight.shape[0]}, "
            f"kernel_size={self.weight.shape[1:4]}, stride={self.stride}, "
            f"padding={self.padding}, dilation={self.dilation}, "
            f"bias={'bias' in self}"
        )

    def __call__(self, x: fx.array) -> fx.array:
        _check_input("Conv3d", x, 3, self.weight.shape[-1])
        y = fx.conv3d(x, self.weight, self.stride, self.padding, self.dilation)
        if "bias" in self:
            y = y + self.bias
        return y
