//! Scans along one axis (cumsum, cumprod, cummax, cummin, logcumsumexp).
//!
//! The input (made contiguous first if it is not) is viewed as
//! `[outer, n, inner]`, scanning `n`. The kernels (`kernels/scan.cu`):
//! - last axis (`inner == 1`), short rows: a warp scans groups of whole rows
//!   as one segmented scan (`<op>_warps`);
//! - last axis, longer rows: blocks of 1-8 warps scan tiles of 1024
//!   elements per warp (512 for 8-byte dtypes) held in registers (16-byte
//!   loads); the tiles of one row are chained in a single pass by decoupled
//!   look-back (`<op>_tiles`);
//! - another axis with many columns or few rows: one thread per column
//!   walks the axis, coalesced across the columns (`<op>_cols`);
//! - another axis with few, long columns: tiles of 128 rows by 32 columns
//!   chained along the axis by decoupled look-back (`<op>_col_tiles`);
//! - fewer than 16 columns and few of them: transposed to rows and back.
//!
//! Each op's kernels are one module per dtype (`Module::Scan`).

use super::device::{driver_error, gpu};
use super::elementwise::copy;
use super::kernels::Module;
use super::launch::{launch_in, Args};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::ScanOp;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::{numel, Layout};
use cudarc::driver::sys;
use std::sync::Arc;

/// Rows up to this long go to `<op>_warps`.
const WARP_ROWS_MAX: usize = 256;
/// Elements a warp of `<op>_warps` covers with whole rows.
const WARP_SEGMENT: usize = 512;

/// Elements per warp of a `<op>_tiles` tile (`FX_SCAN_SEG`).
fn tile_segment(dt: Dtype) -> usize {
    if dt.size() == 8 {
        512
    } else {
        1024
    }
}
/// Rows (along the scanned axis) and columns of a `<op>_col_tiles` tile.
const COL_TILE: (usize, usize) = (128, 32);

/// Bit 0: reverse; bit 1: exclusive (the kernels' `mode`).
fn mode(reverse: bool, inclusive: bool) -> i32 {
    reverse as i32 | ((!inclusive as i32) << 1)
}

/// Scans `op` along `axis` of the elements `l` selects; row-contiguous output
/// of the same shape and dtype.
pub(crate) fn scan(
    s: &Arc<GpuStream>,
    op: ScanOp,
    x: &CudaStorage,
    l: &Layout,
    axis: usize,
    reverse: bool,
    inclusive: bool,
) -> Result<CudaStorage> {
    let dt = x.dtype();
    if op == ScanOp::LogAddExp && !dt.is_inexact() {
        return Err(Error::UnsupportedDtype {
            op: op.name(),
            dtype: dt,
            detail: "The kernel takes inexact dtypes only",
        });
    }
    let total = l.size();
    if total == 0 {
        return CudaStorage::alloc(dt, 0, s);
    }
    let dense;
    let (src, offset) = if l.is_row_contiguous() {
        (x, l.offset)
    } else {
        dense = copy(s, x, l, dt)?;
        (&dense, 0)
    };
    let (outer, n, inner) = (numel(&l.shape[..axis]), l.shape[axis], numel(&l.shape[axis + 1..]));
    let mode = mode(reverse, inclusive);
    let sms = gpu()?.sm_count as usize;
    if inner == 1 {
        let out = CudaStorage::alloc(dt, total, s)?;
        rows(s, op, src, offset, &out, outer, n, mode)?;
        return Ok(out);
    }
    let columns = outer * inner;
    if n <= 16 || columns >= sms * 512 {
        let out = CudaStorage::alloc(dt, total, s)?;
        let grid = columns.div_ceil(256).min(sms * 32) as u32;
        let args = Args::new()
            .arg(src.ptr_at(offset))
            .arg(out.ptr_at(0))
            .arg(outer as i64)
            .arg(n as i64)
            .arg(inner as i64)
            .arg(mode);
        launch_in(Module::Scan(op, dt), &format!("{}_cols", op.name()), (grid, 1, 1), (256, 1, 1), s, args)?;
        return Ok(out);
    }
    if inner >= 16 {
        let out = CudaStorage::alloc(dt, total, s)?;
        col_tiles(s, op, src, offset, &out, outer, n, inner, mode)?;
        return Ok(out);
    }
    // Few narrow columns: scan them as rows of a transposed copy.
    let lines = Layout { shape: vec![outer, n, inner], strides: vec![(n * inner) as isize, inner as isize, 1], offset };
    let as_rows = copy(s, src, &lines.permute(&[0, 2, 1]), dt)?;
    let scanned = CudaStorage::alloc(dt, total, s)?;
    rows(s, op, &as_rows, 0, &scanned, outer * inner, n, mode)?;
    copy(s, &scanned, &Layout::contiguous(&[outer, inner, n]).permute(&[0, 2, 1]), dt)
}

/// Scans the rows of a contiguous `[rows, n]` array at `offset` of `x` into `out`.
#[allow(clippy::too_many_arguments)]
fn rows(
    s: &Arc<GpuStream>,
    op: ScanOp,
    x: &CudaStorage,
    offset: usize,
    out: &CudaStorage,
    rows: usize,
    n: usize,
    mode: i32,
) -> Result<()> {
    let (module, name) = (Module::Scan(op, x.dtype()), op.name());
    if n <= WARP_ROWS_MAX {
        let rows_per_warp = (WARP_SEGMENT / n).max(1);
        let groups = rows.div_ceil(rows_per_warp);
        let grid = groups.div_ceil(8).min(gpu()?.sm_count as usize * 64) as u32;
        let args = Args::new()
            .arg(x.ptr_at(offset))
            .arg(out.ptr_at(0))
            .arg(rows as i64)
            .arg(n as i64)
            .arg(rows_per_warp as i64)
            .arg(mode);
        return launch_in(module, &format!("{name}_warps"), (grid, 1, 1), (256, 1, 1), s, args);
    }
    let segment = tile_segment(x.dtype());
    let warps = n.div_ceil(segment).min(8);
    let per_row = n.div_ceil(warps * segment);
    let tiles = grid_len(name, rows * per_row)?;
    let status = if per_row > 1 { Some(Status::new(s, name, tiles, 1, packed_status(x.dtype()))?) } else { None };
    let args = Args::new().arg(x.ptr_at(offset)).arg(out.ptr_at(0)).arg(rows as i64).arg(n as i64);
    let args = Status::args(status.as_ref(), args).arg(mode);
    launch_in(module, &format!("{name}_tiles"), (tiles as u32, 1, 1), ((warps * 32) as u32, 1, 1), s, args)
}

/// Scans the middle axis of a contiguous `[outer, n, inner]` array at
/// `offset` of `x` into `out` with look-back tiles.
#[allow(clippy::too_many_arguments)]
fn col_tiles(
    s: &Arc<GpuStream>,
    op: ScanOp,
    x: &CudaStorage,
    offset: usize,
    out: &CudaStorage,
    outer: usize,
    n: usize,
    inner: usize,
    mode: i32,
) -> Result<()> {
    let name = op.name();
    let tiles = grid_len(name, outer * inner.div_ceil(COL_TILE.1) * n.div_ceil(COL_TILE.0))?;
    let status = Status::new(s, name, tiles, COL_TILE.1, false)?;
    let args = Args::new().arg(x.ptr_at(offset)).arg(out.ptr_at(0)).arg(outer as i64).arg(n as i64).arg(inner as i64);
    let args = Status::args(Some(&status), args).arg(mode);
    launch_in(Module::Scan(op, x.dtype()), &format!("{name}_col_tiles"), (tiles as u32, 1, 1), (32, 8, 1), s, args)
}

/// Whether row tiles of `dt` publish packed status words (`FX_SCAN_PACKED`:
/// compute types of up to 4 bytes; f16 and bf16 compute in f32).
fn packed_status(dt: Dtype) -> bool {
    dt.size() <= 4 && dt != Dtype::C64
}

/// A grid of `tiles` blocks, checked against the launch limit.
fn grid_len(op: &'static str, tiles: usize) -> Result<usize> {
    if tiles > i32::MAX as usize {
        return Err(Error::Device {
            op,
            msg: format!("the scan needs {tiles} blocks; the GPU launches at most 2^31 - 1."),
        });
    }
    Ok(tiles)
}

/// The look-back state of a tiled scan: per tile a flag and `width` 8-byte
/// slots for its aggregate and its inclusive prefix, plus the counter that
/// numbers tiles as they start. Flags and counter start at zero, and the
/// aggregate slots too where `packed` (row tiles of compute types up to 4
/// bytes publish flag and value as one word there).
struct Status {
    buffer: CudaStorage,
    tiles: usize,
    width: usize,
}

impl Status {
    fn new(s: &Arc<GpuStream>, op: &'static str, tiles: usize, width: usize, packed: bool) -> Result<Status> {
        let flag_bytes = (4 * (tiles + 1)).next_multiple_of(16);
        let slot_bytes = 8 * tiles * width;
        let buffer = CudaStorage::alloc(Dtype::U8, flag_bytes + 2 * slot_bytes, s)?;
        let zeroed = if packed { flag_bytes + slot_bytes } else { flag_bytes };
        // SAFETY: the range lies inside the allocation; ordered on `s`
        // before the kernel that reads it.
        unsafe { sys::cuMemsetD8Async(buffer.ptr_at(0), 0, zeroed, s.raw) }.result().map_err(driver_error(op))?;
        Ok(Status { buffer, tiles, width })
    }

    /// Appends the kernels' `flags, aggs, incls, counter` arguments (null
    /// pointers without look-back).
    fn args(status: Option<&Status>, args: Args) -> Args {
        match status {
            None => args.arg(0u64).arg(0u64).arg(0u64).arg(0u64),
            Some(st) => {
                let flag_bytes = (4 * (st.tiles + 1)).next_multiple_of(16);
                let slot_bytes = 8 * st.tiles * st.width;
                args.arg(st.buffer.ptr_at(0))
                    .arg(st.buffer.ptr_at(flag_bytes))
                    .arg(st.buffer.ptr_at(flag_bytes + slot_bytes))
                    .arg(st.buffer.ptr_at(4 * st.tiles))
            }
        }
    }
}
