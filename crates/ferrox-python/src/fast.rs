//! `ferrox.fast`: the submodule mirroring `mlx.core.fast` (fused
//! normalizations, rotary embeddings and attention; custom CUDA kernels,
//! `cuda_kernel` and `precompiled_cuda_kernel`; `metal_kernel`, whose
//! kernels raise because ferrox has no Metal back-end).

use crate::args::{array_list, sequence_items, shape};
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::{on_stream, stream_arg};
use crate::dtype::PyDtype;
use crate::errors::IntoPyResult;
use crate::ops::wrap;
use ferrox::backend::ScalarArg;
use ferrox::ops::custom_kernel::{self, CudaKernel, TemplateArg};
use ferrox::ops::fast::{self, AttentionMaskArg};
use ferrox::primitives::OutputSpec;
use ferrox::{Array, Dtype, Stream};
use ferrox_python_macros::guarded;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// An optional array argument (`None` stays `None`).
fn optional_array(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Array>> {
    match obj {
        Some(o) if !o.is_none() => Ok(Some(to_array(o, None)?)),
        _ => Ok(None),
    }
}

/// Root Mean Square normalization (RMS norm) over the last axis of `x`:
/// `x * rsqrt(mean(x^2) + eps) * weight`; `weight` (one-dimensional, the
/// last axis's size) may be `None`.
///
/// Args:
///     x (array): Input array.
///     weight (array, optional): Scale applied after normalizing, or None.
///     eps (float): Added to the mean square.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, weight, eps, *, stream = None))]
fn rms_norm(
    x: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    eps: f32,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let x = to_array(x, None)?;
    let weight = optional_array(weight)?;
    wrap(on_stream(stream, || fast::rms_norm(&x, weight.as_ref(), eps)))
}

/// Layer normalization over the last axis of `x`: `(x - mean) * rsqrt(var
/// + eps) * weight + bias`; `weight` and `bias` (one-dimensional, the last
/// axis's size) may be `None`.
///
/// Args:
///     x (array): Input array.
///     weight (array, optional): Scale applied after normalizing, or None.
///     bias (array, optional): Bias added after normalizing, or None.
///     eps (float): Small constant for numerical stability.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, weight, bias, eps, *, stream = None))]
fn layer_norm(
    x: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    bias: Option<&Bound<'_, PyAny>>,
    eps: f32,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let x = to_array(x, None)?;
    let (weight, bias) = (optional_array(weight)?, optional_array(bias)?);
    wrap(on_stream(stream, || fast::layer_norm(&x, weight.as_ref(), bias.as_ref(), eps)))
}

/// Rotary positional encoding of `a` of shape `(B, *, T, D)`: the first
/// `dims` features are rotated by `(t + offset) * scale * base^(-2i/dims)`
/// (or `1 / freqs[i]`); `traditional` rotates consecutive pairs. Exactly
/// one of `base` and `freqs` must be given; `offset` is an int or an array
/// (a scalar or one offset per batch entry).
///
/// Args:
///     a (array): Input array.
///     dims (int): Number of feature dimensions to rotate.
///     traditional (bool): Rotate consecutive pairs instead of the two halves.
///     base (float, optional): Base of the rotation frequencies, or None when ``freqs`` is given.
///     scale (float): Scale applied to the positions.
///     offset (array): Position of the first element.
///     freqs (array, optional): Explicit frequencies, or None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, dims, *, traditional, base, scale, offset, freqs = None, stream = None))]
#[allow(clippy::too_many_arguments)]
fn rope(
    a: &Bound<'_, PyAny>,
    dims: i64,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    offset: &Bound<'_, PyAny>,
    freqs: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let dims = usize::try_from(dims)
        .map_err(|_| PyValueError::new_err(format!("[rope] dims must be positive but got {dims}.")))?;
    let offset = to_array(offset, None)?;
    let freqs = optional_array(freqs)?;
    wrap(on_stream(stream, || fast::rope(&a, dims, traditional, base, scale, &offset, freqs.as_ref())))
}

/// Scaled dot-product attention `softmax(scale * q k^T + mask) v` over
/// `(B, N, L, D)` queries and `(B, N_kv, S, D)` keys and values
/// (grouped-query attention when `N_kv` divides `N`), without forming the
/// score matrix. `mask` is `None`, `"causal"`, a boolean array (`False`
/// hides a key) or an additive array broadcastable to `(B, N, L, S)`;
/// `sinks` holds one extra logit per query head. `force_fused` (MLX's
/// demand for a fused kernel) is always met: every backend runs it fused.
///
/// Args:
///     q (array): Queries, shape ``(B, N_q, T_q, D)``.
///     k (array): Keys, shape ``(B, N_kv, T_kv, D)``.
///     v (array): Values, shape ``(B, N_kv, T_kv, D)``.
///     scale (float): Scale applied to the scores.
///     mask (array or str, optional): None, ``'causal'``, a boolean array (False hides) or an additive array.
///     sinks (array, optional): Per-head attention sink logits, or None.
///     force_fused (bool, optional): Refuse the unfused fallback.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (q, k, v, *, scale, mask = None, sinks = None, force_fused = false, stream = None))]
#[allow(clippy::too_many_arguments)]
fn scaled_dot_product_attention(
    q: &Bound<'_, PyAny>,
    k: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    scale: f32,
    mask: Option<&Bound<'_, PyAny>>,
    sinks: Option<&Bound<'_, PyAny>>,
    force_fused: bool,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    // MLX's `force_fused=True` demands a fused kernel; ferrox's attention is
    // a fused kernel on every backend and for every input, so either value
    // runs the same kernel.
    let _ = force_fused;
    let (q, k, v) = (to_array(q, None)?, to_array(k, None)?, to_array(v, None)?);
    let mask = match mask {
        None => AttentionMaskArg::None,
        Some(m) if m.is_none() => AttentionMaskArg::None,
        Some(m) if m.is_instance_of::<PyString>() => {
            let s: String = m.extract()?;
            if s != "causal" {
                return Err(PyValueError::new_err(format!(
                    "[scaled_dot_product_attention] invalid mask option '{s}'. Must be 'causal', or an array."
                )));
            }
            AttentionMaskArg::Causal
        }
        Some(m) => AttentionMaskArg::Array(to_array(m, None)?),
    };
    let sinks = optional_array(sinks)?;
    wrap(on_stream(stream, || fast::scaled_dot_product_attention(&q, &k, &v, scale, &mask, sinks.as_ref())))
}

/// A custom Metal kernel made by `metal_kernel`. ferrox has no Metal
/// back-end: as in MLX's builds without Metal, calling it (with
/// `cuda_kernel`'s keyword arguments) raises `RuntimeError`, except while
/// `export_function` traces a function, where the call is recorded (on the
/// GPU only: another `stream` raises `ValueError`) and the imported
/// function raises when run.
#[pyclass(module = "ferrox.fast", name = "MetalKernel", frozen)]
struct MetalKernel {
    kernel: ferrox::primitives::MetalKernel,
}

#[pymethods]
impl MetalKernel {
    /// Records the kernel's call while a function is traced for export;
    /// raises otherwise (see the class).
    #[pyo3(signature = (*, inputs, output_shapes, output_dtypes, grid, threadgroup, template = None, init_value = None, verbose = false, stream = None))]
    #[allow(clippy::too_many_arguments)] // MLX's signature
    fn __call__(
        &self,
        inputs: &Bound<'_, PyAny>,
        output_shapes: &Bound<'_, PyAny>,
        output_dtypes: &Bound<'_, PyAny>,
        grid: &Bound<'_, PyAny>,
        threadgroup: &Bound<'_, PyAny>,
        template: Option<&Bound<'_, PyAny>>,
        init_value: Option<f32>,
        verbose: bool,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyArray>> {
        const OP: &str = "metal_kernel";
        let _ = verbose; // no source is generated without Metal
        if !ferrox::export::is_export_tracing() {
            return Err(PyRuntimeError::new_err("[metal_kernel] No Metal back-end."));
        }
        metal_stream(stream)?;
        let inputs = array_list(OP, inputs)?;
        let (shapes, dtypes) = (parse_output_shapes(OP, output_shapes)?, parse_output_dtypes(OP, output_dtypes)?);
        for (what, n) in [("output_shapes", shapes.len()), ("output_dtypes", dtypes.len())] {
            if n != self.kernel.output_names.len() {
                return Err(PyValueError::new_err(format!(
                    "[metal_kernel] Expected `{what}` to have size {} but got size {n}.",
                    self.kernel.output_names.len()
                )));
            }
        }
        let template = template_args(OP, template)?
            .into_iter()
            .map(|(name, arg)| {
                let value = match arg {
                    TemplateArg::Bool(b) => b.to_string(),
                    TemplateArg::Int(i) => i.to_string(),
                    TemplateArg::Dtype(d) => d.to_string(),
                };
                (name, value)
            })
            .collect();
        let kernel = ferrox::primitives::MetalKernel {
            grid: dims3(OP, "grid", grid)?,
            threadgroup: dims3(OP, "threadgroup", threadgroup)?,
            template,
            init_value,
            outputs: shapes.into_iter().zip(dtypes).map(|(shape, dtype)| OutputSpec { shape, dtype }).collect(),
            ..self.kernel.clone()
        };
        let outputs = ferrox::primitives::metal_kernel_call(kernel, &inputs).py()?;
        Ok(outputs.into_iter().map(PyArray::wrap).collect())
    }

    fn __repr__(&self) -> String {
        "<ferrox.fast.MetalKernel>".to_string()
    }
}

/// Checks a Metal kernel's `stream=` (a Stream, Device or DeviceType; the
/// GPU's or none, as MLX requires).
fn metal_stream(stream: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    match stream {
        Some(s) if !s.is_none() && crate::device::named_device(s)?.kind != ferrox::device::DeviceType::Gpu => {
            Err(PyValueError::new_err("[metal_kernel] Only supports the GPU."))
        }
        _ => Ok(()),
    }
}

/// Checks MLX's `compile_options` of a Metal kernel: `None`, or a dict
/// whose only key is `"math_mode"` (`"safe"`, `"relaxed"` or `"fast"`).
fn check_metal_compile_options(options: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let Some(options) = options.filter(|o| !o.is_none()) else {
        return Ok(());
    };
    let dict = options
        .downcast::<PyDict>()
        .map_err(|_| PyValueError::new_err("[metal_kernel] Expected `compile_options` to be a dict."))?;
    for (key, value) in dict.iter() {
        let key: String = key.extract()?;
        if key != "math_mode" {
            return Err(PyValueError::new_err(format!("[metal_kernel] Unknown compile option `{key}`.")));
        }
        let mode: String = value.extract()?;
        if !["safe", "relaxed", "fast"].contains(&mode.as_str()) {
            return Err(PyValueError::new_err("[metal_kernel] Expected math_mode to be 'safe', 'relaxed', or 'fast'."));
        }
    }
    Ok(())
}

/// A custom Metal kernel (MLX's signature). ferrox has no Metal back-end:
/// the returned callable raises `RuntimeError` when called, as MLX's builds
/// without Metal do, except under `export_function`, which records it.
///
/// Args:
///     name (str): Name.
///     input_names (list(str)): Names of the kernel's inputs.
///     output_names (list(str)): Names of the kernel's outputs.
///     source (str): Kernel source code.
///     header (str, optional): Source code inserted before the kernel.
///     ensure_row_contiguous (bool, optional): Copy inputs to row-contiguous layout before the kernel runs.
///     atomic_outputs (bool, optional): Whether outputs are atomic (Metal only).
///     compile_options (dict(str, str), optional): Metal compile options (checked and ignored).
///
/// Returns:
///     MetalKernel: The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (name, input_names, output_names, source, header = String::new(), ensure_row_contiguous = true, atomic_outputs = false, compile_options = None))]
#[allow(clippy::too_many_arguments)] // MLX's signature
fn metal_kernel(
    name: String,
    input_names: Vec<String>,
    output_names: Vec<String>,
    source: String,
    header: String,
    ensure_row_contiguous: bool,
    atomic_outputs: bool,
    compile_options: Option<&Bound<'_, PyAny>>,
) -> PyResult<MetalKernel> {
    if output_names.is_empty() {
        return Err(PyValueError::new_err("[metal_kernel] Must specify at least one output."));
    }
    check_metal_compile_options(compile_options)?;
    let kernel = ferrox::primitives::MetalKernel {
        name,
        source,
        header,
        input_names,
        output_names,
        grid: [1; 3],
        threadgroup: [1; 3],
        template: Vec::new(),
        init_value: None,
        ensure_row_contiguous,
        atomic_outputs,
        outputs: Vec::new(),
    };
    Ok(MetalKernel { kernel })
}

/// The name of an object's type, for error messages.
fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
}

/// The items of a list or tuple argument `what` of `op`.
fn items<'py>(op: &str, what: &str, obj: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    sequence_items(op, what, obj)?.ok_or_else(|| {
        PyTypeError::new_err(format!("[{op}] `{what}` must be a list or tuple, got {}.", type_name(obj)))
    })
}

/// An int argument in MLX's `int` range [0, 2^31).
fn non_negative_int(op: &str, what: &str, obj: &Bound<'_, PyAny>) -> PyResult<u32> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("[{op}] `{what}` must hold ints, got {}.", type_name(obj))));
    }
    obj.extract::<i64>()
        .ok()
        .and_then(|v| u32::try_from(v).ok())
        .filter(|&v| v <= i32::MAX as u32)
        .ok_or_else(|| PyValueError::new_err(format!("[{op}] `{what}` must hold ints in [0, 2**31), got {obj}.")))
}

/// A `shared_memory=` argument: bytes in MLX's `int` range [0, 2^31).
fn shared_memory_arg(op: &str, bytes: i64) -> PyResult<u32> {
    u32::try_from(bytes)
        .ok()
        .filter(|&v| v <= i32::MAX as u32)
        .ok_or_else(|| PyValueError::new_err(format!("[{op}] shared_memory must be in [0, 2**31), got {bytes}.")))
}

/// A `grid=` or `threadgroup=` argument: three non-negative ints.
fn dims3(op: &str, what: &str, obj: &Bound<'_, PyAny>) -> PyResult<[u32; 3]> {
    let v = items(op, what, obj)?;
    if v.len() != 3 {
        return Err(PyValueError::new_err(format!("[{op}] `{what}` must have 3 entries, got {}.", v.len())));
    }
    Ok([non_negative_int(op, what, &v[0])?, non_negative_int(op, what, &v[1])?, non_negative_int(op, what, &v[2])?])
}

/// `output_shapes=`: a list of shapes (each a list or tuple of ints).
fn parse_output_shapes(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<usize>>> {
    items(op, "output_shapes", obj)?
        .iter()
        .map(|s| {
            if !(s.is_instance_of::<PyList>() || s.is_instance_of::<PyTuple>()) {
                return Err(PyTypeError::new_err(format!(
                    "[{op}] Each output shape must be a list or tuple of ints, got {}.",
                    type_name(s)
                )));
            }
            shape(op, s)
        })
        .collect()
}

/// `output_dtypes=`: a list of dtypes.
fn parse_output_dtypes(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<Dtype>> {
    items(op, "output_dtypes", obj)?
        .iter()
        .map(|d| {
            d.extract::<PyDtype>().map(|d| d.0).map_err(|_| {
                PyTypeError::new_err(format!(
                    "[{op}] `output_dtypes` must hold ferrox.Dtype values, got {}.",
                    type_name(d)
                ))
            })
        })
        .collect()
}

/// `template=`: None or a list of `(name, value)` pairs whose values are
/// bools, ints or dtypes.
fn template_args(op: &str, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<(String, TemplateArg)>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(Vec::new());
    };
    items(op, "template", obj)?
        .iter()
        .map(|pair| {
            let pair = sequence_items(op, "template", pair)?.filter(|p| p.len() == 2).ok_or_else(|| {
                PyTypeError::new_err(format!("[{op}] `template` must hold (name, value) pairs, got {pair}."))
            })?;
            let name: String = pair[0].extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "[{op}] Template argument names must be str, got {}.",
                    type_name(&pair[0])
                ))
            })?;
            let value = &pair[1];
            let arg = if value.is_instance_of::<PyBool>() {
                TemplateArg::Bool(value.extract()?)
            } else if value.is_instance_of::<PyInt>() {
                TemplateArg::Int(value.extract().map_err(|_| {
                    PyValueError::new_err(format!("[{op}] Template argument {name} = {value} does not fit an int."))
                })?)
            } else if let Ok(d) = value.extract::<PyDtype>() {
                TemplateArg::Dtype(d.0)
            } else {
                return Err(PyValueError::new_err(format!(
                    "[{op}] Invalid template argument. Must be `ferrox.Dtype`, `int` or `bool`."
                )));
            };
            Ok((name, arg))
        })
        .collect()
}

/// `scalars=` of a precompiled kernel: bools, ints (int32) and floats.
fn scalar_args(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<ScalarArg>> {
    items(op, "scalars", obj)?
        .iter()
        .map(|v| {
            if v.is_instance_of::<PyBool>() {
                Ok(ScalarArg::Bool(v.extract()?))
            } else if v.is_instance_of::<PyInt>() {
                v.extract().map(ScalarArg::Int).map_err(|_| {
                    PyValueError::new_err(format!("[{op}] Scalar argument {v} does not fit an int (int32)."))
                })
            } else if v.is_instance_of::<PyFloat>() {
                Ok(ScalarArg::Float(v.extract()?))
            } else {
                Err(PyValueError::new_err(format!(
                    "[{op}] Invalid scalar argument type. Received {} but must be one of bool, int or float",
                    type_name(v)
                )))
            }
        })
        .collect()
}

/// The `stream=` a kernel runs on (`None`: the current one); an
/// unavailable device is an error naming `op`.
fn kernel_stream(op: &str, stream: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Stream>> {
    match stream {
        Some(s) if !s.is_none() => stream_arg(s).map(Some).map_err(|e| {
            let py = s.py();
            if e.is_instance_of::<PyValueError>(py) {
                PyValueError::new_err(format!("[{op}] {}", e.value(py)))
            } else {
                e
            }
        }),
        _ => Ok(None),
    }
}

/// Runs `f` on `stream` (the current stream when `None`).
fn on_kernel_stream<R>(stream: Option<Stream>, f: impl FnOnce() -> R) -> R {
    match stream {
        Some(s) => ferrox::device::with_stream(s, f),
        None => f(),
    }
}

/// A custom CUDA kernel made by `cuda_kernel`. Calling it (keyword
/// arguments only) runs it and returns the list of its outputs: `inputs`
/// (arrays or scalars, one per input name), `output_shapes` and
/// `output_dtypes` (one per output name), `grid` (threads along x, y, z, as
/// Metal counts them) in blocks of `threadgroup` threads, `template`
/// arguments (`(name, bool | int | Dtype)` pairs, declared as constants in
/// the body), `init_value` (the value every output starts with; outputs are
/// uninitialized otherwise), `verbose` (print the generated source) and
/// `stream`.
#[pyclass(module = "ferrox.fast", name = "CudaKernel", frozen)]
struct PyCudaKernel {
    kernel: CudaKernel,
}

#[guarded]
#[pymethods]
impl PyCudaKernel {
    /// Runs the kernel (see the class).
    #[pyo3(signature = (*, inputs, output_shapes, output_dtypes, grid, threadgroup, template = None, init_value = None, verbose = false, stream = None))]
    #[allow(clippy::too_many_arguments)] // MLX's signature
    fn __call__(
        &self,
        py: Python<'_>,
        inputs: &Bound<'_, PyAny>,
        output_shapes: &Bound<'_, PyAny>,
        output_dtypes: &Bound<'_, PyAny>,
        grid: &Bound<'_, PyAny>,
        threadgroup: &Bound<'_, PyAny>,
        template: Option<&Bound<'_, PyAny>>,
        init_value: Option<f32>,
        verbose: bool,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyArray>> {
        const OP: &str = "cuda_kernel";
        let inputs = array_list(OP, inputs)?;
        let template = template_args(OP, template)?;
        let (shapes, dtypes) = (parse_output_shapes(OP, output_shapes)?, parse_output_dtypes(OP, output_dtypes)?);
        let (grid, threadgroup) = (dims3(OP, "grid", grid)?, dims3(OP, "threadgroup", threadgroup)?);
        let stream = kernel_stream(OP, stream)?;
        let outputs = on_kernel_stream(stream, || {
            self.kernel.call(&inputs, &shapes, &dtypes, grid, threadgroup, &template, init_value)
        })
        .py()?;
        if verbose {
            let (name, source) = self.kernel.source_for(&inputs, &dtypes, &template).py()?;
            let text = format!("Generated source code for `{name}`:\n```\n{source}\n```");
            py.import("builtins")?.getattr("print")?.call1((text,))?;
        }
        Ok(outputs.into_iter().map(PyArray::wrap).collect())
    }

    fn __repr__(&self) -> String {
        "<ferrox.fast.CudaKernel>".to_string()
    }
}

/// A custom CUDA kernel from a body (MLX's `fast.cuda_kernel`): `source`
/// is the body of a CUDA function whose signature ferrox writes from
/// `input_names` (`const T* name` each, with `name_shape`, `name_strides`
/// and `name_ndim` parameters when the body mentions them) and
/// `output_names` (`T* name` each); `header` goes before it (helpers,
/// declarations); `ensure_row_contiguous` copies strided inputs first;
/// `shared_memory` is the dynamic shared memory in bytes. NVRTC compiles
/// the kernel when it first runs; calling the result runs it on the GPU.
///
/// Args:
///     name (str): Name.
///     input_names (list(str)): Names of the kernel's inputs.
///     output_names (list(str)): Names of the kernel's outputs.
///     source (str): Kernel source code.
///     header (str, optional): Source code inserted before the kernel.
///     ensure_row_contiguous (bool, optional): Copy inputs to row-contiguous layout before the kernel runs.
///     shared_memory (int, optional): Bytes of dynamic shared memory.
///
/// Returns:
///     CudaKernel: The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (name, input_names, output_names, source, header = String::new(), ensure_row_contiguous = true, shared_memory = 0))]
fn cuda_kernel(
    name: String,
    input_names: Vec<String>,
    output_names: Vec<String>,
    source: String,
    header: String,
    ensure_row_contiguous: bool,
    shared_memory: i64,
) -> PyResult<PyCudaKernel> {
    let shared_memory = shared_memory_arg("cuda_kernel", shared_memory)?;
    let kernel = custom_kernel::cuda_kernel(
        &name,
        &input_names,
        &output_names,
        &source,
        &header,
        ensure_row_contiguous,
        shared_memory,
    )
    .py()?;
    Ok(PyCudaKernel { kernel })
}

/// Runs a precompiled CUDA kernel and returns the list of its outputs
/// (MLX's `fast.precompiled_cuda_kernel`): `compiled_source` holds PTX, a
/// cubin or a fatbin, whose kernel `name` (its symbol) takes a pointer to
/// each input, a pointer to each output, then `scalars` (bool, int as
/// int32, float as float32) by value; `grid`, `threadgroup`,
/// `shared_memory` and `init_value` are as for `cuda_kernel`;
/// `ensure_row_contiguous` copies strided inputs first.
///
/// Args:
///     name (str): Name.
///     compiled_source (list(int)): The compiled PTX or cubin.
///     inputs (list(array)): Input arrays.
///     output_shapes (list(list(int))): Shape of each output.
///     output_dtypes (list(Dtype)): Dtype of each output.
///     scalars (list(bool | int | float)): Scalar arguments passed after the arrays.
///     grid (tuple(int, int, int)): Grid size in threads.
///     threadgroup (tuple(int, int, int)): Block size in threads.
///     shared_memory (int, optional): Bytes of dynamic shared memory.
///     init_value (float, optional): Value the outputs are filled with first, or None.
///     ensure_row_contiguous (bool, optional): Copy inputs to row-contiguous layout before the kernel runs.
///
/// Returns:
///     list(array): The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (*, name, compiled_source, inputs, output_shapes, output_dtypes, scalars, grid, threadgroup, shared_memory = 0, init_value = None, ensure_row_contiguous = false, stream = None))]
#[allow(clippy::too_many_arguments)] // MLX's signature
fn precompiled_cuda_kernel(
    name: String,
    compiled_source: &[u8],
    inputs: &Bound<'_, PyAny>,
    output_shapes: &Bound<'_, PyAny>,
    output_dtypes: &Bound<'_, PyAny>,
    scalars: &Bound<'_, PyAny>,
    grid: &Bound<'_, PyAny>,
    threadgroup: &Bound<'_, PyAny>,
    shared_memory: i64,
    init_value: Option<f32>,
    ensure_row_contiguous: bool,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<PyArray>> {
    const OP: &str = "precompiled_cuda_kernel";
    let inputs = array_list(OP, inputs)?;
    let (shapes, dtypes) = (parse_output_shapes(OP, output_shapes)?, parse_output_dtypes(OP, output_dtypes)?);
    let scalars = scalar_args(OP, scalars)?;
    let (grid, threadgroup) = (dims3(OP, "grid", grid)?, dims3(OP, "threadgroup", threadgroup)?);
    let shared_memory = shared_memory_arg(OP, shared_memory)?;
    let stream = kernel_stream(OP, stream)?;
    let outputs = on_kernel_stream(stream, || {
        custom_kernel::precompiled_cuda_kernel(
            &name,
            compiled_source,
            &inputs,
            &shapes,
            &dtypes,
            &scalars,
            grid,
            threadgroup,
            shared_memory,
            init_value,
            ensure_row_contiguous,
        )
    })
    .py()?;
    Ok(outputs.into_iter().map(PyArray::wrap).collect())
}

/// Registers `ferrox.fast`.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = parent.py();
    let m = PyModule::new(py, "ferrox.fast")?;
    m.setattr(
        "__doc__",
        "ferrox.fast: fused normalization, rotary embedding and attention kernels, custom CUDA kernels.",
    )?;
    crate::add_functions!(
        &m,
        rms_norm,
        layer_norm,
        rope,
        scaled_dot_product_attention,
        metal_kernel,
        cuda_kernel,
        precompiled_cuda_kernel
    );
    m.add_class::<MetalKernel>()?;
    m.add_class::<PyCudaKernel>()?;
    parent.add("fast", &m)?;
    py.import("sys")?.getattr("modules")?.set_item("ferrox.fast", &m)?;
    Ok(())
}
