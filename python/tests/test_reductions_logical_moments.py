"""all, any, count_nonzero, var, std (with ddof) and logsumexp: values
against NumPy over dtypes, layouts, axes and keepdims; result dtypes against
MLX where installed; gradients against finite differences; vmap."""

import importlib.util

import numpy as np
import pytest

import ferrox as fx
from conftest import ALL_DTYPES, FLOATS, LAYOUTS_2D, cast_ref, make_operand, to_np

HAVE_MLX = importlib.util.find_spec("mlx") is not None
AXES = [None, 0, 1, -1, (0, 1)]


def np_axis(axis):
    return tuple(axis) if isinstance(axis, tuple) else axis


@pytest.mark.parametrize("name", ["all", "any", "count_nonzero"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", sorted(LAYOUTS_2D))
@pytest.mark.parametrize("axis", AXES)
def test_truth_reductions(name, dtype, layout, axis, rng):
    x_np, x_fx = make_operand(rng, layout, dtype)
    x_np = np.where(rng.random(x_np.shape) < 0.3, 0, x_np).astype(x_np.dtype)
    x_fx = fx.array(x_np) if dtype != "bfloat16" else fx.array(x_np).astype(fx.bfloat16)
    for keepdims in (False, True):
        got = getattr(fx, name)(x_fx, axis=axis, keepdims=keepdims)
        ref = {"all": np.all, "any": np.any, "count_nonzero": np.count_nonzero}[name]
        expected = np.asarray(ref(x_np, axis=np_axis(axis), keepdims=keepdims))
        assert got.dtype == (fx.int32 if name == "count_nonzero" else fx.bool_)
        assert to_np(got).shape == expected.shape
        assert np.array_equal(to_np(got), expected)


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dtype", FLOATS + ["int32", "uint8", "bool_", "complex64"])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("ddof", [0, 1])
def test_moments(name, dtype, axis, ddof, rng):
    x_np, x_fx = make_operand(rng, "transposed", dtype)
    ref = cast_ref(x_np, dtype)
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(ref, axis=np_axis(axis), ddof=ddof)
    got = getattr(fx, name)(x_fx, axis=axis, ddof=ddof)
    expect_dtype = {"complex64": fx.float32, "float64": fx.float64, "float16": fx.float16,
                    "bfloat16": fx.bfloat16}.get(dtype, fx.float32)
    assert got.dtype == expect_dtype
    tol = {"float16": 5e-3, "bfloat16": 3e-2}.get(dtype, 1e-5)
    np.testing.assert_allclose(to_np(got).astype(np.float64), np.real(expected), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "bool_"])
@pytest.mark.parametrize("axis", AXES)
def test_logsumexp(dtype, axis, rng):
    x_np, x_fx = make_operand(rng, "sliced", dtype)
    ref = cast_ref(x_np, dtype).astype(np.float64)
    m = ref.max(axis=np_axis(axis), keepdims=True)
    expected = np.squeeze(m + np.log(np.exp(ref - m).sum(axis=np_axis(axis), keepdims=True)), axis=np_axis(axis))
    if axis is None:
        expected = expected.reshape(())
    got = fx.logsumexp(x_fx, axis=axis)
    tol = {"float16": 5e-3, "bfloat16": 3e-2}.get(dtype, 1e-5)
    np.testing.assert_allclose(to_np(got).astype(np.float64), expected, rtol=tol, atol=tol)
    big = fx.logsumexp(fx.array([1000.0, 1000.0]))
    assert abs(big.item() - (1000 + np.log(2))) < 1e-3
    assert fx.logsumexp(fx.array([-np.inf, -np.inf])).item() == -np.inf


@pytest.mark.parametrize("call", ["var(x, ddof=1)", "std(x, axis=0)", "logsumexp(x, axis=1)", "var(x * x, axis=(0, 1))"])
def test_gradients(call):
    x = np.random.default_rng(3).normal(size=(3, 4))

    def f(v):
        return eval(call, {**vars(fx), "x": v}).sum()

    g = np.array(fx.grad(f)(fx.array(x, dtype=fx.float64)))
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        p, m = x.copy(), x.copy()
        p[i] += 1e-6
        m[i] -= 1e-6
        fd[i] = (f(fx.array(p, dtype=fx.float64)).item() - f(fx.array(m, dtype=fx.float64)).item()) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


def test_vmap_and_methods():
    x = np.random.default_rng(4).normal(size=(3, 4, 5)).astype(np.float32)
    for name in ("var", "std", "logsumexp", "all", "any"):
        out = fx.vmap(lambda v: getattr(fx, name)(v, axis=0))(fx.array(x))
        expected = np.stack([np.array(getattr(fx, name)(fx.array(v), axis=0)) for v in x])
        np.testing.assert_allclose(np.array(out).astype(np.float64), expected.astype(np.float64), rtol=1e-6)
        assert np.array_equal(np.array(getattr(fx.array(x), name)(axis=1)), np.array(getattr(fx, name)(fx.array(x), axis=1)))
    assert fx.count_nonzero(fx.array(3, dtype=fx.int8)).dtype == fx.int32


@pytest.mark.parametrize("call", ["all(x)", "any(x, axis=0)", "count_nonzero(x, axis=1)", "var(x)", "std(x, ddof=1)",
                                  "logsumexp(x)"] if HAVE_MLX else [])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_result_dtypes_match_mlx(call, dtype):
    import mlx.core as mx

    base = np.random.default_rng(5).normal(size=(3, 4)).astype(np.float32)
    try:
        expected = eval(call, {**vars(mx), "x": mx.array(base).astype(getattr(mx, dtype))})
    except ValueError:
        with pytest.raises(ValueError):
            eval(call, {**vars(fx), "x": fx.array(base).astype(getattr(fx, dtype))})
        return
    got = eval(call, {**vars(fx), "x": fx.array(base).astype(getattr(fx, dtype))})
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
