//! The fused row kernels on the GPU ([`FastOp`]): `kernels/norm.cu`,
//! `kernels/rope.cu`, `kernels/attention.cu` and `kernels/softmax.cu` (with
//! the cross entropy), the
//! twins of the CPU's `norm.rs`, `rope.rs`, `attention.rs` and `softmax.rs`.

use super::device::{driver_error, gpu};
use super::kernels::Family;
use super::launch::{grid_for, launch, launch_with_shared, max_block_threads, resident_blocks, Args, BLOCK};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::fast_op::row_stride;
use crate::backend::{AttentionMask, AttentionParams, FastOp, RopeParams};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::Layout;
use cudarc::driver::sys;
use std::sync::Arc;

/// One input: its device data and layout.
pub(crate) type Input<'a> = (&'a CudaStorage, &'a Layout);

/// The head-dimension buckets `attention.cu` instantiates.
const HEAD_BUCKETS: [usize; 4] = [32, 64, 128, 256];

/// The head dimensions of the tensor-core forward kernels (float16 and
/// bfloat16, `d == dv`).
const MMA_HEAD_DIMS: [usize; 2] = [64, 128];

/// The head dimensions of the split-K decode kernels (`d == dv`).
const DECODE_HEAD_DIMS: [usize; 3] = [64, 128, 256];

/// The largest head dimension the attention kernels take.
pub(crate) const MAX_HEAD_DIM: usize = 256;

/// The kernels `family`'s file defines for `dtype` (for the compile check).
pub(crate) fn kernel_names(family: Family, dtype: Dtype) -> Vec<String> {
    if !dtype.is_floating() {
        return Vec::new();
    }
    match family {
        Family::Norm => ["rms_norm", "layer_norm", "rms_norm_vjp", "layer_norm_vjp"]
            .iter()
            .flat_map(|k| [k.to_string(), format!("{k}_packed")])
            .chain(["norm_feature_sum".to_string()])
            .collect(),
        Family::Rope => vec!["rope".to_string()],
        Family::Softmax => ["softmax", "logsumexp", "cross_entropy", "cross_entropy_vjp"].map(String::from).to_vec(),
        Family::Attention => {
            let tensor_core = if matches!(dtype, Dtype::F16 | Dtype::BF16) { &MMA_HEAD_DIMS[..] } else { &[] };
            HEAD_BUCKETS
                .iter()
                .flat_map(|d| [format!("attention_fwd_{d}"), format!("attention_bwd_{d}")])
                .chain(tensor_core.iter().flat_map(|d| ["fwd", "bwd"].map(|k| format!("attention_{k}_mma_{d}"))))
                .chain(tensor_core.iter().filter(|&&d| d == WG_HEAD_DIM).flat_map(|d| {
                    ["fwd", "bwd"]
                        .map(|k| format!("attention_{k}_wg_{d}"))
                        .into_iter()
                        .chain(["attention_cast_wg".into()])
                }))
                .chain(DECODE_HEAD_DIMS.iter().map(|d| format!("attention_decode_{d}")))
                .chain(["attention_delta", "attention_cast", "attention_decode_combine"].map(String::from))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The compute type of `dtype`'s kernels (`TC`).
fn compute(dtype: Dtype) -> Dtype {
    if dtype == Dtype::F64 {
        Dtype::F64
    } else {
        Dtype::F32
    }
}

fn ptr(x: Input) -> u64 {
    x.0.ptr_at(x.1.offset)
}

/// A zero-filled buffer of `n` elements of `dtype`.
fn zeroed(dtype: Dtype, n: usize, s: &Arc<GpuStream>, op: &'static str) -> Result<CudaStorage> {
    let buffer = CudaStorage::alloc(dtype, n, s)?;
    if n > 0 {
        // SAFETY: the range is the allocation; ordered on `s` before its readers.
        unsafe { sys::cuMemsetD8Async(buffer.ptr_at(0), 0, n * dtype.size(), s.raw) }
            .result()
            .map_err(driver_error(op))?;
    }
    Ok(buffer)
}

/// Runs `op` on `inputs` (see [`FastOp`] for what each op takes and returns).
pub(crate) fn fast(s: &Arc<GpuStream>, op: &FastOp, inputs: &[Input]) -> Result<Vec<CudaStorage>> {
    let dtype = inputs[0].0.dtype();
    if !dtype.is_floating() {
        return Err(Error::invalid(op.name(), "internal error: the kernel takes real float inputs"));
    }
    match op {
        FastOp::RmsNorm { eps } => Ok(vec![norm_forward(s, "rms_norm", *eps, inputs[0], inputs[1], None)?]),
        FastOp::LayerNorm { eps } => {
            Ok(vec![norm_forward(s, "layer_norm", *eps, inputs[0], inputs[1], Some(inputs[2]))?])
        }
        FastOp::RmsNormVjp { eps } => norm_backward(s, *eps, inputs[0], inputs[1], None, inputs[2]),
        FastOp::LayerNormVjp { eps } => norm_backward(s, *eps, inputs[0], inputs[1], Some(inputs[2]), inputs[3]),
        FastOp::Rope(p) => Ok(vec![rope(s, p, inputs[0], inputs[1], inputs.get(2).copied())?]),
        FastOp::Attention(p) => attention_forward(s, p, inputs),
        FastOp::AttentionVjp(p) => attention_backward(s, p, inputs),
        FastOp::Softmax => Ok(vec![softmax_rows(s, "softmax", inputs[0])?]),
        FastOp::LogSumExp => Ok(vec![softmax_rows(s, "logsumexp", inputs[0])?]),
        FastOp::CrossEntropy { smoothing } => cross_entropy(s, *smoothing, inputs[0], inputs[1]),
        FastOp::CrossEntropyVjp { smoothing } => {
            Ok(vec![cross_entropy_vjp(s, *smoothing, inputs[0], inputs[1], inputs[2], inputs[3])?])
        }
    }
}

/// Threads per block of the cross entropy's row kernels: about four
/// 16-byte packs each, 32 to 512.
fn cross_entropy_block(dtype: Dtype, d: usize) -> u32 {
    (d / (16 / dtype.size()) / 4).next_power_of_two().clamp(32, 512) as u32
}

/// The cross entropy of each row of `x` against its int32 target: the loss
/// per row and the row statistics.
fn cross_entropy(s: &Arc<GpuStream>, smoothing: f64, x: Input, targets: Input) -> Result<Vec<CudaStorage>> {
    let dtype = x.0.dtype();
    let (rows, d) = rows_of(x);
    let ld = row_stride(x.1).unwrap_or(d);
    let loss = CudaStorage::alloc(dtype, rows, s)?;
    let stats = CudaStorage::alloc(compute(dtype), 2 * rows, s)?;
    if rows > 0 {
        let args = Args::new()
            .arg(ptr(x))
            .arg(ptr(targets))
            .arg(loss.ptr_at(0))
            .arg(stats.ptr_at(0))
            .arg(rows as i64)
            .arg(d as i64)
            .arg(ld as i64)
            .arg(smoothing);
        let grid = (rows.min(1 << 20) as u32, 1, 1);
        launch(Family::Softmax, dtype, "cross_entropy", grid, (cross_entropy_block(dtype, d), 1, 1), s, args)?;
    }
    Ok(vec![loss, stats])
}

/// The derivative of [`cross_entropy`] in x, from the row statistics and
/// the loss's cotangent `g`.
fn cross_entropy_vjp(
    s: &Arc<GpuStream>,
    smoothing: f64,
    x: Input,
    targets: Input,
    stats: Input,
    g: Input,
) -> Result<CudaStorage> {
    let dtype = x.0.dtype();
    let (rows, d) = rows_of(x);
    let ld = row_stride(x.1).unwrap_or(d);
    // dx rows are spaced like x's (FastOp::output_layouts).
    let dx = CudaStorage::alloc(dtype, rows * ld, s)?;
    if rows * d > 0 {
        let args = Args::new()
            .arg(ptr(x))
            .arg(ptr(targets))
            .arg(ptr(stats))
            .arg(ptr(g))
            .arg(dx.ptr_at(0))
            .arg(rows as i64)
            .arg(d as i64)
            .arg(ld as i64)
            .arg(smoothing);
        let grid = (rows.min(1 << 20) as u32, 1, 1);
        launch(Family::Softmax, dtype, "cross_entropy_vjp", grid, (cross_entropy_block(dtype, d), 1, 1), s, args)?;
    }
    Ok(dx)
}

/// The rows of `x`: (count, length).
fn rows_of(x: Input) -> (usize, usize) {
    let d = x.1.shape.last().copied().unwrap_or(1);
    (x.1.size().checked_div(d).unwrap_or(0), d)
}

/// Threads per block for rows of `d` elements: about four elements each.
fn row_block(d: usize) -> u32 {
    d.div_ceil(4).next_power_of_two().clamp(32, 1024) as u32
}

/// Softmax (one output per element) or log-sum-exp (one per row) over the
/// rows of `x`.
fn softmax_rows(s: &Arc<GpuStream>, kernel: &str, x: Input) -> Result<CudaStorage> {
    let dtype = x.0.dtype();
    let (rows, d) = rows_of(x);
    let out = CudaStorage::alloc(dtype, if kernel == "softmax" { rows * d } else { rows }, s)?;
    if rows > 0 {
        let args = Args::new().arg(ptr(x)).arg(out.ptr_at(0)).arg(rows as i64).arg(d as i64);
        let threads = d.div_ceil(8).next_power_of_two().clamp(32, 1024) as u32;
        launch(Family::Softmax, dtype, kernel, (rows.min(1 << 20) as u32, 1, 1), (threads, 1, 1), s, args)?;
    }
    Ok(out)
}

/// 16-byte packs each thread of the `_packed` norm kernels holds.
const NORM_PACKS_PER_THREAD: usize = 4;

/// The `_packed` variant of a norm kernel and its block size, when every
/// row fits in the registers of one block and every pointer allows 16-byte
/// packs.
fn packed_norm(kernel: &str, dtype: Dtype, d: usize, ptrs: &[u64]) -> Result<Option<(String, u32)>> {
    let per_pack = 16 / dtype.size();
    let packs = d / per_pack;
    let fits = d.is_multiple_of(per_pack) && packs <= 1024 * NORM_PACKS_PER_THREAD && packs > 0;
    if !fits || ptrs.iter().any(|p| p % 16 != 0) {
        return Ok(None);
    }
    let name = format!("{kernel}_packed");
    let threads = packs.div_ceil(NORM_PACKS_PER_THREAD).next_power_of_two().clamp(32, 1024) as u32;
    // The packed kernels hold a row in registers (up to about 250 a thread),
    // so long rows need more threads than a block of them can have.
    if threads > max_block_threads(Family::Norm, dtype, &name)? {
        return Ok(None);
    }
    Ok(Some((name, threads)))
}

/// Whether a per-feature parameter is a vector (not a 0-d scalar).
fn is_vector(p: Input) -> i32 {
    (p.1.ndim() == 1) as i32
}

fn norm_forward(
    s: &Arc<GpuStream>,
    kernel: &'static str,
    eps: f32,
    x: Input,
    w: Input,
    b: Option<Input>,
) -> Result<CudaStorage> {
    let dtype = x.0.dtype();
    let (rows, d) = rows_of(x);
    let y = CudaStorage::alloc(dtype, x.1.size(), s)?;
    if rows == 0 {
        return Ok(y);
    }
    let mut args = Args::new().arg(ptr(x)).arg(ptr(w)).arg(is_vector(w));
    if let Some(b) = b {
        args = args.arg(ptr(b)).arg(is_vector(b));
    }
    let args = args.arg(y.ptr_at(0)).arg(rows as i64).arg(d as i32).arg(eps);
    let vectors = [Some(w), b].into_iter().flatten().filter(|p| p.1.ndim() == 1).map(ptr);
    let ptrs: Vec<u64> = [ptr(x), y.ptr_at(0)].into_iter().chain(vectors).collect();
    match packed_norm(kernel, dtype, d, &ptrs)? {
        Some((packed, threads)) => {
            // One wave of blocks; each keeps its weights in registers across rows.
            let per_sm = resident_blocks(Family::Norm, dtype, &packed, threads)? as usize;
            let grid = rows.min(gpu()?.sm_count as usize * per_sm) as u32;
            launch(Family::Norm, dtype, &packed, (grid, 1, 1), (threads, 1, 1), s, args)?
        }
        None => launch(Family::Norm, dtype, kernel, (rows.min(1 << 20) as u32, 1, 1), (row_block(d), 1, 1), s, args)?,
    }
    Ok(y)
}

fn norm_backward(
    s: &Arc<GpuStream>,
    eps: f32,
    x: Input,
    w: Input,
    b: Option<Input>,
    g: Input,
) -> Result<Vec<CudaStorage>> {
    let op = if b.is_some() { "layer_norm_vjp" } else { "rms_norm_vjp" };
    let dtype = x.0.dtype();
    let tc = compute(dtype);
    let (rows, d) = rows_of(x);
    let dx = CudaStorage::alloc(dtype, x.1.size(), s)?;
    let vectors = [Some(w), b].into_iter().flatten().filter(|p| p.1.ndim() == 1).map(ptr);
    let ptrs: Vec<u64> = [ptr(x), ptr(g), dx.ptr_at(0)].into_iter().chain(vectors).collect();
    let packed = packed_norm(op, dtype, d, &ptrs)?;
    // Each block folds its rows' weight (and bias) cotangents into one
    // partial row. The register-cached kernel gets exactly one wave of
    // blocks, so no SM idles in a partial last wave and there are few
    // partial rows to add up.
    let per_sm = match &packed {
        Some((name, threads)) => resident_blocks(Family::Norm, dtype, name, *threads)? as usize,
        None => 8,
    };
    let parts = rows.min(gpu()?.sm_count as usize * per_sm);
    let partial_w = CudaStorage::alloc(tc, parts * d, s)?;
    let partial_b = CudaStorage::alloc(tc, if b.is_some() { parts * d } else { 0 }, s)?;
    if parts > 0 {
        let mut args = Args::new().arg(ptr(x)).arg(ptr(w)).arg(is_vector(w)).arg(ptr(g)).arg(dx.ptr_at(0));
        args = args.arg(partial_w.ptr_at(0));
        if b.is_some() {
            args = args.arg(partial_b.ptr_at(0));
        }
        let args = args.arg(rows as i64).arg(d as i32).arg(eps);
        match packed {
            Some((packed, threads)) => {
                launch(Family::Norm, dtype, &packed, (parts as u32, 1, 1), (threads, 1, 1), s, args)?
            }
            None => launch(Family::Norm, dtype, op, (parts as u32, 1, 1), (row_block(d), 1, 1), s, args)?,
        }
    }
    let mut outs = vec![dx, feature_sum(s, dtype, &partial_w, parts, d, w)?];
    if let Some(b) = b {
        outs.push(feature_sum(s, dtype, &partial_b, parts, d, b)?);
    }
    Ok(outs)
}

/// A per-feature parameter's cotangent: the column sums of `parts` partial
/// rows, or one zero for a 0-d parameter.
fn feature_sum(
    s: &Arc<GpuStream>,
    dtype: Dtype,
    partial: &CudaStorage,
    parts: usize,
    d: usize,
    p: Input,
) -> Result<CudaStorage> {
    let (parts, d) = if p.1.ndim() == 1 { (parts, d) } else { (0, 1) };
    let out = CudaStorage::alloc(dtype, d, s)?;
    if d > 0 {
        let args = Args::new().arg(partial.ptr_at(0)).arg(parts as i32).arg(d as i32).arg(out.ptr_at(0));
        launch(Family::Norm, dtype, "norm_feature_sum", (d.div_ceil(32) as u32, 1, 1), (32, 32, 1), s, args)?;
    }
    Ok(out)
}

fn rope(s: &Arc<GpuStream>, p: &RopeParams, x: Input, offset: Input, freqs: Option<Input>) -> Result<CudaStorage> {
    let dtype = x.0.dtype();
    let (rows, d) = rows_of(x);
    let y = CudaStorage::alloc(dtype, x.1.size(), s)?;
    if rows == 0 {
        return Ok(y);
    }
    let shape = &x.1.shape;
    let t_len = shape[shape.len() - 2];
    let rows_per_batch = rows / shape[0];
    let half = p.dims / 2;
    let work = rows * (half + d - p.dims);
    let args = Args::new()
        .arg(ptr(x))
        .arg(y.ptr_at(0))
        .arg(ptr(offset))
        .arg(offset.1.size() as i32)
        .arg(freqs.map_or(0, ptr))
        .arg(rows as i64)
        .arg(d as i32)
        .arg(t_len as i32)
        .arg(rows_per_batch as i64)
        .arg(p.dims as i32)
        .arg(p.traditional as i32)
        .arg(p.forward as i32)
        .arg(p.base.ln() / half as f32)
        .arg(p.scale);
    launch(Family::Rope, dtype, "rope", (grid_for(work, 1)?, 1, 1), (BLOCK, 1, 1), s, args)?;
    Ok(y)
}

/// The problem's extents as `attention.cu` takes them.
#[repr(C)]
#[derive(Clone, Copy)]
struct AttnDims {
    batch: i32,
    q_heads: i32,
    kv_heads: i32,
    queries: i32,
    keys: i32,
    d: i32,
    dv: i32,
}

/// Element strides of one head-row operand over (batch, head, row), as
/// `attention.cu`'s `FxRows` (its features are contiguous).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RowStrides {
    batch: i64,
    head: i64,
    row: i64,
}

impl RowStrides {
    fn of(layout: &Layout) -> RowStrides {
        let s = &layout.strides;
        RowStrides { batch: s[0] as i64, head: s[1] as i64, row: s[2] as i64 }
    }

    /// Whether every row starts 16 bytes after an aligned one (for the
    /// kernels that move 16-byte packs).
    fn aligned(&self, dtype: Dtype) -> bool {
        [self.batch, self.head, self.row].iter().all(|s| s * dtype.size() as i64 % 16 == 0)
    }
}

/// The head-row strides of every operand, as `attention.cu`'s
/// `FxAttnLayout` (the forward kernels read q, k, v and o).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct AttnLayout {
    q: RowStrides,
    k: RowStrides,
    v: RowStrides,
    o: RowStrides,
    dout: RowStrides,
    dq: RowStrides,
    dk: RowStrides,
    dv: RowStrides,
}

impl AttnLayout {
    fn aligned(&self, dtype: Dtype) -> bool {
        [self.q, self.k, self.v, self.o, self.dout, self.dq, self.dk, self.dv].iter().all(|r| r.aligned(dtype))
    }
}

/// The mask's element strides over `(B, Hq, Lq, Lk)`.
#[repr(C)]
#[derive(Clone, Copy)]
struct AttnStrides([i64; 4]);

fn attn_dims(q: Input, k: Input, v: Input) -> Result<AttnDims> {
    let (qs, ks, vs) = (&q.1.shape, &k.1.shape, &v.1.shape);
    let fit = |x: usize| {
        i32::try_from(x).map_err(|_| Error::invalid("scaled_dot_product_attention", "an extent exceeds 2^31 - 1"))
    };
    Ok(AttnDims {
        batch: fit(qs[0])?,
        q_heads: fit(qs[1])?,
        kv_heads: fit(ks[1])?,
        queries: fit(qs[2])?,
        keys: fit(ks[2])?,
        d: fit(qs[3])?,
        dv: fit(vs[3])?,
    })
}

/// The bucket of the attention kernels for head dimensions `d` and `dv`.
fn bucket(n: &AttnDims) -> Result<usize> {
    let widest = n.d.max(n.dv) as usize;
    HEAD_BUCKETS.iter().copied().find(|&b| b >= widest).ok_or_else(|| {
        Error::invalid(
            "scaled_dot_product_attention",
            format!("head dimensions above {MAX_HEAD_DIM} are not supported on the GPU, got {widest}."),
        )
    })
}

/// The mask's pointer, strides and kind code for the kernels.
fn mask_args(p: &AttentionParams, inputs: &[Input]) -> (u64, AttnStrides, i32) {
    let kind = match p.mask {
        AttentionMask::None => 0,
        AttentionMask::Causal => 1,
        AttentionMask::Bool => 2,
        AttentionMask::Additive => 3,
    };
    if !p.mask_input() {
        return (0, AttnStrides([0; 4]), kind);
    }
    let m = inputs[3];
    let mut strides = [0i64; 4];
    for (s, &st) in strides.iter_mut().zip(&m.1.strides) {
        *s = st as i64;
    }
    (ptr(m), AttnStrides(strides), kind)
}

/// The grid's second extent: one block row per (batch, head).
fn heads_extent(n: usize) -> Result<u32> {
    if n > 65535 {
        return Err(Error::invalid(
            "scaled_dot_product_attention",
            format!("batch x heads must be at most 65535 on the GPU, got {n}."),
        ));
    }
    Ok(n as u32)
}

/// Rows of queries (or keys) each attention block handles.
const ATTN_ROWS: usize = 32;

/// Rows of queries each tensor-core attention block handles.
const MMA_ROWS: usize = 64;

/// The head dimension of the Hopper warpgroup kernels (forward and backward).
const WG_HEAD_DIM: usize = 128;

/// Rows of queries each warpgroup forward block handles (`FX_WG_ROWS`).
const WG_ROWS: usize = 128;

/// The dynamic shared memory of `attention_fwd_wg_128` (`FX_WG_SHARED`):
/// a 128 x 128 tile of Q, two of K, three of V, and 1024 bytes of slack
/// for aligning the start.
const WG_SHARED_BYTES: u32 = 6 * 128 * 128 * 2 + 1024;

/// The dynamic shared memory of `attention_bwd_wg_128` (`FX_WG_BWD_SHARED`):
/// 128 x 128 tiles of K and V, two 64 x 128 tiles each of q and do, two of
/// dS (128 keys x 64 queries), two buffers of 64 rows' statistics and
/// deltas (3 floats a row), and 1024 bytes of slack for aligning the start.
const WG_BWD_SHARED_BYTES: u32 = 2 * 128 * 128 * 2 + 6 * 64 * 128 * 2 + 2 * 3 * 64 * 4 + 1024;

/// Query rows per tile of `attention_bwd_wg_128` (`FX_WG_BWD_QT`): its dQ
/// accumulator holds each head's rows in tiles of this many, padded.
const WG_BWD_QUERY_TILE: usize = 64;

/// Keys each tensor-core backward block handles (`FX_BWD_KEYS`, and the
/// warpgroup kernel's too).
const MMA_BWD_KEYS: usize = 128;

/// The backward kernel's tiling for head dimension `d` (64 or 128), as
/// `FX_BWD_QT_<d>` and `FX_BWD_VS_<d>` in `kernels/attention.cu` set it:
/// queries per tile, and whether V stays in shared memory (else each warp
/// holds its keys' V rows in registers).
fn mma_bwd_tiling(d: usize) -> (usize, bool) {
    if d == 64 {
        (32, true)
    } else {
        (64, false)
    }
}

/// The dynamic shared memory of `attention_bwd_mma_<d>` (laid out in the kernel file):
/// the block's keys (and values, per [`mma_bwd_tiling`]), two buffers each
/// of a query tile of q and do, dS, and two buffers each of the tile's row
/// statistics (two floats a row) and deltas.
fn mma_bwd_shared_bytes(d: usize) -> u32 {
    let (qt, values) = mma_bwd_tiling(d);
    let pitch = d + 8;
    let kv = if values { 2 } else { 1 } * MMA_BWD_KEYS * pitch;
    ((kv + 4 * qt * pitch + qt * (MMA_BWD_KEYS + 8)) * 2 + 6 * qt * 4) as u32
}

fn attention_forward(s: &Arc<GpuStream>, p: &AttentionParams, inputs: &[Input]) -> Result<Vec<CudaStorage>> {
    let (q, k, v) = (inputs[0], inputs[1], inputs[2]);
    let dtype = q.0.dtype();
    let n = attn_dims(q, k, v)?;
    let rows: usize = q.1.shape[..3].iter().product();
    let o_shape = vec![q.1.shape[0], q.1.shape[1], q.1.shape[2], n.dv as usize];
    let o_layout = FastOp::Attention(*p).output_layouts(&[q.1], &[o_shape]).remove(0);
    let layout = AttnLayout {
        q: RowStrides::of(q.1),
        k: RowStrides::of(k.1),
        v: RowStrides::of(v.1),
        o: RowStrides::of(&o_layout),
        ..AttnLayout::default()
    };
    let o = CudaStorage::alloc(dtype, rows * n.dv as usize, s)?;
    let stats = CudaStorage::alloc(compute(dtype), rows * 2, s)?;
    if !decode(s, p, inputs, &n, &layout, rows, &o, &stats)? {
        run_forward(s, p, inputs, &n, &layout, o.ptr_at(0), stats.ptr_at(0))?;
    }
    Ok(vec![o, stats])
}

/// Whether the tensor-core kernels serve a problem: float16 or bfloat16,
/// `d == dv` among [`MMA_HEAD_DIMS`], and 16-byte aligned rows (they move
/// 16-byte packs; null pointers pass).
fn tensor_core(dtype: Dtype, n: &AttnDims, layout: &AttnLayout, ptrs: &[u64]) -> bool {
    matches!(dtype, Dtype::F16 | Dtype::BF16)
        && n.d == n.dv
        && MMA_HEAD_DIMS.contains(&(n.d as usize))
        && ptrs.iter().all(|p| p % 16 == 0)
        && layout.aligned(dtype)
}

/// The split-K decode path for few query rows over many keys (writing o
/// and the row statistics): returns whether it ran (otherwise the tiled
/// kernels serve the problem).
#[allow(clippy::too_many_arguments)]
fn decode(
    s: &Arc<GpuStream>,
    p: &AttentionParams,
    inputs: &[Input],
    n: &AttnDims,
    layout: &AttnLayout,
    rows: usize,
    o: &CudaStorage,
    stats: &CudaStorage,
) -> Result<bool> {
    let (q, k, v) = (inputs[0], inputs[1], inputs[2]);
    let dtype = q.0.dtype();
    let d = n.d as usize;
    let keys = n.keys as usize;
    let sms = gpu()?.sm_count as usize;
    let target = 4 * sms;
    let fits = n.d == n.dv
        && DECODE_HEAD_DIMS.contains(&d)
        && n.queries <= 8
        && keys >= 512
        && rows > 0
        && rows <= target
        && [ptr(q), ptr(k), ptr(v)].iter().all(|p| p % 16 == 0)
        && layout.aligned(dtype);
    if !fits {
        return Ok(false);
    }
    let chunks = target.div_ceil(rows).clamp(1, keys.div_ceil(256));
    let chunk = keys.div_ceil(chunks);
    let chunks = keys.div_ceil(chunk);
    let tc = compute(dtype);
    let part_acc = CudaStorage::alloc(tc, chunks * rows * d, s)?;
    let part_ml = CudaStorage::alloc(tc, chunks * rows * 2, s)?;
    let (mask, strides, kind) = mask_args(p, inputs);
    let fill = dtype.finfo().expect("a float dtype").min;
    let args = Args::new()
        .arg(ptr(q))
        .arg(ptr(k))
        .arg(ptr(v))
        .arg(mask)
        .arg(strides)
        .arg(kind)
        .arg(part_acc.ptr_at(0))
        .arg(part_ml.ptr_at(0))
        .arg(*n)
        .arg(*layout)
        .arg(p.scale)
        .arg(fill)
        .arg(chunk as i32);
    let kernel = format!("attention_decode_{d}");
    launch(Family::Attention, dtype, &kernel, (chunks as u32, rows as u32, 1), (128, 1, 1), s, args)?;
    let sinks = if p.sinks { ptr(inputs[p.forward_inputs() - 1]) } else { 0 };
    let args = Args::new()
        .arg(part_acc.ptr_at(0))
        .arg(part_ml.ptr_at(0))
        .arg(sinks)
        .arg(o.ptr_at(0))
        .arg(stats.ptr_at(0))
        .arg(rows as i64)
        .arg(chunks as i32)
        .arg(n.d)
        .arg(n.queries)
        .arg(n.q_heads)
        .arg(layout.o);
    let grid = grid_for(rows * d, 1)?;
    launch(Family::Attention, dtype, "attention_decode_combine", (grid, 1, 1), (BLOCK, 1, 1), s, args)?;
    Ok(true)
}

/// Launches the tiled forward kernel, which writes o and each row's
/// statistics (`stats`: max and log-sum past it, compute type, contiguous).
fn run_forward(
    s: &Arc<GpuStream>,
    p: &AttentionParams,
    inputs: &[Input],
    n: &AttnDims,
    layout: &AttnLayout,
    o: u64,
    stats: u64,
) -> Result<()> {
    let (q, k, v) = (inputs[0], inputs[1], inputs[2]);
    let dtype = q.0.dtype();
    let bh = n.batch as usize * n.q_heads as usize;
    if n.queries == 0 || bh == 0 {
        return Ok(());
    }
    let (mask, strides, kind) = mask_args(p, inputs);
    let sinks = if p.sinks { ptr(inputs[p.forward_inputs() - 1]) } else { 0 };
    let fill = dtype.finfo().expect("a float dtype").min;
    let args = Args::new()
        .arg(ptr(q))
        .arg(ptr(k))
        .arg(ptr(v))
        .arg(mask)
        .arg(strides)
        .arg(kind)
        .arg(sinks)
        .arg(o)
        .arg(stats)
        .arg(*n)
        .arg(*layout)
        .arg(p.scale)
        .arg(fill);
    let heads = heads_extent(bh)?;
    let grid = |rows: usize| ((n.queries as usize).div_ceil(rows) as u32, heads, 1);
    if !tensor_core(dtype, n, layout, &[ptr(q), ptr(k), ptr(v), o]) {
        let kernel = format!("attention_fwd_{}", bucket(n)?);
        return launch(Family::Attention, dtype, &kernel, grid(ATTN_ROWS), (128, 1, 1), s, args);
    }
    if n.d as usize == WG_HEAD_DIM && gpu()?.has_wgmma() {
        let kernel = format!("attention_fwd_wg_{WG_HEAD_DIM}");
        return launch_with_shared(
            Family::Attention,
            dtype,
            &kernel,
            grid(WG_ROWS),
            (256, 1, 1),
            WG_SHARED_BYTES,
            s,
            args,
        );
    }
    let kernel = format!("attention_fwd_mma_{}", n.d);
    launch(Family::Attention, dtype, &kernel, grid(MMA_ROWS), (128, 1, 1), s, args)
}

fn attention_backward(s: &Arc<GpuStream>, p: &AttentionParams, inputs: &[Input]) -> Result<Vec<CudaStorage>> {
    const OP: &str = "scaled_dot_product_attention_vjp";
    let (q, k, v) = (inputs[0], inputs[1], inputs[2]);
    let base = p.forward_inputs();
    let (o, stats, dout) = (inputs[base], inputs[base + 1], inputs[base + 2]);
    let dtype = q.0.dtype();
    let tc = compute(dtype);
    let n = attn_dims(q, k, v)?;
    let rows: usize = q.1.shape[..3].iter().product();
    let shapes = [q.1.shape.clone(), k.1.shape.clone(), v.1.shape.clone()];
    let outs = FastOp::AttentionVjp(*p).output_layouts(&[q.1, k.1, v.1], &shapes);
    let layout = AttnLayout {
        q: RowStrides::of(q.1),
        k: RowStrides::of(k.1),
        v: RowStrides::of(v.1),
        o: RowStrides::of(o.1),
        dout: RowStrides::of(dout.1),
        dq: RowStrides::of(&outs[0]),
        dk: RowStrides::of(&outs[1]),
        dv: RowStrides::of(&outs[2]),
    };
    let dk = CudaStorage::alloc(dtype, k.1.size(), s)?;
    let dv = CudaStorage::alloc(dtype, v.1.size(), s)?;
    let dq = CudaStorage::alloc(dtype, q.1.size(), s)?;
    let kv_blocks = n.batch as usize * n.kv_heads as usize;
    let ptrs = [ptr(q), ptr(k), ptr(v), ptr(dout), dk.ptr_at(0), dv.ptr_at(0)];
    let kernel = if n.keys == 0 || kv_blocks == 0 {
        None
    } else if !tensor_core(dtype, &n, &layout, &ptrs) {
        Some(BackwardKernel::Generic)
    } else if n.d as usize == WG_HEAD_DIM && gpu()?.has_wgmma() {
        Some(BackwardKernel::Warpgroup)
    } else {
        Some(BackwardKernel::TensorCore)
    };
    let warpgroup = kernel == Some(BackwardKernel::Warpgroup);
    let dq_acc_len = if warpgroup {
        let heads = n.batch as usize * n.q_heads as usize;
        heads * (n.queries as usize).div_ceil(WG_BWD_QUERY_TILE) * WG_BWD_QUERY_TILE * WG_HEAD_DIM
    } else {
        q.1.size()
    };
    let dq_acc = zeroed(tc, dq_acc_len, s, OP)?;
    let delta = CudaStorage::alloc(tc, rows, s)?;
    let dsinks_acc = zeroed(tc, if p.sinks { n.q_heads as usize } else { 0 }, s, OP)?;
    let sinks = if p.sinks { ptr(inputs[base - 1]) } else { 0 };
    if rows > 0 {
        let args = Args::new()
            .arg(ptr(o))
            .arg(ptr(dout))
            .arg(ptr(stats))
            .arg(sinks)
            .arg(delta.ptr_at(0))
            .arg(dsinks_acc.ptr_at(0))
            .arg(rows as i64)
            .arg(n.dv)
            .arg(n.queries)
            .arg(n.q_heads)
            .arg(layout.o)
            .arg(layout.dout);
        launch(Family::Attention, dtype, "attention_delta", (grid_for(rows * 32, 1)?, 1, 1), (BLOCK, 1, 1), s, args)?;
    }
    if let Some(kernel) = kernel {
        let (mask, strides, kind) = mask_args(p, inputs);
        let fill = dtype.finfo().expect("a float dtype").min;
        let args = Args::new()
            .arg(ptr(q))
            .arg(ptr(k))
            .arg(ptr(v))
            .arg(mask)
            .arg(strides)
            .arg(kind)
            .arg(ptr(stats))
            .arg(delta.ptr_at(0))
            .arg(ptr(dout))
            .arg(dq_acc.ptr_at(0))
            .arg(dk.ptr_at(0))
            .arg(dv.ptr_at(0))
            .arg(n)
            .arg(layout)
            .arg(p.scale)
            .arg(fill);
        let blocks = heads_extent(kv_blocks)?;
        if kernel == BackwardKernel::Generic {
            let name = format!("attention_bwd_{}", bucket(&n)?);
            let grid = ((n.keys as usize).div_ceil(ATTN_ROWS) as u32, blocks, 1);
            launch(Family::Attention, dtype, &name, grid, (128, 1, 1), s, args)?;
        } else {
            let (name, shared) = if warpgroup {
                (format!("attention_bwd_wg_{WG_HEAD_DIM}"), WG_BWD_SHARED_BYTES)
            } else {
                (format!("attention_bwd_mma_{}", n.d), mma_bwd_shared_bytes(n.d as usize))
            };
            let grid = ((n.keys as usize).div_ceil(MMA_BWD_KEYS) as u32, blocks, 1);
            launch_with_shared(Family::Attention, dtype, &name, grid, (256, 1, 1), shared, s, args)?;
        }
    }
    let dq_cast = if warpgroup { "attention_cast_wg" } else { "attention_cast" };
    cast(s, dtype, dq_cast, &dq_acc, &dq, (n.d, n.queries, n.q_heads, layout.dq))?;
    let mut outs = vec![dq, dk, dv];
    if p.sinks {
        let dsinks = CudaStorage::alloc(dtype, n.q_heads as usize, s)?;
        cast(s, dtype, "attention_cast", &dsinks_acc, &dsinks, (n.q_heads, 1, 1, RowStrides::default()))?;
        outs.push(dsinks);
    }
    Ok(outs)
}

/// The kernel that computes an attention backward pass.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BackwardKernel {
    /// `attention_bwd_wg_128` (Hopper warpgroup products); its dQ
    /// accumulator is in its own tile order.
    Warpgroup,
    /// `attention_bwd_mma_<d>` (`mma.sync` products).
    TensorCore,
    /// `attention_bwd_<bucket>` (any type and head dimension).
    Generic,
}

/// `out = acc` rounded from the compute type to `dtype` by `kernel`:
/// `attention_cast` where `acc` holds contiguous rows, `attention_cast_wg`
/// for the warpgroup backward's dQ tiles; `rows` = (row length, rows per
/// head, heads, the output's head-row strides) places them.
fn cast(
    s: &Arc<GpuStream>,
    dtype: Dtype,
    kernel: &str,
    acc: &CudaStorage,
    out: &CudaStorage,
    rows: (i32, i32, i32, RowStrides),
) -> Result<()> {
    let n = out.len();
    if n == 0 {
        return Ok(());
    }
    let (d, queries, heads, strides) = rows;
    let args =
        Args::new().arg(acc.ptr_at(0)).arg(out.ptr_at(0)).arg(n as i64).arg(d).arg(queries).arg(heads).arg(strides);
    launch(Family::Attention, dtype, kernel, (grid_for(n, 4)?, 1, 1), (BLOCK, 1, 1), s, args)
}
