//! Elementwise primitives: unary and binary maps, select and casts.

use super::{arity, constant, fresh, mismatch, one_output, same_dtype, OutputSpec, Primitive};
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

/// A unary elementwise function (a row of [`unary_ops!`](crate::unary_ops));
/// the output dtype follows the op's kind.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Unary(pub UnaryOp);

macro_rules! unary_derivatives {
    ($($name:ident: $Var:ident, $kind:ident, $py:ident, $doc:literal, |$x:ident, $y:ident| $d:expr;)*) => {
        impl Unary {
            /// d out / d x, as an array shaped like `x` (the table's derivative column).
            fn derivative(&self, x: &Array, out: &Array) -> Result<Array> {
                match self.0 {
                    $(UnaryOp::$Var => {
                        let ($x, $y) = (x, out);
                        $d
                    })*
                }
            }
        }
    };
}

crate::unary_ops!(unary_derivatives);

/// d²/dx² of GELU's tanh approximation, written with ops so it can be
/// differentiated again: with `t = tanh(c (x + a x³))` and
/// `u' = c (1 + 3a x²)`, it is `(1 - t²) (u' + 3ac x² - x t u'²)`.
fn gelu_approx_second_derivative(x: &Array) -> Result<Array> {
    let (c, a) = ((2.0 / std::f64::consts::PI).sqrt(), 0.044715);
    let x2 = ops::square(x)?;
    let inner = ops::add(x, &ops::multiply(&constant(a, x), &ops::multiply(x, &x2)?)?)?;
    let t = ops::tanh(&ops::multiply(&constant(c, x), &inner)?)?;
    let slope =
        ops::multiply(&constant(c, x), &ops::add(&constant(1.0, x), &ops::multiply(&constant(3.0 * a, x), &x2)?)?)?;
    let curvature = ops::multiply(&constant(3.0 * a * c, x), &x2)?;
    let bend = ops::multiply(&ops::multiply(x, &t)?, &ops::square(&slope)?)?;
    let sech2 = ops::subtract(&constant(1.0, x), &ops::square(&t)?)?;
    ops::multiply(&sech2, &ops::subtract(&ops::add(&slope, &curvature)?, &bend)?)
}

impl Primitive for Unary {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        arity(self.name(), inputs, 1)?;
        let (x, kind) = (&inputs[0], self.0.kind());
        if kind.compute_dtype(x.dtype()) != Some(x.dtype()) {
            return Err(mismatch(self.name(), format!("has no kernel for {}.", x.dtype())));
        }
        one_output(x.shape().to_vec(), kind.kernel_output(x.dtype()))
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        Ok(fresh(backend.unary(self.0, &x.storage, &x.layout)?, &outputs[0].shape))
    }
    fn donor(&self, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Option<usize> {
        super::donates_to(&inputs[0], &outputs[0]).then_some(0)
    }
    fn eval_donated(
        &self,
        backend: &dyn Backend,
        inputs: &mut [ArrayData],
        _: usize,
        _: &[OutputSpec],
    ) -> Result<Vec<ArrayData>> {
        let x = &mut inputs[0];
        let layout = x.layout.clone();
        backend.unary_in_place(self.0, super::donated_storage(x), &layout)?;
        Ok(vec![x.clone()])
    }
    /// For complex inputs the vjp follows MLX's (and PyTorch's) convention:
    /// the cotangent times the conjugate derivative, so that for a real loss
    /// the gradient is `dL/dRe(z) + i dL/dIm(z)`. `conj`, `imag` and `abs`
    /// are not holomorphic and have rules of their own.
    fn vjp(&self, inputs: &[Array], outputs: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        let (x, cot) = (&inputs[0], &cotangents[0]);
        if x.dtype().is_complex() {
            let g = match self.0 {
                UnaryOp::Conj => ops::conj(cot)?,
                // The gradients w.r.t. Re(z) and Im(z): cot * z / |z|.
                UnaryOp::Abs => ops::multiply(cot, &ops::sign(x)?)?,
                UnaryOp::Imag => ops::multiply(
                    &ops::astype(cot, x.dtype())?,
                    &Array::scalar_of(crate::Scalar::Complex(0.0, 1.0), x.dtype()),
                )?,
                _ => ops::multiply(cot, &ops::conj(&self.derivative(x, &outputs[0])?)?)?,
            };
            return Ok(vec![ops::astype(&g, x.dtype())?]);
        }
        let d = self.derivative(x, &outputs[0])?;
        Ok(vec![ops::astype(&ops::multiply(cot, &d)?, x.dtype())?])
    }
    fn jvp(&self, inputs: &[Array], outputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let (x, t) = (&inputs[0], &tangents[0]);
        if x.dtype().is_complex() {
            return Ok(vec![match self.0 {
                UnaryOp::Conj => ops::conj(t)?,
                UnaryOp::Imag => ops::imag(t)?,
                // |z| is real: d|z| = Re(conj(sign z) t).
                UnaryOp::Abs => ops::real(&ops::multiply(t, &ops::conj(&ops::sign(x)?)?)?)?,
                _ => ops::multiply(t, &self.derivative(x, &outputs[0])?)?,
            }]);
        }
        // In the tangent's dtype: zeros for piecewise-constant ops (not bool).
        Ok(vec![ops::multiply(t, &self.derivative(x, &outputs[0])?)?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        let dtype = self.0.kind().kernel_output(x.dtype());
        super::batched(Array::from_primitive(x.shape().to_vec(), dtype, self.clone(), vec![x])?)
    }
}

/// A binary elementwise function with broadcasting (a row of
/// [`binary_ops!`](crate::binary_ops)); inputs share a dtype.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Binary(pub BinaryOp);

/// Zero partial derivatives (piecewise-constant ops), in the output's
/// shape and the inputs' dtype.
fn zero_partials(out: &Array) -> Result<(Array, Array)> {
    Ok((constant(0.0, out), constant(0.0, out)))
}

macro_rules! binary_partials {
    ($($name:ident: $Var:ident, $kind:ident, $doc:literal, |$a:ident, $b:ident, $out:ident| $d:expr;)*) => {
        impl Binary {
            /// The partial derivatives (d out / d a, d out / d b),
            /// broadcastable to the output (the table's derivative column).
            fn partials(&self, a: &Array, b: &Array, out: &Array) -> Result<(Array, Array)> {
                match self.0 {
                    $(BinaryOp::$Var => {
                        let ($a, $b, $out) = (a, b, out);
                        Ok($d)
                    })*
                }
            }
        }
    };
}

crate::binary_ops!(binary_partials);

impl Primitive for Binary {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        arity(self.name(), inputs, 2)?;
        let (dtype, kind) = (inputs[0].dtype(), self.0.kind());
        same_dtype(self.name(), inputs, dtype)?;
        if kind.compute_dtype(dtype) != Some(dtype) {
            return Err(mismatch(self.name(), format!("has no kernel for {dtype}.")));
        }
        let shape = ops::broadcast_pair(self.name(), inputs[0].shape(), inputs[1].shape())?;
        one_output(shape, kind.kernel_output(dtype))
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
    fn donor(&self, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Option<usize> {
        (0..2).find(|&i| super::donates_to(&inputs[i], &outputs[0]))
    }
    fn eval_donated(
        &self,
        backend: &dyn Backend,
        inputs: &mut [ArrayData],
        donor: usize,
        outputs: &[OutputSpec],
    ) -> Result<Vec<ArrayData>> {
        let other = broadcast(&inputs[1 - donor], &outputs[0].shape);
        let (left, right) = inputs.split_at_mut(1);
        let (d, o) = if donor == 0 { (&mut left[0], &right[0]) } else { (&mut right[0], &left[0]) };
        let layout = d.layout.clone();
        backend.binary_in_place(self.0, super::donated_storage(d), &layout, &o.storage, &other, donor == 0)?;
        Ok(vec![d.clone()])
    }
    fn vjp(&self, inputs: &[Array], outputs: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        if self.0.is_comparison() {
            return argnums.iter().map(|&i| ops::zeros_like(&inputs[i])).collect();
        }
        let cot = &cotangents[0];
        // Add's and subtract's partials are 1 and -1: the cotangent passes
        // as it is or negated (the bits the product would have), with no
        // kernel for a product. Integer differences keep the products (the
        // -1 wraps like the forward op).
        let unit_partials = self.0 == BinaryOp::Add || (self.0 == BinaryOp::Subtract && cot.dtype().is_inexact());
        let partials = if unit_partials { None } else { Some(self.partials(&inputs[0], &inputs[1], &outputs[0])?) };
        argnums
            .iter()
            .map(|&i| {
                let g = match &partials {
                    // Complex: the cotangent times the conjugate partial (see Unary's vjp).
                    Some((da, db)) if cot.dtype().is_complex() => {
                        ops::multiply(cot, &ops::conj(if i == 0 { da } else { db })?)?
                    }
                    Some((da, db)) => ops::multiply(cot, if i == 0 { da } else { db })?,
                    None if i == 1 && self.0 == BinaryOp::Subtract => ops::negative(cot)?,
                    None => cot.clone(),
                };
                ops::sum_to_shape(&g, inputs[i].shape())
            })
            .collect()
    }
    fn jvp(&self, inputs: &[Array], outputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        if self.0.is_comparison() {
            // Zeros of the tangents' dtype (as MLX), not of the bool output.
            return Ok(vec![ops::zeros(outputs[0].shape(), tangents[0].dtype())?]);
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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Select;

impl Primitive for Select {
    fn name(&self) -> &'static str {
        "where"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        arity(self.name(), inputs, 3)?;
        same_dtype(self.name(), &inputs[..1], Dtype::Bool)?;
        same_dtype(self.name(), &inputs[1..], inputs[1].dtype())?;
        let xy = ops::broadcast_pair(self.name(), inputs[1].shape(), inputs[2].shape())?;
        one_output(ops::broadcast_pair(self.name(), inputs[0].shape(), &xy)?, inputs[1].dtype())
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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AsType(pub Dtype);

impl Primitive for AsType {
    fn name(&self) -> &'static str {
        "astype"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        arity(self.name(), inputs, 1)?;
        one_output(inputs[0].shape().to_vec(), self.0)
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
