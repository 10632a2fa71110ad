//! Routes work to the backend of a stream's device and moves data between
//! devices.

use super::cpu::{CpuBackend, CpuStorage};
use super::{Backend, Storage};
use crate::device::{Device, DeviceType, Stream};
use crate::error::{Error, Result};
use crate::shape::Layout;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

static CPU: CpuBackend = CpuBackend;
static TRANSFERS: AtomicUsize = AtomicUsize::new(0);

/// Ok if `device` exists on this machine, otherwise an error saying why not.
pub fn check_device(device: Device) -> Result<()> {
    match device.kind {
        DeviceType::Cpu if device.index == 0 => Ok(()),
        DeviceType::Gpu if device.index == 0 && gpu_available() => Ok(()),
        DeviceType::Gpu if device.index == 0 => {
            Err(Error::Device { op: "device", msg: format!("{device} is not available: {}", gpu_absence()) })
        }
        _ => Err(Error::Device { op: "device", msg: format!("{device} does not exist.") }),
    }
}

#[cfg(feature = "cuda")]
fn gpu_available() -> bool {
    super::cuda::is_available()
}

#[cfg(not(feature = "cuda"))]
fn gpu_available() -> bool {
    false
}

#[cfg(feature = "cuda")]
fn gpu_absence() -> String {
    "no usable CUDA GPU was found on this machine.".into()
}

#[cfg(not(feature = "cuda"))]
fn gpu_absence() -> String {
    "this build of ferrox has no CUDA backend (cargo feature `cuda`).".into()
}

/// The backend that runs work enqueued on `stream`.
pub fn backend(stream: Stream) -> Result<&'static dyn Backend> {
    check_device(stream.device)?;
    match stream.device.kind {
        DeviceType::Cpu => Ok(&CPU),
        #[cfg(feature = "cuda")]
        DeviceType::Gpu => Ok(super::cuda::backend_for(stream.index)?),
        #[cfg(not(feature = "cuda"))]
        DeviceType::Gpu => unreachable!("check_device refuses GPUs without the cuda feature"),
    }
}

/// What [`device_info`] reports about a device.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    /// The product name ("NVIDIA H200", the processor's model name).
    pub name: String,
    /// The instruction set ("x86_64", "sm_90").
    pub architecture: String,
    /// Bytes of memory the device has.
    pub total_memory: usize,
}

/// Properties of `device` (MLX's `device_info`).
pub fn device_info(device: Device) -> Result<DeviceInfo> {
    check_device(device)?;
    match device.kind {
        DeviceType::Cpu => Ok(DeviceInfo {
            name: cpu_model_name().unwrap_or_else(|| "cpu".into()),
            architecture: std::env::consts::ARCH.into(),
            total_memory: crate::memory::physical_memory(),
        }),
        #[cfg(feature = "cuda")]
        DeviceType::Gpu => Ok(DeviceInfo {
            name: super::cuda::device_name().unwrap_or_default(),
            architecture: super::cuda::device_architecture().unwrap_or_default(),
            total_memory: super::cuda::device_memory().unwrap_or(0),
        }),
        #[cfg(not(feature = "cuda"))]
        DeviceType::Gpu => unreachable!("check_device refuses GPUs without the cuda feature"),
    }
}

/// The processor's model name from /proc/cpuinfo, where there is one.
fn cpu_model_name() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

/// Number of buffers moved between devices since the process started.
pub fn transfer_count() -> usize {
    TRANSFERS.load(Ordering::Relaxed)
}

/// The elements `layout` selects, row-contiguous, in host memory (waits for
/// the GPU when the data lives there; that read counts as a transfer).
pub fn to_host(storage: &Storage, layout: &Layout) -> Result<CpuStorage> {
    match storage {
        Storage::Cpu(_) => CPU.to_host(storage, layout),
        #[cfg(feature = "cuda")]
        Storage::Cuda(c) => {
            TRANSFERS.fetch_add(1, Ordering::Relaxed);
            let home = c.buffer().home().index;
            super::cuda::backend_for(home)?.to_host(storage, layout)
        }
    }
}

/// Returns storage holding `layout`'s elements on `stream`'s device: the
/// same buffer when it already lives there, otherwise a counted copy
/// (row-contiguous, in which case the returned layout is the contiguous one).
pub fn ensure_on(stream: Stream, storage: &Arc<Storage>, layout: &Layout) -> Result<(Arc<Storage>, Layout)> {
    if storage.device() == stream.device {
        return Ok((storage.clone(), layout.clone()));
    }
    let contiguous = Layout::contiguous(&layout.shape);
    let moved = match &**storage {
        Storage::Cpu(host) => {
            TRANSFERS.fetch_add(1, Ordering::Relaxed);
            backend(stream)?.upload(host, layout)?
        }
        #[cfg(feature = "cuda")]
        Storage::Cuda(_) => Storage::Cpu(to_host(storage, layout)?),
    };
    Ok((Arc::new(moved), contiguous))
}
