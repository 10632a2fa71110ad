//! The cuBLAS functions ferrox calls (batched LU and QR factorizations,
//! LU solves, triangular solves), bound from the copy `libraries.rs` opened
//! (`bind.rs` says why). Matrix products go through cuBLASLt instead.

use super::bind::bound_functions;
use super::libraries::{self, CudaLibrary};
use cudarc::driver::sys::CUstream;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

/// A cuBLAS handle (`cublasHandle_t`).
pub(crate) type Handle = *mut c_void;
/// `cublasStatus_t`: 0 is success.
pub(crate) type Status = c_int;

/// `cublasSideMode_t`: the triangular matrix is on the left.
pub(crate) const LEFT: c_int = 0;

bound_functions! {
    /// cuBLAS's functions, each bound from the loaded library.
    Api -> Status {
        cublasCreate_v2(handle: *mut Handle);
        cublasSetStream_v2(handle: Handle, stream: CUstream);
        cublasSgetrfBatched(handle: Handle, n: c_int, a: *const *mut f32, lda: c_int, pivots: *mut c_int, info: *mut c_int, batch: c_int);
        cublasDgetrfBatched(handle: Handle, n: c_int, a: *const *mut f64, lda: c_int, pivots: *mut c_int, info: *mut c_int, batch: c_int);
        cublasSgetrsBatched(handle: Handle, trans: c_int, n: c_int, nrhs: c_int, a: *const *const f32, lda: c_int, pivots: *const c_int, b: *const *mut f32, ldb: c_int, info: *mut c_int, batch: c_int);
        cublasDgetrsBatched(handle: Handle, trans: c_int, n: c_int, nrhs: c_int, a: *const *const f64, lda: c_int, pivots: *const c_int, b: *const *mut f64, ldb: c_int, info: *mut c_int, batch: c_int);
        cublasSgeqrfBatched(handle: Handle, m: c_int, n: c_int, a: *const *mut f32, lda: c_int, tau: *const *mut f32, info: *mut c_int, batch: c_int);
        cublasDgeqrfBatched(handle: Handle, m: c_int, n: c_int, a: *const *mut f64, lda: c_int, tau: *const *mut f64, info: *mut c_int, batch: c_int);
        cublasStrsmBatched(handle: Handle, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: c_int, n: c_int, alpha: *const f32, a: *const *const f32, lda: c_int, b: *const *mut f32, ldb: c_int, batch: c_int);
        cublasDtrsmBatched(handle: Handle, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: c_int, n: c_int, alpha: *const f64, a: *const *const f64, lda: c_int, b: *const *mut f64, ldb: c_int, batch: c_int);
    }
}

/// The bound functions, or why cuBLAS cannot be used (missing, or lacking
/// a function); bound once.
pub(crate) fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| libraries::load(CudaLibrary::Cublas).and_then(Api::bind)).as_ref().map_err(Clone::clone)
}
