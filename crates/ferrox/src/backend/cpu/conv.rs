//! Convolutions (parameters in `backend/conv_params.rs`) as GEMMs over
//! im2col tiles: rayon tasks each take a block of output positions, pack
//! their input windows into a cache-sized tile and multiply it with the
//! packed filters through the `gemm` crate, so the full im2col matrix never
//! exists. Depthwise convolutions (one input channel per group) use a
//! direct loop over filter taps instead, vectorized across channels.
//! float32 and float64 compute in their own type; float16 and bfloat16
//! operands are widened to float32 once and the result rounded once (as
//! `matmul.rs` does).
//!
//! Input dilation (transposed convolutions, input gradients of strided
//! ones) is not materialized: along an axis with dilation `D`, output
//! positions fall into classes by their offset modulo `D`, and each class
//! multiplies only the filter taps that meet real input elements, skipping
//! the products with the inserted zeros.

use super::buffer_dtype;
use super::elementwise::{cast_buffer, copy_buffer};
use super::storage::{zeroed_vec, CpuBuffer, CpuElement};
use super::strided::SendPtr;
use crate::backend::ConvParams;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::{numel, Layout};
use rayon::prelude::*;

/// Elements per im2col tile (512 KiB of float32).
const TILE: usize = 1 << 17;
/// Output positions per tile, at least and at most (at least: the GEMM
/// packs a tile's filters once for all its rows).
const ROWS_MIN: usize = 128;
const ROWS_MAX: usize = 512;
/// Multiply-adds below which a convolution runs on one thread.
const PARALLEL_WORK: usize = 1 << 20;

/// The element types the kernel computes in.
trait ConvFloat: CpuElement + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> + Send + Sync + 'static {}
impl ConvFloat for f32 {}
impl ConvFloat for f64 {}

/// The convolution of `x` `(N, in..., C_in)` with `w` `(C_out, k..., C_in /
/// groups)`, both of one real float dtype under any layouts; the output
/// `(N, out..., C_out)` is row-contiguous.
pub fn conv(p: &ConvParams, x: &CpuBuffer, lx: &Layout, w: &CpuBuffer, lw: &Layout) -> Result<CpuBuffer> {
    let out_shape = p.output_shape("conv", &lx.shape, &lw.shape)?;
    let dtype = buffer_dtype(x);
    if let Dtype::F16 | Dtype::BF16 = dtype {
        let x32 = cast_buffer(x, lx, Dtype::F32)?;
        let w32 = cast_buffer(w, lw, Dtype::F32)?;
        let out = conv(p, &x32, &Layout::contiguous(&lx.shape), &w32, &Layout::contiguous(&lw.shape))?;
        return cast_buffer(&out, &Layout::contiguous(&out_shape), dtype);
    }
    // The packing copies runs of channels; give it unit channel stride.
    let nd = lx.ndim();
    let (x_copy, lx) = if lx.strides[nd - 1] != 1 && lx.shape[nd - 1] > 1 && lx.size() > 0 {
        (Some(copy_buffer(x, lx)?), Layout::contiguous(&lx.shape))
    } else {
        (None, lx.clone())
    };
    let x = x_copy.as_ref().unwrap_or(x);
    let mismatch = || Error::invalid("conv", "operands differ in dtype");
    match x {
        CpuBuffer::F32(xv) => {
            Ok(CpuElement::into_buffer(typed(p, xv, &lx, f32::slice_of(w).ok_or_else(mismatch)?, lw, &out_shape)?))
        }
        CpuBuffer::F64(xv) => {
            Ok(CpuElement::into_buffer(typed(p, xv, &lx, f64::slice_of(w).ok_or_else(mismatch)?, lw, &out_shape)?))
        }
        _ => Err(Error::invalid("conv", format!("needs real float operands, got {dtype}."))),
    }
}

/// The output positions and filter taps of one class along one axis:
/// positions whose taps in `taps` meet input elements (the others meet
/// inserted zeros).
struct AxisClass {
    positions: Vec<usize>,
    taps: Vec<usize>,
}

/// The classes of axis `a` (one, holding everything, without input dilation).
fn axis_classes(p: &ConvParams, a: usize, out: usize, k: usize) -> Vec<AxisClass> {
    let (s, lo, kd, d) = (p.stride[a], p.padding_lo[a], p.kernel_dilation[a], p.input_dilation[a]);
    if d == 1 {
        return vec![AxisClass { positions: (0..out).collect(), taps: (0..k).collect() }];
    }
    let mut classes: Vec<(i64, AxisClass)> = Vec::new();
    for o in 0..out {
        let r = (o as i64 * s - lo).rem_euclid(d);
        match classes.iter_mut().find(|(q, _)| *q == r) {
            Some((_, c)) => c.positions.push(o),
            None => classes.push((r, AxisClass { positions: vec![o], taps: Vec::new() })),
        }
    }
    for (r, c) in &mut classes {
        c.taps = (0..k).filter(|&i| (*r + i as i64 * kd) % d == 0).collect();
    }
    // Positions whose every tap meets a zero keep their zero output.
    classes.into_iter().map(|(_, c)| c).filter(|c| !c.taps.is_empty()).collect()
}

/// Everything one convolution's tiles share.
struct Geometry<'a, T> {
    p: &'a ConvParams,
    dims: usize,
    x: &'a [T],
    lx: &'a Layout,
    in_sizes: &'a [usize],
    k_sizes: &'a [usize],
    /// Output rows (positions) per step along each spatial axis.
    out_row_strides: Vec<usize>,
    spatial_rows: usize,
    c_out: usize,
    cg: usize,
    og: usize,
}

/// One class of output positions (a product of per-axis classes).
struct Class<'a> {
    /// The per-axis classes.
    axes: Vec<&'a AxisClass>,
    /// Number of filter taps (the product of the axes' taps).
    taps: usize,
    /// Where axis `a`'s taps start in a row of the per-tap index table.
    koff: [usize; 4],
    /// Number of output positions, batch included.
    rows: usize,
}

/// [`conv`] for float32 or float64 operands (`x` with unit channel stride).
fn typed<T: ConvFloat>(
    p: &ConvParams,
    x: &[T],
    lx: &Layout,
    w: &[T],
    lw: &Layout,
    out_shape: &[usize],
) -> Result<Vec<T>> {
    let dims = p.dims();
    let mut out = zeroed_vec::<T>(numel(out_shape))?;
    let (c_in, c_out) = (lx.shape[dims + 1], lw.shape[0]);
    let cg = c_in / p.groups;
    if out.is_empty() || cg == 0 || lx.size() == 0 {
        return Ok(out); // nothing to sum: zeros
    }
    let out_sizes = &out_shape[1..=dims];
    let mut out_row_strides = vec![1usize; dims];
    for a in (0..dims - 1).rev() {
        out_row_strides[a] = out_row_strides[a + 1] * out_sizes[a + 1];
    }
    let geo = Geometry {
        p,
        dims,
        x,
        lx,
        in_sizes: &lx.shape[1..=dims],
        k_sizes: &lw.shape[1..=dims],
        out_row_strides,
        spatial_rows: numel(out_sizes),
        c_out,
        cg,
        og: c_out / p.groups,
    };
    let per_axis: Vec<Vec<AxisClass>> = (0..dims).map(|a| axis_classes(p, a, out_sizes[a], geo.k_sizes[a])).collect();
    let mut combos: Vec<Vec<usize>> = vec![Vec::new()];
    for classes in &per_axis {
        combos = combos.iter().flat_map(|c| (0..classes.len()).map(move |i| [&c[..], &[i]].concat())).collect();
    }
    let dense = p.input_dilation.iter().all(|&d| d == 1);
    let out_ptr = SendPtr(out.as_mut_ptr());
    for combo in combos {
        let axes: Vec<&AxisClass> = combo.iter().enumerate().map(|(a, &i)| &per_axis[a][i]).collect();
        let mut koff = [0usize; 4];
        for a in 0..dims {
            koff[a + 1] = koff[a] + axes[a].taps.len();
        }
        let cls = Class {
            taps: axes.iter().map(|c| c.taps.len()).product(),
            rows: lx.shape[0] * axes.iter().map(|c| c.positions.len()).product::<usize>(),
            axes,
            koff,
        };
        if cls.rows == 0 || cls.taps == 0 {
            continue; // no output positions, or filters without taps: zeros
        }
        if cg == 1 {
            depthwise(&geo, &cls, w, lw, out_ptr);
        } else {
            tiled_gemm(&geo, &cls, w, lw, out_ptr, dense);
        }
    }
    Ok(out)
}

impl<T: ConvFloat> Geometry<'_, T> {
    /// The offsets of weight element `(co, tap t of the class, ci)`
    /// relative to `(co, 0, ci)`, per class tap (flip applied).
    fn tap_offsets(&self, cls: &Class, lw: &Layout) -> Vec<isize> {
        (0..cls.taps)
            .map(|t| {
                let mut rem = t;
                let mut off = 0isize;
                for a in (0..self.dims).rev() {
                    let taps = &cls.axes[a].taps;
                    let mut i = taps[rem % taps.len()];
                    rem /= taps.len();
                    if self.p.flip {
                        i = self.k_sizes[a] - 1 - i;
                    }
                    off += i as isize * lw.strides[a + 1];
                }
                off
            })
            .collect()
    }

    /// For rows `r0..r0 + nr` of the class: the input element offset of
    /// each row's batch entry, its output row, and `jtab`, per row and
    /// class tap of each axis, the input index that tap reads (-1: padding).
    fn row_tables(&self, cls: &Class, r0: usize, nr: usize) -> (Vec<isize>, Vec<usize>, Vec<i64>) {
        let p = self.p;
        let width = cls.koff[self.dims];
        let mut base = Vec::with_capacity(nr);
        let mut out_rows = Vec::with_capacity(nr);
        let mut jtab = vec![0i64; nr * width];
        for (i, js) in jtab.chunks_mut(width.max(1)).take(nr).enumerate() {
            let mut rem = r0 + i;
            let mut idx = [0usize; 3];
            for a in (0..self.dims).rev() {
                let len = cls.axes[a].positions.len();
                idx[a] = rem % len;
                rem /= len;
            }
            base.push(self.lx.offset as isize + rem as isize * self.lx.strides[0]);
            let mut row = rem * self.spatial_rows;
            for a in 0..self.dims {
                let o = cls.axes[a].positions[idx[a]];
                row += o * self.out_row_strides[a];
                let start = o as i64 * p.stride[a] - p.padding_lo[a];
                let n = self.in_sizes[a] as i64;
                for (q, &t) in cls.axes[a].taps.iter().enumerate() {
                    let j = (start + t as i64 * p.kernel_dilation[a]).div_euclid(p.input_dilation[a]);
                    js[cls.koff[a] + q] = if (0..n).contains(&j) { j } else { -1 };
                }
            }
            out_rows.push(row);
        }
        (base, out_rows, jtab)
    }

    /// Packs the im2col row of one output position for the class taps
    /// `t0..t1` and channels of group `g` into `dst` (`(t1 - t0) * cg`
    /// values). `merge`: consecutive taps along the last axis read
    /// consecutive memory, so runs of them copy at once.
    #[allow(clippy::too_many_arguments)] // one row's coordinates
    fn pack_row(
        &self,
        cls: &Class,
        js: &[i64],
        base: isize,
        g: usize,
        (t0, t1): (usize, usize),
        merge: bool,
        dst: &mut [T],
    ) {
        let (dims, cg) = (self.dims, self.cg);
        let last = &cls.axes[dims - 1].taps;
        let kl = last.len();
        let jl = &js[cls.koff[dims - 1]..cls.koff[dims]];
        let sx = &self.lx.strides;
        let base = base + (g * cg) as isize * sx[dims + 1];
        let (mut t, mut d) = (t0, 0usize);
        while t < t1 {
            let (line, a0) = (t / kl, t % kl);
            let a1 = kl.min(a0 + (t1 - t));
            // The input offset of this line of taps along the higher axes.
            let mut off = Some(base);
            let mut l = line;
            for a in (0..dims - 1).rev() {
                let len = cls.axes[a].taps.len();
                let j = js[cls.koff[a] + l % len];
                l /= len;
                off = off.filter(|_| j >= 0).map(|o| o + j as isize * sx[a + 1]);
            }
            match off {
                None => {
                    dst[d..d + (a1 - a0) * cg].fill(T::zero());
                    d += (a1 - a0) * cg;
                }
                Some(off) => {
                    let mut q = a0;
                    while q < a1 {
                        if jl[q] < 0 {
                            dst[d..d + cg].fill(T::zero());
                            d += cg;
                            q += 1;
                            continue;
                        }
                        let mut e = q + 1;
                        if merge {
                            while e < a1 && jl[e] >= 0 {
                                e += 1;
                            }
                        }
                        let len = (e - q) * cg;
                        let s = (off + jl[q] as isize * sx[dims]) as usize;
                        for (o, &v) in dst[d..d + len].iter_mut().zip(&self.x[s..s + len]) {
                            *o = v;
                        }
                        d += len;
                        q = e;
                    }
                }
            }
            t += a1 - a0;
        }
    }
}

/// Runs `f` on every block, on several threads when the work is large.
fn for_blocks(blocks: usize, parallel: bool, f: impl Fn(usize) + Sync + Send) {
    if parallel {
        (0..blocks).into_par_iter().for_each(f);
    } else {
        (0..blocks).for_each(f);
    }
}

/// Blocks of about `rows_per` rows, in a multiple of the thread count.
fn blocks_of(rows: usize, rows_per: usize, parallel: bool) -> (usize, usize) {
    let threads = if parallel { rayon::current_num_threads() } else { 1 };
    let blocks = rows.div_ceil(rows_per).next_multiple_of(threads).min(rows);
    (blocks, rows.div_ceil(blocks))
}

/// The class's outputs as GEMMs: per block of rows and group, im2col tiles
/// of at most [`TILE`] elements times the packed filters.
fn tiled_gemm<T: ConvFloat>(geo: &Geometry<T>, cls: &Class, w: &[T], lw: &Layout, out: SendPtr<T>, dense: bool) {
    let (dims, cg, og, c_out) = (geo.dims, geo.cg, geo.og, geo.c_out);
    let groups = geo.p.groups;
    let k = cls.taps * cg;
    // Filters of group g: a row-major (k × og) matrix.
    let offsets = geo.tap_offsets(cls, lw);
    let mut packed = vec![T::zero(); groups * k * og];
    let fill = |(c, dst): (usize, &mut [T])| {
        // Chunk c: tap c % taps of group c / taps, as (cg × og).
        let (g, t) = (c / cls.taps, c % cls.taps);
        let at = lw.offset as isize + (g * og) as isize * lw.strides[0] + offsets[t];
        for (ci, row) in dst.chunks_mut(og).enumerate() {
            let at = at + ci as isize * lw.strides[dims + 1];
            for (oo, d) in row.iter_mut().enumerate() {
                *d = w[(at + oo as isize * lw.strides[0]) as usize];
            }
        }
    };
    let parallel = cls.rows * k * c_out >= PARALLEL_WORK;
    if parallel {
        packed.par_chunks_mut(cg * og).with_min_len(64).enumerate().for_each(fill);
    } else {
        packed.chunks_mut(cg * og).enumerate().for_each(fill);
    }
    let rows_per = (TILE / k).clamp(ROWS_MIN, ROWS_MAX).min(cls.rows);
    let (blocks, rows_per) = blocks_of(cls.rows, rows_per, parallel);
    // Taps per K-chunk: whole lines of last-axis taps where they fit.
    let kl = cls.axes[dims - 1].taps.len();
    let chunk = ((TILE / rows_per) / cg).clamp(1, cls.taps);
    let chunk = if chunk >= kl { chunk / kl * kl } else { chunk };
    // Consecutive last-axis taps read adjacent runs of channels when the
    // group spans all channels of a contiguous pixel.
    let step = if kl > 1 {
        let a = dims - 1;
        let taps = &cls.axes[a].taps;
        (taps[1] - taps[0]) as i64 * geo.p.kernel_dilation[a] / geo.p.input_dilation[a]
    } else {
        0
    };
    let merge = kl == 1 || step as isize * geo.lx.strides[dims] == cg as isize;
    let packed = &packed;
    for_blocks(blocks, parallel, |b| {
        let r0 = b * rows_per;
        if r0 >= cls.rows {
            return;
        }
        let nr = rows_per.min(cls.rows - r0);
        let (base, out_rows, jtab) = geo.row_tables(cls, r0, nr);
        let width = cls.koff[dims];
        let mut tile = vec![T::zero(); nr * chunk * cg];
        let mut scratch = if dense { Vec::new() } else { vec![T::zero(); nr * og] };
        for g in 0..groups {
            let mut t0 = 0;
            while t0 < cls.taps {
                let t1 = (t0 + chunk).min(cls.taps);
                let kc = (t1 - t0) * cg;
                for i in 0..nr {
                    let js = &jtab[i * width..(i + 1) * width];
                    geo.pack_row(cls, js, base[i], g, (t0, t1), merge, &mut tile[i * kc..(i + 1) * kc]);
                }
                let filters = &packed[(g * k + t0 * cg) * og..];
                let (dst, dst_rs) = if dense {
                    // SAFETY: with every class dense the block's rows are the
                    // output rows r0..r0 + nr.
                    (unsafe { out.get().add(r0 * c_out + g * og) }, c_out as isize)
                } else {
                    (scratch.as_mut_ptr(), og as isize)
                };
                // SAFETY: `tile` holds nr × kc values (row stride kc),
                // `filters` at least kc × og (row stride og), and `dst` an
                // nr × og block of row stride dst_rs that no other task writes.
                unsafe {
                    gemm::gemm(
                        nr,
                        og,
                        kc,
                        dst,
                        1,
                        dst_rs,
                        t0 > 0,
                        tile.as_ptr(),
                        1,
                        kc as isize,
                        filters.as_ptr(),
                        1,
                        og as isize,
                        T::one(),
                        T::one(),
                        false,
                        false,
                        false,
                        gemm::Parallelism::None,
                    )
                };
                t0 = t1;
            }
            if !dense {
                for (i, &row) in out_rows.iter().enumerate() {
                    // SAFETY: each output row belongs to exactly one class
                    // row, handled by one task.
                    let dst = unsafe { std::slice::from_raw_parts_mut(out.get().add(row * c_out + g * og), og) };
                    dst.copy_from_slice(&scratch[i * og..(i + 1) * og]);
                }
            }
        }
    });
}

/// The class's outputs for one input channel per group: each output
/// position accumulates, per filter tap, its input pixel's channels times
/// the tap's filter values (across channels, so it vectorizes).
fn depthwise<T: ConvFloat>(geo: &Geometry<T>, cls: &Class, w: &[T], lw: &Layout, out: SendPtr<T>) {
    let (dims, og, c_out) = (geo.dims, geo.og, geo.c_out);
    let offsets = geo.tap_offsets(cls, lw);
    // Filters as (tap, C_out).
    let mut packed = vec![T::zero(); cls.taps * c_out];
    for (t, dst) in packed.chunks_mut(c_out.max(1)).enumerate() {
        for (co, d) in dst.iter_mut().enumerate() {
            *d = w[(lw.offset as isize + co as isize * lw.strides[0] + offsets[t]) as usize];
        }
    }
    let parallel = cls.rows * cls.taps * c_out >= PARALLEL_WORK;
    let (blocks, rows_per) = blocks_of(cls.rows, 256, parallel);
    let sx = &geo.lx.strides;
    let packed = &packed;
    for_blocks(blocks, parallel, |b| {
        let r0 = b * rows_per;
        if r0 >= cls.rows {
            return;
        }
        let nr = rows_per.min(cls.rows - r0);
        let (base, out_rows, jtab) = geo.row_tables(cls, r0, nr);
        let width = cls.koff[dims];
        let mut acc = vec![T::zero(); c_out];
        for i in 0..nr {
            acc.fill(T::zero());
            let js = &jtab[i * width..(i + 1) * width];
            'taps: for t in 0..cls.taps {
                let mut off = base[i];
                let mut rem = t;
                for a in (0..dims).rev() {
                    let len = cls.axes[a].taps.len();
                    let j = js[cls.koff[a] + rem % len];
                    rem /= len;
                    if j < 0 {
                        continue 'taps;
                    }
                    off += j as isize * sx[a + 1];
                }
                let wt = &packed[t * c_out..(t + 1) * c_out];
                if og == 1 {
                    // Channels are unit-stride (see `conv`).
                    let xs = &geo.x[off as usize..off as usize + c_out];
                    for ((a, &xv), &wv) in acc.iter_mut().zip(xs).zip(wt) {
                        *a = *a + xv * wv;
                    }
                } else {
                    for (co, (a, &wv)) in acc.iter_mut().zip(wt).enumerate() {
                        let xv = geo.x[(off + (co / og) as isize * sx[dims + 1]) as usize];
                        *a = *a + xv * wv;
                    }
                }
            }
            // SAFETY: each output row belongs to one class row of one task.
            let dst = unsafe { std::slice::from_raw_parts_mut(out.get().add(out_rows[i] * c_out), c_out) };
            dst.copy_from_slice(&acc);
        }
    });
}
