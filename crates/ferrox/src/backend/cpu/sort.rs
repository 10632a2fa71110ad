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
//!
//! A value sort first tries the keys alone: every element but NaN and -0.0
//! has a key that maps back to its exact bits ([`SortKey::exact_key`]), and
//! equal keys are then equal bits, so stability cannot show; a row free of
//! NaN and -0.0 sorts its keys (4 or 8 bytes an item instead of 16) and
//! maps them back. A single long row splits each radix pass over threads.

use super::elementwise::map_unary;
use super::storage::{output_vec, CpuBuffer, CpuElement};
use super::strided::{chunk_len, SendPtr, PARALLEL_THRESHOLD};
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
    /// The unsigned type that holds an exact key.
    type Exact: RadixKey;
    /// The key of `self` if it maps back to `self`'s bits: the sort key of
    /// every value but NaN and -0.0 (which share their key with other bits).
    fn exact_key(self) -> Option<Self::Exact>;
    /// The value whose exact key is `k`.
    fn from_exact_key(k: Self::Exact) -> Self;
}

/// An unsigned key that a radix sort takes apart in 11-bit digits.
trait RadixKey: Copy + Default + Ord + Send + Sync {
    /// The digit `shift` bits up.
    fn digit(self, shift: u32) -> usize;
}

impl RadixKey for u32 {
    #[inline(always)]
    fn digit(self, shift: u32) -> usize {
        ((self >> shift) & DIGIT_MASK as u32) as usize
    }
}

impl RadixKey for u64 {
    #[inline(always)]
    fn digit(self, shift: u32) -> usize {
        ((self >> shift) & DIGIT_MASK as u64) as usize
    }
}

/// Radix digits of the exact keys: 11 bits (2048 buckets, three passes
/// for 32-bit keys).
const DIGIT_BITS: u32 = 11;
const DIGIT_MASK: usize = (1 << DIGIT_BITS) - 1;
const BUCKETS: usize = 1 << DIGIT_BITS;

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

/// The float32 whose key is `k` (the inverse of [`f32_key`] away from NaN
/// and -0.0).
fn f32_from_key(k: u32) -> f32 {
    f32::from_bits(if k >> 31 == 1 { k & !(1 << 31) } else { !k })
}

/// The float64 whose key is `k` (the inverse of [`f64_key`] away from NaN
/// and -0.0).
fn f64_from_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// Whether a float is NaN or -0.0, whose keys do not map back to its bits.
fn inexact_key(nan: bool, negative_zero: bool) -> bool {
    nan || negative_zero
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
    ($($t:ty, $bytes:expr, $exact:ty, |$v:ident| $key:expr, |$e:ident| $exact_key:expr, |$k:ident| $back:expr;)*) => {$(
        impl SortKey for $t {
            const KEY_BYTES: usize = $bytes;
            type Exact = $exact;
            #[inline(always)]
            fn sort_key(self) -> u64 {
                let $v = self;
                $key
            }
            #[inline(always)]
            fn exact_key(self) -> Option<$exact> {
                let $e = self;
                $exact_key
            }
            #[inline(always)]
            fn from_exact_key($k: $exact) -> Self {
                $back
            }
        }
    )*};
}

sort_key! {
    bool, 1, u32, |v| u64::from(v), |v| Some(u32::from(v)), |k| k != 0;
    u8, 1, u32, |v| u64::from(v), |v| Some(u32::from(v)), |k| k as u8;
    u16, 2, u32, |v| u64::from(v), |v| Some(u32::from(v)), |k| k as u16;
    u32, 4, u32, |v| u64::from(v), |v| Some(v), |k| k;
    u64, 8, u64, |v| v, |v| Some(v), |k| k;
    i8, 1, u32, |v| u64::from((v as u8) ^ 0x80), |v| Some(u32::from((v as u8) ^ 0x80)), |k| (k as u8 ^ 0x80) as i8;
    i16, 2, u32, |v| u64::from((v as u16) ^ 0x8000), |v| Some(u32::from((v as u16) ^ 0x8000)),
        |k| (k as u16 ^ 0x8000) as i16;
    i32, 4, u32, |v| u64::from((v as u32) ^ 0x8000_0000), |v| Some((v as u32) ^ 0x8000_0000),
        |k| (k ^ 0x8000_0000) as i32;
    i64, 8, u64, |v| (v as u64) ^ (1 << 63), |v| Some((v as u64) ^ (1 << 63)), |k| (k ^ (1 << 63)) as i64;
    half::f16, 4, u32, |v| u64::from(f32_key(v.to_f32())),
        |v| (!inexact_key(v.is_nan(), v.to_bits() == 0x8000)).then(|| f32_key(v.to_f32())),
        |k| half::f16::from_f32(f32_from_key(k));
    half::bf16, 4, u32, |v| u64::from(f32_key(v.to_f32())),
        |v| (!inexact_key(v.is_nan(), v.to_bits() == 0x8000)).then(|| f32_key(v.to_f32())),
        |k| half::bf16::from_f32(f32_from_key(k));
    f32, 4, u32, |v| u64::from(f32_key(v)),
        |v| (!inexact_key(v.is_nan(), v.to_bits() == 1 << 31)).then(|| f32_key(v)),
        |k| f32_from_key(k);
    f64, 8, u64, |v| f64_key(v),
        |v| (!inexact_key(v.is_nan(), v.to_bits() == 1 << 63)).then(|| f64_key(v)),
        |k| f64_from_key(k);
    num_complex::Complex32, 8, u64, |v| {
        if v.re.is_nan() || v.im.is_nan() {
            u64::MAX
        } else {
            (u64::from(f32_key(v.re)) << 32) | u64::from(f32_key(v.im))
        }
    }, |v| {
        let exact = |f: f32| !inexact_key(f.is_nan(), f.to_bits() == 1 << 31);
        (exact(v.re) && exact(v.im)).then(|| (u64::from(f32_key(v.re)) << 32) | u64::from(f32_key(v.im)))
    }, |k| num_complex::Complex32::new(f32_from_key((k >> 32) as u32), f32_from_key(k as u32));
}

/// Rows shorter than this sort their items by comparison, longer ones by radix.
const RADIX_MIN: usize = 64;

/// A single row at least this long splits its exact-key radix passes
/// over threads.
const PARALLEL_ROW_MIN: usize = 1 << 20;

/// Reusable buffers of one task: (key, position) items and exact keys.
#[derive(Default)]
struct Scratch<K> {
    items: Vec<(u64, u32)>,
    tmp: Vec<(u64, u32)>,
    keys: Vec<K>,
    key_tmp: Vec<K>,
}

impl<K: RadixKey> Scratch<K> {
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

    /// Writes `row`'s values in sorted order to `out` by sorting their
    /// exact keys, if every element has one (else returns false and leaves
    /// `out` alone). `parallel` splits the radix passes over threads.
    fn sort_exact<T: SortKey<Exact = K>>(&mut self, row: &[T], out: &mut [T], parallel: bool) -> bool {
        let to_keys = |keys: &mut [K], values: &[T]| {
            for (k, &v) in keys.iter_mut().zip(values) {
                match v.exact_key() {
                    Some(x) => *k = x,
                    None => return false,
                }
            }
            true
        };
        let to_values = |values: &mut [T], keys: &[K]| {
            for (v, &k) in values.iter_mut().zip(keys) {
                *v = T::from_exact_key(k);
            }
        };
        if parallel {
            let part = parallel_part(row.len());
            self.keys = vec![K::default(); row.len()];
            if !self.keys.par_chunks_mut(part).zip(row.par_chunks(part)).all(|(k, v)| to_keys(k, v)) {
                return false;
            }
            radix_parallel(&mut self.keys, &mut self.key_tmp, T::KEY_BYTES);
            out.par_chunks_mut(part).zip(self.keys.par_chunks(part)).for_each(|(v, k)| to_values(v, k));
            return true;
        }
        self.keys.resize(row.len(), K::default());
        if !to_keys(&mut self.keys, row) {
            return false;
        }
        if row.len() < RADIX_MIN {
            self.keys.sort_unstable();
        } else {
            radix_serial(&mut self.keys, &mut self.key_tmp, T::KEY_BYTES);
        }
        to_values(out, &self.keys);
        true
    }
}

/// The exclusive prefix sums of `counts`, in place.
fn exclusive_prefix_sums(counts: &mut [usize]) {
    let mut sum = 0;
    for c in counts.iter_mut() {
        (*c, sum) = (sum, sum + *c);
    }
}

/// The number of 11-bit digits of a key of `key_bytes` bytes.
fn digit_passes(key_bytes: usize) -> u32 {
    (8 * key_bytes as u32).div_ceil(DIGIT_BITS)
}

/// Sorts `keys` by a least-significant-digit radix sort over their low
/// `key_bytes` bytes, with `tmp` as the second buffer. One read counts
/// every pass's digits; a pass whose digit is the same for all keys is
/// skipped.
fn radix_serial<K: RadixKey>(keys: &mut Vec<K>, tmp: &mut Vec<K>, key_bytes: usize) {
    let passes = digit_passes(key_bytes);
    let mut counts = vec![[0usize; BUCKETS]; passes as usize];
    for &k in keys.iter() {
        for (p, c) in counts.iter_mut().enumerate() {
            c[k.digit(p as u32 * DIGIT_BITS)] += 1;
        }
    }
    tmp.resize(keys.len(), K::default());
    for (p, start) in counts.iter_mut().enumerate() {
        if start.contains(&keys.len()) {
            continue;
        }
        exclusive_prefix_sums(start);
        let shift = p as u32 * DIGIT_BITS;
        for &k in keys.iter() {
            let d = k.digit(shift);
            tmp[start[d]] = k;
            start[d] += 1;
        }
        std::mem::swap(keys, tmp);
    }
}

/// The part of a long row each thread takes in a parallel sort.
fn parallel_part(n: usize) -> usize {
    n.div_ceil(rayon::current_num_threads().max(1)).max(1)
}

/// [`radix_serial`] with each pass split over threads: every part of the
/// keys counts its digits, the counts give each (part, digit) pair its own
/// range of the output, and the parts scatter into their ranges at once.
fn radix_parallel<K: RadixKey>(keys: &mut Vec<K>, tmp: &mut Vec<K>, key_bytes: usize) {
    let n = keys.len();
    let part = parallel_part(n);
    if tmp.len() != n {
        *tmp = vec![K::default(); n]; // zeroed pages from the allocator: no serial fill
    }
    for p in 0..digit_passes(key_bytes) {
        let shift = p * DIGIT_BITS;
        let counts: Vec<[usize; BUCKETS]> = keys
            .par_chunks(part)
            .map(|c| {
                let mut h = [0usize; BUCKETS];
                for &k in c {
                    h[k.digit(shift)] += 1;
                }
                h
            })
            .collect();
        let mut starts = counts.clone();
        let mut next = 0;
        for d in 0..BUCKETS {
            if counts.iter().map(|h| h[d]).sum::<usize>() == n {
                next = usize::MAX; // one digit holds every key: nothing moves
                break;
            }
            for (s, h) in starts.iter_mut().zip(&counts) {
                s[d] = next;
                next += h[d];
            }
        }
        if next == usize::MAX {
            continue;
        }
        let dst = SendPtr(tmp.as_mut_ptr());
        keys.par_chunks(part).zip(starts.into_par_iter()).for_each(|(c, mut start)| {
            for &k in c {
                let d = k.digit(shift);
                // SAFETY: the ranges [start of (part, digit), + its count)
                // partition 0..n, and only this part writes its ranges.
                unsafe { *dst.get().add(start[d]) = k };
                start[d] += 1;
            }
        });
        std::mem::swap(keys, tmp);
    }
}

/// Sorts each row of `n` elements of `data` (`[rows, n]`) into the same
/// row of `out` with `sort_row(scratch, row, out_row, parallel)`; groups of
/// rows run on several threads when large, and a single long row is told
/// to split its own work (`parallel`).
fn sort_rows<T: SortKey, U: Send>(
    data: &[T],
    n: usize,
    out: &mut [U],
    sort_row: impl Fn(&mut Scratch<T::Exact>, &[T], &mut [U], bool) + Sync,
) {
    let group = |rows: &[T], outs: &mut [U], parallel: bool| {
        let mut scratch = Scratch::default();
        for (row, o) in rows.chunks(n).zip(outs.chunks_mut(n)) {
            sort_row(&mut scratch, row, o, parallel);
        }
    };
    let total = data.len();
    let rows = total / n;
    if total >= PARALLEL_THRESHOLD && rows > 1 {
        let span = (chunk_len(total) / n).max(1) * n;
        out.par_chunks_mut(span).zip(data.par_chunks(span)).for_each(|(o, d)| group(d, o, false));
    } else {
        group(data, out, rows == 1 && n >= PARALLEL_ROW_MIN && rayon::current_num_threads() > 1);
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
            sort_rows(&rows, lines.n, &mut idx, |scratch, row, out, _| {
                scratch.sort(row);
                for (slot, &(_, p)) in out.iter_mut().zip(&scratch.items) {
                    *slot = p;
                }
            });
        }
        Ok(CpuBuffer::U32(scatter_rows(idx, &lines)?.into()))
    } else {
        let mut v = output_vec::<T>(rows.len())?;
        if !rows.is_empty() {
            sort_rows(&rows, lines.n, &mut v, |scratch, row, out, parallel| {
                if !scratch.sort_exact(row, out, parallel) {
                    scratch.sort(row);
                    for (slot, &(_, p)) in out.iter_mut().zip(&scratch.items) {
                        *slot = row[p as usize];
                    }
                }
            });
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
        Ok(CpuBuffer::U32(typed(s, ls, v, lv, right)?.into()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};
    use num_complex::Complex32;

    /// MLX's stable order: the standard library's stable sort of the
    /// positions, compared by `before` alone.
    fn reference<T: Element>(row: &[T]) -> Vec<u32> {
        let mut idx: Vec<u32> = (0..row.len() as u32).collect();
        idx.sort_by(|&i, &j| {
            let (a, b) = (row[i as usize], row[j as usize]);
            if before(a, b) {
                std::cmp::Ordering::Less
            } else if before(b, a) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        idx
    }

    fn args(b: CpuBuffer) -> Vec<u32> {
        match b {
            CpuBuffer::U32(v) => v.into_vec(),
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
            let got = args(sort(&CpuBuffer::F32(xf.clone().into()), &l, 1, true).unwrap());
            let CpuBuffer::F32(vals) = sort(&CpuBuffer::F32(xf.clone().into()), &l, 1, false).unwrap() else {
                panic!()
            };
            let got_i = args(sort(&CpuBuffer::I32(xi.clone().into()), &l, 1, true).unwrap());
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

    /// Sorts the values of `x` as `[rows, n]` along its rows and checks
    /// every row against the stable reference, bit for bit (`{:?}` tells
    /// -0.0 from 0.0 and shows NaN).
    fn check_values<T: SortKey>(x: Vec<T>, rows: usize, n: usize) {
        let l = Layout::contiguous(&[rows, n]);
        let got = T::from_buffer(sort(&T::into_buffer(x.clone()), &l, 1, false).unwrap()).unwrap();
        for r in 0..rows {
            let row = &x[r * n..(r + 1) * n];
            for (k, &i) in reference(row).iter().enumerate() {
                let (a, b) = (got[r * n + k], row[i as usize]);
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "{} row {r} item {k}", std::any::type_name::<T>());
            }
        }
    }

    #[test]
    fn value_sorts_by_exact_keys_match_the_reference_bit_for_bit() {
        // Words over the whole range (every radix digit varies), in short
        // rows, long rows and one row long enough to split its passes.
        let words = |n: usize, seed: u64| -> Vec<u64> {
            let mut s = seed | 1;
            (0..n)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    s
                })
                .collect()
        };
        let no_nan = |x: f32| if x.is_nan() { 1.5 } else { x };
        for &(rows, n) in &[(3, 50), (4, 3000), (1, PARALLEL_ROW_MIN + 123)] {
            let w = words(rows * n, n as u64);
            check_values(w.iter().map(|&b| no_nan(f32::from_bits(b as u32))).collect::<Vec<f32>>(), rows, n);
            check_values(w.iter().map(|&b| b as i32).collect::<Vec<i32>>(), rows, n);
            if n > 100_000 {
                continue; // one long row of the 4-byte kinds is enough
            }
            let f64s = |b: u64| {
                let x = f64::from_bits(b);
                if x.is_nan() {
                    -2.5
                } else {
                    x
                }
            };
            check_values(w.iter().map(|&b| f64s(b)).collect::<Vec<f64>>(), rows, n);
            check_values(w.iter().map(|&b| b as i64).collect::<Vec<i64>>(), rows, n);
            check_values(w.clone(), rows, n);
            check_values(w.iter().map(|&b| b as u8).collect::<Vec<u8>>(), rows, n);
            check_values(w.iter().map(|&b| b as i16).collect::<Vec<i16>>(), rows, n);
            check_values(w.iter().map(|&b| b & 1 == 1).collect::<Vec<bool>>(), rows, n);
            check_values(
                w.iter().map(|&b| f16::from_f32(no_nan(f32::from_bits(b as u32)))).collect::<Vec<_>>(),
                rows,
                n,
            );
            check_values(
                w.iter().map(|&b| bf16::from_f32(no_nan(f32::from_bits(b as u32)))).collect::<Vec<_>>(),
                rows,
                n,
            );
            let c: Vec<Complex32> = w
                .iter()
                .map(|&b| Complex32::new(((b >> 40) % 5) as f32 - 2.0, no_nan(f32::from_bits(b as u32))))
                .collect();
            check_values(c, rows, n);
            // A NaN or a -0.0 anywhere sends the row to the (key, position) sort.
            let mut f: Vec<f32> = w.iter().map(|&b| (b % 7) as f32 - 3.0).collect();
            f[n / 2] = f32::NAN;
            f[n / 3] = -0.0;
            check_values(f, rows, n);
        }
    }

    #[test]
    fn other_axes_and_strided_layouts() {
        // [2, 3, 4] sorted along each axis, from a transposed [4, 3, 2] buffer.
        let base: Vec<i64> = data(24, 5).into_iter().map(i64::from).collect();
        let l = Layout::contiguous(&[4, 3, 2]).permute(&[2, 1, 0]);
        let logical = |i: usize, j: usize, k: usize| base[k * 6 + j * 2 + i];
        for axis in 0..3 {
            let got = args(sort(&CpuBuffer::I64(base.clone().into()), &l, axis, true).unwrap());
            let CpuBuffer::I64(vals) = sort(&CpuBuffer::I64(base.clone().into()), &l, axis, false).unwrap() else {
                panic!()
            };
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
        assert_eq!(args(sort(&CpuBuffer::F32(x.clone().into()), &l, 0, true).unwrap()), [3, 7, 8, 2, 5, 0, 6, 1, 4]);
        let h: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
        assert_eq!(args(sort(&CpuBuffer::F16(h.into()), &l, 0, true).unwrap()), [3, 7, 8, 2, 5, 0, 6, 1, 4]);
        let b: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
        assert_eq!(args(sort(&CpuBuffer::BF16(b.into()), &l, 0, true).unwrap()), [3, 7, 8, 2, 5, 0, 6, 1, 4]);
        let c = vec![
            Complex32::new(1.0, 2.0),
            Complex32::new(1.0, 1.0),
            Complex32::new(0.0, 5.0),
            Complex32::new(nan, 0.0),
            Complex32::new(1.0, nan),
            Complex32::new(0.0, -1.0),
        ];
        let lc = Layout::contiguous(&[6]);
        assert_eq!(args(sort(&CpuBuffer::C64(c.into()), &lc, 0, true).unwrap()), [5, 2, 1, 0, 3, 4]);
        let bools = vec![true, false, true, false];
        let CpuBuffer::Bool(v) = sort(&CpuBuffer::Bool(bools.into()), &Layout::contiguous(&[4]), 0, false).unwrap()
        else {
            panic!()
        };
        assert_eq!(v, [false, false, true, true]);
        let u = vec![u64::MAX, 0, 5, u64::MAX - 1];
        assert_eq!(args(sort(&CpuBuffer::U64(u.into()), &Layout::contiguous(&[4]), 0, true).unwrap()), [1, 2, 3, 0]);
    }

    #[test]
    fn search_sorted_both_sides_with_nan() {
        let seq = CpuBuffer::F32(vec![1.0, 2.0, 2.0, 4.0, f32::NAN].into());
        let ls = Layout::contiguous(&[5]);
        let vals = CpuBuffer::F32(vec![0.0, 2.0, 3.0, 5.0, f32::NAN, -0.0].into());
        let lv = Layout::contiguous(&[2, 3]);
        assert_eq!(args(search_sorted(&seq, &ls, &vals, &lv, false).unwrap()), [0, 1, 3, 4, 4, 0]);
        assert_eq!(args(search_sorted(&seq, &ls, &vals, &lv, true).unwrap()), [0, 3, 3, 4, 5, 0]);
        // A reversed view of a descending buffer, and transposed values.
        let seq = CpuBuffer::I8(vec![9, 5, 5, 1].into());
        let ls = Layout { shape: vec![4], strides: vec![-1], offset: 3 };
        let vals = CpuBuffer::I8(vec![5, 0, 10, 1].into());
        let lv = Layout::contiguous(&[2, 2]).permute(&[1, 0]);
        assert_eq!(args(search_sorted(&seq, &ls, &vals, &lv, false).unwrap()), [1, 4, 0, 0]);
        assert_eq!(args(search_sorted(&seq, &ls, &vals, &lv, true).unwrap()), [3, 4, 0, 1]);
        let empty = CpuBuffer::I8(vec![].into());
        assert_eq!(args(search_sorted(&empty, &Layout::contiguous(&[0]), &vals, &lv, true).unwrap()), [0; 4]);
    }
}
