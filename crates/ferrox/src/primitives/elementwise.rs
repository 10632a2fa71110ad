//! Elementwise primitives: unary and binary maps, select and casts.

use super::{constant, fresh, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::{Backend, BinaryOp, UnaryOp};
use crate::dtype::Dtype;
use crate::error::Result;
use crate::ops;
use crate::shape::Layout;

fn broadcast(input: &ArrayData, shape: &[usize]) -> Layout {
    input.layout.broadcast_to(shape).expect("op builders check broadcasting")
}

/// `1` where `mask`, else `0`, in the dtype of `like`.
fn indicator(mask: Result<Array>, like: &Array) -> Result<Array> {
    ops::astype(&mask?, like.dtype())
}

/// A unary elementwise function; output dtype equals the input dtype.
#[derive(Debug, Clone, PartialEq)]
pub struct Unary(pub UnaryOp);

impl Unary {
    /// d out / d x, as an array shaped like `x`.
    fn derivative(&self, x: &Array, out: &Array) -> Result<Array> {
        let one = || constant(1.0, x);
        match self.0 {
            UnaryOp::Negative => ops::negative(&ops::ones_like(x)?),
            UnaryOp::Abs => {
                let pos = indicator(ops::greater(x, &ops::zeros_like(x)?), x)?;
                let neg = indicator(ops::less(x, &ops::zeros_like(x)?), x)?;
                ops::subtract(&pos, &neg)
            }
            UnaryOp::Exp => Ok(out.clone()),
            UnaryOp::Log => ops::divide(&one(), x),
            UnaryOp::Sqrt => ops::divide(&constant(0.5, x), out),
            UnaryOp::Sin => ops::cos(x),
            UnaryOp::Cos => ops::negative(&ops::sin(x)?),
            UnaryOp::Tanh => ops::subtract(&one(), &ops::multiply(out, out)?),
            UnaryOp::Sigmoid => ops::multiply(out, &ops::subtract(&one(), out)?),
        }
    }
}

impl Primitive for Unary {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        Ok(fresh(backend.unary(self.0, &x.storage, &x.layout)?, &outputs[0].shape))
    }
    fn vjp(&self, inputs: &[Array], outputs: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![ops::multiply(&cotangents[0], &self.derivative(&inputs[0], &outputs[0])?)?])
    }
    fn jvp(&self, inputs: &[Array], outputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::multiply(&tangents[0], &self.derivative(&inputs[0], &outputs[0])?)?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        super::batched(Array::from_primitive(x.shape().to_vec(), x.dtype(), self.clone(), vec![x])?)
    }
}

/// A binary elementwise function with broadcasting; inputs share a dtype.
#[derive(Debug, Clone, PartialEq)]
pub struct Binary(pub BinaryOp);

impl Binary {
    /// The partial derivatives (d out / d a, d out / d b), broadcast to the output.
    fn partials(&self, a: &Array, b: &Array, out: &Array) -> Result<(Array, Array)> {
        let ones = || ops::ones_like(out);
        Ok(match self.0 {
            BinaryOp::Add => (ones()?, ones()?),
            BinaryOp::Subtract => (ones()?, ops::negative(&ones()?)?),
            BinaryOp::Multiply => (ops::multiply(b, &ones()?)?, ops::multiply(a, &ones()?)?),
            BinaryOp::Divide => {
                let inv = ops::divide(&constant(1.0, b), b)?;
                (ops::multiply(&inv, &ones()?)?, ops::negative(&ops::multiply(out, &inv)?)?)
            }
            BinaryOp::Power => {
                // d/da a^b = b a^(b-1); d/db a^b = a^b ln a (0 where a == 0).
                let da = ops::multiply(b, &ops::power(a, &ops::subtract(b, &constant(1.0, b))?)?)?;
                let safe_log =
                    ops::where_(&ops::greater(a, &ops::zeros_like(a)?)?, &ops::log(a)?, &ops::zeros_like(a)?)?;
                (ops::multiply(&da, &ones()?)?, ops::multiply(out, &safe_log)?)
            }
            BinaryOp::Maximum => (indicator(ops::greater_equal(a, b), out)?, indicator(ops::less(a, b), out)?),
            BinaryOp::Minimum => (indicator(ops::less_equal(a, b), out)?, indicator(ops::greater(a, b), out)?),
            // Comparisons are piecewise constant.
            _ => (ops::zeros_like(out)?, ops::zeros_like(out)?),
        })
    }
}

impl Primitive for Binary {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn reads_host_scalars(&self) -> bool {
        true
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let shape = &outputs[0].shape;
        let (a, b) = (&inputs[0], &inputs[1]);
        let out = backend.binary(self.0, &a.storage, &broadcast(a, shape), &b.storage, &broadcast(b, shape))?;
        Ok(fresh(out, shape))
    }
    fn vjp(&self, inputs: &[Array], outputs: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        if self.0.is_comparison() {
            return argnums.iter().map(|&i| ops::zeros_like(&inputs[i])).collect();
        }
        let (da, db) = self.partials(&inputs[0], &inputs[1], &outputs[0])?;
        argnums
            .iter()
            .map(|&i| {
                let d = if i == 0 { &da } else { &db };
                ops::sum_to_shape(&ops::multiply(&cotangents[0], d)?, inputs[i].shape())
            })
            .collect()
    }
    fn jvp(&self, inputs: &[Array], outputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        if self.0.is_comparison() {
            return Ok(vec![ops::zeros_like(&outputs[0])?]);
        }
        let (da, db) = self.partials(&inputs[0], &inputs[1], &outputs[0])?;
        let t = ops::add(&ops::multiply(&tangents[0], &da)?, &ops::multiply(&tangents[1], &db)?)?;
        Ok(vec![ops::astype(&t, outputs[0].dtype())?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let (x, _) = crate::transforms::vmap::align_batched(inputs, axes)?;
        super::batched(ops::binary_op(self.0, &x[0], &x[1])?)
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
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let (cond, cot) = (&inputs[0], &cotangents[0]);
        let zeros = ops::zeros_like(cot)?;
        argnums
            .iter()
            .map(|&i| match i {
                0 => ops::zeros_like(cond),
                1 => ops::sum_to_shape(&ops::where_(cond, cot, &zeros)?, inputs[1].shape()),
                _ => ops::sum_to_shape(&ops::where_(cond, &zeros, cot)?, inputs[2].shape()),
            })
            .collect()
    }
    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::where_(&inputs[0], &tangents[1], &tangents[2])?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let (x, _) = crate::transforms::vmap::align_batched(inputs, axes)?;
        super::batched(ops::where_(&x[0], &x[1], &x[2])?)
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
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![ops::astype(&cotangents[0], inputs[0].dtype())?])
    }
    fn jvp(&self, _: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::astype(&tangents[0], self.0)?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        super::batched(ops::astype(&super::front(inputs, axes)?, self.0)?)
    }
}
