//! Fused elementwise programs on the host (`compile`'s fusion). Outputs of
//! some size with rows that are not short run tile by tile
//! ([`super::fused_tiles`]); the rest, and fused reductions, run here: the
//! output is cut into blocks of about [`BLOCK`] elements, and each block runs the
//! whole program with its intermediates in the core's cache before the
//! next block starts, so the data passes through memory once however long
//! the chain. Each step calls the same element functions as the eager
//! kernels, so a fused result is bit for bit the unfused one. Blocks run on
//! rayon's threads for large outputs; each thread allocates its step
//! buffers once, and a step whose value is only an output writes straight
//! into the output.

use super::elementwise;
use super::fused_tiles::Tiled;
use super::out::Out;
use super::reduce;
use super::storage::{output_vec, CpuBuffer, CpuElement, CpuStorage};
use super::strided::{SendPtr, PARALLEL_THRESHOLD};
use crate::backend::fused::{FusedOp, FusedProgram, Operand};
use crate::backend::ReduceOp;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::{collapse_dims_of, numel, Layout};
use rayon::prelude::*;

/// Elements per block: the live intermediates of a block stay in a core's
/// L2 cache. Measured on a 2-core Zen 4 (compiled GELU over 131M float32):
/// 16384 ran 5–15% faster than 8192 and 4096, and 20% faster than 1024, as
/// the fixed cost of a block's steps outweighs L1 residency below it.
const BLOCK: usize = 16384;

/// Runs of consecutive blocks (or tiles) per thread ([`for_each_run`]).
const RUNS_PER_THREAD: usize = 8;

/// How the (collapsed) output shape is cut into blocks: runs of `per`
/// indices along `axis`, each with every index of the axes after it (a
/// rectangular piece, contiguous in the output), for every index of the
/// axes before it.
struct Blocks {
    shape: Vec<usize>,
    axis: usize,
    /// Elements in one index of `axis` (the product of the later extents).
    inner: usize,
    per: usize,
    /// Blocks along `axis` for one index of the axes before it.
    along: usize,
    count: usize,
}

impl Blocks {
    fn new(shape: &[usize]) -> Blocks {
        // The first axis from which on the trailing extents fit one block.
        let (mut k, mut inner) = (shape.len(), 1usize);
        while k > 1 && inner * shape[k - 1] <= BLOCK {
            inner *= shape[k - 1];
            k -= 1;
        }
        let axis = k - 1;
        let per = (BLOCK / inner).clamp(1, shape[axis].max(1));
        let along = shape[axis].div_ceil(per);
        let count = numel(&shape[..axis]) * along;
        Blocks { shape: shape.to_vec(), axis, inner, per, along, count }
    }

    /// Block `b`: the flat index over the axes before `axis`, the first
    /// index along `axis` and how many indices it takes.
    fn block(&self, b: usize) -> (usize, usize, usize) {
        let (outer, j) = (b / self.along, b % self.along);
        let start = j * self.per;
        (outer, start, self.per.min(self.shape[self.axis] - start))
    }
}

/// An output computed over a donated input's buffer: output `output` is
/// written at `bytes`, the buffer of an input row-contiguous over the
/// output's shape, which the program reads beside it. Each block (or tile)
/// reads its part of that input before its outputs are written, and writes
/// only its own part, so the donated output never takes a direct write (a
/// step's kernel would write memory its operand reads).
#[derive(Clone, Copy)]
pub struct Donated {
    /// The output computed over the buffer.
    pub output: usize,
    /// The first element the donor's layout reads.
    pub bytes: SendPtr<u8>,
}

/// Runs `program` over `inputs` (layouts broadcast to `shape`); one
/// row-contiguous storage per output, but `None` for the output computed
/// over the `donated` buffer.
///
/// # Safety
/// A `donated` pointer must point to `numel(shape)` elements of its
/// output's dtype, the buffer of an input read through a row-contiguous
/// layout of `shape`, which nothing but this call reads or writes.
pub unsafe fn fused(
    program: &FusedProgram,
    inputs: &[(&CpuBuffer, Layout)],
    shape: &[usize],
    donated: Option<Donated>,
) -> Result<Vec<Option<CpuStorage>>> {
    let n = numel(shape);
    let dtypes: Vec<Dtype> = program.outputs.iter().map(|&o| program.steps[o].dtype).collect();
    let strides: Vec<&[isize]> = inputs.iter().map(|(_, l)| l.strides.as_slice()).collect();
    let (dims, strides) = collapse_dims_of(shape, &strides);
    let mut work = |outs: &[SendPtr<u8>]| -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let direct = |k: usize| donated.is_none_or(|d| d.output != k);
        if let Some(tiled) = Tiled::new(program, inputs, &dims, &strides, direct)? {
            // SAFETY: each output holds `n` elements of its dtype, written
            // by this call alone (a donated one read first, tile by tile).
            return unsafe { tiled.run(outs) };
        }
        let blocks = Blocks::new(&dims);
        let plan = Plan::new(program, direct);
        for_each_run(n, blocks.count, |first, end| {
            let mut state = BlockState::new(&plan, &strides, &blocks)?;
            (first..end).try_for_each(|b| state.run(program, &plan, inputs, &strides, &blocks, b, outs))
        })
    };
    with_outputs(&dtypes, n, donated, &mut Vec::new(), &mut work)
}

/// Runs `run(first, end)` over runs of consecutive pieces (blocks or tiles)
/// that cover `0..count`, each run on one thread, in parallel when the
/// output's `n` elements are many: enough runs for rayon to even out the
/// threads, few enough that each walks memory in long sequences.
pub(super) fn for_each_run(n: usize, count: usize, run: impl Fn(usize, usize) -> Result<()> + Sync) -> Result<()> {
    if n >= PARALLEL_THRESHOLD && count > 1 {
        let per = count.div_ceil(rayon::current_num_threads() * RUNS_PER_THREAD);
        (0..count.div_ceil(per)).into_par_iter().try_for_each(|r| run(r * per, ((r + 1) * per).min(count)))
    } else {
        run(0, count)
    }
}

/// The element offset of flat (row-major) index `index` over `dims` under
/// `strides`, from `offset`.
pub(super) fn offset_of_index(offset: isize, dims: &[usize], strides: &[isize], index: usize) -> isize {
    let (mut at, mut rest) = (offset, index);
    for d in (0..dims.len()).rev() {
        at += (rest % dims[d]) as isize * strides[d];
        rest /= dims[d];
    }
    at
}

/// Allocates one output of each dtype (but the `donated` one, already
/// there) and runs `work` with pointers to their bytes.
fn with_outputs(
    dtypes: &[Dtype],
    n: usize,
    donated: Option<Donated>,
    ptrs: &mut Vec<SendPtr<u8>>,
    work: &mut dyn FnMut(&[SendPtr<u8>]) -> Result<()>,
) -> Result<Vec<Option<CpuStorage>>> {
    let Some((&first, rest)) = dtypes.split_first() else {
        work(ptrs)?;
        return Ok(Vec::new());
    };
    if let Some(d) = donated.filter(|d| d.output == ptrs.len()) {
        ptrs.push(d.bytes);
        let mut out = vec![None];
        out.extend(with_outputs(rest, n, donated, ptrs, work)?);
        return Ok(out);
    }
    let mut later = None;
    let storage = CpuStorage::filled_with(first, n, |bytes| {
        ptrs.push(SendPtr(bytes.as_mut_ptr()));
        later = Some(with_outputs(rest, n, donated, ptrs, work)?);
        Ok(())
    })?;
    let mut out = vec![Some(storage)];
    out.extend(later.expect("the fill ran"));
    Ok(out)
}

/// The bytes of a host buffer.
pub(super) fn bytes_of(b: &CpuBuffer) -> &[u8] {
    // SAFETY: every element type is plain data without padding (bool is one
    // byte holding 0 or 1); the slice covers exactly the buffer's elements.
    crate::with_buffer!(b, v => unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(&v[..])) })
}

/// Where each step of a program keeps its value within a block, decided
/// once per run: steps share a buffer (a slot) when their lifetimes do not
/// overlap, so a long chain keeps a few buffers hot, and a step whose value
/// is only one output (read by no later step) writes into the output.
pub(super) struct Plan {
    /// For each step: its slot, or `None` when it writes an output directly.
    pub(super) slot_of: Vec<Option<usize>>,
    /// The dtype of each slot.
    pub(super) slot_dtypes: Vec<Dtype>,
    /// For each step, the output it writes directly, if any.
    pub(super) direct: Vec<Option<usize>>,
}

impl Plan {
    /// The plan of `program`; output `k` is written directly when
    /// `direct_output(k)` allows and its step qualifies.
    pub(super) fn new(program: &FusedProgram, direct_output: impl Fn(usize) -> bool) -> Plan {
        let steps = &program.steps;
        let mut read_later = vec![false; steps.len()];
        for step in steps {
            for a in &step.args {
                if let Operand::Step(j) = *a {
                    read_later[j] = true;
                }
            }
        }
        let mut direct = vec![None; steps.len()];
        for (k, &o) in program.outputs.iter().enumerate() {
            let once = program.outputs.iter().filter(|&&p| p == o).count() == 1;
            // Bool outputs are filled through bytes that may hold other
            // values before the fill; they go through a step buffer.
            if direct_output(k) && once && !read_later[o] && steps[o].dtype != Dtype::Bool {
                direct[o] = Some(k);
            }
        }
        let last = program.last_uses();
        let (mut slot_of, mut slot_dtypes, mut free) = (vec![None; steps.len()], Vec::new(), Vec::<usize>::new());
        for (i, step) in steps.iter().enumerate() {
            if direct[i].is_none() {
                let reuse = free.iter().position(|&s| slot_dtypes[s] == step.dtype);
                let slot = match reuse {
                    Some(p) => free.swap_remove(p),
                    None => {
                        slot_dtypes.push(step.dtype);
                        slot_dtypes.len() - 1
                    }
                };
                slot_of[i] = Some(slot);
            }
            // Operands whose last reader is this step free their slots for
            // the steps after it (not for this one: a kernel's output never
            // aliases its inputs).
            for a in &step.args {
                if let Operand::Step(j) = *a {
                    if last[j] == i {
                        if let Some(s) = slot_of[j] {
                            if !free.contains(&s) {
                                free.push(s);
                            }
                        }
                    }
                }
            }
        }
        Plan { slot_of, slot_dtypes, direct }
    }
}

/// One thread's buffers for running blocks: the inputs' views of the
/// current block and the slots.
struct BlockState {
    views: Vec<Layout>,
    slots: Slots,
}

impl BlockState {
    fn new(plan: &Plan, strides: &[Vec<isize>], blocks: &Blocks) -> Result<BlockState> {
        let axis = blocks.axis;
        let mut shape = vec![blocks.per];
        shape.extend_from_slice(&blocks.shape[axis + 1..]);
        let views =
            strides.iter().map(|st| Layout { shape: shape.clone(), strides: st[axis..].to_vec(), offset: 0 }).collect();
        let slots = Slots::new(&plan.slot_dtypes, &shape, true)?;
        Ok(BlockState { views, slots })
    }

    /// Runs the whole program on block `b` and writes its outputs.
    fn run(
        &mut self,
        program: &FusedProgram,
        plan: &Plan,
        inputs: &[(&CpuBuffer, Layout)],
        strides: &[Vec<isize>],
        blocks: &Blocks,
        b: usize,
        outs: &[SendPtr<u8>],
    ) -> Result<()> {
        let (outer, start, m) = blocks.block(b);
        let axis = blocks.axis;
        for ((view, (_, l)), st) in self.views.iter_mut().zip(inputs).zip(strides) {
            let offset = offset_of_index(l.offset as isize, &blocks.shape[..axis], &st[..axis], outer);
            view.offset = (offset + start as isize * view.strides[0]) as usize;
            view.shape[0] = m;
        }
        self.slots.set_rows(m);
        let len = m * blocks.inner;
        let first = (outer * blocks.shape[axis] + start) * blocks.inner;
        let direct = |i: usize| {
            plan.direct[i].map(|k| {
                let dtype = program.steps[i].dtype;
                // SAFETY: output `k` holds `n` elements of `dtype` (not bool),
                // valid whatever their bits; this block's elements `first ..
                // first + len` are written by this block alone (blocks
                // partition the output).
                unsafe { Out::from_raw(dtype, outs[k].get().add(first * dtype.size()), len) }
            })
        };
        run_steps(program, plan, inputs, &self.views, &mut self.slots, len, &direct)?;
        for (k, (&o, out)) in program.outputs.iter().zip(outs).enumerate() {
            if plan.direct[o] == Some(k) {
                continue;
            }
            let size = program.steps[o].dtype.size();
            let bytes =
                plan.slot_of[o].and_then(|slot| self.slots.bytes(slot, len)).ok_or_else(|| missing_value(program))?;
            // SAFETY: as for `direct`: this block's elements of output `k`.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.get().add(first * size), bytes.len()) };
        }
        Ok(())
    }
}
/// The step buffers of one thread (or one piece): one per slot of a
/// [`Plan`], each holding a block, read through a dense layout of the
/// block's shape; recycled when dropped.
///
/// A slot's elements start on a cache line, at a page offset of its own
/// (`SLOT_SKEW` apart): a loop that reads one buffer and writes another
/// whose addresses agree in their low 12 bits but for a few bytes stalls
/// each load behind the stores (4K aliasing), which made a block of
/// consecutively allocated buffers run at half speed.
struct Slots {
    buffers: Vec<Option<CpuBuffer>>,
    layouts: Vec<Layout>,
}

/// The distance between the page offsets of consecutive slots (and of the
/// first slot from the page start): 17 cache lines.
const SLOT_SKEW: usize = 17 * 64;

impl Slots {
    /// Slots for blocks of `block_shape`, skewed as above when `skewed`
    /// (blocks run over and over), or exactly a block long (a reduction's
    /// piece, whose value is then taken without a copy).
    fn new(dtypes: &[Dtype], block_shape: &[usize], skewed: bool) -> Result<Slots> {
        let capacity = numel(block_shape);
        let (mut buffers, mut layouts) = (Vec::with_capacity(dtypes.len()), Vec::with_capacity(dtypes.len()));
        for (k, &dtype) in dtypes.iter().enumerate() {
            let size = dtype.size();
            let pad = if skewed { 4096 / size } else { 0 };
            let buffer =
                crate::with_element_type!(dtype, T => CpuElement::into_buffer(output_vec::<T>(capacity + pad)?));
            let address = bytes_of(&buffer).as_ptr() as usize;
            let target = (SLOT_SKEW * (k + 1)) % 4096;
            let start = if skewed { ((target + 4096 - address % 4096) % 4096) / size } else { 0 };
            let mut layout = Layout::contiguous(block_shape);
            layout.offset = start;
            buffers.push(Some(buffer));
            layouts.push(layout);
        }
        Ok(Slots { buffers, layouts })
    }

    /// Sets the extent of the blocks' first axis (the last block may be short).
    fn set_rows(&mut self, m: usize) {
        for layout in &mut self.layouts {
            layout.shape[0] = m;
        }
    }

    /// The bytes of slot `s`'s first `len` elements.
    fn bytes(&self, s: usize, len: usize) -> Option<&[u8]> {
        let buffer = self.buffers[s].as_ref()?;
        let size = super::buffer_dtype(buffer).size();
        bytes_of(buffer).get(self.layouts[s].offset * size..(self.layouts[s].offset + len) * size)
    }

    /// The buffer of an unskewed slot `s`, taken out of the slot: exactly
    /// its block's elements (`None` if the slot is empty or skewed).
    fn take(&mut self, s: usize) -> Option<CpuBuffer> {
        if self.layouts[s].offset != 0 {
            return None;
        }
        self.buffers[s].take()
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        for buffer in self.buffers.drain(..).flatten() {
            super::cache::recycle(buffer);
        }
    }
}

/// The error for a program whose steps read a value no step kept (a
/// malformed program; the builder never makes one).
pub(super) fn missing_value(program: &FusedProgram) -> Error {
    Error::invalid("compile", format!("a fused program reads a value it does not keep: {}", program.describe()))
}

/// Runs the program's steps over `len` elements whose inputs are read
/// through `views`: each step writes its slot (read by later steps through
/// the slot's layout), or the output `direct` gives for it.
#[allow(clippy::too_many_arguments)]
fn run_steps<'o>(
    program: &FusedProgram,
    plan: &Plan,
    inputs: &[(&CpuBuffer, Layout)],
    views: &[Layout],
    slots: &mut Slots,
    len: usize,
    direct: &dyn Fn(usize) -> Option<Out<'o>>,
) -> Result<()> {
    for i in 0..program.steps.len() {
        // The step's own buffer is taken out while it runs, so its operands
        // (never in the same slot) can be read beside it.
        let mut target = match plan.slot_of[i] {
            Some(s) => Some((s, slots.buffers[s].take().ok_or_else(|| missing_value(program))?)),
            None => None,
        };
        let result = run_step(program, plan, i, inputs, views, slots, len, &mut target, direct);
        if let Some((s, buffer)) = target {
            slots.buffers[s] = Some(buffer);
        }
        result?;
    }
    Ok(())
}

/// Step `i` of [`run_steps`], writing `target` (its slot's buffer, taken
/// out of `slots`) or its direct output.
#[allow(clippy::too_many_arguments)]
fn run_step<'o>(
    program: &FusedProgram,
    plan: &Plan,
    i: usize,
    inputs: &[(&CpuBuffer, Layout)],
    views: &[Layout],
    slots: &Slots,
    len: usize,
    target: &mut Option<(usize, CpuBuffer)>,
    direct: &dyn Fn(usize) -> Option<Out<'o>>,
) -> Result<()> {
    let step = &program.steps[i];
    let out = match (target, direct(i)) {
        (_, Some(out)) => out,
        (Some((s, buffer)), None) => {
            Out::part_of(buffer, slots.layouts[*s].offset, len).ok_or_else(|| missing_value(program))?
        }
        (None, None) => return Err(missing_value(program)),
    };
    let arg = |k: usize| -> Result<(&CpuBuffer, &Layout)> {
        match step.args.get(k) {
            Some(&Operand::Input(j)) => Ok((inputs[j].0, &views[j])),
            Some(&Operand::Step(j)) => plan.slot_of[j]
                .and_then(|s| slots.buffers[s].as_ref().map(|b| (b, &slots.layouts[s])))
                .ok_or_else(|| missing_value(program)),
            None => Err(missing_value(program)),
        }
    };
    match step.op {
        FusedOp::Unary(op) => {
            let (x, lx) = arg(0)?;
            elementwise::unary_into(op, x, lx, out)
        }
        FusedOp::Binary(op) => {
            let ((a, la), (b, lb)) = (arg(0)?, arg(1)?);
            elementwise::binary_into(op, a, la, b, lb, out)
        }
        FusedOp::Select => {
            let ((c, lc), (x, lx), (y, ly)) = (arg(0)?, arg(1)?, arg(2)?);
            let CpuBuffer::Bool(cond) = c else {
                return Err(Error::invalid("where", "the condition of a fused where must be bool"));
            };
            elementwise::select_into(cond, lc, x, lx, y, ly, out)
        }
        FusedOp::AsType => {
            let (x, lx) = arg(0)?;
            elementwise::cast_into(x, lx, out)
        }
    }
}

/// The one stride that walks `dims` (with `strides`) in row-major order,
/// if there is one (extents of 1 are skipped; all-broadcast dims give 0).
fn run_stride(dims: &[usize], strides: &[isize]) -> Option<isize> {
    if dims.contains(&0) {
        return Some(0); // nothing is read
    }
    let kept: Vec<(usize, isize)> =
        dims.iter().copied().zip(strides.iter().copied()).filter(|&(d, _)| d != 1).collect();
    let merges = kept.windows(2).all(|w| w[0].1 == w[1].1 * w[1].0 as isize);
    merges.then(|| kept.last().map_or(0, |&(_, s)| s))
}

/// The fewest columns per row for [`fused_reduce`] to compute a reduction
/// over leading or middle axes piece by piece (each piece runs the whole
/// program, so narrow rows are faster fused-then-reduced).
const MIN_COLUMN_RUN: usize = 256;

/// Runs `program` (one output, of `shape`) and reduces its values with `op`
/// over `axes` into `out_dtype` without writing them out, computing the
/// values in the pieces the eager reduction folds, so the result is the
/// same bits as `fused` then `reduce`: rows of trailing axes in its blocks,
/// or, for a block of leading or middle axes, rows of the columns that
/// follow them (folded in order, as its column path does). `None` when
/// this path does not apply: the axes are not one block, the columns are
/// fewer than [`MIN_COLUMN_RUN`], or an input does not read the run of
/// values a piece covers as one strided run (the caller then does the pair).
pub fn fused_reduce(
    program: &FusedProgram,
    inputs: &[(&CpuBuffer, Layout)],
    shape: &[usize],
    op: ReduceOp,
    axes: &[usize],
    out_dtype: Dtype,
) -> Result<Option<CpuBuffer>> {
    let is_block = axes.windows(2).all(|w| w[1] == w[0] + 1);
    if !is_block || program.outputs.len() != 1 {
        return Ok(None);
    }
    let (first, last) = match (axes.first(), axes.last()) {
        (Some(&a), Some(&b)) => (a, b + 1),
        _ => (shape.len(), shape.len()),
    };
    let trailing = last == shape.len();
    // A piece is a run over `shape[lead..]` at one index of `shape[..lead]`.
    let lead = if trailing { first } else { last };
    if !trailing && numel(&shape[last..]) < MIN_COLUMN_RUN {
        return Ok(None);
    }
    let Some(run_strides) =
        inputs.iter().map(|(_, l)| run_stride(&shape[lead..], &l.strides[lead..])).collect::<Option<Vec<isize>>>()
    else {
        return Ok(None);
    };
    let value_dtype = program.steps[program.outputs[0]].dtype;
    let work = reduce::work_dtype(op, value_dtype, out_dtype);
    let plan = Plan::new(program, |_| false);
    let value_slot = plan.slot_of[program.outputs[0]].ok_or_else(|| missing_value(program))?;
    // The `len` values from position `j0` of the run at index `row` of `shape[..lead]`.
    let piece = |row: usize, j0: usize, len: usize| -> Result<CpuBuffer> {
        let views: Vec<Layout> = inputs
            .iter()
            .zip(&run_strides)
            .map(|((_, l), &s)| {
                let offset =
                    offset_of_index(l.offset as isize + j0 as isize * s, &shape[..lead], &l.strides[..lead], row);
                Layout { shape: vec![len], strides: vec![s], offset: offset as usize }
            })
            .collect();
        let mut slots = Slots::new(&plan.slot_dtypes, &[len], false)?;
        run_steps(program, &plan, inputs, &views, &mut slots, len, &|_| None)?;
        let value = slots.take(value_slot).ok_or_else(|| missing_value(program))?;
        if work == value_dtype {
            return Ok(value);
        }
        let cast = elementwise::cast_buffer(&value, &Layout::contiguous(&[len]), work)?;
        super::cache::recycle(value);
        Ok(cast)
    };
    let (outer, inner) = (numel(&shape[..first]), numel(&shape[last..]));
    let reduced = if trailing {
        reduce::reduce_pieces(op, work, outer, numel(&shape[first..]), &piece)?
    } else {
        let r = numel(&shape[first..last]);
        let column_piece = |o: usize, i: usize, j0: usize, len: usize| piece(o * r + i, j0, len);
        reduce::reduce_column_pieces(op, work, outer, r, inner, &column_piece)?
    };
    if work == out_dtype {
        return Ok(Some(reduced));
    }
    Ok(Some(elementwise::cast_buffer(&reduced, &Layout::contiguous(&[outer * inner]), out_dtype)?))
}
