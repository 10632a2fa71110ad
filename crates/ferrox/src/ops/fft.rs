//! Fast Fourier transforms (MLX's `mlx::core::fft`): `fft`, `ifft`,
//! `fftn`, `ifftn`, `rfft`, `irfft`, `rfftn`, `irfftn`, the shifts and the
//! sample frequencies, with NumPy's and MLX's `n`/`s`, `axes` and `norm`.
//!
//! As MLX's, transforms compute in complex64 (real transforms read
//! float32): other inputs are cast first, so float64 and integers give
//! complex64. Each transformed axis is first cut or zero-padded to its
//! requested length (`s`); an inverse real transform's last axis holds
//! `n / 2 + 1` frequencies of a real signal of length `n` (default
//! `2 * (m - 1)` for `m` frequencies).

use super::elementwise::astype;
use super::rearrange::{pad, slice_axis, PadMode};
use crate::array::Array;
use crate::backend::FftOp;
use crate::error::{Error, Result};
use crate::primitives::Fft;

/// How a transform is scaled (NumPy's and MLX's `norm`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FftNorm {
    /// Forward transforms unscaled, inverse ones by `1/n` (the default).
    #[default]
    Backward,
    /// Both directions by `1/sqrt(n)`.
    Ortho,
    /// Forward transforms by `1/n`, inverse ones unscaled.
    Forward,
}

impl FftNorm {
    /// The mode named `name` (`"backward"`, `"ortho"`, `"forward"`), or
    /// MLX's error naming `op`.
    pub fn parse(op: &'static str, name: &str) -> Result<FftNorm> {
        match name {
            "backward" => Ok(FftNorm::Backward),
            "ortho" => Ok(FftNorm::Ortho),
            "forward" => Ok(FftNorm::Forward),
            _ => Err(Error::invalid(op, "Invalid norm. Expected one of {'backward', 'ortho', 'forward'}.")),
        }
    }

    /// The factor applied to the unnormalized transform of `n` points.
    fn scale(self, n: f64, inverse: bool) -> f64 {
        match (self, inverse) {
            (FftNorm::Backward, false) | (FftNorm::Forward, true) => 1.0,
            (FftNorm::Backward, true) | (FftNorm::Forward, false) => 1.0 / n,
            (FftNorm::Ortho, _) => 1.0 / n.sqrt(),
        }
    }
}

/// The transform `op` of `a` over `axes` with transform lengths `n` (MLX's
/// `fft_impl`).
fn transform(a: &Array, n: &[usize], axes: &[isize], op: FftOp, norm: FftNorm) -> Result<Array> {
    const OP: &str = "fftn";
    let nd = a.ndim();
    if nd < 1 {
        return Err(Error::invalid(OP, "Requires array with at least one dimension."));
    }
    if n.len() != axes.len() {
        return Err(Error::invalid(OP, "Shape and axes have different sizes."));
    }
    if axes.is_empty() {
        return Ok(a.clone());
    }
    let mut resolved = Vec::with_capacity(axes.len());
    for &ax in axes {
        let r = if ax < 0 { ax + nd as isize } else { ax };
        if r < 0 || r >= nd as isize {
            return Err(Error::AxisArgument {
                op: OP,
                msg: format!("Invalid axis received for array with {nd} dimensions."),
            });
        }
        if resolved.contains(&(r as usize)) {
            return Err(Error::invalid(OP, format!("Duplicated axis received {axes:?}")));
        }
        resolved.push(r as usize);
    }
    if n.contains(&0) {
        return Err(Error::invalid(OP, format!("Invalid FFT output size requested {n:?}")));
    }
    let last = *resolved.last().expect("axes is not empty");
    let n_last = *n.last().expect("n is not empty");
    let mut in_shape = a.shape().to_vec();
    for (&ax, &len) in resolved.iter().zip(n) {
        in_shape[ax] = len;
    }
    if op == FftOp::RealInverse {
        in_shape[last] = n_last / 2 + 1;
    }
    let x = fit(&astype(a, op.input_dtype())?, &in_shape)?;
    let points: f64 = n.iter().map(|&v| v as f64).product();
    let scale = norm.scale(points, op.is_inverse());
    let real_len = if op.is_real() { n_last } else { 0 };
    let p = Fft { op, axes: resolved, real_len, scale };
    let mut out_shape = in_shape;
    match op {
        FftOp::RealForward => out_shape[last] = n_last / 2 + 1,
        FftOp::RealInverse => out_shape[last] = n_last,
        _ => {}
    }
    Array::from_primitive(out_shape, op.output_dtype(), p, vec![x])
}

/// `x` cut or zero-padded (at the end of each axis) to `shape`.
fn fit(x: &Array, shape: &[usize]) -> Result<Array> {
    let mut x = x.clone();
    for (ax, &len) in shape.iter().enumerate() {
        if x.shape()[ax] > len {
            x = slice_axis(&x, ax, 0, len, 1)?;
        }
    }
    if x.shape() != shape {
        let widths: Vec<(i64, i64)> =
            x.shape().iter().zip(shape).map(|(&have, &want)| (0, (want - have) as i64)).collect();
        x = pad(&x, &widths, PadMode::Constant, &Array::scalar_of(crate::element::Scalar::Float(0.0), x.dtype()))?;
    }
    Ok(x)
}

/// The lengths of `axes` of `a` (the default `s`), with the last one turned
/// from a frequency count `m` into the real length `2 * (m - 1)` for an
/// inverse real transform.
fn default_lengths(a: &Array, axes: &[isize], real_inverse: bool) -> Result<Vec<usize>> {
    let nd = a.ndim();
    let mut n = Vec::with_capacity(axes.len());
    for &ax in axes {
        let r = if ax < 0 { ax + nd as isize } else { ax };
        if r < 0 || r >= nd as isize {
            return Err(Error::AxisArgument {
                op: "fftn",
                msg: format!("Invalid axis received for array with {nd} dimensions."),
            });
        }
        n.push(a.shape()[r as usize]);
    }
    if real_inverse {
        if let Some(last) = n.last_mut() {
            *last = 2 * last.saturating_sub(1);
        }
    }
    Ok(n)
}

/// Every axis of `a`, in order.
fn all_axes(a: &Array) -> Vec<isize> {
    (0..a.ndim() as isize).collect()
}

/// A transform over `axes` (every axis when `None`) with lengths `s` (the
/// axes' own when `None`; `s` needs `axes`, as in MLX).
fn transform_n(
    op_name: &'static str,
    a: &Array,
    s: Option<&[usize]>,
    axes: Option<&[isize]>,
    op: FftOp,
    norm: FftNorm,
) -> Result<Array> {
    let axes = match (axes, s) {
        (Some(axes), _) => axes.to_vec(),
        (None, Some(_)) => {
            return Err(Error::invalid(op_name, "`axes` should not be `None` if `s` is not `None`."));
        }
        (None, None) => all_axes(a),
    };
    if a.ndim() < 1 {
        return Err(Error::invalid("fftn", "Requires array with at least one dimension."));
    }
    let n = match s {
        Some(s) => s.to_vec(),
        None => default_lengths(a, &axes, op == FftOp::RealInverse)?,
    };
    transform(a, &n, &axes, op, norm)
}

/// A one-axis transform with length `n` (the axis' own when `None`).
fn transform_1(a: &Array, n: Option<usize>, axis: isize, op: FftOp, norm: FftNorm) -> Result<Array> {
    if a.ndim() < 1 {
        return Err(Error::invalid("fftn", "Requires array with at least one dimension."));
    }
    let n = match n {
        Some(n) => vec![n],
        None => default_lengths(a, &[axis], op == FftOp::RealInverse)?,
    };
    transform(a, &n, &[axis], op, norm)
}

/// One-dimensional discrete Fourier transform along `axis`, of length `n`
/// (the axis is cut or zero-padded to it; default: its length).
///
/// ```
/// use ferrox::{ops::fft, Array};
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4])?;
/// let y = fft::fft(&x, None, -1, fft::FftNorm::Backward)?;
/// assert_eq!(y.shape(), &[4]);
/// assert_eq!(y.dtype(), ferrox::Dtype::C64);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn fft(a: &Array, n: Option<usize>, axis: isize, norm: FftNorm) -> Result<Array> {
    transform_1(a, n, axis, FftOp::Forward, norm)
}

/// One-dimensional inverse discrete Fourier transform along `axis`.
pub fn ifft(a: &Array, n: Option<usize>, axis: isize, norm: FftNorm) -> Result<Array> {
    transform_1(a, n, axis, FftOp::Inverse, norm)
}

/// One-dimensional transform of a real signal: the `n / 2 + 1`
/// non-negative frequencies (the input is cast to float32).
pub fn rfft(a: &Array, n: Option<usize>, axis: isize, norm: FftNorm) -> Result<Array> {
    transform_1(a, n, axis, FftOp::RealForward, norm)
}

/// Inverse of [`rfft`]: a real signal of length `n` (default `2 * (m - 1)`
/// for `m` frequencies along `axis`), float32.
pub fn irfft(a: &Array, n: Option<usize>, axis: isize, norm: FftNorm) -> Result<Array> {
    transform_1(a, n, axis, FftOp::RealInverse, norm)
}

/// n-dimensional discrete Fourier transform over `axes` (every axis when
/// `None`) with lengths `s` (which needs `axes`).
pub fn fftn(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>, norm: FftNorm) -> Result<Array> {
    transform_n("fftn", a, s, axes, FftOp::Forward, norm)
}

/// n-dimensional inverse discrete Fourier transform.
pub fn ifftn(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>, norm: FftNorm) -> Result<Array> {
    transform_n("ifftn", a, s, axes, FftOp::Inverse, norm)
}

/// n-dimensional transform of a real signal; the last of `axes` keeps its
/// `n / 2 + 1` non-negative frequencies.
pub fn rfftn(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>, norm: FftNorm) -> Result<Array> {
    transform_n("rfftn", a, s, axes, FftOp::RealForward, norm)
}

/// Inverse of [`rfftn`]: float32, with the last of `axes` of length
/// `s[-1]` (default `2 * (m - 1)`).
pub fn irfftn(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>, norm: FftNorm) -> Result<Array> {
    transform_n("irfftn", a, s, axes, FftOp::RealInverse, norm)
}

/// `a` rolled along `axes` (every axis when `None`) so that the zero
/// frequency is in the middle (NumPy's `fftshift`).
pub fn fftshift(a: &Array, axes: Option<&[isize]>) -> Result<Array> {
    shift("fftshift", a, axes, false)
}

/// The inverse of [`fftshift`].
pub fn ifftshift(a: &Array, axes: Option<&[isize]>) -> Result<Array> {
    shift("ifftshift", a, axes, true)
}

fn shift(op: &'static str, a: &Array, axes: Option<&[isize]>, inverse: bool) -> Result<Array> {
    let axes = match axes {
        Some(axes) => axes.to_vec(),
        None => all_axes(a),
    };
    if axes.is_empty() {
        return Ok(a.clone());
    }
    let nd = a.ndim();
    let mut shifts = Vec::with_capacity(axes.len());
    for &ax in &axes {
        let r = if ax < 0 { ax + nd as isize } else { ax };
        if r < 0 || r >= nd as isize {
            return Err(Error::AxisArgument { op, msg: format!("Invalid axis {ax} for array with {nd} dimensions.") });
        }
        let half = (a.shape()[r as usize] / 2) as i64;
        shifts.push(if inverse { -half } else { half });
    }
    super::rearrange::roll(a, &shifts, Some(&axes))
}

/// The sample frequencies of an `n`-point transform with sample spacing
/// `d`: `[0, 1, ..., (n - 1) / 2, -(n / 2), ..., -1] / (n * d)`, float32.
pub fn fftfreq(n: usize, d: f64) -> Result<Array> {
    frequencies("fftfreq", n, d, false)
}

/// The non-negative sample frequencies of an `n`-point real transform:
/// `[0, 1, ..., n / 2] / (n * d)`, float32.
pub fn rfftfreq(n: usize, d: f64) -> Result<Array> {
    frequencies("rfftfreq", n, d, true)
}

fn frequencies(op: &'static str, n: usize, d: f64, real: bool) -> Result<Array> {
    if n == 0 {
        return Err(Error::invalid(op, "`n` must be greater than 0."));
    }
    if d == 0.0 {
        return Err(Error::invalid(op, "`d` must be non-zero."));
    }
    let scale = (1.0 / (n as f64 * d)) as f32;
    let len = if real { n / 2 + 1 } else { n };
    // A fallible allocation: `n` comes straight from the caller.
    let mut values = crate::backend::cpu::storage::zeroed_vec::<f32>(len)
        .map_err(|_| Error::OutOfMemory { op, msg: format!("{len} frequencies do not fit in memory.") })?;
    let positive = if real { len } else { n.div_ceil(2) };
    for (i, v) in values.iter_mut().enumerate() {
        let k = if i < positive { i as f64 } else { i as f64 - n as f64 };
        *v = k as f32 * scale;
    }
    Array::from_vec(values, &[len])
}
