//! `quantize` and `dequantize` in every mode.

use super::*;

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
pub(super) fn ceil_log2(x: &Array) -> Result<Array> {
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
    let negative_side = crate::ops::logical_and(&less(v, &lit(0.0, t))?, &greater(&k, &u32s(0))?)?;
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
pub(super) fn affine_dequantize(w: &Array, scales: &Array, biases: &Array, gs: usize, bits: u32) -> Result<Array> {
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
pub(super) fn fp_dequantize(
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
