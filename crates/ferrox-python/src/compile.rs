//! `compile` for Python: the core of a compiled function, over flat lists
//! of arrays. Tree handling, constant arguments and captured state
//! (`inputs=`/`outputs=`) live in `python/ferrox/_compile.py`, which gives
//! each call a key describing everything but the arrays.

use crate::array::PyArray;
use crate::convert::to_array;
use crate::errors::{from_py_callback, IntoPyResult};
use ferrox::transforms::compile::{self, CompiledFunction};
use ferrox::Array;
use ferrox_python_macros::guarded;
use pyo3::prelude::*;
use pyo3::types::PyList;

/// Calls the Python function `fun` on a list of arrays; it must return a
/// list of arrays.
fn call_python(fun: &Py<PyAny>, xs: &[Array]) -> ferrox::Result<Vec<Array>> {
    Python::with_gil(|py| {
        let result = (|| -> PyResult<Vec<Array>> {
            let args = PyList::new(py, xs.iter().cloned().map(PyArray::wrap))?;
            let out = fun.bind(py).call1((args,))?;
            out.try_iter()?
                .map(|o| {
                    let o = o?;
                    o.downcast::<PyArray>().map(|a| a.borrow().inner.clone()).map_err(|_| {
                        pyo3::exceptions::PyValueError::new_err(
                            "[compile] Function outputs must be arrays or trees of arrays.",
                        )
                    })
                })
                .collect()
        })();
        result.map_err(|e| from_py_callback("compile", e))
    })
}

fn arrays(list: &Bound<'_, PyAny>) -> PyResult<Vec<Array>> {
    list.try_iter()?.map(|x| to_array(&x?, None)).collect()
}

/// A compiled function over flat lists of arrays.
#[pyclass(name = "_Compiled", module = "ferrox._core", unsendable)]
pub struct PyCompiled {
    inner: CompiledFunction,
}

#[pymethods]
impl PyCompiled {
    /// Compiles `fun(list_of_arrays) -> list_of_arrays`.
    #[new]
    #[pyo3(signature = (fun, shapeless = false))]
    fn new(fun: Py<PyAny>, shapeless: bool) -> PyCompiled {
        PyCompiled { inner: CompiledFunction::new(Box::new(move |xs| call_python(&fun, xs)), shapeless) }
    }

    /// The outputs of the function on `arrays`; `key` is the rest of the
    /// call's signature.
    #[guarded]
    fn __call__<'py>(&self, py: Python<'py>, arrays_: &Bound<'py, PyAny>, key: &str) -> PyResult<Bound<'py, PyList>> {
        let xs = arrays(arrays_)?;
        let outs = self.inner.call_keyed(&xs, key).py()?;
        PyList::new(py, outs.into_iter().map(PyArray::wrap))
    }

    /// `(hits, misses, traces held)`.
    fn cache_info(&self) -> (usize, usize, usize) {
        let s = self.inner.stats();
        (s.hits, s.misses, s.entries)
    }

    /// `(captured, refused, launches)`: traces whose graph was captured for
    /// replay (a CUDA graph), traces whose capture failed, and replays.
    fn graph_info(&self) -> (usize, usize, usize) {
        let s = self.inner.stats();
        (s.graphs_captured, s.graphs_refused, s.graph_launches)
    }

    /// Why captures were refused, one line per refused trace.
    fn graph_refusals(&self) -> Vec<String> {
        self.inner.graph_refusals()
    }

    /// Drops every trace.
    fn clear_cache(&self) {
        self.inner.clear_cache();
    }

    /// The primitives a call with `arrays` and `key` replays (fused or not).
    #[guarded]
    fn graph(&self, arrays_: &Bound<'_, PyAny>, key: &str, fused: bool) -> PyResult<Vec<String>> {
        let xs = arrays(arrays_)?;
        self.inner.graph(&xs, key, fused).py()
    }
}

/// Makes compiled functions trace and replay (the default).
#[pyfunction]
fn enable_compile() {
    compile::enable_compile();
}

/// Makes compiled functions call their function directly.
#[pyfunction]
fn disable_compile() {
    compile::disable_compile();
}

/// Whether compiled functions trace and replay.
#[pyfunction]
fn _compile_enabled() -> bool {
    compile::is_compile_enabled()
}

/// Sets when compiled calls replay recorded graphs ("auto", "always" or
/// "never"; see `ferrox::transforms::compile::GraphReplay`) and returns the
/// previous setting.
#[pyfunction]
fn _set_graph_replay(policy: &str) -> PyResult<&'static str> {
    use compile::GraphReplay;
    let policy = match policy {
        "auto" => GraphReplay::Auto,
        "always" => GraphReplay::Always,
        "never" => GraphReplay::Never,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "[compile] Graph replay is \"auto\", \"always\" or \"never\", not {other:?}."
            )))
        }
    };
    Ok(match compile::set_graph_replay(policy) {
        GraphReplay::Auto => "auto",
        GraphReplay::Always => "always",
        GraphReplay::Never => "never",
    })
}

/// Adds compile's entry points to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCompiled>()?;
    m.add_function(wrap_pyfunction!(enable_compile, m)?)?;
    m.add_function(wrap_pyfunction!(disable_compile, m)?)?;
    m.add_function(wrap_pyfunction!(_compile_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_graph_replay, m)?)?;
    Ok(())
}
