//! GGML tensor types that MLX loads by converting them to float16: BF16 and
//! the K-quants Q2_K, Q4_K and Q6_K. MLX converts them with antirez's
//! gguflib (`gguf_tensor_to_f16`); the decoders here compute the same f32
//! values with the same operations in the same order (no fused multiply-add)
//! and round them to float16 as gguflib does, so the results are
//! bit-identical to MLX's.
//!
//! gguflib's Q4_K decoder differs from llama.cpp's: in each pair of 32-weight
//! sub-blocks, both use the first one's scale and min. MLX loads Q4_K that
//! way, and so does ferrox.

use half::f16;

/// Weights per K-quant super-block.
const QK_K: usize = 256;

/// A GGML tensor type that MLX loads as float16.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ToF16 {
    /// bfloat16 (one weight per "block").
    Bf16,
    /// 256 weights: 16 sub-blocks of 16 with 4-bit scales and mins, 2-bit weights.
    Q2K,
    /// 256 weights: 8 sub-blocks of 32 with 6-bit scales and mins, 4-bit weights.
    Q4K,
    /// 256 weights: 16 sub-blocks of 16 with int8 scales, 6-bit weights.
    Q6K,
}

impl ToF16 {
    /// The type of GGML type number `t`, if MLX converts it to float16.
    pub(super) fn from_ggml(t: u32) -> Option<ToF16> {
        Some(match t {
            10 => ToF16::Q2K,
            12 => ToF16::Q4K,
            14 => ToF16::Q6K,
            30 => ToF16::Bf16,
            _ => return None,
        })
    }

    /// Weights and bytes per block.
    fn block(self) -> (usize, usize) {
        match self {
            ToF16::Bf16 => (1, 2),
            ToF16::Q2K => (QK_K, 84),
            ToF16::Q4K => (QK_K, 144),
            ToF16::Q6K => (QK_K, 210),
        }
    }

    /// Bytes that `n` weights take in the file: whole blocks, the last one
    /// stored whole even when the tensor ends inside it. `None` on overflow.
    pub(super) fn nbytes(self, n: usize) -> Option<usize> {
        let (weights, bytes) = self.block();
        n.div_ceil(weights).checked_mul(bytes)
    }

    /// The first `n` weights stored in `data` (exactly [`ToF16::nbytes`]`(n)`
    /// bytes) as float16.
    pub(super) fn to_f16(self, data: &[u8], n: usize) -> Vec<f16> {
        let (weights, bytes) = self.block();
        debug_assert_eq!(Some(data.len()), self.nbytes(n));
        let mut out = Vec::with_capacity(n);
        let mut block = [0f32; QK_K];
        for b in data.chunks_exact(bytes) {
            let values = &mut block[..weights];
            match self {
                ToF16::Bf16 => bf16_block(b, values),
                ToF16::Q2K => q2_k_block(b, values),
                ToF16::Q4K => q4_k_block(b, values),
                ToF16::Q6K => q6_k_block(b, values),
            }
            let take = weights.min(n - out.len());
            out.extend(values[..take].iter().map(|&v| to_half(v)));
        }
        out
    }
}

/// `v` rounded to float16 as gguflib rounds it (to nearest, ties to even;
/// every NaN becomes the quiet NaN `0x7E00` with `v`'s sign).
fn to_half(v: f32) -> f16 {
    if v.is_nan() {
        f16::from_bits(((v.to_bits() >> 16) as u16 & 0x8000) | 0x7E00)
    } else {
        f16::from_f32(v)
    }
}

/// The float16 at `b[i..i + 2]` as f32.
fn half_at(b: &[u8], i: usize) -> f32 {
    f16::from_le_bytes([b[i], b[i + 1]]).to_f32()
}

/// One bfloat16 (2 bytes): its bits are the upper half of an f32's.
fn bf16_block(b: &[u8], out: &mut [f32]) {
    out[0] = f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16);
}

/// One Q2_K block (84 bytes): 16 bytes of (min << 4 | scale) per 16-weight
/// sub-block, 64 bytes of 2-bit weights, then the f16 scale of the scales and
/// the f16 scale of the mins. Weight `i` of each 128-weight half is bits
/// `2 * (i / 32)` of that half's byte `i % 32`; it becomes
/// `q * (d * scale) - dmin * min`.
fn q2_k_block(b: &[u8], out: &mut [f32]) {
    let (scales, quants) = (&b[..16], &b[16..80]);
    let d = half_at(b, 80);
    let dmin = half_at(b, 82);
    for (sub, values) in out.chunks_exact_mut(16).enumerate() {
        let scale = d * f32::from(scales[sub] & 0xF);
        let min = dmin * f32::from(scales[sub] >> 4);
        for (k, v) in values.iter_mut().enumerate() {
            let j = (sub % 8) * 16 + k; // index in this 128-weight half
            let q = (quants[(sub / 8) * 32 + j % 32] >> (j / 32 * 2)) & 3;
            *v = f32::from(q) * scale - min;
        }
    }
}

/// The 6-bit scale and min of Q4_K sub-block `j` from the block's 12 bytes:
/// sub-blocks 0-3 use the low 6 bits of bytes `j` and `j + 4`; sub-blocks
/// 4-7 take 4 low bits from byte `j + 4` and 2 high bits from the top of
/// bytes `j - 4` (scale) and `j` (min).
fn q4_k_scale_min(s: &[u8], j: usize) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        ((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4))
    }
}

/// One Q4_K block (144 bytes): f16 scale of the scales, f16 scale of the
/// mins, 12 bytes of 6-bit scales and mins, then 128 bytes of 4-bit weights.
/// Each 32 bytes hold 64 weights, the low nibbles first, then the high ones;
/// all 64 become `q * (d * scale) - dmin * min` with the scale and min of the
/// first of their two sub-blocks (gguflib's reading, see the module docs).
fn q4_k_block(b: &[u8], out: &mut [f32]) {
    let d = half_at(b, 0);
    let dmin = half_at(b, 2);
    let (scales, quants) = (&b[4..16], &b[16..144]);
    for (pair, (values, bytes)) in out.chunks_exact_mut(64).zip(quants.chunks_exact(32)).enumerate() {
        let (sc, m) = q4_k_scale_min(scales, 2 * pair);
        let scale = f32::from(sc) * d;
        let min = f32::from(m) * dmin;
        let (low, high) = values.split_at_mut(32);
        for ((l, h), &q) in low.iter_mut().zip(high).zip(bytes) {
            *l = f32::from(q & 0xF) * scale - min;
            *h = f32::from(q >> 4) * scale - min;
        }
    }
}

/// One Q6_K block (210 bytes): 128 bytes of the weights' low 4 bits, 64 bytes
/// of their high 2 bits, 16 int8 sub-block scales, then the f16 scale of the
/// scales. In each 128-weight half, weight `j` has its low bits in nibble
/// `j / 64` of byte `j % 64` and its high bits at bit `2 * (j / 32)` of byte
/// `j % 32`; it becomes `(d * scale) * (q - 32)`.
fn q6_k_block(b: &[u8], out: &mut [f32]) {
    let d = half_at(b, 208);
    for (half, values) in out.chunks_exact_mut(128).enumerate() {
        let low = &b[half * 64..half * 64 + 64];
        let high = &b[128 + half * 32..128 + half * 32 + 32];
        let scales = &b[192 + half * 8..192 + half * 8 + 8];
        for (j, v) in values.iter_mut().enumerate() {
            let q = ((low[j % 64] >> (j / 64 * 4)) & 0xF) | (((high[j % 32] >> (j / 32 * 2)) & 3) << 4);
            let scale = d * f32::from(scales[j / 16] as i8);
            *v = scale * (i32::from(q) - 32) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn half_bytes(v: f32) -> [u8; 2] {
        f16::from_f32(v).to_le_bytes()
    }

    fn decode(t: ToF16, data: &[u8], n: usize) -> Vec<f32> {
        t.to_f16(data, n).iter().map(|h| h.to_f32()).collect()
    }

    #[test]
    fn rounding_to_half_matches_gguflib() {
        assert_eq!(to_half(1.0).to_bits(), 0x3C00);
        // Ties go to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
        assert_eq!(to_half(1.0 + 2f32.powi(-11)).to_bits(), 0x3C00);
        assert_eq!(to_half(1.0 + 3.0 * 2f32.powi(-11)).to_bits(), 0x3C02);
        assert_eq!(to_half(2f32.powi(-24)).to_bits(), 0x0001); // smallest subnormal
        assert_eq!(to_half(2f32.powi(-26)).to_bits(), 0x0000);
        assert_eq!(to_half(-65520.0).to_bits(), 0xFC00); // overflows to -inf
        assert_eq!(to_half(f32::from_bits(0x7F80_0001)).to_bits(), 0x7E00);
        assert_eq!(to_half(f32::from_bits(0xFFC1_2345)).to_bits(), 0xFE00);
    }

    #[test]
    fn sizes_pad_the_last_block() {
        assert_eq!(ToF16::Q4K.nbytes(0), Some(0));
        assert_eq!(ToF16::Q4K.nbytes(1), Some(144));
        assert_eq!(ToF16::Q2K.nbytes(257), Some(168));
        assert_eq!(ToF16::Q6K.nbytes(512), Some(420));
        assert_eq!(ToF16::Bf16.nbytes(3), Some(6));
        assert_eq!(ToF16::Bf16.nbytes(usize::MAX), None);
        assert!([10, 12, 14, 30].into_iter().all(|t| ToF16::from_ggml(t).is_some()));
        assert_eq!([0, 2, 11, 13, 15, 16, 28].map(ToF16::from_ggml), [None; 7]);
    }

    #[test]
    fn bf16() {
        let data = [0x80, 0x3F, 0x40, 0xC0, 0x80, 0x7F, 0xC1, 0xFF, 0x80, 0x47];
        let h = ToF16::Bf16.to_f16(&data, 5);
        let bits: Vec<u16> = h.iter().map(|h| h.to_bits()).collect();
        // 1, -3, inf, NaN (made the canonical negative quiet NaN), 65536 (too big).
        assert_eq!(bits, [0x3C00, 0xC200, 0x7C00, 0xFE00, 0x7C00]);
    }

    #[test]
    fn q2_k() {
        let mut b = [0u8; 84];
        // Sub-block s: scale s % 16, min s / 4.
        for (s, byte) in b[..16].iter_mut().enumerate() {
            *byte = (((s / 4) << 4) | (s % 16)) as u8;
        }
        // Weight j of a half is 2-bit field j / 32 of byte j % 32: set the
        // field of weight j to j % 4 in the first half and 3 in the second.
        for j in 0..128 {
            b[16 + j % 32] |= ((j % 4) << (j / 32 * 2)) as u8;
            b[48 + j % 32] |= 3 << (j / 32 * 2);
        }
        b[80..82].copy_from_slice(&half_bytes(0.5));
        b[82..84].copy_from_slice(&half_bytes(0.25));
        let got = decode(ToF16::Q2K, &b, 256);
        for (i, &v) in got.iter().enumerate() {
            let s = i / 16;
            let q = if i < 128 { i % 4 } else { 3 } as f32;
            assert_eq!(v, q * 0.5 * (s % 16) as f32 - 0.25 * (s / 4) as f32, "weight {i}");
        }
        // A tensor ending inside its block reads only its weights.
        assert_eq!(decode(ToF16::Q2K, &b, 20), got[..20]);
    }

    #[test]
    fn q4_k() {
        let mut b = [0u8; 144];
        b[0..2].copy_from_slice(&half_bytes(2.0));
        b[2..4].copy_from_slice(&half_bytes(1.0));
        // Scales and mins of sub-blocks 0, 2, 4, 6 (the ones gguflib reads):
        // (1, 2), (3, 4), (37, 41) and (63, 58), the last two with their
        // high bits in the top of bytes 0-3 and 4-7.
        let pairs = [(1u8, 2u8), (3, 4), (37, 41), (63, 58)];
        b[4] = pairs[0].0;
        b[8] = pairs[0].1;
        b[6] = pairs[1].0;
        b[10] = pairs[1].1;
        b[12] = ((pairs[2].1 & 0xF) << 4) | (pairs[2].0 & 0xF);
        b[4] |= (pairs[2].0 >> 4) << 6;
        b[8] |= (pairs[2].1 >> 4) << 6;
        b[14] = ((pairs[3].1 & 0xF) << 4) | (pairs[3].0 & 0xF);
        b[6] |= (pairs[3].0 >> 4) << 6;
        b[10] |= (pairs[3].1 >> 4) << 6;
        // Odd sub-blocks get different values, which gguflib ignores.
        b[5] = 9;
        b[9] = 9;
        for (j, q) in b[16..].iter_mut().enumerate() {
            *q = (((15 - j % 16) << 4) | (j % 16)) as u8;
        }
        let got = decode(ToF16::Q4K, &b, 256);
        for (i, &v) in got.iter().enumerate() {
            let (sc, m) = pairs[i / 64];
            let byte = (i / 64) * 32 + i % 32;
            let q = if i % 64 < 32 { byte % 16 } else { 15 - byte % 16 } as f32;
            assert_eq!(v, q * (sc as f32 * 2.0) - m as f32, "weight {i}");
        }
    }

    #[test]
    fn q6_k() {
        let mut b = [0u8; 210];
        // Weight i gets 6-bit value i % 64: low 4 bits in nibble j / 64 of
        // byte j % 64, high 2 bits at bit 2 * (j / 32) of byte j % 32.
        for i in 0..256 {
            let (half, j) = (i / 128, i % 128);
            let q = i % 64;
            b[half * 64 + j % 64] |= ((q & 0xF) << (j / 64 * 4)) as u8;
            b[128 + half * 32 + j % 32] |= ((q >> 4) << (j / 32 * 2)) as u8;
        }
        for s in 0..16 {
            b[192 + s] = (s as i8 - 8) as u8;
        }
        b[208..210].copy_from_slice(&half_bytes(0.125));
        let got = decode(ToF16::Q6K, &b, 256);
        for (i, &v) in got.iter().enumerate() {
            let scale = 0.125 * (i / 16) as f32 - 1.0;
            assert_eq!(v, scale * ((i % 64) as f32 - 32.0), "weight {i}");
        }
        // Two blocks, the second ending early.
        let two = [b, b].concat();
        assert_eq!(decode(ToF16::Q6K, &two, 300)[256..], got[..44]);
    }
}
