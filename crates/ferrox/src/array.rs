//! [`Array`]: a cheap handle to a node of the lazy graph.
//!
//! A node is either pending (a primitive, its inputs and the stream it runs
//! on) or ready (storage plus a layout). Evaluation turns pending nodes into
//! ready ones and drops their recipes, so the graph behind a result is
//! released as soon as nothing else refers to it.

use crate::backend::cpu::{CpuElement, CpuStorage};
use crate::backend::{dispatcher, Storage};
use crate::device::{current_stream, Stream};
use crate::dtype::Dtype;
use crate::element::{Element, Scalar};
use crate::error::{Error, Result};
use crate::primitives::{OutputSpec, Primitive};
use crate::shape::{checked_nbytes, numel, Layout};
use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Computed data: a shared buffer and the layout that reads this array from it.
/// Views (reshape, transpose, slice, broadcast) share the buffer.
#[derive(Clone, Debug)]
pub struct ArrayData {
    /// The buffer, shared between an array and its views.
    pub storage: Arc<Storage>,
    /// Shape, strides and offset of this array inside the buffer.
    pub layout: Layout,
}

/// How to compute one or more sibling arrays.
pub(crate) struct Recipe {
    pub(crate) primitive: Arc<dyn Primitive>,
    pub(crate) inputs: Vec<Array>,
    pub(crate) stream: Stream,
    pub(crate) outputs: Vec<OutputSpec>,
    pub(crate) siblings: Mutex<Vec<Weak<Node>>>,
    /// Set while an `async_eval` job is to compute this recipe.
    pub(crate) queued: AtomicBool,
}

/// A node's mutable part: its data once computed, and its recipe while it is
/// pending (or, under a gradient trace, for as long as the node lives).
pub(crate) struct State {
    data: Option<ArrayData>,
    recipe: Option<Arc<Recipe>>,
}

pub(crate) struct Node {
    shape: Vec<usize>,
    dtype: Dtype,
    state: Mutex<State>,
}

impl Node {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Node {
    // Dropping a long unevaluated chain recursively would overflow the stack:
    // unlink recipes iteratively instead.
    fn drop(&mut self) {
        let Some(first) = self.state.get_mut().unwrap_or_else(|e| e.into_inner()).recipe.take() else { return };
        let mut stack = vec![first];
        while let Some(recipe) = stack.pop() {
            if let Ok(recipe) = Arc::try_unwrap(recipe) {
                for input in recipe.inputs {
                    if let Ok(mut node) = Arc::try_unwrap(input.node) {
                        if let Some(r) = node.state.get_mut().unwrap_or_else(|e| e.into_inner()).recipe.take() {
                            stack.push(r);
                        }
                    }
                }
            }
        }
    }
}

/// A multi-dimensional array: a handle to a lazily evaluated graph node.
/// Cloning is cheap and shares the node.
#[derive(Clone)]
pub struct Array {
    pub(crate) node: Arc<Node>,
}

impl Array {
    /// A pending array computed by `primitive` from `inputs` on the current
    /// stream. Fails when the shape is too large for any allocation.
    pub fn from_primitive(
        shape: Vec<usize>,
        dtype: Dtype,
        primitive: impl Primitive + 'static,
        inputs: Vec<Array>,
    ) -> Result<Array> {
        Ok(Array::siblings_from_primitive(vec![OutputSpec { shape, dtype }], primitive, inputs)?
            .pop()
            .expect("one output"))
    }

    /// Sibling arrays computed together by one multi-output primitive.
    /// Fails when an output's shape is too large for any allocation.
    pub fn siblings_from_primitive(
        outputs: Vec<OutputSpec>,
        primitive: impl Primitive + 'static,
        inputs: Vec<Array>,
    ) -> Result<Vec<Array>> {
        Array::siblings_from_boxed(outputs, Box::new(primitive), inputs)
    }

    /// [`Array::siblings_from_primitive`] for a primitive already boxed (one
    /// rebuilt from a file).
    pub fn siblings_from_boxed(
        outputs: Vec<OutputSpec>,
        primitive: Box<dyn Primitive>,
        inputs: Vec<Array>,
    ) -> Result<Vec<Array>> {
        Array::siblings_on_stream(outputs, Arc::from(primitive), inputs, current_stream())
    }

    /// Sibling arrays computed by a shared primitive on `stream` (compiled
    /// functions replay the primitives they recorded this way).
    pub(crate) fn siblings_on_stream(
        outputs: Vec<OutputSpec>,
        primitive: Arc<dyn Primitive>,
        inputs: Vec<Array>,
        stream: Stream,
    ) -> Result<Vec<Array>> {
        for o in &outputs {
            if checked_nbytes(&o.shape, o.dtype.size()).is_none() {
                return Err(Error::too_big(primitive.name(), &o.shape, o.dtype));
            }
        }
        let recipe = Arc::new(Recipe {
            primitive,
            inputs,
            stream,
            outputs: outputs.clone(),
            siblings: Mutex::new(Vec::new()),
            queued: AtomicBool::new(false),
        });
        let arrays: Vec<Array> = outputs
            .into_iter()
            .map(|o| Array {
                node: Arc::new(Node {
                    shape: o.shape,
                    dtype: o.dtype,
                    state: Mutex::new(State { data: None, recipe: Some(recipe.clone()) }),
                }),
            })
            .collect();
        *recipe.siblings.lock().unwrap_or_else(|e| e.into_inner()) =
            arrays.iter().map(|a| Arc::downgrade(&a.node)).collect();
        Ok(arrays)
    }

    /// An evaluated array over existing data.
    pub fn from_data(data: ArrayData, dtype: Dtype) -> Array {
        Array {
            node: Arc::new(Node {
                shape: data.layout.shape.clone(),
                dtype,
                state: Mutex::new(State { data: Some(data), recipe: None }),
            }),
        }
    }

    /// An evaluated array owning `data` (row-major) with `shape`.
    pub fn from_vec<T: CpuElement>(data: Vec<T>, shape: &[usize]) -> Result<Array> {
        if data.len() != numel(shape) {
            return Err(Error::invalid(
                "array",
                format!("{} values cannot fill an array of shape {shape:?}.", data.len()),
            ));
        }
        let storage = Arc::new(Storage::Cpu(CpuStorage::from_vec(data)));
        Ok(Array::from_data(ArrayData { storage, layout: Layout::contiguous(shape) }, T::DTYPE))
    }

    /// An evaluated array copied from `data` (row-major) with `shape`.
    pub fn from_slice<T: CpuElement>(data: &[T], shape: &[usize]) -> Result<Array> {
        Array::from_vec(data.to_vec(), shape)
    }

    /// An evaluated array from raw little-endian bytes of `dtype`.
    pub fn from_bytes(bytes: &[u8], dtype: Dtype, shape: &[usize]) -> Result<Array> {
        if bytes.len() != numel(shape) * dtype.size() {
            return Err(Error::invalid(
                "array",
                format!("{} bytes do not hold a {dtype} array of shape {shape:?}.", bytes.len()),
            ));
        }
        let storage = Arc::new(Storage::Cpu(CpuStorage::from_bytes(dtype, bytes)?));
        Ok(Array::from_data(ArrayData { storage, layout: Layout::contiguous(shape) }, dtype))
    }

    /// An evaluated CPU array over host memory another library owns, without
    /// a copy (a zero-copy import such as DLPack's): element `[0, ..., 0]`
    /// is at `ptr`, and `strides` (in elements, one per dimension; zero and
    /// negative strides allowed) step from it. ferrox never writes to the
    /// memory; it drops `owner` (which should give the memory back to its
    /// producer) exactly once, when the last array, view or pending result
    /// reading the memory is gone. Foreign memory is not counted by
    /// [`crate::memory::get_active_memory`].
    ///
    /// When `ptr` is not aligned to the element size, or a bool tensor holds
    /// a byte other than 0 or 1, the elements are copied into a buffer of
    /// ferrox's own instead and `owner` is dropped before this returns
    /// ([`CpuStorage::is_foreign`] tells which happened). Invalid arguments
    /// (a stride count other than the shape's, a null pointer for a
    /// non-empty shape, strides reaching past the address space) are an
    /// error naming `from_foreign_host`, and drop `owner` too.
    ///
    /// # Safety
    /// Every byte from the lowest to the highest element the shape and
    /// strides address must be initialized and lie in one allocation that
    /// stays valid until `owner` is dropped; the memory must not be written
    /// while a ferrox computation may read it.
    pub unsafe fn from_foreign_host(
        ptr: *const u8,
        dtype: Dtype,
        shape: &[usize],
        strides: &[isize],
        owner: impl Send + 'static,
    ) -> Result<Array> {
        // SAFETY: the caller's contract, passed on.
        let (storage, layout) = unsafe { CpuStorage::from_foreign(ptr, dtype, shape, strides, owner)? };
        Ok(Array::from_data(ArrayData { storage: Arc::new(Storage::Cpu(storage)), layout }, dtype))
    }

    /// A 0-d array holding one value.
    pub fn scalar<T: CpuElement>(value: T) -> Array {
        Array::from_vec(vec![value], &[]).expect("one value fills a 0-d array")
    }

    /// A 0-d array of `dtype` holding `value` cast to it.
    pub fn scalar_of(value: Scalar, dtype: Dtype) -> Array {
        let storage = crate::backend::cpu::creation::full(value, dtype, 1).expect("one element allocates");
        let storage = Arc::new(Storage::Cpu(CpuStorage::new(storage)));
        Array::from_data(ArrayData { storage, layout: Layout::contiguous(&[]) }, dtype)
    }

    /// An evaluated array of `dtype` from row-major scalar values (cast to `dtype`).
    pub fn from_scalars(values: &[Scalar], shape: &[usize], dtype: Dtype) -> Result<Array> {
        if values.len() != numel(shape) {
            return Err(Error::invalid(
                "array",
                format!("{} values cannot fill an array of shape {shape:?}.", values.len()),
            ));
        }
        let buffer = crate::backend::cpu::creation::from_scalars(values, dtype)?;
        let storage = Arc::new(Storage::Cpu(CpuStorage::new(buffer)));
        Ok(Array::from_data(ArrayData { storage, layout: Layout::contiguous(shape) }, dtype))
    }

    /// The extent of each dimension.
    pub fn shape(&self) -> &[usize] {
        &self.node.shape
    }

    /// The element type.
    pub fn dtype(&self) -> Dtype {
        self.node.dtype
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.node.shape.len()
    }

    /// Number of elements.
    pub fn size(&self) -> usize {
        numel(&self.node.shape)
    }

    /// Size of one element in bytes.
    pub fn itemsize(&self) -> usize {
        self.dtype().size()
    }

    /// Bytes the elements occupy (`size * itemsize`).
    pub fn nbytes(&self) -> usize {
        self.size() * self.itemsize()
    }

    /// Whether the array has been computed.
    pub fn is_evaluated(&self) -> bool {
        self.node.lock().data.is_some()
    }

    /// Whether two handles refer to the same graph node.
    pub fn same_node(&self, other: &Array) -> bool {
        Arc::ptr_eq(&self.node, &other.node)
    }

    /// Computes this array (and what it needs) if it is pending.
    pub fn eval(&self) -> Result<()> {
        crate::transforms::eval::eval([self])
    }

    /// The computed data, evaluating first if needed.
    pub fn data(&self) -> Result<ArrayData> {
        self.eval()?;
        self.ready_data().ok_or_else(|| Error::invalid("eval", "array was not computed"))
    }

    pub(crate) fn ready_data(&self) -> Option<ArrayData> {
        self.node.lock().data.clone()
    }

    /// The recipe of a node that still needs computing.
    pub(crate) fn pending_recipe(&self) -> Option<Arc<Recipe>> {
        let state = self.node.lock();
        if state.data.is_some() {
            None
        } else {
            state.recipe.clone()
        }
    }

    /// The recipe that computes (or computed) this array, if still known:
    /// pending arrays always have one; computed ones keep it only when they
    /// were computed under a gradient trace.
    pub(crate) fn recipe(&self) -> Option<Arc<Recipe>> {
        self.node.lock().recipe.clone()
    }

    /// Stores computed data; the recipe is dropped (releasing the graph
    /// behind it) unless a gradient trace needs it.
    pub(crate) fn set_ready(node: &Arc<Node>, data: ArrayData, keep_recipe: bool) {
        let mut state = node.lock();
        state.data = Some(data);
        if !keep_recipe {
            state.recipe = None;
        }
    }

    /// Whether this handle is the only way to reach the node: no other
    /// array, recipe or sibling list refers to it (so its consumer may
    /// take its buffer over).
    pub(crate) fn is_sole_handle(&self) -> bool {
        Arc::strong_count(&self.node) == 1 && Arc::weak_count(&self.node) == 0
    }

    /// Takes the computed data out of the node (its consumer is donated the
    /// buffer); [`Array::restore_data`] puts it back if that fails.
    pub(crate) fn take_data(&self) -> Option<ArrayData> {
        self.node.lock().data.take()
    }

    /// Puts back data taken by [`Array::take_data`].
    pub(crate) fn restore_data(&self, data: ArrayData) {
        self.node.lock().data = Some(data);
    }

    /// Swaps in equivalent data (the same values, e.g. moved to another
    /// device) for a computed array.
    pub(crate) fn replace_data(&self, data: ArrayData) {
        let mut state = self.node.lock();
        if state.data.is_some() {
            state.data = Some(data);
        }
    }

    /// A key identifying this array's node (stable while the array lives).
    pub(crate) fn node_key(&self) -> usize {
        Arc::as_ptr(&self.node) as usize
    }

    pub(crate) fn from_node(node: Arc<Node>) -> Array {
        Array { node }
    }

    /// The elements in row-major order as host storage (evaluates; copies
    /// from the device or out of a strided view when needed).
    pub fn to_host(&self) -> Result<CpuStorage> {
        let data = self.data()?;
        dispatcher::to_host(&data.storage, &data.layout)
    }

    /// The array as a view of host memory: the buffer elements its layout
    /// reaches (only those: one for a broadcast scalar), copied from the
    /// device when it is there, and the layout that reads them.
    pub fn to_host_view(&self) -> Result<(Arc<Storage>, Layout)> {
        let data = self.data()?;
        if matches!(&*data.storage, Storage::Cpu(_)) {
            return Ok((data.storage, data.layout));
        }
        let Some((lo, hi)) = data.layout.reach() else {
            return Ok((Arc::new(Storage::Cpu(self.to_host()?)), Layout::contiguous(self.shape())));
        };
        let span = Layout { shape: vec![hi - lo], strides: vec![1], offset: lo };
        let host = dispatcher::to_host(&data.storage, &span)?;
        let layout = Layout { offset: data.layout.offset - lo, ..data.layout };
        Ok((Arc::new(Storage::Cpu(host)), layout))
    }

    /// The elements in row-major order; `T` must match the dtype.
    pub fn to_vec<T: CpuElement>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(Error::InvalidType {
                op: "to_vec",
                msg: format!("array has dtype {}, requested {}.", self.dtype(), T::DTYPE),
            });
        }
        let host = self.to_host()?;
        Ok(host.as_slice::<T>().expect("dtype checked").to_vec())
    }

    /// The value of a one-element array; `T` must match the dtype.
    pub fn item<T: CpuElement>(&self) -> Result<T> {
        if self.size() != 1 {
            return Err(Error::invalid(
                "item",
                format!("can only convert an array of size 1, got shape {:?}.", self.shape()),
            ));
        }
        Ok(self.to_vec::<T>()?[0])
    }

    /// Every element in row-major order as a dtype-agnostic [`Scalar`].
    pub fn to_scalars(&self) -> Result<Vec<Scalar>> {
        let host = self.to_host()?;
        let mut out = Vec::new();
        out.try_reserve_exact(host.len())
            .map_err(|_| Error::allocation_failed("to_scalars", host.len() * size_of::<Scalar>(), "CPU"))?;
        crate::with_buffer!(host.buffer(), v => out.extend(v.iter().map(|e| e.to_scalar())));
        Ok(out)
    }

    /// The value of a one-element array as a dtype-agnostic [`Scalar`].
    pub fn item_scalar(&self) -> Result<Scalar> {
        if self.size() != 1 {
            return Err(Error::invalid(
                "item",
                format!("can only convert an array of size 1, got shape {:?}.", self.shape()),
            ));
        }
        let host = self.to_host()?;
        Ok(crate::with_buffer!(host.buffer(), v => v[0].to_scalar()))
    }
}

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Array(shape={:?}, dtype={}, evaluated={})", self.shape(), self.dtype(), self.is_evaluated())
    }
}

impl Recipe {
    /// The live sibling nodes this recipe computes, in output order.
    pub(crate) fn sibling_nodes(&self) -> Vec<Option<Arc<Node>>> {
        self.siblings.lock().unwrap_or_else(|e| e.into_inner()).iter().map(Weak::upgrade).collect()
    }

    /// Output `index` as an array: its live sibling node, or, when nothing
    /// holds that output any more, a fresh pending node registered in its
    /// place, so evaluating it runs the recipe again (a vjp that reads an
    /// output its caller dropped, such as attention's log-sum-exp, gets the
    /// values rather than a stand-in).
    pub(crate) fn output(self: &Arc<Recipe>, index: usize) -> Array {
        let mut siblings = self.siblings.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(node) = siblings[index].upgrade() {
            return Array::from_node(node);
        }
        let spec = &self.outputs[index];
        let node = Arc::new(Node {
            shape: spec.shape.clone(),
            dtype: spec.dtype,
            state: Mutex::new(State { data: None, recipe: Some(self.clone()) }),
        });
        siblings[index] = Arc::downgrade(&node);
        Array { node }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops;

    #[test]
    fn a_dropped_sibling_comes_back_from_its_recipe() {
        let a = Array::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let b = Array::from_vec(vec![3.0f32, 4.0, 5.0], &[3]).unwrap();
        let mut outs = ops::depends(&[a, b], &[]).unwrap();
        drop(outs.pop());
        let recipe = outs[0].recipe().expect("a pending array keeps its recipe");
        assert!(recipe.sibling_nodes()[1].is_none());
        // Computed before the second output comes back: it is computed again.
        assert_eq!(outs[0].to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
        let revived = recipe.output(1);
        assert_eq!(recipe.output(1).node_key(), revived.node_key(), "registered as the sibling");
        assert_eq!(revived.to_vec::<f32>().unwrap(), vec![3.0, 4.0, 5.0]);
        assert_eq!(outs[0].to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    }
}
