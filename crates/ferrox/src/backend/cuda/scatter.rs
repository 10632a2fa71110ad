//! Writing into windows of a buffer: slice updates and concatenation.

use super::elementwise::copy;
use super::kernels::Family;
use super::launch::{grid_for, launch, Args, Strided, BLOCK};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::error::Result;
use crate::shape::{contiguous_strides, Layout};
use std::sync::Arc;

/// Copies the elements of `src` (read through `ls`) into `dst` at the
/// positions `window` selects (same shape).
pub(crate) fn copy_into(
    s: &Arc<GpuStream>,
    src: &CudaStorage,
    ls: &Layout,
    dst: &CudaStorage,
    window: &Layout,
) -> Result<()> {
    let n = window.size();
    if n == 0 {
        return Ok(());
    }
    let st = Strided::new("copy_into", &window.shape, [&ls.strides, &window.strides])?;
    let args = Args::new().arg(src.ptr_at(ls.offset)).arg(dst.ptr_at(window.offset)).arg(n as i64).arg(st);
    launch(Family::Scatter, src.dtype(), "copy_into", (grid_for(n, 1)?, 1, 1), (BLOCK, 1, 1), s, args)
}

/// A contiguous copy of `base` with the `window` elements replaced by `update`.
pub(crate) fn slice_update(
    s: &Arc<GpuStream>,
    base: &CudaStorage,
    lb: &Layout,
    update: &CudaStorage,
    lu: &Layout,
    window: &Layout,
) -> Result<CudaStorage> {
    if lb.strides.iter().all(|&st| st == 0) && lb.size() > 0 {
        if let Some(boxed) = unit_step_box(&lb.shape, window, lu) {
            return fill_around(s, base.ptr_at(lb.offset), update, lu, &lb.shape, boxed);
        }
    }
    let out = copy(s, base, lb, base.dtype())?;
    copy_into(s, update, lu, &out, window)?;
    Ok(out)
}

/// Most axes `slice_update_fill` takes (`FxBox`).
const BOX_DIMS: usize = 8;

/// Elements of a row each block of `slice_update_fill` writes (`FX_FILL_CHUNK`).
const FILL_CHUNK: usize = 4096;

/// The kernels' `FxBox`.
#[repr(C)]
#[derive(Clone, Copy)]
struct BoxParams {
    ndim: i32,
    shape: [i64; BOX_DIMS],
    start: [i64; BOX_DIMS],
    len: [i64; BOX_DIMS],
    src_stride: [i64; BOX_DIMS],
}

/// The box that `window` (unit steps) covers in a row-contiguous array of
/// `shape`, with `update`'s strides as the source's; None for windows with
/// other steps, 0-d arrays or too many axes.
fn unit_step_box(shape: &[usize], window: &Layout, update: &Layout) -> Option<BoxParams> {
    let n = shape.len();
    if n == 0 || n > BOX_DIMS || window.shape.len() != n {
        return None;
    }
    let strides = contiguous_strides(shape);
    let mut p = BoxParams {
        ndim: n as i32,
        shape: [0; BOX_DIMS],
        start: [0; BOX_DIMS],
        len: [0; BOX_DIMS],
        src_stride: [0; BOX_DIMS],
    };
    // The window's first element, axis by axis (the strides are a mixed radix).
    let mut rest = window.offset;
    for d in 0..n {
        if window.shape[d] > 1 && window.strides[d] != strides[d] {
            return None;
        }
        let stride = strides[d] as usize;
        p.shape[d] = shape[d] as i64;
        p.start[d] = (rest / stride) as i64;
        rest %= stride;
        p.len[d] = window.shape[d] as i64;
        p.src_stride[d] = update.strides[d] as i64;
    }
    Some(p)
}

/// A row-contiguous array of `shape`: the value at `fill` (one element on
/// the device) outside `boxed`, `update` inside it.
fn fill_around(
    s: &Arc<GpuStream>,
    fill: u64,
    update: &CudaStorage,
    lu: &Layout,
    shape: &[usize],
    boxed: BoxParams,
) -> Result<CudaStorage> {
    let out = CudaStorage::alloc(update.dtype(), shape.iter().product(), s)?;
    let cols = shape[shape.len() - 1];
    let rows = out.len() / cols.max(1);
    if out.is_empty() {
        return Ok(out);
    }
    let chunks = u32::try_from(cols.div_ceil(FILL_CHUNK))
        .map_err(|_| crate::error::Error::invalid("slice_update", "the array's last axis is too long"))?;
    let grid = (chunks, rows.min(65535) as u32, 1);
    let args = Args::new()
        .arg(update.ptr_at(lu.offset))
        .arg(fill)
        .arg(out.ptr_at(0))
        .arg(rows as i64)
        .arg(cols as i64)
        .arg(boxed);
    launch(Family::Scatter, update.dtype(), "slice_update_fill", grid, (BLOCK, 1, 1), s, args)?;
    Ok(out)
}

/// Joins inputs along `axis` into a new buffer of `out_shape`.
pub(crate) fn concatenate(
    s: &Arc<GpuStream>,
    inputs: &[(&CudaStorage, &Layout)],
    axis: usize,
    out_shape: &[usize],
) -> Result<CudaStorage> {
    let dtype = inputs[0].0.dtype();
    let out = CudaStorage::alloc(dtype, out_shape.iter().product(), s)?;
    let strides = contiguous_strides(out_shape);
    let mut at = 0usize;
    for (x, l) in inputs {
        let window = Layout { shape: l.shape.clone(), strides: strides.clone(), offset: at * strides[axis] as usize };
        copy_into(s, x, l, &out, &window)?;
        at += l.shape[axis];
    }
    Ok(out)
}
