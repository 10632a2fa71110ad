//! The `Dtype` class and the dtype objects (`ferrox.float32`, ...).

use ferrox::{Dtype, DtypeCategory};
use ferrox_python_macros::guarded;
use pyo3::prelude::*;

/// An array element type.
#[pyclass(name = "Dtype", module = "ferrox", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDtype(pub Dtype);

#[guarded]
#[pymethods]
impl PyDtype {
    /// Size of one element in bytes.
    #[getter]
    fn size(&self) -> usize {
        self.0.size()
    }

    fn __repr__(&self) -> String {
        format!("ferrox.{}", self.0.name())
    }
}

/// A category of dtypes for `issubdtype`.
#[pyclass(name = "DtypeCategory", module = "ferrox", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDtypeCategory(pub DtypeCategory);

#[guarded]
#[pymethods]
impl PyDtypeCategory {
    fn __repr__(&self) -> String {
        format!("DtypeCategory.{}", self.0.name())
    }
}

/// Whether a dtype (or category) belongs to a category (or equals a dtype).
///
/// Args:
///     a (Dtype or DtypeCategory): Input array.
///     b (Dtype or DtypeCategory): Input array.
///
/// Returns:
///     bool: The result.
#[guarded]
#[pyfunction]
pub fn issubdtype(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<bool> {
    let cat_of = |x: &Bound<'_, PyAny>| x.extract::<PyDtypeCategory>().ok().map(|c| c.0);
    if let (Ok(x), Ok(y)) = (a.extract::<PyDtype>(), b.extract::<PyDtype>()) {
        return Ok(x == y);
    }
    if let (Ok(x), Some(c)) = (a.extract::<PyDtype>(), cat_of(b)) {
        return Ok(x.0.is_subdtype(c));
    }
    if let (Some(x), Some(y)) = (cat_of(a), cat_of(b)) {
        return Ok(x.is_subcategory(y));
    }
    Ok(false)
}

/// C++'s default formatting of a double (printf's `%g`: 6 significant
/// digits, trailing zeros dropped), as MLX prints finfo limits.
fn format_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let exp = v.abs().log10().floor() as i32;
    let sci = format!("{:.5e}", v);
    let (mantissa, e) = sci.split_once('e').expect("{:e} has an exponent");
    let e: i32 = e.parse().expect("an integer exponent");
    if (-4..6).contains(&exp) && (-4..6).contains(&e) {
        let decimals = (5 - e).max(0) as usize;
        let fixed = format!("{:.*}", decimals, v);
        let fixed =
            if fixed.contains('.') { fixed.trim_end_matches('0').trim_end_matches('.').to_string() } else { fixed };
        return fixed;
    }
    let mantissa = if mantissa.contains('.') { mantissa.trim_end_matches('0').trim_end_matches('.') } else { mantissa };
    format!("{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// Machine limits of a floating dtype (`ferrox.finfo(ferrox.float16)`);
/// complex64 is described by its float32 parts.
///
/// Args:
///     dtype (Dtype): A floating or complex dtype.
#[pyclass(name = "finfo", module = "ferrox", frozen)]
pub struct PyFinfo {
    /// The lowest finite value.
    #[pyo3(get)]
    min: f64,
    /// The largest finite value.
    #[pyo3(get)]
    max: f64,
    /// The difference between 1 and the next larger value.
    #[pyo3(get)]
    eps: f64,
    /// The smallest positive normal value.
    #[pyo3(get)]
    smallest_normal: f64,
    /// Bits of one (real) value.
    #[pyo3(get)]
    bits: usize,
    /// The (real) dtype described.
    #[pyo3(get)]
    dtype: PyDtype,
}

#[guarded]
#[pymethods]
impl PyFinfo {
    #[new]
    fn new(dtype: PyDtype) -> PyResult<PyFinfo> {
        let f = dtype.0.finfo().ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!("[finfo] dtype {} is not inexact.", dtype.0.name()))
        })?;
        Ok(PyFinfo {
            min: f.min,
            max: f.max,
            eps: f.eps,
            smallest_normal: f.smallest_normal,
            bits: f.bits,
            dtype: PyDtype(f.dtype),
        })
    }

    fn __repr__(&self) -> String {
        format!("finfo(min={}, max={}, dtype={})", format_g(self.min), format_g(self.max), self.dtype.0.name())
    }
}

/// The limits of an integer dtype (`ferrox.iinfo(ferrox.int8)`).
///
/// Args:
///     dtype (Dtype): An integer dtype.
#[pyclass(name = "iinfo", module = "ferrox", frozen)]
pub struct PyIinfo {
    /// The lowest value.
    #[pyo3(get)]
    min: i128,
    /// The largest value.
    #[pyo3(get)]
    max: i128,
    /// The dtype described.
    #[pyo3(get)]
    dtype: PyDtype,
}

#[guarded]
#[pymethods]
impl PyIinfo {
    #[new]
    fn new(dtype: PyDtype) -> PyResult<PyIinfo> {
        let i = dtype.0.iinfo().ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "[iinfo] Only integer types supported but {} was provided",
                dtype.0.name()
            ))
        })?;
        Ok(PyIinfo { min: i.min, max: i.max, dtype: PyDtype(i.dtype) })
    }

    fn __repr__(&self) -> String {
        format!("iinfo(min={}, max={}, dtype={})", self.min, self.max, self.dtype.0.name())
    }
}

/// The dtype of an array or dtype argument (`what` names it in errors).
fn dtype_of(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Dtype> {
    if let Ok(d) = obj.extract::<PyDtype>() {
        return Ok(d.0);
    }
    if let Ok(a) = obj.downcast::<crate::array::PyArray>() {
        return Ok(a.borrow().inner.dtype());
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!("[{op}] Expected an array or a Dtype.")))
}

/// Whether `from_` (an array or dtype) converts to `to` under MLX's
/// promotion rules.
///
/// Args:
///     from_ (Dtype or array): Source dtype, or an array whose dtype to use.
///     to (Dtype): Target dtype.
///
/// Returns:
///     bool: The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (from_, to))]
fn can_cast(from_: &Bound<'_, PyAny>, to: PyDtype) -> PyResult<bool> {
    Ok(dtype_of("can_cast", from_)?.can_cast(to.0))
}

/// The dtype the arrays and dtypes promote to together.
///
/// Args:
///     *arrays_and_dtypes (Dtype or array): Arrays and dtypes to promote together.
///
/// Returns:
///     Dtype: The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (*arrays_and_dtypes))]
fn result_type(arrays_and_dtypes: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<PyDtype> {
    let dtypes = arrays_and_dtypes
        .iter()
        .map(|x| {
            dtype_of("result_type", &x)
                .map_err(|_| pyo3::exceptions::PyValueError::new_err("[result_type] Inputs must be arrays or dtypes."))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let first = *dtypes
        .first()
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("[result_type] Expected at least one input."))?;
    Ok(PyDtype(dtypes.into_iter().fold(first, Dtype::promote)))
}

/// Whether `dtype` is of `kind`: a dtype (equality), a category, an
/// array-API kind name (`"integral"`, `"real floating"`, ...) or a tuple
/// of those (any matches).
///
/// Args:
///     dtype (Dtype): Data type of the result.
///     kind (Dtype or DtypeCategory or str): A dtype, a category, or a kind name such as ``'integral'``.
///
/// Returns:
///     bool: The result.
#[guarded]
#[pyfunction]
fn isdtype(dtype: PyDtype, kind: &Bound<'_, PyAny>) -> PyResult<bool> {
    fn one(d: Dtype, k: &Bound<'_, PyAny>) -> PyResult<bool> {
        if let Ok(x) = k.extract::<PyDtype>() {
            return Ok(x.0 == d);
        }
        if let Ok(c) = k.extract::<PyDtypeCategory>() {
            return Ok(d.is_subdtype(c.0));
        }
        if let Ok(name) = k.extract::<String>() {
            return d.is_kind(&name).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!("[isdtype] Unknown data type kind: '{name}'."))
            });
        }
        Err(pyo3::exceptions::PyTypeError::new_err(
            "[isdtype] kind must be a Dtype, a DtypeCategory, a string or a tuple of those.",
        ))
    }
    if let Ok(t) = kind.downcast::<pyo3::types::PyTuple>() {
        for k in t.iter() {
            if one(dtype.0, &k)? {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    one(dtype.0, kind)
}

/// Adds the dtype objects and categories to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDtype>()?;
    m.add_class::<PyDtypeCategory>()?;
    m.add_class::<PyFinfo>()?;
    m.add_class::<PyIinfo>()?;
    for d in Dtype::ALL {
        let name = if d == Dtype::Bool { "bool_" } else { d.name() };
        m.add(name, PyDtype(d))?;
    }
    for c in DtypeCategory::ALL {
        m.add(c.name(), PyDtypeCategory(c))?;
    }
    m.add_function(wrap_pyfunction!(issubdtype, m)?)?;
    m.add_function(wrap_pyfunction!(can_cast, m)?)?;
    m.add_function(wrap_pyfunction!(result_type, m)?)?;
    m.add_function(wrap_pyfunction!(isdtype, m)?)?;
    Ok(())
}
