//! Matrix products: `matmul`.

use super::wrap;
use crate::array::PyArray;
use crate::convert::operands;
use crate::device::on_stream;
use ferrox::ops;
use ferrox_python_macros::guarded;
use pyo3::prelude::*;

/// The matrix product with NumPy's rules for 1-D operands and broadcast
/// batch axes.
///
/// Args:
///     a (array): Input array.
///     b (array): Input array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, /, *, stream = None))]
fn matmul(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let (a, b) = operands(a, b)?;
    wrap(on_stream(stream, || ops::matmul(&a, &b)))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(m, matmul);
    Ok(())
}
