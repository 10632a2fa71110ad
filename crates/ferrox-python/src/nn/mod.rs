//! `ferrox._core.nn`: the ferrox-nn crate's activations (`functions.rs`),
//! losses (`losses.rs`) and initializers (`init.rs`) with MLX's Python
//! parameter names and defaults. The Python package `ferrox.nn` re-exports
//! the activations and losses and wraps the initializers in MLX's
//! higher-order `nn.init` functions.

mod functions;
mod init;
mod losses;

use pyo3::prelude::*;

/// Adds the `nn` submodule to `_core` and registers it as `ferrox._core.nn`
/// (so that `from ferrox._core.nn import relu` works). It is set as an
/// attribute, not added to `_core.__all__`: `from ferrox._core import *`
/// must not bind `ferrox.nn`, which is the Python package.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = parent.py();
    let m = PyModule::new(py, "ferrox._core.nn")?;
    m.setattr("__doc__", "ferrox._core.nn: activations, losses and initializers of the ferrox-nn crate.")?;
    functions::register(&m)?;
    losses::register(&m)?;
    init::register(&m)?;
    parent.setattr("nn", &m)?;
    py.import("sys")?.getattr("modules")?.set_item("ferrox._core.nn", &m)?;
    Ok(())
}
