//! The op methods and operators of `ferrox.array`: the table rows marked
//! `both` (as MLX's `array` has them), reductions, math methods, and the
//! arithmetic, bitwise and comparison operators with their reflected and
//! in-place forms. Every method takes `stream=` as MLX's do.

use crate::args;
use crate::array::PyArray;
use crate::convert::operands;
use crate::errors::IntoPyResult;
use ferrox::ops;
use ferrox_python_macros::guarded;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// The method of one unary row, for rows that MLX's `array` has.
macro_rules! unary_method {
    (both, $name:ident, $doc:literal) => {
        #[guarded]
        #[pymethods]
        impl PyArray {
            #[doc = concat!($doc, "\n\nReturns:\n    array: The result array.")]
            #[pyo3(signature = (*, stream = None))]
            fn $name(&self, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
                self.op(stream, ops::$name)
            }
        }
    };
    ($py:ident, $name:ident, $doc:literal) => {};
}

macro_rules! unary_methods {
    ($($name:ident: $Var:ident, $kind:ident, $py:ident, $doc:literal, |$x:ident, $y:ident| $d:expr;)*) => {
        $(unary_method!($py, $name, $doc);)*
    };
}

ferrox::unary_ops!(unary_methods);

/// Whether an operator may combine an array with `other`: arrays, Python
/// scalars, objects with the buffer protocol (NumPy arrays) and objects
/// with `__mlx_array__`. Lists, tuples and strings are not (MLX's rule:
/// `==` with them is False, `!=` True, and other operators raise).
fn operator_accepts(other: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(crate::convert::is_array_like(other)
        || crate::convert::py_scalar(other)?.is_some()
        || other.hasattr("__mlx_array__")?)
}

/// The operands of operator `operation` between the array `slf` and
/// `other` (`other` first when `reflected`), or MLX's ValueError for an
/// operand the operators do not accept ([`operator_accepts`]).
pub(crate) fn operator_operands(
    slf: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    reflected: bool,
    operation: &str,
) -> PyResult<(ferrox::Array, ferrox::Array)> {
    if !operator_accepts(other)? {
        let name = other.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".into());
        return Err(PyValueError::new_err(format!("Cannot perform {operation} on a ferrox.array and {name}")));
    }
    if reflected {
        operands(other, slf)
    } else {
        operands(slf, other)
    }
}

macro_rules! binary_dunders {
    ($($name:ident, $rname:ident, $iname:ident => $op:path, $what:literal;)*) => {
        #[guarded]
        #[pymethods]
        impl PyArray {
            $(
                fn $name(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyArray> {
                    let (a, b) = operator_operands(slf.as_any(), other, false, $what)?;
                    Ok(PyArray::wrap($op(&a, &b).py()?))
                }
                fn $rname(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyArray> {
                    let (a, b) = operator_operands(slf.as_any(), other, true, $what)?;
                    Ok(PyArray::wrap($op(&a, &b).py()?))
                }
                fn $iname(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
                    let (a, b) = operator_operands(slf.as_any(), other, false, concat!("inplace ", $what))?;
                    if $what == "division" && !a.dtype().is_inexact() {
                        // As MLX: `a /= b` would turn an integer array into floats.
                        return Err(PyValueError::new_err(
                            "In place division cannot cast to non-floating point type.",
                        ));
                    }
                    let out = $op(&a, &b).py()?;
                    slf.borrow_mut().inner = out;
                    Ok(())
                }
            )*
        }
    };
}

binary_dunders! {
    __add__, __radd__, __iadd__ => ops::add, "addition";
    __sub__, __rsub__, __isub__ => ops::subtract, "subtraction";
    __mul__, __rmul__, __imul__ => ops::multiply, "multiplication";
    __truediv__, __rtruediv__, __itruediv__ => ops::divide, "division";
    __floordiv__, __rfloordiv__, __ifloordiv__ => ops::floor_divide, "floor division";
    __mod__, __rmod__, __imod__ => ops::remainder, "modulus";
    __matmul__, __rmatmul__, __imatmul__ => ops::matmul, "matrix multiplication";
    __and__, __rand__, __iand__ => ops::bitwise_and, "bitwise and";
    __or__, __ror__, __ior__ => ops::bitwise_or, "bitwise or";
    __xor__, __rxor__, __ixor__ => ops::bitwise_xor, "bitwise xor";
    __lshift__, __rlshift__, __ilshift__ => ops::left_shift, "left shift";
    __rshift__, __rrshift__, __irshift__ => ops::right_shift, "right shift";
}

/// Element-wise comparison `op` of the array with `other`, or the
/// ValueError of an operand the operators do not accept.
fn compare(
    slf: &Bound<'_, PyArray>,
    other: &Bound<'_, PyAny>,
    op: fn(&ferrox::Array, &ferrox::Array) -> ferrox::Result<ferrox::Array>,
    what: &str,
) -> PyResult<PyArray> {
    let (a, b) = operator_operands(slf.as_any(), other, false, what)?;
    Ok(PyArray::wrap(op(&a, &b).py()?))
}

// The comparison operators share one `#[pymethods]` block: PyO3 builds
// one rich-comparison slot from them.
#[guarded]
#[pymethods]
impl PyArray {
    fn __lt__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        compare(slf, other, ops::less, "less than")
    }
    fn __le__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        compare(slf, other, ops::less_equal, "less than or equal")
    }
    fn __gt__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        compare(slf, other, ops::greater, "greater than")
    }
    fn __ge__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        compare(slf, other, ops::greater_equal, "greater than or equal")
    }
    /// Element-wise `==`; a Python bool (False) against a value that is not
    /// an array, scalar or array-like (a list, tuple or str), as MLX's.
    fn __eq__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        let py = slf.py();
        if !operator_accepts(other)? {
            return Ok(false.into_pyobject(py)?.to_owned().into_any().unbind());
        }
        let (a, b) = operands(slf.as_any(), other)?;
        Ok(PyArray::wrap(ops::equal(&a, &b).py()?).into_pyobject(py)?.into_any().unbind())
    }
    /// Element-wise `!=`; a Python bool (True) against a value that is not
    /// an array, scalar or array-like, as MLX's.
    fn __ne__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        let py = slf.py();
        if !operator_accepts(other)? {
            return Ok(true.into_pyobject(py)?.to_owned().into_any().unbind());
        }
        let (a, b) = operands(slf.as_any(), other)?;
        Ok(PyArray::wrap(ops::not_equal(&a, &b).py()?).into_pyobject(py)?.into_any().unbind())
    }
}

macro_rules! reduce_methods {
    ($($name:ident),*) => {
        #[guarded]
        #[pymethods]
        impl PyArray {
            $(
                #[doc = concat!("Reduction ", stringify!($name), " over `axis` (see `ferrox.", stringify!($name), "`).\n\nArgs:\n    axis (int or list(int), optional): Axis or axes to reduce over; all axes when None.\n    keepdims (bool, optional): Keep the reduced axes as singleton dimensions. Default: ``False``.\n\nReturns:\n    array: The array with the axes reduced.")]
                #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
                fn $name(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
                    let axes = args::axes(stringify!($name), axis)?;
                    self.op(stream, |a| ops::$name(a, axes.as_deref(), keepdims))
                }
            )*
        }
    };
}

reduce_methods!(sum, mean, max, min, prod, all, any, logsumexp);

#[guarded]
#[pymethods]
impl PyArray {
    /// The array with axis `source` moved to `destination` (see `ferrox.moveaxis`).
    ///
    /// Args:
    ///     source (int): Axis to move.
    ///     destination (int): Its new position.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (source, destination, *, stream = None))]
    fn moveaxis(&self, source: isize, destination: isize, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        self.op(stream, |a| ops::moveaxis(a, source, destination))
    }

    /// The array cut into parts along `axis` (see `ferrox.split`).
    ///
    /// Args:
    ///     indices_or_sections (int or list(int)): Number of equal sections, or indices where to split.
    ///     axis (int, optional): Axis to operate along.
    ///
    /// Returns:
    ///     list(Any): The result.
    #[pyo3(signature = (indices_or_sections, axis = 0, *, stream = None))]
    fn split<'py>(
        slf: &Bound<'py, Self>,
        indices_or_sections: &Bound<'py, PyAny>,
        axis: isize,
        stream: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let a = slf.borrow().inner.clone();
        let spec = match indices_or_sections.extract::<i64>() {
            Ok(k) => ops::SplitSpec::Sections(k),
            Err(_) => ops::SplitSpec::Indices(args::ints("split", "indices", indices_or_sections)?),
        };
        let parts = crate::device::on_stream(stream, || ops::split(&a, &spec, axis))?.py()?;
        PyList::new(slf.py(), parts.into_iter().map(PyArray::wrap))
    }

    /// The array's bytes read as `dtype` (see `ferrox.view`).
    ///
    /// Args:
    ///     dtype (Dtype): Data type of the result.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (dtype, *, stream = None))]
    fn view(&self, dtype: crate::dtype::PyDtype, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        self.op(stream, |a| ops::view(a, dtype.0))
    }

    /// A diagonal, or a matrix with the array on a diagonal (see `ferrox.diag`).
    ///
    /// Args:
    ///     k (int, optional): Diagonal offset.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (k = 0, *, stream = None))]
    fn diag(&self, k: i64, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        self.op(stream, |a| ops::diag(a, k))
    }

    /// The diagonal spanned by `axis1` and `axis2` (see `ferrox.diagonal`).
    ///
    /// Args:
    ///     offset (int, optional): Offset of the diagonal (positive: above the main diagonal).
    ///     axis1 (int, optional): First axis.
    ///     axis2 (int, optional): Second axis.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (offset = 0, axis1 = 0, axis2 = 1, stream = None))]
    fn diagonal(
        &self,
        offset: i64,
        axis1: isize,
        axis2: isize,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        self.op(stream, |a| ops::diagonal(a, offset, axis1, axis2))
    }
}

#[guarded]
#[pymethods]
impl PyArray {
    /// Variance over `axis`, dividing by N - ddof (see `ferrox.var`).
    ///
    /// Args:
    ///     axis (int or list(int), optional): Axis or axes to operate over; None means all axes (or the flattened array).
    ///     keepdims (bool, optional): Keep the reduced axes as singleton dimensions. Default: ``False``.
    ///     ddof (int, optional): Delta degrees of freedom: the divisor is ``N - ddof``. Default: ``0``.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (axis = None, keepdims = false, ddof = 0, *, stream = None))]
    fn var(
        &self,
        axis: Option<&Bound<'_, PyAny>>,
        keepdims: bool,
        ddof: i64,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let axes = args::axes("var", axis)?;
        self.op(stream, |a| ops::var(a, axes.as_deref(), keepdims, ddof))
    }

    /// Standard deviation over `axis`, dividing by N - ddof (see `ferrox.std`).
    ///
    /// Args:
    ///     axis (int or list(int), optional): Axis or axes to operate over; None means all axes (or the flattened array).
    ///     keepdims (bool, optional): Keep the reduced axes as singleton dimensions. Default: ``False``.
    ///     ddof (int, optional): Delta degrees of freedom: the divisor is ``N - ddof``. Default: ``0``.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (axis = None, keepdims = false, ddof = 0, *, stream = None))]
    fn std(
        &self,
        axis: Option<&Bound<'_, PyAny>>,
        keepdims: bool,
        ddof: i64,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let axes = args::axes("std", axis)?;
        self.op(stream, |a| ops::std(a, axes.as_deref(), keepdims, ddof))
    }

    /// Rounds to `decimals` decimal places, halves to even.
    ///
    /// Args:
    ///     decimals (int, optional): Number of decimal places. Default: ``0``.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (decimals = 0, *, stream = None))]
    fn round(&self, decimals: i32, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        self.op(stream, |a| ops::round_decimals(a, decimals))
    }

    /// Elementwise 1 / a.
    ///
    /// Returns:
    ///     array: The result array.
    #[pyo3(signature = (*, stream = None))]
    fn reciprocal(&self, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        self.op(stream, ops::reciprocal)
    }

    /// The real part (float32 for complex64; the array itself otherwise).
    #[getter]
    fn real(&self) -> PyResult<PyArray> {
        Ok(PyArray::wrap(ops::real(&self.inner).py()?))
    }

    /// The imaginary part (float32 for complex64; zeros otherwise).
    #[getter]
    fn imag(&self) -> PyResult<PyArray> {
        Ok(PyArray::wrap(ops::imag(&self.inner).py()?))
    }

    fn __invert__(&self) -> PyResult<PyArray> {
        Ok(PyArray::wrap(ops::bitwise_invert(&self.inner).py()?))
    }

    fn __divmod__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
        let (a, b) = operands(slf.as_any(), other)?;
        let (q, r) = ops::divmod(&a, &b).py()?;
        PyTuple::new(slf.py(), [PyArray::wrap(q), PyArray::wrap(r)])
    }

    fn __rdivmod__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
        let (a, b) = operands(other, slf.as_any())?;
        let (q, r) = ops::divmod(&a, &b).py()?;
        PyTuple::new(slf.py(), [PyArray::wrap(q), PyArray::wrap(r)])
    }
}

macro_rules! scan_methods {
    ($($name:ident),*) => {
        #[guarded]
        #[pymethods]
        impl PyArray {
            $(
                #[doc = concat!("Cumulative ", stringify!($name), " along `axis` (see `ferrox.", stringify!($name), "`).\n\nArgs:\n    axis (int, optional): Axis to scan along; the flattened array when None.\n    reverse (bool, optional): Scan from the end of the axis. Default: ``False``.\n    inclusive (bool, optional): Include element ``i`` in output ``i``. Default: ``True``.\n\nReturns:\n    array: The cumulative results.")]
                #[pyo3(signature = (axis = None, *, reverse = false, inclusive = true, stream = None))]
                fn $name(
                    &self,
                    axis: Option<isize>,
                    reverse: bool,
                    inclusive: bool,
                    stream: Option<&Bound<'_, PyAny>>,
                ) -> PyResult<PyArray> {
                    self.op(stream, |a| ops::$name(a, axis, reverse, inclusive))
                }
            )*
        }
    };
}

scan_methods!(cumsum, cumprod, cummax, cummin, logcumsumexp);
