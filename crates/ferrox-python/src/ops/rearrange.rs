//! Rearranging ops: `moveaxis`, `permute_dims`, `atleast_*d`, `tile`,
//! `repeat`, `roll`, `pad`, `split`, `unflatten`, `flip`, `unstack`,
//! `broadcast_arrays`, `broadcast_shapes`, `meshgrid`, `contiguous`,
//! `concat`, the triangular ops and the window functions.

use super::wrap;
use crate::args;
use crate::array::PyArray;
use crate::convert::{operand, to_array};
use crate::device::on_stream;
use crate::errors::IntoPyResult;
use ferrox::ops::{self, PadMode, SplitSpec};
use ferrox::Array;
use ferrox_python_macros::guarded;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// Python arrays for a list of results.
fn array_list<'py>(py: Python<'py>, arrays: Vec<Array>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, arrays.into_iter().map(PyArray::wrap))
}

/// Python arrays for a tuple of results.
fn array_tuple<'py>(py: Python<'py>, arrays: Vec<Array>) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, arrays.into_iter().map(PyArray::wrap))
}

/// `a` with axis `source` moved to position `destination`.
///
/// Args:
///     a (array): Input array.
///     source (int): Axis to move.
///     destination (int): Its new position.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, source, destination, *, stream = None))]
fn moveaxis(
    a: &Bound<'_, PyAny>,
    source: isize,
    destination: isize,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::moveaxis(&a, source, destination)))
}

/// `a` with its axes permuted (reversed when `axes` is None).
///
/// Args:
///     a (array): Input array.
///     axes (int or list(int), optional): The axes.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axes = None, *, stream = None))]
fn permute_dims(
    a: &Bound<'_, PyAny>,
    axes: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let axes = args::axes("permute_dims", axes)?;
    wrap(on_stream(stream, || ops::permute_dims(&a, axes.as_deref())))
}

/// One array for one argument, a list for several (as MLX's `atleast_*d`).
fn atleast(
    py: Python<'_>,
    arys: &Bound<'_, PyTuple>,
    n: usize,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyObject> {
    let arrays = arys.iter().map(|a| to_array(&a, None)).collect::<PyResult<Vec<_>>>()?;
    let outs =
        on_stream(stream, || arrays.iter().map(|a| ops::atleast_nd(a, n)).collect::<ferrox::Result<Vec<_>>>())?.py()?;
    if outs.len() == 1 {
        let one = outs.into_iter().next().expect("one output");
        return Ok(PyArray::wrap(one).into_pyobject(py)?.into_any().unbind());
    }
    Ok(array_list(py, outs)?.into_any().unbind())
}

/// Each array with at least one dimension.
///
/// Args:
///     *arys (array): Input arrays.
///
/// Returns:
///     Any: The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (*arys, stream = None))]
fn atleast_1d(py: Python<'_>, arys: &Bound<'_, PyTuple>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyObject> {
    atleast(py, arys, 1, stream)
}

/// Each array with at least two dimensions.
///
/// Args:
///     *arys (array): Input arrays.
///
/// Returns:
///     Any: The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (*arys, stream = None))]
fn atleast_2d(py: Python<'_>, arys: &Bound<'_, PyTuple>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyObject> {
    atleast(py, arys, 2, stream)
}

/// Each array with at least three dimensions.
///
/// Args:
///     *arys (array): Input arrays.
///
/// Returns:
///     Any: The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (*arys, stream = None))]
fn atleast_3d(py: Python<'_>, arys: &Bound<'_, PyTuple>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyObject> {
    atleast(py, arys, 3, stream)
}

/// `a` repeated `reps` times along each axis.
///
/// Args:
///     a (array): Input array.
///     reps (int or list(int)): Repetitions along each axis.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, reps, /, *, stream = None))]
fn tile(a: &Bound<'_, PyAny>, reps: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let reps = args::ints("tile", "reps", reps)?;
    wrap(on_stream(stream, || ops::tile(&a, &reps)))
}

/// Each element repeated `repeats` times along `axis` (of the flattened
/// array when None).
///
/// Args:
///     array (array): Input array.
///     repeats (int): Number of repetitions of each element.
///     axis (int, optional): Axis to operate along; None means the flattened array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (array, repeats, axis = None, *, stream = None))]
fn repeat(
    array: &Bound<'_, PyAny>,
    repeats: i64,
    axis: Option<isize>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(array, None)?;
    wrap(on_stream(stream, || ops::repeat(&a, repeats, axis)))
}

/// Elements shifted along `axis` with wrap-around (the flattened array
/// when `axis` is None).
///
/// Args:
///     a (array): Input array.
///     shift (int or list(int)): Shift along each of ``axis``.
///     axis (int or list(int), optional): Axis or axes to operate over; None means all axes (or the flattened array).
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, shift, axis = None, *, stream = None))]
fn roll(
    a: &Bound<'_, PyAny>,
    shift: &Bound<'_, PyAny>,
    axis: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let shift = args::ints("roll", "shift", shift)?;
    let axes = args::axes("roll", axis)?;
    wrap(on_stream(stream, || ops::roll(&a, &shift, axes.as_deref())))
}

/// Reads `pad_width`: an int, a pair, or one pair per axis (lists or
/// tuples, read with a length bound).
fn pad_widths(obj: &Bound<'_, PyAny>, ndim: usize) -> PyResult<Vec<(i64, i64)>> {
    if let Ok(v) = obj.extract::<i64>() {
        return Ok(vec![(v, v); ndim]);
    }
    let bad = || PyTypeError::new_err("[pad] pad_width must be an int, a (before, after) pair or a list of pairs.");
    let items = args::sequence_items("pad", "pad_width", obj)?.ok_or_else(bad)?;
    let pair = |o: &Bound<'_, PyAny>| -> PyResult<(i64, i64)> {
        match args::ints("pad", "pad_width", o)?.as_slice() {
            [x] => Ok((*x, *x)),
            [x, y] => Ok((*x, *y)),
            _ => Err(PyValueError::new_err("[pad] Each entry of pad_width must be an int or a (before, after) pair.")),
        }
    };
    if items.iter().all(|i| i.extract::<i64>().is_ok()) {
        let p = pair(obj)?;
        return Ok(vec![p; ndim]);
    }
    let pairs = items.iter().map(pair).collect::<PyResult<Vec<_>>>()?;
    match pairs.as_slice() {
        // One pair for every axis, as MLX broadcasts it.
        [p] => Ok(vec![*p; ndim]),
        _ => Ok(pairs),
    }
}

/// `a` padded with `pad_width` elements per axis, filled as `mode` says.
///
/// Args:
///     a (array): Input array.
///     pad_width (int or list(int) or list(list(int))): Padding: one int, one (before, after) pair, or one pair per axis.
///     mode (str, optional): ``'constant'`` or ``'edge'``.
///     constant_values (array, optional): Fill value of ``mode='constant'``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, pad_width, mode = "constant", constant_values = None, *, stream = None))]
fn pad(
    a: &Bound<'_, PyAny>,
    pad_width: &Bound<'_, PyAny>,
    mode: &str,
    constant_values: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let widths = pad_widths(pad_width, a.ndim())?;
    let mode = PadMode::from_name(mode).py()?;
    let value = match constant_values {
        Some(v) if !v.is_none() => operand(v, a.dtype())?,
        _ => ops::zeros(&[], a.dtype()).py()?,
    };
    wrap(on_stream(stream, || ops::pad(&a, &widths, mode, &value)))
}

/// `a` cut into equal parts (an int) or at indices (a sequence) along `axis`.
///
/// Args:
///     a (array): Input array.
///     indices_or_sections (int or list(int)): Number of equal sections, or indices where to split.
///     axis (int, optional): Axis to operate along.
///
/// Returns:
///     list(Any): The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, indices_or_sections, axis = 0, *, stream = None))]
fn split<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    indices_or_sections: &Bound<'py, PyAny>,
    axis: isize,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let a = to_array(a, None)?;
    let spec = match indices_or_sections.extract::<i64>() {
        Ok(k) => SplitSpec::Sections(k),
        Err(_) => SplitSpec::Indices(args::ints("split", "indices", indices_or_sections)?),
    };
    array_list(py, on_stream(stream, || ops::split(&a, &spec, axis))?.py()?)
}

/// Axis `axis` replaced by the axes `shape`.
///
/// Args:
///     a (array): Input array.
///     axis (int): Axis to operate along.
///     shape (int or list(int)): Shape the axis becomes.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axis, shape, *, stream = None))]
fn unflatten(
    a: &Bound<'_, PyAny>,
    axis: isize,
    shape: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let shape = args::signed_shape("unflatten", shape)?;
    wrap(on_stream(stream, || ops::unflatten(&a, axis, &shape)))
}

/// `a` reversed along `axis` (every axis when None).
///
/// Args:
///     a (array): Input array.
///     axis (int or list(int), optional): Axis or axes to operate over; None means all axes (or the flattened array).
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, *, stream = None))]
fn flip(a: &Bound<'_, PyAny>, axis: Option<&Bound<'_, PyAny>>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let axes = args::axes("flip", axis)?;
    wrap(on_stream(stream, || ops::flip(&a, axes.as_deref())))
}

/// The slices of `x` along `axis`, as a tuple.
///
/// Args:
///     x (array): Input array.
///     axis (int, optional): Axis to operate along.
///
/// Returns:
///     tuple(Any, ...): The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, /, *, axis = 0, stream = None))]
fn unstack<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    axis: isize,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let x = to_array(x, None)?;
    array_tuple(py, on_stream(stream, || ops::unstack(&x, axis))?.py()?)
}

/// The arrays broadcast against each other (a list).
///
/// Args:
///     *arrays (array): Input arrays.
///
/// Returns:
///     list(Any): The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (*arrays, stream = None))]
fn broadcast_arrays<'py>(
    py: Python<'py>,
    arrays: &Bound<'py, PyTuple>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let arrays = arrays.iter().map(|a| to_array(&a, None)).collect::<PyResult<Vec<_>>>()?;
    array_list(py, on_stream(stream, || ops::broadcast_arrays(&arrays))?.py()?)
}

/// The shape the given shapes broadcast to.
///
/// Args:
///     *shapes (int or list(int)): Shapes to broadcast together.
///
/// Returns:
///     tuple(Any, ...): The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (*shapes))]
fn broadcast_shapes<'py>(py: Python<'py>, shapes: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyTuple>> {
    if shapes.is_empty() {
        return Err(PyValueError::new_err("[broadcast_shapes] No input shapes provided."));
    }
    let mut out: Vec<usize> = Vec::new();
    for s in shapes.iter() {
        let s = args::shape("broadcast_shapes", &s)?;
        out = ferrox::shape::broadcast_shapes(&out, &s).ok_or_else(|| {
            PyValueError::new_err(format!(
                "[broadcast_shapes] Shapes {} and {} cannot be broadcast.",
                ferrox::error::fmt_shape(&out),
                ferrox::error::fmt_shape(&s)
            ))
        })?;
    }
    PyTuple::new(py, out)
}

/// Coordinate grids from 1-D arrays (a tuple).
///
/// Args:
///     *arrays (array): Input arrays.
///     sparse (bool, optional): Return sparse grids (singleton axes) instead of full ones.
///     indexing (str, optional): ``'xy'`` (Cartesian) or ``'ij'`` (matrix).
///
/// Returns:
///     tuple(Any, ...): The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (*arrays, sparse = false, indexing = "xy", stream = None))]
fn meshgrid<'py>(
    py: Python<'py>,
    arrays: &Bound<'py, PyTuple>,
    sparse: Option<bool>,
    indexing: Option<&str>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let arrays = arrays.iter().map(|a| to_array(&a, None)).collect::<PyResult<Vec<_>>>()?;
    let (sparse, indexing) = (sparse.unwrap_or(false), indexing.unwrap_or("xy"));
    array_tuple(py, on_stream(stream, || ops::meshgrid(&arrays, sparse, indexing))?.py()?)
}

/// `a` with a dense row-major layout (column-major too when allowed).
///
/// Args:
///     a (array): Input array.
///     allow_col_major (bool, optional): Accept a column-major layout as contiguous.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, allow_col_major = false, *, stream = None))]
fn contiguous(a: &Bound<'_, PyAny>, allow_col_major: bool, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::contiguous(&a, allow_col_major)))
}

/// Joins arrays along an existing axis (the flattened arrays when `axis`
/// is None); the array API's name for `concatenate`.
///
/// Args:
///     arrays (list(array)): Input arrays.
///     axis (int, optional): Axis to operate along; None means the flattened array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (arrays, axis = 0, *, stream = None))]
fn concat(arrays: &Bound<'_, PyAny>, axis: Option<isize>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let arrays = args::array_list("concat", arrays)?;
    wrap(on_stream(stream, || match axis {
        Some(ax) => ops::concatenate(&arrays, ax),
        None => {
            let flat = arrays.iter().map(|a| ops::reshape(a, &[-1])).collect::<ferrox::Result<Vec<_>>>()?;
            ops::concatenate(&flat, 0)
        }
    }))
}

/// An `n × m` matrix of ones at and below diagonal `k`, zeros above.
///
/// Args:
///     n (int): Number of rows.
///     m (int, optional): Number of columns.
///     k (int, optional): Diagonal offset.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (n, m = None, k = 0, dtype = None, *, stream = None))]
fn tri(
    n: usize,
    m: Option<usize>,
    k: i64,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let dtype = args::dtype_or(dtype, ferrox::Dtype::F32)?;
    wrap(on_stream(stream, || ops::tri(n, m, k, dtype)))
}

/// `x` with the elements above diagonal `k` of its last two axes zeroed.
///
/// Args:
///     x (array): Input array.
///     k (int, optional): Diagonal offset.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, k = 0, *, stream = None))]
fn tril(x: &Bound<'_, PyAny>, k: i64, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let x = to_array(x, None)?;
    wrap(on_stream(stream, || ops::tril(&x, k)))
}

/// `x` with the elements below diagonal `k` of its last two axes zeroed.
///
/// Args:
///     x (array): Input array.
///     k (int, optional): Diagonal offset.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, k = 0, *, stream = None))]
fn triu(x: &Bound<'_, PyAny>, k: i64, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let x = to_array(x, None)?;
    wrap(on_stream(stream, || ops::triu(&x, k)))
}

macro_rules! window_fns {
    ($($name:ident: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    M (int): Number of points.\n\nReturns:\n    array: The window, float32 of shape ``(M,)``.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (M, *, stream = None))]
        #[allow(non_snake_case)]
        fn $name(M: i64, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
            wrap(on_stream(stream, || ops::$name(M)))
        }
    )*};
}

window_fns!(
    hamming: "The Hamming window of `M` points (float32).",
    hanning: "The Hann window of `M` points (float32).",
    bartlett: "The Bartlett (triangular) window of `M` points (float32).",
    blackman: "The Blackman window of `M` points (float32).",
);

/// An array of `a`'s shape filled with `vals`, in `dtype` (default: `a`'s).
///
/// Args:
///     a (array): Input array.
///     vals (array): Fill value.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, vals, dtype = None, *, stream = None))]
fn full_like(
    a: &Bound<'_, PyAny>,
    vals: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let dtype = args::dtype_or(dtype, a.dtype())?;
    let vals = if vals.downcast::<PyArray>().is_ok() { to_array(vals, None)? } else { operand(vals, dtype)? };
    wrap(on_stream(stream, || ops::full_like(&a, &vals, dtype)))
}

/// `a` as an array (MLX's `asarray`: `array(a, dtype)`; an array of the
/// requested dtype is returned as is).
///
/// Args:
///     a (array): Input array.
///     dtype (Dtype, optional): Data type of the result.
///     copy (bool, optional): Whether to copy.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, dtype = None, *, copy = None))]
fn asarray(a: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>, copy: Option<bool>) -> PyResult<PyArray> {
    let dtype = args::dtype(dtype)?;
    if copy != Some(false) {
        if a.is_none() {
            return Err(PyTypeError::new_err("[asarray] Cannot convert None to an array."));
        }
        return Ok(PyArray::wrap(to_array(a, dtype)?));
    }
    // copy=False, NumPy 2's contract: never copy; raise where one is needed.
    let x = if let Ok(x) = a.downcast::<PyArray>() {
        x.borrow().inner.clone()
    } else if a.hasattr("__dlpack__")? {
        crate::dlpack::import_without_copy(a)
            .map_err(|e| PyValueError::new_err(format!("[asarray] Unable to avoid a copy with copy=False: {e}")))?
    } else {
        return Err(PyValueError::new_err(
            "[asarray] Unable to avoid a copy with copy=False: the input is not an array.",
        ));
    };
    if dtype.is_none_or(|d| d == x.dtype()) {
        return Ok(PyArray::wrap(x));
    }
    Err(PyValueError::new_err("[asarray] A copy is needed to change the dtype but copy=False."))
}

/// A view of `a`'s elements (in row-major order) with `shape`, `strides`
/// (in elements; default row-major) and `offset`; views that reach outside
/// the array raise ValueError.
///
/// Args:
///     a (array): Input array.
///     shape (int or list(int), optional): Shape of the view (``a``'s when None).
///     strides (int or list(int), optional): Strides in elements (row-major when None).
///     offset (int, optional): Offset of the first element.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, shape = None, strides = None, offset = 0, *, stream = None))]
fn as_strided(
    a: &Bound<'_, PyAny>,
    shape: Option<&Bound<'_, PyAny>>,
    strides: Option<&Bound<'_, PyAny>>,
    offset: usize,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let shape = shape.map(|s| args::shape("as_strided", s)).transpose()?;
    let strides: Option<Vec<isize>> = strides
        .map(|s| args::ints("as_strided", "strides", s))
        .transpose()?
        .map(|v| v.into_iter().map(|x| x as isize).collect());
    wrap(on_stream(stream, || ops::as_strided(&a, shape.as_deref(), strides.as_deref(), offset)))
}

/// `inputs` (an array or a sequence of them), returned so that evaluating
/// them first evaluates `dependencies`.
///
/// Args:
///     inputs (list(int)): Arrays to return.
///     dependencies (list(int)): Arrays that must be evaluated first.
///
/// Returns:
///     Any: The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (inputs, dependencies))]
fn depends(py: Python<'_>, inputs: &Bound<'_, PyAny>, dependencies: &Bound<'_, PyAny>) -> PyResult<PyObject> {
    let list = |obj: &Bound<'_, PyAny>| -> PyResult<(Vec<Array>, bool)> {
        if obj.downcast::<PyArray>().is_ok() {
            Ok((vec![to_array(obj, None)?], true))
        } else {
            Ok((args::array_list("depends", obj)?, false))
        }
    };
    let (ins, single) = list(inputs)?;
    let (deps, _) = list(dependencies)?;
    let outs = ops::depends(&ins, &deps).py()?;
    if single {
        return Ok(PyArray::wrap(outs.into_iter().next().expect("one output")).into_pyobject(py)?.into_any().unbind());
    }
    let items: Vec<PyArray> = outs.into_iter().map(PyArray::wrap).collect();
    Ok(PyList::new(py, items)?.into_any().unbind())
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(
        m,
        as_strided,
        depends,
        moveaxis,
        permute_dims,
        atleast_1d,
        atleast_2d,
        atleast_3d,
        tile,
        repeat,
        roll,
        pad,
        split,
        unflatten,
        flip,
        unstack,
        broadcast_arrays,
        broadcast_shapes,
        meshgrid,
        contiguous,
        concat,
        tri,
        tril,
        triu,
        hamming,
        hanning,
        bartlett,
        blackman,
        full_like,
        asarray
    );
    Ok(())
}
