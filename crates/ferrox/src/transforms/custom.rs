//! Functions with their own derivative and batching rules
//! ([`CustomFunction`]), and [`checkpoint`] (recompute in the backward pass
//! instead of keeping intermediates).
//!
//! Calling a custom function runs its forward computation as ordinary ops,
//! then adds a [`CustomTransforms`] node whose inputs are the arguments and
//! the forward outputs and whose outputs are views of the latter. The
//! transforms meet that node and call the user's rules (or, where none is
//! given, transform the forward function itself).

use super::autodiff::{jvp, vjp};
use super::vmap::vmap;
use crate::array::{Array, ArrayData};
use crate::backend::Backend;
use crate::error::Result;
use crate::ops;
use crate::primitives::{view, Batched, OutputSpec, Primitive};
use std::fmt;
use std::sync::Arc;

/// The forward function: arguments to outputs.
pub type ForwardFn = Arc<dyn Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync>;
/// A custom vjp: (primals, cotangents, outputs) to one cotangent per primal.
pub type VjpFn = Arc<dyn Fn(&[Array], &[Array], &[Array]) -> Result<Vec<Array>> + Send + Sync>;
/// A custom jvp: (primals, tangents) to one tangent per output.
pub type JvpFn = Arc<dyn Fn(&[Array], &[Array]) -> Result<Vec<Array>> + Send + Sync>;
/// A custom batching rule: (inputs, batch axes) to (outputs, output batch axes).
pub type VmapFn = Arc<dyn Fn(&[Array], &[Option<usize>]) -> Result<Batched> + Send + Sync>;

/// A function with optional custom vjp, jvp and vmap rules (MLX's
/// `custom_function`). Rules left out are derived from the forward function.
#[derive(Clone)]
pub struct CustomFunction {
    /// The forward computation.
    pub forward: ForwardFn,
    /// Reverse-mode rule.
    pub vjp: Option<VjpFn>,
    /// Forward-mode rule.
    pub jvp: Option<JvpFn>,
    /// Batching rule.
    pub vmap: Option<VmapFn>,
}

impl CustomFunction {
    /// A custom function with no rules yet.
    pub fn new(forward: impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static) -> CustomFunction {
        CustomFunction { forward: Arc::new(forward), vjp: None, jvp: None, vmap: None }
    }

    /// Calls the function: its outputs carry the custom rules.
    pub fn call(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        let outputs = (self.forward)(inputs)?;
        let specs = outputs.iter().map(|o| OutputSpec { shape: o.shape().to_vec(), dtype: o.dtype() }).collect();
        // The forward outputs only carry data: derivatives come from the rules,
        // never from differentiating the forward ops.
        let mut node_inputs = inputs.to_vec();
        for o in &outputs {
            node_inputs.push(ops::stop_gradient(o)?);
        }
        let node = CustomTransforms { function: self.clone(), num_inputs: inputs.len() };
        Ok(Array::siblings_from_primitive(specs, node, node_inputs))
    }
}

/// `fun` recomputed during the backward pass instead of keeping its
/// intermediate results alive until then (MLX's `checkpoint`).
pub fn checkpoint(fun: impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static) -> CustomFunction {
    let forward: ForwardFn = Arc::new(fun);
    let recompute = forward.clone();
    CustomFunction {
        forward,
        vjp: Some(Arc::new(move |primals, cotangents, _outputs| {
            let f = recompute.clone();
            Ok(vjp(move |x| f(x), primals, cotangents)?.1)
        })),
        jvp: None,
        vmap: None,
    }
}

/// The graph node of a custom function call (see the module docs).
pub struct CustomTransforms {
    function: CustomFunction,
    num_inputs: usize,
}

impl fmt::Debug for CustomTransforms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CustomTransforms(inputs={})", self.num_inputs)
    }
}

impl Primitive for CustomTransforms {
    fn name(&self) -> &'static str {
        "custom_function"
    }
    fn is_view(&self) -> bool {
        true
    }
    fn eval(&self, _: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        Ok(inputs[self.num_inputs..].iter().flat_map(|d| view(d, d.layout.clone())).collect())
    }
    fn vjp(&self, inputs: &[Array], outputs: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let primals = &inputs[..self.num_inputs];
        let grads = match &self.function.vjp {
            Some(rule) => rule(primals, cotangents, outputs)?,
            None => {
                let f = self.function.forward.clone();
                vjp(move |x| f(x), primals, cotangents)?.1
            }
        };
        if grads.len() != primals.len() {
            return Err(crate::error::Error::invalid(
                "custom_function",
                format!("The vjp returned {} cotangents for {} primals.", grads.len(), primals.len()),
            ));
        }
        // The forward outputs are inputs of this node only to carry data.
        argnums
            .iter()
            .map(|&i| if i < self.num_inputs { Ok(grads[i].clone()) } else { ops::zeros_like(&inputs[i]) })
            .collect()
    }
    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let (primals, tangents) = (&inputs[..self.num_inputs], &tangents[..self.num_inputs]);
        match &self.function.jvp {
            Some(rule) => rule(primals, tangents),
            None => {
                let f = self.function.forward.clone();
                Ok(jvp(move |x| f(x), primals, tangents)?.1)
            }
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        let (primals, axes) = (&inputs[..self.num_inputs], &axes[..self.num_inputs]);
        match &self.function.vmap {
            Some(rule) => rule(primals, axes),
            None => {
                let f = self.function.forward.clone();
                let in_axes: Vec<Option<isize>> = axes.iter().map(|a| a.map(|a| a as isize)).collect();
                let outs = vmap(move |x| f(x), primals, &in_axes, &[Some(0)])?;
                let n = outs.len();
                Ok((outs, vec![Some(0); n]))
            }
        }
    }
}
