//! Learning-rate schedules (MLX's `optimizers` schedulers) as functions of
//! the step count, for [`super::Optimizer::with_schedule`]. They compute in
//! float64 on the host (MLX computes the same formulas as float32 arrays).

use ferrox::{Error, Result};
use std::f64::consts::PI;

/// A schedule: the learning rate at a step count.
pub type Schedule = Box<dyn Fn(u64) -> f64 + Send + Sync>;

/// `init * decay_rate^step`.
pub fn exponential_decay(init: f64, decay_rate: f64) -> Schedule {
    Box::new(move |step| init * decay_rate.powf(step as f64))
}

/// `init * decay_rate^(step / step_size)` (integer division).
pub fn step_decay(init: f64, decay_rate: f64, step_size: u64) -> Result<Schedule> {
    if step_size < 1 {
        return Err(Error::invalid("step_decay", format!("step_size must be greater than 0, but got {step_size}.")));
    }
    Ok(Box::new(move |step| init * decay_rate.powf((step / step_size) as f64)))
}

/// Half a cosine from `init` to `end` over `decay_steps`, then `end`.
pub fn cosine_decay(init: f64, decay_steps: u64, end: f64) -> Result<Schedule> {
    if decay_steps < 1 {
        return Err(Error::invalid(
            "cosine_decay",
            format!("decay_steps must be greater than 0, but got {decay_steps}."),
        ));
    }
    Ok(Box::new(move |step| {
        let s = step.min(decay_steps) as f64;
        let decay = 0.5 * (1.0 + (PI / decay_steps as f64 * s).cos());
        end + decay * (init - end)
    }))
}

/// From `init` to `end` linearly over `steps`, then `end`.
pub fn linear_schedule(init: f64, end: f64, steps: u64) -> Result<Schedule> {
    if steps < 1 {
        return Err(Error::invalid("linear_schedule", format!("steps must be greater than 0, but got {steps}.")));
    }
    Ok(Box::new(move |step| step.min(steps) as f64 * ((end - init) / steps as f64) + init))
}

/// `schedules[i + 1]` from step `boundaries[i]` on, counting steps from
/// that boundary.
pub fn join_schedules(schedules: Vec<Schedule>, boundaries: Vec<u64>) -> Result<Schedule> {
    if schedules.is_empty() {
        return Err(Error::invalid("join_schedules", "Must provide at least 1 schedule to join."));
    }
    if schedules.len() != boundaries.len() + 1 {
        return Err(Error::invalid(
            "join_schedules",
            format!("Received {} boundaries but expected {}.", boundaries.len(), schedules.len() - 1),
        ));
    }
    Ok(Box::new(move |step| {
        let mut value = schedules[0](step);
        for (boundary, later) in boundaries.iter().zip(&schedules[1..]) {
            if step >= *boundary {
                value = later(step - boundary);
            }
        }
        value
    }))
}
