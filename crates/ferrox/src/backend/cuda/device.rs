//! The GPU itself: driver start-up, the primary context and the properties
//! kernels are tuned for. Everything here is created once per process.

use super::libraries::{self, CudaLibrary};
use crate::error::{Error, Result};
use cudarc::driver::{result, sys, DriverError};
use std::cell::Cell;
use std::sync::OnceLock;

/// One CUDA device with its primary context.
pub(crate) struct GpuDevice {
    /// The primary context every ferrox thread binds to.
    pub ctx: sys::CUcontext,
    /// Compute capability, e.g. (9, 0) for Hopper.
    pub arch: (i32, i32),
    /// Streaming multiprocessors, for sizing grids.
    pub sm_count: u32,
    /// Bytes of device memory.
    pub total_memory: usize,
    /// The marketing name, e.g. "NVIDIA H200".
    pub name: String,
}

// SAFETY: a CUcontext is a process-wide handle usable from any thread once
// made current there (`bind` does that).
unsafe impl Send for GpuDevice {}
unsafe impl Sync for GpuDevice {}

static DEVICE: OnceLock<std::result::Result<GpuDevice, String>> = OnceLock::new();

thread_local! {
    static BOUND: Cell<bool> = const { Cell::new(false) };
}

/// Turns a driver error into ferrox's device error for `op` (an
/// out-of-memory error for the driver's out-of-memory code).
pub(crate) fn driver_error(op: &'static str) -> impl Fn(DriverError) -> Error {
    move |e| {
        let msg = format!("CUDA driver error: {e:?}");
        if e.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
            Error::OutOfMemory { op, msg }
        } else {
            Error::Device { op, msg }
        }
    }
}

fn start() -> std::result::Result<GpuDevice, String> {
    if std::env::var_os("FERROX_DISABLE_CUDA").is_some_and(|v| v != "0") {
        return Err("disabled by FERROX_DISABLE_CUDA".into());
    }
    libraries::load(CudaLibrary::Driver).map_err(|e| format!("no CUDA driver: {e}"))?;
    let fail = |what: &str, e: DriverError| format!("{what} failed: {e:?}");
    result::init().map_err(|e| fail("cuInit", e))?;
    let count = result::device::get_count().map_err(|e| fail("cuDeviceGetCount", e))?;
    if count < 1 {
        return Err("the CUDA driver reports no devices".into());
    }
    let device = result::device::get(0).map_err(|e| fail("cuDeviceGet", e))?;
    // SAFETY: `device` is a valid ordinal; attribute reads have no other preconditions.
    unsafe {
        let ctx = result::primary_ctx::retain(device).map_err(|e| fail("cuDevicePrimaryCtxRetain", e))?;
        result::ctx::set_current(ctx).map_err(|e| fail("cuCtxSetCurrent", e))?;
        let attr = |a| result::device::get_attribute(device, a).map_err(|e| fail("cuDeviceGetAttribute", e));
        use sys::CUdevice_attribute as A;
        let major = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let sm_count = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1) as u32;
        let total_memory = result::device::total_mem(device).map_err(|e| fail("cuDeviceTotalMem", e))?;
        let name = result::device::get_name(device).unwrap_or_else(|_| "CUDA device".into());
        BOUND.with(|b| b.set(true));
        Ok(GpuDevice { ctx, arch: (major, minor), sm_count, total_memory, name })
    }
}

/// The GPU, started on first use; an error says why there is none.
pub(crate) fn gpu() -> Result<&'static GpuDevice> {
    match DEVICE.get_or_init(start) {
        Ok(d) => {
            d.bind()?;
            Ok(d)
        }
        Err(why) => Err(Error::Device { op: "gpu", msg: format!("No CUDA GPU is available: {why}.") }),
    }
}

/// Whether a CUDA GPU can be used (starts the driver on first call).
pub fn is_available() -> bool {
    DEVICE.get_or_init(start).is_ok()
}

impl GpuDevice {
    /// Makes the context current on this thread (once per thread).
    pub(crate) fn bind(&self) -> Result<()> {
        if !BOUND.with(|b| b.get()) {
            // SAFETY: the context lives for the whole process.
            unsafe { result::ctx::set_current(self.ctx) }.map_err(driver_error("gpu"))?;
            BOUND.with(|b| b.set(true));
        }
        Ok(())
    }

    /// The NVRTC target for this device, e.g. "sm_86"; Hopper (9.0) gets
    /// "sm_90a", whose warpgroup instructions (wgmma) some kernels use.
    pub(crate) fn arch_name(&self) -> String {
        let suffix = if self.has_wgmma() { "a" } else { "" };
        format!("sm_{}{}{suffix}", self.arch.0, self.arch.1)
    }

    /// Whether the device runs the Hopper warpgroup kernels (sm_90a).
    pub(crate) fn has_wgmma(&self) -> bool {
        self.arch == (9, 0)
    }
}
