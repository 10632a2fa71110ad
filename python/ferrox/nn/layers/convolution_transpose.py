"""Transposed convolution layers: ``ConvTranspose1d``, ``ConvTranspose2d``
and ``ConvTranspose3d`` (channels last, MLX's weight layout
``[out_channels, *kernel_size, in_channels]``)."""

import math
from typing import Union

import ferrox as fx
from ferrox.nn.layers.base import Module
from ferrox.nn.layers.convolution import _check_input, _tuple, _uniform_weight


class _ConvTranspose(Module):
    """The shared construction, repr and call of the transposed convolutions
    over ``_dims`` spatial axes (``_conv`` is the matching op)."""

    _dims: int
    _conv: staticmethod

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias):
        super().__init__()
        dims = self._dims
        if dims > 1:
            kernel_size, stride, padding, output_padding = (
                _tuple(v, dims) for v in (kernel_size, stride, padding, output_padding)
            )
            kernel = tuple(kernel_size)
        else:
            kernel = (kernel_size,)
        self.weight = _uniform_weight((out_channels, *kernel, in_channels), in_channels * math.prod(kernel))
        if bias:
            self.bias = fx.zeros((out_channels,))
        self.padding = padding
        self.dilation = dilation
        self.stride = stride
        self.output_padding = output_padding

    def _extra_repr(self) -> str:
        kernel = self.weight.shape[1] if self._dims == 1 else self.weight.shape[1 : 1 + self._dims]
        return (
            f"{self.weight.shape[-1]}, {self.weight.shape[0]}, "
            f"kernel_size={kernel}, stride={self.stride}, "
            f"padding={self.padding}, dilation={self.dilation}, "
            f"output_padding={self.output_padding}, "
            f"bias={'bias' in self}"
        )

    def __call__(self, x: fx.array) -> fx.array:
        _check_input(type(self).__name__, x, self._dims, self.weight.shape[-1])
        y = self._conv(x, self.weight, self.stride, self.padding, self.dilation, self.output_padding)
        if "bias" in self:
            y = y + self.bias
        return y


class ConvTranspose1d(_ConvTranspose):
    r"""A 1-dimensional transposed convolution over a channels-last input
    ``[N, L, C]``.

    ``weight`` has shape ``[out_channels, kernel_size, in_channels]`` and is
    initialized from :math:`\mathcal{U}(-k, k)`, :math:`k =
    1/\sqrt{\text{in\_channels} \cdot \text{kernel\_size}}`; ``bias``
    (``[out_channels]``) starts at zero.

    Args:
        in_channels: the number of input channels.
        out_channels: the number of output channels.
        kernel_size: the size of the filters.
        stride: the stride of the filter. Default ``1``.
        padding: the padding of the matching convolution. Default ``0``.
        dilation: the dilation of the filter. Default ``1``.
        output_padding: extra size added to one side of the output. Default ``0``.
        bias: whether to add a learned bias. Default ``True``.
    """

    _dims = 1
    _conv = staticmethod(fx.conv_transpose1d)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: int = 0,
        dilation: int = 1,
        output_padding: int = 0,
        bias: bool = True,
    ):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias)


class ConvTranspose2d(_ConvTranspose):
    r"""A 2-dimensional transposed convolution over a channels-last input
    ``[N, H, W, C]``.

    ``weight`` has shape ``[out_channels, kH, kW, in_channels]`` and is
    initialized from :math:`\mathcal{U}(-k, k)`, :math:`k =
    1/\sqrt{\text{in\_channels} \cdot kH \cdot kW}`; ``bias``
    (``[out_channels]``) starts at zero. An int ``kernel_size``, ``stride``,
    ``padding`` or ``output_padding`` applies to both spatial axes.

    Args:
        in_channels: the number of input channels.
        out_channels: the number of output channels.
        kernel_size: the size of the filters (int or pair).
        stride: the stride of the filter (int or pair). Default ``1``.
        padding: the padding of the matching convolution (int or pair). Default ``0``.
        dilation: the dilation of the filter (int or pair). Default ``1``.
        output_padding: extra size added to one side of the output (int or pair). Default ``0``.
        bias: whether to add a learned bias. Default ``True``.
    """

    _dims = 2
    _conv = staticmethod(fx.conv_transpose2d)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Union[int, tuple],
        stride: Union[int, tuple] = 1,
        padding: Union[int, tuple] = 0,
        dilation: Union[int, tuple] = 1,
        output_padding: Union[int, tuple] = 0,
        bias: bool = True,
    ):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias)


class ConvTranspose3d(_ConvTranspose):
    r"""A 3-dimensional transposed convolution over a channels-last input
    ``[N, D, H, W, C]``.

    ``weight`` has shape ``[out_channels, kD, kH, kW, in_channels]`` and is
    initialized from :math:`\mathcal{U}(-k, k)`, :math:`k =
    1/\sqrt{\text{in\_channels} \cdot kD \cdot kH \cdot kW}`; ``bias``
    (``[out_channels]``) starts at zero. An int ``kernel_size``, ``stride``,
    ``padding`` or ``output_padding`` applies to all three spatial axes.

    Args:
        in_channels: the number of input channels.
        out_channels: the number of output channels.
        kernel_size: the size of the filters (int or triple).
        stride: the stride of the filter (int or triple). Default ``1``.
        padding: the padding of the matching convolution (int or triple). Default ``0``.
        dilation: the dilation of the filter (int or triple). Default ``1``.
        output_padding: extra size added to one side of the output (int or triple). Default ``0``.
        bias: whether to add a learned bias. Default ``True``.
    """

    _dims = 3
    _conv = staticmethod(fx.conv_transpose3d)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Union[int, tuple],
        stride: Union[int, tuple] = 1,
        padding: Union[int, tuple] = 0,
        dilation: Union[int, tuple] = 1,
        output_padding: Union[int, tuple] = 0,
        bias: bool = True,
    ):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias)
