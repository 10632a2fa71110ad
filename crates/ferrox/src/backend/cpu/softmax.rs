//! Softmax and log-sum-exp over the last axis (the twin of
//! `kernels/softmax.cu`): a pass for the row's maximum, one for the sum of
//! exponentials (and one for softmax's outputs), in float32 (float64 for
//! float64), rows spread over threads.

use super::fast::{typed_slice, Input};
use super::storage::output_vec;
use super::widen::Widen;
use super::CpuBuffer;
use crate::error::{Error, Result};
use num_traits::{Float, Zero};
use rayon::prelude::*;

/// Elements per parallel task.
const TASK: usize = 1 << 14;

/// The row length of `x` and its number of rows.
fn rows_of(x: Input) -> (usize, usize) {
    let d = x.1.shape.last().copied().unwrap_or(1);
    (d, x.1.size().checked_div(d).unwrap_or(0))
}

fn unsupported(op: &'static str) -> Error {
    Error::invalid(op, "internal error: the kernel takes real float inputs")
}

/// The row's maximum (NaN ignored) and sum of `exp(x - max)`: the sum is
/// NaN when the row holds NaN, +inf when its maximum is +inf and 0 when
/// every value is -inf, so `max + ln(sum)` is the composed log-sum-exp.
fn max_and_sum<T: Widen>(row: &[T]) -> (T::C, T::C) {
    let m = row.iter().fold(T::C::neg_infinity(), |m, &v| if v.widen() > m { v.widen() } else { m });
    if m.is_infinite() {
        let s = if row.iter().any(|v| v.widen().is_nan()) {
            T::C::nan()
        } else if m > T::C::zero() {
            T::C::infinity()
        } else {
            T::C::zero()
        };
        return (m, s);
    }
    (m, row.iter().map(|&v| (v.widen() - m).exp()).sum())
}

/// `exp(x - max) / sum(exp(x - max))` over each row of `x`.
pub(crate) fn softmax(x: Input) -> Result<CpuBuffer> {
    crate::with_real_float_buffer!(x.0, v => softmax_typed(x, v.as_slice()), _ => Err(unsupported("softmax")))
}

fn softmax_typed<T: Widen>(x: Input, _: &[T]) -> Result<CpuBuffer> {
    let (d, rows) = rows_of(x);
    let xs = typed_slice::<T>(x, rows * d)?;
    let mut y = output_vec::<T>(rows * d)?;
    if rows * d > 0 {
        y.par_chunks_mut(d).zip(xs.par_chunks(d)).with_min_len((TASK / d).max(1)).for_each(|(yr, xr)| {
            let (m, s) = max_and_sum(xr);
            // A +inf maximum or a NaN gives NaN everywhere; so does an all
            // -inf row (exp(-inf - -inf) is NaN), as the composed form does.
            let inv = if m == T::C::infinity() { T::C::nan() } else { s.recip() };
            for (o, &v) in yr.iter_mut().zip(xr) {
                *o = T::narrow((v.widen() - m).exp() * inv);
            }
        });
    }
    Ok(T::into_buffer(y))
}

/// `log(sum(exp(x)))` over each row of `x`: one value per row.
pub(crate) fn logsumexp(x: Input) -> Result<CpuBuffer> {
    crate::with_real_float_buffer!(x.0, v => logsumexp_typed(x, v.as_slice()), _ => Err(unsupported("logsumexp")))
}

fn logsumexp_typed<T: Widen>(x: Input, _: &[T]) -> Result<CpuBuffer> {
    let (d, rows) = rows_of(x);
    let xs = typed_slice::<T>(x, rows * d)?;
    let mut out = output_vec::<T>(rows)?;
    if d == 0 {
        out.iter_mut().for_each(|o| *o = T::narrow(T::C::neg_infinity()));
    } else {
        out.par_iter_mut().zip(xs.par_chunks(d)).with_min_len((TASK / d).max(1)).for_each(|(o, xr)| {
            let (m, s) = max_and_sum(xr);
            *o = T::narrow(m + s.ln());
        });
    }
    Ok(T::into_buffer(out))
}
