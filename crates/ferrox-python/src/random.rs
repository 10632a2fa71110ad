//! `ferrox.random`: the submodule mirroring `mlx.core.random` (names,
//! parameters and defaults; `None` stands for MLX's literal defaults).
//! Every sampler takes `key=` (default: the next key of the global
//! sequence, drawn after the arguments are read, as MLX draws it) and
//! `stream=`. `bits` is MLX's C++ `random::bits`, which `mlx.core.random`
//! does not expose.

use crate::array::PyArray;
use crate::convert::{py_scalar, to_array};
use crate::device::on_stream;
use crate::ops::wrap;
use ferrox::ops::random::{self, Draws};
use ferrox::{Array, Dtype, Scalar};
use ferrox_python_macros::guarded;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyList, PyTuple};

/// A `seed` argument: a Python int in [0, 2^64) (MLX's uint64).
fn seed_arg(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<u64> {
    if obj.is_instance_of::<PyFloat>() {
        return Err(PyTypeError::new_err(format!("[{op}] seed must be an int, got a float.")));
    }
    obj.extract::<u64>()
        .map_err(|_| PyTypeError::new_err(format!("[{op}] seed must be an int in [0, 2**64), got {obj}.")))
}

/// A sample shape: a list or tuple of non-negative ints (MLX refuses a
/// bare int); `None` is `()`.
fn shape_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<usize>> {
    match obj {
        None => Ok(Vec::new()),
        Some(o) if o.is_none() => Ok(Vec::new()),
        Some(o) => {
            if !(o.is_instance_of::<PyList>() || o.is_instance_of::<PyTuple>()) {
                return Err(PyTypeError::new_err(format!(
                    "shape must be a list or tuple of ints, got {}.",
                    o.get_type().name()?
                )));
            }
            crate::args::shape("bits", o)
        }
    }
}

/// An optional shape: `None` stays `None`.
fn optional_shape(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<usize>>> {
    match obj {
        Some(o) if !o.is_none() => Ok(Some(shape_arg(Some(o))?)),
        _ => Ok(None),
    }
}

/// The `key=` argument, or the next key of the global sequence.
fn key_arg(key: Option<&Bound<'_, PyAny>>) -> PyResult<Array> {
    use crate::errors::IntoPyResult;
    match key {
        Some(k) if !k.is_none() => to_array(k, None),
        _ => random::next_key().py(),
    }
}

/// A scalar-or-array parameter converted as MLX's `to_array(v, dtype)`:
/// a Python float becomes a float32 value in `dtype` if that is a real
/// float (else float32), an int or bool takes `dtype`, a complex number is
/// complex64, and an array keeps its dtype.
fn param(obj: &Bound<'_, PyAny>, dtype: Dtype) -> PyResult<Array> {
    if obj.downcast::<PyArray>().is_err() {
        if let Some(s) = py_scalar(obj)? {
            let (value, dt) = match s {
                Scalar::Float(v) => {
                    (Scalar::Float(v as f32 as f64), if dtype.is_floating() { dtype } else { Dtype::F32 })
                }
                Scalar::Complex(..) => (s, Dtype::C64),
                other => (other, dtype),
            };
            return Ok(Array::scalar_of(value, dt));
        }
    }
    to_array(obj, None)
}

/// An optional scalar-or-array argument, with a default value.
fn bound(obj: Option<&Bound<'_, PyAny>>, default: Scalar) -> PyResult<Array> {
    match obj {
        Some(o) if !o.is_none() => to_array(o, None),
        _ => Ok(Array::scalar_of(default, crate::convert::scalar_dtype(default))),
    }
}

/// Seeds the global random key sequence.
///
/// Args:
///     seed (int): Seed.
#[guarded]
#[pyfunction]
#[pyo3(signature = (seed))]
fn seed(seed: &Bound<'_, PyAny>) -> PyResult<()> {
    random::seed(seed_arg("seed", seed)?);
    Ok(())
}

/// The state of the global random key sequence (`ferrox.random.state`, as
/// MLX's): a sequence of one uint32 key of shape `(2,)`, read as
/// `random.state[0]`, which `seed` sets and every sampler without `key=`
/// advances.
#[pyclass(name = "_RandomState", module = "ferrox.random", frozen)]
pub struct RandomState;

#[guarded]
#[pymethods]
impl RandomState {
    fn __len__(&self) -> usize {
        1
    }

    fn __getitem__(&self, index: isize) -> PyResult<PyArray> {
        if index != 0 && index != -1 {
            return Err(pyo3::exceptions::PyIndexError::new_err("random state index out of range"));
        }
        wrap(Ok(random::state()))
    }

    /// `random.state[0] = key`: replaces the global key (compile writes the
    /// state a function with `outputs=random.state` returned through this).
    fn __setitem__(&self, index: isize, value: &Bound<'_, PyAny>) -> PyResult<()> {
        if index != 0 && index != -1 {
            return Err(pyo3::exceptions::PyIndexError::new_err("random state index out of range"));
        }
        let key = value
            .downcast::<PyArray>()
            .map_err(|_| pyo3::exceptions::PyTypeError::new_err("[random.state] The key must be an array."))?;
        crate::errors::IntoPyResult::py(random::set_state(&key.borrow().inner))
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let list = PyList::new(py, [wrap(Ok(random::state()))?])?;
        list.try_iter().map(|it| it.into_any())
    }

    fn __repr__(&self) -> String {
        "ferrox.random.state".into()
    }
}

/// A PRNG key from a seed: the uint32 array `[seed >> 32, seed & 0xffffffff]`.
///
/// Args:
///     seed (int): Seed.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (seed))]
fn key(seed: &Bound<'_, PyAny>) -> PyResult<PyArray> {
    wrap(Ok(random::key(seed_arg("key", seed)?)))
}

/// Splits a PRNG key into `num` sub keys, an array of shape `(num, 2)`.
///
/// Args:
///     key (array): PRNG key; the global generator's next key when None.
///     num (int, optional): Number of keys.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (key, num = 2, stream = None))]
fn split(key: &Bound<'_, PyAny>, num: i64, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let key = to_array(key, None)?;
    let num = usize::try_from(num).map_err(|_| PyValueError::new_err("[bits] Negative dimensions not allowed."))?;
    wrap(on_stream(stream, || random::split(&key, num)))
}

/// Random bits: uint32, uint16 or uint8 for `width` 4, 2 or 1 (MLX's C++
/// `random::bits`).
///
/// Args:
///     shape (list(int), optional): Shape of the result.
///     width (int, optional): Bytes per element: 1, 2 or 4.
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape = None, width = 4, key = None, stream = None))]
fn bits(
    shape: Option<&Bound<'_, PyAny>>,
    width: usize,
    key: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let shape = shape_arg(shape)?;
    let key = key_arg(key)?;
    wrap(on_stream(stream, || random::bits(&shape, width, Some(&key))))
}

/// A random permutation of `arange(x)` (uint32) when `x` is an int, else
/// `x` with its entries along `axis` in a random order.
///
/// Args:
///     x (array): Input array.
///     axis (int, optional): Axis to operate along.
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, axis = 0, key = None, stream = None))]
fn permutation(
    x: &Bound<'_, PyAny>,
    axis: isize,
    key: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    if x.downcast::<PyArray>().is_ok() {
        let x = to_array(x, None)?;
        let key = key_arg(key)?;
        return wrap(on_stream(stream, || random::permute(&x, axis, Some(&key))));
    }
    if x.is_instance_of::<PyFloat>() || x.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err("[permutation] x must be an int or an array."));
    }
    let n: i64 = x.extract().map_err(|_| PyTypeError::new_err("[permutation] x must be an int or an array."))?;
    if n < 0 {
        return Err(PyValueError::new_err("[permutation] Negative dimensions not allowed."));
    }
    let key = key_arg(key)?;
    wrap(on_stream(stream, || random::permutation(n as usize, Some(&key))))
}

/// Uniformly distributed values in `[low, high)` (default `[0, 1)`), which
/// broadcast to `shape`.
///
/// Args:
///     low (array, optional): Lower bound (inclusive).
///     high (array, optional): Upper bound (exclusive).
///     shape (list(int), optional): Shape of the result.
///     dtype (Dtype, optional): Data type of the result.
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (low = None, high = None, shape = None, dtype = None, key = None, stream = None))]
fn uniform(
    low: Option<&Bound<'_, PyAny>>,
    high: Option<&Bound<'_, PyAny>>,
    shape: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    key: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (low, high) = (bound(low, Scalar::Int(0))?, bound(high, Scalar::Int(1))?);
    let (shape, dtype) = (shape_arg(shape)?, crate::args::dtype_or(dtype, Dtype::F32)?);
    let key = key_arg(key)?;
    wrap(on_stream(stream, || random::uniform(&low, &high, &shape, dtype, Some(&key))))
}

/// Normally distributed values with mean `loc` and standard deviation
/// `scale` (standard when None; complex64 parts have variance 1/2).
///
/// Args:
///     shape (list(int), optional): Shape of the result.
///     dtype (Dtype, optional): Data type of the result.
///     loc (bool or int or float or complex, optional): Mean of the distribution.
///     scale (bool or int or float or complex, optional): Standard deviation.
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape = None, dtype = None, loc = None, scale = None, key = None, stream = None))]
fn normal(
    shape: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    loc: Option<&Bound<'_, PyAny>>,
    scale: Option<&Bound<'_, PyAny>>,
    key: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (shape, dtype) = (shape_arg(shape)?, crate::args::dtype_or(dtype, Dtype::F32)?);
    let loc = loc.filter(|o| !o.is_none()).map(|o| param(o, dtype)).transpose()?;
    let scale = scale.filter(|o| !o.is_none()).map(|o| param(o, dtype)).transpose()?;
    let key = key_arg(key)?;
    wrap(on_stream(stream, || random::normal(&shape, dtype, loc.as_ref(), scale.as_ref(), Some(&key))))
}

/// Jointly normal samples with mean `mean` (`(..., n)`) and covariance
/// `cov` (`(..., n, n)`, positive semi-definite); float32 only.
///
/// Args:
///     mean (array): Mean vector.
///     cov (array): Covariance matrix.
///     shape (list(int), optional): Shape of the result.
///     dtype (Dtype, optional): Data type of the result.
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (mean, cov, shape = None, dtype = None, key = None, stream = None))]
fn multivariate_normal(
    mean: &Bound<'_, PyAny>,
    cov: &Bound<'_, PyAny>,
    shape: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    key: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (mean, cov) = (to_array(mean, None)?, to_array(cov, None)?);
    let (shape, dtype) = (shape_arg(shape)?, crate::args::dtype_or(dtype, Dtype::F32)?);
    let key = key_arg(key)?;
    wrap(on_stream(stream, || random::multivariate_normal(&mean, &cov, &shape, dtype, Some(&key))))
}

/// Random integers drawn uniformly from `[low, high)`, which broadcast to
/// `shape`.
///
/// Args:
///     low (array): Lower bound (inclusive).
///     high (array): Upper bound (exclusive).
///     shape (list(int), optional): Shape of the result.
///     dtype (Dtype, optional): Data type of the result.
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (low, high, shape = None, dtype = None, key = None, stream = None))]
fn randint(
    low: &Bound<'_, PyAny>,
    high: &Bound<'_, PyAny>,
    shape: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    key: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (low, high) = (to_array(low, None)?, to_array(high, None)?);
    let (shape, dtype) = (shape_arg(shape)?, crate::args::dtype_or(dtype, Dtype::I32)?);
    let key = key_arg(key)?;
    wrap(on_stream(stream, || random::randint(&low, &high, &shape, dtype, Some(&key))))
}

/// Booleans that are true with probability `p` (default 0.5), which
/// broadcasts to `shape` (default: `p`'s shape).
///
/// Args:
///     p (array, optional): Probability of True.
///     shape (list(int), optional): Shape of the result.
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (p = None, shape = None, key = None, stream = None))]
fn bernoulli(
    p: Option<&Bound<'_, PyAny>>,
    shape: Option<&Bound<'_, PyAny>>,
    key: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let p = bound(p, Scalar::Float(0.5))?;
    let shape = optional_shape(shape)?;
    let key = key_arg(key)?;
    wrap(on_stream(stream, || random::bernoulli(&p, shape.as_deref(), Some(&key))))
}

/// Normal values truncated to the domain `(lower, upper)`, which broadcast
/// to `shape` (default: their broadcast shape).
///
/// Args:
///     lower (array): Lower bound.
///     upper (array): Upper bound.
///     shape (list(int), optional): Shape of the result.
///     dtype (Dtype, optional): Data type of the result.
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (lower, upper, shape = None, dtype = None, key = None, stream = None))]
fn truncated_normal(
    lower: &Bound<'_, PyAny>,
    upper: &Bound<'_, PyAny>,
    shape: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    key: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (lower, upper) = (to_array(lower, None)?, to_array(upper, None)?);
    let (shape, dtype) = (optional_shape(shape)?, crate::args::dtype_or(dtype, Dtype::F32)?);
    let key = key_arg(key)?;
    wrap(on_stream(stream, || random::truncated_normal(&lower, &upper, shape.as_deref(), dtype, Some(&key))))
}

/// Samples of the standard Gumbel distribution (CDF `exp(-exp(-x))`).
///
/// Args:
///     shape (list(int), optional): Shape of the result.
///     dtype (Dtype, optional): Data type of the result.
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape = None, dtype = None, key = None, stream = None))]
fn gumbel(
    shape: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    key: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (shape, dtype) = (shape_arg(shape)?, crate::args::dtype_or(dtype, Dtype::F32)?);
    let key = key_arg(key)?;
    wrap(on_stream(stream, || random::gumbel(&shape, dtype, Some(&key))))
}

/// Indices (uint32) sampled from the categorical distributions of the
/// unnormalized `logits` along `axis`: one per distribution, a `shape`
/// that the logits without `axis` broadcast to, or `num_samples` each
/// (at most one of the last two).
///
/// Args:
///     logits (array): Unnormalized log probabilities of the categories.
///     axis (int, optional): Axis to operate along.
///     shape (list(int), optional): Shape of the result.
///     num_samples (int, optional): Number of samples per distribution (exclusive with ``shape``).
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (logits, axis = -1, shape = None, num_samples = None, key = None, stream = None))]
fn categorical(
    logits: &Bound<'_, PyAny>,
    axis: isize,
    shape: Option<&Bound<'_, PyAny>>,
    num_samples: Option<i64>,
    key: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let logits = to_array(logits, None)?;
    let shape = optional_shape(shape)?;
    let key = key_arg(key)?;
    let draws = match (&shape, num_samples) {
        (Some(_), Some(_)) => {
            return Err(PyValueError::new_err("[categorical] At most one of shape or num_samples can be specified."))
        }
        (Some(s), None) => Draws::Shape(s),
        (None, Some(n)) => Draws::Samples(
            usize::try_from(n).map_err(|_| PyValueError::new_err("[categorical] num_samples must be non-negative."))?,
        ),
        (None, None) => Draws::One,
    };
    wrap(on_stream(stream, || random::categorical(&logits, axis, draws, Some(&key))))
}

/// Samples of the Laplace distribution with mean `loc` and scale `scale`.
///
/// Args:
///     shape (list(int), optional): Shape of the result.
///     dtype (Dtype, optional): Data type of the result.
///     loc (float, optional): Mean of the distribution.
///     scale (float, optional): Scale of the distribution.
///     key (array, optional): PRNG key; the global generator's next key when None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (shape = None, dtype = None, loc = 0.0, scale = 1.0, key = None, stream = None))]
fn laplace(
    shape: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    loc: f64,
    scale: f64,
    key: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (shape, dtype) = (shape_arg(shape)?, crate::args::dtype_or(dtype, Dtype::F32)?);
    let key = key_arg(key)?;
    wrap(on_stream(stream, || random::laplace(&shape, dtype, loc as f32, scale as f32, Some(&key))))
}

/// Adds the `random` submodule to `_core` and registers it as
/// `ferrox.random`, so that `import ferrox.random` finds it.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = parent.py();
    let m = PyModule::new(py, "ferrox.random")?;
    m.setattr("__doc__", "ferrox.random: random number generation with MLX's key-based generator.")?;
    crate::add_functions!(
        &m,
        seed,
        key,
        split,
        bits,
        uniform,
        normal,
        multivariate_normal,
        randint,
        bernoulli,
        truncated_normal,
        gumbel,
        categorical,
        laplace,
        permutation
    );
    m.add("state", Py::new(py, RandomState)?)?;
    parent.add("random", &m)?;
    py.import("sys")?.getattr("modules")?.set_item("ferrox.random", &m)?;
    Ok(())
}
