//! Reductions over axes and arg-reductions along one axis.

use super::{fresh, OutputSpec, Primitive};
use crate::array::ArrayData;
use crate::backend::{ArgReduceOp, Backend, ReduceOp};
use crate::error::Result;

/// Reduces `axes` (sorted, unique); the output keeps them with extent 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Reduce {
    /// Which reduction.
    pub op: ReduceOp,
    /// The reduced axes.
    pub axes: Vec<usize>,
}

impl Primitive for Reduce {
    fn name(&self) -> &'static str {
        match self.op {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        let out = backend.reduce(self.op, &x.storage, &x.layout, &self.axes, outputs[0].dtype)?;
        Ok(fresh(out, &outputs[0].shape))
    }
}

/// Index of the max/min along `axis` (kept with extent 1), as uint32.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgReduce {
    /// Which arg-reduction.
    pub op: ArgReduceOp,
    /// The reduced axis.
    pub axis: usize,
}

impl Primitive for ArgReduce {
    fn name(&self) -> &'static str {
        match self.op {
            ArgReduceOp::ArgMax => "argmax",
            ArgReduceOp::ArgMin => "argmin",
        }
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        let out = backend.arg_reduce(self.op, &x.storage, &x.layout, self.axis)?;
        Ok(fresh(out, &outputs[0].shape))
    }
}
