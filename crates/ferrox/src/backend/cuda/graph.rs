//! CUDA graphs for compiled functions: the kernels a compiled graph
//! launches are captured once and replayed with one `cuGraphLaunch`, so
//! the host cost of many small kernels nearly vanishes.
//!
//! A graph bakes in every device address it touches, so a capture works on
//! buffers of its own:
//! - the varying inputs are copied into the capture's input buffers before
//!   each replay (constants are read in place: they never change);
//! - the buffers allocated during the capture belong to it (the allocator's
//!   capture arena), intermediates included, so replays never write memory
//!   that another array was handed;
//! - each replay copies the outputs into new buffers for the caller.
//!
//! The first call runs the graph op by op (kernels are compiled, libraries
//! pick their algorithms and workspaces), the second captures and replays.
//! Work that cannot be captured (a host synchronization, a transfer) makes
//! the capture fail: the slot then runs op by op for good.

use super::allocator::{self, Arena};
use super::device::driver_error;
use super::elementwise;
use super::kernels::Family;
use super::launch::{launch, Args};
use super::stream::GpuStream;
use super::CudaStorage;
use crate::array::ArrayData;
use crate::backend::replay::{GraphRun, ReplaySlot};
use crate::backend::Storage;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::Layout;
use cudarc::driver::{result, sys};
use std::sync::{Arc, Mutex};

/// One capture at a time in the process (the allocator has one arena).
static CAPTURE_LOCK: Mutex<()> = Mutex::new(());

/// Where a compiled graph stands on the GPU.
#[derive(Debug, Default)]
pub(crate) enum CapturedGraph {
    /// Not run yet: the next call runs op by op (the warm-up).
    #[default]
    Fresh,
    /// Warmed up: the next call captures.
    WarmedUp,
    /// Captured: calls replay it.
    Captured(Box<Capture>),
    /// Capture failed (for the reason given): calls run op by op.
    Refused(String),
}

impl CapturedGraph {
    /// Whether a captured graph is held.
    pub(crate) fn is_captured(&self) -> bool {
        matches!(self, CapturedGraph::Captured(_))
    }

    /// Why capture failed, if it did.
    pub(crate) fn refusal(&self) -> Option<&str> {
        match self {
            CapturedGraph::Refused(why) => Some(why),
            _ => None,
        }
    }
}

/// A captured graph with the buffers it reads and writes.
#[derive(Debug)]
pub(crate) struct Capture {
    exec: sys::CUgraphExec,
    stream: usize,
    /// Row-contiguous copies of the varying inputs, which the graph reads.
    inputs: Vec<ArrayData>,
    /// The constants the graph reads in place (held so they live as long).
    _constants: Vec<ArrayData>,
    /// Row-contiguous outputs the graph writes.
    outputs: Vec<ArrayData>,
    /// The intermediates' buffers (held until the graph goes).
    _arena: Arena,
}

// SAFETY: a graph exec is a driver handle usable from any thread of the
// context; the slot's mutex serializes its launches.
unsafe impl Send for Capture {}

impl Drop for Capture {
    fn drop(&mut self) {
        // SAFETY: the exec came from cuGraphInstantiate; the driver frees an
        // exec still in flight once it completes. The buffers then go back
        // to the stream's cache, behind the replays in stream order.
        let _ = unsafe { result::graph::exec_destroy(self.exec) };
    }
}

fn device_data(x: &ArrayData) -> Result<&CudaStorage> {
    match &*x.storage {
        Storage::Cuda(c) => Ok(c),
        Storage::Cpu(_) => Err(Error::Device { op: "compile", msg: "A graph input is not on the GPU.".into() }),
    }
}

/// Ranges per `copy_segments` launch (`FX_SEGMENTS` in `kernels/copy.cu`).
const SEGMENTS: usize = 96;

/// Bytes each block of `copy_segments` moves (`FX_SEGMENT_CHUNK`).
const SEGMENT_CHUNK: usize = 32768;

/// The parameters of one `copy_segments` launch (`FxSegments`).
#[repr(C)]
#[derive(Clone, Copy)]
struct Segments {
    src: [u64; SEGMENTS],
    dst: [u64; SEGMENTS],
    bytes: [u64; SEGMENTS],
    first_chunk: [u32; SEGMENTS + 1],
    count: i32,
}

/// Moves each `(src, dst, bytes)` range on `s` (device addresses of live
/// buffers): one `copy_segments` launch per [`SEGMENTS`] ranges instead of
/// a driver copy each, since a replayed training step moves hundreds of
/// arrays in and out (one copy each cost the host about 3 µs, the GPU 1-2).
fn copy_ranges(s: &Arc<GpuStream>, ranges: &[(u64, u64, usize)]) -> Result<()> {
    let ranges: Vec<_> = ranges.iter().filter(|r| r.2 > 0).collect();
    for group in ranges.chunks(SEGMENTS) {
        let mut p = Segments {
            src: [0; SEGMENTS],
            dst: [0; SEGMENTS],
            bytes: [0; SEGMENTS],
            first_chunk: [0; SEGMENTS + 1],
            count: group.len() as i32,
        };
        let mut chunks = 0usize;
        for (i, &&(src, dst, n)) in group.iter().enumerate() {
            (p.src[i], p.dst[i], p.bytes[i]) = (src, dst, n as u64);
            p.first_chunk[i] = chunks as u32;
            chunks += n.div_ceil(SEGMENT_CHUNK);
        }
        let blocks = u32::try_from(chunks)
            .ok()
            .filter(|&b| b < i32::MAX as u32)
            .ok_or_else(|| Error::invalid("compile", "a graph's inputs or outputs are too large to copy"))?;
        p.first_chunk[group.len()] = blocks;
        launch(Family::Copy, Dtype::U8, "copy_segments", (blocks, 1, 1), (256, 1, 1), s, Args::new().arg(p))?;
    }
    Ok(())
}

/// The address and byte length of the row-contiguous elements of `x` (a
/// dense copy, held in `keep`, where `x` is strided), readable on `s`.
fn dense_range(s: &Arc<GpuStream>, x: &ArrayData, keep: &mut Vec<CudaStorage>) -> Result<(u64, usize)> {
    let src = device_data(x)?;
    src.buffer().read_on(s)?;
    let bytes = x.layout.size() * src.dtype().size();
    if x.layout.is_row_contiguous() || bytes == 0 {
        return Ok((src.ptr_at(x.layout.offset), bytes));
    }
    let dense = elementwise::copy(s, src, &x.layout, src.dtype())?;
    let at = dense.ptr_at(0);
    keep.push(dense);
    Ok((at, bytes))
}

fn contiguous(storage: CudaStorage, shape: &[usize]) -> ArrayData {
    ArrayData { storage: Arc::new(Storage::Cuda(storage)), layout: Layout::contiguous(shape) }
}

/// Runs a compiled graph on `s` through `slot`: op by op on the first call,
/// captured on the second, replayed from then on.
pub(crate) fn replay(
    s: &Arc<GpuStream>,
    slot: &ReplaySlot,
    inputs: &[ArrayData],
    run: &GraphRun,
) -> Result<Vec<ArrayData>> {
    let mut state = slot.cuda.lock().unwrap_or_else(|e| e.into_inner());
    match &*state {
        CapturedGraph::Fresh => {
            let outputs = run(inputs)?;
            *state = CapturedGraph::WarmedUp;
            return Ok(outputs);
        }
        CapturedGraph::Captured(c) if c.stream == s.index => {
            let outputs = c.launch(s, inputs, slot.varying())?;
            slot.count_launch();
            return Ok(outputs);
        }
        CapturedGraph::Captured(_) | CapturedGraph::Refused(_) => return run(inputs),
        CapturedGraph::WarmedUp => {}
    }
    let captured = {
        let _one = CAPTURE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        capture(s, inputs, slot.varying(), run)
    };
    match captured {
        Ok(c) => {
            let outputs = c.launch(s, inputs, slot.varying())?;
            slot.count_launch();
            *state = CapturedGraph::Captured(Box::new(c));
            Ok(outputs)
        }
        Err(why) => {
            *state = CapturedGraph::Refused(why.to_string());
            run(inputs)
        }
    }
}

/// Captures `run` on `s`, reading copies of the first `varying` inputs.
fn capture(s: &Arc<GpuStream>, inputs: &[ArrayData], varying: usize, run: &GraphRun) -> Result<Capture> {
    let mut args = Vec::with_capacity(inputs.len());
    for (i, x) in inputs.iter().enumerate() {
        if i < varying {
            let copy = CudaStorage::alloc(device_data(x)?.dtype(), x.layout.size(), s)?;
            args.push(contiguous(copy, &x.layout.shape));
        } else {
            device_data(x)?.buffer().read_on(s)?;
            args.push(x.clone());
        }
    }
    let err = driver_error("compile");
    // SAFETY: the stream is valid; relaxed mode lets other threads allocate.
    unsafe { result::stream::begin_capture(s.raw, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED) }
        .map_err(&err)?;
    allocator::begin_capture(s);
    let outputs = run(&args).and_then(|outs| outs.into_iter().map(|o| graph_owned(s, o)).collect::<Result<Vec<_>>>());
    let arena = allocator::end_capture();
    // SAFETY: ends the capture begun above (also after a failure, which
    // invalidates it and makes this return an error).
    let graph = unsafe { result::stream::end_capture(s.raw) };
    let (outputs, graph) = match (outputs, graph) {
        (Ok(o), Ok(g)) => (o, g),
        (Err(e), graph) => {
            if let Ok(g) = graph {
                // SAFETY: the graph came from the capture above.
                let _ = unsafe { result::graph::destroy(g) };
            }
            return Err(e);
        }
        (Ok(_), Err(e)) => return Err(err(e)),
    };
    // SAFETY: the graph is valid; it is destroyed once instantiated.
    let exec = unsafe { result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0)) };
    let _ = unsafe { result::graph::destroy(graph) };
    let exec = exec.map_err(&err)?;
    let inputs_copy = args.drain(..varying).collect();
    Ok(Capture { exec, stream: s.index, inputs: inputs_copy, _constants: args, outputs, _arena: arena })
}

/// `x` as a row-contiguous output in a buffer the capture allocated (a copy
/// made inside the capture when `x` views an input, a constant or strided
/// memory).
fn graph_owned(s: &Arc<GpuStream>, x: ArrayData) -> Result<ArrayData> {
    let c = device_data(&x)?;
    if x.layout.is_row_contiguous() && allocator::allocated_in_capture(c.buffer().ptr()) {
        return Ok(x);
    }
    let copy = elementwise::copy(s, c, &x.layout, c.dtype())?;
    Ok(contiguous(copy, &x.layout.shape))
}

impl Capture {
    /// Replays the graph on `inputs` (whose first `varying` are copied in)
    /// and returns new copies of its outputs.
    fn launch(&self, s: &Arc<GpuStream>, inputs: &[ArrayData], varying: usize) -> Result<Vec<ArrayData>> {
        // Dense copies of strided inputs, freed in stream order once the
        // copies below are enqueued.
        let mut dense = Vec::new();
        let mut ranges = Vec::with_capacity(varying);
        for (x, dst) in inputs[..varying].iter().zip(&self.inputs) {
            let (from, bytes) = dense_range(s, x, &mut dense)?;
            ranges.push((from, device_data(dst)?.ptr_at(0), bytes));
        }
        copy_ranges(s, &ranges)?;
        // SAFETY: the exec and the stream are valid; every buffer the graph
        // uses is held by `self`, the constants' owners or the caches.
        unsafe { result::graph::launch(self.exec, s.raw) }.map_err(driver_error("compile"))?;
        let mut ranges = Vec::with_capacity(self.outputs.len());
        let outputs = self
            .outputs
            .iter()
            .map(|o| {
                let (from, bytes) = dense_range(s, o, &mut dense)?;
                let out = CudaStorage::alloc(device_data(o)?.dtype(), o.layout.size(), s)?;
                ranges.push((from, out.ptr_at(0), bytes));
                Ok(contiguous(out, &o.layout.shape))
            })
            .collect::<Result<Vec<_>>>()?;
        copy_ranges(s, &ranges)?;
        Ok(outputs)
    }
}
