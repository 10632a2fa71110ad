//! Joining arrays along an axis.

use super::{fresh, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::Backend;
use crate::error::Result;

/// Joins inputs of one dtype along `axis`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Concatenate {
    /// The joined axis.
    pub axis: usize,
}

impl Primitive for Concatenate {
    fn name(&self) -> &'static str {
        "concatenate"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        let name = self.name();
        let first = inputs.first().ok_or_else(|| super::mismatch(name, "takes at least one input."))?;
        super::same_dtype(name, inputs, first.dtype())?;
        let nd = first.ndim();
        let mut shape = first.shape().to_vec();
        if self.axis >= nd {
            return Err(super::mismatch(name, format!("axis {} of {nd}-dimensional inputs.", self.axis)));
        }
        shape[self.axis] = 0;
        for x in inputs {
            if x.ndim() != nd || (0..nd).any(|i| i != self.axis && x.shape()[i] != first.shape()[i]) {
                return Err(super::mismatch(
                    name,
                    format!("inputs of shapes {:?} and {:?}.", first.shape(), x.shape()),
                ));
            }
            shape[self.axis] += x.shape()[self.axis];
        }
        super::one_output(shape, first.dtype())
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let parts: Vec<_> = inputs.iter().map(|x| (&*x.storage, &x.layout)).collect();
        let shape = &outputs[0].shape;
        Ok(fresh(backend.concatenate(&parts, self.axis, shape)?, shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        // Input i's cotangent is its window of the output's cotangent.
        let c = &cotangents[0];
        let mut starts = vec![0usize];
        for x in inputs {
            starts.push(starts.last().expect("non-empty") + x.shape()[self.axis]);
        }
        argnums
            .iter()
            .map(|&i| {
                let mut index = vec![crate::ops::Index::Slice { start: None, stop: None, step: None }; c.ndim()];
                index[self.axis] = crate::ops::Index::Slice {
                    start: Some(starts[i] as i64),
                    stop: Some(starts[i + 1] as i64),
                    step: None,
                };
                crate::ops::index(c, &index)
            })
            .collect()
    }
    fn jvp(&self, _: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![crate::ops::concatenate(tangents, self.axis as isize)?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = crate::transforms::vmap::all_batched(inputs, axes)?;
        super::batched(crate::ops::concatenate(&x, self.axis as isize + 1)?)
    }
}
