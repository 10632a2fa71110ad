//! The exported-function file: a magic string, a version, a JSON header
//! describing the traces, then the constants' bytes (layout in
//! `docs/export.md`).

use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::primitives::OutputSpec;
use crate::shape::checked_nbytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Write;

/// The first bytes of every exported-function file.
pub(crate) const MAGIC: &[u8; 8] = b"FERROXFN";
/// The format version this build writes and reads.
pub(crate) const VERSION: u32 = 1;
/// Alignment of the data section and of each constant in it.
const ALIGN: usize = 64;
/// Bytes before the header: magic, version, header length.
const PREAMBLE: usize = 8 + 4 + 8;

/// Where a node input or a function output comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Ref {
    /// The i-th argument: positional ones first, then keyword ones by name.
    Input(usize),
    /// The i-th constant of the file.
    Constant(usize),
    /// Output `.1` of node `.0` of the same trace.
    Node(usize, usize),
}

/// One primitive application.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct NodeRecord {
    /// The primitive's tag.
    pub(crate) primitive: String,
    /// Its parameters.
    pub(crate) params: Value,
    /// Its inputs.
    pub(crate) inputs: Vec<Ref>,
    /// Its outputs' shapes and dtypes when traced.
    pub(crate) outputs: Vec<OutputSpec>,
}

/// One traced signature of the function.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TraceRecord {
    /// The positional arguments' shapes and dtypes.
    pub(crate) args: Vec<OutputSpec>,
    /// The keyword arguments' names (sorted) and shapes and dtypes.
    pub(crate) kwargs: Vec<(String, OutputSpec)>,
    /// The nodes, inputs before consumers.
    pub(crate) nodes: Vec<NodeRecord>,
    /// The function's outputs.
    pub(crate) outputs: Vec<Ref>,
}

/// A constant's place in the data section.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ConstantRecord {
    pub(crate) dtype: Dtype,
    pub(crate) shape: Vec<usize>,
    /// Byte offset from the start of the data section.
    pub(crate) offset: u64,
}

/// The JSON header.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Header {
    pub(crate) metadata: String,
    pub(crate) shapeless: bool,
    pub(crate) constants: Vec<ConstantRecord>,
    pub(crate) traces: Vec<TraceRecord>,
}

fn padding(len: usize) -> usize {
    len.next_multiple_of(ALIGN) - len
}

/// Writes a file holding `header` (whose constant offsets are filled in
/// here) and the row-major bytes of each constant.
pub(crate) fn write(out: &mut impl Write, mut header: Header, constants: &[Vec<u8>]) -> std::io::Result<()> {
    let mut offset = 0usize;
    for (record, bytes) in header.constants.iter_mut().zip(constants) {
        record.offset = offset as u64;
        offset += bytes.len() + padding(bytes.len());
    }
    let json = serde_json::to_vec(&header).map_err(std::io::Error::other)?;
    out.write_all(MAGIC)?;
    out.write_all(&VERSION.to_le_bytes())?;
    out.write_all(&(json.len() as u64).to_le_bytes())?;
    out.write_all(&json)?;
    out.write_all(&[0; ALIGN][..padding(PREAMBLE + json.len())])?;
    for bytes in constants {
        out.write_all(bytes)?;
        out.write_all(&[0; ALIGN][..padding(bytes.len())])?;
    }
    out.flush()
}

/// Parses a file's bytes into its header and the bytes of each constant,
/// rejecting anything truncated, inconsistent or from an unknown version.
pub(crate) fn read<'a>(name: &str, bytes: &'a [u8]) -> Result<(Header, Vec<&'a [u8]>)> {
    let op = "import_function";
    let corrupt = |msg: String| Error::corrupt(op, name, msg);
    if bytes.len() < PREAMBLE || &bytes[..8] != MAGIC {
        return Err(corrupt("not a ferrox exported function (bad magic bytes)".into()));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(corrupt(format!("format version {version} is not supported (this build reads version {VERSION})")));
    }
    let header_len = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
    let header_end = usize::try_from(header_len)
        .ok()
        .and_then(|n| n.checked_add(PREAMBLE))
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| corrupt(format!("header of {header_len} bytes runs past the end of the file")))?;
    let header: Header =
        serde_json::from_slice(&bytes[PREAMBLE..header_end]).map_err(|e| corrupt(format!("bad header: {e}")))?;
    let data = &bytes[(header_end + padding(header_end)).min(bytes.len())..];
    let mut constants = Vec::with_capacity(header.constants.len().min(1 << 16));
    for (i, c) in header.constants.iter().enumerate() {
        let span = checked_nbytes(&c.shape, c.dtype.size()).and_then(|n| {
            let start = usize::try_from(c.offset).ok()?;
            Some(start..start.checked_add(n)?)
        });
        match span {
            Some(span) if span.end <= data.len() => constants.push(&data[span]),
            _ => return Err(corrupt(format!("constant {i} ({:?} {}) lies outside the file", c.shape, c.dtype))),
        }
    }
    Ok((header, constants))
}
