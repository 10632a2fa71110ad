//! Loss functions (`mlx.nn.losses`), with MLX's parameter names and
//! defaults; `reduction` is `"none"`, `"mean"` or `"sum"`.

use crate::array::PyArray;
use crate::convert::to_array;
use crate::errors::IntoPyResult;
use crate::ops::wrap;
use ferrox::Array;
use ferrox_nn::losses::{self as l, Reduction};
use ferrox_python_macros::guarded;
use pyo3::prelude::*;

/// A `reduction=` argument of the loss `op`.
fn reduction(op: &'static str, name: &str) -> PyResult<Reduction> {
    Reduction::parse(op, name).py()
}

/// An optional array argument (`None` stays `None`).
fn optional(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Array>> {
    obj.filter(|o| !o.is_none()).map(|o| to_array(o, None)).transpose()
}

/// Computes the cross entropy loss between unnormalized `logits` and
/// `targets`: class indices (the logits' shape without `axis`) or
/// probabilities (the logits' shape). `weights` (the unreduced loss's
/// shape) scale each loss; `label_smoothing` in [0, 1) smooths the targets.
///
/// Args:
///     logits (array): Unnormalized log probabilities.
///     targets (array): The target values.
///     weights (array, optional): Per-class weights, or None.
///     axis (int, optional): Axis to operate along.
///     label_smoothing (float, optional): Label smoothing factor in [0, 1).
///     reduction (str, optional): Reduction over the result: ``'none'``, ``'mean'`` or ``'sum'``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(
    signature = (logits, targets, weights = None, axis = -1, label_smoothing = 0.0, reduction = "none"),
    text_signature = "(logits, targets, weights=None, axis=-1, label_smoothing=0.0, reduction='none')"
)]
fn cross_entropy(
    logits: &Bound<'_, PyAny>,
    targets: &Bound<'_, PyAny>,
    weights: Option<&Bound<'_, PyAny>>,
    axis: isize,
    label_smoothing: f64,
    reduction: &str,
) -> PyResult<PyArray> {
    let (logits, targets, weights) = (to_array(logits, None)?, to_array(targets, None)?, optional(weights)?);
    let red = self::reduction("cross_entropy", reduction)?;
    wrap(Ok(l::cross_entropy(&logits, &targets, weights.as_ref(), axis, label_smoothing, red)))
}

/// Computes the binary cross entropy loss of `inputs` (logits when
/// `with_logits`, else probabilities, whose logarithms are clipped at -100)
/// against binary `targets`, optionally scaled by `weights`.
///
/// Args:
///     inputs (array): Input arrays.
///     targets (array): The target values.
///     weights (array, optional): Per-class weights, or None.
///     with_logits (bool, optional): Whether ``inputs`` are logits (else probabilities).
///     reduction (str, optional): Reduction over the result: ``'none'``, ``'mean'`` or ``'sum'``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (inputs, targets, weights = None, with_logits = true, reduction = "mean"))]
fn binary_cross_entropy(
    inputs: &Bound<'_, PyAny>,
    targets: &Bound<'_, PyAny>,
    weights: Option<&Bound<'_, PyAny>>,
    with_logits: bool,
    reduction: &str,
) -> PyResult<PyArray> {
    let (inputs, targets, weights) = (to_array(inputs, None)?, to_array(targets, None)?, optional(weights)?);
    let red = self::reduction("binary_cross_entropy", reduction)?;
    wrap(Ok(l::binary_cross_entropy(&inputs, &targets, weights.as_ref(), with_logits, red)))
}

macro_rules! pair_losses {
    ($($name:ident($a:ident, $b:ident), $default:tt: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    ", stringify!($a), " (array): Predictions.", "\n    ", stringify!($b), " (array): Targets.", "\n    reduction (str, optional): ``'none'``, ``'mean'`` or ``'sum'``.\n\nReturns:\n    array: The loss: elementwise, or reduced to a scalar.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = ($a, $b, reduction = $default))]
        fn $name($a: &Bound<'_, PyAny>, $b: &Bound<'_, PyAny>, reduction: &str) -> PyResult<PyArray> {
            let ($a, $b) = (to_array($a, None)?, to_array($b, None)?);
            let red = self::reduction(stringify!($name), reduction)?;
            wrap(Ok(l::$name(&$a, &$b, red)))
        }
    )*};
}

pair_losses!(
    l1_loss(predictions, targets), "mean": "Computes the L1 loss `|predictions - targets|` (equal shapes).",
    mse_loss(predictions, targets), "mean": "Computes the mean squared error loss (predictions - targets)² (equal shapes).",
    hinge_loss(inputs, targets), "none": "Computes the hinge loss max(0, 1 - inputs * targets), targets in {-1, 1}.",
    log_cosh_loss(inputs, targets), "none": "Computes the log cosh loss log(cosh(inputs - targets)) without overflow.",
);

macro_rules! axis_losses {
    ($($name:ident: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    inputs (array): Predictions (log probabilities or logits).\n    targets (array): Targets.\n    axis (int, optional): Class axis. Default: ``-1``.\n    reduction (str, optional): ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'none'``.\n\nReturns:\n    array: The loss: per sample, or reduced to a scalar.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(
            signature = (inputs, targets, axis = -1, reduction = "none"),
            text_signature = "(inputs, targets, axis=-1, reduction='none')"
        )]
        fn $name(inputs: &Bound<'_, PyAny>, targets: &Bound<'_, PyAny>, axis: isize, reduction: &str) -> PyResult<PyArray> {
            let (inputs, targets) = (to_array(inputs, None)?, to_array(targets, None)?);
            let red = self::reduction(stringify!($name), reduction)?;
            wrap(Ok(l::$name(&inputs, &targets, axis, red)))
        }
    )*};
}

axis_losses!(
    nll_loss: "Computes the negative log likelihood loss -inputs[targets] of log-probabilities `inputs`\n\
               at the class indices `targets` along `axis`.",
    kl_div_loss: "Computes the Kullback-Leibler divergence sum(exp(targets) * (targets - inputs)) along `axis`\n\
                  for log-probabilities `inputs` and `targets`.",
);

/// Computes the negative log likelihood loss of `targets` under a Gaussian
/// with means `inputs` and variances `vars` (clamped below at `eps`); `full`
/// adds the constant 0.5 * log(2 pi).
///
/// Args:
///     inputs (array): Input arrays.
///     targets (array): The target values.
///     vars (array): Predicted variances.
///     full (bool, optional): Include the constant term.
///     eps (float, optional): Small constant for numerical stability.
///     reduction (str, optional): Reduction over the result: ``'none'``, ``'mean'`` or ``'sum'``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (inputs, targets, vars, full = false, eps = 1e-6, reduction = "mean"))]
fn gaussian_nll_loss(
    inputs: &Bound<'_, PyAny>,
    targets: &Bound<'_, PyAny>,
    vars: &Bound<'_, PyAny>,
    full: bool,
    eps: f64,
    reduction: &str,
) -> PyResult<PyArray> {
    let (inputs, targets, vars) = (to_array(inputs, None)?, to_array(targets, None)?, to_array(vars, None)?);
    let red = self::reduction("gaussian_nll_loss", reduction)?;
    wrap(Ok(l::gaussian_nll_loss(&inputs, &targets, &vars, full, eps, red)))
}

/// Computes the smooth L1 loss: `0.5 * d² / beta` where
/// `d = |predictions - targets| < beta`, else `d - 0.5 * beta` (equal shapes).
///
/// Args:
///     predictions (array): Predicted values.
///     targets (array): The target values.
///     beta (float, optional): The beta parameter.
///     reduction (str, optional): Reduction over the result: ``'none'``, ``'mean'`` or ``'sum'``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (predictions, targets, beta = 1.0, reduction = "mean"))]
fn smooth_l1_loss(
    predictions: &Bound<'_, PyAny>,
    targets: &Bound<'_, PyAny>,
    beta: f64,
    reduction: &str,
) -> PyResult<PyArray> {
    let (predictions, targets) = (to_array(predictions, None)?, to_array(targets, None)?);
    let red = self::reduction("smooth_l1_loss", reduction)?;
    wrap(Ok(l::smooth_l1_loss(&predictions, &targets, beta, red)))
}

/// Computes the triplet loss `max(|A - P|_p - |A - N|_p + margin, 0)`, the
/// p-norm distances taken along `axis` with `eps` added before the root.
///
/// Args:
///     anchors (array): Anchor embeddings.
///     positives (array): Positive embeddings.
///     negatives (array): Negative embeddings.
///     axis (int, optional): Axis to operate along.
///     p (float, optional): Probability.
///     margin (float, optional): Margin of the loss.
///     eps (float, optional): Small constant for numerical stability.
///     reduction (str, optional): Reduction over the result: ``'none'``, ``'mean'`` or ``'sum'``.
///
/// Returns:
///     array: The result array.
#[allow(clippy::too_many_arguments)] // MLX's parameters.
#[guarded]
#[pyfunction]
#[pyo3(signature = (anchors, positives, negatives, axis = -1, p = 2.0, margin = 1.0, eps = 1e-6, reduction = "none"), text_signature = "(anchors, positives, negatives, axis=-1, p=2, margin=1.0, eps=1e-06, reduction='none')")]
fn triplet_loss(
    anchors: &Bound<'_, PyAny>,
    positives: &Bound<'_, PyAny>,
    negatives: &Bound<'_, PyAny>,
    axis: isize,
    p: f64,
    margin: f64,
    eps: f64,
    reduction: &str,
) -> PyResult<PyArray> {
    let (a, pos, neg) = (to_array(anchors, None)?, to_array(positives, None)?, to_array(negatives, None)?);
    let red = self::reduction("triplet_loss", reduction)?;
    wrap(Ok(l::triplet_loss(&a, &pos, &neg, axis, p, margin, eps, red)))
}

/// Computes the Huber loss: `0.5 * a²` where `|a| <= delta`, else
/// `delta * (|a| - 0.5 * delta)`, for `a = inputs - targets`.
///
/// Args:
///     inputs (array): Input arrays.
///     targets (array): The target values.
///     delta (float, optional): Threshold between the quadratic and linear parts.
///     reduction (str, optional): Reduction over the result: ``'none'``, ``'mean'`` or ``'sum'``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (inputs, targets, delta = 1.0, reduction = "none"))]
fn huber_loss(inputs: &Bound<'_, PyAny>, targets: &Bound<'_, PyAny>, delta: f64, reduction: &str) -> PyResult<PyArray> {
    let (inputs, targets) = (to_array(inputs, None)?, to_array(targets, None)?);
    let red = self::reduction("huber_loss", reduction)?;
    wrap(Ok(l::huber_loss(&inputs, &targets, delta, red)))
}

/// Computes the cosine similarity `sum(x1 * x2) / max(|x1| * |x2|, eps)`
/// along `axis`.
///
/// Args:
///     x1 (array): First embeddings.
///     x2 (array): Second embeddings.
///     axis (int, optional): Axis to operate along.
///     eps (float, optional): Small constant for numerical stability.
///     reduction (str, optional): Reduction over the result: ``'none'``, ``'mean'`` or ``'sum'``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x1, x2, axis = 1, eps = 1e-8, reduction = "none"))]
fn cosine_similarity_loss(
    x1: &Bound<'_, PyAny>,
    x2: &Bound<'_, PyAny>,
    axis: isize,
    eps: f64,
    reduction: &str,
) -> PyResult<PyArray> {
    let (x1, x2) = (to_array(x1, None)?, to_array(x2, None)?);
    let red = self::reduction("cosine_similarity_loss", reduction)?;
    wrap(Ok(l::cosine_similarity_loss(&x1, &x2, axis, eps, red)))
}

/// Computes the margin ranking loss max(0, -targets * (inputs1 - inputs2)
/// + margin) for targets in {-1, 1} (all three one shape).
///
/// Args:
///     inputs1 (array): First scores.
///     inputs2 (array): Second scores.
///     targets (array): The target values.
///     margin (float, optional): Margin of the loss.
///     reduction (str, optional): Reduction over the result: ``'none'``, ``'mean'`` or ``'sum'``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (inputs1, inputs2, targets, margin = 0.0, reduction = "none"))]
fn margin_ranking_loss(
    inputs1: &Bound<'_, PyAny>,
    inputs2: &Bound<'_, PyAny>,
    targets: &Bound<'_, PyAny>,
    margin: f64,
    reduction: &str,
) -> PyResult<PyArray> {
    let (i1, i2, t) = (to_array(inputs1, None)?, to_array(inputs2, None)?, to_array(targets, None)?);
    let red = self::reduction("margin_ranking_loss", reduction)?;
    wrap(Ok(l::margin_ranking_loss(&i1, &i2, &t, margin, red)))
}

/// Adds the losses to the `nn` module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(
        m,
        cross_entropy,
        binary_cross_entropy,
        l1_loss,
        mse_loss,
        nll_loss,
        gaussian_nll_loss,
        kl_div_loss,
        smooth_l1_loss,
        triplet_loss,
        hinge_loss,
        huber_loss,
        log_cosh_loss,
        cosine_similarity_loss,
        margin_ranking_loss
    );
    Ok(())
}
