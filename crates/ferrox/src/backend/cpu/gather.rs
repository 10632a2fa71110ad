//! Gather and scatter: reading and writing slices of an array at positions
//! given by integer index arrays (MLX's `Gather` and `Scatter`, which carry
//! `take`, `take_along_axis`, `put_along_axis`, advanced indexing and
//! `a[idx] = v`).
//!
//! Both read the index arrays in place (any integer dtype; one that is not
//! row-contiguous is first copied to int64) and resolve them a chunk of
//! index positions at a time into base offsets, checking every index
//! against its axis; the slice is a list of relative offsets. A gather then
//! copies `base[i] + slice[j]` to output element `(i, j)` (several threads
//! for large outputs), a scatter combines update `(i, j)` into the element
//! there, in row-major order of the updates, so duplicates resolve
//! deterministically (the last assignment wins).

use super::elementwise::{cast_buffer, map_unary};
use super::storage::{output_vec, CpuBuffer, CpuElement};
use super::strided::{chunk_len, PARALLEL_THRESHOLD};
use crate::backend::ScatterOp;
use crate::dtype::Dtype;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::shape::{contiguous_strides, numel, Layout};
use crate::with_buffer;
use rayon::prelude::*;
use std::borrow::Cow;
use std::ops::Range;

/// Index positions resolved at a time (their base offsets live on the stack).
const CHUNK: usize = 1024;

/// Adds to `bases[k]` the offset that index position `start + k` of one
/// index array selects along its axis; false if any index is out of range.
type AddOffsets<'a> = Box<dyn Fn(usize, &mut [isize]) -> bool + Sync + 'a>;

/// Where the slices of one gather or scatter lie in the indexed buffer.
struct Plan<'a> {
    // What the plan resolves, kept for the error of an index out of range.
    op: &'static str,
    shape: &'a [usize],
    indices: &'a [(&'a CpuBuffer, &'a Layout)],
    axes: &'a [usize],
    slice_sizes: &'a [usize],
    /// Offset of the indexed buffer's first element.
    offset: isize,
    /// Number of index positions.
    n_idx: usize,
    /// One reader per index array.
    arrays: Vec<AddOffsets<'a>>,
    /// Offsets of the slice's elements from its start, row-major.
    slice: Vec<isize>,
}

/// An integer index value as int64 (wrapping, as a cast to int64).
trait IndexInt: Copy + Sync {
    fn to_i64(self) -> i64;
}

macro_rules! index_int {
    ($($t:ty),*) => {
        $(impl IndexInt for $t {
            fn to_i64(self) -> i64 {
                self as i64
            }
        })*
    };
}
index_int!(u8, u16, u32, u64, i8, i16, i32, i64);

/// The reader of one index array along an axis of `n` elements (slices of
/// `slice` elements, `stride` apart): in place when row-contiguous.
fn offsets_reader<'a>(
    op: &'static str,
    buf: &'a CpuBuffer,
    l: &Layout,
    n: usize,
    slice: usize,
    stride: isize,
) -> Result<AddOffsets<'a>> {
    fn typed<T: IndexInt + Clone>(idx: Cow<'_, [T]>, n: usize, slice: usize, stride: isize) -> AddOffsets<'_> {
        let (n, last) = (n as i64, n as i64 - slice as i64);
        Box::new(move |start, bases: &mut [isize]| {
            add_offsets(&idx[start..start + bases.len()], n, last, stride, bases)
        })
    }
    if !l.is_row_contiguous() {
        let CpuBuffer::I64(v) = cast_buffer(buf, l, Dtype::I64)? else { unreachable!("a cast to int64 gives int64") };
        return Ok(typed(Cow::Owned(v.into_vec()), n, slice, stride));
    }
    let r = l.offset..l.offset + l.size();
    Ok(match buf {
        CpuBuffer::U8(v) => typed(Cow::Borrowed(&v[r]), n, slice, stride),
        CpuBuffer::U16(v) => typed(Cow::Borrowed(&v[r]), n, slice, stride),
        CpuBuffer::U32(v) => typed(Cow::Borrowed(&v[r]), n, slice, stride),
        CpuBuffer::U64(v) => typed(Cow::Borrowed(&v[r]), n, slice, stride),
        CpuBuffer::I8(v) => typed(Cow::Borrowed(&v[r]), n, slice, stride),
        CpuBuffer::I16(v) => typed(Cow::Borrowed(&v[r]), n, slice, stride),
        CpuBuffer::I32(v) => typed(Cow::Borrowed(&v[r]), n, slice, stride),
        CpuBuffer::I64(v) => typed(Cow::Borrowed(&v[r]), n, slice, stride),
        _ => return Err(Error::invalid(op, "Indices must be integers.")),
    })
}

/// Adds `at * stride` to `bases[k]`, `at` being `idx[k]` counted from the
/// end of an axis of `n` elements when negative; false if some `at` is
/// outside `0..=last`. Vectorized with AVX2 or AVX-512 where the processor
/// has them (the loop needs 64-bit vector compares).
fn add_offsets<T: IndexInt>(idx: &[T], n: i64, last: i64, stride: isize, bases: &mut [isize]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512dq") {
            // SAFETY: the processor supports AVX-512 F and DQ (checked above).
            return unsafe { add_offsets_avx512(idx, n, last, stride, bases) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor supports AVX2 (checked above).
            return unsafe { add_offsets_avx2(idx, n, last, stride, bases) };
        }
    }
    add_offsets_body(idx, n, last, stride, bases)
}

/// [`add_offsets_body`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_offsets_avx2<T: IndexInt>(idx: &[T], n: i64, last: i64, stride: isize, bases: &mut [isize]) -> bool {
    add_offsets_body(idx, n, last, stride, bases)
}

/// [`add_offsets_body`] compiled for AVX-512 (64-bit vector multiplies).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
unsafe fn add_offsets_avx512<T: IndexInt>(idx: &[T], n: i64, last: i64, stride: isize, bases: &mut [isize]) -> bool {
    add_offsets_body(idx, n, last, stride, bases)
}

/// The body of [`add_offsets`], inlined into each instruction-set variant
/// (with a copy for unit strides, which need no multiply).
#[inline(always)]
fn add_offsets_body<T: IndexInt>(idx: &[T], n: i64, last: i64, stride: isize, bases: &mut [isize]) -> bool {
    #[inline(always)]
    fn go<T: IndexInt>(idx: &[T], n: i64, last: i64, stride: isize, bases: &mut [isize]) -> bool {
        let mut ok = true;
        for (b, &v) in bases.iter_mut().zip(idx) {
            let v = v.to_i64();
            let at = if v < 0 { v + n } else { v };
            ok &= (0..=last).contains(&at);
            *b += at as isize * stride;
        }
        ok
    }
    if stride == 1 {
        go(idx, n, last, 1, bases)
    } else {
        go(idx, n, last, stride, bases)
    }
}

impl<'a> Plan<'a> {
    /// Resolves `indices` (one per axis of `axes`) against a buffer of
    /// `shape` read with `strides` from `offset`, for slices of `slice_sizes`.
    fn new(
        op: &'static str,
        shape: &'a [usize],
        strides: &[isize],
        offset: usize,
        indices: &'a [(&'a CpuBuffer, &'a Layout)],
        axes: &'a [usize],
        slice_sizes: &'a [usize],
    ) -> Result<Self> {
        let arrays = indices
            .iter()
            .zip(axes)
            .map(|(&(buf, l), &axis)| offsets_reader(op, buf, l, shape[axis], slice_sizes[axis], strides[axis]))
            .collect::<Result<_>>()?;
        let mut slice = Vec::with_capacity(numel(slice_sizes));
        if numel(slice_sizes) > 0 {
            let mut pos = vec![0usize; slice_sizes.len()];
            'odometer: loop {
                slice.push(pos.iter().zip(strides).map(|(&p, &s)| p as isize * s).sum());
                let mut d = slice_sizes.len();
                loop {
                    if d == 0 {
                        break 'odometer;
                    }
                    d -= 1;
                    pos[d] += 1;
                    if pos[d] < slice_sizes[d] {
                        break;
                    }
                    pos[d] = 0;
                }
            }
        }
        let n_idx = indices.first().map_or(1, |(_, l)| l.size());
        Ok(Plan { op, shape, indices, axes, slice_sizes, offset: offset as isize, n_idx, arrays, slice })
    }

    /// Calls `f(start, bases)` for consecutive chunks of the index positions
    /// in `range`, `bases` holding the slice starts of positions
    /// `start..start + bases.len()`; stops at the first chunk with an index
    /// out of range.
    fn each_chunk(&self, range: Range<usize>, mut f: impl FnMut(usize, &[isize])) -> Result<()> {
        let mut buf = [0isize; CHUNK];
        for start in range.clone().step_by(CHUNK) {
            let bases = &mut buf[..CHUNK.min(range.end - start)];
            bases.fill(self.offset);
            if !self.arrays.iter().fold(true, |ok, add| add(start, bases) & ok) {
                return Err(self.first_out_of_range());
            }
            f(start, bases);
        }
        Ok(())
    }

    /// The error for the first index out of range, looking at the index
    /// arrays in order (the slow path of [`Plan::each_chunk`]).
    fn first_out_of_range(&self) -> Error {
        for (&(buf, layout), &axis) in self.indices.iter().zip(self.axes) {
            let values = match cast_buffer(buf, layout, Dtype::I64) {
                Ok(CpuBuffer::I64(values)) => values,
                Ok(_) => unreachable!("a cast to int64 gives int64"),
                Err(e) => return e,
            };
            let (n, s) = (self.shape[axis] as i64, self.slice_sizes[axis] as i64);
            if let Some(&v) = values.iter().find(|&&v| {
                let start = if v < 0 { v + n } else { v };
                start < 0 || start > n - s
            }) {
                return out_of_range(self.op, v, axis, self.shape[axis], self.slice_sizes[axis]);
            }
        }
        unreachable!("each_chunk found an index out of range")
    }
}

fn out_of_range(op: &'static str, index: i64, axis: usize, size: usize, slice: usize) -> Error {
    if slice == 1 {
        Error::IndexArgument { op, msg: format!("Index {index} is out of bounds for axis {axis} with size {size}.") }
    } else {
        Error::IndexArgument {
            op,
            msg: format!("Start index {index} leaves no room for a slice of {slice} along axis {axis} of size {size}."),
        }
    }
}

/// See [`Backend::gather`](crate::backend::Backend::gather).
pub fn gather(
    x: &CpuBuffer,
    lx: &Layout,
    indices: &[(&CpuBuffer, &Layout)],
    axes: &[usize],
    slice_sizes: &[usize],
) -> Result<CpuBuffer> {
    let plan = Plan::new("gather", &lx.shape, &lx.strides, lx.offset, indices, axes, slice_sizes)?;
    fn typed<T: CpuElement>(x: &[T], plan: &Plan) -> Result<CpuBuffer> {
        let s = plan.slice.len();
        let mut out = output_vec::<T>(plan.n_idx * s)?;
        if s == 0 {
            // Nothing to copy, but the indices are still checked.
            plan.each_chunk(0..plan.n_idx, |_, _| ())?;
            return Ok(T::into_buffer(out));
        }
        // Fills the output rows of index positions `first..`.
        let fill = |first: usize, part: &mut [T]| {
            plan.each_chunk(first..first + part.len() / s, |start, bases| {
                let rows = &mut part[(start - first) * s..][..bases.len() * s];
                if s == 1 {
                    // One element per index (take, take_along_axis): no per-slice loop.
                    let off = plan.slice[0];
                    for (o, &b) in rows.iter_mut().zip(bases) {
                        *o = x[(b + off) as usize];
                    }
                } else {
                    for (&b, row) in bases.iter().zip(rows.chunks_mut(s)) {
                        for (o, &off) in row.iter_mut().zip(&plan.slice) {
                            *o = x[(b + off) as usize];
                        }
                    }
                }
            })
        };
        if out.len() >= PARALLEL_THRESHOLD {
            let per_task = (chunk_len(out.len()) / s).max(1);
            out.par_chunks_mut(per_task * s).enumerate().try_for_each(|(t, part)| fill(t * per_task, part))?;
        } else {
            fill(0, &mut out)?;
        }
        Ok(T::into_buffer(out))
    }
    with_buffer!(x, v => typed(v, &plan))
}

/// See [`Backend::scatter`](crate::backend::Backend::scatter).
pub fn scatter(
    op: ScatterOp,
    base: &CpuBuffer,
    lb: &Layout,
    indices: &[(&CpuBuffer, &Layout)],
    axes: &[usize],
    updates: &CpuBuffer,
    lu: &Layout,
) -> Result<CpuBuffer> {
    let slice_sizes = &lu.shape[lu.ndim() - lb.ndim()..];
    let strides = contiguous_strides(&lb.shape);
    let plan = Plan::new(op.name(), &lb.shape, &strides, 0, indices, axes, slice_sizes)?;
    fn typed<T: CpuElement>(
        op: ScatterOp,
        base: &[T],
        lb: &Layout,
        upd: &[T],
        lu: &Layout,
        plan: &Plan,
    ) -> Result<Vec<T>> {
        let mut out = map_unary(base, lb, |v| v)?;
        // Row-contiguous updates are read in place.
        let upd: Cow<[T]> = if lu.is_row_contiguous() {
            Cow::Borrowed(&upd[lu.offset..lu.offset + lu.size()])
        } else {
            Cow::Owned(map_unary(upd, lu, |v| v)?)
        };
        match op {
            ScatterOp::Assign => combine_into(&mut out, plan, &upd, |_, u| u),
            ScatterOp::Sum => combine_into(&mut out, plan, &upd, Element::add),
            ScatterOp::Prod => combine_into(&mut out, plan, &upd, Element::mul),
            ScatterOp::Max => combine_into(&mut out, plan, &upd, Element::max),
            ScatterOp::Min => combine_into(&mut out, plan, &upd, Element::min),
        }?;
        Ok(out)
    }
    /// Combines each update into `out` at its place, in row-major order of
    /// the updates (`combine` is inlined: one copy of the loop per op).
    fn combine_into<T: Copy>(out: &mut [T], plan: &Plan, upd: &[T], combine: impl Fn(T, T) -> T) -> Result<()> {
        let s = plan.slice.len();
        plan.each_chunk(0..plan.n_idx, |start, bases| {
            if s == 1 {
                let off = plan.slice[0];
                for (&b, &u) in bases.iter().zip(&upd[start..]) {
                    let at = (b + off) as usize;
                    out[at] = combine(out[at], u);
                }
            } else if s > 0 {
                for (&b, row) in bases.iter().zip(upd[start * s..].chunks(s)) {
                    for (&off, &u) in plan.slice.iter().zip(row) {
                        let at = (b + off) as usize;
                        out[at] = combine(out[at], u);
                    }
                }
            }
        })
    }
    macro_rules! go {
        ($($V:ident),*) => {
            match (base, updates) {
                $((CpuBuffer::$V(b), CpuBuffer::$V(u)) => Ok(CpuBuffer::$V(typed(op, b, lb, u, lu, &plan)?.into())),)*
                _ => Err(Error::invalid(op.name(), "the updates must have the array's dtype")),
            }
        };
    }
    go!(Bool, U8, U16, U32, U64, I8, I16, I32, I64, F16, BF16, F32, F64, C64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(v: Vec<i64>) -> CpuBuffer {
        CpuBuffer::I64(v.into())
    }

    #[test]
    fn gather_rows_and_negative_indices() {
        let x = CpuBuffer::F32((0..12).map(|v| v as f32).collect::<Vec<_>>().into());
        let lx = Layout::contiguous(&[3, 4]);
        let idx = buf(vec![2, -3]);
        let li = Layout::contiguous(&[2]);
        let CpuBuffer::F32(out) = gather(&x, &lx, &[(&idx, &li)], &[0], &[1, 4]).unwrap() else { panic!() };
        assert_eq!(out, vec![8., 9., 10., 11., 0., 1., 2., 3.]);
        let bad = buf(vec![3]);
        let lbad = Layout::contiguous(&[1]);
        assert!(gather(&x, &lx, &[(&bad, &lbad)], &[0], &[1, 4]).is_err());
    }

    #[test]
    fn scatter_sums_duplicates_and_assigns_in_order() {
        let base = CpuBuffer::I32(vec![0; 4].into());
        let lb = Layout::contiguous(&[4]);
        let idx = buf(vec![1, 1, 3]);
        let li = Layout::contiguous(&[3]);
        let upd = CpuBuffer::I32(vec![5, 7, 9].into());
        let lu = Layout::contiguous(&[3, 1]);
        let CpuBuffer::I32(sum) = scatter(ScatterOp::Sum, &base, &lb, &[(&idx, &li)], &[0], &upd, &lu).unwrap() else {
            panic!()
        };
        assert_eq!(sum, vec![0, 12, 0, 9]);
        let CpuBuffer::I32(set) = scatter(ScatterOp::Assign, &base, &lb, &[(&idx, &li)], &[0], &upd, &lu).unwrap()
        else {
            panic!()
        };
        assert_eq!(set, vec![0, 7, 0, 9]);
    }

    #[test]
    fn scatter_across_chunks_reads_indices_of_any_width_and_layout() {
        // 3000 updates (several chunks) into 7 elements; int8 indices, every
        // other one of a buffer of 6000 (not row-contiguous).
        let n = 3000;
        let idx: Vec<i8> = (0..2 * n).map(|k| (k % 11) as i8 - 4).collect();
        let li = Layout { shape: vec![n], strides: vec![2], offset: 1 };
        let upd: Vec<i64> = (0..n as i64).collect();
        let lu = Layout::contiguous(&[n, 1]);
        let lb = Layout::contiguous(&[7]);
        let mut want = vec![0i64; 7];
        for (k, &u) in upd.iter().enumerate() {
            let v = idx[1 + 2 * k] as i64;
            want[(if v < 0 { v + 7 } else { v }) as usize] += u;
        }
        let base = CpuBuffer::I64(vec![0; 7].into());
        let args = (&CpuBuffer::I8(idx.into()), &li);
        let CpuBuffer::I64(got) =
            scatter(ScatterOp::Sum, &base, &lb, &[args], &[0], &CpuBuffer::I64(upd.into()), &lu).unwrap()
        else {
            panic!()
        };
        assert_eq!(got, want);
    }

    #[test]
    fn the_first_bad_index_of_the_first_array_is_reported() {
        let x = CpuBuffer::F32(vec![0.; 20].into());
        let lx = Layout::contiguous(&[4, 5]);
        let mut rows = vec![0u16; 2500];
        rows[2400] = 9;
        let mut cols = vec![0u16; 2500];
        cols[100] = 6;
        let li = Layout::contiguous(&[2500]);
        let (rows, cols) = (CpuBuffer::U16(rows.into()), CpuBuffer::U16(cols.into()));
        let err = gather(&x, &lx, &[(&rows, &li), (&cols, &li)], &[0, 1], &[1, 1]).unwrap_err();
        assert!(err.to_string().contains("Index 9 is out of bounds for axis 0 with size 4"), "{err}");
    }
}
