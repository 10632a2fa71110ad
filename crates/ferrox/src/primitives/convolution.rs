//! The convolution primitive (MLX's `Convolution`): one node per
//! convolution, whose derivatives are convolutions again, so higher-order
//! derivatives and batching of derivatives need no other kernel.

use super::{batched, fresh, Batched, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::{dilated, Backend, ConvParams};
use crate::error::Result;
use crate::ops;
use crate::transforms::vmap::batch_to_front;

/// A convolution of an input `(N, in..., C_in)` with filters `(C_out, k...,
/// C_in / groups)`, both of one real float dtype, giving `(N, out...,
/// C_out)`; see [`ConvParams`] for the parameters.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Convolution(pub ConvParams);

/// `shape` with every entry as `isize` (for reshapes).
fn signed(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

/// `(G * Og, k..., Cg)` filters as `(G * Cg, k..., Og)`: each group's
/// filters with input and output channels swapped (the filters of the
/// input gradient).
fn swap_filter_channels(w: &Array, groups: usize) -> Result<Array> {
    if groups == 1 {
        return ops::swapaxes(w, 0, -1);
    }
    let s = w.shape();
    let nd = s.len();
    let mut split = vec![groups as isize, (s[0] / groups) as isize];
    split.extend(signed(&s[1..]));
    let t = ops::swapaxes(&ops::reshape(w, &split)?, 1, -1)?;
    let mut merged = vec![(groups * s[nd - 1]) as isize];
    merged.extend(signed(&t.shape()[2..]));
    ops::reshape(&t, &merged)
}

/// An input `(N, in..., G * Cg)` as `(Cg, in..., G * N)`: the batch becomes
/// each group's channels (the input of the filter gradient).
fn batch_into_channels(x: &Array, groups: usize) -> Result<Array> {
    if groups == 1 {
        return ops::swapaxes(x, 0, -1);
    }
    let s = x.shape();
    let nd = s.len();
    let mut split = signed(&s[..nd - 1]);
    split.extend([groups as isize, (s[nd - 1] / groups) as isize]);
    let t = ops::swapaxes(&ops::reshape(x, &split)?, 0, -1)?;
    let mut merged = signed(&t.shape()[..nd - 1]);
    merged.push((groups * s[0]) as isize);
    ops::reshape(&t, &merged)
}

impl Convolution {
    /// The same convolution with `groups` groups.
    fn with_groups(&self, groups: usize) -> ConvParams {
        ConvParams { groups, ..self.0.clone() }
    }

    /// The cotangent of the input: the cotangent `ct` (dilated by the
    /// strides) convolved with the flipped, channel-swapped filters.
    fn input_grad(&self, x: &Array, w: &Array, ct: &Array) -> Result<Array> {
        let p = &self.0;
        if x.size() == 0 || w.size() == 0 || ct.size() == 0 {
            return ops::zeros_like(x);
        }
        let (mut lo, mut hi) = (Vec::new(), Vec::new());
        for a in 0..p.dims() {
            let (n, o) = (x.shape()[a + 1] as i64, ct.shape()[a + 1] as i64);
            lo.push(dilated(w.shape()[a + 1], p.kernel_dilation[a]) - 1 - p.padding_lo[a]);
            hi.push((n - 1) * p.input_dilation[a] + p.padding_lo[a] - (o - 1) * p.stride[a]);
        }
        let params = ConvParams {
            stride: p.input_dilation.clone(),
            padding_lo: lo,
            padding_hi: hi,
            kernel_dilation: p.kernel_dilation.clone(),
            input_dilation: p.stride.clone(),
            groups: p.groups,
            flip: !p.flip,
        };
        ops::conv_with_params(ct, &swap_filter_channels(w, p.groups)?, &params)
    }

    /// The cotangent of the filters: the input with batch and channels
    /// swapped, convolved with the cotangent as filters (strides and kernel
    /// dilation trade places).
    fn weight_grad(&self, x: &Array, w: &Array, ct: &Array) -> Result<Array> {
        let p = &self.0;
        if x.size() == 0 || w.size() == 0 || ct.size() == 0 {
            return ops::zeros_like(w);
        }
        let hi = (0..p.dims())
            .map(|a| {
                let o = ct.shape()[a + 1] as i64;
                dilated(w.shape()[a + 1], p.kernel_dilation[a]) + (o - 1) * p.stride[a]
                    - dilated(x.shape()[a + 1], p.input_dilation[a])
                    - p.padding_lo[a]
            })
            .collect();
        let params = ConvParams {
            stride: p.kernel_dilation.clone(),
            padding_lo: p.padding_lo.clone(),
            padding_hi: hi,
            kernel_dilation: p.stride.clone(),
            input_dilation: p.input_dilation.clone(),
            groups: p.groups,
            flip: false,
        };
        let g = ops::conv_with_params(&batch_into_channels(x, p.groups)?, &ops::swapaxes(ct, 0, -1)?, &params)?;
        let g = if p.flip {
            let axes: Vec<isize> = (1..=p.dims() as isize).collect();
            ops::flip(&g, Some(&axes))?
        } else {
            g
        };
        ops::swapaxes(&g, 0, -1)
    }
}

impl Primitive for Convolution {
    fn name(&self) -> &'static str {
        "Convolution"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 2)?;
        let dtype = inputs[0].dtype();
        super::same_dtype(self.name(), inputs, dtype)?;
        if !dtype.is_floating() {
            return Err(super::mismatch(self.name(), format!("needs real float operands, got {dtype}.")));
        }
        super::one_output(self.0.output_shape(self.name(), inputs[0].shape(), inputs[1].shape())?, dtype)
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let (x, w) = (&inputs[0], &inputs[1]);
        let out = backend.conv(&self.0, &x.storage, &x.layout, &w.storage, &w.layout)?;
        Ok(fresh(out, &outputs[0].shape))
    }

    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let (x, w, ct) = (&inputs[0], &inputs[1], &cotangents[0]);
        argnums.iter().map(|&i| if i == 0 { self.input_grad(x, w, ct) } else { self.weight_grad(x, w, ct) }).collect()
    }

    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let (x, w) = (&inputs[0], &inputs[1]);
        let dx = ops::conv_with_params(&tangents[0], w, &self.0)?;
        let dw = ops::conv_with_params(x, &tangents[1], &self.0)?;
        Ok(vec![ops::add(&dx, &dw)?])
    }

    /// A batched input folds into the batch axis `N`; batched filters fold
    /// into the output channels (within each group); both batched become a
    /// convolution with `groups * B` groups.
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        let (x, w) = (&inputs[0], &inputs[1]);
        let g = self.0.groups;
        let out_channels_to_front = |out: &Array, parts: &[usize], at: usize| -> Result<Array> {
            // Output `(N, out..., C)` whose channels split into `parts`,
            // part `at` being the batch, becomes `(B, N, out..., C / B)`.
            let nd = out.ndim();
            let mut split = signed(&out.shape()[..nd - 1]);
            split.extend(signed(parts));
            let y = ops::moveaxis(&ops::reshape(out, &split)?, (nd - 1 + at) as isize, 0)?;
            let mut merged = signed(&y.shape()[..nd]);
            merged.push(-1);
            ops::reshape(&y, &merged)
        };
        match (axes[0], axes[1]) {
            (Some(ax), None) => {
                let xb = batch_to_front(x, ax)?;
                let (b, n) = (xb.shape()[0], xb.shape()[1]);
                let mut flat = vec![(b * n) as isize];
                flat.extend(signed(&xb.shape()[2..]));
                let out = ops::conv_with_params(&ops::reshape(&xb, &flat)?, w, &self.0)?;
                batched(ops::unflatten(&out, 0, &[b as isize, n as isize])?)
            }
            (None, Some(aw)) => {
                // (B, G * Og, k..., Cg) -> (G * B * Og, k..., Cg): each
                // group's filters stay together.
                let wb = batch_to_front(w, aw)?;
                let (b, og) = (wb.shape()[0], wb.shape()[1] / g);
                let mut split = vec![b as isize, g as isize, og as isize];
                split.extend(signed(&wb.shape()[2..]));
                let t = ops::swapaxes(&ops::reshape(&wb, &split)?, 0, 1)?;
                let mut flat = vec![(g * b * og) as isize];
                flat.extend(signed(&wb.shape()[2..]));
                let out = ops::conv_with_params(x, &ops::reshape(&t, &flat)?, &self.0)?;
                // Channels (G, B, Og): with one group the batch leads.
                let y = if g == 1 {
                    out_channels_to_front(&out, &[b, og], 0)?
                } else {
                    out_channels_to_front(&out, &[g, b, og], 1)?
                };
                batched(y)
            }
            (Some(ax), Some(aw)) => {
                // The batch joins the channels: (N, in..., B * C_in) with
                // filters (B * C_out, ...) and B times the groups.
                let xb = batch_to_front(x, ax)?;
                let b = xb.shape()[0];
                let nd = xb.ndim();
                let xm = ops::moveaxis(&xb, 0, -2)?;
                let mut flat = signed(&xm.shape()[..nd - 2]);
                flat.push(-1);
                let wb = batch_to_front(w, aw)?;
                let mut wflat = vec![-1isize];
                wflat.extend(signed(&wb.shape()[2..]));
                let out = ops::conv_with_params(
                    &ops::reshape(&xm, &flat)?,
                    &ops::reshape(&wb, &wflat)?,
                    &self.with_groups(g * b),
                )?;
                let c_out = wb.shape()[1];
                batched(out_channels_to_front(&out, &[b, c_out], 0)?)
            }
            (None, None) => Ok((vec![ops::conv_with_params(x, w, &self.0)?], vec![None])),
        }
    }
}
