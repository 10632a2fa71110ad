//! `ferrox.fft`: the submodule mirroring `mlx.core.fft` (names, parameters,
//! defaults and errors). Transforms compute in complex64 (real ones read
//! float32), as MLX's do.

use crate::args;
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::on_stream;
use crate::errors::IntoPyResult;
use crate::ops::wrap;
use ferrox::ops::fft::{self as transforms, FftNorm};
use ferrox_python_macros::guarded;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Transform lengths: positive ints (MLX's error otherwise).
fn lengths(values: &[i64]) -> PyResult<Vec<usize>> {
    if values.iter().any(|&v| v <= 0) {
        return Err(PyValueError::new_err(format!("[fftn] Invalid FFT output size requested {values:?}")));
    }
    Ok(values.iter().map(|&v| v as usize).collect())
}

/// The `axes=` argument of the transforms over several axes: a list of
/// axes, or `None` for every axis (distinct from the 2-D names' default,
/// `[-2, -1]`).
pub enum AxesArg {
    /// These axes.
    Axes(Vec<isize>),
    /// Every axis (`None`).
    Every,
}

impl<'py> FromPyObject<'py> for AxesArg {
    fn extract_bound(obj: &Bound<'py, PyAny>) -> PyResult<AxesArg> {
        if obj.is_none() {
            return Ok(AxesArg::Every);
        }
        Ok(AxesArg::Axes(args::ints("fftn", "axes", obj)?.into_iter().map(|v| v as isize).collect()))
    }
}

/// A `norm=` argument.
fn norm_arg(op: &'static str, norm: &str) -> PyResult<FftNorm> {
    FftNorm::parse(op, norm).py()
}

/// The one-axis transforms: `fft`, `ifft`, `rfft`, `irfft`.
macro_rules! one_axis {
    ($($name:ident: $doc:literal, $n_doc:literal, $returns:literal;)*) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    a (array): The input array.\n    n (int, optional): ", $n_doc,
            "\n    axis (int, optional): Axis along which to perform the FFT. Default: ``-1``.\n    norm (str, optional): One of ``\"backward\"``, ``\"ortho\"`` or ``\"forward\"``. Default: ``\"backward\"``.\n\nReturns:\n    array: ", $returns)]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (a, n = None, axis = -1, norm = "backward", stream = None))]
        fn $name(
            a: &Bound<'_, PyAny>,
            n: Option<i64>,
            axis: isize,
            norm: &str,
            stream: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyArray> {
            let norm = norm_arg(stringify!($name), norm)?;
            let n = match n {
                Some(n) => Some(lengths(&[n])?[0]),
                None => None,
            };
            let a = to_array(a, None)?;
            wrap(on_stream(stream, || transforms::$name(&a, n, axis, norm)))
        }
    )*};
}

one_axis! {
    fft: "One dimensional discrete Fourier Transform.",
        "Size of the transformed axis; the input is truncated or zero-padded to it. Default: ``a.shape[axis]``.",
        "The DFT of the input along the given axis (complex64).";
    ifft: "One dimensional inverse discrete Fourier Transform.",
        "Size of the transformed axis; the input is truncated or zero-padded to it. Default: ``a.shape[axis]``.",
        "The inverse DFT of the input along the given axis (complex64).";
    rfft: "One dimensional discrete Fourier Transform on a real input (cast to float32).",
        "Size of the transformed axis; the input is truncated or zero-padded to it. Default: ``a.shape[axis]``.",
        "The DFT of the input along the given axis: ``n // 2 + 1`` frequencies (complex64).";
    irfft: "The inverse of :func:`rfft`.",
        "Size of the real output along ``axis``; the input is truncated or zero-padded to ``n // 2 + 1``. \
         Default: ``2 * (a.shape[axis] - 1)``.",
        "The real inverse of the input along the given axis (float32).";
}

/// The transforms over several axes: `fft2`, `ifft2`, `rfft2`, `irfft2`
/// (default axes `[-2, -1]`) and `fftn`, `ifftn`, `rfftn`, `irfftn`
/// (default: every axis).
macro_rules! many_axes {
    ($($name:ident => $rust:ident ($($default:tt)*): $doc:literal, $axes_doc:literal, $returns:literal;)*) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    a (array): The input array.\n    s (list(int), optional): Sizes of the transformed axes; the input is truncated or zero-padded to them. Default: the sizes of ``a`` along ``axes``.\n    axes (list(int), optional): ", $axes_doc,
            "\n    norm (str, optional): One of ``\"backward\"``, ``\"ortho\"`` or ``\"forward\"``. Default: ``\"backward\"``.\n\nReturns:\n    array: ", $returns)]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (a, s = None, axes = $($default)*, norm = "backward", stream = None))]
        fn $name(
            a: &Bound<'_, PyAny>,
            s: Option<&Bound<'_, PyAny>>,
            axes: AxesArg,
            norm: &str,
            stream: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyArray> {
            let norm = norm_arg(stringify!($name), norm)?;
            let s = match s.filter(|s| !s.is_none()) {
                Some(s) => Some(lengths(&args::ints(stringify!($name), "s", s)?)?),
                None => None,
            };
            let axes = match axes {
                AxesArg::Axes(axes) => Some(axes),
                AxesArg::Every => None,
            };
            let a = to_array(a, None)?;
            wrap(on_stream(stream, || transforms::$rust(&a, s.as_deref(), axes.as_deref(), norm)))
        }
    )*};
}

many_axes! {
    fft2 => fftn (AxesArg::Axes(vec![-2, -1])): "Two dimensional discrete Fourier Transform.",
        "Axes along which to perform the FFT (every axis when None). Default: ``[-2, -1]``.",
        "The DFT of the input along the given axes (complex64).";
    ifft2 => ifftn (AxesArg::Axes(vec![-2, -1])): "Two dimensional inverse discrete Fourier Transform.",
        "Axes along which to perform the FFT (every axis when None). Default: ``[-2, -1]``.",
        "The inverse DFT of the input along the given axes (complex64).";
    rfft2 => rfftn (AxesArg::Axes(vec![-2, -1])): "Two dimensional real discrete Fourier Transform (the input is cast to float32).",
        "Axes along which to perform the FFT (every axis when None); the last keeps ``n // 2 + 1`` frequencies. Default: ``[-2, -1]``.",
        "The real DFT of the input along the given axes (complex64).";
    irfft2 => irfftn (AxesArg::Axes(vec![-2, -1])): "The inverse of :func:`rfft2`.",
        "Axes along which to perform the FFT (every axis when None); the last holds ``s[-1] // 2 + 1`` frequencies (default length ``2 * (a.shape[axes[-1]] - 1)``). Default: ``[-2, -1]``.",
        "The real inverse of the input along the given axes (float32).";
    fftn => fftn (AxesArg::Every): "n-dimensional discrete Fourier Transform.",
        "Axes along which to perform the FFT. Default: every axis (``s`` needs ``axes``).",
        "The DFT of the input along the given axes (complex64).";
    ifftn => ifftn (AxesArg::Every): "n-dimensional inverse discrete Fourier Transform.",
        "Axes along which to perform the FFT. Default: every axis (``s`` needs ``axes``).",
        "The inverse DFT of the input along the given axes (complex64).";
    rfftn => rfftn (AxesArg::Every): "n-dimensional real discrete Fourier Transform (the input is cast to float32).",
        "Axes along which to perform the FFT; the last keeps ``n // 2 + 1`` frequencies. Default: every axis (``s`` needs ``axes``).",
        "The real DFT of the input along the given axes (complex64).";
    irfftn => irfftn (AxesArg::Every): "The inverse of :func:`rfftn`.",
        "Axes along which to perform the FFT; the last holds ``s[-1] // 2 + 1`` frequencies (default length ``2 * (a.shape[axes[-1]] - 1)``). Default: every axis (``s`` needs ``axes``).",
        "The real inverse of the input along the given axes (float32).";
}

/// Return the Discrete Fourier Transform sample frequencies.
///
/// Args:
///     n (int): Window length.
///     d (float, optional): Sample spacing. Default: ``1.0``.
///
/// Returns:
///     array: ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (n * d)`` (float32).
#[guarded]
#[pyfunction]
#[pyo3(signature = (n, d = 1.0, stream = None))]
fn fftfreq(n: i64, d: f64, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let n = usize::try_from(n).unwrap_or(0);
    wrap(on_stream(stream, || transforms::fftfreq(n, d)))
}

/// Return the Discrete Fourier Transform sample frequencies for :func:`rfft`.
///
/// Args:
///     n (int): Window length.
///     d (float, optional): Sample spacing. Default: ``1.0``.
///
/// Returns:
///     array: ``[0, 1, ..., n // 2] / (n * d)`` (float32).
#[guarded]
#[pyfunction]
#[pyo3(signature = (n, d = 1.0, stream = None))]
fn rfftfreq(n: i64, d: f64, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let n = usize::try_from(n).unwrap_or(0);
    wrap(on_stream(stream, || transforms::rfftfreq(n, d)))
}

/// Shift the zero-frequency component to the center of the spectrum.
///
/// Args:
///     a (array): The input array.
///     axes (int or list(int), optional): Axes over which to shift. Default: every axis.
///
/// Returns:
///     array: The shifted array, of ``a``'s shape and dtype.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, axes = None, stream = None))]
fn fftshift(
    a: &Bound<'_, PyAny>,
    axes: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let axes = args::axes("fftshift", axes)?;
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || transforms::fftshift(&a, axes.as_deref())))
}

/// The inverse of :func:`fftshift`.
///
/// Args:
///     a (array): The input array.
///     axes (int or list(int), optional): Axes over which to shift. Default: every axis.
///
/// Returns:
///     array: The shifted array, of ``a``'s shape and dtype.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, axes = None, stream = None))]
fn ifftshift(
    a: &Bound<'_, PyAny>,
    axes: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let axes = args::axes("ifftshift", axes)?;
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || transforms::ifftshift(&a, axes.as_deref())))
}

/// Adds `ferrox.fft` to the package.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = parent.py();
    let m = PyModule::new(py, "ferrox.fft")?;
    m.setattr("__doc__", "ferrox.fft: Fast Fourier Transforms (mlx.core.fft).")?;
    crate::add_functions!(
        &m, fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2, irfft2, rfftn, irfftn, fftfreq, rfftfreq,
        fftshift, ifftshift
    );
    parent.add("fft", &m)?;
    py.import("sys")?.getattr("modules")?.set_item("ferrox.fft", &m)?;
    Ok(())
}
