//! ferrox errors as Python exceptions (the classes MLX raises).

use ferrox::Error;
use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyIndexError, PyIsADirectoryError, PyMemoryError, PyOSError,
    PyPermissionError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::PyErr;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    /// A Python exception raised inside a callback that the Rust core called
    /// (a custom_function rule), with the message of the ferrox error that
    /// carries it out of the core.
    static PENDING: RefCell<Option<(String, PyErr)>> = const { RefCell::new(None) };
}

/// Wraps a Python exception raised in a callback as a ferrox error for
/// `op`; when that error reaches Python, the original exception (its type
/// and traceback) is raised instead.
pub fn from_py_callback(op: &'static str, e: PyErr) -> Error {
    let err = Error::invalid(op, e.to_string());
    PENDING.with(|p| *p.borrow_mut() = Some((err.to_string(), e)));
    err
}

/// Converts a ferrox error into the matching Python exception.
pub fn to_py(err: Error) -> PyErr {
    let msg = err.to_string();
    if let Some((carried, original)) = PENDING.with(|p| p.borrow_mut().take()) {
        if carried == msg {
            return original;
        }
    }
    match err {
        // An axis or index outside the array: MLX raises ValueError, NumPy
        // IndexError (or AxisError); the class is both.
        Error::AxisOutOfRange { .. }
        | Error::AxisArgument { .. }
        | Error::IndexOutOfRange { .. }
        | Error::TooManyIndices { .. } => Python::with_gil(|py| match axis_error(py) {
            Ok(t) => PyErr::from_type(t.clone(), msg),
            Err(e) => e,
        }),
        Error::IndexArgument { .. } => PyIndexError::new_err(msg),
        Error::InvalidType { .. } => PyTypeError::new_err(msg),
        Error::OutOfMemory { .. } => PyMemoryError::new_err(msg),
        Error::Runtime { .. } => PyRuntimeError::new_err(msg),
        Error::File { kind, .. } => match kind {
            std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
            std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(msg),
            std::io::ErrorKind::AlreadyExists => PyFileExistsError::new_err(msg),
            std::io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(msg),
            _ => PyOSError::new_err(msg),
        },
        _ => PyValueError::new_err(msg),
    }
}

static AXIS_ERROR: GILOnceCell<Py<PyType>> = GILOnceCell::new();

/// `ferrox.AxisError`, the exception for an axis or index outside an
/// array (or more indices than axes): a subclass of both ValueError and
/// IndexError (NumPy's `AxisError` design), so handlers written for MLX
/// (ValueError) or for NumPy (IndexError or AxisError) all catch it.
pub fn axis_error(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    AXIS_ERROR
        .get_or_try_init(py, || {
            let bases = PyTuple::new(py, [py.get_type::<PyValueError>(), py.get_type::<PyIndexError>()])?;
            let namespace = PyDict::new(py);
            namespace.set_item("__module__", "ferrox")?;
            namespace.set_item(
                "__doc__",
                "An axis or index outside the array: both a ValueError and an IndexError, as NumPy's AxisError.",
            )?;
            let class = py.import("builtins")?.getattr("type")?.call1(("AxisError", bases, namespace))?;
            Ok(class.downcast_into::<PyType>()?.unbind())
        })
        .map(|t| t.bind(py))
}

/// `Result` whose error converts to a Python exception with `?`.
pub trait IntoPyResult<T> {
    /// Maps the error through [`to_py`].
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPyResult<T> for ferrox::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}

/// Runs the body of the Python entry point `op`, turning a Rust panic into a
/// `RuntimeError` that names `op` (see the `#[guarded]` attribute, which
/// puts every entry point through here). A panic is a bug in ferrox; the
/// message says so, and the fuzz harness counts these errors as panics.
pub fn guard<T>(op: &str, body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        let what = ferrox::error::panic_message(payload.as_ref());
        Err(PyRuntimeError::new_err(format!("[{op}] Internal error (a bug in ferrox, please report it): {what}")))
    })
}

/// Panics inside a guarded entry point: lets the test suite check that a
/// Rust panic reaches Python as a `RuntimeError` naming the function.
#[ferrox_python_macros::guarded]
#[pyo3::pyfunction]
pub fn _panic_for_tests(message: &str) -> PyResult<()> {
    panic!("{message}");
}
