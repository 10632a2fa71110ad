//! Reductions and arg-reductions.
//!
//! Three shapes of work: a whole contiguous array (block partials, then one
//! block folds them); reduced axes that are the innermost of a contiguous
//! array or any strided pattern (one block per output, "rows"); and reduced
//! axes with contiguous axes inside them ("columns": threads walk along the
//! contiguous axis, split across blocks when there are few columns).

use super::device::gpu;
use super::elementwise::{copy, per_thread};
use super::kernels::Family;
use super::launch::{grid_for, launch, Args, Strided, BLOCK};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::{ArgReduceOp, ReduceOp};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::{numel, Layout};
use std::sync::Arc;

fn op_name(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Sum => "sum",
        ReduceOp::Prod => "prod",
        ReduceOp::Max => "max",
        ReduceOp::Min => "min",
    }
}

/// The accumulator dtype: f32 for sums and products of half floats.
fn acc_dtype(op: ReduceOp, dt: Dtype) -> Dtype {
    match (op, dt) {
        (ReduceOp::Sum | ReduceOp::Prod, Dtype::F16 | Dtype::BF16) => Dtype::F32,
        _ => dt,
    }
}

/// Where a reduction's first pass reads the values it folds: a stored array
/// ([`Stored`]) or a fused program computing them on the fly (compile's
/// fused reductions, `fused_reduce.rs`). Both run the folds of
/// `reduce_folds.cuh` in the same order, so they give the same bits.
pub(crate) trait Values {
    /// Launches first-pass kernel `kind` (`all`, `rows` or `cols`, with
    /// `reduce.cu`'s ABI after the source's own arguments) with `args`.
    fn launch(
        &self,
        kind: &str,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        s: &GpuStream,
        args: Args,
    ) -> Result<()>;
}

/// Values stored in `x` from element `offset` (the library's kernels).
struct Stored<'a> {
    x: &'a CudaStorage,
    offset: usize,
    op: ReduceOp,
}

impl Values for Stored<'_> {
    fn launch(
        &self,
        kind: &str,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        s: &GpuStream,
        args: Args,
    ) -> Result<()> {
        let name = format!("{}_{kind}", op_name(self.op));
        let args = Args::new().arg(self.x.ptr_at(self.offset)).extend(args);
        launch(Family::Reduce, self.x.dtype(), &name, grid, block, s, args)
    }
}

/// Reduces sorted, unique `axes`; the output is row-major over the input
/// shape with reduced axes of extent 1.
pub(crate) fn reduce(
    s: &Arc<GpuStream>,
    op: ReduceOp,
    x: &CudaStorage,
    l: &Layout,
    axes: &[usize],
    out_dtype: Dtype,
) -> Result<CudaStorage> {
    if x.dtype() != out_dtype {
        // Bool sums count in int32: cast first, as the CPU backend does.
        let cast = copy(s, x, l, out_dtype)?;
        return reduce(s, op, &cast, &Layout::contiguous(&l.shape), axes, out_dtype);
    }
    let r: usize = axes.iter().map(|&a| l.shape[a]).product();
    if numel(&l.shape) == r && r > 1 && !l.is_row_contiguous() {
        // A whole strided array: packed into a dense copy first.
        let dense = copy(s, x, l, out_dtype)?;
        let values = Stored { x: &dense, offset: 0, op };
        return fold(s, op, &values, &Layout::contiguous(&l.shape), axes, out_dtype);
    }
    fold(s, op, &Stored { x, offset: l.offset, op }, l, axes, out_dtype)
}

/// Reduces `values`, laid out as `l` (whose offset the source has applied)
/// and of dtype `dt`, over sorted, unique `axes`. A reduction of every
/// element needs `l` row-contiguous.
pub(crate) fn fold(
    s: &Arc<GpuStream>,
    op: ReduceOp,
    values: &dyn Values,
    l: &Layout,
    axes: &[usize],
    dt: Dtype,
) -> Result<CudaStorage> {
    let kept: Vec<usize> = (0..l.ndim()).filter(|a| !axes.contains(a)).collect();
    let n_out: usize = kept.iter().map(|&a| l.shape[a]).product();
    let r: usize = axes.iter().map(|&a| l.shape[a]).product();
    let out = CudaStorage::alloc(dt, n_out, s)?;
    if n_out == 0 {
        return Ok(out);
    }
    let contiguous = l.is_row_contiguous();
    if n_out == 1 && r > 1 {
        debug_assert!(contiguous, "a whole reduction reads dense values");
        reduce_all(s, op, values, dt, r, &out)?;
        return Ok(out);
    }
    let is_block = axes.windows(2).all(|w| w[1] == w[0] + 1);
    if contiguous && is_block && !axes.is_empty() {
        let outer = numel(&l.shape[..axes[0]]);
        let inner = numel(&l.shape[axes[axes.len() - 1] + 1..]);
        if inner > 1 {
            reduce_cols(s, op, values, dt, outer, r, inner, &out)?;
            return Ok(out);
        }
    }
    // One block per output over any strided pattern.
    let name = op_name(op);
    let kept_shape: Vec<usize> = kept.iter().map(|&a| l.shape[a]).collect();
    let kept_strides: Vec<isize> = kept.iter().map(|&a| l.strides[a]).collect();
    let red_shape: Vec<usize> = axes.iter().map(|&a| l.shape[a]).collect();
    let red_strides: Vec<isize> = axes.iter().map(|&a| l.strides[a]).collect();
    let kept_st = Strided::new(name, &kept_shape, [&kept_strides])?;
    let red_st =
        if r == 0 { Strided::new(name, &[0], [&[1]])? } else { Strided::new(name, &red_shape, [&red_strides])? };
    let block = match r {
        0..=64 => 32,
        65..=2048 => 128,
        _ => 256,
    };
    let grid = n_out.min(gpu()?.sm_count as usize * 32) as u32;
    let args = Args::new().arg(out.ptr_at(0)).arg(n_out as i64).arg(kept_st).arg(red_st);
    values.launch("rows", (grid, 1, 1), (block, 1, 1), s, args)?;
    Ok(out)
}

/// Folds the `n` values into `out[0]`.
fn reduce_all(
    s: &Arc<GpuStream>,
    op: ReduceOp,
    values: &dyn Values,
    dt: Dtype,
    n: usize,
    out: &CudaStorage,
) -> Result<()> {
    let name = op_name(op);
    let blocks = grid_for(n, per_thread(dt) * 4)?.min(1024);
    let partial = CudaStorage::alloc(acc_dtype(op, dt), blocks as usize, s)?;
    let args = Args::new().arg(partial.ptr_at(0)).arg(n as i64);
    values.launch("all", (blocks, 1, 1), (BLOCK, 1, 1), s, args)?;
    let args = Args::new().arg(partial.ptr_at(0)).arg(out.ptr_at(0)).arg(blocks as i64);
    launch(Family::Reduce, dt, &format!("{name}_final"), (1, 1, 1), (1024, 1, 1), s, args)
}

/// Reduces the middle axis of `[outer, r, inner]` dense values.
#[allow(clippy::too_many_arguments)]
fn reduce_cols(
    s: &Arc<GpuStream>,
    op: ReduceOp,
    values: &dyn Values,
    dt: Dtype,
    outer: usize,
    r: usize,
    inner: usize,
    out: &CudaStorage,
) -> Result<()> {
    let acc = acc_dtype(op, dt);
    let name = op_name(op);
    let sms = gpu()?.sm_count as usize;
    let tiles = inner.div_ceil(32) * outer.min(65535);
    // Enough blocks to keep the chip busy: split long columns across blocks.
    let split = (16 * sms).div_ceil(tiles).clamp(1, (r / 64).max(1));
    let grid = (inner.div_ceil(32) as u32, outer.min(65535) as u32, split as u32);
    let direct = split == 1 && acc == dt;
    let partial = if direct { None } else { Some(CudaStorage::alloc(acc, split * outer * inner, s)?) };
    let target = partial.as_ref().unwrap_or(out);
    let args = Args::new().arg(target.ptr_at(0)).arg(outer as i64).arg(r as i64).arg(inner as i64).arg(split as i64);
    values.launch("cols", grid, (32, 8, 1), s, args)?;
    if let Some(partial) = &partial {
        let m = outer * inner;
        let args = Args::new().arg(partial.ptr_at(0)).arg(out.ptr_at(0)).arg(split as i64).arg(m as i64);
        // 32 columns a block, 32 threads splitting each column's partials.
        let blocks = m.div_ceil(32).min(1 << 20) as u32;
        launch(Family::Reduce, dt, &format!("{name}_cols_final"), (blocks, 1, 1), (32, 32, 1), s, args)?;
    }
    Ok(())
}

/// Index (uint32) of the first largest/smallest element along `axis`.
pub(crate) fn arg_reduce(
    s: &Arc<GpuStream>,
    op: ArgReduceOp,
    x: &CudaStorage,
    l: &Layout,
    axis: usize,
) -> Result<CudaStorage> {
    let len = l.shape[axis];
    let n_out = numel(&l.shape[..axis]) * numel(&l.shape[axis + 1..]);
    let out = CudaStorage::alloc(Dtype::U32, n_out, s)?;
    if n_out == 0 {
        return Ok(out);
    }
    let name = match op {
        ArgReduceOp::ArgMax => "argmax",
        ArgReduceOp::ArgMin => "argmin",
    };
    if len == 0 {
        return Err(Error::invalid(name, "Cannot reduce an empty axis."));
    }
    let mut kept = l.clone();
    kept.shape[axis] = 1;
    let kept_st = Strided::new(name, &kept.shape, [&kept.strides])?;
    let grid = n_out.div_ceil(8).min(gpu()?.sm_count as usize * 32) as u32;
    let args = Args::new()
        .arg(x.ptr_at(l.offset))
        .arg(out.ptr_at(0))
        .arg(n_out as i64)
        .arg(len as i64)
        .arg(l.strides[axis] as i64)
        .arg(kept_st);
    launch(Family::ArgReduce, x.dtype(), name, (grid, 1, 1), (BLOCK, 1, 1), s, args)?;
    Ok(out)
}
