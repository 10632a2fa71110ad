"""reshape / transpose / broadcast_to / expand_dims / squeeze / flatten /
concatenate / stack against NumPy."""

import itertools

import numpy as np
import pytest

import ferrox as fx
from conftest import (
    LAYOUTS_2D,
    assert_close,
    cast_ref,
    make_operand,
    promote,
    rand,
    to_fx,
)

# one dtype per element size, plus bool and the 16-bit floats
SHAPE_DTYPES = ["bool_", "int8", "uint16", "bfloat16", "float16", "float32", "int64",
                "float64", "complex64"]


def check_same(out, ref, dtype):
    """Exact comparison: shape ops never change values."""
    assert_close(out, cast_ref(ref, dtype), dtype, rtol=0, atol=0)
    # and the result must also behave correctly as the input of another op
    if dtype not in ("bool_",):
        assert_close(out * 1, cast_ref(ref, dtype), dtype, rtol=0, atol=0)


# --------------------------------------------------------------------------
# reshape
# --------------------------------------------------------------------------

RESHAPES = [(12,), (4, 3), (2, -1), (2, 2, 3), (-1,), (1, 12, 1), (3, -1, 2), (-1, 1)]
EMPTY_RESHAPES = [(0,), (4, 0), (0, 2, 2), (2, 0, 2)]


@pytest.mark.parametrize("shape", RESHAPES, ids=str)
@pytest.mark.parametrize("layout", [k for k in LAYOUTS_2D if k != "empty"])
@pytest.mark.parametrize("dtype", SHAPE_DTYPES)
def test_reshape(dtype, layout, shape, rng):
    x_np, x_fx = make_operand(rng, layout, dtype)
    ref = x_np.reshape(shape)
    check_same(fx.reshape(x_fx, shape), ref, dtype)
    check_same(x_fx.reshape(*shape), ref, dtype)
    check_same(x_fx.reshape(shape), ref, dtype)
    check_same(x_fx.reshape(list(shape)), ref, dtype)


@pytest.mark.parametrize("shape", EMPTY_RESHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_reshape_empty(dtype, shape, rng):
    x_np, x_fx = make_operand(rng, "empty", dtype)
    check_same(fx.reshape(x_fx, shape), x_np.reshape(shape), dtype)


def test_reshape_zero_dim(rng):
    x_np = rand(rng, (), "float32")
    x = to_fx(x_np, "float32")
    check_same(fx.reshape(x, (1, 1)), x_np.reshape(1, 1), "float32")
    check_same(fx.reshape(x, (-1,)), x_np.reshape(-1), "float32")
    check_same(fx.reshape(fx.reshape(x, (1,)), ()), x_np, "float32")
    assert x.reshape(1).shape == (1,)


def test_reshape_method_single_int(rng):
    # MLX: the method takes *shape, so a single int works; fx.reshape takes a
    # sequence
    x_np = rand(rng, (3, 4), "int32")
    check_same(to_fx(x_np, "int32").reshape(12), x_np.reshape(12), "int32")
    check_same(to_fx(x_np, "int32").reshape(-1), x_np.reshape(-1), "int32")


# --------------------------------------------------------------------------
# transpose
# --------------------------------------------------------------------------

PERMS = [None] + list(itertools.permutations(range(3))) + [(-1, 0, 1), (0, -1, -2)]


@pytest.mark.parametrize("axes", PERMS, ids=str)
@pytest.mark.parametrize("dtype", SHAPE_DTYPES)
def test_transpose_3d(dtype, axes, rng):
    x_np = rand(rng, (2, 3, 4), dtype)
    x = to_fx(x_np, dtype)
    ref = np.transpose(x_np, axes)
    check_same(fx.transpose(x, axes), ref, dtype)
    if axes is None:
        check_same(x.transpose(), ref, dtype)
        check_same(fx.transpose(x), ref, dtype)
        check_same(x.T, ref, dtype)
    else:
        check_same(x.transpose(*axes), ref, dtype)
        check_same(fx.transpose(x, list(axes)), ref, dtype)


@pytest.mark.parametrize("layout", list(LAYOUTS_2D))
@pytest.mark.parametrize("dtype", SHAPE_DTYPES)
def test_transpose_of_views(dtype, layout, rng):
    x_np, x_fx = make_operand(rng, layout, dtype)
    check_same(x_fx.T, x_np.T, dtype)
    check_same(x_fx.T.T, x_np, dtype)
    check_same(fx.transpose(x_fx, (1, 0)), x_np.T, dtype)


def test_transpose_1d_and_0d(rng):
    v_np = rand(rng, (5,), "float32")
    check_same(to_fx(v_np, "float32").T, v_np, "float32")
    s = fx.array(3.0)
    assert s.T.shape == () and s.T.item() == 3.0


# --------------------------------------------------------------------------
# broadcast_to
# --------------------------------------------------------------------------

BROADCASTS = [((3,), (2, 3)), ((3, 1), (3, 4)), ((), (2, 2)), ((1, 4), (2, 3, 4)),
              ((2, 1, 3), (2, 5, 3)), ((1,), (0,)), ((4,), (0, 4)), ((2, 3), (2, 3)),
              ((1, 1), (1, 1, 1, 1))]


@pytest.mark.parametrize("src,dst", BROADCASTS, ids=str)
@pytest.mark.parametrize("dtype", SHAPE_DTYPES)
def test_broadcast_to(dtype, src, dst, rng):
    x_np = rand(rng, src, dtype)
    out = fx.broadcast_to(to_fx(x_np, dtype), dst)
    check_same(out, np.broadcast_to(x_np, dst), dtype)


@pytest.mark.parametrize("layout", [k for k in LAYOUTS_2D if k != "empty"])
def test_broadcast_to_of_views(layout, rng):
    x_np, x_fx = make_operand(rng, layout, "float32")
    check_same(fx.broadcast_to(x_fx, (2, 3, 4)), np.broadcast_to(x_np, (2, 3, 4)), "float32")
    col_np = x_np[:, :1]
    col_fx = x_fx[:, :1]
    check_same(fx.broadcast_to(col_fx, (3, 5)), np.broadcast_to(col_np, (3, 5)), "float32")
    # broadcast of a broadcast, then transposed
    bb = fx.broadcast_to(fx.broadcast_to(col_fx, (3, 5)), (2, 3, 5))
    check_same(fx.transpose(bb, (2, 0, 1)),
               np.transpose(np.broadcast_to(col_np, (2, 3, 5)), (2, 0, 1)), "float32")


# --------------------------------------------------------------------------
# expand_dims / squeeze / flatten
# --------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3, (0, 2), (0, -1), (1, 3), [0, 1]],
                         ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "negstep", "empty"])
def test_expand_dims(layout, axis, rng):
    x_np, x_fx = make_operand(rng, layout, "int16")
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    check_same(fx.expand_dims(x_fx, axis), np.expand_dims(x_np, np_axis), "int16")


def test_expand_dims_zero_dim():
    x = fx.array(2.5)
    assert fx.expand_dims(x, 0).shape == (1,)
    assert fx.expand_dims(x, (0, 1)).shape == (1, 1)
    assert fx.expand_dims(x, -1).tolist() == [2.5]


@pytest.mark.parametrize("axis", [None, 0, 2, -1, -3, (0, 2), (0, -3, 4), [4]], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "bool_", "complex64"])
def test_squeeze(dtype, axis, rng):
    x_np = rand(rng, (1, 3, 1, 4, 1), dtype)
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    check_same(fx.squeeze(to_fx(x_np, dtype), axis), np.squeeze(x_np, np_axis), dtype)
    if axis is None:
        check_same(fx.squeeze(to_fx(x_np, dtype)), np.squeeze(x_np), dtype)


def test_squeeze_views_and_edge_cases(rng):
    x_np = rand(rng, (4, 1, 3), "float32")
    x = to_fx(x_np, "float32")
    check_same(fx.squeeze(x.T), np.squeeze(x_np.T), "float32")
    check_same(fx.squeeze(x[::-2]), np.squeeze(x_np[::-2]), "float32")
    s = fx.squeeze(fx.array(1.0))
    assert s.shape == ()
    assert fx.squeeze(fx.zeros((1, 1))).shape == ()
    assert fx.squeeze(fx.zeros((0, 1)), 1).shape == (0,)


FLATTENS = [(0, -1), (1, -1), (0, 1), (-2, -1), (1, 1), (0, 0), (2, 2), (0, 2)]


@pytest.mark.parametrize("start,end", FLATTENS, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "empty"])
def test_flatten(layout, start, end, rng):
    shapes = {"contiguous": (2, 3, 4), "transposed": (4, 3, 2), "sliced": (4, 6, 8),
              "empty": (2, 0, 4)}
    base = rand(rng, shapes[layout], "float32")
    views = {"contiguous": lambda x: x, "transposed": lambda x: x.T,
             "sliced": lambda x: x[::2, 1::2, ::-2], "empty": lambda x: x}
    x_np = views[layout](base)
    x_fx = views[layout](to_fx(base, "float32"))
    nd = x_np.ndim
    s, e = start % nd, end % nd
    ref_shape = x_np.shape[:s] + (int(np.prod(x_np.shape[s:e + 1])),) + x_np.shape[e + 1:]
    ref = x_np.reshape(ref_shape)
    check_same(fx.flatten(x_fx, start, end), ref, "float32")
    check_same(fx.flatten(x_fx, start_axis=start, end_axis=end), ref, "float32")
    if (start, end) == (0, -1):
        check_same(fx.flatten(x_fx), x_np.reshape(-1), "float32")


def test_flatten_zero_dim():
    out = fx.flatten(fx.array(7))
    assert out.shape == (1,)
    assert out.tolist() == [7]


# --------------------------------------------------------------------------
# concatenate / stack
# --------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
@pytest.mark.parametrize("dtype", SHAPE_DTYPES)
def test_concatenate(dtype, axis, rng):
    ax = axis % 2
    shapes = [[3, 4], [3, 4], [3, 4]]
    shapes[1][ax] = 2
    shapes[2][ax] = 0  # an empty part
    parts_np = [rand(rng, s, dtype) for s in shapes]
    parts_fx = [to_fx(p, dtype) for p in parts_np]
    # one non-contiguous part
    parts_np[0] = parts_np[0][::-1]
    parts_fx[0] = parts_fx[0][::-1]
    check_same(fx.concatenate(parts_fx, axis=axis), np.concatenate(parts_np, axis=axis), dtype)
    check_same(fx.concatenate(tuple(parts_fx), axis), np.concatenate(parts_np, axis), dtype)


def test_concatenate_default_axis_and_transposed(rng):
    a = rand(rng, (4, 3), "float32")
    b = rand(rng, (4, 2), "float32")
    out = fx.concatenate([to_fx(a, "float32").T, to_fx(b, "float32").T])
    check_same(out, np.concatenate([a.T, b.T]), "float32")
    one = fx.concatenate([to_fx(a, "float32")])
    check_same(one, a, "float32")


@pytest.mark.parametrize("da,db", [("int32", "float32"), ("int8", "uint8"),
                                   ("float16", "bfloat16"), ("bool_", "int64")])
def test_concatenate_promotes(da, db, rng):
    a = rand(rng, (2, 3), da)
    b = rand(rng, (1, 3), db)
    rd = promote(da, db)
    out = fx.concatenate([to_fx(a, da), to_fx(b, db)])
    assert_close(out, np.concatenate([cast_ref(a, rd), cast_ref(b, rd)]), rd)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("dtype", SHAPE_DTYPES)
def test_stack(dtype, axis, rng):
    parts_np = [rand(rng, (2, 3), dtype) for _ in range(3)]
    parts_fx = [to_fx(p, dtype) for p in parts_np]
    parts_np[1] = rand(rng, (3, 2), dtype).T
    parts_fx[1] = to_fx(parts_np[1].T, dtype).T
    check_same(fx.stack(parts_fx, axis=axis), np.stack(parts_np, axis=axis), dtype)


def test_stack_default_axis_and_scalars():
    out = fx.stack([fx.array(1), fx.array(2), fx.array(3)])
    assert out.shape == (3,) and out.dtype == fx.int32
    assert out.tolist() == [1, 2, 3]
    out = fx.stack([fx.array([1.0, 2.0]), fx.array([3.0, 4.0])])
    assert out.tolist() == [[1.0, 2.0], [3.0, 4.0]]
