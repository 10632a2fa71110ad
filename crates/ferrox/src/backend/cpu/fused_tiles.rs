//! The fused evaluator's tiled path: the output is walked in tiles of
//! [`TILE`] elements within the rows of its last (collapsed) axis, and each
//! tile runs the whole program before the next one starts. Intermediates
//! live in a few buffers of one tile each, in the core's L1 cache, and the
//! reads of the inputs and writes of the outputs interleave with the
//! arithmetic in short stretches, as in one generated loop. Each step's
//! kernel is resolved once per call ([`RunKernel`]: the eager kernels'
//! element functions over contiguous runs, so results agree bit for bit),
//! so a step costs one indirect call per tile.
//!
//! An input is read in place where its last axis has stride 1, from a tile
//! filled once per thread where every element is the same one, and
//! gathered into a tile otherwise.

use super::elementwise::{self, RunKernel};
use super::fused::{bytes_of, for_each_run, missing_value, offset_of_index, Plan};
use super::scalar_divide::reciprocal_run_kernel;
use super::storage::CpuBuffer;
use super::strided::SendPtr;
use crate::backend::fused::{FusedOp, FusedProgram, Operand};
use crate::backend::BinaryOp;
use crate::error::{Error, Result};
use crate::shape::{numel, Layout};

/// Elements per tile: a tile of the widest elements (8 bytes) is 2 KiB, so
/// a program's live buffers stay in L1. Measured on a 2-core Zen 4 VM
/// (compiled GELU over 131M float32, interleaved with eager in one
/// process): 256 ran 67-82 ms, 512 81-87 ms, 128 80-83 ms; prefetching
/// the inputs and outputs a few tiles ahead gained nothing.
const TILE: usize = 256;

/// The shortest last axis the tiled path takes: shorter rows would make
/// tiles too short to repay a kernel call each (the block path runs them).
const MIN_ROW: usize = 64;

/// The fewest elements the tiled path takes: below, resolving the kernels
/// costs more than it saves.
const MIN_ELEMENTS: usize = 8 * TILE;

/// Bytes between the starts of consecutive tile buffers: a tile of 8-byte
/// elements and 17 cache lines, so that buffers sit at page offsets 17
/// lines apart (a load from one right after a store to another at the same
/// page offset stalls, 4K aliasing).
const REGION: usize = TILE * 8 + 17 * 64;

/// A cache line of a thread's tile buffers.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// How each tile of an input is found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// Read in place: the input's last axis has stride 1.
    InPlace,
    /// Every element is the same one: a tile buffer filled once.
    Constant,
    /// Copied into a tile buffer along the last axis's stride.
    Gathered,
}

/// One input of the program as the tiles read it.
struct TileInput<'a> {
    buffer: &'a CpuBuffer,
    bytes: &'a [u8],
    size: usize,
    offset: isize,
    /// Element strides over the collapsed dims (the last one included).
    strides: &'a [isize],
    source: Source,
    /// The byte offset of its tile buffer (Constant, Gathered).
    tile: usize,
}

/// Where a step reads an operand.
#[derive(Clone, Copy)]
enum Arg {
    Input(usize),
    /// A tile buffer, by byte offset.
    Buffer(usize),
}

/// Where a step writes.
#[derive(Clone, Copy)]
enum Target {
    /// A tile buffer, by byte offset.
    Buffer(usize),
    /// Output `k`, of elements of `size` bytes.
    Output(usize, usize),
}

struct TileStep {
    kernel: RunKernel,
    args: Vec<Arg>,
    target: Target,
}

/// A program resolved for one call over collapsed `dims`.
pub struct Tiled<'a> {
    inputs: Vec<TileInput<'a>>,
    steps: Vec<TileStep>,
    /// Outputs written from a tile buffer: (buffer offset, output, element size).
    copies: Vec<(usize, usize, usize)>,
    dims: &'a [usize],
    /// Tile buffers per thread.
    buffers: usize,
}

impl<'a> Tiled<'a> {
    /// `program` resolved for `inputs` (laid out over `dims` by `strides`,
    /// from [`crate::shape::collapse_dims_of`]), or `None` where the block
    /// path should run it: too few elements, or a last axis too short.
    /// Output `k` is written by its step directly only if `direct_output(k)`
    /// (else copied from a tile buffer once the tile's steps have run).
    pub fn new(
        program: &FusedProgram,
        inputs: &'a [(&'a CpuBuffer, Layout)],
        dims: &'a [usize],
        strides: &'a [Vec<isize>],
        direct_output: impl Fn(usize) -> bool,
    ) -> Result<Option<Tiled<'a>>> {
        let Some(&inner) = dims.last() else { return Ok(None) };
        if numel(dims) < MIN_ELEMENTS || inner < MIN_ROW {
            return Ok(None);
        }
        let plan = Plan::new(program, direct_output);
        let mut buffers = plan.slot_dtypes.len();
        let mut tile_inputs = Vec::with_capacity(inputs.len());
        for (j, ((buffer, layout), strides)) in inputs.iter().zip(strides).enumerate() {
            let dtype = super::buffer_dtype(buffer);
            if program.inputs.get(j) != Some(&dtype) {
                return Err(Error::invalid("compile", format!("input {j} of a fused program is not {dtype}")));
            }
            let bytes = bytes_of(buffer);
            check_reach(layout.offset, dims, strides, bytes.len() / dtype.size())?;
            let source = match strides.last() {
                _ if strides.iter().all(|&s| s == 0) => Source::Constant,
                Some(1) => Source::InPlace,
                _ => Source::Gathered,
            };
            let tile = if source == Source::InPlace { 0 } else { region(&mut buffers) };
            tile_inputs.push(TileInput {
                buffer,
                bytes,
                size: dtype.size(),
                offset: layout.offset as isize,
                strides,
                source,
                tile,
            });
        }
        let slot_region = |slot: usize| slot * REGION;
        let arg_of = |a: Operand| -> Result<Arg> {
            match a {
                Operand::Input(j) if j < inputs.len() => Ok(Arg::Input(j)),
                Operand::Step(j) => plan
                    .slot_of
                    .get(j)
                    .copied()
                    .flatten()
                    .map(|s| Arg::Buffer(slot_region(s)))
                    .ok_or_else(|| missing_value(program)),
                Operand::Input(_) => Err(missing_value(program)),
            }
        };
        let mut steps = Vec::with_capacity(program.steps.len());
        for (i, step) in program.steps.iter().enumerate() {
            let mut args = step.args.iter().map(|&a| arg_of(a)).collect::<Result<Vec<Arg>>>()?;
            let dtype_of =
                |k: usize| step.args.get(k).map(|&a| program.dtype_of(a)).ok_or_else(|| missing_value(program));
            let kernel = match step.op {
                FusedOp::Unary(op) => elementwise::unary_run_kernel(op, dtype_of(0)?)?,
                FusedOp::Binary(op) => {
                    if dtype_of(1)? != dtype_of(0)? {
                        return Err(Error::invalid(op.name(), "operands differ in dtype"));
                    }
                    let divisor = match args.get(1) {
                        Some(&Arg::Input(j)) if op == BinaryOp::Divide && tile_inputs[j].source == Source::Constant => {
                            reciprocal_run_kernel(inputs[j].0, inputs[j].1.offset)
                        }
                        _ => None,
                    };
                    match divisor {
                        Some(kernel) => {
                            args.truncate(1);
                            kernel
                        }
                        None => elementwise::binary_run_kernel(op, dtype_of(0)?)?,
                    }
                }
                FusedOp::Select => {
                    if dtype_of(0)? != crate::dtype::Dtype::Bool || dtype_of(1)? != dtype_of(2)? {
                        return Err(Error::invalid(
                            "where",
                            "a fused where needs a bool condition and values of one dtype",
                        ));
                    }
                    elementwise::select_run_kernel(dtype_of(1)?)
                }
                FusedOp::AsType => elementwise::cast_run_kernel(dtype_of(0)?, step.dtype),
            };
            if kernel.out_dtype() != step.dtype {
                return Err(Error::invalid(
                    "compile",
                    format!("a kernel producing {} cannot write a {} step", kernel.out_dtype(), step.dtype),
                ));
            }
            let target = match (plan.direct[i], plan.slot_of[i]) {
                (Some(k), _) => Target::Output(k, step.dtype.size()),
                (None, Some(s)) => Target::Buffer(slot_region(s)),
                (None, None) => return Err(missing_value(program)),
            };
            steps.push(TileStep { kernel, args, target });
        }
        let mut copies = Vec::new();
        for (k, &o) in program.outputs.iter().enumerate() {
            if plan.direct[o] != Some(k) {
                let slot = plan.slot_of[o].ok_or_else(|| missing_value(program))?;
                copies.push((slot_region(slot), k, program.steps[o].dtype.size()));
            }
        }
        Ok(Some(Tiled { inputs: tile_inputs, steps, copies, dims, buffers }))
    }

    /// Runs every tile, writing the outputs at `outs` (row-major over the
    /// dims, of the outputs' dtypes).
    ///
    /// # Safety
    /// Each `outs[k]` must point to `numel(dims)` elements of output `k`'s
    /// dtype, valid for that dtype unless the output is bool, that nothing
    /// else accesses while this runs.
    pub unsafe fn run(&self, outs: &[SendPtr<u8>]) -> Result<()> {
        let inner = self.dims[self.dims.len() - 1];
        let per_row = inner.div_ceil(TILE);
        let count = numel(&self.dims[..self.dims.len() - 1]) * per_row;
        for_each_run(numel(self.dims), count, |first, end| {
            let mut state = self.state();
            for t in first..end {
                let (row, col) = (t / per_row, (t % per_row) * TILE);
                // SAFETY: this function's contract; tiles partition the output.
                unsafe { self.tile(&mut state, row, col, TILE.min(inner - col), outs) };
            }
            Ok(())
        })
    }

    /// One thread's tile buffers (zeroed: valid elements of every dtype),
    /// with the constant inputs' tiles filled.
    fn state(&self) -> TileState {
        let mut lines = vec![Line([0; 64]); self.buffers * REGION / 64];
        let base = lines.as_mut_ptr().cast::<u8>();
        for input in self.inputs.iter().filter(|i| i.source == Source::Constant) {
            // SAFETY: the input's tile buffer lies inside `lines`.
            let dst = unsafe { base.add(input.tile) };
            crate::with_buffer!(input.buffer, v => fill_typed(v, input.offset as usize, dst, TILE));
        }
        TileState { lines, pointers: vec![std::ptr::null(); self.inputs.len()] }
    }

    /// Runs the program over the `len` elements of row `row` from column `col`.
    ///
    /// # Safety
    /// As [`Tiled::run`], and no other thread writes this tile's outputs.
    unsafe fn tile(&self, state: &mut TileState, row: usize, col: usize, len: usize, outs: &[SendPtr<u8>]) {
        let base = state.lines.as_mut_ptr().cast::<u8>();
        let last = self.dims.len() - 1;
        for (input, pointer) in self.inputs.iter().zip(&mut state.pointers) {
            *pointer = match input.source {
                Source::Constant => base.add(input.tile),
                Source::InPlace => {
                    let at = row_offset(input, self.dims, row) + col as isize;
                    // In range: `check_reach` bounded every element the layout reads.
                    input.bytes.as_ptr().add(at as usize * input.size)
                }
                Source::Gathered => {
                    let at = row_offset(input, self.dims, row) + col as isize * input.strides[last];
                    let dst = base.add(input.tile);
                    crate::with_buffer!(input.buffer, v => gather_typed(v, at, input.strides[last], dst, len));
                    dst
                }
            };
        }
        let first = row * self.dims[last] + col;
        for step in &self.steps {
            let mut operands = [std::ptr::null::<u8>(); 3];
            for (operand, arg) in operands.iter_mut().zip(&step.args) {
                *operand = match *arg {
                    Arg::Input(j) => state.pointers[j],
                    Arg::Buffer(at) => base.add(at),
                };
            }
            let out = match step.target {
                Target::Buffer(at) => base.add(at),
                Target::Output(k, size) => outs[k].get().add(first * size),
            };
            // SAFETY: every operand points to `len` valid elements of its
            // dtype (inputs in range, buffers zeroed or written by earlier
            // steps); the plan never gives a step the buffer of an operand.
            step.kernel.run(&operands[..step.args.len()], out, len);
        }
        for &(at, k, size) in &self.copies {
            std::ptr::copy_nonoverlapping(base.add(at), outs[k].get().add(first * size), len * size);
        }
    }
}

/// One thread's tile buffers and the inputs' tile pointers.
struct TileState {
    lines: Vec<Line>,
    pointers: Vec<*const u8>,
}

/// The byte offset of the next tile buffer, counting it.
fn region(buffers: &mut usize) -> usize {
    *buffers += 1;
    (*buffers - 1) * REGION
}

/// The element offset of the first element of row `row` (a flat index over
/// all dims but the last) of `input`.
fn row_offset(input: &TileInput, dims: &[usize], row: usize) -> isize {
    let last = dims.len() - 1;
    offset_of_index(input.offset, &dims[..last], &input.strides[..last], row)
}

/// An error unless every element `offset` and `strides` reach over `dims`
/// lies within a buffer of `len` elements (the tiles read inputs through
/// pointers).
fn check_reach(offset: usize, dims: &[usize], strides: &[isize], len: usize) -> Result<()> {
    let (mut low, mut high) = (offset as isize, offset as isize);
    for (&d, &s) in dims.iter().zip(strides) {
        let span = (d as isize - 1) * s;
        if span < 0 {
            low += span;
        } else {
            high += span;
        }
    }
    if low < 0 || high >= len as isize {
        return Err(Error::invalid("compile", "a fused input's layout reaches outside its buffer"));
    }
    Ok(())
}

/// Fills `n` elements at `dst` with `v[at]`.
fn fill_typed<T: Copy>(v: &[T], at: usize, dst: *mut u8, n: usize) {
    // SAFETY: `dst` is a tile buffer of at least `n` elements of `T` (8 bytes
    // or fewer each), aligned to a cache line.
    let dst = unsafe { std::slice::from_raw_parts_mut(dst.cast::<T>(), n) };
    dst.fill(v[at]);
}

/// Copies `n` elements of `v` from `at` by `step` to `dst`.
fn gather_typed<T: Copy>(v: &[T], at: isize, step: isize, dst: *mut u8, n: usize) {
    // SAFETY: as in `fill_typed`.
    let dst = unsafe { std::slice::from_raw_parts_mut(dst.cast::<T>(), n) };
    for (i, d) in dst.iter_mut().enumerate() {
        *d = v[(at + i as isize * step) as usize];
    }
}
