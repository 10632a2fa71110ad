//! A cache of freed host buffers, reused for outputs of the same dtype and
//! length (as MLX's allocator does). Fresh memory costs a page fault per page
//! on first touch; a reused buffer costs nothing, which keeps loops over
//! large arrays at memory speed.

use super::storage::{CpuBuffer, CpuElement};
use crate::dtype::Dtype;
use std::collections::{HashMap, VecDeque};
use std::sync::{LazyLock, Mutex, MutexGuard};

/// Buffers smaller than this are left to the system allocator, or to the
/// thread's pool of small buffers.
const MIN_CACHED_BYTES: usize = 1 << 16;

/// Small buffers at least this large are kept in a per-thread pool.
const MIN_POOLED_BYTES: usize = 1 << 12;

/// How many small buffers a thread keeps.
const SMALL_POOL_LEN: usize = 32;

thread_local! {
    /// Small buffers this thread freed (the fused evaluator's per-block
    /// intermediates, small eager outputs), reused by the next output of
    /// the same dtype and length on this thread: no lock, no zeroing.
    static SMALL: std::cell::RefCell<Vec<CpuBuffer>> = const { std::cell::RefCell::new(Vec::new()) };
}

struct Cache {
    free: HashMap<(Dtype, usize), Vec<CpuBuffer>>,
    /// Keys in the order buffers were cached, oldest first (for eviction).
    order: VecDeque<(Dtype, usize)>,
    bytes: usize,
    limit: Option<usize>,
}

static CACHE: LazyLock<Mutex<Cache>> =
    LazyLock::new(|| Mutex::new(Cache { free: HashMap::new(), order: VecDeque::new(), bytes: 0, limit: None }));

fn lock() -> MutexGuard<'static, Cache> {
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

impl Cache {
    fn limit(&mut self) -> usize {
        // Default: a quarter of physical memory.
        *self.limit.get_or_insert_with(|| crate::memory::physical_memory() / 4)
    }

    fn evict_oldest(&mut self) {
        while let Some(key) = self.order.pop_front() {
            if let Some(list) = self.free.get_mut(&key) {
                if let Some(buf) = list.pop() {
                    self.bytes -= nbytes(&buf);
                    return;
                }
            }
        }
    }
}

fn nbytes(b: &CpuBuffer) -> usize {
    crate::with_buffer!(b, v => std::mem::size_of_val(v.as_slice()))
}

fn key(b: &CpuBuffer) -> (Dtype, usize) {
    fn of<T: CpuElement>(v: &[T]) -> (Dtype, usize) {
        (T::DTYPE, v.len())
    }
    crate::with_buffer!(b, v => of(v.as_slice()))
}

/// Keeps a freed buffer for reuse (or drops it if small, over the limit, or
/// foreign: memory another library owns goes back to it, never to a reuse).
pub(crate) fn recycle(buffer: CpuBuffer) {
    let size = nbytes(&buffer);
    if buffer.is_foreign() {
        return;
    }
    if size < MIN_CACHED_BYTES {
        if size >= MIN_POOLED_BYTES {
            // (After the thread's pool is gone, at thread exit, the buffer is freed.)
            let _ = SMALL.try_with(|pool| {
                let mut pool = pool.borrow_mut();
                if pool.len() < SMALL_POOL_LEN {
                    pool.push(buffer);
                }
            });
        }
        return;
    }
    let mut cache = lock();
    let limit = cache.limit();
    if size > limit {
        return;
    }
    while cache.bytes + size > limit {
        cache.evict_oldest();
    }
    let k = key(&buffer);
    cache.bytes += size;
    cache.order.push_back(k);
    cache.free.entry(k).or_default().push(buffer);
}

/// A cached buffer of `n` elements of `T`, with stale contents, if any.
pub(crate) fn take<T: CpuElement>(n: usize) -> Option<Vec<T>> {
    let size = n * std::mem::size_of::<T>();
    if size < MIN_CACHED_BYTES {
        if size < MIN_POOLED_BYTES {
            return None;
        }
        return SMALL
            .try_with(|pool| {
                let mut pool = pool.borrow_mut();
                let at = pool.iter().position(|b| key(b) == (T::DTYPE, n))?;
                T::from_buffer(pool.swap_remove(at))
            })
            .ok()
            .flatten();
    }
    let mut cache = lock();
    let buffer = cache.free.get_mut(&(T::DTYPE, n))?.pop()?;
    cache.bytes -= nbytes(&buffer);
    // The eviction order keeps a stale key; evict_oldest skips empty lists.
    T::from_buffer(buffer)
}

/// Bytes held in the cache.
pub fn cache_memory() -> usize {
    lock().bytes
}

/// Sets the cache limit in bytes, evicting as needed; returns the previous limit.
pub fn set_cache_limit(limit: usize) -> usize {
    let mut cache = lock();
    let previous = cache.limit();
    cache.limit = Some(limit);
    while cache.bytes > limit {
        cache.evict_oldest();
    }
    previous
}

/// Frees every cached buffer.
pub fn clear() {
    let mut cache = lock();
    cache.free.clear();
    cache.order.clear();
    cache.bytes = 0;
}
