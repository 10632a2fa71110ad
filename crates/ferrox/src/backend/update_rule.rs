//! The update rules of the fused optimizer step
//! ([`crate::ops::optimizer_update`]): MLX's optimizers' per-parameter
//! formulas, each evaluated by one kernel per backend (`cpu/optimizer.rs`,
//! `cuda/optimizer.rs` with `kernels/optimizer.cu`) in float32 (float64 for
//! float64 parameters), rounding once to the parameter's dtype.
//!
//! Every step reads the parameter `p`, its gradient `g`, the rule's state
//! arrays (in the order of [`UpdateRule::state_names`]), the learning rate
//! `lr` and the step count `t` (MLX's `optimizer.step`, already incremented:
//! 1 on the first update), and writes the new parameter and states.

/// One optimizer's per-parameter update, with its hyperparameters.
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub enum UpdateRule {
    /// MLX's `SGD`: `g += weight_decay * p`; without momentum
    /// `p - lr * g`; with it `v = momentum * v + (1 - dampening) * g`
    /// (`+ g` when dampening is 0) and `p - lr * (nesterov ? g + momentum * v : v)`.
    Sgd {
        /// Momentum strength (no state when it is not positive).
        momentum: f64,
        /// L2 penalty added to the gradient.
        weight_decay: f64,
        /// Dampening of the momentum's gradient term.
        dampening: f64,
        /// Nesterov momentum.
        nesterov: bool,
    },
    /// MLX's `RMSprop`: `v = alpha * v + (1 - alpha) * g^2`,
    /// `p - lr * g / (sqrt(v) + eps)`.
    RmsProp {
        /// Smoothing constant.
        alpha: f64,
        /// Added to the denominator.
        eps: f64,
    },
    /// MLX's `Adagrad`: `v += g^2`, `p - lr * g / (sqrt(v) + eps)`.
    Adagrad {
        /// Added to the denominator.
        eps: f64,
    },
    /// MLX's `AdaDelta`: `v = rho * v + (1 - rho) * g^2`,
    /// `d = sqrt(u + eps) / sqrt(v + eps) * g`, `u = rho * u + (1 - rho) * d^2`,
    /// `p - lr * d`.
    AdaDelta {
        /// Decay of the running averages.
        rho: f64,
        /// Added inside the square roots.
        eps: f64,
    },
    /// MLX's `Adam` and `AdamW`: `p *= 1 - lr * weight_decay` (AdamW's
    /// decoupled decay; 0 for Adam), `m = b1 * m + (1 - b1) * g`,
    /// `v = b2 * v + (1 - b2) * g^2`, then `p - lr * m / (sqrt(v) + eps)`, or
    /// with bias correction `p - c1 * m / (sqrt(v) * c2 + eps)` where
    /// `c1 = lr / (1 - b1^t)` and `c2 = 1 / sqrt(1 - b2^t)`.
    Adam {
        /// Decay of the first moment.
        beta1: f64,
        /// Decay of the second moment.
        beta2: f64,
        /// Added to the denominator.
        eps: f64,
        /// Decoupled weight decay (AdamW).
        weight_decay: f64,
        /// Whether to correct the moments' bias toward zero.
        bias_correction: bool,
    },
    /// MLX's `Adamax`: `m = b1 * m + (1 - b1) * g`, `v = max(b2 * v, |g|)`,
    /// `p - lr * m / (v + eps)`.
    Adamax {
        /// Decay of the first moment.
        beta1: f64,
        /// Decay of the infinity norm.
        beta2: f64,
        /// Added to the denominator.
        eps: f64,
    },
    /// MLX's `Lion`: `c = b1 * m + (1 - b1) * g`, `m = b2 * m + (1 - b2) * g`,
    /// `p *= 1 - lr * weight_decay` (when positive), `p - lr * sign(c)`.
    Lion {
        /// Interpolation of the update direction.
        beta1: f64,
        /// Decay of the momentum.
        beta2: f64,
        /// Decoupled weight decay.
        weight_decay: f64,
    },
}

impl UpdateRule {
    /// The rule's name, for errors and kernel names (`sgd`, `adam`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            UpdateRule::Sgd { .. } => "sgd",
            UpdateRule::RmsProp { .. } => "rmsprop",
            UpdateRule::Adagrad { .. } => "adagrad",
            UpdateRule::AdaDelta { .. } => "adadelta",
            UpdateRule::Adam { .. } => "adam",
            UpdateRule::Adamax { .. } => "adamax",
            UpdateRule::Lion { .. } => "lion",
        }
    }

    /// The names of the state arrays the rule reads and writes, in order
    /// (MLX's state keys). SGD without momentum has none.
    pub fn state_names(&self) -> &'static [&'static str] {
        match self {
            UpdateRule::Sgd { momentum, .. } if *momentum <= 0.0 => &[],
            UpdateRule::Sgd { .. } | UpdateRule::RmsProp { .. } | UpdateRule::Adagrad { .. } => &["v"],
            UpdateRule::AdaDelta { .. } => &["v", "u"],
            UpdateRule::Adam { .. } | UpdateRule::Adamax { .. } => &["m", "v"],
            UpdateRule::Lion { .. } => &["m"],
        }
    }

    /// The constants the kernels take, in float64: the hyperparameters
    /// and their complements (`1 - beta` is computed here in float64 and
    /// rounded once to the compute type, as MLX's Python scalars are), in
    /// this order per rule (unused slots 0, flags 0 or 1):
    /// SGD `[momentum, weight_decay, dampening > 0 ? 1 - dampening : 1, nesterov]`;
    /// RMSprop `[alpha, 1 - alpha, eps]`; Adagrad `[eps]`;
    /// AdaDelta `[rho, 1 - rho, eps]`;
    /// Adam `[b1, 1 - b1, b2, 1 - b2, eps, weight_decay, bias_correction]`;
    /// Adamax `[b1, 1 - b1, b2, eps]`; Lion `[b1, 1 - b1, b2, 1 - b2, weight_decay]`.
    pub fn constants(&self) -> [f64; 8] {
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let mut k = [0.0; 8];
        let values: &[f64] = match *self {
            UpdateRule::Sgd { momentum, weight_decay, dampening, nesterov } => {
                let scale = if dampening > 0.0 { 1.0 - dampening } else { 1.0 };
                &[momentum, weight_decay, scale, flag(nesterov)]
            }
            UpdateRule::RmsProp { alpha, eps } => &[alpha, 1.0 - alpha, eps],
            UpdateRule::Adagrad { eps } => &[eps],
            UpdateRule::AdaDelta { rho, eps } => &[rho, 1.0 - rho, eps],
            UpdateRule::Adam { beta1, beta2, eps, weight_decay, bias_correction } => {
                &[beta1, 1.0 - beta1, beta2, 1.0 - beta2, eps, weight_decay, flag(bias_correction)]
            }
            UpdateRule::Adamax { beta1, beta2, eps } => &[beta1, 1.0 - beta1, beta2, eps],
            UpdateRule::Lion { beta1, beta2, weight_decay } => &[beta1, 1.0 - beta1, beta2, 1.0 - beta2, weight_decay],
        };
        k[..values.len()].copy_from_slice(values);
        k
    }
}
