//! Functions saved to files and loaded back (MLX's `export_function`,
//! `exporter` and `import_function`), and graphs drawn for Graphviz
//! (`export_to_dot`).
//!
//! Exporting calls the function on placeholder inputs of the example
//! arguments' shapes and dtypes and records the graph between them and
//! the outputs: each node is a primitive's tag and serialized parameters
//! (see [`crate::primitives::PrimitiveIdentity`]); evaluated arrays the
//! function reads (weights, Python scalars) are stored once per file as
//! constants. Importing rebuilds the recorded graph on the caller's arrays,
//! checking every node with [`crate::primitives::Primitive::output_specs`],
//! so imported functions are ordinary lazy graphs that `grad`, `vmap` and
//! the rest transform like any other. The file format is described in
//! `docs/export.md`.

mod dot;
mod file;
mod import;
mod trace;

pub use dot::export_to_dot;
pub use import::{import_function, ImportedFunction};
pub use trace::{export_function, is_export_tracing, trace_events, ExportFn, Exporter, TraceEvent};

use crate::array::Array;
use std::collections::BTreeMap;

/// Keyword arguments of an exported function, by name.
pub type Kwargs = BTreeMap<String, Array>;
