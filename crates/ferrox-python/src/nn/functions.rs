//! Activation functions (`mlx.nn`'s functional activations): each takes
//! an array (or anything `ferrox.array` accepts) and MLX's parameters.

use crate::args;
use crate::array::PyArray;
use crate::convert::to_array;
use crate::ops::wrap;
use ferrox_nn::functions as f;
use ferrox_python_macros::guarded;
use pyo3::prelude::*;

macro_rules! plain {
    ($($name:ident: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    x (array): Input array.\n\nReturns:\n    array: The activation, of ``x``'s shape.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (x))]
        fn $name(x: &Bound<'_, PyAny>) -> PyResult<PyArray> {
            let x = to_array(x, None)?;
            wrap(Ok(f::$name(&x)))
        }
    )*};
}

plain!(
    sigmoid: "Applies the sigmoid function 1 / (1 + exp(-x)).",
    relu: "Applies the Rectified Linear Unit: max(x, 0).",
    relu2: "Applies the ReLU² activation: max(x, 0)².",
    relu6: "Applies the Rectified Linear Unit 6: min(max(x, 0), 6).",
    softplus: "Applies the Softplus function log(1 + exp(x)), computed as logaddexp(x, 0).",
    softsign: "Applies the Softsign function `x / (1 + |x|)`.",
    silu: "Applies the Sigmoid Linear Unit (Swish): x * sigmoid(x).",
    log_sigmoid: "Applies the Log Sigmoid function log(sigmoid(x)) = -softplus(-x).",
    gelu: "Applies the Gaussian Error Linear Unit x * Phi(x), Phi the Gaussian CDF.",
    gelu_approx: "An approximation to GELU (max error < 0.0005 on [-6, 6]):\n\
                  0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3))).",
    gelu_fast_approx: "A fast approximation to GELU (max error < 0.015 on [-6, 6]): x * sigmoid(1.702 * x).",
    selu: "Applies the Scaled Exponential Linear Unit 1.0507 * elu(x, 1.67326).",
    mish: "Applies the Mish function x * tanh(softplus(x)).",
    hardswish: "Applies the hardswish function x * min(max(x + 3, 0), 6) / 6.",
    tanh: "Applies the hyperbolic tangent function.",
);

macro_rules! with_scalar {
    ($($name:ident($param:ident = $default:tt): $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    x (array): Input array.\n    ", stringify!($param), " (float, optional): Parameter of the function. Default: ", stringify!($default), ".", "\n\nReturns:\n    array: The activation, of ``x``'s shape.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (x, $param = $default))]
        fn $name(x: &Bound<'_, PyAny>, $param: f64) -> PyResult<PyArray> {
            let x = to_array(x, None)?;
            wrap(Ok(f::$name(&x, $param)))
        }
    )*};
}

with_scalar!(
    leaky_relu(negative_slope = 0.01): "Applies the Leaky Rectified Linear Unit: max(negative_slope * x, x).",
    elu(alpha = 1.0): "Applies the Exponential Linear Unit: x where x > 0, else alpha * (exp(x) - 1).",
    celu(alpha = 1.0): "Applies the Continuously Differentiable Exponential Linear Unit:\n\
                        max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).",
    softshrink(lambd = 0.5): "Applies the Softshrink function: `x - sign(x) * lambd` where `|x| > lambd`, else 0.",
    hard_shrink(lambd = 0.5): "Applies the HardShrink function: `x` where `|x| > lambd`, else 0.",
    step(threshold = 0.0): "Applies the binary step: 1 where x >= threshold, else 0 (int32).",
);

/// Applies the HardTanh function: max(min(x, max_val), min_val).
///
/// Args:
///     x (array): Input array.
///     min_val (float, optional): Lower bound. Default: ``-1``.
///     max_val (float, optional): Upper bound. Default: ``1``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, min_val = -1.0, max_val = 1.0), text_signature = "(x, min_val=-1.0, max_val=1.0)")]
fn hard_tanh(x: &Bound<'_, PyAny>, min_val: f64, max_val: f64) -> PyResult<PyArray> {
    let x = to_array(x, None)?;
    wrap(Ok(f::hard_tanh(&x, min_val, max_val)))
}

/// Applies the element-wise parametric ReLU: max(0, x) + alpha * min(0, x).
///
/// Args:
///     x (array): Input array.
///     alpha (array): The alpha parameter.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, alpha))]
fn prelu(x: &Bound<'_, PyAny>, alpha: &Bound<'_, PyAny>) -> PyResult<PyArray> {
    let (x, alpha) = (to_array(x, None)?, to_array(alpha, None)?);
    wrap(Ok(f::prelu(&x, &alpha)))
}

/// Applies the gated linear unit: `axis` is split into halves a and b,
/// giving a * sigmoid(b).
///
/// Args:
///     x (array): Input array.
///     axis (int, optional): Axis to operate along.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, axis = -1), text_signature = "(x, axis=-1)")]
fn glu(x: &Bound<'_, PyAny>, axis: isize) -> PyResult<PyArray> {
    let x = to_array(x, None)?;
    wrap(Ok(f::glu(&x, axis)))
}

/// An `axis=` argument: an int, a list or tuple of ints, or None for
/// every axis.
struct Axes(Option<Vec<isize>>);

impl<'py> FromPyObject<'py> for Axes {
    fn extract_bound(obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        Ok(Axes(args::axes("axis", Some(obj))?))
    }
}

impl Axes {
    /// The axes of `x` that this argument names.
    fn of(self, x: &ferrox::Array) -> Vec<isize> {
        self.0.unwrap_or_else(|| (0..x.ndim() as isize).collect())
    }
}

macro_rules! along_axes {
    ($($name:ident: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    x (array): Input array.\n    axis (int or list(int), optional): Axis or axes to normalize over; all axes when None. Default: ``-1``.\n\nReturns:\n    array: The result, of ``x``'s shape.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (x, axis = Axes(Some(vec![-1]))), text_signature = "(x, axis=-1)")]
        fn $name(x: &Bound<'_, PyAny>, axis: Axes) -> PyResult<PyArray> {
            let x = to_array(x, None)?;
            let axes = axis.of(&x);
            wrap(Ok(f::$name(&x, &axes)))
        }
    )*};
}

along_axes!(
    softmax: "Applies the Softmax function exp(x) / sum(exp(x)) along `axis`.",
    softmin: "Applies the Softmin function exp(-x) / sum(exp(-x)) along `axis`.",
    log_softmax: "Applies the Log Softmax function x - logsumexp(x) along `axis` (shifted by the maximum first).",
);

/// Adds the activation functions to the `nn` module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(
        m,
        sigmoid,
        relu,
        relu2,
        relu6,
        softplus,
        softsign,
        silu,
        log_sigmoid,
        gelu,
        gelu_approx,
        gelu_fast_approx,
        selu,
        mish,
        hardswish,
        tanh,
        leaky_relu,
        elu,
        celu,
        softshrink,
        hard_shrink,
        step,
        hard_tanh,
        prelu,
        glu,
        softmax,
        softmin,
        log_softmax
    );
    Ok(())
}
