//! Cumulative ops along one axis: `cumsum`, `cumprod`, `cummax`, `cummin`,
//! `logcumsumexp`.
//!
//! Each takes `axis` (`None`: the flattened array, so a 0-d input gives
//! shape `[1]`), `reverse` (scan from the end) and `inclusive` (element i
//! includes itself; when false, element i combines the elements before it
//! and the first is the op's identity: 0, 1, the dtype's lowest or highest
//! value, -inf).

use super::elementwise::astype;
use super::shaping::flatten;
use crate::array::Array;
use crate::backend::ScanOp;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::primitives::Scan;
use crate::shape::normalize_axis;

/// The dtype `op` computes in and returns for an input of `dtype` (MLX's
/// rules): a bool cumsum counts in int32 and `logcumsumexp` of bool and
/// integers computes in float32; everything else keeps its dtype (narrow
/// integer sums and products wrap, unlike `sum`).
pub fn scan_dtype(op: ScanOp, dtype: Dtype) -> Dtype {
    match (op, dtype) {
        (ScanOp::Sum, Dtype::Bool) => Dtype::I32,
        (ScanOp::LogAddExp, d) => d.at_least_float(),
        (_, d) => d,
    }
}

/// The scan `op` of `a` along `axis` with MLX's dtype rules.
fn scan_op(op: ScanOp, a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    let name = op.name();
    let (x, ax) = match axis {
        None => (flatten(a, 0, -1)?, 0),
        Some(ax) => {
            let nd = a.ndim();
            let resolved = normalize_axis(ax, nd).ok_or_else(|| Error::AxisArgument {
                op: name,
                msg: format!("Axis {ax} is out of bounds for array with {nd} dimensions."),
            })?;
            (a.clone(), resolved)
        }
    };
    let dtype = scan_dtype(op, x.dtype());
    let x = astype(&x, dtype)?;
    Array::from_primitive(x.shape().to_vec(), dtype, Scan { op, axis: ax, reverse, inclusive }, vec![x])
}

/// Cumulative sum along `axis` (`None`: of the flattened array). Bool
/// counts in int32; other dtypes are kept (integers wrap).
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[1i32, 2, 3, 4], &[2, 2])?;
/// assert_eq!(ops::cumsum(&a, Some(1), false, true)?.to_vec::<i32>()?, vec![1, 3, 3, 7]);
/// assert_eq!(ops::cumsum(&a, None, true, false)?.to_vec::<i32>()?, vec![9, 7, 4, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cumsum(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan_op(ScanOp::Sum, a, axis, reverse, inclusive)
}

/// Cumulative product along `axis` (`None`: of the flattened array), in
/// the input's dtype (bool: logical and; integers wrap).
pub fn cumprod(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan_op(ScanOp::Prod, a, axis, reverse, inclusive)
}

/// Cumulative maximum along `axis` (`None`: of the flattened array); a NaN
/// propagates to every later element.
pub fn cummax(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan_op(ScanOp::Max, a, axis, reverse, inclusive)
}

/// Cumulative minimum along `axis` (`None`: of the flattened array); a NaN
/// propagates to every later element.
pub fn cummin(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan_op(ScanOp::Min, a, axis, reverse, inclusive)
}

/// Cumulative `log(sum(exp(a)))` along `axis` (`None`: of the flattened
/// array), by running `logaddexp`; bool and integers compute in float32.
pub fn logcumsumexp(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan_op(ScanOp::LogAddExp, a, axis, reverse, inclusive)
}
