//! The scheduler: evaluates pending arrays in topological order.

use crate::array::{Array, ArrayData, Recipe};
use crate::backend::{dispatcher, Backend};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::shape::checked_nbytes;
use std::collections::HashSet;
use std::sync::Arc;

/// Computes every pending array among `arrays` and everything they need.
///
/// Work runs in dependency order on each primitive's stream. Once a node is
/// computed it drops its recipe, so intermediate results are freed as soon as
/// their last consumer has run (the graph does not grow in a training loop).
/// Waits first for work queued by [`super::async_eval::async_eval`], and
/// reports (once) a failure of that work, as MLX does.
pub fn eval<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> Result<()> {
    super::async_eval::wait_for_async_work();
    super::async_eval::take_async_failure()?;
    run_in_order(pending_recipes(arrays, |_| false))
}

/// Runs `recipes` (inputs before consumers, as [`pending_recipes`] orders
/// them) on this thread, dropping each once it has run so intermediates are
/// freed as the evaluation goes.
pub(crate) fn run_in_order(recipes: Vec<Arc<Recipe>>) -> Result<()> {
    for recipe in recipes {
        run(&recipe)?;
    }
    Ok(())
}

/// Pending recipes reachable from `arrays` without passing through arrays
/// that are `leaf` (always stopping at computed ones), inputs before
/// consumers. Iterative depth-first search: chains of any length are fine.
pub(crate) fn pending_recipes<'a>(
    arrays: impl IntoIterator<Item = &'a Array>,
    leaf: impl Fn(&Array) -> bool,
) -> Vec<Arc<Recipe>> {
    let mut order = Vec::new();
    let mut seen: HashSet<*const Recipe> = HashSet::new();
    let mut stack: Vec<(Arc<Recipe>, usize)> = Vec::new();
    let pending = |a: &Array| if leaf(a) { None } else { a.pending_recipe() };
    for array in arrays {
        let Some(root) = pending(array) else { continue };
        if !seen.insert(Arc::as_ptr(&root)) {
            continue;
        }
        stack.push((root, 0));
        while let Some((recipe, next)) = stack.last_mut() {
            if let Some(input) = recipe.inputs.get(*next) {
                *next += 1;
                if let Some(child) = pending(input) {
                    if seen.insert(Arc::as_ptr(&child)) {
                        stack.push((child, 0));
                    }
                }
            } else {
                let (recipe, _) = stack.pop().expect("stack is not empty");
                order.push(recipe);
            }
        }
    }
    order
}

/// Runs one recipe on its stream's device and stores the results in its
/// live sibling nodes.
pub(crate) fn run(recipe: &Recipe) -> Result<()> {
    if !recipe.primitive.is_view() {
        check_allocation(recipe)?;
    }
    let stream = recipe.stream;
    let backend = dispatcher::backend(stream)?;
    let mut inputs = recipe.inputs.iter().map(|a| input_on(recipe, a)).collect::<Result<Vec<_>>>()?;
    let name = recipe.primitive.name();
    let keep_recipe = crate::transforms::autodiff::is_tracing();
    let donor = if keep_recipe { None } else { donate(recipe, backend, &mut inputs) };
    let outputs = match donor {
        None => recipe.primitive.eval(backend, &inputs, &recipe.outputs),
        Some(i) => recipe.primitive.eval_donated(backend, &mut inputs, i, &recipe.outputs).inspect_err(|_| {
            recipe.inputs[i].restore_data(inputs[i].clone());
        }),
    }
    .map_err(|e| e.in_op(name))?;
    for (node, data) in recipe.sibling_nodes().into_iter().zip(outputs) {
        if let Some(node) = node {
            Array::set_ready(&node, data, keep_recipe);
        }
    }
    Ok(())
}

/// The input whose buffer the recipe's output takes over (MLX's buffer
/// donation: a chain of elementwise ops on a temporary reuses one buffer),
/// made this evaluation's alone. Only an input nothing else refers to (no
/// array, recipe or view) whose buffer the backend may overwrite is
/// donated; its node gives up its data, as it would be freed once the
/// recipe has run anyway.
fn donate(recipe: &Recipe, backend: &dyn Backend, inputs: &mut [ArrayData]) -> Option<usize> {
    if recipe.primitive.is_view() {
        return None;
    }
    let i = recipe.primitive.donor(inputs, &recipe.outputs)?;
    let array = &recipe.inputs[i];
    // The node's handle on the buffer and ours in `inputs`, nothing else.
    let unshared = array.is_sole_handle() && Arc::strong_count(&inputs[i].storage) == 2;
    if !unshared || !backend.can_overwrite(&inputs[i].storage) {
        return None;
    }
    array.take_data()?;
    if Arc::strong_count(&inputs[i].storage) == 1 {
        Some(i)
    } else {
        array.restore_data(inputs[i].clone());
        None
    }
}

/// The data of input `a` on the recipe's device. Data from another device is
/// moved once: the input then keeps the moved copy, so later consumers on
/// that device find it there. A single host element feeding a primitive that
/// takes scalars by value (a Python scalar in `x * 2`) is not moved at all.
fn input_on(recipe: &Recipe, a: &Array) -> Result<ArrayData> {
    let data = a.ready_data().expect("inputs are computed before their consumers");
    let device = recipe.stream.device;
    if data.storage.device() == device {
        return Ok(data);
    }
    if recipe.primitive.reads_host_scalars() && data.storage.device() == Device::CPU && data.layout.reads_one_element()
    {
        return Ok(data);
    }
    let (storage, layout) = dispatcher::ensure_on(recipe.stream, &data.storage, &data.layout)?;
    let moved = ArrayData { storage, layout };
    a.replace_data(moved.clone());
    Ok(moved)
}

/// Refuses outputs larger than the device's memory before allocating them
/// (an allocation failure would otherwise abort the process; GPU
/// allocations are checked again by the device allocator). The memory
/// limit is a guideline, as MLX's: past it the CPU's cache of freed buffers
/// is emptied first, and the evaluation goes on.
fn check_allocation(recipe: &Recipe) -> Result<()> {
    let device = recipe.stream.device;
    let capacity = match device.kind {
        #[cfg(feature = "cuda")]
        crate::device::DeviceType::Gpu => crate::backend::cuda::device_memory().unwrap_or(0),
        _ => crate::memory::physical_memory(),
    };
    let mut total = 0usize;
    for out in &recipe.outputs {
        let bytes = checked_nbytes(&out.shape, out.dtype.size());
        if bytes.is_none_or(|b| b > capacity) {
            return Err(Error::OutOfMemory {
                op: recipe.primitive.name(),
                msg: format!(
                    "Attempting to allocate {} bytes which is greater than the maximum allowed buffer size of {capacity} bytes.",
                    bytes.map_or("more than usize::MAX".to_string(), |b| b.to_string())
                ),
            });
        }
        total += bytes.unwrap_or(0);
    }
    let limit = crate::memory::memory_limit(capacity);
    if device == Device::CPU && crate::memory::limit_is_set() && crate::memory::get_active_memory() + total > limit {
        crate::backend::cpu::cache::clear();
    }
    Ok(())
}
