//! cuDNN's three convolution routines (forward, backward data, backward
//! filter) over packed channels-last tensors, for `conv.rs`.
//!
//! cuDNN is optional: it is opened on first use (found by `libraries.rs`,
//! bound through cudarc's dynamic loading), and [`run`] answers `Ok(false)` when the
//! library is missing, disabled (`FERROX_CUDNN=0`), or declines the problem,
//! so the caller falls back to its own kernels. The fastest algorithm of
//! each distinct problem is measured once (`cudnnFind*AlgorithmEx` on the
//! real operands) and remembered for the process.

use super::allocator::allocate;
use super::cudnn_api::{self, Api};
use super::libraries;
use super::matmul::tf32_allowed;
use super::stream::GpuStream;
use crate::dtype::Dtype;
use crate::error::Result;
use cudarc::cudnn::sys;
use cudarc::driver::sys::CUdeviceptr;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// The most workspace an algorithm may use (bytes).
const MAX_WORKSPACE: usize = 512 << 20;

/// Which cuDNN routine runs, in terms of the forward convolution `y = x ⋆ w`
/// that [`DnnConv`] describes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Routine {
    /// Computes `y` from `x` and `w`.
    Forward,
    /// Computes the input gradient `x` from the output gradient `y` and `w`.
    BackwardData,
    /// Computes the filter gradient `w` from `x` and the output gradient `y`.
    BackwardFilter,
}

/// One forward convolution in cuDNN's terms (dimensions `(N, C, spatial...)`
/// with 2 or 3 spatial axes; every tensor packed channels-last, filters
/// `(K, spatial..., C / groups)` in memory) and the routine to run.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) struct DnnConv {
    /// The routine.
    pub routine: Routine,
    /// The element type of all three tensors.
    pub dtype: Dtype,
    /// `x`: `(N, C, in...)`.
    pub x: Vec<i32>,
    /// `w`: `(K, C / groups, k...)`.
    pub w: Vec<i32>,
    /// `y`: `(N, K, out...)`.
    pub y: Vec<i32>,
    /// Zeros on both sides of each spatial axis of `x`.
    pub pad: Vec<i32>,
    /// Step between output positions.
    pub stride: Vec<i32>,
    /// Spacing between filter taps.
    pub dilation: Vec<i32>,
    /// Channel groups.
    pub groups: i32,
    /// Whether the filters are flipped (a true convolution).
    pub flip: bool,
}

/// Device addresses of `x`, `w` and `y`; the routine's result is the one it
/// writes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pointers {
    /// `x` (input or input gradient).
    pub x: CUdeviceptr,
    /// `w` (filters or filter gradient).
    pub w: CUdeviceptr,
    /// `y` (output or output gradient).
    pub y: CUdeviceptr,
}

/// The algorithm chosen for a problem, with its workspace bytes.
#[derive(Clone, Copy, Debug)]
enum Algo {
    Forward(sys::cudnnConvolutionFwdAlgo_t, usize),
    BackwardData(sys::cudnnConvolutionBwdDataAlgo_t, usize),
    BackwardFilter(sys::cudnnConvolutionBwdFilterAlgo_t, usize),
}

struct Dnn {
    /// The library's functions.
    api: &'static Api,
    /// One handle per ferrox stream index, bound to that stream.
    handles: HashMap<usize, sys::cudnnHandle_t>,
    /// Chosen algorithms (`None`: cuDNN has none for the problem).
    algos: HashMap<(DnnConv, bool), Option<Algo>>,
}

// SAFETY: cuDNN handles may be used from any thread, one at a time; the
// mutex below serialises every use.
unsafe impl Send for Dnn {}

/// `None` until first use; `Some(None)` when cuDNN is unavailable or disabled.
static DNN: Mutex<Option<Option<Dnn>>> = Mutex::new(None);

/// Turns a cuDNN status into an error naming it (the caller falls back and
/// says why, once).
fn check(status: sys::cudnnStatus_t) -> std::result::Result<(), String> {
    match status {
        sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS => Ok(()),
        _ => Err(format!("{status:?}")),
    }
}

/// Says once that cuDNN could not do what it was asked, and why: the
/// convolution then runs on ferrox's own kernels, several times slower.
fn declined(key: &'static str, why: &str) {
    libraries::warn_once(
        key,
        &format!("cuDNN declined a convolution ({why}); it runs on ferrox's own kernels, several times slower."),
    );
}

fn data_type(dtype: Dtype) -> Option<(sys::cudnnDataType_t, sys::cudnnDataType_t)> {
    use sys::cudnnDataType_t as D;
    Some(match dtype {
        Dtype::F16 => (D::CUDNN_DATA_HALF, D::CUDNN_DATA_FLOAT),
        Dtype::BF16 => (D::CUDNN_DATA_BFLOAT16, D::CUDNN_DATA_FLOAT),
        Dtype::F32 => (D::CUDNN_DATA_FLOAT, D::CUDNN_DATA_FLOAT),
        Dtype::F64 => (D::CUDNN_DATA_DOUBLE, D::CUDNN_DATA_DOUBLE),
        _ => return None,
    })
}

/// The descriptors of one problem, destroyed on drop.
struct Descriptors {
    api: &'static Api,
    x: sys::cudnnTensorDescriptor_t,
    y: sys::cudnnTensorDescriptor_t,
    w: sys::cudnnFilterDescriptor_t,
    conv: sys::cudnnConvolutionDescriptor_t,
}

impl Drop for Descriptors {
    fn drop(&mut self) {
        let api = self.api;
        // SAFETY: each descriptor was created by `Descriptors::new` (null
        // ones are skipped) and is used by nothing else.
        unsafe {
            if !self.x.is_null() {
                (api.cudnnDestroyTensorDescriptor)(self.x);
            }
            if !self.y.is_null() {
                (api.cudnnDestroyTensorDescriptor)(self.y);
            }
            if !self.w.is_null() {
                (api.cudnnDestroyFilterDescriptor)(self.w);
            }
            if !self.conv.is_null() {
                (api.cudnnDestroyConvolutionDescriptor)(self.conv);
            }
        }
    }
}

impl Descriptors {
    fn new(api: &'static Api, c: &DnnConv) -> std::result::Result<Descriptors, String> {
        let (dt, compute) = data_type(c.dtype).ok_or_else(|| format!("no cuDNN type for {}", c.dtype))?;
        let mut d = Descriptors {
            api,
            x: std::ptr::null_mut(),
            y: std::ptr::null_mut(),
            w: std::ptr::null_mut(),
            conv: std::ptr::null_mut(),
        };
        let nd = c.x.len() as i32;
        let spatial = nd - 2;
        let math = match c.dtype {
            Dtype::F16 | Dtype::BF16 => sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH,
            Dtype::F32 if tf32_allowed() => sys::cudnnMathType_t::CUDNN_DEFAULT_MATH,
            Dtype::F32 => sys::cudnnMathType_t::CUDNN_FMA_MATH,
            _ => sys::cudnnMathType_t::CUDNN_DEFAULT_MATH,
        };
        let mode = match c.flip {
            true => sys::cudnnConvolutionMode_t::CUDNN_CONVOLUTION,
            false => sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
        };
        let nhwc = sys::cudnnTensorFormat_t::CUDNN_TENSOR_NHWC;
        // SAFETY: the descriptors are created here and the dimension arrays
        // hold `nd` (or `spatial`) entries.
        unsafe {
            check((api.cudnnCreateTensorDescriptor)(&mut d.x))?;
            check((api.cudnnCreateTensorDescriptor)(&mut d.y))?;
            check((api.cudnnCreateFilterDescriptor)(&mut d.w))?;
            check((api.cudnnCreateConvolutionDescriptor)(&mut d.conv))?;
            check((api.cudnnSetTensorNdDescriptorEx)(d.x, nhwc, dt, nd, c.x.as_ptr()))?;
            check((api.cudnnSetTensorNdDescriptorEx)(d.y, nhwc, dt, nd, c.y.as_ptr()))?;
            check((api.cudnnSetFilterNdDescriptor)(d.w, dt, nhwc, nd, c.w.as_ptr()))?;
            check((api.cudnnSetConvolutionNdDescriptor)(
                d.conv,
                spatial,
                c.pad.as_ptr(),
                c.stride.as_ptr(),
                c.dilation.as_ptr(),
                mode,
                compute,
            ))?;
            check((api.cudnnSetConvolutionGroupCount)(d.conv, c.groups))?;
            check((api.cudnnSetConvolutionMathType)(d.conv, math))?;
        }
        Ok(d)
    }
}

/// Measures every algorithm cuDNN has for the problem on the real operands
/// and keeps the fastest that succeeded.
///
/// # Safety
/// The pointers must address live device buffers of the described shapes.
unsafe fn find(
    api: &Api,
    h: sys::cudnnHandle_t,
    c: &DnnConv,
    d: &Descriptors,
    p: Pointers,
    s: &Arc<GpuStream>,
) -> std::result::Result<Algo, String> {
    let ws = allocate(MAX_WORKSPACE, s).map_err(|e| format!("no workspace: {e}"))?;
    let (wp, wn) = (ws.ptr() as *mut c_void, MAX_WORKSPACE);
    let (x, w, y) = (p.x as *mut c_void, p.w as *mut c_void, p.y as *mut c_void);
    const N: usize = 16;
    let mut count = 0i32;
    let best = match c.routine {
        Routine::Forward => {
            let mut perf = [std::mem::zeroed::<sys::cudnnConvolutionFwdAlgoPerf_t>(); N];
            let st = (api.cudnnFindConvolutionForwardAlgorithmEx)(
                h,
                d.x,
                x,
                d.w,
                w,
                d.conv,
                d.y,
                y,
                N as i32,
                &mut count,
                perf.as_mut_ptr(),
                wp,
                wn,
            );
            check(st).map_err(|e| format!("the forward algorithm search failed: {e}"))?;
            perf[..count as usize]
                .iter()
                .find(|r| r.status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS)
                .map(|r| Algo::Forward(r.algo, r.memory))
                .ok_or_else(|| no_algorithm(perf[..count as usize].iter().map(|r| r.status)))
        }
        Routine::BackwardData => {
            let mut perf = [std::mem::zeroed::<sys::cudnnConvolutionBwdDataAlgoPerf_t>(); N];
            let st = (api.cudnnFindConvolutionBackwardDataAlgorithmEx)(
                h,
                d.w,
                w,
                d.y,
                y,
                d.conv,
                d.x,
                x,
                N as i32,
                &mut count,
                perf.as_mut_ptr(),
                wp,
                wn,
            );
            check(st).map_err(|e| format!("the backward-data algorithm search failed: {e}"))?;
            perf[..count as usize]
                .iter()
                .find(|r| r.status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS)
                .map(|r| Algo::BackwardData(r.algo, r.memory))
                .ok_or_else(|| no_algorithm(perf[..count as usize].iter().map(|r| r.status)))
        }
        Routine::BackwardFilter => {
            let mut perf = [std::mem::zeroed::<sys::cudnnConvolutionBwdFilterAlgoPerf_t>(); N];
            let st = (api.cudnnFindConvolutionBackwardFilterAlgorithmEx)(
                h,
                d.x,
                x,
                d.y,
                y,
                d.conv,
                d.w,
                w,
                N as i32,
                &mut count,
                perf.as_mut_ptr(),
                wp,
                wn,
            );
            check(st).map_err(|e| format!("the backward-filter algorithm search failed: {e}"))?;
            perf[..count as usize]
                .iter()
                .find(|r| r.status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS)
                .map(|r| Algo::BackwardFilter(r.algo, r.memory))
                .ok_or_else(|| no_algorithm(perf[..count as usize].iter().map(|r| r.status)))
        }
    };
    drop(ws);
    best
}

/// Why no algorithm was chosen: the statuses cuDNN gave them.
fn no_algorithm(statuses: impl Iterator<Item = sys::cudnnStatus_t>) -> String {
    let all: Vec<String> = statuses.map(|s| format!("{s:?}")).collect();
    format!("no algorithm succeeded ({})", if all.is_empty() { "none offered".into() } else { all.join(", ") })
}

/// Runs the routine: writes `y` (forward), `x` (backward data) or `w`
/// (backward filter). `Ok(false)` when cuDNN cannot (the caller falls back).
pub(crate) fn run(s: &Arc<GpuStream>, c: &DnnConv, p: Pointers) -> Result<bool> {
    let mut guard = DNN.lock().unwrap_or_else(|e| e.into_inner());
    let dnn = guard.get_or_insert_with(|| {
        let enabled = std::env::var("FERROX_CUDNN").map_or(true, |v| v != "0");
        if !enabled {
            return None;
        }
        match cudnn_api::api() {
            Ok(api) => Some(Dnn { api, handles: HashMap::new(), algos: HashMap::new() }),
            Err(e) => {
                libraries::warn_once(
                    "cudnn",
                    &format!(
                        "cuDNN is missing, so convolutions run on ferrox's own kernels, several times slower \
                         than cuDNN's: {e}. Install it with `pip install nvidia-cudnn-cu13` \
                         (or `pip install 'ferrox[cuda]'`)."
                    ),
                );
                None
            }
        }
    });
    let Some(dnn) = dnn.as_mut() else {
        return Ok(false);
    };
    let api = dnn.api;
    let handle = match dnn.handles.get(&s.index) {
        Some(&h) => h,
        None => {
            let mut h = std::ptr::null_mut();
            // SAFETY: creates a handle and binds it to the live stream.
            let made =
                unsafe { check((api.cudnnCreate)(&mut h)).and_then(|_| check((api.cudnnSetStream)(h, s.raw as _))) };
            if let Err(why) = made {
                declined("cudnn-handle", &format!("cudnnCreate failed: {why}"));
                *guard = Some(None);
                return Ok(false);
            }
            dnn.handles.insert(s.index, h);
            h
        }
    };
    let d = match Descriptors::new(api, c) {
        Ok(d) => d,
        Err(why) => {
            declined("cudnn-descriptor", &format!("its descriptors were refused: {why}"));
            return Ok(false);
        }
    };
    let key = (c.clone(), tf32_allowed());
    let algo = match dnn.algos.get(&key) {
        Some(&a) => a,
        None => {
            // SAFETY: the caller's pointers address the described tensors.
            let a = unsafe { find(api, handle, c, &d, p, s) }
                .map_err(|why| declined("cudnn-find", &format!("{:?} of {c:?}: {why}", c.routine)))
                .ok();
            dnn.algos.insert(key, a);
            a
        }
    };
    let Some(algo) = algo else {
        return Ok(false);
    };
    let bytes = match algo {
        Algo::Forward(_, b) | Algo::BackwardData(_, b) | Algo::BackwardFilter(_, b) => b,
    };
    let ws = allocate(bytes.max(1), s)?;
    let (wp, wn) = (ws.ptr() as *mut c_void, bytes);
    let (one32, zero32, one64, zero64) = (1f32, 0f32, 1f64, 0f64);
    let (alpha, beta): (*const c_void, *const c_void) = match c.dtype {
        Dtype::F64 => (&one64 as *const f64 as _, &zero64 as *const f64 as _),
        _ => (&one32 as *const f32 as _, &zero32 as *const f32 as _),
    };
    let (x, w, y) = (p.x as *mut c_void, p.w as *mut c_void, p.y as *mut c_void);
    // SAFETY: the caller's pointers address the described tensors; the
    // workspace outlives the enqueued work on this stream (the allocator
    // reuses a buffer only in this stream's order).
    let status = unsafe {
        match algo {
            Algo::Forward(a, _) => {
                (api.cudnnConvolutionForward)(handle, alpha, d.x, x, d.w, w, d.conv, a, wp, wn, beta, d.y, y)
            }
            Algo::BackwardData(a, _) => {
                (api.cudnnConvolutionBackwardData)(handle, alpha, d.w, w, d.y, y, d.conv, a, wp, wn, beta, d.x, x)
            }
            Algo::BackwardFilter(a, _) => {
                (api.cudnnConvolutionBackwardFilter)(handle, alpha, d.x, x, d.y, y, d.conv, a, wp, wn, beta, d.w, w)
            }
        }
    };
    if let Err(why) = check(status) {
        declined("cudnn-run", &format!("{:?} failed: {why}", c.routine));
        return Ok(false);
    }
    Ok(true)
}
