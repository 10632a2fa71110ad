//! Convolutions: `conv1d`, `conv2d`, `conv3d`, `conv_transpose1d/2d/3d`,
//! `conv_general` and `convolve`, with MLX's signatures (an int or one
//! value per spatial axis for each option).

use super::wrap;
use crate::args::{ints, sequence_items};
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::on_stream;
use ferrox::ops::{self, ConvOptions};
use ferrox_python_macros::guarded;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// An option given as an int (the same for every spatial axis) or one int
/// per axis; `dims` entries result.
fn per_axis(op: &str, what: &str, obj: &Bound<'_, PyAny>, dims: usize) -> PyResult<Vec<i64>> {
    let v = ints(op, what, obj)?;
    match v.len() {
        1 => Ok(vec![v[0]; dims]),
        n if n == dims => Ok(v),
        n => Err(PyValueError::new_err(format!("[{op}] {what} needs 1 or {dims} values, got {n}."))),
    }
}

macro_rules! conv_nd {
    ($name:ident, $transpose:ident, $dims:literal, $doc:literal, $tdoc:literal) => {
        #[doc = concat!($doc, "\n\nArgs:\n    input (array): Input array of shape ``(N, ..., C_in)`` (spatial axes in the middle).\n    weight (array): Weight array of shape ``(C_out, ..., C_in / groups)``.\n    stride (int or list(int), optional): Kernel strides, one int for every spatial axis. Default: ``1``.\n    padding (int or list(int), optional): Symmetric input padding, one int for every spatial axis. Default: ``0``.\n    dilation (int or list(int), optional): Kernel dilation, one int for every spatial axis. Default: ``1``.\n    groups (int, optional): Number of input feature groups. Default: ``1``.\n\nReturns:\n    array: The convolved array.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (input, weight, /, stride = None, padding = None, dilation = None, groups = 1, *, stream = None))]
        fn $name(
            input: &Bound<'_, PyAny>,
            weight: &Bound<'_, PyAny>,
            stride: Option<&Bound<'_, PyAny>>,
            padding: Option<&Bound<'_, PyAny>>,
            dilation: Option<&Bound<'_, PyAny>>,
            groups: i64,
            stream: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyArray> {
            let op = stringify!($name);
            let opt = |v: Option<&Bound<'_, PyAny>>, what: &str, default: i64| match v {
                Some(v) if !v.is_none() => per_axis(op, what, v, $dims),
                _ => Ok(vec![default; $dims]),
            };
            let options = ConvOptions {
                stride: opt(stride, "stride", 1)?,
                padding_lo: opt(padding, "padding", 0)?,
                padding_hi: opt(padding, "padding", 0)?,
                kernel_dilation: opt(dilation, "dilation", 1)?,
                input_dilation: vec![],
                groups,
                flip: false,
            };
            let (input, weight) = (to_array(input, None)?, to_array(weight, None)?);
            // As MLX's, conv1d is conv_general with one value per option,
            // taken on every spatial axis of the input.
            wrap(on_stream(stream, || match $dims {
                1 => ops::conv_general(&input, &weight, &options),
                _ => ops::conv_nd(&input, &weight, $dims, &options),
            }))
        }

        #[doc = concat!($tdoc, "\n\nArgs:\n    input (array): Input array of shape ``(N, ..., C_in)`` (spatial axes in the middle).\n    weight (array): Weight array of shape ``(C_out, ..., C_in / groups)``.\n    stride (int or list(int), optional): Kernel strides, one int for every spatial axis. Default: ``1``.\n    padding (int or list(int), optional): Symmetric input padding, one int for every spatial axis. Default: ``0``.\n    dilation (int or list(int), optional): Kernel dilation, one int for every spatial axis. Default: ``1``.\n    output_padding (int or list(int), optional): Extra size added to one side of each output axis. Default: ``0``.\n    groups (int, optional): Number of input feature groups. Default: ``1``.\n\nReturns:\n    array: The convolved array.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (input, weight, /, stride = None, padding = None, dilation = None, output_padding = None, groups = 1, *, stream = None))]
        #[allow(clippy::too_many_arguments)] // MLX's signature
        fn $transpose(
            input: &Bound<'_, PyAny>,
            weight: &Bound<'_, PyAny>,
            stride: Option<&Bound<'_, PyAny>>,
            padding: Option<&Bound<'_, PyAny>>,
            dilation: Option<&Bound<'_, PyAny>>,
            output_padding: Option<&Bound<'_, PyAny>>,
            groups: i64,
            stream: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyArray> {
            let op = stringify!($transpose);
            let opt = |v: Option<&Bound<'_, PyAny>>, what: &str, default: i64| match v {
                Some(v) if !v.is_none() => per_axis(op, what, v, $dims),
                _ => Ok(vec![default; $dims]),
            };
            let stride = opt(stride, "stride", 1)?;
            let padding = opt(padding, "padding", 0)?;
            let dilation = opt(dilation, "dilation", 1)?;
            let output_padding = opt(output_padding, "output_padding", 0)?;
            let (input, weight) = (to_array(input, None)?, to_array(weight, None)?);
            wrap(on_stream(stream, || {
                ops::conv_transpose(&input, &weight, &stride, &padding, &dilation, &output_padding, groups)
            }))
        }
    };
}

conv_nd!(
    conv1d,
    conv_transpose1d,
    1,
    "1D convolution over an input `(N, L, C_in)` with weights `(C_out, K, C_in)`.",
    "1D transposed convolution over an input `(N, L, C_in)` with weights `(C_out, K, C_in)`."
);
conv_nd!(
    conv2d,
    conv_transpose2d,
    2,
    "2D convolution over an input `(N, H, W, C_in)` with weights `(C_out, KH, KW, C_in)`.",
    "2D transposed convolution over an input `(N, H, W, C_in)` with weights `(C_out, KH, KW, C_in)`."
);
conv_nd!(
    conv3d,
    conv_transpose3d,
    3,
    "3D convolution over an input `(N, D, H, W, C_in)` with weights `(C_out, KD, KH, KW, C_in)`.",
    "3D transposed convolution over an input `(N, D, H, W, C_in)` with weights `(C_out, KD, KH, KW, C_in)`."
);

/// General convolution over an input `(N, ..., C_in)` with weights
/// `(C_out, ..., C_in / groups)`: strides, padding (an int, one per axis,
/// or a pair of lists `(low, high)`), kernel and input dilation, groups and
/// filter flipping.
///
/// Args:
///     input (array): Input array.
///     weight (array): Weight array.
///     stride (list(int), optional): Kernel strides (one int for every spatial axis). Default: ``1``.
///     padding (list(Any) or tuple(Any, ...), optional): Padding: one int, one per axis, or a (low, high) pair of lists.
///     kernel_dilation (list(int), optional): Kernel dilation per spatial axis.
///     input_dilation (list(int), optional): Input dilation per spatial axis.
///     groups (int, optional): Number of input feature groups. Default: ``1``.
///     flip (bool, optional): Flip the kernel (a convolution rather than a cross-correlation).
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (input, weight, /, stride = None, padding = None, kernel_dilation = None, input_dilation = None, groups = 1, flip = false, *, stream = None))]
#[allow(clippy::too_many_arguments)]
fn conv_general(
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    kernel_dilation: Option<&Bound<'_, PyAny>>,
    input_dilation: Option<&Bound<'_, PyAny>>,
    groups: i64,
    flip: bool,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let op = "conv_general";
    let list = |v: Option<&Bound<'_, PyAny>>, what: &str| match v {
        Some(v) if !v.is_none() => ints(op, what, v),
        _ => Ok(vec![]),
    };
    let (padding_lo, padding_hi) = match padding {
        Some(p) if !p.is_none() => match sequence_items(op, "padding", p)? {
            Some(items)
                if items.len() == 2
                    && items.iter().all(|i| sequence_items(op, "padding", i).is_ok_and(|s| s.is_some())) =>
            {
                (ints(op, "padding", &items[0])?, ints(op, "padding", &items[1])?)
            }
            _ => {
                let v = ints(op, "padding", p)?;
                (v.clone(), v)
            }
        },
        _ => (vec![], vec![]),
    };
    let options = ConvOptions {
        stride: list(stride, "stride")?,
        padding_lo,
        padding_hi,
        kernel_dilation: list(kernel_dilation, "kernel_dilation")?,
        input_dilation: list(input_dilation, "input_dilation")?,
        groups,
        flip,
    };
    let (input, weight) = (to_array(input, None)?, to_array(weight, None)?);
    wrap(on_stream(stream, || ops::conv_general(&input, &weight, &options)))
}

/// The discrete convolution of 1D arrays (`mode` "full", "valid" or "same");
/// the longer array is the signal and the filter is flipped.
///
/// Args:
///     a (array): Input array.
///     v (array): Values.
///     mode (str, optional): Mode of the operation.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, v, /, mode = "full", *, stream = None))]
fn convolve(
    a: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    mode: &str,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (a, v) = (to_array(a, None)?, to_array(v, None)?);
    wrap(on_stream(stream, || ops::convolve(&a, &v, mode)))
}

/// Adds the convolutions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(
        m,
        conv1d,
        conv2d,
        conv3d,
        conv_transpose1d,
        conv_transpose2d,
        conv_transpose3d,
        conv_general,
        convolve
    );
    Ok(())
}
