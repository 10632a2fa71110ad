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

/// Adds the dtype objects and categories to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDtype>()?;
    m.add_class::<PyDtypeCategory>()?;
    for d in Dtype::ALL {
        let name = if d == Dtype::Bool { "bool_" } else { d.name() };
        m.add(name, PyDtype(d))?;
    }
    for c in DtypeCategory::ALL {
        m.add(c.name(), PyDtypeCategory(c))?;
    }
    m.add_function(wrap_pyfunction!(issubdtype, m)?)?;
    Ok(())
}
