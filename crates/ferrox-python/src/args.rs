//! Argument parsing shared by every binding: ints and sequences of ints
//! (axes, shapes), dtypes, and lists of arrays. Sequences are read item by
//! item with a length bound, so an object whose `__len__` lies cannot make
//! the binding reserve absurd amounts of memory.

use crate::array::PyArray;
use crate::convert::to_array;
use crate::dtype::PyDtype;
use ferrox::{Array, Dtype};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// More entries than this in an axes, shape or array-list argument is an error.
const MAX_ENTRIES: usize = 1 << 16;

/// The items of a list or tuple argument (`None` for anything else), with
/// their count checked against `MAX_ENTRIES`.
pub fn sequence_items<'py>(op: &str, what: &str, obj: &Bound<'py, PyAny>) -> PyResult<Option<Vec<Bound<'py, PyAny>>>> {
    if !(obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>()) {
        return Ok(None);
    }
    let items: Vec<Bound<'py, PyAny>> = obj.try_iter()?.take(MAX_ENTRIES + 1).collect::<PyResult<_>>()?;
    if items.len() > MAX_ENTRIES {
        return Err(PyValueError::new_err(format!("[{op}] {what} has more than {MAX_ENTRIES} entries.")));
    }
    Ok(Some(items))
}

/// One Python integer (anything with `__index__`, so bools too, as in MLX; not floats).
fn int_item(op: &str, what: &str, obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    if obj.is_instance_of::<pyo3::types::PyFloat>() {
        return Err(PyTypeError::new_err(format!("[{op}] {what} must be integers, got {}.", type_name(obj))));
    }
    obj.extract::<i64>().map_err(|e| {
        if e.is_instance_of::<PyOverflowError>(obj.py()) {
            PyValueError::new_err(format!("[{op}] {what} value {obj} is out of range."))
        } else {
            PyTypeError::new_err(format!("[{op}] {what} must be integers, got {}.", type_name(obj)))
        }
    })
}

/// An int or a list/tuple of ints.
pub fn ints(op: &str, what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    match sequence_items(op, what, obj)? {
        Some(items) => items.iter().map(|x| int_item(op, what, x)).collect(),
        None => Ok(vec![int_item(op, what, obj)?]),
    }
}

/// An `axis=` argument: None, an int, or a list/tuple of ints.
pub fn axes(op: &str, axis: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<isize>>> {
    match axis {
        Some(a) if !a.is_none() => Ok(Some(ints(op, "axis", a)?.into_iter().map(|v| v as isize).collect())),
        _ => Ok(None),
    }
}

/// Dimensions that may include -1 (reshape's inferred extent).
pub fn signed_shape(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<isize>> {
    Ok(ints(op, "shape", obj)?.into_iter().map(|v| v as isize).collect())
}

/// A shape given either as one tuple/list/int or as several ints
/// (`a.reshape(2, 3)` or `a.reshape((2, 3))`).
pub fn signed_shape_varargs(op: &str, args: &Bound<'_, PyTuple>) -> PyResult<Vec<isize>> {
    if args.len() == 1 {
        return signed_shape(op, &args.get_item(0)?);
    }
    signed_shape(op, args.as_any())
}

/// A shape: an int or a list/tuple of non-negative ints.
pub fn shape(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    ints(op, "shape", obj)?
        .into_iter()
        .map(|d| {
            usize::try_from(d).map_err(|_| PyValueError::new_err(format!("[{op}] Negative dimensions not allowed.")))
        })
        .collect()
}

/// The name of an object's type, for error messages.
fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
}

/// Reads an optional `dtype=` argument.
pub fn dtype(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Dtype>> {
    match obj {
        Some(o) if !o.is_none() => match o.extract::<PyDtype>() {
            Ok(d) => Ok(Some(d.0)),
            Err(_) => Err(PyTypeError::new_err(format!("dtype must be a ferrox.Dtype, got {}.", type_name(o)))),
        },
        _ => Ok(None),
    }
}

/// Reads an optional `dtype=` argument with a default.
pub fn dtype_or(obj: Option<&Bound<'_, PyAny>>, default: Dtype) -> PyResult<Dtype> {
    Ok(dtype(obj)?.unwrap_or(default))
}

/// A list or tuple of arrays (each entry anything `ferrox.array` accepts).
pub fn array_list(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<Array>> {
    if obj.downcast::<PyArray>().is_ok() {
        return Err(PyTypeError::new_err(format!("[{op}] Expected a list or tuple of arrays, got an array.")));
    }
    let items = sequence_items(op, "the list of arrays", obj)?.ok_or_else(|| {
        PyTypeError::new_err(format!("[{op}] Expected a list or tuple of arrays, got {}.", type_name(obj)))
    })?;
    items.iter().map(|x| to_array(x, None)).collect()
}
