//! The cuFFT functions ferrox calls, bound from the copy `libraries.rs`
//! opened (`bind.rs` says why), with the few constants of `cufft.h` they
//! take.

use super::bind::bound_functions;
use super::libraries::{self, CudaLibrary};
use cudarc::driver::sys::CUstream;
use std::ffi::{c_int, c_longlong, c_void};
use std::sync::OnceLock;

/// A plan (`cufftHandle`).
pub(crate) type Handle = c_int;

/// `cufftResult`: 0 is success.
pub(crate) type Status = c_int;

/// `cufftType` values.
pub(crate) const R2C: c_int = 0x2a;
pub(crate) const C2R: c_int = 0x2c;
pub(crate) const C2C: c_int = 0x29;

/// `cufftExecC2C` directions.
pub(crate) const FORWARD: c_int = -1;
pub(crate) const INVERSE: c_int = 1;

bound_functions! {
    /// cuFFT's functions, each bound from the loaded library.
    Api -> Status {
        cufftCreate(plan: *mut Handle);
        cufftDestroy(plan: Handle);
        cufftSetAutoAllocation(plan: Handle, auto_allocate: c_int);
        cufftMakePlanMany64(plan: Handle, rank: c_int, n: *mut c_longlong, inembed: *mut c_longlong, istride: c_longlong, idist: c_longlong, onembed: *mut c_longlong, ostride: c_longlong, odist: c_longlong, kind: c_int, batch: c_longlong, work_size: *mut usize);
        cufftSetWorkArea(plan: Handle, work_area: *mut c_void);
        cufftSetStream(plan: Handle, stream: CUstream);
        cufftExecC2C(plan: Handle, idata: *mut c_void, odata: *mut c_void, direction: c_int);
        cufftExecR2C(plan: Handle, idata: *mut c_void, odata: *mut c_void);
        cufftExecC2R(plan: Handle, idata: *mut c_void, odata: *mut c_void);
    }
}

/// The bound functions, or why cuFFT cannot be used (missing, or lacking a
/// function); bound once.
pub(crate) fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| libraries::load(CudaLibrary::Cufft).and_then(Api::bind)).as_ref().map_err(Clone::clone)
}
