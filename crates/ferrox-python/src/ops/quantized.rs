//! Quantization: `to_fp8`, `from_fp8`, `quantize`, `dequantize`,
//! `quantized_matmul`, `gather_qmm`, `qqmm` (MLX's signatures).

use super::wrap;
use crate::args;
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::on_stream;
use crate::errors::to_py;
use ferrox::{ops, Array, Dtype, Error};
use ferrox_python_macros::guarded;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyList;

/// The Python exception for an error of these ops: the errors MLX raises
/// when its CPU kernels run are RuntimeErrors.
fn py_error(e: Error) -> PyErr {
    match e {
        Error::InvalidArgument { op: "fast::Quantize::eval_cpu", .. } => PyRuntimeError::new_err(e.to_string()),
        Error::InvalidArgument { op, msg } if op == ops::QUANTIZED_EVAL_OP => PyRuntimeError::new_err(msg),
        e => to_py(e),
    }
}

/// [`wrap`] with [`py_error`]'s exceptions.
fn wrap_kernel(r: PyResult<ferrox::Result<Array>>) -> PyResult<PyArray> {
    Ok(PyArray::wrap(r?.map_err(py_error)?))
}

/// An optional array argument (None stays None).
fn opt_array(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Array>> {
    obj.filter(|o| !o.is_none()).map(|o| to_array(o, None)).transpose()
}

/// Converts e4m3 fp8 bytes (uint8) to `dtype` (default bfloat16).
///
/// Args:
///     x (array): Input array.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, /, dtype = None, *, stream = None))]
fn from_fp8(
    x: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let x = to_array(x, None)?;
    let dtype = args::dtype_or(dtype, Dtype::BF16)?;
    wrap(on_stream(stream, || ops::from_fp8(&x, dtype)))
}

/// Converts a float array to e4m3 fp8 bytes (uint8), rounding to nearest
/// even and saturating at ±448.
///
/// Args:
///     x (array): Input array.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, /, *, stream = None))]
fn to_fp8(x: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let x = to_array(x, None)?;
    wrap(on_stream(stream, || ops::to_fp8(&x)))
}

/// Quantizes `w` along its last axis in groups of `group_size`: a list
/// `[w_q, scales, biases]` for mode "affine", `[w_q, scales]` for
/// "mxfp4", "mxfp8" and "nvfp4".
///
/// Args:
///     w (array): Weight matrix.
///     group_size (int, optional): Number of elements that share one scale and bias.
///     bits (int, optional): Number of bits per quantized element.
///     mode (str, optional): Quantization mode: ``'affine'``, ``'mxfp4'``, ``'mxfp8'`` or ``'nvfp4'``.
///     global_scale (array, optional): Global scale of the ``nvfp4`` mode, or None.
///
/// Returns:
///     list(Any): The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (w, /, group_size = None, bits = None, mode = "affine", *, global_scale = None, stream = None))]
fn quantize<'py>(
    w: &Bound<'py, PyAny>,
    group_size: Option<i32>,
    bits: Option<i32>,
    mode: &str,
    global_scale: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let w_arr = to_array(w, None)?;
    let g = opt_array(global_scale)?;
    let out = on_stream(stream, || ops::quantize(&w_arr, group_size, bits, mode, g.as_ref()))?;
    let out = out.map_err(py_error)?;
    PyList::new(w.py(), out.into_iter().map(PyArray::wrap))
}

/// Dequantizes `w` with its scales (and biases for "affine"); `dtype`
/// chooses the result type (default: that of the scales and biases for
/// affine, bfloat16 otherwise).
///
/// Args:
///     w (array): Weight matrix.
///     scales (array): Quantization scales.
///     biases (array, optional): Quantization biases (None for modes without).
///     group_size (int, optional): Number of elements that share one scale and bias.
///     bits (int, optional): Number of bits per quantized element.
///     mode (str, optional): Quantization mode of ``w``.
///     global_scale (array, optional): Global scale of the ``nvfp4`` mode, or None.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (w, /, scales, biases = None, group_size = None, bits = None, mode = "affine", global_scale = None, dtype = None, *, stream = None))]
#[allow(clippy::too_many_arguments)]
fn dequantize(
    w: &Bound<'_, PyAny>,
    scales: &Bound<'_, PyAny>,
    biases: Option<&Bound<'_, PyAny>>,
    group_size: Option<i32>,
    bits: Option<i32>,
    mode: &str,
    global_scale: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (w, scales) = (to_array(w, None)?, to_array(scales, None)?);
    let (biases, g) = (opt_array(biases)?, opt_array(global_scale)?);
    let dtype = args::dtype(dtype)?;
    wrap(on_stream(stream, || ops::dequantize(&w, &scales, biases.as_ref(), group_size, bits, mode, g.as_ref(), dtype)))
}

/// `x @ w.T` (or `x @ w` when `transpose` is False) with the quantized
/// matrix `w`.
///
/// Args:
///     x (array): Input array.
///     w (array): Weight matrix.
///     scales (array): Quantization scales.
///     biases (array, optional): Quantization biases (None for modes without).
///     transpose (bool, optional): Whether ``w`` is transposed.
///     group_size (int, optional): Number of elements that share one scale and bias.
///     bits (int, optional): Number of bits per quantized element.
///     mode (str, optional): Quantization mode of ``w``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, w, /, scales, biases = None, transpose = true, group_size = None, bits = None, mode = "affine", *, stream = None))]
#[allow(clippy::too_many_arguments)]
fn quantized_matmul(
    x: &Bound<'_, PyAny>,
    w: &Bound<'_, PyAny>,
    scales: &Bound<'_, PyAny>,
    biases: Option<&Bound<'_, PyAny>>,
    transpose: bool,
    group_size: Option<i32>,
    bits: Option<i32>,
    mode: &str,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (x, w, scales) = (to_array(x, None)?, to_array(w, None)?, to_array(scales, None)?);
    let biases = opt_array(biases)?;
    wrap_kernel(on_stream(stream, || {
        ops::quantized_matmul(&x, &w, &scales, biases.as_ref(), transpose, group_size, bits, mode)
    }))
}

/// The quantized `gather_mm`: products of matrices of `x` and of the
/// quantized `w` picked by `lhs_indices` and `rhs_indices` (flat indices
/// over their batch axes).
///
/// Args:
///     x (array): Input array.
///     w (array): Weight matrix.
///     scales (array): Quantization scales.
///     biases (array, optional): Quantization biases (None for modes without).
///     lhs_indices (array, optional): Indices into the batch of ``a``, or None.
///     rhs_indices (array, optional): Indices into the batch of ``b``, or None.
///     transpose (bool, optional): Whether ``w`` is transposed.
///     group_size (int, optional): Number of elements that share one scale and bias.
///     bits (int, optional): Number of bits per quantized element.
///     mode (str, optional): Quantization mode of ``w``.
///     global_scale (array, optional): Global scale of the ``nvfp4`` mode, or None.
///     sorted_indices (bool, optional): Whether the indices are sorted (a hint). Default: ``False``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, w, /, scales, biases = None, lhs_indices = None, rhs_indices = None, transpose = true, group_size = None, bits = None, mode = "affine", global_scale = None, *, sorted_indices = false, stream = None))]
#[allow(clippy::too_many_arguments)]
fn gather_qmm(
    x: &Bound<'_, PyAny>,
    w: &Bound<'_, PyAny>,
    scales: &Bound<'_, PyAny>,
    biases: Option<&Bound<'_, PyAny>>,
    lhs_indices: Option<&Bound<'_, PyAny>>,
    rhs_indices: Option<&Bound<'_, PyAny>>,
    transpose: bool,
    group_size: Option<i32>,
    bits: Option<i32>,
    mode: &str,
    global_scale: Option<&Bound<'_, PyAny>>,
    sorted_indices: bool,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (x, w, scales) = (to_array(x, None)?, to_array(w, None)?, to_array(scales, None)?);
    let biases = opt_array(biases)?;
    let (li, ri, g) = (opt_array(lhs_indices)?, opt_array(rhs_indices)?, opt_array(global_scale)?);
    wrap_kernel(on_stream(stream, || {
        ops::gather_qmm(
            &x,
            &w,
            &scales,
            biases.as_ref(),
            li.as_ref(),
            ri.as_ref(),
            transpose,
            group_size,
            bits,
            mode,
            g.as_ref(),
            sorted_indices,
        )
    }))
}

/// A matrix product with `x` (and `w`, unless given quantized with its
/// `scales`) quantized on the fly: `x_hat @ w_hat.T` in `x`'s dtype.
///
/// Args:
///     x (array): Input array.
///     w (array): Weight matrix.
///     scales (array, optional): Quantization scales.
///     group_size (int, optional): Number of elements that share one scale and bias.
///     bits (int, optional): Number of bits per quantized element.
///     mode (str, optional): Quantization mode.
///     global_scale_x (array, optional): Global scale of ``x`` (``nvfp4``), or None.
///     global_scale_w (array, optional): Global scale of ``w`` (``nvfp4``), or None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (x, w, /, scales = None, group_size = None, bits = None, mode = "nvfp4", global_scale_x = None, global_scale_w = None, *, stream = None))]
#[allow(clippy::too_many_arguments)]
fn qqmm(
    x: &Bound<'_, PyAny>,
    w: &Bound<'_, PyAny>,
    scales: Option<&Bound<'_, PyAny>>,
    group_size: Option<i32>,
    bits: Option<i32>,
    mode: &str,
    global_scale_x: Option<&Bound<'_, PyAny>>,
    global_scale_w: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (x, w) = (to_array(x, None)?, to_array(w, None)?);
    let scales = opt_array(scales)?;
    let (gx, gw) = (opt_array(global_scale_x)?, opt_array(global_scale_w)?);
    wrap(on_stream(stream, || ops::qqmm(&x, &w, scales.as_ref(), group_size, bits, mode, gx.as_ref(), gw.as_ref())))
}

/// Adds the quantization ops to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(m, from_fp8, to_fp8, quantize, dequantize, quantized_matmul, gather_qmm, qqmm);
    Ok(())
}
