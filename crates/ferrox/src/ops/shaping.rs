//! Shape ops: reshape, transpose, broadcast, expand/squeeze, flatten,
//! concatenate and stack. All but concatenate are views when the layout allows.

use super::elementwise::astype;
use super::{axis, normalize_axes};
use crate::array::Array;
use crate::dtype::Dtype;
use crate::error::{fmt_shape, Error, Result};
use crate::primitives::{BroadcastTo, Concatenate, Reshape, ShapeRule, Transpose};
use crate::shape::{broadcast_shapes, numel};

/// `a` with a new shape of the same size; one entry may be -1 (inferred).
///
/// ```
/// use ferrox::{ops, Array};
/// let a = ops::arange(0.0, 6.0, 1.0, ferrox::Dtype::F32)?;
/// assert_eq!(ops::reshape(&a, &[2, -1])?.shape(), &[2, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn reshape(a: &Array, shape: &[isize]) -> Result<Array> {
    let bad = || {
        Error::invalid(
            "reshape",
            format!(
                "Cannot reshape array of size {} into shape ({}).",
                a.size(),
                shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")
            ),
        )
    };
    let inferred: Vec<usize> = shape.iter().enumerate().filter(|(_, &d)| d == -1).map(|(i, _)| i).collect();
    if inferred.len() > 1 {
        return Err(Error::invalid("reshape", "Can only infer one dimension."));
    }
    if shape.iter().any(|&d| d < -1) {
        return Err(bad());
    }
    // Saturating: a product past usize::MAX must not wrap to a small size.
    let known_dims: Vec<usize> = shape.iter().filter(|&&d| d >= 0).map(|&d| d as usize).collect();
    let known = numel(&known_dims);
    let mut out: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
    if let Some(&i) = inferred.first() {
        if known == 0 || !a.size().is_multiple_of(known) {
            return Err(bad());
        }
        out[i] = a.size() / known;
    }
    if numel(&out) != a.size() {
        return Err(bad());
    }
    let rule = inferred.first().map_or(ShapeRule::Fixed, |&i| ShapeRule::Infer(i));
    reshape_by(a, out, rule)
}

/// Reshape to a fully known shape whose size was checked by the caller.
pub(crate) fn reshape_to(a: &Array, shape: Vec<usize>) -> Result<Array> {
    reshape_by(a, shape, ShapeRule::Fixed)
}

/// Reshape to `shape` (size checked by the caller), which `rule` derives
/// from `a`'s shape: what a shapeless compile replays.
pub(crate) fn reshape_by(a: &Array, shape: Vec<usize>, rule: ShapeRule) -> Result<Array> {
    if shape == a.shape() && !(crate::transforms::compile::is_tracing_shapeless() && rule != ShapeRule::Fixed) {
        return Ok(a.clone());
    }
    Array::from_primitive(shape.clone(), a.dtype(), Reshape { shape, rule }, vec![a.clone()])
}

/// Permutes the axes (reverses them when `axes` is `None`).
pub fn transpose(a: &Array, axes: Option<&[isize]>) -> Result<Array> {
    let nd = a.ndim();
    let perm: Vec<usize> = match axes {
        None => (0..nd).rev().collect(),
        Some(ax) => {
            if ax.len() != nd {
                return Err(Error::invalid(
                    "transpose",
                    format!("Recived {} axes for array with {} dimensions.", ax.len(), nd),
                ));
            }
            let perm = ax.iter().map(|&x| axis("transpose", x, nd)).collect::<Result<Vec<_>>>()?;
            let mut sorted = perm.clone();
            sorted.sort_unstable();
            if sorted.windows(2).any(|w| w[0] == w[1]) {
                return Err(Error::invalid("transpose", "Repeated axes."));
            }
            perm
        }
    };
    let shape = perm.iter().map(|&p| a.shape()[p]).collect();
    Array::from_primitive(shape, a.dtype(), Transpose { perm }, vec![a.clone()])
}

/// Moves axis `a1` to `a2`'s place and back (a transpose view).
pub fn swapaxes(a: &Array, a1: isize, a2: isize) -> Result<Array> {
    let nd = a.ndim();
    let (i, j) = (axis("swapaxes", a1, nd)?, axis("swapaxes", a2, nd)?);
    let mut perm: Vec<isize> = (0..nd as isize).collect();
    perm.swap(i, j);
    transpose(a, Some(&perm))
}

/// The last two axes of `a` swapped (a transpose view; the array API's
/// `matrix_transpose`); `a` needs at least 2 dimensions.
pub fn matrix_transpose(a: &Array) -> Result<Array> {
    if a.ndim() < 2 {
        return Err(Error::invalid("matrix_transpose", "Input array must have at least 2 dimensions."));
    }
    swapaxes(a, -1, -2)
}

/// `a` broadcast to `shape` (a stride-0 view).
pub fn broadcast_to(a: &Array, shape: &[usize]) -> Result<Array> {
    match broadcast_shapes(a.shape(), shape) {
        Some(s) if s == shape => {}
        _ => {
            return Err(Error::invalid(
                "broadcast_to",
                format!("Cannot broadcast array of shape {} to shape {}.", fmt_shape(a.shape()), fmt_shape(shape)),
            ))
        }
    }
    if a.shape() == shape {
        return Ok(a.clone());
    }
    Array::from_primitive(shape.to_vec(), a.dtype(), BroadcastTo { shape: shape.to_vec() }, vec![a.clone()])
}

/// Inserts extent-1 axes at `axes` (positions in the output).
pub fn expand_dims(a: &Array, axes: &[isize]) -> Result<Array> {
    let out_nd = a.ndim() + axes.len();
    let axes = normalize_axes("expand_dims", axes, out_nd)?;
    let mut shape = Vec::with_capacity(out_nd);
    let mut src = a.shape().iter();
    for i in 0..out_nd {
        shape.push(if axes.contains(&i) { 1 } else { *src.next().expect("sizes agree") });
    }
    reshape_by(a, shape, ShapeRule::ExpandDims(axes))
}

/// Removes extent-1 axes: the given ones (each must have extent 1) or all.
pub fn squeeze(a: &Array, axes: Option<&[isize]>) -> Result<Array> {
    let axes = match axes {
        Some(ax) => {
            let ax = normalize_axes("squeeze", ax, a.ndim())?;
            if let Some(&bad) = ax.iter().find(|&&i| a.shape()[i] != 1) {
                return Err(Error::invalid(
                    "squeeze",
                    format!("Cannot squeeze axis {bad} with size {} which is not equal to 1.", a.shape()[bad]),
                ));
            }
            ax
        }
        None => (0..a.ndim()).filter(|&i| a.shape()[i] == 1).collect(),
    };
    let shape = a.shape().iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect();
    reshape_by(a, shape, ShapeRule::Squeeze(axes))
}

/// Merges axes `start_axis..=end_axis` into one. As in MLX, negative axes
/// count from the end and out-of-range ones are clamped to the array.
pub fn flatten(a: &Array, start_axis: isize, end_axis: isize) -> Result<Array> {
    if a.ndim() == 0 {
        return reshape_to(a, vec![1]);
    }
    let nd = a.ndim() as isize;
    let resolve = |ax: isize| if ax < 0 { ax.saturating_add(nd) } else { ax };
    let (s, e) = (resolve(start_axis).max(0), resolve(end_axis).min(nd - 1));
    if e < s {
        return Err(Error::invalid("flatten", "start_axis must be less than or equal to end_axis."));
    }
    if s >= nd {
        return Err(Error::invalid("flatten", "Invalid start_axis."));
    }
    if e < 0 {
        return Err(Error::invalid("flatten", "Invalid end_axis."));
    }
    let (s, e) = (s as usize, e as usize);
    let mut shape = a.shape()[..s].to_vec();
    shape.push(numel(&a.shape()[s..=e]));
    shape.extend_from_slice(&a.shape()[e + 1..]);
    reshape_by(a, shape, ShapeRule::Flatten(s, e))
}

/// Joins arrays along an existing axis; dtypes are promoted together.
pub fn concatenate(arrays: &[Array], axis_: isize) -> Result<Array> {
    let first = arrays.first().ok_or_else(|| Error::invalid("concatenate", "No arrays provided for concatenation."))?;
    let nd = first.ndim();
    if nd == 0 {
        return Err(Error::invalid("concatenate", "Cannot concatenate 0-dimensional arrays."));
    }
    let ax = axis("concatenate", axis_, nd)?;
    let mut shape = first.shape().to_vec();
    shape[ax] = 0;
    let mut dtype = first.dtype();
    for a in arrays {
        let same = a.ndim() == nd && (0..nd).all(|i| i == ax || a.shape()[i] == first.shape()[i]);
        if !same {
            return Err(Error::ShapeMismatch {
                op: "concatenate",
                msg: format!(
                    "All the input array dimensions must match exactly except for the concatenation axis. However, the provided shapes are {} and {}, and the concatenation axis is {}.",
                    fmt_shape(first.shape()), fmt_shape(a.shape()), axis_
                ),
            });
        }
        shape[ax] += a.shape()[ax];
        dtype = Dtype::promote(dtype, a.dtype());
    }
    let inputs = arrays.iter().map(|a| astype(a, dtype)).collect::<Result<Vec<_>>>()?;
    Array::from_primitive(shape, dtype, Concatenate { axis: ax }, inputs)
}

/// Joins arrays of one shape along a new axis.
pub fn stack(arrays: &[Array], axis_: isize) -> Result<Array> {
    let first = arrays.first().ok_or_else(|| Error::invalid("stack", "No arrays provided for stacking."))?;
    if arrays.iter().any(|a| a.shape() != first.shape()) {
        return Err(Error::ShapeMismatch { op: "stack", msg: "All arrays must have the same shape.".into() });
    }
    let ax = axis("stack", axis_, first.ndim() + 1)? as isize;
    let expanded = arrays.iter().map(|a| expand_dims(a, &[ax])).collect::<Result<Vec<_>>>()?;
    concatenate(&expanded, ax)
}
