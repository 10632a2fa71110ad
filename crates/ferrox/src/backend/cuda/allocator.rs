//! The caching device allocator.
//!
//! `cuMemAlloc` and `cuMemFree` synchronize and cost tens of microseconds, so
//! freed buffers are kept in size buckets and handed out again. A cached
//! buffer is reused only on the stream it was last written on: stream order
//! then guarantees that earlier kernels finished with it. Readers on other
//! streams are recorded, and freeing such a buffer makes its home stream
//! wait for them first.
//!
//! While a stream is captured into a CUDA graph ([`begin_capture`]), the
//! buffers allocated on it are the graph's: freed ones go to the capture's
//! own arena (reused only by later work of the same capture) and stay the
//! graph's after the capture ends, so replays never write memory that
//! another array was handed.

use super::device::{driver_error, gpu};
use super::stream::{stream, synchronize_all, GpuStream};
use crate::error::{Error, Result};
use crate::memory;
use cudarc::driver::{result, sys};
use std::collections::HashMap;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Buffers up to this size are rounded to 512 bytes, larger ones to 2 MiB.
const SMALL: usize = 1 << 20;

/// A device allocation; returns to the cache when dropped (or, for memory
/// another library owns, is handed back to it).
#[derive(Debug)]
pub(crate) struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
    size: usize,
    home: Arc<GpuStream>,
    readers: Mutex<Vec<Arc<GpuStream>>>,
    foreign: Option<ForeignOwner>,
}

/// The release of device memory ferrox borrowed from another library
/// (a DLPack import): called once no ferrox stream uses the memory.
pub struct ForeignOwner(Mutex<Option<Box<dyn FnOnce() + Send>>>);

impl ForeignOwner {
    /// Wraps the function that gives the memory back.
    pub fn new(release: impl FnOnce() + Send + 'static) -> ForeignOwner {
        ForeignOwner(Mutex::new(Some(Box::new(release))))
    }
}

impl std::fmt::Debug for ForeignOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ForeignOwner")
    }
}

/// A buffer over `size` bytes at `ptr` that another library owns; ferrox
/// streams order after `stream` for it, and `owner` runs when it is dropped.
pub(crate) fn borrow(ptr: sys::CUdeviceptr, size: usize, stream: &Arc<GpuStream>, owner: ForeignOwner) -> DeviceBuffer {
    DeviceBuffer { ptr, size, home: stream.clone(), readers: Mutex::new(Vec::new()), foreign: Some(owner) }
}

#[derive(Default)]
struct Pool {
    /// Free buffers by (stream index, bucket size).
    free: HashMap<(usize, usize), Vec<sys::CUdeviceptr>>,
    /// Bytes in `free`.
    cached: usize,
    /// Bytes handed out and not yet returned.
    active: usize,
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);
/// Cache limit in bytes; `usize::MAX` means "the device's memory".
static CACHE_LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

fn with_pool<R>(f: impl FnOnce(&mut Pool) -> R) -> R {
    let mut guard = POOL.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Pool::default))
}

/// The bucket a request of `bytes` is served from.
fn bucket(bytes: usize) -> usize {
    if bytes <= SMALL {
        bytes.max(1).next_multiple_of(512)
    } else {
        bytes.next_multiple_of(2 << 20)
    }
}

/// The buffers of a stream capture: those allocated during it, and the
/// freed ones among them by bucket size.
#[derive(Debug, Default)]
pub(crate) struct Arena {
    stream: usize,
    owned: HashSet<sys::CUdeviceptr>,
    free: HashMap<usize, Vec<sys::CUdeviceptr>>,
}

/// Whether a capture is under way (the fast check before [`CAPTURE`]).
static CAPTURING: AtomicBool = AtomicBool::new(false);
static CAPTURE: Mutex<Option<Arena>> = Mutex::new(None);

fn with_capture<R>(f: impl FnOnce(&mut Option<Arena>) -> R) -> R {
    f(&mut CAPTURE.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Starts routing the allocations of `stream` to a capture's arena (one
/// capture at a time; the caller serializes them).
pub(crate) fn begin_capture(stream: &GpuStream) {
    with_capture(|c| *c = Some(Arena { stream: stream.index, owned: HashSet::new(), free: HashMap::new() }));
    CAPTURING.store(true, Ordering::SeqCst);
}

/// Ends the capture begun by [`begin_capture`]: the arena's free buffers
/// now belong to the caller (a captured graph writes them on each replay).
pub(crate) fn end_capture() -> Arena {
    CAPTURING.store(false, Ordering::SeqCst);
    with_capture(|c| c.take()).unwrap_or_default()
}

/// Whether `ptr` was allocated during the capture under way.
pub(crate) fn allocated_in_capture(ptr: sys::CUdeviceptr) -> bool {
    with_capture(|c| c.as_ref().is_some_and(|a| a.owned.contains(&ptr)))
}

impl Drop for Arena {
    /// Gives the free buffers back to the cache of the captured stream:
    /// work enqueued there later runs after the graph's replays.
    fn drop(&mut self) {
        let free = std::mem::take(&mut self.free);
        with_pool(|p| {
            for (size, ptrs) in free {
                p.active -= size * ptrs.len();
                p.cached += size * ptrs.len();
                p.free.entry((self.stream, size)).or_default().extend(ptrs);
            }
        });
    }
}

/// A buffer from the arena of the capture under way on `stream`, if there
/// is one of that size.
fn from_arena(stream: &GpuStream, size: usize) -> Option<sys::CUdeviceptr> {
    with_capture(|c| c.as_mut().filter(|a| a.stream == stream.index)?.free.get_mut(&size)?.pop())
}

/// Keeps a buffer freed during the capture of its stream in the arena,
/// if the capture allocated it; false when it is not the capture's.
fn to_arena(stream: &GpuStream, ptr: sys::CUdeviceptr, size: usize) -> bool {
    with_capture(|c| match c.as_mut() {
        Some(a) if a.stream == stream.index && a.owned.contains(&ptr) => {
            a.free.entry(size).or_default().push(ptr);
            true
        }
        _ => false,
    })
}

/// A buffer of at least `bytes` bytes whose first use is on `stream`.
pub(crate) fn allocate(bytes: usize, stream: &Arc<GpuStream>) -> Result<DeviceBuffer> {
    let dev = gpu()?;
    let size = bucket(bytes);
    let capturing = CAPTURING.load(Ordering::SeqCst);
    if capturing {
        if let Some(ptr) = from_arena(stream, size) {
            memory::on_alloc(size);
            return Ok(DeviceBuffer {
                ptr,
                size,
                home: stream.clone(),
                readers: Mutex::new(Vec::new()),
                foreign: None,
            });
        }
    }
    let reused = with_pool(|p| {
        let ptr = p.free.get_mut(&(stream.index, size)).and_then(|v| v.pop());
        if ptr.is_some() {
            p.cached -= size;
            p.active += size;
        }
        ptr
    });
    let ptr = match reused {
        Some(ptr) => ptr,
        None => {
            // The memory limit is a guideline, as MLX's: past it the cache
            // goes back to the driver first; only a failed allocation fails.
            let limit = memory::memory_limit(dev.total_memory);
            if with_pool(|p| p.active + size + p.cached > limit) {
                clear_cache()?;
            }
            // SAFETY: plain device allocation in the current context.
            let ptr = match unsafe { result::malloc_sync(size) } {
                Ok(ptr) => ptr,
                Err(_) => {
                    // Give the cache back to the driver and try once more.
                    clear_cache()?;
                    unsafe { result::malloc_sync(size) }.map_err(|e| Error::OutOfMemory {
                        op: "allocate",
                        msg: format!("Out of GPU memory allocating {bytes} bytes ({e:?})."),
                    })?
                }
            };
            with_pool(|p| p.active += size);
            ptr
        }
    };
    if capturing {
        with_capture(|c| {
            if let Some(a) = c.as_mut().filter(|a| a.stream == stream.index) {
                a.owned.insert(ptr);
            }
        });
    }
    memory::on_alloc(size);
    Ok(DeviceBuffer { ptr, size, home: stream.clone(), readers: Mutex::new(Vec::new()), foreign: None })
}

impl DeviceBuffer {
    /// The device address of the first byte.
    pub(crate) fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// The stream that wrote this buffer.
    pub(crate) fn home(&self) -> &Arc<GpuStream> {
        &self.home
    }

    /// Whether kernels on `stream` may overwrite this buffer in place: ferrox
    /// owns it, `stream` wrote it and no other stream has read it, and no
    /// graph capture is under way (captured graphs keep their buffers).
    pub(crate) fn overwritable_on(&self, stream: &GpuStream) -> bool {
        self.foreign.is_none()
            && self.home.index == stream.index
            && self.readers.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
            && !CAPTURING.load(Ordering::SeqCst)
    }

    /// Orders `consumer` after the writer of this buffer and remembers it as
    /// a reader, so that freeing waits for it.
    pub(crate) fn read_on(&self, consumer: &Arc<GpuStream>) -> Result<()> {
        if consumer.index == self.home.index {
            return Ok(());
        }
        consumer.wait_for(&self.home)?;
        let mut readers = self.readers.lock().unwrap_or_else(|e| e.into_inner());
        if !readers.iter().any(|r| r.index == consumer.index) {
            readers.push(consumer.clone());
        }
        Ok(())
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if let Some(owner) = self.foreign.take() {
            // Kernels still queued may read the memory: let them finish
            // before the owner may free or reuse it.
            let readers = std::mem::take(self.readers.get_mut().unwrap_or_else(|e| e.into_inner()));
            let _ = self.home.synchronize();
            for r in &readers {
                let _ = r.synchronize();
            }
            if let Some(release) = owner.0.into_inner().unwrap_or_else(|e| e.into_inner()) {
                release();
            }
            return;
        }
        memory::on_free(self.size);
        if CAPTURING.load(Ordering::SeqCst) && to_arena(&self.home, self.ptr, self.size) {
            return;
        }
        let readers = std::mem::take(self.readers.get_mut().unwrap_or_else(|e| e.into_inner()));
        for r in &readers {
            // Work enqueued later on the home stream (which may reuse this
            // buffer) waits for the readers; if that fails, drop the buffer
            // to the driver after a full synchronization instead of caching it.
            if self.home.wait_for(r).is_err() {
                let _ = synchronize_all();
                // SAFETY: all streams are idle; the pointer came from cuMemAlloc.
                let _ = unsafe { result::free_sync(self.ptr) };
                with_pool(|p| p.active -= self.size);
                return;
            }
        }
        let over_limit = with_pool(|p| {
            p.active -= self.size;
            p.cached += self.size;
            p.free.entry((self.home.index, self.size)).or_default().push(self.ptr);
            p.cached > cache_limit()
        });
        if over_limit {
            let _ = trim_cache(cache_limit());
        }
    }
}

fn cache_limit() -> usize {
    match CACHE_LIMIT.load(Ordering::Relaxed) {
        usize::MAX => gpu().map(|d| d.total_memory).unwrap_or(usize::MAX),
        l => l,
    }
}

/// Frees cached buffers until at most `keep` bytes stay cached.
fn trim_cache(keep: usize) -> Result<()> {
    let victims = with_pool(|p| {
        let mut victims = Vec::new();
        let mut keys: Vec<(usize, usize)> = p.free.keys().copied().collect();
        keys.sort_by_key(|k| std::cmp::Reverse(k.1));
        for key in keys {
            while p.cached > keep {
                let Some(ptr) = p.free.get_mut(&key).and_then(|v| v.pop()) else { break };
                p.cached -= key.1;
                victims.push((ptr, key.0));
            }
        }
        p.free.retain(|_, v| !v.is_empty());
        victims
    });
    for (ptr, home) in victims {
        // Kernels enqueued before the buffer was cached may still use it.
        stream(home)?.synchronize()?;
        // SAFETY: the buffer is idle and was allocated by cuMemAlloc.
        unsafe { result::free_sync(ptr) }.map_err(driver_error("clear_cache"))?;
    }
    Ok(())
}

/// Bytes held in the cache.
pub(crate) fn cache_memory() -> usize {
    with_pool(|p| p.cached)
}

/// Sets the cache limit; returns the previous one.
pub(crate) fn set_cache_limit(limit: usize) -> usize {
    let previous = cache_limit();
    CACHE_LIMIT.store(limit, Ordering::Relaxed);
    if cache_memory() > limit {
        let _ = trim_cache(limit);
    }
    previous
}

/// Returns every cached buffer to the driver.
pub(crate) fn clear_cache() -> Result<()> {
    if with_pool(|p| p.cached) == 0 {
        return Ok(());
    }
    synchronize_all()?;
    trim_cache(0)
}
