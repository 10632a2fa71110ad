//! A user's CUDA kernel as a graph node ([`crate::ops::custom_kernel`]).

use super::{opaque_primitive, Batched, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::{Backend, KernelLaunch, Storage};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::Layout;
use std::sync::Arc;

/// MLX's `CustomKernel`: runs [`KernelLaunch`] on the inputs. It has no
/// derivative and no batching rule (as in MLX), and holds user code, so
/// export refuses it.
#[derive(Debug, Clone)]
pub struct CustomKernel {
    /// The kernel and how to launch it.
    pub launch: KernelLaunch,
    /// Whether strided inputs are copied to row-contiguous ones first.
    pub ensure_row_contiguous: bool,
    /// The dtype of each input (a generated kernel's signature fixes them).
    pub input_dtypes: Vec<Dtype>,
    /// The shape and dtype of each output.
    pub outputs: Vec<OutputSpec>,
}

/// The error for a transform MLX does not implement for custom kernels
/// (CUDA's and Metal's).
pub(super) fn not_implemented(transform: &'static str) -> Error {
    Error::invalid(transform, "Not implemented for CustomKernel.")
}

impl Primitive for CustomKernel {
    fn name(&self) -> &'static str {
        "CustomKernel"
    }

    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, self.input_dtypes.len())?;
        for (i, (x, &d)) in inputs.iter().zip(&self.input_dtypes).enumerate() {
            if x.dtype() != d {
                return Err(super::mismatch(self.name(), format!("input {i} must be {d}, got {}.", x.dtype())));
            }
        }
        Ok(self.outputs.clone())
    }

    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let args: Vec<(Arc<Storage>, Layout)> = inputs
            .iter()
            .map(|x| {
                if self.ensure_row_contiguous && !x.layout.is_row_contiguous() {
                    let copy = backend.copy(&x.storage, &x.layout, x.storage.dtype())?;
                    Ok((Arc::new(copy), Layout::contiguous(&x.layout.shape)))
                } else {
                    Ok((x.storage.clone(), x.layout.clone()))
                }
            })
            .collect::<Result<_>>()?;
        let refs: Vec<(&Storage, &Layout)> = args.iter().map(|(s, l)| (s.as_ref(), l)).collect();
        let specs: Vec<(Dtype, usize)> = outputs.iter().map(|o| (o.dtype, crate::shape::numel(&o.shape))).collect();
        let outs = backend.custom_kernel(&self.launch, &refs, &specs)?;
        Ok(outs
            .into_iter()
            .zip(outputs)
            .map(|(s, o)| ArrayData { storage: Arc::new(s), layout: Layout::contiguous(&o.shape) })
            .collect())
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

opaque_primitive!(CustomKernel);
