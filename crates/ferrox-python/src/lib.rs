//! `ferrox._core`: the Python extension module behind `import ferrox`.

mod args;
mod array;
mod convert;
mod device;
mod dtype;
mod errors;
mod ops;
mod transforms;

use pyo3::prelude::*;

/// The compiled core of the `ferrox` Python package.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<array::PyArray>()?;
    dtype::register(m)?;
    device::register(m)?;
    ops::register(m)?;
    transforms::register(m)?;
    m.add_function(wrap_pyfunction!(errors::_panic_for_tests, m)?)?;
    Ok(())
}
