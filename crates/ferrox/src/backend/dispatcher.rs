//! Routes work to the backend of a device and moves data between devices.

use super::cpu::CpuBackend;
use super::{Backend, Storage};
use crate::device::{Device, DeviceType};
use crate::error::{Error, Result};
use crate::shape::Layout;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

static CPU: CpuBackend = CpuBackend;
static TRANSFERS: AtomicUsize = AtomicUsize::new(0);

/// The backend that computes on `device`, or an error if the device is absent.
pub fn backend(device: Device) -> Result<&'static dyn Backend> {
    match device.kind {
        DeviceType::Cpu if device.index == 0 => Ok(&CPU),
        DeviceType::Cpu => Err(Error::Device { op: "device", msg: format!("{device} does not exist.") }),
        DeviceType::Gpu => Err(Error::Device {
            op: "device",
            msg: format!("{device} is not available: this build has no GPU backend for this machine."),
        }),
    }
}

/// Number of buffers moved between devices since the process started.
pub fn transfer_count() -> usize {
    TRANSFERS.load(Ordering::Relaxed)
}

/// Returns storage holding `layout`'s elements on `device`: the same buffer
/// when it already lives there, otherwise a counted copy (row-contiguous,
/// in which case the returned layout is the contiguous one).
pub fn ensure_on(device: Device, storage: &Arc<Storage>, layout: &Layout) -> Result<(Arc<Storage>, Layout)> {
    if storage.device() == device {
        return Ok((storage.clone(), layout.clone()));
    }
    TRANSFERS.fetch_add(1, Ordering::Relaxed);
    let host = backend(storage.device())?.to_host(storage, layout)?;
    let contiguous = Layout::contiguous(&layout.shape);
    let moved = backend(device)?.upload(&host, &contiguous)?;
    Ok((Arc::new(moved), contiguous))
}
