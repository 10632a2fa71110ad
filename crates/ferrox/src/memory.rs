//! Memory accounting: bytes held by live buffers on every device, and the peak.

use std::sync::atomic::{AtomicUsize, Ordering};

static ACTIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Records an allocation of `bytes`.
pub(crate) fn on_alloc(bytes: usize) {
    let now = ACTIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

/// Records that `bytes` were freed.
pub(crate) fn on_free(bytes: usize) {
    ACTIVE.fetch_sub(bytes, Ordering::Relaxed);
}

/// Bytes of physical memory on this machine (1 GiB if it cannot be read).
pub fn physical_memory() -> usize {
    #[cfg(unix)]
    {
        // SAFETY: sysconf only reads system configuration.
        let (pages, page) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
        if pages > 0 && page > 0 {
            return (pages as usize).saturating_mul(page as usize);
        }
    }
    1 << 30
}

/// Bytes currently held by array buffers (not counting allocator caches).
pub fn get_active_memory() -> usize {
    ACTIVE.load(Ordering::Relaxed)
}

/// Largest value [`get_active_memory`] has reached since start or the last reset.
pub fn get_peak_memory() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Resets the peak to 0 (as MLX's; it grows again with the next allocation).
pub fn reset_peak_memory() {
    PEAK.store(0, Ordering::Relaxed);
}

/// Bytes held by freed buffers kept for reuse, on every device.
pub fn get_cache_memory() -> usize {
    let cpu = crate::backend::cpu::cache::cache_memory();
    #[cfg(feature = "cuda")]
    return cpu + crate::backend::cuda::cache_memory();
    #[cfg(not(feature = "cuda"))]
    cpu
}

/// Limits the bytes each device keeps for reuse (defaults: a quarter of
/// physical memory on the CPU, the device's memory on the GPU); returns the
/// previous CPU limit.
pub fn set_cache_limit(limit: usize) -> usize {
    #[cfg(feature = "cuda")]
    crate::backend::cuda::set_cache_limit(limit);
    crate::backend::cpu::cache::set_cache_limit(limit)
}

/// Frees every buffer kept for reuse, on every device.
pub fn clear_cache() {
    crate::backend::cpu::cache::clear();
    #[cfg(feature = "cuda")]
    let _ = crate::backend::cuda::clear_cache();
}

/// Limit set by [`set_memory_limit`]; 0 means each device's own size.
static LIMIT: AtomicUsize = AtomicUsize::new(0);

/// Sets the memory limit, a guideline as MLX's: when live buffers would
/// exceed it, evaluation first gives the devices' caches of freed buffers
/// back, then goes on; only an allocation the device cannot make fails.
/// Returns the previous limit (by default the CPU's physical memory).
pub fn set_memory_limit(limit: usize) -> usize {
    let previous = memory_limit(physical_memory());
    LIMIT.store(limit, Ordering::Relaxed);
    previous
}

/// Whether [`set_memory_limit`] set a limit.
pub(crate) fn limit_is_set() -> bool {
    LIMIT.load(Ordering::Relaxed) != 0
}

/// The memory limit for a device of `device_memory` bytes.
pub(crate) fn memory_limit(device_memory: usize) -> usize {
    match LIMIT.load(Ordering::Relaxed) {
        0 => device_memory,
        l => l.min(device_memory),
    }
}
