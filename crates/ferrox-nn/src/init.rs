//! Weight initializers (MLX's `mlx.nn.init`).
//!
//! MLX's initializers are higher-order Python functions; here each is the
//! function they return, taking the shape to fill, the dtype, MLX's
//! parameters and an optional PRNG key. With a key the draw is a pure
//! function of it; without one it takes the next keys of the global
//! sequence, in the order MLX's code draws them, so after the same
//! `random::seed` the values are MLX's.

use crate::{float, float_param, py_shape};
use ferrox::ops::{self, random, Index};
use ferrox::{Array, Dtype, Error, Result, Scalar};

/// Which fan a He initializer scales by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanMode {
    /// The number of inputs (`"fan_in"`).
    FanIn,
    /// The number of outputs (`"fan_out"`).
    FanOut,
}

impl FanMode {
    /// The mode named `name` (`"fan_in"` or `"fan_out"`), or an error naming
    /// the initializer `op`.
    pub fn parse(op: &'static str, name: &str) -> Result<FanMode> {
        match name {
            "fan_in" => Ok(FanMode::FanIn),
            "fan_out" => Ok(FanMode::FanOut),
            _ => Err(Error::invalid(op, format!("Invalid mode: {name}. Valid modes are: fan_in, fan_out"))),
        }
    }
}

/// `(fan_in, fan_out)` of a weight of `shape`, as MLX counts them: the last
/// and first extents, each times the product of the extents between them.
/// Fewer than two dimensions is an error naming `op`.
pub fn fan_in_fan_out(op: &'static str, shape: &[usize]) -> Result<(usize, usize)> {
    let [first, middle @ .., last] = shape else {
        return Err(Error::invalid(
            op,
            format!(
                "Glorot / He initialization requires at least 2 dimensional input but input with {} dimensions.",
                shape.len()
            ),
        ));
    };
    let receptive: usize = middle.iter().product();
    Ok((last * receptive, first * receptive))
}

/// The fan selected by `mode`, refused when zero (its inverse square root
/// scales the draw).
fn fan(op: &'static str, shape: &[usize], mode: FanMode) -> Result<f64> {
    let (fan_in, fan_out) = fan_in_fan_out(op, shape)?;
    let fan = match mode {
        FanMode::FanIn => fan_in,
        FanMode::FanOut => fan_out,
    };
    if fan == 0 {
        return Err(Error::invalid(op, format!("The fan of a weight of shape {} is zero.", py_shape(shape))));
    }
    Ok(fan as f64)
}

/// `fan_in + fan_out`, refused when zero.
fn fan_sum(op: &'static str, shape: &[usize]) -> Result<f64> {
    let (fan_in, fan_out) = fan_in_fan_out(op, shape)?;
    if fan_in + fan_out == 0 {
        return Err(Error::invalid(op, format!("fan_in + fan_out of a weight of shape {} is zero.", py_shape(shape))));
    }
    Ok((fan_in + fan_out) as f64)
}

/// Normal samples of standard deviation `std` (and mean `mean`, when given),
/// as `mx.random.normal(shape, scale=std, loc=mean, dtype)`.
fn sample_normal(shape: &[usize], dtype: Dtype, mean: Option<f64>, std: f64, key: Option<&Array>) -> Result<Array> {
    let loc = mean.map(|m| float_param(m, dtype));
    random::normal(shape, dtype, loc.as_ref(), Some(&float_param(std, dtype)), key)
}

/// Uniform samples on `[low, high)`, as `mx.random.uniform(low, high, shape, dtype)`.
fn sample_uniform(shape: &[usize], dtype: Dtype, low: f64, high: f64, key: Option<&Array>) -> Result<Array> {
    let bound = |v: f64| Array::scalar_of(Scalar::Float(v), Dtype::F32);
    random::uniform(&bound(low), &bound(high), shape, dtype, key)
}

/// An array of `shape` and `dtype` filled with `value` (broadcast to
/// `shape` and cast to `dtype`, as `mx.full` fills it).
pub fn constant(shape: &[usize], dtype: Dtype, value: &Array) -> Result<Array> {
    ops::full(shape, value, Some(dtype))
}

/// Samples from the normal distribution of mean `mean` and standard
/// deviation `std`.
pub fn normal(shape: &[usize], dtype: Dtype, mean: f64, std: f64, key: Option<&Array>) -> Result<Array> {
    sample_normal(shape, dtype, Some(mean), std, key)
}

/// Samples from the uniform distribution on `[low, high)`.
pub fn uniform(shape: &[usize], dtype: Dtype, low: f64, high: f64, key: Option<&Array>) -> Result<Array> {
    sample_uniform(shape, dtype, low, high, key)
}

/// The identity matrix; `shape` must be square.
pub fn identity(shape: &[usize], dtype: Dtype) -> Result<Array> {
    match shape {
        [n, m] if n == m => ops::eye(*n, None, 0, dtype),
        _ => Err(Error::invalid(
            "identity",
            format!("The input array must be a square matrix but got shape {}.", py_shape(shape)),
        )),
    }
}

/// Glorot (Xavier) normal samples: standard deviation
/// `gain * sqrt(2 / (fan_in + fan_out))`.
pub fn glorot_normal(shape: &[usize], dtype: Dtype, gain: f64, key: Option<&Array>) -> Result<Array> {
    let std = gain * (2.0 / fan_sum("glorot_normal", shape)?).sqrt();
    sample_normal(shape, dtype, None, std, key)
}

/// Glorot (Xavier) uniform samples on `[-limit, limit)` with
/// `limit = gain * sqrt(6 / (fan_in + fan_out))`.
pub fn glorot_uniform(shape: &[usize], dtype: Dtype, gain: f64, key: Option<&Array>) -> Result<Array> {
    let limit = gain * (6.0 / fan_sum("glorot_uniform", shape)?).sqrt();
    sample_uniform(shape, dtype, -limit, limit, key)
}

/// He (Kaiming) normal samples: standard deviation `gain / sqrt(fan)`, the
/// fan chosen by `mode`.
pub fn he_normal(shape: &[usize], dtype: Dtype, mode: FanMode, gain: f64, key: Option<&Array>) -> Result<Array> {
    let std = gain / fan("he_normal", shape, mode)?.sqrt();
    sample_normal(shape, dtype, None, std, key)
}

/// He (Kaiming) uniform samples on `[-limit, limit)` with
/// `limit = gain * sqrt(3 / fan)`, the fan chosen by `mode`.
pub fn he_uniform(shape: &[usize], dtype: Dtype, mode: FanMode, gain: f64, key: Option<&Array>) -> Result<Array> {
    let limit = gain * (3.0 / fan("he_uniform", shape, mode)?).sqrt();
    sample_uniform(shape, dtype, -limit, limit, key)
}

/// A 2-D matrix of normal samples (mean `mean`, deviation `std`) with
/// `ceil(sparsity * cols)` entries of every row set to zero, the zeroed
/// columns chosen independently per row (MLX's `init.sparse`). `sparsity`
/// must lie in [0, 1]. The zeroed positions come from a uniform draw and the
/// values from a normal draw: with a key, its two halves (`random::split`);
/// without, the next two keys of the global sequence.
pub fn sparse(shape: &[usize], dtype: Dtype, sparsity: f64, mean: f64, std: f64, key: Option<&Array>) -> Result<Array> {
    let &[rows, cols] = shape else {
        return Err(Error::invalid("sparse", "Only tensors with 2 dimensions are supported"));
    };
    if !(0.0..=1.0).contains(&sparsity) {
        return Err(Error::invalid("sparse", format!("sparsity must be in [0, 1], got {sparsity:?}.")));
    }
    let (order_key, value_key) = match key {
        Some(k) => {
            let (a, b) = random::split_pair(k)?;
            (Some(a), Some(b))
        }
        None => (None, None),
    };
    let order = ops::argsort(&sample_uniform(shape, Dtype::F32, 0.0, 1.0, order_key.as_ref())?, Some(1))?;
    let values = sample_normal(shape, dtype, Some(mean), std, value_key.as_ref())?;
    let num_zeros = ((sparsity * cols as f64).ceil() as usize).min(cols);
    if num_zeros == 0 || rows == 0 {
        return Ok(values);
    }
    let zeroed = ops::index(&order, &[Index::Slice { start: None, stop: None, step: None }, slice_to(num_zeros)])?;
    ops::put_along_axis(&values, &zeroed, &ops::zeros(&[], dtype)?, Some(1))
}

/// The index `:stop`.
fn slice_to(stop: usize) -> Index {
    Index::Slice { start: None, stop: Some(stop as i64), step: None }
}

/// A 2-D matrix with orthonormal rows or columns (whichever are fewer),
/// times `gain` (MLX's `init.orthogonal`): the Q factor of the QR
/// decomposition of an `n x n` standard normal float32 matrix
/// (`n = max(rows, cols)`), its columns multiplied by the signs of R's
/// diagonal (which makes the factorization unique, so the result is
/// MLX's up to rounding), cut to `rows x cols`, scaled in float32 and
/// cast to `dtype`. ferrox has no QR op yet, so the factorization runs on
/// the host in float64 ([`householder_q`]); the draw is evaluated for it.
pub fn orthogonal(shape: &[usize], dtype: Dtype, gain: f64, key: Option<&Array>) -> Result<Array> {
    let &[rows, cols] = shape else {
        return Err(Error::invalid(
            "orthogonal",
            format!("Orthogonal initialization requires a 2D array but got a {}D array.", shape.len()),
        ));
    };
    let n = rows.max(cols);
    let draw = random::normal(&[n, n], Dtype::F32, None, None, key)?;
    let values: Vec<f64> = draw.to_vec::<f32>()?.into_iter().map(f64::from).collect();
    let q = householder_q(n, &values);
    let cut: Vec<f32> =
        (0..rows).flat_map(|i| (0..cols).map(move |j| (i, j))).map(|(i, j)| q[j * n + i] as f32).collect();
    let q = Array::from_vec(cut, &[rows, cols])?;
    ops::astype(&ops::multiply(&q, &float(gain, &q)?)?, dtype)
}

/// The orthogonal factor Q of `A = Q R` for the `n x n` row-major matrix
/// `a`, with each column multiplied by the sign of R's diagonal entry
/// (0 for a zero entry, as `sign` gives), returned column-major.
///
/// Householder QR in float64: column `k` of R is reflected onto its
/// diagonal by `H_k = I - 2 v v^T / (v^T v)`, then Q = H_0 H_1 ... is
/// accumulated backwards, starting from the identity (each reflection
/// then touches only the trailing block). Columns are stored contiguously.
fn householder_q(n: usize, a: &[f64]) -> Vec<f64> {
    // r[j * n + i] = A[i][j]: column-major copy.
    let mut r = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            r[j * n + i] = a[i * n + j];
        }
    }
    let mut reflectors: Vec<Vec<f64>> = Vec::with_capacity(n);
    for k in 0..n {
        let x = &r[k * n + k..(k + 1) * n];
        let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        let alpha = if x[0] >= 0.0 { -norm } else { norm };
        let mut v = x.to_vec();
        v[0] -= alpha;
        let vv: f64 = v.iter().map(|t| t * t).sum();
        if vv > 0.0 {
            for j in k..n {
                let col = &mut r[j * n + k..(j + 1) * n];
                let scale = 2.0 * dot(&v, col) / vv;
                col.iter_mut().zip(&v).for_each(|(c, vi)| *c -= scale * vi);
            }
        }
        reflectors.push(if vv > 0.0 { v } else { Vec::new() });
    }
    let mut q = vec![0.0; n * n];
    for i in 0..n {
        q[i * n + i] = 1.0;
    }
    for (k, v) in reflectors.iter().enumerate().rev() {
        if v.is_empty() {
            continue;
        }
        let vv: f64 = v.iter().map(|t| t * t).sum();
        for j in k..n {
            let col = &mut q[j * n + k..(j + 1) * n];
            let scale = 2.0 * dot(v, col) / vv;
            col.iter_mut().zip(v).for_each(|(c, vi)| *c -= scale * vi);
        }
    }
    for j in 0..n {
        let d = r[j * n + j];
        let sign = if d > 0.0 {
            1.0
        } else if d < 0.0 {
            -1.0
        } else {
            0.0
        };
        q[j * n..(j + 1) * n].iter_mut().for_each(|c| *c *= sign);
    }
    q
}

/// The dot product of two equally long slices.
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
