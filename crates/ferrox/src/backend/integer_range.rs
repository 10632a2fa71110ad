//! The integer `arange` terms MLX computes: its kernels convert `start` and
//! `start + step` (doubles) to the element type as C++ does on x86-64, take
//! their difference as the step, and add it in the element type, wrapping.
//! So `arange(2**31 - 2, 2**31 + 2, dtype=int32)` wraps past the int32
//! limit, and `arange(0.5, 5, 1.5, dtype=int32)` steps by `int(2.0) -
//! int(0.5) = 2`: `[0, 2, 4]`.

use crate::dtype::Dtype;

/// 2^63 as a double.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// `v` converted to `dtype` (an integer type) as x86-64 C++ converts a
/// double: truncation, with an out-of-range value giving the "integer
/// indefinite" (the minimum of the 32- or 64-bit conversion used); 8- and
/// 16-bit types and uint32 convert through 32- and 64-bit integers and keep
/// the low bits. The result is the value's bits widened to 64.
fn c_cast(v: f64, dtype: Dtype) -> i64 {
    let to_i32 = |v: f64| if v > -2_147_483_649.0 && v < 2_147_483_648.0 { v as i32 } else { i32::MIN };
    let to_i64 = |v: f64| if (-TWO_63..TWO_63).contains(&v) { v as i64 } else { i64::MIN };
    match dtype {
        Dtype::U32 | Dtype::I64 => to_i64(v),
        Dtype::U64 if v >= TWO_63 => to_i64(v - TWO_63) ^ i64::MIN,
        Dtype::U64 => to_i64(v),
        _ => to_i32(v) as i64,
    }
}

/// `(first, step)` for an integer `arange` of `dtype`: element `i` is
/// `first + i * step` in wrapping 64-bit arithmetic, truncated to the type.
pub fn integer_range_terms(start: f64, step: f64, dtype: Dtype) -> (i64, i64) {
    let first = c_cast(start, dtype);
    (first, c_cast(start + step, dtype).wrapping_sub(first))
}

/// Element `i` of an integer `arange` with these terms, as 64-bit bits.
pub fn integer_range_element(first: i64, step: i64, i: usize) -> i64 {
    first.wrapping_add((i as i64).wrapping_mul(step))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: f64, step: f64, n: usize, dtype: Dtype) -> Vec<i64> {
        let (first, step) = integer_range_terms(start, step, dtype);
        (0..n).map(|i| integer_range_element(first, step, i)).collect()
    }

    #[test]
    fn int32_wraps_past_its_limit_as_mlx_does() {
        let n = i32::MAX as f64;
        let got: Vec<i32> = range(n - 1.0, 1.0, 4, Dtype::I32).into_iter().map(|v| v as i32).collect();
        assert_eq!(got, [i32::MAX - 1, i32::MAX, i32::MIN, i32::MIN + 1]);
        // Below the limit the next value converts to the indefinite: step 0.
        let got: Vec<i32> = range(-(2f64.powi(31)), -1.0, 3, Dtype::I32).into_iter().map(|v| v as i32).collect();
        assert_eq!(got, [i32::MIN; 3]);
    }

    #[test]
    fn fractional_bounds_step_by_the_converted_difference() {
        assert_eq!(range(0.5, 1.5, 3, Dtype::I32), [0, 2, 4]);
        let got: Vec<u8> = range(-2.5, 1.3, 5, Dtype::U8).into_iter().map(|v| v as u8).collect();
        assert_eq!(got, [254, 255, 0, 1, 2]);
        let got: Vec<i8> = range(0.0, 100.0, 6, Dtype::I8).into_iter().map(|v| v as i8).collect();
        assert_eq!(got, [0, 100, -56, 44, -112, -12]);
    }
}
