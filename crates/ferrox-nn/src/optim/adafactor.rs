//! Adafactor (MLX's `Adafactor`): second moments factored into row and
//! column averages for parameters of two or more dimensions, update
//! clipping by RMS, relative step sizes and parameter scaling.

use ferrox::{ops, Array, Dtype, Error, Result, Scalar};

/// Adafactor's hyperparameters (MLX's defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Adafactor {
    /// The learning rate, used only without `relative_step`.
    pub learning_rate: Option<f64>,
    /// Added to the squared gradient, and the lower bound of the
    /// parameter scale.
    pub eps: (f64, f64),
    /// Clips the unscaled update's RMS at this value.
    pub clip_threshold: f64,
    /// Exponent of the step in the second-moment decay.
    pub decay_rate: f64,
    /// First-moment decay, when a first moment is kept.
    pub beta_1: Option<f64>,
    /// Decoupled weight decay.
    pub weight_decay: f64,
    /// Scales the step by the parameter's RMS.
    pub scale_parameter: bool,
    /// Computes the step size from the step count instead of the learning rate.
    pub relative_step: bool,
    /// Warms the relative step size up linearly.
    pub warmup_init: bool,
}

impl Default for Adafactor {
    fn default() -> Adafactor {
        Adafactor {
            learning_rate: None,
            eps: (1e-30, 1e-3),
            clip_threshold: 1.0,
            decay_rate: -0.8,
            beta_1: None,
            weight_decay: 0.0,
            scale_parameter: true,
            relative_step: true,
            warmup_init: false,
        }
    }
}

impl Adafactor {
    /// The state names for `parameter`, in the order [`adafactor_update`]
    /// takes them (MLX's keys).
    pub fn state_names(&self, parameter: &Array) -> Vec<&'static str> {
        let mut names =
            if parameter.ndim() >= 2 { vec!["exp_avg_sq_row", "exp_avg_sq_col"] } else { vec!["exp_avg_sq"] };
        if self.beta_1.is_some() {
            names.push("exp_avg");
        }
        names
    }

    /// Zero states for `parameter` (row and column averages of its shape
    /// without the last or the second-to-last axis when factored).
    pub fn initial_state(&self, parameter: &Array) -> Result<Vec<Array>> {
        let (shape, dtype) = (parameter.shape(), parameter.dtype());
        let mut states = if parameter.ndim() >= 2 {
            let n = shape.len();
            let mut col = shape[..n - 2].to_vec();
            col.push(shape[n - 1]);
            vec![ops::zeros(&shape[..n - 1], dtype)?, ops::zeros(&col, dtype)?]
        } else {
            vec![ops::zeros_like(parameter)?]
        };
        if self.beta_1.is_some() {
            states.push(ops::zeros_like(parameter)?);
        }
        Ok(states)
    }
}

/// A Python float next to `like`, as MLX types it.
fn float(value: f64, like: &Array) -> Result<Array> {
    ops::weak_scalar(Scalar::Float(value), like.dtype())
}

/// `sqrt(mean(x^2))`.
fn rms(x: &Array) -> Result<Array> {
    ops::sqrt(&ops::mean(&ops::square(x)?, None, false)?)
}

/// One Adafactor step (MLX's `Adafactor.apply_single`): returns the new
/// parameter and states (see [`Adafactor::state_names`]). `learning_rate`
/// is required unless `relative_step`; `step` counts updates (1 first).
pub fn adafactor_update(
    cfg: &Adafactor,
    parameter: &Array,
    gradient: &Array,
    states: &[Array],
    learning_rate: Option<&Array>,
    step: &Array,
) -> Result<Vec<Array>> {
    const OP: &str = "Adafactor";
    let names = cfg.state_names(parameter);
    if states.len() != names.len() {
        return Err(Error::invalid(OP, format!("takes the states {names:?}, got {} arrays.", states.len())));
    }
    if gradient.shape() != parameter.shape() {
        return Err(Error::invalid(
            OP,
            format!("the gradient has shape {:?}, the parameter {:?}.", gradient.shape(), parameter.shape()),
        ));
    }
    let factored = gradient.ndim() >= 2;
    let step = step.astype(Dtype::F32)?;
    let parameter_rms = rms(parameter)?;
    let dtype = parameter_rms.dtype();
    // The step size: relative (from the step count) or the learning rate,
    // times the parameter scale.
    let relative = if cfg.relative_step {
        let min_step = if cfg.warmup_init { ops::multiply(&float(1e-6, &step)?, &step)? } else { float(1e-2, &step)? };
        ops::minimum(&min_step, &ops::rsqrt(&step)?)?
    } else {
        learning_rate
            .ok_or_else(|| Error::invalid(OP, "a learning rate is required when relative_step is False."))?
            .clone()
    };
    let relative = relative.astype(dtype)?;
    let learning_rate = if cfg.scale_parameter {
        ops::multiply(&ops::maximum(&float(cfg.eps.1, &parameter_rms)?, &parameter_rms)?, &relative)?
    } else {
        relative
    };
    // In the parameters' dtype, as MLX's `1.0 - (step ** decay_rate).astype(dtype)`.
    let decay = ops::power(&step, &float(cfg.decay_rate, &step)?)?.astype(dtype)?;
    let beta_2 = ops::subtract(&float(1.0, &decay)?, &decay)?;
    let one_minus_beta_2 = ops::subtract(&float(1.0, &beta_2)?, &beta_2)?;
    let decayed = |state: &Array, fresh: &Array| -> Result<Array> {
        ops::add(&ops::multiply(&beta_2, state)?, &ops::multiply(&one_minus_beta_2, fresh)?)
    };
    let squared = ops::add(&ops::square(gradient)?, &float(cfg.eps.0, gradient)?)?;
    let mut new_states = Vec::with_capacity(states.len());
    let mut update = if factored {
        let row = decayed(&states[0], &ops::mean(&squared, Some(&[-1]), false)?)?;
        let col = decayed(&states[1], &ops::mean(&squared, Some(&[-2]), false)?)?;
        let r_factor = ops::rsqrt(&ops::divide(&row, &ops::mean(&row, Some(&[-1]), true)?)?)?;
        let c_factor = ops::rsqrt(&col)?;
        let approx = ops::multiply(&r_factor.expand_dims(&[-1])?, &c_factor.expand_dims(&[-2])?)?;
        new_states.push(row);
        new_states.push(col);
        ops::multiply(&approx, gradient)?
    } else {
        let sq = decayed(&states[0], &squared)?;
        let u = ops::multiply(&ops::rsqrt(&sq)?, gradient)?;
        new_states.push(sq);
        u
    };
    let clip =
        ops::maximum(&float(1.0, &update)?, &ops::divide(&rms(&update)?, &float(cfg.clip_threshold, &update)?)?)?;
    update = ops::multiply(&learning_rate, &ops::divide(&update, &clip)?)?;
    if let Some(beta_1) = cfg.beta_1 {
        let exp_avg = ops::add(
            &ops::multiply(&float(beta_1, &states[states.len() - 1])?, &states[states.len() - 1])?,
            &ops::multiply(&float(1.0 - beta_1, &update)?, &update)?,
        )?;
        new_states.push(exp_avg.clone());
        update = exp_avg;
    }
    let mut parameter = parameter.clone();
    if cfg.weight_decay != 0.0 {
        let decay = ops::multiply(&float(-cfg.weight_decay, &learning_rate)?, &learning_rate)?;
        parameter = ops::add(&parameter, &ops::multiply(&parameter, &decay)?)?;
    }
    let mut out = vec![ops::subtract(&parameter, &update)?];
    out.extend(new_states);
    Ok(out)
}
