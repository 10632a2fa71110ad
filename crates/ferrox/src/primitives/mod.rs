//! Graph primitives: one type per kind of node. A primitive knows its name,
//! its parameters (serializable, and compared by [`PrimitiveIdentity`] for
//! compile and export), its output shapes and dtypes for given inputs, and
//! how to evaluate itself by calling its device's [`Backend`]. Ops in
//! [`crate::ops`] validate inputs and infer output shapes and dtypes before
//! creating a primitive, so `eval` never re-checks them; graphs rebuilt
//! without the ops (an imported function) are checked by
//! [`Primitive::output_specs`] instead.

mod concatenate;
mod creation;
mod custom_kernel;
mod elementwise;
mod fast;
mod fft;
mod fused;
mod gather;
mod identity;
mod linalg;
mod load;
mod matmul;
mod metal_kernel;
mod optimizer;
mod placeholder;
mod random;
mod reduction;
mod scan;
mod softmax;
mod sort;
mod views;

pub use concatenate::Concatenate;
pub use creation::{Arange, Eye, Full};
pub use custom_kernel::CustomKernel;
pub use elementwise::{AsType, Binary, Select, Unary};
pub use fast::{
    Attention, AttentionVjp, CrossEntropy, CrossEntropyVjp, LayerNorm, LayerNormVjp, RmsNorm, RmsNormVjp, Rope,
};
pub use fft::Fft;
pub use fused::{Fused, FusedReduce};
pub use gather::{Gather, Scatter};
pub(crate) use identity::opaque_primitive;
pub use identity::{decode, PrimitiveIdentity, TAGS};
pub(crate) use linalg::apply as linalg_apply;
pub use linalg::{Linalg, PivotPermutation};
pub use load::Load;
pub use matmul::{AddMatmul, Matmul};
pub use metal_kernel::{metal_kernel_call, no_metal, MetalKernel};
pub use optimizer::OptimizerUpdate;
pub(crate) use placeholder::Placeholder;
pub use random::RandomBits;
pub(crate) use reduction::reduce_dtype;
pub use reduction::{ArgReduce, Reduce};
pub use scan::Scan;
pub use softmax::{LogSumExp, Softmax};
pub use sort::{ArgPartition, ArgSort, Partition, SearchSorted, Sort};
pub use views::{
    AsStrided, BroadcastAgainst, BroadcastTo, Contiguous, Depends, Identity, Refusal, RefuseGradient, Reshape,
    ShapeRule, Slice, SliceUpdate, StopGradient, Transpose, View,
};

use crate::array::{Array, ArrayData};
use crate::backend::{Backend, Storage};
use crate::dtype::Dtype;
use crate::error::Result;
use crate::shape::Layout;
use std::fmt;
use std::sync::Arc;

/// Shape and dtype of one output of a primitive.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutputSpec {
    /// The output's shape.
    pub shape: Vec<usize>,
    /// The output's dtype.
    pub dtype: Dtype,
}

impl OutputSpec {
    /// The shape and dtype of `a`.
    pub fn of(a: &Array) -> OutputSpec {
        OutputSpec { shape: a.shape().to_vec(), dtype: a.dtype() }
    }
}

/// A kind of graph node.
pub trait Primitive: Send + Sync + fmt::Debug + PrimitiveIdentity {
    /// The primitive's name (MLX's, where MLX has one).
    fn name(&self) -> &'static str;

    /// How graph drawings (`export_to_dot`) label the node: the name, or
    /// for compiled nodes the names of their parts as MLX writes them
    /// (`"CompiledBroadcastMultiplyAdd"`).
    fn label(&self) -> String {
        self.name().to_string()
    }

    /// Whether outputs always share their input's buffer (no allocation).
    fn is_view(&self) -> bool {
        false
    }

    /// The input whose buffer this node can compute an output into (MLX's
    /// buffer donation), given the evaluated inputs: one with the output's
    /// dtype and shape, row-contiguous ([`donates_to`]). The
    /// scheduler donates it when nothing else holds the input or its
    /// buffer, and calls [`Primitive::eval_donated`]. `None` by default.
    fn donor(&self, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Option<usize> {
        let _ = (inputs, outputs);
        None
    }

    /// [`Primitive::eval`] over the buffer of input `donor` (the one
    /// [`Primitive::donor`] named), which the scheduler made this call's
    /// alone: `inputs[donor].storage` is its only handle.
    fn eval_donated(
        &self,
        backend: &dyn Backend,
        inputs: &mut [ArrayData],
        donor: usize,
        outputs: &[OutputSpec],
    ) -> Result<Vec<ArrayData>> {
        let _ = donor;
        self.eval(backend, inputs, outputs)
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

    /// The shape and dtype of each output for `inputs`, checked as the op
    /// builders check them (so that `eval` may trust them), without
    /// evaluating anything. Shapeless export and import rebuild graphs
    /// with it. Primitives whose outputs do not follow from their inputs
    /// (creation from parameters alone) return an error.
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        let _ = inputs;
        Err(crate::error::Error::invalid(self.name(), "cannot infer its output shapes from its inputs."))
    }

    /// Whether the parameters were computed from the traced input shapes
    /// and are only right for them (a slice's window, a strided view):
    /// shapeless export refuses such primitives, as MLX's shapeless
    /// compile does.
    fn fixes_input_shapes(&self) -> bool {
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

/// Transform rules of a primitive without inputs: nothing to differentiate,
/// a zero tangent, never batched.
macro_rules! no_input_rules {
    () => {
        fn vjp(&self, _: &[Array], _: &[Array], _: &[Array], _: &[usize]) -> Result<Vec<Array>> {
            Ok(vec![])
        }
        fn jvp(&self, _: &[Array], outputs: &[Array], _: &[Array]) -> Result<Vec<Array>> {
            Ok(vec![crate::ops::zeros_like(&outputs[0])?])
        }
        fn vmap(&self, _: &[Array], _: &[Option<usize>]) -> Result<$crate::primitives::Batched> {
            $crate::primitives::unbatchable(self.name())
        }
    };
}
pub(crate) use no_input_rules;

/// One output of `shape` and `dtype` (for [`Primitive::output_specs`]).
pub(crate) fn one_output(shape: Vec<usize>, dtype: Dtype) -> Result<Vec<OutputSpec>> {
    Ok(vec![OutputSpec { shape, dtype }])
}

/// Checks that a primitive got `n` inputs.
pub(crate) fn arity(name: &'static str, inputs: &[Array], n: usize) -> Result<()> {
    if inputs.len() == n {
        Ok(())
    } else {
        Err(mismatch(name, format!("takes {n} inputs, got {}.", inputs.len())))
    }
}

/// Checks that every input has `dtype`.
pub(crate) fn same_dtype(name: &'static str, inputs: &[Array], dtype: Dtype) -> Result<()> {
    match inputs.iter().find(|x| x.dtype() != dtype) {
        Some(x) => Err(mismatch(name, format!("inputs must share dtype {dtype}, got {}.", x.dtype()))),
        None => Ok(()),
    }
}

/// The error for inputs that the primitive's parameters do not fit.
pub(crate) fn mismatch(name: &'static str, msg: impl Into<String>) -> crate::error::Error {
    crate::error::Error::invalid(name, msg)
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

/// Whether input `x` can give its buffer to an output of `spec`: the same
/// dtype and shape, and row-contiguous (the output's own order).
pub(crate) fn donates_to(x: &ArrayData, spec: &OutputSpec) -> bool {
    x.storage.dtype() == spec.dtype && x.layout.shape == spec.shape && x.layout.is_row_contiguous()
}

/// The storage of a donated input (see [`Primitive::eval_donated`]),
/// writable: the scheduler left it no other handle.
pub(crate) fn donated_storage(x: &mut ArrayData) -> &mut Storage {
    Arc::get_mut(&mut x.storage).expect("the scheduler donates a buffer nothing else holds")
}

/// A view: the input's buffer under a new layout (one output).
pub fn view(input: &ArrayData, layout: Layout) -> Vec<ArrayData> {
    vec![ArrayData { storage: input.storage.clone(), layout }]
}

mod convolution;
pub use convolution::Convolution;
