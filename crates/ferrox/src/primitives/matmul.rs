//! Batched matrix product.

use super::{fresh, OutputSpec, Primitive};
use crate::array::ArrayData;
use crate::backend::Backend;
use crate::error::Result;

/// `a @ b` for inputs of rank ≥ 2 whose batch dims broadcast together.
#[derive(Debug, Clone, PartialEq)]
pub struct Matmul;

impl Primitive for Matmul {
    fn name(&self) -> &'static str {
        "matmul"
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
}
