//! Spatial upsampling of channels-last inputs `[N, *spatial, C]`: the
//! [`Upsample`] layer and the functions [`upsample_nearest`],
//! [`upsample_linear`] and [`upsample_cubic`], with MLX's sampling grids,
//! kernels and antialiasing filters.

use crate::float;
use crate::module::{Forward, Module};
use ferrox::ops::{self, Index};
use ferrox::{Array, Dtype, Error, Result};

/// The input positions and weights sampled along one spatial axis: each
/// position array is shaped to broadcast along that axis only, each weight
/// array the same with a trailing 1 (the channel axis).
type Taps = Vec<(Array, Array)>;

/// A function giving the taps along axis `dim` of `dims` for an input size,
/// a scale and `align_corners`.
type TapsFn = fn(usize, f64, bool, usize, usize) -> Result<Taps>;

/// `values` (1-D) reshaped to `[1, ..., -1, ..., 1]` (`dims` axes, `-1` at
/// `dim`): a grid along one spatial axis.
fn grid(values: &Array, dims: usize, dim: usize) -> Result<Array> {
    let mut shape = vec![1isize; dims];
    shape[dim] = -1;
    values.reshape(&shape)
}

/// The number of outputs of an axis of `n` inputs scaled by `scale`.
fn out_size(n: usize, scale: f64) -> usize {
    (scale * n as f64) as usize
}

/// `0, 1, ..., m - 1` in float32.
fn positions(m: usize) -> Result<Array> {
    ops::arange(0.0, m as f64, 1.0, Dtype::F32)
}

/// The fractional input coordinate of each output of an axis of `n`
/// inputs (1-D): corners onto corners with `align_corners`, pixel centers
/// onto pixel centers otherwise.
fn scaled_indices(n: usize, scale: f64, align_corners: bool) -> Result<Array> {
    let m = out_size(n, scale);
    let i = positions(m)?;
    if align_corners {
        &i * ((n as f64 - 1.0) / m.saturating_sub(1).max(1) as f64)
    } else {
        let step = 1.0 / scale;
        let start = ((m as f64 - 1.0) * step - n as f64 + 1.0) / 2.0;
        &(&i * step)? - start
    }
}

/// `a` clipped to `[0, n - 1]`.
fn clip_to(a: &Array, n: usize) -> Result<Array> {
    ops::clip(a, Some(&float(0.0, a)?), Some(&float(n as f64 - 1.0, a)?))
}

/// `a` as uint32 indices.
fn as_index(a: &Array) -> Result<Array> {
    a.astype(Dtype::U32)
}

/// `w` with a trailing axis of 1 (to broadcast against the channels).
fn channel_weight(w: &Array) -> Result<Array> {
    w.expand_dims(&[-1])
}

/// The input index nearest to each output along axis `dim`.
fn nearest_indices(n: usize, scale: f64, dim: usize, dims: usize) -> Result<Array> {
    let m = out_size(n, scale);
    let i = positions(m)?;
    let ratio = n as f64 / m as f64;
    let i = if m > n { ops::round(&(&(&(&i + 0.5)? * ratio)? - 0.5)?)? } else { (&i * ratio)? };
    grid(&as_index(&i)?, dims, dim)
}

/// The two neighbouring inputs of each output and their linear weights.
fn linear_taps(n: usize, scale: f64, align_corners: bool, dim: usize, dims: usize) -> Result<Taps> {
    let idx = clip_to(&grid(&scaled_indices(n, scale, align_corners)?, dims, dim)?, n)?;
    let left = ops::floor(&idx)?;
    let right = ops::ceil(&idx)?;
    let w = channel_weight(&(&idx - &left)?)?;
    Ok(vec![(as_index(&left)?, (1.0 - &w)?), (as_index(&right)?, w)])
}

/// Keys' cubic with parameter `a` at distance `x`: the inner piece
/// (`|x| <= 1`) when `near`, the outer (`1 < |x| <= 2`) otherwise.
fn keys_piece(x: &Array, a: f64, near: bool) -> Result<Array> {
    if near {
        let t = (&(x * (a + 2.0))? - (a + 3.0))?;
        &(&(&t * x)? * x)? + 1.0
    } else {
        let t = (&(&(x - 5.0)? * x)? + 8.0)?;
        &(&(&t * x)? - 4.0)? * a
    }
}

/// The four neighbouring inputs of each output (clamped to the border)
/// and their cubic weights (Keys' kernel with `a = -0.75`).
fn cubic_taps(n: usize, scale: f64, align_corners: bool, dim: usize, dims: usize) -> Result<Taps> {
    let idx = grid(&scaled_indices(n, scale, align_corners)?, dims, dim)?;
    let l1 = ops::floor(&idx)?;
    let r1 = ops::floor(&(&idx + 1.0)?)?;
    let l2 = (&l1 - 1.0)?;
    let r2 = (&r1 + 1.0)?;
    [(l1, true), (r1, true), (l2, false), (r2, false)]
        .iter()
        .map(|(g, near)| {
            let w = keys_piece(&ops::abs(&(&idx - g)?)?, -0.75, *near)?;
            Ok((as_index(&clip_to(g, n)?)?, channel_weight(&w)?))
        })
        .collect()
}

/// The triangle (linear) filter, support radius 1.
fn triangle_kernel(x: &Array) -> Result<Array> {
    ops::maximum(&(1.0 - x)?, &float(0.0, x)?)
}

/// Keys' cubic filter with `a = -0.5`, support radius 2 (the kernel of
/// antialiased cubic interpolation).
fn cubic_kernel(x: &Array) -> Result<Array> {
    let inner = keys_piece(x, -0.5, true)?;
    let outer = keys_piece(x, -0.5, false)?;
    let le = |v: f64| ops::less_equal(x, &float(v, x)?);
    ops::where_(&le(1.0)?, &inner, &ops::where_(&le(2.0)?, &outer, &float(0.0, x)?)?)
}

/// The taps of an antialiasing filter: `kernel` widened by `1 / scale`
/// when downscaling, out-of-range taps weighted zero and each output's
/// weights normalized to sum to one.
fn aa_taps(
    n: usize,
    scale: f64,
    align_corners: bool,
    dim: usize,
    dims: usize,
    kernel: fn(&Array) -> Result<Array>,
    radius: f64,
) -> Result<Taps> {
    let idx = grid(&scaled_indices(n, scale, align_corners)?, dims, dim)?;
    let inv_scale = if scale < 1.0 { 1.0 / scale } else { 1.0 };
    let num_taps = (radius * inv_scale).ceil() as i64 + 1;
    let base = ops::floor(&idx)?;
    let mut taps = Vec::new();
    for k in -num_taps + 1..num_taps {
        let at = (&base + k as f64)?;
        let w = kernel(&(&ops::abs(&(&idx - &at)?)? / inv_scale)?)?;
        let inside =
            ops::logical_and(&ops::greater_equal(&at, &float(0.0, &at)?)?, &ops::less(&at, &float(n as f64, &at)?)?)?;
        taps.push((at, ops::where_(&inside, &w, &float(0.0, &w)?)?));
    }
    let mut total = taps[0].1.clone();
    for (_, w) in &taps[1..] {
        total = (&total + w)?;
    }
    let positive = ops::greater(&total, &float(0.0, &total)?)?;
    let total = ops::where_(&positive, &total, &float(1.0, &total)?)?;
    taps.iter().map(|(at, w)| Ok((as_index(&clip_to(at, n)?)?, channel_weight(&(w / &total)?)?))).collect()
}

/// Antialiased linear taps (the triangle filter).
fn linear_aa_taps(n: usize, scale: f64, align_corners: bool, dim: usize, dims: usize) -> Result<Taps> {
    aa_taps(n, scale, align_corners, dim, dims, triangle_kernel, 1.0)
}

/// Antialiased cubic taps (Keys' filter with `a = -0.5`).
fn cubic_aa_taps(n: usize, scale: f64, align_corners: bool, dim: usize, dims: usize) -> Result<Taps> {
    aa_taps(n, scale, align_corners, dim, dims, cubic_kernel, 2.0)
}

/// The number of spatial axes of `x`; an error naming `op` unless `scales`
/// has at least one spatial axis and one positive finite scale for each.
fn check_scales(op: &'static str, x: &Array, scales: &[f64]) -> Result<usize> {
    if x.ndim() < 3 {
        return Err(Error::invalid(
            op,
            format!("Expected an input [N, *spatial, C] with at least 1 spatial axis but got {} dimensions.", x.ndim()),
        ));
    }
    if x.ndim() - 2 != scales.len() {
        return Err(Error::invalid(op, "A scale needs to be provided for each spatial dimension"));
    }
    if let Some(s) = scales.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        return Err(Error::invalid(op, format!("The scales must be positive and finite but got {s:?}.")));
    }
    Ok(scales.len())
}

/// An error for `antialias` with `align_corners` (unsupported).
fn check_antialias(align_corners: bool, antialias: bool) -> Result<()> {
    if antialias && align_corners {
        return Err(Error::invalid(
            "Upsample",
            "antialias=True with align_corners=True is not supported. Use align_corners=False for antialiased \
             interpolation.",
        ));
    }
    Ok(())
}

/// The sum of `terms` (at least one), left to right.
fn sum_all(terms: impl IntoIterator<Item = Result<Array>>) -> Result<Array> {
    let mut terms = terms.into_iter();
    let first = terms.next().ok_or_else(|| Error::invalid("Upsample", "No taps to sum."))??;
    terms.try_fold(first, |acc, t| &acc + &t?)
}

/// `x[:, idx_0, idx_1, ...]` with the broadcasting grids `idx`.
fn sample(x: &Array, idx: &[&Array]) -> Result<Array> {
    let mut indices = vec![Index::Slice { start: None, stop: None, step: None }];
    indices.extend(idx.iter().map(|i| Index::Array((*i).clone())));
    ops::index(x, &indices)
}

/// Nearest-neighbour upsampling of `x` (`[N, *spatial, C]`) by one scale
/// per spatial axis: each element repeated for integer scales, the nearest
/// input sampled otherwise.
pub fn upsample_nearest(x: &Array, scale_factor: &[f64]) -> Result<Array> {
    let dims = check_scales("upsample_nearest", x, scale_factor)?;
    let shape = x.shape();
    if scale_factor.iter().all(|s| s.fract() == 0.0) {
        // [N, n0, 1, n1, 1, ..., C] -> broadcast to [N, n0, s0, n1, s1, ..., C] -> merge pairs.
        let mut split = vec![shape[0]];
        let mut wide = vec![shape[0]];
        let mut merged = vec![shape[0] as isize];
        for (&n, &s) in shape[1..=dims].iter().zip(scale_factor) {
            split.extend([n, 1]);
            wide.extend([n, s as usize]);
            merged.push((n * s as usize) as isize);
        }
        split.push(shape[dims + 1]);
        wide.push(shape[dims + 1]);
        merged.push(shape[dims + 1] as isize);
        let split: Vec<isize> = split.iter().map(|&d| d as isize).collect();
        return x.reshape(&split)?.broadcast_to(&wide)?.reshape(&merged);
    }
    let idx: Vec<Array> = shape[1..=dims]
        .iter()
        .zip(scale_factor)
        .enumerate()
        .map(|(i, (&n, &s))| nearest_indices(n, s, i, dims))
        .collect::<Result<_>>()?;
    sample(x, &idx.iter().collect::<Vec<_>>())
}

/// Interpolation sampling every combination of taps across the spatial
/// axes at once (weights multiplied).
fn interpolate(x: &Array, scales: &[f64], taps_fn: TapsFn, align_corners: bool) -> Result<Array> {
    let dims = scales.len();
    let taps: Vec<Taps> = x.shape()[1..=dims]
        .iter()
        .zip(scales)
        .enumerate()
        .map(|(i, (&n, &s))| taps_fn(n, s, align_corners, i, dims))
        .collect::<Result<_>>()?;
    // Every combination, the last axis varying fastest (itertools.product).
    let mut combos: Vec<Vec<usize>> = vec![vec![]];
    for axis in &taps {
        combos = combos.iter().flat_map(|c| (0..axis.len()).map(move |k| [c.clone(), vec![k]].concat())).collect();
    }
    sum_all(combos.iter().map(|combo| {
        let idx: Vec<&Array> = combo.iter().zip(&taps).map(|(&k, t)| &t[k].0).collect();
        let mut weight = taps[0][combo[0]].1.clone();
        for (&k, t) in combo.iter().zip(&taps).skip(1) {
            weight = (&weight * &t[k].1)?;
        }
        &weight * &sample(x, &idx)?
    }))
}

/// Interpolation one spatial axis after another.
fn interpolate_separable(x: &Array, scales: &[f64], taps_fn: TapsFn, align_corners: bool) -> Result<Array> {
    let dims = scales.len();
    let mut out = x.clone();
    for (i, (&n, &s)) in x.shape()[1..=dims].iter().zip(scales).enumerate() {
        let taps = taps_fn(n, s, align_corners, i, dims)?;
        out = sum_all(
            taps.iter()
                .map(|(idx, w)| &ops::take(&out, &idx.reshape(&[-1])?, Some(i as isize + 1))? * w)
                .collect::<Vec<_>>(),
        )?;
    }
    Ok(out)
}

/// Linear (bilinear, trilinear, ...) upsampling of `x` (`[N, *spatial,
/// C]`) by one scale per spatial axis; `antialias` low-pass filters when
/// downscaling (not with `align_corners`).
pub fn upsample_linear(x: &Array, scale_factor: &[f64], align_corners: bool, antialias: bool) -> Result<Array> {
    check_antialias(align_corners, antialias)?;
    check_scales("upsample_linear", x, scale_factor)?;
    if antialias {
        interpolate_separable(x, scale_factor, linear_aa_taps, align_corners)
    } else if !align_corners {
        interpolate_separable(x, scale_factor, linear_taps, align_corners)
    } else {
        interpolate(x, scale_factor, linear_taps, align_corners)
    }
}

/// Cubic (bicubic, ...) upsampling of `x` (`[N, *spatial, C]`) by one
/// scale per spatial axis, Keys' kernel with `a = -0.75` and border
/// replication; `antialias` filters when downscaling with `a = -0.5` (not
/// with `align_corners`).
pub fn upsample_cubic(x: &Array, scale_factor: &[f64], align_corners: bool, antialias: bool) -> Result<Array> {
    check_antialias(align_corners, antialias)?;
    check_scales("upsample_cubic", x, scale_factor)?;
    if antialias {
        interpolate_separable(x, scale_factor, cubic_aa_taps, align_corners)
    } else {
        interpolate(x, scale_factor, cubic_taps, align_corners)
    }
}

/// The interpolation of an [`Upsample`] layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpsampleMode {
    /// Nearest neighbour (`"nearest"`).
    Nearest,
    /// Linear, bilinear, trilinear, ... (`"linear"`).
    Linear,
    /// Cubic, bicubic, ... (`"cubic"`).
    Cubic,
}

impl UpsampleMode {
    /// The mode named `name` as in MLX (`"nearest"`, `"linear"`,
    /// `"cubic"`), or an error.
    pub fn parse(name: &str) -> Result<UpsampleMode> {
        match name {
            "nearest" => Ok(UpsampleMode::Nearest),
            "linear" => Ok(UpsampleMode::Linear),
            "cubic" => Ok(UpsampleMode::Cubic),
            _ => Err(Error::invalid("Upsample", format!("Got unsupported upsampling algorithm: {name}"))),
        }
    }
}

/// The scale of an [`Upsample`] layer: one for every spatial axis (MLX's
/// float) or one per axis (MLX's tuple).
#[derive(Clone, Debug, PartialEq)]
pub enum UpsampleScale {
    /// The multiplier of every spatial size.
    All(f64),
    /// One multiplier per spatial axis.
    PerAxis(Vec<f64>),
}

/// Upsamples the spatial axes (`1` to `ndim - 2`) of a channels-last input
/// by a scale factor, by nearest-neighbour, linear or cubic interpolation
/// over any number of spatial axes. With `align_corners` the corner
/// elements of input and output coincide (linear and cubic modes);
/// otherwise pixel centers are aligned. `antialias` low-pass filters when
/// downscaling (linear and cubic modes, not with `align_corners`).
#[derive(Clone, Debug)]
pub struct Upsample {
    scale_factor: UpsampleScale,
    mode: UpsampleMode,
    align_corners: bool,
    antialias: bool,
    training: bool,
}

impl Upsample {
    /// Upsampling of every spatial axis by `scale_factor` in `mode`,
    /// aligning pixel centers, without antialiasing.
    pub fn new(scale_factor: f64, mode: UpsampleMode) -> Result<Upsample> {
        Upsample::with_options(UpsampleScale::All(scale_factor), mode, false, false)
    }

    /// Upsampling by `scale_factor` in `mode`, aligning corners when
    /// `align_corners` and antialiasing when `antialias`.
    pub fn with_options(
        scale_factor: UpsampleScale,
        mode: UpsampleMode,
        align_corners: bool,
        antialias: bool,
    ) -> Result<Upsample> {
        if antialias && mode == UpsampleMode::Nearest {
            return Err(Error::invalid("Upsample", "Antialiasing is not supported for nearest neighbor upsampling"));
        }
        check_antialias(align_corners, antialias)?;
        let scales = match &scale_factor {
            UpsampleScale::All(s) => std::slice::from_ref(s),
            UpsampleScale::PerAxis(s) => s.as_slice(),
        };
        if let Some(s) = scales.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
            return Err(Error::invalid("Upsample", format!("The scales must be positive and finite but got {s:?}.")));
        }
        Ok(Upsample { scale_factor, mode, align_corners, antialias, training: true })
    }

    /// The scale factor.
    pub fn scale_factor(&self) -> &UpsampleScale {
        &self.scale_factor
    }

    /// The interpolation.
    pub fn mode(&self) -> UpsampleMode {
        self.mode
    }

    /// Whether corners (rather than pixel centers) are aligned.
    pub fn align_corners(&self) -> bool {
        self.align_corners
    }

    /// Whether downscaling is antialiased.
    pub fn antialias(&self) -> bool {
        self.antialias
    }
}

impl Module for Upsample {
    entries!();
    training_flag!();
}

impl Forward for Upsample {
    fn forward(&self, x: &Array) -> Result<Array> {
        let dims = match x.ndim().checked_sub(2) {
            Some(d) if d > 0 => d,
            _ => {
                return Err(Error::invalid(
                    "Upsample",
                    format!(
                        "The input should have at least 1 spatial dimension which means it should be at least 3D \
                         but {}D was provided",
                        x.ndim()
                    ),
                ))
            }
        };
        let scales = match &self.scale_factor {
            UpsampleScale::All(s) => vec![*s; dims],
            UpsampleScale::PerAxis(s) if s.len() == dims => s.clone(),
            UpsampleScale::PerAxis(s) => {
                return Err(Error::invalid(
                    "Upsample",
                    format!(
                        "One scale per spatial dimension is required but scale_factor={s:?} and the number of \
                         spatial dimensions were {dims}"
                    ),
                ))
            }
        };
        match self.mode {
            UpsampleMode::Nearest => upsample_nearest(x, &scales),
            UpsampleMode::Linear => upsample_linear(x, &scales, self.align_corners, self.antialias),
            UpsampleMode::Cubic => upsample_cubic(x, &scales, self.align_corners, self.antialias),
        }
    }
}
