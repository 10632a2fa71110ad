//! Batched matrix product, and the product plus a bias over its last axis
//! (a linear layer, one library call on the GPU).

use super::{fresh, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::Backend;
use crate::error::Result;
use crate::ops;

fn swap_last(x: &Array) -> Result<Array> {
    ops::swapaxes(x, -1, -2)
}

/// `a @ b` for inputs of rank ≥ 2 whose batch dims broadcast together.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Matmul;

impl Primitive for Matmul {
    fn name(&self) -> &'static str {
        "matmul"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 2)?;
        super::same_dtype(self.name(), inputs, inputs[0].dtype())?;
        let (a, b) = (inputs[0].shape(), inputs[1].shape());
        let (an, bn) = (a.len(), b.len());
        if an < 2 || bn < 2 || a[an - 1] != b[bn - 2] {
            return Err(super::mismatch(self.name(), format!("cannot multiply {a:?} by {b:?}.")));
        }
        let mut shape = ops::broadcast_pair(self.name(), &a[..an - 2], &b[..bn - 2])?;
        shape.extend_from_slice(&[a[an - 2], b[bn - 1]]);
        super::one_output(shape, inputs[0].dtype())
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let out_shape = &outputs[0].shape;
        let nd = out_shape.len();
        let (a, b) = (&inputs[0], &inputs[1]);
        let batch = &out_shape[..nd - 2];
        let expand = |x: &ArrayData| {
            let s = &x.layout.shape;
            let mut target = batch.to_vec();
            target.extend_from_slice(&s[s.len() - 2..]);
            x.layout.broadcast_to(&target).expect("op builder checks batch broadcasting")
        };
        let out = backend.matmul(&a.storage, &expand(a), &b.storage, &expand(b))?;
        Ok(fresh(out, out_shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        // Complex operands enter conjugated (MLX's convention; see Unary's vjp).
        let conj_if_complex = |x: &Array| if x.dtype().is_complex() { ops::conj(x) } else { Ok(x.clone()) };
        let (a, b, c) = (&conj_if_complex(&inputs[0])?, &conj_if_complex(&inputs[1])?, &cotangents[0]);
        argnums
            .iter()
            .map(|&i| {
                if i == 1 && b.ndim() == 2 && a.ndim() > 2 {
                    // Every batch meets the same `b`: one product over all
                    // rows instead of a batch of products summed afterwards.
                    let (k, n) = (b.shape()[0], b.shape()[1]);
                    let rows: usize = a.shape()[..a.ndim() - 1].iter().product();
                    let a2 = ops::reshape_to(a, vec![rows, k])?;
                    return ops::matmul(&swap_last(&a2)?, &ops::reshape_to(c, vec![rows, n])?);
                }
                let g = if i == 0 { ops::matmul(c, &swap_last(b)?)? } else { ops::matmul(&swap_last(a)?, c)? };
                ops::sum_to_shape(&g, inputs[i].shape())
            })
            .collect()
    }
    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let (a, b) = (&inputs[0], &inputs[1]);
        Ok(vec![ops::add(&ops::matmul(&tangents[0], b)?, &ops::matmul(a, &tangents[1])?)?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let (x, _) = crate::transforms::vmap::align_batched(inputs, axes)?;
        super::batched(ops::matmul(&x[0], &x[1])?)
    }
}

/// `a @ b + bias` for `a: [..., M, K]`, `b: [K, N]` and `bias: [N]` of one
/// dtype: `addmm(bias, a, b)` as a linear layer calls it. The backend may
/// add the bias in the product's epilogue; every transform sees the
/// composed ops.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AddMatmul;

impl AddMatmul {
    /// The same value from ordinary ops (what the transforms differentiate
    /// and batch).
    fn composed(xs: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::add(&ops::matmul(&xs[0], &xs[1])?, &xs[2])?])
    }
}

impl Primitive for AddMatmul {
    fn name(&self) -> &'static str {
        "addmm"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 3)?;
        super::same_dtype(self.name(), inputs, inputs[0].dtype())?;
        let (a, b, bias) = (inputs[0].shape(), inputs[1].shape(), inputs[2].shape());
        let an = a.len();
        if an < 2 || b.len() != 2 || a[an - 1] != b[0] || bias != [b[1]] {
            return Err(super::mismatch(
                self.name(),
                format!("cannot add a bias of shape {bias:?} to the product of {a:?} and {b:?}."),
            ));
        }
        let mut shape = a[..an - 1].to_vec();
        shape.push(b[1]);
        super::one_output(shape, inputs[0].dtype())
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let out_shape = &outputs[0].shape;
        let (a, b, bias) = (&inputs[0], &inputs[1], &inputs[2]);
        let nd = out_shape.len();
        let mut b_shape = out_shape[..nd - 2].to_vec();
        b_shape.extend_from_slice(&b.layout.shape);
        let lb = b.layout.broadcast_to(&b_shape).expect("a 2-D operand broadcasts over any batch");
        let out = backend.matmul_bias(&a.storage, &a.layout, &b.storage, &lb, &bias.storage, &bias.layout)?;
        Ok(fresh(out, out_shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        super::fast::vjp_by_reference(&Self::composed, inputs, cotangents, argnums)
    }
    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        super::fast::jvp_by_reference(&Self::composed, inputs, tangents)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        super::fast::vmap_by_reference(&Self::composed, inputs, axes)
    }
}
