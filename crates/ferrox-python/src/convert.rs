//! Python values to arrays: scalars, nested lists, objects with the buffer
//! protocol (NumPy arrays) and ferrox arrays, with MLX's dtype rules.

use crate::array::PyArray;
use crate::dtype::PyDtype;
use crate::errors::IntoPyResult;
use ferrox::ops;
use ferrox::{Array, Dtype, Scalar};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt, PyList, PyTuple};
use std::ffi::CStr;

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
fn scalar_dtype(s: Scalar) -> Dtype {
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
    let arr = if let Ok(a) = obj.downcast::<PyArray>() {
        a.borrow().inner.clone()
    } else if let Some(s) = py_scalar(obj)? {
        Array::scalar_of(s, dtype.unwrap_or_else(|| scalar_dtype(s)))
    } else if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        from_sequence(obj, dtype)?
    } else if let Some(a) = from_buffer(obj, dtype)? {
        a
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

/// An operand of a binary op: arrays stay as they are, Python scalars are
/// weakly typed against `like` (MLX's rule), anything else converts.
pub fn operand(obj: &Bound<'_, PyAny>, like: Dtype) -> PyResult<Array> {
    if let Some(s) = py_scalar(obj)? {
        return Ok(ops::weak_scalar(s, like));
    }
    to_array(obj, None)
}

/// Converts two operands together: a Python scalar takes its type from the
/// other operand when that one is an array.
pub fn operands(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<(Array, Array)> {
    let a_is_scalar = py_scalar(a)?.is_some();
    let b_is_scalar = py_scalar(b)?.is_some();
    match (a_is_scalar, b_is_scalar) {
        (false, true) => {
            let x = to_array(a, None)?;
            let y = operand(b, x.dtype())?;
            Ok((x, y))
        }
        (true, false) => {
            let y = to_array(b, None)?;
            let x = operand(a, y.dtype())?;
            Ok((x, y))
        }
        _ => Ok((to_array(a, None)?, to_array(b, None)?)),
    }
}

/// Leaves of a nested list of Python scalars, with the list's shape.
struct Nested {
    shape: Vec<usize>,
    leaves: Vec<Scalar>,
}

fn collect_nested(obj: &Bound<'_, PyAny>, depth: usize, out: &mut Nested) -> PyResult<bool> {
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let len = obj.len()?;
        if out.shape.len() == depth {
            if !out.leaves.is_empty() {
                return Err(PyValueError::new_err("[array] Initialization encountered non-uniform length."));
            }
            out.shape.push(len);
        } else if out.shape.len() < depth || out.shape[depth] != len {
            return Err(PyValueError::new_err("[array] Initialization encountered non-uniform length."));
        }
        for item in obj.try_iter()? {
            if !collect_nested(&item?, depth + 1, out)? {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    match py_scalar(obj)? {
        Some(s) => {
            if depth != out.shape.len() {
                return Err(PyValueError::new_err("[array] Initialization encountered non-uniform length."));
            }
            out.leaves.push(s);
            Ok(true)
        }
        None => Ok(false),
    }
}

fn from_sequence(obj: &Bound<'_, PyAny>, dtype: Option<Dtype>) -> PyResult<Array> {
    let mut nested = Nested { shape: Vec::new(), leaves: Vec::new() };
    if collect_nested(obj, 0, &mut nested)? {
        let inferred = nested.leaves.iter().fold(None, |acc: Option<Dtype>, &s| {
            let d = scalar_dtype(s);
            Some(acc.map_or(d, |a| Dtype::promote(a, d)))
        });
        let dt = dtype.or(inferred).unwrap_or(Dtype::F32);
        return scalars_to_array(&nested.leaves, &nested.shape, dt);
    }
    // Elements that are arrays (or buffers): convert each and stack them.
    let parts = obj.try_iter()?.map(|item| to_array(&item?, None)).collect::<PyResult<Vec<_>>>()?;
    ops::stack(&parts, 0).py()
}

fn scalars_to_array(leaves: &[Scalar], shape: &[usize], dtype: Dtype) -> PyResult<Array> {
    Array::from_scalars(leaves, shape, dtype).py()
}

/// Buffer-protocol element formats ferrox understands, with their dtype.
fn format_dtype(format: &str, itemsize: usize) -> Option<(Dtype, bool)> {
    let f = format.trim_start_matches(['@', '=', '<', '!']);
    // (dtype, is_complex128) — complex128 and float64 need conversion.
    let d = match (f, itemsize) {
        ("?", 1) => Dtype::Bool,
        ("B", 1) => Dtype::U8,
        ("b", 1) => Dtype::I8,
        ("H", 2) => Dtype::U16,
        ("h", 2) => Dtype::I16,
        ("I" | "L", 4) => Dtype::U32,
        ("i" | "l", 4) => Dtype::I32,
        ("Q" | "L" | "N", 8) => Dtype::U64,
        ("q" | "l" | "n", 8) => Dtype::I64,
        ("e", 2) => Dtype::F16,
        ("f", 4) => Dtype::F32,
        ("d", 8) => Dtype::F64,
        ("Zf", 8) => Dtype::C64,
        ("Zd", 16) => return Some((Dtype::C64, true)),
        _ => return None,
    };
    Some((d, false))
}

/// Reads an object exposing the buffer protocol; `None` if it has none.
fn from_buffer(obj: &Bound<'_, PyAny>, dtype: Option<Dtype>) -> PyResult<Option<Array>> {
    // SAFETY: Py_buffer is plain data; PyObject_GetBuffer fills it and we
    // release it with PyBuffer_Release on every path below.
    let mut view: ffi::Py_buffer = unsafe { std::mem::zeroed() };
    let flags = ffi::PyBUF_RECORDS_RO;
    if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut view, flags) } != 0 {
        // Not a buffer: clear the TypeError it raised.
        let _ = PyErr::take(obj.py());
        return Ok(None);
    }
    struct Release(ffi::Py_buffer);
    impl Drop for Release {
        fn drop(&mut self) {
            unsafe { ffi::PyBuffer_Release(&mut self.0) }
        }
    }
    let view = Release(view);
    let v = &view.0;
    let format = if v.format.is_null() {
        "B".to_string()
    } else {
        unsafe { CStr::from_ptr(v.format) }.to_string_lossy().into_owned()
    };
    let itemsize = v.itemsize as usize;
    let (src_dtype, complex128) = format_dtype(&format, itemsize)
        .ok_or_else(|| PyTypeError::new_err(format!("[array] Unsupported buffer format '{format}'.")))?;
    let ndim = v.ndim as usize;
    let shape: Vec<usize> = (0..ndim).map(|i| unsafe { *v.shape.add(i) } as usize).collect();
    let strides: Vec<isize> = if v.strides.is_null() {
        ferrox::shape::contiguous_strides(&shape).iter().map(|s| s * itemsize as isize).collect()
    } else {
        (0..ndim).map(|i| unsafe { *v.strides.add(i) }).collect()
    };
    // Gather the elements in row-major order.
    let n: usize = shape.iter().product();
    let mut bytes = vec![0u8; n * itemsize];
    let base = v.buf as *const u8;
    let mut idx = vec![0usize; ndim];
    for k in 0..n {
        let off: isize = idx.iter().zip(&strides).map(|(&i, &s)| i as isize * s).sum();
        // SAFETY: the exporter guarantees each (index, stride) lands inside its buffer.
        unsafe { std::ptr::copy_nonoverlapping(base.offset(off), bytes.as_mut_ptr().add(k * itemsize), itemsize) };
        for d in (0..ndim).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    drop(view);
    let arr = if complex128 {
        let vals: Vec<num_complex::Complex32> = bytes
            .chunks_exact(16)
            .map(|c| {
                let re = f64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
                let im = f64::from_le_bytes(c[8..].try_into().expect("8 bytes"));
                num_complex::Complex32::new(re as f32, im as f32)
            })
            .collect();
        Array::from_vec(vals, &shape).py()?
    } else {
        Array::from_bytes(&bytes, src_dtype, &shape).py()?
    };
    // MLX turns float64 NumPy data into float32 unless a dtype is asked for.
    if src_dtype == Dtype::F64 && dtype.is_none() {
        return Ok(Some(ops::astype(&arr, Dtype::F32).py()?));
    }
    Ok(Some(arr))
}

/// Reads an optional `dtype=` argument.
pub fn dtype_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Dtype>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => {
            Ok(Some(o.extract::<PyDtype>().map_err(|_| PyTypeError::new_err("dtype must be a ferrox.Dtype"))?.0))
        }
    }
}
