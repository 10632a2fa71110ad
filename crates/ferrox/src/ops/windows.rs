//! Window functions for signal processing, computed as MLX computes them
//! (float32): `hamming`, `hanning`, `bartlett`, `blackman`.

use super::creation::{arange, ones};
use super::elementwise::{abs, add, cos, multiply, sin, square, subtract};
use crate::array::Array;
use crate::dtype::Dtype;
use crate::error::Result;

fn f32c(v: f64) -> Array {
    Array::scalar_of(crate::element::Scalar::Float(v as f32 as f64), Dtype::F32)
}

/// `None` for the windows of fewer than two points (empty, or `[1]`), else
/// the sample positions `0..m` as float32.
fn positions(m: i64) -> Result<std::result::Result<Array, Array>> {
    if m < 1 {
        return Ok(Err(super::zeros(&[0], Dtype::F32)?));
    }
    if m == 1 {
        return Ok(Err(ones(&[1], Dtype::F32)?));
    }
    Ok(Ok(arange(0.0, m as f64, 1.0, Dtype::F32)?))
}

/// The Bartlett (triangular) window of `m` points.
pub fn bartlett(m: i64) -> Result<Array> {
    let n = match positions(m)? {
        Ok(n) => n,
        Err(short) => return Ok(short),
    };
    let term = subtract(&multiply(&f32c(2.0 / (m - 1) as f64), &n)?, &f32c(1.0))?;
    subtract(&f32c(1.0), &abs(&term)?)
}

/// The Hann window of `m` points.
pub fn hanning(m: i64) -> Result<Array> {
    let n = match positions(m)? {
        Ok(n) => n,
        Err(short) => return Ok(short),
    };
    square(&sin(&multiply(&f32c(std::f64::consts::PI / (m - 1) as f64), &n)?)?)
}

/// The Hamming window of `m` points.
pub fn hamming(m: i64) -> Result<Array> {
    let n = match positions(m)? {
        Ok(n) => n,
        Err(short) => return Ok(short),
    };
    let c = cos(&multiply(&f32c(2.0 * std::f64::consts::PI / (m - 1) as f64), &n)?)?;
    subtract(&f32c(0.54), &multiply(&f32c(0.46), &c)?)
}

/// The Blackman window of `m` points.
pub fn blackman(m: i64) -> Result<Array> {
    let n = match positions(m)? {
        Ok(n) => n,
        Err(short) => return Ok(short),
    };
    let c = cos(&multiply(&f32c(2.0 * std::f64::consts::PI / (m - 1) as f64), &n)?)?;
    // 0.42 - 0.5 cos x + 0.08 cos 2x, written as MLX does with cos 2x = 2cos²x - 1.
    add(&subtract(&f32c(0.34), &multiply(&f32c(0.5), &c)?)?, &multiply(&f32c(0.16), &square(&c)?)?)
}
