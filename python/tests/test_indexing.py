"""Basic indexing: ints, slices (negative steps too), None, Ellipsis, tuples."""

import numpy as np
import pytest

import ferrox as fx
from conftest import assert_close, cast_ref, rand, to_fx

S = slice  # shorthand for readable ids

INDICES_3D = [
    0,
    -1,
    3,
    (1, 2),
    (1, 2, 3),
    (-1, -2, -3),
    S(None),
    S(1, 3),
    S(None, None, -1),
    S(None, None, 2),
    S(3, 0, -1),
    S(-1, None, -2),
    S(10, None),
    S(-100, 100),
    S(2, 2),
    S(3, 1),
    (S(None), 1),
    (S(None), S(None), -1),
    (S(1, None, 2), S(None, None, -1), S(0, 5, 3)),
    (Ellipsis, 0),
    (Ellipsis, S(None, None, -2)),
    (0, Ellipsis),
    (1, Ellipsis, 2),
    (Ellipsis,),
    Ellipsis,
    None,
    (None, 0),
    (S(None), None, 1),
    (0, None, S(None), None),
    (Ellipsis, None),
    (None, Ellipsis, None),
    (-2, S(None, None, -1), None, S(1, -1)),
    (),
    (S(None, None, -3), S(-1, -5, -1), S(None, 1)),
]


def _id(ix):
    return repr(ix).replace("slice", "S").replace("Ellipsis", "...")


INDEX_DTYPES = ["bool_", "int8", "float16", "bfloat16", "int32", "float64", "complex64"]


@pytest.mark.parametrize("ix", INDICES_3D, ids=_id)
@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_index_3d(dtype, ix, rng):
    x_np = rand(rng, (4, 5, 6), dtype)
    x = to_fx(x_np, dtype)
    ref = x_np[ix]
    out = x[ix]
    assert_close(out, cast_ref(ref, dtype), dtype, rtol=0, atol=0)


@pytest.mark.parametrize("ix", INDICES_3D, ids=_id)
def test_index_of_transposed_and_sliced(ix, rng):
    base = rand(rng, (6, 5, 8), "float32")
    x_np = base.transpose(2, 0, 1)[1:5, ::-1, 1:]  # (4, 6, 4) non-contiguous
    x = fx.transpose(to_fx(base, "float32"), (2, 0, 1))[1:5, ::-1, 1:]
    assert_close(x[ix], x_np[ix], "float32", rtol=0, atol=0)
    # result feeds correctly into another op
    assert_close(x[ix] + 1, x_np[ix] + 1, "float32")


def test_index_of_broadcast(rng):
    base = rand(rng, (1, 4), "int32")
    x = fx.broadcast_to(to_fx(base, "int32"), (3, 4))
    x_np = np.broadcast_to(base, (3, 4))
    for ix in [1, (slice(None), 2), (slice(None, None, -1), slice(1, 3)), (None, -1)]:
        assert_close(x[ix], x_np[ix], "int32")


def test_index_returns_zero_dim():
    x = fx.array([[1, 2], [3, 4]])
    y = x[1, 0]
    assert isinstance(y, fx.array)
    assert y.shape == ()
    assert y.item() == 3
    assert x[-1][-1].item() == 4


def test_index_zero_dim_array():
    x = fx.array(5.0)
    assert x[()].shape == ()
    assert x[...].item() == 5.0
    assert x[None].shape == (1,)
    assert x[None, ..., None].shape == (1, 1)


def test_index_empty_arrays():
    x = fx.zeros((0, 3))
    assert x[:, 1].shape == (0,)
    assert x[::-1].shape == (0, 3)
    y = fx.arange(5)
    assert y[3:1].shape == (0,)
    assert y[3:1].tolist() == []


@pytest.mark.parametrize("n", [1, 2, 7, 64, 1001])
@pytest.mark.parametrize("step", [1, 2, 3, -1, -2, -7, 100, -100])
def test_slice_1d_steps(n, step, rng):
    x_np = rand(rng, (n,), "int64")
    x = to_fx(x_np, "int64")
    for start, stop in [(None, None), (1, None), (None, -1), (-3, 2), (n - 1, 0), (0, n)]:
        ix = slice(start, stop, step)
        assert_close(x[ix], x_np[ix], "int64")


@pytest.mark.parametrize("ix", [4, -5, (0, 3), (0, -4), (1, 0, 9), (0, slice(None), 7)],
                         ids=str)
def test_index_out_of_range_raises(ix):
    x = fx.zeros((4, 3, 7))
    with pytest.raises(IndexError):
        x[ix]


def test_too_many_indices_raises():
    with pytest.raises(IndexError):
        fx.zeros((2, 2))[0, 0, 0]
    with pytest.raises(IndexError):
        fx.array(1.0)[0]


def test_iteration_over_first_axis(rng):
    x_np = rand(rng, (3, 2, 2), "float32")
    x = to_fx(x_np, "float32")
    rows = list(x)
    assert len(rows) == 3 == len(x)
    for r, r_np in zip(rows, x_np):
        assert_close(r, r_np, "float32")
    assert [v.item() for v in fx.array([4, 5, 6])] == [4, 5, 6]
    assert list(fx.zeros((0, 2))) == []
