//! A user's Metal kernel as a graph node. ferrox has no Metal back-end:
//! as in MLX's builds without Metal, such a node is only made while a
//! function is traced for export (so the exported graph records the
//! kernel), and evaluating it raises.

use super::custom_kernel::not_implemented;
use super::{Batched, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::Backend;
use crate::error::{Error, Result};

/// MLX's `CustomKernel` made by `metal_kernel`: the kernel's source and
/// launch, recorded for export; evaluating it raises MLX's RuntimeError.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MetalKernel {
    /// The kernel's name (`metal_kernel`'s `name`).
    pub name: String,
    /// The kernel's body.
    pub source: String,
    /// Source placed before the kernel.
    pub header: String,
    /// The names of the inputs, in order.
    pub input_names: Vec<String>,
    /// The names of the outputs, in order.
    pub output_names: Vec<String>,
    /// Threads along x, y and z.
    pub grid: [u32; 3],
    /// Threads per threadgroup along x, y and z.
    pub threadgroup: [u32; 3],
    /// Template arguments as (name, value) written as Metal reads them.
    pub template: Vec<(String, String)>,
    /// The value every output starts with, if any.
    pub init_value: Option<f32>,
    /// Whether strided inputs are copied to row-contiguous ones first.
    pub ensure_row_contiguous: bool,
    /// Whether the outputs are atomic.
    pub atomic_outputs: bool,
    /// The shape and dtype of each output.
    pub outputs: Vec<OutputSpec>,
}

impl Primitive for MetalKernel {
    fn name(&self) -> &'static str {
        "CustomKernel"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, self.input_names.len())?;
        Ok(self.outputs.clone())
    }

    fn eval(&self, _: &dyn Backend, _: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        Err(no_metal())
    }

    fn vjp(&self, _: &[Array], _: &[Array], _: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Err(not_implemented("Primitive::vjp"))
    }

    fn jvp(&self, _: &[Array], _: &[Array], _: &[Array]) -> Result<Vec<Array>> {
        Err(not_implemented("Primitive::jvp"))
    }

    fn vmap(&self, _: &[Array], _: &[Option<usize>]) -> Result<Batched> {
        Err(not_implemented("Primitive::vmap"))
    }
}

/// MLX's error for running a Metal kernel where there is no Metal.
pub fn no_metal() -> Error {
    Error::Runtime { op: "metal_kernel", msg: "No Metal back-end.".into() }
}

/// The outputs of `kernel` on `inputs`: a graph node while a function is
/// traced for export (`export_function`), else MLX's RuntimeError (there
/// is no Metal back-end to run it).
pub fn metal_kernel_call(kernel: MetalKernel, inputs: &[Array]) -> Result<Vec<Array>> {
    if !crate::export::is_export_tracing() {
        return Err(no_metal());
    }
    if inputs.len() != kernel.input_names.len() {
        return Err(Error::invalid(
            "metal_kernel",
            format!("Expected `inputs` to have size {} but got size {}.", kernel.input_names.len(), inputs.len()),
        ));
    }
    let outputs = kernel.outputs.clone();
    Array::siblings_from_primitive(outputs, kernel, inputs.to_vec())
}
