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
use pyo3::types::{PyDict, PyList, PyTuple};

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
#[pyclass(name = "_Compiled", module = "ferrox._core")]
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

    /// `(outputs, trace id)`: the outputs of the function on `arrays`
    /// (`key` is the rest of the call's signature) and the id of the trace
    /// that computed them (see `CompiledFunction::call_traced`).
    #[guarded]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        arrays_: &Bound<'py, PyAny>,
        key: &str,
    ) -> PyResult<(Bound<'py, PyList>, u64)> {
        let xs = arrays(arrays_)?;
        let (outs, trace) = self.inner.call_traced(&xs, key).py()?;
        Ok((PyList::new(py, outs.into_iter().map(PyArray::wrap))?, trace))
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

    /// `(primitives, trace id)`: the primitives a call with `arrays` and
    /// `key` replays (fused or not), and the id of their trace.
    #[guarded]
    fn graph(&self, arrays_: &Bound<'_, PyAny>, key: &str, fused: bool) -> PyResult<(Vec<String>, u64)> {
        let xs = arrays(arrays_)?;
        self.inner.graph_traced(&xs, key, fused).py()
    }
}

/// How deep `_state_arrays` and `_fill_state` follow nested containers (a
/// tree deeper than this, or one holding itself, is refused).
const MAX_STATE_DEPTH: usize = 256;

fn too_deep() -> PyErr {
    pyo3::exceptions::PyValueError::new_err(
        "[compile] The captured state contains a reference to itself or is nested too deeply.",
    )
}

/// Whether `x` is a container of a state tree (a list, tuple or dict,
/// subclasses included).
fn is_container(x: &Bound<'_, PyAny>) -> bool {
    x.is_instance_of::<PyDict>()
        || x.is_instance_of::<PyList>()
        || x.is_instance_of::<PyTuple>()
        || x.is_instance_of::<crate::random::RandomState>()
}

/// The children of container `node`: `(key, child)` pairs of a dict in
/// order, or `(index, child)` of a list or tuple.
fn children<'py>(node: &Bound<'py, PyAny>) -> PyResult<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    let py = node.py();
    if let Ok(d) = node.downcast::<PyDict>() {
        return Ok(d.iter().collect());
    }
    let items: Vec<Bound<'py, PyAny>> = match node.downcast::<PyList>() {
        Ok(l) => l.iter().collect(),
        // `random.state`: one key, read and written as `state[0]`.
        Err(_) if node.is_instance_of::<crate::random::RandomState>() => vec![node.get_item(0)?],
        Err(_) => node.downcast::<PyTuple>()?.iter().collect(),
    };
    items.into_iter().enumerate().map(|(i, c)| Ok((i.into_pyobject(py)?.into_any(), c))).collect()
}

fn collect_state<'py>(node: &Bound<'py, PyAny>, out: &Bound<'py, PyList>, depth: usize) -> PyResult<()> {
    if node.is_instance_of::<PyArray>() {
        return out.append(node);
    }
    if !is_container(node) {
        return Ok(());
    }
    if depth >= MAX_STATE_DEPTH {
        return Err(too_deep());
    }
    children(node)?.iter().try_for_each(|(_, child)| collect_state(child, out, depth + 1))
}

/// The arrays of a state tree (lists, tuples and dicts, subclasses such as
/// `nn.Module` included), in order; other leaves are ignored. Called by a
/// compiled function with captured state on every call, so written here
/// rather than in Python.
#[pyfunction]
fn _state_arrays<'py>(tree: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(tree.py());
    collect_state(tree, &out, 0)?;
    Ok(out)
}

fn fill_state(
    node: &Bound<'_, PyAny>,
    values: &Bound<'_, PyList>,
    next: &mut usize,
    replaced: Option<&Bound<'_, PyList>>,
    depth: usize,
) -> PyResult<()> {
    if depth >= MAX_STATE_DEPTH {
        return Err(too_deep());
    }
    let is_tuple = node.is_instance_of::<PyTuple>();
    for (key, child) in children(node)? {
        if child.is_instance_of::<PyArray>() {
            if is_tuple {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "[compile] Captured state cannot hold arrays directly in a tuple.",
                ));
            }
            if *next >= values.len() {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "[compile] The captured state holds more arrays than the function returned for it.",
                ));
            }
            if let Some(r) = replaced {
                r.append((node, &key, &child))?;
            }
            // Through the object's own item assignment, as `tree[key] = value`.
            node.set_item(&key, values.get_item(*next)?)?;
            *next += 1;
        } else if is_container(&child) {
            fill_state(&child, values, next, replaced, depth + 1)?;
        }
    }
    Ok(())
}

/// Replaces the arrays of a state tree in place, in order, by `values`
/// (appending `(container, key, old array)` for each to `replaced` when
/// given); returns how many values it used.
#[pyfunction]
#[pyo3(signature = (tree, values, replaced = None))]
fn _fill_state(
    tree: &Bound<'_, PyAny>,
    values: &Bound<'_, PyList>,
    replaced: Option<&Bound<'_, PyList>>,
) -> PyResult<usize> {
    let mut next = 0;
    if is_container(tree) {
        fill_state(tree, values, &mut next, replaced, 0)?;
    }
    Ok(next)
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
    m.add_function(wrap_pyfunction!(_state_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(_fill_state, m)?)?;
    Ok(())
}
