//! The bytes of a file being loaded: memory-mapped from a path, or held in
//! memory (read from a Python file object or decompressed from a zip entry).
//! Arrays loaded from a file keep the source alive until they are evaluated.

use crate::error::{Error, Result};
use std::path::Path;
use std::sync::Arc;

/// Where a [`Source`]'s bytes live.
enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

/// A whole file's bytes and the name errors call it by.
pub struct Source {
    name: String,
    bytes: Bytes,
}

impl Source {
    /// Maps the file at `path` into memory (pages are read when touched).
    pub fn open(op: &'static str, path: &Path) -> Result<Arc<Source>> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| Error::file(op, &name, &e))?;
        let len = file.metadata().map_err(|e| Error::file(op, &name, &e))?.len();
        if len == 0 {
            // An empty mapping is refused by the OS; nothing to map anyway.
            return Ok(Arc::new(Source { name, bytes: Bytes::Owned(Vec::new()) }));
        }
        // SAFETY: the mapping is read-only. Another process truncating the
        // file while it is mapped would fault, as for every mmap-based loader.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::file(op, &name, &e))?;
        Ok(Arc::new(Source { name, bytes: Bytes::Mapped(map) }))
    }

    /// Bytes already in memory, named `name` in errors.
    pub fn from_vec(name: impl Into<String>, bytes: Vec<u8>) -> Arc<Source> {
        Arc::new(Source { name: name.into(), bytes: Bytes::Owned(bytes) })
    }

    /// The name errors use (the path, or a description of the file object).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// All the bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }

    /// The error for invalid content in this file.
    pub fn corrupt(&self, op: &'static str, msg: impl Into<String>) -> Error {
        Error::corrupt(op, &self.name, msg)
    }
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Source({:?}, {} bytes)", self.name, self.bytes().len())
    }
}

/// A little-endian reader over a byte slice that turns every read past the
/// end into a [`Source::corrupt`] error.
pub(crate) struct Cursor<'a> {
    source: &'a Source,
    op: &'static str,
    pub(crate) pos: usize,
}

impl<'a> Cursor<'a> {
    /// A reader at the start of `source`.
    pub(crate) fn new(source: &'a Source, op: &'static str) -> Cursor<'a> {
        Cursor { source, op, pos: 0 }
    }

    /// The error for invalid content at the current position.
    pub(crate) fn corrupt(&self, msg: impl std::fmt::Display) -> Error {
        self.source.corrupt(self.op, format!("{msg} (at byte {}).", self.pos))
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8]> {
        let bytes = self.source.bytes();
        let end = usize::try_from(n).ok().and_then(|n| self.pos.checked_add(n)).filter(|&e| e <= bytes.len());
        let Some(end) = end else {
            return Err(self.corrupt(format_args!(
                "the file ends inside {what} ({n} bytes needed, {} left); it may be truncated",
                bytes.len() - self.pos
            )));
        };
        let out = &bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    /// The next `N` bytes as an array.
    pub(crate) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        Ok(self.take(N as u64, what)?.try_into().expect("N bytes"))
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }
    pub(crate) fn u16(&mut self, what: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }
}
