"""ferrox.nn convolution, transposed convolution, pooling and upsampling
layers: forward passes against NumPy float64 references written here
(direct loop convolutions, explicit pooling windows, per-axis interpolation
matrices), MLX's layers given the same weights, initialization, repr,
argument errors, 16-bit dtypes, and gradients through nn.value_and_grad
(against MLX and against finite differences in float64)."""

import math

import numpy as np
import pytest

import ferrox as fx
import ferrox.nn as nn
from ferrox.nn.layers.upsample import upsample_cubic, upsample_linear, upsample_nearest
from ferrox.utils import tree_flatten, tree_map

try:
    import mlx.core as mx
    import mlx.nn as mlx_nn
except ImportError:  # the comparisons with MLX need it
    mx = mlx_nn = None

needs_mlx = pytest.mark.skipif(mx is None, reason="mlx is not importable")


def N(a):
    """A ferrox (or MLX) array as float64 NumPy."""
    if isinstance(a, fx.array) and a.dtype == fx.bfloat16:  # no buffer format for bfloat16
        a = a.astype(fx.float32)
    return np.array(a, dtype=np.float64)


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(N(got), want, rtol=rtol, atol=atol)


def tup(v, n):
    return (v,) * n if isinstance(v, (int, float)) else tuple(v)


def randomize(module, rng):
    """Random values for every parameter (a zero bias would hide a missing add)."""
    module.update(tree_map(lambda v: fx.array(rng.standard_normal(v.shape).astype(np.float32)), module.parameters()))
    return module


def to_mlx(module, mlx_module):
    """Loads ``module``'s parameters into ``mlx_module`` (strictly)."""
    mlx_module.load_weights([(k, mx.array(np.array(v))) for k, v in tree_flatten(module.parameters())])
    return mlx_module


# --------------------------------------------------------------------------
# NumPy references
# --------------------------------------------------------------------------


def ref_conv(x, w, b, stride=1, padding=0, dilation=1, groups=1):
    """Convolution of ``x`` [N, *S, Cin] with ``w`` [Cout, *K, Cin/groups]:
    a sum over kernel offsets of strided slices times the weight slice."""
    nd = x.ndim - 2
    stride, padding, dilation = tup(stride, nd), tup(padding, nd), tup(dilation, nd)
    xp = np.pad(x, [(0, 0)] + [(p, p) for p in padding] + [(0, 0)])
    K = w.shape[1:-1]
    out_sp = [(xp.shape[1 + i] - dilation[i] * (K[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    cout, cin_g = w.shape[0], w.shape[-1]
    cout_g = cout // groups
    out = np.zeros((x.shape[0], *out_sp, cout))
    for kidx in np.ndindex(*K):
        sl = tuple(slice(k * d, k * d + s * (o - 1) + 1, s) for k, d, s, o in zip(kidx, dilation, stride, out_sp))
        patch = xp[(slice(None),) + sl]
        for g in range(groups):
            wg = w[(slice(g * cout_g, (g + 1) * cout_g),) + kidx]  # [Cout/g, Cin/g]
            out[..., g * cout_g : (g + 1) * cout_g] += patch[..., g * cin_g : (g + 1) * cin_g] @ wg.T
    return out + (0 if b is None else b)


def ref_conv_transpose(x, w, b, stride=1, padding=0, dilation=1, output_padding=0):
    """Transposed convolution: every input position scatters ``x @ w[k].T``
    to ``i * stride + k * dilation - padding``; ``output_padding`` extends
    the end of each axis."""
    nd = x.ndim - 2
    stride, padding, dilation, output_padding = (tup(v, nd) for v in (stride, padding, dilation, output_padding))
    K = w.shape[1:-1]
    in_sp = x.shape[1:-1]
    full = [(n - 1) * s + d * (k - 1) + 1 + op for n, s, d, k, op in zip(in_sp, stride, dilation, K, output_padding)]
    buf = np.zeros((x.shape[0], *full, w.shape[0]))
    for kidx in np.ndindex(*K):
        sl = tuple(slice(k * d, k * d + s * (n - 1) + 1, s) for k, d, s, n in zip(kidx, dilation, stride, in_sp))
        buf[(slice(None),) + sl] += x @ w[(slice(None),) + kidx].T
    crop = tuple(slice(p, f - p) for p, f in zip(padding, full))
    return buf[(slice(None),) + crop] + (0 if b is None else b)


def ref_pool(x, kernel, stride, padding, op):
    """Pooling by explicit windows of the padded input (``-inf`` padding
    for max, zeros for the mean)."""
    nd = x.ndim - 2
    kernel, padding = tup(kernel, nd), tup(padding, nd)
    stride = kernel if stride is None else tup(stride, nd)
    fill = -np.inf if op == "max" else 0.0
    xp = np.pad(x, [(0, 0)] + [(p, p) for p in padding] + [(0, 0)], constant_values=fill)
    out_sp = [(xp.shape[1 + i] - kernel[i]) // stride[i] + 1 for i in range(nd)]
    out = np.zeros((x.shape[0], *out_sp, x.shape[-1]))
    for oidx in np.ndindex(*out_sp):
        win = xp[(slice(None),) + tuple(slice(o * s, o * s + k) for o, s, k in zip(oidx, stride, kernel))]
        axes = tuple(range(1, 1 + nd))
        out[(slice(None),) + oidx] = win.max(axis=axes) if op == "max" else win.mean(axis=axes)
    return out


def grid(n, s, align_corners):
    """The input coordinate of each output along an axis of size ``n``."""
    m = int(s * n)
    i = np.arange(m, dtype=np.float64)
    if align_corners:
        return i * ((n - 1) / max(m - 1, 1))
    return i / s - ((m - 1) / s - n + 1) / 2


def keys(t, a):
    """Keys' cubic kernel at distance ``t >= 0``."""
    return np.where(
        t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1, np.where(t <= 2, (((t - 5) * t + 8) * t - 4) * a, 0.0)
    )


def interp_matrix(n, s, mode, align_corners=False, antialias=False):
    """The [out, in] matrix that resamples one axis."""
    m = int(s * n)
    A = np.zeros((m, n))
    if mode == "nearest":
        i = np.arange(m)
        if float(s).is_integer():
            idx = i // int(s)
        elif m > n:
            idx = np.round((i + 0.5) * (n / m) - 0.5)
        else:
            idx = np.floor(i * (n / m))
        A[i, idx.astype(int)] = 1
        return A
    c = grid(n, s, align_corners)
    if antialias:
        inv = 1 / s if s < 1 else 1.0
        kernel = (lambda t: np.maximum(1 - t, 0)) if mode == "linear" else (lambda t: keys(t, -0.5))
        A = kernel(np.abs(c[:, None] - np.arange(n)[None, :]) / inv)
        return A / A.sum(axis=1, keepdims=True)
    for i, ci in enumerate(c):
        if mode == "linear":
            ci = min(max(ci, 0), n - 1)
            lo, hi = math.floor(ci), math.ceil(ci)
            A[i, lo] += 1 - (ci - lo)
            A[i, hi] += ci - lo
        else:
            f = math.floor(ci)
            for j in range(f - 1, f + 3):
                A[i, min(max(j, 0), n - 1)] += keys(np.array(abs(ci - j)), -0.75)
    return A


def ref_upsample(x, scales, mode, align_corners=False, antialias=False):
    for ax, s in enumerate(scales):
        A = interp_matrix(x.shape[1 + ax], s, mode, align_corners, antialias)
        x = np.moveaxis(np.tensordot(A, x, axes=([1], [1 + ax])), 0, 1 + ax)
    return x


# --------------------------------------------------------------------------
# convolutions
# --------------------------------------------------------------------------

CONVS = [
    ("Conv1d", (4, 6, 3), dict(stride=2, padding=1, dilation=2, groups=2), (2, 11, 4)),
    ("Conv1d", (3, 2, 1), dict(bias=False), (1, 5, 3)),
    ("Conv2d", (4, 6, (2, 3)), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2), (2, 7, 8, 4)),
    ("Conv2d", (3, 5, 3), dict(stride=2, padding=1), (2, 6, 5, 3)),
    ("Conv2d", (6, 6, 3), dict(groups=6, bias=False), (1, 5, 5, 6)),
    ("Conv3d", (3, 4, (2, 1, 3)), dict(stride=(2, 1, 1), padding=(1, 0, 1), dilation=(1, 2, 1)), (1, 5, 4, 6, 3)),
]
CONV_TRANSPOSES = [
    ("ConvTranspose1d", (3, 5, 3), dict(stride=2, padding=1, dilation=2, output_padding=1), (2, 6, 3)),
    ("ConvTranspose1d", (2, 3, 2), dict(bias=False), (1, 4, 2)),
    ("ConvTranspose2d", (3, 5, (2, 3)), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2)), (2, 4, 5, 3)),
    ("ConvTranspose2d", (2, 4, 3), dict(stride=2, dilation=(1, 2)), (1, 3, 3, 2)),
    ("ConvTranspose3d", (2, 3, 2), dict(stride=2, padding=1, output_padding=1), (1, 3, 4, 3, 2)),
]


def conv_kwargs(layer):
    return dict(stride=layer.stride, padding=layer.padding, dilation=layer.dilation, groups=getattr(layer, "groups", 1))


@pytest.mark.parametrize("name,args,kwargs,shape", CONVS)
def test_conv_forward(name, args, kwargs, shape):
    rng = np.random.default_rng(0)
    layer = randomize(getattr(nn, name)(*args, **kwargs), rng)
    x = rng.standard_normal(shape)
    bias = N(layer.bias) if "bias" in layer else None
    want = ref_conv(x, N(layer.weight), bias, **conv_kwargs(layer))
    close(layer(fx.array(x, dtype=fx.float32)), want, rtol=1e-4, atol=1e-5)
    # float64 end to end agrees to float64 precision.
    layer.set_dtype(fx.float64)
    close(layer(fx.array(x, dtype=fx.float64)), want, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name,args,kwargs,shape", CONV_TRANSPOSES)
def test_conv_transpose_forward(name, args, kwargs, shape):
    rng = np.random.default_rng(1)
    layer = randomize(getattr(nn, name)(*args, **kwargs), rng)
    x = rng.standard_normal(shape)
    bias = N(layer.bias) if "bias" in layer else None
    want = ref_conv_transpose(
        x, N(layer.weight), bias, layer.stride, layer.padding, layer.dilation, layer.output_padding
    )
    close(layer(fx.array(x, dtype=fx.float32)), want, rtol=1e-4, atol=1e-5)


@needs_mlx
@pytest.mark.parametrize("name,args,kwargs,shape", CONVS + CONV_TRANSPOSES)
def test_conv_matches_mlx(name, args, kwargs, shape):
    rng = np.random.default_rng(2)
    layer = randomize(getattr(nn, name)(*args, **kwargs), rng)
    ref = to_mlx(layer, getattr(mlx_nn, name)(*args, **kwargs))
    x = rng.standard_normal(shape).astype(np.float32)
    close(layer(fx.array(x)), N(ref(mx.array(x))), rtol=1e-5, atol=1e-6)
    assert repr(layer) == repr(ref)


@pytest.mark.parametrize(
    "name,args,weight_shape,fan_in",
    [
        ("Conv1d", (4, 6, 3), (6, 3, 4), 12),
        ("Conv1d", (4, 6, 3, 1, 0, 1, 2), (6, 3, 2), 6),
        ("Conv2d", (4, 6, (2, 3)), (6, 2, 3, 4), 24),
        ("Conv2d", (8, 6, 3, 1, 0, 1, 4), (6, 3, 3, 2), 18),
        ("Conv3d", (3, 4, 2), (4, 2, 2, 2, 3), 24),
        ("ConvTranspose1d", (4, 6, 3), (6, 3, 4), 12),
        ("ConvTranspose2d", (4, 6, (2, 3)), (6, 2, 3, 4), 24),
        ("ConvTranspose3d", (3, 4, (1, 2, 3)), (4, 1, 2, 3, 3), 18),
    ],
)
def test_conv_init(name, args, weight_shape, fan_in):
    fx.random.seed(3)
    big = (args[0], 400, *args[2:])  # many output channels for the statistics
    layer = getattr(nn, name)(*big)
    w = N(layer.weight)
    assert w.shape == (400, *weight_shape[1:]) and layer.weight.dtype == fx.float32
    scale = math.sqrt(1 / fan_in)
    assert np.abs(w).max() <= scale and np.abs(w).max() > 0.95 * scale
    assert abs(w.std() - scale / math.sqrt(3)) < 0.05 * scale
    np.testing.assert_array_equal(N(layer.bias), np.zeros(400))
    assert "bias" not in getattr(nn, name)(*args, bias=False)
    assert sorted(layer.parameters()) == ["bias", "weight"]


def test_conv_repr():
    assert repr(nn.Conv1d(4, 6, 3, groups=2, bias=False)) == (
        "Conv1d(4, 6, kernel_size=3, stride=1, padding=0, dilation=1, groups=2, bias=False)"
    )
    assert repr(nn.Conv2d(3, 5, (2, 3), stride=2)) == (
        "Conv2d(3, 5, kernel_size=(2, 3), stride=(2, 2), padding=(0, 0), dilation=1, groups=1, bias=True)"
    )
    assert repr(nn.ConvTranspose3d(2, 3, 2, output_padding=1)) == (
        "ConvTranspose3d(2, 3, kernel_size=(2, 2, 2), stride=(1, 1, 1), padding=(0, 0, 0), dilation=1, "
        "output_padding=(1, 1, 1), bias=True)"
    )


def test_conv_errors():
    with pytest.raises(ValueError, match=r"input channels \(3\) must be divisible by the number of groups \(2\)"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match=r"\(5\) must be divisible"):
        nn.Conv1d(5, 4, 3, groups=2)
    cases = [
        (nn.Conv1d(3, 4, 2), (1, 5, 5, 3), r"\[Conv1d\] Invalid input array with 4 dimensions for 1D"),
        (nn.Conv2d(3, 4, 2), (5, 5, 3), r"\[Conv2d\] Invalid input array with 3 dimensions"),
        (nn.Conv2d(4, 4, 2, groups=2), (1, 5, 5, 3), r"\[Conv2d\] Expected an input with 4 channels but got 3"),
        (nn.Conv3d(3, 4, 2), (1, 4, 4, 4, 2), r"\[Conv3d\] Expected an input with 3 channels"),
        (nn.ConvTranspose1d(3, 4, 2), (5, 3), r"\[ConvTranspose1d\] Invalid input array with 2 dimensions"),
        (nn.ConvTranspose2d(3, 4, 2), (1, 4, 4, 2), r"\[ConvTranspose2d\] Expected an input with 3 channels"),
        (nn.ConvTranspose3d(3, 4, 2), (1, 4, 4, 3), r"\[ConvTranspose3d\] Invalid input array with 4 dim"),
    ]
    for layer, shape, msg in cases:
        with pytest.raises(ValueError, match=msg):
            layer(fx.zeros(shape))
    # A kernel larger than the padded input is the op's error.
    with pytest.raises(ValueError, match=r"\[conv\]"):
        nn.Conv2d(3, 4, 5)(fx.zeros((1, 3, 3, 3)))


# --------------------------------------------------------------------------
# pooling
# --------------------------------------------------------------------------

POOLS = [
    ("MaxPool1d", dict(kernel_size=3, stride=2, padding=1), (2, 9, 3)),
    ("AvgPool1d", dict(kernel_size=2), (2, 8, 3)),  # tiles the input: the reshape path
    ("AvgPool1d", dict(kernel_size=(3,), stride=(1,), padding=(1,)), (2, 7, 2)),
    ("MaxPool2d", dict(kernel_size=2), (2, 6, 8, 3)),
    ("MaxPool2d", dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1)), (2, 5, 7, 2)),
    ("MaxPool2d", dict(kernel_size=2), (1, 5, 7, 2)),  # 2 x 2 windows that do not tile 5 x 7
    ("AvgPool2d", dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1)), (2, 6, 7, 3)),
    ("AvgPool2d", dict(kernel_size=3, stride=2), (1, 7, 6, 2)),
    ("MaxPool3d", dict(kernel_size=2, stride=1), (1, 4, 3, 5, 2)),
    ("MaxPool3d", dict(kernel_size=(2, 1, 2)), (2, 4, 3, 4, 2)),
    ("AvgPool3d", dict(kernel_size=(1, 2, 3), padding=(0, 1, 1)), (1, 4, 3, 5, 2)),
]


@pytest.mark.parametrize("name,kwargs,shape", POOLS)
def test_pool_forward(name, kwargs, shape):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape)
    layer = getattr(nn, name)(**kwargs)
    op = "max" if name.startswith("Max") else "mean"
    want = ref_pool(x, kwargs["kernel_size"], kwargs.get("stride"), kwargs.get("padding", 0), op)
    close(layer(fx.array(x, dtype=fx.float32)), want, rtol=1e-5, atol=1e-6)
    close(layer(fx.array(x, dtype=fx.float64)), want, rtol=1e-12, atol=1e-12)


def test_pool_strided_view_input():
    # The windows of a non-contiguous input (a transposed view) are those of its values.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 7, 5, 3))
    view = fx.array(x.transpose(0, 2, 1, 3).copy(), dtype=fx.float32).transpose(0, 2, 1, 3)
    for layer, op in ((nn.MaxPool2d(3, stride=2), "max"), (nn.AvgPool2d(2, stride=1, padding=1), "mean")):
        want = ref_pool(x, layer._kernel_size, layer._stride, [p[0] for p in layer._padding], op)
        close(layer(view), want, rtol=1e-5, atol=1e-6)


def test_pool_integer_and_empty():
    x = fx.array([1, 5, 3, 4, 2], dtype=fx.int32).reshape(1, 5, 1)
    y = nn.MaxPool1d(2, padding=1)(x)  # -inf padding: never the maximum
    assert y.dtype == fx.int32 and y.reshape(-1).tolist() == [1, 5, 4]
    z = nn.AvgPool1d(2)(x)
    assert z.dtype == fx.float32 and z.reshape(-1).tolist() == [3.0, 3.5]
    # A window larger than the input gives no windows where MLX's formula gives none ...
    assert nn.MaxPool2d(5)(fx.zeros((1, 3, 3, 2))).shape == (1, 0, 0, 2)
    assert nn.MaxPool1d(4, stride=1)(fx.zeros((1, 3, 2))).shape == (1, 0, 2)
    # ... and an error naming the layer where it gives a negative count (MLX's as_strided fails).
    with pytest.raises(ValueError, match=r"\[MaxPool1d\] The pooling window \(4,\) with stride \(1,\) does not fit"):
        nn.MaxPool1d(4, stride=1)(fx.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match=r"\[AvgPool2d\] The pooling window \(2, 7\) .* shape \(6, 4\)"):
        nn.AvgPool2d((2, 7), stride=2, padding=(1, 0))(fx.zeros((1, 4, 4, 2)))
    assert nn.AvgPool2d(2)(fx.zeros((0, 4, 4, 2))).shape == (0, 2, 2, 2)


@needs_mlx
@pytest.mark.parametrize("name,kwargs,shape", POOLS)
def test_pool_matches_mlx(name, kwargs, shape):
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    layer, ref = getattr(nn, name)(**kwargs), getattr(mlx_nn, name)(**kwargs)
    close(layer(fx.array(x)), N(ref(mx.array(x))), rtol=1e-6, atol=1e-7)
    assert repr(layer) == repr(ref)


def test_pool_repr_and_errors():
    assert repr(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    assert repr(nn.AvgPool1d(3, 1, 1)) == "AvgPool1d(kernel_size=(3,), stride=(1,), padding=(1,))"
    assert repr(nn.MaxPool3d((1, 2, 3), padding=(0, 1, 1))) == (
        "MaxPool3d(kernel_size=(1, 2, 3), stride=(1, 2, 3), padding=(0, 1, 1))"
    )
    with pytest.raises(ValueError, match=r"\[MaxPool2d\] 'kernel_size' must be an integer or a tuple containing 2"):
        nn.MaxPool2d((2, 2, 2))
    with pytest.raises(ValueError, match=r"\[AvgPool1d\] 'stride' must be an integer or a tuple containing 1 "):
        nn.AvgPool1d(2, stride=1.5)
    with pytest.raises(ValueError, match=r"\[AvgPool3d\] 'padding' must be an integer or a tuple containing 3"):
        nn.AvgPool3d(2, padding=(1, 1))
    with pytest.raises(ValueError, match=r"\[MaxPool1d\] 'kernel_size' must be positive but got \(0,\)"):
        nn.MaxPool1d(0)
    with pytest.raises(ValueError, match=r"\[AvgPool2d\] 'stride' must be positive but got \(1, -1\)"):
        nn.AvgPool2d(2, stride=(1, -1))
    with pytest.raises(ValueError, match=r"\[MaxPool3d\] 'padding' must be non-negative but got \(0, -1, 0\)"):
        nn.MaxPool3d(2, padding=(0, -1, 0))
    with pytest.raises(ValueError, match=r"\[MaxPool2d\] Expected an input with 4 dimensions .* got 3"):
        nn.MaxPool2d(2)(fx.zeros((4, 4, 2)))
    with pytest.raises(ValueError, match=r"\[AvgPool1d\] Expected an input with 3 dimensions .* got 4"):
        nn.AvgPool1d(2, padding=1)(fx.zeros((1, 4, 4, 2)))


# --------------------------------------------------------------------------
# upsampling
# --------------------------------------------------------------------------

UPSAMPLES = [
    (2, "nearest", False, False, (2, 3, 4, 2)),
    ((2, 3), "nearest", False, False, (1, 3, 2, 2)),
    (1.7, "nearest", False, False, (2, 3, 4, 2)),
    (0.6, "nearest", False, False, (1, 5, 4, 2)),
    (3, "nearest", False, False, (2, 4, 3)),
    ((2, 3), "linear", False, False, (2, 3, 4, 2)),
    ((2, 3), "linear", True, False, (2, 3, 4, 2)),
    (1.5, "linear", False, False, (1, 3, 5, 4, 1)),
    (2.5, "linear", True, False, (2, 4, 3)),
    ((1.5, 2.5), "cubic", False, False, (2, 3, 4, 2)),
    (2, "cubic", True, False, (1, 3, 4, 2)),
    (2, "cubic", False, False, (1, 2, 3, 2, 1)),
    (0.5, "linear", False, True, (2, 8, 6, 2)),
    (0.4, "cubic", False, True, (1, 10, 7, 2)),
    ((2, 0.5), "cubic", False, True, (1, 3, 8, 2)),
]


@pytest.mark.parametrize("scale,mode,align,aa,shape", UPSAMPLES)
def test_upsample_forward(scale, mode, align, aa, shape):
    x = np.random.default_rng(7).standard_normal(shape)
    layer = nn.Upsample(scale, mode=mode, align_corners=align, antialias=aa)
    scales = tup(scale, len(shape) - 2)
    want = ref_upsample(x, scales, mode, align, aa)
    got = layer(fx.array(x, dtype=fx.float32))
    assert got.dtype == fx.float32
    close(got, want, rtol=1e-5, atol=1e-5)


@needs_mlx
@pytest.mark.parametrize("scale,mode,align,aa,shape", UPSAMPLES)
def test_upsample_matches_mlx(scale, mode, align, aa, shape):
    x = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    layer = nn.Upsample(scale, mode=mode, align_corners=align, antialias=aa)
    ref = mlx_nn.Upsample(scale, mode=mode, align_corners=align, antialias=aa)
    close(layer(fx.array(x)), N(ref(mx.array(x))), rtol=1e-6, atol=1e-6)
    assert repr(layer) == repr(ref)


def test_upsample_functions_and_mlx_example():
    x = fx.arange(1, 5).reshape(1, 2, 2, 1)
    y = nn.Upsample(scale_factor=2, mode="nearest")(x)
    assert y.dtype == fx.int32
    assert y.squeeze().tolist() == [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]
    close(
        nn.Upsample(2, mode="linear")(x).squeeze(),
        [[1, 1.25, 1.75, 2], [1.5, 1.75, 2.25, 2.5], [2.5, 2.75, 3.25, 3.5], [3, 3.25, 3.75, 4]],
    )
    third = 1 / 3
    close(
        nn.Upsample(2, mode="linear", align_corners=True)(x).squeeze(),
        np.array([[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7], [6, 7, 8, 9]]) * third + 1,
    )
    data = np.random.default_rng(9).standard_normal((1, 3, 4, 2))
    xf = fx.array(data, dtype=fx.float32)
    close(upsample_nearest(xf, (2.0, 1.5)), ref_upsample(data, (2.0, 1.5), "nearest"))
    close(upsample_linear(xf, (1.5, 2.0), align_corners=True), ref_upsample(data, (1.5, 2.0), "linear", True))
    close(upsample_cubic(xf, (0.5, 0.5), antialias=True), ref_upsample(data, (0.5, 0.5), "cubic", False, True))
    with pytest.raises(ValueError, match="A scale needs to be provided for each spatial dimension"):
        upsample_linear(xf, (2.0,))


def test_upsample_repr_and_errors():
    assert repr(nn.Upsample(2)) == "Upsample(scale_factor=2.0, mode='nearest', align_corners=False)"
    assert repr(nn.Upsample([2, 3], mode="cubic", antialias=True)) == (
        "Upsample(scale_factor=(2.0, 3.0), mode='cubic', align_corners=False, antialias=True)"
    )
    with pytest.raises(ValueError, match=r"\[Upsample\] Got unsupported upsampling algorithm: bilinear"):
        nn.Upsample(2, mode="bilinear")
    with pytest.raises(ValueError, match=r"\[Upsample\] Antialiasing is not supported for nearest"):
        nn.Upsample(2, antialias=True)
    with pytest.raises(ValueError, match=r"\[Upsample\] antialias=True with align_corners=True is not supported"):
        nn.Upsample(0.5, mode="linear", align_corners=True, antialias=True)
    with pytest.raises(ValueError, match=r"\[Upsample\] .* at least 3D but 2D was provided"):
        nn.Upsample(2)(fx.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"\[Upsample\] One scale per spatial dimension is required"):
        nn.Upsample((2, 2))(fx.zeros((1, 4, 4, 4, 3)))


# --------------------------------------------------------------------------
# 16-bit dtypes
# --------------------------------------------------------------------------

DTYPE_LAYERS = [
    (lambda lib: lib.Conv2d(3, 4, 3, padding=1, groups=1), (2, 5, 6, 3)),
    (lambda lib: lib.ConvTranspose1d(3, 4, 3, stride=2), (2, 5, 3)),
    (lambda lib: lib.MaxPool2d(2, stride=1, padding=1), (2, 5, 6, 3)),
    (lambda lib: lib.AvgPool3d(2), (1, 4, 4, 4, 2)),
    (lambda lib: lib.Upsample(2, mode="nearest"), (2, 3, 4, 2)),
    (lambda lib: lib.Upsample(1.5, mode="linear"), (2, 3, 4, 2)),
    (lambda lib: lib.Upsample(2, mode="cubic", align_corners=True), (2, 3, 4, 2)),
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("index", range(len(DTYPE_LAYERS)))
def test_16bit_forward(index, dtype):
    make, shape = DTYPE_LAYERS[index]
    rng = np.random.default_rng(10)
    layer = randomize(make(nn), rng)
    x = rng.standard_normal(shape).astype(np.float32)
    want = N(layer(fx.array(x)))  # float32
    ref = to_mlx(layer, make(mlx_nn)) if mx is not None else None
    layer.set_dtype(getattr(fx, dtype))
    got = layer(fx.array(x).astype(getattr(fx, dtype)))
    tol = 2e-2 if dtype == "float16" else 6e-2
    close(got, want, rtol=tol, atol=tol)
    if ref is not None:  # the result dtype is MLX's (the float32 interpolation weights promote)
        ref.set_dtype(getattr(mx, dtype))
        ref_dtype = ref(mx.array(x).astype(getattr(mx, dtype))).dtype
        assert str(got.dtype).split(".")[-1] == str(ref_dtype).split(".")[-1]


# --------------------------------------------------------------------------
# gradients
# --------------------------------------------------------------------------


def small_model(lib, mode="linear"):
    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.Conv2d(3, 4, 3, padding=1, stride=1)
            self.bn = lib.BatchNorm(4)
            self.pool = lib.MaxPool2d(2)
            self.up = lib.Upsample(2, mode=mode)
            self.head = lib.ConvTranspose2d(4, 2, 2, stride=1)
            self.avg = lib.AvgPool2d(2, stride=1)

        def __call__(self, x):
            return self.avg(self.head(self.up(self.pool(self.bn(self.conv(x))))))

    return Net()


@needs_mlx
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_value_and_grad_matches_mlx(mode):
    rng = np.random.default_rng(11)
    model = randomize(small_model(nn, mode), rng)
    model.bn.running_mean = fx.zeros((4,))
    model.bn.running_var = fx.ones((4,))
    ref = to_mlx(model, small_model(mlx_nn, mode))
    x = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    t = rng.standard_normal((2, 6, 6, 2)).astype(np.float32)

    def loss(net, x, t):
        return ((net(x) - t) ** 2).mean()

    for _ in range(2):  # the second step sees the running statistics of the first
        value, grads = nn.value_and_grad(model, lambda x, t: loss(model, x, t))(fx.array(x), fx.array(t))
        ref_value, ref_grads = mlx_nn.value_and_grad(ref, lambda x, t: loss(ref, x, t))(mx.array(x), mx.array(t))
        close(value, N(ref_value), rtol=1e-5)
        flat, ref_flat = dict(tree_flatten(grads)), dict(tree_flatten(ref_grads))
        assert sorted(flat) == sorted(ref_flat)
        assert "bn.running_mean" not in flat and "bn.weight" in flat
        for key in flat:
            close(flat[key], N(ref_flat[key]), rtol=1e-4, atol=1e-6)
        close(model.bn.running_mean, N(ref.bn.running_mean), rtol=1e-5, atol=1e-7)
        close(model.bn.running_var, N(ref.bn.running_var), rtol=1e-5, atol=1e-7)
    model.eval()
    ref.eval()
    close(model(fx.array(x)), N(ref(mx.array(x))), rtol=1e-5, atol=1e-6)


def test_gradients_finite_differences_float64():
    rng = np.random.default_rng(12)
    model = randomize(small_model(nn, "cubic"), rng)
    model.set_dtype(fx.float64)
    x = fx.array(rng.standard_normal((2, 6, 6, 3)), dtype=fx.float64)
    t = fx.array(rng.standard_normal((2, 6, 6, 2)), dtype=fx.float64)

    def loss(x):
        return (model(x) * t).sum()

    value, grads = nn.value_and_grad(model, loss)(x)
    assert value.dtype == fx.float64
    eps = 1e-6
    for key, g in tree_flatten(grads):
        param = N(dict(tree_flatten(model.parameters()))[key])
        flat = param.reshape(-1)
        for i in rng.choice(flat.size, size=min(3, flat.size), replace=False):
            diffs = []
            for sign in (1, -1):
                bumped = flat.copy()
                bumped[i] += sign * eps
                model.update(_nested(key, fx.array(bumped.reshape(param.shape), dtype=fx.float64)))
                diffs.append(float(loss(x)))
            model.update(_nested(key, fx.array(param, dtype=fx.float64)))
            np.testing.assert_allclose(N(g).reshape(-1)[i], (diffs[0] - diffs[1]) / (2 * eps), rtol=1e-6, atol=1e-7)
    # And with respect to the input.
    gx = N(fx.grad(loss)(x))
    xs = N(x).reshape(-1)
    for i in rng.choice(xs.size, size=4, replace=False):
        diffs = []
        for sign in (1, -1):
            bumped = xs.copy()
            bumped[i] += sign * eps
            diffs.append(float(loss(fx.array(bumped.reshape(x.shape), dtype=fx.float64))))
        np.testing.assert_allclose(gx.reshape(-1)[i], (diffs[0] - diffs[1]) / (2 * eps), rtol=1e-6, atol=1e-7)


def _nested(key, value):
    """``{"a": {"b": value}}`` for the key ``"a.b"``."""
    out = value
    for part in reversed(key.split(".")):
        out = {part: out}
    return out
