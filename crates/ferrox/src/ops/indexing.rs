//! Indexing as NumPy's `a[...]` and `a[...] = v`: integers, slices, new
//! axes and ellipsis (basic indexing, a view), and integer arrays
//! (advanced indexing, a gather; an update is a scatter).
//!
//! Advanced indexing follows NumPy: when any array index is present,
//! integers count as 0-d array indices; the index arrays broadcast to a
//! shape `B`, which takes the place of the indexed axes if they are
//! adjacent, and comes first otherwise.

use super::elementwise::{astype, broadcast_pair};
use super::gather::{gather, scatter_with};
use super::shaping::{broadcast_to, reshape_to, transpose};
use crate::array::Array;
use crate::backend::ScatterOp;
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};
use crate::primitives::{Slice, SliceUpdate};

/// One entry of an index expression.
#[derive(Clone, Debug)]
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
    /// Positions along the axis from an integer array (advanced indexing).
    Array(Array),
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

/// The strided window a basic index selects: per axis of the array its
/// start, length and step, and the result's axes (a source axis, or `None`
/// for a new axis).
struct Window {
    start: Vec<usize>,
    len: Vec<usize>,
    step: Vec<isize>,
    out_axes: Vec<Option<usize>>,
}

/// Index entries with the ellipsis expanded into full slices, checked for
/// count; integers resolved against their axes.
fn expand(a: &Array, indices: &[Index]) -> Result<Vec<Index>> {
    let consuming = indices.iter().filter(|i| !matches!(i, Index::NewAxis | Index::Ellipsis)).count();
    let ellipses = indices.iter().filter(|i| matches!(i, Index::Ellipsis)).count();
    if ellipses > 1 {
        return Err(Error::invalid("index", "An index can only have a single ellipsis (...)."));
    }
    if consuming > a.ndim() {
        return Err(Error::TooManyIndices { op: "index", given: consuming, ndim: a.ndim() });
    }
    let full = Index::Slice { start: None, stop: None, step: None };
    let mut out = Vec::with_capacity(indices.len() + a.ndim());
    let mut ax = 0usize;
    for idx in indices {
        match idx {
            Index::Ellipsis => {
                for _ in 0..a.ndim() - consuming {
                    out.push(full.clone());
                    ax += 1;
                }
            }
            Index::Int(i) => {
                let n = a.shape()[ax];
                let r = if *i < 0 { *i + n as i64 } else { *i };
                if r < 0 || r >= n as i64 {
                    return Err(Error::IndexOutOfRange { op: "index", index: *i, axis: ax, size: n });
                }
                out.push(Index::Int(r));
                ax += 1;
            }
            Index::NewAxis => out.push(Index::NewAxis),
            other => {
                out.push(other.clone());
                ax += 1;
            }
        }
    }
    out.extend(std::iter::repeat_n(full, a.ndim() - ax));
    Ok(out)
}

/// The window of expanded basic entries (array entries count as full slices).
fn window(a: &Array, entries: &[Index]) -> Result<Window> {
    let nd = a.ndim();
    let mut w = Window { start: vec![0; nd], len: a.shape().to_vec(), step: vec![1; nd], out_axes: Vec::new() };
    let mut ax = 0usize;
    for idx in entries {
        match idx {
            Index::Int(i) => {
                w.start[ax] = *i as usize;
                w.len[ax] = 1;
                ax += 1;
            }
            Index::Slice { start: s, stop: e, step: st } => {
                let st = st.unwrap_or(1);
                if st == 0 {
                    return Err(Error::invalid("index", "slice step cannot be zero."));
                }
                let (s0, l) = slice_bounds(a.shape()[ax], *s, *e, st);
                w.start[ax] = s0;
                w.len[ax] = l;
                // With at most one element the step never moves (and a huge
                // step times a stride could overflow).
                w.step[ax] = if l > 1 { st as isize } else { 1 };
                w.out_axes.push(Some(ax));
                ax += 1;
            }
            Index::NewAxis => w.out_axes.push(None),
            Index::Array(_) => {
                w.out_axes.push(Some(ax));
                ax += 1;
            }
            Index::Ellipsis => unreachable!("expanded before"),
        }
    }
    Ok(w)
}

/// The strided view a window selects, shaped as its result.
fn window_view(a: &Array, w: &Window) -> Result<Array> {
    let is_identity = w.start.iter().all(|&s| s == 0) && w.len == a.shape() && w.step.iter().all(|&s| s == 1);
    let sliced = if is_identity {
        a.clone()
    } else {
        let p = Slice { start: w.start.clone(), len: w.len.clone(), step: w.step.clone() };
        Array::from_primitive(w.len.clone(), a.dtype(), p, vec![a.clone()])?
    };
    let shape: Vec<usize> = w.out_axes.iter().map(|o| o.map_or(1, |i| w.len[i])).collect();
    reshape_to(&sliced, shape)
}

/// The advanced entries of an expanded index: for each integer or array
/// entry, its axis of the array, and the index arrays broadcast together.
struct Advanced {
    /// The array axis of each advanced entry.
    axes: Vec<usize>,
    /// The index arrays, broadcast to `shape`.
    arrays: Vec<Array>,
    /// Their common shape `B`.
    shape: Vec<usize>,
    /// Whether the advanced entries are adjacent (then `B` replaces them in
    /// place; otherwise it comes first).
    adjacent: bool,
}

/// The advanced entries of expanded entries (integers already turned into
/// 0-d arrays).
fn advanced(entries: &[Index]) -> Result<Advanced> {
    let (mut axes, mut arrays, mut positions) = (Vec::new(), Vec::new(), Vec::new());
    let mut ax = 0usize;
    for (pos, idx) in entries.iter().enumerate() {
        if let Index::Array(x) = idx {
            if x.dtype() == Dtype::Bool {
                return Err(Error::invalid("index", "boolean indices are not yet supported"));
            }
            if !x.dtype().is_integer() {
                return Err(Error::invalid("gather", "Got indices with invalid dtype. Indices must be integral."));
            }
            axes.push(ax);
            arrays.push(x.clone());
            positions.push(pos);
        }
        if !matches!(idx, Index::NewAxis) {
            ax += 1;
        }
    }
    let mut shape: Vec<usize> = Vec::new();
    for x in &arrays {
        shape = broadcast_pair("index", &shape, x.shape())?;
    }
    let arrays = arrays.iter().map(|x| broadcast_to(x, &shape)).collect::<Result<Vec<_>>>()?;
    let adjacent = positions.windows(2).all(|w| w[1] == w[0] + 1);
    Ok(Advanced { axes, arrays, shape, adjacent })
}

/// Integer entries as 0-d index arrays: how advanced indexing treats them.
fn ints_as_arrays(entries: Vec<Index>) -> Vec<Index> {
    entries
        .into_iter()
        .map(|e| match e {
            Index::Int(i) => Index::Array(Array::scalar_of(Scalar::Int(i), Dtype::I64)),
            other => other,
        })
        .collect()
}

/// `a[index...]` with NumPy's rules: basic indexing gives a view, array
/// indices a gather.
///
/// ```
/// use ferrox::{ops, ops::Index, Array};
/// let a = Array::from_slice(&[0i32, 1, 2, 3, 4, 5], &[2, 3])?;
/// let row = ops::index(&a, &[Index::Int(1)])?;
/// assert_eq!(row.to_vec::<i32>()?, vec![3, 4, 5]);
/// let rev = ops::index(&a, &[Index::Ellipsis, Index::Slice { start: None, stop: None, step: Some(-1) }])?;
/// assert_eq!(rev.to_vec::<i32>()?, vec![2, 1, 0, 5, 4, 3]);
/// let cols = Array::from_slice(&[2i32, 0], &[2])?;
/// let picked = ops::index(&a, &[Index::Slice { start: None, stop: None, step: None }, Index::Array(cols)])?;
/// assert_eq!(picked.to_vec::<i32>()?, vec![2, 0, 5, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn index(a: &Array, indices: &[Index]) -> Result<Array> {
    let entries = expand(a, indices)?;
    if !entries.iter().any(|i| matches!(i, Index::Array(_))) {
        return window_view(a, &window(a, &entries)?);
    }
    // Slices and new axes first (a view keeping the advanced axes whole),
    // then one gather over the advanced axes of that view.
    let entries = ints_as_arrays(entries);
    let w = window(a, &entries)?;
    let v = window_view(a, &w)?;
    let adv = advanced(&entries)?;
    let view_axes: Vec<usize> =
        adv.axes.iter().map(|&ax| w.out_axes.iter().position(|&o| o == Some(ax)).expect("kept axis")).collect();
    let mut sizes = v.shape().to_vec();
    for &d in &view_axes {
        sizes[d] = 1;
    }
    let axes: Vec<isize> = view_axes.iter().map(|&d| d as isize).collect();
    let g = gather(&v, &adv.arrays, &axes, &sizes)?;
    let rest: Vec<usize> = (0..v.ndim()).filter(|d| !view_axes.contains(d)).map(|d| v.shape()[d]).collect();
    let nb = adv.shape.len();
    let g = reshape_to(&g, adv.shape.iter().chain(&rest).copied().collect())?;
    let first = view_axes[0];
    if !adv.adjacent || first == 0 {
        return Ok(g);
    }
    let perm: Vec<isize> =
        (nb..nb + first).chain(0..nb).chain(nb + first..nb + rest.len()).map(|d| d as isize).collect();
    transpose(&g, Some(&perm))
}

/// `value` broadcast to `shape` for an assignment: leading extent-1 axes
/// beyond `shape`'s rank are dropped first (as MLX allows).
fn fit_update(value: &Array, shape: &[usize]) -> Result<Array> {
    let extra = value.ndim().saturating_sub(shape.len());
    if value.shape()[..extra].iter().any(|&d| d != 1) {
        return Err(Error::invalid(
            "index",
            format!("Cannot broadcast array of shape {:?} into shape {:?}.", value.shape(), shape),
        ));
    }
    let v = reshape_to(value, value.shape()[extra..].to_vec())?;
    broadcast_pair("index", v.shape(), shape).ok().filter(|b| b == shape).ok_or_else(|| {
        Error::invalid("index", format!("Cannot broadcast array of shape {:?} into shape {:?}.", value.shape(), shape))
    })?;
    broadcast_to(&v, shape)
}

/// `a` with `value` combined by `op` into the elements `a[index...]`
/// selects — `a[index] = value` for `ScatterOp::Assign`, and MLX's
/// `a.at[index].add(value)` and friends for the others. `value` broadcasts
/// to the shape of `a[index...]` and is cast to `a`'s dtype. Where array
/// indices repeat a position, `Assign` keeps one of the values and the
/// others combine all of them.
///
/// ```
/// use ferrox::{backend::ScatterOp, ops, ops::Index, Array};
/// let a = Array::from_slice(&[0f32; 4], &[4])?;
/// let idx = Array::from_slice(&[1i32, 1, 3], &[3])?;
/// let one = Array::from_slice(&[1f32], &[1])?;
/// let out = ops::index_update(&a, &[Index::Array(idx)], &one, ScatterOp::Sum)?;
/// assert_eq!(out.to_vec::<f32>()?, vec![0., 2., 0., 1.]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn index_update(a: &Array, indices: &[Index], value: &Array, op: ScatterOp) -> Result<Array> {
    let entries = expand(a, indices)?;
    let value = astype(value, a.dtype())?;
    let w = window(a, &entries)?;
    let has_arrays = entries.iter().any(|i| matches!(i, Index::Array(_)));
    if !has_arrays && op == ScatterOp::Assign {
        let shape: Vec<usize> = w.out_axes.iter().map(|o| o.map_or(1, |i| w.len[i])).collect();
        let update = reshape_to(&fit_update(&value, &shape)?, w.len.clone())?;
        let p = SliceUpdate { start: w.start.clone(), len: w.len.clone(), step: w.step.clone() };
        return Array::from_primitive(a.shape().to_vec(), a.dtype(), p, vec![a.clone(), update]);
    }
    // One coordinate array per array axis (up to the last one indexed),
    // laid out over the result's shape; trailing whole axes stay slices.
    // Integers act as 0-d index arrays (the result's shape is the same).
    let entries = ints_as_arrays(entries);
    let w = window(a, &entries)?;
    let has_arrays = entries.iter().any(|i| matches!(i, Index::Array(_)));
    let adv = if has_arrays { Some(advanced(&entries)?) } else { None };
    let result = index(a, indices)?;
    let r_shape = result.shape().to_vec();
    let nd = a.ndim();
    let adv_axes: &[usize] = adv.as_ref().map_or(&[], |v| &v.axes);
    // Trailing axes taken whole by a slice with no new axis after it: they
    // end the result, in order, and stay whole in the scatter's slices.
    let positions: Vec<usize> =
        entries.iter().enumerate().filter(|(_, e)| !matches!(e, Index::NewAxis)).map(|(p, _)| p).collect();
    let last_new = entries.iter().rposition(|i| matches!(i, Index::NewAxis));
    let is_trailing_whole = |ax: usize| {
        matches!(entries[positions[ax]], Index::Slice { .. })
            && w.start[ax] == 0
            && w.len[ax] == a.shape()[ax]
            && w.step[ax] == 1
            && last_new.is_none_or(|l| l < positions[ax])
    };
    let t = (0..nd).rev().take_while(|&ax| is_trailing_whole(ax)).count();
    let lead = nd - t;
    let r_lead = &r_shape[..r_shape.len() - t];
    // Where each dim of the result comes from.
    let nb = adv.as_ref().map_or(0, |v| v.shape.len());
    let slice_dims: Vec<usize> = w.out_axes.iter().filter_map(|o| o.filter(|ax| !adv_axes.contains(ax))).collect();
    let view_pos = |ax: usize| w.out_axes.iter().position(|&o| o == Some(ax)).expect("kept axis");
    let first_adv = adv_axes.iter().map(|&ax| view_pos(ax)).min();
    let b_at = match (&adv, first_adv) {
        (Some(v), Some(f)) if v.adjacent => f,
        _ => 0,
    };
    // Result dim of view dim `d` (a non-advanced dim of the window view).
    let result_dim = |d: usize| {
        let before_adv = w.out_axes[..d].iter().filter(|o| o.is_some_and(|ax| adv_axes.contains(&ax))).count();
        if adv.as_ref().is_some_and(|v| v.adjacent) {
            if d < b_at {
                d
            } else {
                d - before_adv + nb
            }
        } else {
            nb + d - before_adv
        }
    };
    let mut coords = Vec::with_capacity(lead);
    for ax in 0..lead {
        let mut line = vec![1usize; r_lead.len()];
        let c = if let Some(k) = adv_axes.iter().position(|&x| x == ax) {
            let arr = &adv.as_ref().expect("advanced entries").arrays[k];
            for (j, &n) in arr.shape().iter().enumerate() {
                line[b_at + j] = n;
            }
            reshape_to(arr, line)?
        } else {
            debug_assert!(slice_dims.contains(&ax));
            let d = result_dim(view_pos(ax));
            line[d] = w.len[ax];
            let (s, st) = (w.start[ax] as f64, w.step[ax] as f64);
            let r = super::creation::arange(s, s + st * w.len[ax] as f64, st, Dtype::I64)?;
            reshape_to(&r, line)?
        };
        coords.push(broadcast_to(&c, r_lead)?);
    }
    let mut update_shape = r_lead.to_vec();
    update_shape.extend(std::iter::repeat_n(1, lead));
    update_shape.extend_from_slice(&a.shape()[lead..]);
    let update = reshape_to(&fit_update(&value, &r_shape)?, update_shape)?;
    let axes: Vec<isize> = (0..lead as isize).collect();
    scatter_with(op, a, &coords, &update, &axes)
}
