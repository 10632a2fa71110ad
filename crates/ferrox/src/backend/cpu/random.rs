//! Counter-based random numbers: MLX's generator (threefry2x32 with 20
//! rounds, laid out as MLX's `RandomBits`) and the samplers fused with it,
//! computed bit for bit as MLX computes them on the CPU. `cuda/kernels/
//! random.cu` mirrors every function here, so both devices give the same
//! values for the same key.
//!
//! Layout (MLX's `RandomBits::eval_cpu`): key `k` (words `keys[2k]`,
//! `keys[2k + 1]`) fills its own run of the output from `W` generator words.
//! With `half = W / 2` and `h2 = W - half`, the counter pair `(j, j + h2)`
//! gives words `j` and `j + h2` for `j < half`; when `W` is odd, word `half`
//! is the first word of the pair `(half, 0)`. Counters are 32-bit (MLX's CPU
//! truncates them the same way). Raw bits are the words' little-endian
//! bytes (`W = ceil(bytes / 4)`); every sampler uses one word per float
//! (`W` = elements, twice that for complex64).

use super::storage::{output_vec, CpuBuffer, CpuElement};
use crate::backend::RandomOp;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::Layout;
use half::{bf16, f16};
use num_complex::Complex32;
use rayon::prelude::*;

/// Counter pairs per parallel task.
const TASK: usize = 1 << 14;

/// Counter pairs hashed together (one vector of lanes).
const LANES: usize = 8;

/// The threefry2x32 block function, 20 rounds (JAX's and MLX's), on `N`
/// counter pairs at once so that the compiler can vectorize across them.
#[inline(always)]
fn threefry_lanes<const N: usize>(key: [u32; 2], c0: &mut [u32; N], c1: &mut [u32; N]) {
    const ROTATIONS: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];
    let ks = [key[0], key[1], key[0] ^ key[1] ^ 0x1BD1_1BDA];
    for l in 0..N {
        c0[l] = c0[l].wrapping_add(ks[0]);
        c1[l] = c1[l].wrapping_add(ks[1]);
    }
    for i in 0..5 {
        for &r in &ROTATIONS[i % 2] {
            for l in 0..N {
                c0[l] = c0[l].wrapping_add(c1[l]);
                c1[l] = c1[l].rotate_left(r) ^ c0[l];
            }
        }
        let (kx, ky) = (ks[(i + 1) % 3], ks[(i + 2) % 3].wrapping_add(i as u32 + 1));
        for l in 0..N {
            c0[l] = c0[l].wrapping_add(kx);
            c1[l] = c1[l].wrapping_add(ky);
        }
    }
}

/// The threefry2x32 block function of one counter pair.
#[inline]
pub fn threefry2x32(key: [u32; 2], count: [u32; 2]) -> [u32; 2] {
    let (mut x, mut y) = ([count[0]], [count[1]]);
    threefry_lanes(key, &mut x, &mut y);
    [x[0], y[0]]
}

/// Fills one key's words, `out[w] = f(word w)`, in MLX's layout.
fn fill_key<O: Send, F: Fn(u32) -> O + Sync>(key: [u32; 2], out: &mut [O], f: &F) {
    let words = out.len();
    let half = words / 2;
    let h2 = words - half;
    let (first, rest) = out.split_at_mut(half);
    let (middle, second) = rest.split_at_mut(h2 - half);
    if let Some(m) = middle.first_mut() {
        *m = f(threefry2x32(key, [half as u32, 0])[0]);
    }
    if half > TASK {
        first
            .par_chunks_mut(TASK)
            .zip(second.par_chunks_mut(TASK))
            .enumerate()
            .for_each(|(t, (a, b))| fill_pairs(key, t * TASK, h2, a, b, f));
    } else {
        fill_pairs(key, 0, h2, first, second, f);
    }
}

/// Counter pairs `(j, j + h2)` for `j` in `start..start + a.len()`: their
/// first words into `a`, their second words into `b` (as long as `a`).
/// Compiled twice: for the baseline target and, on x86-64, with AVX2 and
/// FMA (MLX's erfinv is a chain of fused multiply-adds; without the
/// instruction each is a library call), chosen at run time.
fn fill_pairs<O, F: Fn(u32) -> O>(key: [u32; 2], start: usize, h2: usize, a: &mut [O], b: &mut [O], f: &F) {
    #[cfg(target_arch = "x86_64")]
    {
        static HAS_AVX2_FMA: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let has =
            *HAS_AVX2_FMA.get_or_init(|| std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma"));
        if has {
            // SAFETY: the processor supports AVX2 and FMA (checked above).
            return unsafe { fill_pairs_avx2(key, start, h2, a, b, f) };
        }
    }
    fill_pairs_body(key, start, h2, a, b, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fill_pairs_avx2<O, F: Fn(u32) -> O>(key: [u32; 2], start: usize, h2: usize, a: &mut [O], b: &mut [O], f: &F) {
    fill_pairs_body(key, start, h2, a, b, f)
}

#[inline(always)]
fn fill_pairs_body<O, F: Fn(u32) -> O>(key: [u32; 2], start: usize, h2: usize, a: &mut [O], b: &mut [O], f: &F) {
    let mut j = start;
    for (a, b) in a.chunks_mut(LANES).zip(b.chunks_mut(LANES)) {
        let mut c0: [u32; LANES] = std::array::from_fn(|l| (j + l) as u32);
        let mut c1: [u32; LANES] = std::array::from_fn(|l| (j + l + h2) as u32);
        threefry_lanes(key, &mut c0, &mut c1);
        for ((a, b), (&x, &y)) in a.iter_mut().zip(b.iter_mut()).zip(c0.iter().zip(&c1)) {
            *a = f(x);
            *b = f(y);
        }
        j += LANES;
    }
}

/// Fills `out` (`per_key` units per key, one word each) for every key.
fn fill_keys<O: Send, F: Fn(u32) -> O + Sync>(keys: &[u32], out: &mut [O], per_key: usize, f: F) {
    if per_key == 0 {
        return;
    }
    let each = |(o, k): (&mut [O], &[u32])| fill_key([k[0], k[1]], o, &f);
    if keys.len() > 2 && out.len() >= super::strided::PARALLEL_THRESHOLD {
        out.par_chunks_mut(per_key).zip(keys.par_chunks(2)).for_each(each);
    } else {
        out.chunks_mut(per_key).zip(keys.chunks(2)).for_each(each);
    }
}

/// The first `words` generator words of one key (used on the host for
/// the global key sequence).
pub fn key_words(key: [u32; 2], words: usize) -> Vec<u32> {
    let mut out = vec![0u32; words];
    fill_key(key, &mut out, &|w| w);
    out
}

// ---------------------------------------------------------------------------
// The samplers: each is MLX's sequence of ops on float32 words, with every
// rounding where MLX rounds.
// ---------------------------------------------------------------------------

/// 2^-32: MLX divides by `float32(UINT32_MAX)`, which is 2^32.
const INV_2_32: f32 = 1.0 / 4_294_967_296.0;

/// The largest float32 below 1 (`nextafter(1.0f, 0.0f)`).
const BELOW_ONE_F32: f32 = 0.999_999_94;

/// MLX's `uniform` on [0, 1) before the cast: `min(f32(w) / 2^32, upper)`,
/// `upper` the largest value below 1 of the output dtype (as float32).
#[inline(always)]
fn unit(w: u32, upper: f32) -> f32 {
    (w as f32 * INV_2_32).min(upper)
}

/// `log` of a positive normal float32 exactly as glibc's `logf` (the
/// algorithm of ARM's optimized routines, which musl shares), which MLX's
/// CPU erfinv calls: checked against glibc for every positive float.
#[inline(always)]
fn logf(x: f32) -> f32 {
    const OFF: u32 = 0x3f33_0000;
    const LN2: f64 = f64::from_bits(0x3fe6_2e42_fefa_39ef);
    const A: [f64; 3] = [
        f64::from_bits(0xbfd0_0ea3_48b8_8334),
        f64::from_bits(0x3fd5_575b_0be0_0b6a),
        f64::from_bits(0xbfdf_fffe_f20a_4123),
    ];
    let ix = x.to_bits();
    let tmp = ix.wrapping_sub(OFF);
    let i = ((tmp >> 19) & 15) as usize;
    let k = (tmp as i32) >> 23;
    let iz = ix.wrapping_sub(tmp & 0xff80_0000);
    let (invc, logc) = (f64::from_bits(LOGF_TABLE[2 * i]), f64::from_bits(LOGF_TABLE[2 * i + 1]));
    let z = f32::from_bits(iz) as f64;
    let r = z * invc - 1.0;
    let y0 = logc + k as f64 * LN2;
    let r2 = r * r;
    let y = A[1] * r + A[2];
    let y = A[0] * r2 + y;
    (y * r2 + (y0 + r)) as f32
}

/// glibc's `logf` table: (1/c, log c) per interval, as f64 bit patterns.
#[rustfmt::skip]
const LOGF_TABLE: [u64; 32] = [
    0x3ff6_61ec_79f8_f3be, 0xbfd5_7bf7_808c_aade,
    0x3ff5_71ed_4aaf_883d, 0xbfd2_bef0_a7c0_6ddb,
    0x3ff4_9539_f0f0_10b0, 0xbfd0_1eae_7f51_3a67,
    0x3ff3_c995_b0b8_0385, 0xbfcb_31d8_a682_24e9,
    0x3ff3_0d19_0c88_64a5, 0xbfc6_574f_0ac0_7758,
    0x3ff2_5e22_7b0b_8ea0, 0xbfc1_aa2b_c79c_8100,
    0x3ff1_bb4a_4a1a_343f, 0xbfba_4e76_ce8c_0e5e,
    0x3ff1_2358_f08a_e5ba, 0xbfb1_973c_5a61_1ccc,
    0x3ff0_953f_4199_00a7, 0xbfa2_52f4_38e1_0c1e,
    0x3ff0_0000_0000_0000, 0x0000_0000_0000_0000,
    0x3fee_608c_fd9a_47ac, 0x3faa_a5aa_5df2_5984,
    0x3fec_a4b3_1f02_6aa0, 0x3fbc_5e53_aa36_2eb4,
    0x3feb_2036_576a_fce6, 0x3fc5_26e5_7720_db08,
    0x3fe9_c2d1_63a1_aa2d, 0x3fcb_c286_0d22_4770,
    0x3fe8_86e6_0378_41ed, 0x3fd1_058b_c8a0_7ee1,
    0x3fe7_67dc_f553_4862, 0x3fd4_0430_57b6_ee09,
];

/// MLX's float32 `erfinv` (its CPU SIMD code, one lane): a polynomial in
/// `log(1 - a^2)` with fused multiply-adds, as in Giles (2010). The
/// coefficients are MLX's, digit for digit.
#[inline(always)]
#[allow(clippy::excessive_precision)]
fn erfinv(a: f32) -> f32 {
    let t = logf(a.mul_add(0.0 - a, 1.0));
    let p = if t.abs() > 6.125 {
        let mut p = 3.036_975_67e-10_f32;
        for c in [
            2.932_431_01e-8,
            1.221_503_34e-6,
            2.841_089_55e-5,
            3.935_529_68e-4,
            3.026_988_12e-3,
            4.831_857_98e-3,
            -2.646_461_43e-1,
            8.400_164_84e-1,
        ] {
            p = p.mul_add(t, c);
        }
        p
    } else {
        let mut p = 5.438_778_32e-9_f32;
        for c in [
            1.432_854_48e-7,
            1.227_747_93e-6,
            1.129_636_26e-7,
            -5.615_307_60e-5,
            -1.476_976_32e-4,
            2.314_686_78e-3,
            1.153_925_81e-2,
            -2.320_154_76e-1,
            8.862_268_92e-1,
        ] {
            p = p.mul_add(t, c);
        }
        p
    };
    a * p
}

/// The float32 erfinv MLX's `normal` scales: erfinv of its uniform on
/// [-1 + 2^-24, 1), i.e. `2 * u + lo` rounded once, `u` on [0, 1).
#[inline(always)]
fn normal_erfinv(w: u32) -> f32 {
    erfinv(2.0 * unit(w, BELOW_ONE_F32) + -BELOW_ONE_F32)
}

/// One random element of an output dtype, made from one generator word.
trait Sample: CpuElement {
    /// Whether MLX's `uniform` supports the dtype.
    const UNIFORM: bool = true;
    /// MLX's `uniform(0, 1)` in this dtype.
    fn uniform(w: u32) -> Self;
    /// `erfinv` of the symmetric uniform, cast to this dtype.
    fn erfinv(w: u32) -> Self;
    /// MLX's standard normal: `sqrt(2)` times [`Sample::erfinv`], in this dtype.
    fn normal(w: u32) -> Self;
}

impl Sample for f32 {
    #[inline(always)]
    fn uniform(w: u32) -> f32 {
        unit(w, BELOW_ONE_F32)
    }
    #[inline(always)]
    fn erfinv(w: u32) -> f32 {
        normal_erfinv(w)
    }
    #[inline(always)]
    fn normal(w: u32) -> f32 {
        std::f32::consts::SQRT_2 * normal_erfinv(w)
    }
}

impl Sample for f64 {
    // MLX refuses float64 uniforms ("[uniform] Unsupported type.").
    const UNIFORM: bool = false;
    #[inline(always)]
    fn uniform(w: u32) -> f64 {
        unit(w, BELOW_ONE_F32) as f64
    }
    #[inline(always)]
    fn erfinv(w: u32) -> f64 {
        normal_erfinv(w) as f64
    }
    #[inline(always)]
    fn normal(w: u32) -> f64 {
        std::f64::consts::SQRT_2 * normal_erfinv(w) as f64
    }
}

/// f16 and bf16: cast the float32 result; products round once from float32
/// (where they are exact), as MLX's half types compute.
macro_rules! half_sample {
    ($t:ty, $upper:expr) => {
        impl Sample for $t {
            #[inline(always)]
            fn uniform(w: u32) -> $t {
                <$t>::from_f32(unit(w, $upper))
            }
            #[inline(always)]
            fn erfinv(w: u32) -> $t {
                <$t>::from_f32(normal_erfinv(w))
            }
            #[inline(always)]
            fn normal(w: u32) -> $t {
                let sqrt2 = <$t>::from_f32(std::f32::consts::SQRT_2).to_f32();
                <$t>::from_f32(sqrt2 * <$t>::from_f32(normal_erfinv(w)).to_f32())
            }
        }
    };
}

half_sample!(f16, 1.0 - 1.0 / 2048.0);
half_sample!(bf16, 1.0 - 1.0 / 256.0);

/// Samples of `op` in `T`, `per_key` elements per key.
fn samples<T: Sample>(op: RandomOp, keys: &[u32], n: usize, per_key: usize, dtype: Dtype) -> Result<Vec<T>> {
    if op == RandomOp::Bits || (op == RandomOp::Uniform && !T::UNIFORM) {
        return Err(unsupported(op, dtype));
    }
    let mut out = output_vec::<T>(n)?;
    match op {
        RandomOp::Uniform => fill_keys(keys, &mut out, per_key, T::uniform),
        RandomOp::Erfinv => fill_keys(keys, &mut out, per_key, T::erfinv),
        _ => fill_keys(keys, &mut out, per_key, T::normal),
    }
    Ok(out)
}

fn unsupported(op: RandomOp, dtype: Dtype) -> Error {
    Error::UnsupportedDtype { op: op.name(), dtype, detail: "internal error: no random kernel for this dtype" }
}

/// Raw generator bytes in `T` (uint8, uint16 or uint32), `per_key` elements
/// per key.
fn bits<T: CpuElement + bytemuck::Pod>(keys: &[u32], n: usize, per_key: usize) -> Result<Vec<T>> {
    let mut out = output_vec::<T>(n)?;
    let size = std::mem::size_of::<T>();
    if size == 4 {
        let words: &mut [u32] = bytemuck::cast_slice_mut(&mut out);
        fill_keys(keys, words, per_key, |w| w);
        return Ok(out);
    }
    let bytes_per_key = per_key * size;
    if bytes_per_key == 0 {
        return Ok(out);
    }
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
    let each = |(o, k): (&mut [u8], &[u32])| {
        let words = key_words([k[0], k[1]], bytes_per_key.div_ceil(4));
        for (chunk, w) in o.chunks_mut(4).zip(&words) {
            chunk.copy_from_slice(&w.to_le_bytes()[..chunk.len()]);
        }
    };
    if keys.len() > 2 && n >= super::strided::PARALLEL_THRESHOLD {
        bytes.par_chunks_mut(bytes_per_key).zip(keys.par_chunks(2)).for_each(each);
    } else {
        bytes.chunks_mut(bytes_per_key).zip(keys.chunks(2)).for_each(each);
    }
    Ok(out)
}

/// `n` random elements of `dtype` made by `op` from the uint32 key pairs
/// that `layout` selects in `keys` (see the module docs for the layout).
pub fn random(op: RandomOp, keys: &CpuBuffer, layout: &Layout, n: usize, dtype: Dtype) -> Result<CpuBuffer> {
    let CpuBuffer::U32(k) = keys else {
        return Err(Error::invalid(op.name(), "internal error: keys must be uint32"));
    };
    let keys = super::elementwise::map_unary(k, layout, |v| v)?;
    let num_keys = keys.len() / 2;
    let per_key = n.checked_div(num_keys).unwrap_or(0);
    Ok(match (op, dtype) {
        (RandomOp::Bits, Dtype::U8) => CpuBuffer::U8(bits(&keys, n, per_key)?.into()),
        (RandomOp::Bits, Dtype::U16) => CpuBuffer::U16(bits(&keys, n, per_key)?.into()),
        (RandomOp::Bits, Dtype::U32) => CpuBuffer::U32(bits(&keys, n, per_key)?.into()),
        (RandomOp::Bits, _) => return Err(unsupported(op, dtype)),
        (_, Dtype::F32) => CpuBuffer::F32(samples(op, &keys, n, per_key, dtype)?.into()),
        (_, Dtype::F16) => CpuBuffer::F16(samples(op, &keys, n, per_key, dtype)?.into()),
        (_, Dtype::BF16) => CpuBuffer::BF16(samples(op, &keys, n, per_key, dtype)?.into()),
        (_, Dtype::F64) => CpuBuffer::F64(samples(op, &keys, n, per_key, dtype)?.into()),
        (RandomOp::Erfinv, Dtype::C64) => {
            // Real and imaginary parts from consecutive words.
            let mut out = output_vec::<Complex32>(n)?;
            let parts: &mut [f32] = bytemuck::cast_slice_mut(&mut out);
            fill_keys(&keys, parts, 2 * per_key, normal_erfinv);
            CpuBuffer::C64(out.into())
        }
        _ => return Err(unsupported(op, dtype)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generate(op: RandomOp, key: [u32; 2], n: usize, dtype: Dtype) -> CpuBuffer {
        random(op, &CpuBuffer::U32(key.to_vec().into()), &Layout::contiguous(&[2]), n, dtype).expect("random")
    }

    #[test]
    fn threefry_known_answers() {
        // Random123's threefry2x32_20 known-answer vectors.
        assert_eq!(threefry2x32([0, 0], [0, 0]), [0x6b20_0159, 0x99ba_4efe]);
        assert_eq!(threefry2x32([u32::MAX; 2], [u32::MAX; 2]), [0x1cb9_96fc, 0xbb00_2be7]);
        assert_eq!(threefry2x32([0x1319_8a2e, 0x0370_7344], [0x243f_6a88, 0x85a3_08d3]), [0xc492_3a9c, 0x483d_f7a0]);
    }

    #[test]
    fn values_match_mlx() {
        // mx.random.split(key(0)), uniform((5,)) and normal((5,)) as float32 bits,
        // normal((3,), float16) with key(42) (mlx 0.32.4).
        assert_eq!(key_words([0, 0], 4), [4146024105, 967050713, 2718843009, 1272950319]);
        let CpuBuffer::F32(u) = generate(RandomOp::Uniform, [0, 0], 5, Dtype::F32) else { panic!() };
        let bits: Vec<u32> = u.iter().map(|v| v.to_bits()).collect();
        assert_eq!(bits, [1058214520, 1036789817, 1053379662, 1063577824, 1058584726]);
        let CpuBuffer::F32(z) = generate(RandomOp::Normal, [0, 0], 5, Dtype::F32) else { panic!() };
        let bits: Vec<u32> = z.iter().map(|v| v.to_bits()).collect();
        assert_eq!(bits, [1044404792, 3215213710, 3196767363, 1067442482, 1048204889]);
        let CpuBuffer::F16(h) = generate(RandomOp::Normal, [0, 42], 3, Dtype::F16) else { panic!() };
        let bits: Vec<u16> = h.iter().map(|v| v.to_bits()).collect();
        assert_eq!(bits, [12795, 48416, 48700]);
    }

    #[test]
    fn bytes_follow_the_words() {
        let words = key_words([0, 7], 2);
        let CpuBuffer::U8(b) = generate(RandomOp::Bits, [0, 7], 5, Dtype::U8) else { panic!() };
        assert_eq!(&b[..4], &words[0].to_le_bytes());
        assert_eq!(b[4], words[1].to_le_bytes()[0]);
    }

    // Rust's f32::ln is the C library's logf on glibc targets.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn logf_is_glibcs() {
        let mut x = f32::MIN_POSITIVE;
        while x < 1.0e4 {
            assert_eq!(logf(x).to_bits(), x.ln().to_bits(), "{x}");
            x = f32::from_bits(x.to_bits() + 4099);
        }
    }
}
