"""einsum and einsum_path against NumPy (values) and MLX (paths, reports,
errors), with finite-difference gradients."""

import importlib.util

import numpy as np
import pytest

import ferrox as fx
from conftest import f64, fd_check

HAVE_MLX = importlib.util.find_spec("mlx") is not None

# (subscripts, operand shapes): matrix products, batches, traces, diagonals,
# outer products, implicit outputs, ellipses, broadcasting and chains that
# exercise the greedy path.
CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,jk->bik", [(2, 3, 4), (4, 5)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("iji->j", [(3, 2, 3)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(5,), (5,)]),
    ("i,i", [(5,), (1,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ijk,jil->kl", [(3, 4, 5), (4, 3, 2)]),
    ("...ij,...jk", [(5, 2, 3), (3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),
    ("i...->...", [(3, 2, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ab,bc,cd,de->ae", [(3, 8), (8, 2), (2, 7), (7, 4)]),
    ("ij,jk,kl,lm,mn->", [(2, 3), (3, 4), (4, 2), (2, 3), (3, 2)]),
    ("i,j,k->ijk", [(2,), (3,), (4,)]),
    ("ab,cd,ef->", [(2, 3), (3, 2), (2, 2)]),
    ("ea,fb,abcd,gc,hd->efgh", [(2, 3), (2, 3), (3, 3, 3, 3), (2, 3), (2, 3)]),
    ("->", [()]),
    (",->", [(), ()]),
    ("i,->i", [(3,), ()]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]),
    ("ij,jk->ik", [(0, 4), (4, 5)]),
    ("ij,jk->ik", [(3, 0), (0, 5)]),
]


def operands(rng, shapes, dtype=np.float32):
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("subscripts,shapes", CASES, ids=[c[0] or "empty" for c in CASES])
def test_matches_numpy(subscripts, shapes, rng):
    xs = operands(rng, shapes)
    got = fx.einsum(subscripts, *[fx.array(x) for x in xs])
    want = np.einsum(subscripts, *[x.astype(np.float64) for x in xs])
    assert got.shape == want.shape
    assert got.dtype == fx.float32
    np.testing.assert_allclose(np.array(got), want, rtol=1e-4, atol=1e-4)


def test_non_contiguous_and_broadcast_operands(rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    fa = fx.array(a)[:, ::2]  # strided view, shape (4, 3)
    fb = fx.array(b).T  # transposed view, shape (4, 3)
    got = fx.einsum("ij,ij->j", fa, fb)
    np.testing.assert_allclose(np.array(got), np.einsum("ij,ij->j", a[:, ::2], b.T), rtol=1e-5, atol=1e-5)
    row = fx.broadcast_to(fx.array(b[0]), (5, 4))
    got = fx.einsum("ij,jk->ik", row, fx.array(a))
    np.testing.assert_allclose(np.array(got), np.broadcast_to(b[0], (5, 4)) @ a, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "complex64"])
def test_dtypes(dtype, rng):
    a, b = operands(rng, [(3, 4), (4, 2)])
    if dtype == "complex64":
        a = a + 1j * operands(rng, [(3, 4)])[0]
    fa, fb = fx.array(a).astype(getattr(fx, dtype)), fx.array(b).astype(getattr(fx, dtype))
    got = fx.einsum("ij,jk->ik", fa, fb)
    assert got.dtype == getattr(fx, dtype)
    tol = {"float16": 2e-2, "bfloat16": 1e-1}.get(dtype, 1e-5)
    want = np.array(fa.astype(fx.complex64 if dtype == "complex64" else fx.float64)) @ np.array(
        fb.astype(fx.float64)
    )
    np.testing.assert_allclose(np.array(got.astype(fx.complex64 if dtype == "complex64" else fx.float64)), want,
                               rtol=tol, atol=tol)


def test_mixed_dtypes_promote():
    got = fx.einsum("i,i", fx.ones(3), fx.ones(3, dtype=fx.float16))
    assert got.dtype == fx.float32 and got.item() == 3.0
    got = fx.einsum("i,j", fx.ones(3, dtype=fx.int32), fx.ones(2, dtype=fx.int32))
    assert got.dtype == fx.int32 and np.array(got).tolist() == [[1, 1]] * 3
    got = fx.einsum("ii->i", fx.arange(9).reshape(3, 3))
    assert got.dtype == fx.int32 and np.array(got).tolist() == [0, 4, 8]


@pytest.mark.skipif(not HAVE_MLX, reason="MLX is not installed")
@pytest.mark.parametrize("subscripts,shapes", CASES, ids=[c[0] or "empty" for c in CASES])
def test_path_matches_mlx(subscripts, shapes, rng):
    import mlx.core as mx

    xs = operands(rng, shapes)
    path, report = fx.einsum_path(subscripts, *[fx.array(x) for x in xs])
    want_path, want_report = mx.einsum_path(subscripts, *[mx.array(x) for x in xs])
    assert path == [tuple(p) for p in want_path]
    assert report == want_report


ERRORS = [
    ("ij,jk->ii", [(2, 3), (3, 4)], "Repeat indices not allowed in output"),
    ("ij", [(2, 3), (3, 4)], "Number of operands, 2, does not match number of input subscripts, 1"),
    ("i1", [(2, 3)], "Subscripts must be letters, but got '1'"),
    ("ij", [(3,)], "Invalid number of subscripts 2 for input 0 with 1 dimensions"),
    ("ij,jk", [(2, 3), (2, 3)], "Cannot broadcast dimension 0 of input 1 with shape \\(2,3\\) to size 3"),
    ("...i...", [(2, 3)], "Only one ellipsis per subscript is allowed"),
    ("ii", [(2, 3)], "Dimensions of repeated subscripts do not have the same size \\(2 != 3\\)"),
    ("i,i", [(3,), (4,)], "Cannot broadcast dimension 0 of input 1"),
    ("...ijk", [(2, 3)], "Operand 0 with shape \\(2,3\\) has insufficient dimensions for subscript"),
    ("i->j", [(3,)], "Output subscript 'j' does not appear in any input"),
]


@pytest.mark.parametrize("subscripts,shapes,message", ERRORS, ids=[e[0] for e in ERRORS])
@pytest.mark.parametrize("fn", ["einsum", "einsum_path"])
def test_errors(fn, subscripts, shapes, message):
    with pytest.raises(ValueError, match=rf"\[{fn}\] {message}"):
        getattr(fx, fn)(subscripts, *[fx.ones(s) for s in shapes])


def test_no_operands():
    with pytest.raises(ValueError, match=r"\[einsum\] At least one operand is required"):
        fx.einsum("")
    with pytest.raises(TypeError):
        fx.einsum()


@pytest.mark.skipif(not HAVE_MLX, reason="MLX is not installed")
@pytest.mark.parametrize("subscripts,shapes", [e[:2] for e in ERRORS[:-1]], ids=[e[0] for e in ERRORS[:-1]])
def test_errors_are_mlx_errors(subscripts, shapes):
    import mlx.core as mx

    with pytest.raises(ValueError) as want:
        mx.einsum(subscripts, *[mx.ones(s) for s in shapes])
    with pytest.raises(ValueError) as got:
        fx.einsum(subscripts, *[fx.ones(s) for s in shapes])
    # MLX prints a 1-D shape as (4); ferrox as Python does, (4,).
    assert str(got.value) == str(want.value).replace("(4)", "(4,)")


GRAD_CASES = [
    ("ij,jk->ik", (3, 4), (4, 2)),
    ("ii->i", (3, 3), None),
    ("ij,ij->", (2, 3), (2, 3)),
    ("bij,bjk->bki", (2, 3, 4), (2, 4, 2)),
    ("i,j->ji", (3,), (2,)),
]


@pytest.mark.parametrize("subscripts,shape,other", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradient_matches_finite_differences(subscripts, shape, other, rng):
    rest = [f64(rng.standard_normal(other))] if other else []
    fd_check(lambda v: fx.einsum(subscripts, v, *rest), rng.standard_normal(shape), rng)


def test_vmap_over_einsum(rng):
    a, b = operands(rng, [(4, 3, 5), (5, 2)])
    got = fx.vmap(lambda x: fx.einsum("ij,jk->ik", x, fx.array(b)))(fx.array(a))
    np.testing.assert_allclose(np.array(got), a @ b, rtol=1e-5, atol=1e-5)
