//! ferrox errors as Python exceptions (the classes MLX raises).

use ferrox::Error;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::PyErr;

/// Converts a ferrox error into the matching Python exception.
pub fn to_py(err: Error) -> PyErr {
    let msg = err.to_string();
    match err {
        Error::IndexOutOfRange { .. } | Error::TooManyIndices { .. } => PyIndexError::new_err(msg),
        Error::InvalidType { .. } => PyTypeError::new_err(msg),
        _ => PyValueError::new_err(msg),
    }
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
