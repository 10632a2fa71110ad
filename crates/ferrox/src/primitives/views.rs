//! Layout primitives. Each is a view sharing its input's buffer, except a
//! reshape whose strides cannot express the new shape (which copies) and
//! `SliceUpdate` (a copy with a window overwritten).

use super::{arity, fresh, mismatch, one_output, same_dtype, view, OutputSpec, Primitive};
use crate::array::{Array, ArrayData};
use crate::backend::Backend;
use crate::error::Result;
use crate::ops;
use crate::shape::numel;

/// The single input's shape and dtype, unchanged.
fn same_as_input(name: &'static str, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
    arity(name, inputs, 1)?;
    one_output(inputs[0].shape().to_vec(), inputs[0].dtype())
}

/// Checks a strided window (`start`, `len`, `step` per axis) against `shape`:
/// every index it reads lies inside.
fn check_window(name: &'static str, shape: &[usize], start: &[usize], len: &[usize], step: &[isize]) -> Result<()> {
    if start.len() != shape.len() || len.len() != shape.len() || step.len() != shape.len() {
        return Err(mismatch(
            name,
            format!("window of {} axes for an array of {} dimensions.", len.len(), shape.len()),
        ));
    }
    for (axis, (((&n, &s), &l), &st)) in shape.iter().zip(start).zip(len).zip(step).enumerate() {
        let last = s as i128 + (l as i128 - 1) * st as i128;
        if st == 0 || (l > 0 && (s >= n || last < 0 || last >= n as i128)) {
            return Err(mismatch(name, format!("window leaves axis {axis} of extent {n}.")));
        }
    }
    Ok(())
}

fn isize_shape(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

/// How a reshape's target follows from its input's shape: what a
/// shapeless compile replays on inputs of other shapes (as MLX keeps
/// `reshape`'s -1 and has `Squeeze`/`ExpandDims`/`Flatten` primitives).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub enum ShapeRule {
    /// The target shape as recorded.
    #[default]
    Fixed,
    /// The recorded shape with this axis inferred from the size (a -1).
    Infer(usize),
    /// The input's shape without these (extent-1) axes.
    Squeeze(Vec<usize>),
    /// The input's shape with extent-1 axes at these output positions.
    ExpandDims(Vec<usize>),
    /// The input's shape with axes `start..=end` merged.
    Flatten(usize, usize),
}

/// A new shape with the same number of elements.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Reshape {
    /// The target shape (for the traced input).
    pub shape: Vec<usize>,
    /// How the target follows from another input shape.
    #[serde(default)]
    pub rule: ShapeRule,
}

impl Reshape {
    /// The target shape for an input of shape `input` (per [`ShapeRule`]).
    fn target(&self, input: &[usize]) -> Result<Vec<usize>> {
        let size = numel(input);
        let bad = |what: String| mismatch("reshape", what);
        let out = match &self.rule {
            ShapeRule::Fixed => self.shape.clone(),
            ShapeRule::Infer(i) => {
                let mut out = self.shape.clone();
                let known: usize = out.iter().enumerate().filter(|&(j, _)| j != *i).map(|(_, &d)| d).product();
                if known == 0 || size % known != 0 {
                    return Err(bad(format!("cannot infer axis {i} of {:?} for {size} elements.", self.shape)));
                }
                out[*i] = size / known;
                out
            }
            ShapeRule::Squeeze(axes) => {
                if axes.iter().any(|&a| input.get(a) != Some(&1)) {
                    return Err(bad(format!("cannot squeeze axes {axes:?} of shape {input:?}.")));
                }
                input.iter().enumerate().filter(|(a, _)| !axes.contains(a)).map(|(_, &d)| d).collect()
            }
            ShapeRule::ExpandDims(axes) => {
                let nd = input.len() + axes.len();
                let mut src = input.iter();
                (0..nd).map(|i| if axes.contains(&i) { 1 } else { *src.next().unwrap_or(&1) }).collect()
            }
            ShapeRule::Flatten(s, e) => {
                if *e >= input.len() || s > e {
                    return Err(bad(format!("cannot flatten axes {s}..={e} of shape {input:?}.")));
                }
                let mut out = input[..*s].to_vec();
                out.push(numel(&input[*s..=*e]));
                out.extend_from_slice(&input[e + 1..]);
                out
            }
        };
        if numel(&out) != size {
            return Err(bad(format!("cannot reshape {size} elements to {out:?}.")));
        }
        Ok(out)
    }
}

impl Primitive for Reshape {
    fn name(&self) -> &'static str {
        "reshape"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        arity(self.name(), inputs, 1)?;
        let x = &inputs[0];
        one_output(self.target(x.shape())?, x.dtype())
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        let shape = &outputs[0].shape;
        if let Some(layout) = x.layout.reshape_view(shape) {
            return Ok(view(x, layout));
        }
        let copy = backend.copy(&x.storage, &x.layout, outputs[0].dtype)?;
        Ok(fresh(copy, shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![ops::reshape(&cotangents[0], &isize_shape(inputs[0].shape()))?])
    }
    fn jvp(&self, _: &[Array], outputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::reshape(&tangents[0], &isize_shape(outputs[0].shape()))?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        let mut shape = vec![x.shape()[0] as isize];
        shape.extend(isize_shape(&self.target(&x.shape()[1..])?));
        super::batched(ops::reshape(&x, &shape)?)
    }
}

/// A permutation of the axes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Transpose {
    /// New axis `i` is old axis `perm[i]`.
    pub perm: Vec<usize>,
}

impl Primitive for Transpose {
    fn name(&self) -> &'static str {
        "transpose"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        arity(self.name(), inputs, 1)?;
        let x = &inputs[0];
        let mut seen = vec![false; x.ndim()];
        if self.perm.len() != x.ndim()
            || !self.perm.iter().all(|&p| p < x.ndim() && !std::mem::replace(&mut seen[p], true))
        {
            return Err(mismatch(self.name(), format!("{:?} is not a permutation of {} axes.", self.perm, x.ndim())));
        }
        one_output(self.perm.iter().map(|&p| x.shape()[p]).collect(), x.dtype())
    }
    fn is_view(&self) -> bool {
        true
    }
    fn eval(&self, _: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        Ok(view(&inputs[0], inputs[0].layout.permute(&self.perm)))
    }
    fn vjp(&self, _: &[Array], _: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        let mut inverse = vec![0isize; self.perm.len()];
        for (i, &p) in self.perm.iter().enumerate() {
            inverse[p] = i as isize;
        }
        Ok(vec![ops::transpose(&cotangents[0], Some(&inverse))?])
    }
    fn jvp(&self, _: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::transpose(&tangents[0], Some(&isize_shape(&self.perm)))?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        let perm: Vec<isize> = std::iter::once(0).chain(self.perm.iter().map(|&p| p as isize + 1)).collect();
        super::batched(ops::transpose(&x, Some(&perm))?)
    }
}

/// A strided window (basic indexing).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Slice {
    /// First index taken along each axis.
    pub start: Vec<usize>,
    /// Number of elements taken along each axis.
    pub len: Vec<usize>,
    /// Step along each axis (negative walks backwards).
    pub step: Vec<isize>,
}

impl Primitive for Slice {
    fn name(&self) -> &'static str {
        "slice"
    }
    fn fixes_input_shapes(&self) -> bool {
        true
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        arity(self.name(), inputs, 1)?;
        check_window(self.name(), inputs[0].shape(), &self.start, &self.len, &self.step)?;
        one_output(self.len.clone(), inputs[0].dtype())
    }
    fn is_view(&self) -> bool {
        true
    }
    fn eval(&self, _: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        Ok(view(&inputs[0], inputs[0].layout.slice(&self.start, &self.len, &self.step)))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        // A broadcast zero, not a filled buffer: backends write the padding
        // and the window in one pass.
        let zero = Array::scalar_of(crate::element::Scalar::Int(0), inputs[0].dtype());
        let zeros = ops::broadcast_to(&zero, inputs[0].shape())?;
        Ok(vec![Array::from_primitive(
            inputs[0].shape().to_vec(),
            inputs[0].dtype(),
            SliceUpdate { start: self.start.clone(), len: self.len.clone(), step: self.step.clone() },
            vec![zeros, cotangents[0].clone()],
        )?])
    }
    fn jvp(&self, _: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let t = &tangents[0];
        Ok(vec![Array::from_primitive(self.len.clone(), t.dtype(), self.clone(), vec![t.clone()])?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        let b = x.shape()[0];
        let p = Slice {
            start: std::iter::once(0).chain(self.start.iter().copied()).collect(),
            len: std::iter::once(b).chain(self.len.iter().copied()).collect(),
            step: std::iter::once(1).chain(self.step.iter().copied()).collect(),
        };
        super::batched(Array::from_primitive(p.len.clone(), x.dtype(), p, vec![x])?)
    }
}

/// A copy of the first input with a strided window replaced by the second
/// input (the inverse of [`Slice`]; MLX's `slice_update`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SliceUpdate {
    /// First index of the window along each axis.
    pub start: Vec<usize>,
    /// Extent of the window along each axis (the update's shape).
    pub len: Vec<usize>,
    /// Step along each axis.
    pub step: Vec<isize>,
}

impl Primitive for SliceUpdate {
    fn name(&self) -> &'static str {
        "slice_update"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        arity(self.name(), inputs, 2)?;
        let (base, update) = (&inputs[0], &inputs[1]);
        same_dtype(self.name(), inputs, base.dtype())?;
        check_window(self.name(), base.shape(), &self.start, &self.len, &self.step)?;
        if update.shape() != self.len.as_slice() {
            return Err(mismatch(
                self.name(),
                format!("update of shape {:?} for a window {:?}.", update.shape(), self.len),
            ));
        }
        one_output(base.shape().to_vec(), base.dtype())
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let (base, update) = (&inputs[0], &inputs[1]);
        let window = crate::shape::Layout::contiguous(&outputs[0].shape).slice(&self.start, &self.len, &self.step);
        let out = backend.slice_update(&base.storage, &base.layout, &update.storage, &update.layout, &window)?;
        Ok(fresh(out, &outputs[0].shape))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let slice = Slice { start: self.start.clone(), len: self.len.clone(), step: self.step.clone() };
        let c = &cotangents[0];
        argnums
            .iter()
            .map(|&i| {
                if i == 0 {
                    let hole = ops::zeros_like(&inputs[1])?;
                    Array::from_primitive(c.shape().to_vec(), c.dtype(), self.clone(), vec![c.clone(), hole])
                } else {
                    Array::from_primitive(self.len.clone(), c.dtype(), slice.clone(), vec![c.clone()])
                }
            })
            .collect()
    }
    fn jvp(&self, _: &[Array], outputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let out = &outputs[0];
        Ok(vec![Array::from_primitive(out.shape().to_vec(), out.dtype(), self.clone(), tangents.to_vec())?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = crate::transforms::vmap::all_batched(inputs, axes)?;
        let b = x[0].shape()[0];
        let p = SliceUpdate {
            start: std::iter::once(0).chain(self.start.iter().copied()).collect(),
            len: std::iter::once(b).chain(self.len.iter().copied()).collect(),
            step: std::iter::once(1).chain(self.step.iter().copied()).collect(),
        };
        super::batched(Array::from_primitive(x[0].shape().to_vec(), x[0].dtype(), p, x)?)
    }
}

/// Broadcasting to a larger shape (stride-0 view).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BroadcastTo {
    /// The target shape.
    pub shape: Vec<usize>,
}

impl Primitive for BroadcastTo {
    fn name(&self) -> &'static str {
        "broadcast_to"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        arity(self.name(), inputs, 1)?;
        let x = &inputs[0];
        if crate::shape::broadcast_shapes(x.shape(), &self.shape).as_deref() != Some(self.shape.as_slice()) {
            return Err(mismatch(self.name(), format!("cannot broadcast {:?} to {:?}.", x.shape(), self.shape)));
        }
        one_output(self.shape.clone(), x.dtype())
    }
    fn is_view(&self) -> bool {
        true
    }
    fn eval(&self, _: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let layout = inputs[0].layout.broadcast_to(&self.shape).expect("op builder checks broadcasting");
        Ok(view(&inputs[0], layout))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![ops::sum_to_shape(&cotangents[0], inputs[0].shape())?])
    }
    fn jvp(&self, _: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::broadcast_to(&tangents[0], &self.shape)?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        let b = x.shape()[0];
        let mut shape = vec![b as isize];
        shape.extend(std::iter::repeat_n(1, self.shape.len() + 1 - x.ndim()));
        shape.extend(x.shape()[1..].iter().map(|&d| d as isize));
        let target: Vec<usize> = std::iter::once(b).chain(self.shape.iter().copied()).collect();
        super::batched(ops::broadcast_to(&ops::reshape(&x, &shape)?, &target)?)
    }
}

/// The first input broadcast against the shapes of all the inputs (the
/// others lend only their shapes, as in `broadcast_arrays`): a stride-0
/// view whose shape follows the inputs, so a shapeless compiled function
/// re-derives it on every call where [`BroadcastTo`]'s shape is fixed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BroadcastAgainst;

impl Primitive for BroadcastAgainst {
    fn name(&self) -> &'static str {
        "broadcast_against"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        let x = inputs.first().ok_or_else(|| mismatch(self.name(), "takes at least one input."))?;
        let mut shape = x.shape().to_vec();
        for other in &inputs[1..] {
            shape = crate::shape::broadcast_shapes(&shape, other.shape()).ok_or_else(|| {
                mismatch(self.name(), format!("Shapes {:?} and {:?} cannot be broadcast.", shape, other.shape()))
            })?;
        }
        one_output(shape, x.dtype())
    }
    fn is_view(&self) -> bool {
        true
    }
    fn eval(&self, _: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let layout = inputs[0].layout.broadcast_to(&outputs[0].shape).expect("output_specs checks broadcasting");
        Ok(view(&inputs[0], layout))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        argnums
            .iter()
            .map(|&i| match i {
                0 => ops::sum_to_shape(&cotangents[0], inputs[0].shape()),
                _ => ops::zeros_like(&inputs[i]),
            })
            .collect()
    }
    fn jvp(&self, inputs: &[Array], outputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let mut args = vec![tangents[0].clone()];
        args.extend_from_slice(&inputs[1..]);
        Ok(vec![Array::from_primitive(outputs[0].shape().to_vec(), tangents[0].dtype(), self.clone(), args)?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = crate::transforms::vmap::all_batched(inputs, axes)?;
        let spec = self.output_specs(&x)?.remove(0);
        super::batched(Array::from_primitive(spec.shape, spec.dtype, self.clone(), x)?)
    }
}

/// The input with a dense layout: a view when it already has one, a copy
/// otherwise (MLX's `contiguous`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Contiguous {
    /// Whether a column-major layout is dense enough.
    pub allow_col_major: bool,
}

impl Primitive for Contiguous {
    fn name(&self) -> &'static str {
        "contiguous"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        same_as_input(self.name(), inputs)
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        let dense = x.layout.is_row_contiguous() || (self.allow_col_major && x.layout.is_col_contiguous());
        if dense {
            return Ok(view(x, x.layout.clone()));
        }
        let out = backend.copy(&x.storage, &x.layout, outputs[0].dtype)?;
        Ok(fresh(out, &outputs[0].shape))
    }
    fn vjp(&self, _: &[Array], _: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![cotangents[0].clone()])
    }
    fn jvp(&self, _: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![tangents[0].clone()])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        super::batched(Array::from_primitive(x.shape().to_vec(), x.dtype(), self.clone(), vec![x])?)
    }
}

/// The input's bytes reinterpreted as another dtype (the last axis scales
/// by the ratio of the element sizes).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct View(pub crate::dtype::Dtype);

impl Primitive for View {
    fn name(&self) -> &'static str {
        "view"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        arity(self.name(), inputs, 1)?;
        let (x, (from, to)) = (&inputs[0], (inputs[0].dtype().size(), self.0.size()));
        let mut shape = x.shape().to_vec();
        if from != to {
            match shape.last_mut() {
                Some(last) if (*last * from) % to == 0 => *last = *last * from / to,
                _ => {
                    return Err(mismatch(
                        self.name(),
                        format!("cannot view {:?} {} as {}.", x.shape(), x.dtype(), self.0),
                    ))
                }
            }
        }
        one_output(shape, self.0)
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        Ok(fresh(backend.bitcast(&x.storage, &x.layout, self.0)?, &outputs[0].shape))
    }
    fn vjp(&self, _: &[Array], _: &[Array], _: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Err(crate::error::Error::invalid("view", "Reinterpreted bytes have no derivative."))
    }
    fn jvp(&self, _: &[Array], _: &[Array], _: &[Array]) -> Result<Vec<Array>> {
        Err(crate::error::Error::invalid("view", "Reinterpreted bytes have no derivative."))
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        super::batched(ops::view(&x, self.0)?)
    }
}

/// The input unchanged: a distinct node for the same data (gradient traces
/// use it to tell a function's arguments apart).
/// The input unchanged (a distinct node, e.g. a gradient trace's stand-in).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Identity;

impl Primitive for Identity {
    fn name(&self) -> &'static str {
        "identity"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        same_as_input(self.name(), inputs)
    }
    fn is_view(&self) -> bool {
        true
    }
    fn eval(&self, _: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        Ok(view(&inputs[0], inputs[0].layout.clone()))
    }
    fn vjp(&self, _: &[Array], _: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![cotangents[0].clone()])
    }
    fn jvp(&self, _: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![tangents[0].clone()])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        Ok((vec![inputs[0].clone()], vec![axes[0]]))
    }
}

/// The input unchanged, with zero derivative (MLX's `stop_gradient`).
/// The input unchanged, but a constant for derivatives.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StopGradient;

impl Primitive for StopGradient {
    fn name(&self) -> &'static str {
        "stop_gradient"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        same_as_input(self.name(), inputs)
    }
    fn blocks_derivatives(&self) -> bool {
        true
    }
    fn is_view(&self) -> bool {
        true
    }
    fn eval(&self, _: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        Ok(view(&inputs[0], inputs[0].layout.clone()))
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], _: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![ops::zeros_like(&inputs[0])?])
    }
    fn jvp(&self, inputs: &[Array], _: &[Array], _: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::zeros_like(&inputs[0])?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        Ok((vec![ops::stop_gradient(&inputs[0])?], vec![axes[0]]))
    }
}

/// The first input unchanged, refusing derivatives with respect to the
/// others (the guarded inputs, which it reads for nothing else): the vjp
/// for a guarded input raises MLX's error. Quantized products guard their
/// dequantized weights with the packed weights (MLX's RuntimeError) and
/// the fp modes' scales (MLX's ValueError; the scales reach the weights
/// only through a `stop_gradient`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RefuseGradient {
    /// One per guarded input (inputs 1, 2, ...), in order.
    pub refusals: Vec<Refusal>,
}

/// Why a [`RefuseGradient`] input has no gradient.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Refusal {
    /// What has no gradient, for the message ("the quantized weights").
    pub what: String,
    /// Whether MLX raises a RuntimeError for it (else a ValueError).
    pub runtime: bool,
}

impl Primitive for RefuseGradient {
    fn name(&self) -> &'static str {
        "refuse_gradient"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        let x = inputs.first().ok_or_else(|| mismatch(self.name(), "takes at least one input."))?;
        if inputs.len() != self.refusals.len() + 1 {
            return Err(mismatch(self.name(), "takes one input per refusal after the value."));
        }
        one_output(x.shape().to_vec(), x.dtype())
    }
    fn is_view(&self) -> bool {
        true
    }
    fn eval(&self, _: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        Ok(view(&inputs[0], inputs[0].layout.clone()))
    }
    fn vjp(&self, _: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let mut guarded: Vec<usize> = argnums.iter().copied().filter(|&i| i > 0).collect();
        guarded.sort_unstable();
        if let Some(refusal) = guarded.first().and_then(|&i| self.refusals.get(i - 1)) {
            let (op, msg) = ("QuantizedMatmul::vjp", format!("no gradient wrt {}.", refusal.what));
            return Err(if refusal.runtime {
                crate::error::Error::Runtime { op, msg }
            } else {
                crate::error::Error::invalid(op, msg)
            });
        }
        Ok(argnums.iter().map(|_| cotangents[0].clone()).collect())
    }
    fn jvp(&self, _: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![tangents[0].clone()])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        // Batched, the guard is dropped: only derivatives consult it.
        Ok((vec![inputs[0].clone()], vec![axes[0]]))
    }
}

/// MLX's `as_strided`: a view of the input's elements in row-major order
/// (copied first unless already laid out so) with any shape, strides (in
/// elements, negative and zero allowed) and offset. The op checks that
/// every element it reaches lies inside the input.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AsStrided {
    /// The view's shape.
    pub shape: Vec<usize>,
    /// Step in elements along each axis.
    pub strides: Vec<isize>,
    /// First element, counted in the row-major order of the input.
    pub offset: usize,
}

impl AsStrided {
    /// Checks that the view reads only elements `0..size` of a row-major
    /// input (as `as_strided` promises, unlike MLX's unchecked view).
    pub(crate) fn check_reach(&self, size: usize) -> Result<()> {
        if self.strides.len() != self.shape.len() {
            return Err(mismatch(
                "as_strided",
                format!("Got {} strides for a shape of {} dimensions.", self.strides.len(), self.shape.len()),
            ));
        }
        if numel(&self.shape) == 0 {
            return Ok(());
        }
        let (mut lo, mut hi) = (self.offset as i128, self.offset as i128);
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            let reach = (n as i128 - 1) * s as i128;
            if reach < 0 {
                lo += reach;
            } else {
                hi += reach;
            }
        }
        if lo < 0 || hi >= size as i128 {
            return Err(mismatch(
                "as_strided",
                format!("The view reaches elements {lo} to {hi}, outside the {size} elements of the array."),
            ));
        }
        Ok(())
    }

    /// The input position (row-major) of every element of the view, as a
    /// flat int64 array (for the derivative).
    fn positions(&self) -> Result<Array> {
        let nd = self.shape.len();
        let mut pos = Array::scalar_of(crate::element::Scalar::Int(self.offset as i64), crate::dtype::Dtype::I64);
        for (d, (&n, &s)) in self.shape.iter().zip(&self.strides).enumerate() {
            let mut line = vec![1isize; nd];
            line[d] = n as isize;
            let r = ops::arange(0.0, n as f64 * s as f64, s as f64, crate::dtype::Dtype::I64)?;
            let r = if s == 0 { ops::zeros(&[n], crate::dtype::Dtype::I64)? } else { r };
            pos = ops::add(&pos, &ops::reshape(&r, &line)?)?;
        }
        let pos = ops::broadcast_to(&pos, &self.shape)?;
        ops::reshape(&pos, &[-1])
    }
}

impl Primitive for AsStrided {
    fn name(&self) -> &'static str {
        "AsStrided"
    }
    fn fixes_input_shapes(&self) -> bool {
        true
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        arity(self.name(), inputs, 1)?;
        self.check_reach(inputs[0].size())?;
        one_output(self.shape.clone(), inputs[0].dtype())
    }
    fn is_view(&self) -> bool {
        true
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        let layout = |offset: usize| crate::shape::Layout {
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            // An empty view addresses nothing: offset 0 keeps kernels'
            // `offset..offset + size` slices of its buffer in range.
            offset: if crate::shape::numel(&self.shape) == 0 { 0 } else { offset + self.offset },
        };
        if x.layout.is_row_contiguous() {
            return Ok(view(x, layout(x.layout.offset)));
        }
        let copy = backend.copy(&x.storage, &x.layout, x.storage.dtype())?;
        Ok(vec![ArrayData { storage: std::sync::Arc::new(copy), layout: layout(0) }])
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        let x = &inputs[0];
        let flat = ops::zeros(&[x.size()], cotangents[0].dtype())?;
        let c = ops::reshape(&cotangents[0], &[-1, 1])?;
        let dx = ops::scatter_add(&flat, &[self.positions()?], &c, &[0])?;
        Ok(vec![ops::reshape(&dx, &isize_shape(x.shape()))?])
    }
    fn jvp(&self, _: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let t = &tangents[0];
        Ok(vec![Array::from_primitive(self.shape.clone(), t.dtype(), self.clone(), vec![t.clone()])?])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        // Each member's view reaches its own block of the batched input.
        let x = super::front(inputs, axes)?;
        let (b, per) = (x.shape()[0], x.size() / x.shape()[0].max(1));
        let p = AsStrided {
            shape: std::iter::once(b).chain(self.shape.iter().copied()).collect(),
            strides: std::iter::once(per as isize).chain(self.strides.iter().copied()).collect(),
            offset: self.offset,
        };
        super::batched(Array::from_primitive(p.shape.clone(), x.dtype(), p, vec![x])?)
    }
}

/// MLX's `Depends`: its outputs are views of the first `count` inputs, and
/// evaluating them first evaluates the remaining inputs (the dependencies).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Depends {
    /// How many leading inputs are passed through.
    pub count: usize,
}

impl Primitive for Depends {
    fn name(&self) -> &'static str {
        "Depends"
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        if self.count > inputs.len() {
            return Err(mismatch(self.name(), format!("passes {} of {} inputs.", self.count, inputs.len())));
        }
        Ok(inputs[..self.count].iter().map(OutputSpec::of).collect())
    }
    fn is_view(&self) -> bool {
        true
    }
    fn eval(&self, _: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        Ok(inputs[..self.count].iter().flat_map(|x| view(x, x.layout.clone())).collect())
    }
    fn vjp(&self, inputs: &[Array], _: &[Array], cotangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        argnums
            .iter()
            .map(|&i| if i < self.count { Ok(cotangents[i].clone()) } else { ops::zeros_like(&inputs[i]) })
            .collect()
    }
    fn jvp(&self, _: &[Array], _: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        Ok(tangents[..self.count].to_vec())
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let outs = ops::depends(&inputs[..self.count], &inputs[self.count..])?;
        Ok((outs, axes[..self.count].to_vec()))
    }
}
