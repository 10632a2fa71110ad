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
    let out = copy(s, base, lb, base.dtype())?;
    copy_into(s, update, lu, &out, window)?;
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
