//! DLPack: `array.__dlpack__`/`__dlpack_device__` export an evaluated
//! array's buffer without a copy (host or GPU memory; the capsule keeps the
//! buffer alive), and `from_dlpack` imports any DLPack producer (NumPy,
//! PyTorch, JAX, CuPy) without a copy too, host and GPU tensors alike: the
//! array reads the producer's memory, which ferrox never writes (read-only
//! tensors are fine), and the producer's tensor is released when ferrox
//! drops the last array, view or pending result reading it. Host tensors
//! whose memory cannot be shared (not aligned to the element size, or bool
//! bytes other than 0 and 1) are copied, unless `copy=False` forbids it.

use crate::array::PyArray;
use crate::errors::IntoPyResult;
use ferrox::backend::Storage;
use ferrox::{Array, Dtype};
use ferrox_python_macros::guarded;
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};
use std::ffi::{c_void, CStr};
use std::sync::Arc;

const CPU: i32 = 1;
const CUDA: i32 = 2;
const CUDA_HOST: i32 = 3;

const NAME: &CStr = c"dltensor";
const NAME_VERSIONED: &CStr = c"dltensor_versioned";
const USED: &CStr = c"used_dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
/// DLPack's read-only flag (ferrox buffers are immutable).
const FLAG_READ_ONLY: u64 = 1;

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

/// What an exported tensor owns: the buffer, and its shape and strides.
struct Exported {
    _storage: Arc<Storage>,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

fn dl_dtype(dtype: Dtype) -> DLDataType {
    let bits = (dtype.size() * 8) as u8;
    let code = match dtype {
        Dtype::Bool => 6,
        Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64 => 0,
        Dtype::U8 | Dtype::U16 | Dtype::U32 | Dtype::U64 => 1,
        Dtype::F16 | Dtype::F32 | Dtype::F64 => 2,
        Dtype::BF16 => 4,
        Dtype::C64 => 5,
    };
    DLDataType { code, bits, lanes: 1 }
}

fn dtype_from_dl(t: DLDataType) -> Option<Dtype> {
    if t.lanes != 1 {
        return None;
    }
    Some(match (t.code, t.bits) {
        (6, 8) | (1, 1) => Dtype::Bool,
        (0, 8) => Dtype::I8,
        (0, 16) => Dtype::I16,
        (0, 32) => Dtype::I32,
        (0, 64) => Dtype::I64,
        (1, 8) => Dtype::U8,
        (1, 16) => Dtype::U16,
        (1, 32) => Dtype::U32,
        (1, 64) => Dtype::U64,
        (2, 16) => Dtype::F16,
        (2, 32) => Dtype::F32,
        (2, 64) => Dtype::F64,
        (4, 16) => Dtype::BF16,
        (5, 64) => Dtype::C64,
        _ => return None,
    })
}

/// The DLPack device of evaluated storage.
fn dl_device(storage: &Storage) -> DLDevice {
    match storage {
        Storage::Cpu(_) => DLDevice { device_type: CPU, device_id: 0 },
        #[cfg(feature = "cuda")]
        Storage::Cuda(_) => DLDevice { device_type: CUDA, device_id: storage.device().index as i32 },
    }
}

/// A DLTensor viewing `a`'s buffer, and the owner that keeps it alive.
fn export(a: &Array) -> PyResult<(DLTensor, Box<Exported>)> {
    let data = a.data().py()?;
    let base: *mut c_void = match &*data.storage {
        Storage::Cpu(host) => host.bytes().as_ptr() as *mut c_void,
        #[cfg(feature = "cuda")]
        Storage::Cuda(dev) => {
            // Consumers read on their own streams: finish ferrox's writes first.
            ferrox::synchronize(None).py()?;
            dev.device_address() as *mut c_void
        }
    };
    let mut owner = Box::new(Exported {
        _storage: data.storage.clone(),
        shape: a.shape().iter().map(|&d| d as i64).collect(),
        strides: data.layout.strides.iter().map(|&s| s as i64).collect(),
    });
    let tensor = DLTensor {
        data: base,
        device: dl_device(&data.storage),
        ndim: a.ndim() as i32,
        dtype: dl_dtype(a.dtype()),
        shape: owner.shape.as_mut_ptr(),
        strides: owner.strides.as_mut_ptr(),
        byte_offset: (data.layout.offset * a.dtype().size()) as u64,
    };
    Ok((tensor, owner))
}

unsafe extern "C" fn delete_managed(m: *mut DLManagedTensor) {
    // SAFETY: `m` and its context were boxed by `__dlpack__`.
    unsafe {
        drop(Box::from_raw((*m).manager_ctx as *mut Exported));
        drop(Box::from_raw(m));
    }
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    // SAFETY: `m` and its context were boxed by `__dlpack__`.
    unsafe {
        drop(Box::from_raw((*m).manager_ctx as *mut Exported));
        drop(Box::from_raw(m));
    }
}

/// Frees an exported tensor whose capsule no consumer took.
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: CPython calls this with the capsule; a consumer that took the
    // tensor renamed the capsule, and then owns (and deletes) it.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, NAME.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, NAME.as_ptr()) as *mut DLManagedTensor;
            if let Some(d) = (*m).deleter {
                d(m);
            }
        } else if ffi::PyCapsule_IsValid(capsule, NAME_VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, NAME_VERSIONED.as_ptr()) as *mut DLManagedTensorVersioned;
            if let Some(d) = (*m).deleter {
                d(m);
            }
        }
    }
}

#[guarded]
#[pymethods]
impl PyArray {
    /// A DLPack capsule viewing this array's buffer (no copy): the legacy
    /// `dltensor`, or DLPack 1.x's versioned one when `max_version` allows.
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<PyObject> {
        let _ = stream; // ferrox synchronizes before exporting GPU buffers.
        let array = if copy == Some(true) { own_copy(&self.inner)? } else { self.inner.clone() };
        py.allow_threads(|| array.eval()).py()?;
        let (tensor, owner) = export(&array)?;
        if let Some((t, id)) = dl_device {
            if t != tensor.device.device_type || id != tensor.device.device_id {
                return Err(PyBufferError::new_err(format!(
                    "[__dlpack__] The array lives on DLPack device ({}, {}), not ({t}, {id}); ferrox does not copy across devices here.",
                    tensor.device.device_type, tensor.device.device_id
                )));
            }
        }
        let ctx = Box::into_raw(owner) as *mut c_void;
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        let (pointer, name) = if versioned {
            let m = Box::new(DLManagedTensorVersioned {
                version: DLPackVersion { major: 1, minor: 0 },
                manager_ctx: ctx,
                deleter: Some(delete_versioned),
                flags: if copy == Some(true) { 0 } else { FLAG_READ_ONLY },
                dl_tensor: tensor,
            });
            (Box::into_raw(m) as *mut c_void, NAME_VERSIONED)
        } else {
            let m = Box::new(DLManagedTensor { dl_tensor: tensor, manager_ctx: ctx, deleter: Some(delete_managed) });
            (Box::into_raw(m) as *mut c_void, NAME)
        };
        // SAFETY: the pointer is a live boxed tensor; the destructor frees it
        // unless a consumer renames the capsule to take ownership.
        let capsule = unsafe { ffi::PyCapsule_New(pointer, name.as_ptr(), Some(capsule_destructor)) };
        // SAFETY: PyCapsule_New returns a new reference or NULL with an error set.
        unsafe { Bound::from_owned_ptr_or_err(py, capsule) }.map(|c| c.unbind())
    }

    /// The DLPack device of the array's buffer: (1, 0) for the CPU,
    /// (2, index) for a CUDA GPU (evaluates the array).
    fn __dlpack_device__(&self, py: Python<'_>) -> PyResult<(i32, i32)> {
        let data = py.allow_threads(|| self.inner.data()).py()?;
        let d = dl_device(&data.storage);
        Ok((d.device_type, d.device_id))
    }
}

/// A new buffer of ferrox's own holding `a`'s elements, on `a`'s device
/// (what `copy=True` asks for), computed before returning: the source may
/// be foreign memory that its owner changes afterwards.
fn own_copy(a: &Array) -> PyResult<Array> {
    let data = a.data().py()?;
    if matches!(&*data.storage, Storage::Cpu(_)) {
        let host = a.to_host().py()?;
        return Ok(Array::from_data(
            ferrox::ArrayData {
                storage: Arc::new(Storage::Cpu(host)),
                layout: ferrox::shape::Layout::contiguous(a.shape()),
            },
            a.dtype(),
        ));
    }
    let stream = ferrox::device::default_stream(data.storage.device());
    let copy = ferrox::device::with_stream(stream, || ferrox::ops::where_(&Array::scalar(true), a, a)).py()?;
    copy.eval().py()?;
    ferrox::synchronize(Some(stream)).py()?;
    Ok(copy)
}

/// How to give a taken tensor back to its producer.
#[derive(Clone, Copy)]
enum Release {
    Legacy(*mut DLManagedTensor),
    Versioned(*mut DLManagedTensorVersioned),
}

// SAFETY: a DLPack deleter may be called from any thread (ferrox calls it
// holding the GIL, which producers such as NumPy and CuPy need).
unsafe impl Send for Release {}

impl Release {
    /// Calls the producer's deleter (once).
    fn run(self) {
        Python::with_gil(|_| {
            // SAFETY: the tensor was taken from a capsule and not yet released.
            unsafe {
                match self {
                    Release::Legacy(m) => {
                        if let Some(d) = (*m).deleter {
                            d(m)
                        }
                    }
                    Release::Versioned(m) => {
                        if let Some(d) = (*m).deleter {
                            d(m)
                        }
                    }
                }
            }
        })
    }
}

/// A tensor taken from a capsule, and how to release it.
struct Taken {
    tensor: *const DLTensor,
    release: Release,
}

/// Takes the tensor out of a DLPack capsule (renaming it, as the protocol asks).
fn take_capsule(capsule: &Bound<'_, PyAny>) -> PyResult<Taken> {
    let ptr = capsule.as_ptr();
    // SAFETY: capsule checks and renames on a live Python object.
    unsafe {
        if ffi::PyCapsule_IsValid(ptr, NAME_VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(ptr, NAME_VERSIONED.as_ptr()) as *mut DLManagedTensorVersioned;
            if (*m).version.major > 1 {
                return Err(PyBufferError::new_err(format!(
                    "[from_dlpack] DLPack version {}.{} is not supported.",
                    (*m).version.major,
                    (*m).version.minor
                )));
            }
            ffi::PyCapsule_SetName(ptr, USED_VERSIONED.as_ptr());
            return Ok(Taken { tensor: &(*m).dl_tensor, release: Release::Versioned(m) });
        }
        if ffi::PyCapsule_IsValid(ptr, NAME.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(ptr, NAME.as_ptr()) as *mut DLManagedTensor;
            ffi::PyCapsule_SetName(ptr, USED.as_ptr());
            return Ok(Taken { tensor: &(*m).dl_tensor, release: Release::Legacy(m) });
        }
    }
    Err(PyTypeError::new_err("[from_dlpack] __dlpack__ did not return a DLPack capsule (already consumed?)."))
}

/// The dtype, shape and strides (in elements) of a DLTensor.
fn describe(t: &DLTensor) -> PyResult<(Dtype, Vec<usize>, Vec<i64>)> {
    let dtype = dtype_from_dl(t.dtype).ok_or_else(|| {
        PyBufferError::new_err(format!(
            "[from_dlpack] Unsupported DLPack dtype (code {}, {} bits, {} lanes).",
            t.dtype.code, t.dtype.bits, t.dtype.lanes
        ))
    })?;
    let (shape, strides) = geometry(t)?;
    Ok((dtype, shape, strides))
}

/// The shape and strides (in elements) of a DLTensor.
fn geometry(t: &DLTensor) -> PyResult<(Vec<usize>, Vec<i64>)> {
    let ndim = usize::try_from(t.ndim).map_err(|_| PyValueError::new_err("[from_dlpack] Negative ndim."))?;
    // SAFETY: a producer's shape and strides hold `ndim` entries.
    let shape: Vec<i64> =
        if ndim == 0 { vec![] } else { unsafe { std::slice::from_raw_parts(t.shape, ndim) }.to_vec() };
    if shape.iter().any(|&d| d < 0) {
        return Err(PyValueError::new_err("[from_dlpack] Negative dimension."));
    }
    let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let strides: Vec<i64> = if t.strides.is_null() || ndim == 0 {
        ferrox::shape::contiguous_strides(&shape).iter().map(|&s| s as i64).collect()
    } else {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(t.strides, ndim) }.to_vec()
    };
    Ok((shape, strides))
}

/// Whether a DLTensor holds complex128 (NumPy's default complex type).
fn is_complex128(t: &DLTensor) -> bool {
    t.dtype.code == 5 && t.dtype.bits == 128 && t.dtype.lanes == 1
}

/// A host complex128 tensor narrowed to a complex64 array (a copy), as MLX
/// imports it; the producer's tensor is released before returning.
fn narrow_complex128(t: &DLTensor, release: Release) -> PyResult<Array> {
    let result = geometry(t).and_then(|(shape, strides)| {
        let n = ferrox::shape::numel(&shape);
        let mut bytes = Vec::with_capacity(n * 8);
        let base = (t.data as *const u8).wrapping_add(t.byte_offset as usize);
        let mut index = vec![0usize; shape.len()];
        for _ in 0..n {
            let at: i64 = index.iter().zip(&strides).map(|(&i, &s)| i as i64 * s).sum();
            // SAFETY: the producer guarantees that every element its shape
            // and strides address lies in its buffer, alive until release.
            let (re, im) = unsafe {
                let p = base.wrapping_offset(at as isize * 16) as *const f64;
                (p.read_unaligned(), p.add(1).read_unaligned())
            };
            bytes.extend_from_slice(&(re as f32).to_ne_bytes());
            bytes.extend_from_slice(&(im as f32).to_ne_bytes());
            for axis in (0..shape.len()).rev() {
                index[axis] += 1;
                if index[axis] < shape[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        Array::from_bytes(&bytes, Dtype::C64, &shape).py()
    });
    release.run();
    result
}

/// The owner of a zero-copy import: a Python capsule whose destructor gives
/// the taken tensor back to its producer (under the GIL). Dropped on a
/// thread that does not hold the GIL, such as the `async_eval` worker, the
/// release is deferred by pyo3 to the next time the GIL is taken instead of
/// waiting for the GIL there: a caller holding the GIL while it waits for
/// the worker would otherwise never see it finish.
fn release_owner(py: Python<'_>, release: Release) -> PyResult<Py<PyCapsule>> {
    match PyCapsule::new_with_destructor(py, release, None, |r: Release, _| r.run()) {
        Ok(capsule) => Ok(capsule.unbind()),
        Err(e) => {
            release.run();
            Err(e)
        }
    }
}

/// A CPU array over a host DLTensor's memory, without a copy where it can
/// be shared (otherwise a copy); the producer's tensor is released when the
/// array's buffer is dropped (or now, after a copy or on error).
fn import_host_tensor(py: Python<'_>, t: &DLTensor, release: Release) -> PyResult<Array> {
    let owner = release_owner(py, release)?;
    let (dtype, shape, strides) = describe(t)?;
    let strides: Vec<isize> = strides.iter().map(|&s| s as isize).collect();
    let first = (t.data as *const u8).wrapping_add(t.byte_offset as usize);
    // SAFETY: the producer guarantees that every element the shape and
    // strides address lies in its (initialized) buffer, which stays alive
    // until the tensor is released, which `owner` does when dropped. Writes
    // by the producer while ferrox computes are the user's to avoid, as for
    // any DLPack consumer.
    unsafe { Array::from_foreign_host(first, dtype, &shape, &strides, owner) }.py()
}

/// Whether an evaluated array reads host memory another library owns.
fn shares_foreign_host_memory(a: &Array) -> PyResult<bool> {
    Ok(matches!(&*a.data().py()?.storage, Storage::Cpu(host) if host.is_foreign()))
}

/// An array from any object with `__dlpack__` (NumPy, PyTorch, JAX, CuPy, a
/// ferrox array), sharing the producer's memory (host or GPU) unless
/// `copy=True`. Host memory that cannot be shared (misaligned, or bool
/// bytes other than 0/1) is copied when `copy=None`; `copy=False` then
/// raises BufferError, as the array API asks.
///
/// Args:
///     x (array): Input array.
///     copy (bool, optional): Whether to copy.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, /, *, copy = None))]
fn from_dlpack(py: Python<'_>, x: &Bound<'_, PyAny>, copy: Option<bool>) -> PyResult<PyArray> {
    if let Ok(a) = x.downcast::<PyArray>() {
        let inner = a.borrow().inner.clone();
        return Ok(PyArray::wrap(if copy == Some(true) { own_copy(&inner)? } else { inner }));
    }
    if !x.hasattr("__dlpack__")? {
        return Err(PyTypeError::new_err(format!(
            "[from_dlpack] {} does not implement __dlpack__.",
            x.get_type().name()?
        )));
    }
    let (device_type, _): (i32, i32) = x.call_method0("__dlpack_device__")?.extract()?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("max_version", (1, 0))?;
    #[cfg(feature = "cuda")]
    let gpu_stream = ferrox::device::default_stream(ferrox::Device::GPU).index;
    match device_type {
        CPU | CUDA_HOST => {}
        #[cfg(feature = "cuda")]
        CUDA if ferrox::backend::cuda::is_available() => {
            // The producer orders its pending writes before ferrox's stream.
            kwargs.set_item("stream", ferrox::backend::cuda::raw_stream(gpu_stream).py()?)?;
        }
        other => {
            return Err(PyBufferError::new_err(format!(
                "[from_dlpack] DLPack device type {other} is not supported (host memory and CUDA GPUs are)."
            )))
        }
    }
    let capsule = match x.call_method("__dlpack__", PyTuple::empty(py), Some(&kwargs)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            kwargs.del_item("max_version")?;
            x.call_method("__dlpack__", PyTuple::empty(py), Some(&kwargs))?
        }
        Err(e) => return Err(e),
    };
    let taken = take_capsule(&capsule)?;
    // SAFETY: the tensor stays valid until it is released.
    let tensor = unsafe { &*taken.tensor };
    // complex128 (NumPy's default complex type) arrives as complex64, as
    // MLX imports it: a conversion, so never with copy=False. (float64 is
    // shared as float64: ferrox computes in it, where MLX narrows it.)
    if is_complex128(tensor) {
        if copy == Some(false) {
            taken.release.run();
            return Err(PyBufferError::new_err(
                "[from_dlpack] copy=False: complex128 tensors are converted to complex64.",
            ));
        }
        if device_type != CPU && device_type != CUDA_HOST {
            taken.release.run();
            return Err(PyBufferError::new_err("[from_dlpack] complex128 is supported for host tensors only."));
        }
        return Ok(PyArray::wrap(narrow_complex128(tensor, taken.release)?));
    }
    #[cfg(feature = "cuda")]
    if device_type == CUDA {
        let shared = import_device_tensor(py, tensor, gpu_stream, taken.release);
        let array = match (shared, copy) {
            (Ok(a), Some(true)) => own_copy(&a)?,
            (Ok(a), _) => a,
            (Err(e), _) => return Err(e),
        };
        return Ok(PyArray::wrap(array));
    }
    let shared = import_host_tensor(py, tensor, taken.release)?;
    let array = match copy {
        Some(true) => own_copy(&shared)?,
        Some(false) if !shares_foreign_host_memory(&shared)? => {
            return Err(PyBufferError::new_err(
                "[from_dlpack] copy=False: the tensor's host memory cannot be shared (it is not aligned to the \
                 element size, or holds bool bytes other than 0 and 1); pass copy=None or True.",
            ))
        }
        _ => shared,
    };
    Ok(PyArray::wrap(array))
}

/// `from_dlpack(x, copy=False)` for other bindings (`asarray(copy=False)`).
pub(crate) fn import_without_copy(x: &Bound<'_, PyAny>) -> PyResult<Array> {
    Ok(from_dlpack(x.py(), x, Some(false))?.inner)
}

/// A GPU array over a CUDA DLTensor's memory, without a copy; the producer's
/// tensor is released when the array's buffer is dropped (or now, on error).
#[cfg(feature = "cuda")]
fn import_device_tensor(py: Python<'_>, t: &DLTensor, stream: usize, release: Release) -> PyResult<Array> {
    let described = describe(t).and_then(|(dtype, shape, strides)| {
        if !(t.byte_offset as usize).is_multiple_of(dtype.size()) || strides.iter().any(|&s| s < 0) {
            return Err(PyBufferError::new_err(
                "[from_dlpack] GPU tensors need non-negative strides and an element-aligned offset.",
            ));
        }
        Ok((dtype, shape, strides))
    });
    let (dtype, shape, strides) = match described {
        Ok(d) => d,
        Err(e) => {
            release.run();
            return Err(e);
        }
    };
    let owner = release_owner(py, release)?;
    let strides: Vec<isize> = strides.iter().map(|&s| s as isize).collect();
    let offset = t.byte_offset as usize / dtype.size();
    // SAFETY: the producer keeps the memory alive until `owner` releases it and
    // ordered its writes before `stream` (DLPack's `stream=` contract).
    unsafe {
        ferrox::backend::cuda::array_from_device_memory(
            t.data as u64,
            dtype,
            &shape,
            &strides,
            offset,
            stream,
            move || drop(owner),
        )
    }
    .py()
}

/// Adds `from_dlpack` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(m, from_dlpack);
    Ok(())
}
