//! Creation ops: `zeros`, `ones`, `full`, `arange`, `linspace`, `eye`, ...

use super::wrap;
use crate::args::{self, dtype_or};
use crate::array::PyArray;
use crate::convert::{operand, py_scalar, to_array};
use crate::device::on_stream;
use ferrox::{ops, Dtype};
use ferrox_python_macros::guarded;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// An array of zeros.
///
/// Args:
///     shape (int or list(int)): Shape of the result.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape, dtype = None, *, stream = None))]
fn zeros(
    shape: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (shape, dtype) = (args::shape("zeros", shape)?, dtype_or(dtype, Dtype::F32)?);
    wrap(on_stream(stream, || ops::zeros(&shape, dtype)))
}

/// An array of ones.
///
/// Args:
///     shape (int or list(int)): Shape of the result.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape, dtype = None, *, stream = None))]
fn ones(
    shape: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (shape, dtype) = (args::shape("ones", shape)?, dtype_or(dtype, Dtype::F32)?);
    wrap(on_stream(stream, || ops::ones(&shape, dtype)))
}

/// An array of `shape` filled with `vals` (broadcast). As in MLX, a Python
/// scalar is weakly typed against `dtype` (an int takes it, a float only
/// when it is a float dtype), NumPy data and lists are converted to it, and
/// an array given as `vals` keeps its own dtype.
///
/// Args:
///     shape (int or list(int)): Shape of the result.
///     vals (array): Fill value.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape, vals, dtype = None, *, stream = None))]
fn full(
    shape: &Bound<'_, PyAny>,
    vals: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let shape = args::shape("full", shape)?;
    let vals = match args::dtype(dtype)? {
        Some(d) if vals.downcast::<PyArray>().is_err() => operand(vals, d)?,
        _ => to_array(vals, None)?,
    };
    wrap(on_stream(stream, || ops::full(&shape, &vals, None)))
}

/// Zeros shaped like `a`, in `dtype` (default: `a`'s).
///
/// Args:
///     a (array): Input array.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, dtype = None, *, stream = None))]
fn zeros_like(
    a: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let dtype = args::dtype_or(dtype, a.dtype())?;
    wrap(on_stream(stream, || ops::zeros(a.shape(), dtype)))
}

/// Ones shaped like `a`, in `dtype` (default: `a`'s).
///
/// Args:
///     a (array): Input array.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, dtype = None, *, stream = None))]
fn ones_like(
    a: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let dtype = args::dtype_or(dtype, a.dtype())?;
    wrap(on_stream(stream, || ops::ones(a.shape(), dtype)))
}

/// `arange(stop)`, `arange(start, stop)` or `arange(start, stop, step)`;
/// int32 for integer arguments, float32 if any is a float.
///
/// Args:
///     *args (bool or int or float or complex): ``stop``, or ``start, stop[, step]``.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (*args, dtype = None, stream = None))]
fn arange(
    args: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let vals = args
        .iter()
        .map(|a| py_scalar(&a)?.ok_or_else(|| PyTypeError::new_err("[arange] start, stop and step must be numbers")))
        .collect::<PyResult<Vec<_>>>()?;
    let nums: Vec<f64> = vals.iter().map(|s| s.as_f64()).collect();
    let (start, stop, step) = match nums.as_slice() {
        [stop] => (0.0, *stop, 1.0),
        [start, stop] => (*start, *stop, 1.0),
        [start, stop, step] => (*start, *stop, *step),
        _ => return Err(PyTypeError::new_err("[arange] takes 1 to 3 positional arguments")),
    };
    let any_float = vals.iter().any(|s| matches!(s, ferrox::Scalar::Float(_)));
    let dtype = dtype_or(dtype, if any_float { Dtype::F32 } else { Dtype::I32 })?;
    wrap(on_stream(stream, || ops::arange(start, stop, step, dtype)))
}

/// `num` evenly spaced values over `[start, stop]` (`stop` left out
/// unless `endpoint`).
///
/// Args:
///     start (float): First value.
///     stop (float): Last value.
///     num (int, optional): Number of samples.
///     endpoint (bool, optional): Include ``stop``.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (start, stop, num = 50, endpoint = true, dtype = None, *, stream = None))]
fn linspace(
    start: f64,
    stop: f64,
    num: i64,
    endpoint: bool,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    if num < 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "[linspace] number of samples, {num}, must be non-negative."
        )));
    }
    let dtype = dtype_or(dtype, Dtype::F32)?;
    wrap(on_stream(stream, || ops::linspace(start, stop, num as usize, endpoint, dtype)))
}

/// An `n × m` matrix with ones on diagonal `k`.
///
/// Args:
///     n (int): Number of rows.
///     m (int, optional): Number of columns.
///     k (int, optional): Diagonal offset.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (n, m = None, k = 0, dtype = None, *, stream = None))]
fn eye(
    n: usize,
    m: Option<usize>,
    k: isize,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let dtype = dtype_or(dtype, Dtype::F32)?;
    wrap(on_stream(stream, || ops::eye(n, m, k, dtype)))
}

/// The `n × n` identity matrix.
///
/// Args:
///     n (int): Number of rows and columns.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (n, dtype = None, *, stream = None))]
fn identity(n: usize, dtype: Option<&Bound<'_, PyAny>>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let dtype = dtype_or(dtype, Dtype::F32)?;
    wrap(on_stream(stream, || ops::identity(n, dtype)))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(m, zeros, ones, full, zeros_like, ones_like, arange, linspace, eye, identity);
    Ok(())
}
