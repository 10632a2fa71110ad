//! Cumulative ops: `cumsum`, `cumprod`, `cummax`, `cummin`, `logcumsumexp`.

use super::wrap;
use crate::args;
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::on_stream;
use ferrox::ops;
use ferrox_python_macros::guarded;
use pyo3::prelude::*;

/// The cumulative ops MLX gives a `dtype=` argument (the input is cast to
/// it first).
macro_rules! scan_fns_with_dtype {
    ($($name:ident: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    a (array): Input array.\n    axis (int, optional): Axis to scan along; the flattened array when None.\n    reverse (bool, optional): Scan from the end of the axis. Default: ``False``.\n    inclusive (bool, optional): Include element ``i`` in output ``i``. Default: ``True``.\n    dtype (Dtype, optional): Dtype to compute in and return; from ``a`` when None.\n\nReturns:\n    array: The cumulative results, of ``a``'s shape (flattened when ``axis`` is None).")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (a, /, axis = None, *, reverse = false, inclusive = true, dtype = None, stream = None))]
        fn $name(
            a: &Bound<'_, PyAny>,
            axis: Option<isize>,
            reverse: bool,
            inclusive: bool,
            dtype: Option<&Bound<'_, PyAny>>,
            stream: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyArray> {
            let a = to_array(a, None)?;
            let dtype = args::dtype(dtype)?;
            wrap(on_stream(stream, || {
                let a = match dtype {
                    Some(d) => ops::astype(&a, d)?,
                    None => a,
                };
                ops::$name(&a, axis, reverse, inclusive)
            }))
        }
    )*};
}

scan_fns_with_dtype!(
    cumsum: "Cumulative sum along `axis` (of the flattened array when None), from the end when `reverse`; \
             `inclusive=False` excludes element i from output i (the first output is 0). Bool counts in \
             int32; `dtype` casts the input first.",
    cumprod: "Cumulative product along `axis` (of the flattened array when None), from the end when \
              `reverse`; `inclusive=False` excludes element i from output i (the first output is 1). \
              `dtype` casts the input first.",
);

macro_rules! scan_fns {
    ($($name:ident: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    a (array): Input array.\n    axis (int, optional): Axis to scan along; the flattened array when None.\n    reverse (bool, optional): Scan from the end of the axis. Default: ``False``.\n    inclusive (bool, optional): Include element ``i`` in output ``i``. Default: ``True``.\n\nReturns:\n    array: The cumulative results, of ``a``'s shape (flattened when ``axis`` is None).")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (a, /, axis = None, *, reverse = false, inclusive = true, stream = None))]
        fn $name(
            a: &Bound<'_, PyAny>,
            axis: Option<isize>,
            reverse: bool,
            inclusive: bool,
            stream: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyArray> {
            let a = to_array(a, None)?;
            wrap(on_stream(stream, || ops::$name(&a, axis, reverse, inclusive)))
        }
    )*};
}

scan_fns!(
    cummax: "Cumulative maximum along `axis` (of the flattened array when None), from the end when \
             `reverse`; `inclusive=False` excludes element i from output i (the first output is the \
             dtype's lowest value). NaN propagates.",
    cummin: "Cumulative minimum along `axis` (of the flattened array when None), from the end when \
             `reverse`; `inclusive=False` excludes element i from output i (the first output is the \
             dtype's highest value). NaN propagates.",
    logcumsumexp: "Cumulative log(sum(exp(a))) along `axis` (of the flattened array when None), from the \
                   end when `reverse`; `inclusive=False` excludes element i from output i (the first \
                   output is -inf). Bool and integers compute in float32.",
);

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(m, cumsum, cumprod, cummax, cummin, logcumsumexp);
    Ok(())
}
