//! Reverse- and forward-mode differentiation: [`vjp`], [`jvp`],
//! [`value_and_grad`]. A function is traced on stand-ins for its arguments;
//! derivative rules (each primitive's `vjp`/`jvp`) are written with ops, so
//! results are ordinary lazy arrays and transforms nest (grad of grad).

use crate::array::{Array, Recipe};
use crate::error::{fmt_shape, Error, Result};
use crate::ops;
use crate::primitives::Identity;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

thread_local! {
    static TRACE_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Whether a gradient trace is running on this thread (evaluation then keeps
/// recipes, which the backward pass needs).
pub fn is_tracing() -> bool {
    TRACE_DEPTH.with(|d| d.get() > 0)
}

pub(crate) struct TraceGuard;

impl TraceGuard {
    pub(crate) fn new() -> TraceGuard {
        TRACE_DEPTH.with(|d| d.set(d.get() + 1));
        TraceGuard
    }
}

impl Drop for TraceGuard {
    fn drop(&mut self) {
        TRACE_DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// Distinct graph nodes standing for the arguments, so that the same array
/// passed twice gets two gradients.
fn tracers(primals: &[Array]) -> Result<Vec<Array>> {
    primals.iter().map(|p| Array::from_primitive(p.shape().to_vec(), p.dtype(), Identity, vec![p.clone()])).collect()
}

/// The recipes between the tracers and `outputs` that depend on a tracer,
/// inputs before consumers, each with its live output arrays.
pub(crate) struct Tape {
    pub(crate) order: Vec<(Arc<Recipe>, Vec<Option<Array>>)>,
    pub(crate) active: HashSet<usize>,
}

/// `for_derivatives`: stop at nodes that block derivatives (their inputs
/// cannot receive a gradient); vmap passes false, since data still flows.
pub(crate) fn record(tracers: &[Array], outputs: &[Array], for_derivatives: bool) -> Tape {
    let mut active: HashSet<usize> = tracers.iter().map(Array::node_key).collect();
    let leaves = active.clone();
    let mut seen: HashSet<usize> = HashSet::new();
    let mut order = Vec::new();
    let recipe_of = |a: &Array| -> Option<Arc<Recipe>> {
        if leaves.contains(&a.node_key()) {
            return None;
        }
        a.recipe().filter(|r| !(for_derivatives && r.primitive.blocks_derivatives()))
    };
    let mut stack: Vec<(Array, Option<Arc<Recipe>>, usize)> = Vec::new();
    for out in outputs {
        if !seen.insert(out.node_key()) {
            continue;
        }
        stack.push((out.clone(), recipe_of(out), 0));
        while let Some((_, recipe, next)) = stack.last_mut() {
            let child = recipe.as_ref().and_then(|r| r.inputs.get(*next).cloned());
            if let Some(input) = child {
                *next += 1;
                if seen.insert(input.node_key()) {
                    let r = recipe_of(&input);
                    stack.push((input, r, 0));
                }
                continue;
            }
            let (node, recipe, _) = stack.pop().expect("stack is not empty");
            let Some(recipe) = recipe else { continue };
            if recipe.inputs.iter().any(|i| active.contains(&i.node_key())) {
                let siblings: Vec<Option<Array>> =
                    recipe.sibling_nodes().into_iter().map(|n| n.map(Array::from_node)).collect();
                for s in siblings.iter().flatten() {
                    active.insert(s.node_key());
                    seen.insert(s.node_key());
                }
                active.insert(node.node_key());
                order.push((recipe, siblings));
            }
        }
    }
    Tape { order, active }
}

fn accumulate(map: &mut HashMap<usize, Array>, key: usize, value: Array) -> Result<()> {
    let total = match map.remove(&key) {
        Some(prev) => ops::add(&prev, &value)?,
        None => value,
    };
    map.insert(key, total);
    Ok(())
}

/// Cotangents of `tracers` given cotangents of some of `outputs`.
fn backward(tracers: &[Array], outputs: &[Array], cotangents: &[Option<Array>]) -> Result<Vec<Array>> {
    let tape = record(tracers, outputs, true);
    let mut cots: HashMap<usize, Array> = HashMap::new();
    for (out, cot) in outputs.iter().zip(cotangents) {
        if let Some(c) = cot {
            accumulate(&mut cots, out.node_key(), c.clone())?;
        }
    }
    for (recipe, siblings) in tape.order.iter().rev() {
        let outs: Vec<Option<Array>> =
            siblings.iter().map(|s| s.as_ref().and_then(|a| cots.remove(&a.node_key()))).collect();
        if outs.iter().all(Option::is_none) {
            continue;
        }
        let out_arrays: Vec<Array> =
            siblings.iter().enumerate().map(|(i, s)| s.clone().unwrap_or_else(|| recipe.output(i))).collect();
        let out_cots: Vec<Array> = outs
            .into_iter()
            .zip(&out_arrays)
            .map(|(c, o)| c.map_or_else(|| ops::zeros_like(o), Ok))
            .collect::<Result<_>>()?;
        let argnums: Vec<usize> =
            (0..recipe.inputs.len()).filter(|&i| tape.active.contains(&recipe.inputs[i].node_key())).collect();
        let grads = recipe.primitive.vjp(&recipe.inputs, &out_arrays, &out_cots, &argnums)?;
        for (&i, g) in argnums.iter().zip(grads) {
            accumulate(&mut cots, recipe.inputs[i].node_key(), g)?;
        }
    }
    tracers.iter().map(|t| cots.remove(&t.node_key()).map_or_else(|| ops::zeros_like(t), Ok)).collect()
}

fn check_shapes(op: &'static str, what: &str, outputs: &[Array], given: &[Array]) -> Result<()> {
    if outputs.len() != given.len() {
        return Err(Error::invalid(
            op,
            format!("Expected {} {what} (one per output), got {}.", outputs.len(), given.len()),
        ));
    }
    for (o, g) in outputs.iter().zip(given) {
        if o.shape() != g.shape() {
            return Err(Error::ShapeMismatch {
                op,
                msg: format!(
                    "Shape {} of a {what} does not match shape {}.",
                    fmt_shape(g.shape()),
                    fmt_shape(o.shape())
                ),
            });
        }
    }
    Ok(())
}

/// Reverse mode: evaluates `f(primals)` and the vector-Jacobian products of
/// `cotangents` (one per output) with respect to every primal.
///
/// ```
/// use ferrox::{transforms::autodiff::vjp, Array};
/// let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// let (out, grads) = vjp(|a| Ok(vec![(&a[0] * &a[0])?]), &[x], &[Array::from_slice(&[1.0f32, 1.0], &[2])?])?;
/// assert_eq!(grads[0].to_vec::<f32>()?, vec![2.0, 4.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn vjp(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    primals: &[Array],
    cotangents: &[Array],
) -> Result<(Vec<Array>, Vec<Array>)> {
    vjp_where(f, primals, cotangents, |_| true)
}

/// [`vjp`] for the rules that differentiate a composed graph (fused and
/// compiled nodes, reference graphs): only the float and complex primals
/// are differentiated; integer and bool ones (indices, masks) get zero
/// cotangents, since differentiating an index is an error (MLX's rule).
pub(crate) fn vjp_of_inexact(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    primals: &[Array],
    cotangents: &[Array],
) -> Result<(Vec<Array>, Vec<Array>)> {
    vjp_where(f, primals, cotangents, |x| x.dtype().is_inexact())
}

/// [`vjp`] with respect to the primals `differentiated` accepts (zeros for
/// the others).
fn vjp_where(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    primals: &[Array],
    cotangents: &[Array],
    differentiated: impl Fn(&Array) -> bool,
) -> Result<(Vec<Array>, Vec<Array>)> {
    let _trace = TraceGuard::new();
    let inputs = tracers(primals)?;
    let outputs = f(&inputs)?;
    check_shapes("vjp", "cotangent", &outputs, cotangents)?;
    // Cotangents take their output's dtype, as in MLX.
    let cots: Vec<Option<Array>> =
        outputs.iter().zip(cotangents).map(|(o, c)| ops::astype(c, o.dtype()).map(Some)).collect::<Result<_>>()?;
    let chosen: Vec<usize> = (0..inputs.len()).filter(|&i| differentiated(&inputs[i])).collect();
    if chosen.len() == inputs.len() {
        let grads = backward(&inputs, &outputs, &cots)?;
        return Ok((outputs, grads));
    }
    let selected: Vec<Array> = chosen.iter().map(|&i| inputs[i].clone()).collect();
    let mut grads: Vec<Array> = inputs.iter().map(ops::zeros_like).collect::<Result<_>>()?;
    for (i, g) in chosen.into_iter().zip(backward(&selected, &outputs, &cots)?) {
        grads[i] = g;
    }
    Ok((outputs, grads))
}

/// Forward mode: evaluates `f(primals)` and the Jacobian-vector products of
/// `tangents` (one per primal) for every output.
pub fn jvp(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    primals: &[Array],
    tangents: &[Array],
) -> Result<(Vec<Array>, Vec<Array>)> {
    check_shapes("jvp", "tangent", primals, tangents)?;
    let _trace = TraceGuard::new();
    let inputs = tracers(primals)?;
    let outputs = f(&inputs)?;
    let tape = record(&inputs, &outputs, true);
    let mut tans: HashMap<usize, Array> = HashMap::new();
    for (x, t) in inputs.iter().zip(tangents) {
        tans.insert(x.node_key(), t.clone());
    }
    for (recipe, siblings) in &tape.order {
        let in_tans: Vec<Array> = recipe
            .inputs
            .iter()
            .map(|i| tans.get(&i.node_key()).cloned().map_or_else(|| ops::zeros_like(i), Ok))
            .collect::<Result<_>>()?;
        let out_arrays: Vec<Array> = siblings
            .iter()
            .zip(&recipe.outputs)
            .map(|(s, spec)| s.clone().map_or_else(|| ops::zeros(&spec.shape, spec.dtype), Ok))
            .collect::<Result<_>>()?;
        let out_tans = recipe.primitive.jvp(&recipe.inputs, &out_arrays, &in_tans)?;
        for (s, t) in siblings.iter().zip(out_tans) {
            if let Some(a) = s {
                tans.insert(a.node_key(), t);
            }
        }
    }
    let jvps = outputs
        .iter()
        .map(|o| tans.get(&o.node_key()).cloned().map_or_else(|| ops::zeros_like(o), Ok))
        .collect::<Result<_>>()?;
    Ok((outputs, jvps))
}

/// Evaluates `f(args)` and the gradient of its first output (a scalar loss)
/// with respect to the arguments listed in `argnums`; other outputs are
/// auxiliary values and are returned as they are.
pub fn value_and_grad(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    args: &[Array],
    argnums: &[usize],
) -> Result<(Vec<Array>, Vec<Array>)> {
    if let Some(&bad) = argnums.iter().find(|&&i| i >= args.len()) {
        return Err(Error::invalid(
            "grad",
            format!("Can't compute the gradient of argument index {bad} because the function is called with only {} arguments.", args.len()),
        ));
    }
    let _trace = TraceGuard::new();
    let inputs = tracers(args)?;
    let outputs = f(&inputs)?;
    let loss = outputs.first().ok_or_else(|| Error::invalid("grad", "The function must return at least one array."))?;
    if loss.size() != 1 || loss.ndim() != 0 {
        return Err(Error::invalid(
            "grad",
            format!("The output of the function must be a scalar, got an array of shape {}.", fmt_shape(loss.shape())),
        ));
    }
    let mut cots: Vec<Option<Array>> = vec![None; outputs.len()];
    cots[0] = Some(ops::ones_like(loss)?);
    let selected: Vec<Array> = argnums.iter().map(|&i| inputs[i].clone()).collect();
    let grads = backward(&selected, &outputs, &cots)?;
    Ok((outputs, grads))
}
