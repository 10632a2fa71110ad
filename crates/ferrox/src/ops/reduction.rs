//! Reductions over any axes (sum, prod, max, min, mean) and arg-reductions.

use super::elementwise::{astype, multiply};
use super::shaping::{flatten, reshape_to};
use super::{axis, normalize_axes};
use crate::array::Array;
use crate::backend::{ArgReduceOp, ReduceOp};
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};
use crate::primitives::{ArgReduce, Reduce};

/// Resolves `axes` (`None` = all) for a reduction named `op`.
fn reduce_axes(op: &'static str, a: &Array, axes: Option<&[isize]>) -> Result<Vec<usize>> {
    match axes {
        None => Ok((0..a.ndim()).collect()),
        Some(ax) => normalize_axes(op, ax, a.ndim()),
    }
}

fn kept_shape(a: &Array, axes: &[usize]) -> Vec<usize> {
    a.shape().iter().enumerate().map(|(i, &d)| if axes.contains(&i) { 1 } else { d }).collect()
}

fn dropped_shape(a: &Array, axes: &[usize]) -> Vec<usize> {
    a.shape().iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect()
}

fn reduce(op: ReduceOp, name: &'static str, a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let axes = reduce_axes(name, a, axes)?;
    // As MLX: sums and products of narrow integers accumulate in 32 bits.
    let out_dtype = match (op, a.dtype()) {
        (ReduceOp::Sum | ReduceOp::Prod, Dtype::Bool | Dtype::I8 | Dtype::I16) => Dtype::I32,
        (ReduceOp::Sum | ReduceOp::Prod, Dtype::U8 | Dtype::U16) => Dtype::U32,
        (_, d) => d,
    };
    if matches!(op, ReduceOp::Max | ReduceOp::Min) && axes.iter().any(|&i| a.shape()[i] == 0) {
        return Err(Error::invalid(name, format!("Cannot {name} reduce zero size array.")));
    }
    let out = if axes.is_empty() {
        // Nothing to reduce: MLX returns the input, dtype included.
        a.clone()
    } else if axes.iter().all(|&i| a.shape()[i] == 1) {
        // Reducing extents of one changes no value: as MLX, no reduction
        // enters the graph (so max's gradient through a NaN is 1, not NaN).
        astype(a, out_dtype)?
    } else {
        let shape = kept_shape(a, &axes);
        Array::from_primitive(shape, out_dtype, Reduce { op, axes: axes.clone() }, vec![a.clone()])?
    };
    if keepdims {
        Ok(out)
    } else {
        reshape_to(&out, dropped_shape(a, &axes))
    }
}

/// Sum over `axes` (`None` = all). Bool, int8 and int16 sums are int32,
/// uint8 and uint16 sums uint32 (as MLX); wider integers wrap.
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// assert_eq!(ops::sum(&a, Some(&[0]), false)?.to_vec::<f32>()?, vec![4.0, 6.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn sum(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    reduce(ReduceOp::Sum, "sum", a, axes, keepdims)
}

/// Product over `axes` (`None` = all), with `sum`'s result dtypes.
pub fn prod(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    reduce(ReduceOp::Prod, "prod", a, axes, keepdims)
}

/// Largest element over `axes` (`None` = all); NaN propagates.
pub fn max(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    reduce(ReduceOp::Max, "max", a, axes, keepdims)
}

/// Smallest element over `axes` (`None` = all); NaN propagates.
pub fn min(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    reduce(ReduceOp::Min, "min", a, axes, keepdims)
}

/// Mean over `axes` (`None` = all), as MLX computes it: `sum(a)` (with
/// sum's dtype rules, so integer sums wrap) times `1 / count` in
/// `at_least_float(dtype)`; integers average in float32.
pub fn mean(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let resolved = reduce_axes("mean", a, axes)?;
    let count: usize = resolved.iter().map(|&i| a.shape()[i]).product();
    let dtype = a.dtype().at_least_float();
    let total = sum(a, Some(&resolved.iter().map(|&i| i as isize).collect::<Vec<_>>()), keepdims)?;
    multiply(&total, &Array::scalar_of(Scalar::Float(1.0 / count as f64), dtype))
}

fn arg_reduce(op: ArgReduceOp, name: &'static str, a: &Array, axis_: Option<isize>, keepdims: bool) -> Result<Array> {
    if a.size() == 0 {
        return Err(Error::invalid(name, format!("Cannot {name} an empty array.")));
    }
    let (x, ax) = match axis_ {
        Some(ax) => (a.clone(), axis(name, ax, a.ndim())?),
        None => (flatten(a, 0, -1)?, 0),
    };
    let shape = kept_shape(&x, &[ax]);
    let out = Array::from_primitive(shape, Dtype::U32, ArgReduce { op, axis: ax }, vec![x.clone()])?;
    match (axis_, keepdims) {
        (Some(_), true) => Ok(out),
        (Some(_), false) => reshape_to(&out, dropped_shape(&x, &[ax])),
        (None, true) => reshape_to(&out, vec![1; a.ndim()]),
        (None, false) => reshape_to(&out, vec![]),
    }
}

/// Index (uint32) of the first largest element along `axis` (`None`: of the flattened array).
pub fn argmax(a: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    arg_reduce(ArgReduceOp::ArgMax, "argmax", a, axis, keepdims)
}

/// Index (uint32) of the first smallest element along `axis` (`None`: of the flattened array).
pub fn argmin(a: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    arg_reduce(ArgReduceOp::ArgMin, "argmin", a, axis, keepdims)
}

/// Sums `x` down to `shape`, undoing NumPy broadcasting (leading axes and
/// axes where `shape` has extent 1 are summed). Used by gradients.
pub fn sum_to_shape(x: &Array, shape: &[usize]) -> Result<Array> {
    if x.shape() == shape {
        return Ok(x.clone());
    }
    let lead = x.ndim() - shape.len();
    let axes: Vec<isize> = (0..x.ndim())
        .filter(|&i| i < lead || (shape[i - lead] == 1 && x.shape()[i] != 1))
        .map(|i| i as isize)
        .collect();
    let summed = astype(&sum(x, Some(&axes), true)?, x.dtype())?;
    reshape_to(&summed, shape.to_vec())
}
