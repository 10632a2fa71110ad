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
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// The method of one unary row, for rows that MLX's `array` has.
macro_rules! unary_method {
    (both, $name:ident, $doc:literal) => {
        #[guarded]
        #[pymethods]
        impl PyArray {
            #[doc = $doc]
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

macro_rules! binary_dunders {
    ($($name:ident, $rname:ident, $iname:ident => $op:path;)*) => {
        #[guarded]
        #[pymethods]
        impl PyArray {
            $(
                fn $name(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyArray> {
                    let (a, b) = operands(slf.as_any(), other)?;
                    Ok(PyArray::wrap($op(&a, &b).py()?))
                }
                fn $rname(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyArray> {
                    let (a, b) = operands(other, slf.as_any())?;
                    Ok(PyArray::wrap($op(&a, &b).py()?))
                }
                fn $iname(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
                    let (a, b) = operands(slf.as_any(), other)?;
                    let out = $op(&a, &b).py()?;
                    slf.borrow_mut().inner = out;
                    Ok(())
                }
            )*
        }
    };
}

binary_dunders! {
    __add__, __radd__, __iadd__ => ops::add;
    __sub__, __rsub__, __isub__ => ops::subtract;
    __mul__, __rmul__, __imul__ => ops::multiply;
    __truediv__, __rtruediv__, __itruediv__ => ops::divide;
    __floordiv__, __rfloordiv__, __ifloordiv__ => ops::floor_divide;
    __mod__, __rmod__, __imod__ => ops::remainder;
    __matmul__, __rmatmul__, __imatmul__ => ops::matmul;
    __and__, __rand__, __iand__ => ops::bitwise_and;
    __or__, __ror__, __ior__ => ops::bitwise_or;
    __xor__, __rxor__, __ixor__ => ops::bitwise_xor;
    __lshift__, __rlshift__, __ilshift__ => ops::left_shift;
    __rshift__, __rrshift__, __irshift__ => ops::right_shift;
}

macro_rules! compare_dunders {
    ($($name:ident => $op:path;)*) => {
        #[guarded]
        #[pymethods]
        impl PyArray {
            $(
                fn $name(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyArray> {
                    let (a, b) = operands(slf.as_any(), other)?;
                    Ok(PyArray::wrap($op(&a, &b).py()?))
                }
            )*
        }
    };
}

compare_dunders! {
    __lt__ => ops::less;
    __le__ => ops::less_equal;
    __gt__ => ops::greater;
    __ge__ => ops::greater_equal;
    __eq__ => ops::equal;
    __ne__ => ops::not_equal;
}

macro_rules! reduce_methods {
    ($($name:ident),*) => {
        #[guarded]
        #[pymethods]
        impl PyArray {
            $(
                #[doc = concat!("Reduction ", stringify!($name), " over `axis` (see `ferrox.", stringify!($name), "`).")]
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
    /// Variance over `axis`, dividing by N - ddof (see `ferrox.var`).
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
    #[pyo3(signature = (decimals = 0, *, stream = None))]
    fn round(&self, decimals: i32, stream: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        self.op(stream, |a| ops::round_decimals(a, decimals))
    }

    /// Elementwise 1 / a.
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
