//! Reductions (sum, prod, max, min over any axes) and arg-reductions.
//!
//! The input is brought to a row-major block form `[outer, r, inner]` with
//! the reduced axes in the middle (copying only when the reduced axes are
//! not already one contiguous block), then reduced with several independent
//! accumulators so the loops vectorize.

use super::elementwise::{cast_buffer, copy_buffer};
use super::storage::{output_vec, CpuBuffer, CpuElement};
use super::strided::{chunk_len, fill_strided, PARALLEL_THRESHOLD};
use crate::backend::{ArgReduceOp, ReduceOp};
use crate::dtype::Dtype;
use crate::element::Element;
use crate::error::Result;
use crate::shape::{numel, Layout};
use rayon::prelude::*;

const LANES: usize = 16;
const BLOCK: usize = 4096;

/// Folds one block (at most `BLOCK` elements) with `LANES` accumulators,
/// then the accumulators pairwise.
fn reduce_block<T: Element>(block: &[T], init: T, f: impl Fn(T, T) -> T + Copy) -> T {
    let mut acc = [init; LANES];
    let mut chunks = block.chunks_exact(LANES);
    for c in &mut chunks {
        for k in 0..LANES {
            acc[k] = f(acc[k], c[k]);
        }
    }
    for (k, &v) in chunks.remainder().iter().enumerate() {
        acc[k] = f(acc[k], v);
    }
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for k in 0..width {
            acc[k] = f(acc[k], acc[k + width]);
        }
    }
    acc[0]
}

/// Reduces one contiguous run: blocks of `BLOCK` elements with `LANES`
/// accumulators each, block results combined in order.
fn reduce_run<T: Element>(x: &[T], init: T, f: impl Fn(T, T) -> T + Copy) -> T {
    x.chunks(BLOCK).fold(init, |total, block| f(total, reduce_block(block, init, f)))
}

/// `n` results, each starting at the fold's `init`.
fn filled<T: CpuElement>(n: usize, init: T) -> Result<Vec<T>> {
    let mut out = output_vec::<T>(n)?;
    out.fill(init);
    Ok(out)
}

/// `out[o, j] = f-fold over i of x[o, i, j]` for contiguous `x` of shape `[outer, r, inner]`.
fn reduce_blocks<T: CpuElement>(
    x: &[T],
    outer: usize,
    r: usize,
    inner: usize,
    init: T,
    f: impl Fn(T, T) -> T + Copy + Sync,
) -> Result<Vec<T>> {
    let mut out = filled(outer * inner, init)?;
    if out.is_empty() {
        return Ok(out);
    }
    let big = x.len() >= PARALLEL_THRESHOLD;
    if inner == 1 {
        if outer == 1 && big {
            let chunk = chunk_len(x.len());
            let parts: Vec<T> = x.par_chunks(chunk).map(|c| reduce_run(c, init, f)).collect();
            out[0] = parts.into_iter().fold(init, f);
        } else if big {
            out.par_iter_mut().enumerate().for_each(|(o, dst)| *dst = reduce_run(&x[o * r..(o + 1) * r], init, f));
        } else {
            for (o, dst) in out.iter_mut().enumerate() {
                *dst = reduce_run(&x[o * r..(o + 1) * r], init, f);
            }
        }
        return Ok(out);
    }
    // Columns: accumulate whole rows of `inner` elements at a time.
    let column_block = |o: usize, j0: usize, acc: &mut [T]| {
        for i in 0..r {
            let row = &x[(o * r + i) * inner + j0..][..acc.len()];
            for (a, &v) in acc.iter_mut().zip(row) {
                *a = f(*a, v);
            }
        }
    };
    if big && outer >= rayon::current_num_threads() {
        out.par_chunks_mut(inner).enumerate().for_each(|(o, acc)| column_block(o, 0, acc));
    } else if big {
        let width = chunk_len(inner).min(inner).max(64);
        for (o, row) in out.chunks_mut(inner).enumerate() {
            row.par_chunks_mut(width).enumerate().for_each(|(c, acc)| column_block(o, c * width, acc));
        }
    } else {
        for (o, acc) in out.chunks_mut(inner).enumerate() {
            column_block(o, 0, acc);
        }
    }
    Ok(out)
}

/// The elements of one row (`o`, from `j0`, `len` of them) of a sequence
/// that exists only in pieces, as a buffer of the working dtype.
pub(crate) type Piece<'a> = dyn Fn(usize, usize, usize) -> Result<CpuBuffer> + Sync + 'a;

/// Reduces the rows of a row-major `[outer, r]` sequence of `work` values
/// that `piece` makes on demand, in at most `BLOCK` elements at a time: the
/// chunks, blocks and order [`reduce`] takes over the same values stored
/// contiguously with the reduced axes last, so the result has the same
/// bits. One `work` value per row.
pub(crate) fn reduce_pieces(op: ReduceOp, work: Dtype, outer: usize, r: usize, piece: &Piece<'_>) -> Result<CpuBuffer> {
    let witness = super::creation::full(crate::element::Scalar::Bool(false), work, 0)?;
    crate::with_buffer!(&witness, w => Ok(CpuElement::into_buffer(pieces_typed(op, &w[..], outer, r, piece)?)))
}

/// [`reduce_pieces`] for element type `T` (named by the empty `_of`).
fn pieces_typed<T: CpuElement>(op: ReduceOp, _of: &[T], outer: usize, r: usize, piece: &Piece<'_>) -> Result<Vec<T>> {
    match op {
        ReduceOp::Sum => fold_pieces(outer, r, piece, T::zero(), T::add),
        ReduceOp::Prod => fold_pieces(outer, r, piece, T::one(), T::mul),
        ReduceOp::Max => fold_pieces(outer, r, piece, T::lowest(), T::max),
        ReduceOp::Min => fold_pieces(outer, r, piece, T::highest(), T::min),
    }
}

/// Folds the rows [`reduce_pieces`] describes with `f` from `init`.
fn fold_pieces<T: CpuElement>(
    outer: usize,
    r: usize,
    piece: &Piece<'_>,
    init: T,
    f: impl Fn(T, T) -> T + Copy + Sync,
) -> Result<Vec<T>> {
    // Mirrors reduce_run over elements j0 .. j0 + len of row o.
    let run = |o: usize, j0: usize, len: usize| -> Result<T> {
        let mut total = init;
        let mut j = j0;
        while j < j0 + len {
            let m = BLOCK.min(j0 + len - j);
            let values = piece(o, j, m)?;
            let block = T::slice_of(&values).expect("pieces hold the working dtype");
            total = f(total, reduce_block(block, init, f));
            super::cache::recycle(values);
            j += m;
        }
        Ok(total)
    };
    let mut out = filled(outer, init)?;
    let n = outer * r;
    if out.is_empty() {
        return Ok(out);
    }
    // The branches of reduce_blocks for inner == 1.
    if outer == 1 && n >= PARALLEL_THRESHOLD {
        let chunk = chunk_len(n);
        let parts: Vec<T> = (0..n.div_ceil(chunk))
            .into_par_iter()
            .map(|c| run(0, c * chunk, chunk.min(n - c * chunk)))
            .collect::<Result<_>>()?;
        out[0] = parts.into_iter().fold(init, f);
    } else if n >= PARALLEL_THRESHOLD {
        out.par_iter_mut().enumerate().try_for_each(|(o, dst)| run(o, 0, r).map(|v| *dst = v))?;
    } else {
        for (o, dst) in out.iter_mut().enumerate() {
            *dst = run(o, 0, r)?;
        }
    }
    Ok(out)
}

/// The elements of one row segment of a row-major `[outer, r, inner]`
/// sequence that exists only in pieces: `(o, i, j0, len)` gives the `len`
/// values from column `j0` of row `i` of block `o`, as a buffer of the
/// working dtype.
pub(crate) type ColumnPiece<'a> = dyn Fn(usize, usize, usize, usize) -> Result<CpuBuffer> + Sync + 'a;

/// Reduces the middle axis of a row-major `[outer, r, inner]` sequence of
/// `work` values that `piece` makes on demand: each result folds its column
/// in order over the `r` rows, as [`reduce`]'s column path does over the
/// values stored, so the result has the same bits. One `work` value per
/// `(outer, inner)` position.
pub(crate) fn reduce_column_pieces(
    op: ReduceOp,
    work: Dtype,
    outer: usize,
    r: usize,
    inner: usize,
    piece: &ColumnPiece<'_>,
) -> Result<CpuBuffer> {
    fn typed<T: CpuElement>(op: ReduceOp, _of: &[T], shape: [usize; 3], piece: &ColumnPiece<'_>) -> Result<Vec<T>> {
        match op {
            ReduceOp::Sum => fold_columns(shape, piece, T::zero(), T::add),
            ReduceOp::Prod => fold_columns(shape, piece, T::one(), T::mul),
            ReduceOp::Max => fold_columns(shape, piece, T::lowest(), T::max),
            ReduceOp::Min => fold_columns(shape, piece, T::highest(), T::min),
        }
    }
    let witness = super::creation::full(crate::element::Scalar::Bool(false), work, 0)?;
    crate::with_buffer!(&witness, w => Ok(CpuElement::into_buffer(typed(op, &w[..], [outer, r, inner], piece)?)))
}

/// Folds the columns [`reduce_column_pieces`] describes with `f` from
/// `init`, at most `BLOCK` columns per piece (parallel over blocks and
/// column chunks; every column is folded by one task, in row order).
fn fold_columns<T: CpuElement>(
    [outer, r, inner]: [usize; 3],
    piece: &ColumnPiece<'_>,
    init: T,
    f: impl Fn(T, T) -> T + Copy + Sync,
) -> Result<Vec<T>> {
    let mut out = filled(outer * inner, init)?;
    if out.is_empty() {
        return Ok(out);
    }
    let width = BLOCK.min(inner);
    let column = |o: usize, chunk: usize, acc: &mut [T]| -> Result<()> {
        for i in 0..r {
            let values = piece(o, i, chunk * width, acc.len())?;
            let row = T::slice_of(&values).expect("pieces hold the working dtype");
            for (a, &v) in acc.iter_mut().zip(row) {
                *a = f(*a, v);
            }
            super::cache::recycle(values);
        }
        Ok(())
    };
    if outer * r * inner >= PARALLEL_THRESHOLD {
        out.par_chunks_mut(inner).enumerate().try_for_each(|(o, row)| {
            row.par_chunks_mut(width).enumerate().try_for_each(|(c, acc)| column(o, c, acc))
        })?;
    } else {
        for (o, row) in out.chunks_mut(inner).enumerate() {
            for (c, acc) in row.chunks_mut(width).enumerate() {
                column(o, c, acc)?;
            }
        }
    }
    Ok(out)
}

fn reduce_typed<T: CpuElement>(op: ReduceOp, x: &[T], outer: usize, r: usize, inner: usize) -> Result<Vec<T>> {
    match op {
        ReduceOp::Sum => reduce_blocks(x, outer, r, inner, T::zero(), T::add),
        ReduceOp::Prod => reduce_blocks(x, outer, r, inner, T::one(), T::mul),
        ReduceOp::Max => reduce_blocks(x, outer, r, inner, T::lowest(), T::max),
        ReduceOp::Min => reduce_blocks(x, outer, r, inner, T::highest(), T::min),
    }
}

/// Reduces sorted, unique `axes` of the elements `l` selects. The output is
/// row-major over the input shape with reduced axes of extent 1.
pub fn reduce(op: ReduceOp, x: &CpuBuffer, l: &Layout, axes: &[usize], out_dtype: Dtype) -> Result<CpuBuffer> {
    let in_dtype = with_dtype(x);
    let work_dtype = work_dtype(op, in_dtype, out_dtype);
    let ndim = l.ndim();
    let is_block = axes.windows(2).all(|w| w[1] == w[0] + 1);
    // Bring the data to row-major order with the reduced axes as one block;
    // a row-contiguous input of the working dtype is read in place.
    let copied: Option<CpuBuffer>;
    let (data, start, shape) = if is_block && work_dtype == in_dtype && l.is_row_contiguous() {
        (x, l.offset, l.shape.clone())
    } else {
        let pl = if is_block {
            l.clone()
        } else {
            let mut perm: Vec<usize> = (0..ndim).filter(|a| !axes.contains(a)).collect();
            perm.extend_from_slice(axes);
            l.permute(&perm)
        };
        copied = Some(if work_dtype != in_dtype { cast_buffer(x, &pl, work_dtype)? } else { copy_buffer(x, &pl)? });
        (copied.as_ref().expect("just set"), 0, pl.shape)
    };
    let (first, last) = if is_block { (axes[0], axes[axes.len() - 1] + 1) } else { (ndim - axes.len(), ndim) };
    let outer = numel(&shape[..first]);
    let r = numel(&shape[first..last]);
    let inner = numel(&shape[last..]);
    let n = outer * r * inner;
    let out = crate::with_buffer!(data, v => CpuElement::into_buffer(reduce_typed(op, &v[start..start + n], outer, r, inner)?));
    if work_dtype != out_dtype {
        cast_buffer(&out, &Layout::contiguous(&[outer * inner]), out_dtype)
    } else {
        Ok(out)
    }
}

/// The dtype a reduction of `in_dtype` values into `out_dtype` folds in:
/// sums and products of half floats accumulate in float32, other values
/// are first converted to the output dtype (bool sums to int32).
pub(crate) fn work_dtype(op: ReduceOp, in_dtype: Dtype, out_dtype: Dtype) -> Dtype {
    match (op, in_dtype) {
        (ReduceOp::Sum | ReduceOp::Prod, Dtype::F16 | Dtype::BF16) => Dtype::F32,
        _ => out_dtype,
    }
}

fn with_dtype(x: &CpuBuffer) -> Dtype {
    crate::with_buffer!(x, v => dtype_of(&v[..]))
}

fn dtype_of<T: Element>(_: &[T]) -> Dtype {
    T::DTYPE
}

/// Index (uint32) of the first largest/smallest element along `axis`; NaN
/// counts as the extreme, as in NumPy.
pub fn arg_reduce(op: ArgReduceOp, x: &CpuBuffer, l: &Layout, axis: usize) -> Result<CpuBuffer> {
    fn typed<T: CpuElement>(op: ArgReduceOp, x: &[T], l: &Layout, axis: usize) -> Result<Vec<u32>> {
        let len = l.shape[axis];
        let step = l.strides[axis];
        let mut rest = l.clone();
        rest.shape[axis] = 1;
        let mut out = output_vec::<u32>(rest.size())?;
        if step == 1 && axis + 1 == l.ndim() && l.is_row_contiguous() {
            // Rows of the buffer itself: split over threads by rows, one
            // copy of the row loop per op.
            let data = &x[l.offset..l.offset + l.size()];
            match op {
                ArgReduceOp::ArgMax => arg_rows(data, len, &mut out, |v: T, best: T| best.lt(v)),
                ArgReduceOp::ArgMin => arg_rows(data, len, &mut out, |v: T, best: T| v.lt(best)),
            }
            return Ok(out);
        }
        let better = move |v: T, best: T| match op {
            ArgReduceOp::ArgMax => best.lt(v) || (v.isnan() && !best.isnan()),
            ArgReduceOp::ArgMin => v.lt(best) || (v.isnan() && !best.isnan()),
        };
        fill_strided(&rest.shape, [&rest.strides], [rest.offset], &mut out, |o, [b], [s]| {
            for (j, dst) in o.iter_mut().enumerate() {
                let base = b + j as isize * s;
                if step == 1 {
                    let row = &x[base as usize..base as usize + len];
                    *dst = match op {
                        ArgReduceOp::ArgMax => arg_extreme_of_row(row, |v: T, best: T| best.lt(v)),
                        ArgReduceOp::ArgMin => arg_extreme_of_row(row, |v: T, best: T| v.lt(best)),
                    };
                    continue;
                }
                let mut best = x[base as usize];
                let mut at = 0u32;
                for k in 1..len {
                    let v = x[(base + k as isize * step) as usize];
                    if better(v, best) {
                        best = v;
                        at = k as u32;
                    }
                }
                *dst = at;
            }
        });
        Ok(out)
    }
    Ok(CpuBuffer::U32(crate::with_buffer!(x, v => typed(op, &v[..], l, axis))?.into()))
}

/// Independent running extremes of [`block_extreme`] (the compiler turns
/// them into several vector registers of compares and blends).
const ARG_LANES: usize = 32;

/// Elements per block of [`arg_extreme_body`]'s scan.
const ARG_BLOCK: usize = 512;

/// Writes into `out` the [`arg_extreme_of_row`] of each row of `len`
/// elements of `data`; rows are split over threads when large.
fn arg_rows<T: Element>(data: &[T], len: usize, out: &mut [u32], better: impl Fn(T, T) -> bool + Copy + Sync) {
    let rows = |(o, part): (&mut [u32], &[T])| {
        for (dst, row) in o.iter_mut().zip(part.chunks(len)) {
            *dst = arg_extreme_of_row(row, better);
        }
    };
    if data.len() >= PARALLEL_THRESHOLD && out.len() > 1 {
        let per_task = (chunk_len(data.len()) / len).max(1);
        out.par_chunks_mut(per_task).zip(data.par_chunks(per_task * len)).for_each(rows);
    } else {
        rows((out, data));
    }
}

/// The position of the first extreme element of a contiguous row, where
/// `better(v, best)` says `v` beats `best` (larger for argmax), NaN
/// counting as the extreme (the first NaN wins). The same answer as a
/// sequential scan that keeps the first of equal values (-0.0 equals 0.0).
fn arg_extreme_of_row<T: Element>(row: &[T], better: impl Fn(T, T) -> bool) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the processor supports AVX-512 F and BW (checked above).
            return unsafe { arg_extreme_avx512(row, better) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor supports AVX2 (checked above).
            return unsafe { arg_extreme_avx2(row, better) };
        }
    }
    arg_extreme_body(row, better)
}

/// [`arg_extreme_body`] compiled for AVX2 (8 float32 lanes at once).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn arg_extreme_avx2<T: Element>(row: &[T], better: impl Fn(T, T) -> bool) -> u32 {
    arg_extreme_body(row, better)
}

/// [`arg_extreme_body`] compiled for AVX-512 (16 float32 lanes at once).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn arg_extreme_avx512<T: Element>(row: &[T], better: impl Fn(T, T) -> bool) -> u32 {
    arg_extreme_body(row, better)
}

/// The body of [`arg_extreme_of_row`], inlined into each instruction-set
/// variant: blocks of [`ARG_BLOCK`] elements, each reduced to its extreme
/// by [`block_extreme`] and searched for the extreme's first position only
/// when it beats the best of the blocks before it (rarely, after the first
/// few blocks); a block holding a NaN ends the scan at its first NaN.
#[inline(always)]
fn arg_extreme_body<T: Element>(row: &[T], better: impl Fn(T, T) -> bool) -> u32 {
    let (mut best, mut at) = (row[0], 0);
    for (b, block) in row.chunks(ARG_BLOCK).enumerate() {
        let (m, nan) = block_extreme(block, &better);
        let start = b * ARG_BLOCK;
        if nan {
            return (start + block.iter().position(|v| v.isnan()).unwrap_or(0)) as u32;
        }
        if better(m, best) {
            best = m;
            at = start + first_equal(block, m);
        }
    }
    at as u32
}

/// The extreme of a non-empty block by `better` (from [`ARG_LANES`]
/// independent lanes) and whether the block holds a NaN.
#[inline(always)]
fn block_extreme<T: Element>(block: &[T], better: impl Fn(T, T) -> bool) -> (T, bool) {
    let mut chunks = block.chunks_exact(ARG_LANES);
    let (mut best, mut nan) = (block[0], false);
    if let Some(first) = chunks.next() {
        // `nans` keeps the last NaN of each lane (blends of the value
        // registers, where a mask of bools would be converted each step).
        let mut lanes: [T; ARG_LANES] = std::array::from_fn(|i| first[i]);
        let mut nans = lanes;
        for chunk in &mut chunks {
            for i in 0..ARG_LANES {
                let v = chunk[i];
                lanes[i] = if better(v, lanes[i]) { v } else { lanes[i] };
                nans[i] = if v.isnan() { v } else { nans[i] };
            }
        }
        nan = nans.iter().fold(false, |a, v| a | v.isnan());
        best = lanes[0];
        for &v in &lanes[1..] {
            if better(v, best) {
                best = v;
            }
        }
    }
    for &v in chunks.remainder() {
        nan |= v.isnan();
        if better(v, best) {
            best = v;
        }
    }
    (best, nan)
}

/// The position of the first element of `block` equal to `m` (a value of
/// the block, not NaN), looking at [`ARG_LANES`] elements at a time.
#[inline(always)]
fn first_equal<T: Element>(block: &[T], m: T) -> usize {
    let eq = |v: T| !v.lt(m) && !m.lt(v);
    let mut start = 0;
    for chunk in block.chunks(ARG_LANES) {
        if chunk.iter().fold(false, |a, &v| a | eq(v)) {
            return start + chunk.iter().position(|&v| eq(v)).unwrap_or(0);
        }
        start += chunk.len();
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_fold_like_stored_data() {
        // Float sums depend on the order: every path of reduce_blocks
        // (one parallel run, parallel rows, serial rows) must be matched.
        for (outer, r) in [(1, 100_003), (7, 9_001), (3, 5_000), (2, 17), (4, 0), (0, 3)] {
            let x: Vec<f32> = (0..outer * r).map(|i| ((i * 7919) % 1000) as f32 * 0.001 - 0.37).collect();
            let stored = CpuElement::into_buffer(x.clone());
            let piece = |o: usize, j0: usize, len: usize| -> Result<CpuBuffer> {
                Ok(CpuElement::into_buffer(x[o * r + j0..o * r + j0 + len].to_vec()))
            };
            for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max] {
                let want = reduce(op, &stored, &Layout::contiguous(&[outer, r]), &[1], Dtype::F32).unwrap();
                let got = reduce_pieces(op, Dtype::F32, outer, r, &piece).unwrap();
                let (want, got) = (f32::slice_of(&want).unwrap(), f32::slice_of(&got).unwrap());
                assert_eq!(
                    want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    "{op:?} over [{outer}, {r}]"
                );
            }
        }
    }

    /// The sequential scan `arg_extreme_of_row` must agree with.
    fn sequential<T: Element>(op: ArgReduceOp, row: &[T]) -> u32 {
        let (mut best, mut at) = (row[0], 0);
        for (k, &v) in row.iter().enumerate().skip(1) {
            let better = match op {
                ArgReduceOp::ArgMax => best.lt(v) || (v.isnan() && !best.isnan()),
                ArgReduceOp::ArgMin => v.lt(best) || (v.isnan() && !best.isnan()),
            };
            if better {
                (best, at) = (v, k as u32);
            }
        }
        at
    }

    #[test]
    fn contiguous_rows_match_the_sequential_scan() {
        let pool = [0.0f32, -0.0, 1.0, -1.0, 2.5, f32::INFINITY, f32::NEG_INFINITY];
        let mut s = 12345u64;
        let mut next = move || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 33) as usize
        };
        // Lengths around the lane width and the block size.
        for len in (1..70).chain([511, 512, 513, 1024, 1100, 1600]) {
            for trial in 0..20 {
                let mut row: Vec<f32> = (0..len).map(|_| pool[next() % pool.len()]).collect();
                // NaN only in some trials (one or two of them), so most rows take the value path.
                if trial % 4 == 0 {
                    row[next() % len] = f32::NAN;
                }
                if trial % 8 == 0 {
                    row[next() % len] = f32::NAN;
                }
                let ints: Vec<i8> = row.iter().map(|&v| if v.is_nan() { 7 } else { v as i8 }).collect();
                let max = |v: f32, b: f32| b.lt(v);
                let min = |v: f32, b: f32| v.lt(b);
                assert_eq!(arg_extreme_of_row(&row, max), sequential(ArgReduceOp::ArgMax, &row), "{row:?}");
                assert_eq!(arg_extreme_of_row(&row, min), sequential(ArgReduceOp::ArgMin, &row), "{row:?}");
                let max = |v: i8, b: i8| b.lt(v);
                let min = |v: i8, b: i8| v.lt(b);
                assert_eq!(arg_extreme_of_row(&ints, max), sequential(ArgReduceOp::ArgMax, &ints), "{ints:?}");
                assert_eq!(arg_extreme_of_row(&ints, min), sequential(ArgReduceOp::ArgMin, &ints), "{ints:?}");
                let wide: Vec<f64> = row.iter().map(|&v| v as f64).collect();
                let max = |v: f64, b: f64| b.lt(v);
                assert_eq!(arg_extreme_of_row(&wide, max), sequential(ArgReduceOp::ArgMax, &wide), "{wide:?}");
                // Whole rows through arg_reduce, contiguous and transposed.
                let l = Layout::contiguous(&[len]);
                let CpuBuffer::U32(got) =
                    arg_reduce(ArgReduceOp::ArgMax, &CpuBuffer::F32(row.clone().into()), &l, 0).unwrap()
                else {
                    panic!()
                };
                assert_eq!(got, [sequential(ArgReduceOp::ArgMax, &row)]);
            }
        }
    }
}
