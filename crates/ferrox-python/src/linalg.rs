//! `ferrox.linalg`: the submodule mirroring `mlx.core.linalg` (names,
//! parameters, defaults, output order and errors). Unlike MLX's, every
//! routine runs on the default device (GPU arrays are factorized on the
//! host for now) and is differentiable.

use crate::args;
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::on_stream;
use crate::errors::IntoPyResult;
use crate::ops::wrap;
use ferrox::ops::linalg::{self as la, NormOrd};
use ferrox::Array;
use ferrox_python_macros::guarded;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};

type Stream<'py> = Option<&'py Bound<'py, PyAny>>;

/// Two arrays as a Python tuple's items.
fn pair(r: PyResult<ferrox::Result<(Array, Array)>>) -> PyResult<(PyArray, PyArray)> {
    let (a, b) = r?.py()?;
    Ok((PyArray::wrap(a), PyArray::wrap(b)))
}

/// Several arrays as a Python tuple's items.
fn many(r: PyResult<ferrox::Result<Vec<Array>>>) -> PyResult<Vec<PyArray>> {
    Ok(r?.py()?.into_iter().map(PyArray::wrap).collect())
}

/// A norm's `ord`: None, a number, or `"fro"`, `"f"`, `"nuc"` (which need
/// two axes: `axes`, the number the norm reduces).
fn ord_arg(ord: Option<&Bound<'_, PyAny>>, axes: usize) -> PyResult<Option<NormOrd>> {
    let Some(o) = ord.filter(|o| !o.is_none()) else { return Ok(None) };
    if let Ok(s) = o.downcast::<PyString>() {
        let s = s.to_str()?;
        if axes != 2 {
            return Err(PyValueError::new_err(format!(
                "[linalg::norm] Norm '{s}' only supported for matrices, but received {axes} axis/axes."
            )));
        }
        return match s {
            "fro" | "f" => Ok(Some(NormOrd::Frobenius)),
            "nuc" => Ok(Some(NormOrd::Nuclear)),
            _ => Err(PyValueError::new_err(format!("[linalg::norm] Invalid ord value '{s}' for matrix norm."))),
        };
    }
    if o.is_instance_of::<PyBool>() || !(o.is_instance_of::<PyInt>() || o.is_instance_of::<PyFloat>()) {
        return Err(PyTypeError::new_err(format!(
            "[linalg::norm] ord must be None, a number or a string, got {}.",
            o.get_type().name()?
        )));
    }
    Ok(Some(NormOrd::Number(o.extract::<f64>()?)))
}

/// Matrix or vector norm.
///
/// Args:
///     a (array): Input array; with ``axis=None`` it must be 1-D or 2-D unless ``ord`` is None.
///     ord (int, float or str, optional): Order of the norm: a number for vectors (``inf``,
///         ``-inf``, 0, or any p) or one of 1, -1, 2, -2, ``inf``, ``-inf``, ``'fro'``,
///         ``'nuc'`` for matrices. Default: the 2-norm (Frobenius for matrices).
///     axis (int or list(int), optional): One axis (vector norm) or two (matrix norm).
///         Default: every axis.
///     keepdims (bool, optional): Keep the reduced axes with size one. Default: ``False``.
///
/// Returns:
///     array: The norm (float32 for integer inputs).
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, ord = None, axis = None, keepdims = false, *, stream = None))]
fn norm(
    a: &Bound<'_, PyAny>,
    ord: Option<&Bound<'_, PyAny>>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
    stream: Stream<'_>,
) -> PyResult<PyArray> {
    let axis = args::axes("linalg::norm", axis)?;
    let a = to_array(a, None)?;
    let ord = ord_arg(ord, axis.as_ref().map_or(a.ndim(), Vec::len))?;
    wrap(on_stream(stream, || la::norm(&a, ord, axis.as_deref(), keepdims)))
}

/// The QR factorization of the matrices in ``a`` (reduced).
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///
/// Returns:
///     tuple(array, array): ``Q`` of shape ``(..., M, K)`` with orthonormal columns and upper
///     triangular ``R`` of shape ``(..., K, N)``, ``K = min(M, N)``.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn qr(a: &Bound<'_, PyAny>, stream: Stream<'_>) -> PyResult<(PyArray, PyArray)> {
    let a = to_array(a, None)?;
    pair(on_stream(stream, || la::qr(&a)))
}

/// The singular value decomposition of the matrices in ``a``.
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///     compute_uv (bool, optional): Also return ``U`` and ``Vt``. Default: ``True``.
///
/// Returns:
///     Union[tuple(array, ...), array]: ``(U, S, Vt)`` with ``U`` of shape ``(..., M, M)``,
///     ``S`` of shape ``(..., K)`` (descending) and ``Vt`` of shape ``(..., N, N)`` so that
///     ``A = U[..., :K] @ diag(S) @ Vt[..., :K, :]``; only ``S`` when ``compute_uv`` is False.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, compute_uv = true, *, stream = None))]
fn svd(py: Python<'_>, a: &Bound<'_, PyAny>, compute_uv: bool, stream: Stream<'_>) -> PyResult<PyObject> {
    let a = to_array(a, None)?;
    let mut out = many(on_stream(stream, || la::svd(&a, compute_uv)))?;
    if compute_uv {
        Ok(pyo3::types::PyTuple::new(py, out)?.into_any().unbind())
    } else {
        Ok(Py::new(py, out.remove(0))?.into_any())
    }
}

/// The inverse of the square matrices in ``a``.
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///
/// Returns:
///     array: ``ainv`` with ``a @ ainv = I``; a singular matrix raises at evaluation.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn inv(a: &Bound<'_, PyAny>, stream: Stream<'_>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || la::inv(&a)))
}

/// The inverse of the triangular matrices in ``a``.
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///     upper (bool, optional): Whether the upper (else the lower) triangle is used. Default: ``False``.
///
/// Returns:
///     array: The inverse of the triangle (a triangle of the same kind).
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, upper = false, *, stream = None))]
fn tri_inv(a: &Bound<'_, PyAny>, upper: bool, stream: Stream<'_>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || la::tri_inv(&a, upper)))
}

/// The Cholesky factor of the symmetric positive definite matrices in ``a``.
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///     upper (bool, optional): Return (reading the upper triangle) ``U`` with ``A = U.T @ U``
///         instead of ``L`` with ``A = L @ L.T``. Default: ``False``.
///
/// Returns:
///     array: The triangular factor.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, upper = false, *, stream = None))]
fn cholesky(a: &Bound<'_, PyAny>, upper: bool, stream: Stream<'_>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || la::cholesky(&a, upper)))
}

/// The inverse of a symmetric positive definite matrix from its Cholesky factor.
///
/// Args:
///     a (array): The Cholesky factor (at least 2 dimensions).
///     upper (bool, optional): Whether ``a`` is the upper factor. Default: ``False``.
///
/// Returns:
///     array: The inverse of ``L @ L.T`` (or ``U.T @ U``).
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, upper = false, *, stream = None))]
fn cholesky_inv(a: &Bound<'_, PyAny>, upper: bool, stream: Stream<'_>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || la::cholesky_inv(&a, upper)))
}

/// The Moore-Penrose pseudo-inverse of the matrices in ``a``.
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///
/// Returns:
///     array: The pseudo-inverse, of shape ``(..., N, M)``.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn pinv(a: &Bound<'_, PyAny>, stream: Stream<'_>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || la::pinv(&a)))
}

/// The cross product of two arrays of 2- or 3-element vectors.
///
/// Args:
///     a (array): Input array.
///     b (array): Input array.
///     axis (int, optional): The axis holding the vectors. Default: ``-1``.
///
/// Returns:
///     array: The cross products (3-element vectors along ``axis``).
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, axis = -1, *, stream = None))]
fn cross(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, axis: isize, stream: Stream<'_>) -> PyResult<PyArray> {
    let (a, b) = (to_array(a, None)?, to_array(b, None)?);
    wrap(on_stream(stream, || la::cross(&a, &b, axis)))
}

/// The eigenvalues of the square matrices in ``a``.
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///
/// Returns:
///     array: The eigenvalues (complex64).
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn eigvals(a: &Bound<'_, PyAny>, stream: Stream<'_>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || la::eigvals(&a)))
}

/// The eigenvalues and eigenvectors of the square matrices in ``a``.
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///
/// Returns:
///     tuple(array, array): The eigenvalues and the unit eigenvectors (columns), complex64.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn eig(a: &Bound<'_, PyAny>, stream: Stream<'_>) -> PyResult<(PyArray, PyArray)> {
    let a = to_array(a, None)?;
    pair(on_stream(stream, || la::eig(&a)))
}

/// The eigenvalues of the symmetric matrices in ``a``.
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///     UPLO (str, optional): ``"L"`` to read the lower triangle, ``"U"`` the upper. Default: ``"L"``.
///
/// Returns:
///     array: The eigenvalues in ascending order.
#[guarded]
#[pyfunction]
#[pyo3(name = "eigvalsh", signature = (a, UPLO = "L", *, stream = None))]
#[allow(non_snake_case)]
fn eigvalsh(a: &Bound<'_, PyAny>, UPLO: &str, stream: Stream<'_>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || la::eigvalsh(&a, UPLO)))
}

/// The eigenvalues and eigenvectors of the symmetric matrices in ``a``.
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///     UPLO (str, optional): ``"L"`` to read the lower triangle, ``"U"`` the upper. Default: ``"L"``.
///
/// Returns:
///     tuple(array, array): The eigenvalues in ascending order and the eigenvectors (columns).
#[guarded]
#[pyfunction]
#[pyo3(name = "eigh", signature = (a, UPLO = "L", *, stream = None))]
#[allow(non_snake_case)]
fn eigh(a: &Bound<'_, PyAny>, UPLO: &str, stream: Stream<'_>) -> PyResult<(PyArray, PyArray)> {
    let a = to_array(a, None)?;
    pair(on_stream(stream, || la::eigh(&a, UPLO)))
}

/// The LU factorization of the matrices in ``a`` (partial pivoting).
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///
/// Returns:
///     tuple(array, array, array): ``(P, L, U)`` with ``a = (L @ U)[P]`` row-wise: ``P`` the row
///     order (uint32), ``L`` unit lower triangular, ``U`` upper triangular.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn lu(py: Python<'_>, a: &Bound<'_, PyAny>, stream: Stream<'_>) -> PyResult<PyObject> {
    let a = to_array(a, None)?;
    let out = many(on_stream(stream, || la::lu(&a)))?;
    Ok(pyo3::types::PyTuple::new(py, out)?.into_any().unbind())
}

/// The packed LU factorization of the matrices in ``a`` (partial pivoting, LAPACK's layout).
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///
/// Returns:
///     tuple(array, array): The factors (``L`` below the diagonal, unit diagonal implied, ``U``
///     on and above) and the 0-based pivots (uint32): row ``i`` was swapped with ``pivots[i]``.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn lu_factor(a: &Bound<'_, PyAny>, stream: Stream<'_>) -> PyResult<(PyArray, PyArray)> {
    let a = to_array(a, None)?;
    pair(on_stream(stream, || la::lu_factor(&a)))
}

/// Solve ``a @ x = b`` for square ``a``.
///
/// Args:
///     a (array): Square matrices (at least 2 dimensions).
///     b (array): A vector, or matrices ``(..., N, K)``; batch axes broadcast with ``a``'s.
///
/// Returns:
///     array: ``x``.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, *, stream = None))]
fn solve(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, stream: Stream<'_>) -> PyResult<PyArray> {
    let (a, b) = (to_array(a, None)?, to_array(b, None)?);
    wrap(on_stream(stream, || la::solve(&a, &b)))
}

/// Solve ``t @ x = b`` for the triangle ``t`` of ``a``.
///
/// Args:
///     a (array): Square matrices (at least 2 dimensions).
///     b (array): A vector, or matrices ``(..., N, K)``.
///     upper (bool, optional): Use the upper (else the lower) triangle of ``a``. Default: ``False``.
///
/// Returns:
///     array: ``x``.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, *, upper = false, stream = None))]
fn solve_triangular(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, upper: bool, stream: Stream<'_>) -> PyResult<PyArray> {
    let (a, b) = (to_array(a, None)?, to_array(b, None)?);
    wrap(on_stream(stream, || la::solve_triangular(&a, &b, upper)))
}

/// The determinant of the square matrices in ``a``.
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///
/// Returns:
///     array: The determinants.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn det(a: &Bound<'_, PyAny>, stream: Stream<'_>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || la::det(&a)))
}

/// The sign and log absolute value of the determinant of the square matrices in ``a``.
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///
/// Returns:
///     tuple(array, array): ``(sign, logabsdet)``; a singular matrix gives ``(0, -inf)``.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn slogdet(a: &Bound<'_, PyAny>, stream: Stream<'_>) -> PyResult<(PyArray, PyArray)> {
    let a = to_array(a, None)?;
    pair(on_stream(stream, || la::slogdet(&a)))
}

/// ``a`` raised to the integer power ``n`` (PyTorch's ``linalg.matrix_power``).
///
/// Args:
///     a (array): Square matrices (at least 2 dimensions).
///     n (int): The exponent; negative powers invert first, 0 gives the identity.
///
/// Returns:
///     array: ``a @ a @ ... @ a`` (``n`` factors).
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, n, *, stream = None))]
fn matrix_power(a: &Bound<'_, PyAny>, n: i64, stream: Stream<'_>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || la::matrix_power(&a, n)))
}

/// The matrix exponential (PyTorch's ``linalg.matrix_exp``; Padé 13 with scaling and squaring).
///
/// Args:
///     a (array): Square matrices (at least 2 dimensions), float32 or float64.
///
/// Returns:
///     array: ``exp(a)``.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn matrix_exp(a: &Bound<'_, PyAny>, stream: Stream<'_>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || la::matrix_exp(&a)))
}

/// The numerical rank (PyTorch's ``linalg.matrix_rank``).
///
/// Args:
///     a (array): Matrices (at least 2 dimensions).
///     atol (float, optional): Absolute tolerance on the singular values. Default: 0.
///     rtol (float, optional): Tolerance relative to the largest singular value. Default:
///         ``eps * max(m, n)`` when ``atol`` is not given, else 0.
///     hermitian (bool, optional): ``a`` is symmetric (eigenvalues are used). Default: ``False``.
///
/// Returns:
///     array: The rank of each matrix (int64).
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, *, atol = None, rtol = None, hermitian = false, stream = None))]
fn matrix_rank(
    a: &Bound<'_, PyAny>,
    atol: Option<f64>,
    rtol: Option<f64>,
    hermitian: bool,
    stream: Stream<'_>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || la::matrix_rank(&a, atol, rtol, hermitian)))
}

/// The condition number (PyTorch's ``linalg.cond``).
///
/// Args:
///     a (array): Matrices (at least 2 dimensions; square unless ``p`` is None, 2 or -2).
///     p (int, float or str, optional): The norm: None or 2 (ratio of extreme singular values),
///         -2, 1, -1, ``inf``, ``-inf``, ``'fro'``, ``'nuc'``. Default: None.
///
/// Returns:
///     array: The condition numbers.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, p = None, *, stream = None))]
fn cond(a: &Bound<'_, PyAny>, p: Option<&Bound<'_, PyAny>>, stream: Stream<'_>) -> PyResult<PyArray> {
    let p = ord_arg(p, 2)?;
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || la::cond(&a, p)))
}

/// The least-squares solution of ``a @ x = b`` (NumPy's ``linalg.lstsq``, through the SVD).
///
/// Args:
///     a (array): Matrices ``(..., M, N)``.
///     b (array): A vector ``(M,)`` or matrices ``(..., M, K)``.
///     rcond (float, optional): Singular values below ``rcond`` times the largest count as
///         zero. Default: ``eps * max(M, N)``.
///
/// Returns:
///     tuple(array, array, array, array): ``(x, residuals, rank, s)``: the solution, the
///     squared residual norm of each column when ``M > N`` (else empty), the rank (int64) and
///     the singular values.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, rcond = None, *, stream = None))]
fn lstsq(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    rcond: Option<f64>,
    stream: Stream<'_>,
) -> PyResult<PyObject> {
    let (a, b) = (to_array(a, None)?, to_array(b, None)?);
    let (x, r, k, s) = on_stream(stream, || la::lstsq(&a, &b, rcond))?.py()?;
    let items = [x, r, k, s].map(PyArray::wrap);
    Ok(pyo3::types::PyTuple::new(py, items)?.into_any().unbind())
}

/// The product of Householder reflectors (PyTorch's ``linalg.householder_product``, LAPACK's ``orgqr``).
///
/// Args:
///     a (array): ``(..., M, N)``, ``M >= N``: the reflectors below the diagonal (unit diagonal implied).
///     tau (array): ``(..., K)``, ``K <= N``: their scale factors.
///
/// Returns:
///     array: The first ``N`` columns of ``H_0 @ ... @ H_{K-1}``.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, tau, *, stream = None))]
fn householder_product(a: &Bound<'_, PyAny>, tau: &Bound<'_, PyAny>, stream: Stream<'_>) -> PyResult<PyArray> {
    let (a, tau) = (to_array(a, None)?, to_array(tau, None)?);
    wrap(on_stream(stream, || la::householder_product(&a, &tau)))
}

/// Solves a linear system from an LU factorization (PyTorch's ``linalg.lu_solve``).
///
/// Args:
///     LU (array): ``(..., N, N)``: the packed factors from :func:`lu_factor`.
///     pivots (array): ``(..., N)``: the 0-based pivots from :func:`lu_factor`.
///     B (array): The right-hand side: ``(..., N, K)`` or ``(N,)`` (``(..., K, N)`` when ``left`` is ``False``).
///     left (bool, optional): Solve ``A X = B`` (``True``) or ``X A = B``. Default: ``True``.
///     adjoint (bool, optional): Use the transpose of ``A``. Default: ``False``.
///
/// Returns:
///     array: ``X``, with the shape of ``B`` (batch axes broadcast).
#[guarded]
#[pyfunction]
#[pyo3(signature = (LU, pivots, B, *, left = true, adjoint = false, stream = None))]
#[allow(non_snake_case)]
fn lu_solve(
    LU: &Bound<'_, PyAny>,
    pivots: &Bound<'_, PyAny>,
    B: &Bound<'_, PyAny>,
    left: bool,
    adjoint: bool,
    stream: Stream<'_>,
) -> PyResult<PyArray> {
    let (lu, pivots, b) = (to_array(LU, None)?, to_array(pivots, None)?, to_array(B, None)?);
    wrap(on_stream(stream, || la::lu_solve(&lu, &pivots, &b, left, adjoint)))
}

/// The Bunch–Kaufman ``LDL^T`` factorization of symmetric matrices (PyTorch's ``linalg.ldl_factor``).
///
/// Args:
///     A (array): ``(..., N, N)`` float32 or float64; only the lower triangle is read.
///     hermitian (bool, optional): PyTorch's flag for complex matrices; real ones are
///         symmetric and Hermitian alike. Default: ``False``.
///
/// Returns:
///     tuple(array, array): ``LD``, LAPACK's ``sytrf`` packing (``D``'s 1x1 and 2x2 blocks on and
///     below the diagonal, the multipliers of ``L`` under them, zeros above), and the 1-based
///     int32 pivots (negative on both rows of a 2x2 block).
#[guarded]
#[pyfunction]
#[pyo3(signature = (A, *, hermitian = false, stream = None))]
#[allow(non_snake_case)]
fn ldl_factor(A: &Bound<'_, PyAny>, hermitian: bool, stream: Stream<'_>) -> PyResult<(PyArray, PyArray)> {
    // Real matrices only: symmetric and Hermitian are the same.
    let _ = hermitian;
    let a = to_array(A, None)?;
    pair(on_stream(stream, || la::ldl_factor(&a)))
}

/// A vector norm over any axes (PyTorch's ``linalg.vector_norm``).
///
/// Args:
///     x (array): Input array.
///     ord (float, optional): The order: any number, ``inf``, ``-inf`` or 0. Default: 2.
///     dim (int or list(int), optional): Axes to reduce. Default: every axis.
///     keepdim (bool, optional): Keep the reduced axes with size one. Default: ``False``.
///
/// Returns:
///     array: The norms (float32 for integer inputs).
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, ord = 2.0, dim = None, keepdim = false, *, stream = None))]
fn vector_norm(
    x: &Bound<'_, PyAny>,
    ord: f64,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
    stream: Stream<'_>,
) -> PyResult<PyArray> {
    let dim = args::axes("linalg::vector_norm", dim)?;
    let x = to_array(x, None)?;
    wrap(on_stream(stream, || la::vector_norm_over(&x, ord, dim.as_deref(), keepdim)))
}

/// A matrix norm over two axes (PyTorch's ``linalg.matrix_norm``).
///
/// Args:
///     a (array): Input array with at least 2 dimensions.
///     ord (int, float or str, optional): ``'fro'``, ``'nuc'``, 1, -1, 2, -2, ``inf`` or
///         ``-inf``. Default: ``'fro'``.
///     dim (list(int), optional): The two axes. Default: ``(-2, -1)``.
///     keepdim (bool, optional): Keep the reduced axes with size one. Default: ``False``.
///
/// Returns:
///     array: The norms.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, ord = None, dim = None, keepdim = false, *, stream = None))]
fn matrix_norm(
    a: &Bound<'_, PyAny>,
    ord: Option<&Bound<'_, PyAny>>,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
    stream: Stream<'_>,
) -> PyResult<PyArray> {
    let dims = args::axes("linalg::matrix_norm", dim)?.unwrap_or_else(|| vec![-2, -1]);
    let [d0, d1] = dims[..] else {
        return Err(PyValueError::new_err("[linalg::matrix_norm] dim must name two axes."));
    };
    let ord = ord_arg(ord, 2)?.unwrap_or(NormOrd::Frobenius);
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || la::matrix_norm(&a, ord, [d0, d1], keepdim)))
}

/// Adds `ferrox.linalg` to the package.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = parent.py();
    let m = PyModule::new(py, "ferrox.linalg")?;
    m.setattr("__doc__", "ferrox.linalg: linear algebra routines (mlx.core.linalg).")?;
    crate::add_functions!(
        &m,
        norm,
        qr,
        svd,
        inv,
        tri_inv,
        cholesky,
        cholesky_inv,
        pinv,
        cross,
        eigvals,
        eig,
        eigvalsh,
        eigh,
        lu,
        lu_factor,
        solve,
        solve_triangular,
        det,
        slogdet,
        matrix_power,
        matrix_exp,
        matrix_rank,
        cond,
        lstsq,
        householder_product,
        lu_solve,
        ldl_factor,
        vector_norm,
        matrix_norm
    );
    parent.add("linalg", &m)?;
    py.import("sys")?.getattr("modules")?.set_item("ferrox.linalg", &m)?;
    Ok(())
}
