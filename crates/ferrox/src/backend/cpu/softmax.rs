//! Softmax, log-sum-exp and cross entropy over the last axis (the twin of
//! `kernels/softmax.cu`): a pass for the row's maximum, one for the sum of
//! exponentials (and one for softmax's outputs or the cross entropy's
//! derivative), in float32 (float64 for float64), rows spread over threads.

use super::fast::{typed_slice, Input};
use super::storage::{output_vec, CpuElement};
use super::widen::Widen;
use super::CpuBuffer;
use crate::backend::fast_op::row_stride;
use crate::error::{Error, Result};
use num_traits::{Float, NumCast, Zero};
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

/// The class that target `t` names among `d` (negative ones count from the
/// end), or an error naming the op.
fn target_class(op: &'static str, t: i32, d: usize) -> Result<usize> {
    let i = if t < 0 { t as i64 + d as i64 } else { t as i64 };
    if i < 0 || i >= d as i64 {
        return Err(Error::IndexArgument { op, msg: format!("Target {t} is out of range for {d} classes.") });
    }
    Ok(i as usize)
}

/// The classes the int32 targets name, one per row.
fn target_classes(op: &'static str, targets: Input, rows: usize, d: usize) -> Result<Vec<usize>> {
    typed_slice::<i32>(targets, rows)?.iter().map(|&t| target_class(op, t, d)).collect()
}

/// `smoothing` in the compute type, and the one-hot and uniform weights it
/// splits a target into: `(1 - smoothing, smoothing / d)`.
fn smoothing_weights<C: Float>(smoothing: f64, d: usize) -> (C, C, C) {
    let s: C = NumCast::from(smoothing).expect("a float");
    let n: C = NumCast::from(d).expect("a count");
    (s, C::one() - s, s / n)
}

/// The cross entropy of each row of `x` against its target (see
/// [`crate::backend::FastOp::CrossEntropy`]): the loss per row and the
/// row statistics `(max, log(sum(exp(x - max))))`.
pub(crate) fn cross_entropy(smoothing: f64, x: Input, targets: Input) -> Result<Vec<CpuBuffer>> {
    crate::with_real_float_buffer!(x.0, v => cross_entropy_typed(smoothing, x, targets, v.as_slice()),
        _ => Err(unsupported("cross_entropy")))
}

/// The logits' rows: `(d, rows, ld)` and the elements from the layout's
/// offset that hold them (rows `ld` apart, see [`row_stride`]).
fn logit_rows<T: Widen>(x: Input<'_>) -> Result<(usize, usize, usize, &[T])> {
    let (d, rows) = rows_of(x);
    let ld = row_stride(x.1).unwrap_or(d);
    let span = if rows == 0 { 0 } else { (rows - 1) * ld + d };
    Ok((d, rows, ld, typed_slice::<T>(x, span)?))
}

fn cross_entropy_typed<T: Widen>(smoothing: f64, x: Input, targets: Input, _: &[T]) -> Result<Vec<CpuBuffer>> {
    let (d, rows, ld, xs) = logit_rows::<T>(x)?;
    let classes = target_classes("cross_entropy", targets, rows, d)?;
    let mut loss = output_vec::<T>(rows)?;
    let mut stats = output_vec::<T::C>(2 * rows)?;
    let (s, keep, _) = smoothing_weights::<T::C>(smoothing, d);
    let n: T::C = NumCast::from(d).expect("a count");
    loss.par_iter_mut().zip(stats.par_chunks_mut(2)).enumerate().with_min_len((TASK / d.max(1)).max(1)).for_each(
        |(r, (l, st))| {
            let xr = &xs[r * ld..r * ld + d];
            let (m, total) = max_and_sum(xr);
            let log_sum = total.ln();
            // lse - keep x[t] - s mean(x) with every large term taken
            // relative to the max (or, for the mean, to the row's first
            // value), so large logits lose nothing to rounding.
            let mut value = log_sum + keep * (m - xr[classes[r]].widen());
            if s > T::C::zero() {
                let first = xr[0].widen();
                let pivot = if first.is_finite() { first } else { T::C::zero() };
                let spread: T::C = xr.iter().map(|v| v.widen() - pivot).sum();
                value = value + s * ((m - pivot) - spread / n);
            }
            *l = T::narrow(value);
            st[0] = m;
            st[1] = log_sum;
        },
    );
    Ok(vec![T::into_buffer(loss), <T::C as CpuElement>::into_buffer(stats)])
}

/// The derivative of [`cross_entropy`] in x (see
/// [`crate::backend::FastOp::CrossEntropyVjp`]).
pub(crate) fn cross_entropy_vjp(smoothing: f64, x: Input, targets: Input, stats: Input, g: Input) -> Result<CpuBuffer> {
    crate::with_real_float_buffer!(x.0, v => cross_entropy_vjp_typed(smoothing, x, targets, stats, g, v.as_slice()),
        _ => Err(unsupported("cross_entropy_vjp")))
}

fn cross_entropy_vjp_typed<T: Widen>(
    smoothing: f64,
    x: Input,
    targets: Input,
    stats: Input,
    g: Input,
    _: &[T],
) -> Result<CpuBuffer> {
    let (d, rows, ld, xs) = logit_rows::<T>(x)?;
    let classes = target_classes("cross_entropy", targets, rows, d)?;
    let st = typed_slice::<T::C>(stats, 2 * rows)?;
    let gs = typed_slice::<T>(g, rows)?;
    // dx rows are spaced like x's (FastOp::output_layouts).
    let mut dx = output_vec::<T>(rows * ld)?;
    let (_, keep, spread) = smoothing_weights::<T::C>(smoothing, d);
    if rows * d > 0 {
        dx.par_chunks_mut(ld).enumerate().with_min_len((TASK / d).max(1)).for_each(|(r, dr)| {
            let (xr, dr) = (&xs[r * ld..r * ld + d], &mut dr[..d]);
            let (m, log_sum, gr, t) = (st[2 * r], st[2 * r + 1], gs[r].widen(), classes[r]);
            for (o, &v) in dr.iter_mut().zip(xr) {
                *o = T::narrow(gr * (((v.widen() - m) - log_sum).exp() - spread));
            }
            dr[t] = T::narrow(gr * ((((xr[t].widen() - m) - log_sum).exp() - spread) - keep));
        });
    }
    Ok(T::into_buffer(dx))
}
