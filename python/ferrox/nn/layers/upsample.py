"""Spatial upsampling of channels-last inputs ``[N, *spatial, C]``: the
``Upsample`` layer and the functions ``upsample_nearest``,
``upsample_linear`` and ``upsample_cubic`` (MLX's sampling grids, kernels
and antialiasing filters)."""

import operator
from functools import reduce
from itertools import product
from math import ceil
from typing import Callable, Literal, Tuple, Union

import ferrox as fx
from ferrox.nn.layers.base import Module


def _grid_shape(ndims: int, dim: int) -> list:
    """``[1] * ndims`` with ``-1`` at ``dim``: a grid along one spatial axis
    that broadcasts against the others."""
    shape = [1] * ndims
    shape[dim] = -1
    return shape


def _scaled_indices(N: int, scale: float, align_corners: bool, dim: int, ndims: int) -> fx.array:
    """The (fractional) input coordinate of each of the ``int(scale * N)``
    outputs along axis ``dim``: corners mapped onto corners with
    ``align_corners``, pixel centers onto pixel centers otherwise."""
    M = int(scale * N)
    if align_corners:
        indices = fx.arange(M, dtype=fx.float32) * ((N - 1) / max(M - 1, 1))
    else:
        step = 1 / scale
        start = ((M - 1) * step - N + 1) / 2
        indices = fx.arange(M, dtype=fx.float32) * step - start
    return indices.reshape(_grid_shape(ndims, dim))


def _nearest_indices(N: int, scale: float, dim: int, ndims: int) -> fx.array:
    """The input index nearest to each output along axis ``dim``."""
    M = int(scale * N)
    indices = fx.arange(M, dtype=fx.float32)
    if M > N:
        indices = ((indices + 0.5) * (N / M) - 0.5).round()
    else:
        indices = indices * (N / M)
    return indices.astype(fx.uint32).reshape(_grid_shape(ndims, dim))


def _linear_indices(N: int, scale: float, align_corners: bool, dim: int, ndims: int):
    """The two neighbouring input indices of each output along ``dim`` and
    their linear weights, as ``((left, w_left), (right, w_right))``."""
    indices = fx.clip(_scaled_indices(N, scale, align_corners, dim, ndims), a_min=0, a_max=N - 1)
    indices_l = fx.floor(indices)
    indices_r = fx.ceil(indices)
    weight = fx.expand_dims(indices - indices_l, -1)
    return (indices_l.astype(fx.uint32), 1 - weight), (indices_r.astype(fx.uint32), weight)


def _cubic_weight(x: fx.array, near: bool) -> fx.array:
    """Keys' cubic kernel with ``a = -0.75`` at distance ``x``: the inner
    piece (``|x| <= 1``) when ``near``, the outer (``1 < |x| <= 2``)
    otherwise."""
    a = -0.75
    if near:
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    return (((x - 5) * x + 8) * x - 4) * a


def _cubic_indices(N: int, scale: float, align_corners: bool, dim: int, ndims: int):
    """The four neighbouring input indices of each output along ``dim``
    (clamped to the border) and their cubic weights."""
    indices = _scaled_indices(N, scale, align_corners, dim, ndims)
    indices_l1 = fx.floor(indices)
    indices_r1 = fx.floor(indices + 1)
    indices_l2 = indices_l1 - 1
    indices_r2 = indices_r1 + 1
    taps = ((indices_l1, True), (indices_r1, True), (indices_l2, False), (indices_r2, False))
    return tuple(
        (
            fx.clip(grid, a_min=0, a_max=N - 1).astype(fx.uint32),
            _cubic_weight(fx.abs(indices - grid), near)[..., None],
        )
        for grid, near in taps
    )


def _triangle_kernel(x: fx.array) -> fx.array:
    """The triangle (linear) filter, support radius 1."""
    return fx.maximum(1.0 - x, 0.0)


def _cubic_kernel(x: fx.array) -> fx.array:
    """Keys' cubic filter with ``a = -0.5`` (PIL's), support radius 2: the
    kernel of antialiased cubic interpolation."""
    a = -0.5
    w_inner = ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    w_outer = (((x - 5) * x + 8) * x - 4) * a
    return fx.where(x <= 1.0, w_inner, fx.where(x <= 2.0, w_outer, 0.0))


def _aa_indices(
    N: int, scale: float, align_corners: bool, dim: int, ndims: int, kernel_fn: Callable, kernel_radius: float
):
    """The taps of an antialiasing filter along ``dim``: ``kernel_fn``
    widened by ``1/scale`` when downscaling, out-of-range taps given zero
    weight and the weights of each output normalized to sum to one."""
    indices = _scaled_indices(N, scale, align_corners, dim, ndims)
    inv_scale = 1.0 / scale if scale < 1 else 1.0
    num_taps = ceil(kernel_radius * inv_scale) + 1

    all_idx = []
    all_w = []
    for k in range(-num_taps + 1, num_taps):
        idx = fx.floor(indices) + k
        w = kernel_fn(fx.abs(indices - idx) / inv_scale)
        all_idx.append(idx)
        all_w.append(fx.where((idx >= 0) & (idx < N), w, 0.0))

    w_sum = sum(all_w)
    w_sum = fx.where(w_sum > 0, w_sum, 1.0)
    return tuple(
        (fx.clip(idx, a_min=0, a_max=N - 1).astype(fx.uint32), fx.expand_dims(w / w_sum, -1))
        for idx, w in zip(all_idx, all_w)
    )


def _linear_aa_indices(N: int, scale: float, align_corners: bool, dim: int, ndims: int):
    """Antialiased linear taps (the triangle filter)."""
    return _aa_indices(N, scale, align_corners, dim, ndims, kernel_fn=_triangle_kernel, kernel_radius=1.0)


def _cubic_aa_indices(N: int, scale: float, align_corners: bool, dim: int, ndims: int):
    """Antialiased cubic taps (Keys' filter with ``a = -0.5``)."""
    return _aa_indices(N, scale, align_corners, dim, ndims, kernel_fn=_cubic_kernel, kernel_radius=2.0)


def _check_scales(x: fx.array, scale_factor: Tuple) -> int:
    """The number of spatial axes of ``x``; a ValueError unless
    ``scale_factor`` has one scale for each."""
    dims = x.ndim - 2
    if dims != len(scale_factor):
        raise ValueError("A scale needs to be provided for each spatial dimension")
    return dims


def _validate_antialias_align_corners(align_corners: bool, antialias: bool) -> None:
    """A ValueError for ``antialias`` with ``align_corners`` (unsupported)."""
    if antialias and align_corners:
        raise ValueError(
            "[Upsample] antialias=True with align_corners=True is not "
            "supported. Use align_corners=False for antialiased interpolation."
        )


def upsample_nearest(x: fx.array, scale_factor: Tuple) -> fx.array:
    """Nearest-neighbour upsampling of ``x`` (``[N, *spatial, C]``) by one
    scale per spatial axis: each element repeated for integer scales, the
    nearest input index sampled otherwise.

    Args:
        x (array): Input of shape ``(N, ..., C)``.
        scale_factor (tuple): Factor of each spatial axis.

    Returns:
        array: The upsampled array.
    """
    dims = _check_scales(x, scale_factor)
    if tuple(map(int, scale_factor)) == tuple(scale_factor):
        # Repeat each element: [N, s0, 1, s1, 1, ..., C] -> broadcast -> merge.
        shape = list(x.shape)
        for d in range(dims):
            shape.insert(2 + 2 * d, 1)
        x = x.reshape(shape)
        for d in range(dims):
            shape[2 + 2 * d] = int(scale_factor[d])
        x = fx.broadcast_to(x, shape)
        for d in range(dims):
            shape[d + 1] *= shape[d + 2]
            shape.pop(d + 2)
        return x.reshape(shape)

    _, *N, _ = x.shape
    indices = (slice(None), *(_nearest_indices(n, s, i, dims) for i, (n, s) in enumerate(zip(N, scale_factor))))
    return x[indices]


def _interpolate(x: fx.array, scale_factor: Tuple, indices_fn: Callable, align_corners: bool = False) -> fx.array:
    """Interpolation sampling every combination of taps across the spatial
    axes at once (weights multiplied)."""
    dims = _check_scales(x, scale_factor)
    _, *N, _ = x.shape
    indices = [indices_fn(n, s, align_corners, i, dims) for i, (n, s) in enumerate(zip(N, scale_factor))]
    samples = []
    weights = []
    for idx_weight in product(*indices):
        idx, weight = zip(*idx_weight)
        samples.append(x[(slice(None),) + idx])
        weights.append(reduce(operator.mul, weight))
    return sum(wi * xi for wi, xi in zip(weights, samples))


def _interpolate_separable(
    x: fx.array, scale_factor: Tuple, indices_fn: Callable, align_corners: bool = False
) -> fx.array:
    """Interpolation one spatial axis after another."""
    dims = _check_scales(x, scale_factor)
    _, *N, _ = x.shape
    out = x
    for i, (n, s) in enumerate(zip(N, scale_factor)):
        samples = []
        for idx, weight in indices_fn(n, s, align_corners, i, dims):
            samples.append(fx.take(out, idx.reshape(-1), axis=i + 1) * weight)
        out = sum(samples)
    return out


def upsample_linear(
    x: fx.array, scale_factor: Tuple, align_corners: bool = False, antialias: bool = False
) -> fx.array:
    """Linear (bilinear, trilinear, ...) upsampling of ``x`` (``[N,
    *spatial, C]``) by one scale per spatial axis; ``antialias`` low-pass
    filters when downscaling (not with ``align_corners``).

    Args:
        x (array): Input of shape ``(N, ..., C)``.
        scale_factor (tuple): Factor of each spatial axis.
        align_corners (bool, optional): Align the corner pixels of input and output.
        antialias (bool, optional): Accepted for MLX's signature.

    Returns:
        array: The upsampled array.
    """
    _validate_antialias_align_corners(align_corners, antialias)
    if antialias:
        return _interpolate_separable(x, scale_factor, _linear_aa_indices, align_corners)
    if not align_corners:
        return _interpolate_separable(x, scale_factor, _linear_indices, align_corners)
    return _interpolate(x, scale_factor, _linear_indices, align_corners)


def upsample_cubic(
    x: fx.array, scale_factor: Tuple, align_corners: bool = False, antialias: bool = False
) -> fx.array:
    """Cubic (bicubic, ...) upsampling of ``x`` (``[N, *spatial, C]``) by
    one scale per spatial axis, Keys' kernel with ``a = -0.75`` and border
    replication; ``antialias`` filters when downscaling with ``a = -0.5``
    (not with ``align_corners``).

    Args:
        x (array): Input of shape ``(N, ..., C)``.
        scale_factor (tuple): Factor of each spatial axis.
        align_corners (bool, optional): Align the corner pixels of input and output.
        antialias (bool, optional): Accepted for MLX's signature.

    Returns:
        array: The upsampled array.
    """
    _validate_antialias_align_corners(align_corners, antialias)
    if antialias:
        return _interpolate_separable(x, scale_factor, _cubic_aa_indices, align_corners)
    return _interpolate(x, scale_factor, _cubic_indices, align_corners)


class Upsample(Module):
    r"""Upsamples the spatial axes (``1`` to ``ndim - 2``) of a channels-last
    input by ``scale_factor``: nearest neighbour, linear (bilinear,
    trilinear, ...) or cubic interpolation over any number of spatial axes.

    With ``align_corners`` the corner elements of input and output coincide
    (linear and cubic modes); otherwise pixel centers are aligned.
    ``antialias`` applies a low-pass filter when downscaling (linear and
    cubic modes, not with ``align_corners``; cubic then uses ``a = -0.5``
    instead of ``-0.75``).

    Args:
        scale_factor: the multiplier of every spatial size (a float), or one per spatial axis (a tuple).
        mode: ``"nearest"``, ``"linear"`` or ``"cubic"``. Default ``"nearest"``.
        align_corners: align the corners instead of the centers. Default ``False``.
        antialias: filter when downscaling. Default ``False``.
    """

    def __init__(
        self,
        scale_factor: Union[float, Tuple],
        mode: Literal["nearest", "linear", "cubic"] = "nearest",
        align_corners: bool = False,
        antialias: bool = False,
    ):
        super().__init__()
        if mode not in ["nearest", "linear", "cubic"]:
            raise ValueError(f"[Upsample] Got unsupported upsampling algorithm: {mode}")
        if antialias and mode == "nearest":
            raise ValueError("[Upsample] Antialiasing is not supported for nearest neighbor upsampling")
        if isinstance(scale_factor, (list, tuple)):
            scale_factor = tuple(map(float, scale_factor))
        else:
            scale_factor = float(scale_factor)
        _validate_antialias_align_corners(align_corners, antialias)
        self.scale_factor = scale_factor
        self.mode = mode
        self.align_corners = align_corners
        self.antialias = antialias

    def _extra_repr(self) -> str:
        text = f"scale_factor={self.scale_factor}, mode={self.mode!r}, align_corners={self.align_corners}"
        if self.antialias:
            text += ", antialias=True"
        return text

    def __call__(self, x: fx.array) -> fx.array:
        dims = x.ndim - 2
        if dims <= 0:
            raise ValueError(
                f"[Upsample] The input should have at least 1 spatial dimension which means it should be at "
                f"least 3D but {x.ndim}D was provided"
            )
        scale_factor = self.scale_factor
        if isinstance(scale_factor, tuple):
            if len(scale_factor) != dims:
                raise ValueError(
                    f"[Upsample] One scale per spatial dimension is required but scale_factor={scale_factor} "
                    f"and the number of spatial dimensions were {dims}"
                )
        else:
            scale_factor = (scale_factor,) * dims
        if self.mode == "nearest":
            return upsample_nearest(x, scale_factor)
        if self.mode == "linear":
            return upsample_linear(x, scale_factor, self.align_corners, self.antialias)
        return upsample_cubic(x, scale_factor, self.align_corners, self.antialias)
