//! Fused elementwise programs on the host (`compile`'s fusion): the output
//! is cut into blocks of about [`BLOCK`] elements, and each block runs the
//! whole program with its intermediates in cache before the next block
//! starts, so the data passes through memory once however long the chain.
//! Each step calls the same element functions as the eager kernels, so a
//! fused result is bit for bit the unfused one. Blocks run on rayon's
//! threads for large outputs.

use super::elementwise;
use super::reduce;
use super::storage::{CpuBuffer, CpuStorage};
use super::strided::{SendPtr, PARALLEL_THRESHOLD};
use crate::backend::fused::{FusedOp, FusedProgram, Operand};
use crate::backend::ReduceOp;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::{collapse_dims_of, numel, Layout};
use rayon::prelude::*;

/// Elements per block: a few intermediates of this many elements stay in
/// the core's L2 cache, and float32 ones fit the per-thread buffer pool.
const BLOCK: usize = 8192;

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

/// Runs `program` over `inputs` (layouts broadcast to `shape`); one
/// row-contiguous storage per output.
pub fn fused(program: &FusedProgram, inputs: &[(&CpuBuffer, Layout)], shape: &[usize]) -> Result<Vec<CpuStorage>> {
    let n = numel(shape);
    let dtypes: Vec<Dtype> = program.outputs.iter().map(|&o| program.steps[o].dtype).collect();
    let strides: Vec<&[isize]> = inputs.iter().map(|(_, l)| l.strides.as_slice()).collect();
    let (dims, strides) = collapse_dims_of(shape, &strides);
    let mut work = |outs: &[SendPtr<u8>]| -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let blocks = Blocks::new(&dims);
        let last = program.last_uses();
        let run = |b: usize| run_block(program, &last, inputs, &strides, &blocks, b, outs);
        if n >= PARALLEL_THRESHOLD && blocks.count > 1 {
            (0..blocks.count).into_par_iter().try_for_each(run)
        } else {
            (0..blocks.count).try_for_each(run)
        }
    };
    with_outputs(&dtypes, n, &mut Vec::new(), &mut work)
}

/// Allocates one output of each dtype and runs `work` with pointers to
/// their bytes.
fn with_outputs(
    dtypes: &[Dtype],
    n: usize,
    ptrs: &mut Vec<SendPtr<u8>>,
    work: &mut dyn FnMut(&[SendPtr<u8>]) -> Result<()>,
) -> Result<Vec<CpuStorage>> {
    let Some((&first, rest)) = dtypes.split_first() else {
        work(ptrs)?;
        return Ok(Vec::new());
    };
    let mut later = None;
    let storage = CpuStorage::filled_with(first, n, |bytes| {
        ptrs.push(SendPtr(bytes.as_mut_ptr()));
        later = Some(with_outputs(rest, n, ptrs, work)?);
        Ok(())
    })?;
    let mut out = vec![storage];
    out.extend(later.expect("the fill ran"));
    Ok(out)
}

/// The bytes of a host buffer.
fn bytes_of(b: &CpuBuffer) -> &[u8] {
    // SAFETY: every element type is plain data without padding (bool is one
    // byte holding 0 or 1); the slice covers exactly the buffer's elements.
    crate::with_buffer!(b, v => unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(&v[..])) })
}

/// Runs the whole program on block `b` and writes its outputs.
fn run_block(
    program: &FusedProgram,
    last: &[usize],
    inputs: &[(&CpuBuffer, Layout)],
    strides: &[Vec<isize>],
    blocks: &Blocks,
    b: usize,
    outs: &[SendPtr<u8>],
) -> Result<()> {
    let (outer, start, m) = blocks.block(b);
    let axis = blocks.axis;
    let mut shape = vec![m];
    shape.extend_from_slice(&blocks.shape[axis + 1..]);
    let views: Vec<Layout> = inputs
        .iter()
        .zip(strides)
        .map(|((_, l), st)| {
            let (mut offset, mut rest) = (l.offset as isize + start as isize * st[axis], outer);
            for d in (0..axis).rev() {
                offset += (rest % blocks.shape[d]) as isize * st[d];
                rest /= blocks.shape[d];
            }
            let mut block_strides = vec![st[axis]];
            block_strides.extend_from_slice(&st[axis + 1..]);
            Layout { shape: shape.clone(), strides: block_strides, offset: offset as usize }
        })
        .collect();
    let values = run_steps(program, last, inputs, &views, &shape)?;
    let first = (outer * blocks.shape[axis] + start) * blocks.inner;
    for (&o, out) in program.outputs.iter().zip(outs) {
        let bytes = bytes_of(values[o].as_ref().expect("outputs are kept"));
        let size = program.steps[o].dtype.size();
        // SAFETY: the output holds `n * size` bytes and this block's
        // elements `first .. first + bytes.len() / size` are written by
        // this block alone (blocks partition the output).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.get().add(first * size), bytes.len()) };
    }
    for done in values.into_iter().flatten() {
        super::cache::recycle(done);
    }
    Ok(())
}

/// Runs the program's steps over one block of `shape` whose inputs are read
/// through `views`; each step's buffer is recycled once its last reader has
/// run, so the outputs' values are the ones left.
fn run_steps(
    program: &FusedProgram,
    last: &[usize],
    inputs: &[(&CpuBuffer, Layout)],
    views: &[Layout],
    shape: &[usize],
) -> Result<Vec<Option<CpuBuffer>>> {
    let dense = Layout::contiguous(shape);
    let mut values: Vec<Option<CpuBuffer>> = vec![None; program.steps.len()];
    for (i, step) in program.steps.iter().enumerate() {
        let value = {
            let args: Vec<(&CpuBuffer, &Layout)> = step
                .args
                .iter()
                .map(|&a| match a {
                    Operand::Input(j) => (inputs[j].0, &views[j]),
                    Operand::Step(j) => (values[j].as_ref().expect("operands are computed first"), &dense),
                })
                .collect();
            match step.op {
                FusedOp::Unary(op) => elementwise::unary(op, args[0].0, args[0].1)?,
                FusedOp::Binary(op) => elementwise::binary(op, args[0].0, args[0].1, args[1].0, args[1].1)?,
                FusedOp::Select => {
                    let CpuBuffer::Bool(cond) = args[0].0 else {
                        return Err(Error::invalid("where", "the condition of a fused where must be bool"));
                    };
                    elementwise::select(cond, args[0].1, args[1].0, args[1].1, args[2].0, args[2].1)?
                }
                FusedOp::AsType => elementwise::cast_buffer(args[0].0, args[0].1, step.dtype)?,
            }
        };
        values[i] = Some(value);
        for a in &step.args {
            if let Operand::Step(j) = *a {
                if last[j] == i {
                    if let Some(done) = values[j].take() {
                        super::cache::recycle(done);
                    }
                }
            }
        }
    }
    Ok(values)
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
    let last_uses = program.last_uses();
    // The `len` values from position `j0` of the run at index `row` of `shape[..lead]`.
    let piece = |row: usize, j0: usize, len: usize| -> Result<CpuBuffer> {
        let views: Vec<Layout> = inputs
            .iter()
            .zip(&run_strides)
            .map(|((_, l), &s)| {
                let (mut offset, mut rest) = (l.offset as isize + j0 as isize * s, row);
                for d in (0..lead).rev() {
                    offset += (rest % shape[d]) as isize * l.strides[d];
                    rest /= shape[d];
                }
                Layout { shape: vec![len], strides: vec![s], offset: offset as usize }
            })
            .collect();
        let mut values = run_steps(program, &last_uses, inputs, &views, &[len])?;
        let value = values[program.outputs[0]].take().expect("outputs are kept");
        for unread in values.into_iter().flatten() {
            super::cache::recycle(unread);
        }
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
