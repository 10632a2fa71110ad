//! The fused optimizer step ([`crate::ops::optimizer_update`]).

use super::{fresh, Batched, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::{Backend, Storage, UpdateRule};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::{numel, Layout};
use std::sync::Arc;

/// One optimizer step of one parameter. Inputs: the parameter, its
/// gradient, the rule's states (all of the parameter's shape and real float
/// dtype), then the learning rate and the step count (float32 scalars).
/// Outputs: the new parameter and the new states.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OptimizerUpdate {
    /// The update rule and its hyperparameters.
    pub rule: UpdateRule,
}

impl OptimizerUpdate {
    /// The number of elementwise inputs (parameter, gradient, states).
    fn elementwise_inputs(&self) -> usize {
        2 + self.rule.state_names().len()
    }
}

impl Primitive for OptimizerUpdate {
    fn name(&self) -> &'static str {
        "OptimizerUpdate"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        let k = self.elementwise_inputs();
        super::arity(self.name(), inputs, k + 2)?;
        let p = &inputs[0];
        if !p.dtype().is_floating() {
            return Err(super::mismatch(self.name(), format!("parameters must be real floats, got {}.", p.dtype())));
        }
        super::same_dtype(self.name(), &inputs[..k], p.dtype())?;
        if let Some(x) = inputs[..k].iter().find(|x| x.shape() != p.shape()) {
            return Err(super::mismatch(
                self.name(),
                format!("inputs must share the parameter's shape {:?}, got {:?}.", p.shape(), x.shape()),
            ));
        }
        if inputs[k..].iter().any(|x| x.dtype() != Dtype::F32 || x.ndim() != 0) {
            return Err(super::mismatch(self.name(), "the learning rate and step must be float32 scalars."));
        }
        Ok(vec![OutputSpec::of(p); k - 1])
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let k = self.elementwise_inputs();
        let shape = &outputs[0].shape;
        // The kernels read contiguous runs: copy strided or broadcast inputs.
        let dense: Vec<(Arc<Storage>, Layout)> = inputs[..k]
            .iter()
            .map(|x| {
                if x.layout.is_row_contiguous() {
                    Ok((x.storage.clone(), x.layout.clone()))
                } else {
                    let copy = backend.copy(&x.storage, &x.layout, x.storage.dtype())?;
                    Ok((Arc::new(copy), Layout::contiguous(shape)))
                }
            })
            .collect::<Result<_>>()?;
        let runs: Vec<(&Storage, &Layout)> = dense.iter().map(|(s, l)| (s.as_ref(), l)).collect();
        fn scalar(x: &ArrayData) -> (&Storage, &Layout) {
            (x.storage.as_ref(), &x.layout)
        }
        let outs =
            backend.optimizer_update(&self.rule, &runs, scalar(&inputs[k]), scalar(&inputs[k + 1]), numel(shape))?;
        Ok(outs.into_iter().flat_map(|s| fresh(s, shape)).collect())
    }

    fn vjp(&self, _: &[Array], _: &[Array], _: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Err(Error::invalid(self.name(), "an optimizer step is not differentiable."))
    }

    fn jvp(&self, _: &[Array], _: &[Array], _: &[Array]) -> Result<Vec<Array>> {
        Err(Error::invalid(self.name(), "an optimizer step is not differentiable."))
    }

    /// Elementwise in the parameter, gradient and states: unbatched ones are
    /// broadcast along the batch axis, which leads every output. One
    /// learning rate and step serve the whole batch.
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        let k = self.elementwise_inputs();
        if axes[k..].iter().any(Option::is_some) {
            return Err(Error::invalid(self.name(), "cannot batch the learning rate or the step count."));
        }
        let size = inputs[..k]
            .iter()
            .zip(axes)
            .find_map(|(x, a)| a.map(|a| x.shape()[a]))
            .expect("a batching rule runs on batched inputs");
        let mut batched = Vec::with_capacity(inputs.len());
        for (x, a) in inputs[..k].iter().zip(axes) {
            batched.push(match a {
                Some(a) => crate::transforms::vmap::batch_to_front(x, *a)?,
                None => {
                    let mut shape = vec![size];
                    shape.extend_from_slice(x.shape());
                    x.expand_dims(&[0])?.broadcast_to(&shape)?
                }
            });
        }
        batched.extend_from_slice(&inputs[k..]);
        let spec = OutputSpec::of(&batched[0]);
        let outs = Array::siblings_from_primitive(vec![spec; k - 1], self.clone(), batched)?;
        let n = outs.len();
        Ok((outs, vec![Some(0); n]))
    }
}
