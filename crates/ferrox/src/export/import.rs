//! Loading an exported function and calling it.

use super::file::{self, Header, Ref, TraceRecord};
use super::trace::{matches, signature};
use super::Kwargs;
use crate::array::Array;
use crate::error::{Error, Result};
use crate::primitives::decode;

const OP: &str = "import_function";

/// A function loaded by [`import_function`]: call it with arrays shaped
/// like one of the traces it was exported with.
pub struct ImportedFunction {
    header: Header,
    constants: Vec<Array>,
}

impl std::fmt::Debug for ImportedFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ImportedFunction(traces={}, shapeless={})", self.header.traces.len(), self.header.shapeless)
    }
}

/// Loads a function written by [`super::export_function`] or
/// [`super::Exporter`]. Every trace is rebuilt once on placeholders, so a
/// corrupt or inconsistent file is rejected here rather than when called.
pub fn import_function(path: impl AsRef<std::path::Path>) -> Result<ImportedFunction> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::file(OP, &name, &e))?;
    ImportedFunction::from_bytes(&name, &bytes)
}

impl ImportedFunction {
    /// Parses and checks an exported function held in memory (`name` labels errors).
    pub fn from_bytes(name: &str, bytes: &[u8]) -> Result<ImportedFunction> {
        let (header, data) = file::read(name, bytes)?;
        let constants = header
            .constants
            .iter()
            .zip(data)
            .map(|(c, b)| Array::from_bytes(b, c.dtype, &c.shape))
            .collect::<Result<Vec<_>>>()?;
        let imported = ImportedFunction { header, constants };
        for (i, t) in imported.header.traces.iter().enumerate() {
            let stand_ins = t
                .args
                .iter()
                .chain(t.kwargs.iter().map(|(_, s)| s))
                .map(|s| crate::ops::zeros(&s.shape, s.dtype))
                .collect::<Result<Vec<_>>>()?;
            imported.replay(t, &stand_ins).map_err(|e| Error::corrupt(OP, name, format!("trace {i}: {e}")))?;
        }
        Ok(imported)
    }

    /// The metadata string stored with the function.
    pub fn metadata(&self) -> &str {
        &self.header.metadata
    }

    /// Whether the function accepts inputs of other shapes than its traces'.
    pub fn is_shapeless(&self) -> bool {
        self.header.shapeless
    }

    /// The function's outputs for `args` and `kwargs` (lazy, like any op's).
    pub fn call(&self, args: &[Array], kwargs: &Kwargs) -> Result<Vec<Array>> {
        let (specs, kw) = signature(args, kwargs);
        let trace =
            self.header.traces.iter().find(|t| matches(t, &specs, &kw, self.header.shapeless)).ok_or_else(|| {
                Error::invalid(
                    OP,
                    format!(
                    "No exported trace matches the inputs: {} positional arguments {:?} and keyword arguments {:?}.",
                    specs.len(),
                    specs.iter().map(|s| (s.shape.clone(), s.dtype.name())).collect::<Vec<_>>(),
                    kw.iter().map(|(k, s)| (k.as_str(), s.shape.clone(), s.dtype.name())).collect::<Vec<_>>()
                ),
                )
            })?;
        let inputs: Vec<Array> = args.iter().chain(kwargs.values()).cloned().collect();
        self.replay(trace, &inputs)
    }

    /// Rebuilds `trace`'s graph on `inputs`, checking each node.
    fn replay(&self, trace: &TraceRecord, inputs: &[Array]) -> Result<Vec<Array>> {
        let mut values: Vec<Vec<Array>> = Vec::with_capacity(trace.nodes.len());
        let fetch = |r: &Ref, values: &[Vec<Array>]| -> Result<Array> {
            let found = match *r {
                Ref::Input(i) => inputs.get(i),
                Ref::Constant(i) => self.constants.get(i),
                Ref::Node(k, j) => values.get(k).and_then(|outs| outs.get(j)),
            };
            found.cloned().ok_or_else(|| Error::invalid(OP, format!("reference {r:?} points nowhere.")))
        };
        for (k, node) in trace.nodes.iter().enumerate() {
            let primitive = decode(OP, &node.primitive, node.params.clone())?;
            let node_inputs = node.inputs.iter().map(|r| fetch(r, &values)).collect::<Result<Vec<_>>>()?;
            let specs = primitive.output_specs(&node_inputs).map_err(|e| e.in_op(OP))?;
            if !self.header.shapeless && specs != node.outputs {
                return Err(Error::invalid(
                    OP,
                    format!("node {k} ({}) gives {specs:?} where the file records {:?}.", node.primitive, node.outputs),
                ));
            }
            values.push(Array::siblings_from_boxed(specs, primitive, node_inputs)?);
        }
        trace.outputs.iter().map(|r| fetch(r, &values)).collect()
    }
}
