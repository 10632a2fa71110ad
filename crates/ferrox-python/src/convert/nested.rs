//! Nested Python lists and tuples to arrays, walked without recursion.
//!
//! A self-referential list, ragged nesting or nesting deeper than
//! [`MAX_NESTING`] is a `ValueError`, never a stack overflow.

use super::{py_scalar, scalar_dtype, to_array_at};
use crate::errors::IntoPyResult;
use ferrox::{ops, Array, Dtype, Scalar};
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::collections::HashSet;

/// The deepest nesting of sequences `array(...)` accepts (far beyond any
/// real data: NumPy stops at 64 dimensions).
pub const MAX_NESTING: usize = 256;

fn ragged() -> PyErr {
    PyValueError::new_err("Initialization encountered non-uniform length.")
}

fn too_deep() -> PyErr {
    PyValueError::new_err(format!("[array] Input is nested more than {MAX_NESTING} levels deep."))
}

fn is_sequence(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>()
}

/// What a walk over nested sequences found.
enum Walk {
    /// Every leaf is a Python scalar: the shape and the leaves in row-major order.
    Scalars { shape: Vec<usize>, leaves: Vec<Scalar> },
    /// Some leaf is not a Python scalar (an array, a NumPy array, ...).
    Mixed,
}

/// One sequence being walked: the object, its length and the next item.
struct Frame<'py> {
    seq: Bound<'py, PyAny>,
    len: usize,
    next: usize,
}

/// The state of a walk: the shape found so far, the leaves, the sequences
/// on the current path (to detect cycles) and the stack of open sequences.
struct Walker<'py> {
    depth0: usize,
    shape: Vec<usize>,
    leaves: Vec<Scalar>,
    on_path: HashSet<usize>,
    stack: Vec<Frame<'py>>,
}

impl<'py> Walker<'py> {
    /// Enters a sequence found at position `depth` of the shape.
    fn enter(&mut self, seq: Bound<'py, PyAny>, depth: usize) -> PyResult<()> {
        if self.depth0 + depth >= MAX_NESTING {
            return Err(too_deep());
        }
        if !self.on_path.insert(seq.as_ptr() as usize) {
            return Err(PyValueError::new_err("[array] Input contains a reference to itself."));
        }
        let len = seq.len()?;
        if self.shape.len() == depth {
            if !self.leaves.is_empty() {
                return Err(ragged());
            }
            self.shape.push(len);
        } else if self.shape.len() < depth || self.shape[depth] != len {
            return Err(ragged());
        }
        self.stack.push(Frame { seq, len, next: 0 });
        Ok(())
    }
}

/// Walks `obj` (found `depth0` sequences down in the caller's input) depth
/// first with an explicit stack, checking that the nesting is uniform and
/// acyclic.
fn walk<'py>(obj: &Bound<'py, PyAny>, depth0: usize) -> PyResult<Walk> {
    let mut w = Walker { depth0, shape: Vec::new(), leaves: Vec::new(), on_path: HashSet::new(), stack: Vec::new() };
    w.enter(obj.clone(), 0)?;
    while let Some(top) = w.stack.last_mut() {
        if top.next == top.len {
            let done = w.stack.pop().expect("the stack is not empty");
            w.on_path.remove(&(done.seq.as_ptr() as usize));
            continue;
        }
        let item = top.seq.get_item(top.next)?;
        top.next += 1;
        let depth = w.stack.len();
        if is_sequence(&item) {
            w.enter(item, depth)?;
        } else if let Some(s) = py_scalar(&item)? {
            // A scalar must sit exactly at the innermost level.
            if depth != w.shape.len() {
                return Err(ragged());
            }
            w.leaves.try_reserve(1).map_err(|_| PyMemoryError::new_err("[array] Out of memory."))?;
            w.leaves.push(s);
        } else {
            return Ok(Walk::Mixed);
        }
    }
    Ok(Walk::Scalars { shape: w.shape, leaves: w.leaves })
}

/// Converts a list or tuple found `depth` levels down in the caller's input.
pub(super) fn from_sequence(obj: &Bound<'_, PyAny>, dtype: Option<Dtype>, depth: usize) -> PyResult<Array> {
    match walk(obj, depth)? {
        Walk::Scalars { shape, leaves } => {
            let inferred = leaves.iter().fold(None, |acc: Option<Dtype>, &s| {
                let d = scalar_dtype(s);
                Some(acc.map_or(d, |a| Dtype::promote(a, d)))
            });
            let dt = dtype.or(inferred).unwrap_or(Dtype::F32);
            Array::from_scalars(&leaves, &shape, dt).py()
        }
        Walk::Mixed => {
            // Elements that are arrays (or buffers): convert each and stack them.
            let parts = obj
                .try_iter()?
                .map(|item| {
                    let item = item?;
                    if !is_sequence(&item) && py_scalar(&item)?.is_none() && !super::is_array_like(&item) {
                        return Err(PyValueError::new_err(format!(
                            "Invalid type {} received in array initialization.",
                            item.get_type().name()?
                        )));
                    }
                    to_array_at(&item, None, depth + 1)
                })
                .collect::<PyResult<Vec<_>>>()?;
            if parts.windows(2).any(|w| w[0].shape() != w[1].shape()) {
                return Err(ragged());
            }
            ops::stack(&parts, 0).py()
        }
    }
}
