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
pub(crate) fn physical_memory() -> usize {
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

/// Resets the peak to the current active memory.
pub fn reset_peak_memory() {
    PEAK.store(ACTIVE.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// Bytes held by freed buffers kept for reuse.
pub fn get_cache_memory() -> usize {
    crate::backend::cpu::cache::cache_memory()
}

/// Limits the bytes kept for reuse (default: a quarter of physical memory);
/// returns the previous limit.
pub fn set_cache_limit(limit: usize) -> usize {
    crate::backend::cpu::cache::set_cache_limit(limit)
}

/// Frees every buffer kept for reuse.
pub fn clear_cache() {
    crate::backend::cpu::cache::clear()
}
