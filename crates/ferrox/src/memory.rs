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
