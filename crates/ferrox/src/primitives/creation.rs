//! Primitives without inputs that create data.

use super::{fresh, no_input_rules, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::Backend;
use crate::element::Scalar;
use crate::error::Result;

/// Every element equal to one value.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Full(pub Scalar);

impl Primitive for Full {
    fn name(&self) -> &'static str {
        "full"
    }
    fn eval(&self, backend: &dyn Backend, _: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let o = &outputs[0];
        Ok(fresh(backend.full(self.0, o.dtype, o.shape.iter().product())?, &o.shape))
    }
    no_input_rules!();
}

/// `start + i * step` along a 1-D output.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Arange {
    /// First value.
    pub start: f64,
    /// Increment.
    pub step: f64,
}

impl Primitive for Arange {
    fn name(&self) -> &'static str {
        "arange"
    }
    fn eval(&self, backend: &dyn Backend, _: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let o = &outputs[0];
        Ok(fresh(backend.arange(self.start, self.step, o.shape[0], o.dtype)?, &o.shape))
    }
    no_input_rules!();
}

/// Ones on diagonal `k` of a 2-D output, zeros elsewhere.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Eye {
    /// The diagonal (0 main, > 0 above, < 0 below).
    pub k: isize,
}

impl Primitive for Eye {
    fn name(&self) -> &'static str {
        "eye"
    }
    fn eval(&self, backend: &dyn Backend, _: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let o = &outputs[0];
        Ok(fresh(backend.eye(o.shape[0], o.shape[1], self.k, o.dtype)?, &o.shape))
    }
    no_input_rules!();
}
