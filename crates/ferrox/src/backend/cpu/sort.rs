//! Sorting along one axis (sort and argsort; partitions evaluate as sorts)
//! and binary search in a sorted sequence (searchsorted).
//!
//! The order is MLX's: NaN after every other value (NaNs equal to each
//! other; a complex64 number is NaN when either part is), complex64
//! lexicographic (real part, then imaginary), false before true, -0.0 equal
//! to 0.0. Sorts are stable.
//!
//! The lines along the sorted axis are gathered into contiguous rows (the
//! input itself when it is row-contiguous with the axis last). Each row is
//! sorted as (key, position) items, where the unsigned key's integer order
//! is MLX's order ([`SortKey`]) and the position breaks ties (stable): by
//! comparison for short rows, by a least-significant-digit radix sort for
//! longer ones. The values written are the input elements at the sorted
//! positions (bit for bit), or the positions; the rows are moved back to
//! the input's axis order by one strided copy. Groups of rows run on
//! several threads when large.

use super::elementwise::map_unary;
use super::storage::{output_vec, CpuBuffer, CpuElement};
use super::strided::{chunk_len, PARALLEL_THRESHOLD};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::shape::{numel, Layout};
use rayon::prelude::*;
use std::borrow::Cow;

/// Whether `a` comes strictly before `b` in MLX's order (NaN last).
#[inline(always)]
fn before<T: Element>(a: T, b: T) -> bool {
    !a.isnan() && (b.isnan() || a.lt(b))
}

/// An unsigned key whose integer order is MLX's order (the same keys as
/// the CUDA kernels, `sort.cu`): NaN largest, -0.0 as 0.0, floats by their
/// sign-folded bits, signed integers with the sign bit flipped, complex64
/// as (key of the real part, key of the imaginary part).
trait SortKey: CpuElement {
    /// Bytes of the key that can differ (radix passes).
    const KEY_BYTES: usize;
    /// The key of `self`.
    fn sort_key(self) -> u64;
}

fn f32_key(f: f32) -> u32 {
    let u = f.to_bits();
    if f.is_nan() {
        return u32::MAX;
    }
    let u = if u << 1 == 0 { 0 } else { u };
    if u >> 31 == 1 {
        !u
    } else {
        u | 1 << 31
    }
}

fn f64_key(f: f64) -> u64 {
    let u = f.to_bits();
    if f.is_nan() {
        return u64::MAX;
    }
    let u = if u << 1 == 0 { 0 } else { u };
    if u >> 63 == 1 {
        !u
    } else {
        u | 1 << 63
    }
}

macro_rules! sort_key {
    ($($t:ty, $bytes:expr, |$v:ident| $key:expr;)*) => {$(
        impl SortKey for $t {
            const KEY_BYTES: usize = $bytes;
            #[inline(always)]
            fn sort_key(self) -> u64 {
                let $v = self;
                $key
            }
        }
    )*};
}

sort_key! {
    bool, 1, |v| u64::from(v);
    u8, 1, |v| u64::from(v);
    u16, 2, |v| u64::from(v);
    u32, 4, |v| u64::from(v);
    u64, 8, |v| v;
    i8, 1, |v| u64::from((v as u8) ^ 0x80);
    i16, 2, |v| u64::from((v as u16) ^ 0x8000);
    i32, 4, |v| u64::from((v as u32) ^ 0x8000_0000);
    i64, 8, |v| (v as u64) ^ (1 << 63);
    half::f16, 4, |v| u64::from(f32_key(v.to_f32()));
    half::bf16, 4, |v| u64::from(f32_key(v.to_f32()));
    f32, 4, |v| u64::from(f32_key(v));
    f64, 8, |v| f64_key(v);
    num_complex::Complex32, 8, |v| {
        if v.re.is_nan() || v.im.is_nan() {
            u64::MAX
        } else {
            (u64::from(f32_key(v.re)) << 32) | u64::from(f32_key(v.im))
        }
    };
}

/// Rows shorter than this sort their items by comparison, longer ones by radix.
const RADIX_MIN: usize = 64;

/// Reusable item buffers of one task.
#[derive(Default)]
struct Scratch {
    items: Vec<(u64, u32)>,
    tmp: Vec<(u64, u32)>,
}

impl Scratch {
    /// Fills `items` with `row`'s (key, position) items in sorted order:
    /// positions break ties, so the order is stable. Long rows take a
    /// least-significant-digit radix sort (stable by construction, one pass
    /// per key byte that varies).
    fn sort<T: SortKey>(&mut self, row: &[T]) {
        let items = &mut self.items;
        items.clear();
        items.extend(row.iter().enumerate().map(|(i, &v)| (v.sort_key(), i as u32)));
        if row.len() < RADIX_MIN {
            items.sort_unstable();
            return;
        }
        let tmp = &mut self.tmp;
        tmp.resize(items.len(), (0, 0));
        for byte in 0..T::KEY_BYTES {
            let shift = 8 * byte;
            let digit = |k: u64| ((k >> shift) & 0xff) as usize;
            let mut start = [0usize; 256];
            for &(k, _) in items.iter() {
                start[digit(k)] += 1;
            }
            if start.contains(&items.len()) {
                continue; // every key has the same byte here
            }
            let mut sum = 0;
            for c in start.iter_mut() {
                (*c, sum) = (sum, sum + *c);
            }
            for &item in items.iter() {
                let d = digit(item.0);
                tmp[start[d]] = item;
                start[d] += 1;
            }
            std::mem::swap(items, tmp);
        }
    }
}

/// Sorts each row of `n` elements of `data` (`[rows, n]`) into the same
/// row of `out`, writing `emit(row, position)` for each sorted position.
/// Groups of rows run on several threads when large.
fn sort_rows<T: SortKey, U: Send>(data: &[T], n: usize, out: &mut [U], emit: impl Fn(&[T], u32) -> U + Sync) {
    let group = |rows: &[T], outs: &mut [U]| {
        let mut scratch = Scratch::default();
        for (row, o) in rows.chunks(n).zip(outs.chunks_mut(n)) {
            scratch.sort(row);
            for (slot, &(_, p)) in o.iter_mut().zip(&scratch.items) {
                *slot = emit(row, p);
            }
        }
    };
    let total = data.len();
    let rows = total / n;
    if total >= PARALLEL_THRESHOLD && rows > 1 {
        let span = (chunk_len(total) / n).max(1) * n;
        out.par_chunks_mut(span).zip(data.par_chunks(span)).for_each(|(o, d)| group(d, o));
    } else {
        group(data, out);
    }
}

/// The array as `[outer, n, inner]` around the sorted axis.
struct Lines {
    outer: usize,
    n: usize,
    inner: usize,
}

/// The elements `l` selects with `axis` moved last, row-major (borrowed
/// when they already are).
fn gather_rows<'a, T: CpuElement>(x: &'a [T], l: &Layout, axis: usize) -> Result<Cow<'a, [T]>> {
    let nd = l.shape.len();
    if l.is_row_contiguous() && numel(&l.shape[axis + 1..]) == 1 {
        return Ok(Cow::Borrowed(&x[l.offset..l.offset + l.size()]));
    }
    let mut perm: Vec<usize> = (0..nd).filter(|&d| d != axis).collect();
    perm.push(axis);
    Ok(Cow::Owned(map_unary(x, &l.permute(&perm), |e| e)?))
}

/// Rows `[outer, inner, n]` back in the order `[outer, n, inner]`.
fn scatter_rows<U: CpuElement>(rows: Vec<U>, lines: &Lines) -> Result<Vec<U>> {
    if lines.inner == 1 || lines.n <= 1 {
        return Ok(rows);
    }
    let back = Layout::contiguous(&[lines.outer, lines.inner, lines.n]).permute(&[0, 2, 1]);
    map_unary(&rows, &back, |e| e)
}

fn typed<T: SortKey>(x: &[T], l: &Layout, axis: usize, arg: bool) -> Result<CpuBuffer> {
    let lines = Lines { outer: numel(&l.shape[..axis]), n: l.shape[axis], inner: numel(&l.shape[axis + 1..]) };
    let rows = gather_rows(x, l, axis)?;
    if arg {
        let mut idx = output_vec::<u32>(rows.len())?;
        if !rows.is_empty() {
            sort_rows(&rows, lines.n, &mut idx, |_, p| p);
        }
        Ok(CpuBuffer::U32(scatter_rows(idx, &lines)?))
    } else {
        let mut v = output_vec::<T>(rows.len())?;
        if !rows.is_empty() {
            sort_rows(&rows, lines.n, &mut v, |row, p| row[p as usize]);
        }
        Ok(T::into_buffer(scatter_rows(v, &lines)?))
    }
}

/// Sorts the elements `l` selects along `axis` (see the module doc for the
/// order); row-major output of the same shape: the values, or with `arg`
/// their uint32 positions along the axis.
pub fn sort(x: &CpuBuffer, l: &Layout, axis: usize, arg: bool) -> Result<CpuBuffer> {
    crate::with_buffer!(x, v => typed(v, l, axis, arg))
}

/// For each element of `values` (layout `lv`), its insertion point in the
/// 1-D sorted sequence `seq` (layout `ls`, same dtype): the number of
/// elements before it in the sort order, or with `right` not after it.
/// Row-major uint32 output of `lv`'s shape.
pub fn search_sorted(seq: &CpuBuffer, ls: &Layout, values: &CpuBuffer, lv: &Layout, right: bool) -> Result<CpuBuffer> {
    fn typed<T: CpuElement>(seq: &[T], ls: &Layout, values: &[T], lv: &Layout, right: bool) -> Result<Vec<u32>> {
        let s = map_unary(seq, ls, |e| e)?;
        let s = &s[..];
        map_unary(values, lv, move |x: T| {
            let at = if right { s.partition_point(|&m| !before(x, m)) } else { s.partition_point(|&m| before(m, x)) };
            at as u32
        })
    }
    crate::with_buffer!(seq, s => {
        let v = CpuElement::slice_of(values)
            .ok_or_else(|| Error::invalid("searchsorted", "the sequence and the values differ in dtype"))?;
        Ok(CpuBuffer::U32(typed(s, ls, v, lv, right)?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};
    use num_complex::Complex32;

    /// MLX's stable order, by a plain insertion sort on (value, position).
    fn reference<T: Element>(row: &[T]) -> Vec<u32> {
        let mut idx: Vec<u32> = (0..row.len() as u32).collect();
        for i in 1..idx.len() {
            let mut j = i;
            while j > 0 && before(row[idx[j] as usize], row[idx[j - 1] as usize]) {
                idx.swap(j, j - 1);
                j -= 1;
            }
        }
        idx
    }

    fn args(b: CpuBuffer) -> Vec<u32> {
        match b {
            CpuBuffer::U32(v) => v,
            other => panic!("expected uint32, got {other:?}"),
        }
    }

    /// Pseudo-random values with many ties.
    fn data(n: usize, seed: u64) -> Vec<i32> {
        let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 33) % 23) as i32 - 11
            })
            .collect()
    }

    #[test]
    fn rows_match_the_stable_reference_serial_and_threaded() {
        // Small (serial), many rows (groups), few long rows (parallel sorts).
        for &(rows, n) in &[(1, 0), (3, 1), (4, 7), (2000, 33), (2, 40_000), (1, 100_000)] {
            let xi = data(rows * n, (rows * 31 + n) as u64);
            let xf: Vec<f32> = xi.iter().map(|&v| if v == 7 { f32::NAN } else { v as f32 * 0.5 }).collect();
            let l = Layout::contiguous(&[rows, n]);
            let got = args(sort(&CpuBuffer::F32(xf.clone()), &l, 1, true).unwrap());
            let CpuBuffer::F32(vals) = sort(&CpuBuffer::F32(xf.clone()), &l, 1, false).unwrap() else { panic!() };
            let got_i = args(sort(&CpuBuffer::I32(xi.clone()), &l, 1, true).unwrap());
            for r in 0..rows {
                let row = &xf[r * n..(r + 1) * n];
                let want = reference(row);
                assert_eq!(&got[r * n..(r + 1) * n], &want[..], "rows {rows} n {n} row {r}");
                for (k, &i) in want.iter().enumerate() {
                    let (a, b) = (vals[r * n + k], row[i as usize]);
                    assert!(a.to_bits() == b.to_bits(), "value {k} of row {r}: {a} vs {b}");
                }
                assert_eq!(&got_i[r * n..(r + 1) * n], &reference(&xi[r * n..(r + 1) * n])[..]);
            }
        }
    }

    #[test]
    fn other_axes_and_strided_layouts() {
        // [2, 3, 4] sorted along each axis, from a transposed [4, 3, 2] buffer.
        let base: Vec<i64> = data(24, 5).into_iter().map(i64::from).collect();
        let l = Layout::contiguous(&[4, 3, 2]).permute(&[2, 1, 0]);
        let logical = |i: usize, j: usize, k: usize| base[k * 6 + j * 2 + i];
        for axis in 0..3 {
            let got = args(sort(&CpuBuffer::I64(base.clone()), &l, axis, true).unwrap());
            let CpuBuffer::I64(vals) = sort(&CpuBuffer::I64(base.clone()), &l, axis, false).unwrap() else { panic!() };
            let shape = [2, 3, 4];
            let at = |idx: [usize; 3]| (idx[0] * 3 + idx[1]) * 4 + idx[2];
            for i in 0..2 {
                for j in 0..3 {
                    for k in 0..4 {
                        let mut idx = [i, j, k];
                        if idx[axis] != 0 {
                            continue;
                        }
                        let line: Vec<i64> = (0..shape[axis])
                            .map(|p| {
                                idx[axis] = p;
                                logical(idx[0], idx[1], idx[2])
                            })
                            .collect();
                        let want = reference(&line);
                        for (p, &w) in want.iter().enumerate() {
                            idx[axis] = p;
                            assert_eq!(got[at(idx)], w, "axis {axis} line {:?}", (i, j, k));
                            assert_eq!(vals[at(idx)], line[w as usize]);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn mlx_order_for_special_values() {
        let nan = f32::NAN;
        let x = vec![3.0, nan, 1.0, f32::NEG_INFINITY, nan, 2.0, f32::INFINITY, -0.0, 0.0];
        let l = Layout::contiguous(&[9]);
        assert_eq!(args(sort(&CpuBuffer::F32(x.clone()), &l, 0, true).unwrap()), [3, 7, 8, 2, 5, 0, 6, 1, 4]);
        let h: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
        assert_eq!(args(sort(&CpuBuffer::F16(h), &l, 0, true).unwrap()), [3, 7, 8, 2, 5, 0, 6, 1, 4]);
        let b: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
        assert_eq!(args(sort(&CpuBuffer::BF16(b), &l, 0, true).unwrap()), [3, 7, 8, 2, 5, 0, 6, 1, 4]);
        let c = vec![
            Complex32::new(1.0, 2.0),
            Complex32::new(1.0, 1.0),
            Complex32::new(0.0, 5.0),
            Complex32::new(nan, 0.0),
            Complex32::new(1.0, nan),
            Complex32::new(0.0, -1.0),
        ];
        let lc = Layout::contiguous(&[6]);
        assert_eq!(args(sort(&CpuBuffer::C64(c), &lc, 0, true).unwrap()), [5, 2, 1, 0, 3, 4]);
        let bools = vec![true, false, true, false];
        let CpuBuffer::Bool(v) = sort(&CpuBuffer::Bool(bools), &Layout::contiguous(&[4]), 0, false).unwrap() else {
            panic!()
        };
        assert_eq!(v, [false, false, true, true]);
        let u = vec![u64::MAX, 0, 5, u64::MAX - 1];
        assert_eq!(args(sort(&CpuBuffer::U64(u), &Layout::contiguous(&[4]), 0, true).unwrap()), [1, 2, 3, 0]);
    }

    #[test]
    fn search_sorted_both_sides_with_nan() {
        let seq = CpuBuffer::F32(vec![1.0, 2.0, 2.0, 4.0, f32::NAN]);
        let ls = Layout::contiguous(&[5]);
        let vals = CpuBuffer::F32(vec![0.0, 2.0, 3.0, 5.0, f32::NAN, -0.0]);
        let lv = Layout::contiguous(&[2, 3]);
        assert_eq!(args(search_sorted(&seq, &ls, &vals, &lv, false).unwrap()), [0, 1, 3, 4, 4, 0]);
        assert_eq!(args(search_sorted(&seq, &ls, &vals, &lv, true).unwrap()), [0, 3, 3, 4, 5, 0]);
        // A reversed view of a descending buffer, and transposed values.
        let seq = CpuBuffer::I8(vec![9, 5, 5, 1]);
        let ls = Layout { shape: vec![4], strides: vec![-1], offset: 3 };
        let vals = CpuBuffer::I8(vec![5, 0, 10, 1]);
        let lv = Layout::contiguous(&[2, 2]).permute(&[1, 0]);
        assert_eq!(args(search_sorted(&seq, &ls, &vals, &lv, false).unwrap()), [1, 4, 0, 0]);
        assert_eq!(args(search_sorted(&seq, &ls, &vals, &lv, true).unwrap()), [3, 4, 0, 1]);
        let empty = CpuBuffer::I8(vec![]);
        assert_eq!(args(search_sorted(&empty, &Layout::contiguous(&[0]), &vals, &lv, true).unwrap()), [0; 4]);
    }
}
