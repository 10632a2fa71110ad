"""The fused last-axis softmax and logsumexp (the Softmax and LogSumExp
primitives): values against float64 NumPy over dtypes, layouts, row lengths
(short rows, rows longer than a block, odd lengths) and special values;
MLX's results; gradients against finite differences and the composed
formula; jvp, second derivatives and vmap over every axis."""

import importlib.util

import numpy as np
import pytest

import ferrox as fx
from conftest import FLOATS, to_np

HAVE_MLX = importlib.util.find_spec("mlx") is not None
TOL = {"float16": 4e-3, "bfloat16": 3e-2, "float32": 2e-6, "float64": 1e-12}


def ref_logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    with np.errstate(all="ignore"):
        return (np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True)) + m)


def ref_softmax(x):
    with np.errstate(all="ignore"):
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def f64(x):
    return fx.array(np.asarray(x, np.float64), dtype=fx.float64)


def fx_data(x, dtype):
    a = fx.array(x.astype(np.float32 if dtype == "bfloat16" else np.dtype(dtype)))
    return a.astype(getattr(fx, dtype))


def rounded(x, dtype):
    """The values `x` takes in `dtype`, as float64."""
    return to_np(fx_data(x, dtype).astype(fx.float64))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(3, 1), (4, 7), (2, 3, 33), (5, 1000), (2, 4099), (0, 6), (7,)])
def test_values(dtype, shape, rng):
    x = rng.normal(size=shape) * 3
    if x.size == 0:
        # MLX: softmax keeps the empty shape, logsumexp rejects an empty array.
        assert fx.softmax(fx_data(x, dtype), axis=-1).shape == shape
        with pytest.raises(ValueError, match=r"\[logsumexp\] Received empty array"):
            fx.logsumexp(fx_data(x, dtype), axis=-1)
        return
    ref = rounded(x, dtype)
    lse = fx.logsumexp(fx_data(x, dtype), axis=-1)
    sm = fx.softmax(fx_data(x, dtype), axis=-1)
    assert lse.dtype == getattr(fx, dtype) and sm.dtype == getattr(fx, dtype)
    assert lse.shape == shape[:-1] and sm.shape == shape
    tol = TOL[dtype]
    np.testing.assert_allclose(to_np(lse.astype(fx.float64)), ref_logsumexp(ref)[..., 0], rtol=tol, atol=tol)
    np.testing.assert_allclose(to_np(sm.astype(fx.float64)), ref_softmax(ref), rtol=tol, atol=tol)
    kept = fx.logsumexp(fx_data(x, dtype), axis=-1, keepdims=True)
    assert kept.shape == shape[:-1] + (1,)


@pytest.mark.parametrize("view", ["transposed", "strided", "broadcast", "offset"])
def test_layouts(view, rng):
    base = rng.normal(size=(6, 10))
    views = {
        "transposed": lambda a: a.T,
        "strided": lambda a: a[::2, ::3],
        "broadcast": lambda a: (a[:1] if isinstance(a, np.ndarray) else a[:1]) * np.ones((4, 1)),
        "offset": lambda a: a[2:, 1:],
    }
    x_np = views[view](base)
    x_fx = views[view](f64(base))
    np.testing.assert_allclose(to_np(fx.logsumexp(x_fx, axis=-1)), ref_logsumexp(x_np)[..., 0], rtol=1e-12)
    np.testing.assert_allclose(to_np(fx.softmax(x_fx, axis=-1)), ref_softmax(x_np), rtol=1e-12, atol=1e-15)


def test_leading_unit_axes_take_the_fused_path(rng):
    x = rng.normal(size=(1, 1, 9))
    got = fx.logsumexp(f64(x), axis=(0, 1, 2))
    assert got.shape == ()
    np.testing.assert_allclose(got.item(), ref_logsumexp(x.reshape(-1)).item(), rtol=1e-12)
    np.testing.assert_allclose(to_np(fx.softmax(f64(x), axis=(1, 2))), ref_softmax(x), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_special_values(dtype):
    inf, nan = np.inf, np.nan
    rows = np.array([
        [1.0, 2.0, 3.0, 4.0, 5.0],
        [-inf, -inf, -inf, -inf, -inf],
        [inf, 1.0, 2.0, 3.0, 4.0],
        [nan, 1.0, 2.0, 3.0, 4.0],
        [-inf, 0.0, -inf, 1.0, -inf],
        [1000.0, 1000.0, -1000.0, 0.0, 999.0],
        [nan, inf, -inf, 1.0, 2.0],
        [-inf, nan, -inf, -inf, -inf],
    ])
    x = fx_data(rows, dtype)
    lse = to_np(fx.logsumexp(x, axis=-1).astype(fx.float64))
    want = ref_logsumexp(rounded(rows, dtype))[:, 0]
    np.testing.assert_allclose(lse, want, rtol=TOL[dtype])
    assert lse[1] == -inf and lse[2] == inf and np.isnan(lse[3]) and np.isnan(lse[6]) and np.isnan(lse[7])
    sm = to_np(fx.softmax(x, axis=-1).astype(fx.float64))
    assert all(np.isnan(sm[i]).all() for i in (1, 2, 3, 6, 7))
    np.testing.assert_allclose(sm[[0, 4, 5]], ref_softmax(rounded(rows, dtype))[[0, 4, 5]], rtol=TOL[dtype],
                               atol=TOL[dtype])


def test_integer_inputs_compute_in_float32():
    x = fx.array([[1, 2, 3], [4, 5, 9]])
    assert fx.logsumexp(x, axis=-1).dtype == fx.float32
    assert fx.softmax(x, axis=-1).dtype == fx.float32
    np.testing.assert_allclose(to_np(fx.softmax(x, axis=-1)), ref_softmax(np.array([[1, 2, 3], [4, 5, 9.0]])),
                               rtol=1e-6)


def finite_difference(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@pytest.mark.parametrize("which", ["softmax", "logsumexp"])
def test_gradient_against_finite_differences(which, rng):
    x = rng.normal(size=(3, 5))
    w = rng.normal(size=(3, 5) if which == "softmax" else (3,))
    op = {"softmax": lambda a: fx.softmax(a, axis=-1), "logsumexp": lambda a: fx.logsumexp(a, axis=-1)}[which]
    ref = {"softmax": ref_softmax, "logsumexp": lambda a: ref_logsumexp(a)[..., 0]}[which]
    got = fx.grad(lambda a: (op(a) * f64(w)).sum())(f64(x))
    want = finite_difference(lambda a: float((ref(a) * w).sum()), x)
    np.testing.assert_allclose(to_np(got), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("which", ["softmax", "logsumexp"])
def test_jvp_and_second_derivative(which, rng):
    x, t = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    op = {"softmax": lambda a: fx.softmax(a, axis=-1), "logsumexp": lambda a: fx.logsumexp(a, axis=-1)}[which]
    ref = {"softmax": ref_softmax, "logsumexp": lambda a: ref_logsumexp(a)[..., 0]}[which]
    _, (tangent,) = fx.jvp(lambda a: [op(a)], [f64(x)], [f64(t)])
    eps = 1e-6
    want = (ref(x + eps * t) - ref(x - eps * t)) / (2 * eps)
    np.testing.assert_allclose(to_np(tangent), want, rtol=1e-6, atol=1e-8)
    # The Hessian-vector product of sum(op(x)^2) through two reverse passes.
    g = fx.grad(lambda a: (op(a) ** 2).sum())
    hvp = fx.jvp(lambda a: [g(a)], [f64(x)], [f64(t)])[1][0]
    ref_grad = lambda a: finite_difference(lambda b: float((ref(b) ** 2).sum()), a, 1e-5)  # noqa: E731
    want_hvp = (ref_grad(x + 1e-4 * t) - ref_grad(x - 1e-4 * t)) / 2e-4
    np.testing.assert_allclose(to_np(hvp), want_hvp, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("in_axis", [0, 1, 2])
def test_vmap_over_every_axis(in_axis, rng):
    x = rng.normal(size=(3, 4, 5))
    for op in (lambda a: fx.softmax(a, axis=-1), lambda a: fx.logsumexp(a, axis=-1)):
        got = fx.vmap(op, in_axes=in_axis)(f64(x))
        moved = np.moveaxis(x, in_axis, 0)
        want = np.stack([to_np(op(f64(moved[i]))) for i in range(moved.shape[0])])
        np.testing.assert_allclose(to_np(got), want, rtol=1e-12)


def test_cross_entropy_gradient_matches_the_composed_formula(rng):
    logits, targets = rng.normal(size=(6, 11)), rng.integers(0, 11, size=(6,))

    def loss(a):
        return fx.mean(fx.logsumexp(a, axis=-1) - fx.take_along_axis(a, fx.array(targets)[:, None], axis=-1)[:, 0])

    got = fx.grad(loss)(f64(logits))
    onehot = np.eye(11)[targets]
    np.testing.assert_allclose(to_np(got), (ref_softmax(logits) - onehot) / 6, rtol=1e-12, atol=1e-15)


@pytest.mark.skipif(not HAVE_MLX, reason="MLX is not installed")
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_matches_mlx(dtype, rng):
    import mlx.core as mx

    x = rng.normal(size=(5, 300)).astype(np.float32) * 4
    ours = fx_data(x, dtype)
    theirs = mx.array(x).astype(getattr(mx, dtype))
    for f, g in ((fx.logsumexp, mx.logsumexp), (fx.softmax, mx.softmax)):
        a = to_np(f(ours, axis=-1).astype(fx.float32))
        b = np.array(g(theirs, axis=-1).astype(mx.float32))
        np.testing.assert_allclose(a, b, rtol=TOL[dtype] * 2, atol=TOL[dtype])
