//! `ferrox.fast`: the submodule mirroring `mlx.core.fast` (fused
//! normalizations, rotary embeddings and attention; `metal_kernel`, whose
//! kernels raise because ferrox has no Metal back-end).

use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::on_stream;
use crate::ops::wrap;
use ferrox::ops::fast::{self, AttentionMaskArg};
use ferrox::Array;
use ferrox_python_macros::guarded;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

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
/// `sinks` holds one extra logit per query head.
#[guarded]
#[pyfunction]
#[pyo3(signature = (q, k, v, *, scale, mask = None, sinks = None, stream = None))]
#[allow(clippy::too_many_arguments)]
fn scaled_dot_product_attention(
    q: &Bound<'_, PyAny>,
    k: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    scale: f32,
    mask: Option<&Bound<'_, PyAny>>,
    sinks: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
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

/// A custom kernel for a back-end ferrox does not have: calling it raises.
#[pyclass(module = "ferrox.fast", name = "MissingBackendKernel", frozen)]
struct MissingBackendKernel {
    op: &'static str,
    backend: &'static str,
}

#[pymethods]
impl MissingBackendKernel {
    #[pyo3(signature = (*_args, **_kwargs))]
    fn __call__(&self, _args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        Err(PyRuntimeError::new_err(format!("[{}] No {} back-end.", self.op, self.backend)))
    }
}

/// A custom Metal kernel (MLX's signature). ferrox has no Metal back-end:
/// the returned callable raises `RuntimeError` when called, as MLX's Linux
/// build does.
#[guarded]
#[pyfunction]
#[pyo3(signature = (name, input_names, output_names, source, header = String::new(), ensure_row_contiguous = true, atomic_outputs = false))]
fn metal_kernel(
    name: String,
    input_names: Vec<String>,
    output_names: Vec<String>,
    source: String,
    header: String,
    ensure_row_contiguous: bool,
    atomic_outputs: bool,
) -> PyResult<MissingBackendKernel> {
    // The arguments are taken for MLX's signature; nothing can run them.
    let _ = (name, input_names, output_names, source, header, ensure_row_contiguous, atomic_outputs);
    Ok(MissingBackendKernel { op: "metal_kernel", backend: "Metal" })
}

/// Registers `ferrox.fast`.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = parent.py();
    let m = PyModule::new(py, "ferrox.fast")?;
    m.setattr("__doc__", "ferrox.fast: fused normalization, rotary embedding and attention kernels.")?;
    crate::add_functions!(&m, rms_norm, layer_norm, rope, scaled_dot_product_attention, metal_kernel);
    m.add_class::<MissingBackendKernel>()?;
    parent.add("fast", &m)?;
    py.import("sys")?.getattr("modules")?.set_item("ferrox.fast", &m)?;
    Ok(())
}
