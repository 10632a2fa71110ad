//! Products and diagonals: `tensordot`, `inner`, `outer`, `kron`,
//! `vecdot`, `addmm`, `gather_mm`, `segmented_mm`, `block_masked_mm`,
//! `hadamard_transform`, `einsum`, `einsum_path`,
//! `diagonal`, `diag`, `trace`.

use super::wrap;
use crate::args;
use crate::array::PyArray;
use crate::convert::{operands, to_array};
use crate::device::on_stream;
use crate::errors::IntoPyResult;
use ferrox::ops::{self, TensordotAxes};
use ferrox_python_macros::guarded;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// The sum of products over paired axes: `axes` is a count (the last
/// `axes` of `a` with the first of `b`) or two sequences of axes.
///
/// Args:
///     a (array): Input array.
///     b (array): Input array.
///     axes (int or list(list(int)), optional): The axes.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, /, axes = None, *, stream = None))]
fn tensordot(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    axes: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (a, b) = (to_array(a, None)?, to_array(b, None)?);
    let spec = match axes {
        None => TensordotAxes::Count(2),
        Some(x) => match x.extract::<i64>() {
            Ok(n) => TensordotAxes::Count(n),
            Err(_) => {
                let pair = args::sequence_items("tensordot", "axes", x)?.unwrap_or_default();
                if pair.len() != 2 {
                    return Err(PyValueError::new_err("[tensordot] axes must be an int or a pair of axis lists."));
                }
                let ints = |o: &Bound<'_, PyAny>| -> PyResult<Vec<isize>> {
                    Ok(args::ints("tensordot", "axes", o)?.into_iter().map(|v| v as isize).collect())
                };
                TensordotAxes::Pairs(ints(&pair[0])?, ints(&pair[1])?)
            }
        },
    };
    wrap(on_stream(stream, || ops::tensordot(&a, &b, &spec)))
}

macro_rules! pair_fns {
    ($($name:ident: $doc:literal),* $(,)?) => {$(
        #[doc = concat!($doc, "\n\nArgs:\n    a (array): Input array.\n    b (array): Input array.\n\nReturns:\n    array: The product.")]
        #[guarded]
        #[pyfunction]
        #[pyo3(signature = (a, b, /, *, stream = None))]
        fn $name(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
            let (a, b) = (to_array(a, None)?, to_array(b, None)?);
            wrap(on_stream(stream, || ops::$name(&a, &b)))
        }
    )*};
}

pair_fns!(
    inner: "The sum of products over the last axes of `a` and `b`.",
    outer: "The outer product of the flattened `a` and `b`.",
    kron: "The Kronecker product of `a` and `b`.",
);

/// `sum(conj(a) * b)` along `axis`.
///
/// Args:
///     a (array): Input array.
///     b (array): Input array.
///     axis (int, optional): Axis to operate along.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, /, *, axis = -1, stream = None))]
fn vecdot(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    axis: isize,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (a, b) = operands(a, b)?;
    wrap(on_stream(stream, || ops::vecdot(&a, &b, axis)))
}

/// `beta * c + alpha * (a @ b)`.
///
/// Args:
///     c (array): Array added to the product.
///     a (array): Input array.
///     b (array): Input array.
///     alpha (float, optional): Factor of the product.
///     beta (float, optional): Factor of ``c``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (c, a, b, /, alpha = 1.0, beta = 1.0, *, stream = None))]
fn addmm(
    c: &Bound<'_, PyAny>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    alpha: f64,
    beta: f64,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (c, a, b) = (to_array(c, None)?, to_array(a, None)?, to_array(b, None)?);
    wrap(on_stream(stream, || ops::addmm(&c, &a, &b, alpha, beta)))
}

/// The diagonal of the 2-D slices spanned by `axis1` and `axis2` (the last
/// axis of the result).
///
/// Args:
///     a (array): Input array.
///     offset (int, optional): Offset of the diagonal (positive: above the main diagonal).
///     axis1 (int, optional): First axis.
///     axis2 (int, optional): Second axis.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, offset = 0, axis1 = 0, axis2 = 1, stream = None))]
fn diagonal(
    a: &Bound<'_, PyAny>,
    offset: i64,
    axis1: isize,
    axis2: isize,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::diagonal(&a, offset, axis1, axis2)))
}

/// The `k`-th diagonal of a 2-D array, or a 2-D array with a 1-D one on
/// its `k`-th diagonal.
///
/// Args:
///     a (array): Input array.
///     k (int, optional): Diagonal offset.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, k = 0, *, stream = None))]
fn diag(a: &Bound<'_, PyAny>, k: i64, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::diag(&a, k)))
}

/// The sum along a diagonal, in `dtype` (default: `a`'s).
///
/// Args:
///     a (array): Input array.
///     offset (int, optional): Offset of the diagonal (positive: above the main diagonal).
///     axis1 (int, optional): First axis.
///     axis2 (int, optional): Second axis.
///     dtype (Dtype, optional): Data type of the result.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, /, offset = 0, axis1 = 0, axis2 = 1, dtype = None, *, stream = None))]
fn trace(
    a: &Bound<'_, PyAny>,
    offset: i64,
    axis1: isize,
    axis2: isize,
    dtype: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    let dtype = args::dtype(dtype)?;
    wrap(on_stream(stream, || ops::trace(&a, offset, axis1, axis2, dtype)))
}

/// `a[lhs_indices] @ b[rhs_indices]`: the indices count over the flattened
/// batch axes of `a` and `b` (every member when None) and broadcast
/// together; `sorted_indices` is accepted for MLX compatibility.
///
/// Args:
///     a (array): Input array.
///     b (array): Input array.
///     lhs_indices (array, optional): Indices into the batch of ``a``, or None.
///     rhs_indices (array, optional): Indices into the batch of ``b``, or None.
///     sorted_indices (bool, optional): Whether the indices are sorted (a hint). Default: ``False``.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, /, lhs_indices = None, rhs_indices = None, *, sorted_indices = false, stream = None))]
fn gather_mm(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    lhs_indices: Option<&Bound<'_, PyAny>>,
    rhs_indices: Option<&Bound<'_, PyAny>>,
    sorted_indices: bool,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let _ = sorted_indices;
    let (a, b) = operands(a, b)?;
    let li = lhs_indices.filter(|x| !x.is_none()).map(|x| to_array(x, None)).transpose()?;
    let ri = rhs_indices.filter(|x| !x.is_none()).map(|x| to_array(x, None)).transpose()?;
    wrap(on_stream(stream, || ops::gather_mm(&a, &b, li.as_ref(), ri.as_ref())))
}

/// For `a` `[M, K]`, `b` `[K, N]` and `segments` `[..., 2]` of
/// `[start, end)` ranges over K: one product per segment, `[..., M, N]`.
///
/// Args:
///     a (array): Input array.
///     b (array): Input array.
///     segments (array): Pairs of (start, end) offsets along the inner axis.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, /, segments, *, stream = None))]
fn segmented_mm(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    segments: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (a, b) = operands(a, b)?;
    let segments = to_array(segments, None)?;
    wrap(on_stream(stream, || ops::segmented_mm(&a, &b, &segments)))
}

/// `a @ b` with `block_size` square blocks of `a` (`mask_lhs`), `b`
/// (`mask_rhs`) and the result (`mask_out`) kept, zeroed (bool masks) or
/// scaled (float masks).
///
/// Args:
///     a (array): Input array.
///     b (array): Input array.
///     block_size (int, optional): Size of the mask blocks.
///     mask_out (array, optional): Output block mask, or None.
///     mask_lhs (array, optional): Block mask of ``a``, or None.
///     mask_rhs (array, optional): Block mask of ``b``, or None.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, b, /, block_size = 64, mask_out = None, mask_lhs = None, mask_rhs = None, *, stream = None))]
#[allow(clippy::too_many_arguments)]
fn block_masked_mm(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    block_size: usize,
    mask_out: Option<&Bound<'_, PyAny>>,
    mask_lhs: Option<&Bound<'_, PyAny>>,
    mask_rhs: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let (a, b) = operands(a, b)?;
    let mask = |m: Option<&Bound<'_, PyAny>>| m.filter(|x| !x.is_none()).map(|x| to_array(x, None)).transpose();
    let (mo, ml, mr) = (mask(mask_out)?, mask(mask_lhs)?, mask(mask_rhs)?);
    wrap(on_stream(stream, || ops::block_masked_mm(&a, &b, block_size, mo.as_ref(), ml.as_ref(), mr.as_ref())))
}

/// The Walsh–Hadamard transform along the last axis (length `m * 2^k`,
/// `m` in 1, 12, 20, 28) times `scale` (default `1/sqrt(n)`).
///
/// Args:
///     a (array): Input array.
///     scale (float, optional): Factor applied to the result (1/sqrt(n) when None).
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (a, scale = None, stream = None))]
fn hadamard_transform(
    a: &Bound<'_, PyAny>,
    scale: Option<f64>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let a = to_array(a, None)?;
    wrap(on_stream(stream, || ops::hadamard_transform(&a, scale)))
}

/// Einstein summation: `subscripts` such as `"ij,jk->ik"` name the axes of
/// each operand (and of the result); letters missing from the result are
/// summed over.
///
/// Args:
///     subscripts (str): Einstein summation subscripts.
///     *operands (array): The operand arrays.
///
/// Returns:
///     array: The result array.
#[guarded]
#[pyfunction]
#[pyo3(signature = (subscripts, *operands, stream = None))]
fn einsum(subscripts: &str, operands: &Bound<'_, PyTuple>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
    let operands = operands.iter().map(|a| to_array(&a, None)).collect::<PyResult<Vec<_>>>()?;
    wrap(on_stream(stream, || ops::einsum(subscripts, &operands)))
}

/// The contraction order `einsum` follows, as a list of tuples of operand
/// positions, and a report of its scaling and FLOP counts.
///
/// Args:
///     subscripts (str): Einstein summation subscripts.
///     *operands (array): The operand arrays.
///
/// Returns:
///     tuple(list(Any), str): The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (subscripts, *operands))]
fn einsum_path<'py>(
    py: Python<'py>,
    subscripts: &str,
    operands: &Bound<'py, PyTuple>,
) -> PyResult<(Bound<'py, PyList>, String)> {
    let operands = operands.iter().map(|a| to_array(&a, None)).collect::<PyResult<Vec<_>>>()?;
    let path = ops::einsum_path(subscripts, &operands).py()?;
    let steps = path.steps.iter().map(|s| PyTuple::new(py, s)).collect::<PyResult<Vec<_>>>()?;
    Ok((PyList::new(py, steps)?, path.report))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(
        m,
        tensordot,
        inner,
        outer,
        kron,
        vecdot,
        addmm,
        gather_mm,
        segmented_mm,
        block_masked_mm,
        hadamard_transform,
        einsum,
        einsum_path,
        diagonal,
        diag,
        trace
    );
    Ok(())
}
