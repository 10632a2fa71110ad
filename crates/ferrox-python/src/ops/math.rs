//! Elementwise math composed of table ops: `reciprocal`, `real`, `round`
//! with decimals, logical ops, `divmod`, `clip`, `nan_to_num`, `isclose`,
//! `allclose`, `array_equal`, ...

use super::wrap;
use crate::array::PyArray;
use crate::convert::{operand, operands, to_array};
use crate::device::on_stream;
use crate::errors::IntoPyResult;
use ferrox::ops;
use ferrox_python_macros::guarded;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

macro_rules! unary_fns {
    ($($name:ident: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    a (array): Input array.\n\nReturns:\n    array: The result array.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (a, /, *, stream = None))]
        fn $name(a: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
            let a = to_array(a, None)?;
            wrap(on_stream(stream, || ops::$name(&a)))
        }
    )*};
}

unary_fns!(
    reciprocal: "Elementwise 1 / a.",
    real: "The real part (float32) of complex64; other dtypes unchanged.",
    positive: "Elementwise +a (a copy of `a`).",
    degrees: "Radians to degrees.",
    radians: "Degrees to radians.",
);

/// The complex conjugate (MLX's alias of `conj`).
///
/// Args:
///     a (array): Input array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, *, stream = None))]
fn conjugate(a: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::conj(&a)))
}

/// Rounds to `decimals` decimal places, halves to even.
///
/// Args:
///     a (array): Input array.
///     decimals (int, optional): Number of decimal places. Default: ``0``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, decimals = 0, stream = None))]
pub(crate) fn round(a: &Bound<'_, PyAny>, decimals: i32, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::round_decimals(&a, decimals)))
}

macro_rules! logical_fns {
    ($($name:ident: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    a (array): Input array.\n    b (array): Input array.\n\nReturns:\n    array: The boolean result, of the broadcast shape.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (a, b, /, *, stream = None))]
        fn $name(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
            // As MLX: each operand converts on its own (no weak typing).
            let (a, b) = (to_array(a, None)?, to_array(b, None)?);
            wrap(on_stream(stream, || ops::$name(&a, &b)))
        }
    )*};
}

logical_fns!(
    logical_and: "Elementwise logical and (bool result).",
    logical_or: "Elementwise logical or (bool result).",
    logical_xor: "Elementwise logical xor (bool result).",
);

/// `[floor_divide(a, b), remainder(a, b)]` (a list, as MLX returns).
///
/// Args:
///     a (array): Input array.
///     b (array): Input array.
///
/// Returns:
///     list(Any): The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, /, *, stream = None))]
fn divmod<'py>(
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let (x, y) = operands(a, b)?;
    let (q, r) = on_stream(stream, || ops::divmod(&x, &y))?.py()?;
    PyList::new(a.py(), [PyArray::wrap(q), PyArray::wrap(r)])
}

/// `a` limited to `[a_min, a_max]` (either bound may be None, not both).
///
/// Args:
///     a (array): Input array.
///     a_min (array): Lower bound, or None.
///     a_max (array): Upper bound, or None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, a_min, a_max, *, stream = None))]
fn clip(
    a: &Bound<'_, PyAny>,
    a_min: &Bound<'_, PyAny>,
    a_max: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    if a_min.is_none() && a_max.is_none() {
        return Err(PyValueError::new_err("[clip] At most one of a_min and a_max may be None"));
    }
    let a = to_array(a, None)?;
    // Array bounds promote with `a` (float16 clipped by a float32 array is
    // float32, as MLX's); scalars and other values take `a`'s dtype.
    let bound = |v: &Bound<'_, PyAny>| -> PyResult<Option<ferrox::Array>> {
        if v.is_none() {
            Ok(None)
        } else if let Ok(b) = v.downcast::<PyArray>() {
            Ok(Some(b.borrow().inner.clone()))
        } else {
            operand(v, a.dtype()).map(Some)
        }
    };
    let (lo, hi) = (bound(a_min)?, bound(a_max)?);
    wrap(on_stream(stream, || ops::clip(&a, lo.as_ref(), hi.as_ref())))
}

/// NaN and ±infinity replaced by finite numbers (by default 0 and the
/// dtype's largest and lowest finite values).
///
/// Args:
///     a (array): Input array.
///     nan (float, optional): Replacement of NaN.
///     posinf (float, optional): Replacement of +inf (the dtype's maximum when None).
///     neginf (float, optional): Replacement of -inf (the dtype's minimum when None).
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, nan = 0.0, posinf = None, neginf = None, *, stream = None))]
fn nan_to_num(
    a: &Bound<'_, PyAny>,
    nan: f64,
    posinf: Option<f64>,
    neginf: Option<f64>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::nan_to_num(&a, nan, posinf, neginf)))
}

/// Elementwise `|a - b| <= atol + rtol * |b|` (bool result).
///
/// Args:
///     a (array): Input array.
///     b (array): Input array.
///     rtol (float, optional): Relative tolerance.
///     atol (float, optional): Absolute tolerance.
///     equal_nan (bool, optional): Whether NaNs compare equal. Default: ``False``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, /, rtol = 1e-5, atol = 1e-8, *, equal_nan = false, stream = None))]
fn isclose(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (a, b) = operands(a, b)?;
    wrap(on_stream(stream, || ops::isclose(&a, &b, rtol, atol, equal_nan)))
}

/// Whether every pair of elements is close (see `isclose`); a 0-d bool.
///
/// Args:
///     a (array): Input array.
///     b (array): Input array.
///     rtol (float, optional): Relative tolerance.
///     atol (float, optional): Absolute tolerance.
///     equal_nan (bool, optional): Whether NaNs compare equal. Default: ``False``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, /, rtol = 1e-5, atol = 1e-8, *, equal_nan = false, stream = None))]
fn allclose(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (a, b) = operands(a, b)?;
    wrap(on_stream(stream, || ops::allclose(&a, &b, rtol, atol, equal_nan)))
}

/// Whether two arrays have one shape and equal elements; a 0-d bool.
///
/// Args:
///     a (array): Input array.
///     b (array): Input array.
///     equal_nan (bool, optional): Whether NaNs compare equal. Default: ``False``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, *, equal_nan = false, stream = None))]
fn array_equal(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    equal_nan: bool,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (a, b) = operands(a, b)?;
    wrap(on_stream(stream, || ops::array_equal(&a, &b, equal_nan)))
}

/// The `n`-th forward difference along `axis`.
///
/// Args:
///     a (array): Input array.
///     n (int, optional): Number of elements.
///     axis (int, optional): Axis to operate along.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, n = 1, axis = -1, *, stream = None))]
fn diff(a: &Bound<'_, PyAny>, n: i64, axis: isize, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::diff(&a, n, axis)))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(
        m,
        reciprocal,
        real,
        positive,
        degrees,
        radians,
        conjugate,
        round,
        logical_and,
        logical_or,
        logical_xor,
        divmod,
        clip,
        nan_to_num,
        isclose,
        allclose,
        array_equal,
        diff
    );
    Ok(())
}
