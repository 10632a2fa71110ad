//! Basic indexing: integers, slices, new axes and ellipsis, as NumPy's
//! `a[...]`. The result is a view.

use super::shaping::reshape_to;
use crate::array::Array;
use crate::error::{Error, Result};
use crate::primitives::Slice;

/// One entry of an index expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Index {
    /// Selects one position and drops the axis (negative counts from the end).
    Int(i64),
    /// Python slice semantics: `start:stop:step`, each optional.
    Slice {
        /// First position (default: the start, or the end for negative steps).
        start: Option<i64>,
        /// Position to stop before.
        stop: Option<i64>,
        /// Step (default 1; must not be 0).
        step: Option<i64>,
    },
    /// Inserts an extent-1 axis (`None` / `np.newaxis`).
    NewAxis,
    /// Stands for as many full slices as needed (`...`).
    Ellipsis,
}

/// Start and length of a Python slice over an axis of extent `n`. Any
/// `i64` values are valid (arithmetic is done in `i128`, so huge steps and
/// bounds give Python's answer instead of overflowing).
pub fn slice_bounds(n: usize, start: Option<i64>, stop: Option<i64>, step: i64) -> (usize, usize) {
    let n = n as i128;
    let step = step as i128;
    let clamp = |v: i128, lo: i128, hi: i128| v.max(lo).min(hi);
    let resolve = |v: i64| if v < 0 { v as i128 + n } else { v as i128 };
    if step > 0 {
        let s = start.map_or(0, |v| clamp(resolve(v), 0, n));
        let e = stop.map_or(n, |v| clamp(resolve(v), 0, n));
        let len = if e > s { (e - s + step - 1) / step } else { 0 };
        (s as usize, len as usize)
    } else {
        let s = start.map_or(n - 1, |v| clamp(resolve(v), -1, n - 1));
        let e = stop.map_or(-1, |v| clamp(resolve(v), -1, n - 1));
        let len = if s > e { (s - e + (-step) - 1) / (-step) } else { 0 };
        (s.max(0) as usize, len as usize)
    }
}

/// `a[index...]` with NumPy's basic-indexing rules.
///
/// ```
/// use ferrox::{ops, ops::Index, Array};
/// let a = Array::from_slice(&[0i32, 1, 2, 3, 4, 5], &[2, 3])?;
/// let row = ops::index(&a, &[Index::Int(1)])?;
/// assert_eq!(row.to_vec::<i32>()?, vec![3, 4, 5]);
/// let rev = ops::index(&a, &[Index::Ellipsis, Index::Slice { start: None, stop: None, step: Some(-1) }])?;
/// assert_eq!(rev.to_vec::<i32>()?, vec![2, 1, 0, 5, 4, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn index(a: &Array, indices: &[Index]) -> Result<Array> {
    let consuming = indices.iter().filter(|i| matches!(i, Index::Int(_) | Index::Slice { .. })).count();
    let ellipses = indices.iter().filter(|i| matches!(i, Index::Ellipsis)).count();
    if ellipses > 1 {
        return Err(Error::invalid("index", "An index can only have a single ellipsis (...)."));
    }
    if consuming > a.ndim() {
        return Err(Error::TooManyIndices { op: "index", given: consuming, ndim: a.ndim() });
    }
    let nd = a.ndim();
    let (mut start, mut len, mut step) = (vec![0usize; nd], a.shape().to_vec(), vec![1isize; nd]);
    // Output shape as (source axis or None for a new axis), skipping dropped axes.
    let mut out_axes: Vec<Option<usize>> = Vec::new();
    let mut ax = 0usize;
    for idx in indices {
        match idx {
            Index::Int(i) => {
                let n = a.shape()[ax];
                let r = if *i < 0 { *i + n as i64 } else { *i };
                if r < 0 || r >= n as i64 {
                    return Err(Error::IndexOutOfRange { op: "index", index: *i, axis: ax, size: n });
                }
                start[ax] = r as usize;
                len[ax] = 1;
                ax += 1;
            }
            Index::Slice { start: s, stop: e, step: st } => {
                let st = st.unwrap_or(1);
                if st == 0 {
                    return Err(Error::invalid("index", "slice step cannot be zero."));
                }
                let (s0, l) = slice_bounds(a.shape()[ax], *s, *e, st);
                start[ax] = s0;
                len[ax] = l;
                // With at most one element the step never moves (and a huge
                // step times a stride could overflow).
                step[ax] = if l > 1 { st as isize } else { 1 };
                out_axes.push(Some(ax));
                ax += 1;
            }
            Index::NewAxis => out_axes.push(None),
            Index::Ellipsis => {
                let skip = nd - consuming;
                for k in 0..skip {
                    out_axes.push(Some(ax + k));
                }
                ax += skip;
            }
        }
    }
    out_axes.extend((ax..nd).map(Some));
    let is_identity = start.iter().all(|&s| s == 0) && len == a.shape() && step.iter().all(|&s| s == 1);
    let sliced = if is_identity {
        a.clone()
    } else {
        Array::from_primitive(len.clone(), a.dtype(), Slice { start, len: len.clone(), step }, vec![a.clone()])?
    };
    let shape: Vec<usize> = out_axes.iter().map(|o| o.map_or(1, |i| len[i])).collect();
    reshape_to(&sliced, shape)
}
