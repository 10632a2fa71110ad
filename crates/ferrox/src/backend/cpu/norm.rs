//! Fused RMS and layer normalization over the last axis, forward and
//! backward (the twin of `kernels/norm.cu`): one pass per row for the
//! statistics and one for the outputs, in float32 (float64 for float64),
//! rows spread over threads. The weight and bias are vectors of the row's
//! length, or 0-d scalars (MLX passes `1` and `0` when they are absent).

use super::fast::{typed_slice, Input};
use super::storage::{output_vec, zeroed_vec};
use super::widen::Widen;
use super::CpuBuffer;
use crate::error::{Error, Result};
use num_traits::{Float, NumCast, Zero};
use rayon::prelude::*;

/// Elements per parallel task.
const TASK: usize = 1 << 14;

/// A per-feature parameter: a vector of the row's length, or one value for
/// every feature (a 0-d weight or bias).
#[derive(Clone, Copy)]
struct Feature<'a, T> {
    values: &'a [T],
    vector: bool,
}

impl<'a, T: Widen> Feature<'a, T> {
    fn of(input: Input<'a>, d: usize) -> Result<Self> {
        let vector = input.1.ndim() == 1;
        let values = typed_slice::<T>(input, if vector { d } else { 1 })?;
        Ok(Feature { values, vector })
    }

    fn at(&self, j: usize) -> T::C {
        self.values[if self.vector { j } else { 0 }].widen()
    }
}

/// Rows per parallel task for rows of `d` elements.
fn rows_per_task(d: usize) -> usize {
    (TASK / d.max(1)).max(1)
}

fn cast<C: NumCast>(x: f64) -> C {
    C::from(x).expect("a finite constant fits every float type")
}

/// The row length of the rows input `x`.
fn row_len(x: Input) -> usize {
    x.1.shape.last().copied().unwrap_or(1)
}

/// `x * rsqrt(mean(x^2) + eps) * w` over the last axis of `x`.
pub(crate) fn rms_norm(eps: f32, x: Input, w: Input) -> Result<CpuBuffer> {
    crate::with_real_float_buffer!(x.0, v => rms_typed(eps, x, w, v.as_slice()), _ => Err(unsupported("rms_norm")))
}

fn unsupported(op: &'static str) -> Error {
    Error::invalid(op, "internal error: the kernel takes real float inputs")
}

fn rms_typed<T: Widen>(eps: f32, x: Input, w: Input, _: &[T]) -> Result<CpuBuffer> {
    let d = row_len(x);
    let n = x.1.size();
    let xs = typed_slice::<T>(x, n)?;
    let w = Feature::<T>::of(w, d)?;
    let mut y = output_vec::<T>(n)?;
    if n > 0 {
        let eps: T::C = cast(eps as f64);
        let inv_d: T::C = cast(1.0 / d as f64);
        y.par_chunks_mut(d).zip(xs.par_chunks(d)).with_min_len(rows_per_task(d)).for_each(|(yr, xr)| {
            let ss: T::C = xr.iter().map(|&v| v.widen() * v.widen()).sum();
            let scale = (ss * inv_d + eps).sqrt().recip();
            for (j, (o, &v)) in yr.iter_mut().zip(xr).enumerate() {
                *o = T::narrow(v.widen() * scale * w.at(j));
            }
        });
    }
    Ok(T::into_buffer(y))
}

/// The derivatives of [`rms_norm`]: `(dx, dw)` for the cotangent `dy`.
pub(crate) fn rms_norm_vjp(eps: f32, x: Input, w: Input, dy: Input) -> Result<Vec<CpuBuffer>> {
    crate::with_real_float_buffer!(x.0, v => rms_vjp_typed(eps, x, w, dy, v.as_slice()),
        _ => Err(unsupported("rms_norm_vjp")))
}

fn rms_vjp_typed<T: Widen>(eps: f32, x: Input, w_in: Input, dy: Input, _: &[T]) -> Result<Vec<CpuBuffer>> {
    let d = row_len(x);
    let n = x.1.size();
    let xs = typed_slice::<T>(x, n)?;
    let gs = typed_slice::<T>(dy, n)?;
    let w = Feature::<T>::of(w_in, d)?;
    let mut dx = output_vec::<T>(n)?;
    let eps: T::C = cast(eps as f64);
    let inv_d: T::C = cast(1.0 / d.max(1) as f64);
    let per_task = rows_per_task(d);
    let partials: Vec<Vec<T::C>> = if n == 0 {
        Vec::new()
    } else {
        dx.par_chunks_mut(d * per_task)
            .enumerate()
            .map(|(task, chunk)| {
                let mut dw = vec![T::C::zero(); if w.vector { d } else { 0 }];
                for (r, dxr) in chunk.chunks_mut(d).enumerate() {
                    let row = (task * per_task + r) * d;
                    let (xr, gr) = (&xs[row..row + d], &gs[row..row + d]);
                    let ss: T::C = xr.iter().map(|&v| v.widen() * v.widen()).sum();
                    let scale = (ss * inv_d + eps).sqrt().recip();
                    let wgx: T::C = (0..d).map(|j| w.at(j) * gr[j].widen() * xr[j].widen()).sum();
                    let k = wgx * inv_d * scale * scale * scale;
                    for j in 0..d {
                        let (xv, gv) = (xr[j].widen(), gr[j].widen());
                        dxr[j] = T::narrow(scale * w.at(j) * gv - xv * k);
                        if w.vector {
                            dw[j] = dw[j] + gv * xv * scale;
                        }
                    }
                }
                dw
            })
            .collect()
    };
    Ok(vec![T::into_buffer(dx), feature_grad::<T>(w.vector, d, &partials, 0)?])
}

/// The cotangent of a per-feature parameter from per-task partial sums
/// (columns `at..at + d` of each), or one zero for a 0-d parameter.
fn feature_grad<T: Widen>(vector: bool, d: usize, partials: &[Vec<T::C>], at: usize) -> Result<CpuBuffer> {
    if !vector {
        return Ok(T::into_buffer(zeroed_vec::<T>(1)?));
    }
    let mut sums = vec![T::C::zero(); d];
    for p in partials {
        for (s, &v) in sums.iter_mut().zip(&p[at..at + d]) {
            *s = *s + v;
        }
    }
    Ok(T::into_buffer(sums.into_iter().map(T::narrow).collect()))
}

/// Mean and `rsqrt(variance + eps)` of a row (two passes, as the variance
/// of values far from zero needs).
fn moments<T: Widen>(xr: &[T], inv_d: T::C, eps: T::C) -> (T::C, T::C) {
    let mean = xr.iter().map(|&v| v.widen()).sum::<T::C>() * inv_d;
    let var = xr.iter().map(|&v| (v.widen() - mean) * (v.widen() - mean)).sum::<T::C>() * inv_d;
    (mean, (var + eps).sqrt().recip())
}

/// `(x - mean) * rsqrt(var + eps) * w + b` over the last axis of `x`.
pub(crate) fn layer_norm(eps: f32, x: Input, w: Input, b: Input) -> Result<CpuBuffer> {
    crate::with_real_float_buffer!(x.0, v => ln_typed(eps, x, w, b, v.as_slice()), _ => Err(unsupported("layer_norm")))
}

fn ln_typed<T: Widen>(eps: f32, x: Input, w: Input, b: Input, _: &[T]) -> Result<CpuBuffer> {
    let d = row_len(x);
    let n = x.1.size();
    let xs = typed_slice::<T>(x, n)?;
    let (w, b) = (Feature::<T>::of(w, d)?, Feature::<T>::of(b, d)?);
    let mut y = output_vec::<T>(n)?;
    if n > 0 {
        let eps: T::C = cast(eps as f64);
        let inv_d: T::C = cast(1.0 / d as f64);
        y.par_chunks_mut(d).zip(xs.par_chunks(d)).with_min_len(rows_per_task(d)).for_each(|(yr, xr)| {
            let (mean, scale) = moments(xr, inv_d, eps);
            for (j, (o, &v)) in yr.iter_mut().zip(xr).enumerate() {
                *o = T::narrow((v.widen() - mean) * scale * w.at(j) + b.at(j));
            }
        });
    }
    Ok(T::into_buffer(y))
}

/// The derivatives of [`layer_norm`]: `(dx, dw, db)` for the cotangent `dy`.
pub(crate) fn layer_norm_vjp(eps: f32, x: Input, w: Input, b: Input, dy: Input) -> Result<Vec<CpuBuffer>> {
    crate::with_real_float_buffer!(x.0, v => ln_vjp_typed(eps, x, w, b, dy, v.as_slice()),
        _ => Err(unsupported("layer_norm_vjp")))
}

fn ln_vjp_typed<T: Widen>(eps: f32, x: Input, w_in: Input, b_in: Input, dy: Input, _: &[T]) -> Result<Vec<CpuBuffer>> {
    let d = row_len(x);
    let n = x.1.size();
    let xs = typed_slice::<T>(x, n)?;
    let gs = typed_slice::<T>(dy, n)?;
    let w = Feature::<T>::of(w_in, d)?;
    let b_vector = b_in.1.ndim() == 1;
    let mut dx = output_vec::<T>(n)?;
    let eps: T::C = cast(eps as f64);
    let inv_d: T::C = cast(1.0 / d.max(1) as f64);
    let per_task = rows_per_task(d);
    // Each task's partial sums: dw in columns 0..d, db in d..2d.
    let partials: Vec<Vec<T::C>> = if n == 0 {
        Vec::new()
    } else {
        dx.par_chunks_mut(d * per_task)
            .enumerate()
            .map(|(task, chunk)| {
                let mut acc = vec![T::C::zero(); 2 * d];
                for (r, dxr) in chunk.chunks_mut(d).enumerate() {
                    let row = (task * per_task + r) * d;
                    let (xr, gr) = (&xs[row..row + d], &gs[row..row + d]);
                    let (mean, scale) = moments(xr, inv_d, eps);
                    let (mut wg_sum, mut wgx_sum) = (T::C::zero(), T::C::zero());
                    for j in 0..d {
                        let wg = w.at(j) * gr[j].widen();
                        wg_sum = wg_sum + wg;
                        wgx_sum = wgx_sum + wg * (xr[j].widen() - mean) * scale;
                    }
                    let (a, c) = (wg_sum * inv_d, wgx_sum * inv_d);
                    for j in 0..d {
                        let (xhat, g) = ((xr[j].widen() - mean) * scale, gr[j].widen());
                        dxr[j] = T::narrow(scale * (w.at(j) * g - a - xhat * c));
                        acc[j] = acc[j] + g * xhat;
                        acc[d + j] = acc[d + j] + g;
                    }
                }
                acc
            })
            .collect()
    };
    Ok(vec![
        T::into_buffer(dx),
        feature_grad::<T>(w.vector, d, &partials, 0)?,
        feature_grad::<T>(b_vector, d, &partials, d)?,
    ])
}
