//! Dense linear algebra routines (MLX's `Inverse`, `Cholesky`, `QRF`,
//! `SVD`, `Eigh`, `Eig`, `LUF` and ferrox's solves) as one primitive, with
//! derivatives MLX does not have.
//!
//! Reverse-mode rules, for real matrices (`T(X)` is the transpose of the
//! last two axes, `C` the cotangent):
//! * inverse `Y = A^-1`: `-T(Y) C T(Y)`; a triangular inverse keeps the
//!   triangle it read;
//! * solve `X = A^-1 B`: `B̄ = A^-T C`, `Ā = -B̄ T(X)` (triangular: `Ā` masked);
//! * Cholesky `A = L T(L)`: `T(L^-1) Φ(T(L) C) L^-1`, symmetrized, where
//!   `Φ` keeps the lower triangle with its diagonal halved;
//! * eigh: `V (diag(w̄) + E ∘ (T(V) V̄)) T(V)`, symmetrized, with
//!   `E_ij = 1 / (w_j - w_i)` off the diagonal;
//! * QR and SVD: the standard formulas (Walter and Lehmann; Townsend),
//!   including wide QR and the projector terms of rectangular SVDs;
//! * LU of a square matrix: `P T(L)^-1 (tril(T(L) L̄, -1) + triu(Ū T(U))) T(U)^-1`.
//!
//! Symmetric inputs get symmetric gradients (PyTorch's convention): a
//! function of a symmetric matrix sees the same derivative either way.
//! Forward-mode rules exist for the inverses, solves, Cholesky and eigh;
//! the others raise. [`PivotPermutation`] turns LU pivots into a row order
//! (for `lu_solve`).

use super::{fresh, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::{Backend, LinalgOp};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::ops;

/// `op` over the last two axes of the inputs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Linalg {
    /// Which routine.
    pub op: LinalgOp,
}

/// `op` applied to `inputs` as a graph node, returning every output.
pub(crate) fn apply(op: LinalgOp, inputs: &[Array]) -> Result<Vec<Array>> {
    let specs = Linalg { op }.output_specs(inputs)?;
    Array::siblings_from_primitive(specs, Linalg { op }, inputs.to_vec())
}

/// The transpose of the last two axes.
fn t(x: &Array) -> Result<Array> {
    ops::swapaxes(x, -1, -2)
}

fn mm(a: &Array, b: &Array) -> Result<Array> {
    ops::matmul(a, b)
}

/// `(x + T(x)) / 2`.
fn symmetrized(x: &Array) -> Result<Array> {
    ops::multiply(&ops::add(x, &t(x)?)?, &super::constant(0.5, x))
}

/// The lower (or upper) triangle of `x`.
fn triangle(x: &Array, upper: bool) -> Result<Array> {
    if upper {
        ops::triu(x, 0)
    } else {
        ops::tril(x, 0)
    }
}

/// The symmetric matrix a routine reading the lower (or upper) triangle of
/// `x` sees.
fn read_symmetric(x: &Array, upper: bool) -> Result<Array> {
    let (tri, strict) =
        if upper { (ops::triu(x, 0)?, ops::triu(x, 1)?) } else { (ops::tril(x, 0)?, ops::tril(x, -1)?) };
    ops::add(&tri, &t(&strict)?)
}

/// The diagonal of the last two axes as a vector.
fn diag_of(x: &Array) -> Result<Array> {
    ops::diagonal(x, 0, -2, -1)
}

/// A vector along the last axis as the diagonal of a matrix.
fn diag_matrix(v: &Array) -> Result<Array> {
    let n = *v.shape().last().expect("a vector");
    let eye = ops::eye(n, None, 0, v.dtype())?;
    ops::multiply(&ops::expand_dims(v, &[-2])?, &eye)
}

/// `Φ(x)`: the lower triangle of `x` with its diagonal halved (the
/// Cholesky derivatives' projection).
fn lower_half_diagonal(x: &Array) -> Result<Array> {
    ops::subtract(&ops::tril(x, 0)?, &ops::multiply(&diag_matrix(&diag_of(x)?)?, &super::constant(0.5, x))?)
}

/// The eigenvalues and eigenvectors of an `Eigh` node: its own outputs,
/// or a decomposition with vectors when it computed values only.
fn eigenpairs(a: &Array, outputs: &[Array], upper: bool, vectors: bool) -> Result<(Array, Array)> {
    if vectors {
        return Ok((outputs[0].clone(), outputs[1].clone()));
    }
    let mut both = apply(LinalgOp::Eigh { upper, vectors: true }, &[a.clone()])?;
    let v = both.pop().expect("two outputs");
    Ok((both.pop().expect("two outputs"), v))
}

/// `E` with `E_ij = 1 / (w_j - w_i)` off the diagonal and 0 on it.
fn inverse_gaps(w: &Array) -> Result<Array> {
    let gaps = ops::subtract(&ops::expand_dims(w, &[-2])?, &ops::expand_dims(w, &[-1])?)?;
    let n = *w.shape().last().expect("a vector");
    let eye = ops::eye(n, None, 0, Dtype::Bool)?;
    let safe = ops::where_(&eye, &super::constant(1.0, &gaps), &gaps)?;
    ops::where_(&eye, &super::constant(0.0, &gaps), &ops::reciprocal(&safe)?)
}

/// `x` with the leading `len` entries of axis `axis` (negative: from the end).
fn head(x: &Array, axis: isize, len: usize) -> Result<Array> {
    let ax = (axis + x.ndim() as isize) as usize;
    crate::ops::slice_axis(x, ax, 0, len, 1)
}

/// `x` from entry `start` of axis `axis` on.
fn tail(x: &Array, axis: isize, start: usize) -> Result<Array> {
    let ax = (axis + x.ndim() as isize) as usize;
    let len = x.shape()[ax] - start;
    crate::ops::slice_axis(x, ax, start, len, 1)
}

/// `B R^-T` for an upper triangular `R`.
fn right_solve_upper_transposed(b: &Array, r: &Array) -> Result<Array> {
    t(&apply(LinalgOp::SolveTriangular { upper: true }, &[r.clone(), t(b)?])?[0])
}

impl Linalg {
    /// Derivatives are written for real matrices: a complex64 factorization
    /// (which MLX does not differentiate either) is refused.
    fn check_real_derivative(&self, a: &Array) -> Result<()> {
        if a.dtype() == Dtype::C64 {
            return Err(Error::invalid(self.op.name(), "Derivatives of complex64 factorizations are not supported."));
        }
        Ok(())
    }

    fn single(&self, x: &Array) -> Result<Array> {
        Ok(apply(self.op, &[x.clone()])?.remove(0))
    }

    /// The gradient of a square QR (`m >= n` after slicing) given `Q̄`, `R̄`.
    fn qr_tall_vjp(q: &Array, r: &Array, cq: &Array, cr: &Array) -> Result<Array> {
        let m = ops::subtract(&mm(r, &t(cr)?)?, &mm(&t(cq)?, q)?)?;
        let copyltu = ops::add(&ops::tril(&m, 0)?, &t(&ops::tril(&m, -1)?)?)?;
        right_solve_upper_transposed(&ops::add(cq, &mm(q, &copyltu)?)?, r)
    }

    /// The gradient of `A = (L U)[p]` given the cotangent `c` of the packed
    /// factors (PyTorch's `linalg_lu_backward`, square, wide and tall).
    fn lu_vjp(a: &Array, packed: &Array, perm: &Array, c: &Array) -> Result<Array> {
        let nd = a.ndim() as isize;
        let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
        let k = m.min(n);
        let l = ops::add(&ops::tril(&head(packed, -1, k)?, -1)?, &ops::eye(m, Some(k), 0, a.dtype())?)?;
        let u = ops::triu(&head(packed, -2, k)?, 0)?;
        let cl = ops::tril(&head(c, -1, k)?, -1)?;
        let cu = ops::triu(&head(c, -2, k)?, 0)?;
        let lower_solve = |tri: &Array, b: &Array, upper: bool| -> Result<Array> {
            Ok(apply(LinalgOp::SolveTriangular { upper }, &[tri.clone(), b.clone()])?.remove(0))
        };
        // Z T^-1 for a triangular T: the transpose of T(T)^-1 T(Z).
        let right_solve =
            |tri: &Array, z: &Array, upper: bool| -> Result<Array> { t(&lower_solve(&t(tri)?, &t(z)?, !upper)?) };
        let grad = if m <= n {
            // Wide (or square): U = [U1 U2] with U1 k x k.
            let u1 = head(&u, -1, k)?;
            let inner = ops::subtract(&mm(&t(&l)?, &cl)?, &mm(&cu, &t(&u)?)?)?;
            let mut g = right_solve(&t(&u1)?, &ops::tril(&inner, -1)?, false)?;
            g = ops::add(&g, &head(&cu, -1, k)?)?;
            if n > k {
                g = ops::concatenate(&[g, tail(&cu, -1, k)?], nd - 1)?;
            }
            lower_solve(&t(&l)?, &g, true)?
        } else {
            // Tall: L = [L1; L2] with L1 k x k.
            let l1 = head(&l, -2, k)?;
            let inner = ops::subtract(&mm(&cu, &t(&u)?)?, &mm(&t(&l)?, &cl)?)?;
            let mut g = lower_solve(&t(&l1)?, &ops::triu(&inner, 0)?, true)?;
            g = ops::add(&g, &ops::tril(&head(&cl, -2, k)?, -1)?)?;
            g = ops::concatenate(&[g, tail(&cl, -2, k)?], nd - 2)?;
            right_solve(&t(&u)?, &g, false)?
        };
        // A = (L U)[p]: row i of A is row p[i] of L U, and so is its gradient.
        let rows = ops::broadcast_to(&ops::expand_dims(perm, &[-1])?, grad.shape())?;
        ops::take_along_axis(&grad, &rows, Some(-2))
    }

    /// The SVD gradient from the thin factors and the cotangents of `U`,
    /// `S` and `V` (columns).
    fn svd_vjp(a: &Array, u: &Array, s: &Array, v: &Array, cu: &Array, cs: &Array, cv: &Array) -> Result<Array> {
        let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
        let s2 = ops::multiply(s, s)?;
        let f = inverse_gaps(&s2)?;
        let sm = diag_matrix(s)?;
        let ut_cu = mm(&t(u)?, cu)?;
        let vt_cv = mm(&t(v)?, cv)?;
        let j = ops::multiply(&f, &ops::subtract(&ut_cu, &t(&ut_cu)?)?)?;
        let k = ops::multiply(&f, &ops::subtract(&vt_cv, &t(&vt_cv)?)?)?;
        let inner = ops::add(&ops::add(&mm(&j, &sm)?, &diag_matrix(cs)?)?, &mm(&sm, &k)?)?;
        let mut grad = mm(&mm(u, &inner)?, &t(v)?)?;
        let s_inv = ops::expand_dims(&ops::reciprocal(s)?, &[-2])?;
        if m > s.shape()[s.ndim() - 1] {
            // (I - U T(U)) Ū S^-1 T(V)
            let proj = ops::subtract(cu, &mm(u, &ut_cu)?)?;
            grad = ops::add(&grad, &mm(&ops::multiply(&proj, &s_inv)?, &t(v)?)?)?;
        }
        if n > s.shape()[s.ndim() - 1] {
            // U S^-1 T(V̄) (I - V T(V))
            let proj = ops::subtract(cv, &mm(v, &vt_cv)?)?;
            grad = ops::add(&grad, &mm(&ops::multiply(u, &s_inv)?, &t(&proj)?)?)?;
        }
        Ok(grad)
    }
}

impl Primitive for Linalg {
    fn name(&self) -> &'static str {
        match self.op {
            LinalgOp::Cholesky { .. } => "Cholesky",
            LinalgOp::Inverse | LinalgOp::TriangularInverse { .. } => "Inverse",
            LinalgOp::Solve | LinalgOp::SolveTriangular { .. } => "Solve",
            LinalgOp::Qr => "QRF",
            LinalgOp::Svd { .. } => "SVD",
            LinalgOp::Eigh { .. } => "Eigh",
            LinalgOp::Eig { .. } => "Eig",
            LinalgOp::LuFactor => "LUF",
            LinalgOp::LdlFactor => "LDLF",
        }
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        let name = self.op.name();
        let two = matches!(self.op, LinalgOp::Solve | LinalgOp::SolveTriangular { .. });
        super::arity(name, inputs, if two { 2 } else { 1 })?;
        let dtype = inputs[0].dtype();
        let complex_ok = matches!(self.op, LinalgOp::Svd { .. } | LinalgOp::Eigh { .. } | LinalgOp::Eig { .. });
        if !(matches!(dtype, Dtype::F32 | Dtype::F64) || (complex_ok && dtype == Dtype::C64)) {
            let takes = if complex_ok { "float32, float64 or complex64" } else { "float32 or float64" };
            return Err(super::mismatch(name, format!("takes {takes}, got {dtype}.")));
        }
        super::same_dtype(name, inputs, dtype)?;
        let a = inputs[0].shape();
        if a.len() < 2 {
            return Err(super::mismatch(name, format!("needs a matrix, got shape {a:?}.")));
        }
        let square = !matches!(self.op, LinalgOp::Qr | LinalgOp::Svd { .. } | LinalgOp::LuFactor);
        if square && a[a.len() - 1] != a[a.len() - 2] {
            return Err(super::mismatch(name, format!("needs square matrices, got shape {a:?}.")));
        }
        if two {
            let b = inputs[1].shape();
            if b.len() != a.len() || b[..b.len() - 1] != a[..a.len() - 1] {
                return Err(super::mismatch(name, format!("shapes {a:?} and {b:?} do not fit.")));
            }
        }
        let shapes: Vec<&[usize]> = inputs.iter().map(|x| x.shape()).collect();
        Ok(self.op.outputs(&shapes, dtype).into_iter().map(|(shape, dtype)| OutputSpec { shape, dtype }).collect())
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let operands: Vec<_> = inputs.iter().map(|x| (&*x.storage, &x.layout)).collect();
        let results = backend.linalg(self.op, &operands)?;
        Ok(results.into_iter().zip(outputs).flat_map(|(r, o)| fresh(r, &o.shape)).collect())
    }
    fn vjp(&self, inputs: &[Array], outputs: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        self.check_real_derivative(&inputs[0])?;
        let a = &inputs[0];
        let c = &cotangents[0];
        let grads: Vec<Array> = match self.op {
            LinalgOp::Inverse => {
                let y = &outputs[0];
                vec![ops::negative(&mm(&mm(&t(y)?, c)?, &t(y)?)?)?]
            }
            LinalgOp::TriangularInverse { upper } => {
                let y = &outputs[0];
                vec![triangle(&ops::negative(&mm(&mm(&t(y)?, c)?, &t(y)?)?)?, upper)?]
            }
            LinalgOp::Solve => {
                let x = &outputs[0];
                let cb = apply(LinalgOp::Solve, &[t(a)?, c.clone()])?.remove(0);
                vec![ops::negative(&mm(&cb, &t(x)?)?)?, cb]
            }
            LinalgOp::SolveTriangular { upper } => {
                let x = &outputs[0];
                let cb = apply(LinalgOp::SolveTriangular { upper: !upper }, &[t(a)?, c.clone()])?.remove(0);
                vec![triangle(&ops::negative(&mm(&cb, &t(x)?)?)?, upper)?, cb]
            }
            LinalgOp::Cholesky { upper } => {
                let (l, cl) = if upper { (t(&outputs[0])?, t(c)?) } else { (outputs[0].clone(), c.clone()) };
                let p = mm(&t(&l)?, &cl)?;
                let phi = lower_half_diagonal(&p)?;
                let y = Linalg { op: LinalgOp::TriangularInverse { upper: false } }.single(&l)?;
                vec![symmetrized(&mm(&mm(&t(&y)?, &phi)?, &y)?)?]
            }
            LinalgOp::Eigh { upper, vectors } => {
                let (w, v) = eigenpairs(a, outputs, upper, vectors)?;
                let mut inner = diag_matrix(c)?;
                if vectors {
                    let e = inverse_gaps(&w)?;
                    inner = ops::add(&inner, &ops::multiply(&e, &mm(&t(&v)?, &cotangents[1])?)?)?;
                }
                vec![symmetrized(&mm(&mm(&v, &inner)?, &t(&v)?)?)?]
            }
            LinalgOp::Qr => {
                let (q, r, cq, cr) = (&outputs[0], &outputs[1], c, &cotangents[1]);
                let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
                if m >= n {
                    vec![Linalg::qr_tall_vjp(q, r, cq, cr)?]
                } else {
                    // A = Q [R1 R2]: the square part X = Q R1 and Y = Q R2.
                    let r1 = head(r, -1, m)?;
                    let (cr1, cr2) = (head(cr, -1, m)?, tail(cr, -1, m)?);
                    let y = tail(a, -1, m)?;
                    let cy = mm(q, &cr2)?;
                    let cq_total = ops::add(cq, &mm(&y, &t(&cr2)?)?)?;
                    let cx = Linalg::qr_tall_vjp(q, &r1, &cq_total, &cr1)?;
                    vec![ops::concatenate(&[cx, cy], -1)?]
                }
            }
            LinalgOp::Svd { compute_uv } => {
                let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
                let k = m.min(n);
                let full = if compute_uv {
                    outputs.to_vec()
                } else {
                    apply(LinalgOp::Svd { compute_uv: true }, &[a.clone()])?
                };
                let u = head(&full[0], -1, k)?;
                let s = &full[1];
                let v = head(&t(&full[2])?, -1, k)?;
                if compute_uv {
                    let cu = head(&cotangents[0], -1, k)?;
                    let cv = head(&t(&cotangents[2])?, -1, k)?;
                    vec![Linalg::svd_vjp(a, &u, s, &v, &cu, &cotangents[1], &cv)?]
                } else {
                    vec![mm(&ops::multiply(&u, &ops::expand_dims(c, &[-2])?)?, &t(&v)?)?]
                }
            }
            LinalgOp::LuFactor => vec![Linalg::lu_vjp(a, &outputs[0], &outputs[2], c)?],
            LinalgOp::Eig { .. } => {
                return Err(Error::invalid(
                    "linalg::eig",
                    "The gradient of a general eigendecomposition is not supported.",
                ));
            }
            LinalgOp::LdlFactor => {
                return Err(Error::invalid(
                    "linalg::ldl_factor",
                    "The gradient of an LDL factorization is not supported (nor in PyTorch).",
                ));
            }
        };
        Ok(argnums.iter().map(|&i| grads[i].clone()).collect())
    }
    fn jvp(&self, inputs: &[Array], outputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        self.check_real_derivative(&inputs[0])?;
        let a = &inputs[0];
        let da = &tangents[0];
        Ok(match self.op {
            LinalgOp::Inverse => {
                let y = &outputs[0];
                vec![ops::negative(&mm(&mm(y, da)?, y)?)?]
            }
            LinalgOp::TriangularInverse { upper } => {
                let y = &outputs[0];
                vec![ops::negative(&mm(&mm(y, &triangle(da, upper)?)?, y)?)?]
            }
            LinalgOp::Solve => {
                let rhs = ops::subtract(&tangents[1], &mm(da, &outputs[0])?)?;
                apply(LinalgOp::Solve, &[a.clone(), rhs])?
            }
            LinalgOp::SolveTriangular { upper } => {
                let rhs = ops::subtract(&tangents[1], &mm(&triangle(da, upper)?, &outputs[0])?)?;
                apply(LinalgOp::SolveTriangular { upper }, &[a.clone(), rhs])?
            }
            LinalgOp::Cholesky { upper } => {
                let l = if upper { t(&outputs[0])? } else { outputs[0].clone() };
                let s = read_symmetric(da, upper)?;
                let y = Linalg { op: LinalgOp::TriangularInverse { upper: false } }.single(&l)?;
                let inner = mm(&mm(&y, &s)?, &t(&y)?)?;
                let phi = lower_half_diagonal(&inner)?;
                let dl = mm(&l, &phi)?;
                vec![if upper { t(&dl)? } else { dl }]
            }
            LinalgOp::Eigh { upper, vectors } => {
                let (w, v) = eigenpairs(a, outputs, upper, vectors)?;
                let s = read_symmetric(da, upper)?;
                let m = mm(&mm(&t(&v)?, &s)?, &v)?;
                let dw = diag_of(&m)?;
                if vectors {
                    let dv = mm(&v, &ops::multiply(&m, &inverse_gaps(&w)?)?)?;
                    vec![dw, dv]
                } else {
                    vec![dw]
                }
            }
            _ => {
                return Err(Error::invalid(
                    self.op.name(),
                    "Forward-mode derivatives (jvp) are not supported for this routine; use vjp.",
                ))
            }
        })
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let size = inputs.iter().zip(axes).find_map(|(x, ax)| ax.map(|a| x.shape()[a])).expect("a batched input");
        let mut moved = Vec::with_capacity(inputs.len());
        for (x, ax) in inputs.iter().zip(axes) {
            moved.push(match ax {
                Some(a) => crate::transforms::vmap::batch_to_front(x, *a)?,
                None => {
                    let mut shape = vec![size];
                    shape.extend_from_slice(x.shape());
                    ops::broadcast_to(&ops::expand_dims(x, &[0])?, &shape)?
                }
            });
        }
        let outs = apply(self.op, &moved)?;
        let n = outs.len();
        Ok((outs, vec![Some(0); n]))
    }
}

/// The row order `q` of an LU factorization from LAPACK's pivots (row `i`
/// was swapped with row `pivots[i]`, in order): `(L U)[j] = A[q[j]]`.
/// Pivots `[.., k]` (uint32) give `[.., rows]` (uint32); the swaps are
/// replayed on the host (a few integers per matrix).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PivotPermutation {
    /// The number of rows of the factored matrices.
    pub rows: usize,
}

impl PivotPermutation {
    /// The row order of every matrix, replayed from its pivots.
    fn replay(&self, pivots: &[u32], k: usize) -> Result<Vec<u32>> {
        let batch = pivots.len().checked_div(k).unwrap_or(0);
        let mut order = Vec::with_capacity(batch * self.rows);
        for b in 0..batch {
            let start = order.len();
            order.extend(0..self.rows as u32);
            for (i, &p) in pivots[b * k..(b + 1) * k].iter().enumerate() {
                if p as usize >= self.rows || i >= self.rows {
                    return Err(Error::invalid(
                        "linalg::lu_solve",
                        format!("pivot {p} at position {i} is out of range for {} rows.", self.rows),
                    ));
                }
                order.swap(start + i, start + p as usize);
            }
        }
        Ok(order)
    }
}

impl Primitive for PivotPermutation {
    fn name(&self) -> &'static str {
        "PivotPermutation"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity("linalg::lu_solve", inputs, 1)?;
        let pivots = &inputs[0];
        if pivots.dtype() != Dtype::U32 || pivots.ndim() == 0 {
            return Err(super::mismatch(
                "linalg::lu_solve",
                "pivots must be a uint32 array of at least one dimension.",
            ));
        }
        let mut shape = pivots.shape().to_vec();
        *shape.last_mut().expect("at least one dimension") = self.rows;
        super::one_output(shape, Dtype::U32)
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let host = backend.to_host(&inputs[0].storage, &inputs[0].layout)?;
        let crate::backend::cpu::CpuBuffer::U32(pivots) = host.buffer() else {
            unreachable!("output_specs checked the dtype")
        };
        let k = *inputs[0].layout.shape.last().expect("at least one dimension");
        let order = self.replay(pivots.as_slice(), k)?;
        let host = crate::backend::cpu::CpuStorage::new(crate::backend::cpu::CpuBuffer::U32(order.into()));
        let shape = &outputs[0].shape;
        Ok(fresh(backend.upload(&host, &crate::shape::Layout::contiguous(&[host.len()]))?, shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], _: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        argnums.iter().map(|_| ops::zeros_like(&inputs[0])).collect()
    }
    fn jvp(&self, _: &[Array], outputs: &[Array], _: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::zeros_like(&outputs[0])?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let moved = crate::transforms::vmap::batch_to_front(&inputs[0], axes[0].expect("the one input is batched"))?;
        let specs = self.output_specs(std::slice::from_ref(&moved))?;
        Ok((Array::siblings_from_primitive(specs, self.clone(), vec![moved])?, vec![Some(0)]))
    }
}
