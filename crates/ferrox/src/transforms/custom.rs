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
use crate::error::{fmt_shape, Error, Result};
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
    /// The name errors about its rules use.
    pub name: String,
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
        CustomFunction { name: "custom_function".into(), forward: Arc::new(forward), vjp: None, jvp: None, vmap: None }
    }

    /// The same function, called `name` in errors about its rules.
    pub fn named(mut self, name: impl Into<String>) -> CustomFunction {
        self.name = name.into();
        self
    }

    /// Calls the function: its outputs carry the custom rules.
    pub fn call(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        let outputs = (self.forward)(inputs)?;
        let specs = outputs.iter().map(OutputSpec::of).collect();
        // The forward outputs only carry data: derivatives come from the rules,
        // never from differentiating the forward ops.
        let mut node_inputs = inputs.to_vec();
        for o in &outputs {
            node_inputs.push(ops::stop_gradient(o)?);
        }
        let node = CustomTransforms { function: self.clone(), num_inputs: inputs.len() };
        Array::siblings_from_primitive(specs, node, node_inputs)
    }
}

/// `fun` recomputed during the backward pass instead of keeping its
/// intermediate results alive until then (MLX's `checkpoint`).
pub fn checkpoint(fun: impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static) -> CustomFunction {
    let forward: ForwardFn = Arc::new(fun);
    let recompute = forward.clone();
    CustomFunction {
        name: "checkpoint".into(),
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

impl CustomTransforms {
    fn rule_error(&self, rule: &str, msg: String) -> Error {
        Error::invalid("custom_function", format!("The {rule} of '{}' {msg}", self.function.name))
    }

    /// Checks that a rule returned one array per entry of `like`, each with
    /// that entry's shape and dtype.
    fn check(&self, rule: &str, noun: &str, got: &[Array], like: &[Array]) -> Result<()> {
        if got.len() != like.len() {
            return Err(
                self.rule_error(rule, format!("returned {} {noun}s where {} were expected.", got.len(), like.len()))
            );
        }
        for (i, (g, l)) in got.iter().zip(like).enumerate() {
            if g.shape() != l.shape() || g.dtype() != l.dtype() {
                return Err(self.rule_error(
                    rule,
                    format!(
                        "returned a {noun} of shape {} and dtype {} at position {i}, where shape {} and dtype {} were expected.",
                        fmt_shape(g.shape()),
                        g.dtype(),
                        fmt_shape(l.shape()),
                        l.dtype()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks a batching rule's result against the forward outputs (the
    /// node's trailing inputs, possibly batched along `axes`).
    fn check_batched(
        &self,
        outs: &[Array],
        out_axes: &[Option<usize>],
        inputs: &[Array],
        axes: &[Option<usize>],
    ) -> Result<()> {
        let forward = &inputs[self.num_inputs..];
        if outs.len() != forward.len() || out_axes.len() != outs.len() {
            return Err(self.rule_error(
                "vmap rule",
                format!(
                    "returned {} outputs and {} axes for a function with {} outputs.",
                    outs.len(),
                    out_axes.len(),
                    forward.len()
                ),
            ));
        }
        let batch = inputs.iter().zip(axes).find_map(|(x, a)| a.map(|a| x.shape()[a]));
        for (i, ((o, ax), (f, f_ax))) in
            outs.iter().zip(out_axes).zip(forward.iter().zip(&axes[self.num_inputs..])).enumerate()
        {
            let mut example = f.shape().to_vec();
            if let Some(a) = f_ax {
                example.remove(*a);
            }
            let mut expected = example.clone();
            if let Some(a) = ax {
                if *a > example.len() {
                    return Err(self.rule_error(
                        "vmap rule",
                        format!("returned axis {a} for output {i}, which has {} dimensions.", o.ndim()),
                    ));
                }
                expected.insert(*a, batch.unwrap_or(0));
            }
            if o.shape() != expected.as_slice() || o.dtype() != f.dtype() {
                return Err(self.rule_error(
                    "vmap rule",
                    format!(
                        "returned output {i} of shape {} and dtype {} with batch axis {ax:?}, where shape {} and dtype {} were expected.",
                        fmt_shape(o.shape()),
                        o.dtype(),
                        fmt_shape(&expected),
                        f.dtype()
                    ),
                ));
            }
        }
        Ok(())
    }
}

crate::primitives::opaque_primitive!(CustomTransforms);

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
        self.check("vjp", "cotangent", &grads, primals)?;
        // The forward outputs are inputs of this node only to carry data.
        argnums
            .iter()
            .map(|&i| if i < self.num_inputs { Ok(grads[i].clone()) } else { ops::zeros_like(&inputs[i]) })
            .collect()
    }
    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let (primals, tangents) = (&inputs[..self.num_inputs], &tangents[..self.num_inputs]);
        let outs = match &self.function.jvp {
            Some(rule) => rule(primals, tangents)?,
            None => {
                let f = self.function.forward.clone();
                jvp(move |x| f(x), primals, tangents)?.1
            }
        };
        self.check("jvp", "tangent", &outs, &inputs[self.num_inputs..])?;
        Ok(outs)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        let (primals, in_axes) = (&inputs[..self.num_inputs], &axes[..self.num_inputs]);
        match &self.function.vmap {
            Some(rule) => {
                let (outs, out_axes) = rule(primals, in_axes)?;
                self.check_batched(&outs, &out_axes, inputs, axes)?;
                Ok((outs, out_axes))
            }
            None => {
                let f = self.function.forward.clone();
                let in_axes: Vec<Option<isize>> = in_axes.iter().map(|a| a.map(|a| a as isize)).collect();
                let outs = vmap(move |x| f(x), primals, &in_axes, &[Some(0)])?;
                let n = outs.len();
                Ok((outs, vec![Some(0); n]))
            }
        }
    }
}
