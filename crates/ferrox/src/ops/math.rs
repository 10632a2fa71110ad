//! Elementwise ops written with other ops (no kernel of their own):
//! reciprocal, real, positive, degrees and radians, rounding to decimals,
//! the logical ops, divmod, clip, nan_to_num, isclose, allclose and
//! array_equal — each with MLX's definition.

use super::elementwise::{
    abs, add, astype, bitwise_and, bitwise_or, divide, equal, floor_divide, isinf, isnan, isneginf, isposinf,
    less_equal, logical_not, maximum, minimum, multiply, not_equal, remainder, round, subtract, where_,
};
use super::reduction::all;
use crate::array::Array;
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};

fn scalar(value: f64, dtype: Dtype) -> Array {
    Array::scalar_of(Scalar::Float(value), dtype)
}

/// Elementwise `1 / a` (integers compute in float32).
pub fn reciprocal(a: &Array) -> Result<Array> {
    divide(&scalar(1.0, a.dtype().at_least_float()), a)
}

/// The real part: float32 for complex64, `a` itself for other dtypes.
pub fn real(a: &Array) -> Result<Array> {
    if a.dtype().is_complex() {
        astype(a, Dtype::F32)
    } else {
        Ok(a.clone())
    }
}

/// `a` itself (unary plus).
pub fn positive(a: &Array) -> Result<Array> {
    Ok(a.clone())
}

/// Radians to degrees (integers compute in float32).
pub fn degrees(a: &Array) -> Result<Array> {
    multiply(a, &scalar(180.0 / std::f64::consts::PI, a.dtype().at_least_float()))
}

/// Degrees to radians (integers compute in float32).
pub fn radians(a: &Array) -> Result<Array> {
    multiply(a, &scalar(std::f64::consts::PI / 180.0, a.dtype().at_least_float()))
}

/// Rounding to `decimals` decimal places (halves to even), as MLX: for
/// `decimals != 0`, `round(a * 10^d) * 10^-d` in `at_least_float`, cast back.
pub fn round_decimals(a: &Array, decimals: i32) -> Result<Array> {
    if decimals == 0 {
        return round(a);
    }
    let dtype = a.dtype().at_least_float();
    let s = 10f64.powi(decimals);
    let scaled = round(&multiply(a, &scalar(s, dtype))?)?;
    astype(&multiply(&scaled, &scalar(1.0 / s, dtype))?, a.dtype())
}

/// Elementwise logical and of the truth values (bool result).
pub fn logical_and(a: &Array, b: &Array) -> Result<Array> {
    bitwise_and(&astype(a, Dtype::Bool)?, &astype(b, Dtype::Bool)?)
}

/// Elementwise logical or of the truth values (bool result).
pub fn logical_or(a: &Array, b: &Array) -> Result<Array> {
    bitwise_or(&astype(a, Dtype::Bool)?, &astype(b, Dtype::Bool)?)
}

/// Elementwise logical xor of the truth values (bool result).
pub fn logical_xor(a: &Array, b: &Array) -> Result<Array> {
    not_equal(&astype(a, Dtype::Bool)?, &astype(b, Dtype::Bool)?)
}

/// `(a // b, a % b)` (Python's `divmod`).
pub fn divmod(a: &Array, b: &Array) -> Result<(Array, Array)> {
    Ok((floor_divide(a, b)?, remainder(a, b)?))
}

/// `a` limited to `[a_min, a_max]` (either bound may be absent, not both).
pub fn clip(a: &Array, a_min: Option<&Array>, a_max: Option<&Array>) -> Result<Array> {
    if a_min.is_none() && a_max.is_none() {
        return Err(Error::invalid("clip", "At most one of a_min and a_max may be None"));
    }
    let lower = match a_min {
        Some(m) => maximum(a, m)?,
        None => a.clone(),
    };
    match a_max {
        Some(m) => minimum(&lower, m),
        None => Ok(lower),
    }
}

/// NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf` (defaults:
/// the dtype's largest and lowest finite values). Other dtypes are returned
/// unchanged.
pub fn nan_to_num(a: &Array, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Result<Array> {
    let dtype = a.dtype();
    let Some(info) = dtype.finfo() else { return Ok(a.clone()) };
    if dtype.is_complex() {
        return Err(Error::UnsupportedDtype { op: "nan_to_num", dtype, detail: "Not supported for complex64" });
    }
    let out = where_(&isnan(a)?, &scalar(nan, dtype), a)?;
    let out = where_(&isposinf(a)?, &scalar(posinf.unwrap_or(info.max), dtype), &out)?;
    where_(&isneginf(a)?, &scalar(neginf.unwrap_or(info.min), dtype), &out)
}

/// Elementwise `|a - b| <= atol + rtol * |b|`, with infinities equal only to
/// themselves and NaNs equal when `equal_nan` (MLX's definition).
pub fn isclose(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
    let dtype = Dtype::promote(a.dtype(), b.dtype()).at_least_float();
    let (x, y) = (astype(a, dtype)?, astype(b, dtype)?);
    let tol_dtype = if dtype.is_complex() { Dtype::F32 } else { dtype };
    let rhs = add(&scalar(atol, tol_dtype), &multiply(&scalar(rtol, tol_dtype), &abs(&y)?)?)?;
    let close = less_equal(&abs(&subtract(&x, &y)?)?, &rhs)?;
    let any_inf = logical_or(&isinf(&x)?, &isinf(&y)?)?;
    let both_inf =
        logical_or(&logical_and(&isposinf(&x)?, &isposinf(&y)?)?, &logical_and(&isneginf(&x)?, &isneginf(&y)?)?)?;
    let out = logical_or(&logical_and(&close, &logical_not(&any_inf)?)?, &both_inf)?;
    if equal_nan {
        logical_or(&out, &logical_and(&isnan(&x)?, &isnan(&y)?)?)
    } else {
        Ok(out)
    }
}

/// Whether every element pair is close ([`isclose`]); a 0-d bool.
pub fn allclose(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
    all(&isclose(a, b, rtol, atol, equal_nan)?, None, false)
}

/// Whether two arrays have one shape and equal elements (NaNs equal when
/// `equal_nan`); a 0-d bool. Dtypes need not match.
pub fn array_equal(a: &Array, b: &Array, equal_nan: bool) -> Result<Array> {
    if a.shape() != b.shape() {
        return Ok(Array::scalar(false));
    }
    let dtype = Dtype::promote(a.dtype(), b.dtype());
    let (x, y) = (astype(a, dtype)?, astype(b, dtype)?);
    let same = equal(&x, &y)?;
    let same = if equal_nan { logical_or(&same, &logical_and(&isnan(&x)?, &isnan(&y)?)?)? } else { same };
    all(&same, None, false)
}

/// The `n`-th forward difference `a[1:] - a[:-1]` along `axis`, applied `n`
/// times.
pub fn diff(a: &Array, n: i64, axis_: isize) -> Result<Array> {
    if n < 0 {
        return Err(Error::invalid("diff", "Order must be non-negative"));
    }
    let out_of_bounds = || Error::invalid("diff", "Axis is out of bounds for the array.");
    let ax = crate::shape::normalize_axis(axis_, a.ndim()).ok_or_else(out_of_bounds)?;
    let mut x = a.clone();
    for _ in 0..n {
        let len = x.shape()[ax];
        if len == 0 {
            break;
        }
        let hi = super::rearrange::slice_axis(&x, ax, 1, len - 1, 1)?;
        let lo = super::rearrange::slice_axis(&x, ax, 0, len - 1, 1)?;
        x = subtract(&hi, &lo)?;
    }
    Ok(x)
}
