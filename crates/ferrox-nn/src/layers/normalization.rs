//! Normalization layers, [`LayerNorm`] and [`RMSNorm`], and their
//! functional forms [`layer_norm`] and [`rms_norm`].
//!
//! Both normalize over the last axis with the arithmetic of MLX's
//! `fast.layer_norm` / `fast.rms_norm`: statistics in float32 for 16-bit
//! (and integer) inputs, in the input's precision otherwise; the
//! normalized values are cast to the output dtype (the input's promoted
//! with the affine parameters') before the affine transform.

use crate::module::{Forward, Module, Param};
use ferrox::{ops, Array, Dtype, Error, Result};

/// `x` in its compute dtype and the output dtype, checked as MLX's fast
/// normalizations check them (`op` names the function in errors).
fn normalize_input(op: &'static str, x: &Array, affine: &[Option<&Array>]) -> Result<(Array, Dtype)> {
    if x.ndim() == 0 {
        return Err(Error::invalid(op, "Input must have at least 1 dimension but got input with 0 dimensions."));
    }
    let out_type = affine.iter().flatten().fold(x.dtype(), |t, p| Dtype::promote(t, p.dtype()));
    if !out_type.is_floating() {
        return Err(Error::invalid(op, format!("Received unsupported type {out_type}.")));
    }
    let compute = match x.dtype() {
        Dtype::F32 | Dtype::F64 => x.dtype(),
        _ => Dtype::F32,
    };
    Ok((x.astype(compute)?, out_type))
}

/// An error unless the affine parameter `p` (called `what`) is 1-D with one
/// entry per feature of `x`.
fn check_affine(op: &'static str, what: &str, x: &Array, p: Option<&Array>) -> Result<()> {
    let Some(p) = p else { return Ok(()) };
    if p.ndim() != 1 {
        return Err(Error::invalid(op, format!("{what} must have 1 dimension but has {} dimensions.", p.ndim())));
    }
    let features = x.shape()[x.ndim() - 1];
    if p.size() != features {
        return Err(Error::invalid(
            op,
            format!("{what} must have the same size as the last dimension of x but has {} elements.", p.size()),
        ));
    }
    Ok(())
}

/// `y` times `weight` plus `bias` (those given), both cast to `y`'s dtype.
fn affine(y: Array, weight: Option<&Array>, bias: Option<&Array>) -> Result<Array> {
    let y = match weight {
        Some(w) => ops::multiply(&y, &w.astype(y.dtype())?)?,
        None => y,
    };
    match bias {
        Some(b) => ops::add(&y, &b.astype(y.dtype())?),
        None => Ok(y),
    }
}

/// `(x - mean) / sqrt(var + eps) * weight + bias` over the last axis of `x`
/// (MLX's `fast.layer_norm`); `weight` and `bias` are optional vectors of
/// the last axis's size.
pub fn layer_norm(x: &Array, weight: Option<&Array>, bias: Option<&Array>, eps: f64) -> Result<Array> {
    let op = "layer_norm";
    let (xc, out_type) = normalize_input(op, x, &[weight, bias])?;
    check_affine(op, "weight", x, weight)?;
    check_affine(op, "bias", x, bias)?;
    let centered = ops::subtract(&xc, &ops::mean(&xc, Some(&[-1]), true)?)?;
    let var = ops::mean(&ops::square(&centered)?, Some(&[-1]), true)?;
    let y = ops::multiply(&centered, &ops::rsqrt(&(&var + eps)?)?)?.astype(out_type)?;
    affine(y, weight, bias)
}

/// `x / sqrt(mean(x^2) + eps) * weight` over the last axis of `x` (MLX's
/// `fast.rms_norm`); `weight` is an optional vector of the last axis's size.
pub fn rms_norm(x: &Array, weight: Option<&Array>, eps: f64) -> Result<Array> {
    let op = "rms_norm";
    let (xc, out_type) = normalize_input(op, x, &[weight])?;
    check_affine(op, "(*weight)", x, weight)?;
    let ms = ops::mean(&ops::square(&xc)?, Some(&[-1]), true)?;
    let y = ops::multiply(&xc, &ops::rsqrt(&(&ms + eps)?)?)?.astype(out_type)?;
    affine(y, weight, None)
}

/// An error unless `eps` is positive.
fn check_eps(layer: &'static str, eps: f64) -> Result<()> {
    if eps > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(layer, format!("'eps' must be positive but got {eps:?}.")))
    }
}

/// Layer normalization over the last axis, with per-feature `weight`
/// (ones) and `bias` (zeros).
#[derive(Clone, Debug)]
pub struct LayerNorm {
    /// The scale, `[dims]`, when the layer is affine.
    pub weight: Option<Param>,
    /// The shift, `[dims]`, when the layer is affine with a bias.
    pub bias: Option<Param>,
    dims: usize,
    eps: f64,
    training: bool,
}

impl LayerNorm {
    /// MLX's default: affine with a bias, `eps = 1e-5`.
    pub fn new(dims: usize) -> Result<LayerNorm> {
        LayerNorm::with_options(dims, 1e-5, true, true)
    }

    /// A layer over `dims` features adding `eps` (positive) to the
    /// variance, learning `weight` when `affine` and `bias` when also `bias`.
    pub fn with_options(dims: usize, eps: f64, affine: bool, bias: bool) -> Result<LayerNorm> {
        check_eps("LayerNorm", eps)?;
        let weight = if affine { Some(Param::new(ops::ones(&[dims], Dtype::F32)?)) } else { None };
        let bias = if affine && bias { Some(Param::new(ops::zeros(&[dims], Dtype::F32)?)) } else { None };
        Ok(LayerNorm { weight, bias, dims, eps, training: true })
    }

    /// The number of features.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The constant added to the variance.
    pub fn eps(&self) -> f64 {
        self.eps
    }
}

impl Module for LayerNorm {
    entries!("weight": opt weight, "bias": opt bias);
    training_flag!();
}

impl Forward for LayerNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        layer_norm(x, self.weight.as_deref(), self.bias.as_deref(), self.eps)
    }
}

/// Root-mean-square normalization over the last axis, with per-feature
/// `weight` (ones).
#[derive(Clone, Debug)]
pub struct RMSNorm {
    /// The scale, `[dims]`.
    pub weight: Param,
    eps: f64,
    training: bool,
}

impl RMSNorm {
    /// MLX's default: `eps = 1e-5`.
    pub fn new(dims: usize) -> Result<RMSNorm> {
        RMSNorm::with_eps(dims, 1e-5)
    }

    /// A layer over `dims` features adding `eps` (positive) to the mean
    /// square.
    pub fn with_eps(dims: usize, eps: f64) -> Result<RMSNorm> {
        check_eps("RMSNorm", eps)?;
        Ok(RMSNorm { weight: Param::new(ops::ones(&[dims], Dtype::F32)?), eps, training: true })
    }

    /// The constant added to the mean square.
    pub fn eps(&self) -> f64 {
        self.eps
    }
}

impl Module for RMSNorm {
    entries!("weight": param weight);
    training_flag!();
}

impl Forward for RMSNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        rms_norm(x, Some(&self.weight), self.eps)
    }
}
