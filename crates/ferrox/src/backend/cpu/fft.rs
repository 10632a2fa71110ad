//! Discrete Fourier transforms: rustfft for complex lines, realfft for real
//! ones (both plan once per length and direction, cached here, and pick
//! their SIMD code at run time).
//!
//! A transform over several axes is a sequence of one-axis passes. A pass
//! views its source as `[outer, n, inner]` around the transformed axis and
//! transforms every line along it: with `inner == 1` the lines are
//! contiguous and each is copied next to the transform (a cheap, in-cache
//! copy) or transformed in place in the destination; otherwise a task
//! gathers a group of neighbouring columns (contiguous runs of the rows),
//! transforms them and scatters the results. Lines run on several threads
//! when the array is large.
//!
//! A real forward transform takes its real pass first (the last axis), then
//! complex passes over the other axes in place on its output; a real
//! inverse takes the complex passes first, on a copy of its input, and ends
//! with the real pass. The output scale is applied in the last pass.

use super::elementwise::copy_buffer;
use super::storage::{output_vec, CpuBuffer, CpuElement};
use super::strided::{SendPtr, PARALLEL_THRESHOLD};
use crate::backend::FftOp;
use crate::error::{Error, Result};
use crate::shape::{numel, Layout};
use num_complex::Complex32;
use rayon::prelude::*;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftPlanner};
use std::sync::{Arc, Mutex, OnceLock};

/// The transform `op` of `x` over `axes`, times `scale` (see
/// [`crate::backend::Backend::fft`]).
pub fn fft(
    op: FftOp,
    x: &CpuBuffer,
    layout: &Layout,
    axes: &[usize],
    scale: f64,
    out_shape: &[usize],
) -> Result<CpuBuffer> {
    let in_shape = layout.shape.clone();
    let (&last, rest) = axes.split_last().ok_or_else(|| Error::invalid("fft", "no axes to transform."))?;
    let scale = scale as f32;
    if numel(out_shape) == 0 || numel(&in_shape) == 0 {
        return Ok(match op.output_dtype() {
            crate::dtype::Dtype::F32 => CpuBuffer::F32(output_zeros::<f32>(numel(out_shape))?.into()),
            _ => CpuBuffer::C64(output_zeros::<Complex32>(numel(out_shape))?.into()),
        });
    }
    let x = contiguous(x, layout)?;
    match op {
        FftOp::Forward | FftOp::Inverse => {
            let src = complex_slice(&x, layout)?;
            let mut out = output_vec::<Complex32>(numel(out_shape))?;
            complex_passes(op.is_inverse(), Some(src), &mut out, &in_shape, axes, scale);
            Ok(CpuBuffer::C64(out.into()))
        }
        FftOp::RealForward => {
            let CpuBuffer::F32(v) = &*x else { return Err(dtype_error(op)) };
            let src = &v.as_slice()[offset(&x, layout)..][..numel(&in_shape)];
            let mut out = output_vec::<Complex32>(numel(out_shape))?;
            let n = in_shape[last];
            let plan = real_forward_plan(n);
            let only = rest.is_empty();
            let lines = Lines::around(&in_shape, last);
            let pass_scale = if only { scale } else { 1.0 };
            pass(src.as_ptr(), out.as_mut_ptr(), lines, n / 2 + 1, &|line, dst, work: &mut Work<f32>| {
                work.input.clear();
                work.input.extend_from_slice(line);
                plan.process_with_scratch(&mut work.input, dst, sized(&mut work.scratch, plan.get_scratch_len()))
                    .expect("buffer lengths match the plan");
                scale_line(dst, pass_scale);
            });
            complex_passes(false, None, &mut out, out_shape, rest, scale);
            Ok(CpuBuffer::C64(out.into()))
        }
        FftOp::RealInverse => {
            let src = complex_slice(&x, layout)?;
            let n = out_shape[last];
            let spectrum: std::borrow::Cow<[Complex32]> = if rest.is_empty() {
                std::borrow::Cow::Borrowed(src)
            } else {
                let mut work = output_vec::<Complex32>(numel(&in_shape))?;
                complex_passes(true, Some(src), &mut work, &in_shape, rest, 1.0);
                std::borrow::Cow::Owned(work)
            };
            let mut out = output_vec::<f32>(numel(out_shape))?;
            let plan = real_inverse_plan(n);
            let lines = Lines::around(&in_shape, last);
            pass(spectrum.as_ptr(), out.as_mut_ptr(), lines, n, &|line, dst, work: &mut Work<Complex32>| {
                work.input.clear();
                work.input.extend_from_slice(line);
                // The imaginary parts a real signal's spectrum cannot have
                // are read as zero (NumPy's and cuFFT's convention).
                work.input[0].im = 0.0;
                if n % 2 == 0 {
                    work.input[n / 2].im = 0.0;
                }
                plan.process_with_scratch(&mut work.input, dst, sized(&mut work.scratch, plan.get_scratch_len()))
                    .expect("buffer lengths match the plan");
                scale_line(dst, scale);
            });
            Ok(CpuBuffer::F32(out.into()))
        }
    }
}

/// Zero-filled output storage.
fn output_zeros<T: CpuElement>(n: usize) -> Result<Vec<T>> {
    super::storage::zeroed_vec(n)
}

fn dtype_error(op: FftOp) -> Error {
    Error::invalid("fft", format!("{op:?} transform of the wrong dtype."))
}

/// `x` itself when its layout is row-contiguous, else a row-contiguous copy.
fn contiguous<'a>(x: &'a CpuBuffer, layout: &Layout) -> Result<std::borrow::Cow<'a, CpuBuffer>> {
    if layout.is_row_contiguous() {
        Ok(std::borrow::Cow::Borrowed(x))
    } else {
        Ok(std::borrow::Cow::Owned(copy_buffer(x, layout)?))
    }
}

/// Where the elements start in what [`contiguous`] returned.
fn offset(x: &std::borrow::Cow<CpuBuffer>, layout: &Layout) -> usize {
    match x {
        std::borrow::Cow::Borrowed(_) => layout.offset,
        std::borrow::Cow::Owned(_) => 0,
    }
}

/// The complex elements of what [`contiguous`] returned.
fn complex_slice<'a>(x: &'a std::borrow::Cow<CpuBuffer>, layout: &Layout) -> Result<&'a [Complex32]> {
    let CpuBuffer::C64(v) = &**x else { return Err(Error::invalid("fft", "expected complex64 input.")) };
    Ok(&v.as_slice()[offset(x, layout)..][..numel(&layout.shape)])
}

/// Complex passes over `axes` of the array of `shape` held in `buf`, read
/// first from `src` when given (of the same shape) and otherwise in place;
/// the last pass applies `scale`.
fn complex_passes(
    inverse: bool,
    src: Option<&[Complex32]>,
    buf: &mut [Complex32],
    shape: &[usize],
    axes: &[usize],
    scale: f32,
) {
    // Complex passes commute: the contiguous (last) axis goes first, read
    // straight from `src`; the strided ones follow in place.
    let mut axes = axes.to_vec();
    axes.sort_unstable_by(|a, b| b.cmp(a));
    let dst = buf.as_mut_ptr();
    for (i, &axis) in axes.iter().enumerate() {
        let n = shape[axis];
        let plan = complex_plan(n, inverse);
        let pass_scale = if i + 1 == axes.len() { scale } else { 1.0 };
        let from = match (i, src) {
            (0, Some(s)) => s.as_ptr(),
            _ => dst as *const Complex32,
        };
        pass(from, dst, Lines::around(shape, axis), n, &|line, out, work: &mut Work<Complex32>| {
            out.copy_from_slice(line);
            plan.process_with_scratch(out, sized(&mut work.scratch, plan.get_inplace_scratch_len()));
            scale_line(out, pass_scale);
        });
    }
}

/// Multiplies a line by `scale` (nothing when it is 1).
fn scale_line<T: std::ops::MulAssign<f32> + Copy>(line: &mut [T], scale: f32) {
    if scale != 1.0 {
        for v in line {
            *v *= scale;
        }
    }
}

/// A contiguous array viewed as `[outer, n, inner]` around one axis.
#[derive(Clone, Copy, Debug)]
struct Lines {
    outer: usize,
    n: usize,
    inner: usize,
}

impl Lines {
    fn around(shape: &[usize], axis: usize) -> Lines {
        Lines { outer: numel(&shape[..axis]), n: shape[axis], inner: numel(&shape[axis + 1..]) }
    }
}

/// A task's reusable buffers: a copy of the line being transformed, the
/// plan's scratch space, and the columns a strided pass gathers.
struct Work<I> {
    input: Vec<I>,
    scratch: Vec<Complex32>,
    gathered: Vec<I>,
}

impl<I> Work<I> {
    fn new() -> Work<I> {
        Work { input: Vec::new(), scratch: Vec::new(), gathered: Vec::new() }
    }
}

/// The first `len` elements of `v`, grown (zero-filled) to hold them.
fn sized(v: &mut Vec<Complex32>, len: usize) -> &mut [Complex32] {
    if v.len() < len {
        v.resize(len, Complex32::new(0.0, 0.0));
    }
    &mut v[..len]
}

/// Columns a task gathers at once along a strided axis: 16 complex64
/// values make two cache lines per row.
const COLUMN_GROUP: usize = 16;

/// One pass: `transform(line, out_line, work)` turns each line of `n`
/// elements along the middle axis of `src` (`lines`) into a line of
/// `n_out` elements of `dst` (`[outer, n_out, inner]`). `src` and `dst` may
/// be the same buffer when `n_out == lines.n`: each task reads and writes
/// only its own lines, reading each line before writing it.
fn pass<I, O>(
    src: *const I,
    dst: *mut O,
    lines: Lines,
    n_out: usize,
    transform: &(dyn Fn(&[I], &mut [O], &mut Work<I>) + Sync),
) where
    I: Copy + Send + Sync + Default,
    O: Copy + Send + Sync + Default,
{
    let Lines { outer, n, inner } = lines;
    let (src, dst) = (SendPtr(src as *mut I), SendPtr(dst));
    let total = outer * inner * n.max(n_out);
    if inner == 1 {
        // Contiguous lines: tasks take runs of whole lines.
        let per_task = if total < PARALLEL_THRESHOLD { outer } else { (PARALLEL_THRESHOLD / n.max(1)).clamp(1, outer) };
        let in_place = src.get() as usize == dst.get() as usize;
        let run = |w: &mut Work<I>, first: usize| {
            let mut copy = Vec::new();
            for l in first..(first + per_task).min(outer) {
                // SAFETY: line l of the source holds n initialized elements
                // and line l of the destination n_out; tasks own disjoint
                // lines. In place, the line is copied out before the
                // destination line is borrowed.
                let (x, out) = unsafe {
                    let line = std::slice::from_raw_parts(src.get().add(l * n), n);
                    let x: &[I] = if in_place {
                        copy.clear();
                        copy.extend_from_slice(line);
                        &copy
                    } else {
                        line
                    };
                    (x, std::slice::from_raw_parts_mut(dst.get().add(l * n_out), n_out))
                };
                transform(x, out, w);
            }
        };
        let firsts = (0..outer).step_by(per_task.max(1));
        if total < PARALLEL_THRESHOLD {
            let mut w = Work::new();
            firsts.for_each(|f| run(&mut w, f));
        } else {
            firsts.collect::<Vec<_>>().into_par_iter().for_each_init(Work::new, run);
        }
        return;
    }
    // Strided lines: a task gathers COLUMN_GROUP neighbouring columns of one
    // outer block, transforms them, and scatters the results.
    let groups = inner.div_ceil(COLUMN_GROUP);
    let run = |w: &mut Work<I>, task: usize| {
        let (o, g) = (task / groups, task % groups);
        let c0 = g * COLUMN_GROUP;
        let width = COLUMN_GROUP.min(inner - c0);
        let mut gathered = std::mem::take(&mut w.gathered);
        gathered.clear();
        gathered.resize(width * n, I::default());
        // SAFETY: the gathered elements lie in outer block o, columns
        // c0..c0 + width, which only this task reads and writes.
        unsafe {
            let base = src.get().add(o * n * inner + c0);
            for j in 0..n {
                let row = std::slice::from_raw_parts(base.add(j * inner), width);
                for (c, &v) in row.iter().enumerate() {
                    gathered[c * n + j] = v;
                }
            }
        }
        let mut results: Vec<O> = vec![O::default(); width * n_out];
        for c in 0..width {
            transform(&gathered[c * n..(c + 1) * n], &mut results[c * n_out..(c + 1) * n_out], w);
        }
        // SAFETY: as above, for the destination's block o and columns.
        unsafe {
            let base = dst.get().add(o * n_out * inner + c0);
            for j in 0..n_out {
                let row = std::slice::from_raw_parts_mut(base.add(j * inner), width);
                for (c, v) in row.iter_mut().enumerate() {
                    *v = results[c * n_out + j];
                }
            }
        }
        w.gathered = gathered;
    };
    let tasks = outer * groups;
    if total < PARALLEL_THRESHOLD {
        let mut w = Work::new();
        (0..tasks).for_each(|t| run(&mut w, t));
    } else {
        (0..tasks).into_par_iter().for_each_init(Work::new, run);
    }
}

/// The complex plan for length `n` in one direction (planned once).
fn complex_plan(n: usize, inverse: bool) -> Arc<dyn Fft<f32>> {
    static PLANNER: OnceLock<Mutex<FftPlanner<f32>>> = OnceLock::new();
    let mut planner = PLANNER.get_or_init(|| Mutex::new(FftPlanner::new())).lock().unwrap_or_else(|e| e.into_inner());
    if inverse {
        planner.plan_fft_inverse(n)
    } else {
        planner.plan_fft_forward(n)
    }
}

/// The real planner (it caches its plans).
fn real_planner() -> std::sync::MutexGuard<'static, RealFftPlanner<f32>> {
    static PLANNER: OnceLock<Mutex<RealFftPlanner<f32>>> = OnceLock::new();
    PLANNER.get_or_init(|| Mutex::new(RealFftPlanner::new())).lock().unwrap_or_else(|e| e.into_inner())
}

/// The real-to-complex plan for signals of length `n`.
fn real_forward_plan(n: usize) -> Arc<dyn RealToComplex<f32>> {
    real_planner().plan_fft_forward(n)
}

/// The complex-to-real plan for signals of length `n`.
fn real_inverse_plan(n: usize) -> Arc<dyn ComplexToReal<f32>> {
    real_planner().plan_fft_inverse(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unnormalized DFT of `x` along its one axis, in float64.
    fn dft(x: &[Complex32], inverse: bool) -> Vec<(f64, f64)> {
        let n = x.len();
        let sign = if inverse { 1.0 } else { -1.0 };
        (0..n)
            .map(|k| {
                x.iter().enumerate().fold((0.0, 0.0), |(re, im), (j, v)| {
                    let t = sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                    let (c, s) = (t.cos(), t.sin());
                    (re + v.re as f64 * c - v.im as f64 * s, im + v.re as f64 * s + v.im as f64 * c)
                })
            })
            .collect()
    }

    fn signal(n: usize) -> Vec<Complex32> {
        (0..n).map(|i| Complex32::new((i as f32 * 0.37).sin(), (i as f32 * 0.11).cos() - 0.5)).collect()
    }

    fn close(got: &[Complex32], want: &[(f64, f64)]) {
        for (g, w) in got.iter().zip(want) {
            assert!((g.re as f64 - w.0).abs() < 1e-3 && (g.im as f64 - w.1).abs() < 1e-3, "{g} vs {w:?}");
        }
    }

    #[test]
    fn complex_lines_along_each_axis() {
        // [3, 5, 4]: the middle axis is strided (inner 4), the last contiguous.
        let shape = [3usize, 5, 4];
        let x = signal(60);
        let buf = CpuBuffer::C64(x.clone().into());
        for axis in 0..3 {
            let got = fft(FftOp::Forward, &buf, &Layout::contiguous(&shape), &[axis], 1.0, &shape).unwrap();
            let CpuBuffer::C64(got) = got else { panic!() };
            let lines = Lines::around(&shape, axis);
            for o in 0..lines.outer {
                for c in 0..lines.inner {
                    let idx = |j: usize| o * lines.n * lines.inner + j * lines.inner + c;
                    let line: Vec<_> = (0..lines.n).map(|j| x[idx(j)]).collect();
                    let g: Vec<_> = (0..lines.n).map(|j| got.as_slice()[idx(j)]).collect();
                    close(&g, &dft(&line, false));
                }
            }
        }
    }

    #[test]
    fn real_round_trip_odd_and_even() {
        for n in [1usize, 2, 7, 8, 31] {
            let x: Vec<f32> = (0..2 * n).map(|i| (i as f32 * 0.7).sin()).collect();
            let shape = [2, n];
            let spec = fft(
                FftOp::RealForward,
                &CpuBuffer::F32(x.clone().into()),
                &Layout::contiguous(&shape),
                &[1],
                1.0,
                &[2, n / 2 + 1],
            )
            .unwrap();
            let back =
                fft(FftOp::RealInverse, &spec, &Layout::contiguous(&[2, n / 2 + 1]), &[1], 1.0 / n as f64, &shape)
                    .unwrap();
            let CpuBuffer::F32(back) = back else { panic!() };
            for (a, b) in back.as_slice().iter().zip(&x) {
                assert!((a - b).abs() < 1e-4, "n={n}: {a} vs {b}");
            }
        }
    }
}
