//! `ferrox._core`: the Python extension module behind `import ferrox`.

use pyo3::prelude::*;

/// Adds `#[pyfunction]`s to a module: `add_functions!(m, f, g, ...)`.
#[macro_export]
macro_rules! add_functions {
    ($m:expr, $($f:ident),* $(,)?) => {$( $m.add_function(pyo3::wrap_pyfunction!($f, $m)?)?; )*};
}

mod args;
mod array;
mod compile;
mod convert;
mod device;
mod dlpack;
mod dtype;
mod errors;
mod export;
mod fast;
mod fft;
mod io;
mod linalg;
mod methods;
mod nn;
mod ops;
mod optimizers;
mod print;
mod random;
mod transforms;

/// The compiled core of the `ferrox` Python package.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<array::PyArray>()?;
    m.add_class::<array::PyArrayAt>()?;
    m.add_class::<array::PyArrayAtIndex>()?;
    dtype::register(m)?;
    device::register(m)?;
    ops::register(m)?;
    transforms::register(m)?;
    compile::register(m)?;
    random::register(m)?;
    fast::register(m)?;
    fft::register(m)?;
    linalg::register(m)?;
    nn::register(m)?;
    optimizers::register(m)?;
    io::register(m)?;
    dlpack::register(m)?;
    export::register(m)?;
    print::register(m)?;
    m.add("AxisError", errors::axis_error(m.py())?)?;
    m.add_function(wrap_pyfunction!(errors::_panic_for_tests, m)?)?;
    Ok(())
}
