//! Matrix products: cuBLASLt for f32 (tf32 when allowed), f16, bf16, f64
//! and complex64, reading strided and batched operands in place when the
//! library can; the exact tiled kernel for integer and bool types.
//!
//! cuBLASLt is column-major, so the row-major product `C = A·B` is computed
//! as `Cᵀ = Bᵀ·Aᵀ`: a row-major operand is a transposed column-major one.
//! A bias over the output's last axis (a linear layer's) is added by the
//! library's epilogue, in the same kernel.

use super::allocator::{allocate, DeviceBuffer};
use super::cublaslt_api as lt;
use super::elementwise::{copy, fill, FillValue};
use super::kernels::Family;
use super::launch::{launch, Args};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::{collapse_dims, numel, Layout};
use cudarc::cublaslt::sys;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

static ALLOW_TF32: AtomicBool = AtomicBool::new(false);

/// Lets float32 products use TF32 tensor cores (10-bit mantissa inputs,
/// about 3e-4 relative error); off by default. Returns the previous setting.
pub fn set_allow_tf32(allow: bool) -> bool {
    ALLOW_TF32.swap(allow, Ordering::Relaxed)
}

/// Whether float32 products (and convolutions) may use TF32 tensor cores.
pub(crate) fn tf32_allowed() -> bool {
    ALLOW_TF32.load(Ordering::Relaxed)
}

const WORKSPACE: usize = 32 << 20;

fn blas_error(e: String) -> Error {
    Error::Device { op: "matmul", msg: format!("cuBLASLt error: {e}") }
}

/// How one operand is read: column-major rows × cols with leading dimension
/// `ld`, whether cuBLAS must transpose it, and the batch stride.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Operand {
    rows: u64,
    cols: u64,
    ld: i64,
    trans: bool,
    batch_stride: i64,
}

/// Describes row-major `[r, c]` matrices with strides `(rs, cs)` and one
/// batch stride as the column-major operand `op(X)` of shape `c × r`
/// (the transpose cuBLASLt needs); `None` when a copy is needed.
fn describe(r: usize, c: usize, rs: isize, cs: isize, batch_stride: i64) -> Option<Operand> {
    let (r64, c64) = (r as u64, c as u64);
    if cs == 1 || c == 1 {
        let ld = if r == 1 { c as isize } else { rs };
        if ld >= c as isize && ld > 0 {
            // Row-major r×c is column-major c×r: no transpose.
            return Some(Operand { rows: c64, cols: r64, ld: ld as i64, trans: false, batch_stride });
        }
    }
    if rs == 1 || r == 1 {
        let ld = if c == 1 { r as isize } else { cs };
        if ld >= r as isize && ld > 0 {
            // Column-major r×c: transpose to get c×r.
            return Some(Operand { rows: r64, cols: c64, ld: ld as i64, trans: true, batch_stride });
        }
    }
    None
}

/// The single stride of the batch dimensions, if they merge into one.
fn batch_stride(l: &Layout) -> Option<i64> {
    let nd = l.ndim();
    if nd <= 2 || numel(&l.shape[..nd - 2]) <= 1 {
        return Some(0);
    }
    let (shape, [st]) = collapse_dims(&l.shape[..nd - 2], [&l.strides[..nd - 2]]);
    (shape.len() == 1).then(|| st[0] as i64)
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct PlanKey {
    dtype: Dtype,
    tf32: bool,
    a: Operand,
    b: Operand,
    m: u64,
    n: u64,
    batch: i32,
    align: [u32; 3],
    /// Whether the epilogue adds a bias vector (over `n`).
    bias: bool,
}

struct Plan {
    desc: sys::cublasLtMatmulDesc_t,
    layouts: [sys::cublasLtMatrixLayout_t; 3],
    algo: sys::cublasLtMatmulAlgo_t,
}

struct Blas {
    handle: sys::cublasLtHandle_t,
    plans: HashMap<PlanKey, Plan>,
    workspaces: HashMap<usize, DeviceBuffer>,
}

// SAFETY: cuBLASLt handles and descriptors may be used from any thread; the
// mutex below serialises access.
unsafe impl Send for Blas {}

static BLAS: Mutex<Option<Blas>> = Mutex::new(None);

fn types(dtype: Dtype, tf32: bool) -> (sys::cudaDataType, sys::cublasComputeType_t, sys::cudaDataType) {
    use sys::cublasComputeType_t as C;
    use sys::cudaDataType as D;
    match dtype {
        Dtype::F32 if tf32 => (D::CUDA_R_32F, C::CUBLAS_COMPUTE_32F_FAST_TF32, D::CUDA_R_32F),
        Dtype::F32 => (D::CUDA_R_32F, C::CUBLAS_COMPUTE_32F, D::CUDA_R_32F),
        Dtype::F16 => (D::CUDA_R_16F, C::CUBLAS_COMPUTE_32F, D::CUDA_R_32F),
        Dtype::BF16 => (D::CUDA_R_16BF, C::CUBLAS_COMPUTE_32F, D::CUDA_R_32F),
        Dtype::F64 => (D::CUDA_R_64F, C::CUBLAS_COMPUTE_64F, D::CUDA_R_64F),
        _ => (D::CUDA_C_32F, C::CUBLAS_COMPUTE_32F, D::CUDA_C_32F),
    }
}

/// Largest power of two (up to 256) dividing an address.
fn alignment(ptr: u64) -> u32 {
    if ptr == 0 {
        256
    } else {
        (1u64 << ptr.trailing_zeros().min(8)) as u32
    }
}

unsafe fn set_attr<T>(desc: sys::cublasLtMatmulDesc_t, attr: sys::cublasLtMatmulDescAttributes_t, v: T) -> Result<()> {
    lt::set_matmul_desc_attribute(desc, attr, &v as *const T as *const c_void, std::mem::size_of::<T>())
        .map_err(blas_error)
}

unsafe fn layout(dt: sys::cudaDataType, op: &Operand, batch: i32) -> Result<sys::cublasLtMatrixLayout_t> {
    use sys::cublasLtMatrixLayoutAttribute_t as A;
    let l = lt::create_matrix_layout(dt, op.rows, op.cols, op.ld).map_err(blas_error)?;
    if batch > 1 {
        lt::set_matrix_layout_attribute(
            l,
            A::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
            &batch as *const i32 as *const c_void,
            4,
        )
        .map_err(blas_error)?;
        let st = op.batch_stride;
        lt::set_matrix_layout_attribute(
            l,
            A::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
            &st as *const i64 as *const c_void,
            8,
        )
        .map_err(blas_error)?;
    }
    Ok(l)
}

fn make_plan(handle: sys::cublasLtHandle_t, key: &PlanKey) -> Result<Plan> {
    use sys::cublasLtMatmulDescAttributes_t as D;
    use sys::cublasLtMatmulPreferenceAttributes_t as P;
    let (dt, compute, scale) = types(key.dtype, key.tf32);
    // SAFETY: every object is created here and used only with live handles.
    unsafe {
        let desc = lt::create_matmul_desc(compute, scale).map_err(blas_error)?;
        set_attr(desc, D::CUBLASLT_MATMUL_DESC_TRANSA, key.a.trans as i32)?;
        set_attr(desc, D::CUBLASLT_MATMUL_DESC_TRANSB, key.b.trans as i32)?;
        if key.bias {
            set_attr(desc, D::CUBLASLT_MATMUL_DESC_EPILOGUE, sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS)?;
        }
        let out =
            Operand { rows: key.n, cols: key.m, ld: key.n as i64, trans: false, batch_stride: (key.m * key.n) as i64 };
        let layouts = [layout(dt, &key.a, key.batch)?, layout(dt, &key.b, key.batch)?, layout(dt, &out, key.batch)?];
        let pref = lt::create_matmul_pref().map_err(blas_error)?;
        let set_pref = |attr, v: u64| {
            lt::set_matmul_pref_attribute(pref, attr, &v as *const u64 as *const c_void, 8).map_err(blas_error)
        };
        set_pref(P::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, WORKSPACE as u64)?;
        let set_align = |attr, v: u32| {
            lt::set_matmul_pref_attribute(pref, attr, &v as *const u32 as *const c_void, 4).map_err(blas_error)
        };
        set_align(P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align[0])?;
        set_align(P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align[1])?;
        set_align(P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align[2])?;
        set_align(P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align[2])?;
        let heuristic =
            lt::get_matmul_algo_heuristic(handle, desc, layouts[0], layouts[1], layouts[2], layouts[2], pref);
        let _ = lt::destroy_matmul_pref(pref);
        let heuristic = heuristic.map_err(blas_error)?;
        Ok(Plan { desc, layouts, algo: heuristic.algo })
    }
}

/// Batched `a · b` for `a: [..., M, K]`, `b: [..., K, N]` (batch dims
/// already broadcast to the output's).
pub(crate) fn matmul(
    s: &Arc<GpuStream>,
    a: &CudaStorage,
    la: &Layout,
    b: &CudaStorage,
    lb: &Layout,
) -> Result<CudaStorage> {
    Ok(product(s, a, la, b, lb, None)?.expect("a product without a bias always runs"))
}

/// `a · b + bias` (as [`matmul`]; `bias` the device address of N
/// contiguous elements of the dtype, added to every row) through the
/// epilogue of one cuBLASLt call; None where the library cannot add it
/// (integer or float64 operands, a batch that does not fold into one
/// product, an empty product, a bias not 16-byte aligned).
pub(crate) fn matmul_bias(
    s: &Arc<GpuStream>,
    a: &CudaStorage,
    la: &Layout,
    b: &CudaStorage,
    lb: &Layout,
    bias: u64,
) -> Result<Option<CudaStorage>> {
    if !matches!(a.dtype(), Dtype::F32 | Dtype::F16 | Dtype::BF16) || !bias.is_multiple_of(16) {
        return Ok(None);
    }
    product(s, a, la, b, lb, Some(bias))
}

/// [`matmul`], with the bias epilogue when `bias` is given; None when the
/// bias cannot be added here (see [`matmul_bias`]).
fn product(
    s: &Arc<GpuStream>,
    a: &CudaStorage,
    la: &Layout,
    b: &CudaStorage,
    lb: &Layout,
    bias: Option<u64>,
) -> Result<Option<CudaStorage>> {
    let dt = a.dtype();
    let nd = la.ndim();
    let (m, k, n) = (la.shape[nd - 2], la.shape[nd - 1], lb.shape[nd - 1]);
    let batch = numel(&la.shape[..nd - 2]);
    if bias.is_some() && (k == 0 || batch * m * n == 0) {
        return Ok(None);
    }
    if k == 0 {
        // Sums over nothing.
        return fill(s, FillValue::default(), dt, batch * m * n).map(Some);
    }
    if batch * m * n == 0 {
        return CudaStorage::alloc(dt, 0, s).map(Some);
    }
    match dt {
        Dtype::F32 | Dtype::F16 | Dtype::BF16 | Dtype::F64 | Dtype::C64 => {}
        _ => return exact(s, a, la, b, lb, CudaStorage::alloc(dt, batch * m * n, s)?).map(Some),
    }
    // One large product beats a batch of products sharing `b`.
    let (la, lb, m, batch) = match fold_batch(la, lb) {
        Some((la, lb)) => (la, lb, batch * m, 1),
        None => (la.clone(), lb.clone(), m, batch),
    };
    if bias.is_some() && batch > 1 {
        return Ok(None);
    }
    let out = CudaStorage::alloc(dt, batch * m * n, s)?;
    // Operands cuBLASLt cannot read in place are made contiguous first.
    let readable = |l: &Layout| {
        let nd = l.ndim();
        let (r, c) = (l.shape[nd - 2], l.shape[nd - 1]);
        let st = batch_stride(l)?;
        describe(r, c, l.strides[nd - 2], l.strides[nd - 1], st)
    };
    let (a_copy, la) = match readable(&la) {
        Some(_) => (None, la),
        None => (Some(copy(s, a, &la, dt)?), Layout::contiguous(&la.shape)),
    };
    let (b_copy, lb) = match readable(&lb) {
        Some(_) => (None, lb),
        None => (Some(copy(s, b, &lb, dt)?), Layout::contiguous(&lb.shape)),
    };
    let (a, b) = (a_copy.as_ref().unwrap_or(a), b_copy.as_ref().unwrap_or(b));
    let op_a = readable(&la).expect("contiguous operands are readable");
    let op_b = readable(&lb).expect("contiguous operands are readable");
    let (pa, pb, pc) = (a.ptr_at(la.offset), b.ptr_at(lb.offset), out.ptr_at(0));
    // Cᵀ = Bᵀ·Aᵀ: cuBLASLt's A is our B.
    let key = PlanKey {
        dtype: dt,
        tf32: dt == Dtype::F32 && ALLOW_TF32.load(Ordering::Relaxed),
        a: op_b,
        b: op_a,
        m: m as u64,
        n: n as u64,
        batch: i32::try_from(batch).map_err(|_| Error::invalid("matmul", "batch too large for cuBLASLt"))?,
        align: [alignment(pb), alignment(pa), alignment(pc)],
        bias: bias.is_some(),
    };
    let mut guard = BLAS.lock().unwrap_or_else(|e| e.into_inner());
    if guard.is_none() {
        if let Err(e) = lt::api() {
            return Err(Error::Device { op: "matmul", msg: format!("cuBLASLt is missing: {e}") });
        }
        let handle = lt::create_handle().map_err(blas_error)?;
        *guard = Some(Blas { handle, plans: HashMap::new(), workspaces: HashMap::new() });
    }
    let blas = guard.as_mut().expect("initialised above");
    if !blas.plans.contains_key(&key) {
        match make_plan(blas.handle, &key) {
            Ok(plan) => {
                blas.plans.insert(key, plan);
            }
            // No algorithm with the epilogue for these operands: the caller adds the bias.
            Err(_) if bias.is_some() => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    if let std::collections::hash_map::Entry::Vacant(e) = blas.workspaces.entry(s.index) {
        e.insert(allocate(WORKSPACE, s)?);
    }
    let plan = &blas.plans[&key];
    if let Some(bias) = bias {
        // SAFETY: the descriptor is live; the address names N elements of
        // the product's dtype (the caller's contract).
        unsafe { set_attr(plan.desc, sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias)? };
    }
    let workspace = blas.workspaces[&s.index].ptr();
    let (one32, zero32) = ([1f32, 0.0], [0f32, 0.0]);
    let (one64, zero64) = (1f64, 0f64);
    let (alpha, beta): (*const c_void, *const c_void) = match dt {
        Dtype::F64 => (&one64 as *const f64 as _, &zero64 as *const f64 as _),
        _ => (one32.as_ptr() as _, zero32.as_ptr() as _),
    };
    // SAFETY: pointers name live device buffers of the described shapes; the
    // plan's descriptors were built for exactly these operands.
    unsafe {
        lt::matmul(
            blas.handle,
            plan.desc,
            alpha,
            beta,
            pb as *const c_void,
            plan.layouts[0],
            pa as *const c_void,
            plan.layouts[1],
            pc as *const c_void,
            plan.layouts[2],
            pc as *mut c_void,
            plan.layouts[2],
            &plan.algo,
            workspace as *mut c_void,
            WORKSPACE,
            s.raw as _,
        )
    }
    .map_err(blas_error)?;
    Ok(Some(out))
}

/// `[batch.., M, K] · [K, N]` (the batch of `b` broadcast, the rows of `a`
/// evenly spaced across its batch) as one `[batch·M, K] · [K, N]` product.
fn fold_batch(la: &Layout, lb: &Layout) -> Option<(Layout, Layout)> {
    let nd = la.ndim();
    if numel(&la.shape[..nd - 2]) <= 1 || batch_stride(lb) != Some(0) {
        return None;
    }
    let (rows, [st]) = collapse_dims(&la.shape[..nd - 1], [&la.strides[..nd - 1]]);
    if rows.len() != 1 {
        return None;
    }
    let a =
        Layout { shape: vec![rows[0], la.shape[nd - 1]], strides: vec![st[0], la.strides[nd - 1]], offset: la.offset };
    let b = Layout { shape: lb.shape[nd - 2..].to_vec(), strides: lb.strides[nd - 2..].to_vec(), offset: lb.offset };
    Some((a, b))
}

/// The exact tiled kernel (integers wrap, bools are or-of-ands).
fn exact(
    s: &Arc<GpuStream>,
    a: &CudaStorage,
    la: &Layout,
    b: &CudaStorage,
    lb: &Layout,
    out: CudaStorage,
) -> Result<CudaStorage> {
    let nd = la.ndim();
    let (m, k, n) = (la.shape[nd - 2], la.shape[nd - 1], lb.shape[nd - 1]);
    let batch = numel(&la.shape[..nd - 2]);
    // The kernel takes one batch stride per operand.
    let (a_copy, la, sa) = match batch_stride(la) {
        Some(st) => (None, la.clone(), st),
        None => (Some(copy(s, a, la, a.dtype())?), Layout::contiguous(&la.shape), (m * k) as i64),
    };
    let (b_copy, lb, sb) = match batch_stride(lb) {
        Some(st) => (None, lb.clone(), st),
        None => (Some(copy(s, b, lb, b.dtype())?), Layout::contiguous(&lb.shape), (k * n) as i64),
    };
    let (a, b) = (a_copy.as_ref().unwrap_or(a), b_copy.as_ref().unwrap_or(b));
    let args = Args::new()
        .arg(a.ptr_at(la.offset))
        .arg(b.ptr_at(lb.offset))
        .arg(out.ptr_at(0))
        .arg(batch as i64)
        .arg(m as i64)
        .arg(n as i64)
        .arg(k as i64)
        .arg(sa)
        .arg(la.strides[nd - 2] as i64)
        .arg(la.strides[nd - 1] as i64)
        .arg(sb)
        .arg(lb.strides[nd - 2] as i64)
        .arg(lb.strides[nd - 1] as i64);
    let grid = (n.div_ceil(16) as u32, m.div_ceil(16).min(65535) as u32, batch.min(65535) as u32);
    launch(Family::Matmul, a.dtype(), "matmul", grid, (16, 16, 1), s, args)?;
    Ok(out)
}
