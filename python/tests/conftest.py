"""Shared helpers for the ferrox test suite.

Conventions
-----------
* Every dtype is named by its ferrox attribute name (``"float32"``, ``"bool_"``,
  ...).  ``fxd(name)`` gives the ferrox dtype, ``NP[name]`` the NumPy dtype used
  to hold reference data (bfloat16 is held as float32 since NumPy lacks it).
* ``rand(rng, shape, name, kind)`` makes NumPy data whose values are exactly
  representable in dtype ``name`` (bfloat16 values are pre-rounded), so moving it
  into ferrox is exact and independent of ferrox's own rounding.
* ``to_fx(np_data, name)`` moves such data into ferrox with the right dtype.
* ``assert_close(fx_array, expected, name)`` checks shape, dtype and values
  with a tolerance chosen from the dtype.
* ``LAYOUTS`` build the same logical operand in several memory layouts
  (contiguous, transposed, sliced, negative-step slice, broadcast, empty, 0-d),
  applying the same view operation to the NumPy and the ferrox array.
"""

import numpy as np
import pytest

import ferrox as fx

# --------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------

ALL_DTYPES = [
    "bool_",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
SIGNED = ["int8", "int16", "int32", "int64"]
INTS = UNSIGNED + SIGNED
FLOATS = ["float16", "bfloat16", "float32", "float64"]
REAL = INTS + FLOATS  # numeric, non-complex, non-bool
NUMERIC = REAL + ["complex64"]  # everything but bool

NP = {
    "bool_": np.dtype(np.bool_),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(np.float32),  # held as float32, values pre-rounded
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "complex64": np.dtype(np.complex64),
}

SIZES = {
    "bool_": 1,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "complex64": 8,
}

# (rtol, atol) used when comparing a ferrox result of the given dtype.
TOL = {
    "float16": (1e-3, 1e-3),
    "bfloat16": (1e-2, 1e-2),
    "float32": (1e-5, 1e-6),
    "float64": (1e-12, 1e-12),
    "complex64": (1e-5, 1e-6),
}

# machine epsilon per dtype, for error bounds that grow with reduction length
EPS = {
    "float16": 2.0**-10,
    "bfloat16": 2.0**-7,
    "float32": 2.0**-23,
    "float64": 2.0**-52,
    "complex64": 2.0**-23,
}


def fxd(name):
    """ferrox dtype object from its attribute name."""
    return getattr(fx, name)


def name_of(dtype):
    """Attribute name of a ferrox dtype object."""
    for n in ALL_DTYPES:
        if fxd(n) == dtype:
            return n
    raise AssertionError(f"unknown ferrox dtype {dtype!r}")


def is_float(name):
    return name in FLOATS


def is_int(name):
    return name in INTS


def is_inexact(name):
    return name in FLOATS or name == "complex64"


# --------------------------------------------------------------------------
# MLX type promotion (mlx/dtype.cpp), used to predict result dtypes
# --------------------------------------------------------------------------

_ORDER = [
    "bool_",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "complex64",
]
_b, _u8, _u16, _u32, _u64 = "bool_", "uint8", "uint16", "uint32", "uint64"
_i8, _i16, _i32, _i64 = "int8", "int16", "int32", "int64"
_f16, _f32, _f64, _bf, _c = "float16", "float32", "float64", "bfloat16", "complex64"
# fmt: off
_TABLE = [
    # bool  u8    u16   u32   u64   i8    i16   i32   i64   f16   f32   f64   bf16  c64
    [_b,   _u8,  _u16, _u32, _u64, _i8,  _i16, _i32, _i64, _f16, _f32, _f64, _bf,  _c],  # bool
    [_u8,  _u8,  _u16, _u32, _u64, _i16, _i16, _i32, _i64, _f16, _f32, _f64, _bf,  _c],  # uint8
    [_u16, _u16, _u16, _u32, _u64, _i32, _i32, _i32, _i64, _f16, _f32, _f64, _bf,  _c],  # uint16
    [_u32, _u32, _u32, _u32, _u64, _i64, _i64, _i64, _i64, _f16, _f32, _f64, _bf,  _c],  # uint32
    [_u64, _u64, _u64, _u64, _u64, _f32, _f32, _f32, _f32, _f16, _f32, _f64, _bf,  _c],  # uint64
    [_i8,  _i16, _i32, _i64, _f32, _i8,  _i16, _i32, _i64, _f16, _f32, _f64, _bf,  _c],  # int8
    [_i16, _i16, _i32, _i64, _f32, _i16, _i16, _i32, _i64, _f16, _f32, _f64, _bf,  _c],  # int16
    [_i32, _i32, _i32, _i64, _f32, _i32, _i32, _i32, _i64, _f16, _f32, _f64, _bf,  _c],  # int32
    [_i64, _i64, _i64, _i64, _f32, _i64, _i64, _i64, _i64, _f16, _f32, _f64, _bf,  _c],  # int64
    [_f16, _f16, _f16, _f16, _f16, _f16, _f16, _f16, _f16, _f16, _f32, _f64, _f32, _c],  # float16
    [_f32, _f32, _f32, _f32, _f32, _f32, _f32, _f32, _f32, _f32, _f32, _f64, _f32, _c],  # float32
    [_f64, _f64, _f64, _f64, _f64, _f64, _f64, _f64, _f64, _f64, _f64, _f64, _f64, _c],  # float64
    [_bf,  _bf,  _bf,  _bf,  _bf,  _bf,  _bf,  _bf,  _bf,  _f32, _f32, _f64, _bf,  _c],  # bfloat16
    [_c,   _c,   _c,   _c,   _c,   _c,   _c,   _c,   _c,   _c,   _c,   _c,   _c,   _c],  # complex64
]
# fmt: on


def promote(a, b):
    """MLX promote_types on dtype names."""
    return _TABLE[_ORDER.index(a)][_ORDER.index(b)]


def at_least_float(name):
    return name if is_inexact(name) else promote(name, "float32")


def weak_scalar_type(arr_name, scalar):
    """Result dtype of ``array(arr_name) OP python_scalar`` under MLX rules."""
    if isinstance(scalar, bool):
        return arr_name  # bool scalar is bool_, which never widens anything
    if isinstance(scalar, int):
        return "int32" if arr_name == "bool_" else arr_name
    if isinstance(scalar, float):
        return arr_name if is_inexact(arr_name) else "float32"
    if isinstance(scalar, complex):
        return "complex64"
    raise TypeError(scalar)


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------


def round_bf16(x):
    """Round float32 data to the nearest bfloat16 (ties to even), as float32."""
    shape = np.shape(x)
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    bits = x.view(np.uint32).astype(np.uint64)
    bits = bits + 0x7FFF + ((bits >> 16) & 1)
    out = (bits & 0xFFFF0000).astype(np.uint32).view(np.float32)
    out = np.where(np.isnan(x), x, out)
    return out.reshape(shape)


def rand(rng, shape, name, kind="normal"):
    """Random NumPy data exactly representable in dtype ``name``.

    kind:
      normal    - general values (ints small, floats ~N(0, 2))
      positive  - strictly positive (for log/sqrt/power bases)
      nonzero   - |x| bounded away from zero (denominators)
      small     - tiny non-negative ints / floats in [0, 3] (matmul, power)
      exponent  - non-negative small exponents
      distinct  - all values distinct (argmax/argmin without ties)
    """
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    if name == "bool_":
        if kind in ("positive", "nonzero"):
            return np.ones(shape, dtype=np.bool_)
        return rng.random(shape) < 0.5
    if name in INTS:
        unsigned = name in UNSIGNED
        if kind == "distinct":
            lo = 0 if unsigned else -(n // 2)
            vals = rng.permutation(n) + lo
            return vals.reshape(shape).astype(NP[name])
        if kind == "positive":
            lo, hi = 1, 10
        elif kind == "nonzero":
            lo, hi = (1, 10)
            v = rng.integers(lo, hi, size=shape)
            if not unsigned:
                v = v * rng.choice([-1, 1], size=shape)
            return v.astype(NP[name])
        elif kind in ("small", "exponent"):
            lo, hi = (0, 4) if kind == "exponent" else ((0, 4) if unsigned else (-3, 4))
        else:
            lo, hi = (0, 20) if unsigned else (-10, 11)
        return rng.integers(lo, hi, size=shape).astype(NP[name])
    # inexact
    if kind == "positive":
        v = rng.uniform(0.5, 3.0, size=shape)
    elif kind == "nonzero":
        v = rng.uniform(0.5, 3.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    elif kind == "small":
        v = rng.uniform(-2.0, 2.0, size=shape)
    elif kind == "exponent":
        v = rng.uniform(-2.0, 2.0, size=shape)
    elif kind == "distinct":
        v = (rng.permutation(n) - n / 2).reshape(shape) * 0.25 + 0.125
    else:
        v = rng.normal(0.0, 2.0, size=shape)
    if name == "complex64":
        w = rng.normal(0.0, 1.0, size=shape)
        return (v + 1j * w).astype(np.complex64)
    if name == "bfloat16":
        return round_bf16(v.astype(np.float32))
    return v.astype(NP[name])


def to_fx(x, name):
    """Move NumPy data into ferrox with dtype ``name`` (exact for rand() data)."""
    x = np.asarray(x)
    if name == "bfloat16":
        return fx.array(x.astype(np.float32), dtype=fx.float32).astype(fx.bfloat16)
    if name == "float64":
        return fx.array(x.astype(np.float64), dtype=fx.float64)
    return fx.array(x.astype(NP[name]), dtype=fxd(name))


def to_np(a):
    """ferrox array -> NumPy array (bfloat16 via float32)."""
    if a.dtype == fx.bfloat16:
        a = a.astype(fx.float32)
    return np.array(a)


# --------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------


def assert_close(a, expected, name=None, rtol=None, atol=None):
    """Check a ferrox array against a NumPy reference.

    * ``a.shape`` must equal ``expected.shape``;
    * ``a.dtype`` must be ``fx.<name>`` when name is given;
    * integers and bools compare exactly, inexact dtypes with a tolerance
      derived from ``name`` (override with rtol/atol; atol may be an array).
    """
    expected = np.asarray(expected)
    assert isinstance(a, fx.array), f"expected a ferrox array, got {type(a)}"
    assert tuple(a.shape) == tuple(expected.shape), f"shape {a.shape} != {expected.shape}"
    if name is not None:
        assert a.dtype == fxd(name), f"dtype {a.dtype} != {name}"
    else:
        name = name_of(a.dtype)
    got = to_np(a)
    assert got.shape == expected.shape
    if name in INTS or name == "bool_":
        exp = expected.astype(NP[name]) if expected.dtype != NP[name] else expected
        if not np.array_equal(got, exp):
            bad = np.argwhere(got != exp)[:5]
            raise AssertionError(
                f"{name} values differ at {bad.tolist()}:\n got={got!r}\n exp={exp!r}"
            )
        return
    r, t = TOL[name]
    rtol = r if rtol is None else rtol
    atol = t if atol is None else atol
    g = got.astype(np.complex128 if name == "complex64" else np.float64)
    e = expected.astype(np.complex128 if np.iscomplexobj(expected) else np.float64)
    both_nan = np.isnan(g) & np.isnan(e)
    same_inf = np.isinf(g) & np.isinf(e) & (g == e)
    ok = (np.abs(g - e) <= atol + rtol * np.abs(e)) | both_nan | same_inf
    if not np.all(ok):
        bad = np.argwhere(~ok)[:5]
        idx = [tuple(b) for b in bad]
        raise AssertionError(
            f"{name} values differ (rtol={rtol}, atol) at {idx}: "
            f"got {[g[i] for i in idx]} expected {[e[i] for i in idx]}"
        )


def ref_dtype(name):
    """NumPy dtype in which to compute a reference for a result of dtype name."""
    if name in ("float16", "bfloat16", "float32", "float64"):
        return np.float64
    if name == "complex64":
        return np.complex128
    return NP[name]


def cast_ref(x, name):
    """Cast NumPy input data as ferrox would cast it to dtype ``name``, then to
    the reference compute dtype."""
    if name == "bfloat16":
        return round_bf16(np.asarray(x).astype(np.float32)).astype(np.float64)
    if name in ("float16", "float32"):
        return np.asarray(x).astype(NP[name]).astype(np.float64)
    return np.asarray(x).astype(ref_dtype(name))


# --------------------------------------------------------------------------
# layouts: the same view applied to a NumPy base and its ferrox copy
# --------------------------------------------------------------------------
# Each layout maps a logical shape to (base_shape, view_fn) where view_fn works
# on both NumPy arrays and ferrox arrays and yields an array of the logical
# shape.  Only shapes of rank 2 are used for the 2-D layouts below.


LAYOUTS_2D = {
    # name: (base shape, view)
    "contiguous": ((3, 4), lambda x: x),
    "transposed": ((4, 3), lambda x: x.T),
    "sliced": ((7, 9), lambda x: x[1:7:2, 1:9:2]),
    "negstep": ((3, 8), lambda x: x[::-1, ::-2]),
    "offset": ((5, 6), lambda x: x[2:, 1:5]),
    "empty": ((0, 4), lambda x: x),
}


def make_operand(rng, layout, name, kind="normal"):
    """(numpy_view, ferrox_view) for a 2-D layout, logical shape (3, 4) or (0, 4)."""
    base_shape, view = LAYOUTS_2D[layout]
    base = rand(rng, base_shape, name, kind)
    return view(base), view(to_fx(base, name))


# --------------------------------------------------------------------------
# devices: every test runs once per available device, as the default device
# --------------------------------------------------------------------------

DEVICES = ["cpu"] + (["gpu"] if fx.cuda.is_available() else [])


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "whole_process: runs once, not per device (it starts processes that pick their own device)"
    )


def pytest_collection_modifyitems(config, items):
    """Keeps one device's copy of tests marked `whole_process`."""
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        once = item.get_closest_marker("whole_process") is not None
        (drop if once and params.get("device", DEVICES[0]) != DEVICES[0] else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(params=DEVICES, autouse=True)
def device(request):
    """The name of the device this run of the test uses as default."""
    old = fx.default_device()
    fx.set_default_device(getattr(fx, request.param))
    yield request.param
    fx.synchronize()
    fx.set_default_device(old)


@pytest.fixture
def rng(request):
    # A distinct but fixed seed per test id keeps tests independent and
    # reproducible.
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.nodeid)) % (2**32)
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------
# finite differences
# --------------------------------------------------------------------------

FD_EPS = 1e-6


def f64(x):
    """`x` as a float64 ferrox array."""
    return fx.array(np.asarray(x, dtype=np.float64), dtype=fx.float64)


def fd_check(fun, x, rng, rtol=1e-5, atol=1e-6):
    """vjp, grad and jvp of `fun` at `x` (float64) against central differences."""

    def F(v):
        return np.array(fun(f64(v)), dtype=np.float64)

    y0 = F(x)
    w = rng.uniform(-1.0, 1.0, size=y0.shape)
    fd = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += FD_EPS
        lo[idx] -= FD_EPS
        fd[idx] = (np.sum(F(hi) * w) - np.sum(F(lo) * w)) / (2 * FD_EPS)
    _, (g,) = fx.vjp(fun, [f64(x)], [f64(w)])
    np.testing.assert_allclose(np.array(g), fd, rtol=rtol, atol=atol)
    grad = fx.grad(lambda v: (fun(v) * f64(w)).sum())(f64(x))
    np.testing.assert_allclose(np.array(grad), fd, rtol=rtol, atol=atol)
    t = rng.uniform(-1.0, 1.0, size=x.shape)
    _, (d,) = fx.jvp(fun, [f64(x)], [f64(t)])
    want = (F(x + FD_EPS * t) - F(x - FD_EPS * t)) / (2 * FD_EPS)
    np.testing.assert_allclose(np.array(d), want, rtol=rtol, atol=atol)
