//! The `Dtype` class and the dtype objects (`ferrox.float32`, ...).

use ferrox::{Dtype, DtypeCategory};
use pyo3::prelude::*;

/// An array element type.
#[pyclass(name = "Dtype", module = "ferrox", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDtype(pub Dtype);

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
pub struct PyDtypeCategory(pub DtypeCategoryKey);

/// Hashable mirror of [`DtypeCategory`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum DtypeCategoryKey {
    ComplexFloating,
    Floating,
    Inexact,
    SignedInteger,
    UnsignedInteger,
    Integer,
    Number,
    Generic,
}

impl DtypeCategoryKey {
    fn category(self) -> DtypeCategory {
        match self {
            Self::ComplexFloating => DtypeCategory::ComplexFloating,
            Self::Floating => DtypeCategory::Floating,
            Self::Inexact => DtypeCategory::Inexact,
            Self::SignedInteger => DtypeCategory::SignedInteger,
            Self::UnsignedInteger => DtypeCategory::UnsignedInteger,
            Self::Integer => DtypeCategory::Integer,
            Self::Number => DtypeCategory::Number,
            Self::Generic => DtypeCategory::Generic,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::ComplexFloating => "complexfloating",
            Self::Floating => "floating",
            Self::Inexact => "inexact",
            Self::SignedInteger => "signedinteger",
            Self::UnsignedInteger => "unsignedinteger",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Generic => "generic",
        }
    }
}

#[pymethods]
impl PyDtypeCategory {
    fn __repr__(&self) -> String {
        format!("DtypeCategory.{}", self.0.name())
    }
}

/// Whether a dtype (or category) belongs to a category (or equals a dtype).
#[pyfunction]
pub fn issubdtype(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<bool> {
    let cat_of = |x: &Bound<'_, PyAny>| x.extract::<PyDtypeCategory>().ok().map(|c| c.0);
    if let (Ok(x), Ok(y)) = (a.extract::<PyDtype>(), b.extract::<PyDtype>()) {
        return Ok(x == y);
    }
    if let (Ok(x), Some(c)) = (a.extract::<PyDtype>(), cat_of(b)) {
        return Ok(x.0.is_subdtype(c.category()));
    }
    if let (Some(x), Some(y)) = (cat_of(a), cat_of(b)) {
        // A category is a sub-category of itself and of its ancestors.
        let contains = |outer: DtypeCategoryKey, inner: DtypeCategoryKey| {
            use DtypeCategoryKey::*;
            outer == inner
                || outer == Generic
                || (outer == Number && inner != Generic)
                || (outer == Inexact && matches!(inner, Floating | ComplexFloating))
                || (outer == Integer && matches!(inner, SignedInteger | UnsignedInteger))
        };
        return Ok(contains(y, x));
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
    use DtypeCategoryKey::*;
    for c in [ComplexFloating, Floating, Inexact, SignedInteger, UnsignedInteger, Integer, Number, Generic] {
        m.add(c.name(), PyDtypeCategory(c))?;
    }
    m.add_function(wrap_pyfunction!(issubdtype, m)?)?;
    Ok(())
}
