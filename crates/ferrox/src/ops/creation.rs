//! Array creation: constants, ranges, identity matrices.

use super::elementwise::{add, astype, divide, multiply, subtract};
use super::shaping::{broadcast_to, reshape};
use crate::array::Array;
use crate::dtype::Dtype;
use crate::element::{Element, Scalar};
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
    Array::from_primitive(shape.to_vec(), dtype, Full(value), vec![])
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
    Array::from_primitive(shape.to_vec(), dtype, AsType(dtype), vec![b])
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
    if crate::transforms::compile::is_tracing_shapeless() {
        return full_like(a, &Array::scalar_of(Scalar::Int(0), a.dtype()), a.dtype());
    }
    zeros(a.shape(), a.dtype())
}

/// Ones with the shape and dtype of `a`.
pub fn ones_like(a: &Array) -> Result<Array> {
    if crate::transforms::compile::is_tracing_shapeless() {
        return full_like(a, &Array::scalar_of(Scalar::Int(1), a.dtype()), a.dtype());
    }
    ones(a.shape(), a.dtype())
}

/// `values` broadcast to `a`'s shape, in `dtype`. While a shapeless compile
/// traces, the shape is `a`'s when the trace runs (`where(isnan(a), v, v)`),
/// not the traced one.
pub fn full_like(a: &Array, values: &Array, dtype: Dtype) -> Result<Array> {
    if crate::transforms::compile::is_tracing_shapeless() {
        let v = astype(values, dtype)?;
        let out = super::elementwise::where_(&super::isnan(a)?, &v, &v)?;
        if out.shape() != a.shape() {
            return Err(Error::invalid("full_like", "values must broadcast to the shape of the array."));
        }
        return Ok(out);
    }
    full(a.shape(), values, Some(dtype))
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
    if step == 0.0 {
        return Err(Error::invalid("arange", "step must be nonzero."));
    }
    if step.is_nan() || !start.is_finite() || !stop.is_finite() {
        return Err(Error::invalid("arange", "Cannot compute length: start and stop must be finite, step a number."));
    }
    if dtype == Dtype::Bool {
        return Err(Error::UnsupportedDtype { op: "arange", dtype, detail: "bool not supported for arange" });
    }
    if step.is_infinite() {
        // As MLX: one value (`start`) when the range is not empty.
        let nonempty = (step > 0.0 && start < stop) || (step < 0.0 && start > stop);
        let first = Array::scalar_of(Scalar::Float(start), Dtype::F64);
        return match nonempty {
            true => astype(&reshape(&first, &[1])?, dtype),
            false => zeros(&[0], dtype),
        };
    }
    let n = ((stop - start) / step).ceil().max(0.0) as usize;
    // As MLX: the first value and the increment are the dtype's own values,
    // `T(start)` and `T(start + step) - T(start)` (so an integer range with a
    // fractional start steps by whole numbers).
    // A uint64 travels as its two's-complement int64 value, which the
    // kernel's float-to-uint64 conversion wraps back (so a range starting at
    // a negative number wraps as MLX's does, instead of rounding near 2^64).
    fn first_and_step<T: Element>(start: f64, step: f64) -> (f64, f64) {
        let as_f64 = |v: T| match v.to_scalar() {
            Scalar::UInt(u) => u as i64 as f64,
            s => s.as_f64(),
        };
        let first = T::from_scalar(Scalar::Float(start));
        let next = T::from_scalar(Scalar::Float(start + step));
        (as_f64(first), as_f64(next.sub(first)))
    }
    use half::{bf16, f16};
    let (first, step) = match dtype {
        Dtype::U8 => first_and_step::<u8>(start, step),
        Dtype::U16 => first_and_step::<u16>(start, step),
        Dtype::U32 => first_and_step::<u32>(start, step),
        Dtype::U64 => first_and_step::<u64>(start, step),
        Dtype::I8 => first_and_step::<i8>(start, step),
        Dtype::I16 => first_and_step::<i16>(start, step),
        Dtype::I32 => first_and_step::<i32>(start, step),
        Dtype::I64 => first_and_step::<i64>(start, step),
        Dtype::F16 => first_and_step::<f16>(start, step),
        Dtype::BF16 => first_and_step::<bf16>(start, step),
        Dtype::F32 => first_and_step::<f32>(start, step),
        Dtype::F64 | Dtype::C64 | Dtype::Bool => (start, step),
    };
    Array::from_primitive(vec![n], dtype, Arange { start: first, step }, vec![])
}

/// `num` evenly spaced values from `start` to `stop` (included when
/// `endpoint`), computed as MLX does so results match bit for bit: in
/// float64 for a float64 result, else in float32, as `(1 - t)·start + t·stop`
/// with `t = i / (num - 1)` (`i / num` without the endpoint), then cast.
pub fn linspace(start: f64, stop: f64, num: usize, endpoint: bool, dtype: Dtype) -> Result<Array> {
    let inner = if dtype == Dtype::F64 { Dtype::F64 } else { Dtype::F32 };
    let scalar = |v: f64| Array::scalar_of(Scalar::Float(v), inner);
    if num == 1 {
        return astype(&reshape(&scalar(start), &[1])?, dtype);
    }
    let i = Array::from_primitive(vec![num], inner, Arange { start: 0.0, step: 1.0 }, vec![])?;
    let denominator = if endpoint { num.saturating_sub(1) } else { num };
    let t = divide(&i, &scalar(denominator as f64))?;
    let from_start = multiply(&subtract(&scalar(1.0), &t)?, &scalar(start))?;
    astype(&add(&from_start, &multiply(&t, &scalar(stop))?)?, dtype)
}

/// An `n × m` matrix (m defaults to n) with ones on diagonal `k`.
pub fn eye(n: usize, m: Option<usize>, k: isize, dtype: Dtype) -> Result<Array> {
    let m = m.unwrap_or(n);
    Array::from_primitive(vec![n, m], dtype, Eye { k }, vec![])
}

/// The `n × n` identity matrix.
pub fn identity(n: usize, dtype: Dtype) -> Result<Array> {
    eye(n, None, 0, dtype)
}
