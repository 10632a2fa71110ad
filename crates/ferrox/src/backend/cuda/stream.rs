//! CUDA streams behind ferrox's [`Stream`](crate::Stream)s, and the events
//! that order work across them.
//!
//! Each ferrox GPU stream maps to one non-blocking CUDA stream, created on
//! first use. Kernels are enqueued without waiting; a buffer remembers the
//! stream that wrote it, and a consumer on another stream first waits on an
//! event recorded there.

use super::device::{driver_error, gpu};
use crate::error::Result;
use cudarc::driver::{result, sys};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One CUDA stream.
#[derive(Debug)]
pub(crate) struct GpuStream {
    /// The driver handle.
    pub raw: sys::CUstream,
    /// The ferrox stream index it serves.
    pub index: usize,
}

// SAFETY: CUDA streams may be used from any thread of the context.
unsafe impl Send for GpuStream {}
unsafe impl Sync for GpuStream {}

static STREAMS: Mutex<Option<HashMap<usize, Arc<GpuStream>>>> = Mutex::new(None);

/// The CUDA stream for ferrox stream `index`, created on first use.
pub(crate) fn stream(index: usize) -> Result<Arc<GpuStream>> {
    let mut streams = STREAMS.lock().unwrap_or_else(|e| e.into_inner());
    let map = streams.get_or_insert_with(HashMap::new);
    if let Some(s) = map.get(&index) {
        return Ok(s.clone());
    }
    gpu()?;
    let raw = result::stream::create(result::stream::StreamKind::NonBlocking).map_err(driver_error("new_stream"))?;
    let s = Arc::new(GpuStream { raw, index });
    map.insert(index, s.clone());
    Ok(s)
}

impl GpuStream {
    /// Waits on the host until everything enqueued so far has run.
    pub(crate) fn synchronize(&self) -> Result<()> {
        gpu()?;
        // SAFETY: the stream handle is valid for the process lifetime.
        unsafe { result::stream::synchronize(self.raw) }.map_err(driver_error("synchronize"))
    }

    /// Makes work enqueued on `self` from now on wait for everything
    /// enqueued on `producer` so far (no-op when they are the same stream).
    pub(crate) fn wait_for(&self, producer: &GpuStream) -> Result<()> {
        if producer.index == self.index {
            return Ok(());
        }
        let err = driver_error("stream");
        let event = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING).map_err(&err)?;
        // SAFETY: both streams and the new event are valid; destroying an
        // event with a pending wait is allowed (resources go once it fires).
        unsafe {
            result::event::record(event, producer.raw).map_err(&err)?;
            result::stream::wait_event(self.raw, event, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)
                .map_err(&err)?;
            result::event::destroy(event).map_err(&err)
        }
    }
}

/// Waits until every stream that ferrox created has finished its work.
pub(crate) fn synchronize_all() -> Result<()> {
    let streams: Vec<Arc<GpuStream>> = {
        let guard = STREAMS.lock().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().map(|m| m.values().cloned().collect()).unwrap_or_default()
    };
    for s in streams {
        s.synchronize()?;
    }
    Ok(())
}
