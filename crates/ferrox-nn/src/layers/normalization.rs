//! Normalization layers, [`LayerNorm`] and [`RMSNorm`], and their
//! functional forms [`layer_norm`] and [`rms_norm`].
//!
//! Both normalize over the last axis with the fused kernels of
//! [`ferrox::ops::fast`] (MLX's `fast.layer_norm` / `fast.rms_norm`).

use crate::module::{Forward, Module, Param};
use ferrox::{ops, Array, Dtype, Error, Result};

/// `(x - mean) / sqrt(var + eps) * weight + bias` over the last axis of `x`
/// (MLX's `fast.layer_norm`); `weight` and `bias` are optional vectors of
/// the last axis's size.
pub fn layer_norm(x: &Array, weight: Option<&Array>, bias: Option<&Array>, eps: f64) -> Result<Array> {
    ops::fast::layer_norm(x, weight, bias, eps as f32)
}

/// `x / sqrt(mean(x^2) + eps) * weight` over the last axis of `x` (MLX's
/// `fast.rms_norm`); `weight` is an optional vector of the last axis's size.
pub fn rms_norm(x: &Array, weight: Option<&Array>, eps: f64) -> Result<Array> {
    ops::fast::rms_norm(x, weight, eps as f32)
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
