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
use super::elementwise::{copy, fill, FillValue};
use super::kernels::Family;
use super::launch::{grid_for, launch, launch_with_shared, Args, BLOCK};
use super::scatter::copy_into;
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::ConvParams;
use crate::dtype::Dtype;
use crate::error::Result;
use crate::shape::{contiguous_strides, numel, Layout};
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
    ys: [i64; 4],
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
    let (x_copy, lx, w_copy, lw) = vector_operands(s, p, x, lx, w, lw)?;
    let (x, w) = (x_copy.as_ref().unwrap_or(x), w_copy.as_ref().unwrap_or(w));
    let phases = phases(p, &lw, out_shape);
    let mut plans = Vec::with_capacity(phases.len());
    for ph in &phases {
        let x_ptr = x.ptr_at(lx.offset);
        let Some(plan) = plan(&ph.p, &lx, &ph.lw, &ph.y, x_ptr, w.ptr_at(ph.lw.offset)) else {
            return Ok(None);
        };
        plans.push(plan);
    }
    let out = CudaStorage::alloc(dt, numel(out_shape), s)?;
    for (ph, (geom, a_load, b_load)) in phases.iter().zip(plans) {
        let ok = launch_phase(
            s,
            geom,
            (a_load, b_load),
            x.ptr_at(lx.offset),
            w.ptr_at(ph.lw.offset),
            &out,
            &ph.y,
            phases.len() == 1,
        )?;
        if !ok {
            return Ok(None);
        }
    }
    Ok(Some(out))
}

/// The operands as the vector loaders read them: as they are where they
/// can; else, with one group and a channel count that is no multiple of 8
/// (the ResNet stem's 3), both copied with their channels zero-padded to
/// the next multiple of 8 (the padding adds zeros to the sums); else the
/// operand the loaders cannot vectorize copied row-contiguous (the filter
/// gradient's swapped input, the input gradient's swapped filters).
fn vector_operands(
    s: &Arc<GpuStream>,
    p: &ConvParams,
    x: &CudaStorage,
    lx: &Layout,
    w: &CudaStorage,
    lw: &Layout,
) -> Result<(Option<CudaStorage>, Layout, Option<CudaStorage>, Layout)> {
    let last = p.dims() + 1;
    let (cg, og, batch) = (lx.shape[last] / p.groups, lw.shape[0] / p.groups, lx.shape[0]);
    let (x_ptr, w_ptr) = (x.ptr_at(lx.offset), w.ptr_at(lw.offset));
    let a_vec = vectors_along(lx, last, cg, x_ptr) || vectors_along(lx, 0, batch, x_ptr);
    let b_vec = vectors_along(lw, last, cg, w_ptr) || vectors_along(lw, 0, og, w_ptr);
    if a_vec && b_vec {
        return Ok((None, lx.clone(), None, lw.clone()));
    }
    if p.groups == 1 && cg % 8 != 0 {
        let c8 = cg.next_multiple_of(8);
        let (xp, lxp) = channels_padded(s, x, lx, c8)?;
        let (wp, lwp) = channels_padded(s, w, lw, c8)?;
        return Ok((Some(xp), lxp, Some(wp), lwp));
    }
    let contiguous = |b: &CudaStorage, l: &Layout, vec: bool| -> Result<(Option<CudaStorage>, Layout)> {
        match vec {
            true => Ok((None, l.clone())),
            false => Ok((Some(copy(s, b, l, b.dtype())?), Layout::contiguous(&l.shape))),
        }
    };
    let (xc, lxc) = contiguous(x, lx, a_vec)?;
    let (wc, lwc) = contiguous(w, lw, b_vec)?;
    Ok((xc, lxc, wc, lwc))
}

/// A row-contiguous copy of `b` (read through `l`) with its last axis
/// zero-padded to `c` elements.
fn channels_padded(s: &Arc<GpuStream>, b: &CudaStorage, l: &Layout, c: usize) -> Result<(CudaStorage, Layout)> {
    let mut shape = l.shape.clone();
    *shape.last_mut().expect("a convolution operand has a channel axis") = c;
    let out = fill(s, FillValue::default(), b.dtype(), numel(&shape))?;
    let window = Layout { shape: l.shape.clone(), strides: contiguous_strides(&shape), offset: 0 };
    copy_into(s, b, l, &out, &window)?;
    Ok((out, Layout::contiguous(&shape)))
}

/// One launch's share of a convolution: its parameters, its filters' view
/// and where its outputs go (`y`: shape and strides into the output).
struct Phase {
    p: ConvParams,
    lw: Layout,
    y: Layout,
}

/// The launches computing the convolution. One, the node itself, unless
/// an axis dilates the input (the input gradient of a strided convolution,
/// a transposed convolution) with unit stride and undilated filters there:
/// then only the taps meeting input elements, not the holes between them,
/// are summed, one launch per phase (the output positions with the same
/// remainders modulo the dilations). Output position `o = r + d j` of an
/// axis dilated by `d` meets input element `j + i + c` at taps
/// `f0 + d i` (`f0 = (lo - r) mod d`, `c = (r - lo + f0) / d`): a plain
/// convolution of `j` over `i` with its own filter view, unflipped.
fn phases(p: &ConvParams, lw: &Layout, out_shape: &[usize]) -> Vec<Phase> {
    let dims = p.dims();
    let y = Layout::contiguous(out_shape);
    let phased = p.input_dilation.iter().any(|&d| d > 1)
        && (0..dims).all(|a| p.input_dilation[a] == 1 || (p.stride[a] == 1 && p.kernel_dilation[a] == 1));
    if !phased {
        return vec![Phase { p: p.clone(), lw: lw.clone(), y }];
    }
    let counts: Vec<i64> = p.input_dilation.clone();
    let mut out = Vec::new();
    let mut r = vec![0i64; dims];
    loop {
        if let Some(ph) = phase(p, lw, &y, &r) {
            out.push(ph);
        }
        // Next remainder combination (last axis fastest).
        let mut a = dims;
        loop {
            if a == 0 {
                return out;
            }
            a -= 1;
            r[a] += 1;
            if r[a] < counts[a] {
                break;
            }
            r[a] = 0;
        }
    }
}

/// The phase of remainders `r` (see [`phases`]), or `None` when it holds no
/// output positions.
fn phase(p: &ConvParams, lw: &Layout, y: &Layout, r: &[i64]) -> Option<Phase> {
    let mut q = p.clone();
    q.flip = false;
    let (mut lwq, mut yq) = (lw.clone(), y.clone());
    let mut w_offset = lw.offset as isize;
    for (a, &ra) in r.iter().enumerate() {
        let (k, ws) = (lw.shape[a + 1] as i64, lw.strides[a + 1]);
        let d = p.input_dilation[a];
        // The input-side taps this phase sums: f0 + step * i, i < count.
        let (f0, step, count) = match d {
            1 => (0, 1, k),
            _ => {
                let outs = (y.shape[a + 1] as i64 - ra).max(0);
                if outs == 0 {
                    return None;
                }
                yq.shape[a + 1] = (outs as usize).div_ceil(d as usize);
                yq.strides[a + 1] = y.strides[a + 1] * d as isize;
                yq.offset += ra as usize * y.strides[a + 1] as usize;
                let f0 = (p.padding_lo[a] - ra).rem_euclid(d);
                q.padding_lo[a] = -(ra - p.padding_lo[a] + f0) / d;
                q.input_dilation[a] = 1;
                (f0, d, if f0 < k { (k - f0 + d - 1) / d } else { 0 })
            }
        };
        // The filter taps meeting them (mirrored when the node flips).
        lwq.shape[a + 1] = count as usize;
        if count > 0 {
            let (first, dir) = if p.flip { (k - 1 - f0, -step) } else { (f0, step) };
            w_offset += first as isize * ws;
            lwq.strides[a + 1] = dir as isize * ws;
        }
    }
    lwq.offset = w_offset as usize;
    Some(Phase { p: q, lw: lwq, y: yq })
}

/// Launches the kernels for one phase into `out` (through `y`); `false`
/// where the grid would not hold it. `split_ok`: whether the sum may be
/// split (the output row-contiguous: one phase).
#[allow(clippy::too_many_arguments)]
fn launch_phase(
    s: &Arc<GpuStream>,
    mut geom: IgGeom,
    (a_load, b_load): (Load, Load),
    x_ptr: u64,
    w_ptr: u64,
    out: &CudaStorage,
    y: &Layout,
    split_ok: bool,
) -> Result<bool> {
    let dt = out.dtype();
    let (groups, og) = (geom.groups as usize, geom.og as usize);
    let part_total = geom.m as usize * geom.c_out as usize;
    let width = WIDTHS.into_iter().rev().find(|&bn| og <= bn).unwrap_or(WIDTHS[0]);
    let tiles_m = (geom.m as usize).div_ceil(TILE_M);
    let tiles_n = og.div_ceil(width);
    let k_tiles = (geom.kk as usize).div_ceil(TILE_K);
    let splits = match split_ok {
        true => split_count(tiles_m * tiles_n * groups, k_tiles, part_total, gpu()?.sm_count as usize),
        false => 1,
    };
    let per = k_tiles.div_ceil(splits).max(1);
    let splits = k_tiles.div_ceil(per).max(1);
    if tiles_n > 65535 || groups * splits > 65535 || tiles_m > i32::MAX as usize {
        return Ok(false);
    }
    geom.splits = splits as i32;
    geom.k_tiles_per_split = per as i32;
    let part = match splits > 1 {
        true => Some(CudaStorage::alloc(Dtype::F32, splits * part_total, s)?),
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
        .arg(x_ptr)
        .arg(w_ptr)
        .arg(out.ptr_at(y.offset))
        .arg(part.as_ref().map_or(0, |b| b.ptr_at(0)))
        .arg(geom);
    let grid = (tiles_m as u32, tiles_n as u32, (groups * splits) as u32);
    launch_with_shared(Family::ConvIgemm, dt, &name, grid, (THREADS, 1, 1), shared, s, args)?;
    if let Some(part) = &part {
        let args = Args::new().arg(part.ptr_at(0)).arg(out.ptr_at(0)).arg(part_total as i64).arg(splits as i32);
        launch(Family::ConvIgemm, dt, "conv_igemm_reduce", (grid_for(part_total, 4)?, 1, 1), (BLOCK, 1, 1), s, args)?;
    }
    Ok(true)
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
fn plan(p: &ConvParams, lx: &Layout, lw: &Layout, y: &Layout, x_ptr: u64, w_ptr: u64) -> Option<(IgGeom, Load, Load)> {
    let out_shape = &y.shape;
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
    g.ys[0] = y.strides[0] as i64;
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
        g.ys[a3 + 1] = y.strides[a + 1] as i64;
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
