"""NumPy interop (buffer protocol), memoryview, tolist, item, repr."""

import numpy as np
import pytest

import ferrox as fx
from conftest import (
    ALL_DTYPES,
    INTS,
    NP,
    cast_ref,
    fxd,
    rand,
    to_fx,
)

BUFFER_DTYPES = [d for d in ALL_DTYPES if d != "bfloat16"]


# --------------------------------------------------------------------------
# buffer protocol / np.array
# --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (0,), (4,), (2, 3), (2, 0, 3), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("dtype", BUFFER_DTYPES)
def test_np_array_roundtrip(dtype, shape, rng):
    x_np = rand(rng, shape, dtype)
    x = to_fx(x_np, dtype)
    out = np.array(x)
    assert out.dtype == NP[dtype]
    assert out.shape == shape
    assert np.array_equal(out, x_np)
    assert np.array_equal(np.asarray(x), x_np)


@pytest.mark.parametrize("dtype", BUFFER_DTYPES)
@pytest.mark.parametrize(
    "view",
    ["transposed", "negstep", "sliced", "broadcast", "expand", "lazy_op"],
)
def test_np_array_of_views(dtype, view, rng):
    base = rand(rng, (4, 6), dtype)
    x = to_fx(base, dtype)
    ops = {
        "transposed": (lambda a: a.T, lambda a: a.T),
        "negstep": (lambda a: a[::-1, ::-2], lambda a: a[::-1, ::-2]),
        "sliced": (lambda a: a[1:3, 2:5], lambda a: a[1:3, 2:5]),
        "broadcast": (lambda a: fx.broadcast_to(a[:1], (3, 6)),
                      lambda a: np.broadcast_to(a[:1], (3, 6))),
        "expand": (lambda a: fx.expand_dims(a.T, 1), lambda a: np.expand_dims(a.T, 1)),
        "lazy_op": (lambda a: fx.where(a == a, a, a), lambda a: a),
    }
    fx_view, np_view = ops[view]
    out = np.array(fx_view(x))
    ref = np_view(base)
    assert out.dtype == NP[dtype]
    assert out.shape == ref.shape
    assert np.array_equal(out, ref)


def test_np_array_is_independent_copy():
    x = fx.array([1.0, 2.0, 3.0])
    a = np.array(x)
    a[0] = 50.0
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_numpy_ufunc_on_fx_array(rng):
    x_np = rand(rng, (3, 4), "float32")
    x = to_fx(x_np, "float32")
    assert np.allclose(np.asarray(x) * 2, x_np * 2)
    assert np.allclose(np.sum(np.asarray(x.T)), x_np.sum())


def test_bfloat16_via_float32(rng):
    x_np = rand(rng, (3, 4), "bfloat16")
    x = to_fx(x_np, "bfloat16")
    assert x.dtype == fx.bfloat16
    assert np.array_equal(np.array(x.astype(fx.float32)), x_np)


# --------------------------------------------------------------------------
# memoryview
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", BUFFER_DTYPES)
def test_memoryview(dtype, rng):
    x_np = rand(rng, (2, 3), dtype)
    x = to_fx(x_np, dtype)
    m = memoryview(x)
    assert m.shape == (2, 3)
    assert m.ndim == 2
    assert m.itemsize == NP[dtype].itemsize
    assert m.nbytes == x.nbytes
    assert np.asarray(m).dtype == NP[dtype]
    assert np.array_equal(np.asarray(m), x_np)


def test_memoryview_tolist_and_scalar():
    m = memoryview(fx.array([1, 2, 3], dtype=fx.int32))
    assert m.tolist() == [1, 2, 3]
    assert np.dtype(m.format) == np.int32
    s = memoryview(fx.array(2.5))
    assert s.shape == ()
    assert np.asarray(s) == 2.5


# --------------------------------------------------------------------------
# tolist / item
# --------------------------------------------------------------------------


PY_TYPE = {"bool_": bool, "complex64": complex}
PY_TYPE.update({d: int for d in INTS})
PY_TYPE.update({d: float for d in ["float16", "bfloat16", "float32", "float64"]})


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (2, 1, 2), (2, 0)], ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_tolist(dtype, shape, rng):
    x_np = rand(rng, shape, dtype)
    x = to_fx(x_np, dtype)
    out = x.tolist()
    ref = cast_ref(x_np, dtype).astype(NP[dtype] if dtype != "bfloat16" else np.float32)
    assert out == ref.tolist()

    def leaves(v):
        if isinstance(v, list):
            for e in v:
                yield from leaves(e)
        else:
            yield v

    for leaf in leaves(out):
        assert type(leaf) is PY_TYPE[dtype]


def test_tolist_of_views(rng):
    x_np = rand(rng, (3, 4), "int32")
    x = to_fx(x_np, "int32")
    assert x.T.tolist() == x_np.T.tolist()
    assert x[::-1, 1::2].tolist() == x_np[::-1, 1::2].tolist()
    assert fx.broadcast_to(x[0], (2, 4)).tolist() == [x_np[0].tolist()] * 2


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_item(dtype, rng):
    x_np = rand(rng, (), dtype, "positive")
    x = to_fx(x_np, dtype)
    v = x.item()
    assert type(v) is PY_TYPE[dtype]
    assert v == cast_ref(x_np, dtype).item()
    # size-1 arrays of any rank
    y = to_fx(x_np.reshape(1, 1), dtype)
    assert y.item() == v


def test_item_requires_size_one():
    with pytest.raises(ValueError):
        fx.array([1, 2]).item()


def test_item_values():
    assert fx.array(3).item() == 3
    assert fx.array(-2.5).item() == -2.5
    assert fx.array(True).item() is True
    assert fx.array(1 - 1j).item() == 1 - 1j
    assert fx.array(2**31 - 1).item() == 2**31 - 1
    assert fx.array(3, dtype=fx.uint64).item() == 3


def test_float64_scalar_keeps_double_precision():
    assert fx.array(0.1, dtype=fx.float64).item() == 0.1
    assert fx.array([0.1, 1e-300], dtype=fx.float64).tolist() == [0.1, 1e-300]


# --------------------------------------------------------------------------
# repr
# --------------------------------------------------------------------------


def test_repr_exact_simple_cases():
    assert repr(fx.array([1, 2, 3])) == "array([1, 2, 3], dtype=int32)"
    assert repr(fx.array(1.5)) == "array(1.5, dtype=float32)"
    assert repr(fx.array([True, False])) == "array([True, False], dtype=bool)"
    assert repr(fx.array(7)) == "array(7, dtype=int32)"
    assert repr(fx.array(True)) == "array(True, dtype=bool)"


def test_repr_2d():
    r = repr(fx.array([[1, 2], [3, 4]]))
    assert r.startswith("array(")
    assert r.endswith("dtype=int32)")
    assert "\n" in r
    for n in "1234":
        assert n in r


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_repr_every_dtype(dtype):
    x = fx.array([[0, 1], [1, 0]]).astype(fxd(dtype))
    r = repr(x)
    assert r.startswith("array(")
    dname = "bool" if dtype == "bool_" else dtype
    assert r.endswith(f"dtype={dname})")
    assert str(x)  # str works too


def test_repr_views_and_empty():
    x = fx.arange(6).reshape(2, 3)
    r = repr(x.T)
    assert r.startswith("array(") and r.endswith("dtype=int32)")
    assert "5" in r
    e = repr(fx.zeros((0, 3)))
    assert e.startswith("array(") and e.endswith("dtype=float32)")
    # repr of an unevaluated array evaluates it
    y = fx.array([1, 2]) + 1
    assert repr(y) == "array([2, 3], dtype=int32)"


def test_float_repr_contains_values():
    r = repr(fx.array([0.5, -2.25], dtype=fx.float64))
    assert "0.5" in r and "-2.25" in r and r.endswith("dtype=float64)")
