//! [`Optimizer`] and the configurations of the elementwise rules.

use super::schedulers::Schedule;
use super::{adafactor_update, muon_update, Adafactor, Muon};
use ferrox::backend::UpdateRule;
use ferrox::ops::{self, optimizer_update};
use ferrox::{Array, Error, Result};
use std::collections::BTreeMap;

/// What an optimizer computes per parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    /// An elementwise rule run by the fused kernel.
    Fused(UpdateRule),
    /// Adafactor's factored second moments.
    Adafactor(Adafactor),
    /// Muon's orthogonalized momentum.
    Muon(Muon),
}

/// A rule with its starting learning rate (what [`Optimizer::new`] takes;
/// every configuration struct converts into it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// The per-parameter rule.
    pub rule: Rule,
    /// The learning rate (Adafactor with a relative step ignores it).
    pub learning_rate: f64,
}

/// Declares a configuration struct with MLX's defaults and its conversion.
macro_rules! config {
    ($(#[$doc:meta])* $Name:ident { $($(#[$fdoc:meta])* $field:ident: $ty:ty = $default:expr),* $(,)? } => |$c:ident| $rule:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $Name {
            /// The learning rate.
            pub learning_rate: f64,
            $($(#[$fdoc])* pub $field: $ty,)*
        }
        impl Default for $Name {
            /// MLX's defaults (learning rate 1e-3 where MLX requires one).
            fn default() -> $Name {
                $Name { learning_rate: 1e-3, $($field: $default),* }
            }
        }
        impl From<$Name> for Config {
            fn from($c: $Name) -> Config {
                Config { rule: Rule::Fused($rule), learning_rate: $c.learning_rate }
            }
        }
    };
}

config!(
    /// MLX's `SGD`.
    Sgd {
        /// Momentum strength (0: plain SGD).
        momentum: f64 = 0.0,
        /// L2 penalty added to the gradient.
        weight_decay: f64 = 0.0,
        /// Dampening of the momentum's gradient term.
        dampening: f64 = 0.0,
        /// Nesterov momentum (needs momentum and no dampening).
        nesterov: bool = false,
    } => |c| UpdateRule::Sgd { momentum: c.momentum, weight_decay: c.weight_decay, dampening: c.dampening, nesterov: c.nesterov }
);
config!(
    /// MLX's `RMSprop`.
    RmsProp {
        /// Smoothing constant.
        alpha: f64 = 0.99,
        /// Added to the denominator.
        eps: f64 = 1e-8,
    } => |c| UpdateRule::RmsProp { alpha: c.alpha, eps: c.eps }
);
config!(
    /// MLX's `Adagrad`.
    Adagrad {
        /// Added to the denominator.
        eps: f64 = 1e-8,
    } => |c| UpdateRule::Adagrad { eps: c.eps }
);
config!(
    /// MLX's `AdaDelta`.
    AdaDelta {
        /// Decay of the running averages.
        rho: f64 = 0.9,
        /// Added inside the square roots.
        eps: f64 = 1e-6,
    } => |c| UpdateRule::AdaDelta { rho: c.rho, eps: c.eps }
);
config!(
    /// MLX's `Adam`.
    Adam {
        /// Decays of the first and second moments.
        betas: (f64, f64) = (0.9, 0.999),
        /// Added to the denominator.
        eps: f64 = 1e-8,
        /// Whether to correct the moments' bias.
        bias_correction: bool = false,
    } => |c| UpdateRule::Adam { beta1: c.betas.0, beta2: c.betas.1, eps: c.eps, weight_decay: 0.0, bias_correction: c.bias_correction }
);
config!(
    /// MLX's `AdamW` (Adam with decoupled weight decay).
    AdamW {
        /// Decays of the first and second moments.
        betas: (f64, f64) = (0.9, 0.999),
        /// Added to the denominator.
        eps: f64 = 1e-8,
        /// Decoupled weight decay.
        weight_decay: f64 = 0.01,
        /// Whether to correct the moments' bias.
        bias_correction: bool = false,
    } => |c| UpdateRule::Adam { beta1: c.betas.0, beta2: c.betas.1, eps: c.eps, weight_decay: c.weight_decay, bias_correction: c.bias_correction }
);
config!(
    /// MLX's `Adamax`.
    Adamax {
        /// Decays of the first moment and of the infinity norm.
        betas: (f64, f64) = (0.9, 0.999),
        /// Added to the denominator.
        eps: f64 = 1e-8,
    } => |c| UpdateRule::Adamax { beta1: c.betas.0, beta2: c.betas.1, eps: c.eps }
);
config!(
    /// MLX's `Lion`.
    Lion {
        /// Interpolation of the direction and decay of the momentum.
        betas: (f64, f64) = (0.9, 0.99),
        /// Decoupled weight decay.
        weight_decay: f64 = 0.0,
    } => |c| UpdateRule::Lion { beta1: c.betas.0, beta2: c.betas.1, weight_decay: c.weight_decay }
);

impl From<Adafactor> for Config {
    fn from(c: Adafactor) -> Config {
        Config { rule: Rule::Adafactor(c), learning_rate: c.learning_rate.unwrap_or(0.0) }
    }
}

impl From<Muon> for Config {
    fn from(c: Muon) -> Config {
        Config { rule: Rule::Muon(c), learning_rate: c.learning_rate }
    }
}

/// An optimizer: a rule, the step count, the learning rate and each
/// parameter's state (created as zeros on its first update).
pub struct Optimizer {
    rule: Rule,
    learning_rate: f64,
    schedule: Option<Schedule>,
    step: u64,
    state: BTreeMap<String, Vec<(&'static str, Array)>>,
}

impl std::fmt::Debug for Optimizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Optimizer")
            .field("rule", &self.rule)
            .field("learning_rate", &self.learning_rate)
            .field("scheduled", &self.schedule.is_some())
            .field("step", &self.step)
            .field("parameters", &self.state.len())
            .finish()
    }
}

impl Optimizer {
    /// An optimizer for `config` (e.g. `AdamW { learning_rate: 3e-3, ..Default::default() }`).
    pub fn new(config: impl Into<Config>) -> Optimizer {
        let config = config.into();
        Optimizer {
            rule: config.rule,
            learning_rate: config.learning_rate,
            schedule: None,
            step: 0,
            state: BTreeMap::new(),
        }
    }

    /// Puts the learning rate on `schedule`, evaluated at the step count
    /// before each update (MLX's order: `schedule(0)` for the first).
    pub fn with_schedule(mut self, schedule: impl Fn(u64) -> f64 + Send + Sync + 'static) -> Optimizer {
        self.learning_rate = schedule(self.step);
        self.schedule = Some(Box::new(schedule));
        self
    }

    /// The rule.
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// Updates done so far.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// The current learning rate.
    pub fn learning_rate(&self) -> f64 {
        self.learning_rate
    }

    /// Sets the learning rate (a schedule overrides it at the next update).
    pub fn set_learning_rate(&mut self, learning_rate: f64) {
        self.learning_rate = learning_rate;
    }

    /// The names of the state arrays `rule` keeps for `parameter`.
    fn state_names(&self, parameter: &Array) -> Vec<&'static str> {
        match &self.rule {
            Rule::Fused(rule) => rule.state_names().to_vec(),
            Rule::Adafactor(a) => a.state_names(parameter),
            Rule::Muon(_) => vec!["v"],
        }
    }

    /// Zero states for `parameter`.
    fn initial_state(&self, parameter: &Array) -> Result<Vec<Array>> {
        match &self.rule {
            Rule::Adafactor(a) => a.initial_state(parameter),
            _ => self.state_names(parameter).iter().map(|_| ops::zeros_like(parameter)).collect(),
        }
    }

    /// The state names a stored state may have, in the order the rule
    /// takes them (Adafactor's depend on the parameter's rank and on
    /// `beta_1`: those present are taken).
    fn known_names(&self) -> &'static [&'static str] {
        match &self.rule {
            Rule::Fused(rule) => rule.state_names(),
            Rule::Adafactor(_) => &["exp_avg_sq_row", "exp_avg_sq_col", "exp_avg_sq", "exp_avg"],
            Rule::Muon(_) => &["v"],
        }
    }

    /// One update: every parameter named in `grads` is replaced in
    /// `params` by its updated value (the gradients may cover a subset).
    /// A gradient without a parameter, or of another shape, is an error.
    pub fn update(&mut self, params: &mut BTreeMap<String, Array>, grads: &BTreeMap<String, Array>) -> Result<()> {
        for (key, g) in grads {
            let p = params.get(key).ok_or_else(|| {
                Error::invalid("Optimizer.update", format!("gradient for {key:?}, which is not a parameter."))
            })?;
            if p.shape() != g.shape() {
                return Err(Error::invalid(
                    "Optimizer.update",
                    format!("the gradient of {key:?} has shape {:?}, the parameter {:?}.", g.shape(), p.shape()),
                ));
            }
        }
        if let Some(schedule) = &self.schedule {
            self.learning_rate = schedule(self.step);
        }
        self.step += 1;
        let lr = Array::scalar(self.learning_rate as f32);
        let step = Array::scalar(self.step as f32);
        for (key, g) in grads {
            let p = params[key].clone();
            let states = match self.state.remove(key) {
                Some(s) => s.into_iter().map(|(_, a)| a).collect(),
                None => self.initial_state(&p)?,
            };
            let mut out = match &self.rule {
                Rule::Fused(rule) => optimizer_update(*rule, &p, g, &states, &lr, &step)?,
                Rule::Adafactor(a) => {
                    let lr = (!a.relative_step).then_some(&lr);
                    adafactor_update(a, &p, g, &states, lr, &step)?
                }
                Rule::Muon(m) => muon_update(m, &p, g, &states, &lr)?,
            };
            let new_states = out.split_off(1);
            params.insert(key.clone(), out.pop().expect("the updated parameter"));
            let names = self.state_names(&p);
            self.state.insert(key.clone(), names.into_iter().zip(new_states).collect());
        }
        Ok(())
    }

    /// The state as a flat map, as MLX's `tree_flatten(optimizer.state)`
    /// writes it: `step`, `learning_rate` and `<parameter>.<state name>`.
    pub fn state(&self) -> BTreeMap<String, Array> {
        let mut out = BTreeMap::new();
        out.insert("step".to_string(), Array::scalar(self.step));
        out.insert("learning_rate".to_string(), Array::scalar(self.learning_rate as f32));
        for (key, states) in &self.state {
            for (name, s) in states {
                out.insert(format!("{key}.{name}"), s.clone());
            }
        }
        out
    }

    /// Restores a state written by [`Optimizer::state`]: the step count,
    /// the learning rate and every parameter's states. Keys it does not
    /// understand, and missing states, are errors.
    pub fn load_state(&mut self, state: &BTreeMap<String, Array>) -> Result<()> {
        let bad = |msg: String| Error::invalid("Optimizer.load_state", msg);
        let step = state.get("step").ok_or_else(|| bad("the state has no \"step\".".into()))?;
        let lr = state.get("learning_rate").ok_or_else(|| bad("the state has no \"learning_rate\".".into()))?;
        let known = self.known_names();
        let mut per_param: BTreeMap<String, BTreeMap<&'static str, Array>> = BTreeMap::new();
        for (key, value) in state {
            if key == "step" || key == "learning_rate" {
                continue;
            }
            let unexpected = || bad(format!("unexpected key {key:?}."));
            let (param, name) = key.rsplit_once('.').ok_or_else(unexpected)?;
            let name = known.iter().find(|n| **n == name).ok_or_else(unexpected)?;
            per_param.entry(param.to_string()).or_default().insert(name, value.clone());
        }
        let mut loaded = BTreeMap::new();
        for (param, named) in per_param {
            if let Rule::Fused(_) | Rule::Muon(_) = self.rule {
                if let Some(missing) = known.iter().find(|n| !named.contains_key(*n)) {
                    return Err(bad(format!("{param:?} has no state {missing:?}.")));
                }
            }
            let states = known.iter().filter_map(|n| named.get(n).map(|a| (*n, a.clone()))).collect();
            loaded.insert(param, states);
        }
        self.step = step.astype(ferrox::Dtype::U64)?.item::<u64>()?;
        self.learning_rate = lr.astype(ferrox::Dtype::F64)?.item::<f64>()?;
        self.state = loaded;
        Ok(())
    }
}
