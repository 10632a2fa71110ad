"""Quantization ops against MLX (mlx.core, CPU build): to_fp8, from_fp8,
quantize, dequantize, quantized_matmul, gather_qmm, qqmm.

`to_fp8`, `from_fp8`, `quantize` and `dequantize` are compared bit for bit.
The products dequantize exactly as MLX does but sum with `matmul`, so they
are compared with a tolerance (MLX accumulates group by group); `qqmm` with
a weight of 6 * identity makes the product exact and so checks MLX's
on-the-fly quantization of `x` bit for bit.

Documented differences from MLX (see crates/ferrox/src/ops/quantized.rs):
* `to_fp8` / `from_fp8` of float64 convert the values (MLX reads the
  float64 buffer as float32 and returns garbage);
* vmap of the products works where MLX raises NYI;
* `qqmm` computes the general case (several rows of `x`, unquantized `w`)
  where MLX's CPU build raises "[QQMatmul] NYI for the general case", applies
  the global scales (MLX's CPU kernel ignores them) and refuses "affine"
  (MLX's CPU kernel reads the float scales as fp8 codes);
* `quantize(..., group_size=0)` raises where MLX crashes (division by zero);
  scales with the wrong number of rows raise where MLX reads out of bounds;
* the sign of a NaN made by 0 / 0 inside mxfp8 quantization follows the
  device and ferrox's float conversions (MLX's bfloat16 conversion drops it).

The brief's `from_fp8(0x7F) == 480` is what older MLX sources do; MLX 0.32.4
(the oracle here) gives NaN, and so does ferrox. MLX 0.32.4 also rounds e8m0
scales up (ceil) and supports 1-bit affine quantization; ferrox follows.
Gradients are checked against MLX's and the analytic products rather than
with `fd_check`: the products refuse float64, as MLX's do.
"""

import numpy as np
import pytest

import ferrox as fx
mx = pytest.importorskip("mlx.core")  # the reference for every case here

FLOATS = ["float32", "float16", "bfloat16"]
MODES_FP = ["mxfp4", "mxfp8", "nvfp4"]
UINT_OF = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def mxd(name):
    return getattr(mx, name)


def fxd(name):
    return getattr(fx, name)


def dname(dtype):
    return str(dtype).split(".")[-1]


def bits_of(a, m):
    """The raw bits of an MLX or ferrox array as NumPy (floats as uints)."""
    name = dname(a.dtype)
    if name in ("float16", "bfloat16"):
        a = m.view(a, m.uint16)
    elif name == "float32":
        a = m.view(a, m.uint32)
    elif name == "float64":
        a = m.view(a, m.uint64)
    return np.array(a)


def mx_to_fx(a):
    """An MLX array moved to ferrox bit for bit (same dtype and shape)."""
    name = dname(a.dtype)
    if name in ("float16", "bfloat16"):
        return fx.view(fx.array(np.array(mx.view(a, mx.uint16))), fxd(name))
    return fx.array(np.array(a))


def assert_same(f, m):
    """Same shape, dtype and bits (any NaN equals any NaN: the payloads of
    NaNs converted between float types are astype's business, and MLX's
    casts do not keep them)."""
    assert tuple(f.shape) == tuple(m.shape), (f.shape, m.shape)
    assert dname(f.dtype) == dname(m.dtype), (f.dtype, m.dtype)
    fb, mb = bits_of(f, fx), bits_of(m, mx)
    if dname(f.dtype).startswith(("float", "bfloat")):
        fn = np.isnan(np.array(f.astype(fx.float32) if dname(f.dtype) != "float64" else f))
        mn = np.isnan(np.array(m.astype(mx.float32) if dname(m.dtype) != "float64" else m))
        np.testing.assert_array_equal(fn, mn)
        fb, mb = fb[~fn], mb[~mn]
    np.testing.assert_array_equal(fb, mb)


def assert_near(f, m, rtol, atol):
    assert tuple(f.shape) == tuple(m.shape), (f.shape, m.shape)
    assert dname(f.dtype) == dname(m.dtype), (f.dtype, m.dtype)
    fa = np.array(f.astype(fx.float32))
    ma = np.array(m.astype(mx.float32))
    np.testing.assert_allclose(fa, ma, rtol=rtol, atol=atol)


def weights(rng, shape, name, special=False, nan=True):
    """Random weights, rows of very different magnitudes, as an MLX array
    and its ferrox copy. `special` adds fp4 rounding ties, zero and constant
    groups, NaN, ±inf and tiny values (whole groups of 32)."""
    x = rng.standard_normal(shape).astype(np.float32)
    x *= (10.0 ** rng.uniform(-3, 3, size=shape[:-1] + (1,))).astype(np.float32)
    if special:
        flat = x.reshape(-1, shape[-1])
        ties = np.array([6, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5.0, -0.0])
        flat[0, :16] = ties
        flat[0, 16:32] = ties * 4
        if shape[-1] >= 64:
            flat[0, 32:64] = 0.0
        if flat.shape[0] > 1:
            flat[1, :32] = 3.0
        if flat.shape[0] > 2:
            flat[2, :32] = rng.standard_normal(32) * 1e-39
            flat[2, 5] = np.nan if nan else 0.0
        if flat.shape[0] > 3:
            flat[3, 3] = np.inf
            flat[3, 40 % shape[-1]] = -np.inf
        x = flat.reshape(shape)
    m = mx.array(x).astype(mxd(name))
    return m, mx_to_fx(m)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# ---------------------------------------------------------------- fp8


def test_to_fp8_every_half_and_bfloat16():
    codes = np.arange(1 << 16, dtype=np.uint16)
    for name in ("float16", "bfloat16"):
        m = mx.view(mx.array(codes), mxd(name))
        f = fx.view(fx.array(codes), fxd(name))
        assert_same(fx.to_fp8(f), mx.to_fp8(m))


def test_to_fp8_float32(rng):
    edges = np.array(
        [0, 2.0**-6, 2.0**-7, 2.0**-9, 2.0**-10, 3 * 2.0**-11, 2.0**-10 * 1.0001, 448, 464, 463.99, 480, 1e30]
        + [np.inf, np.nan, 1e-45, 0.0009765625, 0.0029296875, 1.0625, 1.1875, 15.5, 240, 232, 248],
        dtype=np.float32,
    )
    edges = np.concatenate([edges, -edges])
    raw = rng.integers(0, 1 << 32, size=100_000, dtype=np.uint64).astype(np.uint32)
    # Values near the fp8 range, where rounding happens.
    near = (rng.standard_normal(50_000) * 10.0 ** rng.uniform(-4, 3, size=50_000)).astype(np.float32)
    for data in (edges, raw.view(np.float32), near):
        assert_same(fx.to_fp8(fx.array(data)), mx.to_fp8(mx.array(data)))


def test_from_fp8_every_code():
    codes = np.arange(256, dtype=np.uint8)
    for name in FLOATS:
        assert_same(fx.from_fp8(fx.array(codes), fxd(name)), mx.from_fp8(mx.array(codes), mxd(name)))
    assert_same(fx.from_fp8(fx.array(codes)), mx.from_fp8(mx.array(codes)))  # bfloat16 default
    # MLX 0.32.4 reads e4m3's NaN codes as NaN (older sources: ±480).
    got = np.array(fx.from_fp8(fx.array(np.array([0x7F, 0xFF, 0x7E], np.uint8)), fx.float32))
    assert np.isnan(got[:2]).all() and got[2] == 448.0


def test_fp8_float64_converts_values():
    # MLX's CPU build reads float64 buffers as float32 here; ferrox converts.
    x = np.array([1.0, -448.0, 0.01, 1e9], dtype=np.float64)
    assert np.array(fx.to_fp8(fx.array(x))).tolist() == np.array(mx.to_fp8(mx.array(x.astype(np.float32)))).tolist()
    codes = np.arange(256, dtype=np.uint8)
    want = np.array(mx.from_fp8(mx.array(codes), mx.float32)).astype(np.float64)
    got = fx.from_fp8(fx.array(codes), fx.float64)
    assert got.dtype == fx.float64
    np.testing.assert_array_equal(np.array(got), want)


def test_fp8_layouts_and_round_trip(rng):
    m, f = weights(rng, (6, 40), "float32")
    assert_same(fx.to_fp8(f.T[::2]), mx.to_fp8(m.T[::2]))
    codes = fx.to_fp8(f)
    back = fx.from_fp8(codes, fx.float32)
    assert_same(fx.to_fp8(back), mx.to_fp8(mx.from_fp8(mx.to_fp8(m), mx.float32)))
    # e4m3 keeps 3 mantissa bits: relative error at most 2^-4 in the normal range
    x = np.array(f)
    ok = (np.abs(x) >= 2.0**-6) & (np.abs(x) <= 448)
    np.testing.assert_allclose(np.array(back)[ok], x[ok], rtol=2.0**-4)


# ---------------------------------------------------------------- quantize / dequantize


AFFINE = [(gs, b) for gs in (32, 64, 128) for b in (1, 2, 3, 4, 5, 6, 8)]


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("gs,bits", AFFINE)
def test_affine_quantize_dequantize_bitwise(rng, name, gs, bits):
    m, f = weights(rng, (2, 3, 256), name, special=True)
    qm = mx.quantize(m, group_size=gs, bits=bits)
    qf = fx.quantize(f, group_size=gs, bits=bits)
    assert isinstance(qf, list) and len(qf) == 3
    for a, b in zip(qf, qm):
        assert_same(a, b)
    assert_same(fx.dequantize(*qf, group_size=gs, bits=bits), mx.dequantize(*qm, group_size=gs, bits=bits))
    assert_same(
        fx.dequantize(*qf, group_size=gs, bits=bits, dtype=fx.float32),
        mx.dequantize(*qm, group_size=gs, bits=bits, dtype=mx.float32),
    )


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("mode", MODES_FP)
def test_fp_quantize_dequantize_bitwise(rng, name, mode, device):
    # In bfloat16, 0 / 0 is a NaN whose sign MLX's float -> bfloat16
    # conversion drops and ferrox's keeps; mxfp8 keeps that sign in its code.
    # On the GPU, 0 / 0 is CUDA's positive NaN where x86's is negative.
    sign_free = mode == "mxfp8" and (name == "bfloat16" or device == "gpu")
    m, f = weights(rng, (2, 4, 128), name, special=True, nan=not sign_free)
    qm = mx.quantize(m, mode=mode)
    qf = fx.quantize(f, mode=mode)
    assert isinstance(qf, list) and len(qf) == 2
    for a, b in zip(qf, qm):
        assert_same(a, b)
    for dt in (None, "float32", "float16", "bfloat16"):
        kw = {} if dt is None else {"dtype": dt}
        assert_same(
            fx.dequantize(*qf, mode=mode, **{k: fxd(v) for k, v in kw.items()}),
            mx.dequantize(*qm, mode=mode, **{k: mxd(v) for k, v in kw.items()}),
        )


@pytest.mark.parametrize("name", FLOATS)
def test_nvfp4_global_scale_bitwise(rng, name):
    m, f = weights(rng, (4, 64), name)
    for g in (0.37, 3.0, 1000.0):
        gm, gf = mx.array(g), fx.array(g)
        qm = mx.quantize(m, mode="nvfp4", global_scale=gm)
        qf = fx.quantize(f, mode="nvfp4", global_scale=gf)
        for a, b in zip(qf, qm):
            assert_same(a, b)
        for dt in (None, "float16", "float32"):
            assert_same(
                fx.dequantize(*qf, mode="nvfp4", global_scale=gf, dtype=None if dt is None else fxd(dt)),
                mx.dequantize(*qm, mode="nvfp4", global_scale=gm, dtype=None if dt is None else mxd(dt)),
            )
    # A global scale of shape (1,) works too.
    qm = mx.quantize(m, mode="nvfp4", global_scale=mx.array([2.0]))
    qf = fx.quantize(f, mode="nvfp4", global_scale=fx.array([2.0]))
    for a, b in zip(qf, qm):
        assert_same(a, b)


def test_quantize_layouts(rng):
    m, f = weights(rng, (128, 96), "float32")
    for view in (lambda a: a.T, lambda a: a[::2, :64], lambda a: a.T[1::3].reshape(2, 16, 128)[:, ::-1]):
        for kw in ({"group_size": 32, "bits": 3}, {"group_size": 64}, {"mode": "mxfp4"}, {"mode": "nvfp4"}):
            qm = mx.quantize(view(m), **kw)
            qf = fx.quantize(view(f), **kw)
            for a, b in zip(qf, qm):
                assert_same(a, b)
            mode = kw.get("mode", "affine")
            gs = kw.get("group_size")
            bits = kw.get("bits")
            # Non-contiguous packed inputs to dequantize.
            qm2 = [a[::-1] for a in qm]
            qf2 = [a[::-1] for a in qf]
            assert_same(
                fx.dequantize(*qf2, group_size=gs, bits=bits, mode=mode) if mode == "affine"
                else fx.dequantize(*qf2, mode=mode),
                mx.dequantize(*qm2, group_size=gs, bits=bits, mode=mode) if mode == "affine"
                else mx.dequantize(*qm2, mode=mode),
            )


def test_dequantize_random_codes(rng):
    # Every packed bit pattern and every scale code, not only quantize's outputs.
    w = rng.integers(0, 1 << 32, size=(3, 64), dtype=np.uint64).astype(np.uint32)
    for mode, ns in (("mxfp4", 16), ("mxfp8", 8), ("nvfp4", 32)):
        s = rng.integers(0, 256, size=(3, ns), dtype=np.uint8)
        s[0, :2] = [0, 255]
        for dt in FLOATS:
            assert_same(
                fx.dequantize(fx.array(w), fx.array(s), mode=mode, dtype=fxd(dt)),
                mx.dequantize(mx.array(w), mx.array(s), mode=mode, dtype=mxd(dt)),
            )
    for bits in (2, 3, 4, 5, 6, 8, 1, 16, 32):
        wb = w[:, : 2 * bits]  # 64 values per row: two groups of 32
        for name in ("float16", "float32"):
            sm, sf = weights(rng, (3, 2), name)
            bm, bf = weights(rng, (3, 2), "bfloat16")
            assert_same(
                fx.dequantize(fx.array(wb), sf, bf, group_size=32, bits=bits),
                mx.dequantize(mx.array(wb), sm, bm, group_size=32, bits=bits),
            )


def test_empty_inputs():
    # MLX's fallbacks refuse some empty inputs; ferrox raises the same errors.
    for shape in ((0, 64), (3, 0), (2, 0, 64)):
        for mode in ("affine", "mxfp4", "mxfp8", "nvfp4"):
            em, ef = both(lambda m: m.quantize(m.zeros(shape), mode=mode))
            assert type(ef) is type(em) and str(ef) == str(em), (shape, mode, ef, em)
            if em is None:
                qm, qf = mx.quantize(mx.zeros(shape), mode=mode), fx.quantize(fx.zeros(shape), mode=mode)
                for a, b in zip(qf, qm):
                    assert_same(a, b)
                em, ef = both(lambda m: m.dequantize(*m.quantize(m.zeros(shape), mode=mode), mode=mode))
                assert type(ef) is type(em) and str(ef) == str(em), (shape, mode, ef, em)


@pytest.mark.parametrize("mode,gs,bits", [("affine", 32, 2), ("affine", 64, 3), ("affine", 128, 8), ("mxfp4", 32, 4), ("mxfp8", 32, 8), ("nvfp4", 16, 4)])
def test_round_trip_error(rng, mode, gs, bits):
    w = (rng.standard_normal((8, 256)) * 3).astype(np.float32)
    q = fx.quantize(fx.array(w), group_size=gs, bits=bits, mode=mode)
    back = np.array(fx.dequantize(*q, group_size=gs, bits=bits, mode=mode, dtype=fx.float32))
    err = np.abs(back - w).reshape(8, -1, gs)
    if mode == "affine":
        # Half a step, or one step where keeping 0 exact shrank the range.
        scale = np.abs(np.array(q[1]))[..., None]
        assert np.all(err <= scale * (1 + 1e-5) + 1e-6)
    else:
        amax = np.abs(w).reshape(8, -1, gs).max(-1, keepdims=True)
        assert np.all(err <= amax * (0.35 if bits == 4 else 0.1))


# ---------------------------------------------------------------- products

TOL = {"float32": (2e-5, 2e-5), "float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)}


def quantized(rng, shape, name, mode, gs=None, bits=None):
    w = rng.standard_normal(shape).astype(np.float32)
    m = mx.array(w).astype(mxd(name))
    qm = mx.quantize(m, group_size=gs, bits=bits, mode=mode)
    return qm, [mx_to_fx(a) for a in qm]


def scale_tol(name, ref):
    rtol, atol = TOL[name]
    return rtol, atol * max(1.0, float(np.abs(np.array(ref.astype(mx.float32))).max()))


PRODUCT_CASES = [("affine", 32, b) for b in (2, 3, 5, 8)] + [("affine", 64, 4), ("affine", 128, 6)] + [
    (mo, None, None) for mo in MODES_FP
]


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("mode,gs,bits", PRODUCT_CASES)
def test_quantized_matmul(rng, name, mode, gs, bits):
    K, N = 256, 24
    kw = dict(group_size=gs, bits=bits, mode=mode)
    for transpose in (True, False):
        wshape = (N, K) if transpose else (K, 128)
        qm, qf = quantized(rng, (2,) + wshape, name, mode, gs, bits)
        inner = K if transpose else wshape[0]
        for xshape, take_batch in (((3, inner), False), ((2, 3, inner), True), ((4, 1, 2, inner), True), ((inner,), False)):
            xm = mx.array(rng.standard_normal(xshape).astype(np.float32)).astype(mxd(name))
            xf = mx_to_fx(xm)
            ws = (lambda q: q) if take_batch else (lambda q: q[0])
            rm = mx.quantized_matmul(xm, *[ws(a) for a in qm], transpose=transpose, **kw)
            rf = fx.quantized_matmul(xf, *[ws(a) for a in qf], transpose=transpose, **kw)
            assert_near(rf, rm, *scale_tol(name, rm))
    # Non-contiguous x.
    qm, qf = quantized(rng, (N, K), name, mode, gs, bits)
    xm = mx.array(rng.standard_normal((K, 6)).astype(np.float32)).astype(mxd(name))
    xf = mx_to_fx(xm)
    rm = mx.quantized_matmul(xm.T[::2], *qm, **kw)
    rf = fx.quantized_matmul(xf.T[::2], *qf, **kw)
    assert_near(rf, rm, *scale_tol(name, rm))


def test_quantized_matmul_dtypes_and_quirks(rng):
    qm, qf = quantized(rng, (3, 16, 64), "float32", "affine", 32, 4)
    x = rng.standard_normal((5, 64)).astype(np.float32)
    # x of two dimensions with a batched w: MLX uses w's first matrix.
    rm = mx.quantized_matmul(mx.array(x), *qm, group_size=32)
    rf = fx.quantized_matmul(fx.array(x), *qf, group_size=32)
    assert_near(rf, rm, 1e-5, 1e-5)
    # Promotion: float16 x with float32 scales computes in float32; scales
    # in bfloat16 with float16 x give float32.
    rm = mx.quantized_matmul(mx.array(x).astype(mx.float16), *qm, group_size=32)
    rf = fx.quantized_matmul(fx.array(x).astype(fx.float16), *qf, group_size=32)
    assert_near(rf, rm, 1e-3, 1e-3)
    sm, bm = qm[1].astype(mx.bfloat16), qm[2].astype(mx.bfloat16)
    rm = mx.quantized_matmul(mx.array(x).astype(mx.float16), qm[0], sm, bm, group_size=32)
    rf = fx.quantized_matmul(fx.array(x).astype(fx.float16), qf[0], mx_to_fx(sm), mx_to_fx(bm), group_size=32)
    assert_near(rf, rm, 1e-3, 1e-3)
    # Exact when the dequantized product is exact: integer weights spanning
    # [-8, 7] in every group (scale 1, bias -8) and integer x.
    w = rng.integers(-8, 8, size=(16, 64)).astype(np.float32)
    w[:, ::32], w[:, 1::32] = -8, 7
    qm = mx.quantize(mx.array(w), group_size=32)
    qf = fx.quantize(fx.array(w), group_size=32)
    xi = rng.integers(-4, 4, size=(5, 64)).astype(np.float32)
    assert_same(fx.quantized_matmul(fx.array(xi), *qf, group_size=32), mx.quantized_matmul(mx.array(xi), *qm, group_size=32))


@pytest.mark.parametrize("mode,gs,bits", [("affine", 64, 4), ("affine", 32, 3), ("mxfp4", None, None), ("nvfp4", None, None), ("mxfp8", None, None)])
def test_gather_qmm(rng, mode, gs, bits):
    kw = dict(group_size=gs, bits=bits, mode=mode)
    E, N, K = 4, 16, 128
    for name in FLOATS:
        for transpose in (True, False):
            wshape = (E, N, K) if transpose else (E, K, 128)
            qm, qf = quantized(rng, wshape, name, mode, gs, bits)
            inner = K
            xm = mx.array(rng.standard_normal((3, 2, inner)).astype(np.float32)).astype(mxd(name))
            xf = mx_to_fx(xm)
            cases = [
                dict(rhs_indices=[3, 0, 3]),
                dict(lhs_indices=[2, 2, 0, 1], rhs_indices=[1, 0, 3, 3]),
                dict(lhs_indices=[[0], [1]], rhs_indices=[[0, 1, 2, 3]]),
                dict(lhs_indices=[0, 1, 2, 2]),
                dict(),
            ]
            for c in cases:
                cm = {k: mx.array(np.array(v, dtype=np.uint32)) for k, v in c.items()}
                cf = {k: fx.array(np.array(v, dtype=np.uint32)) for k, v in c.items()}
                xx_m = xm if "lhs_indices" in c else xm[:1]
                xx_f = xf if "lhs_indices" in c else xf[:1]
                if not c:
                    xx_m, xx_f = xm[:, None], xf[:, None]
                    xx_m, xx_f = mx.broadcast_to(xx_m, (3, E, 2, inner)), fx.broadcast_to(xx_f, (3, E, 2, inner))
                rm = mx.gather_qmm(xx_m, *qm, transpose=transpose, **cm, **kw)
                rf = fx.gather_qmm(xx_f, *qf, transpose=transpose, **cf, **kw)
                assert_near(rf, rm, *scale_tol(name, rm))
    # int64 / int32 indices and sorted_indices are accepted.
    qm, qf = quantized(rng, (E, N, K), "float32", mode, gs, bits)
    x = rng.standard_normal((1, 2, K)).astype(np.float32)
    idx = np.array([0, 0, 2, 3])
    rm = mx.gather_qmm(mx.array(x), *qm, rhs_indices=mx.array(idx), sorted_indices=True, **kw)
    for dt in (np.int64, np.int32):
        rf = fx.gather_qmm(fx.array(x), *qf, rhs_indices=fx.array(idx.astype(dt)), sorted_indices=True, **kw)
        assert_near(rf, rm, 2e-5, 2e-5)


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("mode", MODES_FP)
def test_qqmm_quantizes_x_like_mlx(rng, name, mode):
    # w = 6 * I dequantizes exactly to itself in every fp mode, so the product
    # is 6 * x_hat exactly: MLX's on-the-fly quantization of x, bit for bit.
    K = 64
    eye = mx.array(6 * np.eye(K, dtype=np.float32)).astype(mxd(name))
    qm = mx.quantize(eye, mode=mode)
    qf = [mx_to_fx(a) for a in qm]
    xm, xf = weights(rng, (1, K), name, special=True)
    for xs_m, xs_f in ((xm, xf), (xm[0], xf[0]), (xm[None], xf[None])):
        assert_same(fx.qqmm(xs_f, *qf, mode=mode), mx.qqmm(xs_m, *qm, mode=mode))
    # Every tie of e2m1 and of e4m3 at one scale.
    ties = np.concatenate([np.arange(0, 6.5, 0.125), -np.arange(0, 6.5, 0.125)])[:K].astype(np.float32)
    ties[0] = 6.0
    tm = mx.array(ties[None]).astype(mxd(name))
    assert_same(fx.qqmm(mx_to_fx(tm), *qf, mode=mode), mx.qqmm(tm, *qm, mode=mode))


@pytest.mark.parametrize("mode", MODES_FP)
def test_qqmm_values(rng, mode):
    w = rng.standard_normal((16, 64)).astype(np.float32)
    qm = mx.quantize(mx.array(w), mode=mode)
    qf = fx.quantize(fx.array(w), mode=mode)
    x = rng.standard_normal((1, 64)).astype(np.float32)
    rm = mx.qqmm(mx.array(x), *qm, mode=mode)
    rf = fx.qqmm(fx.array(x), *qf, mode=mode)
    assert_near(rf, rm, 1e-5, 1e-5)
    # The general case (MLX's CPU build raises NYI): rows are independent, an
    # unquantized w is quantized like quantize() does up to e2m1 ties.
    xs = rng.standard_normal((3, 5, 64)).astype(np.float32)
    with pytest.raises(RuntimeError, match="NYI"):
        mx.eval(mx.qqmm(mx.array(xs), *qm, mode=mode))
    rows = fx.qqmm(fx.array(xs), *qf, mode=mode)
    assert rows.shape == (3, 5, 16)
    one = np.stack([np.array(fx.qqmm(fx.array(r[None]), *qf, mode=mode))[0] for r in xs.reshape(-1, 64)])
    np.testing.assert_allclose(np.array(rows).reshape(-1, 16), one, rtol=1e-5, atol=1e-5)
    direct = fx.qqmm(fx.array(x), fx.array(w), mode=mode)
    via_q = fx.qqmm(fx.array(x), *qf, mode=mode)
    np.testing.assert_allclose(np.array(direct), np.array(via_q), rtol=0.05, atol=0.05 * np.abs(np.array(via_q)).max())
    # float16 x gives float16.
    assert fx.qqmm(fx.array(x).astype(fx.float16), *qf, mode=mode).dtype == fx.float16


def test_qqmm_global_scales(rng):
    w = rng.standard_normal((16, 64)).astype(np.float32)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    gw, gx = float(np.abs(w).max()), float(np.abs(x).max())
    qf = fx.quantize(fx.array(w), mode="nvfp4", global_scale=fx.array(gw))
    out = fx.qqmm(fx.array(x), *qf, global_scale_x=fx.array(gx), global_scale_w=fx.array(gw))
    deq = fx.dequantize(*qf, mode="nvfp4", global_scale=fx.array(gw), dtype=fx.float32)
    ref = x @ np.array(deq).T
    np.testing.assert_allclose(np.array(out), ref, rtol=0.1, atol=0.1 * np.abs(ref).max())


# ---------------------------------------------------------------- errors


def both(fn):
    """Runs fn(mx) and fn(fx) (evaluating results); returns both exceptions."""
    out = []
    for m in (mx, fx):
        try:
            r = fn(m)
            m.eval(r)
        except Exception as e:  # noqa: BLE001 - compared below
            out.append(e)
        else:
            out.append(None)
    return out


def qargs(m, shape=(8, 64), mode="affine", gs=None, bits=None, name="float32"):
    return m.quantize(m.ones(shape, dtype=getattr(m, name)), group_size=gs, bits=bits, mode=mode)


ERRORS = {
    "to_fp8 int": lambda m: m.to_fp8(m.zeros((2,), dtype=m.int32)),
    "from_fp8 float": lambda m: m.from_fp8(m.zeros((2,))),
    "from_fp8 int dtype": lambda m: m.from_fp8(m.zeros((2,), dtype=m.uint8), m.int32),
    "quantize mode": lambda m: m.quantize(m.zeros((2, 64)), mode="int4"),
    "quantize int": lambda m: m.quantize(m.zeros((2, 64), dtype=m.int32)),
    "quantize 1d": lambda m: m.quantize(m.zeros((64,))),
    "quantize divisible": lambda m: m.quantize(m.zeros((2, 40))),
    "quantize gs 16": lambda m: m.quantize(m.zeros((2, 64)), group_size=16),
    "quantize gs -32": lambda m: m.quantize(m.zeros((2, 64)), group_size=-32),
    "quantize gs -7": lambda m: m.quantize(m.zeros((2, 64)), group_size=-7),
    "quantize bits 7": lambda m: m.quantize(m.zeros((2, 64)), bits=7),
    "quantize bits 9": lambda m: m.quantize(m.zeros((2, 64)), bits=9),
    "quantize mxfp4 gs": lambda m: m.quantize(m.zeros((2, 64)), mode="mxfp4", group_size=64),
    "quantize mxfp4 bits": lambda m: m.quantize(m.zeros((2, 64)), mode="mxfp4", bits=8),
    "quantize mxfp8 bits": lambda m: m.quantize(m.zeros((2, 64)), mode="mxfp8", bits=4),
    "quantize nvfp4 gs": lambda m: m.quantize(m.zeros((2, 64)), mode="nvfp4", group_size=32),
    "quantize nvfp4 odd": lambda m: m.quantize(m.zeros((1, 16)), mode="nvfp4"),
    "quantize nvfp4 odd 3": lambda m: m.quantize(m.zeros((3, 16)), mode="nvfp4"),
    "quantize global affine": lambda m: m.quantize(m.zeros((2, 64)), global_scale=m.array(1.0)),
    "quantize global shape": lambda m: m.quantize(m.zeros((2, 64)), mode="nvfp4", global_scale=m.ones((2,))),
    "quantize global dtype": lambda m: m.quantize(m.zeros((2, 64)), mode="nvfp4", global_scale=m.array(1.0, dtype=m.float16)),
    "quantize float64": lambda m: m.quantize(m.zeros((2, 64), dtype=m.float64)),
    "dequantize mode": lambda m: m.dequantize(*qargs(m), mode="fp4"),
    "dequantize dtype": lambda m: m.dequantize(*qargs(m), dtype=m.int32),
    "dequantize no biases": lambda m: m.dequantize(*qargs(m)[:2]),
    "dequantize int scales": lambda m: m.dequantize(qargs(m)[0], m.zeros((8, 1), dtype=m.int32), m.zeros((8, 1), dtype=m.int32)),
    "dequantize fp float scales": lambda m: m.dequantize(qargs(m, mode="mxfp4")[0], m.zeros((8, 2)), mode="mxfp4"),
    "dequantize fp biases": lambda m: m.dequantize(*qargs(m, mode="mxfp4"), biases=m.zeros((8, 2)), mode="mxfp4"),
    "dequantize bits 0": lambda m: m.dequantize(*qargs(m), bits=0),
    "dequantize gs 0": lambda m: m.dequantize(*qargs(m), group_size=0),
    "dequantize w float": lambda m: m.dequantize(m.zeros((8, 8)), *qargs(m)[1:]),
    "dequantize w 1d": lambda m: m.dequantize(m.zeros((8,), dtype=m.uint32), m.zeros((1,)), m.zeros((1,))),
    "dequantize global affine": lambda m: m.dequantize(*qargs(m), global_scale=m.array(1.0)),
    "dequantize ndim": lambda m: m.dequantize(qargs(m)[0], m.zeros((1, 8, 1)), m.zeros((1, 8, 1))),
    "dequantize rows": lambda m: m.dequantize(qargs(m)[0], m.zeros((4, 1)), m.zeros((4, 1))),
    "dequantize size": lambda m: m.dequantize(*qargs(m), group_size=32),
    "dequantize fp size": lambda m: m.dequantize(qargs(m, mode="mxfp4")[0], m.zeros((8, 3), dtype=m.uint8), mode="mxfp4"),
    "dequantize fp ndim": lambda m: m.dequantize(qargs(m, mode="mxfp4")[0], m.zeros((8,), dtype=m.uint8), mode="mxfp4"),
    "dequantize fp gs": lambda m: m.dequantize(*qargs(m, mode="mxfp4"), group_size=16, mode="mxfp4"),
    "dequantize fp bits": lambda m: m.dequantize(*qargs(m, mode="nvfp4"), bits=8, mode="nvfp4"),
    "dequantize bits 7": lambda m: m.dequantize(m.zeros((2, 8), dtype=m.uint32), m.zeros((2, 1)), m.zeros((2, 1)), bits=7, group_size=36),
    "dequantize bits 3 85": lambda m: m.dequantize(m.zeros((2, 8), dtype=m.uint32), m.zeros((2, 1)), m.zeros((2, 1)), bits=3, group_size=85),
    "qmm w float": lambda m: m.quantized_matmul(m.zeros((2, 64)), m.zeros((8, 8)), *qargs(m)[1:]),
    "qmm biases shape": lambda m: m.quantized_matmul(m.zeros((2, 64)), *qargs(m)[:2], m.zeros((8, 2))),
    "qmm batch": lambda m: m.quantized_matmul(m.zeros((2, 64)), m.zeros((2, 8, 8), dtype=m.uint32), m.zeros((8, 1)), m.zeros((8, 1))),
    "qmm w 1d": lambda m: m.quantized_matmul(m.zeros((2, 64)), m.zeros((8,), dtype=m.uint32), m.zeros((1,)), m.zeros((1,))),
    "qmm incompatible": lambda m: m.quantized_matmul(m.zeros((2, 64)), *qargs(m), group_size=32),
    "qmm gs 0": lambda m: m.quantized_matmul(m.zeros((2, 64)), *qargs(m), group_size=0),
    "qmm inner": lambda m: m.quantized_matmul(m.zeros((2, 32)), *qargs(m)),
    "qmm inner no transpose": lambda m: m.quantized_matmul(m.zeros((2, 64)), *qargs(m), transpose=False),
    "qmm x int": lambda m: m.quantized_matmul(m.zeros((2, 64), dtype=m.int32), *qargs(m, mode="mxfp4"), mode="mxfp4"),
    "qmm x float64": lambda m: m.quantized_matmul(m.zeros((2, 64), dtype=m.float64), *qargs(m)),
    "qmm mode": lambda m: m.quantized_matmul(m.zeros((2, 64)), *qargs(m), mode="foo"),
    "qmm no biases": lambda m: m.quantized_matmul(m.zeros((2, 64)), *qargs(m)[:2]),
    "qmm fp biases": lambda m: m.quantized_matmul(m.zeros((2, 64)), *qargs(m, mode="mxfp4"), m.zeros((8, 2)), mode="mxfp4"),
    "qmm fp scale type": lambda m: m.quantized_matmul(m.zeros((2, 64)), qargs(m, mode="mxfp4")[0], m.zeros((8, 2)), mode="mxfp4"),
    "qmm broadcast": lambda m: m.quantized_matmul(m.zeros((5, 3, 64)), *qargs(m, shape=(2, 8, 64))),
    "qmm bits 7": lambda m: m.quantized_matmul(m.zeros((2, 64)), m.zeros((8, 14), dtype=m.uint32), m.zeros((8, 1)), m.zeros((8, 1)), bits=7),
    "qmm gs 16": lambda m: m.quantized_matmul(
        m.zeros((2, 64)), m.zeros((8, 8), dtype=m.uint32), m.zeros((8, 4)), m.zeros((8, 4)), group_size=16
    ),
    "gqmm float indices": lambda m: m.gather_qmm(m.zeros((3, 2, 64)), *qargs(m, shape=(3, 8, 64)), rhs_indices=m.zeros((3,))),
    "gqmm float lhs": lambda m: m.gather_qmm(m.zeros((3, 2, 64)), *qargs(m, shape=(3, 8, 64)), lhs_indices=m.zeros((3,))),
    "gqmm x 1d": lambda m: m.gather_qmm(m.zeros((64,)), *qargs(m, shape=(3, 8, 64)), rhs_indices=m.zeros((3,), dtype=m.uint32)),
    "gqmm broadcast": lambda m: m.gather_qmm(
        m.zeros((3, 2, 64)), *qargs(m, shape=(3, 8, 64)), lhs_indices=m.zeros((3,), dtype=m.uint32), rhs_indices=m.zeros((2,), dtype=m.uint32)
    ),
    "gqmm inner": lambda m: m.gather_qmm(m.zeros((3, 2, 32)), *qargs(m, shape=(3, 8, 64)), rhs_indices=m.zeros((3,), dtype=m.uint32)),
    "gqmm mode": lambda m: m.gather_qmm(m.zeros((3, 2, 64)), *qargs(m, shape=(3, 8, 64)), mode="x", rhs_indices=m.zeros((3,), dtype=m.uint32)),
    "gqmm x int": lambda m: m.gather_qmm(
        m.zeros((3, 2, 64), dtype=m.int32), *qargs(m, shape=(3, 8, 64), mode="mxfp4"), mode="mxfp4", rhs_indices=m.zeros((3,), dtype=m.uint32)
    ),
    "gqmm global no indices": lambda m: m.gather_qmm(m.zeros((3, 2, 64)), *qargs(m, shape=(3, 8, 64), mode="nvfp4"), mode="nvfp4", global_scale=m.ones((3,))),
    "gqmm global mode": lambda m: m.gather_qmm(
        m.zeros((3, 2, 64)), *qargs(m, shape=(3, 8, 64), mode="mxfp4"), mode="mxfp4", global_scale=m.ones((3,)), rhs_indices=m.zeros((3,), dtype=m.uint32)
    ),
    "gqmm global dtype": lambda m: m.gather_qmm(
        m.zeros((3, 2, 64)), *qargs(m, shape=(3, 8, 64), mode="nvfp4"), mode="nvfp4", global_scale=m.ones((5,), dtype=m.float16), rhs_indices=m.zeros((3,), dtype=m.uint32)
    ),
    "gqmm global shape": lambda m: m.gather_qmm(
        m.zeros((3, 2, 64)), *qargs(m, shape=(3, 8, 64), mode="nvfp4"), mode="nvfp4", global_scale=m.ones(()), rhs_indices=m.zeros((3,), dtype=m.uint32)
    ),
    "gqmm global cpu": lambda m: m.gather_qmm(
        m.zeros((3, 2, 64)), *qargs(m, shape=(3, 8, 64), mode="nvfp4"), mode="nvfp4", global_scale=m.ones((3,)), rhs_indices=m.zeros((3,), dtype=m.uint32),
        stream=m.cpu,
    ),
    "qqmm w 3d": lambda m: m.qqmm(m.zeros((1, 64)), m.zeros((2, 8, 64))),
    "qqmm no scales": lambda m: m.qqmm(m.zeros((1, 64)), qargs(m, mode="nvfp4")[0]),
    "qqmm w int": lambda m: m.qqmm(m.zeros((1, 64)), m.zeros((8, 64), dtype=m.int32)),
    "qqmm w f64": lambda m: m.qqmm(m.zeros((1, 64)), m.zeros((8, 64), dtype=m.float64)),
    "qqmm x int": lambda m: m.qqmm(m.zeros((1, 64), dtype=m.int32), m.zeros((8, 64))),
    "qqmm x f64": lambda m: m.qqmm(m.zeros((1, 64), dtype=m.float64), m.zeros((8, 64))),
    "qqmm one global": lambda m: m.qqmm(m.zeros((1, 64)), m.zeros((8, 64)), global_scale_x=m.array(1.0)),
    "qqmm global mxfp8": lambda m: m.qqmm(m.zeros((1, 64)), m.zeros((8, 64)), mode="mxfp8", global_scale_x=m.array(1.0)),
    "qqmm global shape": lambda m: m.qqmm(m.zeros((1, 64)), m.zeros((8, 64)), global_scale_x=m.ones((2,)), global_scale_w=m.array(1.0)),
    "qqmm last dim": lambda m: m.qqmm(m.zeros((1, 64)), m.zeros((8, 32))),
    "qqmm q last dim": lambda m: m.qqmm(m.zeros((1, 32)), *qargs(m, mode="nvfp4"), mode="nvfp4"),
    "qqmm mode": lambda m: m.qqmm(m.zeros((1, 64)), m.zeros((8, 64)), mode="int8"),
    "qqmm q scales": lambda m: m.qqmm(m.zeros((1, 64)), qargs(m, mode="nvfp4")[0], m.zeros((8, 2), dtype=m.uint8)),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_mlx(case):
    em, ef = both(ERRORS[case])
    assert em is not None, "MLX accepted the call"
    assert ef is not None, f"ferrox accepted the call; MLX raised {em!r}"
    assert type(ef) is type(em), (ef, em)
    assert str(ef) == str(em)


def test_errors_where_mlx_crashes_or_computes_garbage(device):
    with pytest.raises(ValueError, match="requested group size 0 is not supported"):
        fx.quantize(fx.zeros((2, 64)), group_size=0)
    with pytest.raises(ValueError, match="mxfp4 quantization requires group size 32 but got 0"):
        fx.quantize(fx.zeros((2, 64)), group_size=0, mode="mxfp4")
    q = fx.quantize(fx.ones((8, 64)))
    with pytest.raises(ValueError, match="one row per row"):
        fx.quantized_matmul(fx.zeros((2, 64)), q[0], q[1][:4], q[2][:4])
    with pytest.raises(ValueError, match="affine"):
        fx.qqmm(fx.zeros((1, 64)), *q[:2], mode="affine", group_size=64, bits=4)
    if device == "cpu":  # out-of-range indices read zeros on the GPU (README)
        with pytest.raises(IndexError):
            fx.eval(fx.gather_qmm(fx.zeros((1, 2, 64)), *fx.quantize(fx.ones((3, 8, 64))), rhs_indices=fx.array([0, 5])))


# ---------------------------------------------------------------- transforms


def test_quantized_matmul_gradients(rng):
    for transpose in (True, False):
        wshape = (16, 64) if transpose else (64, 64)
        qm, qf = quantized(rng, wshape, "float32", "affine", 32, 4)
        x = rng.standard_normal((2, 3, 64)).astype(np.float32)
        cot = rng.standard_normal((2, 3, wshape[0] if transpose else 64)).astype(np.float32)
        kw = dict(transpose=transpose, group_size=32, bits=4)

        def f_mx(x, s, b):
            return (mx.quantized_matmul(x, qm[0], s, b, **kw) * mx.array(cot)).sum()

        def f_fx(x, s, b):
            return (fx.quantized_matmul(x, qf[0], s, b, **kw) * fx.array(cot)).sum()

        gm = mx.grad(f_mx, argnums=(0, 1, 2))(mx.array(x), qm[1], qm[2])
        gf = fx.grad(f_fx, argnums=(0, 1, 2))(fx.array(x), qf[1], qf[2])
        for a, b in zip(gf, gm):
            assert_near(a, b, 1e-4, 1e-4 * max(1.0, float(np.abs(np.array(b)).max())))
        # jvp with respect to x
        t = rng.standard_normal(x.shape).astype(np.float32)
        _, (jm,) = mx.jvp(lambda v: mx.quantized_matmul(v, *qm, **kw), [mx.array(x)], [mx.array(t)])
        _, (jf,) = fx.jvp(lambda v: fx.quantized_matmul(v, *qf, **kw), [fx.array(x)], [fx.array(t)])
        assert_near(jf, jm, 1e-4, 1e-4)
        # The vjp with respect to x is the product with the dequantized matrix.
        deq = np.array(fx.dequantize(*qf, group_size=32, bits=4))
        want = cot @ (deq if transpose else deq.T)
        np.testing.assert_allclose(np.array(gf[0]), want, rtol=1e-4, atol=1e-4)
    # The packed weights raise MLX's RuntimeError; fp scales its ValueError.
    with pytest.raises(RuntimeError, match="no gradient wrt the quantized weights"):
        fx.grad(lambda w: fx.quantized_matmul(fx.array(x), w, qf[1], qf[2], group_size=32).sum())(qf[0])
    with pytest.raises(RuntimeError, match="no gradient wrt the quantized weights"):
        mx.grad(lambda w: mx.quantized_matmul(mx.array(x), w, qm[1], qm[2], group_size=32).sum())(qm[0])
    with pytest.raises(RuntimeError, match="no gradient wrt the quantized weights"):
        fx.grad(lambda w: fx.gather_qmm(fx.array(x), w, qf[1], qf[2], rhs_indices=fx.array(0), group_size=32).sum())(
            qf[0]
        )
    qf = fx.quantize(fx.array(rng.standard_normal((16, 64)).astype(np.float32)), mode="mxfp4")
    with pytest.raises(ValueError, match="no gradient wrt scales"):
        fx.grad(lambda s: fx.quantized_matmul(fx.array(x), qf[0], s, mode="mxfp4").sum())(qf[1])


def test_gather_qmm_and_dequantize_gradients(rng):
    qm, qf = quantized(rng, (4, 16, 64), "float32", "affine", 32, 4)
    x = rng.standard_normal((3, 2, 64)).astype(np.float32)
    li, ri = [2, 0, 0, 1], [3, 3, 1, 0]

    def f(m, q, x, s, b):
        return (m.gather_qmm(x, q[0], s, b, lhs_indices=m.array(li), rhs_indices=m.array(ri), group_size=32) ** 2).sum()

    gm = mx.grad(lambda *a: f(mx, qm, *a), argnums=(0, 1, 2))(mx.array(x), qm[1], qm[2])
    gf = fx.grad(lambda *a: f(fx, qf, *a), argnums=(0, 1, 2))(fx.array(x), qf[1], qf[2])
    for a, b in zip(gf, gm):
        assert_near(a, b, 1e-4, 1e-4 * max(1.0, float(np.abs(np.array(b)).max())))
    cot = rng.standard_normal((4, 16, 64)).astype(np.float32)
    gm = mx.grad(lambda s, b: (mx.dequantize(qm[0], s, b, group_size=32) * mx.array(cot)).sum(), argnums=(0, 1))(qm[1], qm[2])
    gf = fx.grad(lambda s, b: (fx.dequantize(qf[0], s, b, group_size=32) * fx.array(cot)).sum(), argnums=(0, 1))(qf[1], qf[2])
    for a, b in zip(gf, gm):
        assert_near(a, b, 1e-5, 1e-4)


def test_quantize_gradient_matches_mlx(rng):
    w = rng.standard_normal((4, 64)).astype(np.float32)
    for i in (1, 2):
        gm = mx.grad(lambda a: mx.quantize(a, group_size=32)[i].sum())(mx.array(w))
        gf = fx.grad(lambda a: fx.quantize(a, group_size=32)[i].sum())(fx.array(w))
        assert_near(gf, gm, 1e-5, 1e-5)


def test_qqmm_vjp_is_mlx_rule(rng):
    x = rng.standard_normal((32, 64)).astype(np.float32)
    w = rng.standard_normal((16, 64)).astype(np.float32)
    cot = rng.standard_normal((32, 16)).astype(np.float32)
    for mode in ("nvfp4", "mxfp8"):
        _, (dx, dw) = fx.vjp(lambda a, b: fx.qqmm(a, b, mode=mode), [fx.array(x), fx.array(w)], [fx.array(cot)])
        want_dx = fx.qqmm(fx.array(cot), fx.array(w.T), mode=mode)
        want_dw = fx.qqmm(fx.array(cot.T), fx.array(x.T), mode=mode)
        np.testing.assert_array_equal(np.array(dx), np.array(want_dx))
        np.testing.assert_array_equal(np.array(dw), np.array(want_dw))
        # Close to the unquantized gradients.
        np.testing.assert_allclose(np.array(dx), cot @ w, rtol=0.3, atol=0.3 * np.abs(cot @ w).max())
    # A quantized w: its gradient is zero, x's uses the dequantized w.
    qf = fx.quantize(fx.array(w), mode="nvfp4")
    g = fx.grad(lambda a: fx.qqmm(a, *qf).sum())(fx.array(x))
    assert g.shape == x.shape and np.isfinite(np.array(g)).all()


def test_vmap(rng):
    w = rng.standard_normal((3, 4, 64)).astype(np.float32)
    # (MLX cannot vmap mxfp8 and nvfp4: its to_fp8 has no batching rule.)
    for kw in ({"group_size": 32}, {"mode": "mxfp4"}):
        for axis in (0, 1):
            rm = mx.vmap(lambda a: mx.quantize(a, **kw), in_axes=axis)(mx.array(w))
            rf = fx.vmap(lambda a: fx.quantize(a, **kw), in_axes=axis)(fx.array(w))
            for a, b in zip(rf, rm):
                assert_same(a, b)
    q = mx.quantize(mx.array(w), group_size=32)
    rm = mx.vmap(lambda a, b, c: mx.dequantize(a, b, c, group_size=32))(*q)
    rf = fx.vmap(lambda a, b, c: fx.dequantize(a, b, c, group_size=32))(*[mx_to_fx(a) for a in q])
    assert_same(rf, rm)
    # quantized_matmul: MLX has no batching rule; ferrox's matches a loop.
    qf = [mx_to_fx(a) for a in q]
    xs = rng.standard_normal((5, 2, 64)).astype(np.float32)
    got = fx.vmap(lambda v: fx.quantized_matmul(v, qf[0][0], qf[1][0], qf[2][0], group_size=32))(fx.array(xs))
    want = np.stack([np.array(fx.quantized_matmul(fx.array(v), qf[0][0], qf[1][0], qf[2][0], group_size=32)) for v in xs])
    np.testing.assert_allclose(np.array(got), want, rtol=1e-6, atol=1e-6)


def test_stream_argument(rng):
    w = fx.array(rng.standard_normal((4, 64)).astype(np.float32))
    q = fx.quantize(w, stream=fx.cpu)
    d = fx.dequantize(*q, stream=fx.cpu)
    y = fx.quantized_matmul(w, *q, stream=fx.cpu)
    assert d.shape == (4, 64) and y.shape == (4, 4)
    assert fx.from_fp8(fx.to_fp8(w, stream=fx.cpu), stream=fx.cpu).dtype == fx.bfloat16
