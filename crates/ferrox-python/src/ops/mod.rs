//! Module-level ops (`ferrox.add`, `ferrox.sum`, ...), one file per family
//! mirroring `crates/ferrox/src/ops/`. Arguments accept arrays or anything
//! `ferrox.array` accepts; every op takes `stream=`. The elementwise
//! functions are generated from the op tables of the Rust crate.

mod contraction;
mod convolution;
mod creation;
mod elementwise;
mod indexing;
mod math;
mod matmul;
mod memory;
mod quantized;
mod rearrange;
mod reduction;
mod scan;
mod shaping;
mod sort;

use crate::array::PyArray;
use crate::errors::IntoPyResult;
use ferrox::Array;
use pyo3::prelude::*;

/// The Python array for an op's result, or the exception its error maps to.
pub(crate) fn wrap(r: PyResult<ferrox::Result<Array>>) -> PyResult<PyArray> {
    Ok(PyArray::wrap(r?.py()?))
}

/// Adds the ops to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    elementwise::register(m)?;
    math::register(m)?;
    reduction::register(m)?;
    scan::register(m)?;
    indexing::register(m)?;
    matmul::register(m)?;
    creation::register(m)?;
    contraction::register(m)?;
    convolution::register(m)?;
    rearrange::register(m)?;
    shaping::register(m)?;
    sort::register(m)?;
    memory::register(m)?;
    quantized::register(m)?;
    register_aliases(m)
}

/// The array API's names for ops MLX already has, each bound to the same
/// function object as MLX binds them (`ferrox.acos is ferrox.arccos`).
const ALIASES: &[(&str, &str)] = &[
    ("acos", "arccos"),
    ("acosh", "arccosh"),
    ("asin", "arcsin"),
    ("asinh", "arcsinh"),
    ("atan", "arctan"),
    ("atanh", "arctanh"),
    ("atan2", "arctan2"),
    ("bitwise_left_shift", "left_shift"),
    ("bitwise_right_shift", "right_shift"),
    ("cumulative_prod", "cumprod"),
    ("cumulative_sum", "cumsum"),
    ("empty", "zeros"),
    ("empty_like", "zeros_like"),
    ("pow", "power"),
];

/// Adds [`ALIASES`] to the module (after the functions they name).
fn register_aliases(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for (alias, name) in ALIASES {
        m.add(*alias, m.getattr(*name)?)?;
    }
    Ok(())
}
