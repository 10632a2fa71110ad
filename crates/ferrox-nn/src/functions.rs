//! Activation functions (MLX's `mlx.nn` functional activations).
//!
//! Each is MLX's definition written with ferrox ops, with Python scalars
//! typed as MLX types them (an int constant keeps the input's dtype, a float
//! constant keeps a float input's dtype and makes integers float32), so the
//! result dtypes are MLX's: `relu` of int32 is int32, `relu6` of int32 is
//! float32, `step` is always int32. The numerically delicate ones use
//! stable forms: `softplus` is `logaddexp(x, 0)`, `log_sigmoid` is
//! `-softplus(-x)`, and `log_softmax` subtracts the maximum first.
//! Being op compositions, all are differentiable by ferrox's transforms.

use crate::{float, int};
use ferrox::ops::{self, SplitSpec};
use ferrox::{Array, Error, Result};

/// The logistic sigmoid `1 / (1 + exp(-x))`.
pub fn sigmoid(x: &Array) -> Result<Array> {
    ops::sigmoid(x)
}

/// The rectified linear unit `max(x, 0)`.
pub fn relu(x: &Array) -> Result<Array> {
    ops::maximum(x, &int(0, x)?)
}

/// ReLU squared: `max(x, 0)^2`.
pub fn relu2(x: &Array) -> Result<Array> {
    ops::square(&relu(x)?)
}

/// ReLU capped at 6: `min(max(x, 0), 6)`.
pub fn relu6(x: &Array) -> Result<Array> {
    let r = relu(x)?;
    ops::minimum(&r, &float(6.0, &r)?)
}

/// The leaky ReLU `max(negative_slope * x, x)`.
pub fn leaky_relu(x: &Array, negative_slope: f64) -> Result<Array> {
    ops::maximum(&(negative_slope * x)?, x)
}

/// `x - logsumexp(x)` over `axes`, computed after subtracting the maximum
/// (a constant for gradients) so that large logits keep their differences.
pub fn log_softmax(x: &Array, axes: &[isize]) -> Result<Array> {
    let shifted = ops::subtract(x, &ops::stop_gradient(&ops::max(x, Some(axes), true)?)?)?;
    ops::subtract(&shifted, &ops::logsumexp(&shifted, Some(axes), true)?)
}

/// The exponential linear unit: `x` where `x > 0`, else `alpha * (exp(x) - 1)`.
pub fn elu(x: &Array, alpha: f64) -> Result<Array> {
    let e = ops::exp(x)?;
    let negative_part = (alpha * &ops::subtract(&e, &int(1, &e)?)?)?;
    ops::where_(&ops::greater(x, &int(0, x)?)?, x, &negative_part)
}

/// `exp(x) / sum(exp(x))` over `axes` (ferrox's `softmax`).
pub fn softmax(x: &Array, axes: &[isize]) -> Result<Array> {
    ops::softmax(x, Some(axes), false)
}

/// The softplus `log(1 + exp(x))`, as `logaddexp(x, 0)` (no overflow).
pub fn softplus(x: &Array) -> Result<Array> {
    ops::logaddexp(x, &int(0, x)?)
}

/// The softsign `x / (1 + |x|)`.
pub fn softsign(x: &Array) -> Result<Array> {
    let a = ops::abs(x)?;
    ops::divide(x, &ops::add(&int(1, &a)?, &a)?)
}

/// Soft shrinkage: `x - sign(x) * lambd` where `|x| > lambd`, else 0.
pub fn softshrink(x: &Array, lambd: f64) -> Result<Array> {
    let a = ops::abs(x)?;
    let s = ops::sign(x)?;
    let shrunk = ops::subtract(x, &(&s * lambd)?)?;
    ops::where_(&ops::greater(&a, &float(lambd, &a)?)?, &shrunk, &int(0, &shrunk)?)
}

/// The continuously differentiable ELU
/// `max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1)`.
pub fn celu(x: &Array, alpha: f64) -> Result<Array> {
    let positive = ops::maximum(x, &float(0.0, x)?)?;
    let lower = ops::minimum(x, &float(0.0, x)?)?;
    let e = ops::exp(&(&lower / alpha)?)?;
    ops::add(&positive, &(alpha * &ops::subtract(&e, &int(1, &e)?)?)?)
}

/// The sigmoid linear unit (swish) `x * sigmoid(x)`.
pub fn silu(x: &Array) -> Result<Array> {
    ops::multiply(x, &ops::sigmoid(x)?)
}

/// `log(sigmoid(x))`, as `-softplus(-x)` (no overflow).
pub fn log_sigmoid(x: &Array) -> Result<Array> {
    ops::negative(&softplus(&ops::negative(x)?)?)
}

/// The exact Gaussian error linear unit `x * (1 + erf(x / sqrt(2))) / 2`.
pub fn gelu(x: &Array) -> Result<Array> {
    let e = ops::erf(&(x / std::f64::consts::SQRT_2)?)?;
    let scaled = ops::multiply(x, &ops::add(&int(1, &e)?, &e)?)?;
    ops::divide(&scaled, &int(2, &scaled)?)
}

/// The tanh approximation of GELU,
/// `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`
/// (absolute error below 0.0005 on [-6, 6]): one kernel forward
/// ([`ops::gelu_approx`]) and one for the derivative, as MLX compiles it;
/// complex inputs compose it from ops.
pub fn gelu_approx(x: &Array) -> Result<Array> {
    if !x.dtype().is_complex() {
        return ops::gelu_approx(x);
    }
    let cube = ops::power(x, &int(3, x)?)?;
    let inner = ops::add(x, &(0.044715 * &cube)?)?;
    let t = ops::tanh(&((2.0 / std::f64::consts::PI).sqrt() * &inner)?)?;
    ops::multiply(&(0.5 * x)?, &ops::add(&int(1, &t)?, &t)?)
}

/// The sigmoid approximation of GELU, `x * sigmoid(1.702 * x)` (absolute
/// error below 0.015 on [-6, 6]).
pub fn gelu_fast_approx(x: &Array) -> Result<Array> {
    ops::multiply(x, &ops::sigmoid(&(1.702 * x)?)?)
}

/// The gated linear unit: `axis` is split into halves `a` and `b`, giving
/// `a * sigmoid(b)`. The axis must have an even extent.
pub fn glu(x: &Array, axis: isize) -> Result<Array> {
    let ax = ferrox::shape::normalize_axis(axis, x.ndim()).ok_or(Error::AxisOutOfRange {
        op: "glu",
        axis,
        ndim: x.ndim(),
    })?;
    let extent = x.shape()[ax];
    if !extent.is_multiple_of(2) {
        return Err(Error::invalid(
            "glu",
            format!("The split axis must have an even size, but axis {axis} has size {extent}."),
        ));
    }
    let halves = ops::split(x, &SplitSpec::Sections(2), ax as isize)?;
    ops::multiply(&halves[0], &ops::sigmoid(&halves[1])?)
}

/// The binary step: 1 where `x >= threshold`, else 0 (int32).
pub fn step(x: &Array, threshold: f64) -> Result<Array> {
    let cond = ops::greater_equal(x, &float(threshold, x)?)?;
    ops::where_(&cond, &Array::scalar(1i32), &Array::scalar(0i32))
}

/// The scaled ELU `1.0507 * elu(x, 1.67326)`.
pub fn selu(x: &Array) -> Result<Array> {
    &elu(x, 1.67326)? * 1.0507
}

/// The parametric ReLU `max(0, x) + alpha * min(0, x)`, with `alpha` an
/// array broadcasting against `x`.
pub fn prelu(x: &Array, alpha: &Array) -> Result<Array> {
    let zero = int(0, x)?;
    ops::add(&ops::maximum(&zero, x)?, &ops::multiply(alpha, &ops::minimum(&zero, x)?)?)
}

/// Mish, `x * tanh(softplus(x))`.
pub fn mish(x: &Array) -> Result<Array> {
    ops::multiply(x, &ops::tanh(&softplus(x)?)?)
}

/// The hard swish `x * min(max(x + 3, 0), 6) / 6`.
pub fn hardswish(x: &Array) -> Result<Array> {
    let shifted = ops::add(x, &int(3, x)?)?;
    let gate = ops::maximum(&shifted, &int(0, &shifted)?)?;
    let scaled = ops::multiply(x, &ops::minimum(&gate, &int(6, &gate)?)?)?;
    ops::divide(&scaled, &int(6, &scaled)?)
}

/// The hard tanh `max(min(x, max_val), min_val)`, written as MLX writes it:
/// `min(max(x, min_val), max_val)`.
pub fn hard_tanh(x: &Array, min_val: f64, max_val: f64) -> Result<Array> {
    let lower = ops::maximum(x, &float(min_val, x)?)?;
    ops::minimum(&lower, &float(max_val, &lower)?)
}

/// Hard shrinkage: `x` where `|x| > lambd`, else 0.
pub fn hard_shrink(x: &Array, lambd: f64) -> Result<Array> {
    let a = ops::abs(x)?;
    ops::where_(&ops::greater(&a, &float(lambd, &a)?)?, x, &int(0, x)?)
}

/// `exp(-x) / sum(exp(-x))` over `axes`: the softmax of `-x`.
pub fn softmin(x: &Array, axes: &[isize]) -> Result<Array> {
    ops::softmax(&ops::negative(x)?, Some(axes), false)
}

/// The hyperbolic tangent.
pub fn tanh(x: &Array) -> Result<Array> {
    ops::tanh(x)
}
