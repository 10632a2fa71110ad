//! A stand-in for a function's argument while compile or export traces the
//! function: it has a shape and a dtype but no value, so evaluating
//! anything computed from it fails with the tracer's message.

use super::{no_input_rules, opaque_primitive, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::Backend;
use crate::error::{Error, Result};

/// An argument's stand-in; evaluating it raises `message` for `op`.
#[derive(Debug)]
pub(crate) struct Placeholder {
    op: &'static str,
    message: &'static str,
}

opaque_primitive!(Placeholder);

impl Placeholder {
    /// An array of `a`'s shape and dtype standing for it while `op` traces.
    pub(crate) fn stand_in(a: &Array, op: &'static str, message: &'static str) -> Result<Array> {
        Array::from_primitive(a.shape().to_vec(), a.dtype(), Placeholder { op, message }, vec![])
    }
}

impl Primitive for Placeholder {
    fn name(&self) -> &'static str {
        "placeholder"
    }
    fn eval(&self, _: &dyn Backend, _: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        Err(Error::invalid(self.op, self.message))
    }
    no_input_rules!();
}
