//! `compile` (MLX's): a function traced once per input signature into a
//! cached graph, simplified and fused, then replayed on each call.
//!
//! - **Trace**: the function runs on placeholder arguments of the call's
//!   shapes and dtypes; the nodes between them and the outputs are recorded
//!   ([`tape`]), arrays read from outside become constants (computed once,
//!   on first use).
//! - **Simplify** ([`simplify`]): identity nodes are bypassed, equal scalar
//!   constants merged, common subexpressions merged, dead nodes dropped.
//! - **Fuse** ([`fuse`]): chains of elementwise nodes become one `Fused`
//!   node, one pass over the data on the CPU and one generated kernel on
//!   CUDA.
//! - **Replay**: each call rebuilds the recorded nodes on its arguments, so
//!   results are ordinary lazy arrays. Under `grad`/`vjp`/`jvp`/`vmap` the
//!   unfused (simplified) graph is replayed, so the derivative and batching
//!   rules see the original primitives.
//! - **Graph replay** ([`graph`]): a function of many small kernels on the
//!   GPU becomes one node instead, whose kernels are captured into a CUDA
//!   graph on its second call and replayed with one launch afterwards
//!   ([`GraphReplay`] says when).
//!
//! A call matches a trace when its arguments have the traced dtypes and
//! shapes (numbers of dimensions for shapeless functions), the caller's key
//! (the Python wrapper's tree structure and constant arguments) is equal,
//! and the default stream is the same. `disable_compile` (or the
//! environment variable `FERROX_DISABLE_COMPILE`, MLX's
//! `MLX_DISABLE_COMPILE`) makes compiled functions call the function
//! directly.

mod fuse;
mod graph;
mod simplify;
mod tape;

pub use graph::{graph_replay, set_graph_replay, GraphReplay, REPLAY_BYTES_PER_KERNEL};
pub(crate) use graph::{recording as is_recording, RecordingGuard};
pub(crate) use tape::is_tracing_shapeless;

use crate::array::Array;
use crate::device::{current_stream, Stream};
use crate::dtype::Dtype;
use crate::error::Result;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tape::Tape;

fn enabled() -> &'static AtomicBool {
    static ENABLED: OnceLock<AtomicBool> = OnceLock::new();
    ENABLED.get_or_init(|| {
        let off = std::env::var("FERROX_DISABLE_COMPILE").is_ok_and(|v| !v.is_empty() && v != "0");
        AtomicBool::new(!off)
    })
}

/// Makes compiled functions trace and replay again (the default, unless
/// `FERROX_DISABLE_COMPILE` is set).
pub fn enable_compile() {
    enabled().store(true, Ordering::Relaxed);
}

/// Makes every compiled function call its function directly.
pub fn disable_compile() {
    enabled().store(false, Ordering::Relaxed);
}

/// Whether compiled functions trace and replay (see [`disable_compile`]).
pub fn is_compile_enabled() -> bool {
    enabled().load(Ordering::Relaxed)
}

/// One trace: what it was recorded for, and its graphs.
struct Entry {
    /// The trace's number among the function's traces (never reused).
    id: u64,
    key: String,
    stream: Stream,
    inputs: Vec<(Dtype, Vec<usize>)>,
    /// The simplified graph (replayed under derivative and batching traces).
    plain: Tape,
    /// The same graph with its elementwise chains fused.
    fused: Tape,
    /// The fused graph as one node, for recorded replay (fixed shapes only).
    graph: Option<Arc<graph::GraphCall>>,
}

/// Counts of a compiled function's cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Calls that replayed an existing trace.
    pub hits: usize,
    /// Calls that traced the function.
    pub misses: usize,
    /// Traces held.
    pub entries: usize,
    /// Traces whose graph was captured for replay (a CUDA graph).
    pub graphs_captured: usize,
    /// Traces whose graph could not be captured (they run op by op).
    pub graphs_refused: usize,
    /// Calls that replayed a captured graph.
    pub graph_launches: usize,
}

/// The function signature a compiled function is given: arrays in, arrays out.
pub type CompileFn = dyn Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync;

/// A function compiled by [`compile`].
pub struct CompiledFunction {
    fun: Box<CompileFn>,
    shapeless: bool,
    entries: Mutex<Vec<Arc<Entry>>>,
    hits: AtomicUsize,
    misses: AtomicUsize,
    /// Traces made so far (the next trace's id).
    traced: AtomicU64,
}

/// Compiles `fun`: traced once per input signature, simplified, fused and
/// cached; with `shapeless`, one trace serves inputs of any shape with the
/// traced numbers of dimensions (functions whose graph fixes the traced
/// shapes are refused when traced).
///
/// ```
/// use ferrox::{ops, transforms::compile::compile, Array};
/// let f = compile(|x| Ok(vec![ops::exp(&ops::multiply(&x[0], &x[0])?)?]), false);
/// let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// let y = f.call(&[x.clone()])?;
/// let eager = ops::exp(&ops::multiply(&x, &x)?)?;
/// assert_eq!(y[0].to_vec::<f32>()?, eager.to_vec::<f32>()?);
/// assert_eq!(f.stats().misses, 1);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn compile(
    fun: impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
    shapeless: bool,
) -> CompiledFunction {
    CompiledFunction::new(Box::new(fun), shapeless)
}

impl CompiledFunction {
    /// [`compile`] of a boxed function.
    pub fn new(fun: Box<CompileFn>, shapeless: bool) -> CompiledFunction {
        CompiledFunction {
            fun,
            shapeless,
            entries: Mutex::new(Vec::new()),
            hits: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
            traced: AtomicU64::new(0),
        }
    }

    /// Calls the function on `inputs`.
    pub fn call(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        self.call_keyed(inputs, "")
    }

    /// Calls the function on `inputs`; `key` describes the rest of the
    /// call's signature (a different key traces again).
    pub fn call_keyed(&self, inputs: &[Array], key: &str) -> Result<Vec<Array>> {
        Ok(self.call_traced(inputs, key)?.0)
    }

    /// [`CompiledFunction::call_keyed`], also returning the id of the trace
    /// that ran (0 when compilation is disabled; trace ids start at 1 and
    /// are never reused), so that a caller can keep facts about each trace.
    pub fn call_traced(&self, inputs: &[Array], key: &str) -> Result<(Vec<Array>, u64)> {
        if !is_compile_enabled() {
            return Ok(((self.fun)(inputs)?, 0));
        }
        let entry = self.entry(inputs, key)?;
        let outputs = if crate::transforms::autodiff::is_tracing() {
            entry.plain.replay(inputs, self.shapeless)?
        } else {
            match &entry.graph {
                Some(g) if g.wanted() => g.call(inputs)?,
                _ => entry.fused.replay(inputs, self.shapeless)?,
            }
        };
        Ok((outputs, entry.id))
    }

    /// The trace for a call with `inputs` and `key`, traced now if there is
    /// none (counted as a hit or a miss).
    fn entry(&self, inputs: &[Array], key: &str) -> Result<Arc<Entry>> {
        let stream = current_stream();
        if let Some(entry) = self.lookup(inputs, key, stream) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(entry);
        }
        // The lock is not held while tracing: the function may call this
        // compiled function itself.
        let entry = Arc::new(self.trace(inputs, key, stream)?);
        self.misses.fetch_add(1, Ordering::Relaxed);
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).push(entry.clone());
        Ok(entry)
    }

    fn lookup(&self, inputs: &[Array], key: &str, stream: Stream) -> Option<Arc<Entry>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let same = |(dtype, shape): &(Dtype, Vec<usize>), a: &Array| {
            *dtype == a.dtype() && if self.shapeless { shape.len() == a.ndim() } else { shape == a.shape() }
        };
        entries
            .iter()
            .find(|e| {
                e.key == key
                    && e.stream == stream
                    && e.inputs.len() == inputs.len()
                    && e.inputs.iter().zip(inputs).all(|(s, a)| same(s, a))
            })
            .cloned()
    }

    fn trace(&self, inputs: &[Array], key: &str, stream: Stream) -> Result<Entry> {
        let mut plain = tape::trace(&*self.fun, inputs, self.shapeless)?;
        simplify::simplify(&mut plain);
        let fused = fuse::fuse(&plain);
        let graph = if self.shapeless { None } else { graph::GraphCall::new(&fused, stream).map(Arc::new) };
        Ok(Entry {
            id: self.traced.fetch_add(1, Ordering::Relaxed) + 1,
            key: key.to_string(),
            stream,
            inputs: inputs.iter().map(|a| (a.dtype(), a.shape().to_vec())).collect(),
            plain,
            fused,
            graph,
        })
    }

    /// Hits, misses and traces held.
    pub fn stats(&self) -> CacheStats {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let mut stats = CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            entries: entries.len(),
            ..CacheStats::default()
        };
        for g in entries.iter().filter_map(|e| e.graph.as_ref()) {
            let r = g.stats();
            stats.graphs_captured += r.captured as usize;
            stats.graphs_refused += r.refused.is_some() as usize;
            stats.graph_launches += r.launches;
        }
        stats
    }

    /// Why the graphs of traces that could not be captured for replay were
    /// refused (one line per such trace).
    pub fn graph_refusals(&self) -> Vec<String> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.iter().filter_map(|e| e.graph.as_ref()?.stats().refused).collect()
    }

    /// Drops every trace (the next call traces again).
    pub fn clear_cache(&self) {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// The primitives of the graph a call with `inputs` replays (fused, or
    /// plain when `fused` is false), in order, traced if needed (and
    /// counted as a call would be): what tests and users inspect to see
    /// the simplification and fusion.
    pub fn graph(&self, inputs: &[Array], key: &str, fused: bool) -> Result<Vec<String>> {
        Ok(self.graph_traced(inputs, key, fused)?.0)
    }

    /// [`CompiledFunction::graph`], also returning the trace's id (as
    /// [`CompiledFunction::call_traced`] does).
    pub fn graph_traced(&self, inputs: &[Array], key: &str, fused: bool) -> Result<(Vec<String>, u64)> {
        let entry = self.entry(inputs, key)?;
        let tape = if fused { &entry.fused } else { &entry.plain };
        let names = tape
            .nodes
            .iter()
            .map(|n| {
                let any = n.primitive.as_any();
                if let Some(f) = any.downcast_ref::<crate::primitives::Fused>() {
                    format!("Compiled[{}]", f.0.describe())
                } else if let Some(f) = any.downcast_ref::<crate::primitives::FusedReduce>() {
                    format!(
                        "Compiled[{}; {} over {:?}]",
                        f.program.describe(),
                        crate::primitives::Primitive::name(&f.reduce),
                        f.reduce.axes
                    )
                } else {
                    n.primitive.name().to_string()
                }
            })
            .collect();
        Ok((names, entry.id))
    }
}
