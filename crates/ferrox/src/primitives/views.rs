//! Layout primitives. Each is a view sharing its input's buffer, except a
//! reshape whose strides cannot express the new shape, which copies.

use super::{fresh, view, OutputSpec, Primitive};
use crate::array::ArrayData;
use crate::backend::Backend;
use crate::error::Result;

/// A new shape with the same number of elements.
#[derive(Debug, Clone, PartialEq)]
pub struct Reshape {
    /// The target shape.
    pub shape: Vec<usize>,
}

impl Primitive for Reshape {
    fn name(&self) -> &'static str {
        "reshape"
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        if let Some(layout) = x.layout.reshape_view(&self.shape) {
            return Ok(view(x, layout));
        }
        let copy = backend.copy(&x.storage, &x.layout, outputs[0].dtype)?;
        Ok(fresh(copy, &self.shape))
    }
}

/// A permutation of the axes.
#[derive(Debug, Clone, PartialEq)]
pub struct Transpose {
    /// New axis `i` is old axis `perm[i]`.
    pub perm: Vec<usize>,
}

impl Primitive for Transpose {
    fn name(&self) -> &'static str {
        "transpose"
    }
    fn is_view(&self) -> bool {
        true
    }
    fn eval(&self, _: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        Ok(view(&inputs[0], inputs[0].layout.permute(&self.perm)))
    }
}

/// A strided window (basic indexing).
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    /// First index taken along each axis.
    pub start: Vec<usize>,
    /// Number of elements taken along each axis.
    pub len: Vec<usize>,
    /// Step along each axis (negative walks backwards).
    pub step: Vec<isize>,
}

impl Primitive for Slice {
    fn name(&self) -> &'static str {
        "slice"
    }
    fn is_view(&self) -> bool {
        true
    }
    fn eval(&self, _: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        Ok(view(&inputs[0], inputs[0].layout.slice(&self.start, &self.len, &self.step)))
    }
}

/// Broadcasting to a larger shape (stride-0 view).
#[derive(Debug, Clone, PartialEq)]
pub struct BroadcastTo {
    /// The target shape.
    pub shape: Vec<usize>,
}

impl Primitive for BroadcastTo {
    fn name(&self) -> &'static str {
        "broadcast_to"
    }
    fn is_view(&self) -> bool {
        true
    }
    fn eval(&self, _: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let layout = inputs[0].layout.broadcast_to(&self.shape).expect("op builder checks broadcasting");
        Ok(view(&inputs[0], layout))
    }
}
