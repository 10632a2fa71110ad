//! A compiled function run as one graph node ([`GraphCall`]), so that a
//! backend can record its launches once and replay them (CUDA graphs), and
//! the policy that says when ([`GraphReplay`]).

use super::tape::{Ref, Tape, OP};
use crate::array::{Array, ArrayData};
use crate::backend::replay::{ReplaySlot, ReplayStats};
use crate::backend::Backend;
use crate::device::{DeviceType, Stream};
use crate::error::{Error, Result};
use crate::primitives::{opaque_primitive, Batched, OutputSpec, Primitive};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

/// When a compiled call runs as one recorded graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphReplay {
    /// On the GPU, for functions whose launches cost more than a replay's
    /// copies of the inputs and outputs: at least 4 kernels, and at most
    /// [`REPLAY_BYTES_PER_KERNEL`] of inputs and outputs per kernel. The
    /// default.
    Auto,
    /// For every compiled function with fixed shapes whose graph runs on
    /// one stream, on every device (the CPU runs the graph op by op).
    Always,
    /// Never: compiled calls build one node per recorded primitive.
    Never,
}

/// The inputs and outputs per kernel up to which [`GraphReplay::Auto`]
/// replays: a launch costs the host 5-8 µs, in which the GPU copies about
/// 10 MiB (read and written once at 4 TB/s); a replay copies its inputs in
/// and its outputs out, so at this ratio its copies take at most about
/// half the launches' host time.
pub const REPLAY_BYTES_PER_KERNEL: usize = 4 << 20;

const AUTO: u8 = 0;
const ALWAYS: u8 = 1;
const NEVER: u8 = 2;

fn mode() -> &'static AtomicU8 {
    static MODE: OnceLock<AtomicU8> = OnceLock::new();
    MODE.get_or_init(|| {
        let v = std::env::var("FERROX_GRAPH_REPLAY").unwrap_or_default();
        AtomicU8::new(match v.to_ascii_lowercase().as_str() {
            "always" | "1" => ALWAYS,
            "never" | "0" => NEVER,
            _ => AUTO,
        })
    })
}

/// Sets when compiled calls replay recorded graphs (also set by the
/// environment variable `FERROX_GRAPH_REPLAY`: `auto`, `always` or
/// `never`); returns the previous policy.
pub fn set_graph_replay(policy: GraphReplay) -> GraphReplay {
    let code = match policy {
        GraphReplay::Auto => AUTO,
        GraphReplay::Always => ALWAYS,
        GraphReplay::Never => NEVER,
    };
    decode(mode().swap(code, Ordering::Relaxed))
}

/// The policy in force.
pub fn graph_replay() -> GraphReplay {
    decode(mode().load(Ordering::Relaxed))
}

fn decode(code: u8) -> GraphReplay {
    match code {
        ALWAYS => GraphReplay::Always,
        NEVER => GraphReplay::Never,
        _ => GraphReplay::Auto,
    }
}

thread_local! {
    static RECORDING: Cell<usize> = const { Cell::new(0) };
}

/// Held while compile or export records a function: compiled functions
/// called inside build ordinary nodes, which the recording can see.
pub(crate) struct RecordingGuard;

impl RecordingGuard {
    /// Starts recording once queued `async_eval` work is done, so that the
    /// recording sees each outside array as either pending or computed, not
    /// changing under it.
    pub(crate) fn new() -> RecordingGuard {
        crate::transforms::async_eval::wait_for_async_work();
        RECORDING.with(|d| d.set(d.get() + 1));
        RecordingGuard
    }
}

impl Drop for RecordingGuard {
    fn drop(&mut self) {
        RECORDING.with(|d| d.set(d.get() - 1));
    }
}

/// Whether compile or export is recording a function, or a gradient trace
/// runs, on this thread.
pub(crate) fn recording() -> bool {
    RECORDING.with(|d| d.get() > 0) || crate::transforms::autodiff::is_tracing()
}

/// Where a function's output comes from in a graph call.
#[derive(Clone, Copy, Debug)]
enum Return {
    /// Argument `i`, returned as it is.
    Input(usize),
    /// The tape's constant `i`.
    Constant(usize),
    /// Output `i` of the graph node.
    Output(usize),
}

/// A compiled function's graph as one node: its inputs are the function's
/// arguments, then the tape's constants; its outputs the graph's values
/// the function returns. Evaluation hands the tape to the backend's
/// [`Backend::replay`] with a slot kept across calls.
pub(crate) struct GraphCall {
    tape: Tape,
    /// The node outputs the call returns (the function's outputs that are
    /// not arguments or constants), without repeats.
    outputs: Vec<Ref>,
    /// Where each of the function's outputs comes from.
    returns: Vec<Return>,
    stream: Stream,
    /// Whether the default policy replays it: launch-bound on the GPU
    /// (fixed per trace, since the trace fixes the shapes).
    launch_bound: bool,
    slot: ReplaySlot,
}

impl std::fmt::Debug for GraphCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CompiledGraph({} nodes, {:?})", self.tape.nodes.len(), self.slot.stats())
    }
}

opaque_primitive!(GraphCall);

impl GraphCall {
    /// The graph node for `tape` (traced on `stream`), or None when the
    /// tape cannot run as one: nodes on several streams, or no node.
    pub(crate) fn new(tape: &Tape, stream: Stream) -> Option<GraphCall> {
        if tape.nodes.is_empty() || tape.nodes.iter().any(|n| n.stream != stream) {
            return None;
        }
        let mut outputs: Vec<Ref> = Vec::new();
        let mut position: HashMap<Ref, usize> = HashMap::new();
        let returns = tape
            .outputs
            .iter()
            .map(|&r| match r {
                Ref::Input(i) => Return::Input(i),
                Ref::Constant(i) => Return::Constant(i),
                node => Return::Output(*position.entry(node).or_insert_with(|| {
                    outputs.push(node);
                    outputs.len() - 1
                })),
            })
            .collect();
        let nbytes = |o: &OutputSpec| o.dtype.size() * o.shape.iter().product::<usize>();
        let kernels = tape.nodes.iter().filter(|n| !n.primitive.is_view()).count();
        let bytes: usize = tape.input_specs.iter().map(nbytes).sum::<usize>()
            + outputs.iter().map(|&r| nbytes(node_output(tape, r))).sum::<usize>();
        let launch_bound =
            stream.device.kind == DeviceType::Gpu && kernels >= 4 && bytes <= kernels * REPLAY_BYTES_PER_KERNEL;
        let varying = tape.input_specs.len();
        Some(GraphCall { tape: tape.clone(), outputs, returns, stream, launch_bound, slot: ReplaySlot::new(varying) })
    }

    /// Whether a call should run as this node now.
    pub(crate) fn wanted(&self) -> bool {
        !recording()
            && match graph_replay() {
                GraphReplay::Never => false,
                GraphReplay::Always => true,
                GraphReplay::Auto => self.launch_bound,
            }
    }

    fn spec(&self, r: Ref) -> &OutputSpec {
        node_output(&self.tape, r)
    }

    /// The function's outputs on `inputs`, computed by this one node.
    pub(crate) fn call(self: &Arc<Self>, inputs: &[Array]) -> Result<Vec<Array>> {
        let specs = self.outputs.iter().map(|&r| self.spec(r).clone()).collect();
        let args = inputs.iter().chain(&self.tape.constants).cloned().collect();
        let values = Array::siblings_on_stream(specs, self.clone(), args, self.stream)?;
        Ok(self
            .returns
            .iter()
            .map(|r| match *r {
                Return::Input(i) => inputs[i].clone(),
                Return::Constant(i) => self.tape.constants[i].clone(),
                Return::Output(i) => values[i].clone(),
            })
            .collect())
    }

    /// What the replay slot holds.
    pub(crate) fn stats(&self) -> ReplayStats {
        self.slot.stats()
    }

    /// The outputs rebuilt as ordinary nodes on `xs` (arguments, then
    /// constants): what the derivative and batching rules transform.
    fn unfold(&self, xs: &[Array]) -> Result<Vec<Array>> {
        let n = self.tape.input_specs.len();
        self.tape.replay_with(&xs[..n], &xs[n..], false, &self.outputs)
    }
}

/// The spec of node output `r` of `tape`.
fn node_output(tape: &Tape, r: Ref) -> &OutputSpec {
    match r {
        Ref::Node(k, j) => &tape.nodes[k].outputs[j],
        _ => unreachable!("graph outputs are node outputs"),
    }
}

impl Primitive for GraphCall {
    fn name(&self) -> &'static str {
        "CompiledGraph"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        let expected = self.tape.input_specs.iter().cloned().chain(self.tape.constants.iter().map(OutputSpec::of));
        if !inputs.iter().map(OutputSpec::of).eq(expected) {
            return Err(Error::invalid(OP, "A compiled graph was given inputs of other shapes or dtypes."));
        }
        Ok(self.outputs.iter().map(|&r| self.spec(r).clone()).collect())
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let run = |args: &[ArrayData]| self.tape.run(backend, args, &self.outputs);
        backend.replay(&self.slot, inputs, &run)
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let (_, grads) = crate::transforms::autodiff::vjp_of_inexact(|xs| self.unfold(xs), inputs, cotangents)?;
        Ok(argnums.iter().map(|&i| grads[i].clone()).collect())
    }
    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(crate::transforms::autodiff::jvp(|xs| self.unfold(xs), inputs, tangents)?.1)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<Batched> {
        let in_axes: Vec<Option<isize>> = axes.iter().map(|a| a.map(|a| a as isize)).collect();
        let out_axes = vec![Some(0); self.outputs.len()];
        let outs = crate::transforms::vmap::vmap(|xs| self.unfold(xs), inputs, &in_axes, &out_axes)?;
        let n = outs.len();
        Ok((outs, vec![Some(0); n]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops;
    use crate::transforms::autodiff;

    fn f(xs: &[Array]) -> Result<Vec<Array>> {
        let y = ops::multiply(&ops::sin(&xs[0])?, &xs[1])?;
        Ok(vec![y.clone(), ops::sum(&y, None, false)?])
    }

    fn values(xs: &[Array]) -> Result<Vec<Vec<f32>>> {
        xs.iter().map(|x| x.to_vec::<f32>()).collect()
    }

    #[test]
    fn the_graph_node_computes_differentiates_and_batches_like_its_function() -> Result<()> {
        let x = Array::from_slice(&[0.5f32, 1.0, 2.0], &[3])?;
        let y = Array::from_slice(&[3.0f32, -1.0, 0.25], &[3])?;
        let inputs = [x.clone(), y.clone()];
        let tape = super::super::tape::trace(&f, &inputs, false)?;
        let g = Arc::new(GraphCall::new(&tape, crate::device::current_stream()).expect("one stream"));
        assert_eq!(values(&g.call(&inputs)?)?, values(&f(&inputs)?)?);

        let cts = [Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?, Array::scalar(0.5f32)];
        let got = g.vjp(&inputs, &[], &cts, &[0, 1])?;
        let (_, want) = autodiff::vjp(f, &inputs, &cts)?;
        assert_eq!(values(&got)?, values(&want)?);

        let tangents = [cts[0].clone(), Array::from_slice(&[0.0f32, 1.0, -1.0], &[3])?];
        let got = g.jvp(&inputs, &[], &tangents)?;
        let (_, want) = autodiff::jvp(f, &inputs, &tangents)?;
        assert_eq!(values(&got)?, values(&want)?);

        let xb = ops::stack(&[x.clone(), ops::negative(&x)?], 0)?;
        let (got, axes) = g.vmap(&[xb.clone(), y.clone()], &[Some(0), None])?;
        assert_eq!(axes, vec![Some(0), Some(0)]);
        let rows = [f(&[x.clone(), y.clone()])?, f(&[ops::negative(&x)?, y.clone()])?];
        for (k, got) in got.iter().enumerate() {
            let want = ops::stack(&[rows[0][k].clone(), rows[1][k].clone()], 0)?;
            assert_eq!(got.to_vec::<f32>()?, want.to_vec::<f32>()?);
        }
        Ok(())
    }
}
