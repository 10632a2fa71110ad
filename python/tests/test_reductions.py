"""sum / mean / max / min / argmax / argmin against NumPy."""

import warnings

import numpy as np
import pytest

import ferrox as fx
from conftest import (
    ALL_DTYPES,
    EPS,
    INTS,
    TOL,
    assert_close,
    at_least_float,
    cast_ref,
    fxd,
    rand,
    to_fx,
    to_np,
)

NO_COMPLEX = [d for d in ALL_DTYPES if d != "complex64"]

# 3-D layouts, logical shape (2, 3, 4) (or (2, 0, 4) for "empty").
# view(mod, x) works for mod = numpy or ferrox.
LAYOUTS_3D = {
    "contiguous": ((2, 3, 4), lambda m, x: x),
    "transposed": ((4, 3, 2), lambda m, x: m.transpose(x, (2, 1, 0))),
    "permuted": ((3, 2, 4), lambda m, x: m.transpose(x, (1, 0, 2))),
    "sliced": ((4, 6, 5), lambda m, x: x[::2, 1:4, :4]),
    "negstep": ((2, 3, 8), lambda m, x: x[::-1, :, ::-2]),
    "broadcast": ((1, 3, 4), lambda m, x: m.broadcast_to(x, (2, 3, 4))),
    "empty": ((2, 0, 4), lambda m, x: x),
}

AXES = [None, 0, 1, 2, -1, (0, 2), [0, 1], (0, 1, 2), (-1, -3), (1,)]


def operand(rng, layout, dtype, kind="normal"):
    base_shape, view = LAYOUTS_3D[layout]
    base = rand(rng, base_shape, dtype, kind)
    return view(np, base), view(fx, to_fx(base, dtype))


def _np_axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def _reduced_count(shape, axis):
    if axis is None:
        return int(np.prod(shape)) if shape else 1
    axes = [axis] if isinstance(axis, int) else list(axis)
    return int(np.prod([shape[a] for a in axes])) if axes else 1


def sum_tolerance(x_ref, axis, keepdims, rd, mean=False):
    """Error bound for a sum in dtype rd: n * eps * sum(|x|) (any summation order)."""
    if rd not in EPS:
        return None
    n = max(_reduced_count(x_ref.shape, _np_axis(axis)), 1)
    mag = np.sum(np.abs(x_ref), axis=_np_axis(axis), keepdims=keepdims)
    if mean:
        mag = mag / n
    return 2 * n * EPS[rd] * mag + TOL[rd][1]


# --------------------------------------------------------------------------
# sum
# --------------------------------------------------------------------------


# As MLX: sums and products of narrow integers (and bool) accumulate in 32 bits.
SUM_DTYPE = {"bool_": "int32", "int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32"}


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS_3D))
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_sum(dtype, layout, axis, keepdims, rng):
    x_np, x_fx = operand(rng, layout, dtype)
    rd = SUM_DTYPE.get(dtype, dtype)
    x_ref = cast_ref(x_np, rd)
    ax = _np_axis(axis)
    if rd in INTS:
        ref = np.sum(x_ref, axis=ax, keepdims=keepdims, dtype=x_ref.dtype)
        atol = None
    else:
        ref = np.sum(x_ref, axis=ax, keepdims=keepdims)
        atol = sum_tolerance(x_ref, axis, keepdims, rd)
    out = fx.sum(x_fx, axis=axis, keepdims=keepdims)
    assert_close(out, ref, rd, atol=atol)


# --------------------------------------------------------------------------
# mean
# --------------------------------------------------------------------------


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS_3D))
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_mean(dtype, layout, axis, keepdims, rng):
    x_np, x_fx = operand(rng, layout, dtype)
    rd = at_least_float(dtype)
    x_ref = cast_ref(x_np, rd) if dtype not in INTS + ["bool_"] else x_np.astype(np.float64)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = np.mean(x_ref, axis=_np_axis(axis), keepdims=keepdims)
    atol = sum_tolerance(x_ref, axis, keepdims, rd, mean=True)
    out = fx.mean(x_fx, axis=axis, keepdims=keepdims)
    assert_close(out, ref, rd, atol=atol)


@pytest.mark.parametrize("dtype", INTS + ["bool_"])
def test_mean_of_ints_is_float32(dtype):
    x = fx.ones((3, 2), dtype=fxd(dtype))
    assert fx.mean(x).dtype == fx.float32
    assert fx.mean(x, axis=0).dtype == fx.float32
    assert fx.mean(x).item() == 1.0


# --------------------------------------------------------------------------
# max / min
# --------------------------------------------------------------------------


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("layout", [k for k in LAYOUTS_3D if k != "empty"])
@pytest.mark.parametrize("dtype", NO_COMPLEX)
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min(name, dtype, layout, axis, keepdims, rng):
    x_np, x_fx = operand(rng, layout, dtype)
    np_fn = np.max if name == "max" else np.min
    ref = np_fn(cast_ref(x_np, dtype), axis=_np_axis(axis), keepdims=keepdims)
    out = getattr(fx, name)(x_fx, axis=axis, keepdims=keepdims)
    assert_close(out, ref, dtype, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_with_inf(name):
    x = fx.array([1.0, -np.inf, np.inf, 0.0])
    assert getattr(fx, name)(x).item() == (np.inf if name == "max" else -np.inf)


# --------------------------------------------------------------------------
# argmax / argmin
# --------------------------------------------------------------------------


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1, -2])
@pytest.mark.parametrize("layout", [k for k in LAYOUTS_3D if k not in ("empty", "broadcast")])
@pytest.mark.parametrize("dtype", [d for d in NO_COMPLEX if d != "bool_"])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(name, dtype, layout, axis, keepdims, rng):
    x_np, x_fx = operand(rng, layout, dtype, "distinct")
    ref = getattr(np, name)(cast_ref(x_np, dtype), axis=axis, keepdims=keepdims)
    out = getattr(fx, name)(x_fx, axis=axis, keepdims=keepdims)
    assert_close(out, np.asarray(ref).astype(np.uint32), "uint32")


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", ["int32", "float32", "uint8"])
def test_argmax_ties_pick_first(name, dtype):
    x = fx.array([1, 3, 3, 1, 0, 0], dtype=fxd(dtype))
    expected = 1 if name == "argmax" else 4
    out = getattr(fx, name)(x)
    assert out.dtype == fx.uint32
    assert out.item() == expected
    # ties along a non-contiguous axis
    m = fx.array([[2, 5], [2, 5], [1, 7]], dtype=fxd(dtype)).T  # shape (2, 3)
    exp = getattr(np, name)(np.array([[2, 5], [2, 5], [1, 7]]).T, axis=1)
    assert getattr(fx, name)(m, axis=1).tolist() == exp.tolist()


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_bool(name):
    x = fx.array([[False, True, True], [True, False, False]])
    exp = getattr(np, name)(np.array([[False, True, True], [True, False, False]]), axis=1)
    assert getattr(fx, name)(x, axis=1).tolist() == exp.tolist()


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_broadcast_input(name, rng):
    base = rand(rng, (1, 5), "float32", "distinct")
    x_np = np.broadcast_to(base, (3, 5))
    x_fx = fx.broadcast_to(to_fx(base, "float32"), (3, 5))
    assert_close(getattr(fx, name)(x_fx, axis=1),
                 getattr(np, name)(x_np, axis=1).astype(np.uint32), "uint32")


# Row lengths around the CPU kernel's lane width (32) and block (512).
ARG_ROW_LENGTHS = [1, 7, 31, 32, 33, 65, 511, 512, 513, 1100]


def tied(rng, shape, dtype):
    """Data of dtype with few distinct values, so extremes repeat within and across blocks."""
    v = rng.integers(0 if dtype.startswith("u") else -3, 4, size=shape)
    if dtype == "bool_":
        return v > 0
    if dtype == "complex64":
        return (v + 1j * rng.integers(-1, 2, size=shape)).astype(np.complex64)
    return v.astype(np.float32 if dtype == "bfloat16" else np.dtype(dtype))


ARG_VIEWS = {
    # name: (base shape for rows of n, view, axis)
    "contiguous": (lambda n: (5, n), lambda x: x, 1),
    "column-sliced": (lambda n: (5, n + 3), lambda x: x[:, 2:-1], 1),
    "reversed": (lambda n: (5, n), lambda x: x[::-1, ::-1], 1),
    "transposed": (lambda n: (n, 5), lambda x: x.T, 1),
    "axis 0": (lambda n: (n, 5), lambda x: x, 0),
}


@pytest.mark.parametrize("view", list(ARG_VIEWS))
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_rows_of_any_length_pick_the_first_extreme(name, dtype, view, rng):
    shape_of, view_of, axis = ARG_VIEWS[view]
    for n in ARG_ROW_LENGTHS:
        base = tied(rng, shape_of(n), dtype)
        x_np, x_fx = view_of(base), view_of(to_fx(base, dtype))
        ref = getattr(np, name)(x_np, axis=axis)
        assert getattr(fx, name)(x_fx, axis=axis).tolist() == ref.tolist(), n
        ref = getattr(np, name)(x_np, axis=axis, keepdims=True)
        assert getattr(fx, name)(x_fx, axis=axis, keepdims=True).tolist() == ref.tolist(), n


@pytest.mark.parametrize("view", ["contiguous", "column-sliced", "transposed", "axis 0"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_first_nan_wins(name, dtype, view, rng):
    shape_of, view_of, axis = ARG_VIEWS[view]
    for n in ARG_ROW_LENGTHS:
        base = rng.normal(size=shape_of(n)).astype(np.float32)
        rows = np.moveaxis(view_of(base), axis, -1)  # a view: the NaNs below land in base
        rows[0, -1] = np.nan  # last element
        rows[1, 0] = np.nan  # first element
        rows[2, n // 2] = np.nan  # two NaNs: the first wins
        rows[2, -1] = np.nan
        rows[3, :] = np.nan  # all NaN
        rows[4, n // 3] = np.inf if name == "argmax" else -np.inf  # no NaN in this row
        x = to_fx(base, dtype)
        # The reference reads the values as stored (rounding may make ties).
        rows = np.moveaxis(view_of(to_np(x).astype(np.float64)), axis, -1)
        want = [int(np.flatnonzero(np.isnan(r))[0]) if np.isnan(r).any() else int(getattr(np, name)(r))
                for r in rows]
        assert getattr(fx, name)(view_of(x), axis=axis).tolist() == want, n


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_signed_zeros_tie_across_blocks(name):
    x = np.full((2, 1500), 1.0 if name == "argmin" else -1.0, dtype=np.float32)
    x[:, 600] = -0.0
    x[:, 900] = 0.0  # equal to -0.0: the earlier one wins
    x[1, 1400] = 0.0
    assert getattr(fx, name)(fx.array(x), axis=1).tolist() == [600, 600]


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint8", "float64"])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_many_rows_split_over_threads(name, dtype, rng):
    x = tied(rng, (300, 700), dtype)
    x[::7, 650] = 9  # a late extreme in some rows
    want = getattr(np, name)(x, axis=-1)
    assert getattr(fx, name)(to_fx(x, dtype), axis=-1).tolist() == want.tolist()
    want = getattr(np, name)(x, axis=0)
    assert getattr(fx, name)(to_fx(x, dtype), axis=0).tolist() == want.tolist()


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_of_empty_rows_raises(name):
    with pytest.raises(ValueError):
        fx.eval(getattr(fx, name)(fx.zeros((3, 0)), axis=1))


# --------------------------------------------------------------------------
# 0-d inputs, method forms, larger/odd sizes
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int32", "float32", "float16", "bool_"])
def test_reductions_zero_dim(dtype, rng):
    x_np = rand(rng, (), dtype, "positive")
    x = to_fx(x_np, dtype)
    s = fx.sum(x)
    assert s.shape == ()
    assert s.item() == pytest.approx(float(x_np))
    assert fx.max(x).shape == () and fx.min(x).shape == ()
    assert fx.mean(x).item() == pytest.approx(float(x_np))
    am = fx.argmax(x)
    assert am.shape == () and am.dtype == fx.uint32 and am.item() == 0


def test_reduction_methods(rng):
    x_np = rand(rng, (3, 4, 5), "float32")
    x = to_fx(x_np, "float32")
    assert_close(x.sum(), x_np.sum(), "float32", atol=1e-4)
    assert_close(x.sum(axis=1), x_np.sum(axis=1), "float32", atol=1e-4)
    assert_close(x.sum(axis=(0, 2), keepdims=True), x_np.sum(axis=(0, 2), keepdims=True),
                 "float32", atol=1e-4)
    assert_close(x.mean(axis=-1), x_np.mean(axis=-1), "float32")
    assert_close(x.max(axis=0), x_np.max(axis=0), "float32")
    assert_close(x.min(axis=[1, 2], keepdims=True), x_np.min(axis=(1, 2), keepdims=True),
                 "float32")
    assert_close(x.argmax(axis=1), x_np.argmax(axis=1).astype(np.uint32), "uint32")
    assert_close(x.argmin(), np.array(x_np.argmin(), dtype=np.uint32), "uint32")
    assert_close(x.argmin(axis=2, keepdims=True),
                 x_np.argmin(axis=2, keepdims=True).astype(np.uint32), "uint32")


@pytest.mark.parametrize("shape,axis", [((100003,), None), ((513, 257), 0), ((257, 513), 1),
                                        ((64, 65, 33), (0, 2)), ((7, 3000), -1)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
def test_large_reductions(shape, axis, dtype, rng):
    x_np = rand(rng, shape, dtype)
    x = to_fx(x_np, dtype)
    x_ref = cast_ref(x_np, dtype)
    ref_sum = np.sum(x_ref, axis=axis, dtype=x_ref.dtype)
    atol = sum_tolerance(x_ref, axis, False, dtype)
    assert_close(fx.sum(x, axis=axis), ref_sum, dtype, atol=atol)
    assert_close(fx.max(x, axis=axis), np.max(x_ref, axis=axis), dtype, rtol=0, atol=0)
    # the same through a transposed view
    xt_np = x_ref.T
    xt = x.T
    axt = None if axis is None else (
        tuple(x_np.ndim - 1 - a % x_np.ndim for a in axis) if isinstance(axis, tuple)
        else x_np.ndim - 1 - axis % x_np.ndim)
    assert_close(fx.sum(xt, axis=axt), np.sum(xt_np, axis=axt, dtype=x_ref.dtype), dtype,
                 atol=None if atol is None else atol.T)
    assert_close(fx.min(xt, axis=axt), np.min(xt_np, axis=axt), dtype, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", list(SUM_DTYPE))
@pytest.mark.parametrize("name", ["sum", "prod"])
def test_narrow_integer_sums_and_products_widen_as_mlx(name, dtype):
    x = fx.array([100, 100, 100], dtype=fxd(dtype)) if dtype != "bool_" else fx.array([True, True])
    out = getattr(fx, name)(x)
    assert out.dtype == fxd(SUM_DTYPE[dtype])
    expected = {"sum": 300, "prod": 1000000}[name] if dtype != "bool_" else {"sum": 2, "prod": 1}[name]
    assert out.item() == expected
    assert getattr(fx, name)(x, axis=0, keepdims=True).dtype == fxd(SUM_DTYPE[dtype])


def test_wide_integer_sums_keep_their_dtype_and_wrap():
    x = fx.array([2**31 - 1, 1], dtype=fx.int32)
    assert fx.sum(x).dtype == fx.int32
    assert fx.sum(x).item() == -(2**31)


def test_sum_bool_counts():
    x = fx.array([[True, False, True], [True, True, True]])
    s = fx.sum(x)
    assert s.dtype == fx.int32
    assert s.item() == 5
    assert fx.sum(x, axis=1).tolist() == [2, 3]
