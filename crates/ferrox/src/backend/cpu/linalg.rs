//! Dense linear algebra on the CPU through faer: Cholesky, LU, QR, SVD,
//! symmetric and general eigendecompositions, inverses and solves (and, in
//! `bunch_kaufman`, LAPACK's symmetric indefinite `L D T(L)`), over the
//! last two axes of their inputs and batched over the leading ones. The SVD
//! and the eigendecompositions also take complex64 matrices (as MLX's do).
//!
//! Each matrix of a batch is read from its strided layout into a faer
//! matrix, factorized (faer runs large factorizations on several threads;
//! batches of small matrices also run several matrices at once), and
//! written row-major into its slot of the outputs.

use super::bunch_kaufman;
use super::storage::{output_vec, CpuBuffer, CpuElement};
use crate::backend::LinalgOp;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::{numel, Layout};
use faer::linalg::solvers::{DenseSolveCore, Solve};
use faer::traits::{ComplexField, RealField};
use faer::{Mat, MatRef, Side};
use num_complex::Complex32;
use rayon::prelude::*;

/// Batches of matrices at most this large (elements) run several matrices
/// at once; larger ones one after the other, each on faer's threads.
const SMALL_MATRIX: usize = 64 * 64;

/// The routine `op` over `inputs` (see [`crate::backend::Backend::linalg`]).
pub fn linalg(op: LinalgOp, inputs: &[(&CpuBuffer, &Layout)]) -> Result<Vec<CpuBuffer>> {
    match inputs[0].0 {
        CpuBuffer::F32(_) => run::<f32, f32>(op, inputs, solve_one),
        CpuBuffer::F64(_) => run::<f64, f64>(op, inputs, solve_one),
        CpuBuffer::C64(_) => run::<Complex32, f32>(op, inputs, solve_complex),
        other => Err(unsupported(op, other.dtype())),
    }
}

/// The error for an input dtype `op` does not factorize.
fn unsupported(op: LinalgOp, dtype: Dtype) -> Error {
    Error::UnsupportedDtype { op: op.name(), dtype, detail: "Arrays must have type float32 or float64" }
}

/// The element types faer factorizes here.
trait Element: ComplexField + Copy + Send + Sync {
    /// The typed elements of a buffer of this type.
    fn slice(b: &CpuBuffer) -> &[Self];
}

/// The real element types, which every routine takes.
trait Real: Element + RealField + CpuElement {
    /// A complex result narrowed to complex64 (ferrox's complex type).
    fn narrow(z: num_complex::Complex<Self>) -> Complex32;
}

impl Element for f32 {
    fn slice(b: &CpuBuffer) -> &[f32] {
        match b {
            CpuBuffer::F32(v) => v.as_slice(),
            _ => unreachable!("the op builders give every input one dtype"),
        }
    }
}

impl Real for f32 {
    fn narrow(z: num_complex::Complex<f32>) -> Complex32 {
        z
    }
}

impl Element for f64 {
    fn slice(b: &CpuBuffer) -> &[f64] {
        match b {
            CpuBuffer::F64(v) => v.as_slice(),
            _ => unreachable!("the op builders give every input one dtype"),
        }
    }
}

impl Real for f64 {
    fn narrow(z: num_complex::Complex<f64>) -> Complex32 {
        Complex32::new(z.re as f32, z.im as f32)
    }
}

impl Element for Complex32 {
    fn slice(b: &CpuBuffer) -> &[Complex32] {
        match b {
            CpuBuffer::C64(v) => v.as_slice(),
            _ => unreachable!("the op builders give every input one dtype"),
        }
    }
}

/// Where each matrix of a batched operand starts, and its row and column
/// strides.
struct Matrices<'a, T> {
    data: &'a [T],
    starts: Vec<usize>,
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
}

impl<'a, T: Element> Matrices<'a, T> {
    fn new(buffer: &'a CpuBuffer, layout: &Layout) -> Matrices<'a, T> {
        let nd = layout.ndim();
        let batch = &layout.shape[..nd - 2];
        let mut starts = Vec::with_capacity(numel(batch));
        let mut index = vec![0usize; batch.len()];
        for _ in 0..numel(batch) {
            let at: isize = layout.offset as isize
                + index.iter().zip(&layout.strides).map(|(&i, &s)| i as isize * s).sum::<isize>();
            starts.push(at as usize);
            for d in (0..batch.len()).rev() {
                index[d] += 1;
                if index[d] < batch[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        Matrices {
            data: T::slice(buffer),
            starts,
            rows: layout.shape[nd - 2],
            cols: layout.shape[nd - 1],
            row_stride: layout.strides[nd - 2],
            col_stride: layout.strides[nd - 1],
        }
    }

    /// Matrix `b` of the batch, copied into a faer matrix.
    fn get(&self, b: usize) -> Mat<T> {
        let start = self.starts[b] as isize;
        Mat::from_fn(self.rows, self.cols, |i, j| {
            self.data[(start + i as isize * self.row_stride + j as isize * self.col_stride) as usize]
        })
    }
}

/// One output being filled: `per` elements for each matrix of the batch.
struct Slots<E> {
    data: Vec<E>,
    per: usize,
}

impl<E: CpuElement> Slots<E> {
    fn new(shape: &[usize], batch: usize) -> Result<Slots<E>> {
        Ok(Slots { data: output_vec::<E>(numel(shape))?, per: numel(shape).checked_div(batch).unwrap_or(0) })
    }
}

/// What one matrix's routine produces: a row-major block for each output.
enum Block<T> {
    Real(Vec<T>),
    Complex(Vec<Complex32>),
    Index(Vec<u32>),
    Pivots(Vec<i32>),
}

/// A faer matrix in row-major order.
fn row_major<T: Copy>(m: MatRef<'_, T>) -> Vec<T> {
    let mut v = Vec::with_capacity(m.nrows() * m.ncols());
    for i in 0..m.nrows() {
        for j in 0..m.ncols() {
            v.push(m[(i, j)]);
        }
    }
    v
}

/// `op` over every matrix of the batch: `solve` factorizes one matrix of
/// elements `T` into blocks whose real outputs have type `R`.
fn run<T: Element, R: Real>(
    op: LinalgOp,
    inputs: &[(&CpuBuffer, &Layout)],
    solve: fn(LinalgOp, Mat<T>, Option<Mat<T>>) -> Result<Vec<Block<R>>>,
) -> Result<Vec<CpuBuffer>> {
    let a = Matrices::<T>::new(inputs[0].0, inputs[0].1);
    let b = inputs.get(1).map(|(buf, l)| Matrices::<T>::new(buf, l));
    let shapes: Vec<&[usize]> = inputs.iter().map(|(_, l)| l.shape.as_slice()).collect();
    let outputs = op.outputs(&shapes, inputs[0].0.dtype());
    let batch = a.starts.len();
    if a.rows == 0 || a.cols == 0 {
        let blocks = (0..batch).map(|_| empty::<R>(op, a.rows, a.cols)).collect::<Result<Vec<_>>>()?;
        return assemble(&outputs, batch, &blocks);
    }
    // The matrices are copied into faer's own (column-major) storage: check
    // that one fits before faer asks (its allocations cannot fail softly).
    let elements = a.rows.checked_mul(a.cols).ok_or_else(|| too_big(op))?;
    Vec::<T>::new().try_reserve_exact(elements.saturating_mul(2)).map_err(|_| too_big(op))?;
    let per_matrix = |i: usize| {
        let matrix = a.get(i);
        let finite = (0..a.rows).all(|r| (0..a.cols).all(|c| T::is_finite_impl(&matrix[(r, c)])));
        match not_a_number::<R>(op, a.rows, a.cols) {
            Some(nan) if !finite => Ok(nan),
            _ => solve(op, matrix, b.as_ref().map(|b| b.get(i))),
        }
    };
    let blocks: Vec<Vec<Block<R>>> = if batch > 1 && a.rows * a.cols <= SMALL_MATRIX {
        (0..batch).into_par_iter().map(per_matrix).collect::<Result<_>>()?
    } else {
        (0..batch).map(per_matrix).collect::<Result<_>>()?
    };
    assemble(&outputs, batch, &blocks)
}

/// The error for a matrix too large to factorize in memory.
fn too_big(op: LinalgOp) -> Error {
    Error::OutOfMemory { op: op.name(), msg: "The matrices are too large to factorize in memory.".into() }
}

/// The output buffers from every matrix's blocks.
fn assemble<T: Real>(
    outputs: &[(Vec<usize>, Dtype)],
    batch: usize,
    blocks: &[Vec<Block<T>>],
) -> Result<Vec<CpuBuffer>> {
    let mut result = Vec::with_capacity(outputs.len());
    for (k, (shape, dtype)) in outputs.iter().enumerate() {
        result.push(match dtype {
            Dtype::C64 => gather_complex(shape, batch, blocks, k)?,
            Dtype::U32 => gather(shape, batch, blocks, k, |blk| match blk {
                Block::Index(v) => v,
                _ => unreachable!("output {k} is an index"),
            })?,
            Dtype::I32 => gather(shape, batch, blocks, k, |blk| match blk {
                Block::Pivots(v) => v,
                _ => unreachable!("output {k} holds pivots"),
            })?,
            _ => gather(shape, batch, blocks, k, |blk| match blk {
                Block::Real(v) => v,
                _ => unreachable!("output {k} is real"),
            })?,
        });
    }
    Ok(result)
}

/// Output `k` of every matrix, joined into one buffer of `shape`.
fn gather<T, E: CpuElement>(
    shape: &[usize],
    batch: usize,
    blocks: &[Vec<Block<T>>],
    k: usize,
    pick: impl Fn(&Block<T>) -> &Vec<E>,
) -> Result<CpuBuffer> {
    let mut slots = Slots::<E>::new(shape, batch)?;
    for (b, outs) in blocks.iter().enumerate() {
        let v = pick(&outs[k]);
        slots.data[b * slots.per..(b + 1) * slots.per].copy_from_slice(v);
    }
    Ok(E::into_buffer(slots.data))
}

/// Complex output `k` of every matrix, joined into one buffer of `shape`;
/// a real block there (the identity of an empty factor, NaNs for a
/// non-finite input) is widened.
fn gather_complex<T: Real>(shape: &[usize], batch: usize, blocks: &[Vec<Block<T>>], k: usize) -> Result<CpuBuffer> {
    let mut slots = Slots::<Complex32>::new(shape, batch)?;
    for (b, outs) in blocks.iter().enumerate() {
        let slot = &mut slots.data[b * slots.per..(b + 1) * slots.per];
        match &outs[k] {
            Block::Complex(v) => slot.copy_from_slice(v),
            Block::Real(v) => {
                slot.iter_mut().zip(v).for_each(|(z, &x)| *z = T::narrow(num_complex::Complex::new(x, T::zero_impl())))
            }
            Block::Index(_) | Block::Pivots(_) => unreachable!("output {k} is complex"),
        }
    }
    Ok(CpuBuffer::C64(slots.data.into()))
}

/// The lower (or upper) triangle of `a`, the rest zero.
fn triangle<T: Real>(a: &Mat<T>, upper: bool) -> Mat<T> {
    Mat::from_fn(
        a.nrows(),
        a.ncols(),
        |i, j| if (upper && j >= i) || (!upper && j <= i) { a[(i, j)] } else { T::zero_impl() },
    )
}

/// The routine `op` on one matrix `a` (and right-hand side `b`).
fn solve_one<T: Real>(op: LinalgOp, a: Mat<T>, b: Option<Mat<T>>) -> Result<Vec<Block<T>>> {
    let par = faer::get_global_parallelism();
    let n = a.nrows();
    let singular =
        |what: &str| Error::Runtime { op: op.name(), msg: format!("{what} failed: the matrix is singular.") };
    let zero_diagonal = |m: MatRef<'_, T>| (0..m.nrows().min(m.ncols())).any(|i| m[(i, i)] == T::zero_impl());
    Ok(match op {
        LinalgOp::Cholesky { upper } => {
            let side = if upper { Side::Upper } else { Side::Lower };
            let llt = a.llt(side).map_err(|_| {
                Error::invalid(
                    op.name(),
                    "The matrix is not symmetric positive definite (Cholesky factorization failed).",
                )
            })?;
            let l = llt.L();
            vec![Block::Real(if upper { row_major(l.transpose()) } else { row_major(l) })]
        }
        LinalgOp::Inverse => {
            let lu = a.partial_piv_lu();
            if zero_diagonal(lu.U()) {
                return Err(singular("LU factorization"));
            }
            vec![Block::Real(row_major(lu.inverse().as_ref()))]
        }
        LinalgOp::TriangularInverse { upper } => {
            let t = triangle(&a, upper);
            if zero_diagonal(t.as_ref()) {
                return Err(singular("Triangular inversion"));
            }
            let mut inv = Mat::<T>::zeros(n, n);
            if upper {
                faer::linalg::triangular_inverse::invert_upper_triangular(inv.as_mut(), t.as_ref(), par);
            } else {
                faer::linalg::triangular_inverse::invert_lower_triangular(inv.as_mut(), t.as_ref(), par);
            }
            vec![Block::Real(row_major(triangle(&inv, upper).as_ref()))]
        }
        LinalgOp::Solve => {
            let b = b.expect("solve has a right-hand side");
            let lu = a.partial_piv_lu();
            if zero_diagonal(lu.U()) {
                return Err(singular("LU factorization"));
            }
            vec![Block::Real(row_major(lu.solve(b.as_ref()).as_ref()))]
        }
        LinalgOp::SolveTriangular { upper } => {
            let mut x = b.expect("solve_triangular has a right-hand side");
            let t = triangle(&a, upper);
            if zero_diagonal(t.as_ref()) {
                return Err(singular("Triangular solve"));
            }
            if upper {
                faer::linalg::triangular_solve::solve_upper_triangular_in_place(t.as_ref(), x.as_mut(), par);
            } else {
                faer::linalg::triangular_solve::solve_lower_triangular_in_place(t.as_ref(), x.as_mut(), par);
            }
            vec![Block::Real(row_major(x.as_ref()))]
        }
        LinalgOp::Qr => {
            let qr = a.qr();
            vec![Block::Real(row_major(qr.compute_thin_Q().as_ref())), Block::Real(row_major(qr.thin_R()))]
        }
        LinalgOp::Svd { compute_uv } => {
            let failed = |_| Error::Runtime { op: op.name(), msg: "The SVD did not converge.".into() };
            if compute_uv {
                let svd = a.svd().map_err(failed)?;
                let s: Vec<T> = (0..a.nrows().min(a.ncols())).map(|i| svd.S()[i]).collect();
                vec![Block::Real(row_major(svd.U())), Block::Real(s), Block::Real(row_major(svd.V().transpose()))]
            } else {
                vec![Block::Real(a.singular_values().map_err(failed)?)]
            }
        }
        LinalgOp::Eigh { upper, vectors } => {
            let side = if upper { Side::Upper } else { Side::Lower };
            let failed = |_| Error::Runtime { op: op.name(), msg: "The eigensolver did not converge.".into() };
            if vectors {
                let evd = a.self_adjoint_eigen(side).map_err(failed)?;
                let w: Vec<T> = (0..n).map(|i| evd.S()[i]).collect();
                vec![Block::Real(w), Block::Real(row_major(evd.U()))]
            } else {
                vec![Block::Real(a.self_adjoint_eigenvalues(side).map_err(failed)?)]
            }
        }
        LinalgOp::Eig { vectors } => {
            let failed = |_| Error::Runtime { op: op.name(), msg: "The eigensolver did not converge.".into() };
            if vectors {
                let evd = a.eigen().map_err(failed)?;
                let w: Vec<Complex32> = (0..n).map(|i| T::narrow(evd.S()[i])).collect();
                let u = evd.U();
                let mut v: Vec<Complex32> = (0..n * n).map(|k| T::narrow(u[(k / n, k % n)])).collect();
                unit_columns(&mut v, n);
                vec![Block::Complex(w), Block::Complex(v)]
            } else {
                vec![Block::Complex(a.eigenvalues().map_err(failed)?.into_iter().map(T::narrow).collect())]
            }
        }
        LinalgOp::LuFactor => {
            let (m, cols) = (a.nrows(), a.ncols());
            let k = m.min(cols);
            let lu = a.partial_piv_lu();
            let (l, u) = (lu.L(), lu.U());
            // A zero pivot means the rest of its column was zero: LAPACK leaves
            // those multipliers 0 where faer's division gives 0/0.
            let packed = Mat::from_fn(m, cols, |i, j| {
                if j >= i {
                    u[(i, j)]
                } else if u[(j, j)] == T::zero_impl() {
                    T::zero_impl()
                } else {
                    l[(i, j)]
                }
            });
            let forward: Vec<usize> = lu.P().arrays().0.to_vec();
            vec![
                Block::Real(row_major(packed.as_ref())),
                Block::Index(swaps(&forward, k)),
                Block::Index(inverse(&forward)),
            ]
        }
        LinalgOp::LdlFactor => {
            let mut data: Vec<T> = (0..n * n).map(|k| a[(k % n, k / n)]).collect();
            let pivots = bunch_kaufman::factor_lower(&mut bunch_kaufman::ColumnMajor { data: &mut data, n });
            let packed = Mat::from_fn(n, n, |i, j| if j <= i { data[j * n + i] } else { T::zero_impl() });
            vec![Block::Real(row_major(packed.as_ref())), Block::Pivots(pivots)]
        }
    })
}

/// The SVD and the eigendecompositions of one complex64 matrix `a`: real
/// singular values and Hermitian eigenvalues, complex factors.
fn solve_complex(op: LinalgOp, a: Mat<Complex32>, _: Option<Mat<Complex32>>) -> Result<Vec<Block<f32>>> {
    let n = a.nrows();
    let not_converged = |what: &str| Error::Runtime { op: op.name(), msg: format!("The {what} did not converge.") };
    Ok(match op {
        LinalgOp::Svd { compute_uv: true } => {
            let svd = a.svd().map_err(|_| not_converged("SVD"))?;
            let s: Vec<f32> = (0..a.nrows().min(a.ncols())).map(|i| svd.S()[i].re).collect();
            vec![
                Block::Complex(row_major(svd.U())),
                Block::Real(s),
                Block::Complex(conjugated(row_major(svd.V().transpose()))),
            ]
        }
        LinalgOp::Svd { compute_uv: false } => {
            vec![Block::Real(a.singular_values().map_err(|_| not_converged("SVD"))?)]
        }
        LinalgOp::Eigh { upper, vectors } => {
            let side = if upper { Side::Upper } else { Side::Lower };
            if vectors {
                let evd = a.self_adjoint_eigen(side).map_err(|_| not_converged("eigensolver"))?;
                let w: Vec<f32> = (0..n).map(|i| evd.S()[i].re).collect();
                vec![Block::Real(w), Block::Complex(row_major(evd.U()))]
            } else {
                vec![Block::Real(a.self_adjoint_eigenvalues(side).map_err(|_| not_converged("eigensolver"))?)]
            }
        }
        LinalgOp::Eig { vectors } => {
            if vectors {
                let evd = a.eigen().map_err(|_| not_converged("eigensolver"))?;
                let w: Vec<Complex32> = (0..n).map(|i| evd.S()[i]).collect();
                let mut v = row_major(evd.U());
                unit_columns(&mut v, n);
                vec![Block::Complex(w), Block::Complex(v)]
            } else {
                vec![Block::Complex(a.eigenvalues().map_err(|_| not_converged("eigensolver"))?)]
            }
        }
        _ => return Err(unsupported(op, Dtype::C64)),
    })
}

/// The elements of `v`, conjugated.
fn conjugated(mut v: Vec<Complex32>) -> Vec<Complex32> {
    v.iter_mut().for_each(|z| *z = z.conj());
    v
}

/// Scales each column of the row-major `n x n` matrix `v` to unit norm with
/// its largest component real and positive (LAPACK's `geev` convention,
/// which MLX returns).
fn unit_columns(v: &mut [Complex32], n: usize) {
    for j in 0..n {
        let column = |i: usize| v[i * n + j];
        let norm = (0..n).map(|i| column(i).norm_sqr() as f64).sum::<f64>().sqrt();
        let largest = (0..n).map(column).max_by(|a, b| a.norm_sqr().total_cmp(&b.norm_sqr())).unwrap_or_default();
        if norm == 0.0 || largest.norm() == 0.0 {
            continue;
        }
        let phase = largest.conj() / largest.norm();
        for i in 0..n {
            v[i * n + j] = v[i * n + j] * phase / norm as f32;
        }
    }
}

/// The outputs of `op` for an `m x n` matrix with no elements: empty
/// factors, except the identities `U` and `Vt` of an SVD (NumPy's) and
/// the row order of an LU.
fn empty<T: Real>(op: LinalgOp, m: usize, n: usize) -> Result<Vec<Block<T>>> {
    let identity = |k: usize| -> Result<Block<T>> {
        let mut v = output_vec::<T>(k.checked_mul(k).ok_or_else(|| too_big(op))?)?;
        v.iter_mut().enumerate().for_each(|(i, x)| *x = if i % (k + 1) == 0 { T::one_impl() } else { T::zero_impl() });
        Ok(Block::Real(v))
    };
    let none = || Block::Real(Vec::new());
    Ok(match op {
        LinalgOp::Qr => vec![none(), none()],
        LinalgOp::Svd { compute_uv: true } => vec![identity(m)?, none(), identity(n)?],
        LinalgOp::Eigh { vectors: true, .. } => vec![none(), none()],
        LinalgOp::Eig { vectors: true } => vec![Block::Complex(Vec::new()), Block::Complex(Vec::new())],
        LinalgOp::Eig { vectors: false } => vec![Block::Complex(Vec::new())],
        LinalgOp::LdlFactor => vec![none(), Block::Pivots(Vec::new())],
        LinalgOp::LuFactor => {
            let mut rows = output_vec::<u32>(m)?;
            rows.iter_mut().enumerate().for_each(|(i, r)| *r = i as u32);
            vec![none(), Block::Index(Vec::new()), Block::Index(rows)]
        }
        _ => vec![none()],
    })
}

/// NaN outputs for a matrix with NaN or infinite entries, for the
/// iterative routines (whose iterations would not converge on them; LAPACK
/// returns NaNs too); `None` for the direct ones, which propagate NaN
/// themselves.
fn not_a_number<T: Real>(op: LinalgOp, m: usize, n: usize) -> Option<Vec<Block<T>>> {
    let k = m.min(n);
    let nan = |len: usize| Block::Real(vec![T::nan_impl(); len]);
    let cnan = |len: usize| Block::Complex(vec![Complex32::new(f32::NAN, f32::NAN); len]);
    Some(match op {
        LinalgOp::Svd { compute_uv: true } => vec![nan(m * m), nan(k), nan(n * n)],
        LinalgOp::Svd { compute_uv: false } => vec![nan(k)],
        LinalgOp::Eigh { vectors: true, .. } => vec![nan(n), nan(n * n)],
        LinalgOp::Eigh { vectors: false, .. } => vec![nan(n)],
        LinalgOp::Eig { vectors: true } => vec![cnan(n), cnan(n * n)],
        LinalgOp::Eig { vectors: false } => vec![cnan(n)],
        _ => return None,
    })
}

/// LAPACK's pivots for the row permutation `forward` (row `i` of `L U` is
/// row `forward[i]` of `A`): the swaps, applied in order to the rows of `A`,
/// that bring those rows into place.
fn swaps(forward: &[usize], k: usize) -> Vec<u32> {
    let mut at: Vec<usize> = (0..forward.len()).collect(); // row held at each position
    let mut position: Vec<usize> = (0..forward.len()).collect(); // position of each row
    let mut pivots = Vec::with_capacity(k);
    for (i, &row) in forward.iter().enumerate().take(k) {
        let j = position[row];
        pivots.push(j as u32);
        let other = at[i];
        at.swap(i, j);
        position[other] = j;
        position[row] = i;
    }
    pivots
}

/// The inverse of a permutation, as uint32.
fn inverse(forward: &[usize]) -> Vec<u32> {
    let mut inv = vec![0u32; forward.len()];
    for (i, &f) in forward.iter().enumerate() {
        inv[f] = i as u32;
    }
    inv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pivots_replay_the_permutation() {
        let forward = [3usize, 0, 4, 1, 2];
        let piv = swaps(&forward, 5);
        let mut rows: Vec<usize> = (0..5).collect();
        for (i, &p) in piv.iter().enumerate() {
            rows.swap(i, p as usize);
        }
        assert_eq!(rows, forward);
        assert_eq!(inverse(&forward), vec![1, 3, 4, 0, 2]);
    }

    #[test]
    fn batched_inverse_and_solve() {
        // Two 2 x 2 matrices, the second transposed in memory.
        let a = CpuBuffer::F64(vec![4.0, 1.0, 2.0, 3.0, 2.0, 0.0, 0.0, 5.0].into());
        let l = Layout::contiguous(&[2, 2, 2]);
        let CpuBuffer::F64(inv) = &linalg(LinalgOp::Inverse, &[(&a, &l)]).unwrap()[0] else { panic!() };
        let want = [0.3, -0.1, -0.2, 0.4, 0.5, 0.0, 0.0, 0.2];
        for (g, w) in inv.as_slice().iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{g} vs {w}");
        }
        let singular = CpuBuffer::F32(vec![1.0, 2.0, 2.0, 4.0].into());
        assert!(linalg(LinalgOp::Inverse, &[(&singular, &Layout::contiguous(&[2, 2]))]).is_err());
    }
}
