//! Reading and writing through integer index arrays: MLX's `gather` and
//! `scatter` (with its reductions), and the ops built on them — `take`,
//! `take_along_axis`, `put_along_axis`, and `slice`/`slice_update` with
//! start positions held in an array.
//!
//! Indices may be any integer dtype; negative ones count from the end of
//! their axis. An index out of range is an error when the CPU evaluates
//! the op; on the GPU it reads zeros and drops its updates (MLX leaves both
//! undefined).

use super::creation::{arange, zeros_like};
use super::elementwise::{astype, broadcast_pair};
use super::shaping::{broadcast_to, reshape_to};
use crate::array::Array;
use crate::backend::ScatterOp;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::primitives::{Gather, Scatter};
use crate::shape::normalize_axis;

/// The index arrays' common shape, after checking that they are integers.
fn index_shape(op: &'static str, indices: &[Array]) -> Result<Vec<usize>> {
    let mut shape: Vec<usize> = Vec::new();
    for idx in indices {
        if !idx.dtype().is_integer() {
            return Err(Error::invalid(op, "Got indices with invalid dtype. Indices must be integral."));
        }
        shape = broadcast_pair(op, &shape, idx.shape())?;
    }
    Ok(shape)
}

/// Resolves gather/scatter axes: in range, unique, one per index array.
fn index_axes(op: &'static str, a: &Array, indices: &[Array], axes: &[isize]) -> Result<Vec<usize>> {
    if indices.len() != axes.len() {
        return Err(Error::invalid(
            op,
            format!("{} index arrays were given for {} axes; there must be one per axis.", indices.len(), axes.len()),
        ));
    }
    let axes = axes
        .iter()
        .map(|&ax| {
            normalize_axis(ax, a.ndim()).ok_or_else(|| Error::AxisArgument {
                op,
                msg: format!("Invalid axis {ax} for array with {} dimensions.", a.ndim()),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut sorted = axes.clone();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::invalid(op, "Repeated axes are not allowed."));
    }
    Ok(axes)
}

/// MLX's `gather`: the slices of extents `slice_sizes` (one per axis of
/// `a`) that start at `indices[k]` along `axes[k]` (and at 0 elsewhere).
/// The index arrays broadcast to a shape `I`; the result has shape
/// `I ++ slice_sizes`.
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[0i32, 1, 2, 3, 4, 5], &[3, 2])?;
/// let idx = Array::from_slice(&[2i32, 0], &[2])?;
/// let rows = ops::gather(&a, &[idx], &[0], &[1, 2])?;
/// assert_eq!(rows.shape(), &[2, 1, 2]);
/// assert_eq!(rows.to_vec::<i32>()?, vec![4, 5, 0, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn gather(a: &Array, indices: &[Array], axes: &[isize], slice_sizes: &[usize]) -> Result<Array> {
    gather_slices(a, indices, axes, slice_sizes, false)
}

/// [`gather`], with the slices spanning every axis not indexed whole when
/// `whole` (see [`Gather::whole`]).
fn gather_slices(a: &Array, indices: &[Array], axes: &[isize], slice_sizes: &[usize], whole: bool) -> Result<Array> {
    let op = "gather";
    let axes = index_axes(op, a, indices, axes)?;
    let shape = index_shape(op, indices)?;
    if slice_sizes.len() != a.ndim() {
        return Err(Error::invalid(
            op,
            format!("Got {} slice sizes for an array with {} dimensions.", slice_sizes.len(), a.ndim()),
        ));
    }
    if let Some(d) = (0..a.ndim()).find(|&d| slice_sizes[d] > a.shape()[d]) {
        return Err(Error::invalid(
            op,
            format!("Slice size {} is larger than axis {d} of size {}.", slice_sizes[d], a.shape()[d]),
        ));
    }
    let mut inputs = vec![a.clone()];
    for idx in indices {
        inputs.push(broadcast_to(idx, &shape)?);
    }
    let out_shape: Vec<usize> = shape.iter().chain(slice_sizes).copied().collect();
    Array::from_primitive(out_shape, a.dtype(), Gather { axes, slice_sizes: slice_sizes.to_vec(), whole }, inputs)
}

/// MLX's `scatter` with the combining rule `op`: `a` with `updates`
/// (shape `I ++ slice`, the slice of `a`'s rank) combined into the slices
/// [`gather`] would read with the same `indices` and `axes`. Where updates
/// land on one element, `Assign` keeps one of them (the last on the CPU).
pub fn scatter_with(op: ScatterOp, a: &Array, indices: &[Array], updates: &Array, axes: &[isize]) -> Result<Array> {
    let name = op.name();
    let axes = index_axes(name, a, indices, axes)?;
    let shape = index_shape(name, indices)?;
    if updates.ndim() != shape.len() + a.ndim() {
        return Err(Error::invalid(
            name,
            format!(
                "Updates with {} dimensions does not match the sum of the array ({}) and indices ({}) dimensions.",
                updates.ndim(),
                a.ndim(),
                shape.len()
            ),
        ));
    }
    let slice = &updates.shape()[shape.len()..];
    if let Some(d) = (0..a.ndim()).find(|&d| slice[d] > a.shape()[d] || (axes.contains(&d) && slice[d] == 0)) {
        return Err(Error::invalid(
            name,
            format!("Update slice extent {} does not fit axis {d} of size {}.", slice[d], a.shape()[d]),
        ));
    }
    let full: Vec<usize> = shape.iter().chain(slice).copied().collect();
    let mut inputs = vec![a.clone()];
    for idx in indices {
        inputs.push(broadcast_to(idx, &shape)?);
    }
    inputs.push(broadcast_to(&astype(updates, a.dtype())?, &full)?);
    Array::from_primitive(a.shape().to_vec(), a.dtype(), Scatter { op, axes }, inputs)
}

/// [`scatter_with`] replacing elements (MLX's `scatter`).
pub fn scatter(a: &Array, indices: &[Array], updates: &Array, axes: &[isize]) -> Result<Array> {
    scatter_with(ScatterOp::Assign, a, indices, updates, axes)
}

/// [`scatter_with`] adding (MLX's `scatter_add`; duplicates accumulate).
pub fn scatter_add(a: &Array, indices: &[Array], updates: &Array, axes: &[isize]) -> Result<Array> {
    scatter_with(ScatterOp::Sum, a, indices, updates, axes)
}

/// [`scatter_with`] multiplying (MLX's `scatter_prod`).
pub fn scatter_prod(a: &Array, indices: &[Array], updates: &Array, axes: &[isize]) -> Result<Array> {
    scatter_with(ScatterOp::Prod, a, indices, updates, axes)
}

/// [`scatter_with`] keeping maxima (MLX's `scatter_max`).
pub fn scatter_max(a: &Array, indices: &[Array], updates: &Array, axes: &[isize]) -> Result<Array> {
    scatter_with(ScatterOp::Max, a, indices, updates, axes)
}

/// [`scatter_with`] keeping minima (MLX's `scatter_min`).
pub fn scatter_min(a: &Array, indices: &[Array], updates: &Array, axes: &[isize]) -> Result<Array> {
    scatter_with(ScatterOp::Min, a, indices, updates, axes)
}

/// Elements of `a` along `axis` at `indices` (any shape); `None` takes
/// from the flattened array. The result's shape is `a`'s with `axis`
/// replaced by the indices' shape (MLX's and NumPy's `take`).
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[0i32, 1, 2, 3, 4, 5], &[2, 3])?;
/// let idx = Array::from_slice(&[2i32, -3], &[2])?;
/// assert_eq!(ops::take(&a, &idx, Some(1))?.to_vec::<i32>()?, vec![2, 0, 5, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn take(a: &Array, indices: &Array, axis: Option<isize>) -> Result<Array> {
    let op = "take";
    let (a, axis) = match axis {
        None => (super::shaping::flatten(a, 0, -1)?, 0),
        Some(ax) => (a.clone(), resolve_axis(op, ax, a.ndim())?),
    };
    if a.shape()[axis] == 0 && indices.size() > 0 {
        return Err(Error::invalid(op, "Cannot do a non-empty take from an array with zero elements."));
    }
    let mut slice = a.shape().to_vec();
    slice[axis] = 1;
    let g = gather_slices(&a, std::slice::from_ref(indices), &[axis as isize], &slice, true)?;
    // g is I ++ a.shape (axis of extent 1): drop that axis, then move I to `axis`.
    let ni = indices.ndim();
    let mut shape: Vec<usize> = indices.shape().to_vec();
    shape.extend(a.shape().iter().enumerate().filter(|&(d, _)| d != axis).map(|(_, &n)| n));
    let g = super::shaping::reshape_by(&g, shape, crate::primitives::ShapeRule::Squeeze(vec![ni + axis]))?;
    let perm: Vec<isize> =
        (ni..ni + axis).chain(0..ni).chain(ni + axis..ni + a.ndim() - 1).map(|d| d as isize).collect();
    super::shaping::transpose(&g, Some(&perm))
}

/// An axis argument of the along-axis ops, as an IndexError when out of range.
fn resolve_axis(op: &'static str, axis: isize, ndim: usize) -> Result<usize> {
    normalize_axis(axis, ndim).ok_or_else(|| Error::AxisArgument {
        op,
        msg: format!("Received invalid axis {axis} for array with {ndim} dimensions."),
    })
}

/// Index arrays addressing every element of `shape` whose position along
/// `axis` is given by `indices` (already of `shape`): aranges along the
/// other axes, broadcast without copying.
fn along_axis_coordinates(indices: &Array, axis: usize) -> Result<Vec<Array>> {
    let shape = indices.shape().to_vec();
    (0..shape.len())
        .map(|d| {
            if d == axis {
                return Ok(indices.clone());
            }
            let mut line = vec![1usize; shape.len()];
            line[d] = shape[d];
            let r = reshape_to(&arange(0.0, shape[d] as f64, 1.0, Dtype::I32)?, line)?;
            broadcast_to(&r, &shape)
        })
        .collect()
}

/// Checks the along-axis index array and returns the shape it broadcasts
/// to against `a` (all axes but `axis`).
fn along_axis_shape(op: &'static str, a: &Array, indices: &Array, axis: usize) -> Result<Vec<usize>> {
    if !indices.dtype().is_integer() {
        return Err(Error::invalid(op, "Indices must be integers."));
    }
    if indices.ndim() != a.ndim() {
        return Err(Error::invalid(
            op,
            format!("Indices of dimension {} does not match array of dimension {}.", indices.ndim(), a.ndim()),
        ));
    }
    let (mut sa, mut si) = (a.shape().to_vec(), indices.shape().to_vec());
    sa[axis] = 1;
    si[axis] = 1;
    let mut shape = broadcast_pair(op, &sa, &si)?;
    shape[axis] = indices.shape()[axis];
    Ok(shape)
}

/// Elements of `a` at `indices` along `axis` (NumPy's `take_along_axis`):
/// `indices` has `a`'s rank and broadcasts with `a` on the other axes;
/// `None` works on the flattened array (with 1-D indices).
pub fn take_along_axis(a: &Array, indices: &Array, axis: Option<isize>) -> Result<Array> {
    let op = "take_along_axis";
    let (a, axis) = match axis {
        None => (reshape_to(a, vec![a.size()])?, 0),
        Some(ax) => (a.clone(), resolve_axis(op, ax, a.ndim())?),
    };
    let shape = along_axis_shape(op, &a, indices, axis)?;
    if a.shape()[axis] == 0 && indices.size() > 0 {
        return Err(Error::invalid(op, "Cannot take from an empty axis."));
    }
    if shape.contains(&0) {
        // Nothing to take (MLX returns the empty result; a gather of
        // one-element slices could not slice an empty axis of `a`).
        return crate::ops::zeros(&shape, a.dtype());
    }
    let mut source = shape.clone();
    source[axis] = a.shape()[axis];
    let a = broadcast_to(&a, &source)?;
    let coords = along_axis_coordinates(&broadcast_to(indices, &shape)?, axis)?;
    let axes: Vec<isize> = (0..a.ndim() as isize).collect();
    reshape_to(&gather(&a, &coords, &axes, &vec![1; a.ndim()])?, shape)
}

/// `a` with `values` combined by `op` at `indices` along `axis`.
fn put_along_axis_with(
    op: ScatterOp,
    a: &Array,
    indices: &Array,
    values: &Array,
    axis: Option<isize>,
) -> Result<Array> {
    let name = "put_along_axis";
    if a.size() == 0 && indices.size() == 0 {
        // Nothing to put (MLX accepts any index dtype here).
        return Ok(a.clone());
    }
    let Some(ax) = axis else {
        let flat = reshape_to(a, vec![a.size()])?;
        let out = put_along_axis_with(op, &flat, indices, values, Some(0))?;
        return reshape_to(&out, a.shape().to_vec());
    };
    let axis = resolve_axis(name, ax, a.ndim())?;
    let shape = along_axis_shape(name, a, indices, axis)?;
    let mut bounds = shape.clone();
    bounds[axis] = a.shape()[axis];
    if bounds != a.shape() {
        return Err(Error::invalid(
            name,
            format!("Indices of shape {:?} do not fit an array of shape {:?}.", indices.shape(), a.shape()),
        ));
    }
    let coords = along_axis_coordinates(&broadcast_to(indices, &shape)?, axis)?;
    let updates = broadcast_to(values, &shape)?;
    let mut full = shape.clone();
    full.extend(std::iter::repeat_n(1, a.ndim()));
    let axes: Vec<isize> = (0..a.ndim() as isize).collect();
    scatter_with(op, a, &coords, &reshape_to(&updates, full)?, &axes)
}

/// `a` with `values` (broadcast to the indices' shape) written at
/// `indices` along `axis` (NumPy's `put_along_axis`; `None` writes into
/// the flattened array).
pub fn put_along_axis(a: &Array, indices: &Array, values: &Array, axis: Option<isize>) -> Result<Array> {
    put_along_axis_with(ScatterOp::Assign, a, indices, values, axis)
}

/// Like [`put_along_axis`], adding `values` instead (duplicates accumulate).
pub fn put_along_axis_add(a: &Array, indices: &Array, values: &Array, axis: isize) -> Result<Array> {
    put_along_axis_with(ScatterOp::Sum, a, indices, values, Some(axis))
}

/// The start positions of a dynamic slice as 0-d index arrays, one per axis.
fn dynamic_starts(op: &'static str, start: &Array, n_axes: usize) -> Result<Vec<Array>> {
    if !start.dtype().is_integer() {
        return Err(Error::invalid(op, "Start indices must be integers."));
    }
    if start.ndim() > 1 || start.size() != n_axes {
        return Err(Error::invalid(
            op,
            format!("Got {} start indices for {n_axes} axes; there must be one per axis.", start.size()),
        ));
    }
    let flat = reshape_to(start, vec![n_axes])?;
    (0..n_axes).map(|k| super::indexing::index(&flat, &[super::indexing::Index::Int(k as i64)])).collect()
}

/// MLX's `slice` with start positions in an array: the window of extents
/// `slice_size` (one per axis of `a`) starting at `start[k]` along
/// `axes[k]` and at 0 along the other axes.
pub fn slice_dynamic(a: &Array, start: &Array, axes: &[isize], slice_size: &[usize]) -> Result<Array> {
    let op = "slice";
    if slice_size.len() != a.ndim() {
        return Err(Error::invalid(op, format!("Invalid slice size for array with {} dimensions.", a.ndim())));
    }
    let starts = dynamic_starts(op, start, axes.len())?;
    gather(a, &starts, axes, slice_size)
}

/// MLX's `slice_update` with start positions in an array: `a` with the
/// window of `update`'s shape starting at `start[k]` along `axes[k]` (and
/// at 0 elsewhere) replaced by `update`.
pub fn slice_update_dynamic(a: &Array, update: &Array, start: &Array, axes: &[isize]) -> Result<Array> {
    let op = "slice_update";
    if update.ndim() > a.ndim() {
        return Err(Error::invalid(op, "The update must not have more dimensions than the array."));
    }
    let mut shape = vec![1usize; a.ndim() - update.ndim()];
    shape.extend_from_slice(update.shape());
    let starts = dynamic_starts(op, start, axes.len())?;
    scatter(a, &starts, &reshape_to(update, shape)?, axes)
}

/// Zeros shaped like `a` with the `indices` slices of `updates` added: the
/// transpose of [`gather`] (its derivative).
pub(crate) fn gather_transpose(a: &Array, indices: &[Array], updates: &Array, axes: &[usize]) -> Result<Array> {
    let axes: Vec<isize> = axes.iter().map(|&d| d as isize).collect();
    scatter_add(&zeros_like(a)?, indices, updates, &axes)
}

/// MLX's `masked_scatter` (`a[mask] = value`): `mask` (bool, shaped as the
/// leading axes of `a`) selects elements, or whole trailing blocks, of `a`;
/// the selected ones take consecutive values of `value` in row-major order.
/// `value` is `[K, trailing...]` (trailing: the axes of `a` after the
/// mask's), broadcast first when it has fewer axes, so a scalar or one
/// block fills every selected place.
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[0i32, 1, 2, 3, 4, 5], &[2, 3])?;
/// let mask = ops::greater(&a, &Array::from_slice(&[2i32], &[1])?)?;
/// let v = Array::from_slice(&[10i32, 11, 12], &[3])?;
/// assert_eq!(ops::masked_scatter(&a, &mask, &v)?.to_vec::<i32>()?, vec![0, 1, 2, 10, 11, 12]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn masked_scatter(a: &Array, mask: &Array, value: &Array) -> Result<Array> {
    let op = "masked_scatter";
    if mask.dtype() != Dtype::Bool {
        return Err(Error::invalid(op, "The mask has to be boolean."));
    }
    if mask.ndim() > a.ndim() {
        return Err(Error::invalid(op, "The mask cannot have more dimensions than the target."));
    }
    if mask.shape() != &a.shape()[..mask.ndim()] {
        return Err(Error::invalid(
            op,
            format!(
                "The boolean mask should have the same shape as the beginning of the indexed array but the mask has shape {:?} and the array has shape {:?}",
                mask.shape(),
                a.shape()
            ),
        ));
    }
    let trailing = &a.shape()[mask.ndim()..];
    if value.ndim() > trailing.len() + 1 {
        return Err(Error::invalid(
            op,
            format!(
                "Value array shape must be broadcastable with the last {} dimensions of the input.",
                trailing.len()
            ),
        ));
    }
    // Values as [K, trailing...]: a missing leading axis repeats for every
    // selected block.
    let value = astype(value, a.dtype())?;
    let value = if value.ndim() < trailing.len() + 1 {
        let mut shape = vec![mask.size()];
        shape.extend_from_slice(trailing);
        broadcast_to(&value, &shape)?
    } else {
        let mut shape = value.shape().to_vec();
        shape[1..].copy_from_slice(trailing);
        broadcast_to(&value, &shape)?
    };
    let source = reshape_to(&value, vec![value.size()])?;
    let mut mask_shape = mask.shape().to_vec();
    mask_shape.extend(std::iter::repeat_n(1, trailing.len()));
    let full_mask = broadcast_to(&reshape_to(mask, mask_shape)?, a.shape())?;
    if source.size() == 0 || a.size() == 0 {
        return Ok(a.clone());
    }
    // Selected element i takes source[(number of selected elements before i)].
    let flat = reshape_to(&astype(&full_mask, Dtype::I64)?, vec![a.size()])?;
    let before = super::scan::cumsum(&flat, Some(0), false, false)?;
    // Unselected places read the first value (never out of range).
    let before = super::elementwise::multiply(&before, &flat)?;
    let picked = reshape_to(&take(&source, &before, None)?, a.shape().to_vec())?;
    super::elementwise::where_(&full_mask, &picked, a)
}
