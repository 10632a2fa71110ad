//! Random sampling with MLX's key-based generator (`mlx.core.random`).
//!
//! A key is a uint32 array of shape `[2]` ([`key`]); [`split`] derives new
//! keys from one; every sampler takes an optional key and otherwise draws
//! the next key of a process-wide sequence that [`seed`] resets. The
//! generator is threefry2x32 laid out as MLX's `RandomBits`; [`bits`],
//! [`uniform`] and [`normal`] are its raw words and MLX's float32 maps of
//! them, fused into one kernel and equal bit for bit to MLX's values on
//! every device. The other samplers are MLX's compositions of those with
//! ordinary ops, so their values follow MLX's up to the rounding of the
//! ops involved (`log`, `erf`, matrix products).
//!
//! ```
//! use ferrox::{ops::random, Dtype};
//! let k = random::key(0)?;
//! let x = random::normal(&[2, 3], Dtype::F32, None, None, Some(&k))?;
//! assert_eq!(x.to_vec::<f32>()?, random::normal(&[2, 3], Dtype::F32, None, None, Some(&k))?.to_vec::<f32>()?);
//! # Ok::<(), ferrox::Error>(())
//! ```

use super::{
    abs, add, argmax, argsort, astype, axis, divide, erf, erfinv, expand_dims, floor, index, less, log, log1p, matmul,
    maximum, minimum, multiply, negative, sign, squeeze, subtract, take, Index,
};
use crate::array::Array;
use crate::backend::cpu::random::key_words;
use crate::backend::RandomOp;
use crate::device::Device;
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{fmt_shape, Error, Result};
use crate::primitives::RandomBits;
use crate::shape::broadcast_shapes;
use std::f64::consts::SQRT_2;
use std::sync::Mutex;

// ---------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------

fn seed_words(seed: u64) -> [u32; 2] {
    [(seed >> 32) as u32, seed as u32]
}

/// A key from a seed: `[seed >> 32, seed & 0xffffffff]` as uint32 (MLX's
/// `random.key`).
pub fn key(seed: u64) -> Result<Array> {
    Array::from_slice(&seed_words(seed), &[2])
}

/// The state of the global key sequence: host words (after `seed`, and
/// whenever the state is a computed array), or an array that is still to be
/// computed (a compiled function's captured `random.state` while it is
/// traced, or the state such a function returned).
enum KeyState {
    Words([u32; 2]),
    Array(Array),
}

/// The global key sequence; `None` until seeded or first used.
static DEFAULT_KEY: Mutex<Option<KeyState>> = Mutex::new(None);

/// Seeds the global key sequence (MLX's `random.seed`).
pub fn seed(seed: u64) {
    *DEFAULT_KEY.lock().unwrap_or_else(|e| e.into_inner()) = Some(KeyState::Words(seed_words(seed)));
}

/// Replaces the global key sequence's state (MLX's `random.state[0] =
/// key`): a uint32 key of shape `[2]`, possibly not yet computed (compile
/// passes its captured state through this).
pub fn set_state(key: &Array) -> Result<()> {
    check_key(key)?;
    *DEFAULT_KEY.lock().unwrap_or_else(|e| e.into_inner()) = Some(KeyState::Array(key.clone()));
    Ok(())
}

/// The next key of the global sequence, which every sampler uses when given
/// no key: the state is split in two, keeps the first half and returns the
/// second (MLX's `KeySequence::next`). Unseeded, the sequence starts from
/// the time in milliseconds, as MLX's. The state is one process-wide value
/// behind a lock, so threads draw distinct keys. A state not yet computed
/// is split with ops, so that a traced function's draws follow its input.
pub fn next_key() -> Result<Array> {
    let mut guard = DEFAULT_KEY.lock().unwrap_or_else(|e| e.into_inner());
    let state = guard.get_or_insert_with(|| KeyState::Words(time_seed_words()));
    if let KeyState::Array(a) = state {
        if a.is_evaluated() {
            let v = a.to_vec::<u32>()?;
            *state = KeyState::Words([v[0], v[1]]);
        }
    }
    match state {
        KeyState::Words(k) => {
            // split(k) is bits((2, 2)): row 0 the new state, row 1 the key.
            let words = key_words(*k, 4);
            *k = [words[0], words[1]];
            Array::from_slice(&words[2..], &[2])
        }
        KeyState::Array(a) => {
            let (rest, key) = split_pair(a)?;
            *state = KeyState::Array(rest);
            Ok(key)
        }
    }
}

/// The first state of an unseeded sequence: the time in milliseconds.
fn time_seed_words() -> [u32; 2] {
    let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    seed_words(millis)
}

/// The global key sequence's current state, a uint32 key of shape `[2]`
/// (MLX's `random.state[0]`), without advancing it: after `seed(s)` it is
/// `key(s)`; the next sampler without a key splits it.
pub fn state() -> Result<Array> {
    let mut guard = DEFAULT_KEY.lock().unwrap_or_else(|e| e.into_inner());
    match guard.get_or_insert_with(|| KeyState::Words(time_seed_words())) {
        KeyState::Words(k) => Array::from_slice(k, &[2]),
        KeyState::Array(a) => Ok(a.clone()),
    }
}

/// The given key, or the next key of the global sequence.
fn resolve(key: Option<&Array>) -> Result<Array> {
    match key {
        Some(k) => Ok(k.clone()),
        None => next_key(),
    }
}

/// MLX's checks on a key (`bits`): uint32, shape `[2]`.
fn check_key(key: &Array) -> Result<()> {
    if key.dtype() != Dtype::U32 {
        return Err(Error::invalid("bits", format!("Expected key type uint32 but received {}.", key.dtype())));
    }
    if key.shape() != [2] {
        return Err(Error::invalid(
            "bits",
            format!("Expected key shape (2,) but received {}.", fmt_shape(key.shape())),
        ));
    }
    Ok(())
}

/// The generator fused with `op`: `shape` values of `dtype` from one key.
fn generate(op: RandomOp, shape: &[usize], dtype: Dtype, key: &Array) -> Result<Array> {
    check_key(key)?;
    let primitive = RandomBits { op, shape: shape.to_vec(), dtype };
    Array::from_primitive(shape.to_vec(), dtype, primitive, vec![key.clone()])
}

/// `num` new keys from `key`, shape `[num, 2]` (MLX's `random.split`).
pub fn split(key: &Array, num: usize) -> Result<Array> {
    bits(&[num, 2], 4, Some(key))
}

/// Two new keys from `key` (MLX's `split(key)` pair, as its key sequence
/// uses it).
pub fn split_pair(key: &Array) -> Result<(Array, Array)> {
    let both = split(key, 2)?;
    Ok((index(&both, &[Index::Int(0)])?, index(&both, &[Index::Int(1)])?))
}

// ---------------------------------------------------------------------------
// Bits, uniform, normal: the generator and MLX's float maps, fused
// ---------------------------------------------------------------------------

/// Random bits: uint32, uint16 or uint8 for `width` 4, 2 or 1 bytes per
/// element (MLX's `random.bits`).
pub fn bits(shape: &[usize], width: usize, key: Option<&Array>) -> Result<Array> {
    let key = resolve(key)?;
    check_key(&key)?;
    let dtype = match width {
        4 => Dtype::U32,
        2 => Dtype::U16,
        1 => Dtype::U8,
        _ => return Err(Error::invalid("bits", format!("Bit width must be in {{1, 2, 4}} but got {width}."))),
    };
    generate(RandomOp::Bits, shape, dtype, &key)
}

/// The value of an evaluated one-element host array, if `a` is one.
fn host_value(a: &Array) -> Option<f64> {
    if a.size() != 1 {
        return None;
    }
    let data = a.ready_data()?;
    if data.storage.device() != Device::CPU {
        return None;
    }
    a.item_scalar().ok().map(Scalar::as_f64)
}

/// Values of `dtype` (a real float) drawn uniformly from `[low, high)`;
/// `low` and `high` broadcast to `shape` (MLX's `random.uniform`). float64
/// is refused, as MLX refuses it.
pub fn uniform(low: &Array, high: &Array, shape: &[usize], dtype: Dtype, key: Option<&Array>) -> Result<Array> {
    let key = resolve(key)?;
    if !dtype.is_floating() {
        return Err(Error::invalid("uniform", "Can only generate uniform numbers with real floating point type."));
    }
    let lo = astype(low, dtype)?;
    let hi = astype(high, dtype)?;
    let range = subtract(&hi, &lo)?;
    let out_shape = broadcast_shapes(shape, range.shape()).ok_or_else(|| Error::Broadcast {
        op: "broadcast_shapes",
        lhs: shape.to_vec(),
        rhs: range.shape().to_vec(),
    })?;
    if out_shape != shape {
        return Err(Error::invalid(
            "uniform",
            format!(
                "Cannot generate random values of shape {} from broadcasted shape {}.",
                fmt_shape(shape),
                fmt_shape(&out_shape)
            ),
        ));
    }
    if dtype == Dtype::F64 {
        return Err(Error::invalid("uniform", "Unsupported type."));
    }
    let unit = generate(RandomOp::Uniform, shape, dtype, &key)?;
    // MLX then computes `range * u + low`, which is `u` itself for [0, 1).
    if host_value(low) == Some(0.0) && host_value(high) == Some(1.0) {
        return Ok(unit);
    }
    add(&multiply(&range, &unit)?, &lo)
}

/// [`uniform`] on `[0, 1)`.
fn standard_uniform(shape: &[usize], dtype: Dtype, key: &Array) -> Result<Array> {
    let (zero, one) = (Array::scalar_of(Scalar::Float(0.0), dtype), Array::scalar_of(Scalar::Float(1.0), dtype));
    uniform(&zero, &one, shape, dtype, Some(key))
}

/// Normally distributed values (MLX's `random.normal`): mean `loc` and
/// standard deviation `scale` (both broadcast with `shape`; defaults 0
/// and 1) in a real float dtype; for complex64, real and imaginary parts
/// each of variance 1/2, then `scale * z + loc`.
pub fn normal(
    shape: &[usize],
    dtype: Dtype,
    loc: Option<&Array>,
    scale: Option<&Array>,
    key: Option<&Array>,
) -> Result<Array> {
    let key = resolve(key)?;
    if dtype == Dtype::C64 {
        let mut samples = generate(RandomOp::Erfinv, shape, Dtype::C64, &key)?;
        if let Some(scale) = scale {
            samples = multiply(scale, &samples)?;
        }
        if let Some(loc) = loc {
            samples = add(loc, &samples)?;
        }
        return Ok(samples);
    }
    if !dtype.is_floating() {
        return Err(Error::invalid("normal", "Only floating point and complex64 types are supported."));
    }
    let samples = match scale {
        // sqrt(2) * erfinv(u), multiplied in `dtype`: one fused kernel.
        None => generate(RandomOp::Normal, shape, dtype, &key)?,
        // MLX scales by (sqrt(2) * scale), rounded in `dtype` first.
        Some(scale) => {
            let applied = multiply(&Array::scalar_of(Scalar::Float(SQRT_2), dtype), &astype(scale, dtype)?)?;
            multiply(&applied, &generate(RandomOp::Erfinv, shape, dtype, &key)?)?
        }
    };
    match loc {
        Some(loc) => add(&astype(loc, dtype)?, &samples),
        None => Ok(samples),
    }
}

// ---------------------------------------------------------------------------
// Samplers composed of the above, as MLX composes them
// ---------------------------------------------------------------------------

/// Random integers drawn uniformly from `[low, high)` (broadcast to
/// `shape`) as `dtype`, an integer dtype or bool (MLX's `random.randint`):
/// `floor` of a float32 uniform, clamped to `[low, high - 1]`.
pub fn randint(low: &Array, high: &Array, shape: &[usize], dtype: Dtype, key: Option<&Array>) -> Result<Array> {
    let key = resolve(key)?;
    if dtype.is_inexact() {
        return Err(Error::invalid("randint", "randint only accepts integer dtypes and bool."));
    }
    let u = uniform(low, high, shape, Dtype::F32, Some(&key))?;
    let out = astype(&floor(&u)?, dtype)?;
    // The bounds may not be representable in float32: clamp.
    let hi = astype(&subtract(high, &Array::scalar_of(Scalar::Int(1), high.dtype()))?, dtype)?;
    maximum(&minimum(&out, &hi)?, &astype(low, dtype)?)
}

/// Booleans that are true with probability `p` (a real float array,
/// broadcast to `shape`, which defaults to `p`'s shape) (MLX's
/// `random.bernoulli`): `bits < p * (2^32 + 512)`.
pub fn bernoulli(p: &Array, shape: Option<&[usize]>, key: Option<&Array>) -> Result<Array> {
    let key = resolve(key)?;
    if !p.dtype().is_floating() {
        return Err(Error::invalid("bernoulli", "bernoulli probability `p` must be a float type."));
    }
    let shape = shape.map_or_else(|| p.shape().to_vec(), <[usize]>::to_vec);
    // The float32 above 2^32 (UINT32_MAX as float32): p >= 1 is always true.
    let upper = Array::scalar_of(Scalar::Float(4_294_967_808.0), Dtype::F32);
    let res = less(&bits(&shape, 4, Some(&key))?, &multiply(p, &upper)?)?;
    if res.shape() != shape.as_slice() {
        return Err(Error::invalid("bernoulli", "shape of `p` is incompatible with argument `shape`."));
    }
    Ok(res)
}

/// Normal values truncated to `[lower, upper]` (broadcast to `shape`, which
/// defaults to their broadcast shape) in a real float `dtype` (MLX's
/// `random.truncated_normal`, as JAX's: inverse CDF of a uniform between
/// the bounds' CDF values).
pub fn truncated_normal(
    lower: &Array,
    upper: &Array,
    shape: Option<&[usize]>,
    dtype: Dtype,
    key: Option<&Array>,
) -> Result<Array> {
    let key = resolve(key)?;
    let shape = match shape {
        Some(s) => s.to_vec(),
        None => broadcast_shapes(lower.shape(), upper.shape()).ok_or_else(|| Error::Broadcast {
            op: "broadcast_shapes",
            lhs: lower.shape().to_vec(),
            rhs: upper.shape().to_vec(),
        })?,
    };
    if !dtype.is_floating() {
        return Err(Error::invalid("trunc_normal", "trunc_normal only accepts floating point dtypes."));
    }
    let sqrt2 = Array::scalar_of(Scalar::Float(SQRT_2), dtype);
    let lower_t = astype(lower, dtype)?;
    let upper_t = astype(upper, dtype)?;
    let a = erf(&divide(&lower_t, &sqrt2)?)?;
    let b = erf(&divide(&upper_t, &sqrt2)?)?;
    let u = uniform(&a, &b, &shape, dtype, Some(&key))?;
    let out = multiply(&sqrt2, &erfinv(&u)?)?;
    maximum(&minimum(&upper_t, &out)?, &lower_t)
}

/// Samples of the standard Gumbel distribution, `-log(-log(u))` (MLX's
/// `random.gumbel`).
pub fn gumbel(shape: &[usize], dtype: Dtype, key: Option<&Array>) -> Result<Array> {
    let key = resolve(key)?;
    let u = standard_uniform(shape, dtype, &key)?;
    negative(&log(&negative(&log(&u)?)?)?)
}

/// How many samples [`categorical`] draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Draws<'a> {
    /// One per distribution: the logits' shape without `axis`.
    One,
    /// An output shape that the logits' shape without `axis` broadcasts to.
    Shape(&'a [usize]),
    /// This many per distribution, along a new last axis.
    Samples(usize),
}

/// Indices (uint32) sampled from the categorical distributions given by
/// unnormalized log-probabilities `logits` along `axis` (MLX's
/// `random.categorical`), by the Gumbel-max trick: `argmax(logits + g)`.
pub fn categorical(logits: &Array, axis: isize, draws: Draws<'_>, key: Option<&Array>) -> Result<Array> {
    let key = resolve(key)?;
    let ndim = logits.ndim();
    let ax = crate::shape::normalize_axis(axis, ndim).ok_or_else(|| Error::AxisArgument {
        op: "categorical",
        msg: format!("Invalid axis {axis} for logits with {ndim} dimensions."),
    })?;
    let mut reduced = logits.shape().to_vec();
    reduced.remove(ax);
    match draws {
        Draws::One => categorical_impl(logits, ax, &reduced, &key),
        Draws::Shape(shape) => {
            let b = broadcast_shapes(shape, &reduced).ok_or_else(|| Error::Broadcast {
                op: "broadcast_shapes",
                lhs: shape.to_vec(),
                rhs: reduced.clone(),
            })?;
            if b != shape {
                return Err(Error::invalid(
                    "categorical",
                    format!(
                        "Requested shape {} is not broadcast compatible with reduced logits shape {}.",
                        fmt_shape(shape),
                        fmt_shape(&reduced)
                    ),
                ));
            }
            categorical_impl(logits, ax, shape, &key)
        }
        Draws::Samples(num) => {
            let logits = expand_dims(logits, &[-1])?;
            let mut shape = reduced;
            shape.push(num);
            categorical_impl(&logits, ax, &shape, &key)
        }
    }
}

fn categorical_impl(logits: &Array, axis: usize, shape: &[usize], key: &Array) -> Result<Array> {
    if shape.contains(&0) {
        // No draws (`num_samples=0`, or empty logits batches).
        return super::zeros(shape, Dtype::U32);
    }
    // The draws' axis sits where the logits' axis lines up with `shape`.
    let offset = axis + shape.len() + 1 - logits.ndim();
    let mut gumbel_shape = shape.to_vec();
    gumbel_shape.insert(offset, logits.shape()[axis]);
    let g = gumbel(&gumbel_shape, Dtype::F32, Some(key))?;
    argmax(&add(&g, logits)?, Some(offset as isize), false)
}

/// Samples of the Laplace distribution with mean `loc` and scale `scale`
/// in a real float `dtype` (MLX's `random.laplace`, by the inverse CDF of
/// a float32 uniform on (-1, 1)).
pub fn laplace(shape: &[usize], dtype: Dtype, loc: f32, scale: f32, key: Option<&Array>) -> Result<Array> {
    let key = resolve(key)?;
    if !dtype.is_floating() {
        return Err(Error::invalid("laplace", "Only real floating point types are supported."));
    }
    let f32_scalar = |v: f32| Array::scalar_of(Scalar::Float(v as f64), Dtype::F32);
    let u = uniform(&f32_scalar(-0.999_999_94), &f32_scalar(1.0), shape, Dtype::F32, Some(&key))?;
    let minus_one = Array::scalar_of(Scalar::Float(-1.0), dtype);
    let mut samples = multiply(&sign(&u)?, &log1p(&multiply(&minus_one, &abs(&u)?)?)?)?;
    samples = astype(&samples, dtype)?;
    if scale != 1.0 {
        samples = multiply(&Array::scalar_of(Scalar::Float(scale as f64), dtype), &samples)?;
    }
    if loc != 0.0 {
        samples = add(&Array::scalar_of(Scalar::Float(loc as f64), dtype), &samples)?;
    }
    Ok(samples)
}

/// Jointly normal samples with mean `mean` (`[..., n]`) and covariance
/// `cov` (`[..., n, n]`, positive semi-definite), float32 only (MLX's
/// `random.multivariate_normal`). The output shape is `shape` broadcast
/// with the batch shapes of `mean` and `cov`, then `n`.
///
/// As MLX, samples are `z @ U·sqrt(S)·Vᵀ` for standard normal `z` and the
/// SVD of `cov`; for a symmetric `cov` that matrix is `V·sqrt(Λ)·Vᵀ` over
/// its eigendecomposition (signed square roots for negative eigenvalues,
/// as the SVD gives), which is computed here on the host by Jacobi
/// rotations in float64. `cov` is therefore evaluated when this op is
/// built, and may not depend on the inputs of a vmap or gradient trace.
pub fn multivariate_normal(
    mean: &Array,
    cov: &Array,
    shape: &[usize],
    dtype: Dtype,
    key: Option<&Array>,
) -> Result<Array> {
    let key = resolve(key)?;
    let op = "multivariate_normal";
    if dtype != Dtype::F32 {
        return Err(Error::invalid(op, "dtype must be float32."));
    }
    if mean.ndim() < 1 {
        return Err(Error::invalid(op, "mean must have at least one dimension."));
    }
    if cov.ndim() < 2 {
        return Err(Error::invalid(op, "cov must have at least two dimensions."));
    }
    let (mn, cn) = (mean.ndim(), cov.ndim());
    let n = mean.shape()[mn - 1];
    if cov.shape()[cn - 1] != cov.shape()[cn - 2] {
        return Err(Error::invalid(op, "last two dimensions of cov must be equal."));
    }
    if n != cov.shape()[cn - 1] {
        return Err(Error::invalid(op, "mean and cov must have compatible shapes."));
    }
    let broadcast = |a: &[usize], b: &[usize]| {
        broadcast_shapes(a, b).ok_or_else(|| Error::Broadcast {
            op: "broadcast_shapes",
            lhs: a.to_vec(),
            rhs: b.to_vec(),
        })
    };
    let batch = broadcast(&cov.shape()[..cn - 2], &mean.shape()[..mn - 1])?;
    let mut out_shape = broadcast(&batch, shape)?;
    out_shape.push(n);

    let std = covariance_sqrt(cov, n)?;
    let z = generate(RandomOp::Normal, &out_shape, dtype, &key)?;
    let scaled = squeeze(&matmul(&expand_dims(&z, &[-2])?, &std)?, Some(&[-2]))?;
    add(mean, &scaled)
}

/// `U·sqrt(S)·Vᵀ` of every `n × n` matrix of `cov` (see
/// [`multivariate_normal`]), as an evaluated float32 array of `cov`'s shape.
fn covariance_sqrt(cov: &Array, n: usize) -> Result<Array> {
    if crate::transforms::autodiff::is_tracing() && !cov.is_evaluated() {
        return Err(Error::invalid(
            "multivariate_normal",
            "cov is factored on the host when the op is built, so it cannot be traced by vmap or grad; \
             pass an evaluated covariance.",
        ));
    }
    let values = astype(cov, Dtype::F32)?.to_vec::<f32>()?;
    let mut out = Vec::with_capacity(values.len());
    if n > 0 {
        for m in values.chunks(n * n) {
            out.extend(symmetric_sqrt(m, n));
        }
    }
    Array::from_vec(out, cov.shape())
}

/// `V·diag(sign(λ)·sqrt|λ|)·Vᵀ` for the eigendecomposition `V·diag(λ)·Vᵀ`
/// of the symmetric part of the row-major `n × n` matrix `m`, by cyclic
/// Jacobi rotations in float64.
fn symmetric_sqrt(m: &[f32], n: usize) -> Vec<f32> {
    let at = |r: usize, c: usize| r * n + c;
    let mut a: Vec<f64> = (0..n * n).map(|i| 0.5 * (m[i] as f64 + m[at(i % n, i / n)] as f64)).collect();
    let mut v: Vec<f64> = (0..n * n).map(|i| if i / n == i % n { 1.0 } else { 0.0 }).collect();
    let total: f64 = a.iter().map(|x| x * x).sum();
    for _sweep in 0..64 {
        let off: f64 = (0..n * n).filter(|i| i / n != i % n).map(|i| a[i] * a[i]).sum();
        if off.is_nan() || off <= 1e-30 * total {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[at(p, q)];
                if apq == 0.0 {
                    continue;
                }
                // The rotation that zeroes a[p][q] (Numerical Recipes' choice of angle).
                let theta = (a[at(q, q)] - a[at(p, p)]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (x, y) = (a[at(k, p)], a[at(k, q)]);
                    a[at(k, p)] = c * x - s * y;
                    a[at(k, q)] = s * x + c * y;
                }
                for k in 0..n {
                    let (x, y) = (a[at(p, k)], a[at(q, k)]);
                    a[at(p, k)] = c * x - s * y;
                    a[at(q, k)] = s * x + c * y;
                }
                for k in 0..n {
                    let (x, y) = (v[at(k, p)], v[at(k, q)]);
                    v[at(k, p)] = c * x - s * y;
                    v[at(k, q)] = s * x + c * y;
                }
            }
        }
    }
    let roots: Vec<f64> = (0..n).map(|i| a[at(i, i)].signum() * a[at(i, i)].abs().sqrt()).collect();
    (0..n * n)
        .map(|i| {
            let (r, c) = (i / n, i % n);
            (0..n).map(|k| v[at(r, k)] * roots[k] * v[at(c, k)]).sum::<f64>() as f32
        })
        .collect()
}

/// A random ordering of `0..n` as uint32: the argsort of `n` random words
/// (MLX's `random.permutation` of an int).
pub fn permutation(n: usize, key: Option<&Array>) -> Result<Array> {
    argsort(&bits(&[n], 4, key)?, Some(-1))
}

/// `x` with its entries along `axis` in a random order (MLX's
/// `random.permutation` of an array).
pub fn permute(x: &Array, axis_: isize, key: Option<&Array>) -> Result<Array> {
    let ax = axis("permutation", axis_, x.ndim())?;
    take(x, &permutation(x.shape()[ax], key)?, Some(ax as isize))
}
