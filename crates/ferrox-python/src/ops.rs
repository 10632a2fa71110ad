//! Module-level ops (`ferrox.add`, `ferrox.sum`, ...). Arguments accept
//! arrays or anything `ferrox.array` accepts; every op takes `stream=`.

use crate::args::{self, dtype_or};
use crate::array::PyArray;
use crate::convert::{operand, operands, py_scalar, to_array};
use crate::device::on_stream;
use crate::dtype::PyDtype;
use crate::errors::IntoPyResult;
use ferrox::{ops, Array, Dtype};
use ferrox_python_macros::guarded;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

fn wrap(r: PyResult<ferrox::Result<Array>>) -> PyResult<PyArray> {
    Ok(PyArray::wrap(r?.py()?))
}

macro_rules! unary_fns {
    ($($name:ident),*) => {$(
        #[doc = concat!("Elementwise ", stringify!($name), ".")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (a, /, *, stream = None))]
        fn $name(a: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
            let a = to_array(a, None)?;
            wrap(on_stream(stream, || ops::$name(&a)))
        }
    )*};
}

unary_fns!(negative, abs, exp, log, sqrt, sin, cos, tanh, sigmoid);

macro_rules! binary_fns {
    ($($name:ident),*) => {$(
        #[doc = concat!("Elementwise ", stringify!($name), " with broadcasting.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (a, b, /, *, stream = None))]
        fn $name(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
            let (a, b) = operands(a, b)?;
            wrap(on_stream(stream, || ops::$name(&a, &b)))
        }
    )*};
}

binary_fns!(
    add,
    subtract,
    multiply,
    divide,
    power,
    maximum,
    minimum,
    equal,
    not_equal,
    less,
    less_equal,
    greater,
    greater_equal,
    matmul
);

macro_rules! reduce_fns {
    ($($name:ident),*) => {$(
        #[doc = concat!("Reduction ", stringify!($name), " over `axis` (all axes when None).")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
        fn $name(
            a: &Bound<'_, PyAny>,
            axis: Option<&Bound<'_, PyAny>>,
            keepdims: bool,
            stream: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyArray> {
            let a = to_array(a, None)?;
            let axes = args::axes(stringify!($name), axis)?;
            wrap(on_stream(stream, || ops::$name(&a, axes.as_deref(), keepdims)))
        }
    )*};
}

reduce_fns!(sum, mean, max, min, prod);

macro_rules! arg_reduce_fns {
    ($($name:ident),*) => {$(
        #[doc = concat!("Reduction ", stringify!($name), " along `axis` (of the flattened array when None); uint32.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
        fn $name(a: &Bound<'_, PyAny>, axis: Option<isize>, keepdims: bool, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
            let a = to_array(a, None)?;
            wrap(on_stream(stream, || ops::$name(&a, axis, keepdims)))
        }
    )*};
}

arg_reduce_fns!(argmax, argmin);

/// Elementwise choice: `x` where `condition` is true, else `y`.
#[guarded]
#[pyfunction(name = "where")]
#[pyo3(signature = (condition, x, y, /, *, stream = None))]
fn where_(
    condition: &Bound<'_, PyAny>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let c = to_array(condition, None)?;
    let (x, y) = operands(x, y)?;
    wrap(on_stream(stream, || ops::where_(&c, &x, &y)))
}

/// Converts `a` to `dtype`.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, dtype, *, stream = None))]
fn astype(a: &Bound<'_, PyAny>, dtype: PyDtype, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::astype(&a, dtype.0)))
}

/// An array of zeros.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape, dtype = None, *, stream = None))]
fn zeros(
    shape: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (shape, dtype) = (args::shape("zeros", shape)?, dtype_or(dtype, Dtype::F32)?);
    wrap(on_stream(stream, || ops::zeros(&shape, dtype)))
}

/// An array of ones.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape, dtype = None, *, stream = None))]
fn ones(
    shape: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (shape, dtype) = (args::shape("ones", shape)?, dtype_or(dtype, Dtype::F32)?);
    wrap(on_stream(stream, || ops::ones(&shape, dtype)))
}

/// An array of `shape` filled with `vals` (broadcast). As in MLX, a Python
/// scalar is weakly typed against `dtype` (an int takes it, a float only
/// when it is a float dtype), NumPy data and lists are converted to it, and
/// an array given as `vals` keeps its own dtype.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape, vals, dtype = None, *, stream = None))]
fn full(
    shape: &Bound<'_, PyAny>,
    vals: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let shape = args::shape("full", shape)?;
    let vals = match args::dtype(dtype)? {
        Some(d) if vals.downcast::<PyArray>().is_err() => operand(vals, d)?,
        _ => to_array(vals, None)?,
    };
    wrap(on_stream(stream, || ops::full(&shape, &vals, None)))
}

/// Zeros shaped and typed like `a`.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, *, stream = None))]
fn zeros_like(a: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::zeros_like(&a)))
}

/// Ones shaped and typed like `a`.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, *, stream = None))]
fn ones_like(a: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::ones_like(&a)))
}

/// `arange(stop)`, `arange(start, stop)` or `arange(start, stop, step)`;
/// int32 for integer arguments, float32 if any is a float.
#[guarded]
#[pyfunction]
#[pyo3(signature = (*args, dtype = None, stream = None))]
fn arange(
    args: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let vals = args
        .iter()
        .map(|a| py_scalar(&a)?.ok_or_else(|| PyTypeError::new_err("[arange] start, stop and step must be numbers")))
        .collect::<PyResult<Vec<_>>>()?;
    let nums: Vec<f64> = vals.iter().map(|s| s.as_f64()).collect();
    let (start, stop, step) = match nums.as_slice() {
        [stop] => (0.0, *stop, 1.0),
        [start, stop] => (*start, *stop, 1.0),
        [start, stop, step] => (*start, *stop, *step),
        _ => return Err(PyTypeError::new_err("[arange] takes 1 to 3 positional arguments")),
    };
    let any_float = vals.iter().any(|s| matches!(s, ferrox::Scalar::Float(_)));
    let dtype = dtype_or(dtype, if any_float { Dtype::F32 } else { Dtype::I32 })?;
    wrap(on_stream(stream, || ops::arange(start, stop, step, dtype)))
}

/// `num` evenly spaced values over `[start, stop]` (`stop` left out
/// unless `endpoint`).
#[guarded]
#[pyfunction]
#[pyo3(signature = (start, stop, num = 50, endpoint = true, dtype = None, *, stream = None))]
fn linspace(
    start: f64,
    stop: f64,
    num: i64,
    endpoint: bool,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    if num < 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "[linspace] number of samples, {num}, must be non-negative."
        )));
    }
    let dtype = dtype_or(dtype, Dtype::F32)?;
    wrap(on_stream(stream, || ops::linspace(start, stop, num as usize, endpoint, dtype)))
}

/// An `n × m` matrix with ones on diagonal `k`.
#[guarded]
#[pyfunction]
#[pyo3(signature = (n, m = None, k = 0, dtype = None, *, stream = None))]
fn eye(
    n: usize,
    m: Option<usize>,
    k: isize,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let dtype = dtype_or(dtype, Dtype::F32)?;
    wrap(on_stream(stream, || ops::eye(n, m, k, dtype)))
}

/// The `n × n` identity matrix.
#[guarded]
#[pyfunction]
#[pyo3(signature = (n, dtype = None, *, stream = None))]
fn identity(n: usize, dtype: Option<&Bound<'_, PyAny>>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let dtype = dtype_or(dtype, Dtype::F32)?;
    wrap(on_stream(stream, || ops::identity(n, dtype)))
}

/// `a` with a new shape (an int or a sequence; one entry may be -1).
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, shape, *, stream = None))]
fn reshape(a: &Bound<'_, PyAny>, shape: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let shape = args::signed_shape("reshape", shape)?;
    wrap(on_stream(stream, || ops::reshape(&a, &shape)))
}

/// Permutes the axes (reverses them by default).
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axes = None, *, stream = None))]
fn transpose(
    a: &Bound<'_, PyAny>,
    axes: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let axes = args::axes("transpose", axes)?;
    wrap(on_stream(stream, || ops::transpose(&a, axes.as_deref())))
}

/// Swaps two axes.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axis1, axis2, *, stream = None))]
fn swapaxes(a: &Bound<'_, PyAny>, axis1: isize, axis2: isize, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::swapaxes(&a, axis1, axis2)))
}

/// `a` broadcast to `shape`.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, shape, *, stream = None))]
fn broadcast_to(
    a: &Bound<'_, PyAny>,
    shape: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let shape = args::shape("broadcast_to", shape)?;
    wrap(on_stream(stream, || ops::broadcast_to(&a, &shape)))
}

/// Inserts extent-1 axes.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axis, *, stream = None))]
fn expand_dims(a: &Bound<'_, PyAny>, axis: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let axes = args::axes("expand_dims", Some(axis))?.unwrap_or_default();
    wrap(on_stream(stream, || ops::expand_dims(&a, &axes)))
}

/// Removes extent-1 axes (the given ones, or all).
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, *, stream = None))]
fn squeeze(
    a: &Bound<'_, PyAny>,
    axis: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let axes = args::axes("squeeze", axis)?;
    wrap(on_stream(stream, || ops::squeeze(&a, axes.as_deref())))
}

/// Merges axes `start_axis..=end_axis` into one.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, start_axis = 0, end_axis = -1, *, stream = None))]
fn flatten(
    a: &Bound<'_, PyAny>,
    start_axis: isize,
    end_axis: isize,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::flatten(&a, start_axis, end_axis)))
}

/// Joins arrays along an existing axis.
#[guarded]
#[pyfunction]
#[pyo3(signature = (arrays, /, axis = 0, *, stream = None))]
fn concatenate(arrays: &Bound<'_, PyAny>, axis: isize, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let arrays = args::array_list("concatenate", arrays)?;
    wrap(on_stream(stream, || ops::concatenate(&arrays, axis)))
}

/// Joins arrays of one shape along a new axis.
#[guarded]
#[pyfunction]
#[pyo3(signature = (arrays, /, axis = 0, *, stream = None))]
fn stack(arrays: &Bound<'_, PyAny>, axis: isize, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let arrays = args::array_list("stack", arrays)?;
    wrap(on_stream(stream, || ops::stack(&arrays, axis)))
}

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
#[guarded]
#[pyfunction]
#[pyo3(signature = (*args))]
fn eval(py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
    let mut arrays = Vec::new();
    collect_arrays(args.as_any(), &mut arrays)?;
    py.allow_threads(|| ferrox::eval(&arrays)).py()
}

/// Bytes held by live array buffers.
#[guarded]
#[pyfunction]
fn get_active_memory() -> usize {
    ferrox::get_active_memory()
}

/// The most bytes held at once since start or the last reset.
#[guarded]
#[pyfunction]
fn get_peak_memory() -> usize {
    ferrox::get_peak_memory()
}

/// Resets the peak memory to the current active memory.
#[guarded]
#[pyfunction]
fn reset_peak_memory() -> PyResult<()> {
    ferrox::reset_peak_memory();
    Ok(())
}

/// Bytes held by freed buffers kept for reuse.
#[guarded]
#[pyfunction]
fn get_cache_memory() -> usize {
    ferrox::get_cache_memory()
}

/// Limits the bytes kept for reuse; returns the previous limit.
#[guarded]
#[pyfunction]
fn set_cache_limit(limit: usize) -> usize {
    ferrox::set_cache_limit(limit)
}

/// Limits the bytes of live buffers per device; an evaluation that would
/// exceed it raises. Returns the previous limit.
#[guarded]
#[pyfunction]
fn set_memory_limit(limit: usize) -> usize {
    ferrox::set_memory_limit(limit)
}

/// Frees every buffer kept for reuse.
#[guarded]
#[pyfunction]
fn clear_cache() -> PyResult<()> {
    ferrox::clear_cache();
    Ok(())
}

/// Adds the ops to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    macro_rules! add {
        ($($f:ident),* $(,)?) => {$( m.add_function(wrap_pyfunction!($f, m)?)?; )*};
    }
    add!(
        negative,
        abs,
        exp,
        log,
        sqrt,
        sin,
        cos,
        tanh,
        sigmoid,
        add,
        subtract,
        multiply,
        divide,
        power,
        maximum,
        minimum,
        equal,
        not_equal,
        less,
        less_equal,
        greater,
        greater_equal,
        matmul,
        sum,
        mean,
        max,
        min,
        prod,
        argmax,
        argmin,
        where_,
        astype,
        zeros,
        ones,
        full,
        zeros_like,
        ones_like,
        arange,
        linspace,
        eye,
        identity,
        reshape,
        transpose,
        swapaxes,
        broadcast_to,
        expand_dims,
        squeeze,
        flatten,
        concatenate,
        stack,
        eval,
        get_active_memory,
        get_peak_memory,
        reset_peak_memory,
        get_cache_memory,
        set_cache_limit,
        set_memory_limit,
        clear_cache,
    );
    Ok(())
}
