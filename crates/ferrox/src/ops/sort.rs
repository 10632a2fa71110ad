//! Sorting and selection along one axis: `sort`, `argsort`, `partition`,
//! `argpartition`, `topk`, `median`, `searchsorted`.
//!
//! The order is MLX's: ascending, stable (equal elements keep their order),
//! NaN last, complex64 lexicographic (real part, then imaginary), false
//! before true. `axis = None` works on the flattened array (a 0-d input
//! gives shape `[1]`). Positions are uint32.

use super::creation::full_scalar;
use super::elementwise::{add, astype, isnan, multiply, where_};
use super::rearrange::slice_axis;
use super::reduction::any;
use super::shaping::{expand_dims, flatten, reshape_to, squeeze, transpose};
use crate::array::Array;
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{fmt_shape, Error, Result};
use crate::primitives::{ArgPartition, ArgSort, Partition, SearchSorted, Sort};
use crate::shape::normalize_axis;

/// `a` and the resolved axis: the flattened array and 0 for `None`.
fn resolve(op: &'static str, a: &Array, axis: Option<isize>) -> Result<(Array, usize)> {
    let (x, ax) = match axis {
        None => return Ok((flatten(a, 0, -1)?, 0)),
        Some(ax) => (a.clone(), ax),
    };
    let nd = x.ndim();
    let resolved = normalize_axis(ax, nd).ok_or_else(|| Error::AxisArgument {
        op,
        msg: format!("Axis {ax} is out of bounds for array with {nd} dimensions."),
    })?;
    if x.shape()[resolved] as u64 > u64::from(u32::MAX) {
        return Err(Error::invalid(
            op,
            format!("The axis has {} elements, more than the uint32 positions can index.", x.shape()[resolved]),
        ));
    }
    Ok((x, resolved))
}

/// `kth` (negative: from the end) resolved against the extent of `axis`.
fn resolve_kth(op: &'static str, a: &Array, kth: isize, axis: Option<isize>, ax: usize) -> Result<usize> {
    let n = a.shape()[ax] as isize;
    let k = if kth < 0 { kth + n } else { kth };
    if k < 0 || k >= n {
        return Err(Error::invalid(
            op,
            format!(
                "Received invalid kth {kth} along axis {} for array with shape: {}",
                axis.unwrap_or(0),
                fmt_shape(a.shape())
            ),
        ));
    }
    Ok(k as usize)
}

/// The sorted copy of `a` along `axis` (`None`: of the flattened array).
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[3.0f32, f32::NAN, 1.0, 2.0], &[2, 2])?;
/// let s = ops::sort(&a, Some(-1))?.to_vec::<f32>()?;
/// assert_eq!((s[0], s[2], s[3]), (3.0, 1.0, 2.0));
/// assert!(s[1].is_nan()); // NaN sorts last
/// assert_eq!(ops::sort(&a, None)?.to_vec::<f32>()?[..3], [1.0, 2.0, 3.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn sort(a: &Array, axis: Option<isize>) -> Result<Array> {
    let (x, ax) = resolve("sort", a, axis)?;
    Array::from_primitive(x.shape().to_vec(), x.dtype(), Sort { axis: ax }, vec![x])
}

/// The uint32 positions that sort `a` along `axis` (`None`: the flattened
/// array), stably: equal elements keep their order.
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[2i32, 1, 2, 0], &[4])?;
/// assert_eq!(ops::argsort(&a, Some(0))?.to_vec::<u32>()?, vec![3, 1, 0, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn argsort(a: &Array, axis: Option<isize>) -> Result<Array> {
    let (x, ax) = resolve("argsort", a, axis)?;
    Array::from_primitive(x.shape().to_vec(), Dtype::U32, ArgSort { axis: ax }, vec![x])
}

/// A copy of `a` partitioned along `axis` (`None`: the flattened array)
/// around position `kth` (negative: from the end): the element there is the
/// one a sort would put there, none before it is greater and none after it
/// is smaller. (ferrox returns the fully sorted lines, which satisfy this.)
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[5i32, 1, 4, 2, 3], &[5])?;
/// let p = ops::partition(&a, 2, Some(0))?.to_vec::<i32>()?;
/// assert_eq!(p[2], 3);
/// assert!(p[..2].iter().all(|&v| v <= 3) && p[3..].iter().all(|&v| v >= 3));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn partition(a: &Array, kth: isize, axis: Option<isize>) -> Result<Array> {
    let (x, ax) = resolve("partition", a, axis)?;
    let kth = resolve_kth("partition", &x, kth, axis, ax)?;
    Array::from_primitive(x.shape().to_vec(), x.dtype(), Partition { kth, axis: ax }, vec![x])
}

/// The uint32 positions that partition `a` along `axis` (`None`: the
/// flattened array) around position `kth` (see [`partition`]).
pub fn argpartition(a: &Array, kth: isize, axis: Option<isize>) -> Result<Array> {
    let (x, ax) = resolve("argpartition", a, axis)?;
    let kth = resolve_kth("argpartition", &x, kth, axis, ax)?;
    Array::from_primitive(x.shape().to_vec(), Dtype::U32, ArgPartition { kth, axis: ax }, vec![x])
}

/// The `k` largest elements of `a` along `axis` (`None`: of the flattened
/// array), in no guaranteed order (as MLX: `k` equal to the axis' extent
/// returns `a` itself; otherwise ferrox gives them ascending). NaN counts
/// as the largest value.
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[3i32, 1, 5, 2], &[4])?;
/// let mut top = ops::topk(&a, 2, Some(-1))?.to_vec::<i32>()?;
/// top.sort();
/// assert_eq!(top, vec![3, 5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn topk(a: &Array, k: isize, axis: Option<isize>) -> Result<Array> {
    let (x, ax) = resolve("topk", a, axis)?;
    let n = x.shape()[ax];
    if k < 0 || k as usize > n {
        return Err(Error::invalid(
            "topk",
            format!(
                "Received invalid k={k} along axis {} for array with shape: {}",
                axis.unwrap_or(0),
                fmt_shape(x.shape())
            ),
        ));
    }
    let k = k as usize;
    if k == n {
        return Ok(x);
    }
    let parted = partition(&x, -(k as isize), Some(ax as isize))?;
    slice_axis(&parted, ax, n - k, k, 1)
}

/// The median over `axes` (`None`: all axes), as MLX computes it: the
/// middle element of the sorted values, or the mean of the two middle ones,
/// in the input's dtype when inexact and float32 otherwise; NaN where a
/// NaN is among the values. `keepdims` keeps the reduced axes with extent 1.
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[4i32, 1, 3, 2, 9, 7], &[2, 3])?;
/// assert_eq!(ops::median(&a, Some(&[1]), false)?.to_vec::<f32>()?, vec![3.0, 7.0]);
/// assert_eq!(ops::median(&a, None, false)?.item::<f32>()?, 3.5);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn median(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let nd = a.ndim();
    let all: Vec<isize> = (0..nd as isize).collect();
    let axes = axes.unwrap_or(&all);
    let mut reduced = Vec::with_capacity(axes.len());
    for &ax in axes {
        let r = normalize_axis(ax, nd).ok_or_else(|| Error::AxisArgument {
            op: "median",
            msg: format!("axis {ax} is out of bounds for array with {nd} dimensions."),
        })?;
        reduced.push(r);
    }
    reduced.sort_unstable();
    reduced.dedup();
    if reduced.len() != axes.len() {
        return Err(Error::invalid("median", "Received duplicate axis."));
    }
    if reduced.is_empty() && nd > 0 {
        return Err(Error::invalid("median", "Received no axes to take the median over."));
    }
    let dtype = a.dtype().at_least_float();
    // The reduced axes last, merged into one.
    let mut order: Vec<isize> = (0..nd).filter(|d| !reduced.contains(d)).map(|d| d as isize).collect();
    let kept = order.len();
    order.extend(reduced.iter().map(|&d| d as isize));
    let moved = transpose(a, Some(&order))?;
    let mut shape = moved.shape()[..kept].to_vec();
    shape.push(moved.shape()[kept..].iter().product());
    let flat = reshape_to(&moved, shape)?;
    let last = flat.ndim() - 1;
    let m = flat.shape()[last];
    if m == 0 {
        return Err(Error::invalid("median", "Cannot take median along empty axis."));
    }
    let sorted = sort(&flat, Some(-1))?;
    let middle = |i: usize| astype(&slice_axis(&sorted, last, i, 1, 1)?, dtype);
    let mut med = middle(m / 2)?;
    if m % 2 == 0 {
        let half = Array::scalar_of(Scalar::Float(0.5), dtype);
        med = multiply(&add(&med, &middle(m / 2 - 1)?)?, &half)?;
    }
    // Sorting moves NaN to the end, where the middle never is: propagate it
    // as max, min and mean do.
    if a.dtype().is_inexact() {
        let nan = full_scalar(&[], Scalar::Float(f64::NAN), dtype)?;
        med = where_(&any(&isnan(&flat)?, Some(&[-1]), true)?, &nan, &med)?;
    }
    let med = squeeze(&med, Some(&[-1]))?;
    if keepdims {
        let back: Vec<isize> = reduced.iter().map(|&d| d as isize).collect();
        expand_dims(&med, &back)
    } else {
        Ok(med)
    }
}

/// The insertion points of `values` (any shape) in the 1-D ascending
/// `sorted` that keep it sorted: `side = "left"` gives the number of
/// elements before each value in the sort order, `"right"` the number not
/// after it. Both are promoted to one dtype first; the result is uint32
/// with the shape of `values`.
///
/// ```
/// use ferrox::{ops, Array};
/// let s = Array::from_slice(&[1i32, 2, 2, 4], &[4])?;
/// let v = Array::from_slice(&[0i32, 2, 3, 5], &[4])?;
/// assert_eq!(ops::searchsorted(&s, &v, "left")?.to_vec::<u32>()?, vec![0, 1, 3, 4]);
/// assert_eq!(ops::searchsorted(&s, &v, "right")?.to_vec::<u32>()?, vec![0, 3, 3, 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn searchsorted(sorted: &Array, values: &Array, side: &str) -> Result<Array> {
    let right = match side {
        "left" => false,
        "right" => true,
        other => {
            return Err(Error::invalid("searchsorted", format!("Invalid side '{other}'. Expected 'left' or 'right'.")))
        }
    };
    if sorted.ndim() != 1 {
        return Err(Error::invalid(
            "searchsorted",
            format!("The sorted sequence must be 1-D but has {} dimensions.", sorted.ndim()),
        ));
    }
    if sorted.size() as u64 > u64::from(u32::MAX) {
        return Err(Error::invalid(
            "searchsorted",
            format!("The sorted sequence has {} elements, more than the uint32 output can index.", sorted.size()),
        ));
    }
    let dtype = Dtype::promote(sorted.dtype(), values.dtype());
    let inputs = vec![astype(sorted, dtype)?, astype(values, dtype)?];
    Array::from_primitive(values.shape().to_vec(), Dtype::U32, SearchSorted { right }, inputs)
}
