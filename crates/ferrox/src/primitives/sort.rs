//! Sorting along one axis (sort, argsort, partition, argpartition) and
//! searchsorted, with their derivatives and batching rules (MLX's, in
//! `primitives.cpp`).
//!
//! A partition evaluates as a full sort: a sorted line satisfies
//! partition's contract (the kth element in its sorted place, none greater
//! before it, none smaller after it), and partition and argpartition then
//! agree with each other as MLX's do.
//!
//! Sort and partition permute each line, so their jvp gathers the tangent
//! through argsort (argpartition) and their vjp scatters the cotangent back
//! through the same positions; the positions are locally constant in the
//! input, so they are cut from the graph (`stop_gradient`) and higher
//! derivatives work. The index outputs (argsort, argpartition,
//! searchsorted) have zero derivatives.

use super::{fresh, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::Backend;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::ops;

/// The jvp of a permutation along `axis` given by `positions`: the tangent
/// gathered through them.
fn gathered(t: &Array, positions: &Array, axis: usize) -> Result<Array> {
    ops::take_along_axis(t, &ops::stop_gradient(positions)?, Some(axis as isize))
}

/// The vjp of a permutation along `axis` given by `positions`: the
/// cotangent added back at the positions it came from.
fn scattered(x: &Array, c: &Array, positions: &Array, axis: usize) -> Result<Array> {
    ops::put_along_axis_add(&ops::zeros_like(x)?, &ops::stop_gradient(positions)?, c, axis as isize)
}

/// The outputs of a sort-like primitive along `axis` (with `kth` below the
/// axis extent for partitions): the input's shape, and `dtype` (or the
/// input's dtype).
fn line_specs(
    name: &'static str,
    inputs: &[Array],
    axis: usize,
    kth: Option<usize>,
    dtype: Option<Dtype>,
) -> Result<Vec<OutputSpec>> {
    super::arity(name, inputs, 1)?;
    let x = &inputs[0];
    if axis >= x.ndim() || kth.is_some_and(|k| k >= x.shape()[axis].max(1)) {
        return Err(super::mismatch(name, format!("axis {axis} (kth {kth:?}) of shape {:?}.", x.shape())));
    }
    super::one_output(x.shape().to_vec(), dtype.unwrap_or(x.dtype()))
}

/// The values of each line along `axis`, sorted ascending (stable, NaN
/// last; see [`Backend::sort`]). Output: the input's shape and dtype.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sort {
    /// The sorted axis.
    pub axis: usize,
}

impl Primitive for Sort {
    fn name(&self) -> &'static str {
        "sort"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        line_specs(self.name(), inputs, self.axis, None, None)
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        Ok(fresh(backend.sort(&x.storage, &x.layout, self.axis, false)?, &outputs[0].shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        let positions = ops::stop_gradient(&ops::argsort(&inputs[0], Some(self.axis as isize))?)?;
        Ok(vec![scattered(&inputs[0], &cotangents[0], &positions, self.axis)?])
    }
    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let positions = ops::stop_gradient(&ops::argsort(&inputs[0], Some(self.axis as isize))?)?;
        Ok(vec![gathered(&tangents[0], &positions, self.axis)?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        super::batched(ops::sort(&super::front(inputs, axes)?, Some(self.axis as isize + 1))?)
    }
}

/// The uint32 positions that sort each line along `axis` (stable, NaN
/// last). Output: the input's shape.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArgSort {
    /// The sorted axis.
    pub axis: usize,
}

impl Primitive for ArgSort {
    fn name(&self) -> &'static str {
        "argsort"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        line_specs(self.name(), inputs, self.axis, None, Some(Dtype::U32))
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        Ok(fresh(backend.sort(&x.storage, &x.layout, self.axis, true)?, &outputs[0].shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], _: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![ops::zeros_like(&inputs[0])?])
    }
    fn jvp(&self, _: &[Array], outputs: &[Array], _: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::zeros_like(&outputs[0])?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        super::batched(ops::argsort(&super::front(inputs, axes)?, Some(self.axis as isize + 1))?)
    }
}

/// Each line along `axis` partitioned around its `kth` element (evaluated
/// as a full sort, which satisfies the contract). Output: the input's
/// shape and dtype.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Partition {
    /// The position (in `0..n`) that holds its sorted element.
    pub kth: usize,
    /// The partitioned axis.
    pub axis: usize,
}

impl Primitive for Partition {
    fn name(&self) -> &'static str {
        "partition"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        line_specs(self.name(), inputs, self.axis, Some(self.kth), None)
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        Ok(fresh(backend.sort(&x.storage, &x.layout, self.axis, false)?, &outputs[0].shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        let positions =
            ops::stop_gradient(&ops::argpartition(&inputs[0], self.kth as isize, Some(self.axis as isize))?)?;
        Ok(vec![scattered(&inputs[0], &cotangents[0], &positions, self.axis)?])
    }
    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let positions =
            ops::stop_gradient(&ops::argpartition(&inputs[0], self.kth as isize, Some(self.axis as isize))?)?;
        Ok(vec![gathered(&tangents[0], &positions, self.axis)?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        super::batched(ops::partition(&x, self.kth as isize, Some(self.axis as isize + 1))?)
    }
}

/// The uint32 positions that partition each line along `axis` around its
/// `kth` element (evaluated as an argsort). Output: the input's shape.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArgPartition {
    /// The position (in `0..n`) that holds its sorted element.
    pub kth: usize,
    /// The partitioned axis.
    pub axis: usize,
}

impl Primitive for ArgPartition {
    fn name(&self) -> &'static str {
        "argpartition"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        line_specs(self.name(), inputs, self.axis, Some(self.kth), Some(Dtype::U32))
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        Ok(fresh(backend.sort(&x.storage, &x.layout, self.axis, true)?, &outputs[0].shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], _: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![ops::zeros_like(&inputs[0])?])
    }
    fn jvp(&self, _: &[Array], outputs: &[Array], _: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::zeros_like(&outputs[0])?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        super::batched(ops::argpartition(&x, self.kth as isize, Some(self.axis as isize + 1))?)
    }
}

/// Insertion points of `values` (input 1, any shape) in the 1-D ascending
/// `sorted` (input 0) of the same dtype: on the left (the count of elements
/// before each value) or the right (the count not after it). Output:
/// uint32 with the shape of `values`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SearchSorted {
    /// Whether to return the right insertion point.
    pub right: bool,
}

impl Primitive for SearchSorted {
    fn name(&self) -> &'static str {
        "searchsorted"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 2)?;
        super::same_dtype(self.name(), inputs, inputs[0].dtype())?;
        if inputs[0].ndim() != 1 || inputs[0].size() as u64 > u64::from(u32::MAX) {
            return Err(super::mismatch(
                self.name(),
                "The sorted sequence must be 1-D with at most 2^32 - 1 elements.",
            ));
        }
        super::one_output(inputs[1].shape().to_vec(), Dtype::U32)
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let (s, v) = (&inputs[0], &inputs[1]);
        let out = backend.search_sorted(&s.storage, &s.layout, &v.storage, &v.layout, self.right)?;
        Ok(fresh(out, &outputs[0].shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], _: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        argnums.iter().map(|&i| ops::zeros_like(&inputs[i])).collect()
    }
    fn jvp(&self, _: &[Array], outputs: &[Array], _: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::zeros_like(&outputs[0])?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        // As MLX: one sequence, many batches of values.
        let Some(b) = axes[1].filter(|_| axes[0].is_none()) else {
            return Err(Error::invalid(
                "searchsorted",
                "Cannot vmap over the sorted sequence, only over the values being searched for.",
            ));
        };
        let values = crate::transforms::vmap::batch_to_front(&inputs[1], b)?;
        let side = if self.right { "right" } else { "left" };
        super::batched(ops::searchsorted(&inputs[0], &values, side)?)
    }
}
