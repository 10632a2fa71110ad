//! A recorded function: the nodes between placeholder inputs and the
//! outputs, with the arrays it reads from outside (constants), and the
//! replay that rebuilds those nodes on real inputs.

use crate::array::{Array, ArrayData};
use crate::backend::Backend;
use crate::device::Stream;
use crate::error::{Error, Result};
use crate::primitives::{OutputSpec, Placeholder, Primitive};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The op name of compile's errors.
pub(crate) const OP: &str = "compile";

/// Where a node reads a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Ref {
    /// Argument `i` of the function.
    Input(usize),
    /// Constant `i` (an array read from outside the function).
    Constant(usize),
    /// Output `j` of node `k`.
    Node(usize, usize),
}

/// One recorded primitive application.
#[derive(Clone)]
pub(crate) struct TapeNode {
    pub(crate) primitive: Arc<dyn Primitive>,
    pub(crate) inputs: Vec<Ref>,
    pub(crate) outputs: Vec<OutputSpec>,
    pub(crate) stream: Stream,
}

/// A function as a graph: nodes in dependency order.
#[derive(Clone)]
pub(crate) struct Tape {
    /// The shapes and dtypes of the traced arguments.
    pub(crate) input_specs: Vec<OutputSpec>,
    pub(crate) constants: Vec<Array>,
    pub(crate) nodes: Vec<TapeNode>,
    pub(crate) outputs: Vec<Ref>,
}

thread_local! {
    static SHAPELESS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether a shapeless compile is tracing on this thread: ops that would
/// otherwise read the traced shapes into constants (`zeros_like`, `mean`'s
/// count) then derive them from their input when the trace runs.
pub(crate) fn is_tracing_shapeless() -> bool {
    SHAPELESS.with(|s| s.get() > 0)
}

/// Marks a shapeless trace for [`is_tracing_shapeless`].
struct ShapelessGuard;

impl ShapelessGuard {
    fn new(shapeless: bool) -> Option<ShapelessGuard> {
        shapeless.then(|| {
            SHAPELESS.with(|s| s.set(s.get() + 1));
            ShapelessGuard
        })
    }
}

impl Drop for ShapelessGuard {
    fn drop(&mut self) {
        SHAPELESS.with(|s| s.set(s.get() - 1));
    }
}

/// Calls `fun` on placeholders shaped like `args` and records its graph.
/// With `shapeless`, primitives whose parameters hold the traced shapes
/// are refused.
pub(crate) fn trace(fun: &dyn Fn(&[Array]) -> Result<Vec<Array>>, args: &[Array], shapeless: bool) -> Result<Tape> {
    // Inside another transform the arguments are that transform's tracers,
    // which a closure may legitimately share (MLX runs the function plainly then).
    let nested = crate::transforms::autodiff::is_tracing() || super::is_recording();
    let _recording = super::RecordingGuard::new();
    let _shapeless = ShapelessGuard::new(shapeless);
    let placeholders = args
        .iter()
        .map(|a| {
            Placeholder::stand_in(
                a,
                OP,
                "Attempting to eval an array during function transformations like compile or vmap is not allowed.",
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let outputs = fun(&placeholders)?;
    let mut refs: HashMap<usize, Ref> =
        placeholders.iter().enumerate().map(|(i, a)| (a.node_key(), Ref::Input(i))).collect();
    let order = crate::transforms::eval::pending_recipes(&outputs, |a| refs.contains_key(&a.node_key()));
    // The arguments themselves (not their placeholders) reached from the
    // outputs: the function read an argument through a closure, and the
    // trace would bake in this call's value (MLX refuses this too).
    let originals: HashSet<usize> = args.iter().map(Array::node_key).collect();
    let reads_original = !nested
        && (order.iter().any(|r| r.inputs.iter().any(|a| originals.contains(&a.node_key())))
            || outputs.iter().any(|a| originals.contains(&a.node_key())));
    if reads_original {
        return Err(Error::invalid(OP, "Attempting to compile a function with uncaptured inputs is not allowed."));
    }
    let input_specs = args.iter().map(OutputSpec::of).collect();
    let mut tape = Tape { input_specs, constants: Vec::new(), nodes: Vec::new(), outputs: Vec::new() };
    let mut constants: HashMap<usize, usize> = HashMap::new();
    let mut depends: HashSet<*const crate::array::Recipe> = HashSet::new();
    for recipe in order {
        let reads_input = recipe.inputs.iter().any(|a| {
            refs.contains_key(&a.node_key()) || a.pending_recipe().is_some_and(|r| depends.contains(&Arc::as_ptr(&r)))
        });
        if !reads_input {
            continue; // computed from constants only: captured as a constant where it is read
        }
        depends.insert(Arc::as_ptr(&recipe));
        if shapeless && recipe.primitive.fixes_input_shapes() {
            return Err(Error::invalid(
                OP,
                format!(
                    "Cannot compile {} shapeless: its parameters hold the traced input shapes.",
                    recipe.primitive.name()
                ),
            ));
        }
        let inputs = recipe.inputs.iter().map(|a| resolve(a, &refs, &mut constants, &mut tape.constants)).collect();
        let index = tape.nodes.len();
        for (j, node) in recipe.sibling_nodes().into_iter().enumerate() {
            if let Some(node) = node {
                refs.insert(Arc::as_ptr(&node) as usize, Ref::Node(index, j));
            }
        }
        tape.nodes.push(TapeNode {
            primitive: recipe.primitive.clone(),
            inputs,
            outputs: recipe.outputs.clone(),
            stream: recipe.stream,
        });
    }
    tape.outputs = outputs.iter().map(|a| resolve(a, &refs, &mut constants, &mut tape.constants)).collect();
    Ok(tape)
}

/// The bytes of constant `c` when it is one computed element held on the
/// host (a Python scalar), read without evaluating or copying from a device.
pub(super) fn host_scalar_bytes(c: &Array) -> Option<Vec<u8>> {
    let data = c.ready_data()?;
    if c.size() != 1 || data.storage.device() != crate::device::Device::CPU {
        return None;
    }
    Some(c.to_host().ok()?.bytes().to_vec())
}

/// The reference to `a`: an input or recorded node, else a constant.
fn resolve(
    a: &Array,
    refs: &HashMap<usize, Ref>,
    index: &mut HashMap<usize, usize>,
    constants: &mut Vec<Array>,
) -> Ref {
    if let Some(&r) = refs.get(&a.node_key()) {
        return r;
    }
    let i = *index.entry(a.node_key()).or_insert_with(|| {
        constants.push(a.clone());
        constants.len() - 1
    });
    Ref::Constant(i)
}

impl Tape {
    /// The tape's nodes rebuilt on `inputs`: new pending arrays on the
    /// recorded streams. With `shapeless`, each node's outputs are inferred
    /// from its inputs' shapes instead of taken from the trace.
    pub(crate) fn replay(&self, inputs: &[Array], shapeless: bool) -> Result<Vec<Array>> {
        self.replay_with(inputs, &self.constants, shapeless, &self.outputs)
    }

    /// [`Tape::replay`] reading `constants` in place of the recorded ones,
    /// returning the values `wanted` refers to.
    pub(crate) fn replay_with(
        &self,
        inputs: &[Array],
        constants: &[Array],
        shapeless: bool,
        wanted: &[Ref],
    ) -> Result<Vec<Array>> {
        let mut values: Vec<Vec<Array>> = Vec::with_capacity(self.nodes.len());
        let value = |r: Ref, values: &[Vec<Array>]| match r {
            Ref::Input(i) => inputs[i].clone(),
            Ref::Constant(i) => constants[i].clone(),
            Ref::Node(k, j) => values[k][j].clone(),
        };
        for node in &self.nodes {
            let args: Vec<Array> = node.inputs.iter().map(|&r| value(r, &values)).collect();
            let specs = if shapeless {
                node.primitive.output_specs(&args).map_err(|e| {
                    Error::invalid(OP, format!("Cannot run the shapeless function on these shapes: {e}"))
                })?
            } else {
                node.outputs.clone()
            };
            values.push(Array::siblings_on_stream(specs, node.primitive.clone(), args, node.stream)?);
        }
        Ok(wanted.iter().map(|&r| value(r, &values)).collect())
    }

    /// Runs the nodes on evaluated data with `backend`, op by op: `args`
    /// holds the inputs, then the constants. Returns the values `wanted`
    /// refers to; each other value is dropped after its last reader.
    pub(crate) fn run(&self, backend: &dyn Backend, args: &[ArrayData], wanted: &[Ref]) -> Result<Vec<ArrayData>> {
        let n = self.input_specs.len();
        let mut last_reader: Vec<usize> = vec![0; self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            for &r in &node.inputs {
                if let Ref::Node(k, _) = r {
                    last_reader[k] = i;
                }
            }
        }
        for &r in wanted {
            if let Ref::Node(k, _) = r {
                last_reader[k] = usize::MAX;
            }
        }
        let mut values: Vec<Option<Vec<ArrayData>>> = Vec::with_capacity(self.nodes.len());
        let value = |r: Ref, values: &[Option<Vec<ArrayData>>]| match r {
            Ref::Input(i) => args[i].clone(),
            Ref::Constant(i) => args[n + i].clone(),
            Ref::Node(k, j) => values[k].as_ref().expect("a node's inputs are computed before it and kept")[j].clone(),
        };
        for (i, node) in self.nodes.iter().enumerate() {
            let inputs: Vec<ArrayData> = node.inputs.iter().map(|&r| value(r, &values)).collect();
            let name = node.primitive.name();
            let outputs = node.primitive.eval(backend, &inputs, &node.outputs).map_err(|e| e.in_op(name))?;
            values.push(Some(outputs));
            for &r in &node.inputs {
                if let Ref::Node(k, _) = r {
                    if last_reader[k] == i {
                        values[k] = None;
                    }
                }
            }
        }
        Ok(wanted.iter().map(|&r| value(r, &values)).collect())
    }

    /// How many nodes read each node output, by reference.
    pub(crate) fn consumers(&self) -> HashMap<Ref, Vec<usize>> {
        let mut out: HashMap<Ref, Vec<usize>> = HashMap::new();
        for (k, node) in self.nodes.iter().enumerate() {
            for &r in &node.inputs {
                let list = out.entry(r).or_default();
                if list.last() != Some(&k) {
                    list.push(k);
                }
            }
        }
        out
    }
}
