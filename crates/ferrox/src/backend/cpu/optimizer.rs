//! The fused optimizer step on the host (the twin of `cuda/optimizer.rs`):
//! one pass over a parameter, its gradient and its state arrays, computing
//! in float32 (float64 for float64 parameters) and rounding once.

use super::storage::output_vec;
use super::widen::Widen;
use super::CpuBuffer;
use crate::backend::UpdateRule;
use crate::error::{Error, Result};
use num_traits::Float;
use rayon::prelude::*;

/// Elements per parallel task (large enough that a task outweighs its
/// scheduling cost).
const TASK: usize = 1 << 14;

/// The rule's constants ([`UpdateRule::constants`]) and the step's
/// scalars in the compute type.
struct Coefficients<C> {
    k: [C; 8],
    lr: C,
    t: C,
}

/// One element's update: the new parameter; `s` holds the element's
/// states on entry and their new values on return.
fn update<C: Float>(rule: &UpdateRule, c: &Coefficients<C>, p: C, g: C, s: &mut [C; 2]) -> C {
    let (zero, one) = (C::zero(), C::one());
    let k = c.k;
    let lr = c.lr;
    match rule {
        UpdateRule::Sgd { .. } => {
            let (momentum, weight_decay, damp_scale, nesterov) = (k[0], k[1], k[2], k[3] != zero);
            let g = if weight_decay != zero { g + weight_decay * p } else { g };
            if momentum <= zero {
                return p - lr * g;
            }
            let v = momentum * s[0] + damp_scale * g;
            s[0] = v;
            let step = if nesterov { g + momentum * v } else { v };
            p - lr * step
        }
        UpdateRule::RmsProp { .. } => {
            let v = k[0] * s[0] + k[1] * (g * g);
            s[0] = v;
            p - lr * g / (v.sqrt() + k[2])
        }
        UpdateRule::Adagrad { .. } => {
            let v = s[0] + g * g;
            s[0] = v;
            p - lr * g / (v.sqrt() + k[0])
        }
        UpdateRule::AdaDelta { .. } => {
            let (rho, rho_c, eps) = (k[0], k[1], k[2]);
            let v = rho * s[0] + rho_c * (g * g);
            let d = (s[1] + eps).sqrt() / (v + eps).sqrt() * g;
            s[0] = v;
            s[1] = rho * s[1] + rho_c * (d * d);
            p - lr * d
        }
        UpdateRule::Adam { .. } => {
            let (b1, b1_c, b2, b2_c, eps, weight_decay) = (k[0], k[1], k[2], k[3], k[4], k[5]);
            let p = if weight_decay != zero { p * (one - lr * weight_decay) } else { p };
            let m = b1 * s[0] + b1_c * g;
            let v = b2 * s[1] + b2_c * (g * g);
            s[0] = m;
            s[1] = v;
            if k[6] != zero {
                let c1 = lr / (one - b1.powf(c.t));
                let c2 = (one - b2.powf(c.t)).sqrt().recip();
                p - c1 * m / (v.sqrt() * c2 + eps)
            } else {
                p - lr * m / (v.sqrt() + eps)
            }
        }
        UpdateRule::Adamax { .. } => {
            let (b1, b1_c, b2, eps) = (k[0], k[1], k[2], k[3]);
            let m = b1 * s[0] + b1_c * g;
            let v = (b2 * s[1]).max(g.abs());
            s[0] = m;
            s[1] = v;
            p - lr * m / (v + eps)
        }
        UpdateRule::Lion { .. } => {
            let (b1, b1_c, b2, b2_c, weight_decay) = (k[0], k[1], k[2], k[3], k[4]);
            let direction = b1 * s[0] + b1_c * g;
            s[0] = b2 * s[0] + b2_c * g;
            let p = if weight_decay > zero { (one - lr * weight_decay) * p } else { p };
            let sign = if direction > zero {
                one
            } else if direction < zero {
                -one
            } else {
                direction
            };
            p - lr * sign
        }
    }
}

/// One parallel task: the index of its first element, its run of the new
/// parameter and its runs of the new states.
type Task<'a, T> = (usize, &'a mut [T], Vec<&'a mut [T]>);

/// The typed step: `inputs` are the parameter, the gradient and the states
/// (each the `n` elements of the step), `lr` and `t` the scalars.
fn typed<T: Widen>(rule: &UpdateRule, inputs: &[&[T]], lr: f64, t: f64) -> Result<Vec<CpuBuffer>> {
    let n = inputs[0].len();
    let states = inputs.len() - 2;
    let cast = |x: f64| <T::C as num_traits::NumCast>::from(x).unwrap_or_else(T::C::nan);
    let k = Coefficients { k: rule.constants().map(cast), lr: cast(lr), t: cast(t) };
    let mut outs: Vec<Vec<T>> = (0..=states).map(|_| output_vec::<T>(n)).collect::<Result<_>>()?;
    let (param_out, state_outs) = outs.split_first_mut().expect("the parameter's output");
    let mut state_chunks: Vec<_> = state_outs.iter_mut().map(|o| o.chunks_mut(TASK)).collect();
    let tasks: Vec<Task<T>> = param_out
        .chunks_mut(TASK)
        .enumerate()
        .map(|(i, chunk)| {
            (i * TASK, chunk, state_chunks.iter_mut().map(|c| c.next().expect("equal lengths")).collect())
        })
        .collect();
    tasks.into_par_iter().for_each(|(start, param_chunk, mut state_chunk)| {
        for (j, out) in param_chunk.iter_mut().enumerate() {
            let i = start + j;
            let mut s = [<T::C as num_traits::Zero>::zero(); 2];
            for (slot, src) in s.iter_mut().zip(&inputs[2..]) {
                *slot = src[i].widen();
            }
            *out = T::narrow(update(rule, &k, inputs[0][i].widen(), inputs[1][i].widen(), &mut s));
            for (dst, v) in state_chunk.iter_mut().zip(s) {
                dst[j] = T::narrow(v);
            }
        }
    });
    Ok(outs.into_iter().map(T::into_buffer).collect())
}

/// The fused step over contiguous runs: `inputs` are (buffer, offset) of the
/// parameter, the gradient and the rule's states, all of the parameter's
/// real float dtype, `n` elements each; `lr` and `t` are the learning rate
/// and the step count. Returns the new parameter and states.
pub fn optimizer_update(
    rule: &UpdateRule,
    inputs: &[(&CpuBuffer, usize)],
    n: usize,
    lr: f64,
    t: f64,
) -> Result<Vec<CpuBuffer>> {
    fn dispatch<T: Widen>(
        _: &[T],
        rule: &UpdateRule,
        inputs: &[(&CpuBuffer, usize)],
        n: usize,
        lr: f64,
        t: f64,
    ) -> Result<Vec<CpuBuffer>> {
        let slices: Option<Vec<&[T]>> =
            inputs.iter().map(|(b, off)| T::slice_of(b).map(|s| &s[*off..*off + n])).collect();
        let slices =
            slices.ok_or_else(|| Error::invalid("optimizer_update", "internal error: inputs of different dtypes"))?;
        typed(rule, &slices, lr, t)
    }
    crate::with_real_float_buffer!(inputs[0].0, v => dispatch(&v[..], rule, inputs, n, lr, t),
        _ => Err(Error::invalid("optimizer_update", "internal error: the parameter is not a real float array")))
}
