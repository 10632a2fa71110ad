//! Exported functions for Python: the core of `export_function`,
//! `exporter`, `import_function` and `export_to_dot`. Argument checking
//! and MLX's calling conventions live in `python/ferrox/_export.py`; these
//! take flat lists of positional arrays and a dict of keyword arrays.

use crate::array::PyArray;
use crate::errors::{from_py_callback, IntoPyResult};
use ferrox::export::{self, ExportFn, Kwargs, TraceEvent};
use ferrox::Array;
use ferrox_python_macros::guarded;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use pyo3::IntoPyObjectExt;

const OP: &str = "export_function";

/// Positional arrays from a list.
fn positional(args: &Bound<'_, PyList>) -> PyResult<Vec<Array>> {
    args.iter().map(|a| Ok(a.downcast::<PyArray>()?.borrow().inner.clone())).collect()
}

/// Keyword arrays from a dict of str to array.
fn keywords(kwargs: &Bound<'_, PyDict>) -> PyResult<Kwargs> {
    kwargs.iter().map(|(k, v)| Ok((k.extract::<String>()?, v.downcast::<PyArray>()?.borrow().inner.clone()))).collect()
}

/// A Rust export function calling `fun(list_of_arrays, dict_of_arrays)`,
/// which returns a list of arrays.
fn python_function(fun: Py<PyAny>) -> Box<ExportFn> {
    Box::new(move |args: &[Array], kwargs: &Kwargs| {
        Python::with_gil(|py| {
            let result = (|| -> PyResult<Vec<Array>> {
                let a = PyList::new(py, args.iter().cloned().map(PyArray::wrap))?;
                let k = PyDict::new(py);
                for (name, x) in kwargs {
                    k.set_item(name, PyArray::wrap(x.clone()))?;
                }
                let out = fun.call1(py, (a, k))?;
                out.bind(py)
                    .try_iter()?
                    .map(|o| {
                        let o = o?;
                        let a = o
                            .downcast::<PyArray>()
                            .map_err(|_| PyTypeError::new_err(format!("[{OP}] The function must return arrays.")))?;
                        Ok(a.borrow().inner.clone())
                    })
                    .collect()
            })();
            result.map_err(|e| from_py_callback(OP, e))
        })
    })
}

/// Writes traces of one function to a file (the core of `exporter`).
#[pyclass(unsendable, module = "ferrox._core")]
pub struct _Exporter {
    inner: export::Exporter,
}

#[guarded]
#[pymethods]
impl _Exporter {
    #[new]
    fn new(path: std::path::PathBuf, fun: Py<PyAny>, shapeless: bool, metadata: &str) -> _Exporter {
        _Exporter { inner: export::Exporter::new(path, python_function(fun), shapeless, metadata) }
    }

    /// Records the function for arguments like `args` and `kwargs`.
    fn trace(&mut self, args: &Bound<'_, PyList>, kwargs: &Bound<'_, PyDict>) -> PyResult<()> {
        let (a, k) = (positional(args)?, keywords(kwargs)?);
        self.inner.trace(&a, &k).py()
    }

    /// Writes the file.
    fn close(&mut self) -> PyResult<()> {
        self.inner.close().py()
    }

    /// Whether the file was written.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }
}

/// A function loaded from a file (the core of `import_function`).
#[pyclass(frozen, module = "ferrox._core")]
pub struct _ImportedFunction {
    inner: export::ImportedFunction,
}

#[guarded]
#[pymethods]
impl _ImportedFunction {
    /// The outputs for `args` and `kwargs`, as a tuple.
    fn call<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyList>,
        kwargs: &Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let (a, k) = (positional(args)?, keywords(kwargs)?);
        let outs = self.inner.call(&a, &k).py()?;
        PyTuple::new(py, outs.into_iter().map(PyArray::wrap))
    }

    /// The metadata string stored with the function.
    #[getter]
    fn metadata(&self) -> &str {
        self.inner.metadata()
    }
}

/// Loads an exported function.
#[guarded]
#[pyfunction]
fn _import_function(path: std::path::PathBuf) -> PyResult<_ImportedFunction> {
    Ok(_ImportedFunction { inner: export::import_function(path).py()? })
}

/// Converts a JSON parameter to a Python object (dtype names to dtypes).
fn json_to_py<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    if let Some(dtype) = value.as_str().and_then(ferrox::Dtype::from_name) {
        return crate::dtype::PyDtype(dtype).into_bound_py_any(py);
    }
    py.import("json")?.call_method1("loads", (value.to_string(),))
}

/// A `(name, shape, dtype)` tuple per array.
fn described<'py>(py: Python<'py>, items: &[(String, ferrox::primitives::OutputSpec)]) -> PyResult<Bound<'py, PyList>> {
    let rows = items
        .iter()
        .map(|(n, s)| {
            let dtype = crate::dtype::PyDtype(s.dtype);
            (n.clone(), PyTuple::new(py, &s.shape)?, dtype).into_pyobject(py)
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, rows)
}

/// The events of a trace as MLX's export callback receives them: dicts
/// with a `"type"` of `inputs`, `keyword_inputs`, `outputs`, `constants`
/// or `primitive`.
#[guarded]
#[pyfunction]
fn _trace_events<'py>(
    py: Python<'py>,
    fun: Py<PyAny>,
    args: &Bound<'py, PyList>,
    kwargs: &Bound<'py, PyDict>,
    shapeless: bool,
) -> PyResult<Bound<'py, PyList>> {
    let (a, k) = (positional(args)?, keywords(kwargs)?);
    let events = export::trace_events(&*python_function(fun), &a, &k, shapeless).py()?;
    let out = PyList::empty(py);
    for event in events {
        let d = PyDict::new(py);
        match event {
            TraceEvent::Inputs(items) => {
                d.set_item("type", "inputs")?;
                d.set_item("inputs", described(py, &items)?)?;
            }
            TraceEvent::KeywordInputs(items) => {
                d.set_item("type", "keyword_inputs")?;
                d.set_item("keywords", items)?;
            }
            TraceEvent::Outputs(items) => {
                d.set_item("type", "outputs")?;
                d.set_item("outputs", described(py, &items)?)?;
            }
            TraceEvent::Constants(items) => {
                d.set_item("type", "constants")?;
                let rows = items.into_iter().map(|(n, a)| (n, PyArray::wrap(a)));
                d.set_item(
                    "constants",
                    PyList::new(py, rows.map(|r| r.into_pyobject(py)).collect::<PyResult<Vec<_>>>()?)?,
                )?;
            }
            TraceEvent::Primitive { name, arguments, inputs, outputs } => {
                d.set_item("type", "primitive")?;
                d.set_item("name", name)?;
                let arguments = arguments.iter().map(|v| json_to_py(py, v)).collect::<PyResult<Vec<_>>>()?;
                d.set_item("arguments", PyList::new(py, arguments)?)?;
                d.set_item("inputs", described(py, &inputs)?)?;
                d.set_item("outputs", described(py, &outputs)?)?;
            }
        }
        out.append(d)?;
    }
    Ok(out)
}

/// The DOT text of the graph behind `outputs`, naming the arrays in `names`.
#[guarded]
#[pyfunction]
fn _export_to_dot(outputs: &Bound<'_, PyList>, names: &Bound<'_, PyDict>) -> PyResult<String> {
    let outs = positional(outputs)?;
    let named: Vec<(String, Array)> = keywords(names)?.into_iter().collect();
    let mut text = Vec::new();
    export::export_to_dot(&mut text, &outs, &named).py()?;
    String::from_utf8(text).map_err(|e| PyTypeError::new_err(e.to_string()))
}

/// The tag of every primitive that can be exported (for the test suite's
/// coverage check).
#[pyfunction]
fn _primitive_tags() -> Vec<&'static str> {
    ferrox::primitives::TAGS.to_vec()
}

/// Adds the export entry points to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<_Exporter>()?;
    m.add_class::<_ImportedFunction>()?;
    crate::add_functions!(m, _import_function, _trace_events, _export_to_dot, _primitive_tags);
    Ok(())
}
