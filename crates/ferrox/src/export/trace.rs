//! Tracing a function on placeholders and recording its graph.

use super::file::{self, ConstantRecord, Header, NodeRecord, Ref, TraceRecord};
use super::Kwargs;
use crate::array::Array;
use crate::error::{Error, Result};
use crate::primitives::{OutputSpec, Placeholder};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A function that can be exported: positional and keyword arrays in,
/// arrays out.
pub type ExportFn = dyn Fn(&[Array], &Kwargs) -> Result<Vec<Array>>;

const OP: &str = "export_function";

/// The shapes and dtypes of positional and keyword arguments: what a trace
/// is recorded for, and what a call must match.
pub(crate) fn signature(args: &[Array], kwargs: &Kwargs) -> (Vec<OutputSpec>, Vec<(String, OutputSpec)>) {
    (args.iter().map(OutputSpec::of).collect(), kwargs.iter().map(|(k, a)| (k.clone(), OutputSpec::of(a))).collect())
}

/// Placeholders with the shapes and dtypes of `args` and `kwargs`.
fn placeholders(args: &[Array], kwargs: &Kwargs) -> Result<(Vec<Array>, Kwargs)> {
    let stand_in = |a: &Array| {
        Placeholder::stand_in(
            a,
            OP,
            "Cannot evaluate an array computed from the function's inputs while the function is traced for export.",
        )
    };
    let positional = args.iter().map(stand_in).collect::<Result<Vec<_>>>()?;
    let keyword = kwargs.iter().map(|(k, a)| Ok((k.clone(), stand_in(a)?))).collect::<Result<Kwargs>>()?;
    Ok((positional, keyword))
}

/// Evaluated arrays that traces read, each stored once per file.
#[derive(Default)]
struct Constants {
    index: HashMap<usize, usize>,
    arrays: Vec<Array>,
}

impl Constants {
    /// The constant index of `a` (evaluating it first), adding it if new.
    fn insert(&mut self, a: &Array) -> Result<usize> {
        if let Some(&i) = self.index.get(&a.node_key()) {
            return Ok(i);
        }
        a.eval()?;
        self.index.insert(a.node_key(), self.arrays.len());
        self.arrays.push(a.clone());
        Ok(self.arrays.len() - 1)
    }
}

/// Pending recipes between `outputs` and the leaves (arrays in `known`
/// and evaluated arrays), inputs before consumers, and the set of those
/// that depend on a leaf in `known`.
fn schedule(outputs: &[Array], known: &HashMap<usize, Ref>) -> (Vec<Arc<crate::array::Recipe>>, HashSet<usize>) {
    let key = |r: &Arc<crate::array::Recipe>| Arc::as_ptr(r) as usize;
    let order = crate::transforms::eval::pending_recipes(outputs, |a| known.contains_key(&a.node_key()));
    let mut depends = HashSet::new();
    for recipe in &order {
        let reads_input = recipe.inputs.iter().any(|a| {
            known.contains_key(&a.node_key()) || a.pending_recipe().is_some_and(|r| depends.contains(&key(&r)))
        });
        if reads_input {
            depends.insert(key(recipe));
        }
    }
    (order, depends)
}

thread_local! {
    static EXPORT_TRACING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether this thread is tracing a function for export: ops that cannot
/// run here (a Metal kernel) may still be recorded.
pub fn is_export_tracing() -> bool {
    EXPORT_TRACING.with(|t| t.get() > 0)
}

/// Marks an export trace for [`is_export_tracing`].
struct ExportTracing;

impl ExportTracing {
    fn new() -> ExportTracing {
        EXPORT_TRACING.with(|t| t.set(t.get() + 1));
        ExportTracing
    }
}

impl Drop for ExportTracing {
    fn drop(&mut self) {
        EXPORT_TRACING.with(|t| t.set(t.get() - 1));
    }
}

/// Calls `fun` on placeholders for `args` and `kwargs` and records the
/// graph to its outputs; constants go to `constants`.
fn trace(
    fun: &ExportFn,
    args: &[Array],
    kwargs: &Kwargs,
    shapeless: bool,
    constants: &mut Constants,
) -> Result<TraceRecord> {
    let _recording = crate::transforms::compile::RecordingGuard::new();
    let (positional, keyword) = placeholders(args, kwargs)?;
    let outputs = {
        let _tracing = ExportTracing::new();
        fun(&positional, &keyword)?
    };
    let mut refs: HashMap<usize, Ref> =
        positional.iter().chain(keyword.values()).enumerate().map(|(i, a)| (a.node_key(), Ref::Input(i))).collect();
    let (order, depends) = schedule(&outputs, &refs);
    let mut nodes = Vec::new();
    for recipe in order {
        let primitive = &recipe.primitive;
        let (Some(tag), Some(params)) = (primitive.tag(), primitive.params()) else {
            if depends.contains(&(Arc::as_ptr(&recipe) as usize)) {
                return Err(Error::invalid(OP, format!("The primitive {} cannot be exported.", primitive.name())));
            }
            continue; // computed from constants only: stored as a constant where it is read
        };
        if recipe.inputs.is_empty() {
            continue; // a creation from parameters: stored as a constant
        }
        if shapeless && primitive.fixes_input_shapes() && depends.contains(&(Arc::as_ptr(&recipe) as usize)) {
            return Err(Error::invalid(
                OP,
                format!("Cannot export {} shapeless: its parameters hold the traced shapes.", primitive.name()),
            ));
        }
        let inputs = recipe.inputs.iter().map(|a| resolve(a, &refs, constants)).collect::<Result<Vec<_>>>()?;
        match primitive.output_specs(&recipe.inputs) {
            Ok(specs) if specs == recipe.outputs => {}
            Ok(specs) => {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "{} infers outputs {specs:?} where the graph holds {:?}.",
                        primitive.name(),
                        recipe.outputs
                    ),
                ))
            }
            Err(e) if shapeless => {
                return Err(Error::invalid(OP, format!("Cannot export {} shapeless: {e}", primitive.name())))
            }
            Err(e) => return Err(e.in_op(OP)),
        }
        let index = nodes.len();
        for (j, node) in recipe.sibling_nodes().into_iter().enumerate() {
            if let Some(node) = node {
                refs.insert(Arc::as_ptr(&node) as usize, Ref::Node(index, j));
            }
        }
        nodes.push(NodeRecord { primitive: tag.to_string(), params, inputs, outputs: recipe.outputs.clone() });
    }
    let outputs = outputs.iter().map(|a| resolve(a, &refs, constants)).collect::<Result<Vec<_>>>()?;
    let (args, kwargs) = signature(args, kwargs);
    Ok(TraceRecord { args, kwargs, nodes, outputs })
}

/// The reference to `a`: an input or recorded node, else a constant.
fn resolve(a: &Array, refs: &HashMap<usize, Ref>, constants: &mut Constants) -> Result<Ref> {
    match refs.get(&a.node_key()) {
        Some(&r) => Ok(r),
        None => Ok(Ref::Constant(constants.insert(a)?)),
    }
}

/// Whether a trace was recorded for arguments like `args` and `kwargs`:
/// the same count, names and dtypes, and the same shapes (or, for
/// shapeless functions, the same numbers of dimensions).
pub(crate) fn matches(
    record: &TraceRecord,
    args: &[OutputSpec],
    kwargs: &[(String, OutputSpec)],
    shapeless: bool,
) -> bool {
    let same = |a: &OutputSpec, b: &OutputSpec| {
        a.dtype == b.dtype && if shapeless { a.shape.len() == b.shape.len() } else { a.shape == b.shape }
    };
    record.args.len() == args.len()
        && record.kwargs.len() == kwargs.len()
        && record.args.iter().zip(args).all(|(a, b)| same(a, b))
        && record.kwargs.iter().zip(kwargs).all(|((ka, a), (kb, b))| ka == kb && same(a, b))
}

/// Exports several traces of one function to one file (MLX's
/// `exporter`): each [`Exporter::trace`] records the function for new
/// example arguments; [`Exporter::close`] writes the file, with constants
/// shared by several traces stored once.
pub struct Exporter {
    path: std::path::PathBuf,
    fun: Box<ExportFn>,
    shapeless: bool,
    metadata: String,
    constants: Constants,
    traces: Vec<TraceRecord>,
    closed: bool,
}

impl Exporter {
    /// An exporter of `fun` to `path`; `metadata` is stored as is.
    pub fn new(path: impl Into<std::path::PathBuf>, fun: Box<ExportFn>, shapeless: bool, metadata: &str) -> Exporter {
        Exporter {
            path: path.into(),
            fun,
            shapeless,
            metadata: metadata.to_string(),
            constants: Constants::default(),
            traces: Vec::new(),
            closed: false,
        }
    }

    /// Records `fun` for arguments shaped like `args` and `kwargs`.
    pub fn trace(&mut self, args: &[Array], kwargs: &Kwargs) -> Result<()> {
        if self.closed {
            return Err(Error::invalid(OP, "Attempting to write after exporting is closed."));
        }
        let (specs, kw) = signature(args, kwargs);
        if self.traces.iter().any(|t| matches(t, &specs, &kw, self.shapeless)) {
            return Err(Error::invalid(
                OP,
                "Attempting to export a function twice with the same signature is not allowed.",
            ));
        }
        let record = trace(&*self.fun, args, kwargs, self.shapeless, &mut self.constants)?;
        self.traces.push(record);
        Ok(())
    }

    /// Whether [`Exporter::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Writes the file (once; later calls do nothing).
    pub fn close(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let mut records = Vec::with_capacity(self.constants.arrays.len());
        let mut bytes = Vec::with_capacity(self.constants.arrays.len());
        for a in &self.constants.arrays {
            records.push(ConstantRecord { dtype: a.dtype(), shape: a.shape().to_vec(), offset: 0 });
            bytes.push(crate::io::host_bytes(a, |b| Ok(b.to_vec()))?);
        }
        let header = Header {
            metadata: std::mem::take(&mut self.metadata),
            shapeless: self.shapeless,
            constants: records,
            traces: std::mem::take(&mut self.traces),
        };
        let name = self.path.display().to_string();
        let f = std::fs::File::create(&self.path).map_err(|e| Error::file(OP, &name, &e))?;
        file::write(&mut std::io::BufWriter::new(f), header, &bytes).map_err(|e| Error::file(OP, &name, &e))
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        // A dropped exporter still writes what it traced (errors have no
        // one to go to here; close() reports them).
        let _ = self.close();
    }
}

/// Exports one trace of `fun` for `args` and `kwargs` to `path` (MLX's
/// `export_function`).
pub fn export_function(
    path: impl Into<std::path::PathBuf>,
    fun: Box<ExportFn>,
    args: &[Array],
    kwargs: &Kwargs,
    shapeless: bool,
    metadata: &str,
) -> Result<()> {
    let mut exporter = Exporter::new(path, fun, shapeless, metadata);
    exporter.trace(args, kwargs)?;
    exporter.close()
}

/// What a trace holds, reported in order to an export callback (MLX's
/// `export_function` with a callable in place of a file). Arrays are named
/// `input_i`, `constant_i` and `node_k_j` (output `j` of node `k`).
#[derive(Debug)]
pub enum TraceEvent {
    /// The arguments, positional then keyword: name, shape and dtype.
    Inputs(Vec<(String, OutputSpec)>),
    /// The keyword arguments: keyword and input name.
    KeywordInputs(Vec<(String, String)>),
    /// The function's outputs.
    Outputs(Vec<(String, OutputSpec)>),
    /// The constants the trace reads.
    Constants(Vec<(String, Array)>),
    /// One node: the primitive's class name (the op for elementwise
    /// primitives, as MLX's `"Subtract"`; else the tag, as `"Reduce"`),
    /// its parameters as a list (a logarithm is MLX's `"Log"` with its
    /// base, `[2]` for e), its inputs and outputs.
    Primitive {
        /// The primitive's name.
        name: String,
        /// Its parameter values, in field order.
        arguments: Vec<Value>,
        /// Its inputs.
        inputs: Vec<(String, OutputSpec)>,
        /// Its outputs.
        outputs: Vec<(String, OutputSpec)>,
    },
}

/// Traces `fun` as [`export_function`] does and describes the trace.
pub fn trace_events(fun: &ExportFn, args: &[Array], kwargs: &Kwargs, shapeless: bool) -> Result<Vec<TraceEvent>> {
    let mut constants = Constants::default();
    let record = trace(fun, args, kwargs, shapeless, &mut constants)?;
    let inputs: Vec<OutputSpec> = record.args.iter().chain(record.kwargs.iter().map(|(_, s)| s)).cloned().collect();
    let name = |r: &Ref| match *r {
        Ref::Input(i) => format!("input_{i}"),
        Ref::Constant(i) => format!("constant_{i}"),
        Ref::Node(k, j) => format!("node_{k}_{j}"),
    };
    let described = |r: &Ref| {
        let spec = match *r {
            Ref::Input(i) => inputs[i].clone(),
            Ref::Constant(i) => OutputSpec::of(&constants.arrays[i]),
            Ref::Node(k, j) => record.nodes[k].outputs[j].clone(),
        };
        (name(r), spec)
    };
    let mut events = vec![
        TraceEvent::Inputs((0..inputs.len()).map(|i| described(&Ref::Input(i))).collect()),
        TraceEvent::KeywordInputs(
            record
                .kwargs
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k.clone(), name(&Ref::Input(record.args.len() + i))))
                .collect(),
        ),
        TraceEvent::Outputs(record.outputs.iter().map(described).collect()),
        TraceEvent::Constants(
            constants.arrays.iter().enumerate().map(|(i, a)| (name(&Ref::Constant(i)), a.clone())).collect(),
        ),
    ];
    for (k, node) in record.nodes.iter().enumerate() {
        let (name, arguments) = match (node.primitive.as_str(), &node.params) {
            // MLX's one Log primitive carries its base (enum two, ten, e).
            ("Unary", Value::String(op)) if matches!(op.as_str(), "Log" | "Log2" | "Log10") => {
                let base = match op.as_str() {
                    "Log2" => 0,
                    "Log10" => 1,
                    _ => 2,
                };
                ("Log".to_string(), vec![Value::from(base)])
            }
            ("Unary" | "Binary", Value::String(op)) => (op.clone(), vec![]),
            (tag, Value::Object(fields)) => (tag.to_string(), fields.values().cloned().collect()),
            (tag, Value::Null) => (tag.to_string(), vec![]),
            (tag, value) => (tag.to_string(), vec![value.clone()]),
        };
        events.push(TraceEvent::Primitive {
            name,
            arguments,
            inputs: node.inputs.iter().map(described).collect(),
            outputs: (0..node.outputs.len()).map(|j| described(&Ref::Node(k, j))).collect(),
        });
    }
    Ok(events)
}
