//! Loss functions (MLX's `mlx.nn.losses`).
//!
//! Each takes its arrays, MLX's options (positionally, in MLX's order) and
//! a [`Reduction`]; shapes and options are checked as MLX checks them, with
//! errors naming the loss. As in MLX, only the losses that check shapes
//! require equal shapes; the others broadcast their inputs.

use crate::{float, int, py_shape};
use ferrox::ops;
use ferrox::{Array, Error, Result};

/// How a loss reduces its elementwise values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// The elementwise losses, unreduced (`"none"`).
    None,
    /// Their mean (`"mean"`).
    Mean,
    /// Their sum (`"sum"`).
    Sum,
}

impl Reduction {
    /// The reduction named `name` (`"none"`, `"mean"` or `"sum"`), or an
    /// error naming the loss `op`.
    pub fn parse(op: &'static str, name: &str) -> Result<Reduction> {
        match name {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            _ => Err(Error::invalid(op, "Invalid reduction. Must be one of ('none', 'mean', 'sum').")),
        }
    }

    /// `loss` reduced: itself, its mean or its sum over all elements.
    pub fn apply(self, loss: Array) -> Result<Array> {
        match self {
            Reduction::None => Ok(loss),
            Reduction::Mean => ops::mean(&loss, None, false),
            Reduction::Sum => ops::sum(&loss, None, false),
        }
    }
}

/// An error unless `a` and `b` have one shape; the message is MLX's
/// "`what_a` shape ... does not match `what_b` shape ...".
fn same_shape(op: &'static str, a: &Array, what_a: &str, b: &Array, what_b: &str) -> Result<()> {
    if a.shape() == b.shape() {
        return Ok(());
    }
    Err(Error::ShapeMismatch {
        op,
        msg: format!("{what_a} shape {} does not match {what_b} shape {}.", py_shape(a.shape()), py_shape(b.shape())),
    })
}

/// `loss * weights`, with `weights` required to have the loss's shape.
fn weighted(op: &'static str, loss: Array, weights: Option<&Array>) -> Result<Array> {
    let Some(w) = weights else { return Ok(loss) };
    if w.shape() != loss.shape() {
        return Err(Error::ShapeMismatch {
            op,
            msg: format!(
                "Weights with shape {} is not the same as output loss with shape {}.",
                py_shape(w.shape()),
                py_shape(loss.shape())
            ),
        });
    }
    ops::multiply(&loss, w)
}

/// The entries of `a` at the class indices `targets` along `axis`
/// (`targets` has `a`'s shape without that axis).
fn pick(a: &Array, targets: &Array, axis: isize) -> Result<Array> {
    let taken = ops::take_along_axis(a, &ops::expand_dims(targets, &[axis])?, Some(axis))?;
    ops::squeeze(&taken, Some(&[axis]))
}

/// The cross entropy of unnormalized `logits` over `axis` against
/// `targets`: class indices (the logits' shape without `axis`) or
/// probabilities (the logits' shape), optionally smoothed by
/// `label_smoothing` in [0, 1) and multiplied by `weights` (the shape of
/// the unreduced loss). The logits are shifted by their maximum first, so
/// large logits lose nothing to rounding.
pub fn cross_entropy(
    logits: &Array,
    targets: &Array,
    weights: Option<&Array>,
    axis: isize,
    label_smoothing: f64,
    reduction: Reduction,
) -> Result<Array> {
    let op = "cross_entropy";
    if !(0.0..1.0).contains(&label_smoothing) {
        return Err(Error::invalid(op, format!("Label smoothing must be in [0, 1), got {label_smoothing:?}.")));
    }
    let ax = ferrox::shape::normalize_axis(axis, logits.ndim()).ok_or(Error::AxisOutOfRange {
        op,
        axis,
        ndim: logits.ndim(),
    })?;
    let as_probs = targets.ndim() == logits.ndim();
    let mut class_shape = logits.shape().to_vec();
    class_shape.remove(ax);
    if (as_probs && targets.shape() != logits.shape()) || (!as_probs && targets.shape() != class_shape) {
        return Err(Error::ShapeMismatch {
            op,
            msg: format!(
                "Targets shape {} does not match logits shape {}.",
                py_shape(targets.shape()),
                py_shape(logits.shape())
            ),
        });
    }
    if !as_probs && ax + 1 == logits.ndim() && logits.dtype().is_floating() && logits.size() > 0 {
        // Class indices over the last axis: one fused kernel reads the
        // logits once, and one more writes their gradient.
        let loss = ops::fast::cross_entropy(logits, targets, label_smoothing)?;
        return reduction.apply(weighted(op, loss, weights)?);
    }
    let axes = [axis];
    let shifted = ops::subtract(logits, &ops::stop_gradient(&ops::max(logits, Some(&axes), true)?)?)?;
    let score = if as_probs {
        ops::sum(&ops::multiply(&shifted, targets)?, Some(&axes), false)?
    } else {
        pick(&shifted, targets, axis)?
    };
    let lse = ops::logsumexp(&shifted, Some(&axes), false)?;
    let loss = if label_smoothing > 0.0 {
        let adjusted = ((1.0 - label_smoothing) * &score)?;
        let smoothed = (&ops::negative(&ops::mean(&shifted, Some(&axes), false)?)? * label_smoothing)?;
        ops::add(&ops::subtract(&lse, &adjusted)?, &smoothed)?
    } else {
        ops::subtract(&lse, &score)?
    };
    reduction.apply(weighted(op, loss, weights)?)
}

/// The binary cross entropy of `inputs` against `targets` in {0, 1}: with
/// `with_logits`, `inputs` are logits and the loss is
/// `logaddexp(0, x) - x * y` (stable); otherwise they are probabilities and
/// their logarithms are clipped below at -100. `weights` (the inputs'
/// shape) multiply the unreduced loss.
pub fn binary_cross_entropy(
    inputs: &Array,
    targets: &Array,
    weights: Option<&Array>,
    with_logits: bool,
    reduction: Reduction,
) -> Result<Array> {
    let op = "binary_cross_entropy";
    same_shape(op, inputs, "Inputs", targets, "targets")?;
    let loss = if with_logits {
        let softplus = ops::logaddexp(&float(0.0, inputs)?, inputs)?;
        ops::subtract(&softplus, &ops::multiply(inputs, targets)?)?
    } else {
        let clipped_log = |p: &Array| -> Result<Array> {
            let l = ops::log(p)?;
            ops::maximum(&l, &int(-100, &l)?)
        };
        let log_p = clipped_log(inputs)?;
        let log_q = clipped_log(&ops::subtract(&int(1, inputs)?, inputs)?)?;
        let not_targets = ops::subtract(&int(1, targets)?, targets)?;
        ops::negative(&ops::add(&ops::multiply(targets, &log_p)?, &ops::multiply(&not_targets, &log_q)?)?)?
    };
    reduction.apply(weighted(op, loss, weights)?)
}

/// The L1 loss `|predictions - targets|` (equal shapes).
pub fn l1_loss(predictions: &Array, targets: &Array, reduction: Reduction) -> Result<Array> {
    same_shape("l1_loss", predictions, "Predictions", targets, "targets")?;
    reduction.apply(ops::abs(&ops::subtract(predictions, targets)?)?)
}

/// The squared error `(predictions - targets)^2` (equal shapes).
pub fn mse_loss(predictions: &Array, targets: &Array, reduction: Reduction) -> Result<Array> {
    same_shape("mse_loss", predictions, "Predictions", targets, "targets")?;
    reduction.apply(ops::square(&ops::subtract(predictions, targets)?)?)
}

/// The negative log likelihood `-inputs[targets]` of log-probabilities
/// `inputs` at the class indices `targets` along `axis`.
pub fn nll_loss(inputs: &Array, targets: &Array, axis: isize, reduction: Reduction) -> Result<Array> {
    reduction.apply(ops::negative(&pick(inputs, targets, axis)?)?)
}

/// The Gaussian negative log likelihood of `targets` under means `inputs`
/// and variances `vars` (all one shape):
/// `0.5 * (log(max(vars, eps)) + (targets - inputs)^2 / max(vars, eps))`,
/// plus `0.5 * log(2 pi)` when `full`.
pub fn gaussian_nll_loss(
    inputs: &Array,
    targets: &Array,
    vars: &Array,
    full: bool,
    eps: f64,
    reduction: Reduction,
) -> Result<Array> {
    let op = "gaussian_nll_loss";
    same_shape(op, inputs, "Inputs", targets, "targets")?;
    same_shape(op, inputs, "Inputs", vars, "vars")?;
    let v = ops::maximum(vars, &float(eps, vars)?)?;
    let sq = ops::divide(&ops::square(&ops::subtract(targets, inputs)?)?, &v)?;
    let mut loss = (0.5 * &ops::add(&ops::log(&v)?, &sq)?)?;
    if full {
        loss = (&loss + 0.5 * (2.0 * std::f64::consts::PI).ln())?;
    }
    reduction.apply(loss)
}

/// The Kullback-Leibler divergence `sum(exp(targets) * (targets - inputs))`
/// over `axis`, for log-probabilities `inputs` and `targets`.
pub fn kl_div_loss(inputs: &Array, targets: &Array, axis: isize, reduction: Reduction) -> Result<Array> {
    let terms = ops::multiply(&ops::exp(targets)?, &ops::subtract(targets, inputs)?)?;
    reduction.apply(ops::sum(&terms, Some(&[axis]), false)?)
}

/// The smooth L1 loss: `0.5 * d^2 / beta` where `d = |predictions - targets|
/// < beta`, else `d - 0.5 * beta` (equal shapes).
pub fn smooth_l1_loss(predictions: &Array, targets: &Array, beta: f64, reduction: Reduction) -> Result<Array> {
    same_shape("smooth_l1_loss", predictions, "Predictions", targets, "targets")?;
    let diff = ops::abs(&ops::subtract(predictions, targets)?)?;
    let quadratic = (&(0.5 * &ops::square(&diff)?)? / beta)?;
    let linear = (&ops::abs(&diff)? - 0.5 * beta)?;
    reduction.apply(ops::where_(&ops::less(&diff, &float(beta, &diff)?)?, &quadratic, &linear)?)
}

/// The `p`-norm distance along `axis`, `(sum(|a - b|^p) + eps)^(1 / p)`.
fn distance(a: &Array, b: &Array, axis: isize, p: f64, eps: f64) -> Result<Array> {
    let d = ops::abs(&ops::subtract(a, b)?)?;
    let total = ops::sum(&ops::power(&d, &float(p, &d)?)?, Some(&[axis]), false)?;
    let total = (&total + eps)?;
    ops::power(&total, &float(1.0 / p, &total)?)
}

/// The triplet loss `max(|A - P|_p - |A - N|_p + margin, 0)` with the
/// `p`-norm distances (p > 0) taken along `axis`, `eps` added to each sum
/// of powers before the root.
#[allow(clippy::too_many_arguments)] // MLX's parameters, in MLX's order.
pub fn triplet_loss(
    anchors: &Array,
    positives: &Array,
    negatives: &Array,
    axis: isize,
    p: f64,
    margin: f64,
    eps: f64,
    reduction: Reduction,
) -> Result<Array> {
    if p.is_nan() || p <= 0.0 {
        return Err(Error::invalid("triplet_loss", format!("The norm degree p must be positive, got {p:?}.")));
    }
    let pos = distance(anchors, positives, axis, p, eps)?;
    let neg = distance(anchors, negatives, axis, p, eps)?;
    let gap = (&ops::subtract(&pos, &neg)? + margin)?;
    reduction.apply(ops::maximum(&gap, &int(0, &gap)?)?)
}

/// The hinge loss `max(1 - inputs * targets, 0)` for targets in {-1, 1}.
pub fn hinge_loss(inputs: &Array, targets: &Array, reduction: Reduction) -> Result<Array> {
    let prod = ops::multiply(inputs, targets)?;
    let gap = ops::subtract(&int(1, &prod)?, &prod)?;
    reduction.apply(ops::maximum(&gap, &int(0, &gap)?)?)
}

/// The Huber loss: `0.5 * a^2` where `|a| <= delta`, else
/// `delta * (|a| - 0.5 * delta)`, for `a = inputs - targets`.
pub fn huber_loss(inputs: &Array, targets: &Array, delta: f64, reduction: Reduction) -> Result<Array> {
    let abs_errors = ops::abs(&ops::subtract(inputs, targets)?)?;
    let quadratic = ops::minimum(&abs_errors, &float(delta, &abs_errors)?)?;
    let linear = ops::subtract(&abs_errors, &quadratic)?;
    let squared = ops::power(&quadratic, &int(2, &quadratic)?)?;
    let loss = ops::add(&(0.5 * &squared)?, &(delta * &linear)?)?;
    reduction.apply(loss)
}

/// The log-cosh loss `log(cosh(inputs - targets))`, computed as
/// `logaddexp(e, -e) - log(2)` (no overflow).
pub fn log_cosh_loss(inputs: &Array, targets: &Array, reduction: Reduction) -> Result<Array> {
    let errors = ops::subtract(inputs, targets)?;
    let loss = (&ops::logaddexp(&errors, &ops::negative(&errors)?)? - std::f64::consts::LN_2)?;
    reduction.apply(loss)
}

/// The cosine similarity of `x1` and `x2` along `axis`:
/// `sum(x1 * x2) / max(|x1| * |x2|, eps)` (Euclidean norms).
pub fn cosine_similarity_loss(x1: &Array, x2: &Array, axis: isize, eps: f64, reduction: Reduction) -> Result<Array> {
    let axes = [axis];
    let norm = |x: &Array| -> Result<Array> { ops::sqrt(&ops::sum(&ops::square(x)?, Some(&axes), false)?) };
    let denom = ops::multiply(&norm(x1)?, &norm(x2)?)?;
    let dot = ops::sum(&ops::multiply(x1, x2)?, Some(&axes), false)?;
    reduction.apply(ops::divide(&dot, &ops::maximum(&denom, &float(eps, &denom)?)?)?)
}

/// The margin ranking loss `max(0, -targets * (inputs1 - inputs2) + margin)`
/// for targets in {-1, 1} (all three one shape).
pub fn margin_ranking_loss(
    inputs1: &Array,
    inputs2: &Array,
    targets: &Array,
    margin: f64,
    reduction: Reduction,
) -> Result<Array> {
    if !(inputs1.shape() == inputs2.shape() && inputs2.shape() == targets.shape()) {
        return Err(Error::ShapeMismatch {
            op: "margin_ranking_loss",
            msg: format!(
                "The shapes of the arguments do not match. The provided shapes are inputs1.shape={}, \
                 inputs2.shape={}, and targets.shape={}.",
                py_shape(inputs1.shape()),
                py_shape(inputs2.shape()),
                py_shape(targets.shape())
            ),
        });
    }
    let differences = ops::subtract(inputs1, inputs2)?;
    let gap = (&ops::multiply(&ops::negative(targets)?, &differences)? + margin)?;
    reduction.apply(ops::maximum(&int(0, &gap)?, &gap)?)
}
