//! A chain of elementwise nodes that `compile` fused into one node (MLX's
//! `Compiled` primitive): one pass over the data computes every output;
//! [`FusedReduce`] also folds the chain's one output with a final
//! reduction. Their derivative and batching rules replay the chain as
//! ordinary nodes.

use super::{mismatch, AsType, Batched, Binary, OutputSpec, Primitive, Reduce, Select, Unary};
use crate::array::{Array, ArrayData};
use crate::backend::fused::{FusedOp, FusedProgram, Operand};
use crate::backend::Backend;
use crate::error::Result;
use crate::ops;
use std::sync::Arc;

/// A fused elementwise program over broadcast inputs (see
/// [`FusedProgram`]); every output has the inputs' broadcast shape.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Fused(pub FusedProgram);

impl Fused {
    /// The broadcast shape of `shapes`.
    fn shape_of<'a>(&self, shapes: impl IntoIterator<Item = &'a [usize]>) -> Result<Vec<usize>> {
        shapes.into_iter().try_fold(Vec::new(), |acc, s| ops::broadcast_pair(self.name(), &acc, s))
    }

    /// The program's outputs built from ordinary elementwise nodes on `xs`
    /// (what the derivative and batching rules transform).
    pub fn unfused(&self, xs: &[Array]) -> Result<Vec<Array>> {
        let mut values: Vec<Array> = Vec::with_capacity(self.0.steps.len());
        for step in &self.0.steps {
            let args: Vec<Array> = step
                .args
                .iter()
                .map(|&a| match a {
                    Operand::Input(i) => xs[i].clone(),
                    Operand::Step(i) => values[i].clone(),
                })
                .collect();
            let shape = self.shape_of(args.iter().map(|a| a.shape()))?;
            let value = match step.op {
                FusedOp::Unary(op) => Array::from_primitive(shape, step.dtype, Unary(op), args)?,
                FusedOp::Binary(op) => Array::from_primitive(shape, step.dtype, Binary(op), args)?,
                FusedOp::Select => Array::from_primitive(shape, step.dtype, Select, args)?,
                FusedOp::AsType => Array::from_primitive(shape, step.dtype, AsType(step.dtype), args)?,
            };
            values.push(value);
        }
        Ok(self.0.outputs.iter().map(|&o| values[o].clone()).collect())
    }
}

impl Primitive for Fused {
    fn name(&self) -> &'static str {
        "Compiled"
    }
    fn label(&self) -> String {
        self.0.label()
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        let p = &self.0;
        if inputs.len() != p.inputs.len() {
            return Err(mismatch(self.name(), format!("takes {} inputs, got {}.", p.inputs.len(), inputs.len())));
        }
        if let Some((x, d)) = inputs.iter().zip(&p.inputs).find(|(x, d)| x.dtype() != **d) {
            return Err(mismatch(self.name(), format!("expected an input of dtype {d}, got {}.", x.dtype())));
        }
        if !p.is_well_typed() || p.outputs.is_empty() {
            return Err(mismatch(self.name(), format!("is not a valid elementwise program: {}", p.describe())));
        }
        let shape = self.shape_of(inputs.iter().map(|a| a.shape()))?;
        Ok(p.outputs.iter().map(|&o| OutputSpec { shape: shape.clone(), dtype: p.steps[o].dtype }).collect())
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let shape = &outputs[0].shape;
        let ins: Vec<_> = inputs
            .iter()
            .map(|x| (&*x.storage, x.layout.broadcast_to(shape).expect("inputs broadcast to the output shape")))
            .collect();
        let out = backend.fused(&self.0, &ins, shape)?;
        Ok(out.into_iter().flat_map(|s| super::fresh(s, shape)).collect())
    }
    fn donor(&self, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Option<usize> {
        inputs.iter().position(|x| outputs.iter().any(|o| super::donates_to(x, o)))
    }
    /// The first output the donor fits is computed over its buffer.
    fn eval_donated(
        &self,
        backend: &dyn Backend,
        inputs: &mut [ArrayData],
        donor: usize,
        outputs: &[OutputSpec],
    ) -> Result<Vec<ArrayData>> {
        let shape = &outputs[0].shape;
        let output =
            outputs.iter().position(|o| super::donates_to(&inputs[donor], o)).expect("the donor fits an output");
        let (before, rest) = inputs.split_at_mut(donor);
        let (x, after) = rest.split_first_mut().expect("the donor is an input");
        let layout_of = |x: &ArrayData| x.layout.broadcast_to(shape).expect("inputs broadcast to the output shape");
        let ins: Vec<_> = before
            .iter()
            .map(|x| (Some(&*x.storage), layout_of(x)))
            .chain(std::iter::once((None, x.layout.clone())))
            .chain(after.iter().map(|x| (Some(&*x.storage), layout_of(x))))
            .collect();
        let out = backend.fused_donated(&self.0, &ins, super::donated_storage(x), output, shape)?;
        Ok(out
            .into_iter()
            .map(|s| match s {
                Some(s) => ArrayData { storage: Arc::new(s), layout: crate::shape::Layout::contiguous(shape) },
                None => x.clone(),
            })
            .collect())
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let (_, grads) = crate::transforms::autodiff::vjp_of_inexact(|xs| self.unfused(xs), inputs, cotangents)?;
        Ok(argnums.iter().map(|&i| grads[i].clone()).collect())
    }
    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(crate::transforms::autodiff::jvp(|xs| self.unfused(xs), inputs, tangents)?.1)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        let (aligned, _) = crate::transforms::vmap::align_batched(inputs, axes)?;
        let specs = self.output_specs(&aligned)?;
        let n = specs.len();
        let outs = Array::siblings_on_stream(specs, Arc::new(self.clone()), aligned, crate::device::current_stream())?;
        Ok((outs, vec![Some(0); n]))
    }
}

/// A fused elementwise program with one output and a reduction of that
/// output (`compile` makes it when a [`Reduce`] is the only reader of a
/// fused chain): the same result as [`Fused`] then the [`Reduce`], whose
/// output it has (reduced axes kept with extent 1), without the
/// intermediate array where the backend can fold values as it makes them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FusedReduce {
    /// The elementwise chain; exactly one output.
    pub program: FusedProgram,
    /// The reduction of the chain's output.
    pub reduce: Reduce,
}

impl FusedReduce {
    /// The chain and its reduction as ordinary nodes on `xs`.
    fn unfused(&self, xs: &[Array]) -> Result<Array> {
        let values = Fused(self.program.clone()).unfused(xs)?.pop().expect("one output");
        let spec = self.reduce.output_specs(std::slice::from_ref(&values))?.pop().expect("one output");
        Array::from_primitive(spec.shape, spec.dtype, self.reduce.clone(), vec![values])
    }
}

impl Primitive for FusedReduce {
    fn name(&self) -> &'static str {
        "Compiled"
    }
    fn label(&self) -> String {
        format!("{}{}", self.program.label(), self.reduce.label())
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        let chain = Fused(self.program.clone()).output_specs(inputs)?;
        if chain.len() != 1 {
            return Err(mismatch(self.name(), "a reduced program must have exactly one output."));
        }
        self.reduce.check(&chain[0].shape, chain[0].dtype)
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let shape =
            inputs.iter().try_fold(Vec::new(), |acc, x| ops::broadcast_pair(self.name(), &acc, &x.layout.shape))?;
        let ins: Vec<_> = inputs
            .iter()
            .map(|x| (&*x.storage, x.layout.broadcast_to(&shape).expect("inputs broadcast to the chain's shape")))
            .collect();
        let out =
            backend.fused_reduce(&self.program, &ins, &shape, self.reduce.op, &self.reduce.axes, outputs[0].dtype)?;
        Ok(super::fresh(out, &outputs[0].shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let (_, grads) =
            crate::transforms::autodiff::vjp_of_inexact(|xs| Ok(vec![self.unfused(xs)?]), inputs, cotangents)?;
        Ok(argnums.iter().map(|&i| grads[i].clone()).collect())
    }
    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(crate::transforms::autodiff::jvp(|xs| Ok(vec![self.unfused(xs)?]), inputs, tangents)?.1)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        // Batched inputs get the batch in front, so the reduced axes move by one.
        let (aligned, _) = crate::transforms::vmap::align_batched(inputs, axes)?;
        let reduce = Reduce { op: self.reduce.op, axes: self.reduce.axes.iter().map(|&a| a + 1).collect() };
        let batched = FusedReduce { program: self.program.clone(), reduce };
        let specs = batched.output_specs(&aligned)?;
        let outs = Array::siblings_on_stream(specs, Arc::new(batched), aligned, crate::device::current_stream())?;
        Ok((outs, vec![Some(0)]))
    }
}
