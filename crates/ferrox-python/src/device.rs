//! Devices, streams and their defaults; `cuda.is_available`.

use crate::errors::IntoPyResult;
use ferrox::device::{self, DeviceType};
use ferrox::{Device, Stream};
use ferrox_python_macros::guarded;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// The kind of a device: `ferrox.cpu` or `ferrox.gpu`.
#[pyclass(name = "DeviceType", module = "ferrox", eq, eq_int, frozen, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum PyDeviceType {
    /// The host processor.
    #[pyo3(name = "cpu")]
    Cpu,
    /// An accelerator.
    #[pyo3(name = "gpu")]
    Gpu,
}

impl PyDeviceType {
    fn kind(self) -> DeviceType {
        match self {
            PyDeviceType::Cpu => DeviceType::Cpu,
            PyDeviceType::Gpu => DeviceType::Gpu,
        }
    }

    fn of(kind: DeviceType) -> Self {
        match kind {
            DeviceType::Cpu => PyDeviceType::Cpu,
            DeviceType::Gpu => PyDeviceType::Gpu,
        }
    }
}

/// A device: a type and an index.
///
/// Args:
///     type (DeviceType): ``ferrox.cpu`` or ``ferrox.gpu``.
///     index (int, optional): Index of the device among those of its type. Default: ``0``.
#[pyclass(name = "Device", module = "ferrox", frozen)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDevice(pub Device);

#[guarded]
#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (r#type, index = 0))]
    fn new(r#type: PyDeviceType, index: usize) -> Self {
        PyDevice(Device { kind: r#type.kind(), index })
    }

    /// The device's type.
    #[getter]
    fn r#type(&self) -> PyDeviceType {
        PyDeviceType::of(self.0.kind)
    }

    fn __repr__(&self) -> String {
        self.0.to_string()
    }

    /// Equal to a Device of the same type and index, and (as MLX's) to a
    /// DeviceType, which stands for the first device of that type.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        let py = other.py();
        let same = if let Ok(d) = other.downcast::<PyDevice>() {
            d.get().0 == self.0
        } else if let Ok(t) = other.downcast::<PyDeviceType>() {
            t.get().kind() == self.0.kind && self.0.index == 0
        } else {
            return Ok(py.NotImplemented());
        };
        Ok(same.into_pyobject(py)?.to_owned().into_any().unbind())
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.0.hash(&mut h);
        h.finish()
    }
}

/// A stream of work on a device.
#[pyclass(name = "Stream", module = "ferrox", eq, frozen, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyStream(pub Stream);

#[guarded]
#[pymethods]
impl PyStream {
    /// The device the stream runs on.
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice(self.0.device)
    }

    fn __repr__(&self) -> String {
        self.0.to_string()
    }
}

/// A stream that is a different stream in each thread that uses it (MLX's
/// `ThreadLocalStream`): each thread gets its own on first use.
#[pyclass(name = "ThreadLocalStream", module = "ferrox", frozen)]
#[derive(Clone, Copy)]
pub struct PyThreadLocalStream {
    device: Device,
    id: usize,
}

static NEXT_THREAD_LOCAL: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

thread_local! {
    /// This thread's stream for each thread-local stream id.
    static THREAD_STREAMS: std::cell::RefCell<std::collections::HashMap<usize, Stream>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

impl PyThreadLocalStream {
    /// This thread's stream.
    fn resolve(&self) -> PyResult<Stream> {
        if let Some(s) = THREAD_STREAMS.with(|m| m.borrow().get(&self.id).copied()) {
            return Ok(s);
        }
        let s = device::new_stream(self.device).py()?;
        THREAD_STREAMS.with(|m| m.borrow_mut().insert(self.id, s));
        Ok(s)
    }
}

#[guarded]
#[pymethods]
impl PyThreadLocalStream {
    /// The device the stream runs on.
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice(self.device)
    }

    fn __repr__(&self) -> String {
        format!("ThreadLocalStream({}, {})", self.device, self.id)
    }
}

/// Reads a `Device` or `DeviceType` argument.
pub fn device_arg(obj: &Bound<'_, PyAny>) -> PyResult<Device> {
    if let Ok(d) = obj.extract::<PyDevice>() {
        return Ok(d.0);
    }
    if let Ok(t) = obj.extract::<PyDeviceType>() {
        return Ok(Device { kind: t.kind(), index: 0 });
    }
    Err(PyTypeError::new_err("Expected a ferrox.Device or ferrox.DeviceType."))
}

/// The device a `stream=` argument names (a Stream, thread-local stream,
/// Device or DeviceType), without resolving it to a stream (the device
/// need not exist here).
pub fn named_device(obj: &Bound<'_, PyAny>) -> PyResult<Device> {
    if let Ok(s) = obj.extract::<PyStream>() {
        return Ok(s.0.device);
    }
    if let Ok(t) = obj.downcast::<PyThreadLocalStream>() {
        return Ok(t.get().device);
    }
    device_arg(obj)
}

/// Reads a `stream=` argument (a Stream, Device or DeviceType).
pub fn stream_arg(obj: &Bound<'_, PyAny>) -> PyResult<Stream> {
    if let Ok(s) = obj.extract::<PyStream>() {
        check_owner(s.0)?;
        return Ok(s.0);
    }
    if let Ok(t) = obj.downcast::<PyThreadLocalStream>() {
        return t.get().resolve();
    }
    let dev = device_arg(obj)?;
    if !device::is_available(dev) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("{dev} is not available on this machine.")));
    }
    Ok(device::default_stream(dev))
}

/// Runs `f` with ops placed on the stream given as `stream=` (if any).
pub fn on_stream<R>(stream: Option<&Bound<'_, PyAny>>, f: impl FnOnce() -> R) -> PyResult<R> {
    match stream {
        None => Ok(f()),
        Some(s) if s.is_none() => Ok(f()),
        Some(s) => Ok(device::with_stream(stream_arg(s)?, f)),
    }
}

/// The device ops run on by default.
///
/// Returns:
///     Device: The result.
#[guarded]
#[pyfunction]
fn default_device() -> PyDevice {
    PyDevice(device::default_device())
}

/// Sets the default device (a Device or DeviceType).
///
/// Args:
///     device (Device): The new default device.
#[guarded]
#[pyfunction]
fn set_default_device(device: &Bound<'_, PyAny>) -> PyResult<()> {
    device::set_default_device(device_arg(device)?).py()
}

/// The default stream of a device.
///
/// Args:
///     device (Device): The device.
///
/// Returns:
///     Stream: The result.
#[guarded]
#[pyfunction]
fn default_stream(device: &Bound<'_, PyAny>) -> PyResult<PyStream> {
    let device = device_arg(device)?;
    if !device::is_available(device) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "[default_stream] {device} is not available on this machine."
        )));
    }
    Ok(PyStream(device::default_stream(device)))
}

/// Creates a new stream on a device.
///
/// Args:
///     device (Device): The device of the stream.
///
/// Returns:
///     Stream: The result.
#[guarded]
#[pyfunction]
fn new_stream(device: &Bound<'_, PyAny>) -> PyResult<PyStream> {
    let stream = device::new_stream(device_arg(device)?).py()?;
    owners().insert(stream, std::thread::current().id());
    Ok(PyStream(stream))
}

/// The thread each `new_stream` stream belongs to: as in MLX, such a stream
/// is its maker's; other threads use `new_thread_local_stream` (a stream of
/// their own) or `new_thread_unsafe_stream` (one any thread may use).
fn owners() -> std::sync::MutexGuard<'static, std::collections::HashMap<Stream, std::thread::ThreadId>> {
    static OWNERS: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<Stream, std::thread::ThreadId>>> =
        std::sync::OnceLock::new();
    OWNERS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner())
}

/// The RuntimeError of a `new_stream` stream used by another thread (MLX's).
fn check_owner(stream: Stream) -> PyResult<()> {
    match owners().get(&stream) {
        Some(&owner) if owner != std::thread::current().id() => {
            Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "[stream] {stream} belongs to the thread that made it with new_stream; use new_thread_local_stream \
             (a stream per thread) or new_thread_unsafe_stream in several threads."
            )))
        }
        _ => Ok(()),
    }
}

/// A stream that is a distinct stream in each thread using it.
///
/// Args:
///     device (Device): The device.
///
/// Returns:
///     ThreadLocalStream: The result.
#[guarded]
#[pyfunction]
fn new_thread_local_stream(device: &Bound<'_, PyAny>) -> PyResult<PyThreadLocalStream> {
    let device = device_arg(device)?;
    if !device::is_available(device) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("{device} is not available on this machine.")));
    }
    let id = NEXT_THREAD_LOCAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(PyThreadLocalStream { device, id })
}

/// A new stream that any thread may use (every ferrox stream may).
///
/// Args:
///     device (Device): The device.
///
/// Returns:
///     Stream: The result.
#[guarded]
#[pyfunction]
fn new_thread_unsafe_stream(device: &Bound<'_, PyAny>) -> PyResult<PyStream> {
    Ok(PyStream(device::new_stream(device_arg(device)?).py()?))
}

/// Finishes the work of every stream and forgets this thread's
/// thread-local streams (later uses get fresh ones).
#[guarded]
#[pyfunction]
fn clear_streams(py: Python<'_>) -> PyResult<()> {
    py.allow_threads(|| device::synchronize(None)).py()?;
    THREAD_STREAMS.with(|m| m.borrow_mut().clear());
    Ok(())
}

/// Waits for all work on `stream` (default: every stream) to finish. CPU
/// work completes during evaluation, so this returns at once there.
#[guarded]
#[pyfunction]
#[pyo3(signature = (stream = None))]
fn synchronize(py: Python<'_>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let stream = match stream {
        Some(s) if !s.is_none() => Some(stream_arg(s)?),
        _ => None,
    };
    py.allow_threads(|| device::synchronize(stream)).py()
}

/// Whether a device (or the first device of a type) exists on this machine.
///
/// Args:
///     device (Device): The device.
///
/// Returns:
///     bool: The result.
#[guarded]
#[pyfunction]
fn is_available(device: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(device::is_available(device_arg(device)?))
}

/// The number of devices of a type on this machine.
///
/// Args:
///     device_type (DeviceType): The device type to count.
///
/// Returns:
///     int: The result.
#[guarded]
#[pyfunction]
fn device_count(device_type: PyDeviceType) -> usize {
    device::device_count(device_type.kind())
}

/// Makes `stream` the default stream of its device (and its device the
/// default device).
#[guarded]
#[pyfunction]
fn set_default_stream(stream: PyStream) -> PyResult<()> {
    device::set_default_stream(stream.0).py()
}

/// A context manager placing the ops built inside `with` on a stream
/// (`with ferrox.stream(ferrox.cpu): ...`), as MLX's `StreamContext`.
#[pyclass(name = "StreamContext", module = "ferrox")]
pub struct PyStreamContext {
    stream: Stream,
}

#[guarded]
#[pymethods]
impl PyStreamContext {
    fn __enter__(&self) -> PyResult<()> {
        device::enter_stream(self.stream);
        Ok(())
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        device::exit_stream();
        Ok(false)
    }
}

/// A context manager for a stream, device or device type: ops built inside
/// its `with` block run there.
///
/// Args:
///     s (Stream or Device): The stream, or a device whose default stream to use.
///
/// Returns:
///     StreamContext: The result.
#[guarded]
#[pyfunction]
fn stream(s: &Bound<'_, PyAny>) -> PyResult<PyStreamContext> {
    Ok(PyStreamContext { stream: stream_arg(s)? })
}

/// Whether a CUDA GPU can be used (false on machines without one).
///
/// Returns:
///     bool: The result.
#[guarded]
#[pyfunction]
fn cuda_is_available() -> bool {
    device::is_available(Device::GPU)
}

/// The GPU's name, or None without a GPU.
///
/// Returns:
///     str, optional: The result.
#[guarded]
#[pyfunction]
fn cuda_device_name() -> Option<String> {
    #[cfg(feature = "cuda")]
    let name = ferrox::backend::cuda::device_name();
    #[cfg(not(feature = "cuda"))]
    let name = None;
    name
}

/// Each CUDA library ferrox uses, opened if it was not yet: a dict from its
/// short name (`driver`, `nvrtc`, `cublaslt`, `cudnn`, `cufft`, `cusolver`,
/// `nccl`) to a dict with `path` (the file it was loaded from, or None),
/// `version` (or None) and `error` (why it is missing, or None).
///
/// Returns:
///     dict(str, Any): The result.
#[guarded]
#[pyfunction]
fn cuda_libraries(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let out = pyo3::types::PyDict::new(py);
    #[cfg(feature = "cuda")]
    for status in ferrox::backend::cuda::libraries::report() {
        let entry = pyo3::types::PyDict::new(py);
        entry.set_item("path", status.path.map(|p| p.to_string_lossy().into_owned()))?;
        entry.set_item("version", status.version)?;
        entry.set_item("error", status.error)?;
        out.set_item(status.library.name(), entry)?;
    }
    Ok(out)
}

/// Hands the interpreter's import path (`sys.path`) to the CUDA library
/// search, so that libraries in `nvidia-*` wheels are found.
#[cfg(feature = "cuda")]
fn register_python_paths(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let path: Vec<String> = m.py().import("sys")?.getattr("path")?.extract().unwrap_or_default();
    let paths = path.into_iter().filter(|p| !p.is_empty()).map(std::path::PathBuf::from).collect();
    ferrox::backend::cuda::libraries::set_python_paths(paths);
    Ok(())
}

/// Lets float32 matrix products on the GPU use TF32 tensor cores; returns
/// the previous setting.
///
/// Args:
///     allow (bool): Whether float32 matrix products may use TF32.
///
/// Returns:
///     bool: The result.
#[guarded]
#[pyfunction]
fn cuda_set_allow_tf32(allow: bool) -> bool {
    #[cfg(feature = "cuda")]
    let previous = ferrox::backend::cuda::set_allow_tf32(allow);
    #[cfg(not(feature = "cuda"))]
    let previous = {
        let _ = allow;
        false
    };
    previous
}

/// Properties of a device (default: the default device): `device_name`,
/// `architecture`, and `total_memory` with its alias `memory_size`, in bytes.
///
/// Args:
///     d (Device, optional): The device (the default device when None).
///
/// Returns:
///     dict(str, Any): The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (d = None))]
fn device_info<'py>(py: Python<'py>, d: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let dev = match d {
        Some(d) if !d.is_none() => device_arg(d)?,
        _ => device::default_device(),
    };
    let info = ferrox::backend::dispatcher::device_info(dev).py()?;
    let out = pyo3::types::PyDict::new(py);
    out.set_item("device_name", info.name)?;
    out.set_item("architecture", info.architecture)?;
    out.set_item("total_memory", info.total_memory)?;
    out.set_item("memory_size", info.total_memory)?;
    Ok(out)
}

/// Number of buffers moved between devices since the process started.
///
/// Returns:
///     int: The result.
#[guarded]
#[pyfunction]
fn transfer_count() -> usize {
    ferrox::backend::dispatcher::transfer_count()
}

/// Adds the device classes and functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDeviceType>()?;
    m.add_class::<PyDevice>()?;
    m.add_class::<PyStream>()?;
    m.add("cpu", PyDeviceType::Cpu)?;
    m.add("gpu", PyDeviceType::Gpu)?;
    m.add_class::<PyStreamContext>()?;
    m.add_class::<PyThreadLocalStream>()?;
    m.add_function(wrap_pyfunction!(new_thread_local_stream, m)?)?;
    #[allow(clippy::unsafe_removed_from_name)] // MLX's name; nothing here is `unsafe`
    m.add_function(wrap_pyfunction!(new_thread_unsafe_stream, m)?)?;
    m.add_function(wrap_pyfunction!(clear_streams, m)?)?;
    m.add_function(wrap_pyfunction!(is_available, m)?)?;
    m.add_function(wrap_pyfunction!(device_count, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_stream, m)?)?;
    m.add_function(wrap_pyfunction!(stream, m)?)?;
    m.add_function(wrap_pyfunction!(default_device, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_device, m)?)?;
    m.add_function(wrap_pyfunction!(default_stream, m)?)?;
    m.add_function(wrap_pyfunction!(new_stream, m)?)?;
    m.add_function(wrap_pyfunction!(synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_device_name, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_set_allow_tf32, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_libraries, m)?)?;
    #[cfg(feature = "cuda")]
    register_python_paths(m)?;
    m.add_function(wrap_pyfunction!(transfer_count, m)?)?;
    m.add_function(wrap_pyfunction!(device_info, m)?)?;
    Ok(())
}
