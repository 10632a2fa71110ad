//! The fused optimizer step on the GPU (`kernels/optimizer.cu`, the twin of
//! `cpu/optimizer.rs`): one kernel reads a parameter, its gradient and its
//! states once and writes the new ones.

use super::kernels::Family;
use super::launch::{grid_full, launch, Args, BLOCK};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::UpdateRule;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use std::sync::Arc;

/// The kernels `optimizer.cu` defines (one per rule; SGD without momentum
/// has a stateless one).
const KERNELS: [&str; 8] = [
    "sgd_update",
    "sgd_plain_update",
    "rmsprop_update",
    "adagrad_update",
    "adadelta_update",
    "adam_update",
    "adamax_update",
    "lion_update",
];

/// The kernel of `rule` (an entry of [`KERNELS`]).
fn kernel(rule: &UpdateRule) -> &'static str {
    KERNELS[match rule {
        UpdateRule::Sgd { momentum, .. } if *momentum <= 0.0 => 1,
        UpdateRule::Sgd { .. } => 0,
        UpdateRule::RmsProp { .. } => 2,
        UpdateRule::Adagrad { .. } => 3,
        UpdateRule::AdaDelta { .. } => 4,
        UpdateRule::Adam { .. } => 5,
        UpdateRule::Adamax { .. } => 6,
        UpdateRule::Lion { .. } => 7,
    }]
}

/// The kernels `optimizer.cu` defines for `dtype` (for the compile check).
pub(crate) fn kernel_names(dtype: Dtype) -> Vec<String> {
    if !dtype.is_floating() {
        return Vec::new();
    }
    KERNELS.iter().map(|k| k.to_string()).collect()
}

/// The fused step over `n` contiguous elements: `inputs` are (storage,
/// offset) of the parameter, the gradient and the rule's states, all of one
/// real float dtype; `lr` and `t` are float32 scalars on the device.
/// Returns the new parameter and states.
pub(crate) fn optimizer_update(
    s: &Arc<GpuStream>,
    rule: &UpdateRule,
    inputs: &[(&CudaStorage, usize)],
    lr: (&CudaStorage, usize),
    t: (&CudaStorage, usize),
    n: usize,
) -> Result<Vec<CudaStorage>> {
    let dtype = inputs[0].0.dtype();
    let states = rule.state_names().len();
    if !dtype.is_floating() || inputs.len() != states + 2 || inputs.iter().any(|(x, _)| x.dtype() != dtype) {
        return Err(Error::invalid("optimizer_update", "internal error: inputs the kernel does not take"));
    }
    let outs = (0..=states).map(|_| CudaStorage::alloc(dtype, n, s)).collect::<Result<Vec<_>>>()?;
    if n == 0 {
        return Ok(outs);
    }
    let ptr = |i: usize| inputs.get(i).map_or(0, |(x, off)| x.ptr_at(*off));
    let out_ptr = |i: usize| outs.get(i).map_or(0, |x| x.ptr_at(0));
    let constants: [f64; 8] = rule.constants();
    let args = Args::new()
        .arg(ptr(0))
        .arg(ptr(1))
        .arg(ptr(2))
        .arg(ptr(3))
        .arg(lr.0.ptr_at(lr.1))
        .arg(t.0.ptr_at(t.1))
        .arg(out_ptr(0))
        .arg(out_ptr(1))
        .arg(out_ptr(2))
        .arg(n as i64)
        .arg(constants);
    // One thread per 16-byte pack of the parameter.
    let per_thread = 16 / dtype.size();
    launch(Family::Optimizer, dtype, kernel(rule), (grid_full(n, per_thread), 1, 1), (BLOCK, 1, 1), s, args)?;
    Ok(outs)
}
