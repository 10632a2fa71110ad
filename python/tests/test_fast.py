"""ferrox.fast: fused rms_norm, layer_norm, rope and scaled_dot_product_attention.

Forward results are checked against float64 NumPy transcriptions of MLX's
definitions (and against MLX itself where it is installed); derivatives
against the same functions built from ordinary ferrox ops (whose gradients
are tested elsewhere) and against finite differences in float64; vmap
against a Python loop. Every test runs on each available device.
"""

import math

import numpy as np
import pytest

import ferrox as fx

pytestmark = pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")

try:
    import mlx.core as mx
except ImportError:  # pragma: no cover - MLX is in requirements-dev.txt
    mx = None

TOL = {"float64": 1e-10, "float32": 2e-5, "float16": 4e-3, "bfloat16": 3e-2}
NPDT = {"float64": np.float64, "float32": np.float32, "float16": np.float16, "bfloat16": np.float32}


def fx_from(x, dtype="float32"):
    return fx.array(np.asarray(x, dtype=np.float64 if dtype == "float64" else np.float32)).astype(getattr(fx, dtype))


def to64(a):
    return np.array(a.astype(fx.float64) if a.dtype != fx.float64 else a, dtype=np.float64)


def close(a, ref, dtype, scale=1.0):
    tol = TOL[dtype] * scale
    got = to64(a)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def rounded(x, dtype):
    """x rounded to dtype, as float64 (the exact values ferrox receives)."""
    return to64(fx_from(x, dtype))


# ---------------------------------------------------------------------------
# references (float64)


def rms_ref(x, w, eps):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y * (1.0 if w is None else w)


def ln_ref(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps)
    return y * (1.0 if w is None else w) + (0.0 if b is None else b)


def rope_ref(x, dims, traditional, base, scale, offset, freqs=None, forward=True):
    shape = x.shape
    x4 = x.reshape(shape[0], int(np.prod(shape[1:-2])), shape[-2], shape[-1])
    half = dims // 2
    t = np.arange(shape[-2], dtype=np.float64)
    off = np.asarray(offset, dtype=np.float64).reshape(-1, 1, 1) if np.size(offset) > 1 else float(np.asarray(offset).reshape(()))
    pos = (t + off) * scale
    inv = 1.0 / np.asarray(freqs, np.float64) if freqs is not None else np.exp(-np.arange(half) * (math.log(base) / half))
    theta = pos[..., None] * inv
    c, s = np.cos(theta), np.sin(theta)
    out = x4.copy()
    if traditional:
        a, b = x4[..., 0:dims:2], x4[..., 1:dims:2]
    else:
        a, b = x4[..., :half], x4[..., half:dims]
    if forward:
        y1, y2 = a * c - b * s, a * s + b * c
    else:
        y1, y2 = a * c + b * s, b * c - a * s
    if traditional:
        out[..., 0:dims:2], out[..., 1:dims:2] = y1, y2
    else:
        out[..., :half], out[..., half:dims] = y1, y2
    return out.reshape(shape)


FINFO_MIN = {"float64": np.finfo(np.float64).min, "float32": np.finfo(np.float32).min,
             "float16": float(np.finfo(np.float16).min), "bfloat16": -3.3895313892515355e38}


def sdpa_ref(q, k, v, scale, mask, sinks, dtype):
    hq, hk = q.shape[1], k.shape[1]
    k = np.repeat(k, hq // hk, axis=1)
    v = np.repeat(v, hq // hk, axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2)
    lq, lk = q.shape[2], k.shape[2]
    if isinstance(mask, str):
        keep = (np.arange(lq)[:, None] + lk - lq) >= np.arange(lk)[None, :]
        s = np.where(keep, s, FINFO_MIN[dtype])
    elif mask is not None and mask.dtype == np.bool_:
        s = np.where(mask, s, FINFO_MIN[dtype])
    elif mask is not None:
        s = s + mask
    if sinks is not None:
        sk = np.broadcast_to(sinks.reshape(1, -1, 1, 1), s.shape[:3] + (1,))
        s = np.concatenate([sk, s], -1)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(-1, keepdims=True)
    if sinks is not None:
        p = p[..., 1:]
    return p @ v


def sdpa_ops(q, k, v, scale, mask=None, sinks=None):
    """Attention from ordinary ferrox ops (float32 softmax), for derivative checks."""
    hq, hk = q.shape[1], k.shape[1]
    if hq != hk:
        k = fx.repeat(k, hq // hk, axis=1)
        v = fx.repeat(v, hq // hk, axis=1)
    s = (q @ fx.swapaxes(k, -1, -2)) * scale
    lq, lk = q.shape[2], k.shape[2]
    if isinstance(mask, str):
        keep = (fx.arange(lq)[:, None] + (lk - lq)) >= fx.arange(lk)[None, :]
        s = fx.where(keep, s, fx.array(float(np.finfo(np.float32).min), s.dtype))
    elif mask is not None and mask.dtype == fx.bool_:
        s = fx.where(mask, s, fx.array(float(np.finfo(np.float32).min), s.dtype))
    elif mask is not None:
        s = s + mask
    if sinks is not None:
        s = fx.concatenate([fx.broadcast_to(sinks.reshape(1, -1, 1, 1), s.shape[:3] + (1,)), s], -1)
    p = fx.softmax(s, axis=-1)
    if sinks is not None:
        p = p[..., 1:]
    return p @ v


# ---------------------------------------------------------------------------
# rms_norm and layer_norm

NORM_SHAPES = [(7,), (3, 5), (2, 3, 64), (2, 1030), (4, 0), (0, 6)]


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("shape", NORM_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
def test_rms_norm_matches_reference(rng, dtype, shape, weighted):
    x = rounded(rng.normal(size=shape) * 3 + 1, dtype)
    w = rounded(rng.normal(size=shape[-1:]), dtype) if weighted else None
    y = fx.fast.rms_norm(fx_from(x, dtype), None if w is None else fx_from(w, dtype), 1e-5)
    assert y.dtype == getattr(fx, dtype)
    close(y, rms_ref(x, w, 1e-5), dtype)


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("shape", NORM_SHAPES)
@pytest.mark.parametrize("affine", [(False, False), (True, False), (False, True), (True, True)])
def test_layer_norm_matches_reference(rng, dtype, shape, affine):
    x = rounded(rng.normal(size=shape) * 3 + 5, dtype)
    w = rounded(rng.normal(size=shape[-1:]), dtype) if affine[0] else None
    b = rounded(rng.normal(size=shape[-1:]), dtype) if affine[1] else None
    args = [None if p is None else fx_from(p, dtype) for p in (w, b)]
    y = fx.fast.layer_norm(fx_from(x, dtype), *args, 1e-5)
    close(y, ln_ref(x, w, b, 1e-5), dtype, scale=2)


def test_norms_on_strided_and_broadcast_inputs(rng):
    x = rng.normal(size=(6, 8)).astype(np.float32)
    w = rng.normal(size=(6,)).astype(np.float32)
    xt = fx.array(x).T  # (8, 6), not contiguous
    close(fx.fast.rms_norm(xt, fx.array(w), 1e-6), rms_ref(x.T.astype(np.float64), w, 1e-6), "float32")
    xb = fx.broadcast_to(fx.array(x[:1]), (5, 8))
    close(fx.fast.layer_norm(xb, None, None, 1e-6), ln_ref(np.broadcast_to(x[:1], (5, 8)).astype(np.float64), None, None, 1e-6), "float32")
    w_strided = fx.array(np.repeat(w, 2))[::2]
    close(fx.fast.rms_norm(xt, w_strided, 1e-6), rms_ref(x.T.astype(np.float64), w, 1e-6), "float32")


def test_norm_dtype_promotion_and_errors():
    x = fx.ones((2, 4), dtype=fx.float16)
    assert fx.fast.rms_norm(x, fx.ones((4,)), 1e-5).dtype == fx.float32
    assert fx.fast.layer_norm(x, fx.ones((4,), dtype=fx.bfloat16), None, 1e-5).dtype == fx.float32
    assert fx.fast.layer_norm(x, None, fx.ones((4,)), 1e-5).dtype == fx.float16
    with pytest.raises(ValueError, match="rms_norm"):
        fx.fast.rms_norm(fx.array(1.0), None, 1e-5)
    with pytest.raises(ValueError, match="must have the same size"):
        fx.fast.rms_norm(x, fx.ones((3,)), 1e-5)
    with pytest.raises(ValueError, match="1 dimension"):
        fx.fast.layer_norm(x, fx.ones((1, 4)), None, 1e-5)
    with pytest.raises(ValueError, match="unsupported type"):
        fx.fast.rms_norm(fx.ones((2, 4), dtype=fx.int32), None, 1e-5)


def _norm_fns(eps=1e-5):
    def rms_ops(x, w):
        return x * fx.rsqrt(fx.mean(x * x, axis=-1, keepdims=True) + eps) * w

    def ln_ops(x, w, b):
        mu = fx.mean(x, axis=-1, keepdims=True)
        xc = x - mu
        return xc * fx.rsqrt(fx.mean(xc * xc, axis=-1, keepdims=True) + eps) * w + b

    return [
        ("rms", lambda x, w, b: fx.fast.rms_norm(x, w, eps), lambda x, w, b: rms_ops(x, w)),
        ("ln", lambda x, w, b: fx.fast.layer_norm(x, w, b, eps), ln_ops),
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(3, 7), (2, 3, 130), (1, 1)])
def test_norm_gradients_match_ops(rng, dtype, shape):
    x = fx_from(rng.normal(size=shape) * 2 + 0.5, dtype)
    w = fx_from(rng.normal(size=shape[-1:]), dtype)
    b = fx_from(rng.normal(size=shape[-1:]), dtype)
    cot = fx_from(rng.normal(size=shape), dtype)
    for name, fused, ops in _norm_fns():
        _, g1 = fx.vjp(lambda x, w, b: fused(x, w, b), [x, w, b], [cot])
        _, g2 = fx.vjp(lambda x, w, b: ops(x, w, b), [x, w, b], [cot])
        for i, (a, r) in enumerate(zip(g1, g2)):
            if name == "rms" and i == 2:
                continue  # rms_norm has no bias
            close(a, to64(r), dtype, scale=20)


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("d", [16384, 32768])
def test_norms_of_long_rows_forward_and_backward(rng, dtype, d):
    # On the GPU, rows this long need more threads than a block of the
    # register-cached kernels may have: the norms take the general kernels.
    x = rounded(rng.normal(size=(2, d)) * 2 + 1, dtype)
    w = rounded(rng.normal(size=(d,)), dtype)
    b = rounded(rng.normal(size=(d,)), dtype)
    g = rounded(rng.normal(size=(2, d)), dtype)
    close(fx.fast.rms_norm(fx_from(x, dtype), fx_from(w, dtype), 1e-5), rms_ref(x, w, 1e-5), dtype, scale=2)
    close(fx.fast.layer_norm(fx_from(x, dtype), fx_from(w, dtype), fx_from(b, dtype), 1e-5), ln_ref(x, w, b, 1e-5),
          dtype, scale=2)
    args = [fx_from(a, dtype) for a in (x, w, b)]
    x64, w64, b64 = (fx_from(a, "float64") for a in (x, w, b))
    for name, fused, ops in _norm_fns():
        got = fx.vjp(fused, args, [fx_from(g, dtype)])[1]
        want = fx.vjp(ops, [x64, w64, b64], [fx_from(g, "float64")])[1]
        for i, (a, r) in enumerate(zip(got, want)):
            if name == "rms" and i == 2:
                continue  # rms_norm has no bias
            # The weight and bias cotangents sum over rows: scale by their magnitude.
            scale = 20 * (1 if i == 0 else float(np.abs(to64(r)).max() + 1))
            close(a, to64(r), dtype, scale=scale)


def test_norm_gradient_without_weight_and_finite_differences(rng):
    x = fx_from(rng.normal(size=(3, 6)), "float64")
    cot = rng.normal(size=(3, 6))

    def loss(x):
        return fx.sum(fx.fast.layer_norm(x, None, None, 1e-3) * fx.array(cot)) + fx.sum(
            fx.fast.rms_norm(x, None, 1e-3) * fx.array(cot[::-1].copy())
        )

    g = to64(fx.grad(loss)(x))
    x0 = to64(x)
    num = np.zeros_like(x0)
    h = 1e-6
    for i in np.ndindex(x0.shape):
        xp, xm = x0.copy(), x0.copy()
        xp[i] += h
        xm[i] -= h
        num[i] = (loss(fx.array(xp, dtype=fx.float64)).item() - loss(fx.array(xm, dtype=fx.float64)).item()) / (2 * h)
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-7)


def test_norm_second_derivative_and_jvp(rng):
    x = fx_from(rng.normal(size=(2, 5)), "float64")
    w = fx_from(rng.normal(size=(5,)), "float64")
    t = fx_from(rng.normal(size=(2, 5)), "float64")
    for _, fused, ops in _norm_fns():
        _, j1 = fx.jvp(lambda x: fused(x, w, fx.zeros((5,), dtype=fx.float64)), [x], [t])
        _, j2 = fx.jvp(lambda x: ops(x, w, fx.zeros((5,), dtype=fx.float64)), [x], [t])
        close(j1[0], to64(j2[0]), "float64", scale=1e3)
        h1 = fx.grad(lambda x: fx.sum(fx.grad(lambda y: fx.sum(fused(y, w, w) ** 3))(x) ** 2))(x)
        h2 = fx.grad(lambda x: fx.sum(fx.grad(lambda y: fx.sum(ops(y, w, w) ** 3))(x) ** 2))(x)
        close(h1, to64(h2), "float64", scale=1e4)


def test_norm_vmap_matches_loop(rng):
    x = fx.array(rng.normal(size=(4, 3, 6)).astype(np.float32))
    w = fx.array(rng.normal(size=(4, 6)).astype(np.float32))
    out = fx.vmap(lambda x: fx.fast.rms_norm(x, w[0], 1e-5), in_axes=1)(x)
    loop = fx.stack([fx.fast.rms_norm(x[:, i], w[0], 1e-5) for i in range(3)])
    close(out, to64(loop), "float32")
    out = fx.vmap(lambda x, w: fx.fast.layer_norm(x, w, w, 1e-5))(x, w)
    loop = fx.stack([fx.fast.layer_norm(x[i], w[i], w[i], 1e-5) for i in range(4)])
    close(out, to64(loop), "float32")


@pytest.mark.skipif(mx is None, reason="MLX is not installed")
def test_norms_match_mlx(rng):
    x = rng.normal(size=(3, 4, 33)).astype(np.float32)
    w, b = rng.normal(size=(33,)).astype(np.float32), rng.normal(size=(33,)).astype(np.float32)
    close(fx.fast.rms_norm(fx.array(x), fx.array(w), 1e-5), np.array(mx.fast.rms_norm(mx.array(x), mx.array(w), 1e-5)).astype(np.float64), "float32")
    close(
        fx.fast.layer_norm(fx.array(x), fx.array(w), fx.array(b), 1e-5),
        np.array(mx.fast.layer_norm(mx.array(x), mx.array(w), mx.array(b), 1e-5)).astype(np.float64),
        "float32",
    )


# ---------------------------------------------------------------------------
# rope

ROPE_CASES = [
    # shape, dims, traditional, base, scale, offset
    ((2, 3, 5, 16), 16, False, 10000.0, 1.0, 0),
    ((2, 3, 5, 16), 16, True, 10000.0, 1.0, 3),
    ((2, 5, 12), 8, False, 500.0, 0.5, 7),
    ((1, 2, 3, 4, 8), 4, True, 10.0, 2.0, 1),
    ((3, 1, 4, 6), 6, False, 10000.0, 1.0, "vector"),
    ((2, 2, 0, 8), 8, False, 10000.0, 1.0, 0),
]


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("case", ROPE_CASES)
def test_rope_matches_reference(rng, dtype, case):
    shape, dims, traditional, base, scale, offset = case
    x = rounded(rng.normal(size=shape), dtype)
    if offset == "vector":
        offset = np.arange(shape[0]) * 3 + 1
        off_fx = fx.array(offset.astype(np.int32))
    else:
        off_fx = offset
    y = fx.fast.rope(fx_from(x, dtype), dims, traditional=traditional, base=base, scale=scale, offset=off_fx)
    assert y.dtype == getattr(fx, dtype)
    # The frequencies are float32 (MLX's), also for float64 inputs.
    close(y, rope_ref(x, dims, traditional, base, scale, offset), dtype, scale=1e5 if dtype == "float64" else 4)


def test_rope_with_frequencies_and_array_offset(rng):
    x = rng.normal(size=(2, 3, 6, 8))
    freqs = np.exp(rng.uniform(0, 3, size=4))
    y = fx.fast.rope(fx.array(x.astype(np.float32)), 8, traditional=False, base=None, scale=1.0, offset=fx.array(2),
                     freqs=fx.array(freqs.astype(np.float32)))
    close(y, rope_ref(x.astype(np.float32).astype(np.float64), 8, False, None, 1.0, 2, freqs.astype(np.float32)), "float32", 4)


def test_rope_errors():
    x = fx.zeros((2, 3, 8))
    with pytest.raises(ValueError, match="at least 3 dimensions"):
        fx.fast.rope(fx.zeros((3, 8)), 8, traditional=False, base=1e4, scale=1.0, offset=0)
    with pytest.raises(ValueError, match="even"):
        fx.fast.rope(x, 5, traditional=False, base=1e4, scale=1.0, offset=0)
    with pytest.raises(ValueError, match="exceed"):
        fx.fast.rope(x, 10, traditional=False, base=1e4, scale=1.0, offset=0)
    with pytest.raises(ValueError, match="Only one of base or freqs"):
        fx.fast.rope(x, 8, traditional=False, base=1e4, scale=1.0, offset=0, freqs=fx.ones((4,)))
    with pytest.raises(ValueError, match="Neither base nor freqs"):
        fx.fast.rope(x, 8, traditional=False, base=None, scale=1.0, offset=0)
    with pytest.raises(ValueError, match="offset"):
        fx.fast.rope(x, 8, traditional=False, base=1e4, scale=1.0, offset=fx.array([1, 2, 3]))
    with pytest.raises(ValueError, match="integer"):
        fx.fast.rope(x, 8, traditional=False, base=1e4, scale=1.0, offset=fx.array(1.5))
    with pytest.raises(ValueError, match="floating"):
        fx.fast.rope(fx.zeros((2, 3, 8), dtype=fx.int32), 8, traditional=False, base=1e4, scale=1.0, offset=0)


@pytest.mark.parametrize("traditional", [False, True])
def test_rope_gradient_is_the_inverse_rotation(rng, traditional):
    x = rng.normal(size=(2, 2, 5, 10))
    cot = rng.normal(size=x.shape)
    f = lambda a: fx.fast.rope(a, 8, traditional=traditional, base=100.0, scale=1.0, offset=2)  # noqa: E731
    _, (g,) = fx.vjp(f, [fx.array(x, dtype=fx.float64)], [fx.array(cot, dtype=fx.float64)])
    # float32 frequencies (MLX's): float64 results agree to ~1e-7.
    close(g, rope_ref(cot, 8, traditional, 100.0, 1.0, 2, forward=False), "float64", 1e4)
    _, (t,) = fx.jvp(f, [fx.array(x, dtype=fx.float64)], [fx.array(cot, dtype=fx.float64)])
    close(t, rope_ref(cot, 8, traditional, 100.0, 1.0, 2), "float64", 1e4)


def test_rope_vmap_matches_loop(rng):
    x = fx.array(rng.normal(size=(3, 2, 4, 5, 8)).astype(np.float32))
    f = lambda a: fx.fast.rope(a, 8, traditional=False, base=1e4, scale=1.0, offset=fx.array([1, 4]))  # noqa: E731
    out = fx.vmap(f)(x)
    close(out, to64(fx.stack([f(x[i]) for i in range(3)])), "float32")


@pytest.mark.skipif(mx is None, reason="MLX is not installed")
@pytest.mark.parametrize("traditional", [False, True])
def test_rope_matches_mlx(rng, traditional):
    x = rng.normal(size=(2, 4, 7, 32)).astype(np.float32)
    ours = fx.fast.rope(fx.array(x), 24, traditional=traditional, base=10000.0, scale=0.5, offset=5)
    theirs = mx.fast.rope(mx.array(x), 24, traditional=traditional, base=10000.0, scale=0.5, offset=5)
    close(ours, np.array(theirs).astype(np.float64), "float32", scale=4)


# ---------------------------------------------------------------------------
# scaled_dot_product_attention

SDPA_SHAPES = [
    # B, Hq, Hk, Lq, Lk, D, Dv
    (2, 4, 4, 5, 7, 16, 16),
    (1, 8, 2, 6, 6, 32, 24),
    (1, 4, 4, 1, 33, 64, 64),
    (1, 2, 1, 40, 40, 128, 128),
    (2, 2, 2, 9, 3, 8, 8),
    (1, 1, 1, 3, 70, 200, 100),
    (1, 4, 2, 1, 600, 64, 64),  # decode: split over the keys on the GPU
    (2, 2, 2, 3, 700, 128, 128),
    (1, 2, 1, 200, 330, 128, 128),  # several row blocks and key tiles of the warpgroup kernel
]


def _sdpa_inputs(rng, shape, dtype):
    b, hq, hk, lq, lk, d, dv = shape
    q = rounded(rng.normal(size=(b, hq, lq, d)), dtype)
    k = rounded(rng.normal(size=(b, hk, lk, d)), dtype)
    v = rounded(rng.normal(size=(b, hk, lk, dv)), dtype)
    return q, k, v


def _mask(rng, kind, shape, dtype):
    b, hq, _, lq, lk, _, _ = shape
    if kind is None or kind == "causal":
        return kind, kind
    if kind == "bool":
        m = rng.uniform(size=(b, 1, lq, lk)) > 0.3
        return m, fx.array(m)
    m = rounded(rng.normal(size=(lq, lk)), dtype)
    return m, fx_from(m, dtype)


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("shape", SDPA_SHAPES)
@pytest.mark.parametrize("mask", [None, "causal", "bool", "additive"])
def test_sdpa_matches_reference(rng, dtype, shape, mask):
    q, k, v = _sdpa_inputs(rng, shape, dtype)
    scale = float(np.float32(1.0 / math.sqrt(q.shape[-1])))  # the kernels take a float32 scale
    m_np, m_fx = _mask(rng, mask, shape, dtype)
    out = fx.fast.scaled_dot_product_attention(
        fx_from(q, dtype), fx_from(k, dtype), fx_from(v, dtype), scale=scale, mask=m_fx
    )
    assert out.dtype == getattr(fx, dtype)
    close(out, sdpa_ref(q, k, v, scale, m_np, None, dtype), dtype, scale=3)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", [(2, 4, 2, 6, 4, 16, 16), (1, 4, 2, 2, 600, 64, 64)])
def test_sdpa_sinks_and_fully_masked_rows(rng, dtype, shape):
    q, k, v = _sdpa_inputs(rng, shape, dtype)
    sinks = rounded(rng.normal(size=(4,)), dtype)
    for mask in [None, "causal"]:  # causal with Lq > Lk hides every key of the first rows
        out = fx.fast.scaled_dot_product_attention(
            fx_from(q, dtype), fx_from(k, dtype), fx_from(v, dtype), scale=0.3, mask=mask, sinks=fx_from(sinks, dtype)
        )
        close(out, sdpa_ref(q, k, v, 0.3, mask, sinks, dtype), dtype, scale=3)
        out = fx.fast.scaled_dot_product_attention(fx_from(q, dtype), fx_from(k, dtype), fx_from(v, dtype), scale=0.3, mask=mask)
        close(out, sdpa_ref(q, k, v, 0.3, mask, None, dtype), dtype, scale=3)


def test_sdpa_strided_inputs_and_empty_shapes(rng):
    q = rng.normal(size=(2, 5, 3, 16)).astype(np.float32)
    k = rng.normal(size=(2, 7, 3, 16)).astype(np.float32)
    v = rng.normal(size=(2, 7, 3, 16)).astype(np.float32)
    qf, kf, vf = (fx.swapaxes(fx.array(a), 1, 2) for a in (q, k, v))  # (B, H, L, D) views
    out = fx.fast.scaled_dot_product_attention(qf, kf, vf, scale=0.25, mask="causal")
    ref = sdpa_ref(*(np.swapaxes(a, 1, 2).astype(np.float64) for a in (q, k, v)), 0.25, "causal", None, "float32")
    close(out, ref, "float32", 3)
    empty_q = fx.fast.scaled_dot_product_attention(fx.zeros((1, 2, 0, 8)), fx.zeros((1, 2, 4, 8)), fx.zeros((1, 2, 4, 8)), scale=1.0)
    assert empty_q.shape == (1, 2, 0, 8)
    no_keys = fx.fast.scaled_dot_product_attention(fx.ones((1, 2, 3, 8)), fx.zeros((1, 2, 0, 8)), fx.zeros((1, 2, 0, 5)), scale=1.0)
    assert no_keys.shape == (1, 2, 3, 5) and not np.array(no_keys).any()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize(
    "shape",
    [
        (2, 4, 2, 70, 70, 64, 64),  # tensor cores on the GPU (half types)
        (1, 2, 2, 33, 40, 128, 128),
        (1, 4, 2, 1, 600, 64, 64),  # split-K decode on the GPU
        (2, 2, 1, 5, 7, 16, 12),
    ],
)
@pytest.mark.parametrize("mask", [None, "causal", "bool"])
def test_sdpa_reads_and_writes_head_views(rng, dtype, shape, mask):
    """q, k, v as (B, L, H, D) projections viewed as (B, H, L, D) heads (q a
    slice of a fused q/k/v projection, as a GPT block makes them), with a
    cotangent that is itself such a view: the kernels read them in place and
    give the same output and gradients as for contiguous copies, and the
    output transposed back flattens to the same values."""
    b, hq, hk, lq, lk, d, dv = shape
    fused = fx_from(rng.normal(size=(b, lq, 3, hq, d)), dtype)
    q = fused[:, :, 1].transpose(0, 2, 1, 3)
    k = fx_from(rng.normal(size=(b, lk, hk, d)), dtype).transpose(0, 2, 1, 3)
    v = fx_from(rng.normal(size=(b, lk, hk, dv)), dtype).transpose(0, 2, 1, 3)
    cot = fx_from(rng.normal(size=(b, lq, hq, dv)), dtype).transpose(0, 2, 1, 3)
    _, m_fx = _mask(rng, mask, shape, dtype)

    def attend(q, k, v):
        return fx.fast.scaled_dot_product_attention(q, k, v, scale=0.3, mask=m_fx)

    def dense(x):
        return fx.array(np.array(x.astype(fx.float32))).astype(x.dtype)

    out, grads = fx.vjp(attend, [q, k, v], [cot])
    out_ref, grads_ref = fx.vjp(attend, [dense(q), dense(k), dense(v)], [dense(cot)])
    close(out[0], to64(out_ref[0]), dtype, scale=3)
    for g, g_ref in zip(grads, grads_ref):
        close(g, to64(g_ref), dtype, scale=30)
    flat = out[0].transpose(0, 2, 1, 3).reshape(b, lq, hq * dv)
    close(flat, to64(out_ref[0]).transpose(0, 2, 1, 3).reshape(b, lq, hq * dv), dtype, scale=3)


def test_sdpa_errors():
    q = fx.zeros((1, 4, 3, 8))
    kv = fx.zeros((1, 2, 5, 8))
    with pytest.raises(ValueError, match="rank 4"):
        fx.fast.scaled_dot_product_attention(fx.zeros((4, 3, 8)), kv, kv, scale=1.0)
    with pytest.raises(ValueError, match="multiple of n_kv_heads"):
        fx.fast.scaled_dot_product_attention(fx.zeros((1, 3, 3, 8)), kv, kv, scale=1.0)
    with pytest.raises(ValueError, match="matching last dimension"):
        fx.fast.scaled_dot_product_attention(q, fx.zeros((1, 2, 5, 4)), kv, scale=1.0)
    with pytest.raises(ValueError, match="invalid mask option"):
        fx.fast.scaled_dot_product_attention(q, kv, kv, scale=1.0, mask="upper")
    with pytest.raises(ValueError, match="sinks"):
        fx.fast.scaled_dot_product_attention(q, kv, kv, scale=1.0, sinks=fx.zeros((3,)))
    with pytest.raises(ValueError, match="Mask type must promote"):
        fx.fast.scaled_dot_product_attention(q.astype(fx.float16), kv.astype(fx.float16), kv.astype(fx.float16), scale=1.0, mask=fx.zeros((3, 5)))
    with pytest.raises(ValueError, match="broadcast"):
        fx.fast.scaled_dot_product_attention(q, kv, kv, scale=1.0, mask=fx.zeros((3, 4)))
    with pytest.raises(ValueError, match="unsupported type"):
        fx.fast.scaled_dot_product_attention(q.astype(fx.int32), kv.astype(fx.int32), kv.astype(fx.int32), scale=1.0)


@pytest.mark.parametrize("shape", [(2, 4, 2, 5, 7, 16, 12), (1, 2, 2, 33, 33, 64, 64)])
@pytest.mark.parametrize("mask", [None, "causal", "bool", "additive"])
@pytest.mark.parametrize("sinks", [False, True])
def test_sdpa_gradients_match_ops(rng, shape, mask, sinks):
    dtype = "float32"
    q, k, v = (fx.array(a.astype(np.float32)) for a in _sdpa_inputs(rng, shape, dtype))
    _, m_fx = _mask(rng, mask, shape, dtype)
    s = fx.array(rng.normal(size=(shape[1],)).astype(np.float32)) if sinks else None
    cot = fx.array(rng.normal(size=q.shape[:3] + (v.shape[-1],)).astype(np.float32))
    args = [q, k, v] + ([s] if sinks else [])

    def fused(q, k, v, *s):
        return fx.fast.scaled_dot_product_attention(q, k, v, scale=0.3, mask=m_fx, sinks=s[0] if s else None)

    def ops(q, k, v, *s):
        return sdpa_ops(q, k, v, 0.3, m_fx, s[0] if s else None)

    out1, g1 = fx.vjp(fused, args, [cot])
    out2, g2 = fx.vjp(ops, args, [cot])
    close(out1[0], to64(out2[0]), dtype, 3)
    for a, b in zip(g1, g2):
        close(a, to64(b), dtype, scale=50)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(
    "shape",
    [
        (2, 4, 2, 70, 300, 64, 64),  # tensor cores on the GPU: several key blocks, partial tiles
        (1, 2, 1, 160, 96, 128, 128),  # more queries than keys
        (1, 2, 2, 33, 33, 128, 128),
        (2, 4, 2, 100, 260, 128, 128),  # Hopper: dQ tiles padded per head, grouped heads, batches
        (1, 4, 2, 3, 600, 64, 64),  # split-K decode forward on the GPU
    ],
)
@pytest.mark.parametrize("mask", [None, "causal", "bool"])
def test_sdpa_half_gradients_match_float64(rng, dtype, shape, mask):
    """The half-type kernels (the GPU's tensor-core forward and backward)
    against float64 ops on the same rounded values: output and every
    gradient within the type's rounding, by relative norm."""
    q, k, v = _sdpa_inputs(rng, shape, dtype)
    m_np, m_fx = _mask(rng, mask, shape, dtype)
    sinks = rounded(rng.normal(size=(shape[1],)), dtype)
    cot = rounded(rng.normal(size=q.shape[:3] + (v.shape[-1],)), dtype)
    tol = {"float16": 4e-3, "bfloat16": 2.5e-2}[dtype]
    for s in [None, sinks]:
        args = [fx_from(a, dtype) for a in (q, k, v)] + ([] if s is None else [fx_from(s, dtype)])
        args64 = [fx.array(a, dtype=fx.float64) for a in (q, k, v)] + ([] if s is None else [fx.array(s, dtype=fx.float64)])
        m64 = fx.array(m_np) if isinstance(m_np, np.ndarray) else m_np

        def fused(q, k, v, *s):
            return fx.fast.scaled_dot_product_attention(q, k, v, scale=0.2, mask=m_fx, sinks=s[0] if s else None)

        def ops(q, k, v, *s):
            return sdpa_ops(q, k, v, 0.2, m64, s[0] if s else None)

        out, grads = fx.vjp(fused, args, [fx_from(cot, dtype)])
        out64, grads64 = fx.vjp(ops, args64, [fx.array(cot, dtype=fx.float64)])
        for got, ref in zip([out[0], *grads], [out64[0], *grads64]):
            ref = to64(ref)
            err = np.linalg.norm(to64(got) - ref) / max(np.linalg.norm(ref), 1e-30)
            assert err < tol, (got.shape, err)


def test_sdpa_additive_mask_gradient_and_finite_differences(rng):
    shape = (1, 2, 1, 3, 4, 5, 3)
    q, k, v = (fx.array(a, dtype=fx.float64) for a in _sdpa_inputs(rng, shape, "float64"))
    m = fx.array(rng.normal(size=(3, 4)), dtype=fx.float64)
    cot = rng.normal(size=(1, 2, 3, 3))

    def loss(q, k, v, m):
        return fx.sum(fx.fast.scaled_dot_product_attention(q, k, v, scale=0.7, mask=m) * fx.array(cot, dtype=fx.float64))

    grads = fx.grad(loss, argnums=(0, 1, 2, 3))(q, k, v, m)
    args = [q, k, v, m]
    h = 1e-6
    for i, g in enumerate(grads):
        x0 = to64(args[i])
        num = np.zeros_like(x0)
        for idx in np.ndindex(x0.shape):
            xp, xm = x0.copy(), x0.copy()
            xp[idx] += h
            xm[idx] -= h
            ap, am = list(args), list(args)
            ap[i], am[i] = fx.array(xp, dtype=fx.float64), fx.array(xm, dtype=fx.float64)
            num[idx] = (loss(*ap).item() - loss(*am).item()) / (2 * h)
        np.testing.assert_allclose(to64(g), num, rtol=1e-6, atol=1e-8)


def test_sdpa_jvp_vmap_and_second_derivative(rng):
    shape = (2, 2, 1, 4, 5, 8, 8)
    q, k, v = (fx.array(a, dtype=fx.float64) for a in _sdpa_inputs(rng, shape, "float64"))
    t = [fx.array(rng.normal(size=a.shape), dtype=fx.float64) for a in (q, k, v)]
    f1 = lambda q, k, v: fx.fast.scaled_dot_product_attention(q, k, v, scale=0.5, mask="causal")  # noqa: E731
    f2 = lambda q, k, v: sdpa_ops(q, k, v, 0.5, "causal")  # noqa: E731
    _, j1 = fx.jvp(f1, [q, k, v], t)
    _, j2 = fx.jvp(f2, [q, k, v], t)
    close(j1[0], to64(j2[0]), "float64", 1e3)
    out = fx.vmap(f1, in_axes=(1, None, None))(fx.expand_dims(q, 2), k, v)  # over the query heads
    loop = fx.stack([f1(q[:, i : i + 1], k, v) for i in range(2)])
    close(out, to64(loop), "float64", 1e3)
    h1 = fx.grad(lambda q: fx.sum(fx.grad(lambda k: fx.sum(f1(q, k, v) ** 2))(k) ** 2))(q)
    h2 = fx.grad(lambda q: fx.sum(fx.grad(lambda k: fx.sum(f2(q, k, v) ** 2))(k) ** 2))(q)
    close(h1, to64(h2), "float64", 1e4)


@pytest.mark.skipif(mx is None, reason="MLX is not installed")
@pytest.mark.parametrize("mask", [None, "causal", "bool", "additive"])
def test_sdpa_matches_mlx(rng, mask):
    shape = (2, 8, 2, 9, 11, 32, 32)
    q, k, v = (a.astype(np.float32) for a in _sdpa_inputs(rng, shape, "float32"))
    m_np, m_fx = _mask(rng, mask, shape, "float32")
    m_mx = mx.array(m_np) if isinstance(m_np, np.ndarray) else m_np
    sinks = rng.normal(size=(8,)).astype(np.float32)
    ours = fx.fast.scaled_dot_product_attention(fx.array(q), fx.array(k), fx.array(v), scale=0.2, mask=m_fx, sinks=fx.array(sinks))
    theirs = mx.fast.scaled_dot_product_attention(mx.array(q), mx.array(k), mx.array(v), scale=0.2, mask=m_mx, sinks=mx.array(sinks))
    close(ours, np.array(theirs).astype(np.float64), "float32", 5)


def test_metal_kernel_raises_on_call():
    k = fx.fast.metal_kernel(name="k", input_names=["a"], output_names=["o"], source="")
    with pytest.raises(RuntimeError, match="No Metal back-end"):
        k(inputs=[fx.zeros((3,))], output_shapes=[(3,)], output_dtypes=[fx.float32], grid=(3, 1, 1), threadgroup=(3, 1, 1))
