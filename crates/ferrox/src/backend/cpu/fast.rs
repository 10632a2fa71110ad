//! The fused row kernels on the host ([`FastOp`]): this file routes each
//! op to its family file (`norm.rs`, `rope.rs`, `attention.rs`, `softmax.rs`,
//! which also holds the cross entropy).

use super::CpuBuffer;
use super::CpuElement;
use crate::backend::FastOp;
use crate::error::{Error, Result};
use crate::shape::Layout;

/// One input: its buffer and layout.
pub(crate) type Input<'a> = (&'a CpuBuffer, &'a Layout);

/// The `n` elements of `T` starting at the input's offset.
pub(crate) fn typed_slice<'a, T: CpuElement>(input: Input<'a>, n: usize) -> Result<&'a [T]> {
    let all = T::slice_of(input.0)
        .ok_or_else(|| Error::invalid("fast", format!("internal error: expected {} data", T::DTYPE)))?;
    all.get(input.1.offset..input.1.offset + n)
        .ok_or_else(|| Error::invalid("fast", "internal error: an input is shorter than its layout"))
}

/// Runs `op` on `inputs` (see [`FastOp`] for what each op takes and returns).
pub(crate) fn fast(op: &FastOp, inputs: &[Input]) -> Result<Vec<CpuBuffer>> {
    match op {
        FastOp::RmsNorm { eps } => Ok(vec![super::norm::rms_norm(*eps, inputs[0], inputs[1])?]),
        FastOp::RmsNormVjp { eps } => super::norm::rms_norm_vjp(*eps, inputs[0], inputs[1], inputs[2]),
        FastOp::LayerNorm { eps } => Ok(vec![super::norm::layer_norm(*eps, inputs[0], inputs[1], inputs[2])?]),
        FastOp::LayerNormVjp { eps } => super::norm::layer_norm_vjp(*eps, inputs[0], inputs[1], inputs[2], inputs[3]),
        FastOp::Rope(p) => Ok(vec![super::rope::rope(p, inputs[0], inputs[1], inputs.get(2).copied())?]),
        FastOp::Attention(p) => super::attention::attention(p, inputs),
        FastOp::AttentionVjp(p) => super::attention::attention_vjp(p, inputs),
        FastOp::Softmax => Ok(vec![super::softmax::softmax(inputs[0])?]),
        FastOp::LogSumExp => Ok(vec![super::softmax::logsumexp(inputs[0])?]),
        FastOp::CrossEntropy { smoothing } => super::softmax::cross_entropy(*smoothing, inputs[0], inputs[1]),
        FastOp::CrossEntropyVjp { smoothing } => {
            Ok(vec![super::softmax::cross_entropy_vjp(*smoothing, inputs[0], inputs[1], inputs[2], inputs[3])?])
        }
    }
}
