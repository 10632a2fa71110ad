//! The CUDA backend: NVRTC-compiled kernels (sources in `kernels/`),
//! cuBLASLt matrix products, a caching allocator, and one CUDA stream per
//! ferrox stream. The driver, NVRTC and cuBLASLt are loaded at run time, so
//! a build with this backend runs on machines without any of them (where
//! [`is_available`] is false).
//!
//! Work is enqueued asynchronously; reading an array on the host waits for
//! the stream that wrote it.

mod allocator;
mod bind;
pub mod compiler;
mod conv;
mod conv_igemm;
mod creation;
mod cublas_api;
mod cublaslt_api;
mod cudnn;
mod cudnn_api;
mod cufft_api;
mod cusolver_api;
pub mod custom_kernel;
mod device;
mod elementwise;
mod fast;
mod fft;
pub mod fused;
pub mod fused_reduce;
mod gather;
mod graph;
pub mod kernels;
mod launch;
pub mod libraries;
mod linalg;
mod matmul;
mod nvrtc_api;
mod optimizer;
mod random;
mod reduce;
mod scan;
mod scatter;
mod sort;
mod storage;
mod stream;

pub use device::is_available;
pub(crate) use graph::CapturedGraph;
pub use matmul::set_allow_tf32;
pub use storage::CudaStorage;

use super::cpu::CpuStorage;
use super::{ArgReduceOp, Backend, BinaryOp, FftOp, LinalgOp, ReduceOp, ScanOp, ScatterOp, Storage, UnaryOp};
use crate::device::Device;
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};
use crate::shape::Layout;
use cudarc::driver::sys;
use device::{driver_error, gpu};
use elementwise::{FillValue, Operand};
use std::sync::{Arc, Mutex};
use stream::GpuStream;

/// The GPU backend bound to one stream: every kernel it launches is
/// enqueued on that stream.
#[derive(Debug)]
pub struct CudaBackend {
    stream: Arc<GpuStream>,
}

static BACKENDS: Mutex<Vec<(usize, &'static CudaBackend)>> = Mutex::new(Vec::new());

/// The backend that enqueues on ferrox stream `index` of the GPU.
pub(crate) fn backend_for(index: usize) -> Result<&'static CudaBackend> {
    let mut all = BACKENDS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, b)) = all.iter().find(|(i, _)| *i == index) {
        return Ok(b);
    }
    let b: &'static CudaBackend = Box::leak(Box::new(CudaBackend { stream: stream::stream(index)? }));
    all.push((index, b));
    Ok(b)
}

/// Waits until all work enqueued on ferrox stream `index` has run.
pub(crate) fn synchronize_stream(index: usize) -> Result<()> {
    stream::stream(index)?.synchronize()
}

/// Waits until all GPU work enqueued so far has run.
pub fn synchronize() -> Result<()> {
    if !is_available() {
        return Ok(());
    }
    stream::synchronize_all()
}

/// The raw `CUstream` handle of ferrox stream `index` (for libraries that
/// order their work with ferrox's, e.g. through DLPack's `stream=`).
pub fn raw_stream(index: usize) -> Result<u64> {
    Ok(stream::stream(index)?.raw as u64)
}

/// An evaluated GPU array viewing device memory another library owns,
/// without a copy: `shape`, `strides` (in elements, non-negative) and
/// `offset` select the elements from `ptr`; ferrox stream `stream` is the
/// one later work orders after, and `release` runs once no ferrox work
/// uses the memory.
///
/// # Safety
/// `ptr` must address device memory of the current GPU that holds every
/// element the layout selects, valid until `release` runs, and written by
/// work already ordered before `stream`.
pub unsafe fn array_from_device_memory(
    ptr: u64,
    dtype: crate::dtype::Dtype,
    shape: &[usize],
    strides: &[isize],
    offset: usize,
    stream: usize,
    release: impl FnOnce() + Send + 'static,
) -> Result<crate::array::Array> {
    if strides.len() != shape.len() || strides.iter().any(|&s| s < 0) {
        return Err(Error::invalid("from_dlpack", "Strides must be non-negative, one per dimension."));
    }
    let reach = if shape.contains(&0) {
        0
    } else {
        offset + 1 + shape.iter().zip(strides).map(|(&d, &s)| (d - 1) * s as usize).sum::<usize>()
    };
    let owner = allocator::ForeignOwner::new(release);
    let storage = CudaStorage::borrowed(ptr, dtype, reach, &stream::stream(stream)?, owner);
    let layout = Layout { shape: shape.to_vec(), strides: strides.to_vec(), offset };
    Ok(crate::array::Array::from_data(
        crate::array::ArrayData { storage: Arc::new(Storage::Cuda(storage)), layout },
        dtype,
    ))
}

/// The GPU's name, e.g. "NVIDIA H200", if there is one.
pub fn device_name() -> Option<String> {
    gpu().ok().map(|d| d.name.clone())
}

/// Bytes of GPU memory, if there is a GPU.
pub fn device_memory() -> Option<usize> {
    gpu().ok().map(|d| d.total_memory)
}

/// The GPU's compute capability as an architecture name ("sm_90").
pub fn device_architecture() -> Option<String> {
    gpu().ok().map(|d| format!("sm_{}{}", d.arch.0, d.arch.1))
}

/// Bytes held in the GPU buffer cache.
pub(crate) fn cache_memory() -> usize {
    if is_available() {
        allocator::cache_memory()
    } else {
        0
    }
}

/// Sets the GPU buffer cache limit; returns the previous one.
pub(crate) fn set_cache_limit(limit: usize) -> usize {
    if is_available() {
        allocator::set_cache_limit(limit)
    } else {
        0
    }
}

/// Frees every cached GPU buffer.
pub(crate) fn clear_cache() -> Result<()> {
    if is_available() {
        allocator::clear_cache()
    } else {
        Ok(())
    }
}

fn device_of(s: &Storage) -> Option<&CudaStorage> {
    match s {
        Storage::Cuda(c) => Some(c),
        Storage::Cpu(_) => None,
    }
}

impl CudaBackend {
    /// The device data of an input, with this stream ordered after its writer.
    fn input<'a>(&self, s: &'a Storage) -> Result<&'a CudaStorage> {
        let c = device_of(s).ok_or_else(|| Error::Device {
            op: "gpu",
            msg: "internal error: a GPU kernel was given host data".into(),
        })?;
        c.buffer().read_on(&self.stream)?;
        Ok(c)
    }

    /// A binary operand: device data, or one host element passed by value.
    fn operand<'a>(&self, s: &'a Storage, l: &Layout) -> Result<Operand<'a>> {
        match s {
            Storage::Cuda(_) => Ok(Operand::Device(self.input(s)?)),
            Storage::Cpu(h) => {
                let size = h.dtype().size();
                let at = l.offset * size;
                Ok(Operand::Host(FillValue::from_bytes(&h.bytes()[at..at + size])))
            }
        }
    }
}

fn wrap(c: CudaStorage) -> Result<Storage> {
    Ok(Storage::Cuda(c))
}

/// Copies `n` elements of `dtype` starting at device address `src` into new
/// host storage, after the work on `stream` so far.
fn download(stream: &GpuStream, src: sys::CUdeviceptr, dtype: Dtype, n: usize) -> Result<CpuStorage> {
    CpuStorage::filled_with(dtype, n, |bytes| {
        if bytes.is_empty() {
            return Ok(());
        }
        // SAFETY: `bytes` is a live host buffer of the copied size, `src`
        // a live device range; the stream is synchronized before returning.
        unsafe {
            sys::cuMemcpyDtoHAsync_v2(bytes.as_mut_ptr() as *mut _, src, bytes.len(), stream.raw)
                .result()
                .map_err(driver_error("to_host"))?;
        }
        stream.synchronize()
    })
}

impl Backend for CudaBackend {
    fn device(&self) -> Device {
        Device::GPU
    }

    fn upload(&self, host: &CpuStorage, layout: &Layout) -> Result<Storage> {
        let dense;
        let (host, offset) = if layout.is_row_contiguous() {
            (host, layout.offset)
        } else {
            dense = CpuStorage::new(super::cpu::elementwise::copy_buffer(host.buffer(), layout)?);
            (&dense, 0)
        };
        let dtype = host.dtype();
        let n = layout.size();
        let out = CudaStorage::alloc(dtype, n, &self.stream)?;
        if n > 0 {
            let bytes = &host.bytes()[offset * dtype.size()..(offset + n) * dtype.size()];
            // SAFETY: the source is staged by the driver before the call
            // returns (pageable memory); the destination is a live buffer.
            unsafe {
                sys::cuMemcpyHtoDAsync_v2(out.ptr_at(0), bytes.as_ptr() as *const _, bytes.len(), self.stream.raw)
            }
            .result()
            .map_err(driver_error("upload"))?;
        }
        wrap(out)
    }

    fn to_host(&self, storage: &Storage, layout: &Layout) -> Result<CpuStorage> {
        let x = device_of(storage).ok_or_else(|| Error::invalid("to_host", "storage is not on the GPU"))?;
        let home = x.buffer().home().clone();
        if layout.is_row_contiguous() {
            return download(&home, x.ptr_at(layout.offset), x.dtype(), layout.size());
        }
        let dense = elementwise::copy(&home, x, layout, x.dtype())?;
        download(&home, dense.ptr_at(0), x.dtype(), layout.size())
    }

    fn full(&self, value: Scalar, dtype: Dtype, n: usize) -> Result<Storage> {
        let one = CpuStorage::new(super::cpu::creation::full(value, dtype, 1)?);
        wrap(elementwise::fill(&self.stream, FillValue::from_bytes(one.bytes()), dtype, n)?)
    }

    fn arange(&self, start: f64, step: f64, n: usize, dtype: Dtype) -> Result<Storage> {
        wrap(creation::arange(&self.stream, start, step, n, dtype)?)
    }

    fn eye(&self, n: usize, m: usize, k: isize, dtype: Dtype) -> Result<Storage> {
        wrap(creation::eye(&self.stream, n, m, k, dtype)?)
    }

    fn bitcast(&self, x: &Storage, layout: &Layout, dtype: Dtype) -> Result<Storage> {
        wrap(elementwise::bitcast(&self.stream, self.input(x)?, layout, dtype)?)
    }

    fn replay(
        &self,
        slot: &super::replay::ReplaySlot,
        inputs: &[crate::array::ArrayData],
        run: &super::replay::GraphRun,
    ) -> Result<Vec<crate::array::ArrayData>> {
        graph::replay(&self.stream, slot, inputs, run)
    }

    fn copy(&self, x: &Storage, layout: &Layout, dtype: Dtype) -> Result<Storage> {
        wrap(elementwise::copy(&self.stream, self.input(x)?, layout, dtype)?)
    }

    fn unary(&self, op: UnaryOp, x: &Storage, layout: &Layout) -> Result<Storage> {
        wrap(elementwise::unary(&self.stream, op, self.input(x)?, layout)?)
    }

    fn binary(&self, op: BinaryOp, a: &Storage, la: &Layout, b: &Storage, lb: &Layout) -> Result<Storage> {
        let dt = a.dtype();
        let (oa, ob) = (self.operand(a, la)?, self.operand(b, lb)?);
        wrap(elementwise::binary(&self.stream, op, dt, oa, la, ob, lb)?)
    }

    fn can_overwrite(&self, x: &Storage) -> bool {
        device_of(x).is_some_and(|c| c.buffer().overwritable_on(&self.stream))
    }

    fn unary_in_place(&self, op: UnaryOp, x: &mut Storage, layout: &Layout) -> Result<()> {
        let x = self.input(x)?;
        elementwise::unary_to(&self.stream, op, x, layout, x.ptr_at(layout.offset))
    }

    fn binary_in_place(
        &self,
        op: BinaryOp,
        donor: &mut Storage,
        ld: &Layout,
        other: &Storage,
        lo: &Layout,
        donor_is_lhs: bool,
    ) -> Result<()> {
        let d = self.input(donor)?;
        let (dt, out) = (d.dtype(), d.ptr_at(ld.offset));
        let (d, o) = (Operand::Device(d), self.operand(other, lo)?);
        let (a, la, b, lb) = if donor_is_lhs { (d, ld, o, lo) } else { (o, lo, d, ld) };
        elementwise::binary_to(&self.stream, op, dt, a, la, b, lb, out)
    }

    fn select(
        &self,
        cond: &Storage,
        lc: &Layout,
        x: &Storage,
        lx: &Layout,
        y: &Storage,
        ly: &Layout,
    ) -> Result<Storage> {
        let (c, x, y) = (self.input(cond)?, self.input(x)?, self.input(y)?);
        wrap(elementwise::select(&self.stream, c, lc, x, lx, y, ly)?)
    }

    fn reduce(&self, op: ReduceOp, x: &Storage, layout: &Layout, axes: &[usize], out_dtype: Dtype) -> Result<Storage> {
        wrap(reduce::reduce(&self.stream, op, self.input(x)?, layout, axes, out_dtype)?)
    }

    fn arg_reduce(&self, op: ArgReduceOp, x: &Storage, layout: &Layout, axis: usize) -> Result<Storage> {
        wrap(reduce::arg_reduce(&self.stream, op, self.input(x)?, layout, axis)?)
    }

    fn scan(
        &self,
        op: ScanOp,
        x: &Storage,
        layout: &Layout,
        axis: usize,
        reverse: bool,
        inclusive: bool,
    ) -> Result<Storage> {
        wrap(scan::scan(&self.stream, op, self.input(x)?, layout, axis, reverse, inclusive)?)
    }

    fn fft(
        &self,
        op: FftOp,
        x: &Storage,
        layout: &Layout,
        axes: &[usize],
        scale: f64,
        out_shape: &[usize],
    ) -> Result<Storage> {
        wrap(fft::fft(&self.stream, op, self.input(x)?, layout, axes, scale, out_shape)?)
    }

    fn linalg(&self, op: LinalgOp, inputs: &[(&Storage, &Layout)]) -> Result<Vec<Storage>> {
        let on_device: Vec<(&CudaStorage, &Layout)> =
            inputs.iter().map(|(s, l)| Ok((self.input(s)?, *l))).collect::<Result<_>>()?;
        if let Some(outputs) = linalg::linalg(&self.stream, op, &on_device)? {
            return outputs.into_iter().map(wrap).collect();
        }
        // Matrices with no elements: their (empty or identity) outputs are
        // made on the host.
        let host: Vec<CpuStorage> = inputs.iter().map(|(s, l)| self.to_host(s, l)).collect::<Result<_>>()?;
        let host_inputs: Vec<(&super::cpu::CpuBuffer, Layout)> =
            host.iter().zip(inputs).map(|(h, (_, l))| (h.buffer(), Layout::contiguous(&l.shape))).collect();
        let refs: Vec<(&super::cpu::CpuBuffer, &Layout)> = host_inputs.iter().map(|(b, l)| (*b, l)).collect();
        super::cpu::linalg::linalg(op, &refs)?
            .into_iter()
            .map(|b| {
                let host = CpuStorage::new(b);
                self.upload(&host, &Layout::contiguous(&[host.len()]))
            })
            .collect()
    }

    fn sort(&self, x: &Storage, layout: &Layout, axis: usize, arg: bool) -> Result<Storage> {
        wrap(sort::sort(&self.stream, self.input(x)?, layout, axis, arg)?)
    }

    fn search_sorted(
        &self,
        sorted: &Storage,
        ls: &Layout,
        values: &Storage,
        lv: &Layout,
        right: bool,
    ) -> Result<Storage> {
        wrap(sort::search_sorted(&self.stream, self.input(sorted)?, ls, self.input(values)?, lv, right)?)
    }

    fn matmul(&self, a: &Storage, la: &Layout, b: &Storage, lb: &Layout) -> Result<Storage> {
        wrap(matmul::matmul(&self.stream, self.input(a)?, la, self.input(b)?, lb)?)
    }

    fn matmul_bias(
        &self,
        a: &Storage,
        la: &Layout,
        b: &Storage,
        lb: &Layout,
        bias: &Storage,
        lbias: &Layout,
    ) -> Result<Storage> {
        let c = self.input(bias)?;
        if lbias.is_row_contiguous() {
            let fused =
                matmul::matmul_bias(&self.stream, self.input(a)?, la, self.input(b)?, lb, c.ptr_at(lbias.offset))?;
            if let Some(out) = fused {
                return wrap(out);
            }
        }
        super::product_then_bias(self, a, la, b, lb, bias, lbias)
    }

    fn gather(
        &self,
        x: &Storage,
        lx: &Layout,
        indices: &[(&Storage, &Layout)],
        axes: &[usize],
        slice_sizes: &[usize],
    ) -> Result<Storage> {
        let indices = indices.iter().map(|(s, l)| Ok((self.input(s)?, *l))).collect::<Result<Vec<_>>>()?;
        wrap(gather::gather(&self.stream, self.input(x)?, lx, &indices, axes, slice_sizes)?)
    }

    fn scatter(
        &self,
        op: ScatterOp,
        base: &Storage,
        lb: &Layout,
        indices: &[(&Storage, &Layout)],
        axes: &[usize],
        updates: &Storage,
        lu: &Layout,
    ) -> Result<Storage> {
        let indices = indices.iter().map(|(s, l)| Ok((self.input(s)?, *l))).collect::<Result<Vec<_>>>()?;
        let (base, updates) = (self.input(base)?, self.input(updates)?);
        wrap(gather::scatter(&self.stream, op, base, lb, &indices, axes, updates, lu)?)
    }

    fn slice_update(
        &self,
        base: &Storage,
        lb: &Layout,
        update: &Storage,
        lu: &Layout,
        window: &Layout,
    ) -> Result<Storage> {
        wrap(scatter::slice_update(&self.stream, self.input(base)?, lb, self.input(update)?, lu, window)?)
    }

    fn concatenate(&self, inputs: &[(&Storage, &Layout)], axis: usize, out_shape: &[usize]) -> Result<Storage> {
        let inputs = inputs.iter().map(|(s, l)| Ok((self.input(s)?, *l))).collect::<Result<Vec<_>>>()?;
        wrap(scatter::concatenate(&self.stream, &inputs, axis, out_shape)?)
    }

    fn random(
        &self,
        op: super::RandomOp,
        keys: &Storage,
        keys_layout: &Layout,
        n: usize,
        dtype: Dtype,
    ) -> Result<Storage> {
        wrap(random::random(&self.stream, op, self.input(keys)?, keys_layout, n, dtype)?)
    }

    fn optimizer_update(
        &self,
        rule: &super::UpdateRule,
        inputs: &[(&Storage, &Layout)],
        lr: (&Storage, &Layout),
        t: (&Storage, &Layout),
        n: usize,
    ) -> Result<Vec<Storage>> {
        let runs = inputs.iter().map(|(s, l)| Ok((self.input(s)?, l.offset))).collect::<Result<Vec<_>>>()?;
        let (lr, t) = ((self.input(lr.0)?, lr.1.offset), (self.input(t.0)?, t.1.offset));
        let outs = optimizer::optimizer_update(&self.stream, rule, &runs, lr, t, n)?;
        outs.into_iter().map(wrap).collect()
    }

    fn fast(&self, op: &super::FastOp, inputs: &[(&Storage, &Layout)]) -> Result<Vec<Storage>> {
        let inputs = inputs.iter().map(|(s, l)| Ok((self.input(s)?, *l))).collect::<Result<Vec<_>>>()?;
        fast::fast(&self.stream, op, &inputs)?.into_iter().map(wrap).collect()
    }

    fn custom_kernel(
        &self,
        kernel: &super::KernelLaunch,
        inputs: &[(&Storage, &Layout)],
        outputs: &[(Dtype, usize)],
    ) -> Result<Vec<Storage>> {
        let inputs = inputs.iter().map(|(s, l)| Ok((self.input(s)?, *l))).collect::<Result<Vec<_>>>()?;
        custom_kernel::run(&self.stream, kernel, &inputs, outputs)?.into_iter().map(wrap).collect()
    }

    fn conv(&self, params: &super::ConvParams, x: &Storage, lx: &Layout, w: &Storage, lw: &Layout) -> Result<Storage> {
        wrap(conv::conv(&self.stream, params, self.input(x)?, lx, self.input(w)?, lw)?)
    }

    fn fused(
        &self,
        program: &super::fused::FusedProgram,
        inputs: &[(&Storage, Layout)],
        shape: &[usize],
    ) -> Result<Vec<Storage>> {
        let ins = inputs.iter().map(|(s, l)| Ok((self.input(s)?, l.clone()))).collect::<Result<Vec<_>>>()?;
        match fused::fused(&self.stream, program, &ins, shape, None)? {
            Some(out) => out.into_iter().map(|o| wrap(o.expect("every output is allocated"))).collect(),
            None => super::fused::run_step_by_step(self, program, inputs, shape),
        }
    }

    fn fused_donated(
        &self,
        program: &super::fused::FusedProgram,
        inputs: &[(Option<&Storage>, Layout)],
        donor: &mut Storage,
        output: usize,
        shape: &[usize],
    ) -> Result<Vec<Option<Storage>>> {
        let donor = &*donor;
        let at = inputs.iter().position(|(s, _)| s.is_none()).expect("the donor's place is marked");
        let ins =
            inputs.iter().map(|(s, l)| Ok((self.input(s.unwrap_or(donor))?, l.clone()))).collect::<Result<Vec<_>>>()?;
        match fused::fused(&self.stream, program, &ins, shape, Some((at, output)))? {
            Some(out) => out.into_iter().map(|o| o.map(wrap).transpose()).collect(),
            None => super::fused_without_donation(self, program, inputs, donor, shape),
        }
    }

    fn fused_reduce(
        &self,
        program: &super::fused::FusedProgram,
        inputs: &[(&Storage, Layout)],
        shape: &[usize],
        op: ReduceOp,
        axes: &[usize],
        out_dtype: Dtype,
    ) -> Result<Storage> {
        let ins = inputs.iter().map(|(s, l)| Ok((self.input(s)?, l.clone()))).collect::<Result<Vec<_>>>()?;
        match fused_reduce::fused_reduce(&self.stream, program, &ins, shape, op, axes, out_dtype)? {
            Some(out) => wrap(out),
            None => super::fused_then_reduce(self, program, inputs, shape, op, axes, out_dtype),
        }
    }
}
