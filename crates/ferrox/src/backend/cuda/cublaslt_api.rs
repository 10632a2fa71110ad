//! The cuBLASLt functions ferrox calls, bound from the copy `libraries.rs`
//! opened (`bind.rs` says why).

use super::bind::bound_functions;
use super::libraries::{self, CudaLibrary};
use cudarc::cublaslt::sys::*;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

bound_functions! {
    /// cuBLASLt's functions, each bound from the loaded library.
    Api -> cublasStatus_t {
        cublasLtCreate(handle: *mut cublasLtHandle_t);
        cublasLtMatmulDescCreate(desc: *mut cublasLtMatmulDesc_t, compute: cublasComputeType_t, scale: cudaDataType_t);
        cublasLtMatmulDescSetAttribute(desc: cublasLtMatmulDesc_t, attr: cublasLtMatmulDescAttributes_t, buf: *const c_void, size: usize);
        cublasLtMatrixLayoutCreate(layout: *mut cublasLtMatrixLayout_t, dtype: cudaDataType, rows: u64, cols: u64, ld: i64);
        cublasLtMatrixLayoutSetAttribute(layout: cublasLtMatrixLayout_t, attr: cublasLtMatrixLayoutAttribute_t, buf: *const c_void, size: usize);
        cublasLtMatmulPreferenceCreate(pref: *mut cublasLtMatmulPreference_t);
        cublasLtMatmulPreferenceSetAttribute(pref: cublasLtMatmulPreference_t, attr: cublasLtMatmulPreferenceAttributes_t, buf: *const c_void, size: usize);
        cublasLtMatmulPreferenceDestroy(pref: cublasLtMatmulPreference_t);
        cublasLtMatmulAlgoGetHeuristic(handle: cublasLtHandle_t, desc: cublasLtMatmulDesc_t, a: cublasLtMatrixLayout_t, b: cublasLtMatrixLayout_t, c: cublasLtMatrixLayout_t, d: cublasLtMatrixLayout_t, pref: cublasLtMatmulPreference_t, requested: c_int, results: *mut cublasLtMatmulHeuristicResult_t, returned: *mut c_int);
        cublasLtMatmul(handle: cublasLtHandle_t, desc: cublasLtMatmulDesc_t, alpha: *const c_void, a: *const c_void, a_desc: cublasLtMatrixLayout_t, b: *const c_void, b_desc: cublasLtMatrixLayout_t, beta: *const c_void, c: *const c_void, c_desc: cublasLtMatrixLayout_t, d: *mut c_void, d_desc: cublasLtMatrixLayout_t, algo: *const cublasLtMatmulAlgo_t, workspace: *mut c_void, workspace_size: usize, stream: cudaStream_t);
    }
}

/// The bound functions, or why cuBLASLt cannot be used (missing, or lacking
/// a function); bound once.
pub(crate) fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| libraries::load(CudaLibrary::CublasLt).and_then(Api::bind)).as_ref().map_err(Clone::clone)
}

/// `Ok` for `CUBLAS_STATUS_SUCCESS`, else the status.
pub(crate) fn check(r: cublasStatus_t) -> Result<(), cublasStatus_t> {
    match r {
        cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
        e => Err(e),
    }
}

/// The bound functions, with a missing library as an error message.
fn bound() -> Result<&'static Api, String> {
    api().map_err(|e| format!("cuBLASLt is missing: {e}"))
}

/// `r` as a result naming the failed call.
fn status(call: &str, r: cublasStatus_t) -> Result<(), String> {
    check(r).map_err(|e| format!("{call} failed: {e:?}"))
}

/// A new cuBLASLt handle.
pub(crate) fn create_handle() -> Result<cublasLtHandle_t, String> {
    let mut h = std::ptr::null_mut();
    // SAFETY: a plain out-parameter.
    status("cublasLtCreate", unsafe { (bound()?.cublasLtCreate)(&mut h) })?;
    Ok(h)
}

/// A new matrix-product descriptor.
pub(crate) fn create_matmul_desc(
    compute: cublasComputeType_t,
    scale: cudaDataType_t,
) -> Result<cublasLtMatmulDesc_t, String> {
    let mut d = std::ptr::null_mut();
    // SAFETY: a plain out-parameter.
    status("cublasLtMatmulDescCreate", unsafe { (bound()?.cublasLtMatmulDescCreate)(&mut d, compute, scale) })?;
    Ok(d)
}

/// Sets a descriptor attribute from `size` bytes at `buf`.
///
/// # Safety
/// `desc` is live and `buf` holds `size` bytes of the attribute's type.
pub(crate) unsafe fn set_matmul_desc_attribute(
    desc: cublasLtMatmulDesc_t,
    attr: cublasLtMatmulDescAttributes_t,
    buf: *const c_void,
    size: usize,
) -> Result<(), String> {
    status("cublasLtMatmulDescSetAttribute", (bound()?.cublasLtMatmulDescSetAttribute)(desc, attr, buf, size))
}

/// A new column-major matrix layout.
pub(crate) fn create_matrix_layout(
    dt: cudaDataType,
    rows: u64,
    cols: u64,
    ld: i64,
) -> Result<cublasLtMatrixLayout_t, String> {
    let mut l = std::ptr::null_mut();
    // SAFETY: a plain out-parameter.
    status("cublasLtMatrixLayoutCreate", unsafe { (bound()?.cublasLtMatrixLayoutCreate)(&mut l, dt, rows, cols, ld) })?;
    Ok(l)
}

/// Sets a layout attribute from `size` bytes at `buf`.
///
/// # Safety
/// `layout` is live and `buf` holds `size` bytes of the attribute's type.
pub(crate) unsafe fn set_matrix_layout_attribute(
    layout: cublasLtMatrixLayout_t,
    attr: cublasLtMatrixLayoutAttribute_t,
    buf: *const c_void,
    size: usize,
) -> Result<(), String> {
    status("cublasLtMatrixLayoutSetAttribute", (bound()?.cublasLtMatrixLayoutSetAttribute)(layout, attr, buf, size))
}

/// A new algorithm-search preference.
pub(crate) fn create_matmul_pref() -> Result<cublasLtMatmulPreference_t, String> {
    let mut p = std::ptr::null_mut();
    // SAFETY: a plain out-parameter.
    status("cublasLtMatmulPreferenceCreate", unsafe { (bound()?.cublasLtMatmulPreferenceCreate)(&mut p) })?;
    Ok(p)
}

/// Sets a preference attribute from `size` bytes at `buf`.
///
/// # Safety
/// `pref` is live and `buf` holds `size` bytes of the attribute's type.
pub(crate) unsafe fn set_matmul_pref_attribute(
    pref: cublasLtMatmulPreference_t,
    attr: cublasLtMatmulPreferenceAttributes_t,
    buf: *const c_void,
    size: usize,
) -> Result<(), String> {
    status(
        "cublasLtMatmulPreferenceSetAttribute",
        (bound()?.cublasLtMatmulPreferenceSetAttribute)(pref, attr, buf, size),
    )
}

/// Destroys a preference.
///
/// # Safety
/// `pref` is live and not used afterwards.
pub(crate) unsafe fn destroy_matmul_pref(pref: cublasLtMatmulPreference_t) -> Result<(), String> {
    status("cublasLtMatmulPreferenceDestroy", (bound()?.cublasLtMatmulPreferenceDestroy)(pref))
}

/// cuBLASLt's first-choice algorithm for the described product.
///
/// # Safety
/// Every handle and descriptor is live.
pub(crate) unsafe fn get_matmul_algo_heuristic(
    handle: cublasLtHandle_t,
    desc: cublasLtMatmulDesc_t,
    a: cublasLtMatrixLayout_t,
    b: cublasLtMatrixLayout_t,
    c: cublasLtMatrixLayout_t,
    d: cublasLtMatrixLayout_t,
    pref: cublasLtMatmulPreference_t,
) -> Result<cublasLtMatmulHeuristicResult_t, String> {
    let mut result = std::mem::MaybeUninit::<cublasLtMatmulHeuristicResult_t>::zeroed();
    let mut count: c_int = 0;
    let f = bound()?.cublasLtMatmulAlgoGetHeuristic;
    status("cublasLtMatmulAlgoGetHeuristic", f(handle, desc, a, b, c, d, pref, 1, result.as_mut_ptr(), &mut count))?;
    if count == 0 {
        return Err("cublasLtMatmulAlgoGetHeuristic found no algorithm".to_string());
    }
    Ok(result.assume_init())
}

/// `d = alpha a b + beta c` with a chosen algorithm, queued on `stream`.
///
/// # Safety
/// Pointers name live device buffers of the described shapes; every handle
/// and descriptor is live.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn matmul(
    handle: cublasLtHandle_t,
    desc: cublasLtMatmulDesc_t,
    alpha: *const c_void,
    beta: *const c_void,
    a: *const c_void,
    a_desc: cublasLtMatrixLayout_t,
    b: *const c_void,
    b_desc: cublasLtMatrixLayout_t,
    c: *const c_void,
    c_desc: cublasLtMatrixLayout_t,
    d: *mut c_void,
    d_desc: cublasLtMatrixLayout_t,
    algo: *const cublasLtMatmulAlgo_t,
    workspace: *mut c_void,
    workspace_size: usize,
    stream: cudaStream_t,
) -> Result<(), String> {
    let f = bound()?.cublasLtMatmul;
    status(
        "cublasLtMatmul",
        f(
            handle,
            desc,
            alpha,
            a,
            a_desc,
            b,
            b_desc,
            beta,
            c,
            c_desc,
            d,
            d_desc,
            algo,
            workspace,
            workspace_size,
            stream,
        ),
    )
}
