"""Binary and unary element-wise ops, `where`, scalar weak typing, operators."""

import math
import operator

import numpy as np
import pytest

import ferrox as fx
from conftest import (
    ALL_DTYPES,
    FLOATS,
    INTS,
    LAYOUTS_2D,
    NUMERIC,
    REAL,
    SIGNED,
    UNSIGNED,
    assert_close,
    at_least_float,
    cast_ref,
    fxd,
    is_inexact,
    make_operand,
    promote,
    rand,
    ref_dtype,
    to_fx,
    weak_scalar_type,
)

# --------------------------------------------------------------------------
# op table
# --------------------------------------------------------------------------

NO_COMPLEX = [d for d in ALL_DTYPES if d != "complex64"]


class BinOp:
    def __init__(self, name, np_fn, dtypes, kind_a="normal", kind_b="normal",
                 result="promote", symbol=None):
        self.name = name
        self.fx_fn = getattr(fx, name)
        self.np_fn = np_fn
        self.dtypes = dtypes
        self.kind_a = kind_a
        self.kind_b = kind_b
        self.result = result  # "promote" | "float" | "bool"
        self.symbol = symbol

    def result_dtype(self, p):
        if self.result == "bool":
            return "bool_"
        if self.result == "float":
            return at_least_float(p)
        return p

    def compute_dtype(self, p):
        # comparisons are evaluated in the promoted type
        return p if self.result == "bool" else self.result_dtype(p)

    def kinds(self, da, db):
        ka, kb = self.kind_a, self.kind_b
        if self.name == "power":
            ka = "positive" if is_inexact(da) else "small"
            kb = "exponent"
        return ka, kb

    def __repr__(self):
        return self.name


BINARY = [
    BinOp("add", np.add, ALL_DTYPES, symbol="+"),
    BinOp("subtract", np.subtract, NUMERIC, symbol="-"),
    BinOp("multiply", np.multiply, ALL_DTYPES, symbol="*"),
    BinOp("divide", np.divide, NUMERIC, kind_b="nonzero", result="float", symbol="/"),
    BinOp("power", np.power, REAL, symbol="**"),
    BinOp("maximum", np.maximum, NO_COMPLEX),
    BinOp("minimum", np.minimum, NO_COMPLEX),
    BinOp("equal", np.equal, ALL_DTYPES, result="bool", symbol="=="),
    BinOp("not_equal", np.not_equal, ALL_DTYPES, result="bool", symbol="!="),
    BinOp("less", np.less, NO_COMPLEX, result="bool", symbol="<"),
    BinOp("less_equal", np.less_equal, NO_COMPLEX, result="bool", symbol="<="),
    BinOp("greater", np.greater, NO_COMPLEX, result="bool", symbol=">"),
    BinOp("greater_equal", np.greater_equal, NO_COMPLEX, result="bool", symbol=">="),
]
BINARY_BY_NAME = {op.name: op for op in BINARY}


def binary_reference(op, a_np, da, b_np, db):
    p = promote(da, db)
    c = op.compute_dtype(p)
    with np.errstate(all="ignore"):
        ref = op.np_fn(cast_ref(a_np, c), cast_ref(b_np, c))
    return ref, op.result_dtype(p)


def check_binary(op, a_np, a_fx, da, b_np, b_fx, db):
    out = op.fx_fn(a_fx, b_fx)
    ref, rd = binary_reference(op, a_np, da, b_np, db)
    assert_close(out, ref, rd)
    return out


# --------------------------------------------------------------------------
# binary: same dtype, every layout
# --------------------------------------------------------------------------

SAME_DTYPE_CASES = [
    pytest.param(op, d, id=f"{op.name}-{d}") for op in BINARY for d in op.dtypes
]


@pytest.mark.parametrize("layout", list(LAYOUTS_2D))
@pytest.mark.parametrize("op,dtype", SAME_DTYPE_CASES)
def test_binary_layouts(op, dtype, layout, rng):
    ka, kb = op.kinds(dtype, dtype)
    a_np, a_fx = make_operand(rng, layout, dtype, ka)
    b_np, b_fx = make_operand(rng, "contiguous" if layout != "empty" else "empty",
                              dtype, kb)
    check_binary(op, a_np, a_fx, dtype, b_np, b_fx, dtype)
    if op.name not in ("divide", "power"):  # operand domains are asymmetric
        # the same layout as the right-hand operand
        check_binary(op, b_np, b_fx, dtype, a_np, a_fx, dtype)


@pytest.mark.parametrize("op,dtype", SAME_DTYPE_CASES)
def test_binary_both_noncontiguous(op, dtype, rng):
    ka, kb = op.kinds(dtype, dtype)
    a_np, a_fx = make_operand(rng, "transposed", dtype, ka)
    b_np, b_fx = make_operand(rng, "negstep", dtype, kb)
    check_binary(op, a_np, a_fx, dtype, b_np, b_fx, dtype)


@pytest.mark.parametrize("op,dtype", SAME_DTYPE_CASES)
def test_binary_zero_dim(op, dtype, rng):
    ka, kb = op.kinds(dtype, dtype)
    a_np = rand(rng, (), dtype, ka)
    b_np = rand(rng, (), dtype, kb)
    out = check_binary(op, a_np, to_fx(a_np, dtype), dtype, b_np, to_fx(b_np, dtype), dtype)
    assert out.ndim == 0 and out.shape == ()


# --------------------------------------------------------------------------
# binary: broadcasting
# --------------------------------------------------------------------------

BROADCAST_SHAPES = [
    ((3, 1), (4,)),
    ((3, 1), (1, 4)),
    ((2, 1, 4), (3, 1)),
    ((), (3, 4)),
    ((3, 4), ()),
    ((1,), (5,)),
    ((5,), (1,)),
    ((0, 1), (1, 3)),
    ((2, 0, 3), (1, 3)),
    ((4, 1, 1, 2), (3, 1)),
]
BCAST_DTYPES = ["bool_", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
                "float64", "complex64"]


def _bshape(s1, s2):
    return np.broadcast_shapes(s1, s2)


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
@pytest.mark.parametrize(
    "op,dtype",
    [pytest.param(op, d, id=f"{op.name}-{d}") for op in BINARY for d in BCAST_DTYPES
     if d in op.dtypes],
)
def test_binary_broadcast(op, dtype, shapes, rng):
    sa, sb = shapes
    ka, kb = op.kinds(dtype, dtype)
    a_np = rand(rng, sa, dtype, ka)
    b_np = rand(rng, sb, dtype, kb)
    out = check_binary(op, a_np, to_fx(a_np, dtype), dtype, b_np, to_fx(b_np, dtype), dtype)
    assert out.shape == _bshape(sa, sb)


@pytest.mark.parametrize(
    "op,dtype",
    [pytest.param(op, d, id=f"{op.name}-{d}") for op in BINARY
     for d in ["bool_", "int32", "float32", "bfloat16"] if d in op.dtypes],
)
def test_binary_broadcast_to_view_operand(op, dtype, rng):
    """An operand made by broadcast_to (zero strides) behaves like numpy's."""
    ka, kb = op.kinds(dtype, dtype)
    a_base = rand(rng, (1, 4), dtype, ka)
    a_np = np.broadcast_to(a_base, (3, 4))
    a_fx = fx.broadcast_to(to_fx(a_base, dtype), (3, 4))
    b_np, b_fx = make_operand(rng, "transposed", dtype, kb)
    check_binary(op, a_np, a_fx, dtype, b_np, b_fx, dtype)


# --------------------------------------------------------------------------
# binary: mixed dtypes follow MLX's promotion table
# --------------------------------------------------------------------------

PAIR_OPS = ["add", "multiply", "divide", "maximum", "less", "equal", "subtract"]


MIXED_CASES = [
    pytest.param(op, da, db, id=f"{op.name}-{da}-{db}")
    for op in (BINARY_BY_NAME[n] for n in PAIR_OPS)
    for da in op.dtypes
    for db in op.dtypes
]


@pytest.mark.parametrize("op,da,db", MIXED_CASES)
def test_binary_mixed_dtypes(op, da, db, rng):
    ka, kb = op.kinds(da, db)
    a_np = rand(rng, (2, 3), da, ka)
    b_np = rand(rng, (2, 3), db, kb)
    check_binary(op, a_np, to_fx(a_np, da), da, b_np, to_fx(b_np, db), db)


@pytest.mark.parametrize(
    "da,db,expected",
    [
        ("int8", "uint8", "int16"),
        ("uint64", "int64", "float32"),
        ("float16", "bfloat16", "float32"),
        ("float64", "float32", "float64"),
        ("int32", "complex64", "complex64"),
        ("float64", "complex64", "complex64"),
        ("bool_", "int8", "int8"),
        ("uint32", "int32", "int64"),
        ("int64", "float16", "float16"),
        ("bfloat16", "int32", "bfloat16"),
        ("uint16", "int16", "int32"),
    ],
)
def test_promotion_examples(da, db, expected):
    a = fx.ones((2,), dtype=fxd(da))
    b = fx.ones((2,), dtype=fxd(db))
    assert (a + b).dtype == fxd(expected)
    assert (b + a).dtype == fxd(expected)
    assert fx.multiply(a, b).dtype == fxd(expected)


@pytest.mark.parametrize("dtype", INTS + ["bool_"])
def test_integer_divide_gives_float32(dtype, rng):
    a_np = rand(rng, (3, 4), dtype)
    b_np = rand(rng, (3, 4), dtype, "nonzero")
    out = fx.divide(to_fx(a_np, dtype), to_fx(b_np, dtype))
    assert out.dtype == fx.float32
    assert_close(out, a_np.astype(np.float64) / b_np.astype(np.float64), "float32")


# --------------------------------------------------------------------------
# scalars are weakly typed (MLX)
# --------------------------------------------------------------------------

SCALAR_CASES = [
    ("int32", 1.5, "float32"),
    ("int32", 2, "int32"),
    ("int8", 1, "int8"),
    ("uint8", 3, "uint8"),
    ("int16", 2, "int16"),
    ("uint64", 2, "uint64"),
    ("int64", 2.5, "float32"),
    ("uint16", 0.5, "float32"),
    ("float16", 2.0, "float16"),
    ("float16", 3, "float16"),
    ("bfloat16", 2.0, "bfloat16"),
    ("bfloat16", 2, "bfloat16"),
    ("float32", 1, "float32"),
    ("float64", 1.5, "float64"),
    ("complex64", 1.5, "complex64"),
    ("bool_", 1, "int32"),
    ("bool_", 1.5, "float32"),
    ("bool_", True, "bool_"),
    ("int32", True, "int32"),
    ("float32", 2j, "complex64"),
]


def _scalar_ref(x_np, dtype, scalar, rd, fn):
    a = cast_ref(x_np, rd)
    s = np.array(scalar).astype(ref_dtype(rd))
    with np.errstate(all="ignore"):
        return fn(a, s)


@pytest.mark.parametrize("dtype,scalar,expected", SCALAR_CASES, ids=str)
def test_scalar_weak_typing(dtype, scalar, expected, rng):
    assert weak_scalar_type(dtype, scalar) == expected
    x_np = rand(rng, (2, 3), dtype, "positive")
    x = to_fx(x_np, dtype)
    assert_close(x + scalar, _scalar_ref(x_np, dtype, scalar, expected, np.add), expected)
    assert_close(scalar + x, _scalar_ref(x_np, dtype, scalar, expected, np.add), expected)
    assert_close(x * scalar, _scalar_ref(x_np, dtype, scalar, expected, np.multiply),
                 expected)
    assert_close(fx.add(x, scalar), _scalar_ref(x_np, dtype, scalar, expected, np.add),
                 expected)
    assert_close(fx.multiply(scalar, x),
                 _scalar_ref(x_np, dtype, scalar, expected, np.multiply), expected)


@pytest.mark.parametrize("dtype", REAL)
def test_scalar_reflected_ops(dtype, rng):
    x_np = rand(rng, (3, 4), dtype, "positive")
    x = to_fx(x_np, dtype)
    rd = weak_scalar_type(dtype, 2)
    if dtype not in UNSIGNED:
        assert_close(2 - x, cast_ref(2, rd) - cast_ref(x_np, rd), rd)
    assert_close(20 - x, cast_ref(20, rd) - cast_ref(x_np, rd), rd)
    assert_close(x - 1, cast_ref(x_np, rd) - cast_ref(1, rd), rd)
    fd = at_least_float(weak_scalar_type(dtype, 1.5))
    assert_close(1.5 / x, 1.5 / cast_ref(x_np, fd), fd)
    assert_close(x / 2, cast_ref(x_np, fd) / 2.0, at_least_float(rd))
    # comparisons with scalars give bool
    assert_close(x < 3, cast_ref(x_np, rd) < 3, "bool_")
    assert_close(x >= 2.5, cast_ref(x_np, fd) >= 2.5, "bool_")
    assert_close(x == 1, cast_ref(x_np, rd) == 1, "bool_")
    assert_close(5 > x, 5 > cast_ref(x_np, rd), "bool_")


@pytest.mark.parametrize("dtype", ["int32", "float32", "float16", "int8"])
def test_scalar_power(dtype, rng):
    x_np = rand(rng, (3, 4), dtype, "small" if dtype in INTS else "positive")
    x = to_fx(x_np, dtype)
    assert_close(x**2, cast_ref(x_np, dtype) ** 2, dtype)
    assert_close(fx.power(x, 3), cast_ref(x_np, dtype) ** 3, dtype)
    if dtype in FLOATS:
        assert_close(2.0**x, 2.0 ** cast_ref(x_np, dtype), dtype)
        assert_close(x**0.5, np.sqrt(cast_ref(x_np, dtype)), dtype)


def test_scalar_scalar_binary():
    assert fx.add(1, 2).dtype == fx.int32
    assert fx.add(1, 2).item() == 3
    assert fx.multiply(1.5, 2).dtype == fx.float32
    assert fx.multiply(1.5, 2).item() == 3.0


# --------------------------------------------------------------------------
# operators
# --------------------------------------------------------------------------


SYMBOLS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "**": operator.pow,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@pytest.mark.parametrize("op", [o for o in BINARY if o.symbol], ids=repr)
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_operators_match_functions(op, dtype, rng):
    ka, kb = op.kinds(dtype, dtype)
    a_np, a_fx = make_operand(rng, "transposed", dtype, ka)
    b_np, b_fx = make_operand(rng, "contiguous", dtype, kb)
    out = SYMBOLS[op.symbol](a_fx, b_fx)
    ref, rd = binary_reference(op, a_np, dtype, b_np, dtype)
    assert_close(out, ref, rd)


def test_unary_operators(rng):
    x_np = rand(rng, (3, 4), "float32")
    x = to_fx(x_np, "float32")
    assert_close(-x, -x_np, "float32")
    assert_close(abs(x), np.abs(x_np), "float32")
    i_np = rand(rng, (3, 4), "int16")
    assert_close(-to_fx(i_np, "int16"), -i_np, "int16")
    assert_close(abs(to_fx(i_np, "int16")), np.abs(i_np), "int16")


def test_inplace_operators_rebind(rng):
    x_np = rand(rng, (3, 4), "int32")
    a = to_fx(x_np, "int32")
    a += 1
    assert_close(a, x_np + 1, "int32")
    a -= 3
    assert_close(a, x_np - 2, "int32")
    a *= 2
    assert_close(a, (x_np - 2) * 2, "int32")
    f_np = rand(rng, (2, 2), "float32", "positive")
    f = to_fx(f_np, "float32")
    f /= 2.0
    assert_close(f, f_np / 2, "float32")
    f **= 2
    assert_close(f, (f_np / 2) ** 2, "float32")
    m = to_fx(f_np, "float32")
    m @= fx.identity(2)
    assert_close(m, f_np, "float32")


def test_comparison_operators_return_arrays(rng):
    a = fx.array([1, 2, 3])
    b = fx.array([3, 2, 1])
    eq = a == b
    ne = a != b
    assert isinstance(eq, fx.array) and isinstance(ne, fx.array)
    assert eq.dtype == fx.bool_
    assert eq.tolist() == [False, True, False]
    assert ne.tolist() == [True, False, True]
    assert (a < b).tolist() == [True, False, False]
    assert (a <= b).tolist() == [True, True, False]
    assert (a > b).tolist() == [False, False, True]
    assert (a >= b).tolist() == [False, True, True]


# --------------------------------------------------------------------------
# unary ops
# --------------------------------------------------------------------------


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class UnOp:
    def __init__(self, name, np_fn, dtypes, kind="normal", result="same"):
        self.name = name
        self.fx_fn = getattr(fx, name)
        self.np_fn = np_fn
        self.dtypes = dtypes
        self.kind = kind
        self.result = result

    def result_dtype(self, d):
        return d if self.result == "same" else at_least_float(d)

    def __repr__(self):
        return self.name


TRANSCENDENTAL_DTYPES = ["bool_"] + REAL + ["complex64"]
UNARY = [
    UnOp("negative", np.negative, NUMERIC),
    UnOp("abs", np.abs, REAL),
    UnOp("exp", np.exp, TRANSCENDENTAL_DTYPES, kind="small", result="float"),
    UnOp("log", np.log, [d for d in TRANSCENDENTAL_DTYPES if d != "bool_"],
         kind="positive", result="float"),
    UnOp("sqrt", np.sqrt, [d for d in TRANSCENDENTAL_DTYPES if d != "bool_"],
         kind="positive", result="float"),
    UnOp("sin", np.sin, TRANSCENDENTAL_DTYPES, result="float"),
    UnOp("cos", np.cos, TRANSCENDENTAL_DTYPES, result="float"),
    # complex tanh has poles near the sampled inputs; real dtypes only
    UnOp("tanh", np.tanh, ["bool_"] + REAL, result="float"),
    UnOp("sigmoid", _sigmoid, ["bool_"] + REAL, result="float"),
]

UNARY_CASES = [pytest.param(op, d, id=f"{op.name}-{d}") for op in UNARY for d in op.dtypes]


def unary_reference(op, x_np, d):
    rd = op.result_dtype(d)
    with np.errstate(all="ignore"):
        if rd in ("complex64",):
            ref = op.np_fn(x_np.astype(np.complex128))
        elif rd in FLOATS:
            ref = op.np_fn(cast_ref(x_np, d).astype(np.float64))
        else:
            ref = op.np_fn(x_np.astype(ref_dtype(rd)))
    return ref, rd


@pytest.mark.parametrize(
    "layout", list(LAYOUTS_2D) + ["zero_dim", "broadcast"]
)
@pytest.mark.parametrize("op,dtype", UNARY_CASES)
def test_unary(op, dtype, layout, rng):
    if layout == "zero_dim":
        x_np = rand(rng, (), dtype, op.kind)
        x_fx = to_fx(x_np, dtype)
    elif layout == "broadcast":
        base = rand(rng, (1, 4), dtype, op.kind)
        x_np = np.broadcast_to(base, (3, 4))
        x_fx = fx.broadcast_to(to_fx(base, dtype), (3, 4))
    else:
        x_np, x_fx = make_operand(rng, layout, dtype, op.kind)
    ref, rd = unary_reference(op, x_np, dtype)
    out = op.fx_fn(x_fx)
    assert_close(out, ref, rd)


@pytest.mark.parametrize("dtype", INTS + ["bool_"])
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid"])
def test_unary_integer_inputs_give_float32(name, dtype):
    x = fx.ones((2, 2), dtype=fxd(dtype))
    assert getattr(fx, name)(x).dtype == fx.float32


@pytest.mark.parametrize(
    "name,dtype",
    [(n, d) for n in ["exp", "log", "sqrt", "sin", "cos", "tanh"]
     for d in ["float16", "bfloat16", "float64", "complex64"]
     if (n, d) != ("tanh", "complex64")],  # complex tanh is not required
)
def test_unary_float_keeps_dtype(name, dtype):
    x = fx.ones((2,), dtype=fxd(dtype))
    assert getattr(fx, name)(x).dtype == fxd(dtype)


def test_negative_bool_raises():
    with pytest.raises(ValueError, match="negative"):
        fx.negative(fx.array([True, False]))
    with pytest.raises(ValueError):
        -fx.array([True])


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_negative_unsigned_wraps(dtype):
    x_np = np.array([0, 1, 5], dtype=dtype)
    assert_close(fx.negative(to_fx(x_np, dtype)), -x_np, dtype)


@pytest.mark.parametrize("dtype", SIGNED)
def test_abs_signed_exact(dtype, rng):
    x_np = rand(rng, (4, 5), dtype)
    assert_close(fx.abs(to_fx(x_np, dtype)), np.abs(x_np), dtype)


def test_abs_complex_returns_float32(rng):
    """MLX: abs of complex64 is the (real) magnitude with dtype float32."""
    z_np = rand(rng, (3, 4), "complex64")
    out = fx.abs(to_fx(z_np, "complex64"))
    assert_close(out, np.abs(z_np.astype(np.complex128)), "float32")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_unary_special_values(dtype):
    x = fx.array([0.0, 1.0, -1.0, 4.0], dtype=fx.float32).astype(fxd(dtype))
    assert to_np_list(fx.exp(x))[0] == 1.0
    assert to_np_list(fx.sqrt(x))[3] == 2.0
    assert math.isnan(to_np_list(fx.sqrt(x))[2])
    assert to_np_list(fx.log(x))[0] == -math.inf
    assert to_np_list(fx.log(x))[1] == 0.0
    assert to_np_list(fx.sigmoid(x))[0] == 0.5
    assert to_np_list(fx.tanh(x))[0] == 0.0


def to_np_list(a):
    return a.astype(fx.float64).tolist()


def test_sigmoid_extremes():
    x = fx.array([-100.0, 100.0, 0.0])
    out = fx.sigmoid(x).tolist()
    assert out[0] == pytest.approx(0.0, abs=1e-30)
    assert out[1] == pytest.approx(1.0)
    assert out[2] == 0.5
    assert not any(math.isnan(v) for v in out)


# --------------------------------------------------------------------------
# where
# --------------------------------------------------------------------------

WHERE_DTYPES = ["bool_", "int8", "uint32", "int64", "float16", "bfloat16", "float32",
                "float64", "complex64"]


@pytest.mark.parametrize("layout", list(LAYOUTS_2D))
@pytest.mark.parametrize("dtype", WHERE_DTYPES)
def test_where_layouts(dtype, layout, rng):
    c_np, c_fx = make_operand(rng, layout, "bool_")
    x_np, x_fx = make_operand(rng, "contiguous" if layout != "empty" else "empty", dtype)
    y_np, y_fx = make_operand(rng, layout, dtype)
    out = fx.where(c_fx, x_fx, y_fx)
    assert_close(out, np.where(c_np, cast_ref(x_np, dtype), cast_ref(y_np, dtype)), dtype)


@pytest.mark.parametrize(
    "sc,sx,sy", [((3, 1), (1, 4), ()), ((4,), (3, 1), (3, 4)), ((), (2, 3), (2, 1)),
                 ((2, 1, 3), (4, 1), (3,))]
)
def test_where_broadcast(sc, sx, sy, rng):
    c = rand(rng, sc, "bool_")
    x = rand(rng, sx, "float32")
    y = rand(rng, sy, "float32")
    out = fx.where(to_fx(c, "bool_"), to_fx(x, "float32"), to_fx(y, "float32"))
    assert_close(out, np.where(c, x, y), "float32")


@pytest.mark.parametrize(
    "dx,dy", [("int32", "float32"), ("int8", "uint8"), ("float16", "float32"),
              ("bool_", "int16"), ("bfloat16", "float16")]
)
def test_where_promotes(dx, dy, rng):
    c = rand(rng, (3, 4), "bool_")
    x = rand(rng, (3, 4), dx)
    y = rand(rng, (3, 4), dy)
    rd = promote(dx, dy)
    out = fx.where(to_fx(c, "bool_"), to_fx(x, dx), to_fx(y, dy))
    assert_close(out, np.where(c, cast_ref(x, rd), cast_ref(y, rd)), rd)


def test_where_scalars():
    c = fx.array([True, False, True])
    out = fx.where(c, fx.array([1.0, 2.0, 3.0]), 0.0)
    assert out.dtype == fx.float32
    assert out.tolist() == [1.0, 0.0, 3.0]


# --------------------------------------------------------------------------
# a larger, odd-sized case to exercise any vectorised/threaded kernel tails
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 7, 33, 1000, 4099, 70001])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "float64"])
def test_binary_and_unary_odd_sizes(n, dtype, rng):
    a = rand(rng, (n,), dtype)
    b = rand(rng, (n,), dtype)
    assert_close(fx.add(to_fx(a, dtype), to_fx(b, dtype)),
                 cast_ref(a, dtype) + cast_ref(b, dtype), dtype)
    e = rand(rng, (n,), dtype, "small")
    assert_close(fx.exp(to_fx(e, dtype)), np.exp(cast_ref(e, dtype)), at_least_float(dtype))
    # strided: every third element, reversed
    assert_close(fx.multiply(to_fx(a, dtype)[::-3], to_fx(b, dtype)[::-3]),
                 cast_ref(a, dtype)[::-3] * cast_ref(b, dtype)[::-3], dtype)
