//! Evaluation and memory accounting: `eval`, `get_active_memory`, ...

use crate::array::PyArray;
use crate::errors::IntoPyResult;
use ferrox::Array;
use ferrox_python_macros::guarded;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// Collects the arrays in a tree of lists, tuples and dicts, without
/// recursion; a container met twice (shared, or holding itself) is walked once.
fn collect_arrays(root: &Bound<'_, PyAny>, out: &mut Vec<Array>) -> PyResult<()> {
    let mut seen = std::collections::HashSet::new();
    let mut todo = vec![root.clone()];
    while let Some(obj) = todo.pop() {
        if let Ok(a) = obj.downcast::<PyArray>() {
            out.push(a.borrow().inner.clone());
            continue;
        }
        let is_container =
            obj.is_instance_of::<PyDict>() || obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>();
        if !is_container || !seen.insert(obj.as_ptr() as usize) {
            continue;
        }
        let items: Vec<Bound<'_, PyAny>> = match obj.downcast::<PyDict>() {
            Ok(d) => d.values().iter().collect(),
            Err(_) => obj.try_iter()?.collect::<PyResult<_>>()?,
        };
        todo.extend(items.into_iter().rev());
    }
    Ok(())
}

/// Evaluates the arrays (in any nesting of lists, tuples and dicts).
///
/// Args:
///     *args (Any): Positional arguments.
#[guarded]
#[pyfunction]
#[pyo3(signature = (*args))]
fn eval(py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
    let mut arrays = Vec::new();
    collect_arrays(args.as_any(), &mut arrays)?;
    py.allow_threads(|| ferrox::eval(&arrays)).py()
}

/// Starts evaluating the arrays (in any nesting of lists, tuples and dicts)
/// and returns without waiting; reading a result waits.
///
/// Args:
///     *args (Any): Positional arguments.
#[guarded]
#[pyfunction]
#[pyo3(signature = (*args))]
fn async_eval(py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
    let mut arrays = Vec::new();
    collect_arrays(args.as_any(), &mut arrays)?;
    py.allow_threads(|| ferrox::async_eval(&arrays)).py()
}

/// Bytes held by live array buffers.
///
/// Returns:
///     int: The result.
#[guarded]
#[pyfunction]
fn get_active_memory() -> usize {
    ferrox::get_active_memory()
}

/// The most bytes held at once since start or the last reset.
///
/// Returns:
///     int: The result.
#[guarded]
#[pyfunction]
fn get_peak_memory() -> usize {
    ferrox::get_peak_memory()
}

/// Resets the peak memory to 0 (as MLX's; the next allocation raises it again).
#[guarded]
#[pyfunction]
fn reset_peak_memory() -> PyResult<()> {
    ferrox::reset_peak_memory();
    Ok(())
}

/// Bytes held by freed buffers kept for reuse.
///
/// Returns:
///     int: The result.
#[guarded]
#[pyfunction]
fn get_cache_memory() -> usize {
    ferrox::get_cache_memory()
}

/// Limits the bytes kept for reuse; returns the previous limit.
///
/// Args:
///     limit (int): Limit in bytes.
///
/// Returns:
///     int: The result.
#[guarded]
#[pyfunction]
fn set_cache_limit(limit: usize) -> usize {
    ferrox::set_cache_limit(limit)
}

/// Sets the memory limit, a guideline as MLX's: past it, evaluation first
/// frees the buffers kept for reuse, then goes on; only an allocation the
/// device cannot make raises (MemoryError). Returns the previous limit.
///
/// Args:
///     limit (int): Limit in bytes.
///
/// Returns:
///     int: The result.
#[guarded]
#[pyfunction]
fn set_memory_limit(limit: usize) -> usize {
    ferrox::set_memory_limit(limit)
}

/// Set the wired size limit: the bytes kept resident in unified memory, a
/// Metal setting. Without Metal it has no effect and returns 0, as in MLX's
/// CPU and CUDA builds.
///
/// Args:
///     limit (int): The wired limit in bytes.
///
/// Returns:
///     int: The previous wired limit in bytes (always 0 here).
#[guarded]
#[pyfunction]
fn set_wired_limit(limit: usize) -> usize {
    let _ = limit;
    0
}

/// Frees every buffer kept for reuse.
#[guarded]
#[pyfunction]
fn clear_cache() -> PyResult<()> {
    ferrox::clear_cache();
    Ok(())
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(
        m,
        eval,
        async_eval,
        get_active_memory,
        get_peak_memory,
        reset_peak_memory,
        get_cache_memory,
        set_cache_limit,
        set_memory_limit,
        set_wired_limit,
        clear_cache
    );
    Ok(())
}
