//! Gather and scatter through integer index arrays, with their derivatives
//! and batching rules. Derivatives follow MLX's (`Gather::vjp`,
//! `Scatter::vjp` in `primitives.cpp`): a gather's transpose is a
//! scatter-add into zeros; an assignment passes the cotangent to the
//! updates and zeros the overwritten elements of the base; a max/min
//! scatter routes the cotangent to whichever side holds the result. Index
//! arrays get zero cotangents.

use super::{fresh, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::{Backend, ScatterOp};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::ops;

/// MLX's `Gather`: inputs `[x, index arrays...]` (all of one shape `I`);
/// output `I ++ slice_sizes` (see [`ops::gather`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Gather {
    /// The axis each index array indexes.
    pub axes: Vec<usize>,
    /// Extent of the slice read at each index position, per axis of `x`.
    pub slice_sizes: Vec<usize>,
    /// Whether the slices span every axis not indexed whole (`take`'s):
    /// their extents then follow `x`'s shape, so a shapeless compiled
    /// function re-derives them on each call.
    #[serde(default)]
    pub whole: bool,
}

impl Gather {
    /// The slice extents for an `x` of `shape`.
    pub fn sizes(&self, shape: &[usize]) -> Vec<usize> {
        if !self.whole || shape.len() != self.slice_sizes.len() {
            return self.slice_sizes.clone();
        }
        (0..shape.len()).map(|d| if self.axes.contains(&d) { self.slice_sizes[d] } else { shape[d] }).collect()
    }
}

/// The storage and layout pairs of evaluated index inputs.
fn index_pairs(inputs: &[ArrayData]) -> Vec<(&crate::backend::Storage, &crate::shape::Layout)> {
    inputs.iter().map(|d| (&*d.storage, &d.layout)).collect()
}

/// The vjp with respect to an index array: MLX's error (integer indices
/// have no gradient; a traced index must be wrapped in `stop_gradient`).
fn index_cotangent(op: &'static str) -> Result<Array> {
    Err(Error::invalid(
        op,
        "Cannot calculate VJP with respect to indices. Use stop_gradient on indices to stop gradients from being computed.",
    ))
}

/// Moves a batch axis to the front, or broadcasts an unbatched input along
/// a new front axis of extent `b`.
fn batch_front(x: &Array, axis: Option<usize>, b: usize) -> Result<Array> {
    match axis {
        Some(ax) => crate::transforms::vmap::batch_to_front(x, ax),
        None => {
            let mut shape = vec![b];
            shape.extend_from_slice(x.shape());
            ops::broadcast_to(&ops::expand_dims(x, &[0])?, &shape)
        }
    }
}

/// The batch size of a batched primitive call.
fn batch_size(inputs: &[Array], axes: &[Option<usize>]) -> usize {
    inputs.iter().zip(axes).find_map(|(x, a)| a.map(|a| x.shape()[a])).expect("a batching rule runs on batched inputs")
}

/// `arange(b)` shaped `[b, 1, ...]` and broadcast to `shape` (whose first
/// extent is `b`): the index array selecting each batch member's own slice.
fn batch_index(shape: &[usize]) -> Result<Array> {
    let mut line = vec![1usize; shape.len()];
    line[0] = shape[0];
    let r = ops::reshape(
        &ops::arange(0.0, shape[0] as f64, 1.0, Dtype::I32)?,
        &line.iter().map(|&d| d as isize).collect::<Vec<_>>(),
    )?;
    ops::broadcast_to(&r, shape)
}

/// Checks index inputs against `x` and their axes (one integer array per
/// distinct axis, all of one shape) and returns their shape.
fn index_specs(name: &'static str, x: &Array, indices: &[Array], axes: &[usize]) -> Result<Vec<usize>> {
    let mut seen = vec![false; x.ndim()];
    let axes_ok = axes.iter().all(|&a| a < x.ndim() && !std::mem::replace(&mut seen[a], true));
    if indices.len() != axes.len() || !axes_ok {
        return Err(super::mismatch(name, format!("{} index arrays for axes {axes:?}.", indices.len())));
    }
    let shape = indices.first().map_or(vec![], |i| i.shape().to_vec());
    if indices.iter().any(|i| !i.dtype().is_integer() || i.shape() != shape.as_slice()) {
        return Err(super::mismatch(name, "index arrays must be integers of one shape."));
    }
    Ok(shape)
}

fn isize_axes(axes: &[usize]) -> Vec<isize> {
    axes.iter().map(|&d| d as isize).collect()
}

impl Primitive for Gather {
    fn name(&self) -> &'static str {
        "Gather"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        let x = inputs.first().ok_or_else(|| super::mismatch("gather", "takes an array to index."))?;
        let mut shape = index_specs("gather", x, &inputs[1..], &self.axes)?;
        let sizes = self.sizes(x.shape());
        if sizes.len() != x.ndim() || sizes.iter().zip(x.shape()).any(|(s, d)| s > d) {
            return Err(super::mismatch("gather", format!("slices {sizes:?} of shape {:?}.", x.shape())));
        }
        shape.extend_from_slice(&sizes);
        super::one_output(shape, x.dtype())
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        let sizes = self.sizes(&x.layout.shape);
        let out = backend.gather(&x.storage, &x.layout, &index_pairs(&inputs[1..]), &self.axes, &sizes)?;
        Ok(fresh(out, &outputs[0].shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        argnums
            .iter()
            .map(|&i| {
                if i == 0 {
                    ops::gather_transpose(&inputs[0], &inputs[1..], &cotangents[0], &self.axes)
                } else {
                    index_cotangent("gather")
                }
            })
            .collect()
    }
    fn jvp(&self, inputs: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let p = Gather { slice_sizes: self.sizes(inputs[0].shape()), ..self.clone() };
        let mut args = vec![tangents[0].clone()];
        args.extend_from_slice(&inputs[1..]);
        let spec = p.output_specs(&args)?.remove(0);
        Ok(vec![Array::from_primitive(spec.shape, spec.dtype, p, args)?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let b = batch_size(inputs, axes);
        let mut x_shape = inputs[0].shape().to_vec();
        if let Some(ax) = axes[0] {
            x_shape.remove(ax);
        }
        let slice_sizes = self.sizes(&x_shape);
        let indices_batched = axes[1..].iter().any(Option::is_some);
        if !indices_batched {
            // Only x is batched: gather the batch axis whole, then bring it to the front.
            let x = batch_front(&inputs[0], axes[0], b)?;
            let shifted: Vec<isize> = self.axes.iter().map(|&d| d as isize + 1).collect();
            let sizes: Vec<usize> = std::iter::once(b).chain(slice_sizes.iter().copied()).collect();
            let out = ops::gather(&x, &inputs[1..], &shifted, &sizes)?;
            let at = out.ndim() - sizes.len();
            return Ok((vec![out], vec![Some(at)]));
        }
        let indices =
            inputs[1..].iter().zip(&axes[1..]).map(|(idx, &a)| batch_front(idx, a, b)).collect::<Result<Vec<_>>>()?;
        if axes[0].is_none() {
            let out = ops::gather(&inputs[0], &indices, &isize_axes(&self.axes), &slice_sizes)?;
            return super::batched(out);
        }
        // Both batched: one more index array picks each member's own slice of x.
        let x = batch_front(&inputs[0], axes[0], b)?;
        let shape = indices[0].shape().to_vec();
        let mut all = vec![batch_index(&shape)?];
        all.extend(indices);
        let mut ax = vec![0isize];
        ax.extend(self.axes.iter().map(|&d| d as isize + 1));
        let sizes: Vec<usize> = std::iter::once(1).chain(slice_sizes.iter().copied()).collect();
        let out = ops::gather(&x, &all, &ax, &sizes)?;
        let mut squeezed = shape.clone();
        squeezed.extend_from_slice(&slice_sizes);
        super::batched(ops::reshape(&out, &isize_axes(&squeezed))?)
    }
}

/// MLX's `Scatter`: inputs `[base, index arrays..., updates]`; output the
/// base's shape (see [`ops::scatter_with`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Scatter {
    /// How updates combine with the elements they land on.
    pub op: ScatterOp,
    /// The axis each index array indexes.
    pub axes: Vec<usize>,
}

impl Scatter {
    /// The slice extents of the updates (for gathering cotangents back).
    fn slice_sizes(&self, updates: &Array, base: &Array) -> Vec<usize> {
        updates.shape()[updates.ndim() - base.ndim()..].to_vec()
    }
}

/// For a multiplying scatter of `updates` into `base` at `indices`: the
/// product of the updates landing on each position of the base (1 where
/// none land), and for each update the product of the *other* updates
/// landing where it does (shaped like `updates`). Zero updates are counted,
/// not divided by, so both are exact with zeros.
fn update_products(
    base: &Array,
    indices: &[Array],
    updates: &Array,
    axes: &[isize],
    sizes: &[usize],
) -> Result<(Array, Array)> {
    let one = super::constant(1.0, updates);
    let is_zero = ops::equal(updates, &super::constant(0.0, updates))?;
    let nonzero = ops::where_(&is_zero, &one, updates)?;
    let ones = ops::ones_like(base)?;
    let product = ops::scatter_prod(&ones, indices, updates, axes)?;
    let nonzero_product = ops::scatter_prod(&ones, indices, &nonzero, axes)?;
    let zeros = ops::scatter_add(&ops::zeros_like(base)?, indices, &ops::astype(&is_zero, base.dtype())?, axes)?;
    let at_update = |x: &Array| -> Result<Array> {
        ops::reshape(&ops::gather(x, indices, axes, sizes)?, &isize_axes(updates.shape()))
    };
    let (landed, zeros_here) = (at_update(&nonzero_product)?, at_update(&zeros)?);
    // A nonzero update: the others' product is the nonzero product over it
    // when no zero lands there. A zero update: the nonzero product when it
    // is the only zero there. Otherwise another zero makes it 0.
    let zero = super::constant(0.0, updates);
    let others_if_nonzero = ops::where_(&ops::equal(&zeros_here, &zero)?, &ops::divide(&landed, &nonzero)?, &zero)?;
    let others_if_zero = ops::where_(&ops::equal(&zeros_here, &one)?, &landed, &zero)?;
    let others = ops::where_(&is_zero, &others_if_zero, &others_if_nonzero)?;
    Ok((product, ops::astype(&others, updates.dtype())?))
}

impl Primitive for Scatter {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        let name = self.name();
        if inputs.len() < 2 {
            return Err(super::mismatch(name, "takes an array and updates."));
        }
        let (base, updates) = (&inputs[0], &inputs[inputs.len() - 1]);
        let index_shape = index_specs(name, base, &inputs[1..inputs.len() - 1], &self.axes)?;
        super::same_dtype(name, std::slice::from_ref(updates), base.dtype())?;
        let fits = updates.ndim() == index_shape.len() + base.ndim()
            && updates.shape().starts_with(&index_shape)
            && updates.shape()[index_shape.len()..].iter().zip(base.shape()).all(|(u, b)| u <= b);
        if !fits {
            return Err(super::mismatch(
                name,
                format!("updates of shape {:?} for {:?}.", updates.shape(), base.shape()),
            ));
        }
        super::one_output(base.shape().to_vec(), base.dtype())
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let (base, updates) = (&inputs[0], &inputs[inputs.len() - 1]);
        let indices = index_pairs(&inputs[1..inputs.len() - 1]);
        let out = backend.scatter(
            self.op,
            &base.storage,
            &base.layout,
            &indices,
            &self.axes,
            &updates.storage,
            &updates.layout,
        )?;
        Ok(fresh(out, &outputs[0].shape))
    }
    fn vjp(&self, inputs: &[Array], outputs: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let (base, updates, c, out) = (&inputs[0], &inputs[inputs.len() - 1], &cotangents[0], &outputs[0]);
        let indices = &inputs[1..inputs.len() - 1];
        let axes = isize_axes(&self.axes);
        let sizes = self.slice_sizes(updates, base);
        if self.op == ScatterOp::Prod {
            // out = base * P (P: the updates' product per position), so the
            // base's cotangent is c * P, and an update's is c * base times
            // the other updates landing with it, gathered at its index.
            let (product, others) = update_products(base, indices, updates, &axes, &sizes)?;
            return argnums
                .iter()
                .map(|&i| {
                    if i == 0 {
                        ops::multiply(c, &product)
                    } else if i == inputs.len() - 1 {
                        let at = ops::gather(&ops::multiply(c, base)?, indices, &axes, &sizes)?;
                        ops::multiply(&ops::reshape(&at, &isize_axes(updates.shape()))?, &others)
                    } else {
                        index_cotangent("scatter")
                    }
                })
                .collect();
        }
        let zero = super::constant(0.0, c);
        argnums
            .iter()
            .map(|&i| {
                if i == 0 {
                    match self.op {
                        ScatterOp::Assign => ops::scatter(c, indices, &ops::zeros_like(updates)?, &axes),
                        ScatterOp::Sum => Ok(c.clone()),
                        _ => ops::where_(&ops::equal(out, base)?, c, &zero),
                    }
                } else if i == inputs.len() - 1 {
                    let gathered =
                        ops::reshape(&ops::gather(c, indices, &axes, &sizes)?, &isize_axes(updates.shape()))?;
                    match self.op {
                        ScatterOp::Assign | ScatterOp::Sum => Ok(gathered),
                        _ => {
                            let result =
                                ops::reshape(&ops::gather(out, indices, &axes, &sizes)?, &isize_axes(updates.shape()))?;
                            ops::where_(&ops::equal(&result, updates)?, &gathered, &zero)
                        }
                    }
                } else {
                    index_cotangent("scatter")
                }
            })
            .collect()
    }
    fn jvp(&self, inputs: &[Array], outputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let (base, updates, out) = (&inputs[0], &inputs[inputs.len() - 1], &outputs[0]);
        let indices = &inputs[1..inputs.len() - 1];
        let (tb, tu) = (&tangents[0], &tangents[tangents.len() - 1]);
        let axes = isize_axes(&self.axes);
        let dout = match self.op {
            ScatterOp::Assign => ops::scatter(tb, indices, tu, &axes)?,
            ScatterOp::Sum => ops::scatter_add(tb, indices, tu, &axes)?,
            ScatterOp::Max | ScatterOp::Min => {
                // The result's tangent is that of whichever side holds it.
                let zero = super::constant(0.0, tb);
                let sizes = self.slice_sizes(updates, base);
                let result = ops::reshape(&ops::gather(out, indices, &axes, &sizes)?, &isize_axes(updates.shape()))?;
                let from_updates = ops::where_(&ops::equal(&result, updates)?, tu, &zero)?;
                let from_base = ops::where_(&ops::equal(out, base)?, tb, &zero)?;
                let won = ops::where_(&ops::equal(&result, updates)?, &super::constant(1.0, tb), &zero)?;
                let landed = ops::scatter_add(&ops::zeros_like(tb)?, indices, &from_updates, &axes)?;
                let taken = ops::scatter_max(&ops::zeros_like(tb)?, indices, &won, &axes)?;
                ops::where_(&ops::not_equal(&taken, &zero)?, &landed, &from_base)?
            }
            ScatterOp::Prod => {
                // d(base * P) = tb * P + base * (sum of tu times the others' product).
                let sizes = self.slice_sizes(updates, base);
                let (product, others) = update_products(base, indices, updates, &axes, &sizes)?;
                let spread = ops::scatter_add(&ops::zeros_like(tb)?, indices, &ops::multiply(tu, &others)?, &axes)?;
                ops::add(&ops::multiply(tb, &product)?, &ops::multiply(base, &spread)?)?
            }
        };
        Ok(vec![dout])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        // Batch everything along a new front axis and add an index array
        // that sends each member's updates to its own slice of the base.
        let b = batch_size(inputs, axes);
        let last = inputs.len() - 1;
        let base = batch_front(&inputs[0], axes[0], b)?;
        let indices = inputs[1..last]
            .iter()
            .zip(&axes[1..last])
            .map(|(idx, &a)| batch_front(idx, a, b))
            .collect::<Result<Vec<_>>>()?;
        let updates = batch_front(&inputs[last], axes[last], b)?;
        let rank = inputs[0].ndim() - axes[0].is_some() as usize;
        let index_shape: Vec<usize> = updates.shape()[..updates.ndim() - rank].to_vec();
        let mut all = vec![batch_index(&index_shape)?];
        for idx in indices {
            all.push(ops::broadcast_to(&idx, &index_shape)?);
        }
        let mut ax = vec![0isize];
        ax.extend(self.axes.iter().map(|&d| d as isize + 1));
        let mut shape = index_shape.clone();
        shape.push(1);
        shape.extend_from_slice(&updates.shape()[updates.ndim() - rank..]);
        let updates = ops::reshape(&updates, &isize_axes(&shape))?;
        super::batched(ops::scatter_with(self.op, &base, &all, &updates, &ax)?)
    }
}
