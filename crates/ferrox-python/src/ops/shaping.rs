//! Shape ops: `reshape`, `transpose`, `broadcast_to`, `concatenate`, ...

use super::wrap;
use crate::args;
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::on_stream;
use ferrox::ops;
use ferrox_python_macros::guarded;
use pyo3::prelude::*;

/// `a` with a new shape (an int or a sequence; one entry may be -1).
///
/// Args:
///     a (array): Input array.
///     shape (int or list(int)): New shape; one entry may be -1.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, shape, *, stream = None))]
fn reshape(a: &Bound<'_, PyAny>, shape: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let shape = args::signed_shape("reshape", shape)?;
    wrap(on_stream(stream, || ops::reshape(&a, &shape)))
}

/// Permutes the axes (reverses them by default).
///
/// Args:
///     a (array): Input array.
///     axes (int or list(int), optional): The axes.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axes = None, *, stream = None))]
fn transpose(
    a: &Bound<'_, PyAny>,
    axes: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let axes = args::axes("transpose", axes)?;
    wrap(on_stream(stream, || ops::transpose(&a, axes.as_deref())))
}

/// Swaps two axes.
///
/// Args:
///     a (array): Input array.
///     axis1 (int): First axis.
///     axis2 (int): Second axis.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axis1, axis2, *, stream = None))]
fn swapaxes(a: &Bound<'_, PyAny>, axis1: isize, axis2: isize, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::swapaxes(&a, axis1, axis2)))
}

/// Swaps the last two axes of `a` (at least 2-d; ValueError otherwise).
///
/// Args:
///     a (array): Input array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, *, stream = None))]
fn matrix_transpose(a: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::matrix_transpose(&a)))
}

/// `a` broadcast to `shape`.
///
/// Args:
///     a (array): Input array.
///     shape (int or list(int)): Target shape.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, shape, *, stream = None))]
fn broadcast_to(
    a: &Bound<'_, PyAny>,
    shape: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let shape = args::shape("broadcast_to", shape)?;
    wrap(on_stream(stream, || ops::broadcast_to(&a, &shape)))
}

/// Inserts extent-1 axes.
///
/// Args:
///     a (array): Input array.
///     axis (int or list(int), optional): Axis or axes to operate over; None means all axes (or the flattened array).
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axis, *, stream = None))]
fn expand_dims(a: &Bound<'_, PyAny>, axis: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let axes = args::axes("expand_dims", Some(axis))?.unwrap_or_default();
    wrap(on_stream(stream, || ops::expand_dims(&a, &axes)))
}

/// Removes extent-1 axes (the given ones, or all).
///
/// Args:
///     a (array): Input array.
///     axis (int or list(int), optional): Axis or axes to operate over; None means all axes (or the flattened array).
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, *, stream = None))]
fn squeeze(
    a: &Bound<'_, PyAny>,
    axis: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let axes = args::axes("squeeze", axis)?;
    wrap(on_stream(stream, || ops::squeeze(&a, axes.as_deref())))
}

/// Merges axes `start_axis..=end_axis` into one.
///
/// Args:
///     a (array): Input array.
///     start_axis (int, optional): First axis to flatten.
///     end_axis (int, optional): Last axis to flatten.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, start_axis = 0, end_axis = -1, *, stream = None))]
fn flatten(
    a: &Bound<'_, PyAny>,
    start_axis: isize,
    end_axis: isize,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::flatten(&a, start_axis, end_axis)))
}

/// Joins arrays along an existing axis (``axis=None``: the flattened arrays).
///
/// Args:
///     arrays (list(array)): Input arrays.
///     axis (int, optional): Axis to operate along; None joins the arrays flattened. Default: ``0``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (arrays, /, axis = Some(0), *, stream = None))]
fn concatenate(arrays: &Bound<'_, PyAny>, axis: Option<isize>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let arrays = args::array_list("concatenate", arrays)?;
    wrap(on_stream(stream, || match axis {
        Some(axis) => ops::concatenate(&arrays, axis),
        None => {
            let flat = arrays.iter().map(|a| ops::reshape(a, &[-1])).collect::<ferrox::Result<Vec<_>>>()?;
            ops::concatenate(&flat, 0)
        }
    }))
}

/// Joins arrays of one shape along a new axis.
///
/// Args:
///     arrays (list(array)): Input arrays.
///     axis (int, optional): Axis to operate along.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (arrays, /, axis = 0, *, stream = None))]
fn stack(arrays: &Bound<'_, PyAny>, axis: isize, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let arrays = args::array_list("stack", arrays)?;
    wrap(on_stream(stream, || ops::stack(&arrays, axis)))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(
        m,
        reshape,
        transpose,
        swapaxes,
        matrix_transpose,
        broadcast_to,
        expand_dims,
        squeeze,
        flatten,
        concatenate,
        stack
    );
    Ok(())
}
