//! Scans along one axis: cumsum, cumprod, cummax, cummin, logcumsumexp.
//!
//! The input is brought to row-major order and viewed as `[outer, n, inner]`
//! with the scanned axis in the middle. With `inner == 1` every line is a
//! contiguous row, scanned by one sequential loop (groups of rows run on
//! several threads when large). Otherwise whole rows of `inner` elements are
//! combined with the previous output row, a loop over contiguous memory that
//! vectorizes (blocks of columns run on several threads when large).
//!
//! Each output is the sequential combination, in scan order, of the
//! element functions of `element/` (so half floats round after every step,
//! as MLX's CPU scan accumulates in the input type); the first element of an
//! inclusive scan is the input element itself, that of an exclusive scan the
//! op's identity.

use super::elementwise::copy_buffer;
use super::storage::{output_vec, CpuBuffer, CpuElement};
use super::strided::{chunk_len, PARALLEL_THRESHOLD};
use crate::backend::ScanOp;
use crate::element::{Element, FloatElement, Scalar};
use crate::error::{Error, Result};
use crate::shape::{numel, Layout};
use rayon::prelude::*;

/// The scanned array as `[outer, n, inner]`, scanning `n`.
#[derive(Clone, Copy, Debug)]
struct Lines {
    outer: usize,
    n: usize,
    inner: usize,
}

/// Scan direction and whether element i includes itself.
#[derive(Clone, Copy, Debug)]
struct Dir {
    reverse: bool,
    inclusive: bool,
}

/// Scans one contiguous row.
#[inline(always)]
fn scan_row<T: Copy>(x: &[T], out: &mut [T], dir: Dir, init: T, f: impl Fn(T, T) -> T) {
    let n = x.len();
    if n == 0 {
        return;
    }
    match (dir.reverse, dir.inclusive) {
        (false, true) => {
            let mut acc = x[0];
            out[0] = acc;
            for (o, &v) in out[1..].iter_mut().zip(&x[1..]) {
                acc = f(acc, v);
                *o = acc;
            }
        }
        (false, false) => {
            let mut acc = init;
            out[0] = acc;
            for (o, &v) in out[1..].iter_mut().zip(&x[..n - 1]) {
                acc = f(acc, v);
                *o = acc;
            }
        }
        (true, true) => {
            let mut acc = x[n - 1];
            out[n - 1] = acc;
            for (o, &v) in out[..n - 1].iter_mut().rev().zip(x[..n - 1].iter().rev()) {
                acc = f(acc, v);
                *o = acc;
            }
        }
        (true, false) => {
            let mut acc = init;
            out[n - 1] = acc;
            for (o, &v) in out[..n - 1].iter_mut().rev().zip(x[1..].iter().rev()) {
                acc = f(acc, v);
                *o = acc;
            }
        }
    }
}

/// A raw output pointer shared by tasks that write disjoint elements.
struct SharedOut<T>(*mut T);

// SAFETY: the pointer is only dereferenced by tasks writing disjoint
// elements of one live allocation (see `scan_columns`).
unsafe impl<T: Send> Send for SharedOut<T> {}
unsafe impl<T: Send> Sync for SharedOut<T> {}

impl<T> SharedOut<T> {
    fn get(&self) -> *mut T {
        self.0
    }
}

/// Scans columns `j0..j1` of one `[n, inner]` block: row i of the output is
/// the previous output row combined with input row i (inclusive) or i - 1
/// (exclusive), in scan order.
///
/// # Safety
/// `out` must point to `n * inner` writable elements, and no other thread
/// may access columns `j0..j1` of them during the call.
#[allow(clippy::too_many_arguments)]
unsafe fn scan_columns<T: Copy>(
    x: &[T],
    out: *mut T,
    n: usize,
    inner: usize,
    (j0, j1): (usize, usize),
    dir: Dir,
    init: T,
    f: impl Fn(T, T) -> T,
) {
    let w = j1 - j0;
    let at = |s: usize| (if dir.reverse { n - 1 - s } else { s }) * inner + j0;
    // SAFETY (all slices below): each covers w elements of one row of the
    // block, inside the allocation; `prev` and `cur` are different rows.
    let first = std::slice::from_raw_parts_mut(out.add(at(0)), w);
    if dir.inclusive {
        first.copy_from_slice(&x[at(0)..at(0) + w]);
    } else {
        first.fill(init);
    }
    for s in 1..n {
        let (p, c) = (at(s - 1), at(s));
        let prev = std::slice::from_raw_parts(out.add(p) as *const T, w);
        let cur = std::slice::from_raw_parts_mut(out.add(c), w);
        let src = if dir.inclusive { &x[c..c + w] } else { &x[p..p + w] };
        for ((o, &a), &v) in cur.iter_mut().zip(prev).zip(src) {
            *o = f(a, v);
        }
    }
}

/// Scans contiguous `x` viewed as `lines`.
fn scan_lines<T: CpuElement>(
    x: &[T],
    lines: Lines,
    dir: Dir,
    init: T,
    f: impl Fn(T, T) -> T + Copy + Send + Sync,
) -> Result<Vec<T>> {
    let Lines { outer, n, inner } = lines;
    let total = outer * n * inner;
    let mut out = output_vec::<T>(total)?;
    if total == 0 {
        return Ok(out);
    }
    let big = total >= PARALLEL_THRESHOLD;
    if inner == 1 {
        // Rows: several whole rows per task.
        let rows_per_task = (chunk_len(total) / n).max(1);
        let task = |xs: &[T], os: &mut [T]| {
            for (xr, or) in xs.chunks(n).zip(os.chunks_mut(n)) {
                scan_row(xr, or, dir, init, f);
            }
        };
        if big && outer > 1 {
            let span = n * rows_per_task;
            out.par_chunks_mut(span).zip(x.par_chunks(span)).for_each(|(o, x)| task(x, o));
        } else {
            task(x, &mut out);
        }
        return Ok(out);
    }
    // Columns: tasks are (outer block, column block) pairs.
    let width = if big {
        let per_block = (rayon::current_num_threads() * 4).div_ceil(outer);
        inner.div_ceil(per_block).max(64).min(inner)
    } else {
        inner
    };
    let blocks = inner.div_ceil(width);
    let block = n * inner;
    let shared = SharedOut(out.as_mut_ptr());
    let run = |t: usize| {
        let (o, b) = (t / blocks, t % blocks);
        let j0 = b * width;
        let cols = (j0, (j0 + width).min(inner));
        // SAFETY: block o of the output holds `block` elements of `out`
        // (alive until the tasks end), and each task owns its columns of it.
        unsafe {
            scan_columns(&x[o * block..(o + 1) * block], shared.get().add(o * block), n, inner, cols, dir, init, f)
        }
    };
    let tasks = outer * blocks;
    if big && tasks > 1 {
        (0..tasks).into_par_iter().for_each(run);
    } else {
        (0..tasks).for_each(run);
    }
    Ok(out)
}

fn typed<T: CpuElement>(op: ScanOp, x: &[T], lines: Lines, dir: Dir) -> Result<Vec<T>> {
    match op {
        ScanOp::Sum => scan_lines(x, lines, dir, T::zero(), <T as Element>::add),
        ScanOp::Prod => scan_lines(x, lines, dir, T::one(), <T as Element>::mul),
        ScanOp::Max => scan_lines(x, lines, dir, T::lowest(), <T as Element>::max),
        ScanOp::Min => scan_lines(x, lines, dir, T::highest(), <T as Element>::min),
        ScanOp::LogAddExp => Err(Error::UnsupportedDtype {
            op: "logcumsumexp",
            dtype: T::DTYPE,
            detail: "The kernel takes inexact dtypes only",
        }),
    }
}

fn typed_inexact<T: CpuElement + FloatElement>(op: ScanOp, x: &[T], lines: Lines, dir: Dir) -> Result<Vec<T>> {
    match op {
        ScanOp::LogAddExp => {
            let init = T::from_scalar(Scalar::Float(f64::NEG_INFINITY));
            scan_lines(x, lines, dir, init, <T as FloatElement>::logaddexp)
        }
        _ => typed(op, x, lines, dir),
    }
}

/// Scans `op` along `axis` of the elements `l` selects; row-major output of
/// the same shape and dtype.
pub fn scan(op: ScanOp, x: &CpuBuffer, l: &Layout, axis: usize, reverse: bool, inclusive: bool) -> Result<CpuBuffer> {
    let copied;
    let (data, start) = if l.is_row_contiguous() {
        (x, l.offset)
    } else {
        copied = copy_buffer(x, l)?;
        (&copied, 0)
    };
    let lines = Lines { outer: numel(&l.shape[..axis]), n: l.shape[axis], inner: numel(&l.shape[axis + 1..]) };
    let total = l.size();
    let dir = Dir { reverse, inclusive };
    crate::with_float_buffer!(data, v => Ok(CpuElement::into_buffer(typed_inexact(op, &v[start..start + total], lines, dir)?)),
        _ => crate::with_buffer!(data, v => Ok(CpuElement::into_buffer(typed(op, &v[start..start + total], lines, dir)?))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Element-at-a-time reference over a row-major `[outer, n, inner]` array.
    fn reference<T: Element>(x: &[T], lines: Lines, dir: Dir, init: T, f: impl Fn(T, T) -> T) -> Vec<T> {
        let Lines { outer, n, inner } = lines;
        let mut out = vec![init; x.len()];
        for o in 0..outer {
            for j in 0..inner {
                let at = |i: usize| (o * n + i) * inner + j;
                let order: Vec<usize> = if dir.reverse { (0..n).rev().collect() } else { (0..n).collect() };
                let mut acc: Option<T> = None;
                for &i in &order {
                    if dir.inclusive {
                        acc = Some(acc.map_or(x[at(i)], |a| f(a, x[at(i)])));
                        out[at(i)] = acc.expect("set");
                    } else {
                        out[at(i)] = acc.unwrap_or(init);
                        acc = Some(acc.map_or(f(init, x[at(i)]), |a| f(a, x[at(i)])));
                    }
                }
            }
        }
        out
    }

    fn dirs() -> Vec<Dir> {
        [(false, true), (false, false), (true, true), (true, false)]
            .into_iter()
            .map(|(reverse, inclusive)| Dir { reverse, inclusive })
            .collect()
    }

    #[test]
    fn rows_and_columns_match_the_sequential_reference() {
        // Small and large (threaded) shapes, scanning rows and columns.
        for &(outer, n, inner) in
            &[(1, 7, 1), (3, 5, 1), (2, 4, 3), (1, 1, 5), (40, 1000, 1), (1, 300, 257), (40, 30, 40)]
        {
            let lines = Lines { outer, n, inner };
            let total = outer * n * inner;
            let xi: Vec<i32> = (0..total).map(|k| ((k * 7919) % 23) as i32 - 11).collect();
            let xf: Vec<f64> = xi.iter().map(|&v| v as f64 * 0.37).collect();
            let xb: Vec<bool> = xi.iter().map(|&v| v > 3).collect();
            for dir in dirs() {
                let got = scan_lines(&xi, lines, dir, 0, <i32 as Element>::add).unwrap();
                assert_eq!(got, reference(&xi, lines, dir, 0, <i32 as Element>::add), "{lines:?} {dir:?}");
                let got = scan_lines(&xi, lines, dir, i32::MIN, <i32 as Element>::max).unwrap();
                assert_eq!(got, reference(&xi, lines, dir, i32::MIN, <i32 as Element>::max));
                let got = scan_lines(&xf, lines, dir, 1.0, <f64 as Element>::mul).unwrap();
                assert_eq!(got, reference(&xf, lines, dir, 1.0, <f64 as Element>::mul));
                let got = scan_lines(&xb, lines, dir, true, <bool as Element>::min).unwrap();
                assert_eq!(got, reference(&xb, lines, dir, true, <bool as Element>::min));
            }
        }
    }

    #[test]
    fn strided_input_identities_and_nan() {
        // A transposed 2 x 3 view scanned along its last axis.
        let x = CpuBuffer::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0].into());
        let l = Layout::contiguous(&[3, 2]).permute(&[1, 0]);
        let CpuBuffer::F32(v) = scan(ScanOp::Sum, &x, &l, 1, false, true).unwrap() else { panic!() };
        assert_eq!(v, vec![1.0, 4.0, 9.0, 2.0, 6.0, 12.0]);
        let x = CpuBuffer::F32(vec![1.0, f32::NAN, 3.0].into());
        let l = Layout::contiguous(&[3]);
        let CpuBuffer::F32(v) = scan(ScanOp::Max, &x, &l, 0, false, false).unwrap() else { panic!() };
        assert_eq!(v[..2], [f32::NEG_INFINITY, 1.0]);
        assert!(v[2].is_nan());
        let CpuBuffer::F32(v) = scan(ScanOp::LogAddExp, &x, &l, 0, true, false).unwrap() else { panic!() };
        assert!(v[0].is_nan() && v[1] == 3.0 && v[2] == f32::NEG_INFINITY);
        let x = CpuBuffer::U8(vec![200, 100].into());
        let CpuBuffer::U8(v) = scan(ScanOp::Sum, &x, &Layout::contiguous(&[2]), 0, false, true).unwrap() else {
            panic!()
        };
        assert_eq!(v, vec![200, 44]);
        assert!(scan(ScanOp::LogAddExp, &x, &Layout::contiguous(&[2]), 0, false, true).is_err());
    }
}
