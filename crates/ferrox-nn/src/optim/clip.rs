//! Gradient clipping by global norm (MLX's `optimizers.clip_grad_norm`).

use ferrox::{ops, Array, Error, Result, Scalar};
use std::collections::BTreeMap;

/// `grads` scaled by `min(max_norm / (norm + 1e-6), 1)`, where `norm` is
/// the L2 norm of all gradients together, and that norm.
pub fn clip_grad_norm(grads: &BTreeMap<String, Array>, max_norm: f64) -> Result<(BTreeMap<String, Array>, Array)> {
    if max_norm < 0.0 || max_norm.is_nan() {
        return Err(Error::invalid(
            "clip_grad_norm",
            format!("max_norm should be >=0, {max_norm} was provided instead"),
        ));
    }
    let mut squared = Array::scalar(0.0f32);
    for g in grads.values() {
        squared = ops::add(&squared, &ops::sum(&ops::square(g)?, None, false)?)?;
    }
    let norm = ops::sqrt(&squared)?;
    let weak = |v: f64| ops::weak_scalar(Scalar::Float(v), norm.dtype());
    let normalizer = ops::minimum(&ops::divide(&weak(max_norm)?, &ops::add(&norm, &weak(1e-6)?)?)?, &weak(1.0)?)?;
    let clipped = grads
        .iter()
        .map(|(k, g)| Ok((k.clone(), ops::multiply(g, &normalizer)?)))
        .collect::<Result<BTreeMap<_, _>>>()?;
    Ok((clipped, norm))
}
