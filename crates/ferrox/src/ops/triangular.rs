//! Triangular masks and matrices: `tri`, `tril`, `triu`.

use super::creation::arange;
use super::elementwise::{add, astype, greater_equal, where_};
use super::shaping::reshape_to;
use super::zeros_like;
use crate::array::Array;
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};

/// An `n × m` matrix (`m` defaults to `n`) with ones at and below the
/// `k`-th diagonal and zeros above it.
pub fn tri(n: usize, m: Option<usize>, k: i64, dtype: Dtype) -> Result<Array> {
    let m = m.unwrap_or(n);
    let rows = reshape_to(&arange(0.0, n as f64, 1.0, Dtype::I64)?, vec![n, 1])?;
    let cols = reshape_to(&arange(0.0, m as f64, 1.0, Dtype::I64)?, vec![1, m])?;
    let shifted = add(&rows, &Array::scalar_of(Scalar::Int(k), Dtype::I64))?;
    astype(&greater_equal(&shifted, &cols)?, dtype)
}

fn check_2d(op: &'static str, x: &Array) -> Result<(usize, usize)> {
    if x.ndim() < 2 {
        return Err(Error::invalid(op, "array must be at least 2-D"));
    }
    Ok((x.shape()[x.ndim() - 2], x.shape()[x.ndim() - 1]))
}

/// `x` with the elements above the `k`-th diagonal of its last two axes zeroed.
pub fn tril(x: &Array, k: i64) -> Result<Array> {
    let (n, m) = check_2d("tril", x)?;
    where_(&tri(n, Some(m), k, Dtype::Bool)?, x, &zeros_like(x)?)
}

/// `x` with the elements below the `k`-th diagonal of its last two axes zeroed.
pub fn triu(x: &Array, k: i64) -> Result<Array> {
    let (n, m) = check_2d("triu", x)?;
    where_(&tri(n, Some(m), k.saturating_sub(1), Dtype::Bool)?, &zeros_like(x)?, x)
}
