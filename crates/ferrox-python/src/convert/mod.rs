//! Python values to arrays: scalars, nested lists (`nested.rs`), objects
//! with the buffer protocol such as NumPy arrays (`buffer.rs`) and ferrox
//! arrays, with MLX's dtype rules.

mod buffer;
mod nested;

use crate::array::PyArray;
use crate::errors::IntoPyResult;
use ferrox::ops;
use ferrox::{Array, Dtype, Scalar};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt, PyList, PyTuple};

/// A Python scalar (bool, int, float, complex), or `None` for anything else.
pub fn py_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(Some(Scalar::Bool(obj.extract()?)));
    }
    if obj.is_instance_of::<PyInt>() {
        return match obj.extract::<i64>() {
            Ok(v) => Ok(Some(Scalar::Int(v))),
            Err(_) => {
                Ok(Some(Scalar::UInt(obj.extract::<u64>().map_err(|_| {
                    PyValueError::new_err("[array] Python integer is out of range for 64-bit integers.")
                })?)))
            }
        };
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Some(Scalar::Float(obj.extract()?)));
    }
    if let Ok(c) = obj.downcast::<PyComplex>() {
        return Ok(Some(Scalar::Complex(c.real() as f32, c.imag() as f32)));
    }
    Ok(None)
}

/// The dtype MLX gives a lone Python scalar.
pub(crate) fn scalar_dtype(s: Scalar) -> Dtype {
    match s {
        Scalar::Bool(_) => Dtype::Bool,
        Scalar::Int(v) if i32::try_from(v).is_ok() => Dtype::I32,
        Scalar::Int(_) => Dtype::I64,
        Scalar::UInt(_) => Dtype::U64,
        Scalar::Float(_) => Dtype::F32,
        Scalar::Complex(..) => Dtype::C64,
    }
}

/// Converts any supported Python value to an array (`ferrox.array(val, dtype)`).
pub fn to_array(obj: &Bound<'_, PyAny>, dtype: Option<Dtype>) -> PyResult<Array> {
    to_array_at(obj, dtype, 0)
}

/// Whether `obj` is an array or exports the buffer protocol.
pub(crate) fn is_array_like(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: PyObject_CheckBuffer only inspects the object's type.
    obj.downcast::<PyArray>().is_ok() || unsafe { ffi::PyObject_CheckBuffer(obj.as_ptr()) } != 0
}

/// [`to_array`] for a value found `depth` sequences down in the caller's input.
fn to_array_at(obj: &Bound<'_, PyAny>, dtype: Option<Dtype>, depth: usize) -> PyResult<Array> {
    let arr = if let Ok(a) = obj.downcast::<PyArray>() {
        a.borrow().inner.clone()
    } else if let Some(s) = py_scalar(obj)? {
        Array::scalar_of(s, dtype.unwrap_or_else(|| scalar_dtype(s)))
    } else if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        nested::from_sequence(obj, dtype, depth)?
    } else if let Some(a) = buffer::from_buffer(obj, dtype)? {
        a
    } else if obj.hasattr("__mlx_array__")? {
        // MLX's protocol for objects that stand for an array.
        let a = obj.call_method0("__mlx_array__")?;
        let a = a
            .downcast::<PyArray>()
            .map_err(|_| PyTypeError::new_err("[array] __mlx_array__ must return a ferrox.array."))?;
        a.borrow().inner.clone()
    } else {
        return Err(PyTypeError::new_err(format!(
            "[array] Cannot convert an object of type {} to an array.",
            obj.get_type().name()?
        )));
    };
    match dtype {
        Some(d) => ops::astype(&arr, d).py(),
        None => Ok(arr),
    }
}

/// A non-array operand of a binary op whose other operand is an array of
/// dtype `like`: a Python scalar is weakly typed against `like` (MLX's
/// rule: it adopts `like` where its kind allows), and anything else (a
/// NumPy array, a list) is converted to `like`, as MLX converts it.
pub fn operand(obj: &Bound<'_, PyAny>, like: Dtype) -> PyResult<Array> {
    if let Some(s) = py_scalar(obj)? {
        return ops::weak_scalar(s, like).py();
    }
    to_array(obj, Some(like))
}

/// Converts the two operands of a binary op with MLX's rules: two arrays
/// stay as they are; an array and something else converts the other
/// operand against the array's dtype ([`operand`]); two non-arrays convert
/// independently.
pub fn operands(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<(Array, Array)> {
    match (a.downcast::<PyArray>(), b.downcast::<PyArray>()) {
        (Ok(x), Ok(y)) => Ok((x.borrow().inner.clone(), y.borrow().inner.clone())),
        (Ok(x), Err(_)) => {
            let x = x.borrow().inner.clone();
            let y = operand(b, x.dtype())?;
            Ok((x, y))
        }
        (Err(_), Ok(y)) => {
            let y = y.borrow().inner.clone();
            let x = operand(a, y.dtype())?;
            Ok((x, y))
        }
        (Err(_), Err(_)) => Ok((to_array(a, None)?, to_array(b, None)?)),
    }
}
