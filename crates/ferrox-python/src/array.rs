//! The `ferrox.array` class: attributes, conversions, operators, indexing,
//! the buffer protocol and the op methods.

use crate::args;
use crate::convert::to_array;
use crate::dtype::PyDtype;
use crate::errors::IntoPyResult;
use ferrox::backend::{ScatterOp, Storage};
use ferrox::format::repr;
use ferrox::ops::{self, Index};
use ferrox::{Array, Dtype, Scalar};
use ferrox_python_macros::guarded;
use pyo3::exceptions::{PyBufferError, PyMemoryError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PyList, PyModule, PySlice, PyTuple};
use std::ffi::{c_int, c_void, CString};
use std::sync::Arc;

/// An N-dimensional array, evaluated lazily.
///
/// Args:
///     val (array or scalar or list or buffer): The values: an array, a Python
///         scalar, nested lists or tuples, or an object with the buffer protocol
///         (a NumPy array).
///     dtype (Dtype, optional): Dtype of the array; inferred from ``val`` when None.
#[pyclass(name = "array", module = "ferrox", sequence, weakref)]
pub struct PyArray {
    /// The wrapped graph handle.
    pub inner: Array,
}

impl PyArray {
    /// Wraps an array for Python.
    pub fn wrap(inner: Array) -> PyArray {
        PyArray { inner }
    }

    /// `f(self)` on `stream` (a method's `stream=` argument), wrapped for Python.
    pub fn op(
        &self,
        stream: Option<&Bound<'_, PyAny>>,
        f: impl FnOnce(&Array) -> ferrox::Result<Array>,
    ) -> PyResult<PyArray> {
        Ok(PyArray::wrap(crate::device::on_stream(stream, || f(&self.inner))?.py()?))
    }
}

/// Converts a scalar to the Python object of its kind.
pub fn scalar_to_py(py: Python<'_>, s: Scalar) -> PyResult<PyObject> {
    Ok(match s {
        Scalar::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        Scalar::Int(v) => v.into_pyobject(py)?.into_any().unbind(),
        Scalar::UInt(v) => v.into_pyobject(py)?.into_any().unbind(),
        Scalar::Float(v) => v.into_pyobject(py)?.into_any().unbind(),
        Scalar::Complex(re, im) => pyo3::types::PyComplex::from_doubles(py, re as f64, im as f64).into_any().unbind(),
    })
}

/// Python objects above this many bytes per element are refused up front
/// (a list of lists costs at least this much per entry).
const PY_OBJECT_BYTES: usize = 32;

/// A MemoryError, raised before any work, when the Python objects of
/// `tolist()` for `shape` alone could not fit in memory.
fn check_list_fits(shape: &[usize]) -> PyResult<()> {
    let lists = (0..shape.len()).fold(0usize, |acc, d| acc.saturating_add(ferrox::shape::numel(&shape[..d])));
    let objects = lists.saturating_add(ferrox::shape::numel(shape));
    if objects.saturating_mul(PY_OBJECT_BYTES) > ferrox::memory::physical_memory() {
        return Err(PyMemoryError::new_err(format!(
            "[tolist] {objects} Python objects for an array of shape {} would not fit in memory.",
            ferrox::error::fmt_shape(shape)
        )));
    }
    Ok(())
}

/// The nested lists of `vals` (row-major over `shape`), built level by level
/// from the innermost, without recursion.
fn nested_list(py: Python<'_>, vals: &[Scalar], shape: &[usize]) -> PyResult<PyObject> {
    if shape.is_empty() {
        return scalar_to_py(py, vals[0]);
    }
    let mut level: Vec<PyObject> = vals.iter().map(|&v| scalar_to_py(py, v)).collect::<PyResult<_>>()?;
    for d in (0..shape.len()).rev() {
        let groups = ferrox::shape::numel(&shape[..d]);
        let size = shape[d];
        let mut items = level.into_iter();
        level = (0..groups)
            .map(|_| Ok(PyList::new(py, items.by_ref().take(size))?.into_any().unbind()))
            .collect::<PyResult<_>>()?;
    }
    Ok(level.pop().expect("the outermost level is one list"))
}

/// Parses one entry of an index expression.
fn index_entry(obj: &Bound<'_, PyAny>) -> PyResult<Index> {
    if obj.is_none() {
        return Ok(Index::NewAxis);
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(Index::Ellipsis);
    }
    if let Ok(s) = obj.downcast::<PySlice>() {
        let part = |name: &str| -> PyResult<Option<i64>> {
            let v = s.getattr(name)?;
            if v.is_none() {
                Ok(None)
            } else {
                Ok(Some(slice_int(&v)?))
            }
        };
        return Ok(Index::Slice { start: part("start")?, stop: part("stop")?, step: part("step")? });
    }
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err("[index] Boolean indices are not supported."));
    }
    if let Ok(i) = obj.extract::<i64>() {
        return Ok(Index::Int(i));
    }
    if crate::convert::is_array_like(obj) || obj.is_instance_of::<PyList>() {
        return Ok(Index::Array(to_array(obj, None)?));
    }
    Err(PyValueError::new_err(format!(
        "Cannot index an array with an object of type {}: integers, slices, None, ..., arrays and lists are valid indices.",
        obj.get_type().name()?
    )))
}

/// A boolean mask key (a bool, or a bool array or list), as MLX accepts in
/// assignments.
fn boolean_mask(key: &Bound<'_, PyAny>) -> PyResult<Option<Array>> {
    if key.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(Some(Array::scalar_of(Scalar::Bool(key.extract()?), Dtype::Bool)));
    }
    if crate::convert::is_array_like(key) || key.is_instance_of::<PyList>() {
        let a = to_array(key, None)?;
        return Ok((a.dtype() == Dtype::Bool).then_some(a));
    }
    Ok(None)
}

/// Parses a whole index expression (a tuple is several entries).
fn index_entries(key: &Bound<'_, PyAny>) -> PyResult<Vec<Index>> {
    if let Ok(t) = key.downcast::<PyTuple>() {
        t.iter().map(|e| index_entry(&e)).collect()
    } else {
        Ok(vec![index_entry(key)?])
    }
}

/// `array.at`: indexed updates that return a new array, with repeated
/// indices combining (MLX's `array.at[idx].add(v)` and friends).
#[pyclass(name = "ArrayAt", module = "ferrox")]
pub struct PyArrayAt {
    array: Array,
}

#[guarded]
#[pymethods]
impl PyArrayAt {
    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<PyArrayAtIndex> {
        Ok(PyArrayAtIndex { array: self.array.clone(), indices: index_entries(key)?, whole: whole_array_key(key) })
    }

    /// An update method asked of `array.at` itself, before an index: a
    /// ValueError as MLX raises (`a.at[idx].add(v)` is the form).
    fn __getattr__(&self, name: &str) -> PyResult<PyObject> {
        if matches!(name, "add" | "subtract" | "multiply" | "divide" | "maximum" | "minimum") {
            return Err(PyValueError::new_err(format!(
                "[at] Index the array before updating it: a.at[index].{name}(value)."
            )));
        }
        Err(pyo3::exceptions::PyAttributeError::new_err(format!("'ArrayAt' object has no attribute '{name}'")))
    }
}

/// Whether `key` is a bare `...` or `None`, for which MLX's assignments
/// and `.at` updates skip indexing: `a[...] = v` makes `a` the value
/// broadcast to `a`'s shape (its dtype included), and `a.at[...].add(v)`
/// is `a + v`, promoted as arithmetic is.
fn whole_array_key(key: &Bound<'_, PyAny>) -> bool {
    key.is_none() || key.is(key.py().Ellipsis())
}

/// The value of a whole-array assignment or update, as MLX's `to_array(v,
/// dtype)` makes it: an array keeps its dtype, anything else converts as
/// an operand against `like`.
fn whole_array_value(value: &Bound<'_, PyAny>, like: Dtype) -> PyResult<Array> {
    match value.downcast::<PyArray>() {
        Ok(a) => Ok(a.borrow().inner.clone()),
        Err(_) => crate::convert::operand(value, like),
    }
}

/// `array.at[index]`: the update methods.
#[pyclass(name = "ArrayAtIndex", module = "ferrox")]
pub struct PyArrayAtIndex {
    array: Array,
    indices: Vec<Index>,
    /// The key was a bare `...` or `None` ([`whole_array_key`]).
    whole: bool,
}

impl PyArrayAtIndex {
    /// The update: `op` of `prepare(value)` at the index, or for a whole-
    /// array key `elementwise(array, value)`.
    fn update(
        &self,
        value: &Bound<'_, PyAny>,
        op: ScatterOp,
        prepare: fn(&Array) -> ferrox::Result<Array>,
        elementwise: fn(&Array, &Array) -> ferrox::Result<Array>,
    ) -> PyResult<PyArray> {
        if self.whole {
            let value = whole_array_value(value, self.array.dtype())?;
            let value = ops::broadcast_to(&value, self.array.shape()).py()?;
            return Ok(PyArray::wrap(elementwise(&self.array, &value).py()?));
        }
        // As in MLX, an array value keeps its dtype through `prepare` (a
        // float divisor's reciprocal is taken in float); the update casts.
        let value = match value.downcast::<PyArray>() {
            Ok(v) => v.borrow().inner.clone(),
            Err(_) => crate::convert::operand(value, self.array.dtype())?,
        };
        let value = prepare(&value).py()?;
        Ok(PyArray::wrap(ops::index_update(&self.array, &self.indices, &value, op).py()?))
    }
}

#[guarded]
#[pymethods]
impl PyArrayAtIndex {
    /// The array with `value` added at the index (repeats accumulate).
    ///
    /// Args:
    ///     value (array): The value.
    ///
    /// Returns:
    ///     array: The result array.
    fn add(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        self.update(value, ScatterOp::Sum, |v| Ok(v.clone()), ops::add)
    }

    /// The array with `value` subtracted at the index (repeats accumulate).
    ///
    /// Args:
    ///     value (array): The value.
    ///
    /// Returns:
    ///     array: The result array.
    fn subtract(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        self.update(value, ScatterOp::Sum, ops::negative, ops::subtract)
    }

    /// The array multiplied by `value` at the index (repeats accumulate).
    ///
    /// Args:
    ///     value (array): The value.
    ///
    /// Returns:
    ///     array: The result array.
    fn multiply(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        self.update(value, ScatterOp::Prod, |v| Ok(v.clone()), ops::multiply)
    }

    /// The array divided by `value` at the index (repeats accumulate).
    ///
    /// Args:
    ///     value (array): The value.
    ///
    /// Returns:
    ///     array: The result array.
    fn divide(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        self.update(value, ScatterOp::Prod, ops::reciprocal, ops::divide)
    }

    /// The array with the larger of it and `value` at the index.
    ///
    /// Args:
    ///     value (array): The value.
    ///
    /// Returns:
    ///     array: The result array.
    fn maximum(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        self.update(value, ScatterOp::Max, |v| Ok(v.clone()), ops::maximum)
    }

    /// The array with the smaller of it and `value` at the index.
    ///
    /// Args:
    ///     value (array): The value.
    ///
    /// Returns:
    ///     array: The result array.
    fn minimum(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        self.update(value, ScatterOp::Min, |v| Ok(v.clone()), ops::minimum)
    }
}

/// A slice bound or step as Python allows it (any object with `__index__`),
/// clamped to ±`i64::MAX`: bounds beyond any axis and steps longer than any
/// axis select the same elements as the clamped value, as in NumPy.
fn slice_int(v: &Bound<'_, PyAny>) -> PyResult<i64> {
    let index = v.py().import("operator")?.getattr("index")?;
    let i = index.call1((v,)).map_err(|_| {
        PyTypeError::new_err("[index] Slice indices must be integers or None or have an __index__ method.")
    })?;
    match i.extract::<i64>() {
        Ok(x) => Ok(x.max(-i64::MAX)),
        Err(_) => Ok(if i.lt(0)? { -i64::MAX } else { i64::MAX }),
    }
}

fn no_modulo(modulo: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    match modulo {
        Some(m) if !m.is_none() => Err(PyTypeError::new_err("pow() with a modulo is not supported for arrays")),
        _ => Ok(()),
    }
}

/// Iterates over the first axis of an array, one view at a time (so any
/// length costs only what is consumed).
#[pyclass(module = "ferrox")]
pub struct ArrayIterator {
    array: Array,
    next: usize,
    len: usize,
}

#[guarded]
#[pymethods]
impl ArrayIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self) -> PyResult<Option<PyArray>> {
        if self.next >= self.len {
            return Ok(None);
        }
        let row = ops::index(&self.array, &[Index::Int(self.next as i64)]).py()?;
        self.next += 1;
        Ok(Some(PyArray::wrap(row)))
    }

    fn __length_hint__(&self) -> usize {
        self.len - self.next
    }
}

/// Keeps the exported buffer's storage and geometry alive for its consumer.
struct ExportedBuffer {
    _storage: Arc<Storage>,
    shape: Vec<isize>,
    strides: Vec<isize>,
    format: CString,
}

fn buffer_format(d: Dtype) -> &'static str {
    match d {
        Dtype::Bool => "?",
        Dtype::U8 => "B",
        Dtype::U16 => "H",
        Dtype::U32 => "I",
        Dtype::U64 => "Q",
        Dtype::I8 => "b",
        Dtype::I16 => "h",
        Dtype::I32 => "i",
        Dtype::I64 => "q",
        Dtype::F16 => "e",
        Dtype::F32 => "f",
        Dtype::F64 => "d",
        Dtype::C64 => "Zf",
        // No struct-module code exists for bfloat16: MLX's format name.
        Dtype::BF16 => "bfloat16",
    }
}

#[guarded]
#[pymethods]
impl PyArray {
    #[new]
    #[pyo3(signature = (val, dtype = None))]
    fn new(val: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        Ok(PyArray::wrap(to_array(val, args::dtype(dtype)?)?))
    }

    /// The extent of each dimension.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }

    /// The element type.
    #[getter]
    fn dtype(&self) -> PyDtype {
        PyDtype(self.inner.dtype())
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }

    /// Number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }

    /// Bytes the elements occupy.
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.nbytes()
    }

    /// Size of one element in bytes.
    #[getter]
    fn itemsize(&self) -> usize {
        self.inner.itemsize()
    }

    /// The transpose (all axes reversed).
    #[getter(T)]
    fn transposed(&self) -> PyResult<PyArray> {
        Ok(PyArray::wrap(ops::transpose(&self.inner, None).py()?))
    }

    /// The value of a one-element array as a Python scalar.
    ///
    /// Returns:
    ///     Any: The result.
    fn item(&self, py: Python<'_>) -> PyResult<PyObject> {
        let s = py.allow_threads(|| self.inner.item_scalar()).py()?;
        scalar_to_py(py, s)
    }

    /// The array as nested Python lists (a scalar for 0-d arrays).
    ///
    /// Returns:
    ///     Any: The result.
    fn tolist(&self, py: Python<'_>) -> PyResult<PyObject> {
        check_list_fits(self.inner.shape())?;
        let vals = py.allow_threads(|| self.inner.to_scalars()).py()?;
        nested_list(py, &vals, self.inner.shape())
    }

    /// A copy converted to `dtype`.
    ///
    /// Args:
    ///     dtype (Dtype): Data type of the result.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (dtype, stream = None))]
    fn astype(&self, dtype: PyDtype, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        let out = crate::device::on_stream(stream, || ops::astype(&self.inner, dtype.0))?;
        Ok(PyArray::wrap(out.py()?))
    }

    /// The array with a new shape: `a.reshape(2, 3)` or `a.reshape((2, 3))`.
    ///
    /// Args:
    ///     *shape (int or list(int)): New shape; one entry may be -1.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (*shape, stream = None))]
    fn reshape(&self, shape: &Bound<'_, PyTuple>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        let shape = args::signed_shape_varargs("reshape", shape)?;
        self.op(stream, |a| ops::reshape(a, &shape))
    }

    /// The array with permuted axes: `a.transpose(1, 0)` or `a.transpose((1, 0))`.
    ///
    /// Args:
    ///     *axes (int or list(int)): The axes.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (*axes, stream = None))]
    fn transpose(&self, axes: &Bound<'_, PyTuple>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        let axes = if axes.is_empty() { None } else { Some(args::signed_shape_varargs("transpose", axes)?) };
        self.op(stream, |a| ops::transpose(a, axes.as_deref()))
    }

    /// Swaps two axes.
    ///
    /// Args:
    ///     axis1 (int): First axis.
    ///     axis2 (int): Second axis.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (axis1, axis2, *, stream = None))]
    fn swapaxes(&self, axis1: isize, axis2: isize, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        self.op(stream, |a| ops::swapaxes(a, axis1, axis2))
    }

    /// Merges axes `start_axis..=end_axis`.
    ///
    /// Args:
    ///     start_axis (int, optional): First axis to flatten.
    ///     end_axis (int, optional): Last axis to flatten.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (start_axis = 0, end_axis = -1, *, stream = None))]
    fn flatten(&self, start_axis: isize, end_axis: isize, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        self.op(stream, |a| ops::flatten(a, start_axis, end_axis))
    }

    /// Removes extent-1 axes.
    ///
    /// Args:
    ///     axis (int or list(int), optional): Axis or axes to operate over; None means all axes (or the flattened array).
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (axis = None, *, stream = None))]
    fn squeeze(&self, axis: Option<&Bound<'_, PyAny>>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        let axes = args::axes("squeeze", axis)?;
        self.op(stream, |a| ops::squeeze(a, axes.as_deref()))
    }

    /// Index of the largest element along `axis`.
    ///
    /// Args:
    ///     axis (int, optional): Axis to operate along; None means the flattened array.
    ///     keepdims (bool, optional): Keep the reduced axes as singleton dimensions. Default: ``False``.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn argmax(&self, axis: Option<isize>, keepdims: bool, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        self.op(stream, |a| ops::argmax(a, axis, keepdims))
    }

    /// Index of the smallest element along `axis`.
    ///
    /// Args:
    ///     axis (int, optional): Axis to operate along; None means the flattened array.
    ///     keepdims (bool, optional): Keep the reduced axes as singleton dimensions. Default: ``False``.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn argmin(&self, axis: Option<isize>, keepdims: bool, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        self.op(stream, |a| ops::argmin(a, axis, keepdims))
    }

    fn __pow__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        no_modulo(modulo)?;
        let (a, b) = crate::methods::operator_operands(slf.as_any(), other, false, "power")?;
        Ok(PyArray::wrap(ops::power(&a, &b).py()?))
    }

    fn __rpow__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        no_modulo(modulo)?;
        let (a, b) = crate::methods::operator_operands(slf.as_any(), other, true, "power")?;
        Ok(PyArray::wrap(ops::power(&a, &b).py()?))
    }

    fn __ipow__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>, modulo: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        no_modulo(modulo)?;
        let (a, b) = crate::methods::operator_operands(slf.as_any(), other, false, "inplace power")?;
        let out = ops::power(&a, &b).py()?;
        slf.borrow_mut().inner = out;
        Ok(())
    }

    fn __neg__(&self) -> PyResult<PyArray> {
        Ok(PyArray::wrap(ops::negative(&self.inner).py()?))
    }

    fn __pos__(&self) -> PyArray {
        PyArray::wrap(self.inner.clone())
    }

    fn __abs__(&self) -> PyResult<PyArray> {
        Ok(PyArray::wrap(ops::abs(&self.inner).py()?))
    }

    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        Ok(PyArray::wrap(ops::index(&self.inner, &index_entries(key)?).py()?))
    }

    /// `a[key] = value`: the array now holds the update (other references
    /// to the old value keep it, as in MLX).
    fn __setitem__(&mut self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        if whole_array_key(key) {
            let value = whole_array_value(value, self.inner.dtype())?;
            self.inner = ops::broadcast_to(&value, self.inner.shape()).py()?;
            return Ok(());
        }
        let value = crate::convert::operand(value, self.inner.dtype())?;
        self.inner = match boolean_mask(key)? {
            Some(mask) => ops::masked_scatter(&self.inner, &mask, &value).py()?,
            None => ops::index_update(&self.inner, &index_entries(key)?, &value, ScatterOp::Assign).py()?,
        };
        Ok(())
    }

    /// Indexed updates that return a new array: `a.at[idx].add(v)`,
    /// `subtract`, `multiply`, `divide`, `maximum`, `minimum`; unlike
    /// `a[idx] += v`, repeated indices all apply.
    #[getter]
    fn at(&self) -> PyArrayAt {
        PyArrayAt { array: self.inner.clone() }
    }

    fn __len__(&self) -> PyResult<usize> {
        self.inner.shape().first().copied().ok_or_else(|| PyTypeError::new_err("len() of unsized object"))
    }

    fn __iter__(&self) -> PyResult<ArrayIterator> {
        let n = *self.inner.shape().first().ok_or_else(|| PyTypeError::new_err("iteration over a 0-d array"))?;
        Ok(ArrayIterator { array: self.inner.clone(), next: 0, len: n })
    }

    fn __bool__(&self) -> PyResult<bool> {
        if self.inner.size() != 1 {
            return Err(PyValueError::new_err("The truth value of an array with more than one element is ambiguous."));
        }
        Ok(match self.inner.item_scalar().py()? {
            Scalar::Bool(b) => b,
            Scalar::Int(v) => v != 0,
            Scalar::UInt(v) => v != 0,
            Scalar::Float(v) => v != 0.0,
            Scalar::Complex(re, im) => re != 0.0 || im != 0.0,
        })
    }

    fn __float__(&self) -> PyResult<f64> {
        Ok(self.inner.item_scalar().py()?.as_f64())
    }

    fn __int__(&self, py: Python<'_>) -> PyResult<PyObject> {
        Ok(match self.inner.item_scalar().py()? {
            Scalar::Int(v) => v.into_pyobject(py)?.into_any().unbind(),
            Scalar::UInt(v) => v.into_pyobject(py)?.into_any().unbind(),
            Scalar::Bool(b) => (b as i64).into_pyobject(py)?.into_any().unbind(),
            // Python's own float-to-int rules: NaN and infinities raise.
            other => pyo3::types::PyFloat::new(py, other.as_f64()).call_method0("__int__")?.unbind(),
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        py.allow_threads(|| repr(&self.inner)).py()
    }

    fn __complex__(&self, py: Python<'_>) -> PyResult<PyObject> {
        let (re, im) = match py.allow_threads(|| self.inner.item_scalar()).py()? {
            Scalar::Complex(re, im) => (re as f64, im as f64),
            other => (other.as_f64(), 0.0),
        };
        Ok(pyo3::types::PyComplex::from_doubles(py, re, im).into_any().unbind())
    }

    /// `format(a, spec)`: a 0-d array formats as its Python scalar (so
    /// `f"{a:.3f}"` works, as in NumPy and MLX); other arrays take only an
    /// empty spec, which gives their repr.
    fn __format__(&self, py: Python<'_>, spec: &str) -> PyResult<String> {
        if self.inner.ndim() == 0 {
            let item = self.item(py)?;
            return item.bind(py).call_method1("__format__", (spec,))?.extract();
        }
        if !spec.is_empty() {
            return Err(PyTypeError::new_err("unsupported format string passed to ferrox.array.__format__"));
        }
        self.__repr__(py)
    }

    /// Returns an object that has all the array API functions on it: the
    /// ``ferrox`` module.
    ///
    /// Args:
    ///     api_version (str, optional): The version of the array API
    ///       standard to return; only ``None`` is accepted.
    ///
    /// Returns:
    ///     module: The ``ferrox`` module.
    #[pyo3(signature = (api_version = None))]
    fn __array_namespace__<'py>(&self, py: Python<'py>, api_version: Option<&str>) -> PyResult<Bound<'py, PyModule>> {
        if let Some(v) = api_version {
            return Err(PyValueError::new_err(format!(
                "[__array_namespace__] Explicitly specifying api_version ({v:?}) is not supported."
            )));
        }
        py.import("ferrox")
    }

    /// A new array object holding the same (immutable) data, as MLX's
    /// `copy.copy`.
    fn __copy__(&self) -> PyArray {
        PyArray::wrap(self.inner.clone())
    }

    /// A new array object holding the same (immutable) data, as MLX's
    /// `copy.deepcopy`: updates through `a[...] = v` never reach a copy.
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyArray {
        PyArray::wrap(self.inner.clone())
    }

    /// The pickled state: the elements' row-major little-endian bytes, the
    /// shape and the dtype's name (every dtype, bfloat16 and complex64
    /// included; an array on the GPU is read back to the host).
    fn __getstate__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let host = py.allow_threads(|| self.inner.to_host()).py()?;
        let bytes = pyo3::types::PyBytes::new(py, &host.bytes()[..self.inner.nbytes()]);
        let shape = PyTuple::new(py, self.inner.shape())?;
        PyTuple::new(py, [bytes.into_any(), shape.into_any(), self.inner.dtype().name().into_pyobject(py)?.into_any()])
    }

    /// Restores a pickled state (see `__getstate__`); the array is
    /// evaluated and on the host.
    fn __setstate__(&mut self, state: &Bound<'_, PyAny>) -> PyResult<()> {
        let bad =
            || PyValueError::new_err("[array.__setstate__] Invalid pickle state: expected (bytes, shape, dtype name).");
        let state = state.downcast::<PyTuple>().map_err(|_| bad())?;
        if state.len() != 3 {
            return Err(bad());
        }
        let bytes = state.get_item(0)?;
        let bytes = bytes.downcast::<pyo3::types::PyBytes>().map_err(|_| bad())?;
        let shape: Vec<usize> = state.get_item(1)?.extract().map_err(|_| bad())?;
        let dtype: String = state.get_item(2)?.extract().map_err(|_| bad())?;
        let dtype = Dtype::from_name(&dtype).ok_or_else(bad)?;
        self.inner = Array::from_bytes(bytes.as_bytes(), dtype, &shape).py()?;
        Ok(())
    }

    /// Pickling support: rebuilds the array with `ferrox.array` and
    /// `__setstate__`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let state = slf.borrow().__getstate__(py)?;
        let args = PyTuple::new(py, [0])?;
        PyTuple::new(py, [slf.get_type().into_any(), args.into_any(), state.into_any()])
    }

    /// NumPy's conversion hook: the buffer-protocol export as an ndarray
    /// (cast to `dtype` if given). Having it keeps NumPy from falling back to
    /// walking the array element by element when the export fails (for
    /// example with a MemoryError for a view too large to copy).
    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__<'py>(
        slf: Bound<'py, Self>,
        dtype: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let np = slf.py().import("numpy")?;
        let view = np.call_method1("asarray", (pyo3::types::PyMemoryView::from(slf.as_any())?,))?;
        match dtype.filter(|d| !d.is_none()) {
            Some(d) => view.call_method1("astype", (d,)),
            None if copy == Some(true) => view.call_method0("copy"),
            None => Ok(view),
        }
    }

    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("View is null"));
        }
        let a = slf.borrow().inner.clone();
        let format = buffer_format(a.dtype());
        let data = slf.py().allow_threads(|| a.data()).py()?;
        // Share the buffer when it is on the host, row-contiguous or with a
        // consumer that reads strides (a transposed, sliced or broadcast
        // view exports its own strides, as MLX's does: no copy); else export
        // a copy. Memory another library owns (a DLPack import) is shared
        // read-only, and copied for a consumer that asks to write. From the
        // GPU, the elements the view reaches are copied and keep its strides.
        let writable = flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE;
        let reads_strides = flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES;
        let shares_layout = data.layout.is_row_contiguous() || reads_strides;
        let on_host = matches!(&*data.storage, Storage::Cpu(_));
        let (storage, layout, readonly) = match &*data.storage {
            Storage::Cpu(host) if shares_layout && !(host.is_foreign() && writable) => {
                (data.storage.clone(), data.layout.clone(), host.is_foreign())
            }
            _ if shares_layout && !on_host => {
                let (storage, layout) =
                    slf.py().allow_threads(|| a.to_host_view()).map_err(|e| e.in_op("buffer")).py()?;
                (storage, layout, false)
            }
            _ => (
                Arc::new(Storage::Cpu(a.to_host().map_err(|e| e.in_op("buffer")).py()?)),
                ferrox::shape::Layout::contiguous(a.shape()),
                false,
            ),
        };
        let Storage::Cpu(host) = &*storage else {
            unreachable!("the exported storage was made on the host above");
        };
        let (itemsize, offset) = (a.itemsize() as isize, layout.offset);
        let shape: Vec<isize> = a.shape().iter().map(|&d| d as isize).collect();
        let strides = layout.strides.iter().map(|s| s * itemsize).collect();
        let holder = Box::new(ExportedBuffer {
            _storage: storage.clone(),
            shape,
            strides,
            format: CString::new(format).expect("no NUL in format"),
        });
        let v = &mut *view;
        v.obj = slf.clone().into_any().into_ptr();
        v.buf = host.bytes().as_ptr().add(offset * itemsize as usize) as *mut c_void;
        v.len = a.nbytes() as isize;
        v.readonly = c_int::from(readonly);
        v.itemsize = itemsize;
        v.format = if flags & ffi::PyBUF_FORMAT != 0 { holder.format.as_ptr() as *mut _ } else { std::ptr::null_mut() };
        v.ndim = a.ndim() as c_int;
        v.shape = if flags & ffi::PyBUF_ND != 0 { holder.shape.as_ptr() as *mut _ } else { std::ptr::null_mut() };
        v.strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
            holder.strides.as_ptr() as *mut _
        } else {
            std::ptr::null_mut()
        };
        v.suboffsets = std::ptr::null_mut();
        v.internal = Box::into_raw(holder) as *mut c_void;
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        let internal = (*view).internal as *mut ExportedBuffer;
        if !internal.is_null() {
            drop(Box::from_raw(internal));
            (*view).internal = std::ptr::null_mut();
        }
    }
}
