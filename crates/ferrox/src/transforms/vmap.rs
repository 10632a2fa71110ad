//! Vectorizing map: [`vmap`] runs a function written for one example over a
//! batch. The function is traced on one example per batched input; the
//! recorded primitives are then replayed on the whole batch through each
//! primitive's `vmap` rule, which receives inputs with their batch axes and
//! returns outputs batched along axis 0 (or not batched).

use super::autodiff::{record, TraceGuard};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::ops::{self, Index};
use crate::primitives::Identity;
use std::collections::HashMap;

/// Moves `axis` of `x` to the front.
pub(crate) fn batch_to_front(x: &Array, axis: usize) -> Result<Array> {
    if axis == 0 {
        return Ok(x.clone());
    }
    let mut perm: Vec<isize> = (0..x.ndim() as isize).collect();
    let a = perm.remove(axis);
    perm.insert(0, a);
    ops::transpose(x, Some(&perm))
}

/// Inputs with batch axes moved to the front and extent-1 axes inserted after
/// them so that every batched input has rank `R + 1`, where `R` is the largest
/// per-example rank; unbatched inputs are left as they are. NumPy broadcasting
/// then lines up per-example axes and the batch axis. Returns the batch size.
pub(crate) fn align_batched(inputs: &[Array], axes: &[Option<usize>]) -> Result<(Vec<Array>, usize)> {
    let rank = |x: &Array, ax: &Option<usize>| x.ndim() - ax.is_some() as usize;
    let r = inputs.iter().zip(axes).map(|(x, a)| rank(x, a)).max().unwrap_or(0);
    let mut batch = 1;
    let out = inputs
        .iter()
        .zip(axes)
        .map(|(x, ax)| match ax {
            None => Ok(x.clone()),
            Some(a) => {
                let front = batch_to_front(x, *a)?;
                batch = front.shape()[0];
                // Extent-1 axes after the batch axis, inserted by position
                // (a shapeless compile of the batched function replays them).
                let missing = r - rank(x, ax);
                if missing == 0 {
                    return Ok(front);
                }
                ops::expand_dims(&front, &(1..=missing as isize).collect::<Vec<_>>())
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((out, batch))
}

/// Every input batched along axis 0 (unbatched ones broadcast to the batch).
pub(crate) fn all_batched(inputs: &[Array], axes: &[Option<usize>]) -> Result<Vec<Array>> {
    let batch = inputs
        .iter()
        .zip(axes)
        .find_map(|(x, a)| a.map(|a| x.shape()[a]))
        .ok_or_else(|| Error::invalid("vmap", "no input is batched"))?;
    inputs
        .iter()
        .zip(axes)
        .map(|(x, ax)| match ax {
            Some(a) => batch_to_front(x, *a),
            None => {
                let mut shape = vec![batch];
                shape.extend_from_slice(x.shape());
                ops::broadcast_to(&ops::expand_dims(x, &[0])?, &shape)
            }
        })
        .collect()
}

/// Applies `f` to each slice of the inputs along their `in_axes` (`None`:
/// the same input for every slice) and stacks each output along its
/// `out_axes` entry (`None`: the output must not depend on the batch); a
/// single `out_axes` entry applies to every output.
///
/// ```
/// use ferrox::{ops, transforms::vmap::vmap, Array};
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// let sums = vmap(|xs| Ok(vec![ops::sum(&xs[0], None, false)?]), &[x], &[Some(1)], &[Some(0)])?;
/// assert_eq!(sums[0].to_vec::<f32>()?, vec![4.0, 6.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn vmap(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    inputs: &[Array],
    in_axes: &[Option<isize>],
    out_axes: &[Option<isize>],
) -> Result<Vec<Array>> {
    if in_axes.len() != inputs.len() {
        return Err(Error::invalid(
            "vmap",
            format!("Expected {} in_axes (one per input), got {}.", inputs.len(), in_axes.len()),
        ));
    }
    let mut batch: Option<usize> = None;
    let mut axes = Vec::with_capacity(inputs.len());
    for (x, ax) in inputs.iter().zip(in_axes) {
        let Some(ax) = ax else {
            axes.push(None);
            continue;
        };
        if x.ndim() == 0 {
            return Err(Error::invalid("vmap", "Cannot vmap an input with no dimensions (a scalar)."));
        }
        let a = crate::shape::normalize_axis(*ax, x.ndim()).ok_or(Error::AxisOutOfRange {
            op: "vmap",
            axis: *ax,
            ndim: x.ndim(),
        })?;
        let size = x.shape()[a];
        if batch.is_some_and(|b| b != size) {
            return Err(Error::invalid(
                "vmap",
                format!("Inconsistent batch sizes: {} and {size}.", batch.unwrap_or(0)),
            ));
        }
        batch = Some(size);
        axes.push(Some(a));
    }
    let batch = batch.ok_or_else(|| Error::invalid("vmap", "At least one of in_axes must be non-None."))?;

    let _trace = TraceGuard::new();
    // One example per batched input, as a distinct node to trace from.
    let examples: Vec<Array> = inputs
        .iter()
        .zip(&axes)
        .map(|(x, ax)| match ax {
            None => Ok(x.clone()),
            Some(a) => {
                let mut index = vec![Index::Slice { start: None, stop: None, step: None }; x.ndim()];
                index[*a] = Index::Int(0);
                let first = ops::index(x, &index)?;
                Array::from_primitive(first.shape().to_vec(), first.dtype(), Identity, vec![first])
            }
        })
        .collect::<Result<_>>()?;
    let outputs = f(&examples)?;
    let out_axes: Vec<Option<isize>> =
        if out_axes.len() == 1 { vec![out_axes[0]; outputs.len()] } else { out_axes.to_vec() };
    if out_axes.len() != outputs.len() {
        return Err(Error::invalid(
            "vmap",
            format!("Expected {} out_axes (one per output), got {}.", outputs.len(), out_axes.len()),
        ));
    }
    let traced: Vec<Array> = examples.iter().zip(&axes).filter(|(_, a)| a.is_some()).map(|(e, _)| e.clone()).collect();
    let tape = record(&traced, &outputs, false);

    let mut batched: HashMap<usize, (Array, Option<usize>)> = HashMap::new();
    for ((e, x), ax) in examples.iter().zip(inputs).zip(&axes) {
        if ax.is_some() {
            batched.insert(e.node_key(), (x.clone(), *ax));
        }
    }
    for (recipe, siblings) in &tape.order {
        let (ins, in_axes): (Vec<Array>, Vec<Option<usize>>) = recipe
            .inputs
            .iter()
            .map(|i| batched.get(&i.node_key()).cloned().unwrap_or_else(|| (i.clone(), None)))
            .unzip();
        let (outs, out_ax) = recipe.primitive.vmap(&ins, &in_axes)?;
        for ((s, o), a) in siblings.iter().zip(outs).zip(out_ax) {
            if let Some(s) = s {
                batched.insert(s.node_key(), (o, a));
            }
        }
    }
    outputs
        .iter()
        .zip(&out_axes)
        .map(|(o, out_ax)| {
            let (arr, ax) = batched.get(&o.node_key()).cloned().unwrap_or_else(|| (o.clone(), None));
            let Some(out_ax) = out_ax else {
                return match ax {
                    None => Ok(arr),
                    Some(_) => {
                        Err(Error::invalid("vmap", "An output with out_axes None depends on the batched inputs."))
                    }
                };
            };
            let front = match ax {
                Some(a) => batch_to_front(&arr, a)?,
                None => {
                    let mut shape = vec![batch];
                    shape.extend_from_slice(arr.shape());
                    ops::broadcast_to(&ops::expand_dims(&arr, &[0])?, &shape)?
                }
            };
            let dest = crate::shape::normalize_axis(*out_ax, front.ndim()).ok_or(Error::AxisOutOfRange {
                op: "vmap",
                axis: *out_ax,
                ndim: front.ndim(),
            })?;
            let mut perm: Vec<isize> = (1..front.ndim() as isize).collect();
            perm.insert(dest, 0);
            ops::transpose(&front, Some(&perm))
        })
        .collect()
}
