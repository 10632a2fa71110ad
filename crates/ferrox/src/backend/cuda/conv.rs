//! Convolutions on the GPU.
//!
//! A convolution that is a matrix product (1×1 filters without stride or
//! padding; or filters covering the whole input, as the filter gradient of
//! such a convolution is) runs as that product (`matmul.rs`), reading the
//! operands in place. Any other node runs as whichever of cuDNN's three routines
//! (`cudnn.rs`) computes it with its operands as they lie in memory:
//! * the forward routine for a plain convolution;
//! * backward data for one with input dilation (the input gradient the
//!   `Convolution` vjp builds, and transposed convolutions): the node's
//!   filters, first and last axes swapped, are the forward filters;
//! * backward filter for the filter gradient the vjp builds, a convolution
//!   of the input and the output gradient with batch and channel axes
//!   swapped: swapped back, they are the forward operands cuDNN wants.
//!
//! Without cuDNN (missing, or disabled by `FERROX_CUDNN=0`), or for what
//! it cannot do (asymmetric padding that changes the output size, grouped
//! gradients), float16 and bfloat16 convolutions run as implicit matrix
//! products on the tensor cores (`conv_igemm.rs`): any node, the three
//! kinds above included, without a window matrix.
//!
//! What remains (float32 and float64, whose cuBLASLt products are fast and
//! exact enough, and the rare half-precision node past the implicit
//! kernels' 32-bit indexing) takes the im2col path: `conv_im2col`
//! (`kernels/conv.cu`) writes the windows of a block of output positions into a scratch matrix,
//! and the cuBLASLt product of `matmul.rs` multiplies it with the filters,
//! one batched product over the groups (float16 and bfloat16 accumulate in
//! float32 there). Blocks keep the scratch under [`SCRATCH_BYTES`]; with
//! several blocks or groups, `conv_regroup` moves each product into the
//! output's channels-last rows.

use super::conv_igemm::conv_igemm;
use super::cudnn::{self, DnnConv, Pointers, Routine};
use super::elementwise::{copy, fill, FillValue};
use super::kernels::Family;
use super::launch::{grid_for, launch, Args, BLOCK};
use super::matmul::matmul;
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::{dilated, ConvParams};
use crate::dtype::Dtype;
use crate::error::Result;
use crate::shape::{collapse_dims, numel, Layout};
use std::sync::Arc;

/// The most scratch bytes one im2col block takes.
const SCRATCH_BYTES: usize = 256 << 20;

/// The kernels `conv.cu` defines for `dtype` (for the compile check).
pub(crate) fn kernel_names(dtype: Dtype) -> Vec<String> {
    if dtype.is_floating() {
        vec!["conv_im2col".to_string(), "conv_regroup".to_string()]
    } else {
        Vec::new()
    }
}

/// `conv.cu`'s `FxConvGeom`, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct ConvGeom {
    dims: i64,
    input: [i64; 3],
    out: [i64; 3],
    k: [i64; 3],
    stride: [i64; 3],
    lo: [i64; 3],
    kdil: [i64; 3],
    idil: [i64; 3],
    xs: [i64; 5],
    groups: i64,
    cg: i64,
    flip: i64,
}

/// The convolution of `x` `(N, in..., C_in)` with `w` `(C_out, k..., C_in /
/// groups)` (one real float dtype, any layouts): `(N, out..., C_out)`,
/// row-contiguous.
pub(crate) fn conv(
    s: &Arc<GpuStream>,
    p: &ConvParams,
    x: &CudaStorage,
    lx: &Layout,
    w: &CudaStorage,
    lw: &Layout,
) -> Result<CudaStorage> {
    let out_shape = p.output_shape("conv", &lx.shape, &lw.shape)?;
    let dt = x.dtype();
    let dims = p.dims();
    let groups = p.groups;
    let (c_in, c_out) = (lx.shape[dims + 1], lw.shape[0]);
    let (cg, og) = (c_in / groups, c_out / groups);
    let k = numel(&lw.shape[1..=dims]) * cg;
    let rows = numel(&out_shape[..=dims]);
    let total = rows * c_out;
    if total == 0 || k == 0 || lx.size() == 0 {
        // No outputs, or sums over nothing.
        return fill(s, FillValue::default(), dt, total);
    }
    if let Some((la, lb)) = as_matmul(p, lx, lw, &out_shape) {
        return matmul(s, x, &la, w, &lb);
    }
    if let Some(out) = conv_cudnn(s, p, x, lx, w, lw, &out_shape)? {
        return Ok(out);
    }
    if let Some(out) = conv_igemm(s, p, x, lx, w, lw, &out_shape)? {
        return Ok(out);
    }
    // The im2col path: float32, float64, and what the implicit kernels
    // decline (see the module docs).
    // The filters as one (groups, K, og) batch: row-contiguous filters
    // merge their taps and channels into K.
    let (w_copy, lw) = match lw.is_row_contiguous() {
        true => (None, lw.clone()),
        false => (Some(copy(s, w, lw, dt)?), Layout::contiguous(&lw.shape)),
    };
    let w = w_copy.as_ref().unwrap_or(w);
    let filters =
        Layout { shape: vec![groups, k, og], strides: vec![(og * k) as isize, 1, k as isize], offset: lw.offset };
    let mut geom =
        ConvGeom { dims: dims as i64, groups: groups as i64, cg: cg as i64, flip: p.flip as i64, ..Default::default() };
    for a in 0..dims {
        geom.input[a] = lx.shape[a + 1] as i64;
        geom.out[a] = out_shape[a + 1] as i64;
        geom.k[a] = lw.shape[a + 1] as i64;
        geom.stride[a] = p.stride[a];
        geom.lo[a] = p.padding_lo[a];
        geom.kdil[a] = p.kernel_dilation[a];
        geom.idil[a] = p.input_dilation[a];
    }
    for (dst, &st) in geom.xs.iter_mut().zip(&lx.strides) {
        *dst = st as i64;
    }
    let block_rows = (SCRATCH_BYTES / (groups * k * dt.size())).clamp(1, rows);
    let out = match block_rows == rows && groups == 1 {
        true => None, // the one product is the output
        false => Some(CudaStorage::alloc(dt, total, s)?),
    };
    let mut r0 = 0;
    loop {
        let nr = block_rows.min(rows - r0);
        let cols = CudaStorage::alloc(dt, nr * groups * k, s)?;
        let args = Args::new().arg(x.ptr_at(lx.offset)).arg(cols.ptr_at(0)).arg(r0 as i64).arg(nr as i64).arg(geom);
        launch(Family::Conv, dt, "conv_im2col", (grid_for(nr * groups * k, 1)?, 1, 1), (BLOCK, 1, 1), s, args)?;
        // Group g's windows: rows of stride groups * K from column g * K.
        let windows =
            Layout { shape: vec![groups, nr, k], strides: vec![k as isize, (groups * k) as isize, 1], offset: 0 };
        let y = matmul(s, &cols, &windows, w, &filters)?;
        let Some(out) = &out else {
            return Ok(y);
        };
        let args = Args::new()
            .arg(y.ptr_at(0))
            .arg(out.ptr_at(0))
            .arg(r0 as i64)
            .arg(nr as i64)
            .arg(groups as i64)
            .arg(og as i64);
        launch(Family::Conv, dt, "conv_regroup", (grid_for(nr * c_out, 1)?, 1, 1), (BLOCK, 1, 1), s, args)?;
        r0 += nr;
        if r0 == rows {
            break;
        }
    }
    Ok(out.expect("several blocks or groups write into the output"))
}

/// The convolution as a product `a · b` of an `[R, K]` view of the input and
/// a `[K, C_out]` view of the filters (`R` the output's rows), when it is
/// one: one group, no input dilation, and either 1×1 filters without stride
/// or padding, or unflipped, undilated filters exactly covering the
/// unpadded input (one output position).
fn as_matmul(p: &ConvParams, lx: &Layout, lw: &Layout, out_shape: &[usize]) -> Option<(Layout, Layout)> {
    let dims = p.dims();
    let last = dims + 1;
    if p.groups != 1 || p.input_dilation.iter().any(|&d| d != 1) {
        return None;
    }
    let no_padding = p.padding_lo.iter().chain(&p.padding_hi).all(|&v| v == 0);
    let pointwise = no_padding && p.stride.iter().all(|&s| s == 1) && lw.shape[1..last].iter().all(|&k| k == 1);
    if pointwise {
        let (rows, [rs]) = collapse_dims(&lx.shape[..last], [&lx.strides[..last]]);
        if rows.len() != 1 {
            return None;
        }
        let a =
            Layout { shape: vec![rows[0], lx.shape[last]], strides: vec![rs[0], lx.strides[last]], offset: lx.offset };
        let b = Layout {
            shape: vec![lw.shape[last], lw.shape[0]],
            strides: vec![lw.strides[last], lw.strides[0]],
            offset: lw.offset,
        };
        return Some((a, b));
    }
    let covering = !p.flip
        && p.padding_lo.iter().all(|&v| v == 0)
        && p.kernel_dilation.iter().all(|&d| d == 1)
        && out_shape[1..last].iter().all(|&o| o == 1)
        && lx.shape[1..last] == lw.shape[1..last];
    if !covering {
        return None;
    }
    // The sum runs over (spatial..., channel); either order of the two, as
    // long as it merges into one stride in both operands.
    let mut orders: Vec<Vec<usize>> = vec![(1..=last).collect()];
    orders.push(std::iter::once(last).chain(1..last).collect());
    orders.into_iter().find_map(|order| {
        let shape: Vec<usize> = order.iter().map(|&a| lx.shape[a]).collect();
        let xs: Vec<isize> = order.iter().map(|&a| lx.strides[a]).collect();
        let ws: Vec<isize> = order.iter().map(|&a| lw.strides[a]).collect();
        let (k, [xk, wk]) = collapse_dims(&shape, [&xs, &ws]);
        (k.len() == 1).then(|| {
            let a = Layout { shape: vec![lx.shape[0], k[0]], strides: vec![lx.strides[0], xk[0]], offset: lx.offset };
            let b = Layout { shape: vec![k[0], lw.shape[0]], strides: vec![wk[0], lw.strides[0]], offset: lw.offset };
            (a, b)
        })
    })
}

/// `l` with its first and last axes swapped (a view of the same memory).
fn swap_ends(l: &Layout) -> Layout {
    let mut l = l.clone();
    let last = l.ndim() - 1;
    l.shape.swap(0, last);
    l.strides.swap(0, last);
    l
}

/// The address of an operand packed channels-last as cuDNN reads it: in
/// place when its layout is row-contiguous, else from the copy kept in
/// `keep` (which must outlive the routine).
fn packed(
    s: &Arc<GpuStream>,
    x: &CudaStorage,
    l: &Layout,
    keep: &mut Vec<CudaStorage>,
) -> Result<cudarc::driver::sys::CUdeviceptr> {
    if l.is_row_contiguous() {
        return Ok(x.ptr_at(l.offset));
    }
    let c = copy(s, x, l, x.dtype())?;
    let ptr = c.ptr_at(0);
    keep.push(c);
    Ok(ptr)
}

/// Dimensions for cuDNN: `(a, b, spatial...)` with a unit spatial axis in
/// front of a single one (cuDNN wants at least two); `None` past `i32`.
fn dnn_dims(a: usize, b: usize, spatial: &[usize]) -> Option<Vec<i32>> {
    let mut d = vec![a, b];
    if spatial.len() == 1 {
        d.push(1);
    }
    d.extend(spatial);
    d.into_iter().map(|v| i32::try_from(v).ok()).collect()
}

/// Per-axis parameters for cuDNN, with the unit axis's entry for 1-D.
fn dnn_params(v: Vec<i64>, unit: i64) -> Option<Vec<i32>> {
    let mut out = Vec::with_capacity(3);
    if v.len() == 1 {
        out.push(unit as i32);
    }
    for x in v {
        out.push(i32::try_from(x).ok()?);
    }
    Some(out)
}

/// `(n - extent) / step + 1` when `n >= extent` (an output size), else `None`.
fn positions(n: i64, extent: i64, step: i64) -> Option<i64> {
    (n >= extent).then(|| (n - extent) / step + 1)
}

/// The cuDNN routine that computes convolution `p` of an input of shape `xs`
/// with filters `ws` into an output of shape `os` (see the module docs), or
/// `None` when none does. `prefer_filter` picks backward filter over forward
/// where both could (operands that are the swapped views the vjp builds).
fn dnn_plan(
    p: &ConvParams,
    dt: Dtype,
    xs: &[usize],
    ws: &[usize],
    os: &[usize],
    prefer_filter: bool,
) -> Option<DnnConv> {
    let dims = p.dims();
    let last = dims + 1;
    let axes = 0..dims;
    let (n, k, o) = (|a: usize| xs[a + 1] as i64, |a: usize| ws[a + 1] as i64, |a: usize| os[a + 1] as i64);
    let (st, kd, id, lo) = (&p.stride, &p.kernel_dilation, &p.input_dilation, &p.padding_lo);
    let kext = |a: usize| dilated(ws[a + 1], kd[a]);
    let make = |routine, x: Option<Vec<i32>>, w: Option<Vec<i32>>, y: Option<Vec<i32>>, pad, stride, dil, flip| {
        Some(DnnConv {
            routine,
            dtype: dt,
            x: x?,
            w: w?,
            y: y?,
            pad: dnn_params(pad, 0)?,
            stride: dnn_params(stride, 1)?,
            dilation: dnn_params(dil, 1)?,
            groups: i32::try_from(p.groups).ok()?,
            flip,
        })
    };
    if id.iter().any(|&d| d > 1) {
        // The adjoint of a forward convolution with stride `id` and padding
        // `kext - 1 - lo`: backward data, the filters' ends swapped.
        let pads: Vec<i64> = axes.clone().map(|a| kext(a) - 1 - lo[a]).collect();
        let fits = p.groups == 1
            && st.iter().all(|&s| s == 1)
            && axes.clone().all(|a| pads[a] >= 0 && positions(o(a) + 2 * pads[a], kext(a), id[a]) == Some(n(a)));
        if !fits {
            return None;
        }
        let (spatial_n, spatial_k, spatial_o) = (&xs[1..last], &ws[1..last], &os[1..last]);
        return make(
            Routine::BackwardData,
            dnn_dims(os[0], os[last], spatial_o),
            dnn_dims(xs[last], os[last], spatial_k),
            dnn_dims(xs[0], xs[last], spatial_n),
            pads,
            id.clone(),
            kd.clone(),
            !p.flip,
        );
    }
    let pads_ok = lo.iter().all(|&l| l >= 0);
    let forward = pads_ok && axes.clone().all(|a| positions(n(a) + 2 * lo[a], kext(a), st[a]) == Some(o(a)));
    // As backward filter, the node's output positions are the filter taps
    // (stride and kernel dilation trade places).
    let filter = pads_ok
        && p.groups == 1
        && !p.flip
        && axes.clone().all(|a| positions(n(a) + 2 * lo[a], dilated(os[a + 1], st[a]), kd[a]) == Some(k(a)));
    if filter && (prefer_filter || !forward) {
        return make(
            Routine::BackwardFilter,
            dnn_dims(xs[last], xs[0], &xs[1..last]),
            dnn_dims(ws[0], xs[0], &os[1..last]),
            dnn_dims(xs[last], ws[0], &ws[1..last]),
            lo.clone(),
            kd.clone(),
            st.clone(),
            false,
        );
    }
    if !forward {
        return None;
    }
    make(
        Routine::Forward,
        dnn_dims(xs[0], xs[last], &xs[1..last]),
        dnn_dims(ws[0], ws[last], &ws[1..last]),
        dnn_dims(os[0], os[last], &os[1..last]),
        lo.clone(),
        st.clone(),
        kd.clone(),
        p.flip,
    )
}

/// The convolution through cuDNN, or `None` when cuDNN is missing or
/// cannot compute it.
fn conv_cudnn(
    s: &Arc<GpuStream>,
    p: &ConvParams,
    x: &CudaStorage,
    lx: &Layout,
    w: &CudaStorage,
    lw: &Layout,
    out_shape: &[usize],
) -> Result<Option<CudaStorage>> {
    let dt = x.dtype();
    let (sx, sw) = (swap_ends(lx), swap_ends(lw));
    let prefer_filter =
        sx.is_row_contiguous() && sw.is_row_contiguous() && !(lx.is_row_contiguous() && lw.is_row_contiguous());
    let Some(plan) = dnn_plan(p, dt, &lx.shape, &lw.shape, out_shape, prefer_filter) else {
        return Ok(None);
    };
    let total = numel(out_shape);
    let mut keep = Vec::new();
    let out = CudaStorage::alloc(dt, total, s)?;
    let (ptrs, result) = match plan.routine {
        Routine::Forward => {
            let ptrs = Pointers { x: packed(s, x, lx, &mut keep)?, w: packed(s, w, lw, &mut keep)?, y: out.ptr_at(0) };
            (ptrs, None)
        }
        Routine::BackwardData => {
            let ptrs = Pointers { x: out.ptr_at(0), w: packed(s, w, &sw, &mut keep)?, y: packed(s, x, lx, &mut keep)? };
            (ptrs, None)
        }
        Routine::BackwardFilter => {
            // cuDNN writes the filter gradient (C_out, taps..., C_in) into
            // `out`; the node's output is it with its ends swapped.
            let ptrs =
                Pointers { x: packed(s, x, &sx, &mut keep)?, w: out.ptr_at(0), y: packed(s, w, &sw, &mut keep)? };
            let mut dw_shape = out_shape.to_vec();
            let last = dw_shape.len() - 1;
            dw_shape.swap(0, last);
            (ptrs, Some(swap_ends(&Layout::contiguous(&dw_shape))))
        }
    };
    if !cudnn::run(s, &plan, ptrs)? {
        return Ok(None);
    }
    match result {
        None => Ok(Some(out)),
        Some(view) => Ok(Some(copy(s, &out, &view, dt)?)),
    }
}
