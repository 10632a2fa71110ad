"""cumsum / cumprod / cummax / cummin / logcumsumexp against NumPy references,
MLX's dtypes and values (where MLX is installed), finite-difference
gradients, vmap, the array methods and the errors."""

import importlib.util

import numpy as np
import pytest

import ferrox as fx
from conftest import ALL_DTYPES, EPS, INTS, NP, TOL, assert_close, fxd, rand, round_bf16, to_fx, to_np

OPS = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]
MODES = [(False, True), (True, True), (False, False), (True, False)]  # (reverse, inclusive)
HAVE_MLX = importlib.util.find_spec("mlx") is not None


# --------------------------------------------------------------------------
# references
# --------------------------------------------------------------------------


def result_dtype(op, dtype):
    """MLX's result dtype of `op` on an input of `dtype`."""
    if op == "cumsum" and dtype == "bool_":
        return "int32"
    if op == "logcumsumexp" and (dtype == "bool_" or dtype in INTS):
        return "float32"
    return dtype


def compute_dtype(name):
    """NumPy dtype a reference of result dtype `name` is computed in."""
    if name == "complex64":
        return np.complex128
    if name in ("float16", "bfloat16", "float32", "float64"):
        return np.float64
    return NP[name]


def identity(op, name):
    """The first element of an exclusive scan with result dtype `name`."""
    if op == "cumsum":
        return 0
    if op == "cumprod":
        return 1
    if op == "logcumsumexp":
        return complex(-np.inf, 0) if name == "complex64" else -np.inf
    big = op == "cummin"
    if name == "bool_":
        return big
    if name in INTS:
        info = np.iinfo(NP[name])
        return info.max if big else info.min
    if name == "complex64":
        return complex(np.inf, np.inf) if big else complex(-np.inf, -np.inf)
    return np.inf if big else -np.inf


def _cplx_max(a, b):
    """Lexicographic maximum, NaN-propagating (ferrox's complex `maximum`)."""
    take_a = (a.real > b.real) | ((a.real == b.real) & (a.imag > b.imag)) | np.isnan(a)
    return np.where(take_a, a, b)


def _cplx_min(a, b):
    take_a = (a.real < b.real) | ((a.real == b.real) & (a.imag < b.imag)) | np.isnan(a)
    return np.where(take_a, a, b)


def _cplx_logaddexp(a, b):
    """MLX's complex logaddexp: hi + log1p(exp(lo - hi)), lexicographic hi/lo."""
    hi, lo = _cplx_max(a, b), _cplx_min(a, b)
    with np.errstate(all="ignore"):
        out = hi + np.log1p(np.exp(lo - hi))
    return np.where(((lo.real == -np.inf) & (lo.imag == 0)) | (hi.real == np.inf), hi, out)


def _accumulate(op, x, axis):
    """Inclusive forward scan of `x` (in its compute dtype) along `axis`."""
    if op == "cumsum":
        return np.cumsum(x, axis=axis, dtype=x.dtype)
    if op == "cumprod":
        return np.cumprod(x, axis=axis, dtype=x.dtype)
    if x.dtype == np.complex128:
        f = {"cummax": _cplx_max, "cummin": _cplx_min, "logcumsumexp": _cplx_logaddexp}[op]
        out = np.moveaxis(x.copy(), axis, 0)
        for i in range(1, out.shape[0]):
            out[i] = f(out[i - 1], out[i])
        return np.moveaxis(out, 0, axis)
    ufunc = {"cummax": np.maximum, "cummin": np.minimum, "logcumsumexp": np.logaddexp}[op]
    return ufunc.accumulate(x, axis=axis)


def reference(op, x, dtype, axis, reverse, inclusive):
    """The scan of NumPy data `x` (values of ferrox dtype `dtype`), as ferrox
    computes it, in the reference compute dtype of the result."""
    out_name = result_dtype(op, dtype)
    x = np.asarray(x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = axis % x.ndim
    x = x.astype(compute_dtype(out_name))
    if x.dtype == np.bool_ and op == "cumprod":
        x = x.astype(np.uint8)  # and == product of 0/1
    if reverse:
        x = np.flip(x, axis)
    with np.errstate(all="ignore"):
        y = _accumulate(op, x, axis)
    if not inclusive and y.shape[axis] > 0:
        first = np.full_like(np.take(y, [0], axis=axis), identity(op, out_name))
        y = np.concatenate([first, np.take(y, np.arange(y.shape[axis] - 1), axis=axis)], axis=axis)
    if reverse:
        y = np.flip(y, axis)
    if out_name == "bool_":
        y = y.astype(np.bool_)
    return y


def check(op, got, x, dtype, axis, reverse, inclusive):
    """Compares a ferrox result with the reference, with a tolerance that
    grows with the scanned length for inexact results."""
    out_name = result_dtype(op, dtype)
    exp = reference(op, x, dtype, axis, reverse, inclusive)
    if out_name not in EPS:
        assert_close(got, exp, out_name)
        return
    n = max(exp.size if axis is None else np.asarray(x).shape[axis], 1)
    rtol, atol = TOL[out_name]
    bound = 4 * n * EPS[out_name]
    with np.errstate(all="ignore"):
        if op in ("cumsum", "logcumsumexp"):
            # Any summation order: n eps times the running sum of magnitudes.
            mag = reference("cumsum", np.abs(np.asarray(x)).astype(np.float64), "float64", axis, reverse, inclusive)
            atol = atol + bound * np.where(np.isfinite(mag), mag, 0)
        rtol = max(rtol, bound)
    assert_close(got, exp, out_name, rtol=rtol, atol=atol)


def scan_data(rng, shape, dtype, op, long=False):
    """Random data for `op`: moderate values whose products stay in range
    (units, whose products are exact, for long axes)."""
    if op == "cumprod" and long and dtype not in INTS and dtype != "bool_":
        units = [1, -1, 1j, -1j] if dtype == "complex64" else [1.0, -1.0]
        v = rng.choice(units, size=shape)
        return v.astype(np.complex64 if dtype == "complex64" else NP[dtype])
    if op == "cumprod" and dtype not in INTS and dtype != "bool_":
        v = rng.uniform(0.6, 1.6, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        if dtype == "complex64":
            return (v * np.exp(1j * rng.uniform(-0.5, 0.5, size=shape))).astype(np.complex64)
        if dtype == "bfloat16":
            return round_bf16(v.astype(np.float32))
        return v.astype(NP[dtype])
    return rand(rng, shape, dtype, "small" if op == "cumprod" else "normal")


def call(op, a, axis, reverse, inclusive):
    return getattr(fx, op)(a, axis=axis, reverse=reverse, inclusive=inclusive)


# --------------------------------------------------------------------------
# values: every op x dtype, axes and modes on 3-D inputs
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_values_every_dtype(op, dtype, rng):
    x = scan_data(rng, (2, 3, 4), dtype, op)
    a = to_fx(x, dtype)
    for axis in (None, 0, 1, -1):
        for reverse, inclusive in MODES:
            got = call(op, a, axis, reverse, inclusive)
            assert got.dtype == fxd(result_dtype(op, dtype))
            check(op, got, x, dtype, axis, reverse, inclusive)


# 3-D layouts with logical shape (2, 3, 4): view(mod, base) for numpy and ferrox.
LAYOUTS = {
    "transposed": ((4, 3, 2), lambda m, x: m.transpose(x, (2, 1, 0))),
    "permuted": ((3, 2, 4), lambda m, x: m.transpose(x, (1, 0, 2))),
    "sliced": ((4, 6, 5), lambda m, x: x[::2, 1:4, :4]),
    "negstep": ((2, 3, 8), lambda m, x: x[::-1, :, ::-2]),
    "broadcast": ((1, 3, 4), lambda m, x: m.broadcast_to(x, (2, 3, 4))),
    "offset": ((3, 4, 5), lambda m, x: x[1:, 1:, 1:]),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("op", OPS)
def test_non_contiguous_inputs(op, layout, rng):
    base_shape, view = LAYOUTS[layout]
    for dtype in ("float32", "int32"):
        base = scan_data(rng, base_shape, dtype, op)
        x, a = view(np, base), view(fx, to_fx(base, dtype))
        for axis in (None, 0, 1, 2, -1):
            for reverse, inclusive in MODES:
                check(op, call(op, a, axis, reverse, inclusive), x, dtype, axis, reverse, inclusive)


# Shapes and axes that take each GPU kernel path (warp-per-rows, tiles with
# look-back, one thread per column, column tiles with look-back, transposed
# narrow columns), with lengths that leave partial packs and tiles.
PATHS = [
    ((700, 7), -1),  # warps
    ((5, 1000), -1),  # one tile per row
    ((3, 5003), -1),  # tiles with look-back
    ((9001,), 0),
    ((17, 2, 19), 0),  # one thread per column (short axis)
    ((12, 70000), 0),  # one thread per column (many columns)
    ((2, 401, 40), 1),  # column tiles
    ((1200, 33), 0),
    ((300, 3), 0),  # transposed to rows
]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_kernel_paths(dtype, rng):
    for k, (shape, axis) in enumerate(PATHS):
        for op in ("cumsum", "cummax") if dtype != "float32" else OPS:
            reverse, inclusive = MODES[(k + len(op)) % 4]
            x = scan_data(rng, shape, dtype, op, long=True)
            # Unaligned start: drop the first row (or element).
            x_fx = to_fx(x, dtype)[1:]
            x = x[1:]
            check(op, call(op, x_fx, axis, reverse, inclusive), x, dtype, axis, reverse, inclusive)


@pytest.mark.parametrize("reverse, inclusive", MODES)
def test_long_rows_exact(reverse, inclusive, rng):
    # Many look-back tiles: exact integer sums and maxima over a million elements.
    x = rng.integers(-1000, 1000, size=(1 << 20) + 3).astype(np.int32)
    a = to_fx(x, "int32")
    check("cumsum", fx.cumsum(a, reverse=reverse, inclusive=inclusive), x, "int32", None, reverse, inclusive)
    check("cummax", fx.cummax(a, reverse=reverse, inclusive=inclusive), x, "int32", None, reverse, inclusive)
    y = rng.integers(0, 50, size=(5, 4099)).astype(np.int64)
    got = fx.cumsum(to_fx(y, "int64").T, axis=0, reverse=reverse, inclusive=inclusive)
    check("cumsum", got, y.T, "int64", 0, reverse, inclusive)


def test_float_sums_stay_accurate(device, rng):
    x = rng.uniform(0.0, 1.0, size=200_000).astype(np.float32)
    got = to_np(fx.cumsum(to_fx(x, "float32")))
    exp = np.cumsum(x.astype(np.float64))
    np.testing.assert_allclose(got, exp, rtol=1e-4)
    h = np.ones(4096, dtype=np.float16)
    got = to_np(fx.cumsum(to_fx(h, "float16")))
    assert got.dtype == np.float16 and got[0] == 1 and got[2046] == 2047
    # The CPU rounds every step to float16 as MLX's CPU scan does (2048 + 1
    # is 2048); the GPU accumulates in float32 and rounds each output once.
    assert got[-1] == (2048 if device == "cpu" else 4096)


# --------------------------------------------------------------------------
# empty, 0-d, identities, NaN, dtype=
# --------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS)
def test_empty_and_zero_d(op):
    for dtype in ("bool_", "int8", "float32"):
        out_dtype = fxd(result_dtype(op, dtype))
        # A plain empty array, and an empty reversed view (its first element
        # would sit past the end of its empty buffer).
        for e in (fx.zeros((2, 0, 3), dtype=fxd(dtype)), fx.zeros((2, 0, 3), dtype=fxd(dtype))[::-1]):
            for axis, shape in ((None, (0,)), (0, (2, 0, 3)), (1, (2, 0, 3)), (-1, (2, 0, 3))):
                for reverse, inclusive in MODES:
                    got = call(op, e, axis, reverse, inclusive)
                    assert got.shape == shape and got.dtype == out_dtype
                    assert np.array(got).shape == shape
        s = fx.array(3, dtype=fxd(dtype))
        got = call(op, s, None, False, True)
        assert got.shape == (1,) and got.dtype == out_dtype
        check(op, got, np.array(3).astype(NP[dtype]), dtype, None, False, True)
        ex = call(op, s, None, False, False)
        check(op, ex, np.array(3).astype(NP[dtype]), dtype, None, False, False)


@pytest.mark.parametrize("op", ["cummax", "cummin", "logcumsumexp", "cumprod", "cumsum"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_exclusive_identity(op, dtype):
    a = to_fx(np.array([3, 1, 2]).astype(NP[dtype]), dtype)
    out = result_dtype(op, dtype)
    first = to_np(call(op, a, None, False, False))[0]
    last = to_np(call(op, a, None, True, False))[-1]
    want = np.array(identity(op, out)).astype(compute_dtype(out))
    for got in (first, last):
        assert got == want or (np.isnan(want) and np.isnan(got)), (op, dtype, got, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64"])
def test_nan_propagates(dtype):
    nan = float("nan")
    x = np.array([1.0, nan, 3.0, 0.0, 5.0])
    a = to_fx(x.astype(NP[dtype]), dtype)
    for op in ("cummax", "cummin", "cumsum", "logcumsumexp"):
        got = to_np(getattr(fx, op)(a))
        assert not np.isnan(got[0]) and np.isnan(got[1:]).all(), (op, got)
        got = to_np(getattr(fx, op)(a, reverse=True))
        assert np.isnan(got[:2]).all() and not np.isnan(got[2:]).any(), (op, got)


def test_dtype_argument():
    a = fx.array([100, 100, 100], dtype=fx.int8)
    assert fx.cumsum(a).tolist() == [100, -56, 44]  # int8 wraps (sum would widen)
    got = fx.cumsum(a, dtype=fx.int32)
    assert got.dtype == fx.int32 and got.tolist() == [100, 200, 300]
    got = fx.cumprod(fx.array([True, True, False]), dtype=fx.float32)
    assert got.dtype == fx.float32 and got.tolist() == [1.0, 1.0, 0.0]
    assert fx.cumprod(fx.array([True, False, True])).dtype == fx.bool_
    with pytest.raises(TypeError):
        fx.cumsum(a, dtype="int32")


# --------------------------------------------------------------------------
# MLX agreement (only where MLX is installed)
# --------------------------------------------------------------------------

if HAVE_MLX:
    import mlx.core as mx

    @pytest.mark.parametrize("dtype", ALL_DTYPES)
    @pytest.mark.parametrize("op", OPS)
    def test_matches_mlx(op, dtype, rng):
        x = scan_data(rng, (3, 5), dtype, op)
        if dtype == "bfloat16":
            m = mx.array(x.astype(np.float32)).astype(mx.bfloat16)
        else:
            m = mx.array(x, dtype=getattr(mx, dtype))
        a = to_fx(x, dtype)
        for axis in (None, 0, 1):
            for reverse, inclusive in MODES:
                want = getattr(mx, op)(m, axis=axis, reverse=reverse, inclusive=inclusive, stream=mx.cpu)
                got = call(op, a, axis, reverse, inclusive)
                assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (op, dtype)
                assert got.shape == tuple(want.shape)
                exp = np.array(want.astype(mx.float32) if dtype == "bfloat16" or want.dtype == mx.bfloat16 else want)
                # Half floats: MLX's CPU rounds every step (logaddexp several
                # times), the GPU accumulates in float32, so near-cancelling
                # prefixes differ by a few steps' rounding (absolute, not
                # relative); MLX's float64 logaddexp is accurate to 1e-8 only.
                rtol = atol = None
                if dtype in ("float16", "bfloat16"):
                    rtol = atol = 5e-2
                elif op == "logcumsumexp" and dtype == "float64":
                    rtol = atol = 1e-6
                assert_close(got, exp, result_dtype(op, dtype), rtol=rtol, atol=atol)

    @pytest.mark.parametrize("dtype", ["float32", "float64"])
    def test_nan_matches_mlx(dtype):
        x = np.array([[1.0, np.nan, 3.0], [2.0, 0.5, np.nan]], dtype=NP[dtype])
        for op in ("cummax", "cummin", "cumsum", "logcumsumexp"):
            for reverse, inclusive in MODES:
                m = mx.array(x, dtype=getattr(mx, dtype))
                want = np.array(getattr(mx, op)(m, axis=1, reverse=reverse, inclusive=inclusive, stream=mx.cpu))
                got = np.array(call(op, to_fx(x, dtype), 1, reverse, inclusive))
                np.testing.assert_allclose(got, want, rtol=1e-6)

    def test_errors_match_mlx():
        for op in OPS:
            with pytest.raises(IndexError) as theirs:
                getattr(mx, op)(mx.zeros((2, 3)), axis=2)
            with pytest.raises(IndexError) as ours:
                getattr(fx, op)(fx.zeros((2, 3)), axis=2)
            assert str(ours.value) == str(theirs.value)


# --------------------------------------------------------------------------
# gradients (float64 central differences), vmap, methods, errors
# --------------------------------------------------------------------------

FD_EPS = 1e-6


def _f64(x):
    return fx.array(np.asarray(x, dtype=np.float64), dtype=fx.float64)


def fd_check(fun, x, rng, rtol=1e-5, atol=1e-6):
    """vjp and jvp of `fun` at `x` (float64) against central differences.
    Outputs that are -inf (logcumsumexp's exclusive identity) are left out."""

    def F(v):
        y = np.array(fun(_f64(v)), dtype=np.float64)
        return np.where(np.isfinite(y), y, 0.0)

    y0 = np.array(fun(_f64(x)), dtype=np.float64)
    w = rng.uniform(-1.0, 1.0, size=y0.shape) * np.isfinite(y0)
    fd = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += FD_EPS
        lo[idx] -= FD_EPS
        fd[idx] = (np.sum(F(hi) * w) - np.sum(F(lo) * w)) / (2 * FD_EPS)
    _, (g,) = fx.vjp(fun, [_f64(x)], [_f64(w)])
    np.testing.assert_allclose(np.array(g), fd, rtol=rtol, atol=atol)
    grad = fx.grad(lambda v: (fun(v) * _f64(w)).sum())(_f64(x))
    np.testing.assert_allclose(np.array(grad), fd, rtol=rtol, atol=atol)
    t = rng.uniform(-1.0, 1.0, size=x.shape)
    _, (d,) = fx.jvp(fun, [_f64(x)], [_f64(t)])
    want = (F(x + FD_EPS * t) - F(x - FD_EPS * t)) / (2 * FD_EPS)
    np.testing.assert_allclose(np.where(np.isfinite(y0), np.array(d), 0.0), want, rtol=rtol, atol=atol)


def grad_data(rng, op, shape):
    if op in ("cummax", "cummin"):
        # Distinct values, far apart relative to the step: no ties to break.
        return (rng.permutation(int(np.prod(shape))).reshape(shape) - 5.0) * 0.25
    if op == "cumprod":
        return rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return rng.normal(0.0, 1.0, size=shape)


@pytest.mark.parametrize("reverse, inclusive", MODES)
@pytest.mark.parametrize("op", OPS)
def test_gradients(op, reverse, inclusive, rng):
    x = grad_data(rng, op, (3, 5))
    for axis in (None, 0, 1):
        fd_check(lambda v: call(op, v, axis, reverse, inclusive), x, rng)


@pytest.mark.parametrize("reverse, inclusive", MODES)
def test_cumprod_gradient_with_zeros(reverse, inclusive, rng):
    x = rng.uniform(0.5, 1.5, size=(4, 7))
    x[0, 2] = 0.0  # one zero
    x[1, 1] = x[1, 4] = 0.0  # two zeros
    x[2, 0] = x[2, 6] = 0.0  # zeros at both ends
    x[3, :] = 0.0  # all zeros
    for axis in (0, 1):
        fd_check(lambda v: fx.cumprod(v, axis=axis, reverse=reverse, inclusive=inclusive), x, rng)


def test_extreme_gradient_ties_go_to_the_latest():
    x = _f64([1.0, 3.0, 3.0, 2.0, 5.0])
    # As MLX: outputs 2 and 3 (both 3) belong to element 2, the latest holder.
    g = fx.grad(lambda v: fx.cummax(v).sum())(x)
    assert np.array(g).tolist() == [1.0, 1.0, 2.0, 0.0, 1.0]
    g = fx.grad(lambda v: fx.cummin(v, reverse=True).sum())(_f64([4.0, 1.0, 2.0, 1.0, 3.0]))
    assert np.array(g).tolist() == [0.0, 2.0, 0.0, 2.0, 1.0]
    g = fx.grad(lambda v: fx.cummax(v, inclusive=False).sum())(x)
    assert np.array(g).tolist() == [1.0, 1.0, 2.0, 0.0, 0.0]


def test_second_order(rng):
    x = rng.uniform(0.5, 1.5, size=6)
    w_np = rng.uniform(-1, 1, size=6)
    w = _f64(w_np)
    for op in ("cumprod", "logcumsumexp", "cumsum", "cummax"):
        inner = fx.grad(lambda v: (getattr(fx, op)(v) * w).sum())
        hess_w = fx.grad(lambda v: (inner(v) * w).sum())(_f64(x))

        def g_dot_w(v):
            return np.sum(np.array(inner(_f64(v))) * w_np)

        fd = np.zeros(6)
        for i in range(6):
            hi, lo = x.copy(), x.copy()
            hi[i] += FD_EPS
            lo[i] -= FD_EPS
            fd[i] = (g_dot_w(hi) - g_dot_w(lo)) / (2 * FD_EPS)
        np.testing.assert_allclose(np.array(hess_w), fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", OPS)
def test_vmap_matches_loop(op, rng):
    x = _f64(rng.uniform(0.5, 2.0, size=(3, 4, 5)))
    for in_axis in (0, 1, 2):
        for axis, reverse, inclusive in ((0, False, True), (-1, True, False), (None, False, False)):
            fun = lambda v: call(op, v, axis, reverse, inclusive)  # noqa: E731
            got = fx.vmap(fun, in_axes=in_axis)(x)
            index = [slice(None)] * 3
            rows = []
            for i in range(x.shape[in_axis]):
                index[in_axis] = i
                rows.append(fun(x[tuple(index)]))
            want = np.stack([np.array(r) for r in rows])
            np.testing.assert_allclose(np.array(got), want, rtol=1e-12)
    # vmap of a gradient
    g = fx.vmap(fx.grad(lambda v: (call(op, v, 0, True, True) * v).sum()))(x)
    for i in range(3):
        gi = fx.grad(lambda v: (call(op, v, 0, True, True) * v).sum())(x[i])
        np.testing.assert_allclose(np.array(g[i]), np.array(gi), rtol=1e-12)


@pytest.mark.parametrize("op", OPS)
def test_methods(op, rng):
    a = to_fx(rand(rng, (3, 4), "float32"), "float32")
    method = getattr(a, op)
    for kwargs in ({}, {"axis": 1}, {"axis": 0, "reverse": True}, {"axis": -1, "inclusive": False}):
        want = getattr(fx, op)(a, **kwargs)
        got = method(**kwargs)
        np.testing.assert_array_equal(np.array(got), np.array(want))
    on_cpu = method(None, reverse=True, stream=fx.cpu)
    np.testing.assert_allclose(np.array(on_cpu), np.array(getattr(fx, op)(a, reverse=True)), rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError):
        method(1, True)  # reverse is keyword-only


@pytest.mark.parametrize("op", OPS)
def test_errors(op):
    a = fx.zeros((2, 3))
    for axis in (2, -3):
        with pytest.raises(IndexError, match=rf"\[{op}\] Axis {axis} is out of bounds for array with 2 dimensions\."):
            getattr(fx, op)(a, axis=axis)
    with pytest.raises(IndexError, match=rf"\[{op}\] Axis 0 is out of bounds for array with 0 dimensions\."):
        getattr(fx, op)(fx.array(1.0), axis=0)
    with pytest.raises(IndexError):
        getattr(a, op)(axis=5)
    with pytest.raises(TypeError):
        getattr(fx, op)(a, axis=(0, 1))
    with pytest.raises(TypeError):
        getattr(fx, op)(a, 0, True)  # reverse is keyword-only
