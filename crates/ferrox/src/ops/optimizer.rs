//! The fused optimizer step: one kernel per parameter reads the parameter,
//! its gradient and its optimizer state once and writes the new ones (the
//! optimizers of `ferrox-nn` and `ferrox.optimizers` call it; MLX chains a
//! dozen elementwise ops per parameter instead).

use crate::array::Array;
use crate::backend::UpdateRule;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::primitives::{OptimizerUpdate, OutputSpec};

const OP: &str = "optimizer_update";

/// One step of `rule` for one parameter: returns the new parameter followed
/// by the new states, in the order of [`UpdateRule::state_names`].
///
/// `parameter` must be a real float array (float16, bfloat16, float32 or
/// float64); `gradient` and `states` must have its shape and are cast to
/// its dtype. `learning_rate` and `step` are single values (any real dtype;
/// `step` counts updates, 1 on the first, as MLX's `optimizer.step` does
/// when `apply_single` runs); pass the same float32 scalars for every
/// parameter of a step to share them.
pub fn optimizer_update(
    rule: UpdateRule,
    parameter: &Array,
    gradient: &Array,
    states: &[Array],
    learning_rate: &Array,
    step: &Array,
) -> Result<Vec<Array>> {
    let dtype = parameter.dtype();
    if !dtype.is_floating() {
        return Err(Error::invalid(OP, format!("parameters must be real floats, got {dtype}.")));
    }
    let names = rule.state_names();
    if states.len() != names.len() {
        return Err(Error::invalid(
            OP,
            format!("{} takes {} state arrays ({names:?}), got {}.", rule.name(), names.len(), states.len()),
        ));
    }
    let hyper = rule.constants();
    if hyper.iter().any(|h| !h.is_finite()) {
        return Err(Error::invalid(OP, format!("{}'s hyperparameters must be finite, got {rule:?}.", rule.name())));
    }
    let mut inputs = Vec::with_capacity(names.len() + 4);
    for (what, x) in [("gradient", gradient)].into_iter().chain(names.iter().copied().zip(states)) {
        if x.shape() != parameter.shape() {
            return Err(Error::invalid(
                OP,
                format!("the {what} has shape {:?}, the parameter {:?}.", x.shape(), parameter.shape()),
            ));
        }
        if x.dtype().is_complex() {
            return Err(Error::invalid(OP, format!("the {what} must be real, got {}.", x.dtype())));
        }
        inputs.push(x.astype(dtype)?);
    }
    inputs.insert(0, parameter.clone());
    for (what, x) in [("learning rate", learning_rate), ("step", step)] {
        if x.size() != 1 || x.dtype().is_complex() {
            return Err(Error::invalid(
                OP,
                format!("the {what} must be a single real value, got shape {:?} of {}.", x.shape(), x.dtype()),
            ));
        }
        let scalar = if x.ndim() == 0 { x.clone() } else { x.reshape(&[])? };
        inputs.push(scalar.astype(Dtype::F32)?);
    }
    let spec = OutputSpec::of(parameter);
    Array::siblings_from_primitive(vec![spec; names.len() + 1], OptimizerUpdate { rule }, inputs)
}
