//! Reductions over any axes (sum, prod, max, min, mean) and arg-reductions.

use super::creation::zeros_like;
use super::elementwise::{
    abs, add, astype, divide, exp, isinf, log, multiply, sqrt, square, stop_gradient, subtract, where_,
};
use super::shaping::{flatten, reshape_by, reshape_to, squeeze};
use super::{axis, normalize_axes};
use crate::array::Array;
use crate::backend::{ArgReduceOp, ReduceOp};
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};
use crate::primitives::{ArgReduce, LogSumExp, Reduce, ShapeRule, Softmax};

/// Resolves `axes` (`None` = all) for a reduction named `op`.
fn reduce_axes(op: &'static str, a: &Array, axes: Option<&[isize]>) -> Result<Vec<usize>> {
    match axes {
        None => Ok((0..a.ndim()).collect()),
        Some(ax) => normalize_axes(op, ax, a.ndim()),
    }
}

/// `a`'s shape with the reduced `axes` kept at extent 1.
pub(crate) fn kept_shape(a: &Array, axes: &[usize]) -> Vec<usize> {
    a.shape().iter().enumerate().map(|(i, &d)| if axes.contains(&i) { 1 } else { d }).collect()
}

fn dropped_shape(a: &Array, axes: &[usize]) -> Vec<usize> {
    a.shape().iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect()
}

/// `out` (a reduction of `a` over `axes`, kept as extent-1 axes) without
/// those axes: a squeeze, so a shapeless compile re-derives the shape.
fn drop_axes(out: &Array, a: &Array, axes: &[usize]) -> Result<Array> {
    reshape_by(out, dropped_shape(a, axes), ShapeRule::Squeeze(axes.to_vec()))
}

fn reduce(op: ReduceOp, name: &'static str, a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let axes = reduce_axes(name, a, axes)?;
    let out_dtype = crate::primitives::reduce_dtype(op, a.dtype());
    if matches!(op, ReduceOp::Max | ReduceOp::Min) && axes.iter().any(|&i| a.shape()[i] == 0) {
        return Err(Error::invalid(name, format!("Cannot {name} reduce zero size array.")));
    }
    let out = if axes.is_empty() {
        // Nothing to reduce: MLX returns the input, dtype included.
        a.clone()
    } else if axes.iter().all(|&i| a.shape()[i] == 1) && !crate::transforms::compile::is_tracing_shapeless() {
        // Reducing extents of one changes no value: as MLX, no reduction
        // enters the graph (so max's gradient through a NaN is 1, not NaN),
        // unless a shapeless trace may replay it on longer axes.
        astype(a, out_dtype)?
    } else {
        let shape = kept_shape(a, &axes);
        Array::from_primitive(shape, out_dtype, Reduce { op, axes: axes.clone() }, vec![a.clone()])?
    };
    if keepdims {
        Ok(out)
    } else {
        drop_axes(&out, a, &axes)
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

/// The truth value of a reduction of bool (an empty reduction gives the
/// identity, so `all` of nothing is true and `any` false).
fn truth(op: ReduceOp, name: &'static str, a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let x = astype(a, Dtype::Bool)?;
    let axes = reduce_axes(name, &x, axes)?;
    let out = if axes.is_empty() {
        x.clone()
    } else {
        Array::from_primitive(kept_shape(&x, &axes), Dtype::Bool, Reduce { op, axes: axes.clone() }, vec![x.clone()])?
    };
    if keepdims {
        Ok(out)
    } else {
        drop_axes(&out, &x, &axes)
    }
}

/// Whether every element over `axes` (`None` = all) is nonzero (bool).
pub fn all(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    truth(ReduceOp::Min, "all", a, axes, keepdims)
}

/// Whether any element over `axes` (`None` = all) is nonzero (bool).
pub fn any(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    truth(ReduceOp::Max, "any", a, axes, keepdims)
}

/// The number of nonzero elements over `axes` (`None` = all), as int32.
pub fn count_nonzero(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    // Counted in int32 (MLX's type) even when nothing is reduced (0-d input).
    sum(&astype(&astype(a, Dtype::Bool)?, Dtype::I32)?, axes, keepdims)
}

/// Variance over `axes` (`None` = all): the mean squared deviation from
/// the mean (its magnitude, as float32, for complex64), times
/// `n / (n - ddof)` (infinite when `ddof >= n`).
pub fn var(a: &Array, axes: Option<&[isize]>, keepdims: bool, ddof: i64) -> Result<Array> {
    let resolved: Vec<isize> = reduce_axes("var", a, axes)?.iter().map(|&i| i as isize).collect();
    let x = astype(a, a.dtype().at_least_float())?;
    let mu = mean(&x, Some(&resolved), true)?;
    let dev = subtract(&x, &mu)?;
    let sq = if dev.dtype().is_complex() { square(&abs(&dev)?)? } else { square(&dev)? };
    let v = mean(&sq, Some(&resolved), keepdims)?;
    if ddof == 0 {
        return Ok(v);
    }
    let n: usize = resolved.iter().map(|&i| a.shape()[i as usize]).product();
    let denom = (n as f64 - ddof as f64).max(0.0);
    multiply(&v, &Array::scalar_of(Scalar::Float(n as f64 / denom), v.dtype()))
}

/// Standard deviation over `axes` (`None` = all): `sqrt(var)`.
pub fn std(a: &Array, axes: Option<&[isize]>, keepdims: bool, ddof: i64) -> Result<Array> {
    sqrt(&var(a, axes, keepdims, ddof)?)
}

/// `log(sum(exp(a)))` over `axes` (`None` = all), computed without
/// overflow by factoring out the maximum (infinite maxima pass through).
/// Over the last axis of a real array it is one fused row kernel (MLX's
/// `LogSumExp` primitive).
pub fn logsumexp(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    if a.size() == 0 {
        // MLX's rule, whatever the axes.
        return Err(Error::invalid("logsumexp", "Received empty array."));
    }
    logsumexp_or_empty(a, axes, keepdims)
}

/// [`logsumexp`] that also takes an empty array whose output is empty (an
/// empty batch), for composite ops such as attention whose empty cases are
/// valid.
pub(crate) fn logsumexp_or_empty(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let resolved = reduce_axes("logsumexp", a, axes)?;
    if a.size() > 0 && !a.dtype().is_complex() && over_last_axis(a, &resolved) {
        let x = astype(a, a.dtype().at_least_float())?;
        let out = Array::from_primitive(kept_shape(a, &resolved), x.dtype(), LogSumExp, vec![x])?;
        return if keepdims { Ok(out) } else { drop_axes(&out, a, &resolved) };
    }
    let resolved: Vec<isize> = resolved.iter().map(|&i| i as isize).collect();
    let x = astype(a, a.dtype().at_least_float())?;
    let peak = stop_gradient(&max(&x, Some(&resolved), true)?)?;
    let peak = where_(&isinf(&peak)?, &zeros_like(&peak)?, &peak)?;
    let total = log(&sum(&exp(&subtract(&x, &peak)?)?, Some(&resolved), true)?)?;
    let out = add(&total, &peak)?;
    if keepdims {
        Ok(out)
    } else {
        let kept: Vec<usize> = resolved.iter().map(|&i| i as usize).collect();
        drop_axes(&out, a, &kept)
    }
}

/// Whether the sorted `axes` reduce only the last axis of `a` (any other
/// listed axis has extent 1 and they run consecutively to the end): the
/// row kernels' case.
fn over_last_axis(a: &Array, axes: &[usize]) -> bool {
    a.ndim() > 0
        && axes.last() == Some(&(a.ndim() - 1))
        && axes.windows(2).all(|w| w[0] + 1 == w[1] && a.shape()[w[0]] == 1)
}

/// Mean over `axes` (`None` = all), as MLX computes it: `sum(a)` (with
/// sum's dtype rules, so integer sums wrap) times `1 / count` in
/// `at_least_float(dtype)`; integers average in float32.
pub fn mean(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let resolved = reduce_axes("mean", a, axes)?;
    let count: usize = resolved.iter().map(|&i| a.shape()[i]).product();
    let dtype = a.dtype().at_least_float();
    let axes: Vec<isize> = resolved.iter().map(|&i| i as isize).collect();
    let total = sum(a, Some(&axes), keepdims)?;
    if crate::transforms::compile::is_tracing_shapeless() {
        // The count from the input's shape when the trace runs.
        let ones = super::creation::full_like(a, &Array::scalar_of(Scalar::Float(1.0), dtype), dtype)?;
        return super::elementwise::divide(&total, &sum(&ones, Some(&axes), keepdims)?);
    }
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
        (Some(_), false) => drop_axes(&out, &x, &[ax]),
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
    // Dropping the leading axes by position (not to a fixed shape) keeps
    // the gradients of a shapeless compiled function shapeless.
    if lead == 0 {
        return Ok(summed);
    }
    let leading: Vec<isize> = (0..lead as isize).collect();
    squeeze(&summed, Some(&leading))
}

/// `exp(a) / sum(exp(a))` over `axes` (all when `None`), computed after
/// subtracting the maximum. As MLX: real inputs compute in at least
/// float32 (`precise` computes half floats in float32 too); the result has
/// the input's dtype where MLX keeps it (complex, or reductions not
/// ending at the last axis) and at least float32 otherwise.
pub fn softmax(a: &Array, axes: Option<&[isize]>, precise: bool) -> Result<Array> {
    if a.size() == 0 {
        return Ok(a.clone());
    }
    let all: Vec<isize> = (0..a.ndim() as isize).collect();
    let axes = axes.unwrap_or(&all);
    if a.ndim() == 0 && !axes.is_empty() {
        return Err(Error::invalid("softmax", "Received non-empty axes for array with 0 dimensions."));
    }
    let resolved = reduce_axes("softmax", a, Some(axes))?;
    let complex = a.dtype().is_complex();
    if !complex && over_last_axis(a, &resolved) {
        let x = astype(a, a.dtype().at_least_float())?;
        return Array::from_primitive(x.shape().to_vec(), x.dtype(), Softmax { precise }, vec![x]);
    }
    let compute = if complex {
        a.dtype()
    } else if precise && matches!(a.dtype(), Dtype::F16 | Dtype::BF16) {
        Dtype::F32
    } else {
        a.dtype().at_least_float()
    };
    let x = astype(a, compute)?;
    let axes: Vec<isize> = resolved.iter().map(|&i| i as isize).collect();
    let m = stop_gradient(&max(&x, Some(&axes), true)?)?;
    let ex = exp(&subtract(&x, &m)?)?;
    astype(&divide(&ex, &sum(&ex, Some(&axes), true)?)?, a.dtype())
}
