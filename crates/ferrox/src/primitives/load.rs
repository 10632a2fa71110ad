//! Reading an array's bytes out of a loaded file, when it is evaluated.

use super::{fresh, no_input_rules, opaque_primitive, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::cpu::CpuStorage;
use crate::backend::{Backend, Storage};
use crate::dtype::Dtype;
use crate::error::Result;
use crate::io::Source;
use rayon::prelude::*;
use std::sync::Arc;

/// Copies above this many bytes are split over threads (page faults of a
/// memory-mapped file and the copy itself both scale with cores).
const PARALLEL_COPY_BYTES: usize = 1 << 22;

/// The row-major elements stored at `offset` in `source` (already checked to
/// lie inside it), byte-swapped when the file's byte order is not the host's.
#[derive(Debug, Clone)]
pub struct Load {
    /// The file's bytes.
    pub source: Arc<Source>,
    /// Where the elements start.
    pub offset: usize,
    /// Whether each element's bytes are reversed (big-endian files).
    pub swap_bytes: bool,
}

impl Load {
    /// The bytes as host storage of `dtype`.
    fn read(&self, dtype: Dtype, n: usize) -> Result<CpuStorage> {
        let size = dtype.size();
        let bytes = &self.source.bytes()[self.offset..self.offset + n * size];
        CpuStorage::filled_with(dtype, n, |out| {
            if out.len() >= PARALLEL_COPY_BYTES {
                out.par_chunks_mut(1 << 20).zip(bytes.par_chunks(1 << 20)).for_each(|(o, i)| o.copy_from_slice(i));
            } else {
                out.copy_from_slice(bytes);
            }
            if self.swap_bytes && size > 1 {
                // Complex numbers swap each of their two parts.
                let part = if dtype == Dtype::C64 { size / 2 } else { size };
                out.chunks_exact_mut(part).for_each(|e| e.reverse());
            }
            Ok(())
        })
    }
}

impl Primitive for Load {
    fn name(&self) -> &'static str {
        "Load"
    }
    fn eval(&self, backend: &dyn Backend, _: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let o = &outputs[0];
        let host = self.read(o.dtype, o.shape.iter().product())?;
        let storage = match backend.device().kind {
            crate::device::DeviceType::Cpu => Storage::Cpu(host),
            _ => backend.upload(&host, &crate::shape::Layout::contiguous(&o.shape))?,
        };
        Ok(fresh(storage, &o.shape))
    }
    no_input_rules!();
}

opaque_primitive!(Load);
