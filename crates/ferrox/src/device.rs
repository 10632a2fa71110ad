//! Devices and streams, and the process-wide defaults ops run on.

use crate::error::{Error, Result};
use std::cell::RefCell;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::RwLock;

/// The kind of a device.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DeviceType {
    /// The host processor.
    Cpu,
    /// An accelerator (a CUDA GPU).
    Gpu,
}

/// A device: a kind and an index among devices of that kind.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Device {
    /// CPU or GPU.
    pub kind: DeviceType,
    /// Which device of that kind.
    pub index: usize,
}

impl Device {
    /// The host CPU.
    pub const CPU: Device = Device { kind: DeviceType::Cpu, index: 0 };
    /// The first GPU.
    pub const GPU: Device = Device { kind: DeviceType::Gpu, index: 0 };
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = match self.kind {
            DeviceType::Cpu => "cpu",
            DeviceType::Gpu => "gpu",
        };
        write!(f, "Device({k}, {})", self.index)
    }
}

/// An ordered queue of work on one device. Ops on one stream run in order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Stream {
    /// Process-unique stream id.
    pub index: usize,
    /// The device the stream runs on.
    pub device: Device,
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Stream({}, {})", self.device, self.index)
    }
}

/// The default device; `None` until first asked for.
static DEFAULT_DEVICE: RwLock<Option<Device>> = RwLock::new(None);
static NEXT_STREAM: AtomicUsize = AtomicUsize::new(2);
/// Streams made the default of their device by [`set_default_stream`].
static DEFAULT_STREAMS: RwLock<Vec<Stream>> = RwLock::new(Vec::new());

thread_local! {
    static STREAM_OVERRIDE: RefCell<Vec<Stream>> = const { RefCell::new(Vec::new()) };
}

/// The device ops run on when no stream is given: the GPU when one is
/// available, else the CPU. The environment variable
/// `FERROX_DEFAULT_DEVICE=cpu` (or `gpu`) overrides that choice.
pub fn default_device() -> Device {
    if let Some(d) = *DEFAULT_DEVICE.read().unwrap_or_else(|e| e.into_inner()) {
        return d;
    }
    let wanted = match std::env::var("FERROX_DEFAULT_DEVICE").as_deref() {
        Ok("cpu") => Device::CPU,
        _ if is_available(Device::GPU) => Device::GPU,
        _ => Device::CPU,
    };
    *DEFAULT_DEVICE.write().unwrap_or_else(|e| e.into_inner()).get_or_insert(wanted)
}

/// Whether a device exists on this machine.
pub fn is_available(device: Device) -> bool {
    crate::backend::dispatcher::check_device(device).is_ok()
}

/// Makes `device` the default; fails if it is not available.
pub fn set_default_device(device: Device) -> Result<()> {
    if !is_available(device) {
        return Err(Error::Device {
            op: "set_default_device",
            msg: format!("{device} is not available on this machine."),
        });
    }
    *DEFAULT_DEVICE.write().unwrap_or_else(|e| e.into_inner()) = Some(device);
    Ok(())
}

/// Waits until all work enqueued on `stream` has run (every stream of every
/// device when `None`), including work [`crate::async_eval`] queued; reports
/// (once) a failure of that work, as MLX does.
pub fn synchronize(stream: Option<Stream>) -> Result<()> {
    crate::transforms::async_eval::wait_for_async_work();
    crate::transforms::async_eval::take_async_failure()?;
    match stream {
        #[cfg(feature = "cuda")]
        Some(s) if s.device.kind == DeviceType::Gpu => {
            crate::backend::dispatcher::check_device(s.device)?;
            crate::backend::cuda::synchronize_stream(s.index)
        }
        Some(s) => crate::backend::dispatcher::check_device(s.device),
        #[cfg(feature = "cuda")]
        None => crate::backend::cuda::synchronize(),
        #[cfg(not(feature = "cuda"))]
        None => Ok(()),
    }
}

/// The default stream of a device: the one [`set_default_stream`] chose,
/// else stream 0 for the CPU and 1 for the first GPU.
pub fn default_stream(device: Device) -> Stream {
    let chosen = DEFAULT_STREAMS.read().unwrap_or_else(|e| e.into_inner()).iter().find(|s| s.device == device).copied();
    if let Some(s) = chosen {
        return s;
    }
    let index = match device.kind {
        DeviceType::Cpu => 0,
        DeviceType::Gpu => 1,
    };
    Stream { index, device }
}

/// Makes `stream` the default stream of its device (and that device the
/// default device, as MLX does).
pub fn set_default_stream(stream: Stream) -> Result<()> {
    set_default_device(stream.device)?;
    let mut streams = DEFAULT_STREAMS.write().unwrap_or_else(|e| e.into_inner());
    streams.retain(|s| s.device != stream.device);
    streams.push(stream);
    Ok(())
}

/// The number of devices of a kind on this machine.
pub fn device_count(kind: DeviceType) -> usize {
    usize::from(is_available(Device { kind, index: 0 }))
}

/// Creates a new stream on `device`.
pub fn new_stream(device: Device) -> Result<Stream> {
    if !is_available(device) {
        return Err(Error::Device { op: "new_stream", msg: format!("{device} is not available on this machine.") });
    }
    Ok(Stream { index: NEXT_STREAM.fetch_add(1, Ordering::Relaxed), device })
}

/// The stream an op built now runs on: the innermost [`with_stream`] scope,
/// otherwise the default stream of the default device.
pub fn current_stream() -> Stream {
    STREAM_OVERRIDE.with(|s| s.borrow().last().copied()).unwrap_or_else(|| default_stream(default_device()))
}

/// Places the ops this thread builds on `stream` until the matching
/// [`exit_stream`] (for context managers of other languages; Rust code
/// uses [`with_stream`]).
pub fn enter_stream(stream: Stream) {
    STREAM_OVERRIDE.with(|s| s.borrow_mut().push(stream));
}

/// Ends the innermost [`enter_stream`] of this thread.
pub fn exit_stream() {
    STREAM_OVERRIDE.with(|s| s.borrow_mut().pop());
}

/// Runs `f` with every op it builds placed on `stream` (MLX's `with mx.stream(s)`).
pub fn with_stream<R>(stream: Stream, f: impl FnOnce() -> R) -> R {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            STREAM_OVERRIDE.with(|s| s.borrow_mut().pop());
        }
    }
    STREAM_OVERRIDE.with(|s| s.borrow_mut().push(stream));
    let _pop = Pop;
    f()
}
