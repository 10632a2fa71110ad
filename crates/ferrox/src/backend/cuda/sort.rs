//! Sorting along one axis (sort, argsort; partitions run as sorts) and
//! searchsorted, with the kernels of `kernels/sort.cu` (one module per
//! dtype, `Family::Sort`).
//!
//! The lines along the sorted axis are made contiguous rows first (a copy
//! unless the input is row-contiguous with the axis last) and the sorted
//! rows are copied back to the input's axis order. Sorts are stable:
//! - rows of up to [`BITONIC_MAX`] elements: a bitonic network over (key,
//!   position) items in shared memory, several rows per block
//!   (`sort_block`);
//! - rows of up to one radix tile (4096 elements; 2048 for 8-byte dtypes):
//!   one block radix sorts a row in shared memory (`radix_block`);
//! - longer rows: a radix sort over 8-bit digits, one pass per byte of the
//!   dtype, each pass a histogram per tile (`radix_hist`), a scan of the
//!   histograms per line (`radix_scan`, or `radix_scan_lines` for few
//!   tiles a line) and a stable scatter (`radix_scatter`) between ping-pong
//!   key and position buffers.

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
    ["sort_block", "radix_block", "radix_hist", "radix_scan", "radix_scan_lines", "radix_scatter", "searchsorted"];

/// Threads per block of `sort_block` (`FX_SORT_THREADS`).
const BITONIC_THREADS: u32 = 512;

/// Threads per block of the radix kernels (`FX_RADIX_THREADS`).
const RADIX_THREADS: u32 = 256;

/// The longest rows the bitonic network sorts; it beats the radix sort
/// below this length (measured on the H200).
const BITONIC_MAX: usize = 2048;

/// Items a block sorts in shared memory: the bitonic network's
/// (`FX_SORT_TILE`, 32 KiB of items) and the radix tile (`FX_RADIX_TILE`).
fn tiles(dt: Dtype) -> (usize, usize) {
    if dt.size() == 8 {
        (2048, 2048)
    } else {
        (4096, 4096)
    }
}

/// Lines with at most this many radix tiles scan their histograms with one
/// thread per digit (`radix_scan_lines`).
const SCAN_LINES_MAX_TILES: usize = 16;

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
    let (bitonic_tile, radix_tile) = tiles(dt);
    if n <= BITONIC_MAX.min(bitonic_tile) {
        let p = n.next_power_of_two();
        // As many whole rows per block as fit, no more than there are.
        let span = p.saturating_mul(lines.next_power_of_two()).min(bitonic_tile);
        let args = Args::new()
            .arg(x.ptr_at(offset))
            .arg(out.ptr_at(0))
            .arg(lines as i64)
            .arg(n as i64)
            .arg(p.trailing_zeros() as i32)
            .arg(span.trailing_zeros() as i32)
            .arg(arg as i32);
        let grid = capped(lines.div_ceil(span / p));
        return launch(Family::Sort, dt, "sort_block", (grid, 1, 1), (BITONIC_THREADS, 1, 1), s, args);
    }
    if n <= radix_tile {
        let args = Args::new().arg(x.ptr_at(offset)).arg(out.ptr_at(0)).arg(lines as i64).arg(n as i64).arg(arg as i32);
        return launch(Family::Sort, dt, "radix_block", (capped(lines), 1, 1), (RADIX_THREADS, 1, 1), s, args);
    }
    radix_sort_long(s, x, offset, out, lines, n, radix_tile, arg)
}

/// The multi-pass radix sort of rows longer than a tile (see the module doc).
#[allow(clippy::too_many_arguments)]
fn radix_sort_long(
    s: &Arc<GpuStream>,
    x: &CudaStorage,
    offset: usize,
    out: &CudaStorage,
    lines: usize,
    n: usize,
    tile: usize,
    arg: bool,
) -> Result<()> {
    let dt = x.dtype();
    let passes = dt.size();
    let too_big = || Error::too_big("sort", &[lines, n], dt);
    let bpl = n.div_ceil(tile);
    let bpl_i32 = i32::try_from(bpl).map_err(|_| too_big())?;
    let tiles = lines.checked_mul(bpl).ok_or_else(too_big)?;
    let total = lines * n;
    let counts = CudaStorage::alloc(Dtype::U32, tiles.checked_mul(256).ok_or_else(too_big)?, s)?;
    let totals = CudaStorage::alloc(Dtype::U32, lines.checked_mul(256).ok_or_else(too_big)?, s)?;
    // Ping-pong keys (8 bytes for 8-byte dtypes, else 4) and positions
    // between passes: none for one pass, one set for two.
    let key_dt = if dt.size() == 8 { Dtype::U64 } else { Dtype::U32 };
    let sets = (passes - 1).min(2);
    let mut keys = Vec::with_capacity(sets);
    let mut positions = Vec::with_capacity(sets);
    for _ in 0..sets {
        keys.push(CudaStorage::alloc(key_dt, total, s)?);
        positions.push(CudaStorage::alloc(Dtype::U32, total, s)?);
    }
    // Buffers a pass does not touch get `out` as a placeholder pointer.
    let key_ptr = |pass: usize| keys.get(pass % 2).map_or(out.ptr_at(0), |k| k.ptr_at(0));
    let pos_ptr = |pass: usize| positions.get(pass % 2).map_or(out.ptr_at(0), |p| p.ptr_at(0));
    let grid = capped(tiles);
    for pass in 0..passes {
        let shift = 8 * pass as i32;
        let (first, last) = (pass == 0, pass + 1 == passes);
        // Pass p reads set (p + 1) % 2 (written by pass p - 1) and writes set p % 2.
        let (keys_in, pos_in) = (key_ptr(pass + 1), pos_ptr(pass + 1));
        let hist = Args::new()
            .arg(x.ptr_at(offset))
            .arg(keys_in)
            .arg(counts.ptr_at(0))
            .arg(lines as i64)
            .arg(n as i64)
            .arg(bpl_i32)
            .arg(shift)
            .arg(first as i32);
        launch(Family::Sort, dt, "radix_hist", (grid, 1, 1), (RADIX_THREADS, 1, 1), s, hist)?;
        let scan = Args::new().arg(counts.ptr_at(0)).arg(totals.ptr_at(0)).arg(lines as i64).arg(bpl_i32);
        if bpl <= SCAN_LINES_MAX_TILES {
            launch(Family::Sort, dt, "radix_scan_lines", (capped(lines), 1, 1), (RADIX_THREADS, 1, 1), s, scan)?;
        } else {
            let grid_y = lines.min(65_535) as u32;
            launch(Family::Sort, dt, "radix_scan", (256, grid_y, 1), (RADIX_THREADS, 1, 1), s, scan)?;
        }
        let scatter = Args::new()
            .arg(x.ptr_at(offset))
            .arg(keys_in)
            .arg(pos_in)
            .arg(key_ptr(pass))
            .arg(pos_ptr(pass))
            .arg(out.ptr_at(0))
            .arg(counts.ptr_at(0))
            .arg(totals.ptr_at(0))
            .arg(lines as i64)
            .arg(n as i64)
            .arg(bpl_i32)
            .arg(shift)
            .arg(first as i32)
            .arg(last as i32)
            .arg(arg as i32);
        launch(Family::Sort, dt, "radix_scatter", (grid, 1, 1), (RADIX_THREADS, 1, 1), s, scatter)?;
    }
    Ok(())
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
