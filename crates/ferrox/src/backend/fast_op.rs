//! The fused row kernels: those of [`crate::ops::fast`] (normalizations,
//! rotary embeddings, attention and the cross entropy, each one forward and
//! one backward kernel per backend) and the softmax and log-sum-exp of the core ops
//! (`cpu/norm.rs`, `cpu/rope.rs`, `cpu/attention.rs`, `cpu/softmax.rs`;
//! `cuda/fast.rs` with `kernels/norm.cu`, `kernels/rope.cu`,
//! `kernels/attention.cu`, `kernels/softmax.cu`). Every kernel computes in float32 (float64 for
//! float64 inputs) and rounds each output once.
//!
//! The backend receives the inputs listed on each variant. "Rows" inputs
//! are row-contiguous from their layout's offset; small parameter vectors
//! (weights, biases, offsets, frequencies, sinks) are contiguous; an
//! attention mask may have any strides (broadcast views are not copied).
//! Attention's q, k, v, o and do are "head rows": any strides over their
//! batch, head and row axes, features contiguous ([`FastOp::takes_strided`]),
//! and its outputs are dense in the axis order of the operand they belong
//! to ([`FastOp::output_layouts`]). So a model that views `(B, L, H, D)`
//! projections as `(B, H, L, D)` heads, and transposes the result back,
//! copies nothing, forward or backward. The cross entropy's logits are
//! rows evenly spaced at any distance ([`row_stride`]).

use crate::shape::{collapse_dims, Layout};

/// Whether a 4-d attention operand's layout is "head rows": features
/// contiguous, and non-negative strides over the other three axes.
pub fn head_rows(layout: &Layout) -> bool {
    layout.ndim() == 4
        && (layout.strides[3] == 1 || layout.shape[3] <= 1)
        && layout.strides[..3].iter().all(|&s| s >= 0)
}

/// The distance between consecutive rows of a layout whose rows (its last
/// axis) are each contiguous and evenly spaced, at least a row apart (a
/// row-contiguous layout's is the row length); None for any other layout.
/// Such rows are read in place by the cross entropy's kernels, so a view
/// of the padded logits of a half-precision GPU product needs no copy.
pub fn row_stride(layout: &Layout) -> Option<usize> {
    let nd = layout.ndim();
    let d = *layout.shape.last()?;
    if d > 1 && layout.strides[nd - 1] != 1 {
        return None;
    }
    let (rows, [strides]) = collapse_dims(&layout.shape[..nd - 1], [&layout.strides[..nd - 1]]);
    match (rows.as_slice(), strides.as_slice()) {
        ([1], _) => Some(d),
        ([_], [s]) if *s >= d as isize => Some(*s as usize),
        _ => None,
    }
}

/// `shape` laid out as rows (its last axis) `ld` elements apart, at least a
/// row apart (the row-contiguous layout when `ld` is the row length or
/// less): the layout the cross entropy's backward writes, in a buffer of
/// `rows * ld` elements.
pub fn rows_spaced(shape: &[usize], ld: usize) -> Layout {
    let mut layout = Layout::contiguous(shape);
    let nd = shape.len();
    let d = shape.last().copied().unwrap_or(1);
    if nd >= 2 && ld > d {
        let mut stride = ld as isize;
        for i in (0..nd - 1).rev() {
            layout.strides[i] = stride;
            stride *= shape[i] as isize;
        }
    }
    layout
}

/// A dense layout of the 4-d `shape` whose first three axes are nested as
/// `like`'s strides nest them (largest stride outermost, axes of extent 1
/// first; ties keep their order) and whose last axis is innermost. For
/// `like` a `(B, L, H, D)` buffer viewed as `(B, H, L, D)`, it is the same
/// kind of view, so transposing it back is row-contiguous.
pub fn dense_in_order_of(like: &Layout, shape: &[usize]) -> Layout {
    let mut order = [0usize, 1, 2];
    // An axis of extent 1 has no meaningful stride: it goes outermost.
    order.sort_by_key(|&a| (like.shape[a] > 1, std::cmp::Reverse(like.strides[a])));
    let physical: Vec<usize> = order.iter().map(|&a| shape[a]).chain([shape[3]]).collect();
    let mut inverse = [0usize, 1, 2, 3];
    for (i, &a) in order.iter().enumerate() {
        inverse[a] = i;
    }
    Layout::contiguous(&physical).permute(&inverse)
}

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
    /// (`Hq`) when present. Outputs: o `(B, Hq, Lq, Dv)` and each score
    /// row's statistics `(B, Hq, Lq, 2)` in the compute type, which the
    /// backward pass reads: the row's max `m` and `log(sum(exp(s - m)))`,
    /// the sink counted in both. (Apart, because their sum, the
    /// log-sum-exp, loses the second where every score is a mask's fill.)
    Attention(AttentionParams),
    /// The derivative of [`FastOp::Attention`]. Inputs: the forward's
    /// inputs, then o, the row statistics and do. Outputs: dq, dk, dv, and
    /// the sinks' cotangent when present.
    AttentionVjp(AttentionParams),
    /// `exp(x - max) / sum(exp(x - max))` over the last axis (MLX's
    /// `Softmax`; always computed in float32, so `precise` does not change
    /// the kernel). Input: x (rows). Output: y.
    Softmax,
    /// `log(sum(exp(x)))` over the last axis (MLX's `LogSumExp`). Input: x
    /// (rows). Output: one value per row.
    LogSumExp,
    /// The cross entropy of each row of logits `x` (C classes) against a
    /// class index: `lse(x) - (1 - smoothing) x[t] - smoothing mean(x)`.
    /// Inputs: x (rows), the targets (int32, one per row; negative ones
    /// count from the end). Outputs: the loss per row (x's dtype) and each
    /// row's statistics `(rows, 2)` in the compute type, which the backward
    /// reads: its max `m` and `log(sum(exp(x - m)))`. A target out of range
    /// is an error on the CPU and gives NaN on the GPU (no host sync).
    CrossEntropy {
        /// Label smoothing in [0, 1).
        smoothing: f64,
    },
    /// The derivative of [`FastOp::CrossEntropy`] in x:
    /// `g (softmax(x) - (1 - smoothing) onehot(t) - smoothing / C)`. Inputs:
    /// x (rows), the targets, the row statistics, g (one per row). Output:
    /// dx.
    CrossEntropyVjp {
        /// Label smoothing in [0, 1).
        smoothing: f64,
    },
}

impl FastOp {
    /// Whether input `index` may reach the backend laid out as `layout`
    /// (otherwise the caller makes it row-contiguous): the attention mask
    /// in any layout, attention's head-row operands when
    /// [`head_rows`] accepts them, the cross entropy's logits when
    /// [`row_stride`] gives their rows' spacing.
    pub fn takes_strided(&self, index: usize, layout: &Layout) -> bool {
        let p = match self {
            FastOp::Attention(p) | FastOp::AttentionVjp(p) => p,
            FastOp::CrossEntropy { .. } | FastOp::CrossEntropyVjp { .. } => {
                return index == 0 && row_stride(layout).is_some()
            }
            _ => return false,
        };
        let forward = p.forward_inputs();
        // The backward's o and do (between them the row statistics, dense).
        let head_operand =
            index < 3 || (matches!(self, FastOp::AttentionVjp(_)) && (index == forward || index == forward + 2));
        (p.mask_input() && index == 3) || (head_operand && head_rows(layout))
    }

    /// The layouts the backend gives the outputs of `shapes`, from the
    /// layouts of the inputs it received: attention's o, dq, dk and dv are
    /// dense in the axis order of q, q, k and v ([`dense_in_order_of`]);
    /// the cross entropy's dx has the logits' rows' spacing ([`rows_spaced`],
    /// so a padded GPU product's logits and their gradient pack alike);
    /// every other output (attention's row statistics among them) is
    /// row-contiguous.
    pub fn output_layouts(&self, inputs: &[&Layout], shapes: &[Vec<usize>]) -> Vec<Layout> {
        if let FastOp::CrossEntropyVjp { .. } = self {
            return vec![rows_spaced(&shapes[0], row_stride(inputs[0]).unwrap_or(0))];
        }
        let like: &[usize] = match self {
            FastOp::Attention(_) => &[0],
            FastOp::AttentionVjp(_) => &[0, 1, 2],
            _ => &[],
        };
        shapes
            .iter()
            .enumerate()
            .map(|(i, shape)| match like.get(i) {
                Some(&operand) => dense_in_order_of(inputs[operand], shape),
                None => Layout::contiguous(shape),
            })
            .collect()
    }

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
            FastOp::CrossEntropy { .. } => "cross_entropy",
            FastOp::CrossEntropyVjp { .. } => "cross_entropy_vjp",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(B, L, H, D)` row-contiguous viewed as `(B, H, L, D)`.
    fn heads_view(b: usize, l: usize, h: usize, d: usize) -> Layout {
        Layout::contiguous(&[b, l, h, d]).permute(&[0, 2, 1, 3])
    }

    #[test]
    fn outputs_follow_their_operands_axis_order() {
        for like in [heads_view(2, 5, 3, 8), heads_view(1, 5, 3, 8), heads_view(2, 1, 3, 8)] {
            let out = dense_in_order_of(&like, &[like.shape[0], like.shape[1], like.shape[2], 4]);
            assert_eq!(out.offset, 0);
            assert!(out.permute(&[0, 2, 1, 3]).is_row_contiguous(), "{like:?} gave {out:?}");
        }
        let plain = Layout::contiguous(&[2, 3, 5, 8]);
        assert!(dense_in_order_of(&plain, &[2, 3, 5, 4]).is_row_contiguous());
        // A slice of a fused (B, L, 3, H, D) projection: the row stride is 3 H D.
        let fused = Layout::contiguous(&[2, 5, 3, 4, 8]).slice(&[0, 0, 1, 0, 0], &[2, 5, 1, 4, 8], &[1; 5]);
        let q = fused.reshape_view(&[2, 5, 4, 8]).unwrap().permute(&[0, 2, 1, 3]);
        assert!(head_rows(&q));
        assert!(dense_in_order_of(&q, &[2, 4, 5, 8]).permute(&[0, 2, 1, 3]).is_row_contiguous());
    }

    #[test]
    fn attention_takes_head_rows_and_masks_strided_only() {
        let p = AttentionParams { scale: 1.0, mask: AttentionMask::Bool, sinks: true };
        let view = heads_view(2, 5, 3, 8);
        let features_strided = Layout::contiguous(&[2, 3, 8, 5]).permute(&[0, 1, 3, 2]);
        let forward = FastOp::Attention(p);
        assert!(forward.takes_strided(0, &view) && forward.takes_strided(2, &view));
        assert!(!forward.takes_strided(0, &features_strided));
        assert!(forward.takes_strided(3, &features_strided), "the mask takes any strides");
        assert!(!forward.takes_strided(4, &view), "the sinks");
        let backward = FastOp::AttentionVjp(p);
        assert!(backward.takes_strided(5, &view) && backward.takes_strided(7, &view), "o and do");
        let stats = Layout::contiguous(&[2, 5, 3, 2]).permute(&[0, 2, 1, 3]);
        assert!(!backward.takes_strided(6, &stats), "the row statistics");
        assert!(!FastOp::LayerNorm { eps: 1e-5 }.takes_strided(0, &view));
        let layouts = backward.output_layouts(&[&view, &view, &view], &vec![vec![2, 3, 5, 8]; 4]);
        assert!(layouts[..3].iter().all(|l| l.permute(&[0, 2, 1, 3]).is_row_contiguous()));
        assert!(layouts[3].is_row_contiguous(), "the sinks' cotangent");
    }
}
