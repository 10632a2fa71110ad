//! Batched matrix products. Floating types go through the `gemm` crate
//! (f32, f64, c64 natively; f16 and bf16 through f32); integer and bool types
//! use an exact row-streaming kernel.

use super::buffer_dtype;
use super::elementwise::{cast_buffer, copy_buffer};
use super::storage::{zeroed_vec, CpuBuffer, CpuElement};
use super::strided::SendPtr;
use crate::dtype::Dtype;
use crate::error::Result;
use crate::shape::{numel, Layout};
use rayon::prelude::*;

/// Matrix geometry shared by every batch entry.
struct Geometry {
    m: usize,
    n: usize,
    k: usize,
    /// Element offsets of each batch entry's `a` and `b` matrices.
    batches: Vec<(usize, usize)>,
}

fn geometry(la: &Layout, lb: &Layout) -> Geometry {
    let nd = la.ndim();
    let (m, k, n) = (la.shape[nd - 2], la.shape[nd - 1], lb.shape[nd - 1]);
    let batch_shape = &la.shape[..nd - 2];
    let count = numel(batch_shape);
    let mut batches = Vec::with_capacity(count);
    let mut idx = vec![0usize; batch_shape.len()];
    for _ in 0..count {
        let off = |l: &Layout| {
            (l.offset as isize + idx.iter().zip(&l.strides).map(|(&i, &s)| i as isize * s).sum::<isize>()) as usize
        };
        batches.push((off(la), off(lb)));
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < batch_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Geometry { m, n, k, batches }
}

/// A layout gemm can read directly: positive strides in both matrix dims.
fn gemm_readable(l: &Layout) -> bool {
    let nd = l.ndim();
    l.strides[nd - 1] > 0 && l.strides[nd - 2] > 0
}

fn contiguous_if_needed(x: &CpuBuffer, l: &Layout, readable: bool) -> Result<(Option<CpuBuffer>, Layout)> {
    Ok(if readable { (None, l.clone()) } else { (Some(copy_buffer(x, l)?), Layout::contiguous(&l.shape)) })
}

/// `a @ b` for layouts `[..., M, K]` and `[..., K, N]` with equal batch shapes.
pub fn matmul(a: &CpuBuffer, la: &Layout, b: &CpuBuffer, lb: &Layout) -> Result<CpuBuffer> {
    let nd = la.ndim();
    let mut out_shape = la.shape.clone();
    out_shape[nd - 1] = lb.shape[nd - 1];
    if numel(&out_shape) == 0 {
        // Nothing to compute, however many (empty) batch entries there are.
        return cast_buffer(a, &Layout::contiguous(&out_shape), buffer_dtype(a));
    }
    // Half floats accumulate in f32 (the gemm crate's f16 kernel
    // accumulates in f16, which loses several bits over long sums).
    if let CpuBuffer::BF16(_) | CpuBuffer::F16(_) = a {
        let a32 = cast_buffer(a, la, Dtype::F32)?;
        let b32 = cast_buffer(b, lb, Dtype::F32)?;
        let out = matmul(&a32, &Layout::contiguous(&la.shape), &b32, &Layout::contiguous(&lb.shape))?;
        return cast_buffer(&out, &Layout::contiguous(&out_shape), buffer_dtype(a));
    }
    let (a_copy, la) = contiguous_if_needed(a, la, gemm_readable(la))?;
    let (b_copy, lb) = contiguous_if_needed(b, lb, gemm_readable(lb))?;
    let a = a_copy.as_ref().unwrap_or(a);
    let b = b_copy.as_ref().unwrap_or(b);
    let g = geometry(&la, &lb);
    Ok(match (a, b) {
        (CpuBuffer::F32(x), CpuBuffer::F32(y)) => CpuBuffer::F32(gemm_batched(x, &la, y, &lb, &g)?.into()),
        (CpuBuffer::F64(x), CpuBuffer::F64(y)) => CpuBuffer::F64(gemm_batched(x, &la, y, &lb, &g)?.into()),
        (CpuBuffer::C64(x), CpuBuffer::C64(y)) => CpuBuffer::C64(gemm_batched(x, &la, y, &lb, &g)?.into()),
        _ => {
            // Exact kernels want `b` rows contiguous.
            let (b_copy, lb) = contiguous_if_needed(b, &lb, lb.strides[nd - 1] == 1)?;
            let b = b_copy.as_ref().unwrap_or(b);
            let g = geometry(&la, &lb);
            crate::with_buffer!(a, x => {
                let y = CpuElement::slice_of(b).expect("matmul operands share a dtype");
                CpuElement::into_buffer(exact_batched(&x[..], &la, y, &lb, &g)?)
            })
        }
    })
}

/// Work per thread below which a product runs on one thread.
const PARALLEL_FLOPS: usize = 1 << 21;

fn gemm_batched<T: CpuElement>(x: &[T], la: &Layout, y: &[T], lb: &Layout, g: &Geometry) -> Result<Vec<T>> {
    let nd = la.ndim();
    let (m, n, k) = (g.m, g.n, g.k);
    let mut out = zeroed_vec::<T>(g.batches.len() * m * n)?;
    let (a_rs, a_cs) = (la.strides[nd - 2], la.strides[nd - 1]);
    let (b_rs, b_cs) = (lb.strides[nd - 2], lb.strides[nd - 1]);
    // One single-threaded gemm call on the block rows [r0, r0 + rows) ×
    // columns [c0, c0 + cols) of one batch entry, written into `dst` (the
    // entry's whole output). Splitting into blocks across rayon tasks
    // ourselves scales better than gemm's own threading.
    let run = |dst: *mut T, a_off: usize, b_off: usize, (r0, rows): (usize, usize), (c0, cols): (usize, usize)| {
        if k == 0 {
            return; // the output is already zero
        }
        // SAFETY: offsets and strides describe elements inside `x` and `y`
        // (layouts are validated by the op builders); `dst` points at a
        // row-major m × n output and the block stays inside it; blocks of
        // concurrent calls are disjoint.
        unsafe {
            gemm::gemm(
                rows,
                cols,
                k,
                dst.add(r0 * n + c0),
                1,
                n as isize,
                false,
                x.as_ptr().offset(a_off as isize + r0 as isize * a_rs),
                a_cs,
                a_rs,
                y.as_ptr().offset(b_off as isize + c0 as isize * b_cs),
                b_cs,
                b_rs,
                T::zero(),
                T::one(),
                false,
                false,
                false,
                gemm::Parallelism::None,
            )
        }
    };
    let flops = m * n * k;
    let threads = rayon::current_num_threads();
    let batches = g.batches.len();
    if batches >= threads || flops < PARALLEL_FLOPS {
        let entry = |(dst, &(ao, bo)): (&mut [T], &(usize, usize))| run(dst.as_mut_ptr(), ao, bo, (0, m), (0, n));
        if batches > 1 && flops * batches >= PARALLEL_FLOPS {
            out.par_chunks_mut(m * n).zip(g.batches.par_iter()).for_each(entry);
        } else {
            out.chunks_mut(m * n).zip(g.batches.iter()).for_each(entry);
        }
    } else {
        // Few large products: cut each into slabs along its longer side.
        let tasks = threads * 8;
        let (along_cols, len) = if n >= m { (true, n) } else { (false, m) };
        let width = len.div_ceil(tasks).next_multiple_of(16).max(16);
        let slabs: Vec<(usize, usize)> = (0..len).step_by(width).map(|s| (s, width.min(len - s))).collect();
        for (dst, &(ao, bo)) in out.chunks_mut(m * n).zip(&g.batches) {
            let dst = SendPtr(dst.as_mut_ptr());
            slabs.par_iter().for_each(|&slab| {
                let ptr = dst.get();
                if along_cols {
                    run(ptr, ao, bo, (0, m), slab)
                } else {
                    run(ptr, ao, bo, slab, (0, n))
                }
            });
        }
    }
    Ok(out)
}

/// Exact products for integer and bool types: each output row accumulates
/// scaled rows of `b` (b's rows are contiguous).
fn exact_batched<T: CpuElement>(x: &[T], la: &Layout, y: &[T], lb: &Layout, g: &Geometry) -> Result<Vec<T>> {
    let nd = la.ndim();
    let (m, n, k) = (g.m, g.n, g.k);
    let (a_rs, a_cs) = (la.strides[nd - 2], la.strides[nd - 1]);
    let b_rs = lb.strides[nd - 2];
    let mut out = zeroed_vec::<T>(g.batches.len() * m * n)?;
    let row = |(r, dst): (usize, &mut [T])| {
        let (ao, bo) = g.batches[r / m];
        let i = (r % m) as isize;
        for kk in 0..k {
            let aik = x[(ao as isize + i * a_rs + kk as isize * a_cs) as usize];
            let brow = &y[(bo as isize + kk as isize * b_rs) as usize..][..n];
            for (d, &bv) in dst.iter_mut().zip(brow) {
                *d = d.add(aik.mul(bv));
            }
        }
    };
    if g.batches.len() * m * n * k >= PARALLEL_FLOPS {
        out.par_chunks_mut(n).enumerate().for_each(row);
    } else {
        out.chunks_mut(n).enumerate().for_each(row);
    }
    Ok(out)
}
