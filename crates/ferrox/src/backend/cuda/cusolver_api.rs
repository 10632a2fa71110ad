//! The cuSOLVER (dense) functions ferrox calls, bound from the copy
//! `libraries.rs` opened (`bind.rs` says why), with the few constants of
//! `cusolverDn.h` and `cublas_api.h` they take. The 64-bit generic API
//! (`cusolverDnX…`) where it exists; the typed one for `orgqr`, `sytrf`
//! and the batched Cholesky.

use super::bind::bound_functions;
use super::libraries::{self, CudaLibrary};
use cudarc::driver::sys::CUstream;
use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

/// A cuSOLVER handle (`cusolverDnHandle_t`).
pub(crate) type Handle = *mut c_void;
/// The generic API's options (`cusolverDnParams_t`).
pub(crate) type Params = *mut c_void;
/// `cusolverStatus_t`: 0 is success.
pub(crate) type Status = c_int;

/// `cudaDataType` values.
pub(crate) const R_32F: c_int = 0;
pub(crate) const R_64F: c_int = 1;
pub(crate) const C_32F: c_int = 4;
pub(crate) const C_64F: c_int = 5;
/// `cublasFillMode_t` values.
pub(crate) const LOWER: c_int = 0;
pub(crate) const UPPER: c_int = 1;
/// `cublasOperation_t` values.
pub(crate) const NO_TRANSPOSE: c_int = 0;
/// `cublasDiagType_t`: the diagonal is stored.
pub(crate) const NON_UNIT: c_int = 0;
/// `cusolverEigMode_t` values.
pub(crate) const NO_VECTORS: c_int = 0;
pub(crate) const VECTORS: c_int = 1;

bound_functions! {
    /// cuSOLVER's functions, each bound from the loaded library.
    Api -> Status {
        cusolverDnCreate(handle: *mut Handle);
        cusolverDnSetStream(handle: Handle, stream: CUstream);
        cusolverDnCreateParams(params: *mut Params);
        cusolverDnSpotrfBatched(handle: Handle, uplo: c_int, n: c_int, a: *mut *mut f32, lda: c_int, info: *mut c_int, batch: c_int);
        cusolverDnDpotrfBatched(handle: Handle, uplo: c_int, n: c_int, a: *mut *mut f64, lda: c_int, info: *mut c_int, batch: c_int);
        cusolverDnXgetrf_bufferSize(handle: Handle, params: Params, m: i64, n: i64, type_a: c_int, a: *const c_void, lda: i64, compute: c_int, device_bytes: *mut usize, host_bytes: *mut usize);
        cusolverDnXgetrf(handle: Handle, params: Params, m: i64, n: i64, type_a: c_int, a: *mut c_void, lda: i64, pivots: *mut i64, compute: c_int, device_work: *mut c_void, device_bytes: usize, host_work: *mut c_void, host_bytes: usize, info: *mut c_int);
        cusolverDnXgetrs(handle: Handle, params: Params, trans: c_int, n: i64, nrhs: i64, type_a: c_int, a: *const c_void, lda: i64, pivots: *const i64, type_b: c_int, b: *mut c_void, ldb: i64, info: *mut c_int);
        cusolverDnXgeqrf_bufferSize(handle: Handle, params: Params, m: i64, n: i64, type_a: c_int, a: *const c_void, lda: i64, type_tau: c_int, tau: *const c_void, compute: c_int, device_bytes: *mut usize, host_bytes: *mut usize);
        cusolverDnXgeqrf(handle: Handle, params: Params, m: i64, n: i64, type_a: c_int, a: *mut c_void, lda: i64, type_tau: c_int, tau: *mut c_void, compute: c_int, device_work: *mut c_void, device_bytes: usize, host_work: *mut c_void, host_bytes: usize, info: *mut c_int);
        cusolverDnSorgqr_bufferSize(handle: Handle, m: c_int, n: c_int, k: c_int, a: *const f32, lda: c_int, tau: *const f32, lwork: *mut c_int);
        cusolverDnDorgqr_bufferSize(handle: Handle, m: c_int, n: c_int, k: c_int, a: *const f64, lda: c_int, tau: *const f64, lwork: *mut c_int);
        cusolverDnSorgqr(handle: Handle, m: c_int, n: c_int, k: c_int, a: *mut f32, lda: c_int, tau: *const f32, work: *mut f32, lwork: c_int, info: *mut c_int);
        cusolverDnDorgqr(handle: Handle, m: c_int, n: c_int, k: c_int, a: *mut f64, lda: c_int, tau: *const f64, work: *mut f64, lwork: c_int, info: *mut c_int);
        cusolverDnXsyevd_bufferSize(handle: Handle, params: Params, jobz: c_int, uplo: c_int, n: i64, type_a: c_int, a: *const c_void, lda: i64, type_w: c_int, w: *const c_void, compute: c_int, device_bytes: *mut usize, host_bytes: *mut usize);
        cusolverDnXsyevd(handle: Handle, params: Params, jobz: c_int, uplo: c_int, n: i64, type_a: c_int, a: *mut c_void, lda: i64, type_w: c_int, w: *mut c_void, compute: c_int, device_work: *mut c_void, device_bytes: usize, host_work: *mut c_void, host_bytes: usize, info: *mut c_int);
        cusolverDnXgesvd_bufferSize(handle: Handle, params: Params, jobu: c_char, jobvt: c_char, m: i64, n: i64, type_a: c_int, a: *const c_void, lda: i64, type_s: c_int, s: *const c_void, type_u: c_int, u: *const c_void, ldu: i64, type_vt: c_int, vt: *const c_void, ldvt: i64, compute: c_int, device_bytes: *mut usize, host_bytes: *mut usize);
        cusolverDnXgesvd(handle: Handle, params: Params, jobu: c_char, jobvt: c_char, m: i64, n: i64, type_a: c_int, a: *mut c_void, lda: i64, type_s: c_int, s: *mut c_void, type_u: c_int, u: *mut c_void, ldu: i64, type_vt: c_int, vt: *mut c_void, ldvt: i64, compute: c_int, device_work: *mut c_void, device_bytes: usize, host_work: *mut c_void, host_bytes: usize, info: *mut c_int);
        cusolverDnXgeev_bufferSize(handle: Handle, params: Params, jobvl: c_int, jobvr: c_int, n: i64, type_a: c_int, a: *const c_void, lda: i64, type_w: c_int, w: *const c_void, type_vl: c_int, vl: *const c_void, ldvl: i64, type_vr: c_int, vr: *const c_void, ldvr: i64, compute: c_int, device_bytes: *mut usize, host_bytes: *mut usize);
        cusolverDnXgeev(handle: Handle, params: Params, jobvl: c_int, jobvr: c_int, n: i64, type_a: c_int, a: *mut c_void, lda: i64, type_w: c_int, w: *mut c_void, type_vl: c_int, vl: *mut c_void, ldvl: i64, type_vr: c_int, vr: *mut c_void, ldvr: i64, compute: c_int, device_work: *mut c_void, device_bytes: usize, host_work: *mut c_void, host_bytes: usize, info: *mut c_int);
        cusolverDnSsytrf_bufferSize(handle: Handle, n: c_int, a: *mut f32, lda: c_int, lwork: *mut c_int);
        cusolverDnDsytrf_bufferSize(handle: Handle, n: c_int, a: *mut f64, lda: c_int, lwork: *mut c_int);
        cusolverDnSsytrf(handle: Handle, uplo: c_int, n: c_int, a: *mut f32, lda: c_int, pivots: *mut c_int, work: *mut f32, lwork: c_int, info: *mut c_int);
        cusolverDnDsytrf(handle: Handle, uplo: c_int, n: c_int, a: *mut f64, lda: c_int, pivots: *mut c_int, work: *mut f64, lwork: c_int, info: *mut c_int);
        cusolverDnXtrtri_bufferSize(handle: Handle, uplo: c_int, diag: c_int, n: i64, type_a: c_int, a: *mut c_void, lda: i64, device_bytes: *mut usize, host_bytes: *mut usize);
        cusolverDnXtrtri(handle: Handle, uplo: c_int, diag: c_int, n: i64, type_a: c_int, a: *mut c_void, lda: i64, device_work: *mut c_void, device_bytes: usize, host_work: *mut c_void, host_bytes: usize, info: *mut c_int);
    }
}

/// The bound functions, or why cuSOLVER cannot be used (missing, or
/// lacking a function); bound once.
pub(crate) fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| libraries::load(CudaLibrary::Cusolver).and_then(Api::bind)).as_ref().map_err(Clone::clone)
}
