"""sort / argsort / partition / argpartition / topk / median / searchsorted
against NumPy references in MLX's order (stable, NaN last, complex
lexicographic), MLX's results and errors (where MLX is installed),
finite-difference gradients, vmap and the error classes."""

import importlib.util

import numpy as np
import pytest

import ferrox as fx
from conftest import ALL_DTYPES, INTS, NP, assert_close, f64, fd_check, fxd, rand, round_bf16, to_fx, to_np

HAVE_MLX = importlib.util.find_spec("mlx") is not None
INEXACT = ["float16", "bfloat16", "float32", "float64", "complex64"]

# --------------------------------------------------------------------------
# references
# --------------------------------------------------------------------------


def _row_order(row):
    """MLX's stable order of a 1-D NumPy row: NaN last (in input order),
    complex lexicographic, -0.0 equal to 0.0."""
    if np.iscomplexobj(row):
        nan = np.isnan(row.real) | np.isnan(row.imag)
        re = np.where(nan, 0.0, row.real)
        im = np.where(nan, 0.0, row.imag)
        return np.lexsort((im, re, nan))
    return np.argsort(row, kind="stable")


def ref_argsort(x, axis):
    """Positions that sort NumPy `x` along `axis` (None: flattened)."""
    x = np.asarray(x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    moved = np.moveaxis(x, axis, -1)
    if moved.size == 0:
        return np.zeros(x.shape, dtype=np.uint32)
    n = moved.shape[-1]
    out = np.stack([_row_order(r) for r in moved.reshape(-1, n)])
    return np.moveaxis(out.reshape(moved.shape), -1, axis).astype(np.uint32)


def ref_sort(x, axis):
    x = np.asarray(x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    return np.take_along_axis(x, ref_argsort(x, axis).astype(np.int64), axis % max(x.ndim, 1))


def bits(a):
    """Bytes of each element (bit-exact comparison, -0.0 and NaN payloads)."""
    a = np.ascontiguousarray(a)
    return a.reshape(a.shape + (1,)).view(np.uint8)


def sort_data(rng, shape, dtype, special=True):
    """Random data with many ties and, for inexact dtypes, NaN, ±inf and ±0."""
    if dtype in INTS or dtype == "bool_":
        return rand(rng, shape, dtype)
    v = np.round(rng.normal(0.0, 3.0, size=shape)) * 0.5
    if special:
        pick = rng.random(shape)
        v = np.where(pick < 0.05, np.nan, v)
        v = np.where((pick >= 0.05) & (pick < 0.08), np.inf, v)
        v = np.where((pick >= 0.08) & (pick < 0.10), -np.inf, v)
        v = np.where((pick >= 0.10) & (pick < 0.14), -0.0, v)
    if dtype == "complex64":
        w = np.round(rng.normal(0.0, 1.0, size=shape))
        if special:
            w = np.where(rng.random(shape) < 0.05, np.nan, w)
        return (v + 1j * w).astype(np.complex64)
    if dtype == "bfloat16":
        return round_bf16(v.astype(np.float32))
    return v.astype(NP[dtype])


def check_sort(a, x, axis):
    """ferrox sort and argsort of `a` (holding NumPy data `x`) along `axis`."""
    idx = fx.argsort(a, axis=axis)
    assert idx.dtype == fx.uint32
    want_idx = ref_argsort(x, axis)
    assert idx.shape == want_idx.shape
    np.testing.assert_array_equal(np.array(idx), want_idx)
    got = fx.sort(a, axis=axis)
    assert got.dtype == a.dtype and got.shape == want_idx.shape
    want = ref_sort(x, axis)
    g = to_np(got)
    np.testing.assert_array_equal(bits(g.astype(want.dtype)), bits(want))


# --------------------------------------------------------------------------
# sort and argsort values
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_sort_every_dtype_and_axis(dtype, rng):
    x = sort_data(rng, (3, 4, 5), dtype)
    a = to_fx(x, dtype)
    for axis in (None, 0, 1, 2, -1, -2, -3):
        check_sort(a, x, axis)


def test_default_axis_is_last(rng):
    x = sort_data(rng, (3, 6), "float32")
    a = to_fx(x, "float32")
    np.testing.assert_array_equal(np.array(fx.argsort(a)), ref_argsort(x, -1))
    np.testing.assert_array_equal(np.array(fx.sort(a)), ref_sort(x, -1))


LAYOUTS = {
    "transposed": ((4, 3, 2), lambda m, x: m.transpose(x, (2, 1, 0))),
    "permuted": ((3, 2, 4), lambda m, x: m.transpose(x, (1, 0, 2))),
    "sliced": ((4, 6, 5), lambda m, x: x[::2, 1:4, :4]),
    "negstep": ((2, 3, 8), lambda m, x: x[::-1, :, ::-2]),
    "broadcast": ((1, 3, 4), lambda m, x: m.broadcast_to(x, (2, 3, 4))),
    "offset": ((3, 4, 5), lambda m, x: x[1:, 1:, 1:]),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", ["float32", "int16", "complex64", "bool_"])
def test_non_contiguous_inputs(layout, dtype, rng):
    base_shape, view = LAYOUTS[layout]
    base = sort_data(rng, base_shape, dtype)
    x, a = view(np, base), view(fx, to_fx(base, dtype))
    for axis in (None, 0, 1, 2, -1):
        check_sort(a, x, axis)


# Line lengths around the GPU paths: one block sorting many short rows,
# one row per block (tile of 4096 items; 2048 for 8-byte dtypes), and the
# global merge for longer rows; sorted along the last axis and another one.
PATHS = [
    ((5000, 3), -1),
    ((700, 33), -1),
    ((3, 2048), -1),
    ((2, 2049), -1),
    ((3, 4096), -1),
    ((2, 4097), -1),
    ((2, 20000), -1),
    ((70001,), 0),
    ((3000, 5), 0),
    ((9000, 2), 0),
    ((5, 3, 7), 1),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_kernel_paths(dtype, rng):
    for shape, axis in PATHS:
        x = sort_data(rng, shape, dtype)
        # An unaligned start: drop the first row (or element).
        a = to_fx(x, dtype)[1:]
        check_sort(a, x[1:], axis)


def test_long_row_exact(rng):
    # A million floats: many global merge stages on the GPU.
    x = rng.normal(size=(1 << 20) + 3).astype(np.float32)
    x[::997] = np.nan
    a = to_fx(x, "float32")
    np.testing.assert_array_equal(np.array(fx.argsort(a)), ref_argsort(x, 0))
    np.testing.assert_array_equal(np.array(fx.sort(a)), np.sort(x))
    y = rng.integers(-50, 50, size=(4, 300_001)).astype(np.int32)
    np.testing.assert_array_equal(np.array(fx.argsort(to_fx(y, "int32"), axis=1)), ref_argsort(y, 1))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("n", [9, 3000, 9000])
def test_sorted_values_keep_their_bits(dtype, n):
    # -0.0 before or after 0.0 in input order, NaN payloads and signs kept:
    # the values are the input elements, moved (every GPU path, incl. the
    # radix passes that carry bits instead of positions).
    bits = {"float16": np.uint16, "bfloat16": np.uint16, "float32": np.uint32, "float64": np.uint64}[dtype]
    width = np.dtype(bits).itemsize * 8
    nan = {"float16": 0x7E01, "bfloat16": 0x7FC1, "float32": 0x7FC00001, "float64": 0x7FF8000000000001}[dtype]
    pattern = np.array([0, 1 << (width - 1), nan, nan | (1 << (width - 1)), 1 << (width - 2)], dtype=bits)
    raw = np.resize(pattern, n)
    a = fx.array(raw).view(fxd(dtype))
    order = fx.argsort(a).tolist()
    got = np.array(fx.sort(a).view(fxd(np.dtype(bits).name)))
    np.testing.assert_array_equal(got, raw[order])
    zeros = np.flatnonzero((raw == 0) | (raw == (1 << (width - 1))))
    np.testing.assert_array_equal(order[: zeros.size], zeros)


def test_rows_of_1024_by_4096(rng):
    x = rng.normal(size=(1024, 4096)).astype(np.float32)
    a = to_fx(x, "float32")
    np.testing.assert_array_equal(np.array(fx.sort(a)), np.sort(x, axis=-1))
    np.testing.assert_array_equal(np.array(fx.argsort(a.T, axis=0)), ref_argsort(x.T, 0))


def test_stability_with_ties(rng):
    for dtype in ("int8", "float32", "bool_", "uint64", "float16"):
        x = rand(rng, (7, 300), dtype, "small")
        a = to_fx(x, dtype)
        for axis in (0, 1):
            np.testing.assert_array_equal(np.array(fx.argsort(a, axis=axis)), ref_argsort(x, axis))
    a = fx.array([1, 1, 1, 0, 0, 1])
    assert fx.argsort(a).tolist() == [3, 4, 0, 1, 2, 5]


def test_special_values_order():
    nan, inf = float("nan"), float("inf")
    x = [3.0, nan, 1.0, -inf, nan, 2.0, inf, -0.0, 0.0]
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        a = fx.array(x).astype(fxd(dtype))
        assert fx.argsort(a).tolist() == [3, 7, 8, 2, 5, 0, 6, 1, 4], dtype
        s = to_np(fx.sort(a))
        assert np.signbit(s[1]) and not np.signbit(s[2]) and np.isnan(s[-2:]).all()
    c = fx.array([1 + 2j, 1 + 1j, 5j, complex(nan, 0), complex(1, nan), -1j])
    assert fx.argsort(c).tolist() == [5, 2, 1, 0, 3, 4]
    assert fx.sort(fx.array([True, False, True])).tolist() == [False, True, True]
    big = fx.array(np.array([2**64 - 1, 0, 5, 2**63], dtype=np.uint64))
    assert fx.argsort(big).tolist() == [1, 2, 3, 0]
    small = fx.array(np.array([-(2**63), 2**63 - 1, -1, 0], dtype=np.int64))
    assert fx.argsort(small).tolist() == [0, 2, 3, 1]


def test_empty_and_zero_d():
    for dtype in ("bool_", "int32", "float32", "complex64"):
        e = fx.zeros((2, 0, 3), dtype=fxd(dtype))
        for axis, shape in ((None, (0,)), (0, (2, 0, 3)), (1, (2, 0, 3)), (-1, (2, 0, 3))):
            got = fx.sort(e, axis=axis)
            assert got.shape == shape and got.dtype == fxd(dtype) and np.array(got).shape == shape
            idx = fx.argsort(e, axis=axis)
            assert idx.shape == shape and idx.dtype == fx.uint32 and np.array(idx).shape == shape
        s = fx.array(3, dtype=fxd(dtype))
        got = fx.sort(s, axis=None)
        assert got.shape == (1,) and got.dtype == fxd(dtype) and got.tolist() == [np.array(3).astype(NP[dtype]).item()]
        assert fx.argsort(s, axis=None).tolist() == [0]
        with pytest.raises(IndexError, match=r"\[sort\] Axis -1 is out of bounds for array with 0 dimensions\."):
            fx.sort(s)
    one = fx.array([[4.0], [2.0]])
    assert fx.sort(one, axis=1).tolist() == [[4.0], [2.0]]
    assert fx.argsort(one, axis=0).tolist() == [[1], [0]]


def test_stream_argument(rng):
    x = sort_data(rng, (4, 5), "float32")
    a = to_fx(x, "float32")
    got = fx.sort(a, axis=0, stream=fx.cpu)
    np.testing.assert_array_equal(np.array(got), ref_sort(x, 0))
    with pytest.raises(TypeError):
        fx.sort(a, 0, fx.cpu)  # stream is keyword-only


# --------------------------------------------------------------------------
# partition, argpartition, topk
# --------------------------------------------------------------------------


def lt_order(a, b):
    """Elementwise `a < b` in MLX's order (NaN last and equal to NaN,
    complex lexicographic, -0.0 equal to 0.0)."""
    a, b = np.asarray(a), np.asarray(b)
    if np.iscomplexobj(a):
        na, nb = np.isnan(a.real) | np.isnan(a.imag), np.isnan(b.real) | np.isnan(b.imag)
        lt = (a.real < b.real) | ((a.real == b.real) & (a.imag < b.imag))
    elif a.dtype.kind == "f":
        na, nb = np.isnan(a), np.isnan(b)
        lt = a < b
    else:
        na = nb = np.zeros(np.broadcast_shapes(a.shape, b.shape), dtype=bool)
        lt = a < b
    return ~na & (nb | lt)


def check_partition(x, got, idx, kth, axis):
    """The contract, for the values and for the values at the positions:
    position kth holds the element a sort puts there, nothing before it
    comes after it in MLX's order and nothing after it comes before it;
    each line is a permutation of the input's."""
    x = np.asarray(x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    n = x.shape[axis]
    k = kth % n
    want_kth = np.take(ref_sort(x, axis), [k], axis=axis)
    for vals in (got, np.take_along_axis(x, idx.astype(np.int64), axis)):
        at_k = np.take(vals, [k], axis=axis)
        assert not lt_order(at_k, want_kth).any() and not lt_order(want_kth, at_k).any()
        assert not lt_order(at_k, np.take(vals, np.arange(k), axis=axis)).any()
        assert not lt_order(np.take(vals, np.arange(k + 1, n), axis=axis), at_k).any()
        np.testing.assert_array_equal(bits(ref_sort(vals, axis)), bits(ref_sort(x, axis)))
    line = np.arange(n).reshape([-1 if d == axis % x.ndim else 1 for d in range(x.ndim)])
    np.testing.assert_array_equal(np.sort(idx, axis=axis), np.broadcast_to(line, idx.shape))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_partition_contract(dtype, rng):
    x = sort_data(rng, (4, 9), dtype)
    a = to_fx(x, dtype)
    for axis, n in ((None, 36), (0, 4), (1, 9), (-1, 9)):
        for kth in (0, 1, n // 2, n - 1, -1, -n):
            got = fx.partition(a, kth, axis=axis)
            idx = fx.argpartition(a, kth, axis=axis)
            assert got.dtype == a.dtype and idx.dtype == fx.uint32
            check_partition(x, to_np(got).astype(x.dtype), np.array(idx), kth, axis)


def test_partition_default_axis_and_strided(rng):
    base = sort_data(rng, (6, 10), "float32")
    x, a = base[::2, ::-1], to_fx(base, "float32")[::2, ::-1]
    got, idx = fx.partition(a, 3), fx.argpartition(a, 3)
    check_partition(x, np.array(got), np.array(idx), 3, -1)


def ref_topk(x, k, axis):
    if axis is None:
        x, axis = np.asarray(x).reshape(-1), 0
    n = x.shape[axis]
    return np.take(ref_sort(x, axis), np.arange(n - k, n), axis=axis)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_topk_multiset(dtype, rng):
    x = sort_data(rng, (4, 7), dtype)
    a = to_fx(x, dtype)
    for axis, n in ((None, 28), (0, 4), (1, 7), (-1, 7)):
        for k in (0, 1, 3, n - 1, n):
            got = fx.topk(a, k, axis=axis)
            want = ref_topk(x, k, axis)
            assert got.shape == want.shape and got.dtype == a.dtype
            ax = 0 if axis is None else axis
            np.testing.assert_array_equal(bits(ref_sort(to_np(got).astype(x.dtype), ax)), bits(ref_sort(want, ax)))
    # k equal to the extent returns the input unchanged, as MLX.
    assert fx.topk(fx.array([3, 1, 2]), 3).tolist() == [3, 1, 2]
    got = to_np(fx.topk(fx.array([3.0, 1.0, float("nan"), 2.0]), 2))
    assert sorted(got.tolist(), key=lambda v: (np.isnan(v), v))[0] == 3.0 and np.isnan(got).sum() == 1


# --------------------------------------------------------------------------
# median
# --------------------------------------------------------------------------


def median_dtype(dtype):
    return dtype if dtype in INEXACT else "float32"


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_median_values(dtype, rng):
    x = sort_data(rng, (4, 5, 6), dtype, special=False)
    a = to_fx(x, dtype)
    ref = x.astype(np.complex128 if dtype == "complex64" else np.float64)
    for axes in (None, 0, 1, -1, (0, 2), [1, 0], (0, 1, 2)):
        for keepdims in (False, True):
            got = fx.median(a, axis=axes, keepdims=keepdims)
            if dtype == "complex64":
                flat_axes = tuple(range(3)) if axes is None else tuple(sorted(np.atleast_1d(axes) % 3))
                moved = np.moveaxis(ref, flat_axes, tuple(range(3 - len(flat_axes), 3)))
                rows = moved.reshape(moved.shape[: 3 - len(flat_axes)] + (-1,))
                srt = np.take_along_axis(rows, ref_argsort(rows, -1).astype(np.int64), -1)
                m = rows.shape[-1]
                want = srt[..., m // 2] if m % 2 else (srt[..., m // 2] + srt[..., m // 2 - 1]) * 0.5
                if keepdims:
                    want = np.expand_dims(want, tuple(sorted(flat_axes)))
            else:
                want = np.median(ref, axis=None if axes is None else tuple(np.atleast_1d(axes)), keepdims=keepdims)
            assert_close(got, np.asarray(want), median_dtype(dtype))


def test_median_nan_even_odd_and_zero_d():
    nan = float("nan")
    assert np.isnan(fx.median(fx.array([1.0, nan, 3.0])).item())
    got = fx.median(fx.array([[1.0, nan, 3.0], [4.0, 1.0, 2.0]]), axis=1)
    assert np.isnan(got.tolist()[0]) and got.tolist()[1] == 2.0
    assert fx.median(fx.array([1, 2, 3, 4])).item() == 2.5
    assert fx.median(fx.array([5, 1, 3])).dtype == fx.float32
    assert fx.median(fx.array([True, False])).item() == 0.5
    h = fx.median(fx.array([1.0, 2.0, 4.0, 8.0]).astype(fx.float16))
    assert h.dtype == fx.float16 and h.item() == 3.0
    s = fx.median(fx.array(3.0))
    assert s.shape == () and s.item() == 3.0
    e = fx.median(fx.zeros((2, 0)), axis=0)
    assert e.shape == (0,) and e.dtype == fx.float32


# --------------------------------------------------------------------------
# searchsorted
# --------------------------------------------------------------------------


def ref_searchsorted(seq, vals, side):
    """Insertion points in MLX's order, by counting."""
    s, v = np.asarray(seq), np.asarray(vals)[..., None]
    below = lt_order(s, v) if side == "left" else ~lt_order(v, s)
    return below.sum(axis=-1).astype(np.uint32)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_searchsorted_both_sides(dtype, rng):
    seq = ref_sort(sort_data(rng, (20,), dtype), 0)
    vals = sort_data(rng, (3, 7), dtype)
    s, v = to_fx(seq, dtype), to_fx(vals, dtype)
    for side in ("left", "right"):
        got = fx.searchsorted(s, v, side=side)
        assert got.dtype == fx.uint32 and got.shape == (3, 7)
        np.testing.assert_array_equal(np.array(got), ref_searchsorted(seq, vals, side))
        if dtype != "complex64":
            np.testing.assert_array_equal(np.array(got), np.searchsorted(seq, vals, side=side))


def test_searchsorted_layouts_nan_promotion_and_empty(rng):
    nan = float("nan")
    s = fx.array([1.0, 2.0, 2.0, 4.0, nan])
    v = fx.array([0.0, 2.0, 3.0, 5.0, nan, -0.0])
    assert fx.searchsorted(s, v).tolist() == [0, 1, 3, 4, 4, 0]
    assert fx.searchsorted(s, v, side="right").tolist() == [0, 3, 3, 4, 5, 0]
    # A reversed view of a descending buffer; transposed and broadcast values.
    desc = fx.array([9, 5, 5, 1])
    asc = desc[::-1]
    vals = fx.array([[5, 0], [10, 1]]).T
    assert fx.searchsorted(asc, vals).tolist() == [[1, 4], [0, 0]]
    assert fx.searchsorted(asc, vals, side="right").tolist() == [[3, 4], [0, 1]]
    b = fx.broadcast_to(fx.array([[2]]), (2, 3))
    assert fx.searchsorted(asc, b, side="right").tolist() == [[1, 1, 1], [1, 1, 1]]
    # Promotion: uint8 sequence, int8 values compare as int16.
    got = fx.searchsorted(fx.array([1, 2], dtype=fx.uint8), fx.array([-1, 3], dtype=fx.int8))
    assert got.tolist() == [0, 2]
    assert fx.searchsorted(fx.array([1, 2, 3]), fx.array(2)).shape == ()
    assert fx.searchsorted(fx.array([1, 2, 3]), fx.array(2)).item() == 1
    assert fx.searchsorted(fx.array([], dtype=fx.float32), fx.array([1.0, 2.0])).tolist() == [0, 0]
    assert fx.searchsorted(fx.array([1.0]), fx.zeros((0, 2))).shape == (0, 2)
    assert fx.searchsorted(fx.array([1 + 1j, 2]), fx.array(2)).item() == 1
    long = np.sort(rng.normal(size=100_000)).astype(np.float32)
    q = rng.normal(size=5000).astype(np.float32)
    for side in ("left", "right"):
        np.testing.assert_array_equal(np.array(fx.searchsorted(fx.array(long), fx.array(q), side=side)),
                                      np.searchsorted(long, q, side=side))


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------


def test_errors():
    a = fx.zeros((2, 3))
    for op in ("sort", "argsort"):
        for axis in (2, -3):
            with pytest.raises(IndexError, match=rf"\[{op}\] Axis {axis} is out of bounds for array with 2 dimensions\."):
                getattr(fx, op)(a, axis=axis)
        with pytest.raises(TypeError):
            getattr(fx, op)(a, axis=1.5)
    for op in ("partition", "argpartition"):
        with pytest.raises(IndexError):
            getattr(fx, op)(a, 0, axis=2)
        for kth in (3, -4):
            with pytest.raises(ValueError, match=rf"\[{op}\] Received invalid kth {kth}"):
                getattr(fx, op)(a, kth)
        with pytest.raises(ValueError):
            getattr(fx, op)(fx.zeros((0, 3)), 0, axis=0)
        with pytest.raises(IndexError):
            getattr(fx, op)(fx.array(1.0), 0)
    for k in (4, -1):
        with pytest.raises(ValueError, match=rf"\[topk\] Received invalid k={k}"):
            fx.topk(a, k)
    with pytest.raises(IndexError):
        fx.topk(a, 1, axis=2)
    with pytest.raises(IndexError, match=r"\[median\] axis 5 is out of bounds for array with 2 dimensions\."):
        fx.median(a, axis=5)
    with pytest.raises(ValueError, match=r"\[median\] Received duplicate axis\."):
        fx.median(a, axis=[0, 0])
    with pytest.raises(ValueError, match=r"\[median\] Cannot take median along empty axis\."):
        fx.median(fx.zeros((2, 0)), axis=1)
    with pytest.raises(ValueError):
        fx.median(a, axis=[])
    with pytest.raises(ValueError, match=r"\[searchsorted\] Invalid side 'middle'\. Expected 'left' or 'right'\."):
        fx.searchsorted(fx.array([1, 2]), fx.array([1]), side="middle")
    with pytest.raises(ValueError, match=r"must be 1-D but has 2 dimensions"):
        fx.searchsorted(fx.zeros((2, 2)), fx.array([1.0]))
    with pytest.raises(ValueError, match=r"must be 1-D but has 0 dimensions"):
        fx.searchsorted(fx.array(1.0), fx.array([1.0]))
    with pytest.raises(TypeError):
        fx.searchsorted(fx.array([1.0]), fx.array([1.0]), "left", fx.cpu)  # stream is keyword-only


# --------------------------------------------------------------------------
# MLX agreement (only where MLX is installed)
# --------------------------------------------------------------------------

if HAVE_MLX:
    import mlx.core as mx

    def to_mx(x, dtype):
        if dtype == "bfloat16":
            return mx.array(x.astype(np.float32)).astype(mx.bfloat16)
        return mx.array(x, dtype=getattr(mx, dtype))

    def from_mx(m):
        return np.array(m.astype(mx.float32) if m.dtype == mx.bfloat16 else m)

    @pytest.mark.parametrize("dtype", ALL_DTYPES)
    def test_matches_mlx(dtype, rng):
        # MLX's CPU argsort leaves complex NaNs out of its NaN-last rule
        # (its sort applies it): complex data without NaN here.
        x = sort_data(rng, (3, 8), dtype, special=dtype != "complex64")
        a, m = to_fx(x, dtype), to_mx(x, dtype)
        for axis in (None, 0, 1):
            want = from_mx(mx.argsort(m, axis=axis, stream=mx.cpu))
            np.testing.assert_array_equal(np.array(fx.argsort(a, axis=axis)), want)
            want = from_mx(mx.sort(m, axis=axis, stream=mx.cpu))
            np.testing.assert_array_equal(bits(to_np(fx.sort(a, axis=axis)).astype(want.dtype)), bits(want))
            for k in (1, 3):
                want = from_mx(mx.topk(m, k, axis=axis, stream=mx.cpu))
                got = to_np(fx.topk(a, k, axis=axis)).astype(want.dtype)
                ax = 0 if axis is None else axis
                # As multisets; ties (-0.0 and 0.0) may pick either element.
                np.testing.assert_array_equal(ref_sort(got, ax), ref_sort(want, ax))
        y = sort_data(rng, (3, 8), dtype, special=False)
        for axis in (None, 0, 1):
            want = mx.median(to_mx(y, dtype), axis=axis, stream=mx.cpu)
            got = fx.median(to_fx(y, dtype), axis=axis)
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
            assert_close(got, from_mx(want), median_dtype(dtype))
        seq = ref_sort(sort_data(rng, (12,), dtype), 0)
        for side in ("left", "right"):
            want = np.array(mx.searchsorted(to_mx(seq, dtype), m, side=side, stream=mx.cpu))
            np.testing.assert_array_equal(np.array(fx.searchsorted(to_fx(seq, dtype), a, side=side)), want)

    def test_nan_median_matches_mlx():
        x = np.array([[1.0, np.nan, 3.0, 2.0], [4.0, 1.0, 2.0, 0.5]], dtype=np.float32)
        for axis in (None, 0, 1):
            want = np.array(mx.median(mx.array(x), axis=axis, stream=mx.cpu))
            np.testing.assert_array_equal(np.array(fx.median(fx.array(x), axis=axis)), want)

    def test_errors_match_mlx():
        cases = [
            ("sort", (np.zeros((2, 3)),), {"axis": 2}),
            ("argsort", (np.zeros((2, 3)),), {"axis": -3}),
            ("sort", (np.array(1.0),), {}),
            ("partition", (np.zeros((2, 3)), 3), {}),
            ("argpartition", (np.zeros((2, 3)), -4), {}),
            ("partition", (np.zeros((2, 3)), 0), {"axis": 5}),
            ("topk", (np.zeros((2, 3)), 4), {}),
            ("topk", (np.zeros((2, 3)), -1), {}),
            ("median", (np.zeros((2, 3)),), {"axis": 5}),
            ("median", (np.zeros((2, 3)),), {"axis": [1, 1]}),
            ("median", (np.zeros((2, 0)),), {"axis": 1}),
            ("searchsorted", (np.zeros((2, 3)), np.zeros(2)), {}),
            ("searchsorted", (np.zeros(3), np.zeros(2)), {"side": "up"}),
        ]
        for op, args, kwargs in cases:
            with pytest.raises(Exception) as theirs:
                getattr(mx, op)(*[mx.array(v) if isinstance(v, np.ndarray) else v for v in args], **kwargs)
            with pytest.raises(Exception) as ours:
                getattr(fx, op)(*[fx.array(v) if isinstance(v, np.ndarray) else v for v in args], **kwargs)
            # ferrox.AxisError subclasses MLX's IndexError (and ValueError).
            assert isinstance(ours.value, type(theirs.value)), (op, args, kwargs, ours.value, theirs.value)


# --------------------------------------------------------------------------
# gradients (float64 central differences; they need take_along_axis and
# put_along_axis_add), vmap
# --------------------------------------------------------------------------

def distinct(rng, shape):
    """Distinct values far apart relative to the step: no ties to break."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) - 5.0) * 0.25


def test_sort_gradients(rng):
    x = distinct(rng, (3, 5))
    for axis in (None, 0, 1, -1):
        fd_check(lambda v: fx.sort(v, axis=axis), x, rng)
        fd_check(lambda v: fx.partition(v, 1, axis=axis), x, rng)


def test_topk_gradients(rng):
    x = distinct(rng, (3, 6))
    for axis, k in ((None, 4), (0, 2), (1, 3), (-1, 1)):
        fd_check(lambda v: fx.topk(v, k, axis=axis), x, rng)


def test_median_gradients(rng):
    for shape, axes in (((3, 5), None), ((3, 4), 1), ((4, 3), 0), ((2, 3, 4), (0, 2))):
        x = distinct(rng, shape)
        fd_check(lambda v: fx.median(v, axis=axes), x, rng)


def test_sort_second_order(rng):
    x = distinct(rng, (6,))
    w = f64(rng.uniform(-1, 1, size=6))
    inner = fx.grad(lambda v: (fx.sort(v) ** 2 * w).sum())
    hess_w = fx.grad(lambda v: (inner(v) * w).sum())(f64(x))
    # The gradient is 2 * w[rank] * x, so the Hessian applied to w is 2 * w[rank] * w.
    rank = np.argsort(np.argsort(x))
    wn = np.array(w)
    np.testing.assert_allclose(np.array(hess_w), 2 * wn[rank] * wn, rtol=1e-12)


def test_index_outputs_have_zero_derivatives(rng):
    x = f64(distinct(rng, (4,)))
    g = fx.grad(lambda v: (v * fx.argsort(v).astype(fx.float64)).sum())(x)
    np.testing.assert_array_equal(np.array(g), np.array(fx.argsort(x)).astype(np.float64))
    g = fx.grad(lambda v: (v * fx.argpartition(v, 1).astype(fx.float64)).sum())(x)
    np.testing.assert_array_equal(np.array(g), np.array(fx.argpartition(x, 1)).astype(np.float64))
    s = f64([0.0, 1.0, 2.0])
    g = fx.grad(lambda q: (q * fx.searchsorted(s, q).astype(fx.float64)).sum())(x)
    np.testing.assert_array_equal(np.array(g), np.array(fx.searchsorted(s, x)).astype(np.float64))
    _, (t,) = fx.jvp(lambda v: fx.argsort(v), [x], [f64(np.ones(4))])
    assert t.dtype == fx.uint32 and t.tolist() == [0, 0, 0, 0]


def loop(fun, x, in_axis):
    index = [slice(None)] * x.ndim
    rows = []
    for i in range(x.shape[in_axis]):
        index[in_axis] = i
        rows.append(np.array(fun(x[tuple(index)])))
    return np.stack(rows)


VMAP_FUNS = {
    "sort": lambda v: fx.sort(v, axis=0),
    "sort_last": lambda v: fx.sort(v),
    "sort_flat": lambda v: fx.sort(v, axis=None),
    "argsort": lambda v: fx.argsort(v, axis=-1),
    "argsort_first": lambda v: fx.argsort(v, axis=0),
    "partition": lambda v: fx.partition(v, 2, axis=1),
    "argpartition": lambda v: fx.argpartition(v, -1, axis=0),
    "topk": lambda v: fx.topk(v, 2, axis=0),
    "median": lambda v: fx.median(v, axis=1),
    "median_all": lambda v: fx.median(v),
    "searchsorted": lambda v: fx.searchsorted(fx.array([-1.0, 0.0, 0.5, 2.0]), v, side="right"),
}


@pytest.mark.parametrize("name", list(VMAP_FUNS))
def test_vmap_matches_loop(name, rng):
    fun = VMAP_FUNS[name]
    x = fx.array(np.round(rng.normal(size=(3, 4, 5)), 1).astype(np.float32))
    for in_axis in (0, 1, 2):
        got = np.array(fx.vmap(fun, in_axes=in_axis)(x))
        want = loop(fun, x, in_axis)
        if name == "topk":
            got, want = np.sort(got, axis=1), np.sort(want, axis=1)
        np.testing.assert_array_equal(got, want)


def test_vmap_over_the_sorted_sequence_is_refused():
    with pytest.raises(ValueError, match=r"\[searchsorted\] Cannot vmap over the sorted sequence"):
        fx.vmap(lambda s: fx.searchsorted(s, fx.array([1.0])))(fx.array([[1.0, 2.0], [3.0, 4.0]]))
