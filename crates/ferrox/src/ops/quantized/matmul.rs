//! Products with quantized matrices: `quantized_matmul`, `gather_qmm`, `qqmm`.

use super::*;

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
    use crate::primitives::{Refusal, RefuseGradient};
    // As MLX's products: no gradient for the packed weights, nor for the
    // fp modes' scales.
    let mut refusals = vec![Refusal { what: "the quantized weights".into(), runtime: true }];
    let mut guarded = vec![w.clone()];
    let deq = match (mode, biases) {
        (QuantizationMode::Affine, Some(b)) => affine_dequantize(w, scales, b, gs, bits)?,
        _ => {
            refusals.push(Refusal { what: format!("scales in {} quantization", mode.name()), runtime: false });
            guarded.push(scales.clone());
            astype(&fp_dequantize(w, scales, gs, bits, mode, dtype, global)?, dtype)?
        }
    };
    let inputs = std::iter::once(deq.clone()).chain(guarded).collect();
    Array::from_primitive(deq.shape().to_vec(), deq.dtype(), RefuseGradient { refusals }, inputs)
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
/// flow to `x` and, for affine, to the scales and biases (as MLX's); the
/// fp modes' scales raise a ValueError and `w` a RuntimeError, as MLX's
/// do. vmap works (MLX has no batching rule for this op).
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
