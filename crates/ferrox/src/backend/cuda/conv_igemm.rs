//! Convolutions as implicit matrix products on the tensor cores
//! (`kernels/conv_igemm.cu`), for float16 and bfloat16: the path
//! `conv.rs` takes where cuDNN is missing, disabled or declines.
//!
//! One kernel computes any convolution node, so the forward pass and the
//! two gradients the `Convolution` vjp builds (the input gradient: a
//! convolution of the output gradient, dilated by the strides, with the
//! flipped, channel-swapped filters; the filter gradient: the input with
//! batch and channels swapped convolved with the output gradient as
//! filters) all run on it, reading their operands in place through the
//! views the vjp makes. Per group, the output `(rows, og)` is the product
//! of the windows `(rows, taps * Cg)`, gathered tile by tile into shared
//! memory and never stored, and the filters. How each operand's tiles are
//! loaded follows its layout (`Load`): 16-byte vectors along the channel
//! axis (a plain input or filters), along the batch axis (the filter
//! gradient's swapped input) or along the output channels (the input
//! gradient's swapped filters), else single elements. Products with few
//! output tiles and a long sum (filter gradients) split the sum over
//! blocks that write float32 partials, which a second kernel adds in a
//! fixed order (so results do not depend on scheduling).

use super::device::gpu;
use super::kernels::Family;
use super::launch::{grid_for, launch, launch_with_shared, Args, BLOCK};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::ConvParams;
use crate::dtype::Dtype;
use crate::error::Result;
use crate::shape::{numel, Layout};
use std::sync::Arc;

/// Output positions per tile (the kernels' BM).
const TILE_M: usize = 128;
/// Sum elements per pipeline stage (FX_IG_BK).
const TILE_K: usize = 32;
/// Pipeline stages (FX_IG_STAGES).
const STAGES: usize = 4;
/// Threads per block (FX_IG_THREADS).
const THREADS: u32 = 256;
/// The most bytes of float32 partial sums a split sum may take.
const PARTIAL_BYTES: usize = 512 << 20;

/// Output-channel tile widths, widest first (the kernels' BN).
const WIDTHS: [usize; 3] = [128, 64, 32];
/// Loader letters for A (the input's windows) and B (the filters).
const A_LOADS: [char; 3] = ['k', 'm', 's'];
const B_LOADS: [char; 3] = ['k', 'n', 's'];

/// The kernels `conv_igemm.cu` defines for `dtype` (for the compile check).
pub(crate) fn kernel_names(dtype: Dtype) -> Vec<String> {
    if !matches!(dtype, Dtype::F16 | Dtype::BF16) {
        return Vec::new();
    }
    let mut names: Vec<String> = WIDTHS
        .iter()
        .flat_map(|bn| A_LOADS.iter().flat_map(move |a| B_LOADS.iter().map(move |b| format!("conv_igemm_{bn}_{a}{b}"))))
        .collect();
    names.push("conv_igemm_reduce".to_string());
    names
}

/// `conv_igemm.cu`'s `FxIgGeom`, field for field (spatial axes padded to
/// three by leading unit axes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct IgGeom {
    xs: [i64; 5],
    ws: [i64; 5],
    input: [i32; 3],
    out: [i32; 3],
    k: [i32; 3],
    stride: [i32; 3],
    lo: [i32; 3],
    kdil: [i32; 3],
    idil: [i32; 3],
    batch: i32,
    opos: i32,
    cg: i32,
    og: i32,
    c_out: i32,
    m: i32,
    kk: i32,
    flip: i32,
    groups: i32,
    splits: i32,
    k_tiles_per_split: i32,
    pad: i32,
}

/// How an operand's tiles are loaded (the kernels' loader letters).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Load {
    /// 8-element vectors along the channel (sum) axis.
    Channels,
    /// 8-element vectors along the other axis: the input's batch, the
    /// filters' output channels.
    Rows,
    /// Single elements through any strides.
    Elements,
}

/// Whether 8-element vectors along `axis` of an operand are 16-byte
/// aligned loads: unit stride there, `extent` (the vector axis's length
/// within one group) a multiple of 8, every other axis of more than one
/// element a stride of a multiple of 8, and an aligned first element.
fn vectors_along(l: &Layout, axis: usize, extent: usize, ptr: u64) -> bool {
    l.strides[axis] == 1
        && extent % 8 == 0
        && ptr % 16 == 0
        && l.shape.iter().zip(&l.strides).enumerate().all(|(a, (&n, &s))| a == axis || n <= 1 || s.rem_euclid(8) == 0)
}

/// `v` as an `i32` with room to spare (index sums in the kernels stay below
/// 2^31), or `None`.
fn small(v: i64) -> Option<i32> {
    (v.abs() < (1 << 29)).then_some(v as i32)
}

/// The convolution through the implicit-GEMM kernels: `Ok(None)` when they
/// do not apply (a dtype other than float16 or bfloat16, sizes past 32-bit
/// indexing, or more groups and splits than a grid holds), for the caller's
/// im2col path.
pub(crate) fn conv_igemm(
    s: &Arc<GpuStream>,
    p: &ConvParams,
    x: &CudaStorage,
    lx: &Layout,
    w: &CudaStorage,
    lw: &Layout,
    out_shape: &[usize],
) -> Result<Option<CudaStorage>> {
    let dt = x.dtype();
    if !matches!(dt, Dtype::F16 | Dtype::BF16) {
        return Ok(None);
    }
    let Some((mut geom, a_load, b_load)) = plan(p, lx, lw, out_shape, x.ptr_at(lx.offset), w.ptr_at(lw.offset)) else {
        return Ok(None);
    };
    let (groups, og) = (p.groups, geom.og as usize);
    let total = numel(out_shape);
    let width = WIDTHS.into_iter().rev().find(|&bn| og <= bn).unwrap_or(WIDTHS[0]);
    let tiles_m = (geom.m as usize).div_ceil(TILE_M);
    let tiles_n = og.div_ceil(width);
    let k_tiles = (geom.kk as usize).div_ceil(TILE_K);
    let splits = split_count(tiles_m * tiles_n * groups, k_tiles, total, gpu()?.sm_count as usize);
    let per = k_tiles.div_ceil(splits);
    let splits = k_tiles.div_ceil(per);
    if tiles_n > 65535 || groups * splits > 65535 || tiles_m > i32::MAX as usize {
        return Ok(None);
    }
    geom.splits = splits as i32;
    geom.k_tiles_per_split = per as i32;
    let out = CudaStorage::alloc(dt, total, s)?;
    let part = match splits > 1 {
        true => Some(CudaStorage::alloc(Dtype::F32, splits * total, s)?),
        false => None,
    };
    let letter = |l: Load, rows: char| match l {
        Load::Channels => 'k',
        Load::Rows => rows,
        Load::Elements => 's',
    };
    let name = format!("conv_igemm_{width}_{}{}", letter(a_load, 'm'), letter(b_load, 'n'));
    let shared = (STAGES * (TILE_M + width) * TILE_K * 2) as u32;
    let args = Args::new()
        .arg(x.ptr_at(lx.offset))
        .arg(w.ptr_at(lw.offset))
        .arg(out.ptr_at(0))
        .arg(part.as_ref().map_or(0, |b| b.ptr_at(0)))
        .arg(geom);
    let grid = (tiles_m as u32, tiles_n as u32, (groups * splits) as u32);
    launch_with_shared(Family::ConvIgemm, dt, &name, grid, (THREADS, 1, 1), shared, s, args)?;
    if let Some(part) = &part {
        let args = Args::new().arg(part.ptr_at(0)).arg(out.ptr_at(0)).arg(total as i64).arg(splits as i32);
        launch(Family::ConvIgemm, dt, "conv_igemm_reduce", (grid_for(total, 4)?, 1, 1), (BLOCK, 1, 1), s, args)?;
    }
    Ok(Some(out))
}

/// How many blocks share each output tile's sum: enough for about two
/// blocks per SM where the tiles alone are fewer, each summing at least 8
/// K tiles, with the partials under [`PARTIAL_BYTES`].
fn split_count(tiles: usize, k_tiles: usize, total: usize, sms: usize) -> usize {
    let target = 2 * sms.max(1);
    if tiles >= target || k_tiles < 16 {
        return 1;
    }
    let by_memory = PARTIAL_BYTES / (4 * total.max(1));
    target.div_ceil(tiles).min(k_tiles / 8).min(by_memory).max(1)
}

/// The kernels' geometry and the two loaders, or `None` where an index
/// would pass 32 bits.
fn plan(
    p: &ConvParams,
    lx: &Layout,
    lw: &Layout,
    out_shape: &[usize],
    x_ptr: u64,
    w_ptr: u64,
) -> Option<(IgGeom, Load, Load)> {
    let dims = p.dims();
    let last = dims + 1;
    let (batch, c_out) = (lx.shape[0], lw.shape[0]);
    let cg = lx.shape[last] / p.groups;
    let og = c_out / p.groups;
    let taps = numel(&lw.shape[1..last]);
    let opos = numel(&out_shape[1..last]);
    let mut g = IgGeom {
        batch: small(batch as i64)?,
        opos: small(opos as i64)?,
        cg: small(cg as i64)?,
        og: small(og as i64)?,
        c_out: small(c_out as i64)?,
        m: small((batch * opos) as i64)?,
        kk: small((taps * cg) as i64)?,
        flip: p.flip as i32,
        groups: small(p.groups as i64)?,
        ..Default::default()
    };
    g.xs[0] = lx.strides[0] as i64;
    g.xs[4] = lx.strides[last] as i64;
    g.ws[0] = lw.strides[0] as i64;
    g.ws[4] = lw.strides[last] as i64;
    for a3 in 0..3 {
        // Axis a3 of the padded geometry is spatial axis a3 - (3 - dims).
        let Some(a) = (a3 + dims).checked_sub(3) else {
            (g.input[a3], g.out[a3], g.k[a3]) = (1, 1, 1);
            (g.stride[a3], g.kdil[a3], g.idil[a3]) = (1, 1, 1);
            continue;
        };
        g.input[a3] = small(lx.shape[a + 1] as i64)?;
        g.out[a3] = small(out_shape[a + 1] as i64)?;
        g.k[a3] = small(lw.shape[a + 1] as i64)?;
        g.stride[a3] = small(p.stride[a])?;
        g.lo[a3] = small(p.padding_lo[a])?;
        g.kdil[a3] = small(p.kernel_dilation[a])?;
        g.idil[a3] = small(p.input_dilation[a])?;
        g.xs[a3 + 1] = lx.strides[a + 1] as i64;
        g.ws[a3 + 1] = lw.strides[a + 1] as i64;
        // Window positions the kernels form: o * stride - lo + t * kdil.
        let reach = out_shape[a + 1] as i64 * p.stride[a] + lw.shape[a + 1] as i64 * p.kernel_dilation[a];
        small(reach + p.padding_lo[a].abs())?;
    }
    let a_load = if vectors_along(lx, last, cg, x_ptr) {
        Load::Channels
    } else if vectors_along(lx, 0, batch, x_ptr) {
        Load::Rows
    } else {
        Load::Elements
    };
    let b_load = if vectors_along(lw, last, cg, w_ptr) {
        Load::Channels
    } else if vectors_along(lw, 0, og, w_ptr) {
        Load::Rows
    } else {
        Load::Elements
    };
    Some((g, a_load, b_load))
}
