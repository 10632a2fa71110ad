"""ferrox.linalg against NumPy (float64 references), MLX's conventions and
errors (mlx/linalg.cpp and MLX's python/tests/test_linalg.py), derivatives
against central differences in float64, vmap against a loop, and MLX's
values where MLX is installed.

Factors that are unique only up to signs (QR, SVD, eigh, eig) are checked
through reconstructions and invariants: orthonormality, triangularity,
ordering, and absolute values where those are unique. Test matrices are
built with known spectra (well conditioned, distinct singular values and
eigenvalues), so the float32 tolerance stays ~1e-4 of the values' size.

MLX 0.32.4 defines no vjp or jvp for its linalg primitives (QRF, SVD,
Inverse, Cholesky, Eig, Eigh, LUF: "[Primitive::vjp] Not implemented for
Inverse."), so the derivative tests pin ferrox's extension. jvps are
checked only where MLX differentiates forward: compositions of ordinary
ops (cross, the norms without an SVD, det and slogdet of n <= 3, solve and
solve_triangular with respect to b)."""

import importlib.util
import re

import numpy as np
import pytest

import ferrox as fx
from conftest import FD_EPS, f64

HAVE_MLX = importlib.util.find_spec("mlx") is not None
DTYPES = ["float32", "float64"]
TOL = {"float16": 1e-2, "float32": 1e-4, "complex64": 1e-4, "float64": 1e-10}
INF = float("inf")


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def fxa(x, dtype):
    """NumPy data as a ferrox array of dtype `dtype` (float64 stays float64)."""
    return fx.array(np.asarray(x).astype(dtype), dtype=getattr(fx, dtype))


def mT(x):
    return np.swapaxes(x, -1, -2)


def close(got, want, dtype, scale=1.0):
    """NumPy `got` against `want`, within TOL[dtype] of want's magnitude."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    size = max(1.0, float(np.abs(want[np.isfinite(want)]).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL[dtype] * size * scale)  # infs must match


def check(got, want, dtype, scale=1.0):
    """ferrox `got`: dtype `dtype`, then values as `close`."""
    assert got.dtype == getattr(fx, dtype), (got.dtype, dtype)
    close(np.array(got), want, dtype, scale)


def eye_like(x, n):
    return np.broadcast_to(np.eye(n), (*x.shape[:-2], n, n))


def same_set(got, want, tol):
    """Equal eigenvalue sets per matrix, in any order."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.size == 0:
        return
    for g, w in zip(got.reshape(-1, got.shape[-1]), want.reshape(-1, want.shape[-1])):
        d = np.abs(g[:, None] - w[None, :])
        scale = max(1.0, float(np.abs(w).max()))
        assert d.min(axis=0).max() <= tol * scale and d.min(axis=1).max() <= tol * scale, (g, w)


def orth(rng, batch, r, c):
    """(*batch, r, c) with orthonormal columns (c <= r)."""
    return np.linalg.qr(rng.standard_normal((*batch, r, c)))[0]


def mat(rng, shape, kind="general"):
    """float64 test data over the last two axes of `shape`:

    general   singular values spread over [0.5, 2] (well conditioned, distinct)
    spd       symmetric positive definite, eigenvalues spread over [0.5, 3]
    sym       symmetric, eigenvalues spread over [-2, 2.5] (distinct)
    lower     lower triangular, diagonal in [1, 2], zeros above
    upper     the transpose of lower
    any       standard normal entries (any shape)
    """
    if kind == "any":
        return rng.standard_normal(shape)
    *batch, m, n = shape
    if 0 in shape:
        return np.zeros(shape)
    k = min(m, n)
    if kind == "general":
        s = np.linspace(0.5, 2.0, k)
        return (orth(rng, batch, m, k) * s) @ mT(orth(rng, batch, n, k))
    if kind in ("spd", "sym"):
        s = np.linspace(0.5, 3.0, n) if kind == "spd" else np.linspace(-2.0, 2.5, n)
        q = orth(rng, batch, n, n)
        a = (q * s) @ mT(q)
        return (a + mT(a)) / 2
    t = np.tril(rng.uniform(-0.5, 0.5, shape), -1) + np.eye(n) * rng.uniform(1.0, 2.0, (*batch, 1, n))
    return t if kind == "lower" else mT(t)


LAYOUTS = ["transposed", "sliced", "negstep", "broadcast"]


def operand(x, dtype, layout="contiguous"):
    """(float64 reference, ferrox array) for `x` rounded to dtype, in a layout."""
    x = np.asarray(x).astype(dtype)
    if layout == "contiguous":
        a = fxa(x, dtype)
    elif layout == "transposed":
        a = fx.swapaxes(fxa(np.ascontiguousarray(mT(x)), dtype), -1, -2)
    elif layout == "sliced":
        big = np.zeros((*x.shape[:-2], 2 * x.shape[-2] + 1, 2 * x.shape[-1] + 1), x.dtype)
        big[..., 1::2, 1::2] = x
        a = fxa(big, dtype)[..., 1::2, 1::2]
    elif layout == "negstep":
        a = fxa(np.ascontiguousarray(x[..., ::-1, :]), dtype)[..., ::-1, :]
    elif layout == "broadcast":
        x = np.broadcast_to(x[:1], x.shape)
        a = fx.broadcast_to(fxa(x[:1], dtype), x.shape)
    return x.astype(np.float64), a


def ref_lu_factor(x):
    """LAPACK getrf in float64: (LU, pivots), pivots 0-based sequential row swaps."""
    *batch, m, n = x.shape
    k = min(m, n)
    lu = np.array(x, dtype=np.float64).reshape(-1, m, n)
    piv = np.zeros((lu.shape[0], k), np.uint32)
    for a, p in zip(lu, piv):
        for j in range(k):
            p[j] = j + int(np.argmax(np.abs(a[j:, j])))
            a[[j, p[j]]] = a[[p[j], j]]
            if a[j, j] != 0:
                a[j + 1 :, j] /= a[j, j]
            a[j + 1 :, j + 1 :] -= np.outer(a[j + 1 :, j], a[j, j + 1 :])
    return lu.reshape(x.shape), piv.reshape(*batch, k)


def ref_lu(x):
    """MLX's lu: (P, L, U) with P row indices, A = L[P] @ U, L unit lower (M, K)."""
    *batch, m, n = x.shape
    k = min(m, n)
    lu, piv = ref_lu_factor(x)
    perm = np.broadcast_to(np.arange(m), (*batch, m)).copy().reshape(-1, m)
    for row, p in zip(perm, piv.reshape(-1, k)):
        for j, pj in enumerate(p):
            row[[j, pj]] = row[[pj, j]]
    P = np.argsort(perm, axis=-1).astype(np.uint32).reshape(*batch, m)
    return P, np.tril(lu[..., :, :k], -1) + np.eye(m, k), np.triu(lu[..., :k, :])


# --------------------------------------------------------------------------
# values: one checker per routine, run over shapes, dtypes and layouts
# --------------------------------------------------------------------------


def chk_inv(a, x, dt, rng):
    check(fx.linalg.inv(a), np.linalg.inv(x), dt)


def chk_tri_inv(a, x, dt, rng, upper=False):
    check(fx.linalg.tri_inv(a, upper=upper), np.linalg.inv(x), dt)


def chk_cholesky(a, x, dt, rng, upper=False):
    low = np.linalg.cholesky(x)
    check(fx.linalg.cholesky(a, upper=upper), mT(low) if upper else low, dt)


def chk_cholesky_inv(a, x, dt, rng, upper=False):
    """`x` is the factor: A = x x^T (lower) or x^T x (upper)."""
    check(fx.linalg.cholesky_inv(a, upper=upper), np.linalg.inv(mT(x) @ x if upper else x @ mT(x)), dt)


def chk_solve(a, x, dt, rng, tri=None):
    n = x.shape[-1]
    for bshape in [(n,), (n, 3)] if x.ndim == 2 else [(*x.shape[:-1], 2)]:
        b = rng.standard_normal(bshape).astype(dt)
        if tri is None:
            got = fx.linalg.solve(a, fxa(b, dt))
        else:
            got = fx.linalg.solve_triangular(a, fxa(b, dt), upper=tri == "upper")
        check(got, np.linalg.solve(x, b.astype(np.float64)), dt, scale=4)


def chk_eig(a, x, dt, rng):
    w, v = fx.linalg.eig(a)
    assert w.dtype == v.dtype == fx.complex64  # float64 inputs too
    W, V = np.array(w).astype(np.complex128), np.array(v).astype(np.complex128)
    assert W.shape == x.shape[:-1] and V.shape == x.shape
    close(x @ V, V * W[..., None, :], "complex64")
    close(np.linalg.norm(V, axis=-2), np.ones(W.shape), "complex64")
    same_set(W, np.linalg.eigvals(x), TOL["complex64"])
    vals = fx.linalg.eigvals(a)
    assert vals.dtype == fx.complex64
    close(np.array(vals), W, "complex64")  # the same order as eig's


def chk_eigh(a, x, dt, rng, uplo="L"):
    w, v = fx.linalg.eigh(a, UPLO=uplo)
    want = np.linalg.eigvalsh(x, UPLO=uplo)
    check(w, want, dt)
    check(fx.linalg.eigvalsh(a, UPLO=uplo), want, dt)
    assert v.dtype == getattr(fx, dt)
    W, V = np.array(w).astype(np.float64), np.array(v).astype(np.float64)
    assert np.all(np.diff(W, axis=-1) >= 0)
    close(x @ V, V * W[..., None, :], dt)
    close(mT(V) @ V, eye_like(x, x.shape[-1]), dt)


def chk_det(a, x, dt, rng):
    check(fx.linalg.det(a), np.linalg.det(x), dt)
    sign, logabs = fx.linalg.slogdet(a)
    s, l = np.linalg.slogdet(x)
    check(sign, s, dt)
    check(logabs, l, dt)


def chk_qr(a, x, dt, rng):
    q, r = fx.linalg.qr(a)
    m, n = x.shape[-2:]
    k = min(m, n)
    assert q.dtype == r.dtype == getattr(fx, dt)
    Q, R = np.array(q).astype(np.float64), np.array(r).astype(np.float64)
    assert Q.shape == (*x.shape[:-1], k) and R.shape == (*x.shape[:-2], k, n)
    close(Q @ R, x, dt)
    close(mT(Q) @ Q, eye_like(x, k), dt)
    assert np.all(np.tril(R, -1) == 0)
    close(np.abs(R), np.abs(np.linalg.qr(x)[1]), dt)  # unique up to row signs


def chk_svd(a, x, dt, rng):
    u, s, vt = fx.linalg.svd(a)
    m, n = x.shape[-2:]
    k = min(m, n)
    assert u.dtype == s.dtype == vt.dtype == getattr(fx, dt)
    U, S, Vt = (np.array(t).astype(np.float64) for t in (u, s, vt))
    assert U.shape == (*x.shape[:-2], m, m) and Vt.shape == (*x.shape[:-2], n, n)  # full, not thin
    want = np.linalg.svd(x, compute_uv=False)
    close(S, want, dt)
    assert np.all(S >= 0) and np.all(np.diff(S, axis=-1) <= 0)
    close((U[..., :k] * S[..., None, :]) @ Vt[..., :k, :], x, dt)
    close(mT(U) @ U, eye_like(x, m), dt)
    close(Vt @ mT(Vt), eye_like(x, n), dt)
    check(fx.linalg.svd(a, compute_uv=False), want, dt)


def chk_pinv(a, x, dt, rng):
    check(fx.linalg.pinv(a), np.linalg.pinv(x), dt)


def chk_lu(a, x, dt, rng):
    p, l, u = fx.linalg.lu(a)
    P, L, U = ref_lu(x)
    assert p.dtype == fx.uint32
    np.testing.assert_array_equal(np.array(p), P)
    check(l, L, dt)
    check(u, U, dt)
    Lg = np.array(l).astype(np.float64)
    close(np.take_along_axis(Lg, P[..., None].astype(np.int64), axis=-2) @ np.array(u), x, dt)


def chk_lu_factor(a, x, dt, rng):
    lu, piv = fx.linalg.lu_factor(a)
    LU, PIV = ref_lu_factor(x)
    assert piv.dtype == fx.uint32
    np.testing.assert_array_equal(np.array(piv), PIV)
    check(lu, LU, dt)


def _with(f, **kw):
    return lambda a, x, dt, rng: f(a, x, dt, rng, **kw)


SQUARE_OPS = {
    "inv": ("general", chk_inv),
    "tri_inv": ("lower", chk_tri_inv),
    "tri_inv_upper": ("upper", _with(chk_tri_inv, upper=True)),
    "cholesky": ("spd", chk_cholesky),
    "cholesky_upper": ("spd", _with(chk_cholesky, upper=True)),
    "cholesky_inv": ("lower", chk_cholesky_inv),
    "cholesky_inv_upper": ("upper", _with(chk_cholesky_inv, upper=True)),
    "solve": ("general", chk_solve),
    "solve_triangular": ("lower", _with(chk_solve, tri="lower")),
    "solve_triangular_upper": ("upper", _with(chk_solve, tri="upper")),
    "eig": ("general", chk_eig),
    "eigh": ("sym", chk_eigh),
    "eigh_U": ("sym", _with(chk_eigh, uplo="U")),
    "det": ("general", chk_det),
}
RECT_OPS = {
    "qr": ("general", chk_qr),
    "svd": ("general", chk_svd),
    "pinv": ("general", chk_pinv),
    "lu": ("general", chk_lu),
    "lu_factor": ("general", chk_lu_factor),
}
ALL_OPS = {**SQUARE_OPS, **RECT_OPS}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 3, 5, 5), (0, 3, 3)])
@pytest.mark.parametrize("op", list(ALL_OPS))
def test_square_inputs_match_numpy(rng, op, shape, dtype):
    kind, checker = ALL_OPS[op]
    x, a = operand(mat(rng, shape, kind), dtype)
    checker(a, x, dtype, rng)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 5, 3), (2, 3, 5), (1, 4), (4, 1)])
@pytest.mark.parametrize("op", list(RECT_OPS))
def test_rectangular_inputs_match_numpy(rng, op, shape, dtype):
    kind, checker = RECT_OPS[op]
    x, a = operand(mat(rng, shape, kind), dtype)
    checker(a, x, dtype, rng)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", list(ALL_OPS))
def test_non_contiguous_inputs(rng, op, layout):
    kind, checker = ALL_OPS[op]
    x, a = operand(mat(rng, (2, 5, 3) if op in RECT_OPS else (2, 4, 4), kind), "float32", layout)
    checker(a, x, "float32", rng)


def test_triangular_routines_read_one_triangle(rng):
    """tri_inv, solve_triangular, cholesky_inv, cholesky and eigh ignore the
    other triangle; tri_inv and cholesky write exact zeros there."""
    n = 5
    noise = 3 * rng.standard_normal((2, n, n))
    b = rng.standard_normal((2, n, 3))
    for upper in (False, True):
        ignored = np.tril(np.ones((n, n), bool), -1) if upper else np.triu(np.ones((n, n), bool), 1)
        zero_side = (lambda y: np.tril(y, -1)) if upper else (lambda y: np.triu(y, 1))
        tri = mat(rng, (2, n, n), "upper" if upper else "lower").astype(np.float32).astype(np.float64)
        a = fxa(np.where(ignored, noise, tri), "float32")
        y = fx.linalg.tri_inv(a, upper=upper)
        check(y, np.linalg.inv(tri), "float32")
        assert np.all(zero_side(np.array(y)) == 0)
        check(fx.linalg.solve_triangular(a, fxa(b, "float32"), upper=upper), np.linalg.solve(tri, b.astype(np.float32)), "float32", 4)
        check(fx.linalg.cholesky_inv(a, upper=upper), np.linalg.inv(mT(tri) @ tri if upper else tri @ mT(tri)), "float32", 4)
        s = mat(rng, (2, n, n), "spd").astype(np.float32).astype(np.float64)
        s_noisy = fxa(np.where(ignored, noise, s), "float32")
        c = fx.linalg.cholesky(s_noisy, upper=upper)
        check(c, mT(np.linalg.cholesky(s)) if upper else np.linalg.cholesky(s), "float32")
        assert np.all(zero_side(np.array(c)) == 0)
        check(fx.linalg.eigvalsh(s_noisy, UPLO="U" if upper else "L"), np.linalg.eigvalsh(s), "float32")


def test_zero_sized_matrices():
    """NumPy's shapes; U and Vt of an (m, 0) or (0, n) SVD are identities.
    (MLX 0.32.4 dies with SIGFPE on inv and lu of a (0, 0) matrix.)"""
    for shape in [(0, 0), (3, 0, 0), (5, 0), (0, 5), (2, 5, 0), (2, 0, 5)]:
        z = np.zeros(shape, np.float32)
        q, r = fx.linalg.qr(fx.array(z))
        Q, R = np.linalg.qr(z)
        assert (q.shape, r.shape) == (Q.shape, R.shape)
        u, s, vt = fx.linalg.svd(fx.array(z))
        U, S, Vt = np.linalg.svd(z)
        assert (u.shape, s.shape, vt.shape) == (U.shape, S.shape, Vt.shape)
        np.testing.assert_array_equal(np.array(u), U)
        np.testing.assert_array_equal(np.array(vt), Vt)
        assert fx.linalg.svd(fx.array(z), compute_uv=False).shape == S.shape
        p = fx.linalg.pinv(fx.array(z))
        assert p.shape == np.linalg.pinv(z).shape and p.dtype == fx.float32
    for shape in [(0, 0), (3, 0, 0)]:
        z = fx.zeros(shape)
        assert fx.linalg.inv(z).shape == shape
        assert fx.linalg.cholesky(z).shape == shape
        w, v = fx.linalg.eigh(z)
        assert (w.shape, v.shape) == (shape[:-1], shape)
        w, v = fx.linalg.eig(z)
        assert (w.shape, v.shape, w.dtype) == (shape[:-1], shape, fx.complex64)
        assert fx.linalg.eigvals(z).shape == shape[:-1]
        check(fx.linalg.det(z), np.ones(shape[:-2]), "float32")  # the empty product
        sign, logabs = fx.linalg.slogdet(z)
        check(sign, np.ones(shape[:-2]), "float32")
        check(logabs, np.zeros(shape[:-2]), "float32")
        p, l, u = fx.linalg.lu(z)
        assert (p.shape, l.shape, u.shape) == (shape[:-1], shape, shape)
        fx.eval(fx.linalg.inv(z), p, l, u, fx.linalg.cholesky(z), w, v)


# --------------------------------------------------------------------------
# cases from MLX's test_linalg.py
# --------------------------------------------------------------------------


def test_mlx_cases():
    # eig of a real matrix with complex eigenvalues: 1 +- i
    w = fx.linalg.eigvals(fx.array([[1.0, -1.0], [1.0, 1.0]]))
    same_set(np.array(w), np.array([1 + 1j, 1 - 1j]), 1e-5)
    # eigh of a 2x2 and the docstring example
    check(fx.linalg.eigvalsh(fx.array([[1.0, -2.0], [-2.0, 1.0]])), np.array([-1.0, 3.0]), "float32")
    # lu of a singular matrix does not raise and reconstructs
    s = np.array([[1, 2, 3, 4], [2, 4, 6, 8], [0, 1, 1, 0], [1, 0, 0, 1]], np.float32)
    p, l, u = fx.linalg.lu(fx.array(s))
    close(np.array(l)[np.array(p).astype(np.int64)] @ np.array(u), s, "float32")
    # lu of a batch broadcast from one matrix
    a = np.array([[3.0, 1.0, 2.0], [1.0, 8.0, 6.0], [9.0, 2.0, 5.0]], np.float32)
    p, l, u = fx.linalg.lu(fx.broadcast_to(fx.array(a), (5, 5, 3, 3)))
    L = np.take_along_axis(np.array(l), np.array(p)[..., None].astype(np.int64), axis=-2)
    close(L @ np.array(u), np.broadcast_to(a, (5, 5, 3, 3)), "float32")
    # pinv of a singular matrix
    a = np.array([[4.0, 1.0], [4.0, 1.0]], np.float32)
    ap = fx.linalg.pinv(fx.array(a))
    check(ap, np.linalg.pinv(a.astype(np.float64)), "float32")
    close(a @ np.array(ap) @ a, a, "float32")
    # the singular values carry the Frobenius norm
    a = fx.array(np.arange(1, 13, dtype=np.float32).reshape(4, 3))
    check(fx.linalg.norm(fx.linalg.svd(a, compute_uv=False)), np.array(fx.linalg.norm(a, ord="fro")), "float32")
    # solve with a 1-D right-hand side
    a = np.array([[3.0, 1.0, 2.0], [1.0, 8.0, 6.0], [9.0, 2.0, 5.0]], np.float32)
    check(fx.linalg.solve(fx.array(a), fx.array([11.0, 35.0, 28.0])), np.linalg.solve(a, [11.0, 35.0, 28.0]), "float32")


def test_solve_broadcasts_batches_and_promotes(rng):
    a, b = mat(rng, (3, 1, 4, 4)), rng.standard_normal((1, 2, 4, 5))
    check(fx.linalg.solve(fxa(a, "float32"), fxa(b, "float32")), np.linalg.solve(a, b), "float32", 4)
    a2, b2 = mat(rng, (4, 4)), rng.standard_normal((4, 2))
    # float32 a with float64 b: a float64 result (MLX factorizes a in float32, hence the looser bound)
    check(fx.linalg.solve(fxa(a2, "float32"), fxa(b2, "float64")), np.linalg.solve(a2.astype(np.float32), b2), "float64", 1e5)
    check(fx.linalg.solve(fxa(a2, "float64"), fxa(b2, "float32")), np.linalg.solve(a2, b2.astype(np.float32)), "float64")
    bi = np.array([1, -2, 3, 0])
    check(fx.linalg.solve(fxa(a2, "float32"), fxa(bi, "int32")), np.linalg.solve(a2.astype(np.float32), bi), "float32")
    lo = mat(rng, (4, 4), "lower")
    check(fx.linalg.solve_triangular(fxa(lo, "float32"), fxa(b2, "float64")), np.linalg.solve(lo.astype(np.float32), b2), "float64", 1e5)


def test_solve_large(rng):
    a, b = mat(rng, (256, 256)), rng.standard_normal((256, 1))
    check(fx.linalg.solve(fxa(a, "float32"), fxa(b, "float32")), np.linalg.solve(a.astype(np.float32), b.astype(np.float32)), "float32", 10)


def test_batches_of_large_matrices(rng):
    """Past the GPU's batched-LU size (128): one factorization per matrix."""
    a, b = mat(rng, (3, 160, 160)), rng.standard_normal((3, 160, 2))
    check(fx.linalg.solve(f64(a), f64(b)), np.linalg.solve(a, b), "float64", 10)
    check(fx.linalg.inv(f64(a)), np.linalg.inv(a), "float64", 10)
    q, r = fx.linalg.qr(f64(a[:, :, :150]))
    close(np.array(q) @ np.array(r), a[:, :, :150], "float64", 10)


def test_det_and_slogdet_special_values(rng):
    """MLX's small-matrix path (n <= 3) and its LU path (n >= 4)."""
    ninf = -np.inf
    for a, det, sign, logabs in [
        (np.eye(5), 1.0, 1.0, 0.0),
        (-np.eye(5), -1.0, -1.0, 0.0),
        ([[5.0]], 5.0, 1.0, np.log(5.0)),
        ([[1.0, 2.0], [3.0, 4.0]], -2.0, -1.0, np.log(2.0)),
        ([[1.0, 2.0], [2.0, 4.0]], 0.0, 0.0, ninf),
        ([[1, 2, 3, 4], [2, 4, 6, 8], [0, 1, 1, 0], [1, 0, 0, 1.0]], 0.0, 0.0, ninf),
        (np.ones((5, 5)), 0.0, 0.0, ninf),
        ([np.diag([1.0, 2.0, 0.0, 3.0]), np.eye(4)], [0.0, 1.0], [0.0, 1.0], [ninf, 0.0]),
    ]:
        x = fx.array(np.asarray(a, np.float32))
        check(fx.linalg.det(x), np.array(det), "float32")
        s, l = fx.linalg.slogdet(x)
        np.testing.assert_array_equal(np.array(s), np.array(sign, np.float32))
        close(np.array(l), np.array(logabs), "float32")  # -inf matches -inf exactly
    # slogdet keeps what det underflows
    x = fx.array(0.1 * np.eye(100, dtype=np.float32))
    s, l = fx.linalg.slogdet(x)
    assert s.item() == 1.0 and abs(l.item() - 100 * np.log(0.1)) < 1e-3
    # det = sign * exp(logabsdet)
    a = mat(rng, (5, 5))
    s, l = fx.linalg.slogdet(fxa(a, "float32"))
    np.testing.assert_allclose(fx.linalg.det(fxa(a, "float32")).item(), s.item() * np.exp(l.item()), rtol=1e-4)
    # integer and bool inputs promote to float32
    check(fx.linalg.det(fx.array([[1, 2], [3, 4]])), np.array(-2.0), "float32")
    check(fx.linalg.det(fxa(np.diag([1, 2, 3, 4]), "int32")), np.array(24.0), "float32")
    check(fx.linalg.slogdet(fx.array([[1, 2], [3, 4]]))[1], np.array(np.log(2.0)), "float32")
    check(fx.linalg.det(fx.array(np.eye(2, dtype=bool))), np.array(1.0), "float32")


def test_cross_matches_numpy(rng):
    def pad3(x, axis):
        if x.shape[axis] == 3:
            return x
        widths = [(0, 0)] * x.ndim
        widths[axis] = (0, 1)
        return np.pad(x, widths)

    for sa, sb, axis in [((3,), (3,), -1), ((4, 3), (4, 3), -1), ((3, 4), (3, 4), 0), ((2, 1, 3), (1, 2, 3), -1),
                         ((2,), (2,), -1), ((2,), (4, 3), -1), ((5, 3), (2,), -1), ((3, 2), (3, 2), -2)]:
        for dt in DTYPES:
            a, b = rng.standard_normal(sa), rng.standard_normal(sb)
            got = fx.linalg.cross(fxa(a, dt), fxa(b, dt), axis=axis)
            ra, rb = a.astype(dt).astype(np.float64), b.astype(dt).astype(np.float64)
            check(got, np.cross(pad3(ra, axis), pad3(rb, axis), axis=axis), dt)  # size 2: z = 0, 3 components out
    ai, bi = np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32)
    got = fx.linalg.cross(fx.array(ai), fx.array(bi))
    assert got.dtype == fx.int32 and got.tolist() == np.cross(ai, bi).tolist()
    check(fx.linalg.cross(fx.array([1.0, 2.0, 3.0]), fx.array(bi)), np.cross([1.0, 2.0, 3.0], bi), "float32")
    check(fx.linalg.cross(fxa(ai, "float16"), fxa(bi, "float32")), np.cross(ai, bi).astype(float), "float32")


# --------------------------------------------------------------------------
# norm
# --------------------------------------------------------------------------

VECTOR_ORDS = [None, 0.5, 0, 1, 2, 3, -1, -2, INF, -INF]
MATRIX_ORDS = [None, "fro", "f", "nuc", 1, -1, 2, -2, INF, -INF]


def np_norm(x, ord, axis=None, keepdims=False):
    ord = "fro" if ord == "f" else ord
    with np.errstate(divide="ignore"):
        return np.linalg.norm(np.asarray(x, np.float64), ord=ord, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_vector_norms(rng, ord, keepdims, dtype):
    for shape in [(7,), (3, 4), (2, 3, 4)]:
        x = rng.standard_normal(shape).astype(dtype)
        x[rng.random(shape) < 0.15] = 0
        for axis in [*range(len(shape)), *range(-len(shape), 0)]:
            got = fx.linalg.norm(fxa(x, dtype), ord=ord, axis=axis, keepdims=keepdims)
            check(got, np_norm(x, ord, axis, keepdims), dtype)
        if len(shape) == 1:
            check(fx.linalg.norm(fxa(x, dtype), ord, keepdims=keepdims), np_norm(x, ord, None, keepdims), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norms(rng, ord, keepdims, dtype):
    for shape in [(3, 4), (2, 3, 4), (2, 3, 3, 3)]:
        x = rng.standard_normal(shape).astype(dtype)
        nd = len(shape)
        pairs = [(i, j) for i in range(nd) for j in range(nd) if i != j]
        for i, j in pairs + [(i - nd, j - nd) for i, j in pairs]:
            got = fx.linalg.norm(fxa(x, dtype), ord=ord, axis=(i, j), keepdims=keepdims)
            check(got, np_norm(x, ord, (i, j), keepdims), dtype)
        if nd == 2:
            check(fx.linalg.norm(fxa(x, dtype), ord, keepdims=keepdims), np_norm(x, ord, None, keepdims), dtype)
            check(fx.linalg.norm(fxa(x, dtype), ord, [0, 1], keepdims), np_norm(x, ord, (0, 1), keepdims), dtype)


def test_norm_defaults_flatten_any_rank(rng):
    for shape in [(), (0,), (5,), (2, 3), (2, 3, 4)]:
        x = rng.standard_normal(shape).astype(np.float32)
        check(fx.linalg.norm(fx.array(x)), np.array(np.linalg.norm(x.ravel())), "float32")
        got = fx.linalg.norm(fx.array(x), keepdims=True)
        assert got.shape == (1,) * len(shape)
    x = rng.standard_normal((2, 3, 4))
    check(fx.linalg.norm(fxa(x, "float32"), axis=(0, 2)), np_norm(x.astype(np.float32), None, (0, 2)), "float32")


@pytest.mark.parametrize("dtype, want", [("int32", "float32"), ("int64", "float32"), ("uint8", "float32"),
                                         ("bool_", "float32"), ("float16", "float16"), ("float64", "float64")])
def test_norm_result_dtypes(dtype, want):
    """MLX: at least float32 for integers and bools; float16 stays float16."""
    v = np.array([3, 4, 0, 1, 2])
    m = np.arange(1, 7).reshape(2, 3)
    v, m = (v > 1, m > 2) if dtype == "bool_" else (v, m)
    npd = np.bool_ if dtype == "bool_" else dtype
    fv, fm = fx.array(v.astype(npd), dtype=getattr(fx, dtype)), fx.array(m.astype(npd), dtype=getattr(fx, dtype))
    for ord in [None, 0, 1, 2, 3, 0.5, INF, -INF]:
        check(fx.linalg.norm(fv, ord), np_norm(v, ord), want)
    for ord in [None, "fro", 1, -1, INF, -INF]:
        check(fx.linalg.norm(fm, ord), np_norm(m, ord), want)


def test_matrix_norm_is_the_top_level_alias(rng):
    """MLX binds mx.matrix_norm to mx.linalg.norm."""
    x = fxa(rng.standard_normal((2, 3, 4)), "float32")
    for ord, axis in [(None, None), ("nuc", (1, 2)), (INF, (2, 0)), (3, 1)]:
        close(np.array(fx.matrix_norm(x, ord, axis)), np.array(fx.linalg.norm(x, ord, axis)), "float32")


# --------------------------------------------------------------------------
# complex64 inputs: svd, eig, eigvals, eigh and eigvalsh factorize them (as
# MLX's do: real singular values and Hermitian eigenvalues, complex
# factors); the other routines refuse them as MLX does. Norms work.
# --------------------------------------------------------------------------


def crandn(rng, *shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def hermitian(rng, *shape):
    """Hermitian matrices with distinct eigenvalues 1..n (well separated)."""
    *batch, n = shape[:-1]
    q, _ = np.linalg.qr(crandn(rng, *shape).astype(np.complex128))
    w = np.arange(1, n + 1, dtype=np.float64)
    return (q * w[..., None, :]) @ np.conj(mT(q))


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 4, 4), (1, 1)])
@pytest.mark.parametrize("transposed", [False, True])
def test_complex64_svd(rng, shape, transposed):
    x = crandn(rng, *shape)
    a = fx.array(x)
    if transposed:  # a non-contiguous view of the same values
        a = fx.swapaxes(fx.array(np.ascontiguousarray(mT(x))), -1, -2)
    u, s, vt = fx.linalg.svd(a)
    assert (u.dtype, s.dtype, vt.dtype) == (fx.complex64, fx.float32, fx.complex64)
    m, n = shape[-2:]
    k = min(m, n)
    U, S, Vt = (np.array(z).astype(np.complex128) for z in (u, s, vt))
    assert U.shape == (*shape[:-2], m, m) and Vt.shape == (*shape[:-2], n, n)
    close(S.real, np.linalg.svd(x.astype(np.complex128), compute_uv=False), "complex64")
    close(U[..., :k] * S[..., None, :] @ Vt[..., :k, :], x, "complex64", scale=4)
    close(np.conj(mT(U)) @ U, np.broadcast_to(np.eye(m), U.shape), "complex64")
    close(Vt @ np.conj(mT(Vt)), np.broadcast_to(np.eye(n), Vt.shape), "complex64")
    only = fx.linalg.svd(a, compute_uv=False)
    assert only.dtype == fx.float32
    close(np.array(only), S.real, "complex64")


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (1, 1)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_complex64_eigh(rng, shape, uplo):
    h = hermitian(rng, *shape)
    # Only the named triangle is read: spoil the other one.
    spoiled = np.tril(h) if uplo == "L" else np.triu(h)
    spoiled = spoiled + (np.triu(np.ones(shape), 1) if uplo == "L" else np.tril(np.ones(shape), -1)) * (5 + 7j)
    a = fx.array(spoiled.astype(np.complex64))
    w, v = fx.linalg.eigh(a, UPLO=uplo)
    assert (w.dtype, v.dtype) == (fx.float32, fx.complex64)
    want = np.linalg.eigvalsh(h)
    close(np.array(w), want, "complex64", scale=4)
    close(np.array(fx.linalg.eigvalsh(a, UPLO=uplo)), want, "complex64", scale=4)
    V = np.array(v).astype(np.complex128)
    close(h @ V, V * np.array(w)[..., None, :], "complex64", scale=4)
    close(np.conj(mT(V)) @ V, np.broadcast_to(np.eye(shape[-1]), V.shape), "complex64")


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (1, 1)])
def test_complex64_eig(rng, shape):
    x = crandn(rng, *shape)
    w, v = fx.linalg.eig(fx.array(x))
    assert (w.dtype, v.dtype) == (fx.complex64, fx.complex64)
    W, V = np.array(w).astype(np.complex128), np.array(v).astype(np.complex128)
    close(x @ V, V * W[..., None, :], "complex64", scale=4)
    close(np.linalg.norm(V, axis=-2), np.ones(W.shape), "complex64")
    same_set(W, np.linalg.eigvals(x.astype(np.complex128)), 4 * TOL["complex64"])
    close(np.array(fx.linalg.eigvals(fx.array(x))), W, "complex64")


def test_complex64_empty_and_non_finite():
    u, s, vt = fx.linalg.svd(fx.zeros((2, 0, 3), dtype=fx.complex64))
    assert (u.shape, s.shape, vt.shape, s.dtype) == ((2, 0, 0), (2, 0), (2, 3, 3), fx.float32)
    np.testing.assert_array_equal(np.array(vt), np.broadcast_to(np.eye(3), (2, 3, 3)))
    w, v = fx.linalg.eigh(fx.array(np.full((2, 2), np.nan + 0j, dtype=np.complex64)))
    assert np.isnan(np.array(w)).all() and np.isnan(np.array(v)).all()


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_non_finite_matrices_give_nans_in_the_iterative_routines(rng, dtype):
    """Per matrix of a batch: a NaN or an infinity makes the SVD's, eigh's
    and eig's outputs NaN; the finite neighbour is unaffected."""
    x = rng.standard_normal((2, 3, 3))
    x = (x + mT(x)).astype(dtype)
    x[1, 0, 2] = np.inf
    x[1, 2, 0] = np.nan
    a = fx.array(x)
    outputs = {
        "svd": fx.linalg.svd(a),
        "eigh": fx.linalg.eigh(a),
        "eig": fx.linalg.eig(a),
    }
    for name, outs in outputs.items():
        for out in outs:
            values = np.array(out)
            assert np.isnan(values[1]).all(), name
            assert np.isfinite(values[0]).all(), name


@pytest.mark.parametrize(
    "fun",
    [
        lambda x: fx.linalg.svd(x, compute_uv=False).sum(),
        lambda x: fx.linalg.eigvalsh(x).sum(),
        lambda x: fx.abs(fx.linalg.eigh(x)[1]).sum(),
    ],
)
def test_complex64_derivatives_are_refused(fun):
    x = fx.array(np.eye(3, dtype=np.complex64))
    with pytest.raises(ValueError, match="Derivatives of complex64 factorizations are not supported"):
        fx.grad(fun)(x)
    with pytest.raises(ValueError, match="Derivatives of complex64 factorizations are not supported"):
        fx.jvp(fun, [x], [x])


@pytest.mark.skipif(not HAVE_MLX, reason="MLX is not installed")
def test_complex64_agrees_with_mlx(rng):
    import mlx.core as mx

    x = crandn(rng, 3, 4, 4)
    h = hermitian(rng, 3, 4, 4).astype(np.complex64)
    got = fx.linalg.svd(fx.array(x), compute_uv=False)
    want = mx.linalg.svd(mx.array(x), compute_uv=False, stream=mx.cpu)
    close(np.array(got), np.array(want), "complex64")
    got = fx.linalg.eigvalsh(fx.array(h))
    want = mx.linalg.eigvalsh(mx.array(h), stream=mx.cpu)
    assert got.dtype == fx.float32 and want.dtype == mx.float32
    close(np.array(got), np.array(want), "complex64")
    w = np.array(fx.linalg.eigvals(fx.array(x)))
    same_set(w.astype(np.complex128), np.array(mx.linalg.eigvals(mx.array(x), stream=mx.cpu)), 4 * TOL["complex64"])


def test_complex64_norms(rng):
    c = (rng.standard_normal((2, 4, 3)) + 1j * rng.standard_normal((2, 4, 3))).astype(np.complex64)
    check(fx.linalg.norm(fx.array(c)), np.array(np.linalg.norm(c.astype(np.complex128))), "float32")
    check(fx.linalg.norm(fx.array(c[0]), "fro"), np.array(np.linalg.norm(c[0].astype(np.complex128), "fro")), "float32")
    check(fx.linalg.norm(fx.array(c), axis=1), np.linalg.norm(c.astype(np.complex128), axis=1), "float32")


# --------------------------------------------------------------------------
# errors (MLX's types and messages)
# --------------------------------------------------------------------------


def Z(*shape, dtype="float32"):
    return fx.zeros(shape, dtype=getattr(fx, dtype))


DIMS1 = "Arrays must have >= 2 dimensions. Received array with 1 dimensions."
REAL = "Arrays must have type float32 or float64. Received array with type int32."
REAL_OR_C = "Arrays must have type float32, float64 or complex64. Received array with type int32."
LA = lambda name: getattr(fx.linalg, name)  # noqa: E731
ERRORS = [
    *[(f"{n}_1d", lambda n=n: LA(n)(Z(3)), f"[linalg::{p}] {DIMS1}")
      for n, p in [("inv", "inv"), ("tri_inv", "inv"), ("cholesky", "cholesky"), ("cholesky_inv", "cholesky_inv"),
                   ("qr", "qr"), ("pinv", "pinv"), ("lu", "lu"), ("lu_factor", "lu_factor"), ("eig", "eig"),
                   ("eigvals", "eigvals"), ("eigh", "eigh"), ("eigvalsh", "eigvalsh"), ("det", "det"), ("slogdet", "slogdet")]],
    *[(f"{n}_int", lambda n=n: LA(n)(Z(2, 2, dtype="int32")), f"[linalg::{p}] {REAL}")
      for n, p in [("inv", "inv"), ("tri_inv", "inv"), ("cholesky", "cholesky"), ("cholesky_inv", "cholesky_inv"),
                   ("qr", "qr"), ("pinv", "pinv"), ("lu", "lu"), ("lu_factor", "lu_factor")]],
    *[(f"{n}_int", lambda n=n: LA(n)(Z(2, 2, dtype="int32")), f"[linalg::{n}] {REAL_OR_C}")
      for n in ["svd", "eig", "eigvals", "eigh", "eigvalsh"]],
    *[(f"{n}_nonsquare", lambda n=n: LA(n)(Z(2, 3)), f"[linalg::{n}] Only defined for square matrices.")
      for n in ["eig", "eigvals", "eigh", "eigvalsh", "det", "slogdet"]],
    *[(f"{n}_complex", lambda n=n: LA(n)(Z(4, 4, dtype="complex64")), f"[linalg::{n}] Complex inputs are not supported.")
      for n in ["det", "slogdet"]],
    ("qr_0d", lambda: fx.linalg.qr(fx.array(0.0)), "[linalg::qr] Arrays must have >= 2 dimensions. Received array with 0 dimensions."),
    ("svd_1d", lambda: fx.linalg.svd(Z(3)), "[linalg::svd] Input array must have >= 2 dimensions. Received array with 1 dimensions."),
    ("svd_float16", lambda: fx.linalg.svd(Z(2, 2, dtype="float16")), "[linalg::svd] Arrays must have type float32, float64 or complex64. Received array with type float16."),
    ("inv_float16", lambda: fx.linalg.inv(Z(2, 2, dtype="float16")), "[linalg::inv] Arrays must have type float32 or float64. Received array with type float16."),
    ("inv_complex", lambda: fx.linalg.inv(Z(2, 2, dtype="complex64")), "[linalg::inv] Arrays must have type float32 or float64. Received array with type complex64."),
    ("qr_complex", lambda: fx.linalg.qr(Z(2, 2, dtype="complex64")), "[linalg::qr] Arrays must have type float32 or float64. Received array with type complex64."),
    ("inv_nonsquare", lambda: fx.linalg.inv(Z(2, 3)), "[linalg::inv] Inverses are only defined for square matrices."),
    ("tri_inv_nonsquare", lambda: fx.linalg.tri_inv(Z(2, 3)), "[linalg::inv] Inverses are only defined for square matrices."),
    ("cholesky_nonsquare", lambda: fx.linalg.cholesky(Z(2, 3)), "[linalg::cholesky] Cholesky decomposition is only defined for square matrices."),
    ("cholesky_inv_nonsquare", lambda: fx.linalg.cholesky_inv(Z(2, 3)), "[linalg::cholesky_inv] Cholesky inverse is only defined for square matrices."),
    ("solve_a_1d", lambda: fx.linalg.solve(Z(2), Z(2)), "[linalg::solve] First input must have >= 2 dimensions. Received array with 1 dimensions."),
    ("solve_b_0d", lambda: fx.linalg.solve(Z(2, 2), fx.array(1.0)), "[linalg::solve] Second input must have >= 1 dimensions. Received array with 0 dimensions."),
    ("solve_nonsquare", lambda: fx.linalg.solve(Z(2, 3), Z(2)), "[linalg::solve] First input must be a square matrix. Received array with shape (2,3)."),
    ("solve_mismatch", lambda: fx.linalg.solve(Z(2, 2), Z(3)), "[linalg::solve] Last dimension of first input with shape (2,2) must match second to last dimension of second input with shape (3)."),
    ("solve_mismatch_2d", lambda: fx.linalg.solve(Z(2, 2), Z(3, 2)), "[linalg::solve] Last dimension of first input with shape (2,2) must match second to last dimension of second input with shape (3,2)."),
    ("solve_int", lambda: fx.linalg.solve(Z(2, 2, dtype="int32"), Z(2, dtype="int32")), "[linalg::solve] Input arrays must promote to float32 or float64."),
    ("solve_float16", lambda: fx.linalg.solve(Z(2, 2, dtype="float16"), Z(2, dtype="float16")), "[linalg::solve] Input arrays must promote to float32 or float64."),
    ("solve_triangular_mismatch", lambda: fx.linalg.solve_triangular(Z(2, 2), Z(3)), "[linalg::solve_triangular] Last dimension of first input with shape (2,2) must match"),
    ("solve_triangular_int", lambda: fx.linalg.solve_triangular(Z(2, 2, dtype="int32"), Z(2, dtype="int32")), "[linalg::solve_triangular] Input arrays must promote to float32 or float64."),
    ("cross_size_1", lambda: fx.linalg.cross(Z(1), Z(1)), "[linalg::cross] The specified axis must have size 2 or 3."),
    ("cross_size_4", lambda: fx.linalg.cross(Z(4), Z(4)), "[linalg::cross] The specified axis must have size 2 or 3."),
    ("cross_b_size_4", lambda: fx.linalg.cross(Z(3), Z(2, 4), axis=-1), "[linalg::cross] The specified axis must have size 2 or 3."),
    ("cross_broadcast", lambda: fx.linalg.cross(Z(2, 3), Z(4, 3)), None),
    ("norm_vector_nuc", lambda: fx.linalg.norm(Z(3), "nuc"), "[linalg::norm] Norm 'nuc' only supported for matrices, but received 1 axis/axes."),
    ("norm_axis_fro", lambda: fx.linalg.norm(Z(2, 3), "fro", axis=1), "[linalg::norm] Norm 'fro' only supported for matrices, but received 1 axis/axes."),
    ("norm_3d_fro", lambda: fx.linalg.norm(Z(2, 2, 2), "fro"), "[linalg::norm] Norm 'fro' only supported for matrices, but received 3 axis/axes."),
    ("norm_matrix_ord_3", lambda: fx.linalg.norm(Z(2, 3), 3), "[linalg::norm] Invalid ord 3 for matrix norm."),
    ("norm_matrix_ord_0", lambda: fx.linalg.norm(Z(2, 3), 0), "[linalg::norm] Invalid ord 0 for matrix norm."),
    ("norm_matrix_ord_half", lambda: fx.linalg.norm(Z(2, 3), 0.5), "[linalg::norm] Invalid ord 0.5 for matrix norm."),
    ("norm_matrix_ord_str", lambda: fx.linalg.norm(Z(2, 3), "foo"), "[linalg::norm] Invalid ord value 'foo' for matrix norm."),
    ("norm_vector_ord_str", lambda: fx.linalg.norm(Z(3), "foo"), "[linalg::norm] Norm 'foo' only supported for matrices, but received 1 axis/axes."),
    ("norm_3d_ord", lambda: fx.linalg.norm(Z(2, 2, 2), 1), "[linalg::norm] Received too many axes for norm."),
    ("norm_3_axes", lambda: fx.linalg.norm(Z(2, 2, 2), axis=(0, 1, 2)), "[linalg::norm] Received too many axes for norm."),
]


@pytest.mark.parametrize("thunk, msg", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors(thunk, msg):
    """Raised when the op is called, before anything is evaluated."""
    with pytest.raises(ValueError, match=None if msg is None else re.escape(msg)):
        thunk()


def test_index_errors():
    with pytest.raises(IndexError, match=re.escape("[linalg::cross] Axis 1 is out of bounds for array with 1 dimensions.")):
        fx.linalg.cross(Z(3), Z(3), axis=1)
    with pytest.raises(IndexError, match=re.escape("[linalg::cross] Axis -2 is out of bounds for array with 1 dimensions.")):
        fx.linalg.cross(Z(3), Z(3), axis=-2)
    with pytest.raises(IndexError):
        fx.linalg.norm(Z(2, 2), axis=2)
    with pytest.raises(IndexError):
        fx.linalg.norm(Z(2, 2), ord=1, axis=(0, 2))


@pytest.mark.parametrize(
    "name, a",
    [("inv", [[1.0, 2.0], [2.0, 4.0]]), ("inv", [[0.0, 0.0], [0.0, 0.0]]), ("inv", np.ones((3, 3))),
     ("tri_inv", [[1.0, 0.0], [1.0, 0.0]]), ("solve", [[1.0, 2.0], [2.0, 4.0]]), ("solve_triangular", [[0.0, 0.0], [1.0, 4.0]])],
)
def test_singular_matrices_raise_when_evaluated(name, a):
    """MLX: RuntimeError from the evaluation ("... failed with error code k"), not inf or nan."""
    a = fx.array(np.asarray(a, np.float32))
    out = LA(name)(a, fx.ones((a.shape[-1],))) if name.startswith("solve") else LA(name)(a)
    with pytest.raises(RuntimeError, match="failed"):
        fx.eval(out)


# --------------------------------------------------------------------------
# derivatives against central differences (float64)
# --------------------------------------------------------------------------


def grad_check(fun, x, rng, jvp=False, rtol=1e-5, atol=1e-6):
    """vjp and grad of `fun` at `x` against central differences; the jvp where asked."""

    def F(v):
        return np.array(fun(f64(v)), dtype=np.float64)

    w = np.asarray(rng.uniform(-1.0, 1.0, size=F(x).shape))
    fd = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        e = np.zeros(x.shape)
        e[idx] = FD_EPS
        fd[idx] = np.sum((F(x + e) - F(x - e)) * w) / (2 * FD_EPS)
    _, (g,) = fx.vjp(fun, [f64(x)], [f64(w)])
    np.testing.assert_allclose(np.array(g), fd, rtol=rtol, atol=atol)
    g = fx.grad(lambda v: (fun(v) * f64(w)).sum())(f64(x))
    np.testing.assert_allclose(np.array(g), fd, rtol=rtol, atol=atol)
    if jvp:
        t = rng.uniform(-1.0, 1.0, size=x.shape)
        _, (d,) = fx.jvp(fun, [f64(x)], [f64(t)])
        want = (F(x + FD_EPS * t) - F(x - FD_EPS * t)) / (2 * FD_EPS)
        np.testing.assert_allclose(np.array(d), want, rtol=rtol, atol=atol)


def _swap(x):
    return fx.swapaxes(x, -1, -2)


def spd_of(x):
    """x x^T + n I: symmetric positive definite, so differences stay valid."""
    return x @ _swap(x) + x.shape[-1] * fx.eye(x.shape[-1], dtype=x.dtype)


def sym_of(x):
    return (x + _swap(x)) / 2


def flat(*outs):
    return fx.concatenate([fx.flatten(o) for o in outs])


def svd_weighted(x):
    """U_k sqrt(S) Vt_k: invariant to the factors' sign flips."""
    u, s, vt = fx.linalg.svd(x)
    k = min(x.shape[-2:])
    return (u[..., :k] * fx.sqrt(s)[..., None, :]) @ vt[..., :k, :]


def svd_isometry(x):
    u, _, vt = fx.linalg.svd(x)
    k = min(x.shape[-2:])
    return u[..., :k] @ vt[..., :k, :]


def eigh_spectral(x, uplo="L"):
    """V diag(1..n) V^T: the eigenvectors' projectors, invariant to signs."""
    _, v = fx.linalg.eigh(sym_of(x), UPLO=uplo)
    c = fx.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    return (v * c) @ _swap(v)


_C = np.random.default_rng(1)
B42, B4, V43 = _C.standard_normal((4, 2)), _C.standard_normal(4), _C.standard_normal((4, 3))
A44 = mat(_C, (4, 4))
L44 = mat(_C, (4, 4), "lower")

GRADS = [
    # id, function of one float64 array, (kind, shape) of the point, jvp (MLX differentiates it forward).
    # MLX itself gives vjps only for det/slogdet (n <= 3), solve(_triangular) in b, cross and the
    # norms without an SVD; the rest raise "[Primitive::vjp] Not implemented for <Primitive>".
    ("inv", lambda x: fx.linalg.inv(x), ("general", (4, 4)), False),
    ("inv_batched", lambda x: fx.linalg.inv(x), ("general", (2, 3, 3)), False),
    ("tri_inv", lambda x: fx.linalg.tri_inv(fx.tril(x)), ("lower", (4, 4)), False),
    ("tri_inv_upper", lambda x: fx.linalg.tri_inv(fx.triu(x), upper=True), ("upper", (4, 4)), False),
    ("cholesky", lambda x: fx.linalg.cholesky(spd_of(x)), ("general", (4, 4)), False),
    ("cholesky_upper", lambda x: fx.linalg.cholesky(spd_of(x), upper=True), ("general", (4, 4)), False),
    ("cholesky_inv", lambda x: fx.linalg.cholesky_inv(fx.tril(x)), ("lower", (3, 3)), False),
    ("cholesky_inv_upper", lambda x: fx.linalg.cholesky_inv(fx.triu(x), upper=True), ("upper", (3, 3)), False),
    *[(f"det_{n}", lambda x: fx.linalg.det(x), ("general", (n, n)), n <= 3) for n in (1, 2, 3, 5)],
    ("det_batched", lambda x: fx.linalg.det(x), ("general", (2, 4, 4)), False),
    *[(f"slogdet_{n}", lambda x: fx.linalg.slogdet(x)[1], ("general", (n, n)), n <= 3) for n in (2, 3, 5)],
    ("solve_a", lambda a: fx.linalg.solve(a, f64(B42)), ("general", (4, 4)), False),
    ("solve_a_vector_b", lambda a: fx.linalg.solve(a, f64(B4)), ("general", (4, 4)), False),
    ("solve_b", lambda b: fx.linalg.solve(f64(A44), b), ("any", (4, 2)), True),
    ("solve_triangular_a", lambda a: fx.linalg.solve_triangular(fx.tril(a), f64(B42)), ("lower", (4, 4)), False),
    ("solve_triangular_upper_a", lambda a: fx.linalg.solve_triangular(fx.triu(a), f64(B4), upper=True), ("upper", (4, 4)), False),
    ("solve_triangular_b", lambda b: fx.linalg.solve_triangular(f64(L44), b), ("any", (4, 2)), True),
    *[(f"qr_{s[0]}x{s[1]}", lambda x: flat(*fx.linalg.qr(x)), ("general", s), False) for s in [(4, 4), (5, 3), (3, 5)]],
    *[(f"svd_values_{s[0]}x{s[1]}", lambda x: fx.linalg.svd(x, compute_uv=False), ("general", s), False) for s in [(4, 4), (5, 3), (3, 5)]],
    *[(f"svd_weighted_{s[0]}x{s[1]}", svd_weighted, ("general", s), False) for s in [(4, 4), (5, 3), (3, 5)]],
    ("svd_isometry", svd_isometry, ("general", (4, 3)), False),
    *[(f"pinv_{s[0]}x{s[1]}", lambda x: fx.linalg.pinv(x), ("general", s), False) for s in [(4, 4), (5, 3), (3, 5)]],
    *[(f"lu_{s[0]}x{s[1]}", lambda x: flat(*fx.linalg.lu(x)[1:]), ("general", s), False) for s in [(4, 4), (5, 3), (3, 5)]],
    ("eigvalsh", lambda x: fx.linalg.eigvalsh(sym_of(x)), ("sym", (4, 4)), False),
    ("eigh_values", lambda x: fx.linalg.eigh(sym_of(x))[0], ("sym", (4, 4)), False),
    ("eigh_vectors", eigh_spectral, ("sym", (4, 4)), False),
    ("eigh_vectors_U", lambda x: eigh_spectral(x, "U"), ("sym", (4, 4)), False),
    *[(f"norm_matrix_{o}", lambda x, o=o: fx.linalg.norm(x, o), ("general", (3, 4)), o not in ("nuc", 2, -2))
      for o in [None, "fro", "nuc", 2, -2, 1, INF]],
    *[(f"norm_vector_{o}", lambda x, o=o: fx.linalg.norm(x, o, axis=-1), ("any", (2, 5)), True) for o in [None, 1, 3, 0.5, INF]],
    ("cross_a", lambda a: fx.linalg.cross(a, f64(V43)), ("any", (4, 3)), True),
    ("cross_b", lambda b: fx.linalg.cross(f64(V43), b), ("any", (4, 3)), True),
    ("cross_size_2", lambda a: fx.linalg.cross(a, f64(V43)), ("any", (4, 2)), True),
]


@pytest.mark.parametrize("fun, point, jvp", [g[1:] for g in GRADS], ids=[g[0] for g in GRADS])
def test_derivatives_against_finite_differences(rng, fun, point, jvp):
    kind, shape = point
    grad_check(fun, mat(rng, shape, kind), rng, jvp=jvp)


# --------------------------------------------------------------------------
# vmap against a loop
# --------------------------------------------------------------------------

VMAPPED = {
    # name: (function, kind, per-output comparison: values or absolute values).
    # MLX vmaps inv, tri_inv, cholesky, svd and eigh; qr, lu, det (n >= 4) and
    # solve raise "[Primitive::vmap] Not implemented for QRF / LUF" there.
    "inv": (lambda a: fx.linalg.inv(a), "general", ["val"]),
    "tri_inv": (lambda a: fx.linalg.tri_inv(a, upper=True), "upper", ["val"]),
    "cholesky": (lambda a: fx.linalg.cholesky(a), "spd", ["val"]),
    "qr": (lambda a: fx.linalg.qr(a), "general", ["abs", "abs"]),
    "svdvals": (lambda a: fx.linalg.svd(a, compute_uv=False), "general", ["val"]),
    "eigh": (lambda a: fx.linalg.eigh(a), "sym", ["val", "abs"]),
    "det": (lambda a: fx.linalg.det(a), "general", ["val"]),
    "lu": (lambda a: fx.linalg.lu(a), "general", ["val", "val", "val"]),
}


def _outs(o):
    return list(o) if isinstance(o, (tuple, list)) else [o]


def _same(got, want, mode):
    g, w = np.array(got).astype(np.float64), np.array(want).astype(np.float64)
    close(np.abs(g) if mode == "abs" else g, np.abs(w) if mode == "abs" else w, "float32")


@pytest.mark.parametrize("in_axis", [0, 1, 2])
@pytest.mark.parametrize("name", list(VMAPPED))
def test_vmap_matches_a_loop(rng, name, in_axis):
    fun, kind, modes = VMAPPED[name]
    x = mat(rng, (3, 4, 4), kind).astype(np.float32)
    got = _outs(fx.vmap(fun, in_axes=in_axis)(fx.array(np.moveaxis(x, 0, in_axis))))
    loop = [_outs(fun(fx.array(x[i]))) for i in range(3)]
    assert len(got) == len(modes)
    for k, mode in enumerate(modes):
        assert got[k].dtype == loop[0][k].dtype
        _same(got[k], np.stack([np.array(o[k]) for o in loop]), mode)


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0), (2, -1)])
@pytest.mark.parametrize("b_shape", [(4,), (4, 2)])
def test_vmap_solve(rng, in_axes, b_shape):
    """Each element solves a (4, 4) system; b is a vector or a matrix there."""
    ia, ib = in_axes
    a = mat(rng, (3, 4, 4)).astype(np.float32)
    b = rng.standard_normal((3, *b_shape)).astype(np.float32)
    a_in = a[0] if ia is None else np.moveaxis(a, 0, ia)
    b_in = b[0] if ib is None else np.moveaxis(b, 0, ib)
    got = fx.vmap(fx.linalg.solve, in_axes=in_axes)(fx.array(a_in), fx.array(b_in))
    want = np.stack([np.linalg.solve(a[0 if ia is None else i].astype(np.float64), b[0 if ib is None else i]) for i in range(3)])
    check(got, want, "float32", 4)


# --------------------------------------------------------------------------
# MLX
# --------------------------------------------------------------------------

MLX_CASES = [
    # name, operands as (kind, shape), kwargs, per-output comparison
    ("norm", [("any", (3, 4))], {"ord": "nuc"}, ["val"]),
    ("norm", [("any", (2, 3, 4))], {"ord": -2, "axis": (2, 0), "keepdims": True}, ["val"]),
    ("norm", [("any", (2, 3, 4))], {"ord": INF, "axis": [-1, -3]}, ["val"]),
    ("norm", [("any", (2, 3, 4))], {"ord": 0.5, "axis": 1, "keepdims": True}, ["val"]),
    ("norm", [("any", (2, 3, 4))], {}, ["val"]),
    ("qr", [("general", (5, 3))], {}, ["abs", "abs"]),
    ("qr", [("general", (2, 3, 5))], {}, ["abs", "abs"]),
    ("svd", [("general", (2, 4, 4))], {}, ["abs", "val", "abs"]),
    ("svd", [("general", (5, 3))], {"compute_uv": False}, ["val"]),
    ("inv", [("general", (2, 4, 4))], {}, ["val"]),
    ("tri_inv", [("upper", (4, 4))], {"upper": True}, ["val"]),
    ("cholesky", [("spd", (2, 4, 4))], {"upper": True}, ["val"]),
    ("cholesky_inv", [("lower", (4, 4))], {}, ["val"]),
    ("pinv", [("general", (3, 5))], {}, ["val"]),
    ("lu", [("general", (2, 5, 5))], {}, ["exact", "val", "val"]),
    ("lu", [("general", (3, 5))], {}, ["exact", "val", "val"]),
    ("lu_factor", [("general", (5, 3))], {}, ["val", "exact"]),
    ("solve", [("general", (2, 4, 4)), ("any", (2, 4, 3))], {}, ["val"]),
    ("solve", [("general", (4, 4)), ("any", (4,))], {}, ["val"]),
    ("solve_triangular", [("upper", (4, 4)), ("any", (4, 2))], {"upper": True}, ["val"]),
    ("cross", [("any", (4, 3)), ("any", (4, 3))], {}, ["val"]),
    ("cross", [("any", (2,)), ("any", (4, 3))], {}, ["val"]),
    ("cross", [("any", (3, 2)), ("any", (3, 2))], {"axis": 0}, ["val"]),
    ("eig", [("general", (4, 4))], {}, ["set", "shape"]),
    ("eigvals", [("general", (2, 4, 4))], {}, ["set"]),
    ("eigh", [("sym", (4, 4))], {"UPLO": "U"}, ["val", "abs"]),
    ("eigvalsh", [("sym", (2, 4, 4))], {}, ["val"]),
    ("det", [("general", (3, 3))], {}, ["val"]),
    ("det", [("general", (2, 5, 5))], {}, ["val32"]),  # MLX's float64 exp has float32 precision
    ("slogdet", [("general", (2, 4, 4))], {}, ["val", "val"]),
]


def agree(got, want, mode):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape), (got.shape, want.shape)
    g, w = np.array(got), np.array(want)
    tol = "float64" if g.dtype == np.float64 and mode != "val32" else "float32"
    if mode == "exact":
        np.testing.assert_array_equal(g, w)
    elif mode in ("val", "val32"):
        close(g, w, tol, scale=4)
    elif mode == "abs":
        close(np.abs(g), np.abs(w), tol, scale=4)
    elif mode == "set":
        same_set(g, w, 1e-4)


@pytest.mark.skipif(not HAVE_MLX, reason="MLX is not installed")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", MLX_CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(MLX_CASES)])
def test_agrees_with_mlx(rng, case, dtype):
    import mlx.core as mx

    name, operands, kwargs, modes = case
    data = [mat(rng, shape, kind).astype(dtype) for kind, shape in operands]
    got = _outs(getattr(fx.linalg, name)(*[fxa(d, dtype) for d in data], **kwargs))
    want = _outs(getattr(mx.linalg, name)(*[mx.array(d, dtype=getattr(mx, dtype)) for d in data], **kwargs, stream=mx.cpu))
    assert len(got) == len(want) == len(modes)
    for g, w, mode in zip(got, want, modes):
        agree(g, w, mode)


@pytest.mark.skipif(not HAVE_MLX, reason="MLX is not installed")
def test_integer_inputs_agree_with_mlx():
    import mlx.core as mx

    v, m = np.array([3, -4, 0, 1], np.int32), (np.arange(12, dtype=np.int32) - 5).reshape(3, 4)
    calls = [("norm", (v,), {"ord": o}) for o in [None, 0, 1, 3, 0.5, INF]]
    calls += [("norm", (m,), {"ord": o}) for o in [None, "fro", 1, -1, INF, -INF]]
    calls += [("norm", (m,), {"axis": 0, "keepdims": True}), ("det", (m[:2, :2],), {}), ("det", (m[:3, :3],), {}),
              ("slogdet", (m[1:3, 1:3],), {}), ("cross", (m[:, :3], m[:, 1:]), {}), ("cross", (v[:3], m[:, :3].astype(np.float32)), {})]
    for name, args, kwargs in calls:
        got = _outs(getattr(fx.linalg, name)(*[fx.array(a) for a in args], **kwargs))
        want = _outs(getattr(mx.linalg, name)(*[mx.array(a) for a in args], **kwargs, stream=mx.cpu))
        for g, w in zip(got, want):
            agree(g, w, "val")


# --------------------------------------------------------------------------
# the extras MLX does not have (PyTorch's and NumPy's semantics)
# --------------------------------------------------------------------------


def expm_reference(a):
    """exp(a) in float64 by scaling, a Taylor series and squaring."""
    a = np.asarray(a, np.float64)
    s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(-2).max(), 1e-300)))) + 1)
    x = a / 2.0**s
    term, total = np.broadcast_to(np.eye(a.shape[-1]), a.shape).copy(), np.broadcast_to(np.eye(a.shape[-1]), a.shape).copy()
    for k in range(1, 30):
        term = term @ x / k
        total = total + term
    for _ in range(s):
        total = total @ total
    return total


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [0.01, 1.0, 30.0])
def test_matrix_exp(rng, dtype, scale):
    a = rng.standard_normal((3, 5, 5)) * scale / 5
    want = expm_reference(a)
    check(fx.linalg.matrix_exp(fxa(a, dtype)), want, dtype, scale=max(1.0, scale) * (10 if dtype == "float32" else 1e3))
    s = a + mT(a)  # symmetric: exp through the eigendecomposition
    w, v = np.linalg.eigh(s)
    check(fx.linalg.matrix_exp(fxa(s, dtype)), (v * np.exp(w)[..., None, :]) @ mT(v), dtype, scale=max(1.0, scale) * 100)


@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 5, 8])
def test_matrix_power(rng, n):
    a = rng.standard_normal((2, 4, 4)) / 2 + np.eye(4)
    check(fx.linalg.matrix_power(fxa(a, "float64"), n), np.linalg.matrix_power(a, n), "float64", scale=1e3)
    ints = rng.integers(-2, 3, (3, 3))
    if n >= 0:
        np.testing.assert_array_equal(np.array(fx.linalg.matrix_power(fx.array(ints), n)), np.linalg.matrix_power(ints, n))


def test_matrix_rank_and_cond(rng):
    u, v = orth(rng, (2,), 6, 6), orth(rng, (2,), 5, 5)
    s = np.array([3.0, 2.0, 1.0, 1e-17, 0.0])
    a = (u[..., :5] * s) @ mT(v)
    assert fx.linalg.matrix_rank(fxa(a, "float64")).tolist() == np.linalg.matrix_rank(a).tolist() == [3, 3]
    assert fx.linalg.matrix_rank(fxa(a, "float64"), atol=0.5).tolist() == [3, 3]
    assert fx.linalg.matrix_rank(fxa(a, "float64"), rtol=0.5).tolist() == [2, 2]
    assert fx.linalg.matrix_rank(fxa(a, "float64")).dtype == fx.int64
    sym = a[..., :5, :] @ mT(a[..., :5, :])
    assert fx.linalg.matrix_rank(fxa(sym, "float64"), hermitian=True).tolist() == np.linalg.matrix_rank(sym, hermitian=True).tolist()
    sq = rng.standard_normal((3, 4, 4)) + 2 * np.eye(4)
    for p in [None, 2, -2, 1, -1, INF, -INF, "fro", "nuc"]:
        check(fx.linalg.cond(fxa(sq, "float64"), p), np.linalg.cond(sq, p), "float64", scale=1e3)
    assert np.all(np.array(fx.linalg.cond(fxa(a, "float64")[..., :5, :])) > 1e12)  # singular: huge (its value is noise)


@pytest.mark.parametrize("shape_a, shape_b", [((6, 3), (6,)), ((6, 3), (6, 2)), ((2, 5, 4), (2, 5, 3)), ((3, 5), (3, 2)), ((4, 4), (4,))])
def test_lstsq_matches_numpy(rng, shape_a, shape_b):
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    x, res, rank, s = fx.linalg.lstsq(fxa(a, "float64"), fxa(b, "float64"))
    if a.ndim == 2:
        X, RES, RANK, S = np.linalg.lstsq(a, b, rcond=None)
        check(x, X, "float64", scale=1e3)
        assert rank.item() == RANK and rank.dtype == fx.int64
        check(s, S, "float64")
        if a.shape[0] > a.shape[1]:
            check(res, RES, "float64", scale=1e3)
        else:
            assert res.shape == (0,)
    else:
        X = np.stack([np.linalg.lstsq(ai, bi, rcond=None)[0] for ai, bi in zip(a, b)])
        check(x, X, "float64", scale=1e3)


def test_householder_product_rebuilds_qr(rng):
    for m, n in [(5, 5), (7, 4), (6, 1)]:
        a = rng.standard_normal((m, n))
        h, tau = np.linalg.qr(a, mode="raw")  # LAPACK's geqrf output (h transposed)
        q = np.linalg.qr(a)[0]
        check(fx.linalg.householder_product(fxa(h.T, "float64"), fxa(tau, "float64")), q, "float64", scale=1e3)
    with pytest.raises(ValueError, match="householder_product"):
        fx.linalg.householder_product(fx.zeros((3, 4)), fx.zeros((2,)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("a_shape, b_shape", [((4, 4), (4, 3)), ((2, 5, 5), (2, 5, 2)), ((3, 1, 4, 4), (2, 4, 1)), ((1, 1), (1, 1)), ((3, 3), (3, 0))])
def test_lu_solve(rng, dtype, left, adjoint, a_shape, b_shape):
    a = rng.standard_normal(a_shape) + 3 * np.eye(a_shape[-1])
    b = rng.standard_normal(b_shape)
    if not left:
        b = mT(b)
    lu, piv = fx.linalg.lu_factor(fxa(a, dtype))
    x = fx.linalg.lu_solve(lu, piv, fxa(b, dtype), left=left, adjoint=adjoint)
    op = mT(a) if adjoint else a
    want = np.linalg.solve(op, b) if left else mT(np.linalg.solve(mT(op), mT(b)))
    check(x, want, dtype, scale=10)


def test_lu_solve_vectors_views_and_pivots_of_any_integer_type(rng):
    a = rng.standard_normal((5, 5))
    a[[0, 3]] = a[[3, 0]] * 4  # pivots that move rows
    b = rng.standard_normal(5)
    lu, piv = fx.linalg.lu_factor(f64(a))
    check(fx.linalg.lu_solve(lu, piv, f64(b)), np.linalg.solve(a, b), "float64", scale=10)
    check(fx.linalg.lu_solve(lu, piv.astype(fx.int64), f64(b), adjoint=True), np.linalg.solve(a.T, b), "float64", scale=10)
    # A non-contiguous right-hand side.
    bm = rng.standard_normal((3, 5))
    check(fx.linalg.lu_solve(lu, piv, fx.transpose(f64(bm))), np.linalg.solve(a, bm.T), "float64", scale=10)
    # vmap over the factorization and the right-hand side.
    stack = rng.standard_normal((3, 4, 4)) + 3 * np.eye(4)
    bs = rng.standard_normal((3, 4))
    lus, pivs = fx.linalg.lu_factor(f64(stack))
    got = fx.vmap(fx.linalg.lu_solve)(lus, pivs, f64(bs))
    check(got, np.linalg.solve(stack, bs[..., None])[..., 0], "float64", scale=10)


def test_lu_solve_errors():
    lu, piv = fx.linalg.lu_factor(fx.eye(3))
    with pytest.raises(ValueError, match=re.escape("[linalg::lu_solve] pivots must be an integer array of shape (..., 3)")):
        fx.linalg.lu_solve(lu, piv.astype(fx.float32), fx.ones((3, 1)))
    with pytest.raises(ValueError, match=re.escape("[linalg::lu_solve] pivots must be an integer array of shape (..., 3)")):
        fx.linalg.lu_solve(lu, piv[:2], fx.ones((3, 1)))
    with pytest.raises(ValueError, match=re.escape("[linalg::lu_solve] pivot 7 at position 1 is out of range for 3 rows.")):
        fx.eval(fx.linalg.lu_solve(lu, fx.array([0, 7, 2], dtype=fx.uint32), fx.ones((3, 1))))
    with pytest.raises(ValueError, match=re.escape("[linalg::lu_solve] b must have at least 2 dimensions when left is False.")):
        fx.linalg.lu_solve(lu, piv, fx.ones(3), left=False)
    with pytest.raises(ValueError, match="linalg::lu_solve"):
        fx.linalg.lu_solve(lu, piv, fx.ones((4, 1)))


# LAPACK's sytrf (SciPy's ssytrf/dsytrf, lower triangle) on fixed matrices,
# upper triangle zeroed as PyTorch's ldl_factor returns it: inputs, packed
# factors and 1-based pivots under "<case>/<dtype>/{a,ld,pivots}".
LDL_LAPACK = np.load(__import__("pathlib").Path(__file__).parent / "data" / "ldl_lapack.npz")
LDL_CASES = sorted({key.split("/")[0] for key in LDL_LAPACK.files})


def ldl_rebuild(ld, pivots):
    """P L D L^T P^T from LAPACK's packed lower form (the reading sytrs does):
    step k's multipliers are stored in the row order of step k."""
    n = ld.shape[-1]
    d = np.zeros((n, n))
    steps, k = [], 0
    while k < n:
        step = 2 if pivots[k] < 0 else 1
        d[k:k + step, k:k + step] = ld[k:k + step, k:k + step]
        if step == 2:
            d[k, k + 1] = d[k + 1, k]
        steps.append((k, step))
        k += step
    m = d
    for k, step in reversed(steps):
        lk = np.eye(n)
        lk[k + step:, k:k + step] = ld[k + step:, k:k + step]
        p = np.eye(n)
        kk, q = k + step - 1, abs(int(pivots[k])) - 1
        p[[kk, q]] = p[[q, kk]]
        m = (p @ lk) @ m @ (p @ lk).T
    return m


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", LDL_CASES)
def test_ldl_factor_matches_lapack(case, dtype):
    a = LDL_LAPACK[f"{case}/{dtype}/a"]
    ld, pivots = fx.linalg.ldl_factor(fxa(a, dtype))
    assert ld.dtype == getattr(fx, dtype) and pivots.dtype == fx.int32
    np.testing.assert_array_equal(np.array(pivots), LDL_LAPACK[f"{case}/{dtype}/pivots"])
    check(ld, LDL_LAPACK[f"{case}/{dtype}/ld"], dtype, scale=100)
    # The factors rebuild the (symmetrized) input.
    close(ldl_rebuild(np.array(ld, dtype=np.float64), np.array(pivots)), np.tril(a) + np.tril(a, -1).T, dtype, scale=100)


def test_ldl_factor_batches_views_and_the_lower_triangle(rng):
    a = rng.standard_normal((2, 3, 7, 7))
    a = a + mT(a)
    a[0, 1] *= 1 - np.eye(7)  # zero diagonal: 2x2 blocks
    # A transposed view with garbage above the diagonal: only the lower triangle is read.
    garbage = np.tril(a) + np.triu(rng.standard_normal(a.shape) * 50, 1)
    ld, pivots = fx.linalg.ldl_factor(fx.swapaxes(f64(mT(garbage)), -1, -2))
    assert ld.shape == (2, 3, 7, 7) and pivots.shape == (2, 3, 7)
    ld, pivots = np.array(ld), np.array(pivots)
    assert (np.triu(ld, 1) == 0).all()
    assert (pivots < 0).any() and (pivots > 0).any()
    for i in np.ndindex(2, 3):
        close(ldl_rebuild(ld[i], pivots[i]), a[i], "float64", scale=100)
    # vmap gives what the batch gives.
    vl, vp = fx.vmap(fx.linalg.ldl_factor)(f64(a[0]))
    np.testing.assert_array_equal(np.array(vp), pivots[0])
    close(np.array(vl), ld[0], "float64")


def test_ldl_factor_edge_cases_and_errors():
    for shape in [(0, 0), (3, 0, 0)]:
        ld, pivots = fx.linalg.ldl_factor(fx.zeros(shape, dtype=fx.float64))
        assert ld.shape == shape and pivots.shape == shape[:-1] and pivots.dtype == fx.int32
    ld, pivots = fx.linalg.ldl_factor(fx.array([[-2.0]]), hermitian=True)
    assert np.array(ld).tolist() == [[-2.0]] and np.array(pivots).tolist() == [1]
    # A zero column is a singular 1x1 block, left in place (LAPACK's info > 0).
    ld, pivots = fx.linalg.ldl_factor(fx.array([[0.0, 0.0], [0.0, 3.0]]))
    assert np.array(ld).tolist() == [[0.0, 0.0], [0.0, 3.0]] and np.array(pivots).tolist() == [1, 2]
    with pytest.raises(ValueError, match=re.escape("[linalg::ldl_factor] LDL factorizations are only defined for square matrices.")):
        fx.linalg.ldl_factor(fx.zeros((3, 4)))
    with pytest.raises(ValueError, match=re.escape("[linalg::ldl_factor] Arrays must have >= 2 dimensions.")):
        fx.linalg.ldl_factor(fx.zeros(3))
    for dtype in (fx.int32, fx.float16, fx.complex64):
        with pytest.raises(ValueError, match=re.escape("[linalg::ldl_factor] Arrays must have type float32 or float64.")):
            fx.linalg.ldl_factor(fx.zeros((3, 3), dtype=dtype))
    with pytest.raises(ValueError, match="ldl_factor.*gradient"):
        fx.grad(lambda x: fx.linalg.ldl_factor(x)[0].sum())(fx.eye(3))


@pytest.mark.parametrize("ord", [2, 1, 0, INF, -INF, 3.5])
@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
def test_vector_norm(rng, ord, dim):
    x = rng.standard_normal((3, 4, 5))
    want = np.linalg.norm(x.reshape(-1), ord) if dim is None else (
        np.linalg.norm(x, ord, axis=dim) if isinstance(dim, int) else np.linalg.norm(np.moveaxis(x, dim, (-2, -1)).reshape(4, -1), ord, axis=-1))
    check(fx.linalg.vector_norm(fxa(x, "float64"), ord, dim), want, "float64")


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, INF, -INF])
def test_matrix_norm(rng, ord):
    x = rng.standard_normal((3, 4, 5))
    check(fx.linalg.matrix_norm(fxa(x, "float64"), ord), np.linalg.norm(x, ord, axis=(-2, -1)), "float64")
    check(fx.linalg.matrix_norm(fxa(x, "float64"), ord, dim=(0, 2), keepdim=True),
          np.linalg.norm(x, ord, axis=(0, 2), keepdims=True), "float64")


@pytest.mark.parametrize(
    "name, fun",
    [
        ("matrix_exp", lambda v: fx.linalg.matrix_exp(v * 0.5)),
        ("matrix_power", lambda v: fx.linalg.matrix_power(v + 2 * fx.eye(3, dtype=fx.float64), -2)),
        ("lstsq", lambda v: fx.linalg.lstsq(fx.concatenate([v, v * v + fx.eye(3, dtype=fx.float64)]), fx.arange(6, dtype=fx.float64))[0]),
        ("cond", lambda v: fx.linalg.cond(v + 3 * fx.eye(3, dtype=fx.float64), 1)),
        ("lu_solve", lambda v: fx.linalg.lu_solve(*fx.linalg.lu_factor(v + 2 * fx.eye(3, dtype=fx.float64)), v * v)),
        ("lu_solve_adjoint", lambda v: fx.linalg.lu_solve(*fx.linalg.lu_factor(v.T @ v + fx.eye(3, dtype=fx.float64)), v, adjoint=True)),
    ],
)
def test_extras_derivatives(rng, name, fun):
    x = rng.standard_normal((3, 3)) / 2
    y0 = np.array(fun(f64(x)))
    w = rng.uniform(-1, 1, y0.shape)
    fd = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += FD_EPS
        lo[idx] -= FD_EPS
        fd[idx] = (np.sum(np.array(fun(f64(hi))) * w) - np.sum(np.array(fun(f64(lo))) * w)) / (2 * FD_EPS)
    g = fx.grad(lambda v: (fun(v) * f64(w)).sum())(f64(x))
    np.testing.assert_allclose(np.array(g), fd, rtol=1e-5, atol=1e-6)
