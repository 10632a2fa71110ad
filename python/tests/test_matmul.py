"""matmul / @ against NumPy: batched, broadcast batch dims, 1-D operands,
non-contiguous operands, float and integer dtypes."""

import numpy as np
import pytest

import ferrox as fx
from conftest import EPS, INTS, TOL, assert_close, cast_ref, promote, rand, to_fx

MATMUL_DTYPES = ["float32", "float64", "float16", "bfloat16"] + INTS

SHAPES = [
    ((3, 4), (4, 5)),
    ((1, 1), (1, 1)),
    ((4,), (4,)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((1, 3, 4), (2, 1, 4, 2)),
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4,)),
    ((0, 4), (4, 5)),
    ((3, 0), (0, 5)),
    ((3, 4), (4, 0)),
    ((2, 0, 3, 4), (4, 2)),
    ((17, 33), (33, 9)),
    ((1, 64), (64, 1)),
]


def matmul_ref(a_np, b_np, rd):
    """Reference and an absolute tolerance scaled by |a| @ |b|."""
    a = cast_ref(a_np, rd)
    b = cast_ref(b_np, rd)
    ref = np.matmul(a, b)
    if rd in INTS:
        return ref, None
    mag = np.matmul(np.abs(a), np.abs(b))
    rtol, atol = TOL[rd]
    return ref, rtol * mag + atol


def check_matmul(a_np, a_fx, da, b_np, b_fx, db, use_operator=False):
    rd = promote(da, db)
    ref, atol = matmul_ref(a_np, b_np, rd)
    out = (a_fx @ b_fx) if use_operator else fx.matmul(a_fx, b_fx)
    assert_close(out, ref, rd, atol=atol)
    return out


def kind_for(dtype):
    return "small" if dtype in INTS else "normal"


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", MATMUL_DTYPES)
def test_matmul_shapes(dtype, shapes, rng):
    sa, sb = shapes
    a = rand(rng, sa, dtype, kind_for(dtype))
    b = rand(rng, sb, dtype, kind_for(dtype))
    out = check_matmul(a, to_fx(a, dtype), dtype, b, to_fx(b, dtype), dtype)
    assert out.shape == np.matmul(a, b).shape
    check_matmul(a, to_fx(a, dtype), dtype, b, to_fx(b, dtype), dtype, use_operator=True)


# operand layouts: (base shape, view) giving a logical (3, 4) left / (4, 5) right
LEFT = {
    "contiguous": ((3, 4), lambda m, x: x),
    "transposed": ((4, 3), lambda m, x: m.transpose(x, (1, 0))),
    "sliced": ((7, 9), lambda m, x: x[::2, 1::2]),
    "negstep": ((3, 8), lambda m, x: x[::-1, ::-2]),
    "broadcast": ((1, 4), lambda m, x: m.broadcast_to(x, (3, 4))),
}
RIGHT = {
    "contiguous": ((4, 5), lambda m, x: x),
    "transposed": ((5, 4), lambda m, x: m.transpose(x, (1, 0))),
    "sliced": ((8, 6), lambda m, x: x[1::2, :5]),
    "negstep": ((4, 10), lambda m, x: x[::-1, ::-2]),
    "broadcast": ((4, 1), lambda m, x: m.broadcast_to(x, (4, 5))),
}


def _operand(rng, table, layout, dtype):
    shape, view = table[layout]
    base = rand(rng, shape, dtype, kind_for(dtype))
    return view(np, base), view(fx, to_fx(base, dtype))


@pytest.mark.parametrize("right", list(RIGHT))
@pytest.mark.parametrize("left", list(LEFT))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32",
                                   "int8"])
def test_matmul_layouts(dtype, left, right, rng):
    a_np, a_fx = _operand(rng, LEFT, left, dtype)
    b_np, b_fx = _operand(rng, RIGHT, right, dtype)
    check_matmul(a_np, a_fx, dtype, b_np, b_fx, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_matmul_batched_noncontiguous(dtype, rng):
    a = rand(rng, (4, 2, 3), dtype, kind_for(dtype))  # -> (2, 3, 4) via transpose
    b = rand(rng, (2, 5, 4), dtype, kind_for(dtype))  # -> (2, 4, 5) via transpose
    a_np, b_np = np.transpose(a, (1, 2, 0)), np.transpose(b, (0, 2, 1))
    a_fx = fx.transpose(to_fx(a, dtype), (1, 2, 0))
    b_fx = fx.transpose(to_fx(b, dtype), (0, 2, 1))
    check_matmul(a_np, a_fx, dtype, b_np, b_fx, dtype)
    # a broadcast batch operand (zero stride on the batch axis)
    c = rand(rng, (1, 4, 5), dtype, kind_for(dtype))
    c_np = np.broadcast_to(c, (2, 4, 5))
    c_fx = fx.broadcast_to(to_fx(c, dtype), (2, 4, 5))
    check_matmul(a_np, a_fx, dtype, c_np, c_fx, dtype)
    # reversed batch order
    check_matmul(a_np[::-1], a_fx[::-1], dtype, b_np[::-1], b_fx[::-1], dtype)


@pytest.mark.parametrize(
    "da,db", [("float32", "float16"), ("int32", "float32"), ("int8", "uint8"),
              ("float64", "float32"), ("bfloat16", "float16"), ("int16", "bfloat16"),
              ("uint8", "int32")]
)
def test_matmul_mixed_dtypes(da, db, rng):
    a = rand(rng, (3, 4), da, kind_for(da))
    b = rand(rng, (4, 2), db, kind_for(db))
    out = check_matmul(a, to_fx(a, da), da, b, to_fx(b, db), db)
    assert out.dtype == getattr(fx, promote(da, db))


@pytest.mark.parametrize("m,k,n", [(65, 129, 67), (128, 64, 96), (1, 300, 257), (200, 3, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
def test_matmul_larger(dtype, m, k, n, rng):
    a = rand(rng, (m, k), dtype, kind_for(dtype))
    b = rand(rng, (k, n), dtype, kind_for(dtype))
    check_matmul(a, to_fx(a, dtype), dtype, b, to_fx(b, dtype), dtype)
    # transposed operands on the same data
    check_matmul(b.T, to_fx(b, dtype).T, dtype, a.T, to_fx(a, dtype).T, dtype)


@pytest.mark.parametrize("m,k,n", [(264, 257, 520), (257, 264, 256), (256, 256, 263), (259, 261, 263)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_matmul_misaligned_half(dtype, m, k, n, rng):
    """Half-precision products of at least 256 in every dimension with one
    that is not a multiple of 8 (the GPU pads them; row- and column-major
    operands, and a batch folded into the rows)."""
    a = rand(rng, (m, k), dtype)
    b = rand(rng, (k, n), dtype)
    check_matmul(a, to_fx(a, dtype), dtype, b, to_fx(b, dtype), dtype)
    check_matmul(b.T, to_fx(b, dtype).T, dtype, a.T, to_fx(a, dtype).T, dtype)
    a3 = rand(rng, (2, m, k), dtype)
    check_matmul(a3, to_fx(a3, dtype), dtype, b, to_fx(b, dtype), dtype)


@pytest.mark.parametrize("m,k,n", [(264, 257, 520), (259, 261, 263)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_matmul_misaligned_half_gradients(dtype, m, k, n, rng):
    """The gradients of padded half-precision products (on the GPU the
    padding is part of the graph: both backward products run on the one
    zero-padded cotangent) against float64 products of the same values."""
    a, b = rand(rng, (2, m, k), dtype), rand(rng, (k, n), dtype)
    w = rand(rng, (2, m, n), dtype)
    fa, fb, fw = to_fx(a, dtype), to_fx(b, dtype), to_fx(w, dtype)
    da, db = fx.grad(lambda x, y: (fx.matmul(x, y) * fw).astype(fx.float32).sum(), argnums=(0, 1))(fa, fb)
    a64, b64, w64 = (np.asarray(v, np.float64) for v in (a, b, w))
    want_da = w64 @ b64.T
    want_db = np.einsum("bmk,bmn->kn", a64, w64)
    for got, want in ((da, want_da), (db, want_db)):
        assert got.shape == want.shape
        got = np.asarray(got.astype(fx.float32), np.float64)
        # One rounding of each float32-accumulated product to the dtype.
        np.testing.assert_allclose(got, want, rtol=0, atol=2 * EPS[dtype] * np.abs(want).max())


def test_matmul_integer_exact():
    a = fx.array([[1, 2], [3, 4]])
    b = fx.array([[5, 6], [7, 8]])
    out = a @ b
    assert out.dtype == fx.int32
    assert out.tolist() == [[19, 22], [43, 50]]
    big = fx.array([[2**20, 1]], dtype=fx.int64) @ fx.array([[2**20], [1]], dtype=fx.int64)
    assert big.item() == 2**40 + 1


def test_matmul_identity_and_vectors():
    eye = fx.eye(3)
    v = fx.array([1.0, 2.0, 3.0])
    assert (eye @ v).tolist() == [1.0, 2.0, 3.0]
    assert (v @ v).item() == 14.0
    assert (v @ v).shape == ()
    assert fx.matmul(fx.zeros((3, 0)), fx.zeros((0, 2))).tolist() == [[0.0, 0.0]] * 3


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "complex64"])
@pytest.mark.parametrize("shape", [(2, 24, 40, 48), (1, 300, 264, 136), (3, 0, 8, 16), (2, 4, 0, 8)])
def test_addmm_as_a_linear_layer(dtype, shape, rng):
    """``addmm(bias, x, w.T)`` (a linear layer: one AddMatmul node, the bias
    added in the GPU library's epilogue) against float64: values of every
    float dtype, a transposed weight view, a batch of rows, empty products,
    and gradients, forward mode and vmap against the composed ops."""
    b, m, k, n = shape
    x = rand(rng, (b, m, k), dtype)
    w = rand(rng, (n, k), dtype)
    c = rand(rng, (n,), dtype)
    fxx, fw, fc = to_fx(x, dtype), to_fx(w, dtype), to_fx(c, dtype)
    got = fx.addmm(fc, fxx, fw.T)
    want = np.asarray(x, np.complex128 if dtype == "complex64" else np.float64) @ np.asarray(w).T + np.asarray(c)
    assert got.shape == want.shape and got.dtype == getattr(fx, dtype)
    scale = np.abs(want).max() if want.size else 1.0
    tol = 4 * EPS[dtype] * k + EPS[dtype]
    np.testing.assert_allclose(np.asarray(got.astype(fx.complex64 if dtype == "complex64" else fx.float64)), want,
                               rtol=0, atol=tol * scale + 1e-30)
    if dtype not in ("float32", "float64") or x.size == 0:
        return
    g = to_fx(rand(rng, want.shape, dtype), dtype)
    composed = lambda c_, x_, w_: x_ @ w_.T + c_  # noqa: E731
    fused = lambda c_, x_, w_: fx.addmm(c_, x_, w_.T)  # noqa: E731
    grads = fx.vjp(fused, [fc, fxx, fw], [g])[1]
    wants = fx.vjp(composed, [fc, fxx, fw], [g])[1]
    for a_, b_ in zip(grads, wants):
        assert_close(a_, np.asarray(b_), dtype)
    tangents = [fx.ones_like(v) for v in (fc, fxx, fw)]
    assert_close(fx.jvp(fused, [fc, fxx, fw], tangents)[1][0], np.asarray(fx.jvp(composed, [fc, fxx, fw], tangents)[1][0]),
                 dtype)
    batched = fx.vmap(fused, in_axes=(None, 0, None))(fc, fxx, fw)
    assert_close(batched, np.asarray(composed(fc, fxx, fw)), dtype)
    # Second derivative through the node.
    hv = fx.grad(lambda x_: fx.grad(lambda y: (fused(fc, y, fw) ** 2).sum())(x_).sum())(fxx)
    hw = fx.grad(lambda x_: fx.grad(lambda y: (composed(fc, y, fw) ** 2).sum())(x_).sum())(fxx)
    assert_close(hv, np.asarray(hw), dtype)


def test_addmm_other_forms_stay_composed(rng):
    x, w = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal((6, 5)).astype(np.float32)
    c2 = rng.standard_normal((4, 5)).astype(np.float32)
    assert_close(fx.addmm(fx.array(c2), fx.array(x), fx.array(w)), x @ w + c2, "float32")
    assert_close(fx.addmm(fx.array(c2[0]), fx.array(x), fx.array(w), alpha=2.0), 2 * (x @ w) + c2[0], "float32")
    c16 = c2[0].astype(np.float16)
    assert_close(fx.addmm(fx.array(c16), fx.array(x), fx.array(w)), x @ w + c16.astype(np.float32), "float32")
    with pytest.raises(ValueError):
        fx.addmm(fx.ones((3,)), fx.ones((4, 6)), fx.ones((6, 5)))
