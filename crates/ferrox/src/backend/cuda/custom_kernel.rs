//! Running user kernels ([`KernelLaunch`], from `ops::custom_kernel`):
//! generated sources are compiled by NVRTC to a cubin for the device, and
//! precompiled images (PTX, cubin, fatbin) are loaded as given. Modules are
//! cached in memory by code and kernel name for the life of the process (as
//! MLX does; they skip the on-disk cache of ferrox's own kernels, which
//! would grow with every kernel a user ever writes).

use super::compiler::compile_with_options;
use super::device::gpu;
use super::elementwise::{fill, FillValue};
use super::launch::{allow_dynamic_shared, launch_function, Args};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::cpu::{creation, CpuStorage};
use crate::backend::{expanded_source, launch_shape, KernelCode, KernelLaunch, ScalarArg, MAX_NDIM};
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};
use crate::shape::Layout;
use cudarc::driver::sys;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::{Arc, Mutex};

/// The op name of the errors raised here.
const OP: &str = "custom_kernel";

/// NVRTC options of generated kernels besides the target (MLX's: helper
/// functions in a header need no `__device__`).
const NVRTC_OPTIONS: [&str; 1] = ["--device-as-default-execution-space"];

/// Dynamic shared memory a kernel may use without asking for more.
const DEFAULT_SHARED_MEMORY: u32 = 48 * 1024;

/// A loaded kernel.
struct Loaded {
    function: sys::CUfunction,
    /// The dynamic shared memory the kernel is allowed so far.
    shared_memory: u32,
}

// SAFETY: function handles are process-wide in their context.
unsafe impl Send for Loaded {}

/// Loaded kernels by code, then kernel name. Modules stay loaded: launched
/// work may still run them.
static KERNELS: Mutex<Option<HashMap<KernelCode, HashMap<String, Loaded>>>> = Mutex::new(None);

/// Loads a module image (NUL-terminated, as PTX must be), reporting the
/// driver's log when it fails.
fn load_module(image: &[u8]) -> Result<sys::CUmodule> {
    let mut log = vec![0u8; 8192];
    let mut options =
        [sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER, sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    let mut values = [log.as_mut_ptr() as *mut c_void, (log.len() - 1) as *mut c_void];
    let mut module = std::ptr::null_mut();
    // SAFETY: `image` is a complete NUL-terminated image; the log buffer
    // outlives the call and its size is passed by value as the driver expects.
    let r = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            image.as_ptr() as *const c_void,
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    r.result().map_err(|e| {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        Error::Device {
            op: OP,
            msg: format!("Failed to load the compiled kernel ({e:?}): {}", String::from_utf8_lossy(&log[..end]).trim()),
        }
    })?;
    Ok(module)
}

/// Compiles a generated kernel source (`ops::custom_kernel`) defining
/// kernel `name` to a cubin for `arch` (e.g. "sm_90"), as the backend does
/// before running it; errors carry NVRTC's log.
pub fn compile_source(name: &str, source: &str, arch: &str) -> std::result::Result<Vec<u8>, String> {
    compile_with_options(name, &expanded_source(name, source), arch, &NVRTC_OPTIONS)
}

/// The image the driver loads for `code`: the cubin NVRTC makes of a
/// generated source, or the precompiled bytes; NUL-terminated.
fn image(code: &KernelCode, name: &str) -> Result<Vec<u8>> {
    let mut image = match code {
        KernelCode::Source(source) => {
            compile_source(name, source, &gpu()?.arch_name()).map_err(|msg| Error::Device { op: OP, msg })?
        }
        KernelCode::Binary(bytes) => bytes.clone(),
    };
    image.push(0);
    Ok(image)
}

/// The function of `kernel`, compiling and loading its module on first use,
/// allowed `kernel.shared_memory` bytes of dynamic shared memory.
fn function(kernel: &KernelLaunch) -> Result<sys::CUfunction> {
    gpu()?;
    let mut guard = KERNELS.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(HashMap::new);
    if !cache.get(&kernel.code).is_some_and(|m| m.contains_key(&kernel.name)) {
        let module = load_module(&image(&kernel.code, &kernel.name)?)?;
        let cname = CString::new(kernel.name.as_str())
            .map_err(|_| Error::invalid(OP, format!("Invalid kernel name {:?}.", kernel.name)))?;
        let mut function = std::ptr::null_mut();
        // SAFETY: the module is loaded and stays loaded.
        unsafe { sys::cuModuleGetFunction(&mut function, module, cname.as_ptr()) }.result().map_err(|e| {
            Error::Device { op: OP, msg: format!("The compiled module has no kernel named {:?} ({e:?}).", kernel.name) }
        })?;
        let loaded = Loaded { function, shared_memory: DEFAULT_SHARED_MEMORY };
        cache.entry(kernel.code.clone()).or_default().insert(kernel.name.clone(), loaded);
    }
    let loaded =
        cache.get_mut(&kernel.code).and_then(|m| m.get_mut(&kernel.name)).expect("the kernel was loaded above");
    if kernel.shared_memory > loaded.shared_memory {
        allow_dynamic_shared(loaded.function, kernel.shared_memory).map_err(|e| Error::Device {
            op: OP,
            msg: format!("The kernel cannot have {} bytes of dynamic shared memory ({e:?}).", kernel.shared_memory),
        })?;
        loaded.shared_memory = kernel.shared_memory;
    }
    Ok(loaded.function)
}

/// The `Shape` parameter of an input: its extents as int32, zero-padded.
fn shape_param(layout: &Layout) -> Result<[i32; MAX_NDIM]> {
    let mut out = [0i32; MAX_NDIM];
    for (o, &d) in out.iter_mut().zip(&layout.shape) {
        *o = i32::try_from(d).map_err(|_| Error::invalid(OP, format!("Extent {d} does not fit the int32 shape.")))?;
    }
    Ok(out)
}

/// The `Strides` parameter of an input: its strides in elements, zero-padded.
fn strides_param(layout: &Layout) -> [i64; MAX_NDIM] {
    let mut out = [0i64; MAX_NDIM];
    for (o, &s) in out.iter_mut().zip(&layout.strides) {
        *o = s as i64;
    }
    out
}

/// Runs `kernel` on `s`: allocates the outputs (`(dtype, elements)` each),
/// filled with the kernel's initial value when it has one, and launches.
pub(crate) fn run(
    s: &Arc<GpuStream>,
    kernel: &KernelLaunch,
    inputs: &[(&CudaStorage, &Layout)],
    outputs: &[(Dtype, usize)],
) -> Result<Vec<CudaStorage>> {
    let outs = outputs
        .iter()
        .map(|&(dtype, n)| match kernel.init_value {
            Some(v) => {
                let one = CpuStorage::new(creation::full(Scalar::Float(v as f64), dtype, 1)?);
                fill(s, FillValue::from_bytes(one.bytes()), dtype, n)
            }
            None => CudaStorage::alloc(dtype, n, s),
        })
        .collect::<Result<Vec<_>>>()?;
    let (blocks, block) = launch_shape(kernel.grid, kernel.threadgroup);
    if blocks.contains(&0) || block.contains(&0) {
        return Ok(outs); // an empty grid launches nothing
    }
    let mut args = Args::new();
    for ((x, layout), info) in inputs.iter().zip(&kernel.shape_infos) {
        args = args.arg(x.ptr_at(layout.offset));
        if info.shape {
            args = args.arg(shape_param(layout)?);
        }
        if info.strides {
            args = args.arg(strides_param(layout));
        }
        if info.ndim {
            args = args.arg(layout.ndim() as i32);
        }
    }
    for o in &outs {
        args = args.arg(o.ptr_at(0));
    }
    for scalar in &kernel.scalars {
        args = match *scalar {
            ScalarArg::Bool(b) => args.arg(b),
            ScalarArg::Int(i) => args.arg(i),
            ScalarArg::Float(f) => args.arg(f),
        };
    }
    let f = function(kernel)?;
    let dims = |v: [u32; 3]| (v[0], v[1], v[2]);
    // SAFETY: the arguments follow the signature `ops::custom_kernel` wrote
    // (or the one a precompiled kernel documents, the caller's promise);
    // the buffers stay alive in stream order.
    unsafe { launch_function(f, dims(blocks), dims(block), kernel.shared_memory, s, args) }
        .map_err(|e| Error::Device { op: OP, msg: format!("launching kernel {:?} failed: {e}", kernel.name) })?;
    Ok(outs)
}
