//! Reductions over axes and arg-reductions along one axis.

use super::{fresh, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::{ArgReduceOp, Backend, ReduceOp};
use crate::dtype::Dtype;
use crate::error::Result;
use crate::ops;

impl Reduce {
    /// The output of this reduction of an input of `shape` and `dtype`
    /// (reduced axes kept with extent 1), after checking the axes.
    pub(crate) fn check(&self, shape: &[usize], dtype: Dtype) -> Result<Vec<OutputSpec>> {
        check_axes(self.name(), &self.axes, shape.len())?;
        if matches!(self.op, ReduceOp::Max | ReduceOp::Min) && self.axes.iter().any(|&i| shape[i] == 0) {
            return Err(super::mismatch(self.name(), "Cannot reduce a zero size axis."));
        }
        let mut kept = shape.to_vec();
        for &a in &self.axes {
            kept[a] = 1;
        }
        super::one_output(kept, reduce_dtype(self.op, dtype))
    }

    fn axes_isize(&self) -> Vec<isize> {
        self.axes.iter().map(|&a| a as isize).collect()
    }

    /// For each element, the product of the other elements it is reduced
    /// with: the exclusive products from the left times those from the
    /// right, so zeros give exact derivatives (out / x would be NaN).
    fn product_of_the_others(&self, x: &Array) -> Result<Array> {
        if x.size() == 0 {
            return ops::zeros_like(x);
        }
        let nd = x.ndim();
        let kept: Vec<usize> = (0..nd).filter(|a| !self.axes.contains(a)).collect();
        let order: Vec<isize> = kept.iter().chain(&self.axes).map(|&a| a as isize).collect();
        let moved = ops::transpose(x, Some(&order))?;
        let mut rows: Vec<isize> = kept.iter().map(|&a| x.shape()[a] as isize).collect();
        rows.push(-1);
        let flat = ops::reshape(&moved, &rows)?;
        let left = ops::cumprod(&flat, Some(-1), false, false)?;
        let right = ops::cumprod(&flat, Some(-1), true, false)?;
        let others = ops::reshape(
            &ops::multiply(&left, &right)?,
            &moved.shape().iter().map(|&d| d as isize).collect::<Vec<_>>(),
        )?;
        let mut inverse = vec![0isize; nd];
        for (i, &a) in order.iter().enumerate() {
            inverse[a as usize] = i as isize;
        }
        ops::transpose(&others, Some(&inverse))
    }

    /// d out / d x broadcast to the input shape (out keeps reduced axes).
    fn derivative(&self, x: &Array, out: &Array) -> Result<Array> {
        let out_b = ops::broadcast_to(out, x.shape())?;
        match self.op {
            ReduceOp::Sum => ops::ones_like(x),
            ReduceOp::Prod => self.product_of_the_others(x),
            ReduceOp::Max | ReduceOp::Min => {
                // Ties share the derivative equally.
                let mask = ops::astype(&ops::equal(x, &out_b)?, x.dtype())?;
                let count = ops::sum(&mask, Some(&self.axes_isize()), true)?;
                ops::divide(&mask, &count)
            }
        }
    }
}

/// The output dtype of a reduction of `dtype`: as MLX, sums and products of
/// narrow integers accumulate in 32 bits.
pub(crate) fn reduce_dtype(op: ReduceOp, dtype: Dtype) -> Dtype {
    match (op, dtype) {
        (ReduceOp::Sum | ReduceOp::Prod, Dtype::Bool | Dtype::I8 | Dtype::I16) => Dtype::I32,
        (ReduceOp::Sum | ReduceOp::Prod, Dtype::U8 | Dtype::U16) => Dtype::U32,
        (_, d) => d,
    }
}

/// Checks that `axes` are increasing and below `ndim`.
fn check_axes(name: &'static str, axes: &[usize], ndim: usize) -> Result<()> {
    if axes.iter().any(|&a| a >= ndim) || axes.windows(2).any(|w| w[0] >= w[1]) {
        return Err(super::mismatch(name, format!("axes {axes:?} of a {ndim}-dimensional input.")));
    }
    Ok(())
}

/// Reduces `axes` (sorted, unique); the output keeps them with extent 1.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 1)?;
        self.check(inputs[0].shape(), inputs[0].dtype())
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        let out = backend.reduce(self.op, &x.storage, &x.layout, &self.axes, outputs[0].dtype)?;
        Ok(fresh(out, &outputs[0].shape))
    }
    fn vjp(&self, inputs: &[Array], outputs: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        let x = &inputs[0];
        let c = ops::broadcast_to(&cotangents[0], x.shape())?;
        // Complex: the conjugate derivative (MLX's convention; see Unary's vjp).
        let d = self.derivative(x, &outputs[0])?;
        let d = if x.dtype().is_complex() { ops::conj(&d)? } else { d };
        Ok(vec![ops::multiply(&c, &d)?])
    }
    fn jvp(&self, inputs: &[Array], outputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let weighted = ops::multiply(&tangents[0], &self.derivative(&inputs[0], &outputs[0])?)?;
        Ok(vec![ops::sum(&weighted, Some(&self.axes_isize()), true)?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        let shifted: Vec<isize> = self.axes.iter().map(|&a| a as isize + 1).collect();
        let out = match self.op {
            ReduceOp::Sum => ops::sum(&x, Some(&shifted), true),
            ReduceOp::Prod => ops::prod(&x, Some(&shifted), true),
            ReduceOp::Max => ops::max(&x, Some(&shifted), true),
            ReduceOp::Min => ops::min(&x, Some(&shifted), true),
        }?;
        super::batched(out)
    }
}

/// Index of the max/min along `axis` (kept with extent 1), as uint32.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 1)?;
        let x = &inputs[0];
        check_axes(self.name(), &[self.axis], x.ndim())?;
        if x.size() == 0 {
            return Err(super::mismatch(self.name(), "Cannot reduce an empty array."));
        }
        super::one_output(ops::kept_shape(x, &[self.axis]), Dtype::U32)
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        let out = backend.arg_reduce(self.op, &x.storage, &x.layout, self.axis)?;
        Ok(fresh(out, &outputs[0].shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], _: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![ops::zeros_like(&inputs[0])?])
    }
    fn jvp(&self, _: &[Array], outputs: &[Array], _: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::zeros_like(&outputs[0])?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        let axis = Some(self.axis as isize + 1);
        let out = match self.op {
            ArgReduceOp::ArgMax => ops::argmax(&x, axis, true),
            ArgReduceOp::ArgMin => ops::argmin(&x, axis, true),
        }?;
        super::batched(out)
    }
}
