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
    wrap(on_stream(stream, || ops::zeros_like(&a).and_then(|z| ops::astype(&z, dtype))))
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
    wrap(on_stream(stream, || ops::ones_like(&a).and_then(|o| ops::astype(&o, dtype))))
}

/// `arange(stop)`, `arange(start, stop)` or `arange(start, stop, step)`
/// (each also by keyword, as MLX's overloads take them): int32 for integer
/// arguments (int64 when one of them does not fit in int32), float32 if
/// any is a float.
///
/// Args:
///     start (int or float, optional): First value (0 when only ``stop`` is given).
///     stop (int or float): End of the range (excluded).
///     step (int or float, optional): Spacing between values. Default: ``1``.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (*args, start = None, stop = None, step = None, dtype = None, stream = None))]
fn arange(
    args: &Bound<'_, PyTuple>,
    start: Option<&Bound<'_, PyAny>>,
    stop: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let number = |v: Option<Bound<'_, PyAny>>| -> PyResult<Option<ferrox::Scalar>> {
        match v {
            Some(v) if !v.is_none() => Ok(Some(
                py_scalar(&v)?.ok_or_else(|| PyTypeError::new_err("[arange] start, stop and step must be numbers"))?,
            )),
            _ => Ok(None),
        }
    };
    if args.len() > 3 {
        return Err(PyTypeError::new_err("[arange] takes at most 3 positional arguments"));
    }
    let positional: Vec<Option<ferrox::Scalar>> = args.iter().map(|a| number(Some(a))).collect::<PyResult<_>>()?;
    let keyword = |name: &str, v: Option<&Bound<'_, PyAny>>, taken: bool| -> PyResult<Option<ferrox::Scalar>> {
        if taken && v.is_some_and(|v| !v.is_none()) {
            return Err(PyTypeError::new_err(format!("[arange] got multiple values for argument '{name}'")));
        }
        number(v.cloned())
    };
    // MLX's overloads: `arange(start, stop, step)` and `arange(stop, step)`.
    let (mut first, mut second, third) = (
        positional.first().copied().flatten(),
        positional.get(1).copied().flatten(),
        positional.get(2).copied().flatten(),
    );
    let kw_start = keyword("start", start, !positional.is_empty())?;
    let kw_stop = keyword("stop", stop, positional.len() > 1)?;
    let kw_step = keyword("step", step, positional.len() > 2)?;
    first = first.or(kw_start);
    second = second.or(kw_stop);
    let step_value = third.or(kw_step);
    let (start_value, stop_value) = match (first, second) {
        (Some(a), Some(b)) => (Some(a), b),
        // One bound: the stop (`arange(5)`, `arange(-3, None, -1)`, `arange(stop=3)`).
        (Some(a), None) if kw_start.is_none() => (None, a),
        (None, Some(b)) => (None, b),
        _ => return Err(PyTypeError::new_err("[arange] requires a stop value")),
    };
    let values: Vec<ferrox::Scalar> = [start_value, Some(stop_value), step_value].into_iter().flatten().collect();
    let any_float = values.iter().any(|s| matches!(s, ferrox::Scalar::Float(_)));
    let wide = values.iter().any(|s| match *s {
        ferrox::Scalar::Int(v) => i32::try_from(v).is_err(),
        ferrox::Scalar::UInt(_) => true,
        _ => false,
    });
    let inferred = match (any_float, wide) {
        (true, _) => Dtype::F32,
        (false, true) => Dtype::I64,
        (false, false) => Dtype::I32,
    };
    let dtype = dtype_or(dtype, inferred)?;
    let (lo, hi, by) =
        (start_value.map_or(0.0, |s| s.as_f64()), stop_value.as_f64(), step_value.map_or(1.0, |s| s.as_f64()));
    wrap(on_stream(stream, || ops::arange(lo, hi, by, dtype)))
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
