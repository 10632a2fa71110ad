//! Joining arrays along an axis.

use super::{fresh, OutputSpec, Primitive};
use crate::array::ArrayData;
use crate::backend::Backend;
use crate::error::Result;

/// Joins inputs of one dtype along `axis`.
#[derive(Debug, Clone, PartialEq)]
pub struct Concatenate {
    /// The joined axis.
    pub axis: usize,
}

impl Primitive for Concatenate {
    fn name(&self) -> &'static str {
        "concatenate"
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let parts: Vec<_> = inputs.iter().map(|x| (&*x.storage, &x.layout)).collect();
        let shape = &outputs[0].shape;
        Ok(fresh(backend.concatenate(&parts, self.axis, shape)?, shape))
    }
}
