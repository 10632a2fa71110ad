//! `ferrox._core._optimizers`: the fused optimizer steps behind
//! `ferrox.optimizers` (`ferrox::ops::optimizer_update`), one function per
//! rule, and Adafactor's and Muon's steps (`ferrox_nn::optim`). Each takes
//! the parameter, its gradient, the list of its states (in MLX's order:
//! `v`; `v, u`; `m, v`; `m`; Adafactor's `exp_avg_sq_row, exp_avg_sq_col`
//! or `exp_avg_sq`, then `exp_avg`), the learning rate and the step count
//! (scalars; pass float32 arrays shared by every parameter), and the rule's
//! hyperparameters as keywords; it returns `[parameter, *states]`.

use crate::array::PyArray;
use crate::convert::to_array;
use crate::errors::IntoPyResult;
use ferrox::backend::UpdateRule;
use ferrox::ops::optimizer_update;
use ferrox::Array;
use ferrox_nn::optim::{adafactor_update as adafactor_update_op, muon_update as muon_update_op, Adafactor, Muon};
use ferrox_python_macros::guarded;
use pyo3::prelude::*;

/// Runs one fused step and wraps the outputs.
fn step(
    rule: UpdateRule,
    parameter: &Bound<'_, PyAny>,
    gradient: &Bound<'_, PyAny>,
    states: Vec<Bound<'_, PyAny>>,
    learning_rate: &Bound<'_, PyAny>,
    step: &Bound<'_, PyAny>,
) -> PyResult<Vec<PyArray>> {
    let parameter = to_array(parameter, None)?;
    let gradient = to_array(gradient, None)?;
    let states = arrays(&states)?;
    let learning_rate = to_array(learning_rate, None)?;
    let step_count = to_array(step, None)?;
    let out = optimizer_update(rule, &parameter, &gradient, &states, &learning_rate, &step_count).py()?;
    Ok(out.into_iter().map(PyArray::wrap).collect())
}

/// SGD (MLX's `SGD.apply_single`); `states` is `[v]`, or `[]` without momentum.
#[guarded]
#[pyfunction]
#[pyo3(signature = (parameter, gradient, states, learning_rate, step, *, momentum, weight_decay, dampening, nesterov))]
#[allow(clippy::too_many_arguments)]
fn sgd_update(
    parameter: &Bound<'_, PyAny>,
    gradient: &Bound<'_, PyAny>,
    states: Vec<Bound<'_, PyAny>>,
    learning_rate: &Bound<'_, PyAny>,
    step: &Bound<'_, PyAny>,
    momentum: f64,
    weight_decay: f64,
    dampening: f64,
    nesterov: bool,
) -> PyResult<Vec<PyArray>> {
    let rule = UpdateRule::Sgd { momentum, weight_decay, dampening, nesterov };
    self::step(rule, parameter, gradient, states, learning_rate, step)
}

/// RMSprop; `states` is `[v]`.
#[guarded]
#[pyfunction]
#[pyo3(signature = (parameter, gradient, states, learning_rate, step, *, alpha, eps))]
fn rmsprop_update(
    parameter: &Bound<'_, PyAny>,
    gradient: &Bound<'_, PyAny>,
    states: Vec<Bound<'_, PyAny>>,
    learning_rate: &Bound<'_, PyAny>,
    step: &Bound<'_, PyAny>,
    alpha: f64,
    eps: f64,
) -> PyResult<Vec<PyArray>> {
    self::step(UpdateRule::RmsProp { alpha, eps }, parameter, gradient, states, learning_rate, step)
}

/// Adagrad; `states` is `[v]`.
#[guarded]
#[pyfunction]
#[pyo3(signature = (parameter, gradient, states, learning_rate, step, *, eps))]
fn adagrad_update(
    parameter: &Bound<'_, PyAny>,
    gradient: &Bound<'_, PyAny>,
    states: Vec<Bound<'_, PyAny>>,
    learning_rate: &Bound<'_, PyAny>,
    step: &Bound<'_, PyAny>,
    eps: f64,
) -> PyResult<Vec<PyArray>> {
    self::step(UpdateRule::Adagrad { eps }, parameter, gradient, states, learning_rate, step)
}

/// AdaDelta; `states` is `[v, u]`.
#[guarded]
#[pyfunction]
#[pyo3(signature = (parameter, gradient, states, learning_rate, step, *, rho, eps))]
fn adadelta_update(
    parameter: &Bound<'_, PyAny>,
    gradient: &Bound<'_, PyAny>,
    states: Vec<Bound<'_, PyAny>>,
    learning_rate: &Bound<'_, PyAny>,
    step: &Bound<'_, PyAny>,
    rho: f64,
    eps: f64,
) -> PyResult<Vec<PyArray>> {
    self::step(UpdateRule::AdaDelta { rho, eps }, parameter, gradient, states, learning_rate, step)
}

/// Adam and AdamW (decoupled `weight_decay`, 0 for Adam); `states` is `[m, v]`.
#[guarded]
#[pyfunction]
#[pyo3(signature = (parameter, gradient, states, learning_rate, step, *, beta1, beta2, eps, weight_decay, bias_correction))]
#[allow(clippy::too_many_arguments)]
fn adam_update(
    parameter: &Bound<'_, PyAny>,
    gradient: &Bound<'_, PyAny>,
    states: Vec<Bound<'_, PyAny>>,
    learning_rate: &Bound<'_, PyAny>,
    step: &Bound<'_, PyAny>,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    bias_correction: bool,
) -> PyResult<Vec<PyArray>> {
    let rule = UpdateRule::Adam { beta1, beta2, eps, weight_decay, bias_correction };
    self::step(rule, parameter, gradient, states, learning_rate, step)
}

/// Adamax; `states` is `[m, v]`.
#[guarded]
#[pyfunction]
#[pyo3(signature = (parameter, gradient, states, learning_rate, step, *, beta1, beta2, eps))]
#[allow(clippy::too_many_arguments)]
fn adamax_update(
    parameter: &Bound<'_, PyAny>,
    gradient: &Bound<'_, PyAny>,
    states: Vec<Bound<'_, PyAny>>,
    learning_rate: &Bound<'_, PyAny>,
    step: &Bound<'_, PyAny>,
    beta1: f64,
    beta2: f64,
    eps: f64,
) -> PyResult<Vec<PyArray>> {
    self::step(UpdateRule::Adamax { beta1, beta2, eps }, parameter, gradient, states, learning_rate, step)
}

/// Lion; `states` is `[m]`.
#[guarded]
#[pyfunction]
#[pyo3(signature = (parameter, gradient, states, learning_rate, step, *, beta1, beta2, weight_decay))]
#[allow(clippy::too_many_arguments)]
fn lion_update(
    parameter: &Bound<'_, PyAny>,
    gradient: &Bound<'_, PyAny>,
    states: Vec<Bound<'_, PyAny>>,
    learning_rate: &Bound<'_, PyAny>,
    step: &Bound<'_, PyAny>,
    beta1: f64,
    beta2: f64,
    weight_decay: f64,
) -> PyResult<Vec<PyArray>> {
    self::step(UpdateRule::Lion { beta1, beta2, weight_decay }, parameter, gradient, states, learning_rate, step)
}

/// Adafactor (MLX's `Adafactor.apply_single`); `learning_rate` may be
/// `None` with `relative_step`.
#[guarded]
#[pyfunction]
#[pyo3(signature = (parameter, gradient, states, learning_rate, step, *, eps, clip_threshold, decay_rate, beta_1, weight_decay, scale_parameter, relative_step, warmup_init))]
#[allow(clippy::too_many_arguments)]
fn adafactor_update(
    parameter: &Bound<'_, PyAny>,
    gradient: &Bound<'_, PyAny>,
    states: Vec<Bound<'_, PyAny>>,
    learning_rate: Option<&Bound<'_, PyAny>>,
    step: &Bound<'_, PyAny>,
    eps: (f64, f64),
    clip_threshold: f64,
    decay_rate: f64,
    beta_1: Option<f64>,
    weight_decay: f64,
    scale_parameter: bool,
    relative_step: bool,
    warmup_init: bool,
) -> PyResult<Vec<PyArray>> {
    let cfg = Adafactor {
        learning_rate: None,
        eps,
        clip_threshold,
        decay_rate,
        beta_1,
        weight_decay,
        scale_parameter,
        relative_step,
        warmup_init,
    };
    let learning_rate = learning_rate.filter(|l| !l.is_none()).map(|l| to_array(l, None)).transpose()?;
    let out = adafactor_update_op(
        &cfg,
        &to_array(parameter, None)?,
        &to_array(gradient, None)?,
        &arrays(&states)?,
        learning_rate.as_ref(),
        &to_array(step, None)?,
    )
    .py()?;
    Ok(out.into_iter().map(PyArray::wrap).collect())
}

/// Muon (MLX's `Muon.apply_single`); `states` is `[v]`.
#[guarded]
#[pyfunction]
#[pyo3(signature = (parameter, gradient, states, learning_rate, *, momentum, weight_decay, nesterov, ns_steps))]
#[allow(clippy::too_many_arguments)]
fn muon_update(
    parameter: &Bound<'_, PyAny>,
    gradient: &Bound<'_, PyAny>,
    states: Vec<Bound<'_, PyAny>>,
    learning_rate: &Bound<'_, PyAny>,
    momentum: f64,
    weight_decay: f64,
    nesterov: bool,
    ns_steps: usize,
) -> PyResult<Vec<PyArray>> {
    let cfg = Muon { learning_rate: 0.0, momentum, weight_decay, nesterov, ns_steps };
    let out = muon_update_op(
        &cfg,
        &to_array(parameter, None)?,
        &to_array(gradient, None)?,
        &arrays(&states)?,
        &to_array(learning_rate, None)?,
    )
    .py()?;
    Ok(out.into_iter().map(PyArray::wrap).collect())
}

/// The arrays of a list of array-likes.
fn arrays(items: &[Bound<'_, PyAny>]) -> PyResult<Vec<Array>> {
    items.iter().map(|s| to_array(s, None)).collect()
}

/// Adds the submodule `_optimizers` to `parent`.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = parent.py();
    let m = PyModule::new(py, "ferrox._core._optimizers")?;
    m.setattr("__doc__", "The fused optimizer steps behind ferrox.optimizers.")?;
    crate::add_functions!(
        &m,
        sgd_update,
        rmsprop_update,
        adagrad_update,
        adadelta_update,
        adam_update,
        adamax_update,
        lion_update,
        adafactor_update,
        muon_update
    );
    parent.add("_optimizers", &m)?;
    py.import("sys")?.getattr("modules")?.set_item("ferrox._core._optimizers", &m)?;
    Ok(())
}
