//! Elementwise primitives: unary and binary maps, select and casts.

use super::{fresh, OutputSpec, Primitive};
use crate::array::ArrayData;
use crate::backend::{Backend, BinaryOp, UnaryOp};
use crate::dtype::Dtype;
use crate::error::Result;
use crate::shape::Layout;

fn broadcast(input: &ArrayData, shape: &[usize]) -> Layout {
    input.layout.broadcast_to(shape).expect("op builders check broadcasting")
}

/// A unary elementwise function; output dtype equals the input dtype.
#[derive(Debug, Clone, PartialEq)]
pub struct Unary(pub UnaryOp);

impl Primitive for Unary {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        Ok(fresh(backend.unary(self.0, &x.storage, &x.layout)?, &outputs[0].shape))
    }
}

/// A binary elementwise function with broadcasting; inputs share a dtype.
#[derive(Debug, Clone, PartialEq)]
pub struct Binary(pub BinaryOp);

impl Primitive for Binary {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let shape = &outputs[0].shape;
        let (a, b) = (&inputs[0], &inputs[1]);
        let out = backend.binary(self.0, &a.storage, &broadcast(a, shape), &b.storage, &broadcast(b, shape))?;
        Ok(fresh(out, shape))
    }
}

/// `where(cond, x, y)` with broadcasting.
#[derive(Debug, Clone, PartialEq)]
pub struct Select;

impl Primitive for Select {
    fn name(&self) -> &'static str {
        "where"
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let shape = &outputs[0].shape;
        let [c, x, y] = [&inputs[0], &inputs[1], &inputs[2]];
        let out = backend.select(
            &c.storage,
            &broadcast(c, shape),
            &x.storage,
            &broadcast(x, shape),
            &y.storage,
            &broadcast(y, shape),
        )?;
        Ok(fresh(out, shape))
    }
}

/// Conversion to another dtype (a contiguous copy).
#[derive(Debug, Clone, PartialEq)]
pub struct AsType(pub Dtype);

impl Primitive for AsType {
    fn name(&self) -> &'static str {
        "astype"
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        Ok(fresh(backend.copy(&x.storage, &x.layout, self.0)?, &outputs[0].shape))
    }
}
