//! The Walsh–Hadamard transform along the last axis (MLX's
//! `hadamard_transform`), for lengths `m * 2^k` with `m` in 1, 12, 20, 28:
//! `k` butterfly stages (the Sylvester matrix in natural order) over the
//! `2^k` part, then the `m × m` Hadamard matrix over the other, as MLX
//! orders them. Built from ops, so it runs on every backend and is
//! differentiable.

use super::elementwise::{add, astype, multiply, subtract};
use super::indexing::{index, Index};
use super::matmul::matmul;
use super::shaping::{reshape_to, stack};
use crate::array::Array;
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};

/// The `m × m` Hadamard matrices MLX uses for lengths that are not powers
/// of two (from N. J. A. Sloane's library, `+` for 1 and `-` for -1).
const H12: &str = "+-++++++++++ --+-+-+-+-+- +++-++----++ +---+--+-++- +++++-++---- +-+---+--+-+ \
                   ++--+++-++-- +--++---+--+ ++----+++-++ +--+-++---+- ++++----+++- +-+--+-++---";
const H20: &str = "+----+----++--++-++- -+----+---+++---+-++ --+----+---+++-+-+-+ ---+----+---+++++-+- \
                   ----+----++--++-++-+ -+++++-----+--+++--+ +-+++-+---+-+--+++-- ++-++--+---+-+--+++- \
                   +++-+---+---+-+--+++ ++++-----++--+-+--++ --++-+-++-+-----++++ ---++-+-++-+---+-+++ \
                   +---++-+-+--+--++-++ ++---++-+----+-+++-+ -++---++-+----+++++- -+--+--++-+----+---- \
                   +-+-----++-+----+--- -+-+-+---+--+----+-- --+-+++------+----+- +--+--++------+----+";
const H28: &str = "+------++----++-+--+-+--++-- -+-----+++-----+-+--+-+--++- --+-----+++---+-+-+----+--++ \
                   ---+-----+++---+-+-+-+--+--+ ----+-----+++---+-+-+++--+-- -----+-----++++--+-+--++--+- \
                   ------++----++-+--+-+--++--+ --++++-+-------++--+++-+--+- ---++++-+-----+-++--+-+-+--+ \
                   +---+++--+----++-++--+-+-+-- ++---++---+----++-++--+-+-+- +++---+----+----++-++--+-+-+ \
                   ++++--------+-+--++-++--+-+- -++++--------+++--++--+--+-+ -+-++-++--++--+--------++++- \
                   +-+-++--+--++--+--------++++ -+-+-++--+--++--+----+---+++ +-+-+-++--+--+---+---++---++ \
                   ++-+-+-++--+------+--+++---+ -++-+-+-++--+------+-++++--- +-++-+---++--+------+-++++-- \
                   -++--++-+-++-+++----++------ +-++--++-+-++-+++-----+----- ++-++---+-+-++-+++-----+---- \
                   -++-++-+-+-+-+--+++-----+--- --++-++++-+-+----+++-----+-- +--++-+-++-+-+----+++-----+- \
                   ++--++-+-++-+-+----++------+";

/// `n` as `(2^k, m)`, or an error for lengths MLX does not transform.
fn decompose(n: usize) -> Result<(usize, usize)> {
    let m = if n.is_power_of_two() {
        1
    } else {
        [12, 20, 28].into_iter().find(|&m| n.is_multiple_of(m) && (n / m).is_power_of_two()).ok_or_else(|| {
            Error::invalid("hadamard_transform", "Only supports n = m*2^k where m in (1, 12, 20, 28).")
        })?
    };
    if n / m > 1 << 26 {
        return Err(Error::invalid("hadamard_transform", "Only supports n = m*2^k where k <= 26"));
    }
    Ok((n / m, m))
}

/// The `m × m` matrix of ±1 as an array of `dtype`.
fn matrix(m: usize, dtype: Dtype) -> Result<Array> {
    let text = match m {
        12 => H12,
        20 => H20,
        _ => H28,
    };
    let values: Vec<f64> =
        text.chars().filter(|c| !c.is_whitespace()).map(|c| if c == '+' { 1.0 } else { -1.0 }).collect();
    astype(&Array::from_slice(&values, &[m, m])?, dtype)
}

/// MLX's `hadamard_transform`: the Walsh–Hadamard transform of `a` along
/// its last axis times `scale` (default `1/sqrt(n)`, which makes it
/// orthonormal). Integers and bool compute in float32, complex64 keeps its
/// real part (as MLX).
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[1f32, 2., 3., 4.], &[4])?;
/// let h = ops::hadamard_transform(&a, Some(1.0))?;
/// assert_eq!(h.to_vec::<f32>()?, vec![10., -2., -4., 0.]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn hadamard_transform(a: &Array, scale: Option<f64>) -> Result<Array> {
    if a.size() == 0 {
        return Err(Error::invalid("hadamard_transform", "Does not support empty arrays."));
    }
    let dtype = if a.dtype().is_inexact() && !a.dtype().is_complex() { a.dtype() } else { Dtype::F32 };
    let n = a.shape().last().copied().unwrap_or(1);
    let scale = scale.unwrap_or(1.0 / (n as f64).sqrt());
    if n == 1 {
        // Nothing to transform: the input itself, or scaled (promoting as
        // a product with a `dtype` scalar does), as MLX.
        return if scale == 1.0 { Ok(a.clone()) } else { multiply(a, &Array::scalar_of(Scalar::Float(scale), dtype)) };
    }
    let x = astype(a, dtype)?;
    let (p, m) = decompose(n)?;
    let lead = &x.shape()[..x.ndim().saturating_sub(1)];
    // [..., m, 2, 2, ..., 2]: one butterfly stage per axis of 2.
    let k = p.trailing_zeros() as usize;
    let mut shape = lead.to_vec();
    shape.push(m);
    shape.extend(std::iter::repeat_n(2, k));
    let mut y = reshape_to(&x, shape)?;
    let first = lead.len() + 1;
    for stage in 0..k {
        let axis = first + stage;
        let pick = |i: i64| {
            let mut key = vec![Index::Slice { start: None, stop: None, step: None }; axis];
            key.push(Index::Int(i));
            index(&y, &key)
        };
        let (u, v) = (pick(0)?, pick(1)?);
        y = stack(&[add(&u, &v)?, subtract(&u, &v)?], axis as isize)?;
    }
    let mut flat = lead.to_vec();
    flat.extend([m, p]);
    let y = reshape_to(&y, flat)?;
    if m > 1 {
        // As MLX: the m-stage sums in float32 (float64 for float64 input)
        // and scales before rounding once to the input's dtype.
        let wide = if dtype == Dtype::F64 { Dtype::F64 } else { Dtype::F32 };
        let h = multiply(&matrix(m, wide)?, &Array::scalar_of(Scalar::Float(scale), wide))?;
        let y = astype(&matmul(&h, &astype(&y, wide)?)?, dtype)?;
        return reshape_to(&y, x.shape().to_vec());
    }
    let out = reshape_to(&y, x.shape().to_vec())?;
    multiply(&out, &Array::scalar_of(Scalar::Float(scale), dtype))
}
