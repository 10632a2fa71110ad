//! Elementwise ops: every row of the Rust op tables (`ferrox::unary_ops!`,
//! `ferrox::binary_ops!`) becomes a Python function with the row's name and
//! doc string; `where` and `astype`.

use super::wrap;
use crate::array::PyArray;
use crate::convert::{operands, to_array};
use crate::device::on_stream;
use crate::dtype::PyDtype;
use ferrox::ops;
use ferrox_python_macros::guarded;
use pyo3::prelude::*;

/// The Python function of one unary row (`none` rows are bound by hand).
macro_rules! unary_function {
    (none, $name:ident, $doc:literal) => {};
    ($py:ident, $name:ident, $doc:literal) => {
        #[doc = concat!($doc, "\n\nArgs:\n    a (array): Input array.\n\nReturns:\n    array: The result array.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (a, /, *, stream = None))]
        fn $name(a: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
            let a = to_array(a, None)?;
            wrap(on_stream(stream, || ops::$name(&a)))
        }
    };
}

/// Registers one unary row's function.
macro_rules! unary_register {
    (none, $name:ident, $m:ident) => {};
    ($py:ident, $name:ident, $m:ident) => {
        crate::add_functions!($m, $name);
    };
}

macro_rules! unary_functions {
    ($($name:ident: $Var:ident, $kind:ident, $py:ident, $doc:literal, |$x:ident, $y:ident| $d:expr;)*) => {
        $(unary_function!($py, $name, $doc);)*

        fn register_unary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(unary_register!($py, $name, m);)*
            Ok(())
        }
    };
}

ferrox::unary_ops!(unary_functions);

macro_rules! binary_functions {
    ($($name:ident: $Var:ident, $kind:ident, $doc:literal, |$a:ident, $b:ident, $out:ident| $d:expr;)*) => {
        $(
            #[doc = concat!($doc, "\n\nArgs:\n    a (array): Input array.\n    b (array): Input array.\n\nReturns:\n    array: The result, of the broadcast shape.")]
            #[guarded]
            #[pyfunction]
            #[pyo3(signature = (a, b, /, *, stream = None))]
            fn $name(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
                let (a, b) = operands(a, b)?;
                wrap(on_stream(stream, || ops::$name(&a, &b)))
            }
        )*

        fn register_binary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            crate::add_functions!(m, $($name),*);
            Ok(())
        }
    };
}

ferrox::binary_ops!(binary_functions);

/// Elementwise choice: `x` where `condition` is true, else `y`.
///
/// Args:
///     condition (array): Where to take ``x``.
///     x (array): Values where ``condition`` is true.
///     y (array): Values elsewhere.
///
/// Returns:
///     array: The result array.
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
///
/// Args:
///     a (array): Input array.
///     dtype (Dtype): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, dtype, *, stream = None))]
fn astype(a: &Bound<'_, PyAny>, dtype: PyDtype, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::astype(&a, dtype.0)))
}

/// `a`'s bytes read as `dtype` (the last axis scales with the size ratio).
///
/// Args:
///     a (array): Input array.
///     dtype (Dtype): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, dtype, stream = None))]
fn view(a: &Bound<'_, PyAny>, dtype: PyDtype, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::view(&a, dtype.0)))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_unary(m)?;
    register_binary(m)?;
    crate::add_functions!(m, where_, astype, view);
    Ok(())
}
