//! The fused row kernels: those of [`crate::ops::fast`] (normalizations,
//! rotary embeddings and attention, each one forward and one backward
//! kernel per backend) and the softmax and log-sum-exp of the core ops
//! (`cpu/norm.rs`, `cpu/rope.rs`, `cpu/attention.rs`, `cpu/softmax.rs`;
//! `cuda/fast.rs` with `kernels/norm.cu`, `kernels/rope.cu`,
//! `kernels/attention.cu`, `kernels/softmax.cu`). Every kernel computes in float32 (float64 for
//! float64 inputs) and rounds each output once.
//!
//! The backend receives the inputs listed on each variant. "Rows" inputs
//! are row-contiguous from their layout's offset; small parameter vectors
//! (weights, biases, offsets, frequencies, sinks) are contiguous; an
//! attention mask may have any strides (broadcast views are not copied).

/// How an attention's scores are masked.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub enum AttentionMask {
    /// Every query sees every key.
    None,
    /// Query `i` sees keys `j <= i + (keys - queries)` (MLX's bottom-right
    /// aligned causal mask).
    Causal,
    /// A boolean array: `false` hides a key.
    Bool,
    /// An array added to the scores.
    Additive,
}

/// The parameters of rotary position embeddings.
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub struct RopeParams {
    /// Leading features rotated (even; the rest pass through).
    pub dims: usize,
    /// Rotate consecutive pairs `(2i, 2i+1)` instead of `(i, i + dims/2)`.
    pub traditional: bool,
    /// Base of the default frequencies `base^(-2i/dims)` (unused with
    /// explicit frequencies).
    pub base: f32,
    /// Factor applied to the positions.
    pub scale: f32,
    /// Rotate by `+theta` (the op) or by `-theta` (its derivative).
    pub forward: bool,
    /// Whether a frequency vector (periods, `dims / 2` float32 values) is given.
    pub freqs: bool,
}

/// The parameters of scaled dot-product attention.
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub struct AttentionParams {
    /// Factor applied to the query-key products.
    pub scale: f32,
    /// The mask kind.
    pub mask: AttentionMask,
    /// Whether a per-head sink logit (one value per query head) joins every
    /// softmax's denominator.
    pub sinks: bool,
}

impl AttentionParams {
    /// Whether the inputs include a mask array.
    pub fn mask_input(&self) -> bool {
        matches!(self.mask, AttentionMask::Bool | AttentionMask::Additive)
    }

    /// The number of inputs of the forward kernel: q, k, v, then the mask
    /// and the sinks when present.
    pub fn forward_inputs(&self) -> usize {
        3 + self.mask_input() as usize + self.sinks as usize
    }
}

/// One fused kernel and its parameters.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum FastOp {
    /// `y = x * rsqrt(mean(x^2) + eps) * w` over the last axis. Inputs:
    /// x (rows), w (its last axis, or 0-d for none). Output: y.
    RmsNorm {
        /// Added to the mean square.
        eps: f32,
    },
    /// The derivative of [`FastOp::RmsNorm`]. Inputs: x (rows), w, dy
    /// (rows). Outputs: dx, dw (zero when w is 0-d).
    RmsNormVjp {
        /// Added to the mean square.
        eps: f32,
    },
    /// `y = (x - mean) * rsqrt(var + eps) * w + b` over the last axis.
    /// Inputs: x (rows), w, b (each its last axis or 0-d). Output: y.
    LayerNorm {
        /// Added to the variance.
        eps: f32,
    },
    /// The derivative of [`FastOp::LayerNorm`]. Inputs: x (rows), w, b,
    /// dy (rows). Outputs: dx, dw, db (zero for 0-d w or b).
    LayerNormVjp {
        /// Added to the variance.
        eps: f32,
    },
    /// Rotary embeddings of x of shape `(B, ..., T, D)`. Inputs: x (rows),
    /// the offset (int32, one value or one per `B`), the frequencies
    /// (float32, when [`RopeParams::freqs`]). Output: the rotated x.
    Rope(RopeParams),
    /// `softmax(scale * q k^T + mask) v` per head. Inputs: q `(B, Hq, Lq,
    /// D)`, k `(B, Hk, Lk, D)`, v `(B, Hk, Lk, Dv)` (rows; `Hq` a multiple
    /// of `Hk`), the mask (`(B, Hq, Lq, Lk)`, any strides) and the sinks
    /// (`Hq`) when present. Output: o `(B, Hq, Lq, Dv)`.
    Attention(AttentionParams),
    /// The derivative of [`FastOp::Attention`]. Inputs: the forward's
    /// inputs, then o and do. Outputs: dq, dk, dv, and the sinks'
    /// cotangent when present. (It recomputes each score row's
    /// log-sum-exp: a forward output kept for it would not survive the
    /// forward's caller, who holds only o.)
    AttentionVjp(AttentionParams),
    /// `exp(x - max) / sum(exp(x - max))` over the last axis (MLX's
    /// `Softmax`; always computed in float32, so `precise` does not change
    /// the kernel). Input: x (rows). Output: y.
    Softmax,
    /// `log(sum(exp(x)))` over the last axis (MLX's `LogSumExp`). Input: x
    /// (rows). Output: one value per row.
    LogSumExp,
}

impl FastOp {
    /// The op's name for errors.
    pub fn name(&self) -> &'static str {
        match self {
            FastOp::RmsNorm { .. } => "rms_norm",
            FastOp::RmsNormVjp { .. } => "rms_norm_vjp",
            FastOp::LayerNorm { .. } => "layer_norm",
            FastOp::LayerNormVjp { .. } => "layer_norm_vjp",
            FastOp::Rope(_) => "rope",
            FastOp::Attention(_) => "scaled_dot_product_attention",
            FastOp::AttentionVjp(_) => "scaled_dot_product_attention_vjp",
            FastOp::Softmax => "softmax",
            FastOp::LogSumExp => "logsumexp",
        }
    }
}
