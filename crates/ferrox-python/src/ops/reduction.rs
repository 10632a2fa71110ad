//! Reductions: `sum`, `mean`, `max`, `all`, `var`, `logsumexp`, `argmax`, ...

use super::wrap;
use crate::args;
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::on_stream;
use ferrox::ops;
use ferrox_python_macros::guarded;
use pyo3::prelude::*;

macro_rules! reduce_fns {
    ($($name:ident: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    a (array): Input array.\n    axis (int or list(int), optional): Axis or axes to reduce over; all axes when None.\n    keepdims (bool, optional): Keep the reduced axes as singleton dimensions. Default: ``False``.\n\nReturns:\n    array: The array with the axes reduced.")]
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

reduce_fns!(
    sum: "Sum over `axis` (all axes when None).",
    mean: "Mean over `axis` (all axes when None); integers average in float32.",
    max: "Maximum over `axis` (all axes when None).",
    min: "Minimum over `axis` (all axes when None).",
    prod: "Product over `axis` (all axes when None).",
    all: "Whether every element over `axis` is nonzero (bool).",
    any: "Whether any element over `axis` is nonzero (bool).",
    logsumexp: "log(sum(exp(a))) over `axis`, computed without overflow.",
);

/// The number of nonzero elements over `axis` (all axes when None), as int32.
///
/// Args:
///     a (array): Input array.
///     axis (int or list(int), optional): Axis or axes to operate over; None means all axes (or the flattened array).
///     keepdims (bool, optional): Keep the reduced axes as singleton dimensions. Default: ``False``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, *, axis = None, keepdims = false, stream = None))]
fn count_nonzero(
    a: &Bound<'_, PyAny>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let axes = args::axes("count_nonzero", axis)?;
    wrap(on_stream(stream, || ops::count_nonzero(&a, axes.as_deref(), keepdims)))
}

macro_rules! moment_fns {
    ($($fname:ident => $name:ident, $pyname:literal: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    a (array): Input array.\n    axis (int or list(int), optional): Axis or axes to reduce over; all axes when None.\n    keepdims (bool, optional): Keep the reduced axes as singleton dimensions. Default: ``False``.\n    ddof (int, optional): Delta degrees of freedom: the divisor is ``N - ddof``. Default: ``0``.\n\nReturns:\n    array: The array with the axes reduced.")]
        #[guarded]
        #[pyfunction(name = $pyname)]
        #[pyo3(signature = (a, /, axis = None, keepdims = false, ddof = 0, *, stream = None))]
        fn $fname(
            a: &Bound<'_, PyAny>,
            axis: Option<&Bound<'_, PyAny>>,
            keepdims: bool,
            ddof: i64,
            stream: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyArray> {
            let a = to_array(a, None)?;
            let axes = args::axes(stringify!($name), axis)?;
            wrap(on_stream(stream, || ops::$name(&a, axes.as_deref(), keepdims, ddof)))
        }
    )*};
}

moment_fns!(
    var_fn => var, "var": "Variance over `axis`, dividing by N - ddof.",
    std_fn => std, "std": "Standard deviation over `axis`, dividing by N - ddof.",
);

macro_rules! arg_reduce_fns {
    ($($name:ident: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    a (array): Input array.\n    axis (int, optional): Axis to reduce along; the flattened array when None.\n    keepdims (bool, optional): Keep the reduced axes as singleton dimensions. Default: ``False``.\n\nReturns:\n    array: The uint32 indices.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
        fn $name(a: &Bound<'_, PyAny>, axis: Option<isize>, keepdims: bool, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
            let a = to_array(a, None)?;
            wrap(on_stream(stream, || ops::$name(&a, axis, keepdims)))
        }
    )*};
}

arg_reduce_fns!(
    argmax: "Index of the maximum along `axis` (of the flattened array when None); uint32.",
    argmin: "Index of the minimum along `axis` (of the flattened array when None); uint32.",
);

/// `exp(a) / sum(exp(a))` over `axis` (all axes when None), computed
/// without overflow; `precise` computes half floats in float32.
///
/// Args:
///     a (array): Input array.
///     axis (int or list(int), optional): Axis or axes to operate over; None means all axes (or the flattened array).
///     precise (bool, optional): Compute half floats in float32.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, *, precise = false, stream = None))]
fn softmax(
    a: &Bound<'_, PyAny>,
    axis: Option<&Bound<'_, PyAny>>,
    precise: bool,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let axes = args::axes("softmax", axis)?;
    wrap(on_stream(stream, || ops::softmax(&a, axes.as_deref(), precise)))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(
        m,
        sum,
        mean,
        max,
        min,
        prod,
        all,
        any,
        count_nonzero,
        logsumexp,
        var_fn,
        std_fn,
        argmax,
        argmin,
        softmax
    );
    Ok(())
}
