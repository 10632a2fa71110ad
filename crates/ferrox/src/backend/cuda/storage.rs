//! Device storage of one array buffer.

use super::allocator::{allocate, DeviceBuffer};
use super::stream::GpuStream;
use crate::dtype::Dtype;
use crate::error::Result;
use cudarc::driver::sys;
use std::sync::Arc;

/// A typed buffer in GPU memory. Kernels write it once, on the stream that
/// allocated it; later readers are ordered after that write.
#[derive(Debug)]
pub struct CudaStorage {
    buffer: DeviceBuffer,
    dtype: Dtype,
    len: usize,
}

impl CudaStorage {
    /// Uninitialised storage for `len` elements of `dtype`, written on `stream`.
    pub(crate) fn alloc(dtype: Dtype, len: usize, stream: &Arc<GpuStream>) -> Result<CudaStorage> {
        let buffer = allocate(len * dtype.size(), stream)?;
        Ok(CudaStorage { buffer, dtype, len })
    }

    /// Storage over `len` elements of `dtype` at device address `ptr` that
    /// another library owns (see [`super::allocator::ForeignOwner`]).
    pub(crate) fn borrowed(
        ptr: sys::CUdeviceptr,
        dtype: Dtype,
        len: usize,
        stream: &Arc<GpuStream>,
        owner: super::allocator::ForeignOwner,
    ) -> CudaStorage {
        CudaStorage { buffer: super::allocator::borrow(ptr, len * dtype.size(), stream, owner), dtype, len }
    }

    /// The same bytes read as `dtype` (whose size must divide the byte count).
    pub(crate) fn reinterpret(self, dtype: Dtype) -> CudaStorage {
        let bytes = self.len * self.dtype.size();
        CudaStorage { buffer: self.buffer, dtype, len: bytes / dtype.size() }
    }

    /// The stored dtype.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Device address of the first byte (for exchange with other libraries,
    /// e.g. DLPack); valid while this storage lives.
    pub fn device_address(&self) -> u64 {
        self.buffer.ptr()
    }

    /// Device address of element `offset`.
    pub(crate) fn ptr_at(&self, offset: usize) -> sys::CUdeviceptr {
        self.buffer.ptr() + (offset * self.dtype.size()) as u64
    }

    /// The underlying allocation (for stream ordering).
    pub(crate) fn buffer(&self) -> &DeviceBuffer {
        &self.buffer
    }
}
