//! Positional encodings: [`RoPE`] (and its functional form [`rope`]),
//! [`SinusoidalPositionalEncoding`] and [`ALiBi`].

use crate::module::{Forward, Module};
use crate::{float, int};
use ferrox::ops;
use ferrox::{Array, Dtype, Error, Result};

/// Rotary positional encoding of the first `dims` features of `x` (shape
/// `[B, ..., L, D]`, at least 3 dimensions; the position of a row is its
/// index along axis -2 plus `offset`), as MLX's `fast.rope`: features `i`
/// and `i + dims/2` (or `2i` and `2i + 1` when `traditional`) are rotated
/// by `position * scale * base^(-i / (dims/2))`; features past `dims` are
/// unchanged. The angles are computed in float32; one fused kernel
/// ([`ferrox::ops::fast::rope`]).
pub fn rope(x: &Array, dims: usize, traditional: bool, base: f64, scale: f64, offset: usize) -> Result<Array> {
    let offset =
        i32::try_from(offset).map_err(|_| Error::invalid("rope", format!("offset {offset} exceeds int32.")))?;
    ops::fast::rope(x, dims, traditional, Some(base as f32), scale as f32, &Array::scalar(offset), None)
}

/// Rotary positional encoding
/// ([RoFormer](https://arxiv.org/abs/2104.09864)); see [`rope`].
#[derive(Clone, Debug)]
pub struct RoPE {
    dims: usize,
    traditional: bool,
    base: f64,
    scale: f64,
    training: bool,
}

impl RoPE {
    /// MLX's defaults: not traditional, `base = 10000`, `scale = 1`.
    pub fn new(dims: usize) -> RoPE {
        RoPE::with_options(dims, false, 10000.0, 1.0)
    }

    /// Rotates `dims` features (pairs `2i, 2i+1` when `traditional`, else
    /// `i, i + dims/2`) with frequencies from `base` and positions times
    /// `scale`.
    pub fn with_options(dims: usize, traditional: bool, base: f64, scale: f64) -> RoPE {
        RoPE { dims, traditional, base, scale, training: true }
    }

    /// The encoding of `x` with positions starting at `offset`.
    pub fn forward_with(&self, x: &Array, offset: usize) -> Result<Array> {
        rope(x, self.dims, self.traditional, self.base, self.scale, offset)
    }
}

impl Module for RoPE {
    entries!();
    training_flag!();
}

impl Forward for RoPE {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_with(x, 0)
    }
}

/// Sinusoidal positional encoding
/// ([Attention Is All You Need](https://arxiv.org/abs/1706.03762)): maps
/// each value `p` of the input to `scale * [sin(p f); cos(p f)]` for
/// `dims / 2` frequencies `f` spaced geometrically from `max_freq` down to
/// `min_freq`.
#[derive(Clone, Debug)]
pub struct SinusoidalPositionalEncoding {
    sigmas: Array,
    scale: f64,
    cos_first: bool,
    training: bool,
}

impl SinusoidalPositionalEncoding {
    /// MLX's defaults: frequencies from 1 down to 1e-4, scale
    /// `sqrt(2 / dims)`, `[sin; cos]`.
    pub fn new(dims: usize) -> Result<SinusoidalPositionalEncoding> {
        SinusoidalPositionalEncoding::with_options(dims, 1e-4, 1.0, None, false, false)
    }

    /// Embeddings of size `dims` (positive and even), frequencies from
    /// `max_freq` down to `min_freq` (times `2 pi` with `full_turns`),
    /// multiplied by `scale` (default `sqrt(2 / dims)`), as `[cos; sin]`
    /// when `cos_first`.
    pub fn with_options(
        dims: usize,
        min_freq: f64,
        max_freq: f64,
        scale: Option<f64>,
        cos_first: bool,
        full_turns: bool,
    ) -> Result<SinusoidalPositionalEncoding> {
        if dims == 0 || !dims.is_multiple_of(2) {
            return Err(Error::invalid(
                "SinusoidalPositionalEncoding",
                format!("dims must be positive and even but got {dims}."),
            ));
        }
        let half = dims / 2;
        let one_zero = if half == 1 {
            Array::from_slice(&[1.0f32], &[1])?
        } else {
            let steps = ops::arange(0.0, half as f64, 1.0, Dtype::I32)?;
            let fraction = ops::divide(&steps, &int((half - 1) as i64, &steps)?)?;
            ops::subtract(&int(1, &fraction)?, &fraction)?
        };
        let (min_log, max_log) = (min_freq.ln(), max_freq.ln());
        let mut sigmas = ops::exp(&(&(&one_zero * (max_log - min_log))? + min_log)?)?;
        if full_turns {
            sigmas = (&sigmas * (2.0 * std::f64::consts::PI))?;
        }
        let scale = scale.unwrap_or((2.0 / dims as f64).sqrt());
        Ok(SinusoidalPositionalEncoding { sigmas, scale, cos_first, training: true })
    }
}

impl Module for SinusoidalPositionalEncoding {
    entries!();
    training_flag!();
}

impl Forward for SinusoidalPositionalEncoding {
    /// The embeddings of the values `x`: shape `x.shape + [dims]`.
    fn forward(&self, x: &Array) -> Result<Array> {
        let y = ops::multiply(&ops::expand_dims(x, &[-1])?, &self.sigmas)?;
        let (cos, sin) = (ops::cos(&y)?, ops::sin(&y)?);
        let parts = if self.cos_first { [cos, sin] } else { [sin, cos] };
        let y = ops::concatenate(&parts, -1)?;
        if self.scale != 1.0 {
            ops::multiply(&y, &float(self.scale, &y)?)
        } else {
            Ok(y)
        }
    }
}

/// Attention with linear biases ([ALiBi](https://arxiv.org/abs/2108.12409)):
/// adds `-slope_h * |i - j|` to the attention score of query `i` and key
/// `j` in head `h`, with geometric slopes per head.
#[derive(Clone, Debug)]
pub struct ALiBi {
    training: bool,
}

impl ALiBi {
    /// The layer (it has no parameters).
    pub fn new() -> ALiBi {
        ALiBi { training: true }
    }

    /// The slopes of `n` heads: `2^(-8i/n)` for `n` a power of two,
    /// interleaved from the next power otherwise.
    fn slopes(n: usize) -> Vec<f64> {
        let log2 = (n as f64).log2();
        if log2.fract() == 0.0 {
            let start = 2f64.powf(-(2f64.powf(-(log2 - 3.0))));
            (0..n).map(|i| start * start.powf(i as f64)).collect()
        } else {
            let power = 1usize << log2.floor() as u32;
            let mut out = ALiBi::slopes(power);
            out.extend(ALiBi::slopes(2 * power).into_iter().step_by(2).take(n - power));
            out
        }
    }

    /// The slope of each head, shape `[num_heads, 1, 1]`, in `dtype`.
    pub fn create_alibi_slope(num_heads: usize, dtype: Dtype) -> Result<Array> {
        if num_heads == 0 {
            return Err(Error::invalid("ALiBi", "num_heads must be positive but got 0."));
        }
        Array::from_vec(ALiBi::slopes(num_heads), &[num_heads, 1, 1])?.astype(dtype)
    }

    /// The biases, shape `[1, num_heads, q_sequence_length - offset,
    /// k_sequence_length]`, for queries at positions `offset ..
    /// q_sequence_length - 1` and keys at `0 .. k_sequence_length - 1`.
    pub fn create_alibi_matrix(
        q_sequence_length: usize,
        k_sequence_length: usize,
        num_heads: usize,
        offset: usize,
        dtype: Dtype,
    ) -> Result<Array> {
        let queries = ops::arange(offset as f64, q_sequence_length as f64, 1.0, Dtype::I32)?;
        let keys = ops::arange(0.0, k_sequence_length as f64, 1.0, Dtype::I32)?;
        let diff = ops::subtract(&ops::expand_dims(&queries, &[1])?, &ops::expand_dims(&keys, &[0])?)?;
        let distance = ops::negative(&ops::abs(&ops::expand_dims(&diff, &[0, 1])?)?)?;
        ops::multiply(&distance, &ALiBi::create_alibi_slope(num_heads, dtype)?)?.astype(dtype)
    }

    /// `attention_scores` (`[B, num_heads, L_q, L_k]`) plus the biases (and
    /// `mask`, when given) for queries starting at position `offset`.
    pub fn forward(&self, attention_scores: &Array, offset: usize, mask: Option<&Array>) -> Result<Array> {
        let &[_, heads, q, k] = attention_scores.shape() else {
            return Err(Error::invalid(
                "ALiBi",
                format!(
                    "The attention scores must have 4 dimensions [B, heads, L_q, L_k] but have {}.",
                    attention_scores.ndim()
                ),
            ));
        };
        let mut alibi = ALiBi::create_alibi_matrix(q + offset, k, heads, offset, attention_scores.dtype())?;
        if let Some(m) = mask {
            alibi = ops::add(&alibi, m)?;
        }
        ops::add(attention_scores, &alibi)
    }
}

impl Default for ALiBi {
    fn default() -> ALiBi {
        ALiBi::new()
    }
}

impl Module for ALiBi {
    entries!();
    training_flag!();
}
