"""Array construction: fx.array, zeros/ones/full, arange, linspace, eye,
identity, zeros_like/ones_like."""

import numpy as np
import pytest

import ferrox as fx
from conftest import (
    ALL_DTYPES,
    NP,
    assert_close,
    cast_ref,
    fxd,
    rand,
    to_fx,
    to_np,
)

# --------------------------------------------------------------------------
# fx.array from Python values
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,dtype,expected",
    [
        (1, "int32", 1),
        (-7, "int32", -7),
        (1.5, "float32", 1.5),
        (True, "bool_", True),
        (False, "bool_", False),
        (1 + 2j, "complex64", 1 + 2j),
    ],
)
def test_array_from_python_scalar(value, dtype, expected):
    a = fx.array(value)
    assert a.dtype == fxd(dtype)
    assert a.shape == ()
    assert a.ndim == 0
    assert a.size == 1
    assert a.item() == expected
    assert type(a.item()) is type(expected)


@pytest.mark.parametrize(
    "value,dtype",
    [
        ([1, 2, 3], "int32"),
        ([[1, 2], [3, 4]], "int32"),
        ([1.0, 2.5], "float32"),
        ([[1.5], [2.5], [3.5]], "float32"),
        ([True, False], "bool_"),
        ([1, 2.5], "float32"),
        ([True, 2], "int32"),
        ([1j, 2], "complex64"),
        ([[[1]]], "int32"),
        ([], "float32"),
        ((1, 2, 3), "int32"),
    ],
    ids=str,
)
def test_array_from_lists(value, dtype):
    a = fx.array(value)
    assert a.dtype == fxd(dtype)
    ref = np.array(value)
    assert a.shape == ref.shape
    assert a.tolist() == ref.astype(NP[dtype]).tolist()


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_array_from_list_with_dtype(dtype):
    a = fx.array([[0, 1, 2], [3, 4, 5]], dtype=fxd(dtype))
    assert a.dtype == fxd(dtype)
    assert a.shape == (2, 3)
    assert_close(a, np.array([[0, 1, 2], [3, 4, 5]]).astype(NP[dtype]), dtype)


@pytest.mark.parametrize(
    "np_dtype,fx_dtype",
    [
        (np.bool_, "bool_"),
        (np.uint8, "uint8"),
        (np.uint16, "uint16"),
        (np.uint32, "uint32"),
        (np.uint64, "uint64"),
        (np.int8, "int8"),
        (np.int16, "int16"),
        (np.int32, "int32"),
        (np.int64, "int64"),
        (np.float16, "float16"),
        (np.float32, "float32"),
        (np.float64, "float32"),  # MLX: float64 numpy input becomes float32
        (np.complex64, "complex64"),
        (np.complex128, "complex64"),
    ],
)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3), (2, 0, 3), (2, 3, 4)], ids=str)
def test_array_from_numpy(np_dtype, fx_dtype, shape, rng):
    name = {"bool": "bool_", "complex128": "complex64"}.get(np.dtype(np_dtype).name,
                                                            np.dtype(np_dtype).name)
    src = rand(rng, shape, name).astype(np_dtype)
    a = fx.array(src)
    assert a.dtype == fxd(fx_dtype)
    assert a.shape == shape
    assert_close(a, cast_ref(src, fx_dtype), fx_dtype)


def test_array_from_numpy_float64_with_dtype(rng):
    src = rng.normal(size=(3, 4))
    a = fx.array(src, dtype=fx.float64)
    assert a.dtype == fx.float64
    assert_close(a, src, "float64", rtol=0, atol=0)


@pytest.mark.parametrize("layout", ["transposed", "negstep", "broadcast", "fortran"])
def test_array_from_noncontiguous_numpy(layout, rng):
    base = rng.normal(size=(4, 6)).astype(np.float32)
    src = {
        "transposed": base.T,
        "negstep": base[::-1, ::-2],
        "broadcast": np.broadcast_to(base[:1], (3, 6)),
        "fortran": np.asfortranarray(base),
    }[layout]
    assert_close(fx.array(src), src, "float32", rtol=0, atol=0)


def test_array_from_numpy_is_a_copy():
    src = np.arange(4, dtype=np.float32)
    a = fx.array(src)
    src[0] = 100.0
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("dtype", ["int32", "float16", "bfloat16", "complex64", "bool_"])
def test_array_from_fx_array(dtype, rng):
    x_np = rand(rng, (2, 3), dtype)
    x = to_fx(x_np, dtype)
    y = fx.array(x)
    assert y.dtype == x.dtype
    assert_close(y, cast_ref(x_np, dtype), dtype)
    if dtype != "complex64":
        z = fx.array(x, dtype=fx.float32)
        assert z.dtype == fx.float32
        assert_close(z, cast_ref(x_np, dtype), "float32")


# --------------------------------------------------------------------------
# zeros / ones / full
# --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [3, (3,), [2, 3], (2, 0, 4), (), (1, 1, 1)], ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_zeros_ones(dtype, shape):
    z = fx.zeros(shape, dtype=fxd(dtype))
    o = fx.ones(shape, fxd(dtype))
    ref_shape = (shape,) if isinstance(shape, int) else tuple(shape)
    assert_close(z, np.zeros(ref_shape, dtype=NP[dtype]), dtype)
    assert_close(o, np.ones(ref_shape, dtype=NP[dtype]), dtype)


def test_zeros_ones_default_dtype():
    assert fx.zeros((2, 2)).dtype == fx.float32
    assert fx.ones(3).dtype == fx.float32
    assert fx.zeros(3).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "vals,dtype,expected_dtype",
    [
        (7, None, "int32"),
        (2.5, None, "float32"),
        (True, None, "bool_"),
        (3, fx.float16, "float16"),
        (1.5, fx.float64, "float64"),
        (2, fx.uint8, "uint8"),
        (1.5, fx.bfloat16, "bfloat16"),
        (1 + 1j, None, "complex64"),
    ],
    ids=str,
)
def test_full_scalar(vals, dtype, expected_dtype):
    a = fx.full((2, 3), vals, dtype=dtype)
    assert a.dtype == fxd(expected_dtype)
    assert_close(a, np.full((2, 3), vals), expected_dtype)
    assert fx.full(4, vals, dtype).shape == (4,)


def test_full_array_vals_broadcast():
    a = fx.full((2, 3), fx.array([1, 2, 3]))
    assert a.dtype == fx.int32
    assert a.tolist() == [[1, 2, 3], [1, 2, 3]]
    # As MLX: dtype converts Python and NumPy values; an array keeps its dtype.
    b = fx.full([3, 2], fx.array([[1.5], [2.5], [3.5]]), dtype=fx.float16)
    assert b.dtype == fx.float32
    assert b.tolist() == [[1.5, 1.5], [2.5, 2.5], [3.5, 3.5]]
    c = fx.full([3, 2], np.array([[1.5], [2.5], [3.5]]), dtype=fx.float16)
    assert c.dtype == fx.float16 and c.tolist() == b.tolist()
    assert fx.full(2, 7, dtype=fx.int8).dtype == fx.int8


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_zeros_like_ones_like(dtype, rng):
    x_np = rand(rng, (3, 2), dtype)
    x = to_fx(x_np, dtype)
    for fn, ref in [(fx.zeros_like, np.zeros_like), (fx.ones_like, np.ones_like)]:
        out = fn(x)
        assert out.dtype == x.dtype
        assert_close(out, ref(x_np), dtype)
        t = fn(x.T)
        assert t.shape == (2, 3)
    assert fx.zeros_like(fx.array(1.5)).shape == ()


# --------------------------------------------------------------------------
# arange / linspace
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,expected_dtype",
    [
        ((5,), "int32"),
        ((0,), "int32"),
        ((2, 9), "int32"),
        ((1, 10, 3), "int32"),
        ((10, 0, -3), "int32"),
        ((-5, 5, 2), "int32"),
        ((5, 2), "int32"),  # empty
        ((5.0,), "float32"),
        ((0, 1, 0.1), "float32"),
        ((0.5, 3), "float32"),
        ((1, 2.5, 0.5), "float32"),
        ((3.0, -1.0, -0.5), "float32"),
    ],
    ids=str,
)
def test_arange(args, expected_dtype):
    a = fx.arange(*args)
    assert a.dtype == fxd(expected_dtype)
    ref = np.arange(*args)
    assert a.shape == ref.shape
    assert_close(a, ref, expected_dtype)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float16", "bfloat16",
                                   "float32", "float64"])
def test_arange_with_dtype(dtype):
    a = fx.arange(0, 10, 2, dtype=fxd(dtype))
    assert a.dtype == fxd(dtype)
    assert_close(a, np.arange(0, 10, 2), dtype)
    b = fx.arange(3, 7, dtype=fxd(dtype))
    assert_close(b, np.arange(3, 7), dtype)


def test_arange_float64_precision():
    a = fx.arange(0.0, 1.0, 0.1, dtype=fx.float64)
    assert_close(a, np.arange(0.0, 1.0, 0.1), "float64")


@pytest.mark.parametrize(
    "start,stop,num", [(0, 1, 5), (0.0, 10.0, 50), (-1, 1, 2), (3, 3, 4), (5, 1, 9),
                       (0, 1, 1), (0, 1, 0)]
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_linspace(start, stop, num, dtype):
    a = fx.linspace(start, stop, num, dtype=fxd(dtype))
    assert a.dtype == fxd(dtype)
    # MLX itself computes linspace in float32 and casts, so float64 results are
    # only required to float32 accuracy.
    rtol = 1e-6 if dtype == "float64" else None
    assert_close(a, np.linspace(start, stop, num), dtype, rtol=rtol, atol=rtol)


def test_linspace_defaults():
    a = fx.linspace(0, 1)
    assert a.dtype == fx.float32
    assert a.shape == (50,)
    assert_close(a, np.linspace(0, 1), "float32")
    assert a[0].item() == 0.0
    assert a[-1].item() == pytest.approx(1.0)


# --------------------------------------------------------------------------
# eye / identity
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n,m,k", [(3, None, 0), (3, 4, 0), (4, 3, 1), (4, None, -2), (3, 5, 4), (2, 2, -3),
              (1, None, 0), (0, None, 0), (3, 0, 0)]
)
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool_", "float16", "bfloat16",
                                   "complex64"])
def test_eye(n, m, k, dtype):
    a = fx.eye(n, m, k, dtype=fxd(dtype))
    assert_close(a, np.eye(n, m, k), dtype)
    b = fx.eye(n, m=m, k=k, dtype=fxd(dtype))
    assert_close(b, np.eye(n, m, k), dtype)


def test_eye_identity_defaults():
    assert fx.eye(3).dtype == fx.float32
    assert_close(fx.eye(3), np.eye(3), "float32")
    i = fx.identity(4)
    assert i.dtype == fx.float32
    assert_close(i, np.identity(4), "float32")
    assert_close(fx.identity(2, dtype=fx.int64), np.identity(2), "int64")
    assert_close(fx.identity(3, fx.uint8), np.identity(3), "uint8")


def test_created_arrays_roundtrip_numpy():
    a = fx.arange(12).reshape(3, 4)
    assert np.array_equal(to_np(a), np.arange(12).reshape(3, 4))
