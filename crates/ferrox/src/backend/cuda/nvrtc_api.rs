//! The NVRTC functions ferrox calls, bound from the copy `libraries.rs`
//! opened (`bind.rs` says why).

use super::bind::bound_functions;
use super::libraries::{self, CudaLibrary};
use cudarc::nvrtc::sys::{nvrtcProgram, nvrtcResult};
use std::ffi::{c_char, c_int};
use std::sync::OnceLock;

bound_functions! {
    /// NVRTC's functions, each bound from the loaded library.
    Api -> nvrtcResult {
        nvrtcVersion(major: *mut c_int, minor: *mut c_int);
        nvrtcCreateProgram(prog: *mut nvrtcProgram, src: *const c_char, name: *const c_char, num_headers: c_int, headers: *const *const c_char, include_names: *const *const c_char);
        nvrtcCompileProgram(prog: nvrtcProgram, num_options: c_int, options: *const *const c_char);
        nvrtcGetCUBINSize(prog: nvrtcProgram, size: *mut usize);
        nvrtcGetCUBIN(prog: nvrtcProgram, cubin: *mut c_char);
        nvrtcGetProgramLogSize(prog: nvrtcProgram, size: *mut usize);
        nvrtcGetProgramLog(prog: nvrtcProgram, log: *mut c_char);
        nvrtcDestroyProgram(prog: *mut nvrtcProgram);
    }
}

/// The bound functions, or why NVRTC cannot be used (missing, or lacking a
/// function); bound once.
pub(crate) fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| libraries::load(CudaLibrary::Nvrtc).and_then(Api::bind)).as_ref().map_err(Clone::clone)
}

/// `Ok` for `NVRTC_SUCCESS`, else the status.
pub(crate) fn check(r: nvrtcResult) -> Result<(), nvrtcResult> {
    match r {
        nvrtcResult::NVRTC_SUCCESS => Ok(()),
        e => Err(e),
    }
}
