//! Files: NumPy's `.npy` and `.npz`, safetensors and GGUF, read and written
//! as MLX does. Loading maps the file (or takes bytes already in memory),
//! checks every header against the file's size, and returns lazy arrays
//! whose bytes are read (and moved to the default device) when they are
//! evaluated. Saving writes row-major bytes straight from the arrays.

pub mod gguf;
mod gguf_quants;
pub mod npy;
pub mod npz;
pub mod safetensors;
mod source;

pub use gguf::GgufValue;

/// Named arrays and the metadata entries of a file, as a format reader gives them.
pub(crate) type Contents<M> = (Vec<(String, Array)>, Vec<(String, M)>);
pub use source::Source;

use crate::array::Array;
use crate::backend::Storage;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::primitives::Load;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A file format ferrox reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One array (NumPy's `.npy`).
    Npy,
    /// Named arrays in a zip of `.npy` files (NumPy's `.npz`).
    Npz,
    /// Named arrays and string metadata (Hugging Face's safetensors).
    Safetensors,
    /// Named arrays and typed metadata (llama.cpp's GGUF).
    Gguf,
}

impl Format {
    /// The format called `name` (`"npy"`, `"npz"`, `"safetensors"`, `"gguf"`).
    pub fn from_name(name: &str) -> Result<Format> {
        match name {
            "npy" => Ok(Format::Npy),
            "npz" => Ok(Format::Npz),
            "safetensors" => Ok(Format::Safetensors),
            "gguf" => Ok(Format::Gguf),
            other => Err(Error::invalid("load", format!("Unknown file format {other}"))),
        }
    }

    /// The format named by the extension of `file`.
    pub fn from_file_name(file: &str) -> Result<Format> {
        match Path::new(file).extension().and_then(|e| e.to_str()) {
            Some(ext) => Format::from_name(ext),
            None => Err(Error::invalid("load", "Could not infer file format from extension")),
        }
    }

    /// The extension (without the dot).
    pub fn extension(self) -> &'static str {
        match self {
            Format::Npy => "npy",
            Format::Npz => "npz",
            Format::Safetensors => "safetensors",
            Format::Gguf => "gguf",
        }
    }
}

/// Metadata stored beside the arrays.
#[derive(Clone, Debug)]
pub enum Metadata {
    /// The format has none (`.npy`, `.npz`).
    None,
    /// safetensors' `__metadata__`: string keys and values.
    Strings(Vec<(String, String)>),
    /// GGUF's typed key-value pairs.
    Gguf(Vec<(String, GgufValue)>),
}

/// What a file holds.
#[derive(Clone, Debug)]
pub enum Loaded {
    /// A `.npy` file's array.
    Array(Array),
    /// Named arrays (in file order) and the file's metadata.
    Arrays(Vec<(String, Array)>, Metadata),
}

/// Loads the file at `path`, in `format` or the one its extension names.
pub fn load(path: &Path, format: Option<Format>) -> Result<Loaded> {
    let format = match format {
        Some(f) => f,
        None => Format::from_file_name(&path.display().to_string())?,
    };
    load_source(&Source::open("load", path)?, format)
}

/// Loads a file of `format` held in memory; `name` is what errors call it.
pub fn load_bytes(name: &str, bytes: Vec<u8>, format: Format) -> Result<Loaded> {
    load_source(&Source::from_vec(name, bytes), format)
}

/// Loads `bytes` as a file of `format` and evaluates every array it holds
/// (what the fuzz targets and their corpus replay run).
pub fn fuzz_load(format: Format, bytes: &[u8]) -> Result<()> {
    let arrays = match load_bytes("fuzz input", bytes.to_vec(), format)? {
        Loaded::Array(a) => vec![a],
        Loaded::Arrays(named, metadata) => {
            let mut all: Vec<Array> = named.into_iter().map(|(_, a)| a).collect();
            if let Metadata::Gguf(values) = metadata {
                all.extend(values.into_iter().filter_map(|(_, v)| match v {
                    GgufValue::Array(a) => Some(a),
                    _ => None,
                }));
            }
            all
        }
    };
    crate::eval(&arrays)
}

/// Loads `source` as a file of `format`.
pub fn load_source(source: &Arc<Source>, format: Format) -> Result<Loaded> {
    match format {
        Format::Npy => Ok(Loaded::Array(npy::load(source, 0, source.bytes().len())?)),
        Format::Npz => Ok(Loaded::Arrays(npz::load(source)?, Metadata::None)),
        Format::Safetensors => {
            let (arrays, metadata) = safetensors::load(source)?;
            Ok(Loaded::Arrays(arrays, Metadata::Strings(metadata)))
        }
        Format::Gguf => {
            let (arrays, metadata) = gguf::load(source)?;
            Ok(Loaded::Arrays(arrays, Metadata::Gguf(metadata)))
        }
    }
}

/// `path` with `.ext` appended unless it already ends so (MLX's rule).
pub fn with_extension(path: &Path, format: Format) -> PathBuf {
    let ext = format!(".{}", format.extension());
    let text = path.as_os_str().to_string_lossy();
    if text.ends_with(&ext) {
        path.to_path_buf()
    } else {
        PathBuf::from(format!("{text}{ext}"))
    }
}

/// Saves `a` to `path` (`.npy` appended when missing).
pub fn save(path: &Path, a: &Array) -> Result<()> {
    write_file("save", &with_extension(path, Format::Npy), |out| npy::write(out, a))
}

/// Saves named arrays to `path` (`.npz` appended when missing), deflated
/// when `compressed`.
pub fn savez(path: &Path, arrays: &[(String, Array)], compressed: bool) -> Result<()> {
    let path = with_extension(path, Format::Npz);
    let name = path.display().to_string();
    let file = std::fs::File::create(&path).map_err(|e| Error::file("savez", &name, &e))?;
    npz::write(file, &name, arrays, compressed)
}

/// Saves named arrays and string metadata to `path` in safetensors format.
pub fn save_safetensors(path: &Path, arrays: &[(String, Array)], metadata: &[(String, String)]) -> Result<()> {
    let path = with_extension(path, Format::Safetensors);
    write_file("save_safetensors", &path, |out| safetensors::write(out, arrays, metadata))
}

/// Saves named arrays and typed metadata to `path` in GGUF format.
pub fn save_gguf(path: &Path, arrays: &[(String, Array)], metadata: &[(String, GgufValue)]) -> Result<()> {
    write_file("save_gguf", &with_extension(path, Format::Gguf), |out| gguf::write(out, arrays, metadata))
}

/// Creates `path` and runs `body` on a buffered writer to it.
fn write_file(
    op: &'static str,
    path: &Path,
    body: impl FnOnce(&mut Output<std::io::BufWriter<std::fs::File>>) -> Result<()>,
) -> Result<()> {
    let name = path.display().to_string();
    let file = std::fs::File::create(path).map_err(|e| Error::file(op, &name, &e))?;
    let mut out = Output::new(op, name, std::io::BufWriter::with_capacity(1 << 20, file));
    body(&mut out)?;
    out.finish()
}

/// A writer that names the operation and the file in its errors.
pub struct Output<W: Write> {
    op: &'static str,
    name: String,
    out: W,
    written: u64,
}

impl<W: Write> Output<W> {
    /// Wraps `out`, written by `op` and called `name` in errors.
    pub fn new(op: &'static str, name: impl Into<String>, out: W) -> Output<W> {
        Output { op, name: name.into(), out, written: 0 }
    }

    /// Writes all of `bytes`.
    pub fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(|e| Error::file(self.op, &self.name, &e))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.written
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::file(self.op, &self.name, &e))
    }

    /// The inner writer, flushed.
    pub fn into_inner(mut self) -> Result<W> {
        self.out.flush().map_err(|e| Error::file(self.op, &self.name, &e))?;
        Ok(self.out)
    }
}

/// A lazy array of `dtype` and `shape` whose row-major bytes start at
/// `offset` in `source` (the caller has checked that they lie inside it).
pub(crate) fn loaded_array(
    source: &Arc<Source>,
    offset: usize,
    swap_bytes: bool,
    shape: Vec<usize>,
    dtype: Dtype,
) -> Result<Array> {
    Array::from_primitive(shape, dtype, Load { source: source.clone(), offset, swap_bytes }, vec![])
}

/// Calls `body` with `a`'s elements as row-major little-endian bytes:
/// straight from its buffer when it already lies so in host memory,
/// otherwise from a row-major host copy.
pub(crate) fn host_bytes<T>(a: &Array, body: impl FnOnce(&[u8]) -> Result<T>) -> Result<T> {
    let data = a.data()?;
    if a.size() == 0 {
        return body(&[]);
    }
    #[allow(irrefutable_let_patterns)] // without the "cuda" feature, all storage is host storage
    if let Storage::Cpu(host) = &*data.storage {
        if data.layout.is_row_contiguous() {
            let size = a.dtype().size();
            let start = data.layout.offset * size;
            return body(&host.bytes()[start..start + a.size() * size]);
        }
    }
    let host = a.to_host()?;
    body(host.bytes())
}
