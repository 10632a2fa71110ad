//! The fused primitives of [`crate::ops::fast`]: each forward primitive's
//! derivative is a fused backward primitive with its own kernels; forward
//! mode, batching and the backward primitives' own derivatives go through
//! the ops' reference graphs (MLX's `fast::Custom` fallbacks).

use super::{Batched, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::{AttentionMask, AttentionParams, Backend, FastOp, RopeParams, Storage};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::ops::{self, fast as reference};
use crate::shape::Layout;
use crate::transforms::{autodiff, vmap};
use std::sync::Arc;

/// Evaluates `op` with every input it does not take strided
/// ([`FastOp::takes_strided`]) made row-contiguous; the outputs are laid out
/// as [`FastOp::output_layouts`] says the backend writes them.
pub(super) fn eval_fused(
    backend: &dyn Backend,
    op: FastOp,
    inputs: &[ArrayData],
    outputs: &[OutputSpec],
) -> Result<Vec<ArrayData>> {
    let dense: Vec<(Arc<Storage>, Layout)> = inputs
        .iter()
        .enumerate()
        .map(|(i, x)| {
            if x.layout.is_row_contiguous() || op.takes_strided(i, &x.layout) {
                Ok((x.storage.clone(), x.layout.clone()))
            } else {
                let copy = backend.copy(&x.storage, &x.layout, x.storage.dtype())?;
                Ok((Arc::new(copy), Layout::contiguous(&x.layout.shape)))
            }
        })
        .collect::<Result<_>>()?;
    let refs: Vec<(&Storage, &Layout)> = dense.iter().map(|(s, l)| (s.as_ref(), l)).collect();
    let outs = backend.fast(&op, &refs)?;
    let in_layouts: Vec<&Layout> = dense.iter().map(|(_, l)| l).collect();
    let shapes: Vec<Vec<usize>> = outputs.iter().map(|spec| spec.shape.clone()).collect();
    Ok(outs
        .into_iter()
        .zip(op.output_layouts(&in_layouts, &shapes))
        .map(|(s, layout)| ArrayData { storage: Arc::new(s), layout })
        .collect())
}

/// A graph of ops computing a fused primitive's outputs from its inputs.
pub(super) type Reference<'a> = &'a dyn Fn(&[Array]) -> Result<Vec<Array>>;

/// Tangents of the outputs, by forward mode through the reference graph.
pub(super) fn jvp_by_reference(f: Reference, inputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
    Ok(autodiff::jvp(f, inputs, tangents)?.1)
}

/// Cotangents of the inputs in `argnums`, through the reference graph.
pub(super) fn vjp_by_reference(
    f: Reference,
    inputs: &[Array],
    cotangents: &[Array],
    argnums: &[usize],
) -> Result<Vec<Array>> {
    let grads = autodiff::vjp_of_inexact(f, inputs, cotangents)?.1;
    Ok(argnums.iter().map(|&i| grads[i].clone()).collect())
}

/// The batched outputs (batch axis first), by vmap of the reference graph.
pub(super) fn vmap_by_reference(f: Reference, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
    let in_axes: Vec<Option<isize>> = axes.iter().map(|a| a.map(|a| a as isize)).collect();
    let outs = vmap::vmap(f, inputs, &in_axes, &[Some(0)])?;
    let n = outs.len();
    Ok((outs, vec![Some(0); n]))
}

/// The transform rules of a backward primitive: every derivative and the
/// batching go through its `reference` graph (used inside `impl Primitive`).
macro_rules! rules_by_reference {
    () => {
        fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
            vjp_by_reference(&|xs| self.reference(xs), inputs, cotangents, argnums)
        }

        fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
            jvp_by_reference(&|xs| self.reference(xs), inputs, tangents)
        }

        fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
            vmap_by_reference(&|xs| self.reference(xs), inputs, axes)
        }
    };
}

/// The reference graph of a backward primitive: the vjp of the forward
/// reference at the leading `primals` inputs, with the last input as the
/// output's cotangent.
fn backward_reference(forward: Reference, inputs: &[Array], primals: usize) -> Result<Vec<Array>> {
    let cotangent = inputs[inputs.len() - 1].clone();
    Ok(autodiff::vjp_of_inexact(forward, &inputs[..primals], &[cotangent])?.1)
}

/// Batching of a normalization: when only `x` is batched, the fused op on
/// the batch-first `x` (the statistics stay per row); otherwise the
/// reference graph.
fn vmap_norm<P: Primitive + Clone + 'static>(
    prim: &P,
    f: Reference,
    inputs: &[Array],
    axes: &[Option<usize>],
) -> Result<Batched> {
    match axes {
        [Some(a), rest @ ..] if rest.iter().all(Option::is_none) && *a + 1 != inputs[0].ndim() => {
            let x = vmap::batch_to_front(&inputs[0], *a)?;
            let mut batched = inputs.to_vec();
            batched[0] = x;
            let spec = OutputSpec::of(&batched[0]);
            let out = Array::siblings_from_primitive(vec![spec], prim.clone(), batched)?;
            Ok((out, vec![Some(0)]))
        }
        _ => vmap_by_reference(f, inputs, axes),
    }
}

/// Fused RMS normalization. Inputs: x, the weight (1-d, or a 0-d `1`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RmsNorm {
    /// Added to the mean square.
    pub eps: f32,
}

/// The derivative of [`RmsNorm`]. Inputs: x, the weight, the output's
/// cotangent. Outputs: the cotangents of x and of the weight.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RmsNormVjp {
    /// Added to the mean square.
    pub eps: f32,
}

/// Fused layer normalization. Inputs: x, the weight and the bias (1-d, or
/// 0-d `1` and `0`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LayerNorm {
    /// Added to the variance.
    pub eps: f32,
}

/// The derivative of [`LayerNorm`]. Inputs: x, the weight, the bias, the
/// output's cotangent. Outputs: the cotangents of x, the weight and the bias.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LayerNormVjp {
    /// Added to the variance.
    pub eps: f32,
}

/// Fused rotary position embeddings. Inputs: x, the int32 offset(s), the
/// float32 frequencies when given. Its derivative is itself with the
/// rotation reversed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rope {
    /// The rotation's parameters.
    pub params: RopeParams,
}

/// Fused scaled dot-product attention. Inputs: q, k, v, the mask and the
/// sinks when present. Outputs: o, and each score row's statistics (its
/// max and the log of its sum of exponentials past the max) in the compute
/// type `(B, Hq, Lq, 2)`, which only the vjp reads.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Attention {
    /// Scale, mask kind and sinks.
    pub params: AttentionParams,
}

/// The derivative of [`Attention`]. Inputs: the forward's inputs, its
/// outputs (o and the row statistics) and o's cotangent. Outputs: the
/// cotangents of q, k, v and of the sinks when present.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AttentionVjp {
    /// Scale, mask kind and sinks.
    pub params: AttentionParams,
}

/// Fused cross entropy over the last axis against class indices. Inputs:
/// the logits and the int32 targets. Outputs: the loss per row, and each
/// row's statistics (its max and the log of its sum of exponentials past
/// the max) in the compute type, which only the vjp reads.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CrossEntropy {
    /// Label smoothing in [0, 1).
    pub smoothing: f64,
}

/// The derivative of [`CrossEntropy`] in the logits. Inputs: the logits,
/// the targets, the row statistics and the loss's cotangent. Output: the
/// logits' cotangent.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CrossEntropyVjp {
    /// Label smoothing in [0, 1).
    pub smoothing: f64,
}

fn same_as(inputs: &[Array], which: &[usize]) -> Vec<OutputSpec> {
    which.iter().map(|&i| OutputSpec::of(&inputs[i])).collect()
}

impl Primitive for RmsNorm {
    fn name(&self) -> &'static str {
        "RMSNorm"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 2)?;
        Ok(same_as(inputs, &[0]))
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        eval_fused(backend, FastOp::RmsNorm { eps: self.eps }, inputs, outputs)
    }

    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let args = vec![inputs[0].clone(), inputs[1].clone(), cotangents[0].clone()];
        let grads = Array::siblings_from_primitive(same_as(inputs, &[0, 1]), RmsNormVjp { eps: self.eps }, args)?;
        Ok(argnums.iter().map(|&i| grads[i].clone()).collect())
    }

    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        jvp_by_reference(&|xs| reference::rms_norm_reference(self.eps, xs), inputs, tangents)
    }

    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        vmap_norm(self, &|xs| reference::rms_norm_reference(self.eps, xs), inputs, axes)
    }
}

impl RmsNormVjp {
    fn reference(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        backward_reference(&|xs| reference::rms_norm_reference(self.eps, xs), inputs, 2)
    }
}

impl Primitive for RmsNormVjp {
    fn name(&self) -> &'static str {
        "RMSNormVJP"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 3)?;
        Ok(same_as(inputs, &[0, 1]))
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        eval_fused(backend, FastOp::RmsNormVjp { eps: self.eps }, inputs, outputs)
    }

    rules_by_reference!();
}

impl Primitive for LayerNorm {
    fn name(&self) -> &'static str {
        "LayerNorm"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 3)?;
        Ok(same_as(inputs, &[0]))
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        eval_fused(backend, FastOp::LayerNorm { eps: self.eps }, inputs, outputs)
    }

    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let mut args = inputs.to_vec();
        args.push(cotangents[0].clone());
        let grads = Array::siblings_from_primitive(same_as(inputs, &[0, 1, 2]), LayerNormVjp { eps: self.eps }, args)?;
        Ok(argnums.iter().map(|&i| grads[i].clone()).collect())
    }

    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        jvp_by_reference(&|xs| reference::layer_norm_reference(self.eps, xs), inputs, tangents)
    }

    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        vmap_norm(self, &|xs| reference::layer_norm_reference(self.eps, xs), inputs, axes)
    }
}

impl LayerNormVjp {
    fn reference(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        backward_reference(&|xs| reference::layer_norm_reference(self.eps, xs), inputs, 3)
    }
}

impl Primitive for LayerNormVjp {
    fn name(&self) -> &'static str {
        "LayerNormVJP"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 4)?;
        Ok(same_as(inputs, &[0, 1, 2]))
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        eval_fused(backend, FastOp::LayerNormVjp { eps: self.eps }, inputs, outputs)
    }

    rules_by_reference!();
}

impl Primitive for Rope {
    fn name(&self) -> &'static str {
        "RoPE"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 2 + self.params.freqs as usize)?;
        Ok(same_as(inputs, &[0]))
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        eval_fused(backend, FastOp::Rope(self.params), inputs, outputs)
    }

    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        if argnums != [0] {
            return Err(Error::invalid("rope", "vjp for offset or frequencies not supported"));
        }
        let mut args = inputs.to_vec();
        args[0] = cotangents[0].clone();
        let params = RopeParams { forward: !self.params.forward, ..self.params };
        Ok(vec![Array::from_primitive(inputs[0].shape().to_vec(), inputs[0].dtype(), Rope { params }, args)?])
    }

    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        // Linear in x; the offsets and frequencies carry no tangent (MLX's rule).
        let mut args = inputs.to_vec();
        args[0] = tangents[0].clone();
        Ok(vec![Array::from_primitive(inputs[0].shape().to_vec(), inputs[0].dtype(), self.clone(), args)?])
    }

    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        vmap_by_reference(&|xs| reference::rope_reference(&self.params, xs), inputs, axes)
    }
}

impl Attention {
    /// The outputs as ops: o and the row statistics.
    fn reference(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        reference::attention_reference(&self.params, inputs)
    }

    /// The output specs for inputs of these shapes and dtype.
    pub(crate) fn specs(q: &[usize], v: &[usize], dtype: Dtype) -> Vec<OutputSpec> {
        vec![
            OutputSpec { shape: vec![q[0], q[1], q[2], v[3]], dtype },
            OutputSpec { shape: vec![q[0], q[1], q[2], 2], dtype: reference::compute_dtype(dtype) },
        ]
    }
}

impl Primitive for Attention {
    fn name(&self) -> &'static str {
        "ScaledDotProductAttention"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, self.params.forward_inputs())?;
        Ok(Attention::specs(inputs[0].shape(), inputs[2].shape(), inputs[0].dtype()))
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        eval_fused(backend, FastOp::Attention(self.params), inputs, outputs)
    }

    fn vjp(&self, inputs: &[Array], outputs: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let p = &self.params;
        if p.mask == AttentionMask::Additive && argnums.contains(&3) {
            return vjp_by_reference(&|xs| self.reference(xs), inputs, cotangents, argnums);
        }
        let mut args = inputs.to_vec();
        args.extend([outputs[0].clone(), outputs[1].clone(), cotangents[0].clone()]);
        let mut specs = same_as(inputs, &[0, 1, 2]);
        let sinks = p.sinks.then(|| inputs.len() - 1);
        if let Some(s) = sinks {
            specs.push(OutputSpec::of(&inputs[s]));
        }
        let grads = Array::siblings_from_primitive(specs, AttentionVjp { params: *p }, args)?;
        argnums
            .iter()
            .map(|&i| match i {
                0..=2 => Ok(grads[i].clone()),
                _ if Some(i) == sinks => Ok(grads[3].clone()),
                _ => ops::zeros_like(&inputs[i]),
            })
            .collect()
    }

    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        jvp_by_reference(&|xs| self.reference(xs), inputs, tangents)
    }

    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        vmap_by_reference(&|xs| self.reference(xs), inputs, axes)
    }
}

impl AttentionVjp {
    fn reference(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        let n = self.params.forward_inputs();
        let forward = |xs: &[Array]| Ok(vec![reference::attention_reference(&self.params, xs)?.swap_remove(0)]);
        let grads = backward_reference(&forward, inputs, n)?;
        let mut outs = grads[..3].to_vec();
        if self.params.sinks {
            outs.push(grads[n - 1].clone());
        }
        Ok(outs)
    }
}

impl Primitive for AttentionVjp {
    fn name(&self) -> &'static str {
        "ScaledDotProductAttentionVJP"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        let n = self.params.forward_inputs();
        super::arity(self.name(), inputs, n + 3)?;
        let mut which = vec![0, 1, 2];
        if self.params.sinks {
            which.push(n - 1);
        }
        Ok(same_as(inputs, &which))
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        eval_fused(backend, FastOp::AttentionVjp(self.params), inputs, outputs)
    }

    rules_by_reference!();
}

impl CrossEntropy {
    /// The output specs for logits with rows of shape `rows`.
    pub(crate) fn specs(rows: &[usize], dtype: Dtype) -> Vec<OutputSpec> {
        let mut stats = rows.to_vec();
        stats.push(2);
        vec![
            OutputSpec { shape: rows.to_vec(), dtype },
            OutputSpec { shape: stats, dtype: reference::compute_dtype(dtype) },
        ]
    }

    fn reference(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        reference::cross_entropy_reference(self.smoothing, inputs)
    }
}

impl Primitive for CrossEntropy {
    fn name(&self) -> &'static str {
        "CrossEntropy"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 2)?;
        let x = inputs[0].shape();
        Ok(CrossEntropy::specs(&x[..x.len().saturating_sub(1)], inputs[0].dtype()))
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        eval_fused(backend, FastOp::CrossEntropy { smoothing: self.smoothing }, inputs, outputs)
    }

    fn vjp(&self, inputs: &[Array], outputs: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let args = vec![inputs[0].clone(), inputs[1].clone(), outputs[1].clone(), cotangents[0].clone()];
        let spec = same_as(inputs, &[0]);
        let dx = Array::siblings_from_primitive(spec, CrossEntropyVjp { smoothing: self.smoothing }, args)?;
        argnums.iter().map(|&i| if i == 0 { Ok(dx[0].clone()) } else { ops::zeros_like(&inputs[i]) }).collect()
    }

    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        jvp_by_reference(&|xs| self.reference(xs), inputs, tangents)
    }

    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        vmap_by_reference(&|xs| self.reference(xs), inputs, axes)
    }
}

impl CrossEntropyVjp {
    fn reference(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        let loss = |xs: &[Array]| Ok(vec![reference::cross_entropy_reference(self.smoothing, xs)?.swap_remove(0)]);
        let cotangent = inputs[3].clone();
        Ok(vec![autodiff::vjp_of_inexact(loss, &inputs[..2], &[cotangent])?.1.swap_remove(0)])
    }
}

impl Primitive for CrossEntropyVjp {
    fn name(&self) -> &'static str {
        "CrossEntropyVJP"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 4)?;
        Ok(same_as(inputs, &[0]))
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        eval_fused(backend, FastOp::CrossEntropyVjp { smoothing: self.smoothing }, inputs, outputs)
    }

    rules_by_reference!();
}

#[cfg(test)]
mod tests {
    use crate::array::Array;
    use crate::error::Result;
    use crate::ops::{self, fast::AttentionMaskArg};
    use crate::transforms::autodiff;

    const HEADS: [isize; 4] = [0, 2, 1, 3];

    /// Values of shape `(B, L, H, D)` viewed as `(B, H, L, D)`.
    fn heads_view(seed: u32, b: usize, l: usize, h: usize, d: usize) -> Array {
        let vals: Vec<f32> = (0..b * l * h * d)
            .map(|i| (((i as u32).wrapping_mul(2654435761) ^ seed) % 1000) as f32 / 500.0 - 1.0)
            .collect();
        ops::transpose(&Array::from_vec(vals, &[b, l, h, d]).unwrap(), Some(&HEADS)).unwrap()
    }

    fn attention(xs: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::fast::scaled_dot_product_attention(&xs[0], &xs[1], &xs[2], 0.3, &AttentionMaskArg::Causal, None)?])
    }

    fn values(x: &Array) -> Vec<f32> {
        x.to_vec::<f32>().unwrap()
    }

    /// Whether `x` transposed back to `(B, L, H, D)` is row-contiguous (so
    /// flattening the heads copies nothing).
    fn transposes_back_for_free(x: &Array) -> bool {
        let back = ops::transpose(x, Some(&HEADS)).unwrap();
        back.data().unwrap().layout.is_row_contiguous()
    }

    #[test]
    fn attention_on_head_views_reads_and_writes_them_in_place() {
        let (q, k, v) = (heads_view(1, 2, 6, 4, 8), heads_view(2, 2, 6, 2, 8), heads_view(3, 2, 6, 2, 8));
        let dense: Vec<Array> = [&q, &k, &v].iter().map(|x| ops::contiguous(x, false).unwrap()).collect();
        let cot = heads_view(4, 2, 6, 4, 8);
        let (out, grads) = autodiff::vjp(attention, &[q, k, v], std::slice::from_ref(&cot)).unwrap();
        let (out_dense, grads_dense) =
            autodiff::vjp(attention, &dense, &[ops::contiguous(&cot, false).unwrap()]).unwrap();
        assert!(transposes_back_for_free(&out[0]));
        assert_eq!(values(&out[0]), values(&out_dense[0]));
        for (g, g_dense) in grads.iter().zip(&grads_dense) {
            assert!(transposes_back_for_free(g), "a gradient in its operand's layout");
            assert_eq!(values(g), values(g_dense));
        }
    }
}
