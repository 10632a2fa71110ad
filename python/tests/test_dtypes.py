"""Dtype objects and conversion (astype)."""

import numpy as np
import pytest

import ferrox as fx
from conftest import (
    ALL_DTYPES,
    FLOATS,
    INTS,
    NP,
    SIGNED,
    SIZES,
    assert_close,
    cast_ref,
    fxd,
    rand,
    round_bf16,
    to_fx,
)


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_dtype_objects(name):
    d = fxd(name)
    assert d.size == SIZES[name]
    # like MLX (`mlx.core.bool`), the bool dtype prints without the underscore
    assert repr(d) == f"ferrox.{name.rstrip('_')}"
    assert d == fxd(name)
    others = [fxd(o) for o in ALL_DTYPES if o != name]
    assert all(d != o for o in others)


def test_dtypes_hashable():
    s = {fxd(n) for n in ALL_DTYPES}
    assert len(s) == len(ALL_DTYPES)
    assert fx.float32 in s


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_array_dtype_attributes(name):
    a = fx.zeros((2, 3, 4), dtype=fxd(name))
    assert a.dtype == fxd(name)
    assert a.itemsize == SIZES[name]
    assert a.size == 24
    assert a.ndim == 3
    assert a.nbytes == 24 * SIZES[name]
    assert isinstance(a.shape, tuple)
    assert a.shape == (2, 3, 4)
    assert len(a) == 2


@pytest.mark.parametrize("dst", ALL_DTYPES)
@pytest.mark.parametrize("src", ALL_DTYPES)
def test_astype_all_pairs_exact_values(src, dst, rng):
    # values 0..5 are exactly representable in every dtype
    x_np = rng.integers(0, 6, size=(3, 4))
    if src == "bool_":
        x_np = x_np > 2
    # (NP maps bfloat16 to float32, which holds these values exactly)
    x = to_fx(x_np.astype(NP[src]), src)
    expected = x_np.astype(NP[dst])
    for out in (x.astype(fxd(dst)), fx.astype(x, fxd(dst))):
        assert_close(out, expected, dst, rtol=0, atol=0)
    # and through a non-contiguous view
    out_t = x.T.astype(fxd(dst))
    assert_close(out_t, expected.T, dst, rtol=0, atol=0)


@pytest.mark.parametrize("dst", SIGNED + ["float16", "bfloat16", "float64", "complex64"])
def test_astype_from_float32_negative_and_fractional(dst, rng):
    x_np = rng.uniform(-5.9, 5.9, size=(4, 5)).astype(np.float32)
    x = to_fx(x_np, "float32")
    out = x.astype(fxd(dst))
    if dst in SIGNED:
        expected = np.trunc(x_np).astype(NP[dst])  # C cast: toward zero
        assert_close(out, expected, dst)
    else:
        assert_close(out, x_np.astype(np.float64), dst)


def test_astype_to_bool_is_nonzero(rng):
    x_np = np.array([0.0, -0.0, 1.0, -2.5, 0.25, np.inf, np.nan], dtype=np.float32)
    out = to_fx(x_np, "float32").astype(fx.bool_)
    assert out.tolist() == (x_np != 0).tolist()
    i = fx.array([0, 3, -1]).astype(fx.bool_)
    assert i.tolist() == [False, True, True]


def test_astype_float32_to_bfloat16_rounds_to_nearest_even(rng):
    x_np = rng.normal(0, 100, size=(1000,)).astype(np.float32)
    # include exact ties: 1 + 2**-8 is halfway between two bfloat16 values
    ties = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 2**-8 * 257], np.float32)
    x_np = np.concatenate([x_np, ties])
    out = fx.array(x_np).astype(fx.bfloat16)
    assert out.dtype == fx.bfloat16
    back = np.array(out.astype(fx.float32))
    assert np.array_equal(back, round_bf16(x_np))


def test_astype_float32_to_float16_matches_numpy(rng):
    x_np = rng.normal(0, 100, size=(1000,)).astype(np.float32)
    x_np = np.concatenate([x_np, np.array([70000.0, -70000.0, 1e-8, 6e-5], np.float32)])
    out = fx.array(x_np).astype(fx.float16)
    with np.errstate(over="ignore"):  # 70000 -> inf is the point
        ref = x_np.astype(np.float16)
    assert np.array_equal(np.array(out), ref)


@pytest.mark.parametrize("src", ["float16", "bfloat16"])
def test_half_to_float_exact(src, rng):
    x_np = rand(rng, (50,), src)
    out = to_fx(x_np, src).astype(fx.float32)
    assert np.array_equal(np.array(out), x_np.astype(np.float32))


@pytest.mark.parametrize("src", INTS)
@pytest.mark.parametrize("dst", INTS)
def test_integer_narrowing_wraps(src, dst):
    vals = np.array([0, 1, 200, 255], dtype=np.uint8).astype(NP[src])
    if src in SIGNED:
        vals = np.array([0, 1, -1, 100, -100], dtype=np.int8).astype(NP[src])
    out = to_fx(vals, src).astype(fxd(dst))
    assert_close(out, vals.astype(NP[dst]), dst)


def test_astype_zero_dim_and_empty():
    a = fx.array(3).astype(fx.float16)
    assert a.dtype == fx.float16 and a.shape == () and a.item() == 3.0
    e = fx.zeros((0, 3), dtype=fx.int8).astype(fx.complex64)
    assert e.dtype == fx.complex64 and e.shape == (0, 3)


@pytest.mark.parametrize("dtype", FLOATS)
def test_astype_same_dtype(dtype, rng):
    x_np = rand(rng, (3, 3), dtype)
    x = to_fx(x_np, dtype)
    assert_close(x.astype(fxd(dtype)), cast_ref(x_np, dtype), dtype, rtol=0, atol=0)
