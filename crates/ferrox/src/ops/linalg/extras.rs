//! The linear algebra MLX does not have, with PyTorch's and NumPy's
//! semantics: `matrix_power`, `matrix_exp`, `matrix_rank`, `cond`, `lstsq`,
//! `householder_product`, `vector_norm`, `matrix_norm`, `lu_solve` and
//! `ldl_factor`. Each is a composition of ops (and the `linalg` routines),
//! so it is lazy, batched and (but `ldl_factor`) differentiable.

use super::{
    check_float, check_matrix, is_square, matrix_norm_of, solve_operands, solve_triangular, square, vector_norm,
    NormOrd,
};
use crate::array::Array;
use crate::backend::LinalgOp;
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};
use crate::ops;
use crate::primitives::{linalg_apply as apply, PivotPermutation};

fn scalar(value: f64, dtype: Dtype) -> Array {
    Array::scalar_of(Scalar::Float(value), dtype)
}

/// The identity broadcast to the batch of square matrices `a`.
fn identity_like(a: &Array) -> Result<Array> {
    let n = a.shape()[a.ndim() - 1];
    ops::broadcast_to(&ops::eye(n, None, 0, a.dtype())?, a.shape())
}

/// `a` to the integer power `n` (repeated squaring; a negative power
/// inverts first, `n = 0` gives the identity). Any numeric dtype for
/// `n >= 0`; float32 or float64 for `n < 0`.
pub fn matrix_power(a: &Array, n: i64) -> Result<Array> {
    let name = "linalg::matrix_power";
    check_matrix(name, a)?;
    if !is_square(a) {
        return Err(Error::invalid(name, "Only defined for square matrices."));
    }
    let base = if n < 0 { super::inv(a)? } else { a.clone() };
    let mut e = n.unsigned_abs();
    if e == 0 {
        return identity_like(a);
    }
    let (mut result, mut square): (Option<Array>, Array) = (None, base);
    loop {
        if e & 1 == 1 {
            result = Some(match result {
                Some(r) => ops::matmul(&r, &square)?,
                None => square.clone(),
            });
        }
        e >>= 1;
        if e == 0 {
            return Ok(result.expect("e was non-zero"));
        }
        square = ops::matmul(&square, &square)?;
    }
}

/// Padé 13 coefficients (Higham, "The scaling and squaring method for the
/// matrix exponential revisited", 2005).
const PADE13: [f64; 14] = [
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
];

/// The largest 1-norm for which the Padé 13 approximant is accurate to
/// double precision.
const THETA13: f64 = 5.371920351148152;

/// The most squarings: matrices with a 1-norm up to `THETA13 * 2^24`
/// (about 9e7) are exact to the approximant's accuracy.
const MAX_SQUARINGS: usize = 24;

/// The matrix exponential of each square matrix of `a` (scaling and
/// squaring with a Padé 13 approximant, as SciPy and PyTorch; the
/// squarings are selected per matrix, so a batch is one graph).
pub fn matrix_exp(a: &Array) -> Result<Array> {
    let name = "linalg::matrix_exp";
    check_float(name, a.dtype())?;
    check_matrix(name, a)?;
    if !is_square(a) {
        return Err(Error::invalid(name, "Only defined for square matrices."));
    }
    let dtype = a.dtype();
    // s = max(0, ceil(log2(|A|_1 / theta))), per matrix, at most MAX_SQUARINGS.
    let norm1 = ops::max(&ops::sum(&ops::abs(a)?, Some(&[-2]), false)?, Some(&[-1]), true)?;
    let ratio = ops::divide(&norm1, &scalar(THETA13, dtype))?;
    let s = ops::ceil(&ops::log2(&ops::maximum(&ratio, &scalar(1.0, dtype))?)?)?;
    let s = ops::minimum(&s, &scalar(MAX_SQUARINGS as f64, dtype))?;
    let scaled = ops::divide(a, &ops::expand_dims(&ops::power(&scalar(2.0, dtype), &s)?, &[-1])?)?;
    let eye = identity_like(a)?;
    let a2 = ops::matmul(&scaled, &scaled)?;
    let a4 = ops::matmul(&a2, &a2)?;
    let a6 = ops::matmul(&a4, &a2)?;
    let b = |i: usize| scalar(PADE13[i], dtype);
    let combo = |terms: &[(usize, &Array)]| -> Result<Array> {
        let mut acc: Option<Array> = None;
        for &(i, x) in terms {
            let t = ops::multiply(&b(i), x)?;
            acc = Some(match acc {
                Some(v) => ops::add(&v, &t)?,
                None => t,
            });
        }
        Ok(acc.expect("terms"))
    };
    let u_inner = ops::add(
        &ops::matmul(&a6, &combo(&[(13, &a6), (11, &a4), (9, &a2)])?)?,
        &combo(&[(7, &a6), (5, &a4), (3, &a2), (1, &eye)])?,
    )?;
    let u = ops::matmul(&scaled, &u_inner)?;
    let v = ops::add(
        &ops::matmul(&a6, &combo(&[(12, &a6), (10, &a4), (8, &a2)])?)?,
        &combo(&[(6, &a6), (4, &a4), (2, &a2), (0, &eye)])?,
    )?;
    let mut r = apply(LinalgOp::Solve, &[ops::subtract(&v, &u)?, ops::add(&v, &u)?])?.remove(0);
    let steps = ops::expand_dims(&s, &[-1])?;
    for i in 0..MAX_SQUARINGS {
        let squared = ops::matmul(&r, &r)?;
        r = ops::where_(&ops::greater(&steps, &scalar(i as f64, dtype))?, &squared, &r)?;
    }
    Ok(r)
}

/// The singular values (or, for `hermitian` matrices, the absolute
/// eigenvalues) of `a`, descending order not guaranteed for the latter.
fn spectrum(a: &Array, hermitian: bool) -> Result<Array> {
    if hermitian {
        ops::abs(&apply(LinalgOp::Eigh { upper: false, vectors: false }, &[a.clone()])?.remove(0))
    } else {
        Ok(apply(LinalgOp::Svd { compute_uv: false }, &[a.clone()])?.remove(0))
    }
}

/// The numerical rank of each matrix of `a` (int64): the singular values
/// above `max(atol, rtol * largest)`; with neither tolerance given, `rtol`
/// is `eps * max(m, n)` (PyTorch's `matrix_rank`).
pub fn matrix_rank(a: &Array, atol: Option<f64>, rtol: Option<f64>, hermitian: bool) -> Result<Array> {
    let name = "linalg::matrix_rank";
    check_float(name, a.dtype())?;
    check_matrix(name, a)?;
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    let dtype = a.dtype();
    let eps = if dtype == Dtype::F64 { f64::EPSILON } else { f32::EPSILON as f64 };
    let rtol = match (atol, rtol) {
        (_, Some(r)) => r,
        (None, None) => eps * m.max(n) as f64,
        (Some(_), None) => 0.0,
    };
    let s = spectrum(a, hermitian)?;
    if m.min(n) == 0 {
        return ops::zeros(&a.shape()[..a.ndim() - 2], Dtype::I64);
    }
    let largest = ops::max(&s, Some(&[-1]), true)?;
    let tol = ops::maximum(&scalar(atol.unwrap_or(0.0), dtype), &ops::multiply(&scalar(rtol, dtype), &largest)?)?;
    ops::astype(&ops::sum(&ops::greater(&s, &tol)?, Some(&[-1]), false)?, Dtype::I64)
}

/// The condition number of each matrix of `a` in the norm `p`: the ratio
/// of the largest to the smallest singular value for `None` or 2 (`-2`:
/// the inverse ratio), else `norm(a, p) * norm(inv(a), p)` (square `a`).
pub fn cond(a: &Array, p: Option<NormOrd>) -> Result<Array> {
    let name = "linalg::cond";
    check_float(name, a.dtype())?;
    check_matrix(name, a)?;
    match p {
        None | Some(NormOrd::Number(2.0)) | Some(NormOrd::Number(-2.0)) => {
            let s = apply(LinalgOp::Svd { compute_uv: false }, &[a.clone()])?.remove(0);
            let (hi, lo) = (ops::max(&s, Some(&[-1]), false)?, ops::min(&s, Some(&[-1]), false)?);
            if p == Some(NormOrd::Number(-2.0)) {
                ops::divide(&lo, &hi)
            } else {
                ops::divide(&hi, &lo)
            }
        }
        Some(ord) => {
            if !is_square(a) {
                return Err(Error::invalid(name, "Norms other than 2 and -2 need square matrices."));
            }
            let axes = [-2isize, -1];
            ops::multiply(&matrix_norm_of(a, ord, &axes, false)?, &matrix_norm_of(&super::inv(a)?, ord, &axes, false)?)
        }
    }
}

/// The least-squares solution of `a x = b` through the SVD, singular
/// values below `rcond * largest` treated as zero (default `eps *
/// max(m, n)`, NumPy's): `(x, residuals, rank, s)` as NumPy's `lstsq`, with
/// the residuals (the squared 2-norm of each column of `b - a x`) given
/// whenever `m > n` (NumPy leaves them empty for rank-deficient `a`) and
/// empty otherwise.
pub fn lstsq(a: &Array, b: &Array, rcond: Option<f64>) -> Result<(Array, Array, Array, Array)> {
    let name = "linalg::lstsq";
    check_matrix(name, a)?;
    if b.ndim() == 0 {
        return Err(Error::invalid(name, "b must be a vector or a batch of matrices, got a scalar."));
    }
    let dtype = Dtype::promote(a.dtype(), b.dtype()).at_least_float();
    check_float(name, dtype)?;
    let vector = b.ndim() == 1;
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    let b_rows = if vector { b.shape()[0] } else { b.shape()[b.ndim() - 2] };
    if b_rows != m {
        return Err(Error::invalid(name, format!("a has {m} rows but b has {b_rows}.")));
    }
    let a = ops::astype(a, dtype)?;
    let b = ops::astype(&if vector { ops::expand_dims(b, &[-1])? } else { b.clone() }, dtype)?;
    let k = m.min(n);
    let usv = apply(LinalgOp::Svd { compute_uv: true }, &[a.clone()])?;
    let nd = a.ndim();
    let u = ops::slice_axis(&usv[0], nd - 1, 0, k, 1)?;
    let s = usv[1].clone();
    let vt = ops::slice_axis(&usv[2], nd - 2, 0, k, 1)?;
    let eps = if dtype == Dtype::F64 { f64::EPSILON } else { f32::EPSILON as f64 };
    let rcond = rcond.unwrap_or(eps * m.max(n) as f64);
    let (x, rank) = if k == 0 {
        let mut shape = a.shape()[..nd - 2].to_vec();
        shape.extend([n, b.shape()[b.ndim() - 1]]);
        (ops::zeros(&shape, dtype)?, ops::zeros(&a.shape()[..nd - 2], Dtype::I64)?)
    } else {
        let cutoff = ops::multiply(&scalar(rcond, dtype), &ops::max(&s, Some(&[-1]), true)?)?;
        let kept = ops::greater(&s, &cutoff)?;
        let inv_s = ops::where_(&kept, &ops::reciprocal(&s)?, &scalar(0.0, dtype))?;
        let ut_b = ops::matmul(&ops::swapaxes(&u, -1, -2)?, &b)?;
        let x = ops::matmul(&ops::swapaxes(&vt, -1, -2)?, &ops::multiply(&ops::expand_dims(&inv_s, &[-1])?, &ut_b)?)?;
        (x, ops::astype(&ops::sum(&kept, Some(&[-1]), false)?, Dtype::I64)?)
    };
    let residuals = if m > n {
        let r = ops::subtract(&b, &ops::matmul(&a, &x)?)?;
        ops::sum(&ops::multiply(&r, &r)?, Some(&[-2]), false)?
    } else {
        ops::zeros(&[0], dtype)?
    };
    // A vector `b` gives a vector `x` and one residual (NumPy's shapes).
    let x = if vector { ops::squeeze(&x, Some(&[-1]))? } else { x };
    Ok((x, residuals, rank, s))
}

/// The product `H_0 H_1 ... H_{k-1}` of Householder reflectors
/// `H_i = I - tau_i v_i v_i^T`, where `v_i` is column `i` of `a` below the
/// diagonal with a unit diagonal entry: the first `n` columns of the `m x m`
/// product (LAPACK's `orgqr`, PyTorch's `householder_product`). `a` is
/// `[.., m, n]` with `m >= n`, `tau` `[.., k]` with `k <= n`.
pub fn householder_product(a: &Array, tau: &Array) -> Result<Array> {
    let name = "linalg::householder_product";
    check_float(name, a.dtype())?;
    check_matrix(name, a)?;
    let nd = a.ndim();
    let (m, n) = (a.shape()[nd - 2], a.shape()[nd - 1]);
    let k = *tau.shape().last().ok_or_else(|| Error::invalid(name, "tau must have at least one dimension."))?;
    if m < n || k > n || tau.shape()[..tau.ndim() - 1] != a.shape()[..nd - 2] {
        return Err(Error::invalid(
            name,
            format!(
                "needs a of shape (..., m, n) with m >= n and tau of shape (..., k), k <= n; got {:?} and {:?}.",
                a.shape(),
                tau.shape()
            ),
        ));
    }
    let dtype = a.dtype();
    let tau = ops::astype(tau, dtype)?;
    let reflectors = ops::add(&ops::tril(a, -1)?, &ops::eye(m, Some(n), 0, dtype)?)?;
    let mut shape = a.shape().to_vec();
    shape[nd - 1] = n;
    let mut q = ops::broadcast_to(&ops::eye(m, Some(n), 0, dtype)?, &shape)?;
    for i in (0..k).rev() {
        let v = ops::slice_axis(&reflectors, nd - 1, i, 1, 1)?;
        let t = ops::expand_dims(&ops::slice_axis(&tau, tau.ndim() - 1, i, 1, 1)?, &[-1])?;
        let vt_q = ops::matmul(&ops::swapaxes(&v, -1, -2)?, &q)?;
        q = ops::subtract(&q, &ops::multiply(&t, &ops::matmul(&v, &vt_q)?)?)?;
    }
    Ok(q)
}

/// The vector norm of `x` over `dims` (every axis when `None`), PyTorch's
/// `linalg.vector_norm`: `ord` any number (inf, -inf and 0 included).
pub fn vector_norm_over(x: &Array, ord: f64, dims: Option<&[isize]>, keepdim: bool) -> Result<Array> {
    let all: Vec<isize> = (0..x.ndim() as isize).collect();
    let dims = dims.unwrap_or(&all);
    for &d in dims {
        crate::shape::normalize_axis(d, x.ndim()).ok_or(Error::AxisOutOfRange {
            op: "linalg::vector_norm",
            axis: d,
            ndim: x.ndim(),
        })?;
    }
    if dims.is_empty() {
        return ops::abs(&ops::astype(x, x.dtype().at_least_float())?);
    }
    vector_norm(x, ord, dims, keepdim)
}

/// The matrix norm over the two axes `dims` (PyTorch's
/// `linalg.matrix_norm`: `ord` `"fro"`, `"nuc"`, 1, -1, 2, -2, inf, -inf).
pub fn matrix_norm(a: &Array, ord: NormOrd, dims: [isize; 2], keepdim: bool) -> Result<Array> {
    let name = "linalg::matrix_norm";
    for d in dims {
        crate::shape::normalize_axis(d, a.ndim()).ok_or(Error::AxisOutOfRange { op: name, axis: d, ndim: a.ndim() })?;
    }
    matrix_norm_of(a, ord, &dims, keepdim)
}

/// `x` with `A x = b` (`Aᵀ x = b` with `adjoint`; `x A = b`, or `x Aᵀ = b`,
/// when not `left`) from `lu_factor`'s packed factors and 0-based pivots of
/// each square `A` (PyTorch's `lu_solve`); `b` is a vector or a batch of
/// matrices, batch axes broadcast.
pub fn lu_solve(lu: &Array, pivots: &Array, b: &Array, left: bool, adjoint: bool) -> Result<Array> {
    let name = "linalg::lu_solve";
    if !left {
        // x A = b  <=>  Aᵀ xᵀ = bᵀ.
        if b.ndim() < 2 {
            return Err(Error::invalid(name, "b must have at least 2 dimensions when left is False."));
        }
        let xt = lu_solve(lu, pivots, &ops::swapaxes(b, -1, -2)?, true, !adjoint)?;
        return ops::swapaxes(&xt, -1, -2);
    }
    let (lu, b, vector) = solve_operands(name, lu, b)?;
    let nd = lu.ndim();
    let n = lu.shape()[nd - 1];
    if !pivots.dtype().is_integer() || pivots.ndim() == 0 || pivots.shape()[pivots.ndim() - 1] != n {
        return Err(Error::invalid(
            name,
            format!(
                "pivots must be an integer array of shape (..., {n}) (lu_factor's), got shape {:?} and type {}.",
                pivots.shape(),
                pivots.dtype()
            ),
        ));
    }
    let mut order_shape = lu.shape()[..nd - 2].to_vec();
    order_shape.push(n);
    // Pivots are indices: no gradient flows through them.
    let pivots = ops::stop_gradient(&ops::broadcast_to(&ops::astype(pivots, Dtype::U32)?, &order_shape)?)?;
    // Row j of L U is row order[j] of A.
    let order = Array::from_primitive(order_shape, Dtype::U32, PivotPermutation { rows: n }, vec![pivots])?;
    let l = ops::add(&ops::tril(&lu, -1)?, &ops::eye(n, None, 0, lu.dtype())?)?;
    let u = ops::triu(&lu, 0)?;
    let x = if adjoint {
        // A = Pᵀ L U, so Aᵀ x = b gives (P x) = L⁻ᵀ U⁻ᵀ b: x[order[j]] = y[j].
        let y = solve_triangular(&ops::swapaxes(&u, -1, -2)?, &b, false)?;
        let y = solve_triangular(&ops::swapaxes(&l, -1, -2)?, &y, true)?;
        let back = ops::expand_dims(&ops::argsort(&order, Some(-1))?, &[-1])?;
        ops::take_along_axis(&y, &back, Some(-2))?
    } else {
        let permuted = ops::take_along_axis(&b, &ops::expand_dims(&order, &[-1])?, Some(-2))?;
        solve_triangular(&u, &solve_triangular(&l, &permuted, false)?, true)?
    };
    if vector {
        ops::squeeze(&x, Some(&[-1]))
    } else {
        Ok(x)
    }
}

/// The Bunch–Kaufman factorization `A = P L D T(L) T(P)` of each symmetric
/// matrix of `a`, read from its lower triangle (PyTorch's `ldl_factor`, in
/// LAPACK's `sytrf` form): the packed factors (`D`'s 1x1 and 2x2 blocks on
/// and below the diagonal, `L`'s multipliers under them, zeros above) and
/// the 1-based int32 pivots (negative on both rows of a 2x2 block).
/// float32 and float64 (PyTorch's complex Hermitian form is not taken).
pub fn ldl_factor(a: &Array) -> Result<(Array, Array)> {
    square("linalg::ldl_factor", a, "LDL factorizations are only defined for square matrices.")?;
    let mut out = apply(LinalgOp::LdlFactor, &[a.clone()])?;
    let pivots = out.pop().expect("two outputs");
    Ok((out.pop().expect("two outputs"), pivots))
}
