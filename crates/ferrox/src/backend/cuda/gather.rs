//! Gather and scatter (`kernels/gather.cu`; semantics in `cpu/gather.rs`).
//!
//! Index arrays are first copied to contiguous int64 over the index shape,
//! so the kernels read them without layouts; one thread handles one
//! (index position, slice element) pair, except for gathers of long
//! contiguous slices (rows), where one block copies one slice. Scatters
//! update the output with atomics (native additions where the hardware has
//! them, compare-and-swap loops otherwise). Out-of-range indices read zeros and drop updates: the
//! GPU cannot raise an error without stopping the stream.

use super::elementwise::copy;
use super::kernels::Family;
use super::launch::{grid_for, launch, Args, Strided, BLOCK, MAX_DIMS};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::ScatterOp;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::{contiguous_strides, numel, Layout};
use std::sync::Arc;

/// The kernels' `FxIndices`: per index array, its int64 buffer and the
/// stride, extent and last valid slice start of the axis it indexes.
#[repr(C)]
#[derive(Clone, Copy)]
struct IndexBlock {
    count: i64,
    idx: [u64; MAX_DIMS],
    stride: [i64; MAX_DIMS],
    size: [i64; MAX_DIMS],
    last: [i64; MAX_DIMS],
}

/// The index block for `indices` over a buffer of `shape` with `strides`,
/// with the int64 copies it points to where an index array is not already
/// contiguous int64 (kept alive until the launch is enqueued; their memory
/// is reused only in stream order).
fn index_block(
    s: &Arc<GpuStream>,
    op: &'static str,
    indices: &[(&CudaStorage, &Layout)],
    axes: &[usize],
    shape: &[usize],
    strides: &[isize],
    slice_sizes: &[usize],
) -> Result<(IndexBlock, Vec<CudaStorage>)> {
    if indices.len() > MAX_DIMS {
        return Err(Error::Device { op, msg: format!("the GPU kernels take at most {MAX_DIMS} index arrays.") });
    }
    let mut block = IndexBlock {
        count: indices.len() as i64,
        idx: [0; MAX_DIMS],
        stride: [0; MAX_DIMS],
        size: [0; MAX_DIMS],
        last: [0; MAX_DIMS],
    };
    let mut keep = Vec::with_capacity(indices.len());
    for (k, (&(buf, layout), &axis)) in indices.iter().zip(axes).enumerate() {
        // Contiguous int64 indices are read in place; others are converted.
        block.idx[k] = if buf.dtype() == Dtype::I64 && layout.is_row_contiguous() {
            buf.ptr_at(layout.offset)
        } else {
            let values = copy(s, buf, layout, Dtype::I64)?;
            let ptr = values.ptr_at(0);
            keep.push(values);
            ptr
        };
        block.stride[k] = strides[axis] as i64;
        block.size[k] = shape[axis] as i64;
        block.last[k] = shape[axis] as i64 - slice_sizes[axis] as i64;
    }
    Ok((block, keep))
}

/// Slices at least this long that are contiguous runs of the source take
/// the row kernel (one block per index position).
const ROW_KERNEL_MIN: usize = 256;

/// Whether the elements of a slice of `slice_sizes` read with `strides` are
/// one contiguous run (offsets `0..n`).
fn is_contiguous_run(slice_sizes: &[usize], strides: &[isize]) -> bool {
    let mut expected = 1isize;
    for (&n, &st) in slice_sizes.iter().zip(strides).rev().filter(|(n, _)| **n > 1) {
        if st != expected {
            return false;
        }
        expected *= n as isize;
    }
    true
}

/// See [`Backend::gather`](crate::backend::Backend::gather).
pub(crate) fn gather(
    s: &Arc<GpuStream>,
    x: &CudaStorage,
    lx: &Layout,
    indices: &[(&CudaStorage, &Layout)],
    axes: &[usize],
    slice_sizes: &[usize],
) -> Result<CudaStorage> {
    let n_idx = indices.first().map_or(1, |(_, l)| l.size());
    let slice_n = numel(slice_sizes);
    let out = CudaStorage::alloc(x.dtype(), n_idx * slice_n, s)?;
    if n_idx * slice_n == 0 {
        return Ok(out);
    }
    let (block, _keep) = index_block(s, "gather", indices, axes, &lx.shape, &lx.strides, slice_sizes)?;
    if slice_n >= ROW_KERNEL_MIN && is_contiguous_run(slice_sizes, &lx.strides) {
        let args =
            Args::new().arg(x.ptr_at(lx.offset)).arg(out.ptr_at(0)).arg(n_idx as i64).arg(slice_n as i64).arg(block);
        let blocks = n_idx.min(1 << 20) as u32;
        launch(Family::Gather, x.dtype(), "gather_rows", (blocks, 1, 1), (BLOCK, 1, 1), s, args)?;
        return Ok(out);
    }
    let st = Strided::new("gather", slice_sizes, [&lx.strides])?;
    let args = Args::new()
        .arg(x.ptr_at(lx.offset))
        .arg(out.ptr_at(0))
        .arg(n_idx as i64)
        .arg(slice_n as i64)
        .arg(block)
        .arg(st);
    launch(Family::Gather, x.dtype(), "gather", (grid_for(n_idx * slice_n, 1)?, 1, 1), (BLOCK, 1, 1), s, args)?;
    Ok(out)
}

/// See [`Backend::scatter`](crate::backend::Backend::scatter).
#[allow(clippy::too_many_arguments)]
pub(crate) fn scatter(
    s: &Arc<GpuStream>,
    op: ScatterOp,
    base: &CudaStorage,
    lb: &Layout,
    indices: &[(&CudaStorage, &Layout)],
    axes: &[usize],
    updates: &CudaStorage,
    lu: &Layout,
) -> Result<CudaStorage> {
    let out = copy(s, base, lb, base.dtype())?;
    let slice_sizes = &lu.shape[lu.ndim() - lb.ndim()..];
    let n_idx = indices.first().map_or(1, |(_, l)| l.size());
    let slice_n = numel(slice_sizes);
    if n_idx * slice_n == 0 {
        return Ok(out);
    }
    let strides = contiguous_strides(&lb.shape);
    let (block, _keep) = index_block(s, op.name(), indices, axes, &lb.shape, &strides, slice_sizes)?;
    let upd = if lu.is_row_contiguous() { None } else { Some(copy(s, updates, lu, updates.dtype())?) };
    let upd_ptr = upd.as_ref().map_or_else(|| updates.ptr_at(lu.offset), |u| u.ptr_at(0));
    let st = Strided::new(op.name(), slice_sizes, [&strides])?;
    let kernel = match op {
        ScatterOp::Assign => "scatter_assign",
        ScatterOp::Sum => "scatter_sum",
        ScatterOp::Prod => "scatter_prod",
        ScatterOp::Max => "scatter_max",
        ScatterOp::Min => "scatter_min",
    };
    let args = Args::new().arg(upd_ptr).arg(out.ptr_at(0)).arg(n_idx as i64).arg(slice_n as i64).arg(block).arg(st);
    launch(Family::Gather, base.dtype(), kernel, (grid_for(n_idx * slice_n, 1)?, 1, 1), (BLOCK, 1, 1), s, args)?;
    Ok(out)
}

/// The kernels `gather.cu` defines (for the NVRTC check).
pub(crate) const KERNEL_NAMES: [&str; 7] =
    ["gather", "gather_rows", "scatter_assign", "scatter_sum", "scatter_prod", "scatter_max", "scatter_min"];
