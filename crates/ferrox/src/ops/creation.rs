//! Array creation: constants, ranges, identity matrices.

use super::elementwise::astype;
use super::shaping::broadcast_to;
use crate::array::Array;
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{fmt_shape, Error, Result};
use crate::primitives::{Arange, AsType, Eye, Full};

/// An array of `shape` filled with `value` cast to `dtype`.
///
/// ```
/// use ferrox::{ops, Dtype, Scalar};
/// let a = ops::full_scalar(&[2, 2], Scalar::Float(0.5), Dtype::F32)?;
/// assert_eq!(a.to_vec::<f32>()?, vec![0.5; 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn full_scalar(shape: &[usize], value: Scalar, dtype: Dtype) -> Result<Array> {
    Ok(Array::from_primitive(shape.to_vec(), dtype, Full(value), vec![]))
}

/// An array of `shape` filled by broadcasting `values`, cast to `dtype`
/// (default: the dtype of `values`).
pub fn full(shape: &[usize], values: &Array, dtype: Option<Dtype>) -> Result<Array> {
    let dtype = dtype.unwrap_or(values.dtype());
    let b = broadcast_to(values, shape).map_err(|_| {
        Error::invalid(
            "full",
            format!("Cannot broadcast values of shape {} to {}.", fmt_shape(values.shape()), fmt_shape(shape)),
        )
    })?;
    Ok(Array::from_primitive(shape.to_vec(), dtype, AsType(dtype), vec![b]))
}

/// An array of zeros.
pub fn zeros(shape: &[usize], dtype: Dtype) -> Result<Array> {
    full_scalar(shape, Scalar::Int(0), dtype)
}

/// An array of ones.
pub fn ones(shape: &[usize], dtype: Dtype) -> Result<Array> {
    full_scalar(shape, Scalar::Int(1), dtype)
}

/// Zeros with the shape and dtype of `a`.
pub fn zeros_like(a: &Array) -> Result<Array> {
    zeros(a.shape(), a.dtype())
}

/// Ones with the shape and dtype of `a`.
pub fn ones_like(a: &Array) -> Result<Array> {
    ones(a.shape(), a.dtype())
}

/// Values from `start` (inclusive) to `stop` (exclusive) spaced by `step`.
///
/// ```
/// use ferrox::{ops, Dtype};
/// let a = ops::arange(0.0, 5.0, 2.0, Dtype::I32)?;
/// assert_eq!(a.to_vec::<i32>()?, vec![0, 2, 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn arange(start: f64, stop: f64, step: f64, dtype: Dtype) -> Result<Array> {
    if step == 0.0 || !step.is_finite() || !start.is_finite() || !stop.is_finite() {
        return Err(Error::invalid(
            "arange",
            "Cannot compute length: start, stop and step must be finite and step non-zero.",
        ));
    }
    if dtype == Dtype::Bool {
        return Err(Error::UnsupportedDtype { op: "arange", dtype, detail: "Cannot arange with a bool dtype" });
    }
    let n = ((stop - start) / step).ceil().max(0.0) as usize;
    Ok(Array::from_primitive(vec![n], dtype, Arange { start, step }, vec![]))
}

/// `num` evenly spaced values from `start` to `stop`, both included.
pub fn linspace(start: f64, stop: f64, num: usize, dtype: Dtype) -> Result<Array> {
    let step = if num > 1 { (stop - start) / (num - 1) as f64 } else { 0.0 };
    let values = Array::from_primitive(vec![num], Dtype::F64, Arange { start, step }, vec![]);
    astype(&values, dtype)
}

/// An `n × m` matrix (m defaults to n) with ones on diagonal `k`.
pub fn eye(n: usize, m: Option<usize>, k: isize, dtype: Dtype) -> Result<Array> {
    let m = m.unwrap_or(n);
    Ok(Array::from_primitive(vec![n, m], dtype, Eye { k }, vec![]))
}

/// The `n × n` identity matrix.
pub fn identity(n: usize, dtype: Dtype) -> Result<Array> {
    eye(n, None, 0, dtype)
}
