//! Function transforms for Python. Tree handling (nested arguments and
//! outputs) lives in `python/ferrox/_autodiff.py`; these functions take and
//! return flat lists of arrays and call back into a Python function.

use crate::array::PyArray;
use crate::convert::to_array;
use crate::errors::IntoPyResult;
use ferrox::{Array, Error};
use ferrox_python_macros::guarded;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::cell::RefCell;

fn wrap_list(py: Python<'_>, arrays: Vec<Array>) -> PyResult<Bound<'_, PyList>> {
    PyList::new(py, arrays.into_iter().map(PyArray::wrap))
}

fn arrays_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<Array>> {
    obj.try_iter()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a list of arrays")))?
        .map(|x| to_array(&x?, None))
        .collect()
}

/// Runs `transform` with a Rust closure that calls the Python function `fun`
/// on a list of arrays; a Python exception raised inside is re-raised as is.
fn with_python_fun<R>(
    py: Python<'_>,
    fun: &Bound<'_, PyAny>,
    transform: impl FnOnce(&mut dyn FnMut(&[Array]) -> ferrox::Result<Vec<Array>>) -> ferrox::Result<R>,
) -> PyResult<R> {
    let raised: RefCell<Option<PyErr>> = RefCell::new(None);
    let mut call = |xs: &[Array]| -> ferrox::Result<Vec<Array>> {
        let result = (|| -> PyResult<Vec<Array>> {
            let args = wrap_list(py, xs.to_vec())?;
            let out = fun.call1((args,))?;
            out.try_iter()
                .map_err(|_| PyTypeError::new_err("the function must return a list of arrays"))?
                .map(|o| {
                    let o = o?;
                    o.downcast::<PyArray>()
                        .map(|a| a.borrow().inner.clone())
                        .map_err(|_| PyTypeError::new_err("the function must return arrays (or trees of arrays)"))
                })
                .collect()
        })();
        result.map_err(|e| {
            *raised.borrow_mut() = Some(e);
            Error::invalid("transform", "the Python function raised an exception")
        })
    };
    let out = transform(&mut call);
    if let Some(e) = raised.into_inner() {
        return Err(e);
    }
    out.py()
}

/// `(outputs, vjps)` of `fun(list_of_arrays) -> list_of_arrays`.
#[guarded]
#[pyfunction]
fn _vjp<'py>(
    py: Python<'py>,
    fun: &Bound<'py, PyAny>,
    primals: &Bound<'py, PyAny>,
    cotangents: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let (p, c) = (arrays_arg(primals, "primals")?, arrays_arg(cotangents, "cotangents")?);
    let (outs, grads) = with_python_fun(py, fun, |f| ferrox::vjp(f, &p, &c))?;
    Ok((wrap_list(py, outs)?, wrap_list(py, grads)?))
}

/// `(outputs, jvps)` of `fun(list_of_arrays) -> list_of_arrays`.
#[guarded]
#[pyfunction]
fn _jvp<'py>(
    py: Python<'py>,
    fun: &Bound<'py, PyAny>,
    primals: &Bound<'py, PyAny>,
    tangents: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let (p, t) = (arrays_arg(primals, "primals")?, arrays_arg(tangents, "tangents")?);
    let (outs, tans) = with_python_fun(py, fun, |f| ferrox::jvp(f, &p, &t))?;
    Ok((wrap_list(py, outs)?, wrap_list(py, tans)?))
}

/// `(outputs, grads)`: gradient of the first output (a scalar) of
/// `fun(list_of_arrays)` with respect to `args[i]` for `i` in `argnums`.
#[guarded]
#[pyfunction]
fn _value_and_grad<'py>(
    py: Python<'py>,
    fun: &Bound<'py, PyAny>,
    args: &Bound<'py, PyAny>,
    argnums: Vec<usize>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let a = arrays_arg(args, "args")?;
    let (outs, grads) = with_python_fun(py, fun, |f| ferrox::value_and_grad(f, &a, &argnums))?;
    Ok((wrap_list(py, outs)?, wrap_list(py, grads)?))
}

/// Outputs of `fun(list_of_arrays)` mapped over the batch axes `in_axes`
/// (one per input, None for unbatched) and stacked along `out_axes` (one per
/// output, or a single entry for all).
#[guarded]
#[pyfunction]
fn _vmap<'py>(
    py: Python<'py>,
    fun: &Bound<'py, PyAny>,
    inputs: &Bound<'py, PyAny>,
    in_axes: Vec<Option<isize>>,
    out_axes: Vec<Option<isize>>,
) -> PyResult<Bound<'py, PyList>> {
    let x = arrays_arg(inputs, "inputs")?;
    let outs = with_python_fun(py, fun, |f| ferrox::vmap(f, &x, &in_axes, &out_axes))?;
    wrap_list(py, outs)
}

/// A Python exception raised by a custom rule, as a ferrox error that turns
/// back into the original exception at the Python boundary.
fn rule_error(e: PyErr) -> Error {
    crate::errors::from_py_callback("custom_function", e)
}

fn to_arrays(py: Python<'_>, obj: &PyObject, what: &str) -> ferrox::Result<Vec<Array>> {
    let bound = obj.bind(py);
    let err = || Error::invalid("custom_function", format!("{what} must return a list of arrays"));
    let iter = bound.try_iter().map_err(|_| err())?;
    iter.map(|o| o.ok().and_then(|o| o.downcast::<PyArray>().ok().map(|a| a.borrow().inner.clone())).ok_or_else(err))
        .collect()
}

fn py_arrays(py: Python<'_>, arrays: &[Array]) -> ferrox::Result<Py<PyList>> {
    PyList::new(py, arrays.iter().cloned().map(PyArray::wrap)).map(|l| l.unbind()).map_err(rule_error)
}

/// Calls a custom function: `forward(list) -> list` with optional rules
/// `vjp(primals, cotangents, outputs) -> list`, `jvp(primals, tangents) -> list`,
/// `vmap(inputs, axes) -> (list, axes)`. With `checkpoint`, the backward
/// pass recomputes `forward` instead.
#[guarded]
#[pyfunction]
#[pyo3(signature = (forward, vjp, jvp, vmap, inputs, checkpoint = false, name = "custom_function"))]
#[allow(clippy::too_many_arguments)]
fn _custom_call<'py>(
    py: Python<'py>,
    forward: Py<PyAny>,
    vjp: Option<Py<PyAny>>,
    jvp: Option<Py<PyAny>>,
    vmap: Option<Py<PyAny>>,
    inputs: &Bound<'py, PyAny>,
    checkpoint: bool,
    name: &str,
) -> PyResult<Bound<'py, PyList>> {
    let x = arrays_arg(inputs, "inputs")?;
    let fwd = move |xs: &[Array]| -> ferrox::Result<Vec<Array>> {
        Python::with_gil(|py| {
            let args = py_arrays(py, xs)?;
            let out = forward.call1(py, (args,)).map_err(rule_error)?;
            to_arrays(py, &out, "the function")
        })
    };
    let mut f = if checkpoint { ferrox::checkpoint(fwd) } else { ferrox::CustomFunction::new(fwd) }.named(name);
    if let Some(rule) = vjp {
        f.vjp = Some(std::sync::Arc::new(move |p: &[Array], c: &[Array], o: &[Array]| {
            Python::with_gil(|py| {
                let args = (py_arrays(py, p)?, py_arrays(py, c)?, py_arrays(py, o)?);
                let out = rule.call1(py, args).map_err(rule_error)?;
                to_arrays(py, &out, "the vjp")
            })
        }));
    }
    if let Some(rule) = jvp {
        f.jvp = Some(std::sync::Arc::new(move |p: &[Array], t: &[Array]| {
            Python::with_gil(|py| {
                let args = (py_arrays(py, p)?, py_arrays(py, t)?);
                let out = rule.call1(py, args).map_err(rule_error)?;
                to_arrays(py, &out, "the jvp")
            })
        }));
    }
    if let Some(rule) = vmap {
        f.vmap = Some(std::sync::Arc::new(move |xs: &[Array], axes: &[Option<usize>]| {
            Python::with_gil(|py| {
                let args = (py_arrays(py, xs)?, axes.to_vec());
                let out = rule.call1(py, args).map_err(rule_error)?;
                let (outs, out_axes): (PyObject, Vec<Option<usize>>) = out
                    .extract(py)
                    .map_err(|_| Error::invalid("custom_function", "the vmap rule must return (outputs, axes)"))?;
                Ok((to_arrays(py, &outs, "the vmap rule")?, out_axes))
            })
        }));
    }
    let outs = py.allow_threads(|| f.call(&x)).py()?;
    wrap_list(py, outs)
}

/// `a` unchanged, treated as a constant by gradient transforms.
///
/// Args:
///     a (array): Input array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, *, stream = None))]
fn stop_gradient(a: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let out = crate::device::on_stream(stream, || ferrox::ops::stop_gradient(&a))?;
    Ok(PyArray::wrap(out.py()?))
}

/// Adds the transform entry points to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_vjp, m)?)?;
    m.add_function(wrap_pyfunction!(_jvp, m)?)?;
    m.add_function(wrap_pyfunction!(_value_and_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_vmap, m)?)?;
    m.add_function(wrap_pyfunction!(_custom_call, m)?)?;
    m.add_function(wrap_pyfunction!(stop_gradient, m)?)?;
    Ok(())
}
