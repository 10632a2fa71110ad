//! The discrete Fourier transform (MLX's `FFT`), with its derivatives and
//! batching rule.
//!
//! The primitive is unnormalized and carries its output scale, so that
//! every `norm` mode and the inverse's `1/n` cost no extra pass. Transforms
//! are linear: the jvp applies the same transform to the tangent, and the
//! vjp applies the adjoint (in MLX's convention for complex cotangents,
//! `A^H c`): the transform in the other direction with the same scale. A
//! real forward transform keeps half the spectrum, so its adjoint halves
//! the cotangent of every frequency that stands for two (all but the zero
//! and, for an even length, the `n / 2` frequency) before the real inverse;
//! a real inverse counts those frequencies twice, so its adjoint doubles
//! them after the real forward transform (MLX's `FFT::vjp`).

use super::{fresh, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::{Backend, FftOp};
use crate::error::Result;
use crate::ops;

/// The transform `op` over `axes`, times `scale`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Fft {
    /// Direction, and which side is real.
    pub op: FftOp,
    /// The transformed axes (distinct); a real transform's real axis is the last.
    pub axes: Vec<usize>,
    /// For a real transform, the real signal's length along the last axis
    /// (the input's for `RealForward`, the output's for `RealInverse`);
    /// 0 for complex transforms.
    pub real_len: usize,
    /// The factor applied to the unnormalized transform.
    pub scale: f64,
}

impl Fft {
    /// The output shape for an input of `shape`, or why the input does not fit.
    fn output_shape(&self, shape: &[usize]) -> std::result::Result<Vec<usize>, String> {
        let mut seen = vec![false; shape.len()];
        for &ax in &self.axes {
            if ax >= shape.len() || std::mem::replace(&mut seen[ax], true) {
                return Err(format!("axes {:?} of an array of shape {shape:?}.", self.axes));
            }
        }
        let mut out = shape.to_vec();
        let Some(&last) = self.axes.last() else { return Err("no axes.".into()) };
        match self.op {
            FftOp::Forward | FftOp::Inverse => {}
            FftOp::RealForward if shape[last] == self.real_len => out[last] = self.real_len / 2 + 1,
            FftOp::RealInverse if shape[last] == self.real_len / 2 + 1 => out[last] = self.real_len,
            _ => return Err(format!("a real signal of length {} along axis {last} of {shape:?}.", self.real_len)),
        }
        if self.axes.iter().any(|&ax| out[ax] == 0 || shape[ax] == 0) {
            return Err(format!("empty transformed axis in {shape:?}."));
        }
        Ok(out)
    }

    /// The same transform kind `op` with this one's axes, length and scale.
    fn with_op(&self, op: FftOp) -> Fft {
        Fft { op, ..self.clone() }
    }

    /// `self` applied to `x` as a graph node.
    fn apply(&self, x: &Array) -> Result<Array> {
        let shape = self.output_shape(x.shape()).map_err(|m| super::mismatch("FFT", m))?;
        Array::from_primitive(shape, self.op.output_dtype(), self.clone(), vec![x.clone()])
    }

    /// The weight of each kept frequency of a real spectrum along the last
    /// axis, shaped to broadcast against a spectrum of `ndim` axes: `edge`
    /// for the zero frequency and (even lengths) the `n / 2` one, `middle`
    /// for the frequencies that stand for two.
    fn frequency_weights(&self, ndim: usize, edge: f32, middle: f32) -> Result<Array> {
        let (n, last) = (self.real_len, *self.axes.last().expect("a transform has axes"));
        let m = n / 2 + 1;
        let weights: Vec<f32> =
            (0..m).map(|k| if k == 0 || (n % 2 == 0 && k == m - 1) { edge } else { middle }).collect();
        let mut shape = vec![1; ndim];
        shape[last] = m;
        Array::from_slice(&weights, &shape)
    }
}

impl Primitive for Fft {
    fn name(&self) -> &'static str {
        "FFT"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity("FFT", inputs, 1)?;
        super::same_dtype("FFT", inputs, self.op.input_dtype())?;
        let shape = self.output_shape(inputs[0].shape()).map_err(|m| super::mismatch("FFT", m))?;
        super::one_output(shape, self.op.output_dtype())
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        let out = backend.fft(self.op, &x.storage, &x.layout, &self.axes, self.scale, &outputs[0].shape)?;
        Ok(fresh(out, &outputs[0].shape))
    }
    fn vjp(&self, _: &[Array], _: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        let c = &cotangents[0];
        let dx = match self.op {
            FftOp::Forward => self.with_op(FftOp::Inverse).apply(c)?,
            FftOp::Inverse => self.with_op(FftOp::Forward).apply(c)?,
            FftOp::RealForward => {
                let halved = ops::multiply(c, &self.frequency_weights(c.ndim(), 1.0, 0.5)?)?;
                self.with_op(FftOp::RealInverse).apply(&ops::astype(&halved, crate::dtype::Dtype::C64)?)?
            }
            FftOp::RealInverse => {
                let c = ops::astype(c, crate::dtype::Dtype::F32)?;
                let spectrum = self.with_op(FftOp::RealForward).apply(&c)?;
                ops::multiply(&spectrum, &self.frequency_weights(c.ndim(), 1.0, 2.0)?)?
            }
        };
        Ok(vec![dx])
    }
    fn jvp(&self, _: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let t = ops::astype(&tangents[0], self.op.input_dtype())?;
        Ok(vec![self.apply(&t)?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        let p = Fft { axes: self.axes.iter().map(|a| a + 1).collect(), ..self.clone() };
        super::batched(p.apply(&x)?)
    }
}
