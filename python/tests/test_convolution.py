"""Convolutions: conv1d/2d/3d, their transposes, conv_general and convolve,
against a float64 NumPy reference (direct sums over windows) and MLX (shapes,
dtypes, errors), with finite-difference gradients and vmap."""

import importlib.util
import itertools

import numpy as np
import pytest

import ferrox as fx
from conftest import f64, fd_check

# MLX is the reference for shapes, dtypes and errors; where it is absent (the
# GPU machine) only the float64 reference and the gradient checks run.
HAVE_MLX = importlib.util.find_spec("mlx") is not None
if HAVE_MLX:
    import mlx.core as mx
needs_mlx = pytest.mark.skipif(not HAVE_MLX, reason="needs MLX")

RNG = np.random.default_rng(3)


def reference(x, w, stride, lo, hi, kdil, idil, groups, flip):
    """conv_general in float64 by direct summation (MLX's definition)."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    dims = x.ndim - 2
    # Negative padding crops the input first.
    crop = [slice(None)]
    for i in range(dims):
        start = max(-lo[i], 0)
        stop = x.shape[i + 1] + min(hi[i], 0)
        crop.append(slice(start, max(stop, start)))
    x = x[tuple(crop)]
    lo = [max(p, 0) for p in lo]
    hi = [max(p, 0) for p in hi]
    # Input dilation, then padding.
    for i in range(dims):
        n = x.shape[i + 1]
        if n and idil[i] > 1:
            shape = list(x.shape)
            shape[i + 1] = (n - 1) * idil[i] + 1
            d = np.zeros(shape)
            index = [slice(None)] * x.ndim
            index[i + 1] = slice(None, None, idil[i])
            d[tuple(index)] = x
            x = d
    x = np.pad(x, [(0, 0)] + list(zip(lo, hi)) + [(0, 0)])
    if flip:
        w = w[(slice(None),) + (slice(None, None, -1),) * dims]
    n, c_in, c_out = x.shape[0], x.shape[-1], w.shape[0]
    k = w.shape[1:-1]
    out_sizes = [(x.shape[i + 1] - ((k[i] - 1) * kdil[i] + 1)) // stride[i] + 1 for i in range(dims)]
    out = np.zeros([n] + out_sizes + [c_out])
    cg, og = c_in // groups, c_out // groups
    for pos in itertools.product(*[range(s) for s in out_sizes]):
        for taps in itertools.product(*[range(s) for s in k]):
            index = tuple(pos[i] * stride[i] + taps[i] * kdil[i] for i in range(dims))
            window = x[(slice(None),) + index]  # (N, C_in)
            for g in range(groups):
                out[(slice(None),) + pos + (slice(g * og, (g + 1) * og),)] += (
                    window[:, g * cg : (g + 1) * cg] @ w[(slice(g * og, (g + 1) * og),) + taps].T
                )
    return out


CASES = [
    # (input shape, weight shape, stride, lo, hi, kernel dilation, input dilation, groups, flip)
    ((2, 9, 4), (3, 3, 4), [1], [0], [0], [1], [1], 1, False),
    ((2, 9, 4), (6, 2, 2), [2], [1], [2], [2], [1], 2, False),
    ((1, 7, 3), (2, 3, 3), [1], [2], [0], [1], [2], 1, True),
    ((1, 7, 3), (2, 3, 3), [3], [-1], [-2], [1], [1], 1, False),
    ((2, 6, 5, 3), (4, 3, 2, 3), [1, 2], [1, 0], [1, 1], [1, 2], [1, 1], 1, False),
    ((1, 5, 5, 4), (4, 3, 3, 2), [2, 1], [1, 1], [1, 1], [1, 1], [2, 1], 2, True),
    ((1, 4, 5, 3, 2), (3, 2, 3, 2, 2), [1, 2, 1], [0, 1, 1], [1, 0, 0], [1, 1, 2], [1, 1, 1], 1, False),
    ((0, 6, 2), (3, 2, 2), [1], [0], [0], [1], [1], 1, False),
]


def conv_args(case):
    _, _, stride, lo, hi, kdil, idil, groups, flip = case
    return dict(stride=stride, padding=(lo, hi), kernel_dilation=kdil, input_dilation=idil, groups=groups, flip=flip)


@pytest.mark.parametrize("case", CASES, ids=[str(c[:2]) for c in CASES])
def test_conv_general_against_float64_reference_and_mlx(case):
    x = RNG.standard_normal(case[0])
    w = RNG.standard_normal(case[1])
    got = fx.conv_general(f64(x), f64(w), **conv_args(case))
    assert got.dtype == fx.float64
    expected = reference(x, w, *case[2:])
    np.testing.assert_allclose(np.array(got), expected, rtol=1e-12, atol=1e-12)
    if not HAVE_MLX:
        return
    m = mx.conv_general(mx.array(x.astype(np.float32)), mx.array(w.astype(np.float32)), **conv_args(case))
    f32 = fx.conv_general(fx.array(x, dtype=fx.float32), fx.array(w, dtype=fx.float32), **conv_args(case))
    assert f32.shape == tuple(m.shape) and f32.dtype == fx.float32
    np.testing.assert_allclose(np.array(f32), np.array(m), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", CASES[:7:2], ids=[str(c[:2]) for c in CASES[:7:2]])
def test_conv_general_gradients(case):
    x = RNG.standard_normal(case[0])
    w = RNG.standard_normal(case[1])
    args = conv_args(case)
    fd_check(lambda v: fx.conv_general(v, f64(w), **args), x, RNG)
    fd_check(lambda v: fx.conv_general(f64(x), v, **args), w, RNG)


@needs_mlx
def test_shorthands_match_mlx():
    x = RNG.standard_normal((2, 8, 6, 4)).astype(np.float32)
    w = RNG.standard_normal((6, 3, 3, 2)).astype(np.float32)
    for kw in [dict(), dict(stride=2, padding=1), dict(stride=(1, 2), padding=(2, 0), dilation=(2, 1), groups=2)]:
        kw = dict(kw)
        kw.setdefault("groups", 2)
        got = fx.conv2d(fx.array(x), fx.array(w), **kw)
        want = mx.conv2d(mx.array(x), mx.array(w), **kw)
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-4, atol=1e-4)
    x1, w1 = x[:, 0], RNG.standard_normal((5, 3, 4)).astype(np.float32)
    got = fx.conv1d(fx.array(x1), fx.array(w1), stride=2, padding=1, dilation=2)
    want = mx.conv1d(mx.array(x1), mx.array(w1), stride=2, padding=1, dilation=2)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-4, atol=1e-4)
    x3 = RNG.standard_normal((1, 4, 5, 6, 2)).astype(np.float32)
    w3 = RNG.standard_normal((3, 2, 2, 3, 2)).astype(np.float32)
    got = fx.conv3d(fx.array(x3), fx.array(w3), stride=(1, 2, 1), padding=(1, 0, 1))
    want = mx.conv3d(mx.array(x3), mx.array(w3), stride=(1, 2, 1), padding=(1, 0, 1))
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-4, atol=1e-4)


@needs_mlx
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_transposed_convolutions_match_mlx(dims):
    x = RNG.standard_normal((2,) + (4,) * dims + (3,)).astype(np.float32)
    w = RNG.standard_normal((4,) + (3,) * dims + (3,)).astype(np.float32)
    f, m = getattr(fx, f"conv_transpose{dims}d"), getattr(mx, f"conv_transpose{dims}d")
    for kw in [dict(), dict(stride=2, padding=1), dict(stride=2, padding=1, output_padding=1, dilation=2)]:
        got, want = f(fx.array(x), fx.array(w), **kw), m(mx.array(x), mx.array(w), **kw)
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-4, atol=1e-4)
    # Gradients with respect to both operands agree with MLX's.
    kw = dict(stride=2, padding=1)
    out = f(fx.array(x), fx.array(w), **kw)
    ct = RNG.standard_normal(out.shape).astype(np.float32)
    _, grads = fx.vjp(lambda a, b: f(a, b, **kw), [fx.array(x), fx.array(w)], [fx.array(ct)])
    _, mgrads = mx.vjp(lambda a, b: m(a, b, **kw), [mx.array(x), mx.array(w)], [mx.array(ct)])
    for g, mg in zip(grads, mgrads):
        np.testing.assert_allclose(np.array(g), np.array(mg), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize("sizes", [(7, 3), (3, 7), (8, 4), (5, 1), (1, 1)])
def test_convolve_against_numpy(mode, sizes):
    a, v = RNG.standard_normal(sizes[0]), RNG.standard_normal(sizes[1])
    np.testing.assert_allclose(np.array(fx.convolve(f64(a), f64(v), mode)), np.convolve(a, v, mode), rtol=1e-12)
    if not HAVE_MLX:
        return
    m = mx.convolve(mx.array(a.astype(np.float32)), mx.array(v.astype(np.float32)), mode)
    assert fx.convolve(fx.array(a, dtype=fx.float32), fx.array(v, dtype=fx.float32), mode).shape == tuple(m.shape)


@needs_mlx
def test_dtypes_layouts_and_vmap():
    x = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    for dtype, mdtype, tol in [(fx.float16, mx.float16, 2e-2), (fx.bfloat16, mx.bfloat16, 1e-1)]:
        got = fx.conv2d(fx.array(x).astype(dtype), fx.array(w).astype(dtype), padding=1)
        want = mx.conv2d(mx.array(x).astype(mdtype), mx.array(w).astype(mdtype), padding=1)
        assert got.dtype == dtype
        np.testing.assert_allclose(np.array(got.astype(fx.float32)), np.array(want.astype(mx.float32)), rtol=tol, atol=tol)
    # Promotion: a float16 input with float32 weights gives float32.
    assert fx.conv2d(fx.array(x).astype(fx.float16), fx.array(w)).dtype == fx.float32
    # Non-contiguous operands.
    xt = np.ascontiguousarray(x.transpose(0, 2, 1, 3))
    got = fx.conv2d(fx.array(xt).transpose(0, 2, 1, 3), fx.array(w)[:, ::-1][:, ::-1])
    np.testing.assert_allclose(np.array(got), np.array(mx.conv2d(mx.array(x), mx.array(w))), rtol=1e-4, atol=1e-4)
    # vmap over a batch of filters equals a loop.
    ws = RNG.standard_normal((3, 4, 3, 3, 3)).astype(np.float32)
    batched = fx.vmap(lambda f: fx.conv2d(fx.array(x), f, padding=1))(fx.array(ws))
    for i in range(3):
        np.testing.assert_allclose(
            np.array(batched[i]), np.array(fx.conv2d(fx.array(x), fx.array(ws[i]), padding=1)), rtol=1e-5, atol=1e-5
        )


@needs_mlx
def test_errors_match_mlx():
    x = fx.zeros((1, 5, 4))
    w = fx.zeros((2, 3, 4))
    cases = [
        (lambda m, a, b: m.conv1d(a.astype(m.int32), b), "Invalid input array with type int32"),
        # MLX reports the 2-entry strides; ferrox names the input's rank.
        (lambda m, a, b: m.conv2d(a, b), "Invalid strides|Invalid input array with 3 dimensions for 2D convolution"),
        (lambda m, a, b: m.conv1d(a, b[..., :3]), "Expect the input channels"),
        (lambda m, a, b: m.conv1d(a, b, groups=3), "input channels must be divisible"),
        (lambda m, a, b: m.conv1d(a, b, stride=0), "Stride sizes must be positive"),
        (lambda m, a, b: m.conv1d(a, b, dilation=0), "Kernel dilation sizes must be positive"),
        (lambda m, a, b: m.conv1d(a, m.zeros((2, 9, 4))), "cannot be smaller than weight"),
        (lambda m, a, b: m.conv_general(a, b, stride=[1, 1]), "Invalid strides"),
        (lambda m, a, b: m.convolve(a, b), "Inputs must be 1D"),
        (lambda m, a, b: m.convolve(m.zeros((0,)), m.zeros((2,))), "Inputs cannot be empty"),
        (lambda m, a, b: m.convolve(m.zeros((3,)), m.zeros((2,)), "bad"), "Invalid mode"),
    ]
    for fn, message in cases:
        with pytest.raises(ValueError, match=message):
            fn(mx, mx.zeros((1, 5, 4)), mx.zeros((2, 3, 4)))
        with pytest.raises(ValueError, match=message):
            fn(fx, x, w)
