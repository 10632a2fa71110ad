//! Quantization, as MLX has it: `to_fp8` / `from_fp8` (e4m3 bytes),
//! `quantize` / `dequantize` in the modes "affine" (1, 2, 3, 4, 5, 6 or 8 bits
//! with a scale and a bias per group, packed into uint32), "mxfp4",
//! "mxfp8" (e2m1 or e4m3 elements with an e8m0 scale per 32) and "nvfp4"
//! (e2m1 elements with an e4m3 scale per 16), and the products with a
//! quantized matrix `quantized_matmul`, `gather_qmm` and `qqmm`.
//!
//! Every op is composed of existing ops (bit operations on the float bits,
//! shifts, `where`, reductions, `take`, `matmul`), so it runs on every
//! backend, builds a lazy graph, vmaps, and is differentiable with respect to
//! its float inputs. The formulas follow MLX's CPU kernels and fallbacks step
//! by step, so that `to_fp8`, `from_fp8`, `quantize` and `dequantize` give
//! MLX's CPU results bit for bit. The products dequantize the weights
//! exactly as MLX's kernels do and then call `matmul`: they differ from MLX
//! only by the order of the float accumulation.
//!
//! Where MLX's CPU build reads memory it should not (float64 buffers read as
//! float32 by `to_fp8`/`from_fp8`, scales with fewer rows than the weights,
//! out-of-range indices), ferrox computes the meaningful result or raises.

use super::creation::{arange, zeros, zeros_like};
use super::elementwise::{astype, stop_gradient, view, where_};
use super::gather::take;
use super::linalg::matmul;
use super::math::clip;
use super::reduction::{max, min, sum};
use super::shaping::{broadcast_to, concatenate, expand_dims, flatten, reshape, reshape_to, squeeze, swapaxes};
use super::structured_matmul::gather_mm;
use super::{
    abs, add, bitwise_and, bitwise_or, divide, equal, greater, greater_equal, isfinite, isnan, left_shift, less,
    maximum, multiply, negative, not_equal, power, right_shift, round, subtract, unflatten,
};
use crate::array::Array;
use crate::device::{current_stream, DeviceType};
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};
use crate::shape::broadcast_shapes;
use crate::transforms::custom::CustomFunction;
use std::sync::Arc;

/// The e2m1 (fp4) values in MLX's code order: codes 0-7 positive, 8-15
/// negative.
const FP4_LUT: [f64; 16] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0];

/// How `quantize` encodes a matrix (MLX's `QuantizationMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuantizationMode {
    /// `bits`-bit integers with a float scale and bias per group (default
    /// group size 64, bits 4).
    Affine,
    /// e2m1 values with an e8m0 (power of two) scale per 32.
    Mxfp4,
    /// e4m3 values with an e8m0 scale per 32.
    Mxfp8,
    /// e2m1 values with an e4m3 scale per 16 (and an optional float32
    /// global scale).
    Nvfp4,
}

impl QuantizationMode {
    /// Parses MLX's mode name, or the error MLX raises for `op`.
    pub fn parse(mode: &str, op: &'static str) -> Result<QuantizationMode> {
        match mode {
            "affine" => Ok(QuantizationMode::Affine),
            "mxfp4" => Ok(QuantizationMode::Mxfp4),
            "mxfp8" => Ok(QuantizationMode::Mxfp8),
            "nvfp4" => Ok(QuantizationMode::Nvfp4),
            _ => Err(Error::invalid(op, format!("Invalid quantization mode '{mode}'."))),
        }
    }

    /// The mode's name as MLX spells it.
    pub fn name(self) -> &'static str {
        match self {
            QuantizationMode::Affine => "affine",
            QuantizationMode::Mxfp4 => "mxfp4",
            QuantizationMode::Mxfp8 => "mxfp8",
            QuantizationMode::Nvfp4 => "nvfp4",
        }
    }

    /// The default `(group_size, bits)`.
    pub fn defaults(self) -> (i32, i32) {
        match self {
            QuantizationMode::Affine => (64, 4),
            QuantizationMode::Mxfp4 => (32, 4),
            QuantizationMode::Mxfp8 => (32, 8),
            QuantizationMode::Nvfp4 => (16, 4),
        }
    }

    /// `group_size` and `bits`, each defaulting to the mode's.
    fn params(self, group_size: Option<i32>, bits: Option<i32>) -> (i32, i32) {
        let (g, b) = self.defaults();
        (group_size.unwrap_or(g), bits.unwrap_or(b))
    }
}

// ---------------------------------------------------------------- helpers

/// A shape as MLX prints it in messages: `(2,3)`, `(3)`, `()`.
fn mlx_shape(shape: &[usize]) -> String {
    format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(","))
}

/// A 0-d array of `dtype` holding `v`.
fn lit(v: f64, dtype: Dtype) -> Array {
    let s = if dtype.is_floating() {
        Scalar::Float(v)
    } else if dtype.is_unsigned_integer() {
        Scalar::UInt(v as u64)
    } else {
        Scalar::Int(v as i64)
    };
    Array::scalar_of(s, dtype)
}

/// A 0-d uint32 array.
fn u32s(v: u32) -> Array {
    Array::scalar_of(Scalar::UInt(v as u64), Dtype::U32)
}

/// A 0-d uint64 array.
fn u64s(v: u64) -> Array {
    Array::scalar_of(Scalar::UInt(v), Dtype::U64)
}

/// A 1-d array of `dtype` with `values`.
fn list(values: &[f64], dtype: Dtype) -> Result<Array> {
    let scalars: Vec<Scalar> = values.iter().map(|&v| Scalar::Float(v)).collect();
    Array::from_scalars(&scalars, &[values.len()], dtype)
}

/// A 1-d uint32 array.
fn u32_list(values: Vec<u32>) -> Result<Array> {
    let n = values.len();
    Array::from_vec(values, &[n])
}

/// `a` with its last axis split into `[groups, group]`.
fn split_last(a: &Array, group: usize) -> Result<Array> {
    let mut shape = a.shape().to_vec();
    let last = shape.pop().unwrap_or(1);
    shape.extend([last / group, group]);
    reshape_to(a, shape)
}

/// `a` with its last two axes merged.
fn merge_last(a: &Array) -> Result<Array> {
    let n = a.ndim() as isize;
    flatten(a, n - 2, n - 1)
}

/// `a` with a trailing axis of size 1.
fn unsqueeze_last(a: &Array) -> Result<Array> {
    expand_dims(a, &[-1])
}

/// Sums the bools `conds` as uint32.
fn count(conds: Vec<Array>) -> Result<Array> {
    let mut total: Option<Array> = None;
    for c in conds {
        let c = astype(&c, Dtype::U32)?;
        total = Some(match total {
            None => c,
            Some(t) => add(&t, &c)?,
        });
    }
    total.ok_or_else(|| Error::invalid("quantize", "nothing to count"))
}

// ---------------------------------------------------------------- fp8

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

/// Packs the integers `q` (uint32, each below `2^bits`) along the last axis
/// into uint32 words as MLX does: a little-endian bit stream, the first
/// element in the lowest bits. The last axis must hold a multiple of
/// `32 / gcd(32, bits)` elements.
fn pack(q: &Array, bits: u32) -> Result<Array> {
    if 32 % bits == 0 {
        let per = (32 / bits) as usize;
        let shifts = arange(0.0, 32.0, bits as f64, Dtype::U32)?;
        return sum(&left_shift(&split_last(q, per)?, &shifts)?, Some(&[-1]), false);
    }
    // 3 and 6 bits: 8 and 4 values in 3 bytes; 5 bits: 8 values in 5 bytes.
    let (per, bytes) = match bits {
        3 => (8usize, 3usize),
        5 => (8, 5),
        6 => (4, 3),
        _ => return Err(Error::invalid("quantize", format!("Cannot pack {bits}-bit values."))),
    };
    let shifts = arange(0.0, (per as u32 * bits) as f64, bits as f64, Dtype::U64)?;
    let packs = sum(&left_shift(&astype(&split_last(q, per)?, Dtype::U64)?, &shifts)?, Some(&[-1]), false)?;
    let byte_shifts = arange(0.0, (8 * bytes) as f64, 8.0, Dtype::U64)?;
    let b = bitwise_and(&right_shift(&unsqueeze_last(&packs)?, &byte_shifts)?, &u64s(0xFF))?;
    view(&merge_last(&astype(&b, Dtype::U8)?)?, Dtype::U32)
}

/// The `bits`-bit integers packed in the uint32 words of `w` (the inverse of
/// [`pack`]), `last * 32 / bits` of them per row, as uint32.
fn unpack(w: &Array, bits: u32) -> Result<Array> {
    let mask = ((1u64 << bits) - 1) as u32;
    if 32 % bits == 0 {
        let shifts = arange(0.0, 32.0, bits as f64, Dtype::U32)?;
        let parts = bitwise_and(&right_shift(&unsqueeze_last(w)?, &shifts)?, &u32s(mask))?;
        return merge_last(&parts);
    }
    // Element i starts at bit i * bits: read its word and the next one.
    let words = *w.shape().last().unwrap_or(&0);
    let n = words * 32 / bits as usize;
    let (mut lo, mut hi, mut shift) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let bit = i * bits as usize;
        lo.push((bit / 32) as u32);
        hi.push(((bit / 32 + 1).min(words.saturating_sub(1))) as u32);
        shift.push((bit % 32) as u64);
    }
    let lo = astype(&take(w, &u32_list(lo)?, Some(-1))?, Dtype::U64)?;
    let hi = astype(&take(w, &u32_list(hi)?, Some(-1))?, Dtype::U64)?;
    let both = bitwise_or(&lo, &left_shift(&hi, &u64s(32))?)?;
    let shift = Array::from_vec(shift, &[n])?;
    astype(&bitwise_and(&right_shift(&both, &shift)?, &u64s(mask as u64))?, Dtype::U32)
}

// ---------------------------------------------------------------- validation

/// MLX's check of a global scale (nvfp4 only, one float32 element).
fn validate_global_scale(op: &'static str, mode: QuantizationMode, g: Option<&Array>) -> Result<()> {
    let Some(g) = g else { return Ok(()) };
    if mode != QuantizationMode::Nvfp4 {
        return Err(Error::invalid(op, "Global scale is only supported for 'nvfp4' quantization mode."));
    }
    if g.size() != 1 {
        return Err(Error::invalid(
            op,
            format!("Global scale must be a scalar but got shape {}.", mlx_shape(g.shape())),
        ));
    }
    if g.dtype() != Dtype::F32 {
        return Err(Error::invalid(op, format!("Global scale must have dtype float32 but got {}.", g.dtype())));
    }
    Ok(())
}

/// MLX's `validate_mode_with_type`: the mode, and the dtype of the
/// dequantized values (`out_type`, else the scales' and biases' type for
/// affine, else bfloat16).
fn validate_mode_with_type(
    op: &'static str,
    scales: &Array,
    biases: Option<&Array>,
    out_type: Option<Dtype>,
    mode: &str,
) -> Result<(Dtype, QuantizationMode)> {
    let qmode = QuantizationMode::parse(mode, op)?;
    if let Some(t) = out_type {
        if !t.is_floating() {
            return Err(Error::invalid(op, format!("Only real floating types are supported but output dtype == {t}.")));
        }
    }
    if qmode == QuantizationMode::Affine {
        let Some(b) = biases else {
            return Err(Error::invalid(op, "Biases must be provided for affine quantization."));
        };
        let dtype = Dtype::promote(scales.dtype(), b.dtype());
        if !dtype.is_floating() {
            return Err(Error::invalid(
                op,
                format!(
                    "Only real floating types are supported but scales.dtype() == {} and biases.dtype() == {}.",
                    scales.dtype(),
                    b.dtype()
                ),
            ));
        }
        return Ok((out_type.unwrap_or(dtype), qmode));
    }
    if scales.dtype() != Dtype::U8 {
        return Err(Error::invalid(op, format!("Scale type must be uint8 but received type {}.", scales.dtype())));
    }
    if biases.is_some() {
        return Err(Error::invalid(op, format!("Biases must be null for quantization mode '{mode}'.")));
    }
    Ok((out_type.unwrap_or(Dtype::BF16), qmode))
}

/// MLX's `validate_quantized_input`: `w` is uint32 and its scales (and
/// biases) match it. Also checks what MLX's kernels assume but do not
/// check (that the scales have one row per row of `w`).
fn validate_quantized_input(
    op: &'static str,
    w: &Array,
    scales: &Array,
    group_size: i32,
    bits: i32,
    biases: Option<&Array>,
) -> Result<()> {
    if w.dtype() != Dtype::U32 {
        return Err(Error::invalid(op, format!("The weight matrix should be uint32 but received {}", w.dtype())));
    }
    if let Some(b) = biases {
        if b.shape() != scales.shape() {
            return Err(Error::invalid(
                op,
                format!(
                    "Scales and biases should have the same shape. Received scales with shape {} and biases with {}",
                    mlx_shape(scales.shape()),
                    mlx_shape(b.shape())
                ),
            ));
        }
    }
    let batch_ok =
        w.ndim() >= 2 && scales.ndim() >= w.ndim() - 2 && w.shape()[..w.ndim() - 2] == scales.shape()[..w.ndim() - 2];
    if !batch_ok {
        return Err(Error::invalid(
            op,
            format!(
                "Weight and scales should have the same batch shape. Received weight with shape {}, scales with {}.",
                mlx_shape(w.shape()),
                mlx_shape(scales.shape())
            ),
        ));
    }
    let last = |a: &Array| *a.shape().last().unwrap_or(&0) as i64;
    if bits <= 0 || scales.ndim() == 0 || last(w) * 32 / bits as i64 != last(scales) * group_size as i64 {
        return Err(Error::invalid(
            op,
            format!(
                "The shapes of the weight and scales are incompatible based on bits and group_size. w.shape() == {} and scales.shape() == {} with group_size={group_size} and bits={bits}",
                mlx_shape(w.shape()),
                mlx_shape(scales.shape())
            ),
        ));
    }
    if scales.shape()[..scales.ndim() - 1] != w.shape()[..w.ndim() - 1] {
        return Err(Error::invalid(
            op,
            format!(
                "The scales with shape {} do not have one row per row of the weight with shape {}.",
                mlx_shape(scales.shape()),
                mlx_shape(w.shape())
            ),
        ));
    }
    Ok(())
}

/// MLX's `extract_quantized_matmul_dims`: checks `x` against the expanded
/// `w` and gives `(inner, outer)` dimensions of the product.
#[allow(clippy::too_many_arguments)]
fn extract_quantized_matmul_dims(
    op: &'static str,
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: Option<&Array>,
    transpose: bool,
    group_size: i32,
    bits: i32,
) -> Result<(usize, usize)> {
    validate_quantized_input(op, w, scales, group_size, bits, biases)?;
    let Some(&x_inner) = x.shape().last() else {
        return Err(Error::IndexArgument { op, msg: "SmallVector out of range.".into() });
    };
    let (rows, packed) = (w.shape()[w.ndim() - 2], w.shape()[w.ndim() - 1]);
    let expanded = (packed as i64 * 32 / bits as i64) as usize;
    let (inner, outer) = if transpose { (expanded, rows) } else { (rows, expanded) };
    if inner != x_inner {
        return Err(Error::invalid(
            op,
            format!(
                "Last dimension of first input with shape (..., {x_inner}) does not match the expanded quantized matrix ({inner}, {outer}) computed from shape {} with group_size={group_size}, bits={bits} and transpose={transpose}",
                mlx_shape(w.shape())
            ),
        ));
    }
    Ok((inner, outer))
}

/// The op of the errors that MLX's CPU kernels raise when they run (a
/// RuntimeError in Python, with the message alone).
pub const QUANTIZED_EVAL_OP: &str = "QuantizedMatmul::eval_cpu";

/// The group sizes and bits MLX's product kernels handle (checked when
/// MLX's CPU build evaluates, here when the op is built).
fn check_kernel_params(op: &'static str, mode: QuantizationMode, group_size: i32, bits: i32) -> Result<()> {
    if mode == QuantizationMode::Affine {
        if ![1, 2, 3, 4, 5, 6, 8].contains(&bits) {
            return Err(Error::invalid(QUANTIZED_EVAL_OP, "Quantization bits must be 1, 2, 3, 4, 5, 6 or 8."));
        }
        if ![32, 64, 128].contains(&group_size) {
            return Err(Error::invalid(QUANTIZED_EVAL_OP, "Quantization group size must be 32, 64 or 128."));
        }
        return Ok(());
    }
    check_fp_params(op, mode, group_size, bits)
}

/// The one group size and bit width of an fp mode.
fn check_fp_params(op: &'static str, mode: QuantizationMode, group_size: i32, bits: i32) -> Result<()> {
    let expected_gs = if mode == QuantizationMode::Nvfp4 { 16 } else { 32 };
    let expected_bits = if mode == QuantizationMode::Mxfp8 { 8 } else { 4 };
    if group_size != expected_gs {
        return Err(Error::invalid(
            op,
            format!("{} quantization requires group size {expected_gs} but got {group_size}.", mode.name()),
        ));
    }
    if bits != expected_bits {
        return Err(Error::invalid(
            op,
            format!("{} quantization requires bits to be {expected_bits} but got {bits}.", mode.name()),
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------- quantize

/// Quantizes `w` along its last axis in groups of `group_size` (MLX's
/// `quantize`): `[wq, scales, biases]` for "affine", `[wq, scales]` for
/// "mxfp4", "mxfp8" and "nvfp4". `wq` is uint32 with the last axis
/// `K * bits / 32`; the scales (and biases) have the last axis
/// `K / group_size`, in `w`'s dtype for affine and uint8 (e8m0 or e4m3
/// codes) otherwise. Defaults: affine 64 and 4 bits (group sizes 32, 64,
/// 128; bits 1, 2, 3, 4, 5, 6, 8), mxfp4 32 and 4, mxfp8 32 and 8, nvfp4 16 and
/// 4. `global_scale` (nvfp4 only, one float32 element) divides the
/// per-group scales' encoding range as in MLX.
///
/// The results equal MLX 0.32.4's CPU results bit for bit: affine follows
/// MLX's CPU kernel (float32 scales and biases, NaN ignored by the group
/// extremes, 1 bit storing the group's minimum and maximum, more bits
/// keeping 0 exact), the fp modes its fallback (e8m0 scales rounded up to a
/// power of two, the `argmin` rounding of e2m1, which sends ties to the
/// smaller magnitude, and MLX's refusals of nvfp4 inputs that do not hold a
/// multiple of 32 elements and of some empty inputs). float64 is refused for
/// affine, as MLX's CPU kernel refuses it. The one difference: the sign of
/// a NaN made by `0 / 0` (an mxfp8 group of zeros and NaN) follows the
/// device's division and ferrox's float conversions, so an mxfp8 code of
/// such a NaN can differ from MLX's in its sign bit.
///
/// ```
/// use ferrox::{ops, Array};
/// let w = ops::arange(0.0, 64.0, 1.0, ferrox::Dtype::F32)?.reshape(&[2, 32])?;
/// let q = ops::quantize(&w, Some(32), Some(4), "affine", None)?;
/// assert_eq!(q.len(), 3);
/// assert_eq!(q[0].shape(), &[2, 4]);
/// let back = ops::dequantize(&q[0], &q[1], Some(&q[2]), Some(32), Some(4), "affine", None, None)?;
/// assert!(ops::allclose(&back, &w, 0.0, 2.1, false)?.item::<bool>()?);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn quantize(
    w: &Array,
    group_size: Option<i32>,
    bits: Option<i32>,
    mode: &str,
    global_scale: Option<&Array>,
) -> Result<Vec<Array>> {
    let op = "quantize";
    let qmode = QuantizationMode::parse(mode, op)?;
    let (gs, bits) = qmode.params(group_size, bits);
    if !w.dtype().is_floating() {
        return Err(Error::invalid(
            op,
            format!("Only real floating types can be quantized but w has type {}.", w.dtype()),
        ));
    }
    if w.ndim() < 2 {
        return Err(Error::invalid(
            op,
            format!("The matrix to be quantized must have at least 2 dimension but it has only {}.", w.ndim()),
        ));
    }
    let last = w.shape()[w.ndim() - 1] as i64;
    // MLX divides by a zero group size (a crash); the group-size check below
    // reports it instead.
    if gs != 0 && last % gs as i64 != 0 {
        return Err(Error::invalid(
            op,
            format!(
                "The last dimension of the matrix needs to be divisible by the quantization group size {gs}. However the provided  matrix has shape {}",
                mlx_shape(w.shape())
            ),
        ));
    }
    validate_global_scale(op, qmode, global_scale)?;
    if qmode == QuantizationMode::Affine {
        if ![32, 64, 128].contains(&gs) {
            return Err(Error::invalid(
                op,
                format!(
                    "The requested group size {gs} is not supported. The supported group sizes are 32, 64, and 128."
                ),
            ));
        }
        if !(1..=8).contains(&bits) || bits == 7 {
            return Err(Error::invalid(
                op,
                format!(
                    "The requested number of bits {bits} is not supported. The supported bits are 1, 2, 3, 4, 5, 6 and 8."
                ),
            ));
        }
        if w.dtype() == Dtype::F64 {
            return Err(Error::invalid("fast::Quantize::eval_cpu", "Only supports floating point inputs"));
        }
        return affine_quantize(w, gs as usize, bits as u32);
    }
    check_fp_params(op, qmode, gs, bits)?;
    fp_quantize(w, gs as usize, bits as u32, qmode, global_scale)
}

/// MLX's CPU affine quantization kernel, as array ops.
fn affine_quantize(w: &Array, gs: usize, bits: u32) -> Result<Vec<Array>> {
    let f32_ = Dtype::F32;
    let wf = split_last(&astype(w, f32_)?, gs)?;
    // The kernel's std::max / std::min skip NaN.
    let nan = isnan(&wf)?;
    let w_max = max(&where_(&nan, &lit(f64::NEG_INFINITY, f32_), &wf)?, Some(&[-1]), true)?;
    let w_min = min(&where_(&nan, &lit(f64::INFINITY, f32_), &wf)?, Some(&[-1]), true)?;
    let n_bins = lit(((1u32 << bits) - 1) as f64, f32_);
    let zero = lit(0.0, f32_);
    let scale = maximum(&divide(&subtract(&w_max, &w_min)?, &n_bins)?, &lit(1e-7, f32_))?;
    let (scale, bias) = if bits == 1 {
        // One bit: the two levels are the group's minimum and maximum.
        (scale, w_min)
    } else {
        // The edge of larger magnitude is kept exact, and 0 with it.
        let mask = greater(&abs(&w_min)?, &abs(&w_max)?)?;
        let scale = where_(&mask, &scale, &negative(&scale)?)?;
        let edge = where_(&mask, &w_min, &w_max)?;
        let q0 = round(&divide(&edge, &scale)?)?;
        let nonzero = not_equal(&q0, &zero)?;
        (where_(&nonzero, &divide(&edge, &q0)?, &scale)?, where_(&nonzero, &edge, &zero)?)
    };
    let q = clip(&round(&divide(&subtract(&wf, &bias)?, &scale)?)?, Some(&zero), Some(&n_bins))?;
    let q = merge_last(&astype(&q, Dtype::U32)?)?;
    let wq = pack(&q, bits)?;
    let scales = squeeze(&astype(&scale, w.dtype())?, Some(&[-1]))?;
    let biases = squeeze(&astype(&bias, w.dtype())?, Some(&[-1]))?;
    Ok(vec![wq, scales, biases])
}

/// MLX's fp quantization (its CPU fallback), as array ops.
fn fp_quantize(
    w: &Array,
    gs: usize,
    bits: u32,
    mode: QuantizationMode,
    global_scale: Option<&Array>,
) -> Result<Vec<Array>> {
    let t = w.dtype();
    // MLX's fallback refuses some empty inputs.
    if w.size() == 0 && bits == 4 {
        return Err(Error::invalid("argmin", "Cannot argmin reduce zero size array."));
    }
    if w.size() == 0 && w.shape()[..w.ndim() - 1].contains(&0) {
        return Err(Error::invalid("reshape", "Cannot infer the shape of an empty array"));
    }
    let mut out_shape: Vec<isize> = w.shape()[..w.ndim() - 1].iter().map(|&d| d as isize).collect();
    out_shape.push(-1);
    let wg = reshape(w, &[-1, gs as isize])?;
    let maxval = if bits == 4 { 6.0 } else { 448.0 };
    let scales = divide(&max(&abs(&wg)?, Some(&[-1]), true)?, &lit(maxval, t))?;
    let (wq, scales) = if gs == 16 {
        let encode = match global_scale {
            Some(g) => divide(&lit(448.0 * 6.0, Dtype::F32), g)?,
            None => lit(1.0, Dtype::F32),
        };
        let s8 = to_fp8(&multiply(&scales, &encode)?)?;
        (multiply(&divide(&wg, &from_fp8(&s8, t)?)?, &encode)?, s8)
    } else {
        // MLX 0.32.4 rounds the scale up to a power of two: the exponent is
        // ceil(log2(scale)), exact (a finite scale never exceeds its power),
        // and non-finite scales go through float -> int32 as MLX's do.
        let z = lit(0.0, scales.dtype());
        let exact = ceil_log2(&scales)?;
        let exponent = where_(&isfinite(&scales)?, &exact, &lit(i32::MIN as f64, Dtype::I32))?;
        let exponent = where_(&equal(&scales, &z)?, &z, &exponent)?;
        let wq = divide(&wg, &power(&lit(2.0, t), &exponent)?)?;
        (wq, astype(&add(&exponent, &lit(127.0, Dtype::I32))?, Dtype::U8)?)
    };
    let wq = if bits == 4 {
        let codes = fp4_codes(&wq, mode == QuantizationMode::Nvfp4)?;
        // MLX packs through a reshape to (-1, 4, 8).
        let n = codes.size();
        if n % 32 != 0 {
            return Err(Error::invalid(
                "reshape",
                format!("Cannot reshape array of size {n} into shape ({},4,8).", n / 32),
            ));
        }
        pack(&reshape_to(&codes, vec![n])?, 4)?
    } else {
        view(&to_fp8(&wq)?, Dtype::U32)?
    };
    Ok(vec![reshape(&wq, &out_shape)?, reshape(&scales, &out_shape)?])
}

/// `ceil(log2(x))` exactly, as int32, for positive finite floats `x`
/// (normal or subnormal), read from the bits: the exponent, plus one when
/// the mantissa is not zero. Other values give unspecified results.
fn ceil_log2(x: &Array) -> Result<Array> {
    let (x, uint, mant_bits, bias) = match x.dtype() {
        Dtype::F64 => (x.clone(), Dtype::U64, 52u32, 1023i64),
        _ => (astype(x, Dtype::F32)?, Dtype::U32, 23, 127),
    };
    let from_bits = |b: &Array| -> Result<(Array, Array)> {
        let exponent = right_shift(b, &lit(mant_bits as f64, uint))?;
        let mant = bitwise_and(b, &lit(((1u64 << mant_bits) - 1) as f64, uint))?;
        let up = astype(&not_equal(&mant, &lit(0.0, uint))?, Dtype::I32)?;
        Ok((
            astype(&exponent, Dtype::I32)?,
            add(&subtract(&astype(&exponent, Dtype::I32)?, &lit(bias as f64, Dtype::I32))?, &up)?,
        ))
    };
    let bits = view(&x, uint)?;
    let (exponent, normal) = from_bits(&bits)?;
    // A subnormal is its mantissa times 2^(1 - bias - mant_bits); the
    // mantissa converts to a float exactly.
    let mant = bitwise_and(&bits, &lit(((1u64 << mant_bits) - 1) as f64, uint))?;
    let (_, of_mant) = from_bits(&view(&astype(&mant, x.dtype())?, uint)?)?;
    let subnormal = subtract(&of_mant, &lit((bias - 1 + mant_bits as i64) as f64, Dtype::I32))?;
    where_(&equal(&exponent, &lit(0.0, Dtype::I32))?, &subnormal, &normal)
}

/// The e2m1 code MLX's fallback picks for `v`: the first entry of
/// [`FP4_LUT`] nearest to `v` (`argmin(|v - lut|)` in `v`'s dtype), so ties
/// go to the smaller magnitude, ±0 is +0, and NaN and ±infinity give 0.
/// `large` also handles |v| ≥ 2^24, where the rounded distances of the
/// argmin tie (only nvfp4 can scale that far).
fn fp4_codes(v: &Array, large: bool) -> Result<Array> {
    let t = v.dtype();
    let a = abs(v)?;
    let mids = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0];
    let mut k = count(mids.iter().map(|&m| greater(&a, &lit(m, t))).collect::<Result<_>>()?)?;
    if large {
        let far = subtract(&a, &lit(6.0, t))?;
        let ahead = FP4_LUT[..7].iter().map(|&p| greater(&subtract(&a, &lit(p, t))?, &far)).collect::<Result<_>>()?;
        k = where_(&greater_equal(&a, &lit(16_777_216.0, t))?, &count(ahead)?, &k)?;
    }
    let negative_side = super::logical_and(&less(v, &lit(0.0, t))?, &greater(&k, &u32s(0))?)?;
    let code = where_(&negative_side, &add(&k, &u32s(8))?, &k)?;
    where_(&isfinite(v)?, &code, &u32s(0))
}

// ---------------------------------------------------------------- dequantize

/// Dequantizes `w` (MLX's `dequantize`): affine `w_i * scale + bias` per
/// group, in the type of the scales and biases; the fp modes `value *
/// scale` in `dtype` (default bfloat16), with nvfp4's `global_scale`
/// multiplying the scales by `global_scale / 2688` (the result is then
/// float32, as in MLX). `dtype` converts the affine result. Bit for bit
/// MLX's CPU results.
///
/// ```
/// use ferrox::{ops, Array, Dtype};
/// let w = ops::arange(-16.0, 16.0, 1.0, Dtype::F32)?.reshape(&[1, 32])?;
/// let q = ops::quantize(&w, None, None, "mxfp8", None)?;
/// let back = ops::dequantize(&q[0], &q[1], None, None, None, "mxfp8", None, Some(Dtype::F32))?;
/// assert_eq!(back.to_vec::<f32>()?, w.to_vec::<f32>()?);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn dequantize(
    w: &Array,
    scales: &Array,
    biases: Option<&Array>,
    group_size: Option<i32>,
    bits: Option<i32>,
    mode: &str,
    global_scale: Option<&Array>,
    dtype: Option<Dtype>,
) -> Result<Array> {
    let op = "dequantize";
    let (out_type, qmode) = validate_mode_with_type(op, scales, biases, dtype, mode)?;
    let (gs, bits) = qmode.params(group_size, bits);
    if bits <= 0 {
        return Err(Error::invalid(op, format!("Invalid value for bits: {bits}")));
    }
    if gs <= 0 {
        return Err(Error::invalid(op, format!("Invalid value for group_size: {gs}")));
    }
    if w.dtype() != Dtype::U32 {
        return Err(Error::invalid(op, "The matrix should be given as a uint32"));
    }
    if w.ndim() < 2 {
        return Err(Error::invalid(
            op,
            format!("The matrix to be dequantized must have at least 2 dimension but it has only {}.", w.ndim()),
        ));
    }
    validate_global_scale(op, qmode, global_scale)?;
    let affine = qmode == QuantizationMode::Affine;
    let what = if affine { "scales and biases" } else { "scales" };
    if !affine {
        check_fp_params(op, qmode, gs, bits)?;
    }
    let mismatch = || Error::invalid(op, format!("Shape of {what} does not match the matrix"));
    let same_rows = |a: &Array| a.ndim() == w.ndim() && a.shape()[..a.ndim() - 1] == w.shape()[..w.ndim() - 1];
    if !same_rows(scales) || !biases.is_none_or(same_rows) {
        return Err(mismatch());
    }
    let packed = w.shape()[w.ndim() - 1] as i64;
    let out_size = packed * 32 / bits as i64;
    if out_size != scales.shape()[scales.ndim() - 1] as i64 * gs as i64 {
        let params = if affine { format!(" with group_size={gs} and bits={bits}") } else { String::new() };
        return Err(Error::invalid(
            op,
            format!(
                "Shape of {what} does not match the matrix given the quantization parameters. Provided matrix of shape {} and {} of shape {}{params}.",
                mlx_shape(w.shape()),
                if affine { "scales/biases" } else { "scales" },
                mlx_shape(scales.shape())
            ),
        ));
    }
    if w.shape()[..w.ndim() - 1].contains(&0) {
        // MLX reshapes to (..., -1, ...) on the way.
        return Err(Error::invalid("reshape", "Cannot infer the shape of an empty array"));
    }
    if affine {
        if bits > 32 {
            return Err(Error::invalid(op, format!("Invalid value for bits: {bits}")));
        }
        if (packed * 32) % bits as i64 != 0 {
            // MLX unpacks through a reshape that fails here.
            let rows: usize = w.shape()[..w.ndim() - 1].iter().product();
            let total = w.size() * 32;
            let denom = rows * bits as usize;
            let mut shape = w.shape()[..w.ndim() - 1].to_vec();
            shape.extend([total.checked_div(denom).unwrap_or(0), bits as usize]);
            return Err(Error::invalid(
                "reshape",
                format!("Cannot reshape array of size {total} into shape {}.", mlx_shape(&shape)),
            ));
        }
        let b = biases.ok_or_else(mismatch)?;
        return astype(&affine_dequantize(w, scales, b, gs as usize, bits as u32)?, out_type);
    }
    let out = fp_dequantize(w, scales, gs as usize, bits as u32, qmode, out_type, global_scale)?;
    // A global scale with extra unit axes broadcasts them in; drop them.
    let mut shape = w.shape()[..w.ndim() - 1].to_vec();
    shape.push(out_size as usize);
    reshape_to(&out, shape)
}

/// `unpack(w) * scale + bias` per group, in the promoted type of the
/// integers (exact), the scales and the biases (MLX's fallback).
fn affine_dequantize(w: &Array, scales: &Array, biases: &Array, gs: usize, bits: u32) -> Result<Array> {
    let q = split_last(&unpack(&stop_gradient(w)?, bits)?, gs)?;
    let out = add(&multiply(&q, &unsqueeze_last(scales)?)?, &unsqueeze_last(biases)?)?;
    merge_last(&out)
}

/// The per-group scales of an fp mode as `dtype` values (e4m3 for nvfp4,
/// times `global / 2688` when given; `2^(s - 127)` for the mx modes).
fn fp_scales(scales: &Array, mode: QuantizationMode, dtype: Dtype, global: Option<&Array>) -> Result<Array> {
    let s = stop_gradient(scales)?;
    if mode == QuantizationMode::Nvfp4 {
        let inv = match global {
            Some(g) => divide(g, &lit(448.0 * 6.0, dtype))?,
            None => lit(1.0, dtype),
        };
        return multiply(&from_fp8(&s, dtype)?, &inv);
    }
    let exponent = subtract(&astype(&s, dtype)?, &lit(127.0, dtype))?;
    power(&lit(2.0, dtype), &exponent)
}

/// The fp values packed in `w` (e2m1 nibbles or e4m3 bytes) as `dtype`.
fn fp_values(w: &Array, bits: u32, dtype: Dtype) -> Result<Array> {
    let w = stop_gradient(w)?;
    if bits == 4 {
        return take(&list(&FP4_LUT, dtype)?, &unpack(&w, 4)?, Some(0));
    }
    from_fp8(&view(&w, Dtype::U8)?, dtype)
}

/// MLX's fp dequantization (its fallback), with the scales grouped by row.
fn fp_dequantize(
    w: &Array,
    scales: &Array,
    gs: usize,
    bits: u32,
    mode: QuantizationMode,
    dtype: Dtype,
    global: Option<&Array>,
) -> Result<Array> {
    let values = split_last(&fp_values(w, bits, dtype)?, gs)?;
    let s = unsqueeze_last(&fp_scales(scales, mode, dtype, global)?)?;
    merge_last(&multiply(&values, &s)?)
}

/// The dequantized matrix of a product: `w` expanded with its (already
/// converted) scales and biases, in `dtype`.
#[allow(clippy::too_many_arguments)]
fn dequantize_for_product(
    w: &Array,
    scales: &Array,
    biases: Option<&Array>,
    gs: usize,
    bits: u32,
    mode: QuantizationMode,
    dtype: Dtype,
    global: Option<&Array>,
) -> Result<Array> {
    match (mode, biases) {
        (QuantizationMode::Affine, Some(b)) => affine_dequantize(w, scales, b, gs, bits),
        _ => astype(&fp_dequantize(w, scales, gs, bits, mode, dtype, global)?, dtype),
    }
}

// ---------------------------------------------------------------- products

/// The product with a quantized matrix (MLX's `quantized_matmul`):
/// `x @ dequantize(w).T` when `transpose` (the default), else
/// `x @ dequantize(w)`. Affine computes in the promoted type of `x`, the
/// scales and the biases; the fp modes in `x`'s type. Batch axes of `x` and
/// `w` broadcast when both have more than two; as in MLX, a `w` with batch
/// axes multiplies an `x` of one or two dimensions with its first matrix.
///
/// The dequantized weights equal MLX's kernels' values exactly; the sum
/// over the inner dimension is `matmul`'s, so results differ from MLX's CPU
/// kernels by float rounding (MLX accumulates group by group). Gradients
/// flow to `x` and, for affine, to the scales and biases (as MLX's);
/// `w` (and the uint8 scales of the fp modes) get zero gradients where MLX
/// raises. vmap works (MLX has no batching rule for this op).
///
/// ```
/// use ferrox::{ops, Array, Dtype};
/// let w = ops::ones(&[8, 64], Dtype::F32)?;
/// let q = ops::quantize(&w, None, None, "affine", None)?;
/// let x = ops::ones(&[2, 64], Dtype::F32)?;
/// let y = ops::quantized_matmul(&x, &q[0], &q[1], Some(&q[2]), true, None, None, "affine")?;
/// assert_eq!(y.shape(), &[2, 8]);
/// assert_eq!(y.to_vec::<f32>()?[0], 64.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn quantized_matmul(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: Option<&Array>,
    transpose: bool,
    group_size: Option<i32>,
    bits: Option<i32>,
    mode: &str,
) -> Result<Array> {
    let op = "quantized_matmul";
    let (dtype, qmode) = validate_mode_with_type(op, scales, biases, None, mode)?;
    let (gs, bits) = qmode.params(group_size, bits);
    extract_quantized_matmul_dims(op, x, w, scales, biases, transpose, gs, bits)?;
    let dtype = if qmode == QuantizationMode::Affine { Dtype::promote(x.dtype(), dtype) } else { x.dtype() };
    if !dtype.is_floating() {
        return Err(Error::invalid(
            op,
            format!("Only real floating types are supported but x.dtype() == {}.", x.dtype()),
        ));
    }
    if x.ndim() > 2 && w.ndim() > 2 {
        let (xb, wb) = (&x.shape()[..x.ndim() - 2], &w.shape()[..w.ndim() - 2]);
        if broadcast_shapes(xb, wb).is_none() {
            return Err(Error::invalid(
                "broadcast_shapes",
                format!("Shapes {} and {} cannot be broadcast.", mlx_shape(xb), mlx_shape(wb)),
            ));
        }
    }
    if dtype == Dtype::F64 {
        return Err(Error::invalid(QUANTIZED_EVAL_OP, "[quantized_matmul] only floating types are supported"));
    }
    check_kernel_params(op, qmode, gs, bits)?;
    let (mut w, mut scales, mut biases) = (w.clone(), scales.clone(), biases.cloned());
    if qmode == QuantizationMode::Affine {
        scales = astype(&scales, dtype)?;
        biases = biases.map(|b| astype(&b, dtype)).transpose()?;
    }
    if x.ndim() <= 2 && w.ndim() > 2 {
        // MLX's kernel runs one batch (of x), reading w's first matrix.
        let first = |a: &Array| -> Result<Array> {
            let n = a.ndim();
            let flat = flatten(a, 0, n as isize - 3)?;
            take(&flat, &u32s(0), Some(0))
        };
        w = first(&w)?;
        scales = first(&scales)?;
        biases = biases.as_ref().map(first).transpose()?;
    }
    let deq = dequantize_for_product(&w, &scales, biases.as_ref(), gs as usize, bits as u32, qmode, dtype, None)?;
    let rhs = if transpose { swapaxes(&deq, -1, -2)? } else { deq };
    matmul(&astype(x, dtype)?, &rhs)
}

/// The product of matrices picked by index from `x` and from the quantized
/// `w` (MLX's `gather_qmm`, the quantized `gather_mm`): `lhs_indices` and
/// `rhs_indices` count over the flattened batch axes of `x` and `w`
/// (default: every batch member), broadcast together to a shape `I`, and
/// the result is `I ++ [M, N]`. Without indices (and global scale) it is
/// [`quantized_matmul`]. `global_scale` (nvfp4 only) holds one float32
/// scale per matrix of `w`; as in MLX, it is refused on the CPU (on a GPU
/// stream ferrox multiplies each matrix's scales by `global_scale / 2688`,
/// as `dequantize` does). `sorted_indices` is a hint MLX may use; the
/// result does not depend on it.
///
/// Numerics and gradients as [`quantized_matmul`]; out-of-range indices
/// raise on the CPU (MLX reads out of bounds).
#[allow(clippy::too_many_arguments)]
pub fn gather_qmm(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: Option<&Array>,
    lhs_indices: Option<&Array>,
    rhs_indices: Option<&Array>,
    transpose: bool,
    group_size: Option<i32>,
    bits: Option<i32>,
    mode: &str,
    global_scale: Option<&Array>,
    sorted_indices: bool,
) -> Result<Array> {
    let _ = sorted_indices;
    let op = "gather_qmm";
    if lhs_indices.is_none() && rhs_indices.is_none() && global_scale.is_none() {
        return quantized_matmul(x, w, scales, biases, transpose, group_size, bits, mode);
    }
    let (out_type, qmode) = validate_mode_with_type(op, scales, biases, None, mode)?;
    let (gs, bits) = qmode.params(group_size, bits);
    let (_, outer) = extract_quantized_matmul_dims(op, x, w, scales, biases, transpose, gs, bits)?;
    if let Some(g) = global_scale {
        if lhs_indices.is_none() && rhs_indices.is_none() {
            return Err(Error::invalid(op, "Global scale is not supported without indices."));
        }
        if qmode != QuantizationMode::Nvfp4 {
            return Err(Error::invalid(op, "Global scale is only supported for 'nvfp4' quantization mode."));
        }
        if g.dtype() != Dtype::F32 {
            return Err(Error::invalid(op, format!("Global scale must have dtype float32 but got {}.", g.dtype())));
        }
        let experts = &w.shape()[..w.ndim() - 2];
        if g.shape() != experts {
            return Err(Error::invalid(
                op,
                format!(
                    "Global scale must have one entry per expert with shape {} but got {}.",
                    mlx_shape(experts),
                    mlx_shape(g.shape())
                ),
            ));
        }
        if current_stream().device.kind == DeviceType::Cpu {
            return Err(Error::invalid(op, "Global scale is only supported on the GPU."));
        }
    }
    let dtype = if qmode == QuantizationMode::Affine { Dtype::promote(x.dtype(), out_type) } else { x.dtype() };
    if !dtype.is_floating() {
        return Err(Error::invalid(
            op,
            format!("Only real floating types are supported but x.dtype() == {}.", x.dtype()),
        ));
    }
    let indices = |given: Option<&Array>, a: &Array| -> Result<Array> {
        if a.ndim() < 2 {
            return Err(Error::invalid(
                op,
                format!("Input must have at least two dimensions but got input with shape {}.", mlx_shape(a.shape())),
            ));
        }
        match given {
            Some(i) if !i.dtype().is_integer() => {
                Err(Error::invalid(op, "Got indices with invalid dtype. Indices must be integral."))
            }
            Some(i) => astype(i, Dtype::U32),
            None => {
                let batch = &a.shape()[..a.ndim() - 2];
                reshape_to(&arange(0.0, batch.iter().product::<usize>() as f64, 1.0, Dtype::U32)?, batch.to_vec())
            }
        }
    };
    let lhs = indices(lhs_indices, x)?;
    let rhs = indices(rhs_indices, w)?;
    let Some(ishape) = broadcast_shapes(lhs.shape(), rhs.shape()) else {
        return Err(Error::invalid(
            "broadcast_shapes",
            format!("Shapes {} and {} cannot be broadcast.", mlx_shape(lhs.shape()), mlx_shape(rhs.shape())),
        ));
    };
    if dtype == Dtype::F64 {
        return Err(Error::invalid(QUANTIZED_EVAL_OP, "[quantized_matmul] only floating types are supported"));
    }
    check_kernel_params(op, qmode, gs, bits)?;
    let (lhs, rhs) = (broadcast_to(&lhs, &ishape)?, broadcast_to(&rhs, &ishape)?);
    let n: usize = ishape.iter().product();
    let experts: usize = w.shape()[..w.ndim() - 2].iter().product();
    let flat_batch = |a: &Array| -> Result<Array> {
        let mut shape = vec![a.shape()[..a.ndim() - 2].iter().product::<usize>()];
        shape.extend_from_slice(&a.shape()[a.ndim() - 2..]);
        reshape_to(a, shape)
    };
    let (mut wf, mut sf) = (flat_batch(w)?, flat_batch(scales)?);
    let mut bf = biases.map(flat_batch).transpose()?;
    if qmode == QuantizationMode::Affine {
        sf = astype(&sf, dtype)?;
        bf = bf.map(|b| astype(&b, dtype)).transpose()?;
    }
    let mut gf = global_scale.map(|g| reshape_to(g, vec![experts, 1, 1])).transpose()?;
    let mut rhs = rhs;
    if n < experts {
        // Fewer products than matrices: dequantize only the chosen ones.
        let pick = reshape_to(&rhs, vec![n])?;
        wf = take(&wf, &pick, Some(0))?;
        sf = take(&sf, &pick, Some(0))?;
        bf = bf.map(|b| take(&b, &pick, Some(0))).transpose()?;
        gf = gf.map(|g| take(&g, &pick, Some(0))).transpose()?;
        rhs = reshape_to(&arange(0.0, n as f64, 1.0, Dtype::U32)?, ishape.clone())?;
    }
    let deq = dequantize_for_product(&wf, &sf, bf.as_ref(), gs as usize, bits as u32, qmode, dtype, gf.as_ref())?;
    let deq = if transpose { swapaxes(&deq, -1, -2)? } else { deq };
    let out = gather_mm(&astype(x, dtype)?, &deq, Some(&lhs), Some(&rhs))?;
    debug_assert_eq!(out.shape().last(), Some(&outer));
    Ok(out)
}

// ---------------------------------------------------------------- qqmm

/// MLX's `fp_quantize_dequantize` kernel (the on-the-fly quantization of
/// `qqmm`): each group of `gs` along the last axis rounded to the mode's
/// format and back, computed in float32 and returned in `x`'s dtype. The
/// group maximum skips NaN; e8m0 scales round up to a power of two and
/// clamp to 2^±127; e2m1 rounds halves to even and maps NaN to 6. A
/// partial last group is quantized as if padded with zeros. With `global`
/// (nvfp4), the scales are encoded relative to `global / 2688` as MLX's
/// CUDA kernel does.
fn fp_quantize_dequantize(
    x: &Array,
    gs: usize,
    bits: u32,
    mode: QuantizationMode,
    global: Option<&Array>,
) -> Result<Array> {
    let f = Dtype::F32;
    let mut xf = astype(x, f)?;
    let k = *x.shape().last().unwrap_or(&0);
    let padded = k.div_ceil(gs) * gs;
    if padded != k {
        let mut pad_shape = x.shape().to_vec();
        *pad_shape.last_mut().unwrap_or(&mut 0) = padded - k;
        xf = concatenate(&[xf, zeros(&pad_shape, f)?], -1)?;
    }
    let xg = split_last(&xf, gs)?;
    let a = abs(&xg)?;
    let amax = max(&where_(&isnan(&a)?, &lit(f64::NEG_INFINITY, f), &a)?, Some(&[-1]), true)?;
    let scale = divide(&amax, &lit(if bits == 4 { 6.0 } else { 448.0 }, f))?;
    let zero = lit(0.0, f);
    let (divisor, decode) = if mode == QuantizationMode::Nvfp4 {
        match global {
            Some(g) => {
                let encode = divide(&lit(448.0 * 6.0, f), &astype(g, f)?)?;
                let s8 = from_fp8(&to_fp8(&multiply(&scale, &encode)?)?, f)?;
                let inv_encode = divide(&lit(1.0, f), &encode)?;
                (multiply(&s8, &inv_encode)?, multiply(&s8, &inv_encode)?)
            }
            None => {
                let s8 = from_fp8(&to_fp8(&scale)?, f)?;
                (s8.clone(), s8)
            }
        }
    } else {
        // e8m0 rounds up: 2^ceil(log2(scale)), the exponent clamped to ±127
        // (a zero scale gives 2^-127), infinity for a non-finite scale.
        let e = clip(&ceil_log2(&scale)?, Some(&lit(-127.0, Dtype::I32)), Some(&lit(127.0, Dtype::I32)))?;
        let s = power(&lit(2.0, f), &astype(&e, f)?)?;
        let s = where_(&isfinite(&scale)?, &s, &lit(f64::INFINITY, f))?;
        (s.clone(), s)
    };
    let el = where_(&equal(&divisor, &zero)?, &zero, &divide(&xg, &divisor)?)?;
    let q = if bits == 8 {
        from_fp8(&to_fp8(&el)?, f)?
    } else {
        let m = abs(&el)?;
        let code = count(vec![
            greater(&m, &lit(0.25, f))?,
            greater_equal(&m, &lit(0.75, f))?,
            greater(&m, &lit(1.25, f))?,
            greater_equal(&m, &lit(1.75, f))?,
            greater(&m, &lit(2.5, f))?,
            greater_equal(&m, &lit(3.5, f))?,
            greater(&m, &lit(5.0, f))?,
        ])?;
        let mag = take(&list(&FP4_LUT[..8], f)?, &code, Some(0))?;
        let signed = bitwise_and(&view(&el, Dtype::U32)?, &u32s(0x8000_0000))?;
        let value = where_(&not_equal(&signed, &u32s(0))?, &negative(&mag)?, &mag)?;
        where_(&isnan(&el)?, &lit(6.0, f), &value)?
    };
    let out = merge_last(&multiply(&decode, &q)?)?;
    let out = if padded != k { take(&out, &arange(0.0, k as f64, 1.0, Dtype::U32)?, Some(-1))? } else { out };
    astype(&out, x.dtype())
}

/// The parameters of one `qqmm` call.
#[derive(Clone, Copy)]
struct QqmmSpec {
    gs: usize,
    bits: u32,
    mode: QuantizationMode,
}

/// `qqmm`'s value for 2-d `x` (M, K) and `w` (N, K) or quantized: both
/// operands quantized and dequantized, then `x_hat @ w_hat.T` in `x`'s type.
fn qqmm_value(
    spec: QqmmSpec,
    x: &Array,
    w: &Array,
    scales: Option<&Array>,
    gsx: Option<&Array>,
    gsw: Option<&Array>,
) -> Result<Array> {
    let t = x.dtype();
    let xh = fp_quantize_dequantize(x, spec.gs, spec.bits, spec.mode, gsx)?;
    let wh = match scales {
        Some(s) if w.dtype() == Dtype::U32 => fp_dequantize(w, s, spec.gs, spec.bits, spec.mode, t, gsw)?,
        _ => fp_quantize_dequantize(w, spec.gs, spec.bits, spec.mode, gsw)?,
    };
    matmul(&xh, &swapaxes(&astype(&wh, t)?, -1, -2)?)
}

/// A matrix product with both operands quantized on the fly (MLX's
/// `qqmm`): `x` (any number of leading axes, or 1-d) is quantized and
/// dequantized along its last axis in `mode`'s format ("nvfp4" by default,
/// "mxfp8", "mxfp4"); `w` (N, K) is used as given when quantized (uint32,
/// with `scales`) or quantized on the fly; the result is `x_hat @ w_hat.T`
/// in `x`'s dtype (float32, float16 or bfloat16). `global_scale_x` and
/// `global_scale_w` (nvfp4 only, both or neither) scale the encodings.
///
/// Values: bit for bit MLX's dequantized operands (MLX's CPU kernel
/// `fp_quantize_dequantize` for `x`); the product's accumulation order is
/// `matmul`'s. Differences from MLX's CPU build, which only runs a 1-row
/// `x` with a quantized `w`: ferrox also computes the general case (MLX's
/// CPU build raises "[QQMatmul] NYI for the general case"); it applies the
/// global scales (MLX's CPU kernel ignores them); it refuses "affine" (MLX's
/// CPU kernel then reads the float scales as fp8 codes). The vjp is MLX's:
/// `dx = qqmm(cotangent, w.T)` and `dw = qqmm(cotangent.T, x.T)` (a
/// quantized `w` gets zeros, and is dequantized for `dx`).
#[allow(clippy::too_many_arguments)]
pub fn qqmm(
    x: &Array,
    w: &Array,
    scales: Option<&Array>,
    group_size: Option<i32>,
    bits: Option<i32>,
    mode: &str,
    global_scale_x: Option<&Array>,
    global_scale_w: Option<&Array>,
) -> Result<Array> {
    let op = "qqmm";
    let qmode = QuantizationMode::parse(mode, op)?;
    let (gs, bits) = qmode.params(group_size, bits);
    let x2 = if x.ndim() == 1 {
        expand_dims(x, &[0])?
    } else if w.ndim() == 2 && x.ndim() > 2 {
        flatten(x, 0, -2)?
    } else {
        x.clone()
    };
    if x2.ndim() > 2 || w.ndim() > 2 {
        return Err(Error::invalid(
            op,
            format!("Only 2D inputs are supported but x.ndim() == {} and w.ndim() == {}.", x2.ndim(), w.ndim()),
        ));
    }
    let quantized = w.dtype() == Dtype::U32;
    if quantized {
        let Some(s) = scales else {
            return Err(Error::invalid(op, "Scales must be provided if second argument is quantized."));
        };
        validate_quantized_input(op, w, s, gs, bits, None)?;
    } else if !w.dtype().is_floating() || w.dtype() == Dtype::F64 {
        return Err(Error::invalid(
            op,
            format!(
                "Only real floating types except float64 are supported but second argument dtype == {}.",
                w.dtype()
            ),
        ));
    }
    if !x2.dtype().is_floating() || x2.dtype() == Dtype::F64 {
        return Err(Error::invalid(
            op,
            format!(
                "Only real floating types except float64 are supported but first argument dtype == {}.",
                x2.dtype()
            ),
        ));
    }
    validate_global_scale(op, qmode, global_scale_x)?;
    validate_global_scale(op, qmode, global_scale_w)?;
    if qmode == QuantizationMode::Nvfp4 && global_scale_x.is_some() != global_scale_w.is_some() {
        return Err(Error::invalid(
            op,
            "For nvfp4 mode, either both global_scale_x and global_scale_w must be provided, or neither.",
        ));
    }
    if x2.ndim() == 0 {
        return Err(Error::IndexArgument { op, msg: "SmallVector out of range.".into() });
    }
    if quantized {
        extract_quantized_matmul_dims(op, &x2, w, scales.unwrap_or(w), None, true, gs, bits)?;
    } else if x2.shape()[x2.ndim() - 1] != w.shape()[w.ndim() - 1] {
        return Err(Error::invalid(
            op,
            format!(
                "Last dimension of first input with shape {} must match last dimension of second input with shape {}.",
                mlx_shape(x2.shape()),
                mlx_shape(w.shape())
            ),
        ));
    }
    if qmode == QuantizationMode::Affine {
        return Err(Error::invalid(op, "Only the 'nvfp4', 'mxfp8' and 'mxfp4' modes are supported, not 'affine'."));
    }
    check_fp_params(op, qmode, gs, bits)?;
    if let (true, Some(s)) = (quantized, scales) {
        if s.dtype() != Dtype::U8 {
            return Err(Error::invalid(op, format!("Scale type must be uint8 but received type {}.", s.dtype())));
        }
    }
    let spec = QqmmSpec { gs: gs as usize, bits: bits as u32, mode: qmode };
    let mut inputs = vec![x2.clone(), w.clone()];
    if quantized {
        inputs.push(scales.cloned().unwrap_or_else(|| w.clone()));
    }
    let global = global_scale_x.zip(global_scale_w);
    if let Some((gx, gw)) = global {
        inputs.extend([gx.clone(), gw.clone()]);
    }
    let has_global = global.is_some();
    let forward = move |a: &[Array]| -> Result<Vec<Array>> {
        let s = if quantized { Some(&a[2]) } else { None };
        let g = if has_global { Some((&a[a.len() - 2], &a[a.len() - 1])) } else { None };
        Ok(vec![qqmm_value(spec, &a[0], &a[1], s, g.map(|g| g.0), g.map(|g| g.1))?])
    };
    let vjp = move |p: &[Array], cot: &[Array], _: &[Array]| -> Result<Vec<Array>> {
        let c = &cot[0];
        let amax = if has_global { Some(astype(&max(&abs(c)?, None, false)?, Dtype::F32)?) } else { None };
        let (gx, gw) = if has_global { (Some(&p[p.len() - 2]), Some(&p[p.len() - 1])) } else { (None, None) };
        let w_full = if quantized {
            fp_dequantize(&p[1], &p[2], spec.gs, spec.bits, spec.mode, c.dtype(), gw)?
        } else {
            p[1].clone()
        };
        let dx = qqmm_value(spec, c, &swapaxes(&w_full, -1, -2)?, None, amax.as_ref(), gw)?;
        let mut grads = vec![astype(&dx, p[0].dtype())?];
        grads.push(if quantized {
            zeros_like(&p[1])?
        } else {
            let dw = qqmm_value(spec, &swapaxes(c, -1, -2)?, &swapaxes(&p[0], -1, -2)?, None, amax.as_ref(), gx)?;
            astype(&dw, p[1].dtype())?
        });
        for extra in &p[2..] {
            grads.push(zeros_like(extra)?);
        }
        Ok(grads)
    };
    let function = CustomFunction {
        name: "qqmm".into(),
        forward: Arc::new(forward),
        vjp: Some(Arc::new(vjp)),
        jvp: Some(Arc::new(|_: &[Array], _: &[Array]| -> Result<Vec<Array>> {
            Err(Error::invalid("QQMM::jvp", "NYI"))
        })),
        vmap: None,
    };
    let out = function.call(&inputs)?.remove(0);
    if x.ndim() > 2 {
        let lead: Vec<isize> = x.shape()[..x.ndim() - 1].iter().map(|&d| d as isize).collect();
        unflatten(&out, 0, &lead)
    } else if x.ndim() == 1 {
        squeeze(&out, Some(&[0]))
    } else {
        Ok(out)
    }
}
