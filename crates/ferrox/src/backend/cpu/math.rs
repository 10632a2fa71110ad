//! Vectorizable scalar math used by the CPU kernels.

/// e^x for f32, branch-free so loops over it vectorize.
///
/// Cephes-style: x = n·ln2 + r with |r| ≤ ln2/2, a degree-7 polynomial for
/// e^r, and 2^n applied as two exponent-field scalings so that results in
/// the subnormal range and overflow to infinity are still right. Within
/// 2 ulp of the correctly rounded result over the whole f32 range.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding 1.5·2^23 rounds to an integer held in the low mantissa bits.
    const SHIFT: f32 = 12_582_912.0;
    let xc = x.clamp(-104.0, 89.0);
    let t = xc * LOG2E + SHIFT;
    let n_f = t - SHIFT;
    let n = (t.to_bits() as i32).wrapping_sub(SHIFT.to_bits() as i32);
    let r = (xc - n_f * LN2_HI) - n_f * LN2_LO;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * (r * r) + r + 1.0;
    let n1 = n >> 1;
    let n2 = n - n1;
    let s1 = f32::from_bits(((n1 + 127) as u32) << 23);
    let s2 = f32::from_bits(((n2 + 127) as u32) << 23);
    let out = y * s1 * s2;
    if x.is_nan() {
        x
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::exp_f32;

    #[test]
    fn exp_matches_f64_reference() {
        let mut worst = 0.0f64;
        let mut x = -103.0f32;
        while x < 88.7 {
            let want = (x as f64).exp();
            let got = exp_f32(x) as f64;
            if want > 1e-37 {
                worst = worst.max(((got - want) / want).abs());
            } else {
                assert!((got - want).abs() < 1e-44, "{x}");
            }
            x += 0.0137;
        }
        assert!(worst < 3.0 * f32::EPSILON as f64, "worst relative error {worst}");
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(89.0), f32::INFINITY);
        assert!(exp_f32(f32::NAN).is_nan());
    }
}
