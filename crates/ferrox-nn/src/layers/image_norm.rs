//! Normalization layers of channels-last inputs `[N, ..., C]`:
//! [`BatchNorm`], [`InstanceNorm`] and [`GroupNorm`] (MLX's).
//! [`InstanceNorm`] and [`GroupNorm`] with `pytorch_compatible` normalize
//! with the fused [`ferrox::ops::fast::layer_norm`], as MLX's do.

use crate::module::{Entry, EntryMut, Forward, Module, Param};
use ferrox::{ops, Array, Dtype, Error, Result};
use std::cell::RefCell;

/// An error naming `layer` unless `eps` is positive.
fn check_eps(layer: &'static str, eps: f64) -> Result<()> {
    if eps > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(layer, format!("'eps' must be positive but got {eps:?}.")))
    }
}

/// An error naming `layer` unless the last axis of `x` has `channels`
/// entries.
fn check_channels(layer: &'static str, x: &Array, channels: usize) -> Result<()> {
    let last = x.shape().last().copied().unwrap_or(0);
    if last != channels {
        return Err(Error::invalid(
            layer,
            format!("Expected an input with {channels} features in its last axis but got {last}."),
        ));
    }
    Ok(())
}

/// A per-channel scale (ones) and shift (zeros) of `dims` channels when
/// `affine`.
fn affine_params(dims: usize, affine: bool) -> Result<(Option<Param>, Option<Param>)> {
    if !affine {
        return Ok((None, None));
    }
    Ok((Some(Param::new(ops::ones(&[dims], Dtype::F32)?)), Some(Param::new(ops::zeros(&[dims], Dtype::F32)?))))
}

/// `weight * y + bias` when both are present, else `y`.
fn apply_affine(y: Array, weight: &Option<Param>, bias: &Option<Param>) -> Result<Array> {
    match (weight, bias) {
        (Some(w), Some(b)) => &ops::multiply(w, &y)? + &**b,
        _ => Ok(y),
    }
}

/// `shape` as the signed extents `reshape` takes.
fn signed(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

/// Instance normalization of `[N, ..., C]` inputs: each sample's channels
/// are normalized over the spatial axes, `(x - mean) / sqrt(var + eps)`,
/// then scaled by `weight` and shifted by `bias` when affine.
#[derive(Clone, Debug)]
pub struct InstanceNorm {
    /// The per-channel scale, `[dims]` (ones), when affine.
    pub weight: Option<Param>,
    /// The per-channel shift, `[dims]` (zeros), when affine.
    pub bias: Option<Param>,
    dims: usize,
    eps: f64,
    training: bool,
}

impl InstanceNorm {
    /// MLX's defaults: `eps = 1e-5`, not affine.
    pub fn new(dims: usize) -> Result<InstanceNorm> {
        InstanceNorm::with_options(dims, 1e-5, false)
    }

    /// A layer over `dims` channels adding `eps` (positive) to the
    /// variance, learning `weight` and `bias` when `affine`.
    pub fn with_options(dims: usize, eps: f64, affine: bool) -> Result<InstanceNorm> {
        check_eps("InstanceNorm", eps)?;
        let (weight, bias) = affine_params(dims, affine)?;
        Ok(InstanceNorm { weight, bias, dims, eps, training: true })
    }

    /// The number of channels.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The constant added to the variance.
    pub fn eps(&self) -> f64 {
        self.eps
    }
}

impl Module for InstanceNorm {
    entries!("weight": opt weight, "bias": opt bias);
    training_flag!();
}

impl Forward for InstanceNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        let nd = x.ndim();
        if nd < 3 {
            return Err(Error::invalid(
                "InstanceNorm",
                format!(
                    "InstanceNorm expects inputs with at least 3 dimensions (N, ..., C) but the input has {nd} \
                     dimensions."
                ),
            ));
        }
        check_channels("InstanceNorm", x, self.dims)?;
        let (batch, features, spatial) = (x.shape()[0], x.shape()[nd - 1], x.shape()[1..nd - 1].to_vec());
        // [N, *spatial, C] -> [N, C, prod(spatial)], normalized over the last axis, and back.
        let mut to_first = vec![0, nd as isize - 1];
        to_first.extend(1..nd as isize - 1);
        let y = ops::transpose(x, Some(&to_first))?.reshape(&[batch as isize, features as isize, -1])?;
        let y = ops::fast::layer_norm(&y, None, None, self.eps as f32)?;
        let mut first = vec![batch, features];
        first.extend(&spatial);
        let mut to_last = vec![0];
        to_last.extend(2..nd as isize);
        to_last.push(1);
        let y = ops::transpose(&y.reshape(&signed(&first))?, Some(&to_last))?;
        apply_affine(y, &self.weight, &self.bias)
    }
}

/// Group normalization of `[N, ..., C]` inputs: the channels are split
/// into `num_groups` groups and each sample's group is normalized over its
/// channels and the spatial axes, then scaled by `weight` and shifted by
/// `bias` when affine. As in MLX, channel `c` belongs to group
/// `c % num_groups` unless `pytorch_compatible`, which groups consecutive
/// channels (as PyTorch) and uses [`LayerNorm`](super::LayerNorm)'s
/// arithmetic.
#[derive(Clone, Debug)]
pub struct GroupNorm {
    /// The per-channel scale, `[dims]` (ones), when affine.
    pub weight: Option<Param>,
    /// The per-channel shift, `[dims]` (zeros), when affine.
    pub bias: Option<Param>,
    num_groups: usize,
    dims: usize,
    eps: f64,
    pytorch_compatible: bool,
    training: bool,
}

impl GroupNorm {
    /// MLX's defaults: `eps = 1e-5`, affine, MLX's grouping.
    pub fn new(num_groups: usize, dims: usize) -> Result<GroupNorm> {
        GroupNorm::with_options(num_groups, dims, 1e-5, true, false)
    }

    /// A layer normalizing `num_groups` groups of `dims` channels (the
    /// groups must divide the channels), adding `eps` (positive) to the
    /// variance, learning `weight` and `bias` when `affine`, grouping as
    /// PyTorch when `pytorch_compatible`.
    pub fn with_options(
        num_groups: usize,
        dims: usize,
        eps: f64,
        affine: bool,
        pytorch_compatible: bool,
    ) -> Result<GroupNorm> {
        let layer = "GroupNorm";
        check_eps(layer, eps)?;
        if num_groups == 0 {
            return Err(Error::invalid(layer, "The number of groups (0) must be a positive integer."));
        }
        if dims == 0 {
            return Err(Error::invalid(layer, "The number of features (0) must be a positive integer."));
        }
        if !dims.is_multiple_of(num_groups) {
            return Err(Error::invalid(
                layer,
                format!(
                    "The number of features ({dims}) must be evenly divisible by the number of groups ({num_groups})."
                ),
            ));
        }
        let (weight, bias) = affine_params(dims, affine)?;
        Ok(GroupNorm { weight, bias, num_groups, dims, eps, pytorch_compatible, training: true })
    }

    /// The number of groups.
    pub fn num_groups(&self) -> usize {
        self.num_groups
    }

    /// The number of channels.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The constant added to the variance.
    pub fn eps(&self) -> f64 {
        self.eps
    }

    /// Whether the channels are grouped as PyTorch groups them.
    pub fn pytorch_compatible(&self) -> bool {
        self.pytorch_compatible
    }

    /// Normalizes groups of consecutive channels.
    fn pytorch_group_norm(&self, x: &Array) -> Result<Array> {
        let (batch, groups) = (x.shape()[0] as isize, self.num_groups as isize);
        let size = (self.dims / self.num_groups) as isize;
        let swap = [0, 2, 1, 3];
        let y = ops::transpose(&x.reshape(&[batch, -1, groups, size])?, Some(&swap))?.reshape(&[batch, groups, -1])?;
        let y = ops::fast::layer_norm(&y, None, None, self.eps as f32)?;
        ops::transpose(&y.reshape(&[batch, groups, -1, size])?, Some(&swap))?.reshape(&signed(x.shape()))
    }

    /// Normalizes the groups of channels `c % num_groups`.
    fn mlx_group_norm(&self, x: &Array) -> Result<Array> {
        let y = x.reshape(&[x.shape()[0] as isize, -1, self.num_groups as isize])?;
        let mean = ops::mean(&y, Some(&[1]), true)?;
        let var = ops::var(&y, Some(&[1]), true, 0)?;
        let y = ops::multiply(&(&y - &mean)?, &ops::rsqrt(&(&var + self.eps)?)?)?;
        y.reshape(&signed(x.shape()))
    }
}

impl Module for GroupNorm {
    entries!("weight": opt weight, "bias": opt bias);
    training_flag!();
}

impl Forward for GroupNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        if x.ndim() < 2 {
            return Err(Error::invalid(
                "GroupNorm",
                format!("Expected an input with at least 2 dimensions (N, ..., C) but got {} dimensions.", x.ndim()),
            ));
        }
        check_channels("GroupNorm", x, self.dims)?;
        let y = if self.pytorch_compatible { self.pytorch_group_norm(x)? } else { self.mlx_group_norm(x)? };
        apply_affine(y, &self.weight, &self.bias)
    }
}

/// Batch normalization of `[N, C]`, `[N, L, C]` or `[N, H, W, C]` inputs:
/// each feature is normalized over the batch and spatial axes, then scaled
/// by `weight` and shifted by `bias` when affine.
///
/// In training mode the batch statistics normalize the input and, when
/// the layer tracks running statistics, each forward pass updates
/// `running_mean` and `running_var` (with the unbiased variance) by
/// `r = (1 - momentum) r + momentum s`; in evaluation mode the running
/// statistics normalize instead. The running statistics are parameters
/// that stay frozen (never trainable, also after `unfreeze`); they live in
/// cells so that [`Forward::forward`] can update them.
#[derive(Clone, Debug)]
pub struct BatchNorm {
    /// The per-feature scale, `[num_features]` (ones), when affine.
    pub weight: Option<Param>,
    /// The per-feature shift, `[num_features]` (zeros), when affine.
    pub bias: Option<Param>,
    running_mean: Option<RefCell<Param>>,
    running_var: Option<RefCell<Param>>,
    num_features: usize,
    eps: f64,
    momentum: f64,
    training: bool,
}

impl BatchNorm {
    /// MLX's defaults: `eps = 1e-5`, `momentum = 0.1`, affine, tracking
    /// running statistics.
    pub fn new(num_features: usize) -> Result<BatchNorm> {
        BatchNorm::with_options(num_features, 1e-5, 0.1, true, true)
    }

    /// A layer over `num_features` features adding `eps` (positive) to the
    /// variance, learning `weight` and `bias` when `affine`, keeping
    /// `running_mean` (zeros) and `running_var` (ones), updated with
    /// `momentum`, when `track_running_stats`.
    pub fn with_options(
        num_features: usize,
        eps: f64,
        momentum: f64,
        affine: bool,
        track_running_stats: bool,
    ) -> Result<BatchNorm> {
        check_eps("BatchNorm", eps)?;
        let (weight, bias) = affine_params(num_features, affine)?;
        let stat = |a: Array| {
            let mut p = Param::new(a);
            p.set_frozen(true);
            RefCell::new(p)
        };
        let (running_mean, running_var) = match track_running_stats {
            true => (
                Some(stat(ops::zeros(&[num_features], Dtype::F32)?)),
                Some(stat(ops::ones(&[num_features], Dtype::F32)?)),
            ),
            false => (None, None),
        };
        Ok(BatchNorm { weight, bias, running_mean, running_var, num_features, eps, momentum, training: true })
    }

    /// The number of features.
    pub fn num_features(&self) -> usize {
        self.num_features
    }

    /// The constant added to the variance.
    pub fn eps(&self) -> f64 {
        self.eps
    }

    /// The weight of a batch in the running statistics.
    pub fn momentum(&self) -> f64 {
        self.momentum
    }

    /// Whether the layer keeps running statistics.
    pub fn track_running_stats(&self) -> bool {
        self.running_mean.is_some()
    }

    /// The running mean, when the layer keeps one.
    pub fn running_mean(&self) -> Option<Array> {
        self.running_mean.as_ref().map(|p| p.borrow().array().clone())
    }

    /// The running (unbiased) variance, when the layer keeps one.
    pub fn running_var(&self) -> Option<Array> {
        self.running_var.as_ref().map(|p| p.borrow().array().clone())
    }
}

/// `(1 - momentum) * stat + momentum * batch`, stored in `stat`.
fn blend(stat: &RefCell<Param>, batch: &Array, momentum: f64) -> Result<()> {
    let old = stat.borrow().array().clone();
    let new = (&(&old * (1.0 - momentum))? + &(batch * momentum)?)?;
    stat.borrow_mut().set(new);
    Ok(())
}

impl Module for BatchNorm {
    fn visit_entries(&self, f: &mut dyn FnMut(&str, Entry<'_>)) {
        if let Some(w) = &self.weight {
            f("weight", Entry::Param(w));
        }
        if let Some(b) = &self.bias {
            f("bias", Entry::Param(b));
        }
        for (name, stat) in [("running_mean", &self.running_mean), ("running_var", &self.running_var)] {
            if let Some(p) = stat {
                f(name, Entry::Param(&p.borrow()));
            }
        }
    }

    fn visit_entries_mut(&mut self, f: &mut dyn FnMut(&str, EntryMut<'_>)) {
        if let Some(w) = &mut self.weight {
            f("weight", EntryMut::Param(w));
        }
        if let Some(b) = &mut self.bias {
            f("bias", EntryMut::Param(b));
        }
        for (name, stat) in [("running_mean", &mut self.running_mean), ("running_var", &mut self.running_var)] {
            if let Some(p) = stat {
                let p = p.get_mut();
                f(name, EntryMut::Param(&mut *p));
                // The running statistics stay frozen whatever `f` did.
                p.set_frozen(true);
            }
        }
    }

    training_flag!();
}

impl Forward for BatchNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        let nd = x.ndim();
        if !(2..=4).contains(&nd) {
            return Err(Error::invalid(
                "BatchNorm",
                format!("Expected input tensor to have 2, 3 or 4 dimensions, but got {nd}"),
            ));
        }
        check_channels("BatchNorm", x, self.num_features)?;
        if self.training && x.shape()[..nd - 1].iter().product::<usize>() == 1 {
            return Err(Error::invalid("BatchNorm", "BatchNorm training requires more than one value per channel."));
        }
        let axes: Vec<isize> = (0..nd as isize - 1).collect();
        let (mut mean, mut var) = (ops::mean(x, Some(&axes), false)?, ops::var(x, Some(&axes), false, 0)?);
        if let (Some(rm), Some(rv)) = (&self.running_mean, &self.running_var) {
            if self.training {
                blend(rm, &mean, self.momentum)?;
                blend(rv, &ops::var(x, Some(&axes), false, 1)?, self.momentum)?;
            } else {
                mean = rm.borrow().array().clone();
                var = rv.borrow().array().clone();
            }
        }
        let y = ops::multiply(&(x - &mean)?, &ops::rsqrt(&(&var + self.eps)?)?)?;
        apply_affine(y, &self.weight, &self.bias)
    }
}
