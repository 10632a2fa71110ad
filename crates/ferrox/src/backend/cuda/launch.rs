//! Launching kernels: argument packing, the strided-layout parameter blocks
//! the kernels take by value, and grid sizing.

use super::device::{driver_error, gpu};
use super::kernels::{function, Family, Module};
use super::stream::GpuStream;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::collapse_dims;
use cudarc::driver::{result, sys};
use std::any::Any;
use std::ffi::c_void;

/// Most dimensions a strided kernel takes (after merging contiguous ones).
pub(crate) const MAX_DIMS: usize = 8;

/// Shape plus `K` stride vectors, laid out as the kernels' `StridedK` structs.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Strided<const K: usize> {
    ndim: i64,
    shape: [i64; MAX_DIMS],
    strides: [[i64; MAX_DIMS]; K],
}

impl<const K: usize> Strided<K> {
    /// Packs `shape` with one stride vector per operand, merging dimensions
    /// that are contiguous in all of them first.
    pub(crate) fn new(op: &'static str, shape: &[usize], strides: [&[isize]; K]) -> Result<Strided<K>> {
        let (shape, strides) = collapse_dims(shape, strides);
        if shape.len() > MAX_DIMS {
            return Err(Error::Device {
                op,
                msg: format!(
                    "the GPU kernels take at most {MAX_DIMS} non-mergeable dimensions; this layout has {}.",
                    shape.len()
                ),
            });
        }
        let mut out = Strided { ndim: shape.len() as i64, shape: [0; MAX_DIMS], strides: [[0; MAX_DIMS]; K] };
        for (d, &n) in shape.iter().enumerate() {
            out.shape[d] = n as i64;
            for (dst, src) in out.strides.iter_mut().zip(&strides) {
                dst[d] = src[d] as i64;
            }
        }
        Ok(out)
    }
}

/// A kernel's argument list; each value is boxed so its address is stable
/// until the launch has copied it.
#[derive(Default)]
pub(crate) struct Args {
    keep: Vec<Box<dyn Any>>,
    ptrs: Vec<*mut c_void>,
}

impl Args {
    /// An empty list.
    pub(crate) fn new() -> Args {
        Args::default()
    }

    /// Appends one argument passed by value.
    pub(crate) fn arg<T: Copy + 'static>(mut self, value: T) -> Args {
        let boxed = Box::new(value);
        self.ptrs.push(&*boxed as *const T as *mut c_void);
        self.keep.push(boxed);
        self
    }

    /// Appends every argument of `more`, in order.
    pub(crate) fn extend(mut self, more: Args) -> Args {
        // The values stay in their boxes, so the pointers stay valid.
        self.keep.extend(more.keep);
        self.ptrs.extend(more.ptrs);
        self
    }
}

/// Threads per block of the one-dimensional kernels.
pub(crate) const BLOCK: u32 = 256;

/// A grid of `BLOCK`-thread blocks covering `n` items at `per_thread` items
/// per thread, capped at a few waves (the kernels loop over the rest).
/// Suits kernels with real work per element.
pub(crate) fn grid_for(n: usize, per_thread: usize) -> Result<u32> {
    let sms = gpu()?.sm_count as usize;
    let blocks = n.div_ceil(BLOCK as usize * per_thread.max(1));
    Ok(blocks.clamp(1, sms * 64) as u32)
}

/// A grid with one thread per `per_thread` items: best for light,
/// memory-bound kernels (measured on an H200: a f32 add or exp over 256M
/// elements runs about 5% faster than with a capped grid).
pub(crate) fn grid_full(n: usize, per_thread: usize) -> u32 {
    n.div_ceil(BLOCK as usize * per_thread.max(1)).clamp(1, i32::MAX as usize) as u32
}

/// How many blocks of `threads` threads of kernel `name` (of `family`'s
/// module for `dtype`) one SM holds at once: a grid of that many blocks per
/// SM runs in a single wave (at least 1).
pub(crate) fn resident_blocks(family: Family, dtype: Dtype, name: &str, threads: u32) -> Result<u32> {
    let f = function(Module::Family(family, dtype), name)?;
    let mut blocks = 0;
    // SAFETY: `f` is a loaded function; the query only reads its attributes.
    unsafe { sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut blocks, f, threads as i32, 0) }
        .result()
        .map_err(driver_error("occupancy"))?;
    Ok(blocks.max(1) as u32)
}

/// The most threads a block of kernel `name` (of `family`'s module for
/// `dtype`) may have: 1024, or fewer where its registers per thread would
/// overflow the register file.
pub(crate) fn max_block_threads(family: Family, dtype: Dtype, name: &str) -> Result<u32> {
    let f = function(Module::Family(family, dtype), name)?;
    let mut threads = 0;
    let attribute = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    // SAFETY: `f` is a loaded function; the query only reads an attribute.
    unsafe { sys::cuFuncGetAttribute(&mut threads, attribute, f) }.result().map_err(driver_error("kernel limits"))?;
    Ok(threads.max(1) as u32)
}

/// Launches kernel `name` of `family`'s module for `dtype` on `stream`.
pub(crate) fn launch(
    family: Family,
    dtype: Dtype,
    name: &str,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    stream: &GpuStream,
    args: Args,
) -> Result<()> {
    launch_in(Module::Family(family, dtype), name, grid, block, stream, args)
}

/// Lets the loaded kernel `f` use `bytes` of dynamic shared memory (a
/// kernel must opt in to more than the default 48 KiB).
pub(crate) fn allow_dynamic_shared(f: sys::CUfunction, bytes: u32) -> std::result::Result<(), result::DriverError> {
    let attribute = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    let bytes = i32::try_from(bytes).unwrap_or(i32::MAX);
    // SAFETY: `f` is a loaded function; the call sets one attribute.
    unsafe { sys::cuFuncSetAttribute(f, attribute, bytes) }.result()
}

/// [`launch`] with `shared` bytes of dynamic shared memory (raising the
/// kernel's limit first where it exceeds the default 48 KiB).
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_with_shared(
    family: Family,
    dtype: Dtype,
    name: &str,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared: u32,
    stream: &GpuStream,
    args: Args,
) -> Result<()> {
    let f = function(Module::Family(family, dtype), name)?;
    if shared > 48 * 1024 {
        allow_dynamic_shared(f, shared).map_err(driver_error("shared memory"))?;
    }
    // SAFETY: the argument list matches the kernel's signature (each caller
    // mirrors the ABI documented in the kernel file).
    unsafe { launch_function(f, grid, block, shared, stream, args) }
}

/// Launches kernel `name` of `module` on `stream`.
pub(crate) fn launch_in(
    module: Module,
    name: &str,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    stream: &GpuStream,
    args: Args,
) -> Result<()> {
    let f = function(module, name)?;
    // SAFETY: the argument list matches the kernel's signature (each caller
    // mirrors the ABI documented in the kernel file).
    unsafe { launch_function(f, grid, block, 0, stream, args) }
}

/// Launches kernel `f` with `shared_mem` bytes of dynamic shared memory.
///
/// # Safety
/// `args` must match the kernel's signature; the buffers the pointers name
/// stay alive until the stream has run the kernel (they are freed into a
/// cache reused only in stream order).
pub(crate) unsafe fn launch_function(
    f: sys::CUfunction,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared_mem: u32,
    stream: &GpuStream,
    mut args: Args,
) -> Result<()> {
    // SAFETY: as the caller promises.
    unsafe { result::launch_kernel(f, grid, block, shared_mem, stream.raw, &mut args.ptrs) }
        .map_err(driver_error("launch"))
}
