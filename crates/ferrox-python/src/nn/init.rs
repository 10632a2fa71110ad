//! Initializers (the functions that `mlx.nn.init`'s higher-order functions
//! return): each takes the shape to fill, MLX's parameters, `dtype`
//! (default float32) and `key=` (default: the global key sequence).
//! `ferrox.nn.init` wraps them in MLX's higher-order API.

use crate::args;
use crate::array::PyArray;
use crate::convert::{operand, to_array};
use crate::errors::IntoPyResult;
use crate::ops::wrap;
use ferrox::{Array, Dtype};
use ferrox_nn::init::{self, FanMode};
use ferrox_python_macros::guarded;
use pyo3::prelude::*;

/// The `shape` and `dtype` arguments of the initializer `op`.
fn shape_dtype(op: &str, shape: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<(Vec<usize>, Dtype)> {
    Ok((args::shape(op, shape)?, args::dtype_or(dtype, Dtype::F32)?))
}

/// The `key=` argument: a PRNG key array, or None.
fn key_arg(key: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Array>> {
    key.filter(|k| !k.is_none()).map(|k| to_array(k, None)).transpose()
}

/// An array of `shape` filled with `value` (a scalar or an array that
/// broadcasts to `shape`), cast to `dtype`.
///
/// Args:
///     shape (int or list(int)): Shape of the result.
///     value (array): The value.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape, value, dtype = None))]
fn constant(shape: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let (shape, dtype) = shape_dtype("constant", shape, dtype)?;
    let value = operand(value, dtype)?;
    wrap(Ok(init::constant(&shape, dtype, &value)))
}

/// Samples of `shape` from the normal distribution with mean `mean` and
/// standard deviation `std`.
///
/// Args:
///     shape (int or list(int)): Shape of the result.
///     mean (float, optional): Mean of the distribution.
///     std (float, optional): Standard deviation.
///     dtype (Dtype, optional): Data type of the result.
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape, mean = 0.0, std = 1.0, dtype = None, key = None))]
fn normal(
    shape: &Bound<'_, PyAny>,
    mean: f64,
    std: f64,
    dtype: Option<&Bound<'_, PyAny>>,
    key: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (shape, dtype) = shape_dtype("normal", shape, dtype)?;
    let key = key_arg(key)?;
    wrap(Ok(init::normal(&shape, dtype, mean, std, key.as_ref())))
}

/// Samples of `shape` from the uniform distribution on [low, high).
///
/// Args:
///     shape (int or list(int)): Shape of the result.
///     low (float, optional): Lower bound (inclusive).
///     high (float, optional): Upper bound (exclusive).
///     dtype (Dtype, optional): Data type of the result.
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape, low = 0.0, high = 1.0, dtype = None, key = None))]
fn uniform(
    shape: &Bound<'_, PyAny>,
    low: f64,
    high: f64,
    dtype: Option<&Bound<'_, PyAny>>,
    key: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (shape, dtype) = shape_dtype("uniform", shape, dtype)?;
    let key = key_arg(key)?;
    wrap(Ok(init::uniform(&shape, dtype, low, high, key.as_ref())))
}

/// The identity matrix of a square `shape`.
///
/// Args:
///     shape (int or list(int)): Shape of the result.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape, dtype = None))]
fn identity(shape: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let (shape, dtype) = shape_dtype("identity", shape, dtype)?;
    wrap(Ok(init::identity(&shape, dtype)))
}

macro_rules! glorot {
    ($($name:ident: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    shape (int or list(int)): Shape of the result (at least 2-D).\n    gain (float, optional): Scale of the distribution. Default: ``1.0``.\n    dtype (Dtype, optional): Dtype of the result. Default: float32.\n    key (array, optional): PRNG key; the global generator's next key when None.\n\nReturns:\n    array: The initialized array.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (shape, gain = 1.0, dtype = None, key = None))]
        fn $name(
            shape: &Bound<'_, PyAny>,
            gain: f64,
            dtype: Option<&Bound<'_, PyAny>>,
            key: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyArray> {
            let (shape, dtype) = shape_dtype(stringify!($name), shape, dtype)?;
            let key = key_arg(key)?;
            wrap(Ok(init::$name(&shape, dtype, gain, key.as_ref())))
        }
    )*};
}

glorot!(
    glorot_normal: "Glorot normal samples of `shape`: standard deviation gain * sqrt(2 / (fan_in + fan_out)).",
    glorot_uniform: "Glorot uniform samples of `shape` on [-limit, limit), limit = gain * sqrt(6 / (fan_in + fan_out)).",
    orthogonal: "A 2-D matrix of `shape` with orthonormal rows or columns (whichever are fewer), times `gain`.",
);

macro_rules! he {
    ($($name:ident: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    shape (int or list(int)): Shape of the result (at least 2-D).\n    mode (str, optional): ``'fan_in'`` or ``'fan_out'``: the fan the variance scales with.\n    gain (float, optional): Scale of the distribution. Default: ``1.0``.\n    dtype (Dtype, optional): Dtype of the result. Default: float32.\n    key (array, optional): PRNG key; the global generator's next key when None.\n\nReturns:\n    array: The initialized array.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (shape, mode = "fan_in", gain = 1.0, dtype = None, key = None))]
        fn $name(
            shape: &Bound<'_, PyAny>,
            mode: &str,
            gain: f64,
            dtype: Option<&Bound<'_, PyAny>>,
            key: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyArray> {
            let (shape, dtype) = shape_dtype(stringify!($name), shape, dtype)?;
            let mode = FanMode::parse(stringify!($name), mode).py()?;
            let key = key_arg(key)?;
            wrap(Ok(init::$name(&shape, dtype, mode, gain, key.as_ref())))
        }
    )*};
}

he!(
    he_normal: "He normal samples of `shape`: standard deviation gain / sqrt(fan), fan chosen by `mode`.",
    he_uniform: "He uniform samples of `shape` on [-limit, limit), limit = gain * sqrt(3 / fan), fan chosen by `mode`.",
);

/// A 2-D matrix of `shape` of normal samples (`mean`, `std`) with
/// ceil(sparsity * columns) entries of every row set to zero.
///
/// Args:
///     shape (int or list(int)): Shape of the result.
///     sparsity (float): Fraction of each column set to zero.
///     mean (float, optional): Mean of the distribution.
///     std (float, optional): Standard deviation.
///     dtype (Dtype, optional): Data type of the result.
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape, sparsity, mean = 0.0, std = 1.0, dtype = None, key = None))]
fn sparse(
    shape: &Bound<'_, PyAny>,
    sparsity: f64,
    mean: f64,
    std: f64,
    dtype: Option<&Bound<'_, PyAny>>,
    key: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (shape, dtype) = shape_dtype("sparse", shape, dtype)?;
    let key = key_arg(key)?;
    wrap(Ok(init::sparse(&shape, dtype, sparsity, mean, std, key.as_ref())))
}

/// Adds the initializers to the `nn` module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(
        m,
        constant,
        normal,
        uniform,
        identity,
        glorot_normal,
        glorot_uniform,
        he_normal,
        he_uniform,
        sparse,
        orthogonal
    );
    Ok(())
}
