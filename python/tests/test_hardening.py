"""Bad input gets a clear exception, never a crash, a panic, a hang or a
wrong answer (issue 8). Each reproducer the first fuzz found is here with
the outcome it must have; `fuzz/reproducers.txt` replays them (and later
finds) in child processes, and test_fuzz.py runs a short fuzz pass.

Where MLX and NumPy differ, the expected values are MLX's (checked against
mlx 0.32, the Linux CPU build)."""

import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import ferrox as fx

# --------------------------------------------------------------------------
# Python input: cycles, depth, lying sequences
# --------------------------------------------------------------------------


def self_list():
    lst = [1.0]
    lst.append(lst)
    return lst


@pytest.mark.parametrize(
    "call",
    [
        lambda v: fx.array(v),
        lambda v: fx.stack(v),
        lambda v: fx.concatenate(v),
        lambda v: fx.add(v, 1),
        lambda v: fx.grad(lambda x: x)(v),
    ],
)
def test_self_referential_list_is_a_value_error(call):
    with pytest.raises(ValueError):
        call(self_list())


def test_eval_walks_a_self_referential_tree_once():
    lst = [fx.ones((2,)) * 3]
    lst.append(lst)
    fx.eval(lst)
    assert lst[0].tolist() == [3.0, 3.0]


def test_deep_nesting_is_a_value_error_not_a_stack_overflow():
    x = 1.0
    for _ in range(300_000):
        x = [x]
    with pytest.raises(ValueError, match="nested"):
        fx.array(x)
    y = 1.0
    for _ in range(200):
        y = [y]
    assert fx.array(y).ndim == 200


def test_ragged_and_invalid_elements_raise_value_error():
    with pytest.raises(ValueError, match="non-uniform"):
        fx.array([[1], [2, 3]])
    with pytest.raises(ValueError, match="non-uniform"):
        fx.array([fx.array([1, 2]), [3, 4, 5]])
    with pytest.raises(ValueError, match="Invalid type NoneType"):
        fx.array([None])
    with pytest.raises(TypeError):
        fx.array(np.array(["a", "b"]))


class LyingLen(list):
    def __len__(self):
        return 10**12


def test_sequences_that_lie_about_their_length_do_not_allocate():
    with pytest.raises((ValueError, TypeError, IndexError)):
        fx.array(LyingLen())
    x = fx.ones((2, 3))
    assert fx.sum(x, axis=LyingLen()).shape == (2, 3)  # iterates: no axes
    with pytest.raises(ValueError):
        fx.reshape(fx.ones((6,)), LyingLen())


def test_array_list_arguments_must_be_sequences():
    big = fx.broadcast_to(fx.array([1, 2], dtype=fx.int8), (2**30, 2))
    with pytest.raises(TypeError, match="list or tuple"):
        fx.stack(big, 2)
    with pytest.raises(TypeError, match="list or tuple"):
        fx.concatenate(fx.ones((2, 2)))


def test_lying_index_propagates_its_own_exception():
    class BadIndex:
        def __index__(self):
            raise ZeroDivisionError("lying")

    with pytest.raises(ZeroDivisionError):
        fx.ones((2, 3)).argmax(BadIndex())


def test_big_endian_and_strided_numpy_input():
    a = np.arange(12).astype(">i4").reshape(3, 4)[::-1, ::2]
    assert fx.array(a).tolist() == a.tolist()
    b = np.arange(6, dtype=">f8").reshape(2, 3).T
    assert fx.array(b).tolist() == b.astype(np.float32).tolist()
    c = (np.arange(4) + 1j).astype(">c16")
    assert np.array(fx.array(c)).tolist() == c.astype(np.complex64).tolist()


# --------------------------------------------------------------------------
# Sizes: checked arithmetic, fail-fast allocation, work proportional to output
# --------------------------------------------------------------------------


def test_shapes_whose_size_overflows_are_too_big():
    with pytest.raises(ValueError, match="too big"):
        fx.zeros((2**32, 2**32))
    with pytest.raises(ValueError, match="too big"):
        fx.ones((2**32, 1)) + fx.ones((1, 2**32))  # broadcasting to 2**64 elements
    with pytest.raises(ValueError, match="too big"):
        fx.broadcast_to(fx.array(1.0), (2**62, 4))
    with pytest.raises(ValueError, match="reshape"):
        fx.zeros((0,)).reshape(2**32, 2**32)
    assert fx.zeros((0,)).reshape(2**32, 2**32, 0).shape == (2**32, 2**32, 0)


def test_empty_outputs_cost_nothing_whatever_the_other_extents():
    start = time.time()
    e = fx.eye(2**62, 0)
    fx.eval(e)
    assert e.shape == (2**62, 0)
    m = fx.matmul(fx.broadcast_to(fx.ones((1, 0, 3)), (2**40, 0, 3)), fx.ones((3, 2)))
    fx.eval(m)
    assert m.shape == (2**40, 0, 2)
    assert time.time() - start < 10


EMPTY_VIEWS = {
    "reversed": lambda: fx.zeros((5, 0), dtype=fx.float32)[::-1],
    "stepped": lambda: fx.zeros((7, 0), dtype=fx.float32)[3::2],
    "transposed_reversed": lambda: fx.zeros((5, 0), dtype=fx.float32)[::-1].T,
    "as_strided_with_offset": lambda: fx.as_strided(fx.zeros((0,), dtype=fx.float32), (5, 0), (1, 1), 4),
}

EMPTY_VIEW_OPS = {
    "cumsum": lambda a: fx.cumsum(a),
    "cumprod_axis": lambda a: fx.cumprod(a, axis=0),
    "sum": lambda a: fx.sum(a, axis=0),
    "max_all": lambda a: fx.min(fx.concatenate([a.reshape(-1), fx.array([1.0])])),
    "sort": lambda a: fx.sort(a, axis=0),
    "argsort_flat": lambda a: fx.argsort(a.reshape(-1)),
    "abs": fx.abs,
    "add": lambda a: a + a,
    "take": lambda a: fx.take(a, fx.array([0, 1]), axis=0 if a.shape[0] else 1),
    "reshape": lambda a: a.reshape(0, 5),
    "flatten_copy": lambda a: fx.flatten(a) * 2,
    "matmul": lambda a: a @ fx.zeros((a.shape[1], 3)),
    "softmax": lambda a: fx.softmax(a, axis=0),
    "pad": lambda a: fx.pad(a, 1),
    "where": lambda a: fx.where(a > 0, a, -a),
    "numpy": lambda a: np.array(a),
}


@pytest.mark.parametrize("view", list(EMPTY_VIEWS))
@pytest.mark.parametrize("op", list(EMPTY_VIEW_OPS))
def test_ops_on_empty_views_match_a_fresh_empty_array(view, op):
    """An empty view whose offset lies past its empty buffer behaves like a
    fresh empty array of its shape (no kernel slices out of range)."""
    a = EMPTY_VIEWS[view]()
    got = np.array(EMPTY_VIEW_OPS[op](a))
    ref = np.array(EMPTY_VIEW_OPS[op](fx.zeros(a.shape, dtype=fx.float32)))
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_array_equal(got, ref)


def test_negative_dimensions_are_value_errors():
    with pytest.raises(ValueError, match="Negative dimensions"):
        fx.zeros((2, -1))
    with pytest.raises(ValueError, match="Negative dimensions"):
        fx.full(-3, 1.0)


# Views of 2**60 float32 elements: 2**62 bytes, beyond any machine's
# address space, so NumPy's copy fails even where the kernel overcommits
# memory (a 2**40-element copy, 4 TiB, was granted and then killed the
# process on the 128 GiB GPU host).
BEYOND_ADDRESS_SPACE = 2**60


def test_exports_of_views_too_large_for_memory_fail_fast():
    huge = fx.broadcast_to(fx.array(1.0), (BEYOND_ADDRESS_SPACE,))
    start = time.time()
    with pytest.raises(MemoryError):
        np.array(huge)
    # The buffer export is the broadcast view itself (stride 0, as MLX's).
    assert memoryview(huge).strides == (0,)
    with pytest.raises(MemoryError):
        huge.tolist()
    with pytest.raises(MemoryError):
        fx.array(np.broadcast_to(np.float32(0), (BEYOND_ADDRESS_SPACE,)))
    assert time.time() - start < 10
    # Iteration and repr only touch what they show.
    assert next(iter(huge)).item() == 1.0
    assert repr(fx.broadcast_to(fx.array(2.0), (2**20, 2**20))).startswith("array([[2, 2, 2, ..., 2, 2, 2],")


def test_numpy_conversion_goes_through_array_and_keeps_its_errors():
    a = fx.arange(6).reshape(2, 3)
    assert np.array_equal(np.array(a.T), np.arange(6).reshape(2, 3).T)
    assert np.array(a, dtype=np.float64).dtype == np.float64
    assert np.array(a, copy=True).flags.owndata
    # No fallback to the sequence protocol (2**40 Python objects): the view
    # arrives as a stride-0 NumPy view, and a copy of it is a MemoryError.
    view = np.asarray(fx.broadcast_to(fx.array(1.0), (BEYOND_ADDRESS_SPACE,)))
    assert view.strides == (0,) and view[-1] == 1.0
    with pytest.raises(MemoryError):
        np.array(fx.broadcast_to(fx.array(1.0), (BEYOND_ADDRESS_SPACE,)), copy=True)


def test_refused_host_allocation_is_a_memory_error():
    # Under a 4 GiB address-space limit, an 8 GiB array cannot be had.
    code = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
import ferrox as fx
fx.set_default_device(fx.cpu)
try:
    fx.eval(fx.zeros((2**31,)) + 1)
except MemoryError as e:
    print("MemoryError", e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("MemoryError") and "[" in out.stdout


# --------------------------------------------------------------------------
# Slicing with any Python ints gives NumPy's answer
# --------------------------------------------------------------------------

HUGE = [2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**100, -(2**100), 7, -7, 0, None]


@pytest.mark.parametrize("step", [1, 2, -1, -3, 2**63 - 1, -(2**63), 2**70, -(2**70)])
def test_slices_with_huge_bounds_and_steps_match_python(step):
    x = list(range(10))
    a = fx.arange(10)
    for start in HUGE:
        for stop in HUGE:
            s = slice(start, stop, step)
            assert a[s].tolist() == x[s], s


# --------------------------------------------------------------------------
# User rules are validated
# --------------------------------------------------------------------------


def test_vmap_rule_with_a_bad_axis_is_a_value_error_naming_the_function():
    def double(x):
        return x * 2

    cf = fx.custom_function(double)
    cf.vmap(lambda i, a: (i * 2, 5))
    with pytest.raises(ValueError, match="vmap rule of 'double'.*axis 5"):
        fx.vmap(cf)(fx.ones((2, 3)))


def test_vjp_rule_with_a_wrong_shape_dtype_or_count_is_a_value_error():
    cf = fx.custom_function(lambda x: x.sum())
    cf.vjp(lambda p, c, o: (c,))
    with pytest.raises(ValueError, match="vjp of '<lambda>' returned a cotangent of shape \\(\\)"):
        fx.eval(fx.grad(lambda x: cf(fx.stack([x, x])))(fx.ones((3,))))
    cf.vjp(lambda p, c, o: (p.astype(fx.int32),))
    with pytest.raises(ValueError, match="dtype int32"):
        fx.grad(cf)(fx.ones((3,)))
    cf.vjp(lambda p, c, o: (c, c))
    with pytest.raises(ValueError, match="returned 2 cotangents"):
        fx.grad(cf)(fx.ones((3,)))


def test_jvp_rule_with_a_wrong_shape_is_a_value_error():
    cf = fx.custom_function(lambda x: x * 2)
    cf.jvp(lambda p, t: t[0])
    with pytest.raises(ValueError, match="jvp of '<lambda>' returned a tangent of shape \\(\\)"):
        fx.jvp(cf, [fx.ones((3,))], [fx.ones((3,))])


def test_custom_rules_receive_mlx_structures():
    # One argument: the array itself; several: a tuple (as MLX).
    seen = {}
    one = fx.custom_function(lambda x: x * 2)

    @one.vjp
    def one_vjp(primals, cotangent, output):
        seen["one"] = (type(primals), type(cotangent), type(output))
        return cotangent * 2

    fx.vjp(one, [fx.ones((3,))], [fx.ones((3,))])
    assert seen["one"] == (fx.array, fx.array, fx.array)
    two = fx.custom_function(lambda x, y: (x * y, y))

    @two.vjp
    def two_vjp(primals, cotangents, outputs):
        seen["two"] = (type(primals), type(cotangents), type(outputs))
        return cotangents[0] * primals[1], cotangents[0] * primals[0] + cotangents[1]

    fx.vjp(two, [fx.ones((3,)), fx.ones((3,))], [fx.ones((3,)), fx.ones((3,))])
    assert seen["two"] == (tuple, tuple, tuple)


def test_one_element_argnums_gives_the_gradient_itself():
    g = fx.grad(lambda x: (x * x).sum(), argnums=(0,))(fx.array([1.0, 2.0]))
    assert isinstance(g, fx.array) and g.tolist() == [2.0, 4.0]


# --------------------------------------------------------------------------
# MLX's semantics where NumPy differs
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, value",
    [("int8", 300), ("int8", -129), ("uint8", -3), ("uint8", 256), ("uint32", 2**40), ("int32", 2**31),
     ("int64", 2**63), ("uint64", -1)],
)  # fmt: skip
def test_python_ints_out_of_range_of_the_array_dtype_raise(dtype, value):
    a = fx.array([1, 2], dtype=getattr(fx, dtype))
    with pytest.raises(ValueError, match=f"Converting {value} to {dtype} would result in overflow"):
        a + value
    with pytest.raises(ValueError, match="overflow"):
        a < value
    with pytest.raises(ValueError, match="overflow"):
        fx.full((2,), value, getattr(fx, dtype))


def test_python_ints_at_the_edge_of_the_range_are_fine():
    assert (fx.array([1], fx.int8) + 127).tolist() == [-128]
    assert (fx.array([1], fx.uint64) + (2**64 - 2)).tolist() == [2**64 - 1]
    assert (fx.array([True]) + 300).dtype == fx.int32


def test_non_array_operands_take_the_array_dtype():
    a = fx.array([1, 2], dtype=fx.uint16)
    assert fx.maximum(a, np.array([5, 6], np.uint64)).dtype == fx.uint16
    assert (a + np.array([1.5, 2.5])).dtype == fx.uint16
    assert fx.add(np.array([1], np.int8), 300).dtype == fx.int32  # two non-arrays: independent


def test_narrow_integer_reductions_widen():
    assert fx.sum(fx.array([100, 100], fx.int8)).item() == 200
    assert fx.sum(fx.array([200, 200], fx.uint8)).dtype == fx.uint32
    assert fx.prod(fx.array([100, 100], fx.int16)).item() == 10000
    assert fx.sum(fx.array([1, 2], fx.uint8), axis=()).dtype == fx.uint8
    assert fx.max(fx.array([100, 100], fx.int8)).dtype == fx.int8


def test_integer_mean_sums_in_the_integer_dtype_like_mlx():
    x = fx.array([2**31 - 1] * 2 + [0] * 8, dtype=fx.int32)
    assert fx.mean(x).item() == pytest.approx(-0.2)  # the int32 sum wraps to -2
    assert fx.mean(fx.array([1, 2, 4], fx.int8)).item() == pytest.approx(7 / 3)


def test_integer_power_with_a_negative_exponent_is_zero():
    assert (fx.array([1, -1, 2, 0], fx.int32) ** fx.array(-1, fx.int32)).tolist() == [0, 0, 0, 0]


def test_float_to_integer_casts_follow_c_on_x86():
    v = [-3.0, -1.5, -0.5, 300.0, float("nan"), 1e10, -1e10, float("inf"), 2.0**63, 2.0**64]
    src = np.array(v, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dtype in ["uint8", "uint16", "int8", "int16", "int32", "int64", "uint64"]:
            # Element by element (NumPy's vectorized loops differ from its scalar ones for uint32).
            expected = [int(np.array([x], np.float32).astype(dtype)[0]) for x in v]
            assert fx.array(src).astype(getattr(fx, dtype)).tolist() == expected, dtype
    assert fx.array([-3.0, -1.5, 1e10]).astype(fx.uint32).tolist() == [2**32 - 3, 2**32 - 1, 1410065408]
    assert fx.array([float("nan"), 2.5, 0.0]).astype(fx.bool_).tolist() == [True, True, False]


def test_linspace_ends_exactly_at_its_bounds():
    assert fx.linspace(1e30, 10, 2).tolist() == [float(np.float32(1e30)), 10.0]
    assert fx.linspace(0, 1, 0).shape == (0,)
    assert fx.linspace(3, 7, 1).tolist() == [3.0]
    with pytest.raises(ValueError, match="number of samples, -1, must be non-negative"):
        fx.linspace(0, 1, -1)


@pytest.mark.parametrize(
    "start, stop, num, dtype",
    [(-3, -3, 50, "uint16"), (10, 10, 50, "int8"), (10, 1, 4, "int32"), (0.5, -3, 50, "uint32"),
     (-1.5, 2, 50, "bool_"), (0.1, 7.3, 33, "float16"), (1e30, 10, 2, "float32"), (-2.5, 1e10, 7, "float64")],
)
def test_linspace_rounds_as_mlx(start, stop, num, dtype):
    # MLX computes (1 - t)·start + t·stop in float32 (float64 for a float64
    # result) and casts: an integer result truncates what float32 gives.
    expected = {
        ("uint16", 1): 65533, ("int8", 4): 9, ("int32", 1): 6, ("uint32", 21): 2**32 - 1,
    }
    got = np.array(fx.linspace(start, stop, num, dtype=getattr(fx, dtype)))
    inner = np.float64 if dtype == "float64" else np.float32
    t = np.arange(num, dtype=inner) / inner(num - 1)
    want = ((inner(1) - t) * inner(start) + t * inner(stop)).astype(np.dtype(dtype.rstrip("_")))
    assert np.array_equal(got, want)
    for (d, i), v in expected.items():
        if d == dtype:
            assert got[i] == v


def test_linspace_without_endpoint():
    assert fx.linspace(0, 1, 4, endpoint=False).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert fx.linspace(0, 1, 1, endpoint=False).tolist() == [0.0]


def test_arange_steps_in_the_target_dtype():
    assert fx.arange(-1.5, 5, dtype=fx.int64).tolist() == [-1, 0, 1, 2, 3, 4, 5]
    assert fx.arange(250, 300, 10, dtype=fx.uint8).tolist() == [250, 4, 14, 24, 34]
    # A negative start wraps in an unsigned dtype, as MLX's T(start) does.
    assert fx.arange(-3, 1, dtype=fx.uint64).tolist() == [2**64 - 3, 2**64 - 2, 2**64 - 1, 0]
    assert fx.arange(-1.5, 0.5, dtype=fx.uint64).tolist() == [2**64 - 1, 0]
    assert fx.arange(5, 0, -2, dtype=fx.uint64).tolist() == [5, 3, 1]
    with pytest.raises(ValueError, match="step must be nonzero"):
        fx.arange(0, 5, 0)


def test_full_types_python_scalars_against_dtype():
    assert fx.full((2,), 0.5, fx.int8).dtype == fx.float32  # a float needs a float dtype
    assert fx.full((2,), 1, fx.bool_).dtype == fx.int32
    assert fx.full((2,), 1, fx.float16).dtype == fx.float16
    assert fx.full((2,), False, fx.uint32).dtype == fx.uint32  # a bool takes the dtype
    assert fx.full((2,), True, fx.float16).tolist() == [1.0, 1.0]
    assert (fx.array([1], fx.int8) + True).dtype == fx.int8
    # MLX's to_array: a float with a non-real-float dtype is float32.
    assert fx.full((3,), 3.25, fx.complex64).dtype == fx.float32
    assert (fx.array([1 + 1j]) + 1.5).dtype == fx.complex64


def test_reducing_extents_of_one_is_not_a_reduction():
    # As MLX: no reduction enters the graph, so max's gradient through a
    # NaN is 1, and the result keeps the input's (widened) dtype.
    x = fx.array([[float("nan")]])
    assert fx.grad(lambda a: fx.max(a))(x).tolist() == [[1.0]]
    assert fx.grad(fx.checkpoint(lambda a: fx.min(a)))(fx.array([float("nan")])).tolist() == [1.0]
    assert fx.sum(fx.array([[7]], fx.int8), axis=1).dtype == fx.int32
    assert fx.prod(fx.ones((3, 1)), axis=1).shape == (3,)


def test_flatten_clamps_axes():
    assert fx.flatten(fx.ones((1,)), -2).shape == (1,)
    assert fx.ones((2, 3, 4)).flatten(-7, 9).shape == (24,)


def test_repr_summarizes_and_lays_out_as_mlx():
    assert repr(fx.arange(10)) == "array([0, 1, 2, ..., 7, 8, 9], dtype=int32)"
    assert repr(fx.zeros((2, 0, 2))) == "array([[],\n       []], dtype=float32)"
    assert repr(fx.arange(8).reshape(2, 2, 2)) == (
        "array([[[0, 1],\n        [2, 3]],\n       [[4, 5],\n        [6, 7]]], dtype=int32)"
    )


# --------------------------------------------------------------------------
# Complex special values: C99 Annex G (NumPy and MLX agree)
# --------------------------------------------------------------------------

SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e30, 100.0, -100.0]
Z = np.array([complex(a, b) for a in SPECIAL for b in SPECIAL], dtype=np.complex64)


def same_complex(a, b):
    a, b = np.asarray(a, np.complex128), np.asarray(b, np.complex128)
    ok = np.isclose(a.real, b.real, rtol=1e-5, equal_nan=True) & np.isclose(a.imag, b.imag, rtol=1e-5, equal_nan=True)
    return ok.all()


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "cos", "tanh"])
def test_complex_functions_at_special_values_match_numpy(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = getattr(np, name)(Z)
    assert same_complex(np.array(getattr(fx, name)(fx.array(Z))), expected)


def test_complex_exp_and_tanh_of_infinity():
    inf = complex(float("inf"), 0)
    assert fx.exp(fx.array([inf])).tolist() == [inf]
    assert fx.tanh(fx.array([inf])).tolist() == [complex(1, 0)]


def test_complex_division_and_product_recover_infinities():
    # C99 Annex G (std::complex, so MLX): x / 0 is infinite, x / inf is 0.
    q = fx.array([1 + 0j, 0 + 0j, 5 + 0j]) / fx.array([0j, 0j, complex(float("inf"), 0)])
    re = [z.real for z in q.tolist()]
    assert re[0] == float("inf") and np.isnan(re[1]) and q.tolist()[2] == 0j
    p = fx.array([complex(float("inf"), 0)]) * fx.array([complex(0, 1)])
    assert np.isinf(p.tolist()[0].imag)


def test_complex_power_recovers_infinities_as_mlx():
    # a^b = e^(b ln a) with the product's recovery of infinities: an infinite
    # part of b ln a makes it infinite, not NaN (MLX's values; the fuzz found
    # NaN here).
    nan, inf = float("nan"), float("inf")
    base = fx.array([complex(-1, 0), complex(0.5, 0), complex(nan, inf), complex(nan, inf)])
    expo = fx.array([complex(nan, inf), complex(inf, inf), complex(inf, 0), complex(-inf, 0)])
    got = (base**expo).tolist()
    assert got[0] == 0j and got[1] == 0j and got[3] == 0j
    assert got[2].real == inf and np.isnan(got[2].imag)


# --------------------------------------------------------------------------
# A panic that slips through is a RuntimeError naming the function
# --------------------------------------------------------------------------


def test_a_rust_panic_becomes_a_runtime_error():
    with pytest.raises(RuntimeError, match=r"\[_panic_for_tests\] Internal error.*boom"):
        fx._core._panic_for_tests("boom")
    try:
        fx._core._panic_for_tests("again")
    except Exception as e:  # noqa: BLE001  (the point: an ordinary Exception)
        assert type(e) is RuntimeError


def test_unstacking_more_arrays_than_memory_holds_is_a_memory_error():
    # The fuzz found this aborting the process (a failed allocation).
    view = fx.broadcast_to(fx.array([1, 2], dtype=fx.int8), (2**40, 2))
    with pytest.raises(MemoryError, match="unstack"):
        fx.unstack(view, axis=-2)
