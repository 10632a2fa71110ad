//! Graph primitives: one type per kind of node. A primitive knows its name,
//! its parameters (`Debug` shows them; equality for compile's
//! common-subexpression pass compares them) and how to evaluate itself by
//! calling its device's [`Backend`]. Ops in [`crate::ops`] validate inputs
//! and infer output shapes and dtypes before creating a primitive, so
//! `eval` never re-checks them.

mod concatenate;
mod creation;
mod elementwise;
mod gather;
mod load;
mod matmul;
mod random;
mod reduction;
mod scan;
mod sort;
mod views;

pub use concatenate::Concatenate;
pub use creation::{Arange, Eye, Full};
pub use elementwise::{AsType, Binary, Select, Unary};
pub use gather::{Gather, Scatter};
pub use load::Load;
pub use matmul::Matmul;
pub use random::RandomBits;
pub use reduction::{ArgReduce, Reduce};
pub use scan::Scan;
pub use sort::{ArgPartition, ArgSort, Partition, SearchSorted, Sort};
pub use views::{
    AsStrided, BroadcastTo, Contiguous, Depends, Identity, Reshape, Slice, SliceUpdate, StopGradient, Transpose, View,
};

use crate::array::{Array, ArrayData};
use crate::backend::{Backend, Storage};
use crate::dtype::Dtype;
use crate::error::Result;
use crate::shape::Layout;
use std::fmt;
use std::sync::Arc;

/// Shape and dtype of one output of a primitive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputSpec {
    /// The output's shape.
    pub shape: Vec<usize>,
    /// The output's dtype.
    pub dtype: Dtype,
}

/// A kind of graph node.
pub trait Primitive: Send + Sync + fmt::Debug {
    /// The primitive's name (MLX's, where MLX has one).
    fn name(&self) -> &'static str;

    /// Whether outputs always share their input's buffer (no allocation).
    fn is_view(&self) -> bool {
        false
    }

    /// Whether derivatives never flow through this node (`stop_gradient`):
    /// gradient traces then do not look behind it.
    fn blocks_derivatives(&self) -> bool {
        false
    }

    /// Whether the backend accepts a single host element as an input in
    /// place of device data (passed to the kernel by value), so that Python
    /// scalars need no transfer to the GPU.
    fn reads_host_scalars(&self) -> bool {
        false
    }

    /// Computes the outputs from evaluated inputs (already on `backend`'s device).
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>>;

    /// Reverse mode: the cotangents of the inputs listed in `argnums`, given
    /// one cotangent per output. Written with ops, so it can be differentiated again.
    fn vjp(&self, inputs: &[Array], outputs: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>>;

    /// Forward mode: the tangent of each output, given one tangent per input.
    fn jvp(&self, inputs: &[Array], outputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>>;

    /// Batching: the outputs for a whole batch, given inputs that carry an
    /// optional batch axis each (at least one is batched), with the batch
    /// axes of the outputs.
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched>;
}

/// Outputs of a batching rule and the batch axis of each.
pub type Batched = (Vec<Array>, Vec<Option<usize>>);

/// The single batched input of a one-input primitive, batch axis first.
pub(crate) fn front(inputs: &[Array], axes: &[Option<usize>]) -> Result<Array> {
    crate::transforms::vmap::batch_to_front(&inputs[0], axes[0].expect("a batching rule runs on batched inputs"))
}

/// One output batched along axis 0.
pub(crate) fn batched(out: Array) -> Result<Batched> {
    Ok((vec![out], vec![Some(0)]))
}

/// The error for primitives without inputs, which are never batched.
pub(crate) fn unbatchable(name: &'static str) -> Result<Batched> {
    Err(crate::error::Error::invalid(name, "has no inputs to batch"))
}

/// A scalar constant with the dtype of `like` (for derivative formulas).
pub(crate) fn constant(value: f64, like: &Array) -> Array {
    Array::scalar_of(crate::element::Scalar::Float(value), like.dtype())
}

/// A freshly computed, row-contiguous output.
pub(crate) fn fresh(storage: Storage, shape: &[usize]) -> Vec<ArrayData> {
    vec![ArrayData { storage: Arc::new(storage), layout: Layout::contiguous(shape) }]
}

/// A view: the input's buffer under a new layout (one output).
pub fn view(input: &ArrayData, layout: Layout) -> Vec<ArrayData> {
    vec![ArrayData { storage: input.storage.clone(), layout }]
}
