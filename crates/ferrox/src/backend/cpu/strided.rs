//! Walking strided layouts: the general (non-contiguous) path every CPU
//! kernel falls back to, and the thread split shared by all kernels.

use crate::shape::{collapse_dims, numel, Layout};
use rayon::prelude::*;

/// Outputs at least this large are computed on several threads.
pub const PARALLEL_THRESHOLD: usize = 1 << 15;

/// Elements per parallel task for an output of `n` elements.
pub fn chunk_len(n: usize) -> usize {
    let tasks = rayon::current_num_threads() * 4;
    n.div_ceil(tasks).max(4096)
}

/// Fills `out`, a row-major array of `shape`, from N inputs that share that
/// shape under their own strides and offsets. `row(out_part, bases, steps)`
/// fills a run of consecutive outputs whose k-th input elements sit at
/// `bases[k] + j * steps[k]`. Large outputs are split across threads.
pub fn fill_strided<const N: usize, O: Send>(
    shape: &[usize],
    strides: [&[isize]; N],
    offsets: [usize; N],
    out: &mut [O],
    row: impl Fn(&mut [O], [isize; N], [isize; N]) + Sync,
) {
    if out.is_empty() {
        return;
    }
    let (cshape, cstrides) = collapse_dims(shape, strides);
    let last = cshape.len() - 1;
    let inner = cshape[last];
    let steps: [isize; N] = std::array::from_fn(|k| cstrides[k][last]);
    let outer = &cshape[..last];
    let fill_range = |start: usize, part: &mut [O]| {
        let mut row_index = start / inner;
        let mut col = start % inner;
        let mut idx = vec![0usize; outer.len()];
        for d in (0..outer.len()).rev() {
            idx[d] = row_index % outer[d];
            row_index /= outer[d];
        }
        let mut base: [isize; N] = std::array::from_fn(|k| {
            offsets[k] as isize + idx.iter().zip(&cstrides[k]).map(|(&i, &s)| i as isize * s).sum::<isize>()
        });
        let mut pos = 0;
        while pos < part.len() {
            let take = (inner - col).min(part.len() - pos);
            let at: [isize; N] = std::array::from_fn(|k| base[k] + col as isize * steps[k]);
            row(&mut part[pos..pos + take], at, steps);
            pos += take;
            col = 0;
            // Advance the odometer over the outer dims.
            for d in (0..outer.len()).rev() {
                idx[d] += 1;
                for k in 0..N {
                    base[k] += cstrides[k][d];
                }
                if idx[d] < outer[d] {
                    break;
                }
                for k in 0..N {
                    base[k] -= cstrides[k][d] * outer[d] as isize;
                }
                idx[d] = 0;
            }
        }
    };
    let n = out.len();
    debug_assert_eq!(n, numel(shape));
    if n >= PARALLEL_THRESHOLD {
        let chunk = chunk_len(n);
        out.par_chunks_mut(chunk).enumerate().for_each(|(i, part)| fill_range(i * chunk, part));
    } else {
        fill_range(0, out);
    }
}

/// Writes `src` (row-major over `window.shape`) into `out` at the positions
/// `window` selects.
pub fn scatter<T: Copy>(out: &mut [T], window: &Layout, src: &[T]) {
    let shape = &window.shape;
    let mut idx = vec![0usize; shape.len()];
    for &v in src {
        let off =
            window.offset as isize + idx.iter().zip(&window.strides).map(|(&i, &s)| i as isize * s).sum::<isize>();
        out[off as usize] = v;
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// `out[i] = f(x[i])` over contiguous slices, multithreaded when large and
/// compiled for AVX2+FMA when the processor has them.
pub fn map_contiguous<T: Copy + Sync, U: Send>(x: &[T], out: &mut [U], f: impl Fn(T) -> U + Sync) {
    let serial = |x: &[T], o: &mut [U]| simd_dispatch::map1(x, o, &f);
    if out.len() >= PARALLEL_THRESHOLD {
        let chunk = chunk_len(out.len());
        out.par_chunks_mut(chunk).zip(x.par_chunks(chunk)).for_each(|(o, x)| serial(x, o));
    } else {
        serial(x, out);
    }
}

/// Elements per stack copy of the in-place maps: small enough for L1.
const IN_PLACE_CHUNK: usize = 256;

/// `v[i] = f(v[i])` in place (a donated buffer), with the vector code of
/// [`map_contiguous`]: each short run is copied to the stack and mapped
/// back, so the kernels never read and write one slice at once.
pub fn map_in_place<T: Copy + Send + Sync + bytemuck::Zeroable>(v: &mut [T], f: impl Fn(T) -> T + Sync) {
    let serial = |o: &mut [T]| {
        let mut tmp = [T::zeroed(); IN_PLACE_CHUNK];
        for run in o.chunks_mut(IN_PLACE_CHUNK) {
            let t = &mut tmp[..run.len()];
            t.copy_from_slice(run);
            simd_dispatch::map1(t, run, &f);
        }
    };
    if v.len() >= PARALLEL_THRESHOLD {
        v.par_chunks_mut(chunk_len(v.len())).for_each(serial);
    } else {
        serial(v);
    }
}

/// `v[i] = f(v[i], b[i])` in place over contiguous slices of one length
/// (see [`map_in_place`]).
pub fn zip_in_place<T: Copy + Send + Sync + bytemuck::Zeroable>(v: &mut [T], b: &[T], f: impl Fn(T, T) -> T + Sync) {
    let serial = |o: &mut [T], b: &[T]| {
        let mut tmp = [T::zeroed(); IN_PLACE_CHUNK];
        for (run, b) in o.chunks_mut(IN_PLACE_CHUNK).zip(b.chunks(IN_PLACE_CHUNK)) {
            let t = &mut tmp[..run.len()];
            t.copy_from_slice(run);
            simd_dispatch::map2(t, b, run, &f);
        }
    };
    if v.len() >= PARALLEL_THRESHOLD {
        let chunk = chunk_len(v.len());
        v.par_chunks_mut(chunk).zip(b.par_chunks(chunk)).for_each(|(o, b)| serial(o, b));
    } else {
        serial(v, b);
    }
}

/// `out[i] = f(a[i], b[i])` over contiguous slices (see [`map_contiguous`]).
pub fn zip_contiguous<T: Copy + Sync, U: Send>(a: &[T], b: &[T], out: &mut [U], f: impl Fn(T, T) -> U + Sync) {
    let serial = |a: &[T], b: &[T], o: &mut [U]| simd_dispatch::map2(a, b, o, &f);
    if out.len() >= PARALLEL_THRESHOLD {
        let chunk = chunk_len(out.len());
        out.par_chunks_mut(chunk)
            .zip(a.par_chunks(chunk))
            .zip(b.par_chunks(chunk))
            .for_each(|((o, a), b)| serial(a, b, o));
    } else {
        serial(a, b, out);
    }
}

/// The same loops compiled three times: for the baseline target and, on
/// x86-64, for AVX2+FMA and for AVX-512, chosen at run time.
mod simd_dispatch {
    #[inline(always)]
    fn map1_body<T: Copy, U>(x: &[T], o: &mut [U], f: &impl Fn(T) -> U) {
        for (o, &x) in o.iter_mut().zip(x) {
            *o = f(x);
        }
    }

    #[inline(always)]
    fn map2_body<T: Copy, U>(a: &[T], b: &[T], o: &mut [U], f: &impl Fn(T, T) -> U) {
        for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
            *o = f(a, b);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn map1_avx2<T: Copy, U>(x: &[T], o: &mut [U], f: &impl Fn(T) -> U) {
        map1_body(x, o, f)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn map2_avx2<T: Copy, U>(a: &[T], b: &[T], o: &mut [U], f: &impl Fn(T, T) -> U) {
        map2_body(a, b, o, f)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
    unsafe fn map1_avx512<T: Copy, U>(x: &[T], o: &mut [U], f: &impl Fn(T) -> U) {
        map1_body(x, o, f)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
    unsafe fn map2_avx512<T: Copy, U>(a: &[T], b: &[T], o: &mut [U], f: &impl Fn(T, T) -> U) {
        map2_body(a, b, o, f)
    }

    /// The widest vector code the processor runs, detected once.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum SimdLevel {
        /// The baseline target's code.
        Baseline,
        /// AVX2 with FMA (x86-64).
        Avx2Fma,
        /// AVX-512 F/VL/DQ/BW with AVX2 and FMA (x86-64).
        Avx512,
    }

    /// This processor's [`SimdLevel`].
    pub fn simd_level() -> SimdLevel {
        static LEVEL: std::sync::OnceLock<SimdLevel> = std::sync::OnceLock::new();
        *LEVEL.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                let avx2_fma = std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
                let avx512 = std::is_x86_feature_detected!("avx512f")
                    && std::is_x86_feature_detected!("avx512vl")
                    && std::is_x86_feature_detected!("avx512dq")
                    && std::is_x86_feature_detected!("avx512bw");
                if avx2_fma && avx512 {
                    return SimdLevel::Avx512;
                }
                if avx2_fma {
                    return SimdLevel::Avx2Fma;
                }
            }
            SimdLevel::Baseline
        })
    }

    /// `o[i] = f(x[i])` with the code of `level` (which this processor runs).
    pub fn map1_at<T: Copy, U>(level: SimdLevel, x: &[T], o: &mut [U], f: &impl Fn(T) -> U) {
        match level {
            // SAFETY: `level` came from `simd_level`, so the processor has these features.
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => unsafe { map1_avx512(x, o, f) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2Fma => unsafe { map1_avx2(x, o, f) },
            _ => map1_body(x, o, f),
        }
    }

    /// `o[i] = f(a[i], b[i])` with the code of `level` (see [`map1_at`]).
    pub fn map2_at<T: Copy, U>(level: SimdLevel, a: &[T], b: &[T], o: &mut [U], f: &impl Fn(T, T) -> U) {
        match level {
            // SAFETY: `level` came from `simd_level`, so the processor has these features.
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => unsafe { map2_avx512(a, b, o, f) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2Fma => unsafe { map2_avx2(a, b, o, f) },
            _ => map2_body(a, b, o, f),
        }
    }

    pub fn map1<T: Copy, U>(x: &[T], o: &mut [U], f: &impl Fn(T) -> U) {
        map1_at(simd_level(), x, o, f)
    }

    pub fn map2<T: Copy, U>(a: &[T], b: &[T], o: &mut [U], f: &impl Fn(T, T) -> U) {
        map2_at(simd_level(), a, b, o, f)
    }
}

pub use simd_dispatch::{map1_at, map2_at, simd_level, SimdLevel};

/// A raw output pointer shared by tasks that write disjoint parts of one
/// buffer (each user states why its parts are disjoint).
#[derive(Clone, Copy)]
pub(crate) struct SendPtr<T>(pub(crate) *mut T);

impl<T> SendPtr<T> {
    /// The pointer (a method, so closures capture the whole wrapper).
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}

// SAFETY: the tasks sharing a SendPtr write disjoint elements (see users).
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}
