//! Softmax and log-sum-exp over the last axis as fused primitives (MLX's
//! `Softmax` and `LogSumExp`): one row kernel per backend instead of a
//! chain of max, subtract, exp, sum and divide passes.

use super::fast::eval_fused;
use super::{Batched, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::{Backend, FastOp};
use crate::error::Result;
use crate::ops;
use crate::transforms::vmap;

/// `softmax(x)` over the last axis. Input: x (a real float dtype).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Softmax {
    /// MLX's flag for computing half types in float32; the kernels always
    /// do, so it only distinguishes the primitive.
    pub precise: bool,
}

/// `log(sum(exp(x)))` over the last axis, kept as an axis of extent 1.
/// Input: x (a real float dtype).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LogSumExp;

/// The batched output of a last-axis primitive: the batch axis moved to the
/// front (never the reduced axis, which stays last).
fn vmap_rows(prim: impl Primitive + Clone + 'static, input: &Array, axis: Option<usize>) -> Result<Batched> {
    let x = match axis {
        Some(a) => vmap::batch_to_front(input, a)?,
        None => input.clone(),
    };
    let spec = prim.output_specs(std::slice::from_ref(&x))?;
    let out = Array::siblings_from_primitive(spec, prim, vec![x])?;
    Ok((out, vec![axis.map(|_| 0)]))
}

impl Primitive for Softmax {
    fn name(&self) -> &'static str {
        "Softmax"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 1)?;
        Ok(vec![OutputSpec::of(&inputs[0])])
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        eval_fused(backend, FastOp::Softmax, inputs, outputs)
    }

    fn vjp(&self, _: &[Array], outputs: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        // s * (g - sum(s * g)) along the row.
        let s = &outputs[0];
        let sg = ops::multiply(s, &cotangents[0])?;
        let total = ops::sum(&sg, Some(&[-1]), true)?;
        Ok(vec![ops::subtract(&sg, &ops::multiply(s, &total)?)?])
    }

    fn jvp(&self, _: &[Array], outputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let s = &outputs[0];
        let st = ops::multiply(s, &tangents[0])?;
        let total = ops::sum(&st, Some(&[-1]), true)?;
        Ok(vec![ops::subtract(&st, &ops::multiply(s, &total)?)?])
    }

    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        vmap_rows(self.clone(), &inputs[0], axes[0])
    }
}

impl Primitive for LogSumExp {
    fn name(&self) -> &'static str {
        "LogSumExp"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 1)?;
        let mut shape = inputs[0].shape().to_vec();
        if let Some(last) = shape.last_mut() {
            *last = 1;
        }
        Ok(vec![OutputSpec { shape, dtype: inputs[0].dtype() }])
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        eval_fused(backend, FastOp::LogSumExp, inputs, outputs)
    }

    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![ops::multiply(&cotangents[0], &ops::softmax(&inputs[0], Some(&[-1]), true)?)?])
    }

    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let s = ops::softmax(&inputs[0], Some(&[-1]), true)?;
        Ok(vec![ops::sum(&ops::multiply(&s, &tangents[0])?, Some(&[-1]), true)?])
    }

    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        vmap_rows(self.clone(), &inputs[0], axes[0])
    }
}
