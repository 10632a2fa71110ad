//! The CPU backend: contiguous fast paths that vectorize, a general strided
//! path, rayon threads above a size threshold, GEMM from the `gemm` crate.
//! One file per kernel family.

mod attention;
mod bunch_kaufman;
pub mod cache;
pub mod creation;
pub mod elementwise;
mod fast;
mod fft;
mod fused;
mod fused_tiles;
pub mod gather;
pub mod host_vec;
pub mod linalg;
pub mod math;
pub mod matmul;
mod norm;
pub mod optimizer;
pub mod out;
pub mod random;
pub mod reduce;
mod rope;
mod scalar_divide;
pub mod scan;
mod softmax;
pub mod sort;
pub mod storage;
pub mod strided;
mod widen;

pub use host_vec::HostVec;
pub use storage::{CpuBuffer, CpuElement, CpuStorage};

use super::{ArgReduceOp, Backend, BinaryOp, FftOp, LinalgOp, ReduceOp, ScanOp, ScatterOp, Storage, UnaryOp};
use crate::device::Device;
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};
use crate::shape::{numel, Layout};
use storage::output_vec;

/// The host processor's backend.
#[derive(Debug, Default)]
pub struct CpuBackend;

/// The host buffer inside a storage that lives on the CPU.
fn host(s: &Storage) -> &CpuBuffer {
    match s {
        Storage::Cpu(c) => c.buffer(),
        #[cfg(feature = "cuda")]
        Storage::Cuda(_) => unreachable!("the scheduler moves every input to the CPU before a CPU kernel runs"),
    }
}

fn host_mut(s: &mut Storage) -> &mut CpuBuffer {
    match s {
        Storage::Cpu(c) => c.buffer_mut(),
        #[cfg(feature = "cuda")]
        Storage::Cuda(_) => unreachable!("the scheduler donates only buffers on the kernel's device"),
    }
}

fn wrap(b: CpuBuffer) -> Result<Storage> {
    Ok(Storage::Cpu(CpuStorage::new(b)))
}

impl Backend for CpuBackend {
    fn device(&self) -> Device {
        Device::CPU
    }

    fn upload(&self, host: &CpuStorage, layout: &Layout) -> Result<Storage> {
        wrap(elementwise::copy_buffer(host.buffer(), layout)?)
    }

    fn to_host(&self, storage: &Storage, layout: &Layout) -> Result<CpuStorage> {
        Ok(CpuStorage::new(elementwise::copy_buffer(host(storage), layout)?))
    }

    fn full(&self, value: Scalar, dtype: Dtype, n: usize) -> Result<Storage> {
        wrap(creation::full(value, dtype, n)?)
    }

    fn arange(&self, start: f64, step: f64, n: usize, dtype: Dtype) -> Result<Storage> {
        wrap(creation::arange(start, step, n, dtype)?)
    }

    fn eye(&self, n: usize, m: usize, k: isize, dtype: Dtype) -> Result<Storage> {
        wrap(creation::eye(n, m, k, dtype)?)
    }

    fn bitcast(&self, x: &Storage, layout: &Layout, dtype: Dtype) -> Result<Storage> {
        wrap(elementwise::bitcast_buffer(host(x), layout, dtype)?)
    }

    fn copy(&self, x: &Storage, layout: &Layout, dtype: Dtype) -> Result<Storage> {
        let x = host(x);
        if buffer_dtype(x) == dtype {
            wrap(elementwise::copy_buffer(x, layout)?)
        } else {
            wrap(elementwise::cast_buffer(x, layout, dtype)?)
        }
    }

    fn unary(&self, op: UnaryOp, x: &Storage, layout: &Layout) -> Result<Storage> {
        wrap(elementwise::unary(op, host(x), layout)?)
    }

    fn binary(&self, op: BinaryOp, a: &Storage, la: &Layout, b: &Storage, lb: &Layout) -> Result<Storage> {
        wrap(elementwise::binary(op, host(a), la, host(b), lb)?)
    }

    fn can_overwrite(&self, x: &Storage) -> bool {
        matches!(x, Storage::Cpu(c) if !c.is_foreign())
    }

    fn unary_in_place(&self, op: UnaryOp, x: &mut Storage, layout: &Layout) -> Result<()> {
        elementwise::unary_in_place(op, host_mut(x), layout)
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
        elementwise::binary_in_place(op, host_mut(donor), ld, host(other), lo, donor_is_lhs)
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
        let CpuBuffer::Bool(c) = host(cond) else {
            return Err(Error::invalid("where", "condition must be bool"));
        };
        wrap(elementwise::select(c, lc, host(x), lx, host(y), ly)?)
    }

    fn reduce(&self, op: ReduceOp, x: &Storage, layout: &Layout, axes: &[usize], out_dtype: Dtype) -> Result<Storage> {
        wrap(reduce::reduce(op, host(x), layout, axes, out_dtype)?)
    }

    fn arg_reduce(&self, op: ArgReduceOp, x: &Storage, layout: &Layout, axis: usize) -> Result<Storage> {
        wrap(reduce::arg_reduce(op, host(x), layout, axis)?)
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
        wrap(scan::scan(op, host(x), layout, axis, reverse, inclusive)?)
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
        wrap(fft::fft(op, host(x), layout, axes, scale, out_shape)?)
    }

    fn linalg(&self, op: LinalgOp, inputs: &[(&Storage, &Layout)]) -> Result<Vec<Storage>> {
        let host_inputs: Vec<(&CpuBuffer, &Layout)> = inputs.iter().map(|(s, l)| (host(s), *l)).collect();
        linalg::linalg(op, &host_inputs)?.into_iter().map(wrap).collect()
    }

    fn gather(
        &self,
        x: &Storage,
        lx: &Layout,
        indices: &[(&Storage, &Layout)],
        axes: &[usize],
        slice_sizes: &[usize],
    ) -> Result<Storage> {
        let indices: Vec<_> = indices.iter().map(|&(s, l)| (host(s), l)).collect();
        wrap(gather::gather(host(x), lx, &indices, axes, slice_sizes)?)
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
        let indices: Vec<_> = indices.iter().map(|&(s, l)| (host(s), l)).collect();
        wrap(gather::scatter(op, host(base), lb, &indices, axes, host(updates), lu)?)
    }

    fn sort(&self, x: &Storage, layout: &Layout, axis: usize, arg: bool) -> Result<Storage> {
        wrap(sort::sort(host(x), layout, axis, arg)?)
    }

    fn search_sorted(
        &self,
        sorted: &Storage,
        ls: &Layout,
        values: &Storage,
        lv: &Layout,
        right: bool,
    ) -> Result<Storage> {
        wrap(sort::search_sorted(host(sorted), ls, host(values), lv, right)?)
    }

    fn matmul(&self, a: &Storage, la: &Layout, b: &Storage, lb: &Layout) -> Result<Storage> {
        wrap(matmul::matmul(host(a), la, host(b), lb)?)
    }

    fn slice_update(
        &self,
        base: &Storage,
        lb: &Layout,
        update: &Storage,
        lu: &Layout,
        window: &Layout,
    ) -> Result<Storage> {
        fn typed<T: CpuElement>(base: &[T], lb: &Layout, update: &[T], lu: &Layout, window: &Layout) -> Result<Vec<T>> {
            let mut out = elementwise::map_unary(base, lb, |v| v)?;
            let src = elementwise::map_unary(update, lu, |v| v)?;
            strided::scatter(&mut out, window, &src);
            Ok(out)
        }
        crate::with_buffer!(host(base), v => {
            let u = CpuElement::slice_of(host(update)).ok_or_else(|| Error::invalid("slice_update", "operands differ in dtype"))?;
            wrap(CpuElement::into_buffer(typed(&v[..], lb, u, lu, window)?))
        })
    }

    fn concatenate(&self, inputs: &[(&Storage, &Layout)], axis: usize, out_shape: &[usize]) -> Result<Storage> {
        // Output viewed as [outer, total, inner]; input i fills the block
        // [outer, a_i, inner] starting at `start` along the middle axis.
        fn typed<T: CpuElement>(inputs: &[(&[T], &Layout)], axis: usize, out_shape: &[usize]) -> Result<Vec<T>> {
            let mut out = output_vec::<T>(numel(out_shape))?;
            let outer: usize = out_shape[..axis].iter().product();
            let inner: usize = out_shape[axis + 1..].iter().product();
            let total = out_shape[axis];
            let mut start = 0usize;
            for (x, l) in inputs {
                let src = elementwise::map_unary(x, l, |v| v)?;
                let width = l.shape[axis] * inner;
                if width > 0 {
                    for (o, chunk) in src.chunks(width).enumerate() {
                        let at = (o * total + start) * inner;
                        out[at..at + width].copy_from_slice(chunk);
                    }
                }
                start += l.shape[axis];
            }
            debug_assert!(outer == 0 || start == total);
            Ok(out)
        }
        fn slices<'a, T: CpuElement>(_: &[T], inputs: &[(&'a Storage, &'a Layout)]) -> Vec<(&'a [T], &'a Layout)> {
            inputs.iter().map(|(s, l)| (T::slice_of(host(s)).expect("concatenate inputs share a dtype"), *l)).collect()
        }
        crate::with_buffer!(host(inputs[0].0), v => {
            let typed_inputs = slices(&v[..], inputs);
            wrap(CpuElement::into_buffer(typed(&typed_inputs, axis, out_shape)?))
        })
    }

    fn random(
        &self,
        op: super::RandomOp,
        keys: &Storage,
        keys_layout: &Layout,
        n: usize,
        dtype: Dtype,
    ) -> Result<Storage> {
        wrap(random::random(op, host(keys), keys_layout, n, dtype)?)
    }

    fn optimizer_update(
        &self,
        rule: &super::UpdateRule,
        inputs: &[(&Storage, &Layout)],
        lr: (&Storage, &Layout),
        t: (&Storage, &Layout),
        n: usize,
    ) -> Result<Vec<Storage>> {
        let scalar = |(s, l): (&Storage, &Layout)| -> Result<f64> {
            match host(s) {
                CpuBuffer::F32(v) => Ok(v[l.offset] as f64),
                _ => Err(Error::invalid("optimizer_update", "internal error: scalars must be float32")),
            }
        };
        let runs: Vec<(&CpuBuffer, usize)> = inputs.iter().map(|(s, l)| (host(s), l.offset)).collect();
        let outs = optimizer::optimizer_update(rule, &runs, n, scalar(lr)?, scalar(t)?)?;
        outs.into_iter().map(wrap).collect()
    }

    fn fast(&self, op: &super::FastOp, inputs: &[(&Storage, &Layout)]) -> Result<Vec<Storage>> {
        let inputs: Vec<fast::Input> = inputs.iter().map(|(s, l)| (host(s), *l)).collect();
        fast::fast(op, &inputs)?.into_iter().map(wrap).collect()
    }

    fn conv(&self, params: &super::ConvParams, x: &Storage, lx: &Layout, w: &Storage, lw: &Layout) -> Result<Storage> {
        wrap(conv::conv(params, host(x), lx, host(w), lw)?)
    }

    fn fused(
        &self,
        program: &super::fused::FusedProgram,
        inputs: &[(&Storage, Layout)],
        shape: &[usize],
    ) -> Result<Vec<Storage>> {
        let inputs: Vec<(&CpuBuffer, Layout)> = inputs.iter().map(|(s, l)| (host(s), l.clone())).collect();
        // SAFETY: nothing is donated.
        let outputs = unsafe { fused::fused(program, &inputs, shape, None)? };
        Ok(outputs.into_iter().map(|s| Storage::Cpu(s.expect("every output is allocated"))).collect())
    }

    fn fused_donated(
        &self,
        program: &super::fused::FusedProgram,
        inputs: &[(Option<&Storage>, Layout)],
        donor: &mut Storage,
        output: usize,
        shape: &[usize],
    ) -> Result<Vec<Option<Storage>>> {
        let offset = inputs.iter().find(|(s, _)| s.is_none()).expect("the donor's place is marked").1.offset;
        let buffer = host_mut(donor);
        let Some(start) = buffer.owned_mut_ptr() else {
            return super::fused_without_donation(self, program, inputs, donor, shape);
        };
        // SAFETY: the donor's layout reads `numel(shape)` elements from
        // `offset` on, inside the buffer.
        let bytes = unsafe { start.add(offset * buffer_dtype(buffer).size()) };
        let donated = fused::Donated { output, bytes: strided::SendPtr(bytes) };
        let buffer = &*buffer;
        let inputs: Vec<(&CpuBuffer, Layout)> =
            inputs.iter().map(|(s, l)| (s.map_or(buffer, host), l.clone())).collect();
        // SAFETY: the donor is the input the `None` stood for, read through
        // a row-contiguous layout of `shape` in output `output`'s dtype
        // (the scheduler's donation), and this call's alone.
        let outputs = unsafe { fused::fused(program, &inputs, shape, Some(donated))? };
        Ok(outputs.into_iter().map(|s| s.map(Storage::Cpu)).collect())
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
        let host_inputs: Vec<(&CpuBuffer, Layout)> = inputs.iter().map(|(s, l)| (host(s), l.clone())).collect();
        if let Some(out) = fused::fused_reduce(program, &host_inputs, shape, op, axes, out_dtype)? {
            return wrap(out);
        }
        super::fused_then_reduce(self, program, inputs, shape, op, axes, out_dtype)
    }
}

/// The dtype a host buffer holds.
pub fn buffer_dtype(x: &CpuBuffer) -> Dtype {
    fn of<T: crate::element::Element>(_: &[T]) -> Dtype {
        T::DTYPE
    }
    crate::with_buffer!(x, v => of(&v[..]))
}

mod conv;
