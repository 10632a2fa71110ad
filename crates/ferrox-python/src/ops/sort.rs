//! Sorting and selection: `sort`, `argsort`, `partition`, `argpartition`,
//! `topk`, `median`, `searchsorted`.

use super::wrap;
use crate::args;
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::on_stream;
use ferrox::ops;
use ferrox_python_macros::guarded;
use pyo3::prelude::*;

/// Returns a sorted copy of the array along `axis` (the flattened array when
/// None; the last axis by default). The sort is stable: equal elements keep
/// their relative order. NaN values are placed at the end; complex numbers
/// sort by real part, then imaginary part.
///
/// Args:
///     a (array): Input array.
///     axis (int, optional): Axis to operate along; None means the flattened array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axis = Some(-1), *, stream = None))]
fn sort(a: &Bound<'_, PyAny>, axis: Option<isize>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::sort(&a, axis)))
}

/// Returns the indices that sort the array along `axis` (the flattened array
/// when None; the last axis by default), as uint32. The sort is stable:
/// equal elements keep their relative order. NaN values are placed at the end.
///
/// Args:
///     a (array): Input array.
///     axis (int, optional): Axis to operate along; None means the flattened array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axis = Some(-1), *, stream = None))]
fn argsort(a: &Bound<'_, PyAny>, axis: Option<isize>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::argsort(&a, axis)))
}

/// Returns a partitioned copy of the array along `axis` (the flattened array
/// when None; the last axis by default) such that the element at index `kth`
/// is in its sorted position, the elements before it are less or equal to it
/// and the elements after it greater or equal. The order within the
/// partitions is unspecified (ferrox returns them sorted).
///
/// Args:
///     a (array): Input array.
///     kth (int): Index of the element placed in its sorted position.
///     axis (int, optional): Axis to operate along; None means the flattened array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, kth, axis = Some(-1), *, stream = None))]
fn partition(
    a: &Bound<'_, PyAny>,
    kth: isize,
    axis: Option<isize>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::partition(&a, kth, axis)))
}

/// Returns the uint32 indices that partition the array along `axis` (the
/// flattened array when None; the last axis by default): the index at
/// position `kth` is that of the element sorted there, the indices before
/// it are of elements less or equal to it and those after it of elements
/// greater or equal. The order within the partitions is unspecified.
///
/// Args:
///     a (array): Input array.
///     kth (int): Index of the element in its sorted position.
///     axis (int, optional): Axis to operate along; None means the flattened array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, kth, axis = Some(-1), *, stream = None))]
fn argpartition(
    a: &Bound<'_, PyAny>,
    kth: isize,
    axis: Option<isize>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::argpartition(&a, kth, axis)))
}

/// Returns the `k` largest elements of the array along `axis` (the flattened
/// array when None; the last axis by default). The elements are not
/// necessarily in sorted order; NaN counts as the largest value.
///
/// Args:
///     a (array): Input array.
///     k (int): Number of elements to keep.
///     axis (int, optional): Axis to operate along; None means the flattened array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, k, axis = Some(-1), *, stream = None))]
fn topk(a: &Bound<'_, PyAny>, k: isize, axis: Option<isize>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::topk(&a, k, axis)))
}

/// Computes the median over the given axes (all axes when None): the middle
/// sorted value, or the mean of the two middle ones. Integers and bool give
/// float32; a NaN among the values gives NaN. `keepdims` keeps the reduced
/// axes as singleton dimensions.
///
/// Args:
///     a (array): Input array.
///     axis (int or list(int), optional): Axis or axes to operate over; None means all axes (or the flattened array).
///     keepdims (bool, optional): Keep the reduced axes as singleton dimensions. Default: ``False``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
fn median(
    a: &Bound<'_, PyAny>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let axes = args::axes("median", axis)?;
    wrap(on_stream(stream, || ops::median(&a, axes.as_deref(), keepdims)))
}

/// Finds the indices that keep the 1-D ascending `sorted_sequence` sorted
/// when inserting `values` (any shape): with `side='left'` the number of
/// elements strictly less than each value, with `side='right'` the number
/// less than or equal to it. Returns uint32 with the shape of `values`.
///
/// Args:
///     sorted_sequence (array): 1-D ascending array.
///     values (array): Values to insert.
///     side (str, optional): ``'left'`` or ``'right'``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (sorted_sequence, values, /, side = "left", *, stream = None))]
fn searchsorted(
    sorted_sequence: &Bound<'_, PyAny>,
    values: &Bound<'_, PyAny>,
    side: &str,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let s = to_array(sorted_sequence, None)?;
    let v = to_array(values, None)?;
    wrap(on_stream(stream, || ops::searchsorted(&s, &v, side)))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(m, sort, argsort, partition, argpartition, topk, median, searchsorted);
    Ok(())
}
