"""Pooling layers: ``MaxPool1d/2d/3d`` and ``AvgPool1d/2d/3d`` over the
spatial axes of a channels-last input, built (as MLX's) from a strided view
of the sliding windows reduced by ``max`` or ``mean``."""

import math
from typing import Callable, List, Optional, Sequence, Tuple, Union

import ferrox as fx
from ferrox.nn.layers.base import Module


def _value_or_list(value, n: int, msg: str) -> List[int]:
    """``value`` as a list of ``n`` ints (an int is repeated); a ValueError
    with ``msg`` for a sequence of another length or a non-int."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(msg)
        return list(value)
    if not isinstance(value, int):
        raise ValueError(msg)
    return [value] * n


def _sliding_windows(x: fx.array, window_shape: Sequence[int], window_strides: Sequence[int]) -> fx.array:
    """The windows of ``x`` (``[N, *spatial, C]``) as an array ``[N,
    *out_spatial, *window_shape, C]``: a reshape and transpose when the
    windows tile the input exactly, a strided view otherwise."""
    spatial = x.shape[1:-1]
    if all(w == s and size % w == 0 for size, w, s in zip(spatial, window_shape, window_strides)):
        # Non-overlapping windows: [N, n0, w0, n1, w1, ..., C] -> [N, n0, n1, ..., w0, w1, ..., C].
        split = [x.shape[0]]
        for size, w in zip(spatial, window_shape):
            split += [size // w, w]
        split.append(x.shape[-1])
        last = len(split) - 1
        return x.reshape(split).transpose([0, *range(1, last, 2), *range(2, last, 2), last])

    # Row-major strides of x, in elements.
    strides = [math.prod(x.shape[i + 1 :]) for i in range(x.ndim)]
    out_spatial = [(size - w) // s + 1 for size, w, s in zip(spatial, window_shape, window_strides)]
    shape = [x.shape[0], *out_spatial, *window_shape, x.shape[-1]]
    view_strides = [strides[0], *(st * s for st, s in zip(strides[1:-1], window_strides)), *strides[1:-1], strides[-1]]
    return fx.as_strided(x, shape, view_strides)


class _Pool(Module):
    """A pooling layer: pads the spatial axes with ``padding_value``, takes
    the sliding windows and reduces them with ``pooling_function``."""

    def __init__(
        self,
        pooling_function: Callable,
        kernel_size: List[int],
        stride: List[int],
        padding: List[Tuple[int, int]],
        padding_value: float,
    ):
        super().__init__()
        class_name = type(self).__name__
        for name, values in (("kernel_size", kernel_size), ("stride", stride)):
            if any(v <= 0 for v in values):
                raise ValueError(f"[{class_name}] '{name}' must be positive but got {tuple(values)}.")
        if any(p[0] < 0 for p in padding):
            raise ValueError(
                f"[{class_name}] 'padding' must be non-negative but got {tuple(p[0] for p in padding)}."
            )
        self._pooling_function = pooling_function
        self._kernel_size = kernel_size
        self._stride = stride
        self._padding = padding
        self._padding_value = padding_value
        self._axes = tuple(range(-len(kernel_size) - 1, -1, 1))

    def _extra_repr(self) -> str:
        ks = tuple(self._kernel_size)
        st = tuple(self._stride)
        pd = tuple(p[0] for p in self._padding)
        return f"kernel_size={ks}, stride={st}, padding={pd}"

    def __call__(self, x: fx.array) -> fx.array:
        dims = len(self._kernel_size)
        if x.ndim != dims + 2:
            raise ValueError(
                f"[{type(self).__name__}] Expected an input with {dims + 2} dimensions [N, ..., C] "
                f"({dims} spatial) but got {x.ndim} dimensions."
            )
        if any(p[0] > 0 for p in self._padding):
            x = fx.pad(x, [(0, 0)] + self._padding + [(0, 0)], constant_values=self._padding_value)
        spatial = x.shape[1:-1]
        if any((size - w) // s + 1 < 0 for size, w, s in zip(spatial, self._kernel_size, self._stride)):
            # A negative number of windows, which MLX's as_strided refuses too. A window longer
            # than its axis with (size - window) // stride == -1 gives no windows (as in MLX).
            raise ValueError(
                f"[{type(self).__name__}] The pooling window {tuple(self._kernel_size)} with stride "
                f"{tuple(self._stride)} does not fit the (padded) input's spatial shape {tuple(spatial)}."
            )
        x = _sliding_windows(x, self._kernel_size, self._stride)
        return self._pooling_function(x, self._axes)


class _PoolNd(_Pool):
    """Parses ``kernel_size``, ``stride`` (default: ``kernel_size``) and
    ``padding`` for ``_dims`` spatial axes (ints or tuples of ``_dims``
    ints)."""

    _dims: int

    def __init__(self, pooling_function, padding_value, kernel_size, stride, padding):
        class_name = type(self).__name__
        n = self._dims
        what = "1 integer" if n == 1 else f"{n} integers"
        msg = "[{}] '{}' must be an integer or a tuple containing " + what
        kernel_size = _value_or_list(kernel_size, n, msg.format(class_name, "kernel_size"))
        if stride is not None:
            stride = _value_or_list(stride, n, msg.format(class_name, "stride"))
        else:
            stride = kernel_size
        padding = _value_or_list(padding, n, msg.format(class_name, "padding"))
        padding = [(p, p) for p in padding]
        super().__init__(pooling_function, kernel_size, stride, padding, padding_value)


class MaxPool1d(_PoolNd):
    r"""1-dimensional max pooling of ``[N, L, C]`` inputs: the maximum of
    each window of ``kernel_size`` positions, windows ``stride`` apart.

    Args:
        kernel_size: the size of the window (int or 1-tuple).
        stride: the distance between windows. Default: ``kernel_size``.
        padding: :math:`-\infty` positions added on both sides. Default ``0``.
    """

    _dims = 1

    def __init__(
        self,
        kernel_size: Union[int, Tuple[int]],
        stride: Optional[Union[int, Tuple[int]]] = None,
        padding: Union[int, Tuple[int]] = 0,
    ):
        super().__init__(fx.max, -float("inf"), kernel_size, stride, padding)


class AvgPool1d(_PoolNd):
    r"""1-dimensional average pooling of ``[N, L, C]`` inputs: the mean of
    each window of ``kernel_size`` positions, windows ``stride`` apart.

    Args:
        kernel_size: the size of the window (int or 1-tuple).
        stride: the distance between windows. Default: ``kernel_size``.
        padding: zeros added on both sides (counted in the mean). Default ``0``.
    """

    _dims = 1

    def __init__(
        self,
        kernel_size: Union[int, Tuple[int]],
        stride: Optional[Union[int, Tuple[int]]] = None,
        padding: Union[int, Tuple[int]] = 0,
    ):
        super().__init__(fx.mean, 0, kernel_size, stride, padding)


class MaxPool2d(_PoolNd):
    r"""2-dimensional max pooling of ``[N, H, W, C]`` inputs: the maximum of
    each ``kernel_size`` window, windows ``stride`` apart. An int applies to
    both spatial axes.

    Args:
        kernel_size: the size of the window (int or pair).
        stride: the distance between windows. Default: ``kernel_size``.
        padding: :math:`-\infty` positions added on both sides of each axis. Default ``0``.
    """

    _dims = 2

    def __init__(
        self,
        kernel_size: Union[int, Tuple[int, int]],
        stride: Optional[Union[int, Tuple[int, int]]] = None,
        padding: Optional[Union[int, Tuple[int, int]]] = 0,
    ):
        super().__init__(fx.max, -float("inf"), kernel_size, stride, padding)


class AvgPool2d(_PoolNd):
    r"""2-dimensional average pooling of ``[N, H, W, C]`` inputs: the mean of
    each ``kernel_size`` window, windows ``stride`` apart. An int applies to
    both spatial axes.

    Args:
        kernel_size: the size of the window (int or pair).
        stride: the distance between windows. Default: ``kernel_size``.
        padding: zeros added on both sides of each axis (counted in the mean). Default ``0``.
    """

    _dims = 2

    def __init__(
        self,
        kernel_size: Union[int, Tuple[int, int]],
        stride: Optional[Union[int, Tuple[int, int]]] = None,
        padding: Optional[Union[int, Tuple[int, int]]] = 0,
    ):
        super().__init__(fx.mean, 0, kernel_size, stride, padding)


class MaxPool3d(_PoolNd):
    r"""3-dimensional max pooling of ``[N, D, H, W, C]`` inputs: the maximum
    of each ``kernel_size`` window, windows ``stride`` apart. An int applies
    to all three spatial axes.

    Args:
        kernel_size: the size of the window (int or triple).
        stride: the distance between windows. Default: ``kernel_size``.
        padding: :math:`-\infty` positions added on both sides of each axis. Default ``0``.
    """

    _dims = 3

    def __init__(
        self,
        kernel_size: Union[int, Tuple[int, int, int]],
        stride: Optional[Union[int, Tuple[int, int, int]]] = None,
        padding: Optional[Union[int, Tuple[int, int, int]]] = 0,
    ):
        super().__init__(fx.max, -float("inf"), kernel_size, stride, padding)


class AvgPool3d(_PoolNd):
    r"""3-dimensional average pooling of ``[N, D, H, W, C]`` inputs: the mean
    of each ``kernel_size`` window, windows ``stride`` apart. An int applies
    to all three spatial axes.

    Args:
        kernel_size: the size of the window (int or triple).
        stride: the distance between windows. Default: ``kernel_size``.
        padding: zeros added on both sides of each axis (counted in the mean). Default ``0``.
    """

    _dims = 3

    def __init__(
        self,
        kernel_size: Union[int, Tuple[int, int, int]],
        stride: Optional[Union[int, Tuple[int, int, int]]] = None,
        padding: Optional[Union[int, Tuple[int, int, int]]] = 0,
    ):
        super().__init__(fx.mean, 0, kernel_size, stride, padding)
