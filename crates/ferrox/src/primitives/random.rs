//! Random numbers from keys: MLX's `RandomBits` and the samplers fused with
//! it (see [`RandomOp`]).

use super::{fresh, Batched, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::{Backend, RandomOp};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::numel;

/// Random numbers from MLX's generator. Input: the keys, uint32 of shape
/// `[..., 2]`; the leading axes (none, unless added by vmap) hold one key
/// each. Output: `shape` (those leading axes, then the per-key sample
/// shape) of `dtype`, each key's values in MLX's layout.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RandomBits {
    /// Raw bits or a fused sampler.
    pub op: RandomOp,
    /// The output shape.
    pub shape: Vec<usize>,
    /// The output dtype.
    pub dtype: Dtype,
}

impl Primitive for RandomBits {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 1)?;
        let keys = inputs[0].shape();
        let lead = keys.len().saturating_sub(1);
        if inputs[0].dtype() != Dtype::U32 || keys.last() != Some(&2) || !self.shape.starts_with(&keys[..lead]) {
            return Err(super::mismatch(
                self.name(),
                format!("keys of shape {keys:?} for an output of {:?}.", self.shape),
            ));
        }
        super::one_output(self.shape.clone(), self.dtype)
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let keys = &inputs[0];
        let o = &outputs[0];
        let out = backend.random(self.op, &keys.storage, &keys.layout, numel(&o.shape), o.dtype)?;
        Ok(fresh(out, &o.shape))
    }

    // As MLX's RandomBits: keys are not differentiable.
    fn vjp(&self, _: &[Array], _: &[Array], _: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Err(Error::invalid(self.name(), "Primitive's vjp not implemented."))
    }

    fn jvp(&self, _: &[Array], _: &[Array], _: &[Array]) -> Result<Vec<Array>> {
        Err(Error::invalid(self.name(), "Primitive's jvp not implemented."))
    }

    /// One key per batch entry (MLX's rule): the batch axis of the keys
    /// becomes a leading key axis, and the output gains it in front.
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        let keys = super::front(inputs, axes)?;
        let mut shape = vec![keys.shape()[0]];
        shape.extend_from_slice(&self.shape);
        let out = Array::from_primitive(
            shape.clone(),
            self.dtype,
            RandomBits { op: self.op, shape, dtype: self.dtype },
            vec![keys],
        )?;
        super::batched(out)
    }
}
