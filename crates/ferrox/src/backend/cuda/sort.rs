//! Sorting along one axis (sort, argsort; partitions run as sorts) and
//! searchsorted, with the kernels of `kernels/sort.cu` (one module per
//! dtype, `Family::Sort`).
//!
//! The lines along the sorted axis are made contiguous rows first (a copy
//! unless the input is row-contiguous with the axis last) and the sorted
//! rows are copied back to the input's axis order. Each row is sorted as
//! (key, position) items by a bitonic network, which is stable because the
//! position breaks ties:
//! - rows of up to one tile (4096 items; 2048 for 8-byte dtypes), padded to
//!   a power of two p: one block sorts tile / p rows in shared memory
//!   (`sort_block`), reading the input and writing the output directly;
//! - longer rows: padded item arrays in global memory, each tile sorted in
//!   shared memory (`sort_tiles`), then per merge stage k > tile the global
//!   steps whose partners lie more than a tile apart (`sort_step`, one
//!   launch each) and the rest of the stage inside each tile
//!   (`sort_merge`); `sort_write` then writes positions or values.

use super::elementwise::copy;
use super::kernels::Family;
use super::launch::{grid_for, launch, Args, BLOCK};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::{numel, Layout};
use std::sync::Arc;

/// The kernels `sort.cu` defines (see its header).
pub(crate) const KERNELS: [&str; 7] =
    ["sort_block", "sort_init", "sort_tiles", "sort_step", "sort_merge", "sort_write", "searchsorted"];

/// Threads per block of the shared-memory kernels (`FX_SORT_THREADS`).
const THREADS: u32 = 512;

/// Bytes of one (key, position) item (`FxItem`): 8-byte dtypes have 64-bit keys.
fn item_bytes(dt: Dtype) -> usize {
    if dt.size() == 8 {
        16
    } else {
        8
    }
}

/// log2 of the items a block sorts in shared memory (`FX_SORT_TILE`, 32 KiB).
fn log_tile(dt: Dtype) -> u32 {
    if item_bytes(dt) == 16 {
        11
    } else {
        12
    }
}

/// A grid of at most 2^31 - 1 blocks (the kernels grid-stride over the rest).
fn capped(blocks: usize) -> u32 {
    blocks.clamp(1, i32::MAX as usize) as u32
}

/// Sorts `x` (read through `l`) along `axis`; row-contiguous output of the
/// same shape: the values, or with `arg` their uint32 positions.
pub(crate) fn sort(s: &Arc<GpuStream>, x: &CudaStorage, l: &Layout, axis: usize, arg: bool) -> Result<CudaStorage> {
    let dt = x.dtype();
    let out_dt = if arg { Dtype::U32 } else { dt };
    let total = l.size();
    if total == 0 {
        return CudaStorage::alloc(out_dt, 0, s);
    }
    let (outer, n, inner) = (numel(&l.shape[..axis]), l.shape[axis], numel(&l.shape[axis + 1..]));
    if n as u64 >= u64::from(u32::MAX) {
        return Err(Error::Device {
            op: "sort",
            msg: format!("the GPU sorts lines of fewer than 2^32 - 1 elements; this one has {n}."),
        });
    }
    let dense;
    let (src, offset) = if l.is_row_contiguous() && inner == 1 {
        (x, l.offset)
    } else {
        let mut perm: Vec<usize> = (0..l.shape.len()).filter(|&d| d != axis).collect();
        perm.push(axis);
        dense = copy(s, x, &l.permute(&perm), dt)?;
        (&dense, 0)
    };
    let rows = CudaStorage::alloc(out_dt, total, s)?;
    sort_rows(s, src, offset, &rows, outer * inner, n, arg)?;
    if inner == 1 || n == 1 {
        return Ok(rows);
    }
    copy(s, &rows, &Layout::contiguous(&[outer, inner, n]).permute(&[0, 2, 1]), out_dt)
}

/// Sorts the `lines` contiguous rows of `n` elements at `offset` of `x` into `out`.
fn sort_rows(
    s: &Arc<GpuStream>,
    x: &CudaStorage,
    offset: usize,
    out: &CudaStorage,
    lines: usize,
    n: usize,
    arg: bool,
) -> Result<()> {
    let dt = x.dtype();
    let log_tile = log_tile(dt);
    let p = n.next_power_of_two();
    let log_p = p.trailing_zeros();
    let arg = arg as i32;
    if log_p <= log_tile {
        // As many whole rows per block as fit, no more than there are.
        let span = p.saturating_mul(lines.next_power_of_two()).min(1 << log_tile);
        let per = span / p;
        let args = Args::new()
            .arg(x.ptr_at(offset))
            .arg(out.ptr_at(0))
            .arg(lines as i64)
            .arg(n as i64)
            .arg(log_p as i32)
            .arg(span.trailing_zeros() as i32)
            .arg(arg);
        let grid = capped(lines.div_ceil(per));
        return launch(Family::Sort, dt, "sort_block", (grid, 1, 1), (THREADS, 1, 1), s, args);
    }
    let padded = lines.checked_mul(p).ok_or_else(|| Error::too_big("sort", &[lines, p], dt))?;
    let bytes = padded.checked_mul(item_bytes(dt)).ok_or_else(|| Error::too_big("sort", &[lines, p], dt))?;
    let items = CudaStorage::alloc(Dtype::U8, bytes, s)?;
    let ip = items.ptr_at(0);
    let init = Args::new().arg(x.ptr_at(offset)).arg(ip).arg(lines as i64).arg(n as i64).arg(log_p as i32);
    launch(Family::Sort, dt, "sort_init", (grid_for(padded, 4)?, 1, 1), (BLOCK, 1, 1), s, init)?;
    let tiles = padded >> log_tile;
    let tile_args = || Args::new().arg(ip).arg(tiles as i64);
    launch(Family::Sort, dt, "sort_tiles", (capped(tiles), 1, 1), (THREADS, 1, 1), s, tile_args())?;
    let pairs = padded / 2;
    let step_grid = grid_for(pairs, 4)?;
    for log_k in log_tile + 1..=log_p {
        // The flip step, then the half cleaners whose partners lie in other tiles.
        for (log_h, flip) in std::iter::once((log_k - 1, 1)).chain((log_tile..log_k - 1).rev().map(|h| (h, 0))) {
            let args = Args::new().arg(ip).arg(pairs as i64).arg(log_k as i32).arg(log_h as i32).arg(flip);
            launch(Family::Sort, dt, "sort_step", (step_grid, 1, 1), (BLOCK, 1, 1), s, args)?;
        }
        launch(Family::Sort, dt, "sort_merge", (capped(tiles), 1, 1), (THREADS, 1, 1), s, tile_args())?;
    }
    let write = Args::new()
        .arg(x.ptr_at(offset))
        .arg(ip)
        .arg(out.ptr_at(0))
        .arg(lines as i64)
        .arg(n as i64)
        .arg(log_p as i32)
        .arg(arg);
    launch(Family::Sort, dt, "sort_write", (grid_for(lines * n, 4)?, 1, 1), (BLOCK, 1, 1), s, write)
}

/// For each element of `values` (through `lv`), its insertion point in the
/// 1-D sorted `seq` (through `ls`, same dtype); row-contiguous uint32
/// output of `lv`'s shape.
pub(crate) fn search_sorted(
    s: &Arc<GpuStream>,
    seq: &CudaStorage,
    ls: &Layout,
    values: &CudaStorage,
    lv: &Layout,
    right: bool,
) -> Result<CudaStorage> {
    let count = lv.size();
    let out = CudaStorage::alloc(Dtype::U32, count, s)?;
    if count == 0 {
        return Ok(out);
    }
    let dt = seq.dtype();
    let (dense_seq, dense_values);
    let (sp, so) = if ls.is_row_contiguous() {
        (seq, ls.offset)
    } else {
        dense_seq = copy(s, seq, ls, dt)?;
        (&dense_seq, 0)
    };
    let (vp, vo) = if lv.is_row_contiguous() {
        (values, lv.offset)
    } else {
        dense_values = copy(s, values, lv, dt)?;
        (&dense_values, 0)
    };
    let args = Args::new()
        .arg(sp.ptr_at(so))
        .arg(ls.size() as i64)
        .arg(vp.ptr_at(vo))
        .arg(out.ptr_at(0))
        .arg(count as i64)
        .arg(right as i32);
    launch(Family::Sort, dt, "searchsorted", (grid_for(count, 1)?, 1, 1), (BLOCK, 1, 1), s, args)?;
    Ok(out)
}
