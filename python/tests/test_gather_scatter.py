"""Indexing with integer arrays: `a[idx]`, `a[idx] = v`, `a.at[idx].op(v)`,
take, take_along_axis, put_along_axis, slice and slice_update with array
starts — against NumPy (and MLX where installed), with finite-difference
gradients, vmap and the errors."""

import importlib.util

import numpy as np
import pytest

import ferrox as fx
from conftest import ALL_DTYPES, assert_close, f64, fd_check, rand, to_fx, to_np

HAVE_MLX = importlib.util.find_spec("mlx") is not None

A3 = np.arange(60).reshape(3, 4, 5)

# Keys as (ferrox key builder, NumPy key): arrays are built per call so the
# ferrox side gets ferrox arrays, lists stay lists.
I2 = np.array([2, 0])
KEYS = [
    ("list", [0, 2]),
    ("neg", np.array([-1, 0, -3])),
    ("2d", np.array([[0, 1], [2, 1]])),
    ("slice_then_array", (slice(1, None), np.array([0, 3]))),
    ("array_then_slice", (np.array([0, 2]), slice(None, None, -1))),
    ("two_arrays_adjacent", (slice(None), np.array([0, 3]), np.array([1, 4]))),
    ("two_arrays_apart", (np.array([0, 2]), slice(None), np.array([1, 4]))),
    ("int_and_array_apart", (0, slice(None), np.array([1, 2]))),
    ("int_and_array_adjacent", (0, np.array([1, 2]))),
    ("broadcast", (np.array([[0], [2]]), np.array([1, 3]))),
    ("ellipsis", (Ellipsis, np.array([4, 0]))),
    ("newaxis", (None, np.array([1]), slice(None), 2)),
    ("newaxis_between", (np.array([0, 1]), None, np.array([1, 2]))),
    ("scalar_array", np.array(1)),
    ("empty", np.array([], dtype=np.int64)),
]


def fx_key(key):
    if isinstance(key, tuple):
        return tuple(fx_key(k) for k in key)
    if isinstance(key, np.ndarray):
        return fx.array(key)
    return key


@pytest.mark.parametrize("name, key", KEYS, ids=[k[0] for k in KEYS])
def test_getitem_matches_numpy(name, key):
    a = fx.array(A3)
    got = a[fx_key(key)]
    want = A3[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.array(got), want)


@pytest.mark.parametrize("name, key", KEYS, ids=[k[0] for k in KEYS])
def test_getitem_of_views(name, key):
    base = np.arange(120).reshape(5, 4, 6)
    view = base[::2, :, 1:]  # (3, 4, 5), strided
    got = fx.array(base)[::2, :, 1:][fx_key(key)]
    np.testing.assert_array_equal(np.array(got), view[key])
    t = np.arange(60).reshape(5, 4, 3).transpose(2, 1, 0)  # (3, 4, 5), transposed
    got = fx.array(np.arange(60).reshape(5, 4, 3)).transpose(2, 1, 0)[fx_key(key)]
    np.testing.assert_array_equal(np.array(got), t[key])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_getitem_every_dtype(dtype, rng):
    x = rand(rng, (4, 6), dtype)
    a = to_fx(x, dtype)
    idx = np.array([[3, 0], [1, -1]])
    got = a[fx.array(idx), 1:5:2]
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(to_np(got), x[idx, 1:5:2])


def test_getitem_accepts_numpy_and_int_arrays_of_any_width():
    a = fx.array(A3)
    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        idx = np.array([2, 1], dtype=dt)
        np.testing.assert_array_equal(np.array(a[fx.array(idx)]), A3[idx])
        np.testing.assert_array_equal(np.array(a[idx]), A3[idx])


# Keys that repeat a position ("neg", "2d") leave which value lands there
# unspecified on the GPU, as in MLX; test_setitem_repeated_indices_take_one_value
# covers them.
SET_KEYS = [k for k in KEYS if k[0] not in ("neg", "2d")] + [
    ("2d_distinct", np.array([[2, 0, 1]])),
    ("basic_int", 1),
    ("basic_slices", (slice(None), slice(1, 3))),
    ("basic_steps", (slice(None, None, -1), 2, slice(0, 5, 2))),
    ("basic_newaxis", (None, 1)),
]


@pytest.mark.parametrize("name, key", SET_KEYS, ids=[k[0] for k in SET_KEYS])
def test_setitem_matches_numpy(name, key, rng):
    want = A3.astype(np.float32)
    shape = want[key].shape
    value = rng.normal(size=shape).astype(np.float32)
    want[key] = value
    a = fx.array(A3.astype(np.float32))
    a[fx_key(key)] = fx.array(value)
    np.testing.assert_array_equal(np.array(a), want)
    # A broadcast value and a Python scalar.
    want = A3.copy()
    want[key] = np.arange(shape[-1]) if shape and shape[-1] else 0
    a = fx.array(A3)
    a[fx_key(key)] = fx.array(np.arange(shape[-1])) if shape and shape[-1] else 0
    np.testing.assert_array_equal(np.array(a), want)
    a = fx.array(A3)
    a[fx_key(key)] = 7
    want = A3.copy()
    want[key] = 7
    np.testing.assert_array_equal(np.array(a), want)


def test_setitem_keeps_other_references_and_casts():
    a = fx.array([1, 2, 3])
    b = a
    old = a[:]
    a[fx.array([0, 2])] = 9.7
    assert a.dtype == fx.int32
    np.testing.assert_array_equal(np.array(a), [9, 2, 9])
    np.testing.assert_array_equal(np.array(b), [9, 2, 9])  # same Python object
    np.testing.assert_array_equal(np.array(old), [1, 2, 3])


def test_whole_array_keys_follow_mlx():
    # A bare `...` or `None` skips indexing in MLX: `a[...] = v` makes `a`
    # the value broadcast to its shape (the value's dtype included), and
    # `a.at[...].op(v)` is plain arithmetic, promoted as usual.
    a = fx.array([1, 2], dtype=fx.int32)
    a[...] = 2.5
    assert a.dtype == fx.float32 and np.array(a).tolist() == [2.5, 2.5]
    b = fx.array([[True, False]])
    b[None] = fx.array([3, 4])
    assert b.dtype == fx.int32 and b.shape == (1, 2) and np.array(b).tolist() == [[3, 4]]
    c = fx.array([1, 2], dtype=fx.int32)
    c[:] = 2.5  # a slice keeps the dtype
    assert c.dtype == fx.int32 and np.array(c).tolist() == [2, 2]
    x = fx.array([1, 2], dtype=fx.int32)
    want = {"add": [3.5, 4.5], "subtract": [-1.5, -0.5], "multiply": [2.5, 5.0], "divide": [0.4, 0.8],
            "maximum": [2.5, 2.5], "minimum": [1.0, 2.0]}  # fmt: skip
    for op, values in want.items():
        got = getattr(x.at[...], op)(2.5)
        assert got.dtype == fx.float32
        np.testing.assert_allclose(np.array(got), values, rtol=1e-6)
    got = x.at[None].add(1)
    assert got.dtype == fx.int32 and np.array(got).tolist() == [2, 3]
    with pytest.raises(ValueError):
        x[...] = fx.ones(3)
    if HAVE_MLX:
        import mlx.core as mx

        for key in (Ellipsis, None):
            for value in (2.5, -1, [7, 8], True):
                m, f = mx.array([True, False]), fx.array([True, False])
                m[key] = value if not isinstance(value, list) else mx.array(value)
                f[key] = value if not isinstance(value, list) else fx.array(value)
                assert str(m.dtype).split(".")[-1] == str(f.dtype).split(".")[-1], (key, value)
                assert np.array(m).tolist() == np.array(f).tolist()


def test_setitem_value_with_leading_unit_axes():
    c = fx.zeros((3, 4))
    c[1] = fx.ones((1, 1, 4))
    np.testing.assert_array_equal(np.array(c)[1], np.ones(4))
    with pytest.raises(ValueError):
        c[fx.array([0])] = fx.ones((2, 4))


def test_setitem_repeated_indices_take_one_value():
    a = fx.zeros(5)
    a[fx.array([1, 1, 2])] = fx.array([1.0, 2.0, 3.0])
    got = np.array(a)
    assert got[1] in (1.0, 2.0) and got[2] == 3.0 and got[[0, 3, 4]].tolist() == [0, 0, 0]


AT_OPS = [
    ("add", np.add),
    ("subtract", np.subtract),
    ("multiply", np.multiply),
    ("divide", np.divide),
    ("maximum", np.maximum),
    ("minimum", np.minimum),
]


@pytest.mark.parametrize("method, ufunc", AT_OPS)
def test_at_accumulates_repeats_like_ufunc_at(method, ufunc, rng):
    x = rng.uniform(0.5, 2.0, size=(6, 3)).astype(np.float32)
    idx = np.array([1, 4, 1, 1, 0])
    v = rng.uniform(0.5, 2.0, size=(5, 3)).astype(np.float32)
    want = x.copy()
    ufunc.at(want, idx, v)
    got = getattr(fx.array(x).at[fx.array(idx)], method)(fx.array(v))
    np.testing.assert_allclose(np.array(got), want, rtol=1e-6)
    # Basic keys and scalars too.
    want = x.copy()
    ufunc.at(want, (slice(1, 3), 2), np.float32(3.0))
    got = getattr(fx.array(x).at[1:3, 2], method)(3.0)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-6)


def test_at_update_takes_an_array_value_in_its_own_dtype():
    # MLX: an array value keeps its dtype until the update casts it into the
    # array's, so an int array divided by a float array takes the float
    # reciprocal first (1 / 0.4 = 2.5 -> 2); a Python scalar and a NumPy
    # array convert against the array's dtype first (as in MLX).
    x = fx.array(np.array([-9, 4, 7], dtype=np.int32))
    assert x.at[1:].divide(fx.array(np.float32(0.4))).tolist() == [-9, 8, 14]
    assert x.at[1:].divide(fx.array(np.float32(-1.0642))).tolist() == [-9, 0, 0]
    assert x.at[1:].divide(0.4).tolist() == [-9, 8, 14]
    assert x.at[1:].subtract(fx.array([0.6, 0.6])).tolist() == [-9, 4, 7]
    assert x.at[1:].multiply(fx.array([1.6, 1.6])).tolist() == [-9, 4, 7]
    got = x.at[1:].add(fx.array([2**33, 2**33], dtype=fx.int64))
    assert got.dtype == fx.int32 and got.tolist() == [-9, 4, 7]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_at_add_every_dtype(dtype, rng):
    x = rand(rng, (5, 2), dtype)
    v = rand(rng, (4, 2), dtype)
    idx = np.array([3, 0, 3, -1])
    got = to_fx(x, dtype).at[fx.array(idx)].add(to_fx(v, dtype))
    assert got.dtype == fxd_of(dtype)
    want = to_np(to_fx(x, dtype))
    if dtype == "bool_":
        np.logical_or.at(want, idx, to_np(to_fx(v, dtype)))
        np.testing.assert_array_equal(to_np(got), want)
    else:
        acc = want.astype(np.complex128 if dtype == "complex64" else np.float64)
        np.add.at(acc, idx, to_np(to_fx(v, dtype)).astype(acc.dtype))
        if dtype in ("float16", "bfloat16", "float32", "complex64"):
            assert_close(got, acc, dtype)
        else:
            np.testing.assert_array_equal(to_np(got), acc.astype(want.dtype) if dtype != "float64" else acc)


def fxd_of(dtype):
    return getattr(fx, dtype)


INDEX_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_at_many_repeats_every_index_dtype(index_dtype, rng, device):
    # More updates than the CPU kernel resolves at a time (1024) into few
    # targets; small integers keep float64 sums exact.
    n, m = 37, 5000
    idx = rng.integers(0 if index_dtype.startswith("u") else -n, n, size=m)
    v = rng.integers(-5, 6, size=m).astype(np.float64)
    fidx, fv, zeros = fx.array(idx.astype(index_dtype)), fx.array(v), fx.array(np.zeros(n))
    for method, ufunc in [("add", np.add), ("maximum", np.maximum), ("minimum", np.minimum)]:
        want = np.zeros(n)
        ufunc.at(want, idx, v)
        np.testing.assert_array_equal(np.array(getattr(zeros.at[fidx], method)(fv)), want)
    # Strided index and update views, and a broadcast scalar update.
    want = np.zeros(n)
    np.add.at(want, idx[::2], v[::-2])
    np.testing.assert_array_equal(np.array(zeros.at[fidx[::2]].add(fv[::-2])), want)
    want = np.zeros(n)
    np.add.at(want, idx, 1.0)
    np.testing.assert_array_equal(np.array(zeros.at[fidx].add(1.0)), want)
    if device == "cpu":
        # Assignment: the last update of each target wins (on the CPU).
        want = np.zeros(n)
        want[idx] = v
        got = fx.array(np.zeros(n))
        got[fidx] = fv
        np.testing.assert_array_equal(np.array(got), want)


def test_at_add_rows_with_repeats(rng):
    # Whole-row slices (several elements per index), more than a chunk of indices.
    x = rng.integers(-3, 4, size=(9, 6)).astype(np.float32)
    idx = rng.integers(-9, 9, size=(40, 70))
    v = rng.integers(-3, 4, size=(40, 70, 6)).astype(np.float32)
    want = x.copy()
    np.add.at(want, idx, v)
    np.testing.assert_array_equal(np.array(fx.array(x).at[fx.array(idx)].add(fx.array(v))), want)


@pytest.mark.parametrize("index_dtype", ["uint8", "int16", "int64"])
def test_large_gathers_match_numpy(index_dtype, rng):
    # Outputs large enough to be split over threads, one and several
    # elements per index, contiguous and strided indices.
    a = rng.normal(size=(120, 8)).astype(np.float32)
    idx = rng.integers(0 if index_dtype == "uint8" else -120, 120, size=60000).astype(index_dtype)
    fa, fidx = fx.array(a), fx.array(idx)
    np.testing.assert_array_equal(np.array(fx.take(fa, fidx)), np.take(a, idx))
    np.testing.assert_array_equal(np.array(fa[fidx]), a[idx])
    np.testing.assert_array_equal(np.array(fa[fidx[::3], fidx[1::3] % 8]), a[idx[::3], idx[1::3] % 8])


def test_out_of_range_index_in_a_late_chunk_raises(device):
    if device != "cpu":
        pytest.skip("the GPU reads zeros for out-of-range indices (docs/gpu-notes.md)")
    idx = np.zeros(5000, dtype=np.int32)
    idx[3000] = 37
    a = fx.array(np.zeros(37, dtype=np.float32))
    with pytest.raises(IndexError, match="Index 37 is out of bounds"):
        fx.eval(a.at[fx.array(idx)].add(1.0))
    with pytest.raises(IndexError, match="Index 37 is out of bounds"):
        fx.eval(fx.take(a, fx.array(np.tile(idx, 20))))
    # With several index arrays, the first bad index of the first array is named.
    b = fx.zeros((4, 5))
    with pytest.raises(IndexError, match="Index 7 is out of bounds for axis 0"):
        fx.eval(b[fx.array([0, 7]), fx.array([6, 0])])
    with pytest.raises(IndexError, match="Index 7 is out of bounds for axis 0"):
        fx.eval(b.at[fx.array([0, 7]), fx.array([6, 0])].add(1.0))


# --------------------------------------------------------------------------
# take, take_along_axis, put_along_axis
# --------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1, -3])
@pytest.mark.parametrize("idx", [np.array([1, 0, -1]), np.array([[2, 0], [1, 1]]), np.array(2), np.array([], dtype=np.int32)])
def test_take_matches_numpy(axis, idx):
    a = fx.array(A3)
    got = fx.take(a, fx.array(idx), axis=axis)
    want = np.take(A3, idx, axis=axis)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.array(got), want)


def test_take_int_index_and_views():
    a = fx.array(A3)
    assert fx.take(a, 7).item() == 7
    t = fx.array(A3).transpose(2, 0, 1)[:, ::2]
    np.testing.assert_array_equal(np.array(fx.take(t, fx.array([0, -1]), axis=2)), np.take(A3.transpose(2, 0, 1)[:, ::2], [0, -1], axis=2))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, None])
def test_take_along_axis_matches_numpy(axis, rng):
    x = rng.normal(size=(3, 4, 5)).astype(np.float32)
    if axis is None:
        idx = rng.integers(-60, 60, size=(7,))
    else:
        shape = [3, 4, 5]
        shape[axis] = 6
        shape[(axis + 1) % 3] = 1  # broadcast along another axis
        idx = rng.integers(-x.shape[axis], x.shape[axis], size=shape)
    got = fx.take_along_axis(fx.array(x), fx.array(idx), axis=axis)
    want = np.take_along_axis(x if axis is not None else x.ravel(), idx, axis=axis if axis is not None else 0)
    np.testing.assert_array_equal(np.array(got), want)


@pytest.mark.parametrize(
    "shape,idx_shape,axis", [((0, 5), (0, 1), 1), ((0, 5), (0, 3), -1), ((2, 3), (2, 0), 1), ((2, 0), (0, 0), 0)]
)
def test_take_along_axis_with_empty_results(shape, idx_shape, axis):
    """An empty result is returned, as MLX and NumPy return it, even when
    `a` has an empty axis besides the one taken along."""
    x = np.zeros(shape, np.float32)
    idx = np.zeros(idx_shape, np.int32)
    got = fx.take_along_axis(fx.array(x), fx.array(idx), axis=axis)
    assert got.shape == np.take_along_axis(x, idx, axis=axis).shape
    assert got.dtype == fx.float32


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_put_along_axis_matches_numpy(axis, rng):
    x = rng.normal(size=(4, 6)).astype(np.float32)
    if axis is None:
        idx = np.array([5, 0, 23])
        values = np.array([1.0, 2.0, 3.0], np.float32)
    else:
        n = x.shape[axis]
        idx = np.stack([rng.permutation(n)[:2] for _ in range(x.shape[1 - (axis % 2)])], axis=1 - (axis % 2))
        values = rng.normal(size=idx.shape).astype(np.float32)
    want = x.copy()
    if axis is None:
        want.ravel()[idx] = values
    else:
        np.put_along_axis(want, idx, values, axis=axis)
    got = fx.put_along_axis(fx.array(x), fx.array(idx), fx.array(values), axis=axis)
    np.testing.assert_array_equal(np.array(got), want)
    # A scalar value broadcasts.
    got = fx.put_along_axis(fx.array(x), fx.array(idx), 5.0, axis=axis)
    want = x.copy()
    if axis is None:
        want.ravel()[idx] = 5.0
    else:
        np.put_along_axis(want, idx, 5.0, axis=axis)
    np.testing.assert_array_equal(np.array(got), want)


def test_dynamic_slice_and_slice_update():
    a = fx.array(A3)
    got = fx.slice(a, fx.array([1, 2]), [0, 1], [2, 2, 5])
    np.testing.assert_array_equal(np.array(got), A3[1:3, 2:4, :])
    got = fx.slice(a, fx.array([-2]), [2], (3, 4, 2))
    np.testing.assert_array_equal(np.array(got), A3[:, :, 3:5])
    z = fx.zeros((3, 3))
    got = fx.slice_update(z, fx.ones((2, 2)), fx.array([1, 1]), [0, 1])
    want = np.zeros((3, 3))
    want[1:, 1:] = 1
    np.testing.assert_array_equal(np.array(got), want)
    got = fx.slice_update(fx.array(A3), fx.array([[-1, -2]]), fx.array([2, 3]), [0, 2])
    want = A3.copy()
    want[2:3, 0:1, 3:5] = [[-1, -2]]  # the update's shape is the window's (MLX)
    np.testing.assert_array_equal(np.array(got), want)


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------


def test_errors():
    a = fx.array(A3)
    with pytest.raises(ValueError, match="integral"):
        a[fx.array([0.5])]
    with pytest.raises(ValueError, match="boolean"):
        a[fx.array([True, False, True])]
    with pytest.raises(ValueError, match="broadcast"):
        a[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError):
        fx.take(a, fx.array([1]), axis=3)
    with pytest.raises(ValueError, match="integral"):
        fx.take(a, fx.array([1.0]))
    with pytest.raises(ValueError, match="dimension"):
        fx.take_along_axis(a, fx.array([1]), axis=0)
    with pytest.raises(IndexError):
        fx.take_along_axis(a, fx.array([[[1]]]), axis=5)
    with pytest.raises(ValueError):
        fx.slice(a, fx.array([1, 2]), [0, 1], [2, 2])
    with pytest.raises(ValueError):
        fx.slice(a, fx.array([1]), [0, 1], [2, 2, 5])
    with pytest.raises(ValueError):
        fx.slice(a, fx.array([1, 2]), [0, 1], [4, 2, 5])


def test_out_of_range_indices_raise_on_the_cpu(device):
    if device != "cpu":
        pytest.skip("the GPU reads zeros for out-of-range indices (docs/gpu-notes.md)")
    a = fx.array(A3)
    for bad in (lambda: a[fx.array([3])], lambda: a[:, fx.array([-5])], lambda: fx.take(a, fx.array([60])),
                lambda: fx.slice(a, fx.array([2]), [0], [2, 4, 5])):
        with pytest.raises(IndexError):
            fx.eval(bad())
    with pytest.raises(IndexError):
        b = fx.zeros(3)
        b[fx.array([3])] = 1.0
        fx.eval(b)


def test_out_of_range_indices_on_the_gpu_read_zeros_and_drop_updates(device):
    if device != "gpu":
        pytest.skip("GPU behaviour")
    a = fx.array(A3)
    np.testing.assert_array_equal(np.array(a[fx.array([3, 1])])[0], np.zeros((4, 5)))
    b = fx.zeros(3)
    b[fx.array([3, 1])] = 1.0
    np.testing.assert_array_equal(np.array(b), [0, 1, 0])


# --------------------------------------------------------------------------
# derivatives and vmap
# --------------------------------------------------------------------------


IDX = np.array([[2, 0, 2], [1, 1, -1]])
FUNCS = {
    "getitem": lambda v: v[fx.array(IDX)],
    "getitem_mixed": lambda v: v[fx.array([0, 2, 0]), 1:],
    "take": lambda v: fx.take(v, fx.array(IDX), axis=1),
    "take_along_axis": lambda v: fx.take_along_axis(v, fx.array([[1, 1], [0, 2], [3, 3]]), axis=1),
    "slice": lambda v: fx.slice(v, fx.array([1]), [1], [3, 2]),
    "setitem_value": lambda v: _setitem(fx.zeros((3, 4), dtype=fx.float64), v[:, :2] * 2.0),
    "setitem_base": lambda v: _setitem(v * 1.0, fx.ones((3, 2), dtype=fx.float64)),
    "at_add": lambda v: (v * 1.0).at[fx.array([0, 0, 2])].add(v[fx.array([1, 2, 0])] ** 2),
    "at_max": lambda v: v.at[fx.array([0, 2])].maximum(v[fx.array([1, 0])] * 0.9),
    "at_min": lambda v: v.at[fx.array([1, 2])].minimum(v[fx.array([0, 0])] * 1.1),
    "put_along_axis": lambda v: fx.put_along_axis(v, fx.array([[0], [3], [1]]), v[:, 2:3] ** 2, axis=1),
    "slice_update": lambda v: fx.slice_update(v, v[:2, :2] * 3.0, fx.array([1, 2]), [0, 1]),
}


def _setitem(base, value):
    base[fx.array([2, 0]), 1:3] = value[:2]
    return base


@pytest.mark.parametrize("name", list(FUNCS))
def test_gradients(name, rng):
    x = rng.permutation(12).reshape(3, 4) * 0.37 + 0.5  # distinct values: no ties for max/min
    fd_check(FUNCS[name], x, rng)


def test_scatter_prod_gradient():
    # MLX has none (its slice updates multiply with one); ferrox's is exact,
    # repeated indices and zero updates included (test_mlx_semantics.py).
    g = fx.grad(lambda v: v.at[fx.array([0, 0])].multiply(fx.array([2.0, 3.0])).sum())(fx.array([1.0, 2.0]))
    np.testing.assert_array_equal(np.array(g), [6.0, 1.0])


def test_grad_of_gather_accumulates_repeats():
    g = fx.grad(lambda v: v[fx.array([1, 1, 1, 0])].sum())(fx.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(np.array(g), [1.0, 3.0, 0.0])


def test_vmap_getitem_and_take(rng):
    x = rng.normal(size=(4, 5, 6)).astype(np.float32)
    idx = rng.integers(0, 5, size=(4, 3))
    # batched x, shared indices
    got = fx.vmap(lambda v: fx.take(v, fx.array(idx[0]), axis=0))(fx.array(x))
    np.testing.assert_array_equal(np.array(got), np.stack([x[b][idx[0]] for b in range(4)]))
    # shared x, batched indices
    got = fx.vmap(lambda i: fx.array(x[0])[i])(fx.array(idx))
    np.testing.assert_array_equal(np.array(got), np.stack([x[0][idx[b]] for b in range(4)]))
    # both batched, along another axis
    got = fx.vmap(lambda v, i: fx.take(v, i, axis=1), in_axes=(1, 0))(fx.array(x.transpose(1, 0, 2)), fx.array(idx))
    np.testing.assert_array_equal(np.array(got), np.stack([x[b][:, idx[b]] for b in range(4)]))


def test_vmap_scatter(rng):
    x = rng.normal(size=(4, 5)).astype(np.float32)
    v = rng.normal(size=(4, 3)).astype(np.float32)
    idx = np.array([[0, 1, 1], [4, 4, 4], [2, 3, 0], [1, 0, 2]])
    got = fx.vmap(lambda a, i, u: a.at[i].add(u))(fx.array(x), fx.array(idx), fx.array(v))
    want = x.copy()
    for b in range(4):
        np.add.at(want[b], idx[b], v[b])
    np.testing.assert_allclose(np.array(got), want, rtol=1e-6)
    # unbatched base, batched updates
    got = fx.vmap(lambda u: fx.zeros(5).at[fx.array([1, 3, 1])].add(u))(fx.array(v))
    want = np.zeros((4, 5), np.float32)
    for b in range(4):
        np.add.at(want[b], [1, 3, 1], v[b])
    np.testing.assert_allclose(np.array(got), want, rtol=1e-6)


if HAVE_MLX:
    import mlx.core as mx

    # MLX differs from NumPy on a 0-d array key and reads garbage for empty ones.
    MLX_KEYS = [k for k in KEYS if k[0] not in ("scalar_array", "empty")]

    @pytest.mark.parametrize("name, key", MLX_KEYS, ids=[k[0] for k in MLX_KEYS])
    def test_getitem_matches_mlx(name, key):
        def mx_key(k):
            if isinstance(k, tuple):
                return tuple(mx_key(e) for e in k)
            return mx.array(k) if isinstance(k, np.ndarray) else k

        want = np.array(mx.array(A3)[mx_key(key)])
        np.testing.assert_array_equal(np.array(fx.array(A3)[fx_key(key)]), want)

    def test_put_along_axis_and_at_match_mlx(device):
        base = np.zeros((2, 3), np.float32)
        idx = np.array([[1, 1]])
        vals = np.array([[5.0, 6.0]], np.float32)
        want = np.array(mx.put_along_axis(mx.array(base), mx.array(idx), mx.array(vals), axis=1))
        got = fx.put_along_axis(fx.array(base), fx.array(idx), fx.array(vals), axis=1)
        if device == "cpu":  # the last of repeated assignments wins
            np.testing.assert_array_equal(np.array(got), want)
        else:  # one of them wins, unspecified which (as on MLX's GPUs)
            assert np.isin(np.array(got)[:, 1], [5.0, 6.0]).all()
        b = mx.arange(6).reshape(2, 3)
        want = np.array(b.at[mx.array([0, 0])].subtract(1))
        got = fx.arange(6).reshape(2, 3).at[fx.array([0, 0])].subtract(1)
        np.testing.assert_array_equal(np.array(got), want)


# --------------------------------------------------------------------------
# as_strided
# --------------------------------------------------------------------------


def test_as_strided_matches_numpy():
    x = np.arange(12, dtype=np.float32)
    a = fx.array(x)
    for shape, strides, offset in [((3, 3), (1, 1), 0), ((4, 3), (3, 1), 0), ((2, 2), (-1, 4), 3), ((3,), (0,), 5), ((0, 4), (1, 1), 0)]:
        got = fx.as_strided(a, shape, strides, offset)
        want = np.lib.stride_tricks.as_strided(x[offset:] if min(strides, default=0) >= 0 else x, shape=shape, strides=[s * 4 for s in strides]) if min(strides, default=0) >= 0 else np.array([[x[offset + i * strides[0] + j * strides[1]] for j in range(shape[1])] for i in range(shape[0])])
        np.testing.assert_array_equal(np.array(got), want)
    # Of a transposed view: strides count in its row-major order.
    t = fx.array(x.reshape(3, 4)).T
    np.testing.assert_array_equal(np.array(fx.as_strided(t, (2, 3), (3, 1))), x.reshape(3, 4).T.ravel()[:6].reshape(2, 3))
    np.testing.assert_array_equal(np.array(fx.as_strided(a)), x)
    with pytest.raises(ValueError):
        fx.as_strided(a, (4, 4), (4, 1))
    with pytest.raises(ValueError):
        fx.as_strided(a, (2,), (-1,), 0)


def test_as_strided_gradient_and_vmap(rng):
    fd_check(lambda v: fx.as_strided(v, (3, 4), (2, 1), 1) * 1.0, rng.normal(size=(3, 4)), rng)
    x = rng.normal(size=(3, 8)).astype(np.float32)
    got = fx.vmap(lambda v: fx.as_strided(v, (3, 2), (2, 1)))(fx.array(x))
    want = np.stack([np.lib.stride_tricks.as_strided(x[b], (3, 2), (8, 4)) for b in range(3)])
    np.testing.assert_array_equal(np.array(got), want)


# --------------------------------------------------------------------------
# boolean masks in assignments (MLX's masked_scatter)
# --------------------------------------------------------------------------


def test_mask_assignment_matches_mlx_semantics():
    a = fx.arange(9).reshape(3, 3)
    a[a > 4] = fx.array([1, 2, 3, 4])
    np.testing.assert_array_equal(np.array(a), [[0, 1, 2], [3, 4, 1], [2, 3, 4]])
    b = fx.arange(9).reshape(3, 3)
    b[fx.array([True, False, True])] = fx.array([7, 8, 9])  # one block, repeated
    np.testing.assert_array_equal(np.array(b), [[7, 8, 9], [3, 4, 5], [7, 8, 9]])
    b = fx.arange(9).reshape(3, 3)
    b[[True, False, True]] = fx.array([[1, 2, 3], [4, 5, 6]])  # consecutive blocks
    np.testing.assert_array_equal(np.array(b), [[1, 2, 3], [3, 4, 5], [4, 5, 6]])
    b = fx.arange(9).reshape(3, 3)
    b[np.array([True, False, True])] = fx.arange(9).reshape(3, 3) * 10  # extra values unused
    np.testing.assert_array_equal(np.array(b), [[0, 10, 20], [3, 4, 5], [30, 40, 50]])
    c = fx.arange(6).reshape(2, 3)
    c[c > 2] = 0
    np.testing.assert_array_equal(np.array(c), [[0, 1, 2], [0, 0, 0]])
    with pytest.raises(ValueError, match="mask"):
        c[fx.array([[True, False, True]])] = 1
    with pytest.raises(ValueError, match="broadcast"):
        c[fx.array([True, False])] = fx.array([7, 8])
    with pytest.raises(ValueError, match="boolean"):
        c[fx.array([True, False])]


def test_mask_assignment_gradient(rng):
    mask = fx.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])

    def f(v):
        out = v * 1.0
        out[mask] = v.reshape(-1)[3:9] ** 2 * 3.0  # six selected places
        return out

    fd_check(f, rng.normal(size=(3, 4)), rng)
