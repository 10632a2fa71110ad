//! Dense linear algebra on the GPU through cuSOLVER and cuBLAS (see
//! [`crate::backend::Backend::linalg`]).
//!
//! cuSOLVER works on column-major matrices: each routine copies its input
//! into a column-major working buffer (the strided copy kernel), factorizes
//! there, and copies each output back to row-major order. Batches run as
//! one batched call where cuSOLVER or cuBLAS has one (Cholesky, the LU
//! solves and inverses of square matrices, triangular solves), else one call
//! per matrix on the same stream (QR, SVD, eigh, triangular inverses, LDL, LU of
//! one or of rectangular matrices). What a factorization reports (a singular
//! or indefinite matrix, no convergence) is read back once it has run, as
//! PyTorch does, and raised or turned into NaNs as the CPU backend does.
//! complex64 matrices (SVD, eigh, eig) use the same routines; the general
//! eigendecomposition of a real matrix unpacks LAPACK's real eigenvector
//! pairs into complex64 (`eig_vectors`). Matrices with no elements are not
//! handled here (`None`): the caller makes their (empty) outputs on the
//! host.

use super::allocator::{allocate, DeviceBuffer};
use super::cublas_api;
use super::cusolver_api::{self as solver, Api, Handle, Params};
use super::elementwise::copy;
use super::kernels::Family;
use super::launch::{grid_for, launch, Args, BLOCK};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::cpu::{CpuBuffer, CpuStorage};
use crate::backend::LinalgOp;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::{contiguous_strides, numel, Layout};
use cudarc::driver::sys;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::ptr::null_mut;
use std::sync::{Arc, Mutex};

/// Batches of square matrices at most this large run the batched cuBLAS LU
/// (a kernel per step for all matrices); larger ones cuSOLVER's blocked LU
/// one matrix at a time (PyTorch's choice too).
const BATCHED_LU_MAX: usize = 128;

/// A stream's library handles.
struct Handles {
    solver: Handle,
    params: Params,
    blas: cublas_api::Handle,
}

// SAFETY: the handles are used only under the `HANDLES` lock.
unsafe impl Send for Handles {}

/// Handles by stream index, created on first use.
static HANDLES: Mutex<Option<HashMap<usize, Handles>>> = Mutex::new(None);

fn solver_api() -> Result<&'static Api> {
    solver::api().map_err(|why| Error::Device {
        op: "linalg",
        msg: format!(
            "cuSOLVER is not available ({why}); install it with `pip install nvidia-cusolver` (or `ferrox[cuda]`)."
        ),
    })
}

fn blas_api() -> Result<&'static cublas_api::Api> {
    cublas_api::api().map_err(|why| Error::Device {
        op: "linalg",
        msg: format!(
            "cuBLAS is not available ({why}); install it with `pip install nvidia-cublas` (or `ferrox[cuda]`)."
        ),
    })
}

/// A library call's status as a result.
fn check(call: &str, status: c_int) -> Result<()> {
    if status == 0 {
        Ok(())
    } else {
        Err(Error::Device { op: "linalg", msg: format!("{call} failed with status {status}.") })
    }
}

/// Runs `f` with the stream's handles; the lock keeps calls on one handle
/// from interleaving.
fn with_handles<R>(s: &Arc<GpuStream>, f: impl FnOnce(&Handles, &'static Api) -> Result<R>) -> Result<R> {
    let api = solver_api()?;
    let blas = blas_api()?;
    let mut guard = HANDLES.lock().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    if !map.contains_key(&s.index) {
        let (mut solver_handle, mut params, mut blas_handle) = (null_mut(), null_mut(), null_mut());
        // SAFETY: out-pointers to locals; the stream lives for the process.
        unsafe {
            check("cusolverDnCreate", (api.cusolverDnCreate)(&mut solver_handle))?;
            check("cusolverDnSetStream", (api.cusolverDnSetStream)(solver_handle, s.raw))?;
            check("cusolverDnCreateParams", (api.cusolverDnCreateParams)(&mut params))?;
            check("cublasCreate", (blas.cublasCreate_v2)(&mut blas_handle))?;
            check("cublasSetStream", (blas.cublasSetStream_v2)(blas_handle, s.raw))?;
        }
        map.insert(s.index, Handles { solver: solver_handle, params, blas: blas_handle });
    }
    f(&map[&s.index], api)
}

/// cuSOLVER's name for a float32, float64 or complex64 dtype.
fn data_type(dtype: Dtype) -> c_int {
    match dtype {
        Dtype::F64 => solver::R_64F,
        Dtype::C64 => solver::C_32F,
        _ => solver::R_32F,
    }
}

/// The real dtype of a (complex) dtype's singular values and eigenvalues.
fn real_dtype(dtype: Dtype) -> Dtype {
    if dtype == Dtype::C64 {
        Dtype::F32
    } else {
        dtype
    }
}

/// The kernels `linalg.cu` defines for the module of dtype `d`.
pub(crate) fn kernel_names(d: Dtype) -> Vec<String> {
    let mut names = vec!["keep_triangle".to_string(), "mark_non_finite".to_string()];
    if matches!(d, Dtype::F32 | Dtype::F64) {
        names.extend(["eig_values".to_string(), "eig_vectors".to_string()]);
    }
    names
}

/// Device and host scratch space of the sizes a routine asked for.
struct Workspace {
    device: DeviceBuffer,
    device_bytes: usize,
    host: Vec<u8>,
}

impl Workspace {
    fn new(s: &Arc<GpuStream>, device_bytes: usize, host_bytes: usize) -> Result<Workspace> {
        Ok(Workspace { device: allocate(device_bytes.max(1), s)?, device_bytes, host: vec![0u8; host_bytes] })
    }
    fn device_ptr(&self) -> *mut c_void {
        self.device.ptr() as *mut c_void
    }
    fn host_ptr(&mut self) -> *mut c_void {
        if self.host.is_empty() {
            null_mut()
        } else {
            self.host.as_mut_ptr() as *mut c_void
        }
    }
}

/// A device address as the pointer type a library takes.
fn device<T>(p: sys::CUdeviceptr) -> *mut T {
    p as *mut T
}

/// `count` matrices of `stride` elements each, from the start of `buf`, as
/// a device array of their addresses (the batched routines' operand).
fn pointers(s: &Arc<GpuStream>, buf: &CudaStorage, count: usize, stride: usize) -> Result<CudaStorage> {
    let host: Vec<u64> = (0..count).map(|i| buf.ptr_at(i * stride)).collect();
    upload(s, CpuStorage::new(CpuBuffer::U64(host.into())))
}

/// Host data copied to a new device buffer.
fn upload(s: &Arc<GpuStream>, host: CpuStorage) -> Result<CudaStorage> {
    let out = CudaStorage::alloc(host.dtype(), host.len(), s)?;
    let bytes = host.bytes();
    if !bytes.is_empty() {
        // SAFETY: pageable host memory is staged before the call returns;
        // the destination is a live buffer of that size.
        unsafe { sys::cuMemcpyHtoDAsync_v2(out.ptr_at(0), bytes.as_ptr() as *const _, bytes.len(), s.raw) }
            .result()
            .map_err(super::device::driver_error("linalg"))?;
    }
    Ok(out)
}

/// The integers of a device buffer (waits for the stream).
fn read_i32(s: &Arc<GpuStream>, buf: &CudaStorage) -> Result<Vec<i32>> {
    match super::download(s, buf.ptr_at(0), buf.dtype(), buf.len())?.buffer() {
        CpuBuffer::I32(v) => Ok(v.as_slice().to_vec()),
        _ => unreachable!("an int32 buffer"),
    }
}

/// The matrices of `x` (last two axes) copied column-major, one after the
/// other.
fn columns(s: &Arc<GpuStream>, x: &CudaStorage, layout: &Layout) -> Result<CudaStorage> {
    let nd = layout.ndim();
    let mut perm: Vec<usize> = (0..nd).collect();
    perm.swap(nd - 2, nd - 1);
    copy(s, x, &layout.permute(&perm), x.dtype())
}

/// Row-major `rows x cols` matrices from column-major ones with leading
/// dimension `ld`, `stride` elements apart in `buf`.
fn row_major(
    s: &Arc<GpuStream>,
    buf: &CudaStorage,
    batch: &[usize],
    (rows, cols): (usize, usize),
    ld: usize,
    stride: usize,
) -> Result<CudaStorage> {
    let mut shape = batch.to_vec();
    shape.extend([rows, cols]);
    let mut strides: Vec<isize> = contiguous_strides(batch).iter().map(|d| d * stride as isize).collect();
    strides.extend([1, ld as isize]);
    copy(s, buf, &Layout { shape, strides, offset: 0 }, buf.dtype())
}

/// Zeroes what lies outside the upper (or lower) triangle of the row-major
/// `rows x cols` matrices of `buf`.
fn keep_triangle(s: &Arc<GpuStream>, buf: &CudaStorage, (rows, cols): (usize, usize), upper: bool) -> Result<()> {
    let total = buf.len();
    if total == 0 {
        return Ok(());
    }
    let args = Args::new().arg(buf.ptr_at(0)).arg(total as i64).arg(rows as i64).arg(cols as i64).arg(upper as c_int);
    launch(Family::Linalg, buf.dtype(), "keep_triangle", (grid_for(total, 1)?, 1, 1), (BLOCK, 1, 1), s, args)
}

/// The error a singular matrix raises (the CPU backend's message).
fn singular(op: LinalgOp, what: &str) -> Error {
    Error::Runtime { op: op.name(), msg: format!("{what} failed: the matrix is singular.") }
}

/// `op` over `inputs` on the GPU, or `None` for matrices with no elements.
pub(crate) fn linalg(
    s: &Arc<GpuStream>,
    op: LinalgOp,
    inputs: &[(&CudaStorage, &Layout)],
) -> Result<Option<Vec<CudaStorage>>> {
    let (x, layout) = inputs[0];
    let dtype = x.dtype();
    if inputs.iter().any(|(_, l)| l.size() == 0) {
        return Ok(None);
    }
    let nd = layout.ndim();
    let geometry =
        Geometry { batch: layout.shape[..nd - 2].to_vec(), m: layout.shape[nd - 2], n: layout.shape[nd - 1] };
    let a = columns(s, x, layout)?;
    let outputs = match op {
        LinalgOp::Cholesky { upper } => vec![cholesky(s, op, &geometry, a, upper)?],
        LinalgOp::Inverse => {
            let identity = identities(s, &geometry, dtype)?;
            let x = lu_solve(s, op, &geometry, a, identity, geometry.n)?;
            vec![row_major(s, &x, &geometry.batch, (geometry.n, geometry.n), geometry.n, geometry.n * geometry.n)?]
        }
        LinalgOp::Solve => {
            let (b, lb) = inputs[1];
            let k = lb.shape[lb.ndim() - 1];
            let x = lu_solve(s, op, &geometry, a, columns(s, b, lb)?, k)?;
            vec![row_major(s, &x, &geometry.batch, (geometry.n, k), geometry.n, geometry.n * k)?]
        }
        LinalgOp::SolveTriangular { upper } => {
            let (b, lb) = inputs[1];
            let k = lb.shape[lb.ndim() - 1];
            let x = triangular_solve(s, op, &geometry, a, columns(s, b, lb)?, k, upper)?;
            vec![row_major(s, &x, &geometry.batch, (geometry.n, k), geometry.n, geometry.n * k)?]
        }
        LinalgOp::TriangularInverse { upper } => vec![triangular_inverse(s, op, &geometry, a, upper)?],
        LinalgOp::LuFactor => lu_factor(s, &geometry, a)?,
        LinalgOp::LdlFactor => ldl_factor(s, &geometry, a)?,
        LinalgOp::Qr => qr(s, &geometry, a)?,
        LinalgOp::Eigh { upper, vectors } => eigh(s, &geometry, a, upper, vectors)?,
        LinalgOp::Svd { compute_uv } => svd(s, &geometry, a, compute_uv)?,
        LinalgOp::Eig { vectors } => eig(s, &geometry, a, vectors)?,
    };
    // The op builders take complex64 only where cuSOLVER has it.
    debug_assert!(
        dtype != Dtype::C64 || matches!(op, LinalgOp::Svd { .. } | LinalgOp::Eigh { .. } | LinalgOp::Eig { .. })
    );
    Ok(Some(outputs))
}

/// The batch shape and the matrix size of the first operand.
struct Geometry {
    batch: Vec<usize>,
    m: usize,
    n: usize,
}

impl Geometry {
    fn count(&self) -> usize {
        numel(&self.batch)
    }
}

/// `count` column-major identity matrices of the operand's size.
fn identities(s: &Arc<GpuStream>, g: &Geometry, dtype: Dtype) -> Result<CudaStorage> {
    let one = super::creation::eye(s, g.n, g.n, 0, dtype)?;
    let mut shape = g.batch.clone();
    shape.extend([g.n, g.n]);
    let mut strides = vec![0isize; g.batch.len()];
    strides.extend(contiguous_strides(&[g.n, g.n]));
    copy(s, &one, &Layout { shape, strides, offset: 0 }, dtype)
}

/// The Cholesky factor of each column-major matrix of `a`, reading and
/// writing the lower (or `upper`) triangle, returned row-major with the
/// other triangle zero. One batched call reads the lower triangle: the upper
/// one is the lower triangle of the transpose, which is `a`'s row-major copy.
fn cholesky(s: &Arc<GpuStream>, op: LinalgOp, g: &Geometry, a: CudaStorage, upper: bool) -> Result<CudaStorage> {
    let n = g.n;
    let count = g.count();
    // Row-major data read column-major is the transpose.
    let work = if upper { row_major(s, &a, &g.batch, (n, n), n, n * n)? } else { a };
    let info = CudaStorage::alloc(Dtype::I32, count, s)?;
    let ptrs = pointers(s, &work, count, n * n)?;
    with_handles(s, |h, api| {
        // SAFETY: `ptrs` holds `count` live n x n matrices; info has `count` slots.
        let status = unsafe {
            if work.dtype() == Dtype::F64 {
                (api.cusolverDnDpotrfBatched)(
                    h.solver,
                    solver::LOWER,
                    n as c_int,
                    device(ptrs.ptr_at(0)),
                    n as c_int,
                    device(info.ptr_at(0)),
                    count as c_int,
                )
            } else {
                (api.cusolverDnSpotrfBatched)(
                    h.solver,
                    solver::LOWER,
                    n as c_int,
                    device(ptrs.ptr_at(0)),
                    n as c_int,
                    device(info.ptr_at(0)),
                    count as c_int,
                )
            }
        };
        check("potrfBatched", status)
    })?;
    if read_i32(s, &info)?.iter().any(|&i| i != 0) {
        return Err(Error::invalid(
            op.name(),
            "The matrix is not symmetric positive definite (Cholesky factorization failed).",
        ));
    }
    // The lower factor L (column-major) read row-major is U = L^T.
    let out = if upper { work } else { row_major(s, &work, &g.batch, (n, n), n, n * n)? };
    keep_triangle(s, &out, (n, n), upper)?;
    Ok(out)
}

/// `X` with `A X = B` for the column-major square matrices `a` and the
/// column-major `n x k` right-hand sides `b` (overwritten and returned).
fn lu_solve(
    s: &Arc<GpuStream>,
    op: LinalgOp,
    g: &Geometry,
    a: CudaStorage,
    b: CudaStorage,
    k: usize,
) -> Result<CudaStorage> {
    let (n, count) = (g.n, g.count());
    let failed = if count > 1 && n <= BATCHED_LU_MAX {
        let blas = blas_api()?;
        let pivots = CudaStorage::alloc(Dtype::I32, count * n, s)?;
        let info = CudaStorage::alloc(Dtype::I32, count, s)?;
        let a_ptrs = pointers(s, &a, count, n * n)?;
        let b_ptrs = pointers(s, &b, count, n * k)?;
        let mut solve_info: c_int = 0;
        with_handles(s, |h, _| {
            let (ni, ki, ci) = (n as c_int, k as c_int, count as c_int);
            // SAFETY: the pointer arrays hold `count` live matrices of the
            // stated sizes; pivots and info have room for every matrix.
            unsafe {
                if a.dtype() == Dtype::F64 {
                    check(
                        "getrfBatched",
                        (blas.cublasDgetrfBatched)(
                            h.blas,
                            ni,
                            device(a_ptrs.ptr_at(0)),
                            ni,
                            device(pivots.ptr_at(0)),
                            device(info.ptr_at(0)),
                            ci,
                        ),
                    )?;
                    check(
                        "getrsBatched",
                        (blas.cublasDgetrsBatched)(
                            h.blas,
                            solver::NO_TRANSPOSE,
                            ni,
                            ki,
                            device(a_ptrs.ptr_at(0)),
                            ni,
                            device(pivots.ptr_at(0)),
                            device(b_ptrs.ptr_at(0)),
                            ni,
                            &mut solve_info,
                            ci,
                        ),
                    )
                } else {
                    check(
                        "getrfBatched",
                        (blas.cublasSgetrfBatched)(
                            h.blas,
                            ni,
                            device(a_ptrs.ptr_at(0)),
                            ni,
                            device(pivots.ptr_at(0)),
                            device(info.ptr_at(0)),
                            ci,
                        ),
                    )?;
                    check(
                        "getrsBatched",
                        (blas.cublasSgetrsBatched)(
                            h.blas,
                            solver::NO_TRANSPOSE,
                            ni,
                            ki,
                            device(a_ptrs.ptr_at(0)),
                            ni,
                            device(pivots.ptr_at(0)),
                            device(b_ptrs.ptr_at(0)),
                            ni,
                            &mut solve_info,
                            ci,
                        ),
                    )
                }
            }
        })?;
        read_i32(s, &info)?
    } else {
        let pivots = CudaStorage::alloc(Dtype::I64, count * n, s)?;
        let info = CudaStorage::alloc(Dtype::I32, count, s)?;
        getrf_each(s, g, &a, &pivots, &info)?;
        // getrs reports only invalid arguments: its own slot keeps getrf's.
        let solve_info = CudaStorage::alloc(Dtype::I32, 1, s)?;
        let dt = data_type(a.dtype());
        with_handles(s, |h, api| {
            let ni = n as i64;
            for i in 0..count {
                // SAFETY: every pointer is a live device buffer of the stated size.
                let status = unsafe {
                    (api.cusolverDnXgetrs)(
                        h.solver,
                        h.params,
                        solver::NO_TRANSPOSE,
                        ni,
                        k as i64,
                        dt,
                        device(a.ptr_at(i * n * n)),
                        ni,
                        device(pivots.ptr_at(i * n)),
                        dt,
                        device(b.ptr_at(i * n * k)),
                        ni,
                        device(solve_info.ptr_at(0)),
                    )
                };
                check("getrs", status)?;
            }
            Ok(())
        })?;
        read_i32(s, &info)?
    };
    if failed.iter().any(|&i| i > 0) {
        return Err(singular(op, "LU factorization"));
    }
    Ok(b)
}

/// `X` with `T X = B` for the lower (or `upper`) triangles `T` of the
/// column-major matrices `a` and the column-major `n x k` right-hand
/// sides `b` (overwritten and returned); a zero on a diagonal raises.
fn triangular_solve(
    s: &Arc<GpuStream>,
    op: LinalgOp,
    g: &Geometry,
    a: CudaStorage,
    b: CudaStorage,
    k: usize,
    upper: bool,
) -> Result<CudaStorage> {
    let (n, count) = (g.n, g.count());
    check_diagonal(s, op, g, &a, "Triangular solve")?;
    let blas = blas_api()?;
    let a_ptrs = pointers(s, &a, count, n * n)?;
    let b_ptrs = pointers(s, &b, count, n * k)?;
    let uplo = if upper { solver::UPPER } else { solver::LOWER };
    with_handles(s, |h, _| {
        let (ni, ki, ci) = (n as c_int, k as c_int, count as c_int);
        // SAFETY: the pointer arrays hold `count` live matrices of the
        // stated sizes; alpha is a host scalar (cuBLAS's default mode).
        unsafe {
            if a.dtype() == Dtype::F64 {
                let one = 1.0f64;
                check(
                    "trsmBatched",
                    (blas.cublasDtrsmBatched)(
                        h.blas,
                        cublas_api::LEFT,
                        uplo,
                        solver::NO_TRANSPOSE,
                        solver::NON_UNIT,
                        ni,
                        ki,
                        &one,
                        device(a_ptrs.ptr_at(0)),
                        ni,
                        device(b_ptrs.ptr_at(0)),
                        ni,
                        ci,
                    ),
                )
            } else {
                let one = 1.0f32;
                check(
                    "trsmBatched",
                    (blas.cublasStrsmBatched)(
                        h.blas,
                        cublas_api::LEFT,
                        uplo,
                        solver::NO_TRANSPOSE,
                        solver::NON_UNIT,
                        ni,
                        ki,
                        &one,
                        device(a_ptrs.ptr_at(0)),
                        ni,
                        device(b_ptrs.ptr_at(0)),
                        ni,
                        ci,
                    ),
                )
            }
        }
    })?;
    Ok(b)
}

/// Raises when a diagonal element of a square column-major matrix of `a`
/// is zero (a singular triangle).
fn check_diagonal(s: &Arc<GpuStream>, op: LinalgOp, g: &Geometry, a: &CudaStorage, what: &str) -> Result<()> {
    let n = g.n;
    let diagonals = Layout { shape: vec![g.count(), n], strides: vec![(n * n) as isize, (n + 1) as isize], offset: 0 };
    let diagonal = copy(s, a, &diagonals, a.dtype())?;
    let host = super::download(s, diagonal.ptr_at(0), diagonal.dtype(), diagonal.len())?;
    let zero = match host.buffer() {
        CpuBuffer::F32(v) => v.as_slice().contains(&0.0),
        CpuBuffer::F64(v) => v.as_slice().contains(&0.0),
        _ => unreachable!("a real float buffer"),
    };
    if zero {
        return Err(singular(op, what));
    }
    Ok(())
}

/// The inverses of the lower (or `upper`) triangles of the column-major
/// matrices `a`, row-major with the other triangle zero.
fn triangular_inverse(
    s: &Arc<GpuStream>,
    op: LinalgOp,
    g: &Geometry,
    a: CudaStorage,
    upper: bool,
) -> Result<CudaStorage> {
    let (n, count) = (g.n, g.count());
    let info = CudaStorage::alloc(Dtype::I32, count, s)?;
    let dt = data_type(a.dtype());
    let uplo = if upper { solver::UPPER } else { solver::LOWER };
    with_handles(s, |h, api| {
        let ni = n as i64;
        let (mut device_bytes, mut host_bytes) = (0usize, 0usize);
        // SAFETY: every pointer is a live device buffer of the stated size;
        // the workspace is as large as cuSOLVER asked.
        unsafe {
            check(
                "trtri_bufferSize",
                (api.cusolverDnXtrtri_bufferSize)(
                    h.solver,
                    uplo,
                    solver::NON_UNIT,
                    ni,
                    dt,
                    device(a.ptr_at(0)),
                    ni,
                    &mut device_bytes,
                    &mut host_bytes,
                ),
            )?;
            let mut work = Workspace::new(s, device_bytes, host_bytes)?;
            for i in 0..count {
                check(
                    "trtri",
                    (api.cusolverDnXtrtri)(
                        h.solver,
                        uplo,
                        solver::NON_UNIT,
                        ni,
                        dt,
                        device(a.ptr_at(i * n * n)),
                        ni,
                        work.device_ptr(),
                        work.device_bytes,
                        work.host_ptr(),
                        host_bytes,
                        device(info.ptr_at(i)),
                    ),
                )?;
            }
        }
        Ok(())
    })?;
    if read_i32(s, &info)?.iter().any(|&i| i > 0) {
        return Err(singular(op, "Triangular inversion"));
    }
    let out = row_major(s, &a, &g.batch, (n, n), n, n * n)?;
    keep_triangle(s, &out, (n, n), upper)?;
    Ok(out)
}

/// cuSOLVER's LU factorization with partial pivoting of each column-major
/// `m x n` matrix of `a`, in place: `min(m, n)` 1-based pivots per matrix in
/// `pivots` (int64), LAPACK's status per matrix in `info`.
fn getrf_each(
    s: &Arc<GpuStream>,
    g: &Geometry,
    a: &CudaStorage,
    pivots: &CudaStorage,
    info: &CudaStorage,
) -> Result<()> {
    let (m, n, count) = (g.m, g.n, g.count());
    let k = m.min(n);
    let dt = data_type(a.dtype());
    with_handles(s, |h, api| {
        let (mi, ni) = (m as i64, n as i64);
        let (mut device_bytes, mut host_bytes) = (0usize, 0usize);
        // SAFETY: every pointer is a live device buffer of the stated size;
        // the workspace is as large as cuSOLVER asked.
        unsafe {
            check(
                "getrf_bufferSize",
                (api.cusolverDnXgetrf_bufferSize)(
                    h.solver,
                    h.params,
                    mi,
                    ni,
                    dt,
                    device(a.ptr_at(0)),
                    mi,
                    dt,
                    &mut device_bytes,
                    &mut host_bytes,
                ),
            )?;
            let mut work = Workspace::new(s, device_bytes, host_bytes)?;
            for i in 0..count {
                check(
                    "getrf",
                    (api.cusolverDnXgetrf)(
                        h.solver,
                        h.params,
                        mi,
                        ni,
                        dt,
                        device(a.ptr_at(i * m * n)),
                        mi,
                        device(pivots.ptr_at(i * k)),
                        dt,
                        work.device_ptr(),
                        work.device_bytes,
                        work.host_ptr(),
                        host_bytes,
                        device(info.ptr_at(i)),
                    ),
                )?;
            }
        }
        Ok(())
    })
}

/// The packed LU factors, LAPACK's 0-based pivots and the row order of the
/// column-major `m x n` matrices `a` (see [`LinalgOp::LuFactor`]).
fn lu_factor(s: &Arc<GpuStream>, g: &Geometry, a: CudaStorage) -> Result<Vec<CudaStorage>> {
    let (m, n, count) = (g.m, g.n, g.count());
    let k = m.min(n);
    let pivots = CudaStorage::alloc(Dtype::I64, count * k, s)?;
    let info = CudaStorage::alloc(Dtype::I32, count, s)?;
    getrf_each(s, g, &a, &pivots, &info)?;
    // LAPACK's 1-based swaps become 0-based ones and the row order they make.
    let swaps = match super::download(s, pivots.ptr_at(0), Dtype::I64, count * k)?.buffer() {
        CpuBuffer::I64(v) => v.as_slice().to_vec(),
        _ => unreachable!("an int64 buffer"),
    };
    let mut zero_based = Vec::with_capacity(count * k);
    let mut order = Vec::with_capacity(count * m);
    for matrix in swaps.chunks(k.max(1)).take(count) {
        let start = order.len();
        order.extend(0..m as u32);
        for (i, &p) in matrix.iter().enumerate() {
            zero_based.push((p - 1) as u32);
            order.swap(start + i, start + (p - 1) as usize);
        }
    }
    // Row j of L U is row order[j] of A; the output wants A = (L U)[p].
    let mut inverse = vec![0u32; order.len()];
    for (b, chunk) in order.chunks(m).enumerate() {
        for (j, &row) in chunk.iter().enumerate() {
            inverse[b * m + row as usize] = j as u32;
        }
    }
    let packed = row_major(s, &a, &g.batch, (m, n), m, m * n)?;
    Ok(vec![
        packed,
        upload(s, CpuStorage::new(CpuBuffer::U32(zero_based.into())))?,
        upload(s, CpuStorage::new(CpuBuffer::U32(inverse.into())))?,
    ])
}

/// The Bunch–Kaufman factors (packed, lower triangle, zeros above) and
/// LAPACK's 1-based int32 pivots of the symmetric column-major matrices `a`,
/// read from their lower triangles (see [`LinalgOp::LdlFactor`]). A zero
/// block of `D` is reported by LAPACK's status, not raised (PyTorch's
/// `ldl_factor` does not either).
fn ldl_factor(s: &Arc<GpuStream>, g: &Geometry, a: CudaStorage) -> Result<Vec<CudaStorage>> {
    let (n, count) = (g.n, g.count());
    let pivots = CudaStorage::alloc(Dtype::I32, count * n, s)?;
    let info = CudaStorage::alloc(Dtype::I32, count, s)?;
    let f64 = a.dtype() == Dtype::F64;
    let ni = n as c_int;
    with_handles(s, |h, api| {
        let mut lwork: c_int = 0;
        // SAFETY: every pointer is a live device buffer of the stated size;
        // the workspace holds `lwork` elements, as cuSOLVER asked.
        unsafe {
            let status = if f64 {
                (api.cusolverDnDsytrf_bufferSize)(h.solver, ni, device(a.ptr_at(0)), ni, &mut lwork)
            } else {
                (api.cusolverDnSsytrf_bufferSize)(h.solver, ni, device(a.ptr_at(0)), ni, &mut lwork)
            };
            check("sytrf_bufferSize", status)?;
            let lwork = lwork.max(1);
            let work = Workspace::new(s, lwork as usize * a.dtype().size(), 0)?;
            for i in 0..count {
                let (matrix, piv, status) = (a.ptr_at(i * n * n), device(pivots.ptr_at(i * n)), device(info.ptr_at(i)));
                let status = if f64 {
                    (api.cusolverDnDsytrf)(
                        h.solver,
                        solver::LOWER,
                        ni,
                        device(matrix),
                        ni,
                        piv,
                        device(work.device.ptr()),
                        lwork,
                        status,
                    )
                } else {
                    (api.cusolverDnSsytrf)(
                        h.solver,
                        solver::LOWER,
                        ni,
                        device(matrix),
                        ni,
                        piv,
                        device(work.device.ptr()),
                        lwork,
                        status,
                    )
                };
                check("sytrf", status)?;
            }
        }
        Ok(())
    })?;
    let packed = row_major(s, &a, &g.batch, (n, n), n, n * n)?;
    keep_triangle(s, &packed, (n, n), false)?;
    Ok(vec![packed, pivots])
}

/// The reduced QR factors of the column-major `m x n` matrices `a`:
/// Householder QR, `R` read off, then the reflectors formed into `Q`.
fn qr(s: &Arc<GpuStream>, g: &Geometry, a: CudaStorage) -> Result<Vec<CudaStorage>> {
    let (m, n, count) = (g.m, g.n, g.count());
    let k = m.min(n);
    let dtype = a.dtype();
    let tau = CudaStorage::alloc(dtype, count * k, s)?;
    let info = CudaStorage::alloc(Dtype::I32, count, s)?;
    if count > 1 && m >= n && n <= BATCHED_LU_MAX {
        // Many small matrices: cuBLAS's batched Householder QR.
        let blas = blas_api()?;
        let a_ptrs = pointers(s, &a, count, m * n)?;
        let tau_ptrs = pointers(s, &tau, count, k)?;
        let mut arguments: c_int = 0;
        with_handles(s, |h, _| {
            let (mc, nc, cc) = (m as c_int, n as c_int, count as c_int);
            // SAFETY: the pointer arrays hold `count` live matrices and tau
            // vectors of the stated sizes.
            let status = unsafe {
                if dtype == Dtype::F64 {
                    (blas.cublasDgeqrfBatched)(
                        h.blas,
                        mc,
                        nc,
                        device(a_ptrs.ptr_at(0)),
                        mc,
                        device(tau_ptrs.ptr_at(0)),
                        &mut arguments,
                        cc,
                    )
                } else {
                    (blas.cublasSgeqrfBatched)(
                        h.blas,
                        mc,
                        nc,
                        device(a_ptrs.ptr_at(0)),
                        mc,
                        device(tau_ptrs.ptr_at(0)),
                        &mut arguments,
                        cc,
                    )
                }
            };
            check("geqrfBatched", status)
        })?;
    } else {
        geqrf_each(s, g, &a, &tau, &info)?;
    }
    form_q_and_r(s, g, a, &tau, &info)
}

/// cuSOLVER's Householder QR of each column-major `m x n` matrix of `a`, in
/// place, the scale factors in `tau`.
fn geqrf_each(s: &Arc<GpuStream>, g: &Geometry, a: &CudaStorage, tau: &CudaStorage, info: &CudaStorage) -> Result<()> {
    let (m, n, count) = (g.m, g.n, g.count());
    let k = m.min(n);
    let dt = data_type(a.dtype());
    let (mi, ni) = (m as i64, n as i64);
    with_handles(s, |h, api| {
        let (mut device_bytes, mut host_bytes) = (0usize, 0usize);
        // SAFETY: every pointer is a live device buffer of the stated size;
        // the workspace is as large as cuSOLVER asked.
        unsafe {
            check(
                "geqrf_bufferSize",
                (api.cusolverDnXgeqrf_bufferSize)(
                    h.solver,
                    h.params,
                    mi,
                    ni,
                    dt,
                    device(a.ptr_at(0)),
                    mi,
                    dt,
                    device(tau.ptr_at(0)),
                    dt,
                    &mut device_bytes,
                    &mut host_bytes,
                ),
            )?;
            let mut work = Workspace::new(s, device_bytes, host_bytes)?;
            for i in 0..count {
                check(
                    "geqrf",
                    (api.cusolverDnXgeqrf)(
                        h.solver,
                        h.params,
                        mi,
                        ni,
                        dt,
                        device(a.ptr_at(i * m * n)),
                        mi,
                        dt,
                        device(tau.ptr_at(i * k)),
                        dt,
                        work.device_ptr(),
                        work.device_bytes,
                        work.host_ptr(),
                        host_bytes,
                        device(info.ptr_at(i)),
                    ),
                )?;
            }
        }
        Ok(())
    })
}

/// `Q` (the reflectors of the factored `a` formed into `m x k` matrices)
/// and `R` (the first `k` rows, upper triangle), row-major.
fn form_q_and_r(
    s: &Arc<GpuStream>,
    g: &Geometry,
    a: CudaStorage,
    tau: &CudaStorage,
    info: &CudaStorage,
) -> Result<Vec<CudaStorage>> {
    let (m, n, count) = (g.m, g.n, g.count());
    let k = m.min(n);
    let dtype = a.dtype();
    // R: the first k rows, upper triangle.
    let r = row_major(s, &a, &g.batch, (k, n), m, m * n)?;
    keep_triangle(s, &r, (k, n), true)?;
    with_handles(s, |h, api| {
        let (mc, kc) = (m as c_int, k as c_int);
        let mut lwork: c_int = 0;
        // SAFETY: as above; orgqr overwrites the first k columns of each matrix.
        unsafe {
            if dtype == Dtype::F64 {
                check(
                    "orgqr_bufferSize",
                    (api.cusolverDnDorgqr_bufferSize)(
                        h.solver,
                        mc,
                        kc,
                        kc,
                        device(a.ptr_at(0)),
                        mc,
                        device(tau.ptr_at(0)),
                        &mut lwork,
                    ),
                )?;
            } else {
                check(
                    "orgqr_bufferSize",
                    (api.cusolverDnSorgqr_bufferSize)(
                        h.solver,
                        mc,
                        kc,
                        kc,
                        device(a.ptr_at(0)),
                        mc,
                        device(tau.ptr_at(0)),
                        &mut lwork,
                    ),
                )?;
            }
            let work = CudaStorage::alloc(dtype, (lwork as usize).max(1), s)?;
            for i in 0..count {
                let (am, t, inf) = (a.ptr_at(i * m * n), tau.ptr_at(i * k), info.ptr_at(i));
                if dtype == Dtype::F64 {
                    check(
                        "orgqr",
                        (api.cusolverDnDorgqr)(
                            h.solver,
                            mc,
                            kc,
                            kc,
                            device(am),
                            mc,
                            device(t),
                            device(work.ptr_at(0)),
                            lwork,
                            device(inf),
                        ),
                    )?;
                } else {
                    check(
                        "orgqr",
                        (api.cusolverDnSorgqr)(
                            h.solver,
                            mc,
                            kc,
                            kc,
                            device(am),
                            mc,
                            device(t),
                            device(work.ptr_at(0)),
                            lwork,
                            device(inf),
                        ),
                    )?;
                }
            }
        }
        Ok(())
    })?;
    let q = row_major(s, &a, &g.batch, (m, k), m, m * n)?;
    Ok(vec![q, r])
}

/// Which of the contiguous matrices of `per` elements in `a` hold a NaN or
/// an infinity (1) or not (0), on the device. The iterative routines give
/// NaNs for them, as the CPU backend does (whatever cuSOLVER makes of them).
fn non_finite(s: &Arc<GpuStream>, a: &CudaStorage, count: usize, per: usize) -> Result<CudaStorage> {
    let flags = upload(s, CpuStorage::new(CpuBuffer::I32(vec![0; count].into())))?;
    let total = count * per;
    let args = Args::new().arg(a.ptr_at(0)).arg(flags.ptr_at(0)).arg(total as i64).arg(per as i64);
    launch(Family::Linalg, a.dtype(), "mark_non_finite", (grid_for(total, 1)?, 1, 1), (BLOCK, 1, 1), s, args)?;
    Ok(flags)
}

/// Buffers of NaNs in place of the outputs of the matrices whose routine
/// did not converge (`info != 0`) or that were not finite (`flags != 0`,
/// from [`non_finite`]), as the CPU backend gives for them.
fn nan_where_failed(
    s: &Arc<GpuStream>,
    info: &CudaStorage,
    flags: &CudaStorage,
    outputs: &[(&CudaStorage, usize)],
) -> Result<()> {
    let (info, flags) = (read_i32(s, info)?, read_i32(s, flags)?);
    let failed = info.iter().zip(&flags).enumerate().filter(|(_, (&i, &f))| i != 0 || f != 0);
    for (i, _) in failed {
        for &(out, per) in outputs {
            let nan = match out.dtype() {
                Dtype::F64 => CpuStorage::new(CpuBuffer::F64(vec![f64::NAN; per].into())),
                Dtype::C64 => {
                    CpuStorage::new(CpuBuffer::C64(vec![num_complex::Complex32::new(f32::NAN, f32::NAN); per].into()))
                }
                _ => CpuStorage::new(CpuBuffer::F32(vec![f32::NAN; per].into())),
            };
            let bytes = nan.bytes();
            // SAFETY: the slot lies inside `out`; pageable memory is staged.
            unsafe { sys::cuMemcpyHtoDAsync_v2(out.ptr_at(i * per), bytes.as_ptr() as *const _, bytes.len(), s.raw) }
                .result()
                .map_err(super::device::driver_error("linalg"))?;
        }
    }
    Ok(())
}

/// The eigenvalues (ascending) and, with `vectors`, the eigenvectors of the
/// symmetric column-major matrices `a`, reading the lower (or `upper`)
/// triangle.
fn eigh(s: &Arc<GpuStream>, g: &Geometry, a: CudaStorage, upper: bool, vectors: bool) -> Result<Vec<CudaStorage>> {
    let (n, count) = (g.n, g.count());
    let dtype = a.dtype();
    let dt = data_type(dtype);
    let wt = data_type(real_dtype(dtype));
    let w = CudaStorage::alloc(real_dtype(dtype), count * n, s)?;
    let info = CudaStorage::alloc(Dtype::I32, count, s)?;
    let jobz = if vectors { solver::VECTORS } else { solver::NO_VECTORS };
    let uplo = if upper { solver::UPPER } else { solver::LOWER };
    let flags = non_finite(s, &a, count, n * n)?;
    with_handles(s, |h, api| {
        let ni = n as i64;
        let (mut device_bytes, mut host_bytes) = (0usize, 0usize);
        // SAFETY: every pointer is a live device buffer of the stated size;
        // the workspace is as large as cuSOLVER asked.
        unsafe {
            check(
                "syevd_bufferSize",
                (api.cusolverDnXsyevd_bufferSize)(
                    h.solver,
                    h.params,
                    jobz,
                    uplo,
                    ni,
                    dt,
                    device(a.ptr_at(0)),
                    ni,
                    wt,
                    device(w.ptr_at(0)),
                    dt,
                    &mut device_bytes,
                    &mut host_bytes,
                ),
            )?;
            let mut work = Workspace::new(s, device_bytes, host_bytes)?;
            for i in 0..count {
                check(
                    "syevd",
                    (api.cusolverDnXsyevd)(
                        h.solver,
                        h.params,
                        jobz,
                        uplo,
                        ni,
                        dt,
                        device(a.ptr_at(i * n * n)),
                        ni,
                        wt,
                        device(w.ptr_at(i * n)),
                        dt,
                        work.device_ptr(),
                        work.device_bytes,
                        work.host_ptr(),
                        host_bytes,
                        device(info.ptr_at(i)),
                    ),
                )?;
            }
        }
        Ok(())
    })?;
    let mut outputs = vec![w];
    if vectors {
        outputs.push(row_major(s, &a, &g.batch, (n, n), n, n * n)?);
    }
    let per = [n, n * n];
    nan_where_failed(s, &info, &flags, &outputs.iter().zip(per).collect::<Vec<_>>())?;
    Ok(outputs)
}

/// The singular values (descending) and, with `compute_uv`, the full `U`
/// and `Vt` of the column-major `m x n` matrices `a`. cuSOLVER's SVD wants
/// `m >= n`: a wide matrix is decomposed through its transpose, which is
/// its row-major copy, and the factors swap roles.
fn svd(s: &Arc<GpuStream>, g: &Geometry, a: CudaStorage, compute_uv: bool) -> Result<Vec<CudaStorage>> {
    let (m, n, count) = (g.m, g.n, g.count());
    let wide = m < n;
    let (rows, cols) = if wide { (n, m) } else { (m, n) };
    let work_matrix = if wide { row_major(s, &a, &g.batch, (m, n), m, m * n)? } else { a };
    let flags = non_finite(s, &work_matrix, count, m * n)?;
    let k = cols;
    let dtype = work_matrix.dtype();
    let dt = data_type(dtype);
    let st = data_type(real_dtype(dtype));
    let sv = CudaStorage::alloc(real_dtype(dtype), count * k, s)?;
    let (u_len, vt_len) = if compute_uv { (rows * rows, cols * cols) } else { (1, 1) };
    let u = CudaStorage::alloc(dtype, count * u_len, s)?;
    let vt = CudaStorage::alloc(dtype, count * vt_len, s)?;
    let info = CudaStorage::alloc(Dtype::I32, count, s)?;
    let job = (if compute_uv { b'A' } else { b'N' }) as std::ffi::c_char;
    with_handles(s, |h, api| {
        let (ri, ci) = (rows as i64, cols as i64);
        let (ldu, ldvt) = if compute_uv { (ri, ci) } else { (1, 1) };
        let (mut device_bytes, mut host_bytes) = (0usize, 0usize);
        // SAFETY: every pointer is a live device buffer of the stated size;
        // the workspace is as large as cuSOLVER asked.
        unsafe {
            check(
                "gesvd_bufferSize",
                (api.cusolverDnXgesvd_bufferSize)(
                    h.solver,
                    h.params,
                    job,
                    job,
                    ri,
                    ci,
                    dt,
                    device(work_matrix.ptr_at(0)),
                    ri,
                    st,
                    device(sv.ptr_at(0)),
                    dt,
                    device(u.ptr_at(0)),
                    ldu,
                    dt,
                    device(vt.ptr_at(0)),
                    ldvt,
                    dt,
                    &mut device_bytes,
                    &mut host_bytes,
                ),
            )?;
            let mut work = Workspace::new(s, device_bytes, host_bytes)?;
            for i in 0..count {
                let (um, vm) =
                    if compute_uv { (u.ptr_at(i * u_len), vt.ptr_at(i * vt_len)) } else { (u.ptr_at(0), vt.ptr_at(0)) };
                check(
                    "gesvd",
                    (api.cusolverDnXgesvd)(
                        h.solver,
                        h.params,
                        job,
                        job,
                        ri,
                        ci,
                        dt,
                        device(work_matrix.ptr_at(i * m * n)),
                        ri,
                        st,
                        device(sv.ptr_at(i * k)),
                        dt,
                        device(um),
                        ldu,
                        dt,
                        device(vm),
                        ldvt,
                        dt,
                        work.device_ptr(),
                        work.device_bytes,
                        work.host_ptr(),
                        host_bytes,
                        device(info.ptr_at(i)),
                    ),
                )?;
            }
        }
        Ok(())
    })?;
    let outputs = if compute_uv {
        // Tall: U and Vt are column-major. Wide: A^T = U' S Vt', so
        // U = Vt'^T (Vt' read row-major) and Vt = U'^T (U' read row-major);
        // for complex A too (Vt' = V'^H: U = conj(V'), and Vt = U'^T).
        let (u_out, vt_out) = if wide {
            (vt, u)
        } else {
            (row_major(s, &u, &g.batch, (m, m), m, m * m)?, row_major(s, &vt, &g.batch, (n, n), n, n * n)?)
        };
        vec![u_out, sv, vt_out]
    } else {
        vec![sv]
    };
    let per: Vec<usize> = if compute_uv { vec![m * m, k, n * n] } else { vec![k] };
    nan_where_failed(s, &info, &flags, &outputs.iter().zip(per).collect::<Vec<_>>())?;
    Ok(outputs)
}

/// The eigenvalues and, with `vectors`, the unit-norm right eigenvectors
/// (columns, largest component real: LAPACK's `geev`) of the general
/// column-major matrices `a`, as complex64, in `geev`'s order.
fn eig(s: &Arc<GpuStream>, g: &Geometry, a: CudaStorage, vectors: bool) -> Result<Vec<CudaStorage>> {
    let (n, count) = (g.n, g.count());
    let dtype = a.dtype();
    let complex = dtype == Dtype::C64;
    let dt = data_type(dtype);
    // Real matrices give complex eigenvalues (as (re, im) pairs of their
    // type) and LAPACK's packed real vectors.
    let (w_type, w) = if complex {
        (solver::C_32F, CudaStorage::alloc(Dtype::C64, count * n, s)?)
    } else {
        let w_type = if dtype == Dtype::F64 { solver::C_64F } else { solver::C_32F };
        (w_type, CudaStorage::alloc(dtype, count * 2 * n, s)?)
    };
    let vr = CudaStorage::alloc(dtype, if vectors { count * n * n } else { 1 }, s)?;
    let info = CudaStorage::alloc(Dtype::I32, count, s)?;
    let jobvr = if vectors { solver::VECTORS } else { solver::NO_VECTORS };
    let ldvr = if vectors { n as i64 } else { 1 };
    let w_per = if complex { n } else { 2 * n };
    let flags = non_finite(s, &a, count, n * n)?;
    with_handles(s, |h, api| {
        let ni = n as i64;
        let (mut device_bytes, mut host_bytes) = (0usize, 0usize);
        // SAFETY: every pointer is a live device buffer of the stated size
        // (no left vectors are asked for); the workspace is as large as
        // cuSOLVER asked.
        unsafe {
            check(
                "geev_bufferSize",
                (api.cusolverDnXgeev_bufferSize)(
                    h.solver,
                    h.params,
                    solver::NO_VECTORS,
                    jobvr,
                    ni,
                    dt,
                    device(a.ptr_at(0)),
                    ni,
                    w_type,
                    device(w.ptr_at(0)),
                    dt,
                    null_mut(),
                    1,
                    dt,
                    device(vr.ptr_at(0)),
                    ldvr,
                    dt,
                    &mut device_bytes,
                    &mut host_bytes,
                ),
            )?;
            let mut work = Workspace::new(s, device_bytes, host_bytes)?;
            for i in 0..count {
                let v = if vectors { vr.ptr_at(i * n * n) } else { vr.ptr_at(0) };
                check(
                    "geev",
                    (api.cusolverDnXgeev)(
                        h.solver,
                        h.params,
                        solver::NO_VECTORS,
                        jobvr,
                        ni,
                        dt,
                        device(a.ptr_at(i * n * n)),
                        ni,
                        w_type,
                        device(w.ptr_at(i * w_per)),
                        dt,
                        null_mut(),
                        1,
                        dt,
                        device(v),
                        ldvr,
                        dt,
                        work.device_ptr(),
                        work.device_bytes,
                        work.host_ptr(),
                        host_bytes,
                        device(info.ptr_at(i)),
                    ),
                )?;
            }
        }
        Ok(())
    })?;
    let mut outputs = Vec::with_capacity(2);
    if complex {
        outputs.push(w);
        if vectors {
            outputs.push(row_major(s, &vr, &g.batch, (n, n), n, n * n)?);
        }
    } else {
        let values = CudaStorage::alloc(Dtype::C64, count * n, s)?;
        let total = (count * n) as i64;
        let args = Args::new().arg(w.ptr_at(0)).arg(values.ptr_at(0)).arg(total);
        launch(Family::Linalg, dtype, "eig_values", (grid_for(count * n, 1)?, 1, 1), (BLOCK, 1, 1), s, args)?;
        outputs.push(values);
        if vectors {
            let unpacked = CudaStorage::alloc(Dtype::C64, count * n * n, s)?;
            let total = count * n * n;
            let args =
                Args::new().arg(w.ptr_at(0)).arg(vr.ptr_at(0)).arg(unpacked.ptr_at(0)).arg(total as i64).arg(n as i64);
            launch(Family::Linalg, dtype, "eig_vectors", (grid_for(total, 1)?, 1, 1), (BLOCK, 1, 1), s, args)?;
            outputs.push(unpacked);
        }
    }
    let per = [n, n * n];
    nan_where_failed(s, &info, &flags, &outputs.iter().zip(per).collect::<Vec<_>>())?;
    Ok(outputs)
}
