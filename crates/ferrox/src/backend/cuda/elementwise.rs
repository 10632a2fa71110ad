//! Elementwise work: unary and binary maps, `where`, casting and
//! layout-changing copies. Each picks the contiguous kernel (wide loads)
//! when every operand is dense, a kernel taking a scalar operand when one is
//! a broadcast single element, and the strided kernel otherwise.

use super::kernels::{dtype_tag, Family, Module};
use super::launch::{grid_for, grid_full, launch, launch_in, Args, Strided, BLOCK};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::{BinaryOp, UnaryKind, UnaryOp};
use crate::dtype::Dtype;
use crate::error::Result;
use crate::shape::{collapse_dims, Layout};
use cudarc::driver::sys;
use std::sync::Arc;

/// A value passed to a kernel by value: the element's bytes, little endian,
/// in the first `dtype.size()` bytes (the kernels' `FillValue`).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FillValue([u8; 16]);

impl FillValue {
    /// Wraps the bytes of one element.
    pub(crate) fn from_bytes(bytes: &[u8]) -> FillValue {
        let mut v = FillValue::default();
        v.0[..bytes.len()].copy_from_slice(bytes);
        v
    }
}

/// Elements per thread that make one 16-byte load.
pub(crate) fn per_thread(dtype: Dtype) -> usize {
    (16 / dtype.size()).max(1)
}

fn grid1(n: usize, per: usize) -> Result<(u32, u32, u32)> {
    Ok((grid_for(n, per)?, 1, 1))
}

/// One pack of 16 bytes per thread, no loop: the fastest shape for light
/// contiguous kernels.
fn grid_dense(n: usize, per: usize) -> Result<(u32, u32, u32)> {
    Ok((grid_full(n, per), 1, 1))
}

/// `op` over the elements `l` selects.
pub(crate) fn unary(s: &Arc<GpuStream>, op: UnaryOp, x: &CudaStorage, l: &Layout) -> Result<CudaStorage> {
    let out = CudaStorage::alloc(op.kind().kernel_output(x.dtype()), l.size(), s)?;
    unary_to(s, op, x, l, out.ptr_at(0))?;
    Ok(out)
}

/// [`unary`] into the row-contiguous elements at `out`, which may be `x`'s
/// own (a donated, row-contiguous `x` of the output's dtype): each element
/// is read by the thread that then writes it.
pub(crate) fn unary_to(
    s: &Arc<GpuStream>,
    op: UnaryOp,
    x: &CudaStorage,
    l: &Layout,
    out: sys::CUdeviceptr,
) -> Result<()> {
    let dt = x.dtype();
    let n = l.size();
    if n == 0 {
        return Ok(());
    }
    let module = Module::Unary(op, dt);
    let args = Args::new().arg(x.ptr_at(l.offset)).arg(out).arg(n as i64);
    if l.is_row_contiguous() {
        // Heavy math in half or double precision keeps threads busy long
        // enough that fewer, looping blocks win (measured on an H200); f32
        // math and the fast half-precision exp are light.
        let fast_exp = op == UnaryOp::Exp && matches!(dt, Dtype::F16 | Dtype::BF16);
        let math = matches!(op.kind(), UnaryKind::Float | UnaryKind::RealFloat);
        let heavy = math && dt != Dtype::F32 && !fast_exp;
        let grid = if heavy { grid1(n, per_thread(dt))? } else { grid_dense(n, per_thread(dt))? };
        launch_in(module, &format!("{}_contig", op.name()), grid, (BLOCK, 1, 1), s, args)?;
    } else {
        let st = Strided::new(op.name(), &l.shape, [&l.strides])?;
        launch_in(module, &format!("{}_strided", op.name()), grid1(n, 1)?, (BLOCK, 1, 1), s, args.arg(st))?;
    }
    Ok(())
}

/// One operand of a binary op: device data, or a single host element
/// (a Python scalar) passed to the kernel by value.
#[derive(Clone, Copy)]
pub(crate) enum Operand<'a> {
    /// An array on the GPU.
    Device(&'a CudaStorage),
    /// The bytes of one element in host memory.
    Host(FillValue),
}

impl<'a> Operand<'a> {
    /// A one-element device copy of a host operand.
    fn upload(self, s: &Arc<GpuStream>, dt: Dtype) -> Result<Option<CudaStorage>> {
        match self {
            Operand::Device(_) => Ok(None),
            Operand::Host(v) => fill(s, v, dt, 1).map(Some),
        }
    }

    /// The device data of this operand (its upload for a host one) and the
    /// layout reading it.
    fn on_device<'b>(self, uploaded: &'b Option<CudaStorage>, l: &Layout) -> (&'b CudaStorage, Layout)
    where
        'a: 'b,
    {
        match (self, uploaded) {
            (Operand::Device(x), _) => (x, l.clone()),
            (Operand::Host(_), Some(u)) => {
                let broadcast = Layout { shape: l.shape.clone(), strides: vec![0; l.ndim()], offset: 0 };
                (u, broadcast)
            }
            (Operand::Host(_), None) => unreachable!("host operands are uploaded first"),
        }
    }
}

/// `op(a, b)` elementwise; both layouts already have the output shape.
pub(crate) fn binary(
    s: &Arc<GpuStream>,
    op: BinaryOp,
    dt: Dtype,
    a: Operand,
    la: &Layout,
    b: Operand,
    lb: &Layout,
) -> Result<CudaStorage> {
    let needs_upload = match (a, b) {
        (Operand::Host(_), Operand::Host(_)) => true,
        (Operand::Host(_), Operand::Device(_)) => !lb.is_row_contiguous(),
        (Operand::Device(_), Operand::Host(_)) => !la.is_row_contiguous(),
        (Operand::Device(_), Operand::Device(_)) => false,
    };
    if needs_upload {
        // Rare shapes (a host scalar against a strided array): put the host
        // values on the device and take the general path.
        let (ua, ub) = (a.upload(s, dt)?, b.upload(s, dt)?);
        let (xa, la) = a.on_device(&ua, la);
        let (xb, lb) = b.on_device(&ub, lb);
        return binary(s, op, dt, Operand::Device(xa), &la, Operand::Device(xb), &lb);
    }
    let out = CudaStorage::alloc(op.kind().kernel_output(dt), la.size(), s)?;
    binary_to(s, op, dt, a, la, b, lb, out.ptr_at(0))?;
    Ok(out)
}

/// [`binary`] into the row-contiguous elements at `o`; at most one operand
/// is a host scalar, and only against a row-contiguous device operand. `o`
/// may be an operand's own elements (a donated, row-contiguous operand of
/// the output's shape and dtype): each element is read by the thread that
/// then writes it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn binary_to(
    s: &Arc<GpuStream>,
    op: BinaryOp,
    dt: Dtype,
    a: Operand,
    la: &Layout,
    b: Operand,
    lb: &Layout,
    o: sys::CUdeviceptr,
) -> Result<()> {
    let n = la.size();
    if n == 0 {
        return Ok(());
    }
    let name = op.name();
    let per = per_thread(dt);
    let (variant, args, grid) = match (a, b) {
        (Operand::Device(x), Operand::Device(y)) => {
            let (pa, pb) = (x.ptr_at(la.offset), y.ptr_at(lb.offset));
            let base = Args::new().arg(pa).arg(pb).arg(o).arg(n as i64);
            let (ca, cb) = (la.is_row_contiguous(), lb.is_row_contiguous());
            if ca && cb {
                ("vv", base, grid_dense(n, per)?)
            } else if ca && lb.reads_one_element() {
                ("vs", base, grid_dense(n, per)?)
            } else if cb && la.reads_one_element() {
                ("sv", base, grid_dense(n, per)?)
            } else {
                ("strided", base.arg(Strided::new(name, &la.shape, [&la.strides, &lb.strides])?), grid1(n, 1)?)
            }
        }
        (Operand::Host(v), Operand::Device(y)) => {
            ("kv", Args::new().arg(v).arg(y.ptr_at(lb.offset)).arg(o).arg(n as i64), grid_dense(n, per)?)
        }
        (Operand::Device(x), Operand::Host(v)) => {
            ("vk", Args::new().arg(x.ptr_at(la.offset)).arg(v).arg(o).arg(n as i64), grid_dense(n, per)?)
        }
        (Operand::Host(_), Operand::Host(_)) => unreachable!("uploaded above"),
    };
    launch_in(Module::Binary(op, dt), &format!("{name}_{variant}"), grid, (BLOCK, 1, 1), s, args)?;
    Ok(())
}

/// `n` copies of one element.
pub(crate) fn fill(s: &Arc<GpuStream>, value: FillValue, dt: Dtype, n: usize) -> Result<CudaStorage> {
    let out = CudaStorage::alloc(dt, n, s)?;
    if n > 0 {
        let args = Args::new().arg(out.ptr_at(0)).arg(n as i64).arg(value);
        launch(Family::Creation, dt, "fill", grid1(n, per_thread(dt))?, (BLOCK, 1, 1), s, args)?;
    }
    Ok(out)
}

/// `cond ? x : y`; all layouts have the output shape.
pub(crate) fn select(
    s: &Arc<GpuStream>,
    cond: &CudaStorage,
    lc: &Layout,
    x: &CudaStorage,
    lx: &Layout,
    y: &CudaStorage,
    ly: &Layout,
) -> Result<CudaStorage> {
    let dt = x.dtype();
    let n = lc.size();
    let out = CudaStorage::alloc(dt, n, s)?;
    if n == 0 {
        return Ok(out);
    }
    let args = Args::new()
        .arg(cond.ptr_at(lc.offset))
        .arg(x.ptr_at(lx.offset))
        .arg(y.ptr_at(ly.offset))
        .arg(out.ptr_at(0))
        .arg(n as i64);
    if lc.is_row_contiguous() && lx.is_row_contiguous() && ly.is_row_contiguous() {
        launch(Family::Select, dt, "select_contig", grid_dense(n, per_thread(dt))?, (BLOCK, 1, 1), s, args)?;
    } else {
        let st = Strided::new("where", &lc.shape, [&lc.strides, &lx.strides, &ly.strides])?;
        launch(Family::Select, dt, "select_strided", grid1(n, 1)?, (BLOCK, 1, 1), s, args.arg(st))?;
    }
    Ok(out)
}

/// The elements `l` selects, row-contiguous, cast to `dtype`.
pub(crate) fn copy(s: &Arc<GpuStream>, x: &CudaStorage, l: &Layout, dtype: Dtype) -> Result<CudaStorage> {
    let src = x.dtype();
    let n = l.size();
    let out = CudaStorage::alloc(dtype, n, s)?;
    if n == 0 {
        return Ok(out);
    }
    let contiguous = l.is_row_contiguous();
    if contiguous && src == dtype {
        // SAFETY: both ranges lie inside live allocations; ordered on `s`.
        unsafe { sys::cuMemcpyDtoDAsync_v2(out.ptr_at(0), x.ptr_at(l.offset), n * src.size(), s.raw) }
            .result()
            .map_err(super::device::driver_error("copy"))?;
        return Ok(out);
    }
    if src == dtype && (try_transpose(s, x, l, &out)? || try_word_copy(s, x, l, &out)?) {
        return Ok(out);
    }
    let args = Args::new().arg(x.ptr_at(l.offset)).arg(out.ptr_at(0)).arg(n as i64);
    let dst = dtype_tag(dtype);
    if contiguous {
        let per = per_thread(src).min(per_thread(dtype));
        launch(Family::Copy, src, &format!("to_{dst}_contig"), grid_dense(n, per)?, (BLOCK, 1, 1), s, args)?;
    } else {
        let st = Strided::new("copy", &l.shape, [&l.strides])?;
        launch(Family::Copy, src, &format!("to_{dst}_strided"), grid1(n, 1)?, (BLOCK, 1, 1), s, args.arg(st))?;
    }
    Ok(out)
}

/// The elements `l` selects, row-contiguous, with their bytes read as
/// `dtype` (bytes that become bools are normalised to 0 or 1).
pub(crate) fn bitcast(s: &Arc<GpuStream>, x: &CudaStorage, l: &Layout, dtype: Dtype) -> Result<CudaStorage> {
    let dense = copy(s, x, l, x.dtype())?;
    if dtype == Dtype::Bool {
        let bytes = dense.reinterpret(Dtype::U8);
        let n = bytes.len();
        return copy(s, &bytes, &Layout::contiguous(&[n]), Dtype::Bool);
    }
    Ok(dense.reinterpret(dtype))
}

/// A same-dtype copy whose innermost dimension is contiguous and made of
/// whole, aligned 8-byte words (heads of attention moved between
/// `(B, L, H, D)` and `(B, H, L, D)`, say) moves words: one index
/// computation per 8 bytes instead of per element. `false` when the layout
/// does not allow it.
fn try_word_copy(s: &Arc<GpuStream>, x: &CudaStorage, l: &Layout, out: &CudaStorage) -> Result<bool> {
    const WORD: usize = 8;
    let size = x.dtype().size();
    if size >= WORD {
        return Ok(false);
    }
    let per = (WORD / size) as isize;
    let (shape, [st]) = collapse_dims(&l.shape, [&l.strides]);
    let last = shape.len() - 1;
    let src = x.ptr_at(l.offset);
    let aligned = st[last] == 1
        && shape[last] as isize % per == 0
        && st[..last].iter().all(|&s| s % per == 0)
        && src.is_multiple_of(WORD as u64);
    if !aligned {
        return Ok(false);
    }
    let mut words = shape.clone();
    words[last] /= per as usize;
    let strides: Vec<isize> = st.iter().enumerate().map(|(i, &s)| if i == last { 1 } else { s / per }).collect();
    let n = l.size() / per as usize;
    let layout = Strided::new("copy", &words, [&strides])?;
    let args = Args::new().arg(src).arg(out.ptr_at(0)).arg(n as i64).arg(layout);
    launch(Family::Copy, Dtype::U64, "to_u64_strided", grid1(n, 1)?, (BLOCK, 1, 1), s, args)?;
    Ok(true)
}

/// Copies with the tiled transpose kernel when the layout is a (batched)
/// transpose: the input's unit stride is on the second-to-last merged axis.
fn try_transpose(s: &Arc<GpuStream>, x: &CudaStorage, l: &Layout, out: &CudaStorage) -> Result<bool> {
    let (shape, [st]) = collapse_dims(&l.shape, [&l.strides]);
    let (batch, rows, cols, sb, sr, sc) = match (shape.as_slice(), st.as_slice()) {
        ([r, c], [1, sc]) if *sc != 1 => (1, *r, *c, 0, 1, *sc),
        ([b, r, c], [sb, 1, sc]) if *sc != 1 => (*b, *r, *c, *sb, 1, *sc),
        _ => return Ok(false),
    };
    // Blocks walk the tiles by linear block number, so any grid covers the
    // matrix; a short grid (y <= 64) avoids the cost of many tiny blocks.
    let grid = (cols.div_ceil(32).min(65535) as u32, rows.div_ceil(32).min(64) as u32, batch.min(65535) as u32);
    let args = Args::new()
        .arg(x.ptr_at(l.offset))
        .arg(out.ptr_at(0))
        .arg(batch as i64)
        .arg(rows as i64)
        .arg(cols as i64)
        .arg(sb as i64)
        .arg(sr as i64)
        .arg(sc as i64);
    launch(Family::Copy, x.dtype(), "transpose", grid, (32, 8, 1), s, args)?;
    Ok(true)
}
