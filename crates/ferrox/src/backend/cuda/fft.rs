//! Discrete Fourier transforms through cuFFT.
//!
//! cuFFT transforms up to three trailing axes of a row-contiguous batch in
//! one call. A transform over other axes first copies the array with those
//! axes moved to the end (the strided copy kernel), runs, and copies the
//! result back to the original axis order; more than three axes take
//! several such steps, real ones keeping the real axis in the step that
//! touches real data (first for a forward transform, last for an inverse).
//! Plans are made once per (lengths, batch, type, stream) and cached; their
//! workspace comes from ferrox's allocator, so it is counted and reused.
//! A complex-to-real transform overwrites its input, so it always runs on
//! a copy.

use super::allocator::allocate;
use super::cufft_api::{self, Api, Handle};
use super::elementwise::{binary_to, copy, FillValue, Operand};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::{BinaryOp, FftOp};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::{numel, Layout};
use num_complex::Complex32;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// The most plans kept; beyond it the cache is emptied (each plan holds
/// cuFFT's tables for its lengths).
const MAX_PLANS: usize = 256;

/// One cuFFT call's shape: the transform lengths (of the real signal for
/// real types), the batch, the cuFFT type and the stream.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct PlanKey {
    lengths: Vec<i64>,
    batch: i64,
    kind: i32,
    stream: usize,
}

/// A cached plan and the workspace bytes it needs.
#[derive(Clone, Copy)]
struct Plan {
    handle: Handle,
    work: usize,
}

/// Plans by shape (the mutex also serialises setting a plan's work area
/// and running it).
static PLANS: Mutex<Option<HashMap<PlanKey, Plan>>> = Mutex::new(None);

fn api() -> Result<&'static Api> {
    cufft_api::api().map_err(|why| Error::Device {
        op: "fft",
        msg: format!("cuFFT is not available ({why}); install it with `pip install nvidia-cufft` (or `ferrox[cuda]`)."),
    })
}

fn check(op: &'static str, status: cufft_api::Status) -> Result<()> {
    if status == 0 {
        Ok(())
    } else {
        Err(Error::Device { op: "fft", msg: format!("{op} failed with cufftResult {status}.") })
    }
}

/// The transform `op` of `x` over `axes`, times `scale` (see
/// [`crate::backend::Backend::fft`]).
pub(crate) fn fft(
    s: &Arc<GpuStream>,
    op: FftOp,
    x: &CudaStorage,
    layout: &Layout,
    axes: &[usize],
    scale: f64,
    out_shape: &[usize],
) -> Result<CudaStorage> {
    let out_dtype = op.output_dtype();
    if numel(out_shape) == 0 || layout.size() == 0 {
        let out = CudaStorage::alloc(out_dtype, numel(out_shape), s)?;
        return Ok(out);
    }
    let api = api()?;
    let nd = layout.ndim();
    // The array's axes in buffer order; starts as given.
    let mut order: Vec<usize> = (0..nd).collect();
    let mut shape = layout.shape.clone();
    let mut buf: Option<CudaStorage> = None;
    let mut view = layout.clone();
    // Steps: groups of at most three axes, the real axis in the last group.
    let groups: Vec<&[usize]> = axes.rchunks(3).collect();
    let steps: Vec<(&[usize], FftOp)> = match op {
        FftOp::Forward | FftOp::Inverse => groups.iter().map(|g| (*g, op)).collect(),
        FftOp::RealForward => {
            groups.iter().enumerate().map(|(i, g)| (*g, if i == 0 { op } else { FftOp::Forward })).collect()
        }
        FftOp::RealInverse => groups
            .iter()
            .rev()
            .enumerate()
            .map(|(i, g)| (*g, if i + 1 == groups.len() { op } else { FftOp::Inverse }))
            .collect(),
    };
    for (group, step_op) in steps {
        // Bring the group's axes to the end, row-contiguous.
        let others: Vec<usize> = order.iter().copied().filter(|a| !group.contains(a)).collect();
        let wanted: Vec<usize> = others.iter().chain(group).copied().collect();
        let src = buf.as_ref().unwrap_or(x);
        let needs_copy =
            wanted != order || !view.is_row_contiguous() || (step_op == FftOp::RealInverse && buf.is_none());
        let arranged = if needs_copy {
            let perm: Vec<usize> =
                wanted.iter().map(|a| order.iter().position(|b| b == a).expect("a known axis")).collect();
            let moved = copy(s, src, &view.permute(&perm), src.dtype())?;
            shape = perm.iter().map(|&p| shape[p]).collect();
            order = wanted;
            Some(moved)
        } else {
            None
        };
        let input = arranged.as_ref().or(buf.as_ref()).unwrap_or(x);
        let in_offset = if arranged.is_some() || buf.is_some() { 0 } else { view.offset };
        let k = group.len();
        let batch = numel(&shape[..nd - k]) as i64;
        let mut out_step_shape = shape.clone();
        let last = nd - 1;
        let real_len = match step_op {
            FftOp::RealForward => {
                let n = shape[last];
                out_step_shape[last] = n / 2 + 1;
                n
            }
            FftOp::RealInverse => {
                let n = out_shape[*group.last().expect("a group has axes")];
                out_step_shape[last] = n;
                n
            }
            _ => shape[last],
        };
        let mut lengths: Vec<i64> = shape[nd - k..].iter().map(|&d| d as i64).collect();
        *lengths.last_mut().expect("k >= 1") = real_len as i64;
        let out = CudaStorage::alloc(step_op.output_dtype(), numel(&out_step_shape), s)?;
        execute(api, s, step_op, lengths, batch, input.ptr_at(in_offset), out.ptr_at(0))?;
        shape = out_step_shape;
        view = Layout::contiguous(&shape);
        buf = Some(out);
    }
    let mut out = buf.expect("at least one step ran");
    // Back to the original axis order.
    if order.iter().enumerate().any(|(i, &a)| i != a) {
        let inverse: Vec<usize> = (0..nd).map(|a| order.iter().position(|&b| b == a).expect("a known axis")).collect();
        out = copy(s, &out, &Layout::contiguous(&shape).permute(&inverse), out_dtype)?;
    }
    if scale != 1.0 {
        let value = match out_dtype {
            Dtype::F32 => FillValue::from_bytes(&(scale as f32).to_ne_bytes()),
            _ => FillValue::from_bytes(bytemuck::bytes_of(&Complex32::new(scale as f32, 0.0))),
        };
        let l = Layout::contiguous(out_shape);
        binary_to(
            s,
            BinaryOp::Multiply,
            out_dtype,
            Operand::Device(&out),
            &l,
            Operand::Host(value),
            &l,
            out.ptr_at(0),
        )?;
    }
    Ok(out)
}

/// Runs one cuFFT call: `batch` transforms of `lengths` (the trailing axes
/// of row-contiguous data) of kind `op`, from `input` to `output`.
fn execute(
    api: &'static Api,
    s: &Arc<GpuStream>,
    op: FftOp,
    lengths: Vec<i64>,
    batch: i64,
    input: cudarc::driver::sys::CUdeviceptr,
    output: cudarc::driver::sys::CUdeviceptr,
) -> Result<()> {
    let kind = match op {
        FftOp::Forward | FftOp::Inverse => cufft_api::C2C,
        FftOp::RealForward => cufft_api::R2C,
        FftOp::RealInverse => cufft_api::C2R,
    };
    let key = PlanKey { lengths, batch, kind, stream: s.index };
    let mut plans = PLANS.lock().unwrap_or_else(|e| e.into_inner());
    let table = plans.get_or_insert_with(HashMap::new);
    let plan = match table.get(&key) {
        Some(p) => *p,
        None => {
            if table.len() >= MAX_PLANS {
                for (_, p) in table.drain() {
                    // SAFETY: the handle was created by make_plan and is
                    // not used after this (the mutex is held).
                    unsafe { (api.cufftDestroy)(p.handle) };
                }
            }
            let p = make_plan(api, s, &key)?;
            table.insert(key.clone(), p);
            p
        }
    };
    let work = allocate(plan.work.max(1), s)?;
    let (i, o) = (input as *mut c_void, output as *mut c_void);
    // SAFETY: the plan matches the buffers' sizes (the key); the work area
    // holds what cuFFT asked for and lives until the call is enqueued after
    // which the allocator reuses it only in stream order; the mutex keeps
    // other threads from changing the plan's work area meanwhile.
    unsafe {
        check("cufftSetWorkArea", (api.cufftSetWorkArea)(plan.handle, work.ptr() as *mut c_void))?;
        match op {
            FftOp::Forward => check("cufftExecC2C", (api.cufftExecC2C)(plan.handle, i, o, cufft_api::FORWARD)),
            FftOp::Inverse => check("cufftExecC2C", (api.cufftExecC2C)(plan.handle, i, o, cufft_api::INVERSE)),
            FftOp::RealForward => check("cufftExecR2C", (api.cufftExecR2C)(plan.handle, i, o)),
            FftOp::RealInverse => check("cufftExecC2R", (api.cufftExecC2R)(plan.handle, i, o)),
        }
    }
}

/// A new plan for `key`, bound to its stream, with ferrox's workspace.
fn make_plan(api: &'static Api, s: &Arc<GpuStream>, key: &PlanKey) -> Result<Plan> {
    let mut handle: Handle = 0;
    let mut n = key.lengths.clone();
    let mut work = 0usize;
    // SAFETY: `n` holds `rank` lengths; null embeds select the basic
    // (row-contiguous) layout, for which strides and distances are ignored.
    unsafe {
        check("cufftCreate", (api.cufftCreate)(&mut handle))?;
        let made = (|| {
            check("cufftSetAutoAllocation", (api.cufftSetAutoAllocation)(handle, 0))?;
            check(
                "cufftMakePlanMany64",
                (api.cufftMakePlanMany64)(
                    handle,
                    n.len() as i32,
                    n.as_mut_ptr(),
                    std::ptr::null_mut(),
                    1,
                    0,
                    std::ptr::null_mut(),
                    1,
                    0,
                    key.kind,
                    key.batch,
                    &mut work,
                ),
            )?;
            check("cufftSetStream", (api.cufftSetStream)(handle, s.raw))
        })();
        if let Err(e) = made {
            (api.cufftDestroy)(handle);
            return Err(e);
        }
    }
    Ok(Plan { handle, work })
}
