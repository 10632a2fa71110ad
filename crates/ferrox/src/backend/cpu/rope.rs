//! Fused rotary position embeddings (the twin of `kernels/rope.cu`): each
//! row of x of shape `(B, ..., T, D)` rotates its leading `dims` features in
//! pairs by the angles `(t + offset[b]) * scale * inv_freq[i]`, computed in
//! float32 as MLX does (float64 for float64 inputs).

use super::fast::{typed_slice, Input};
use super::storage::output_vec;
use super::widen::Widen;
use super::CpuBuffer;
use crate::backend::RopeParams;
use crate::error::{Error, Result};
use num_traits::{Float, NumCast};
use rayon::prelude::*;

/// Rows per parallel task.
const ROWS_PER_TASK: usize = 64;

/// The inverse frequencies `1 / freqs[i]`, or MLX's default
/// `exp(-i * ln(base) / (dims / 2))` computed in float32.
fn inverse_frequencies(p: &RopeParams, freqs: Option<Input>) -> Result<Vec<f32>> {
    let half = p.dims / 2;
    match freqs {
        Some(f) => Ok(typed_slice::<f32>(f, half)?.iter().map(|v| v.recip()).collect()),
        None => {
            let step = p.base.ln() / half as f32;
            Ok((0..half).map(|i| (-(i as f32) * step).exp()).collect())
        }
    }
}

/// The rotated x. `offset` holds one int32 position offset, or one per
/// leading index `B`; `freqs` the periods when given.
pub(crate) fn rope(p: &RopeParams, x: Input, offset: Input, freqs: Option<Input>) -> Result<CpuBuffer> {
    let inv_freq = inverse_frequencies(p, freqs)?;
    let offsets = typed_slice::<i32>(offset, offset.1.size())?;
    crate::with_real_float_buffer!(x.0, v => typed(p, x, offsets, &inv_freq, v.as_slice()),
        _ => Err(Error::invalid("rope", "internal error: the kernel takes real float inputs")))
}

fn typed<T: Widen>(p: &RopeParams, x: Input, offsets: &[i32], inv_freq: &[f32], _: &[T]) -> Result<CpuBuffer> {
    let shape = &x.1.shape;
    let n = x.1.size();
    let xs = typed_slice::<T>(x, n)?;
    let mut y = output_vec::<T>(n)?;
    if n == 0 {
        return Ok(T::into_buffer(y));
    }
    let d = shape[shape.len() - 1];
    let t_len = shape[shape.len() - 2];
    let rows_per_batch = n / d / shape[0];
    let half = p.dims / 2;
    let cast = |v: f32| -> T::C { <T::C as NumCast>::from(v).expect("a float32 fits") };
    let scale = cast(p.scale);
    let inv_freq: Vec<T::C> = inv_freq.iter().map(|&f| cast(f)).collect();
    y.par_chunks_mut(d).zip(xs.par_chunks(d)).enumerate().with_min_len(ROWS_PER_TASK).for_each(|(row, (yr, xr))| {
        let offset = offsets[if offsets.len() == 1 { 0 } else { row / rows_per_batch }];
        let position = (cast((row % t_len) as f32) + cast(offset as f32)) * scale;
        for (i, &freq) in inv_freq.iter().enumerate() {
            let (a, b) = if p.traditional { (2 * i, 2 * i + 1) } else { (i, i + half) };
            let theta = position * freq;
            let (sin, cos) = theta.sin_cos();
            let (x1, x2) = (xr[a].widen(), xr[b].widen());
            let (y1, y2) = if p.forward {
                (x1 * cos - x2 * sin, x1 * sin + x2 * cos)
            } else {
                (x1 * cos + x2 * sin, x2 * cos - x1 * sin)
            };
            yr[a] = T::narrow(y1);
            yr[b] = T::narrow(y2);
        }
        yr[p.dims..].copy_from_slice(&xr[p.dims..]);
    });
    Ok(T::into_buffer(y))
}
