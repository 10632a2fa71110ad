"""Composite ops: rearranging (moveaxis, tile, repeat, roll, pad, split,
...), products (tensordot, inner, outer, kron, vecdot, addmm), diagonals,
triangular ops, windows, softmax and diff — against NumPy, with MLX's
result types and errors where MLX is installed, gradients against finite
differences, and vmap against a loop."""

import importlib.util

import numpy as np
import pytest

import ferrox as fx
from conftest import ALL_DTYPES, assert_close, rand, to_fx, to_np

HAVE_MLX = importlib.util.find_spec("mlx") is not None


def arr(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape).astype(dtype)


def check(got, expected, exact=False):
    got = to_np(got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if exact:
        assert np.array_equal(got, expected), (got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


# A function of (ferrox or NumPy namespace, input) -> result, for each case;
# the same expression runs on both libraries (a transposed input too).
CASES = {
    "moveaxis": (lambda m, x: m.moveaxis(x, 0, -1), (2, 3, 4)),
    "permute_dims": (lambda m, x: (m.permute_dims if m is fx else m.transpose)(x, (2, 0, 1)), (2, 3, 4)),
    "atleast_1d": (lambda m, x: m.atleast_1d(x[0, 0]), (2, 3)),
    "atleast_2d": (lambda m, x: m.atleast_2d(x[0]), (2, 3)),
    "atleast_3d_1d": (lambda m, x: m.atleast_3d(x[0]), (2, 3)),
    "atleast_3d_2d": (lambda m, x: m.atleast_3d(x), (2, 3)),
    "tile_short": (lambda m, x: m.tile(x, (2,)), (2, 3)),
    "tile_long": (lambda m, x: m.tile(x, (2, 1, 3)), (2, 3)),
    "repeat_flat": (lambda m, x: m.repeat(x, 3), (2, 3)),
    "repeat_axis": (lambda m, x: m.repeat(x, 2, axis=1), (2, 3)),
    "roll_flat": (lambda m, x: m.roll(x, 4), (3, 4)),
    "roll_axis": (lambda m, x: m.roll(x, -1, axis=1), (3, 4)),
    "roll_axes": (lambda m, x: m.roll(x, (1, 2), axis=(0, 1)), (3, 4)),
    "pad_constant": (lambda m, x: m.pad(x, ((1, 2), (0, 3))), (3, 4)),
    "pad_int": (lambda m, x: m.pad(x, 2), (3, 4)),
    "pad_edge": (lambda m, x: m.pad(x, ((2, 1), (1, 3)), mode="edge"), (3, 4)),
    "pad_reflect": (lambda m, x: m.pad(x, ((2, 1), (3, 2)), mode="reflect"), (3, 4)),
    "pad_symmetric": (lambda m, x: m.pad(x, ((2, 3), (1, 4)), mode="symmetric"), (3, 4)),
    "flip_all": (lambda m, x: m.flip(x), (3, 4)),
    "flip_axis": (lambda m, x: m.flip(x, axis=1), (3, 4)),
    "diagonal": (lambda m, x: m.diagonal(x, 1, 0, 2), (3, 2, 4)),
    "diagonal_neg": (lambda m, x: m.diagonal(x, -1), (4, 3)),
    "diag_2d": (lambda m, x: m.diag(x, 1), (3, 4)),
    "diag_1d": (lambda m, x: m.diag(x[0], -1), (3, 4)),
    "trace": (lambda m, x: m.trace(x, 1), (3, 4)),
    "tril": (lambda m, x: m.tril(x, -1), (2, 3, 4)),
    "triu": (lambda m, x: m.triu(x, 1), (3, 4)),
    "outer": (lambda m, x: m.outer(x[0], x[1]), (2, 3)),
    "inner": (lambda m, x: m.inner(x, x), (2, 3)),
    "kron": (lambda m, x: m.kron(x, x[:1, :2]), (2, 3)),
    "tensordot": (lambda m, x: m.tensordot(x, x.T, 1), (2, 3)),
    "tensordot_pairs": (lambda m, x: m.tensordot(x, x, ((0, 2), (0, 2))), (2, 3, 4)),
    "diff": (lambda m, x: m.diff(x, 2, axis=0), (4, 3)),
    "unflatten": (lambda m, x: (m.unflatten(x, 1, (2, -1)) if m is fx else x.reshape(3, 2, 2)), (3, 4)),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_against_numpy(name, layout):
    fn, shape = CASES[name]
    base = arr(shape[::-1] if layout == "transposed" else shape)
    x_np = base.T if layout == "transposed" else base
    x_fx = fx.array(base).T if layout == "transposed" else fx.array(base)
    check(fn(fx, x_fx), fn(np, x_np))


def test_split_sections_and_indices():
    x = arr((6, 4))
    for got, exp in zip(fx.split(fx.array(x), 3), np.split(x, 3)):
        check(got, exp)
    for got, exp in zip(fx.split(fx.array(x), [1, 10, 3, -1], axis=0), np.split(x, [1, 10, 3, -1])):
        check(got, exp)
    for got, exp in zip(fx.array(x).split(2, axis=1), np.split(x, 2, axis=1)):
        check(got, exp)
    with pytest.raises(ValueError, match="split"):
        fx.split(fx.array(x), 4)
    # Billions of empty parts are refused before anything is allocated.
    with pytest.raises(ValueError, match="split"):
        fx.zeros((0, 2**62)).split(2**32, axis=1)


def test_unstack_broadcast_arrays_meshgrid():
    x = arr((3, 4))
    parts = fx.unstack(fx.array(x), axis=1)
    assert isinstance(parts, tuple) and len(parts) == 4
    check(parts[2], x[:, 2])
    outs = fx.broadcast_arrays(fx.array(x[:, :1]), fx.array(x[0]))
    assert isinstance(outs, list)
    for got, exp in zip(outs, np.broadcast_arrays(x[:, :1], x[0])):
        check(got, exp)
    a, b = np.arange(2.0), np.arange(3.0)
    for indexing in ("xy", "ij"):
        for sparse in (False, True):
            got = fx.meshgrid(fx.array(a), fx.array(b), sparse=sparse, indexing=indexing)
            exp = np.meshgrid(a, b, sparse=sparse, indexing=indexing)
            assert isinstance(got, tuple)
            for g, e in zip(got, exp):
                check(g, e)
    assert fx.broadcast_shapes((2, 1), (3,), (1, 1, 3)) == (1, 2, 3)
    with pytest.raises(ValueError):
        fx.broadcast_shapes((2,), (3,))


def test_creation_windows_and_tri():
    check(fx.tri(3, 4, 1), np.tri(3, 4, 1, dtype=np.float32), exact=True)
    assert fx.tri(2, dtype=fx.int32).dtype == fx.int32
    for name in ("hamming", "hanning", "bartlett", "blackman"):
        for m in (0, 1, 2, 7):
            got = getattr(fx, name)(m)
            assert got.dtype == fx.float32
            np.testing.assert_allclose(to_np(got), getattr(np, name)(m), atol=2e-6)
    x = fx.array(arr((2, 3)))
    check(fx.full_like(x, 2.5), np.full((2, 3), 2.5, np.float32))
    assert fx.full_like(fx.array([1, 2]), 2.5).dtype == fx.int32
    assert fx.asarray([1, 2]).dtype == fx.int32
    assert fx.asarray(x) is not None and fx.asarray(x, dtype=fx.float16).dtype == fx.float16


def test_softmax():
    x = arr((3, 5))
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    check(fx.softmax(fx.array(x), axis=-1), e / e.sum(axis=-1, keepdims=True))
    e = np.exp(x - x.max())
    check(fx.softmax(fx.array(x)), e / e.sum())
    assert fx.softmax(fx.array([1, 2, 3]), axis=-1).dtype == fx.float32
    h = fx.softmax(fx.array(x).astype(fx.float16), axis=-1, precise=True)
    assert h.dtype == fx.float16


def test_vecdot_addmm_contiguous():
    a, b = arr((3, 4)), arr((3, 4), seed=1)
    check(fx.vecdot(fx.array(a), fx.array(b)), (a * b).sum(-1))
    z = np.array([1 + 2j, 3 - 1j], dtype=np.complex64)
    check(fx.vecdot(fx.array(z), fx.array(z)), np.vdot(z, z))
    c = arr((3, 3))
    check(fx.addmm(fx.array(c), fx.array(a), fx.array(b).T, alpha=2.0, beta=0.5), 0.5 * c + 2.0 * a @ b.T)
    t = fx.array(a).T
    out = fx.contiguous(t)
    check(out, a.T)
    check(fx.contiguous(t, allow_col_major=True), a.T)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize(
    "view",
    [
        lambda x: x.transpose(0, 2, 1, 3),  # heads: runs of 8 along the last axis
        lambda x: x[:, :, 1:, 2:6],  # runs of 4 from an offset
        lambda x: x[:, ::2, :, ::-1],  # reversed last axis
        lambda x: x[..., 1:7],  # runs of 6
        lambda x: x.transpose(3, 1, 2, 0),  # unit stride moved
    ],
    ids=["heads", "offset_runs", "reversed", "odd_runs", "scattered"],
)
def test_contiguous_copies_of_views(dtype, view):
    """Copies of strided views (the GPU moves aligned contiguous runs as
    8-byte words) give the viewed elements exactly, for every dtype."""
    x_np = rand(np.random.default_rng(3), (2, 3, 5, 8), dtype)
    out = fx.contiguous(view(to_fx(x_np, dtype)))
    assert_close(out, np.ascontiguousarray(view(x_np)), dtype, rtol=0, atol=0)


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: fx.moveaxis(fx.zeros((2, 3)), 3, 0), IndexError),
        (lambda: fx.repeat(fx.zeros((2,)), -1), ValueError),
        (lambda: fx.tile(fx.zeros((2,)), (-1,)), ValueError),
        (lambda: fx.pad(fx.zeros((2, 3)), [(1, 1)] * 3), ValueError),
        (lambda: fx.pad(fx.zeros((2, 3)), 1, mode="wrap"), ValueError),
        (lambda: fx.pad(fx.zeros((0, 3)), 1, mode="reflect"), ValueError),
        (lambda: fx.pad(fx.zeros((2, 3)), ((-1, 0), (0, 0))), ValueError),
        (lambda: fx.unflatten(fx.zeros((2, 3)), 0, (3, -1)), ValueError),
        (lambda: fx.diagonal(fx.zeros((3,))), ValueError),
        (lambda: fx.diagonal(fx.zeros((3, 3)), 0, 1, 1), ValueError),
        (lambda: fx.diag(fx.zeros((2, 2, 2))), ValueError),
        (lambda: fx.tril(fx.zeros((3,))), ValueError),
        (lambda: fx.tensordot(fx.zeros((2, 3)), fx.zeros((2, 3)), 3), ValueError),
        (lambda: fx.diff(fx.zeros((3,)), -1), ValueError),
        (lambda: fx.meshgrid(fx.zeros((2,)), indexing="xz"), ValueError),
        (lambda: fx.roll(fx.zeros((2, 3)), (1, 2, 3), axis=(0, 1)), ValueError),
    ],
)
def test_errors(call, error):
    with pytest.raises(error):
        call()


GRADS = {
    "tile": (lambda x: fx.tile(x, (2, 1)), (2, 3)),
    "repeat": (lambda x: fx.repeat(x, 2, axis=0), (2, 3)),
    "roll": (lambda x: fx.roll(x, 1, axis=1), (2, 3)),
    "pad_constant": (lambda x: fx.pad(x, 1, constant_values=2.0), (2, 3)),
    "pad_reflect": (lambda x: fx.pad(x, ((3, 2), (1, 1)), mode="reflect"), (3, 3)),
    "pad_edge": (lambda x: fx.pad(x, 2, mode="edge"), (2, 3)),
    "flip": (lambda x: fx.flip(x, axis=0) * x, (2, 3)),
    "diagonal": (lambda x: fx.diagonal(x, 1), (3, 4)),
    "diag_1d": (lambda x: fx.diag(x[0], 1), (2, 3)),
    "trace": (lambda x: fx.trace(x) * x, (3, 3)),
    "tensordot": (lambda x: fx.tensordot(x, fx.exp(x), ((0,), (0,))), (2, 3)),
    "kron": (lambda x: fx.kron(x, fx.sin(x)), (2, 2)),
    "softmax": (lambda x: fx.softmax(x, axis=1) * fx.cos(x), (2, 3)),
    "diff": (lambda x: fx.diff(x * x, 1, axis=1), (2, 4)),
    "tril": (lambda x: fx.tril(x) * x, (3, 3)),
    "split": (lambda x: fx.split(x, 3, axis=1)[1] * 3.0, (2, 3)),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_grad_matches_finite_differences(name):
    fn, shape = GRADS[name]
    x = arr(shape).astype(np.float64)
    w = arr(np.asarray(fn(fx.array(x, dtype=fx.float64))).shape, np.float64, seed=3)

    def total(v):
        return (fn(v) * fx.array(w, dtype=fx.float64)).sum()

    g = np.array(fx.grad(total)(fx.array(x, dtype=fx.float64)))
    fd = np.zeros_like(x)
    h = 1e-6
    for i in np.ndindex(x.shape):
        p, m = x.copy(), x.copy()
        p[i] += h
        m[i] -= h
        fd[i] = (float(total(fx.array(p, dtype=fx.float64))) - float(total(fx.array(m, dtype=fx.float64)))) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(GRADS))
def test_vmap_matches_a_loop(name):
    fn, shape = GRADS[name]
    xs = arr((3,) + tuple(shape))
    out = fx.vmap(fn)(fx.array(xs))
    expected = np.stack([np.array(fn(fx.array(x))) for x in xs])
    np.testing.assert_allclose(np.array(out), expected, rtol=1e-6, atol=1e-6)


MLX_CALLS = [
    "moveaxis(x, 0, -1)", "tile(x, (2, 1))", "repeat(x, 2)", "roll(x, (1, 2), axis=0)",
    "pad(x, ((1, 1), (2, 0)), mode='symmetric')", "pad(x, 5, mode='reflect')", "flip(x)",
    "diagonal(x, -1)", "diag(x)", "trace(x)", "trace(x > 0)", "tril(x, 1)", "triu(x, -1)",
    "outer(x, x)", "inner(x, x)", "kron(x, x)", "diff(x, 1, axis=0)", "diff(x > 0)", "softmax(x)",
    "softmax(x, axis=0)", "atleast_3d(x)", "unflatten(x, 0, (1, -1))", "split(x, [1], axis=1)",
]


# MLX is the reference for result types where it is installed (the CPU
# machines); the GPU machine has no MLX, so the cases are not generated there.
@pytest.mark.parametrize("call", MLX_CALLS if HAVE_MLX else [])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool_"])
def test_matches_mlx(call, dtype):
    import mlx.core as mx

    base = (arr((3, 3)) * 3).astype(np.float32)
    xm = mx.array(base).astype(getattr(mx, dtype))
    xf = fx.array(base).astype(getattr(fx, dtype))
    try:
        expected = eval(call, {**vars(mx), "x": xm})
    except (ValueError, TypeError) as e:
        if "Only inexact types are supported" in str(e):
            return  # ferrox's matmul also takes integers and bools (as NumPy's)
        with pytest.raises(type(e)):
            eval(call, {**vars(fx), "x": xf})
        return
    got = eval(call, {**vars(fx), "x": xf})
    if isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected)
        pairs = list(zip(got, expected))
    else:
        pairs = [(got, expected)]
    for g, e in pairs:
        assert str(g.dtype).split(".")[-1] == str(e.dtype).split(".")[-1], (g.dtype, e.dtype)
        np.testing.assert_allclose(to_np(g).astype(np.float64), np.array(e).astype(np.float64), rtol=1e-5, atol=1e-6)


def test_view_reinterprets_bytes():
    a = np.array([1, 2, 3], dtype=np.int16)
    check(fx.view(fx.array(a), fx.int8), a.view(np.int8), exact=True)
    check(fx.array(a).view(fx.uint16), a.view(np.uint16), exact=True)
    t = np.array([[1, 2], [3, 4]], dtype=np.int16)
    check(fx.view(fx.array(t).T, fx.int32), np.ascontiguousarray(t.T).view(np.int32), exact=True)
    f = np.array([1.5, -2.0, 0.25, 8.0], dtype=np.float32)
    check(fx.view(fx.array(f), fx.complex64), f.view(np.complex64))
    check(fx.view(fx.array(f), fx.uint32), f.view(np.uint32), exact=True)
    h = np.array([1.0, -0.5], dtype=np.float16)
    check(fx.view(fx.array(h), fx.uint16), h.view(np.uint16), exact=True)
    b = fx.view(fx.array(np.array([3, 0, 1], dtype=np.uint8)), fx.bool_)
    assert b.tolist() == [True, False, True]
    assert fx.view(fx.array(1.0), fx.int32).item() == 1065353216
    with pytest.raises(ValueError, match="multiple"):
        fx.view(fx.array(a), fx.int32)
    with pytest.raises(ValueError, match="scalar"):
        fx.view(fx.array(1, dtype=fx.int16), fx.int8)
    with pytest.raises(ValueError):
        fx.grad(lambda x: fx.view(x, fx.int32).astype(fx.float32).sum())(fx.array([1.0]))
    out = fx.vmap(lambda x: fx.view(x, fx.uint8))(fx.array(np.array([[1, 2], [3, 4]], dtype=np.uint16)))
    check(out, np.array([[1, 2], [3, 4]], dtype=np.uint16).view(np.uint8), exact=True)


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_constant_pad_of_every_dtype_and_layout(name, rng):
    # A constant pad is a slice update of a broadcast value: on the GPU one
    # kernel writes the padding and the window together.
    x = rand(rng, (3, 5, 4), name)
    value = x.flat[0]
    widths = ((1, 0), (2, 3), (0, 5))
    want = np.pad(x, widths, constant_values=value)
    got = fx.pad(to_fx(x, name), widths, constant_values=to_fx(np.asarray(value), name))
    assert_close(got, want, name)
    # A transposed, a reversed and a broadcast operand; an empty one; 1-D.
    xt = to_fx(x, name).transpose(2, 0, 1)
    assert_close(fx.pad(xt, ((0, 1), (1, 1), (2, 0))), np.pad(x.transpose(2, 0, 1), ((0, 1), (1, 1), (2, 0))), name)
    assert_close(fx.pad(to_fx(x, name)[::-1, :, ::-2], 2), np.pad(x[::-1, :, ::-2], 2), name)
    row = to_fx(x[0, :1], name)
    assert_close(fx.pad(fx.broadcast_to(row, (6, 4)), ((1, 1), (0, 2))), np.pad(np.broadcast_to(x[0, :1], (6, 4)), ((1, 1), (0, 2))), name)
    assert_close(fx.pad(to_fx(x[:, :0], name), ((1, 1), (2, 0), (0, 1))), np.pad(x[:, :0], ((1, 1), (2, 0), (0, 1))), name)
    assert_close(fx.pad(to_fx(x[0, 0], name), (3, 2)), np.pad(x[0, 0], (3, 2)), name)


@pytest.mark.parametrize("index", [np.s_[1:3, 2:], np.s_[:, ::2], np.s_[::-1, 1:4], np.s_[2:2], np.s_[4, 1:5], np.s_[:, 3:4]])
def test_slice_cotangent_is_zero_outside_the_window(index, rng):
    x = rng.standard_normal((5, 4100)).astype(np.float32)
    out_shape = x[index].shape
    g = rng.standard_normal(out_shape).astype(np.float32)
    _, (dx,) = fx.vjp(lambda a: a[index], [fx.array(x)], [fx.array(g)])
    want = np.zeros_like(x)
    want[index] = g
    np.testing.assert_array_equal(np.array(dx), want)
    for dtype in (fx.bfloat16, fx.float16):
        _, (dxh,) = fx.vjp(lambda a: a[index], [fx.array(x).astype(dtype)], [fx.array(g).astype(dtype)])
        np.testing.assert_array_equal(np.array(dxh.astype(fx.float32)), np.array(fx.array(want).astype(dtype).astype(fx.float32)))
