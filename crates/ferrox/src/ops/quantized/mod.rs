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
use super::math::clip;
use super::matmul::matmul;
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

mod fp8;
mod matmul;
mod quantize;

pub use fp8::*;
pub use matmul::*;
pub use quantize::*;

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
