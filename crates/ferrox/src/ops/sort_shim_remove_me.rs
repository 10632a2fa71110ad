//! TEMPORARY stand-ins with the exact signatures of the gather/scatter ops
//! being added on main, so that the sort family's derivatives compile on the
//! `sort` branch. Delete this file (and its two lines in `ops/mod.rs`) when
//! merging: the real `take_along_axis` and `put_along_axis_add` replace them.

use crate::array::Array;
use crate::error::{Error, Result};

/// Stand-in for the real `take_along_axis` (on main): always an error here.
pub fn take_along_axis(_a: &Array, _indices: &Array, _axis: Option<isize>) -> Result<Array> {
    Err(Error::invalid("take_along_axis", "not available on this branch (stand-in until the merge)"))
}

/// Stand-in for the real `put_along_axis_add` (on main): always an error here.
pub fn put_along_axis_add(_a: &Array, _indices: &Array, _values: &Array, _axis: isize) -> Result<Array> {
    Err(Error::invalid("put_along_axis_add", "not available on this branch (stand-in until the merge)"))
}
