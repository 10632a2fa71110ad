//! Indexing with integer arrays: `take`, `take_along_axis`,
//! `put_along_axis`, and `slice`/`slice_update` with start positions held
//! in an array.

use super::wrap;
use crate::args;
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::on_stream;
use ferrox::ops;
use ferrox_python_macros::guarded;
use pyo3::prelude::*;

/// Elements of `a` at `indices` along `axis` (of the flattened array when
/// `axis` is None); the indices' shape replaces the axis. Negative indices
/// count from the end.
///
/// Args:
///     a (array): Input array.
///     indices (array): Indices to take.
///     axis (int, optional): Axis to operate along; None means the flattened array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, indices, axis = None, *, stream = None))]
fn take(
    a: &Bound<'_, PyAny>,
    indices: &Bound<'_, PyAny>,
    axis: Option<isize>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (a, indices) = (to_array(a, None)?, to_array(indices, None)?);
    wrap(on_stream(stream, || ops::take(&a, &indices, axis)))
}

/// Elements of `a` at `indices` along `axis`: `indices` has `a`'s rank and
/// broadcasts with it on the other axes (the flattened array when `axis`
/// is None).
///
/// Args:
///     a (array): Input array.
///     indices (array): Indices, broadcastable against ``a``.
///     axis (int, optional): Axis to operate along; None means the flattened array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, indices, axis = None, *, stream = None))]
fn take_along_axis(
    a: &Bound<'_, PyAny>,
    indices: &Bound<'_, PyAny>,
    axis: Option<isize>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (a, indices) = (to_array(a, None)?, to_array(indices, None)?);
    wrap(on_stream(stream, || ops::take_along_axis(&a, &indices, axis)))
}

/// `a` with `values` (broadcast to the indices' shape) written at
/// `indices` along `axis` (into the flattened array when `axis` is None).
///
/// Args:
///     a (array): Input array.
///     indices (array): Indices, broadcastable against ``a``.
///     values (array): Values to write.
///     axis (int, optional): Axis to operate along; None means the flattened array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, indices, values, axis = None, *, stream = None))]
fn put_along_axis(
    a: &Bound<'_, PyAny>,
    indices: &Bound<'_, PyAny>,
    values: &Bound<'_, PyAny>,
    axis: Option<isize>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (a, indices) = (to_array(a, None)?, to_array(indices, None)?);
    let values = to_array(values, Some(a.dtype()))?;
    wrap(on_stream(stream, || ops::put_along_axis(&a, &indices, &values, axis)))
}

/// The window of extents `slice_size` (one per axis of `a`) that starts at
/// `start_indices[k]` along `axes[k]` and at 0 along the other axes; the
/// starts are an array, so they can be computed.
///
/// Args:
///     a (array): Input array.
///     start_indices (array): Start index on each axis.
///     axes (int or list(int)): The axes ``start_indices`` index.
///     slice_size (int or list(int)): Size of the slice on each of ``axes``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, start_indices, axes, slice_size, *, stream = None))]
fn slice(
    a: &Bound<'_, PyAny>,
    start_indices: &Bound<'_, PyAny>,
    axes: &Bound<'_, PyAny>,
    slice_size: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (a, start) = (to_array(a, None)?, to_array(start_indices, None)?);
    let axes: Vec<isize> = args::ints("slice", "axes", axes)?.into_iter().map(|v| v as isize).collect();
    let size = args::shape("slice", slice_size)?;
    wrap(on_stream(stream, || ops::slice_dynamic(&a, &start, &axes, &size)))
}

/// `a` with the window of `update`'s shape that starts at
/// `start_indices[k]` along `axes[k]` (and at 0 elsewhere) replaced by
/// `update`.
///
/// Args:
///     a (array): Input array.
///     update (array): The values to write.
///     start_indices (array): Start index on each axis.
///     axes (int or list(int)): The axes ``start_indices`` index.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, update, start_indices, axes, *, stream = None))]
fn slice_update(
    a: &Bound<'_, PyAny>,
    update: &Bound<'_, PyAny>,
    start_indices: &Bound<'_, PyAny>,
    axes: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let (update, start) = (to_array(update, Some(a.dtype()))?, to_array(start_indices, None)?);
    let axes: Vec<isize> = args::ints("slice_update", "axes", axes)?.into_iter().map(|v| v as isize).collect();
    wrap(on_stream(stream, || ops::slice_update_dynamic(&a, &update, &start, &axes)))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(m, take, take_along_axis, put_along_axis, slice, slice_update);
    Ok(())
}
