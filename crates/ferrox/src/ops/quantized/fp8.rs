//! e4m3 (fp8) conversions: `to_fp8` and `from_fp8`.

use super::*;

/// Converts a float array to e4m3 fp8 bytes (uint8), as MLX's `ToFP8`:
/// round to nearest even, subnormals kept, magnitudes from 464 up
/// (infinity and NaN included) saturate to 448 (`0x7E`) with their sign.
/// float16 and bfloat16 are converted exactly first; float64 is rounded to
/// float32 first (MLX's CPU build reads float64 buffers as float32 there).
///
/// ```
/// use ferrox::{ops, Array};
/// let x = Array::from_slice(&[1.0f32, -448.0, 1e9, 0.001953125], &[4])?;
/// assert_eq!(ops::to_fp8(&x)?.to_vec::<u8>()?, vec![0x38, 0xFE, 0x7E, 0x01]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn to_fp8(x: &Array) -> Result<Array> {
    if !x.dtype().is_floating() {
        return Err(Error::invalid(
            "to_fp8",
            format!("Only real floating types are supported but x.dtype() == {}.", x.dtype()),
        ));
    }
    let bits = view(&astype(x, Dtype::F32)?, Dtype::U32)?;
    // The sign comes from the input's own bits: converting a NaN to float32
    // need not keep its sign on every device.
    let sign = match x.dtype() {
        Dtype::F16 | Dtype::BF16 => {
            left_shift(&astype(&right_shift(&view(x, Dtype::U16)?, &lit(15.0, Dtype::U16))?, Dtype::U32)?, &u32s(31))?
        }
        Dtype::F64 => left_shift(&astype(&right_shift(&view(x, Dtype::U64)?, &u64s(63))?, Dtype::U32)?, &u32s(31))?,
        _ => bitwise_and(&bits, &u32s(0x8000_0000))?,
    };
    let a = bitwise_and(&bits, &u32s(0x7FFF_FFFF))?;
    // Below 2^-6: adding 2^14 rounds to a multiple of 2^-9 (the subnormal step).
    let denorm = 141u32 << 23;
    let shifted = add(&view(&a, Dtype::F32)?, &lit(16384.0, Dtype::F32))?;
    let low = subtract(&view(&shifted, Dtype::U32)?, &u32s(denorm))?;
    // Normal range: rebias the exponent and round the mantissa to 3 bits,
    // halves to even (the input is clamped so that no lane wraps around).
    let clamped = clip(&a, Some(&u32s(121 << 23)), Some(&u32s(543 << 21)))?;
    let odd = bitwise_and(&right_shift(&a, &u32s(20))?, &u32s(1))?;
    let high = subtract(&clamped, &u32s(120 << 23))?;
    let high = right_shift(&add(&add(&high, &u32s(0x7FFFF))?, &odd)?, &u32s(20))?;
    let r = where_(&less(&a, &u32s(121 << 23))?, &low, &high)?;
    let r = where_(&greater_equal(&a, &u32s(543 << 21))?, &u32s(0x7E), &r)?;
    astype(&bitwise_or(&r, &right_shift(&sign, &u32s(24))?)?, Dtype::U8)
}

/// Converts e4m3 fp8 bytes (uint8) to `dtype` (MLX's `FromFP8`): exact,
/// with `0x7F`/`0xFF` (e4m3's NaN codes) NaN with the bits MLX 0.32.4 gives
/// (older MLX sources read them as ±480). float64 results are exact too
/// (MLX's CPU build writes float32 values into the float64 buffer there).
///
/// ```
/// use ferrox::{ops, Array, Dtype};
/// let x = Array::from_slice(&[0x38u8, 0xFE, 0x01, 0x7F], &[4])?;
/// let y = ops::from_fp8(&x, Dtype::F32)?.to_vec::<f32>()?;
/// assert_eq!(y[..3], [1.0, -448.0, 0.001953125]);
/// assert!(y[3].is_nan());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn from_fp8(x: &Array, dtype: Dtype) -> Result<Array> {
    if x.dtype() != Dtype::U8 {
        return Err(Error::invalid("from_fp8", format!("Input must have type uint8 but x.dtype() == {}.", x.dtype())));
    }
    if !dtype.is_floating() {
        return Err(Error::invalid(
            "from_fp8",
            format!("Only real floating types are supported but dtype == {dtype}."),
        ));
    }
    let x = stop_gradient(x)?;
    // The 7 magnitude bits sit where float16 keeps them, 8 exponents too low.
    let mag = astype(&bitwise_and(&x, &lit(127.0, Dtype::U8))?, Dtype::U16)?;
    let half = view(&left_shift(&mag, &lit(7.0, Dtype::U16))?, Dtype::F16)?;
    let out = multiply(&astype(&half, Dtype::F32)?, &lit(256.0, Dtype::F32))?;
    let neg = not_equal(&bitwise_and(&x, &lit(128.0, Dtype::U8))?, &lit(0.0, Dtype::U8))?;
    let out = astype(&where_(&neg, &negative(&out)?, &out)?, dtype)?;
    // e4m3's NaN codes: MLX 0.32.4 gives NaN with these bits (the sign kept
    // except in bfloat16).
    let bits = |v: u64, t: Dtype, u: Dtype| view(&lit(v as f64, u), t);
    let nan = match dtype {
        Dtype::F16 => where_(&neg, &bits(0xFD00, dtype, Dtype::U16)?, &bits(0x7D00, dtype, Dtype::U16)?)?,
        Dtype::BF16 => bits(0x7FC0, dtype, Dtype::U16)?,
        _ => {
            let f =
                where_(&neg, &bits(0xFFF0_0000, Dtype::F32, Dtype::U32)?, &bits(0x7FF0_0000, Dtype::F32, Dtype::U32)?)?;
            astype(&f, dtype)?
        }
    };
    let is_nan = equal(&bitwise_and(&x, &lit(127.0, Dtype::U8))?, &lit(127.0, Dtype::U8))?;
    where_(&is_nan, &nan, &out)
}

// ---------------------------------------------------------------- packing
