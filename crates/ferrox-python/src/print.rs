//! Printing options (`PrintOptions`, `set_printoptions`, `get_printoptions`,
//! the `printoptions` context manager) and the constants MLX puts in its
//! namespace (`pi`, `e`, `euler_gamma`, `inf`, `nan`, `newaxis`).

use crate::errors::IntoPyResult;
use ferrox::format::{self, PrintOptions};
use ferrox_python_macros::guarded;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// Options for printing arrays.
///
/// Args:
///     precision (int): Number of decimal places of floating-point and
///       complex elements; ``-1`` (the default) prints the shortest form
///       (six significant digits).
#[pyclass(name = "PrintOptions", module = "ferrox")]
#[derive(Clone, Copy)]
pub struct PyPrintOptions {
    /// Number of decimal places of floating-point elements (``-1``: the
    /// shortest form).
    #[pyo3(get, set)]
    precision: i32,
}

#[guarded]
#[pymethods]
impl PyPrintOptions {
    #[new]
    #[pyo3(signature = (precision = -1))]
    fn new(precision: i32) -> Self {
        PyPrintOptions { precision }
    }
}

/// The context manager `printoptions` returns: sets its options on entry
/// and restores the previous ones on exit.
#[pyclass(name = "_PrintOptionsContext", module = "ferrox")]
pub struct PrintOptionsContext {
    options: PrintOptions,
    previous: Option<PrintOptions>,
}

#[guarded]
#[pymethods]
impl PrintOptionsContext {
    fn __enter__(mut slf: PyRefMut<'_, Self>) -> PyResult<PyRefMut<'_, Self>> {
        let previous = format::get_printoptions();
        format::set_printoptions(slf.options).py()?;
        slf.previous = Some(previous);
        Ok(slf)
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        if let Some(previous) = self.previous.take() {
            format::set_printoptions(previous).py()?;
        }
        Ok(false)
    }
}

/// Set global printing precision for array formatting.
///
/// Example:
///     >>> mx.set_printoptions(precision=3)
///     >>> print(x)  # Uses precision of 3
///
/// Args:
///     precision (int): Number of decimal places, at most 65535; ``-1``
///       (the default) restores the shortest form.
///
/// Returns:
///     None
#[guarded]
#[pyfunction]
#[pyo3(signature = (precision = -1))]
fn set_printoptions(precision: i32) -> PyResult<()> {
    format::set_printoptions(PrintOptions { precision }).py()
}

/// Get global printing precision for array formatting.
///
/// Returns:
///     PrintOptions: A copy of the options used for printing arrays.
#[guarded]
#[pyfunction]
fn get_printoptions() -> PyPrintOptions {
    PyPrintOptions { precision: format::get_printoptions().precision }
}

/// Context manager for setting print options temporarily.
///
/// Example:
///     >>> with mx.printoptions(precision=3):
///     >>>     print(x)  # Uses precision of 3
///     >>> print(x)  # Back to the previous precision
///
/// Args:
///     precision (int): Number of decimal places. Use -1 for default.
///
/// Returns:
///     A context manager that sets the options inside its ``with`` block.
#[guarded]
#[pyfunction]
#[pyo3(signature = (precision = -1))]
fn printoptions(precision: i32) -> PrintOptionsContext {
    PrintOptionsContext { options: PrintOptions { precision }, previous: None }
}

/// Adds the printing options and the constants to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPrintOptions>()?;
    crate::add_functions!(m, set_printoptions, get_printoptions, printoptions);
    m.add("pi", std::f64::consts::PI)?;
    m.add("e", std::f64::consts::E)?;
    m.add("euler_gamma", 0.577_215_664_901_532_9_f64)?;
    m.add("inf", f64::INFINITY)?;
    m.add("nan", f64::NAN)?;
    m.add("newaxis", m.py().None())?;
    Ok(())
}
