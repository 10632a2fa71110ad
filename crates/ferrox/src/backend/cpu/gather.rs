//! Gather and scatter: reading and writing slices of an array at positions
//! given by integer index arrays (MLX's `Gather` and `Scatter`, which carry
//! `take`, `take_along_axis`, `put_along_axis`, advanced indexing and
//! `a[idx] = v`).
//!
//! Both resolve the index arrays once into one base offset per index
//! position (checking every index against its axis) and the slice into a
//! list of relative offsets; a gather then copies `base[i] + slice[j]` to
//! output element `(i, j)` (several threads for large outputs), a scatter
//! combines update `(i, j)` into the element there, in row-major order of
//! the updates, so duplicates resolve deterministically (the last
//! assignment wins).

use super::elementwise::{cast_buffer, map_unary};
use super::storage::{output_vec, CpuBuffer, CpuElement};
use super::strided::PARALLEL_THRESHOLD;
use crate::backend::ScatterOp;
use crate::dtype::Dtype;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::shape::{contiguous_strides, numel, Layout};
use crate::with_buffer;
use rayon::prelude::*;

/// Where the slices of one gather or scatter lie in the indexed buffer.
struct Plan {
    /// Offset of the start of slice `i`, for each index position.
    bases: Vec<isize>,
    /// Offsets of the slice's elements from its start, row-major.
    slice: Vec<isize>,
}

/// Resolves `indices` (one per axis of `axes`) against a buffer of `shape`
/// read with `strides` from `offset`, for slices of `slice_sizes`.
fn plan(
    op: &'static str,
    shape: &[usize],
    strides: &[isize],
    offset: usize,
    indices: &[(&CpuBuffer, &Layout)],
    axes: &[usize],
    slice_sizes: &[usize],
) -> Result<Plan> {
    let n_idx = indices.first().map_or(1, |(_, l)| l.size());
    let mut bases = vec![offset as isize; n_idx];
    for (&(buf, layout), &axis) in indices.iter().zip(axes) {
        let CpuBuffer::I64(values) = cast_buffer(buf, layout, Dtype::I64)? else {
            unreachable!("a cast to int64 gives int64")
        };
        let (n, s) = (shape[axis] as i64, slice_sizes[axis] as i64);
        for (base, &v) in bases.iter_mut().zip(&values) {
            let start = if v < 0 { v + n } else { v };
            if start < 0 || start > n - s {
                return Err(out_of_range(op, v, axis, shape[axis], slice_sizes[axis]));
            }
            *base += start as isize * strides[axis];
        }
    }
    let mut slice = Vec::with_capacity(numel(slice_sizes));
    if numel(slice_sizes) > 0 {
        let mut pos = vec![0usize; slice_sizes.len()];
        loop {
            slice.push(pos.iter().zip(strides).map(|(&p, &s)| p as isize * s).sum());
            let mut d = slice_sizes.len();
            loop {
                if d == 0 {
                    return Ok(Plan { bases, slice });
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
    Ok(Plan { bases, slice })
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
    let plan = plan("gather", &lx.shape, &lx.strides, lx.offset, indices, axes, slice_sizes)?;
    fn typed<T: CpuElement>(x: &[T], plan: &Plan) -> Result<CpuBuffer> {
        let s = plan.slice.len();
        let mut out = output_vec::<T>(plan.bases.len() * s)?;
        if s == 0 {
            return Ok(T::into_buffer(out));
        }
        if s == 1 {
            // One element per index (take, take_along_axis): no per-slice loop.
            let off = plan.slice[0];
            let read = |(o, &base): (&mut T, &isize)| *o = x[(base + off) as usize];
            if out.len() >= PARALLEL_THRESHOLD {
                out.par_iter_mut().zip(plan.bases.par_iter()).for_each(read);
            } else {
                out.iter_mut().zip(&plan.bases).for_each(read);
            }
            return Ok(T::into_buffer(out));
        }
        let fill = |(&base, row): (&isize, &mut [T])| {
            for (o, &off) in row.iter_mut().zip(&plan.slice) {
                *o = x[(base + off) as usize];
            }
        };
        if out.len() >= PARALLEL_THRESHOLD {
            plan.bases.par_iter().zip(out.par_chunks_mut(s)).for_each(fill);
        } else {
            plan.bases.iter().zip(out.chunks_mut(s)).for_each(fill);
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
    let plan = plan(op.name(), &lb.shape, &contiguous_strides(&lb.shape), 0, indices, axes, slice_sizes)?;
    fn typed<T: CpuElement>(
        op: ScatterOp,
        base: &[T],
        lb: &Layout,
        upd: &[T],
        lu: &Layout,
        plan: &Plan,
    ) -> Result<Vec<T>> {
        let mut out = map_unary(base, lb, |v| v)?;
        let upd = map_unary(upd, lu, |v| v)?;
        match op {
            ScatterOp::Assign => combine_into(&mut out, plan, &upd, |_, u| u),
            ScatterOp::Sum => combine_into(&mut out, plan, &upd, Element::add),
            ScatterOp::Prod => combine_into(&mut out, plan, &upd, Element::mul),
            ScatterOp::Max => combine_into(&mut out, plan, &upd, Element::max),
            ScatterOp::Min => combine_into(&mut out, plan, &upd, Element::min),
        }
        Ok(out)
    }
    /// Combines each update into `out` at its place, in row-major order of
    /// the updates (`combine` is inlined: one copy of the loop per op).
    fn combine_into<T: Copy>(out: &mut [T], plan: &Plan, upd: &[T], combine: impl Fn(T, T) -> T) {
        let s = plan.slice.len();
        if s == 1 {
            let off = plan.slice[0];
            for (&b, &u) in plan.bases.iter().zip(upd) {
                let at = (b + off) as usize;
                out[at] = combine(out[at], u);
            }
        } else if s > 0 {
            for (&b, row) in plan.bases.iter().zip(upd.chunks(s)) {
                for (&off, &u) in plan.slice.iter().zip(row) {
                    let at = (b + off) as usize;
                    out[at] = combine(out[at], u);
                }
            }
        }
    }
    macro_rules! go {
        ($($V:ident),*) => {
            match (base, updates) {
                $((CpuBuffer::$V(b), CpuBuffer::$V(u)) => Ok(CpuBuffer::$V(typed(op, b, lb, u, lu, &plan)?)),)*
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
        CpuBuffer::I64(v)
    }

    #[test]
    fn gather_rows_and_negative_indices() {
        let x = CpuBuffer::F32((0..12).map(|v| v as f32).collect());
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
        let base = CpuBuffer::I32(vec![0; 4]);
        let lb = Layout::contiguous(&[4]);
        let idx = buf(vec![1, 1, 3]);
        let li = Layout::contiguous(&[3]);
        let upd = CpuBuffer::I32(vec![5, 7, 9]);
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
}
