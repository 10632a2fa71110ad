//! Linear algebra (MLX's `mlx::core::linalg`): factorizations, inverses,
//! solves, eigendecompositions, determinants, norms and `cross`, batched
//! over leading axes, in float32 and float64, with MLX's argument checks,
//! conventions and messages.
//!
//! PyTorch's and NumPy's extras (`matrix_exp`, `lstsq`, ...) are in
//! `extras.rs`. The routines run as the [`Linalg`](crate::primitives::Linalg) primitive
//! (faer on the CPU); `det`, `slogdet`, `lu`, `pinv`, `cholesky_inv`,
//! `norm` and `cross` are compositions of other ops, as in MLX, so their
//! derivatives follow from those of the parts.

mod extras;

pub use extras::*;

use super::elementwise::astype;
use crate::array::Array;
use crate::backend::LinalgOp;
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};
use crate::ops;
use crate::primitives::linalg_apply as apply;
use crate::shape::broadcast_shapes;

/// MLX's dtype check: float32 or float64.
pub(super) fn check_float(name: &'static str, dtype: Dtype) -> Result<()> {
    if matches!(dtype, Dtype::F32 | Dtype::F64) {
        Ok(())
    } else {
        Err(Error::invalid(
            name,
            format!("Arrays must have type float32 or float64. Received array with type {dtype}."),
        ))
    }
}

/// MLX's rank check.
pub(super) fn check_matrix(name: &'static str, a: &Array) -> Result<()> {
    if a.ndim() < 2 {
        return Err(Error::invalid(
            name,
            format!("Arrays must have >= 2 dimensions. Received array with {} dimensions.", a.ndim()),
        ));
    }
    Ok(())
}

pub(super) fn is_square(a: &Array) -> bool {
    a.shape()[a.ndim() - 1] == a.shape()[a.ndim() - 2]
}

/// A shape as MLX prints it: `(2,3)`, `(3)`.
fn mlx_shape(shape: &[usize]) -> String {
    format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(","))
}

/// A checked square float matrix (batch).
pub(super) fn square(name: &'static str, a: &Array, what: &str) -> Result<()> {
    check_float(name, a.dtype())?;
    check_matrix(name, a)?;
    if !is_square(a) {
        return Err(Error::invalid(name, what.to_string()));
    }
    Ok(())
}

fn one(op: LinalgOp, a: &Array) -> Result<Array> {
    Ok(apply(op, &[a.clone()])?.remove(0))
}

/// The inverse of each square matrix of `a`; a singular matrix is an error
/// at evaluation (MLX's).
pub fn inv(a: &Array) -> Result<Array> {
    square("linalg::inv", a, "Inverses are only defined for square matrices.")?;
    one(LinalgOp::Inverse, a)
}

/// The inverse of the lower (or `upper`) triangle of each matrix of `a`.
pub fn tri_inv(a: &Array, upper: bool) -> Result<Array> {
    square("linalg::inv", a, "Inverses are only defined for square matrices.")?;
    one(LinalgOp::TriangularInverse { upper }, a)
}

/// The Cholesky factor of each symmetric positive definite matrix of `a`:
/// lower (`A = L L^T`), or upper (`A = U^T U`) when `upper`.
pub fn cholesky(a: &Array, upper: bool) -> Result<Array> {
    square("linalg::cholesky", a, "Cholesky decomposition is only defined for square matrices.")?;
    one(LinalgOp::Cholesky { upper }, a)
}

/// The inverse of `A` from its Cholesky factor `l` (lower, or upper when
/// `upper`).
pub fn cholesky_inv(l: &Array, upper: bool) -> Result<Array> {
    square("linalg::cholesky_inv", l, "Cholesky inverse is only defined for square matrices.")?;
    let y = one(LinalgOp::TriangularInverse { upper }, l)?;
    let yt = ops::swapaxes(&y, -1, -2)?;
    if upper {
        ops::matmul(&y, &yt)
    } else {
        ops::matmul(&yt, &y)
    }
}

/// The Moore-Penrose pseudo-inverse of each matrix of `a` (through the
/// SVD, singular values below `10 max(m, n) eps max(S)` dropped, as MLX).
pub fn pinv(a: &Array) -> Result<Array> {
    let name = "linalg::pinv";
    check_float(name, a.dtype())?;
    check_matrix(name, a)?;
    let nd = a.ndim();
    let (m, n) = (a.shape()[nd - 2], a.shape()[nd - 1]);
    if a.size() == 0 {
        let mut shape = a.shape().to_vec();
        shape.swap(nd - 1, nd - 2);
        return ops::zeros(&shape, a.dtype());
    }
    let k = m.min(n);
    let usv = apply(LinalgOp::Svd { compute_uv: true }, &[a.clone()])?;
    let u = ops::swapaxes(&ops::slice_axis(&usv[0], nd - 1, 0, k, 1)?, -1, -2)?;
    let v = ops::swapaxes(&ops::slice_axis(&usv[2], nd - 2, 0, k, 1)?, -1, -2)?;
    let s = ops::expand_dims(&usv[1], &[-2])?;
    let eps = if a.dtype() == Dtype::F64 { f64::EPSILON } else { f32::EPSILON as f64 };
    let rcond = Array::scalar_of(Scalar::Float(10.0 * m.max(n) as f64 * eps), a.dtype());
    let cutoff = ops::multiply(&rcond, &ops::max(&s, Some(&[-1]), true)?)?;
    let zero = Array::scalar_of(Scalar::Float(0.0), a.dtype());
    let rs = ops::where_(&ops::greater(&s, &cutoff)?, &ops::reciprocal(&s)?, &zero)?;
    ops::matmul(&ops::multiply(&v, &rs)?, &u)
}

/// The checks and broadcasting of `solve` and `solve_triangular` (MLX's
/// `validate_solve`): `b` is a vector (`[.., n]` only when 1-D) or a
/// matrix batch `[.., n, k]`; batch axes broadcast.
pub(super) fn solve_operands(name: &'static str, a: &Array, b: &Array) -> Result<(Array, Array, bool)> {
    if a.ndim() < 2 {
        return Err(Error::invalid(
            name,
            format!("First input must have >= 2 dimensions. Received array with {} dimensions.", a.ndim()),
        ));
    }
    if b.ndim() < 1 {
        return Err(Error::invalid(
            name,
            format!("Second input must have >= 1 dimensions. Received array with {} dimensions.", b.ndim()),
        ));
    }
    if !is_square(a) {
        return Err(Error::invalid(
            name,
            format!("First input must be a square matrix. Received array with shape {}.", mlx_shape(a.shape())),
        ));
    }
    let n = a.shape()[a.ndim() - 1];
    let b_rows = if b.ndim() > 1 { b.shape()[b.ndim() - 2] } else { b.shape()[0] };
    if n != b_rows {
        return Err(Error::invalid(
            name,
            format!(
                "Last dimension of first input with shape {} must match second to last dimension of second input with shape {}.",
                mlx_shape(a.shape()),
                mlx_shape(b.shape())
            ),
        ));
    }
    let dtype = Dtype::promote(a.dtype(), b.dtype());
    if !matches!(dtype, Dtype::F32 | Dtype::F64) {
        return Err(Error::invalid(
            name,
            format!(
                "Input arrays must promote to float32 or float64.  Received arrays with type {} and {}.",
                a.dtype(),
                b.dtype()
            ),
        ));
    }
    let vector = b.ndim() == 1;
    let b = if vector { ops::expand_dims(b, &[-1])? } else { b.clone() };
    let (na, nb) = (a.ndim(), b.ndim());
    let batch = broadcast_shapes(&a.shape()[..na - 2], &b.shape()[..nb - 2]).ok_or_else(|| {
        Error::invalid(
            name,
            format!("Batch shapes of {} and {} cannot be broadcast.", mlx_shape(a.shape()), mlx_shape(b.shape())),
        )
    })?;
    let shaped = |x: &Array| -> Result<Array> {
        let mut shape = batch.clone();
        shape.extend_from_slice(&x.shape()[x.ndim() - 2..]);
        ops::broadcast_to(&astype(x, dtype)?, &shape)
    };
    Ok((shaped(a)?, shaped(&b)?, vector))
}

/// `x` with `a x = b` for each square `a` (LU with partial pivoting); `b`
/// is a vector or a batch of matrices, batch axes broadcast.
pub fn solve(a: &Array, b: &Array) -> Result<Array> {
    let (a, b, vector) = solve_operands("linalg::solve", a, b)?;
    let x = apply(LinalgOp::Solve, &[a, b])?.remove(0);
    if vector {
        ops::squeeze(&x, Some(&[-1]))
    } else {
        Ok(x)
    }
}

/// `x` with `t x = b` for the lower (or `upper`) triangle `t` of `a`.
pub fn solve_triangular(a: &Array, b: &Array, upper: bool) -> Result<Array> {
    let (a, b, vector) = solve_operands("linalg::solve_triangular", a, b)?;
    let x = apply(LinalgOp::SolveTriangular { upper }, &[a, b])?.remove(0);
    if vector {
        ops::squeeze(&x, Some(&[-1]))
    } else {
        Ok(x)
    }
}

/// The reduced QR factorization: `Q` `[.., m, k]` with orthonormal columns
/// and upper triangular `R` `[.., k, n]`, `k = min(m, n)`.
pub fn qr(a: &Array) -> Result<(Array, Array)> {
    let name = "linalg::qr";
    check_float(name, a.dtype())?;
    check_matrix(name, a)?;
    let mut out = apply(LinalgOp::Qr, &[a.clone()])?;
    let r = out.pop().expect("two outputs");
    Ok((out.pop().expect("two outputs"), r))
}

/// The singular value decomposition: `[U, S, Vt]` with `U` `[.., m, m]`,
/// `S` `[.., k]` descending, `Vt` `[.., n, n]`; only `[S]` without
/// `compute_uv`.
pub fn svd(a: &Array, compute_uv: bool) -> Result<Vec<Array>> {
    let name = "linalg::svd";
    check_float_or_complex(name, a.dtype())?;
    if a.ndim() < 2 {
        return Err(Error::invalid(
            name,
            format!("Input array must have >= 2 dimensions. Received array with {} dimensions.", a.ndim()),
        ));
    }
    apply(LinalgOp::Svd { compute_uv }, &[a.clone()])
}

/// MLX's check for the routines that also take complex64 (the SVD and the
/// eigendecompositions).
fn check_float_or_complex(name: &'static str, dtype: Dtype) -> Result<()> {
    match dtype {
        Dtype::F32 | Dtype::F64 | Dtype::C64 => Ok(()),
        _ => Err(Error::invalid(
            name,
            format!("Arrays must have type float32, float64 or complex64. Received array with type {dtype}."),
        )),
    }
}

/// MLX's `validate_eig`.
fn check_eig(name: &'static str, a: &Array) -> Result<()> {
    check_float_or_complex(name, a.dtype())?;
    check_matrix(name, a)?;
    if !is_square(a) {
        return Err(Error::invalid(name, "Only defined for square matrices."));
    }
    Ok(())
}

/// Whether `uplo` names the upper triangle (`"U"`) or the lower (`"L"`).
fn upper_of(name: &'static str, uplo: &str) -> Result<bool> {
    match uplo {
        "L" => Ok(false),
        "U" => Ok(true),
        _ => Err(Error::invalid(name, format!("UPLO must be 'L' or 'U', got '{uplo}'."))),
    }
}

/// The eigenvalues (ascending) of each symmetric matrix of `a`, reading the
/// triangle `uplo` names.
pub fn eigvalsh(a: &Array, uplo: &str) -> Result<Array> {
    let name = "linalg::eigvalsh";
    check_eig(name, a)?;
    one(LinalgOp::Eigh { upper: upper_of(name, uplo)?, vectors: false }, a)
}

/// The eigenvalues (ascending) and eigenvectors (columns) of each symmetric
/// matrix of `a`.
pub fn eigh(a: &Array, uplo: &str) -> Result<(Array, Array)> {
    let name = "linalg::eigh";
    check_eig(name, a)?;
    let mut out = apply(LinalgOp::Eigh { upper: upper_of(name, uplo)?, vectors: true }, &[a.clone()])?;
    let v = out.pop().expect("two outputs");
    Ok((out.pop().expect("two outputs"), v))
}

/// The eigenvalues of each square matrix of `a` (complex64).
pub fn eigvals(a: &Array) -> Result<Array> {
    check_eig("linalg::eigvals", a)?;
    one(LinalgOp::Eig { vectors: false }, a)
}

/// The eigenvalues and unit eigenvectors (columns) of each square matrix of
/// `a` (complex64).
pub fn eig(a: &Array) -> Result<(Array, Array)> {
    check_eig("linalg::eig", a)?;
    let mut out = apply(LinalgOp::Eig { vectors: true }, &[a.clone()])?;
    let v = out.pop().expect("two outputs");
    Ok((out.pop().expect("two outputs"), v))
}

/// MLX's `validate_lu`.
fn check_lu(name: &'static str, a: &Array) -> Result<()> {
    check_float(name, a.dtype())?;
    check_matrix(name, a)
}

/// The packed LU factors and LAPACK's 0-based pivots (uint32) of each
/// matrix of `a` (partial pivoting).
pub fn lu_factor(a: &Array) -> Result<(Array, Array)> {
    check_lu("linalg::lu_factor", a)?;
    let out = apply(LinalgOp::LuFactor, &[a.clone()])?;
    Ok((out[0].clone(), out[1].clone()))
}

/// `[p, L, U]` with `a = (L U)[p]` row-wise: `p` the row order (uint32),
/// `L` `[.., m, k]` unit lower triangular, `U` `[.., k, n]` upper.
pub fn lu(a: &Array) -> Result<Vec<Array>> {
    check_lu("linalg::lu", a)?;
    let out = apply(LinalgOp::LuFactor, &[a.clone()])?;
    let nd = a.ndim();
    let (m, n) = (a.shape()[nd - 2], a.shape()[nd - 1]);
    let k = m.min(n);
    let mut l = ops::tril(&out[0], -1)?;
    let mut u = ops::triu(&out[0], 0)?;
    if n != k {
        l = ops::slice_axis(&l, nd - 1, 0, k, 1)?;
    } else if m != k {
        u = ops::slice_axis(&u, nd - 2, 0, k, 1)?;
    }
    let l = ops::add(&l, &ops::eye(m, Some(k), 0, a.dtype())?)?;
    Ok(vec![out[2].clone(), l, u])
}

/// MLX's `validate_det`.
fn check_det(name: &'static str, a: &Array) -> Result<()> {
    if a.dtype() == Dtype::C64 {
        return Err(Error::invalid(name, "Complex inputs are not supported."));
    }
    check_matrix(name, a)?;
    if !is_square(a) {
        return Err(Error::invalid(name, "Only defined for square matrices."));
    }
    Ok(())
}

/// Entry `(i, j)` of each matrix of `a`.
fn entry(a: &Array, i: usize, j: usize) -> Result<Array> {
    let nd = a.ndim();
    let row = ops::slice_axis(a, nd - 2, i, 1, 1)?;
    ops::squeeze(&ops::slice_axis(&row, nd - 1, j, 1, 1)?, Some(&[-2, -1]))
}

/// The determinant of matrices up to 3 x 3 by their formulas (MLX's
/// `det_raw_small`).
fn det_small(a: &Array) -> Result<Array> {
    let nd = a.ndim();
    let n = a.shape()[nd - 1];
    let e = |i, j| entry(a, i, j);
    let (mul, sub) = (|x: &Array, y: &Array| ops::multiply(x, y), |x: &Array, y: &Array| ops::subtract(x, y));
    match n {
        0 => ops::broadcast_to(&Array::scalar_of(Scalar::Float(1.0), a.dtype()), &a.shape()[..nd - 2]),
        1 => e(0, 0),
        2 => sub(&mul(&e(0, 0)?, &e(1, 1)?)?, &mul(&e(0, 1)?, &e(1, 0)?)?),
        _ => {
            let minor = |r0, r1, c0, c1| -> Result<Array> {
                sub(&mul(&e(r0, c0)?, &e(r1, c1)?)?, &mul(&e(r0, c1)?, &e(r1, c0)?)?)
            };
            let t0 = mul(&e(0, 0)?, &minor(1, 2, 1, 2)?)?;
            let t1 = mul(&e(0, 1)?, &minor(1, 2, 0, 2)?)?;
            let t2 = mul(&e(0, 2)?, &minor(1, 2, 0, 1)?)?;
            ops::add(&sub(&t0, &t1)?, &t2)
        }
    }
}

/// The sign and log of the absolute determinant through LU (MLX's
/// `slogdet_impl`); singular matrices give sign 0 and -inf.
fn slogdet_of(a: &Array) -> Result<(Array, Array)> {
    let dtype = a.dtype();
    let n = a.shape()[a.ndim() - 1];
    if n <= 3 {
        let raw = det_small(a)?;
        return Ok((ops::sign(&raw)?, ops::log(&ops::abs(&raw)?)?));
    }
    let out = apply(LinalgOp::LuFactor, &[a.clone()])?;
    let diag = ops::diagonal(&out[0], 0, -2, -1)?;
    let iota = ops::arange(0.0, n as f64, 1.0, Dtype::U32)?;
    let count =
        |x: &Array| -> Result<Array> { astype(&ops::sum(&astype(x, Dtype::I32)?, Some(&[-1]), false)?, Dtype::I32) };
    let swaps = count(&ops::not_equal(&out[1], &iota)?)?;
    let zero = Array::scalar_of(Scalar::Float(0.0), dtype);
    let negatives = count(&ops::less(&diag, &zero)?)?;
    let total = ops::add(&swaps, &negatives)?;
    let two = Array::scalar(2i32);
    let parity = ops::remainder(&total, &two)?;
    let sign = astype(&ops::subtract(&Array::scalar(1i32), &ops::multiply(&two, &parity)?)?, dtype)?;
    let logabs = ops::sum(&ops::log(&ops::abs(&diag)?)?, Some(&[-1]), false)?;
    let singular = ops::any(&ops::equal(&diag, &zero)?, Some(&[-1]), false)?;
    let sign = ops::where_(&singular, &zero, &sign)?;
    let neg_inf = Array::scalar_of(Scalar::Float(f64::NEG_INFINITY), dtype);
    Ok((sign, ops::where_(&singular, &neg_inf, &logabs)?))
}

/// The sign and natural log of the absolute determinant of each square
/// matrix of `a` (integers computed in float32).
pub fn slogdet(a: &Array) -> Result<(Array, Array)> {
    check_det("linalg::slogdet", a)?;
    slogdet_of(&astype(a, a.dtype().at_least_float())?)
}

/// The determinant of each square matrix of `a`.
pub fn det(a: &Array) -> Result<Array> {
    check_det("linalg::det", a)?;
    let x = astype(a, a.dtype().at_least_float())?;
    if x.shape()[x.ndim() - 1] <= 3 {
        return det_small(&x);
    }
    let (sign, logabs) = slogdet_of(&x)?;
    ops::multiply(&sign, &ops::exp(&logabs)?)
}

/// The cross product of 2- or 3-element vectors along `axis` (MLX's: a
/// 2-element vector has a zero third component).
pub fn cross(a: &Array, b: &Array, axis: isize) -> Result<Array> {
    let name = "linalg::cross";
    for x in [a, b] {
        let ax = crate::shape::normalize_axis(axis, x.ndim()).ok_or_else(|| Error::AxisArgument {
            op: name,
            msg: format!("Axis {axis} is out of bounds for array with {} dimensions.", x.ndim()),
        })?;
        if !(2..=3).contains(&x.shape()[ax]) {
            return Err(Error::invalid(name, "The specified axis must have size 2 or 3."));
        }
    }
    let dtype = Dtype::promote(a.dtype(), b.dtype());
    let parts = |x: &Array| -> Result<(Vec<Array>, bool)> {
        let ax = crate::shape::normalize_axis(axis, x.ndim()).expect("checked");
        let flat = x.shape()[ax] == 2;
        let x = astype(x, dtype)?;
        let items = (0..x.shape()[ax]).map(|i| ops::slice_axis(&x, ax, i, 1, 1)).collect::<Result<Vec<_>>>()?;
        Ok((items, flat))
    };
    let ((p, a2), (q, b2)) = (parts(a)?, parts(b)?);
    let (mul, sub) = (|x: &Array, y: &Array| ops::multiply(x, y), |x: &Array, y: &Array| ops::subtract(x, y));
    let (first, second) = if a2 && b2 {
        let z = ops::zeros_like(&mul(&p[0], &q[0])?)?;
        (z.clone(), z)
    } else if b2 {
        (ops::negative(&mul(&p[2], &q[1])?)?, mul(&p[2], &q[0])?)
    } else if a2 {
        (mul(&p[1], &q[2])?, ops::negative(&mul(&p[0], &q[2])?)?)
    } else {
        (sub(&mul(&p[1], &q[2])?, &mul(&p[2], &q[1])?)?, sub(&mul(&p[2], &q[0])?, &mul(&p[0], &q[2])?)?)
    };
    let third = sub(&mul(&p[0], &q[1])?, &mul(&p[1], &q[0])?)?;
    let pieces = ops::broadcast_arrays(&[first, second, third])?;
    let out_axis = if axis < 0 { axis + pieces[0].ndim() as isize } else { axis };
    ops::concatenate(&pieces, out_axis)
}

/// The order of a norm (NumPy's and MLX's `ord`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NormOrd {
    /// A number: `p` for vectors (0, 1, 2, inf, -inf, any p), or 1, -1,
    /// 2, -2, inf, -inf for matrices.
    Number(f64),
    /// The Frobenius norm (`"fro"` or `"f"`).
    Frobenius,
    /// The nuclear norm (`"nuc"`).
    Nuclear,
}

/// `a` cast to at least float32 (norms of integers are float32).
fn at_least_float(a: &Array) -> Result<Array> {
    astype(a, a.dtype().at_least_float())
}

/// `sqrt(sum(|a|^2))` over `axes`.
fn l2(a: &Array, axes: &[isize], keepdims: bool) -> Result<Array> {
    let mag = if a.dtype() == Dtype::C64 { ops::abs(a)? } else { a.clone() };
    ops::sqrt(&ops::sum(&ops::multiply(&mag, &mag)?, Some(axes), keepdims)?)
}

pub(super) fn vector_norm(a: &Array, ord: f64, axes: &[isize], keepdims: bool) -> Result<Array> {
    let dtype = a.dtype().at_least_float();
    let abs = || ops::abs(a);
    let cast = |x: Array| astype(&x, dtype);
    if ord == 0.0 {
        cast(ops::sum(&ops::not_equal(a, &Array::scalar(0i32))?, Some(axes), keepdims)?)
    } else if ord == 1.0 {
        cast(ops::sum(&abs()?, Some(axes), keepdims)?)
    } else if ord == 2.0 {
        l2(&at_least_float(a)?, axes, keepdims)
    } else if ord == f64::INFINITY {
        cast(ops::max(&abs()?, Some(axes), keepdims)?)
    } else if ord == f64::NEG_INFINITY {
        cast(ops::min(&abs()?, Some(axes), keepdims)?)
    } else {
        let p = Array::scalar_of(Scalar::Float(ord), dtype);
        let inv = Array::scalar_of(Scalar::Float(1.0 / ord), dtype);
        ops::power(&ops::sum(&ops::power(&cast(abs()?)?, &p)?, Some(axes), keepdims)?, &inv)
    }
}

/// The singular values of the matrices spanned by `axes` (moved last).
fn singular_values_over(a: &Array, row: usize, col: usize) -> Result<Array> {
    let m = if row > col {
        ops::moveaxis(&ops::moveaxis(a, row as isize, -1)?, col as isize, -1)?
    } else {
        ops::moveaxis(&ops::moveaxis(a, col as isize, -1)?, row as isize, -2)?
    };
    one(LinalgOp::Svd { compute_uv: false }, &at_least_float_for_svd(&m)?)
}

/// SVD inputs must be float32 or float64.
fn at_least_float_for_svd(a: &Array) -> Result<Array> {
    check_float("linalg::svd", a.dtype().at_least_float())?;
    at_least_float(a)
}

fn restore_axes(x: Array, row: usize, col: usize, keepdims: bool) -> Result<Array> {
    if keepdims {
        let (lo, hi) = (row.min(col) as isize, row.max(col) as isize);
        ops::expand_dims(&x, &[lo, hi])
    } else {
        Ok(x)
    }
}

pub(super) fn matrix_norm_of(a: &Array, ord: NormOrd, axes: &[isize], keepdims: bool) -> Result<Array> {
    let name = "linalg::norm";
    let nd = a.ndim() as isize;
    let resolve = |ax: isize| if ax < 0 { ax + nd } else { ax };
    let (mut row, mut col) = (resolve(axes[0]), resolve(axes[1]));
    let dtype = a.dtype().at_least_float();
    let abs = || ops::abs(a);
    let cast = |x: Array| astype(&x, dtype);
    match ord {
        NormOrd::Frobenius => l2(&at_least_float(a)?, axes, keepdims),
        NormOrd::Nuclear => {
            let s = ops::sum(&singular_values_over(a, row as usize, col as usize)?, Some(&[-1]), false)?;
            restore_axes(s, row as usize, col as usize, keepdims)
        }
        NormOrd::Number(p) if p == 1.0 || p == -1.0 => {
            if !keepdims && col > row && col > 0 {
                col -= 1;
            }
            let sums = ops::sum(&abs()?, Some(&[row]), keepdims)?;
            cast(if p > 0.0 {
                ops::max(&sums, Some(&[col]), keepdims)?
            } else {
                ops::min(&sums, Some(&[col]), keepdims)?
            })
        }
        NormOrd::Number(p) if p.is_infinite() => {
            if !keepdims && row > col && row > 0 {
                row -= 1;
            }
            let sums = ops::sum(&abs()?, Some(&[col]), keepdims)?;
            cast(if p > 0.0 {
                ops::max(&sums, Some(&[row]), keepdims)?
            } else {
                ops::min(&sums, Some(&[row]), keepdims)?
            })
        }
        NormOrd::Number(p) if p == 2.0 || p == -2.0 => {
            let s = singular_values_over(a, row as usize, col as usize)?;
            let s = if p > 0.0 { ops::max(&s, Some(&[-1]), false)? } else { ops::min(&s, Some(&[-1]), false)? };
            cast(restore_axes(s, row as usize, col as usize, keepdims)?)
        }
        NormOrd::Number(p) => Err(Error::invalid(name, format!("Invalid ord {p} for matrix norm."))),
    }
}

/// The vector or matrix norm of `a` (MLX's `linalg::norm`): over every axis
/// when `axis` is `None` (the 2-norm of the flattened array without `ord`),
/// one axis for a vector norm, two for a matrix norm.
pub fn norm(a: &Array, ord: Option<NormOrd>, axis: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let name = "linalg::norm";
    let all: Vec<isize> = (0..a.ndim() as isize).collect();
    let Some(ord) = ord else {
        return match axis {
            None => {
                let flat = ops::flatten(a, 0, -1)?;
                let out = l2(&at_least_float(&flat)?, &[0], keepdims)?;
                if keepdims {
                    ops::reshape(&out, &vec![1; a.ndim()])
                } else {
                    Ok(out)
                }
            }
            Some(ax) if ax.len() > 2 => Err(Error::invalid(name, "Received too many axes for norm.")),
            Some(ax) => {
                for &x in ax {
                    crate::shape::normalize_axis(x, a.ndim()).ok_or(Error::AxisOutOfRange {
                        op: name,
                        axis: x,
                        ndim: a.ndim(),
                    })?;
                }
                l2(&at_least_float(a)?, ax, keepdims)
            }
        };
    };
    let axes = axis.map(<[isize]>::to_vec).unwrap_or(all);
    for &x in &axes {
        crate::shape::normalize_axis(x, a.ndim()).ok_or(Error::AxisOutOfRange { op: name, axis: x, ndim: a.ndim() })?;
    }
    match (ord, axes.len()) {
        (NormOrd::Number(p), 1) => vector_norm(a, p, &axes, keepdims),
        (_, 2) => matrix_norm_of(a, ord, &axes, keepdims),
        (NormOrd::Number(_), _) => Err(Error::invalid(name, "Received too many axes for norm.")),
        (other, n) => {
            let label = if other == NormOrd::Nuclear { "nuc" } else { "fro" };
            Err(Error::invalid(
                name,
                format!("Norm '{label}' only supported for matrices, but received {n} axis/axes."),
            ))
        }
    }
}
