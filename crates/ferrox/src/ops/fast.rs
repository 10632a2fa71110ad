//! MLX's `fast` ops: RMS and layer normalization, rotary position
//! embeddings and scaled dot-product attention, each one fused primitive
//! ([`crate::primitives`]'s `fast` module) with one fused forward and one
//! fused backward kernel per backend; and the fused cross entropy that
//! `nn.losses.cross_entropy` runs on class-index targets.
//!
//! Each op also has a reference graph built from ordinary ops with MLX's
//! semantics (the `*_reference` functions): forward-mode derivatives,
//! batching and higher derivatives of the fused primitives go through it,
//! as MLX's `fast::Custom` fallbacks do.

use super::rearrange::slice_axis;
use crate::array::Array;
use crate::backend::{AttentionMask, AttentionParams, RopeParams};
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{fmt_shape, Error, Result};
use crate::ops;
use crate::primitives::{Attention, CrossEntropy, LayerNorm, RmsNorm, Rope};

const RMS: &str = "rms_norm";
const LN: &str = "layer_norm";
const ROPE: &str = "rope";
const SDPA: &str = "scaled_dot_product_attention";
const CE: &str = "cross_entropy";

/// A float32 scalar.
fn f32_scalar(v: f32) -> Array {
    Array::scalar_of(Scalar::Float(v as f64), Dtype::F32)
}

/// Checks a per-feature parameter: one axis of the input's last extent.
fn check_feature(op: &'static str, what: &str, p: &Array, features: usize) -> Result<()> {
    if p.ndim() != 1 {
        return Err(Error::invalid(op, format!("{what} must have 1 dimension but has {} dimensions.", p.ndim())));
    }
    if p.size() != features {
        return Err(Error::invalid(
            op,
            format!("{what} must have the same size as the last dimension of x but has {} elements.", p.size()),
        ));
    }
    Ok(())
}

fn check_rows(op: &'static str, x: &Array) -> Result<()> {
    if x.ndim() == 0 {
        return Err(Error::invalid(op, "Input must have at least 1 dimension but got input with 0 dimensions."));
    }
    Ok(())
}

fn check_float(op: &'static str, dtype: Dtype) -> Result<()> {
    if dtype.is_floating() {
        Ok(())
    } else {
        Err(Error::invalid(op, format!("Received unsupported type {dtype}.")))
    }
}

/// A per-feature parameter cast to `dtype`, or the 0-d `fill` when absent.
fn feature_or(p: Option<&Array>, dtype: Dtype, fill: f64) -> Result<Array> {
    match p {
        Some(p) => p.astype(dtype),
        None => Ok(Array::scalar_of(Scalar::Float(fill), dtype)),
    }
}

/// Root-mean-square normalization over the last axis:
/// `x * rsqrt(mean(x^2, -1) + eps) * weight` (MLX's `fast.rms_norm`). The
/// weight, when given, is one-dimensional with the last axis's extent. The
/// result has the promoted type of `x` and `weight`, which must be a real
/// float type; it is computed in float32 (float64 for float64).
pub fn rms_norm(x: &Array, weight: Option<&Array>, eps: f32) -> Result<Array> {
    check_rows(RMS, x)?;
    let features = x.shape()[x.ndim() - 1];
    if let Some(w) = weight {
        check_feature(RMS, "(*weight)", w, features)?;
    }
    let dtype = weight.map_or(x.dtype(), |w| Dtype::promote(x.dtype(), w.dtype()));
    check_float(RMS, dtype)?;
    let w = feature_or(weight, dtype, 1.0)?;
    Array::from_primitive(x.shape().to_vec(), dtype, RmsNorm { eps }, vec![x.astype(dtype)?, w])
}

/// Layer normalization over the last axis:
/// `(x - mean) * rsqrt(var + eps) * weight + bias` (MLX's `fast.layer_norm`). Weight and bias, when given,
/// are one-dimensional with the last axis's extent; the result has the
/// promoted type of the inputs, which must be a real float type.
pub fn layer_norm(x: &Array, weight: Option<&Array>, bias: Option<&Array>, eps: f32) -> Result<Array> {
    check_rows(LN, x)?;
    let features = x.shape()[x.ndim() - 1];
    let mut dtype = x.dtype();
    for (what, p) in [("weight", weight), ("bias", bias)] {
        if let Some(p) = p {
            check_feature(LN, what, p, features)?;
        }
    }
    // MLX promotes with the bias only alongside a weight.
    if let Some(w) = weight {
        dtype = Dtype::promote(dtype, w.dtype());
        if let Some(b) = bias {
            dtype = Dtype::promote(dtype, b.dtype());
        }
    }
    check_float(LN, dtype)?;
    let (w, b) = (feature_or(weight, dtype, 1.0)?, feature_or(bias, dtype, 0.0)?);
    Array::from_primitive(x.shape().to_vec(), dtype, LayerNorm { eps }, vec![x.astype(dtype)?, w, b])
}

/// Rotary position embeddings (MLX's `fast.rope`) of `x` of shape
/// `(B, *, T, D)`: the leading `dims` features of each position `t` are
/// rotated in pairs — `(i, i + dims/2)`, or `(2i, 2i+1)` when `traditional`
/// — by `(t + offset) * scale * inv_freq[i]`, where `inv_freq[i] =
/// base^(-2i/dims)` or `1 / freqs[i]`; exactly one of `base` and `freqs`
/// is given. `offset` is an integer scalar or one offset per `B`.
pub fn rope(
    x: &Array,
    dims: usize,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    offset: &Array,
    freqs: Option<&Array>,
) -> Result<Array> {
    if x.ndim() < 3 {
        return Err(Error::invalid(
            ROPE,
            format!("Input must have at least 3 dimensions but got input with {} dimensions.", x.ndim()),
        ));
    }
    if !x.dtype().is_floating() {
        return Err(Error::invalid(ROPE, format!("Input must be a floating type but got {}.", x.dtype())));
    }
    if offset.ndim() > 1 {
        return Err(Error::invalid(
            ROPE,
            format!("offset must have at most one dimension but has shape {}.", fmt_shape(offset.shape())),
        ));
    }
    if offset.size() != 1 && offset.size() != x.shape()[0] {
        return Err(Error::invalid(
            ROPE,
            format!(
                "offset must be a scalar or vector with {} elements but has shape {}.",
                x.shape()[0],
                fmt_shape(offset.shape())
            ),
        ));
    }
    if !offset.dtype().is_integer() {
        return Err(Error::invalid(ROPE, format!("offset must be an integer but got type {}.", offset.dtype())));
    }
    if dims == 0 {
        return Err(Error::invalid(ROPE, format!("dims must be positive but got {dims}.")));
    }
    if !dims.is_multiple_of(2) {
        return Err(Error::invalid(ROPE, format!("dims must be even but got {dims}.")));
    }
    let last = x.shape()[x.ndim() - 1];
    if dims > last {
        return Err(Error::invalid(
            ROPE,
            format!("dims must not exceed the input's last dimension ({last}) but got {dims}."),
        ));
    }
    let mut inputs = vec![x.clone(), offset.astype(Dtype::I32)?];
    match (base, freqs) {
        (Some(_), Some(_)) => return Err(Error::invalid(ROPE, "Only one of base or freqs can have a value.")),
        (None, None) => return Err(Error::invalid(ROPE, "Neither base nor freqs has a value.")),
        (None, Some(f)) => {
            if f.ndim() != 1 || f.shape()[0] != dims / 2 {
                return Err(Error::invalid(
                    ROPE,
                    format!(
                        "freqs must be one dimensional with size {} but got shape {}.",
                        dims / 2,
                        fmt_shape(f.shape())
                    ),
                ));
            }
            inputs.push(f.astype(Dtype::F32)?);
        }
        (Some(_), None) => {}
    }
    let params =
        RopeParams { dims, traditional, base: base.unwrap_or(1.0), scale, forward: true, freqs: freqs.is_some() };
    Array::from_primitive(x.shape().to_vec(), x.dtype(), Rope { params }, inputs)
}

/// The mask of [`scaled_dot_product_attention`].
#[derive(Clone, Debug)]
pub enum AttentionMaskArg {
    /// No mask.
    None,
    /// MLX's `"causal"`: query `i` sees keys up to `i + keys - queries`.
    Causal,
    /// A boolean mask (`false` hides a key) or an additive one, broadcast
    /// to `(B, Hq, Lq, Lk)`.
    Array(Array),
}

/// The type the fused kernels compute `dtype` in: float64 for float64,
/// float32 otherwise.
pub(crate) fn compute_dtype(dtype: Dtype) -> Dtype {
    if dtype == Dtype::F64 {
        Dtype::F64
    } else {
        Dtype::F32
    }
}

/// `softmax(scale * q k^T + mask) v` per head (MLX's
/// `fast.scaled_dot_product_attention`). `q` is `(B, Hq, Lq, D)`, `k` is
/// `(B, Hk, Lk, D)` and `v` is `(B, Hk, Lk, Dv)`, with `Hq` a multiple of
/// `Hk` (grouped-query attention). A boolean mask hides keys (they score
/// `finfo(dtype).min`, as in MLX); an additive mask is added to the
/// scores. `sinks`, one logit per query head, joins every softmax's
/// denominator. The result is `(B, Hq, Lq, Dv)` of the promoted type of
/// `q`, `k` and `v`; no score matrix is ever materialized.
pub fn scaled_dot_product_attention(
    q: &Array,
    k: &Array,
    v: &Array,
    scale: f32,
    mask: &AttentionMaskArg,
    sinks: Option<&Array>,
) -> Result<Array> {
    for t in [q, k, v] {
        if t.ndim() != 4 {
            return Err(Error::invalid(
                SDPA,
                format!("input with shape {} expected to be rank 4", fmt_shape(t.shape())),
            ));
        }
    }
    let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
    for t in [ks, vs] {
        if t[0] != qs[0] {
            return Err(Error::invalid(
                SDPA,
                format!("mismatching batch dimension for input with shape {}.", fmt_shape(t)),
            ));
        }
    }
    if qs[3] != ks[3] {
        return Err(Error::invalid(
            SDPA,
            format!(
                "query, keys expected to have matching last dimension; found query shape {} for keys shape {}.",
                fmt_shape(qs),
                fmt_shape(ks)
            ),
        ));
    }
    if ks[1] != vs[1] || ks[2] != vs[2] {
        return Err(Error::invalid(
            SDPA,
            format!(
                "keys, values expected to have matching n_kv_heads and length; found keys shape {} for values shape {}.",
                fmt_shape(ks),
                fmt_shape(vs)
            ),
        ));
    }
    if ks[1] == 0 || qs[1] % ks[1] != 0 {
        return Err(Error::invalid(
            SDPA,
            format!("n_heads must be a multiple of n_kv_heads, found n_heads {} for n_kv_heads {}.", qs[1], ks[1]),
        ));
    }
    let dtype = Dtype::promote(Dtype::promote(q.dtype(), k.dtype()), v.dtype());
    check_float(SDPA, dtype)?;
    let out_shape = vec![qs[0], qs[1], qs[2], vs[3]];
    let mut inputs = vec![q.astype(dtype)?, k.astype(dtype)?, v.astype(dtype)?];
    let kind = match mask {
        AttentionMaskArg::None => AttentionMask::None,
        AttentionMaskArg::Causal => AttentionMask::Causal,
        AttentionMaskArg::Array(m) => {
            if m.ndim() > 4 {
                return Err(Error::invalid(
                    SDPA,
                    format!("the mask with shape {} expected to have at most rank 4.", fmt_shape(m.shape())),
                ));
            }
            let is_bool = m.dtype() == Dtype::Bool;
            if !is_bool && Dtype::promote(m.dtype(), dtype) != dtype {
                return Err(Error::invalid(SDPA, format!("Mask type must promote to output type {dtype}.")));
            }
            let full = [qs[0], qs[1], qs[2], ks[2]];
            let m = if is_bool { m.clone() } else { m.astype(dtype)? };
            inputs.push(m.broadcast_to(&full).map_err(|_| {
                Error::invalid(
                    SDPA,
                    format!(
                        "the mask with shape {} cannot broadcast to the scores' shape {}.",
                        fmt_shape(m.shape()),
                        fmt_shape(&full)
                    ),
                )
            })?);
            if is_bool {
                AttentionMask::Bool
            } else {
                AttentionMask::Additive
            }
        }
    };
    if let Some(s) = sinks {
        if Dtype::promote(s.dtype(), dtype) != dtype {
            return Err(Error::invalid(SDPA, format!("Type of sinks must promote to output type {dtype}.")));
        }
        if s.ndim() != 1 || s.shape()[0] != qs[1] {
            return Err(Error::invalid(SDPA, format!("Received invalid shape for sinks {}.", fmt_shape(s.shape()))));
        }
        inputs.push(s.astype(dtype)?);
    }
    if ks[2] == 0 {
        // No keys: every softmax is empty and the product with the values is zero.
        return ops::zeros(&out_shape, dtype);
    }
    let params = AttentionParams { scale, mask: kind, sinks: sinks.is_some() };
    let specs = Attention::specs(qs, inputs[2].shape(), dtype);
    Ok(Array::siblings_from_primitive(specs, Attention { params }, inputs)?.swap_remove(0))
}

/// The cross entropy over the last axis of `logits` (a real float type)
/// against the class indices `targets` (integers, the logits' shape without
/// the last axis; negative ones count from the end), smoothed by
/// `label_smoothing` in [0, 1): per row,
/// `logsumexp(x) - (1 - label_smoothing) x[t] - label_smoothing mean(x)`,
/// in the logits' dtype (computed in float32, float64 for float64). One
/// fused kernel per backend reads the logits once; its derivative is one
/// more. A target out of range is an error on the CPU and a NaN loss on the
/// GPU.
pub fn cross_entropy(logits: &Array, targets: &Array, label_smoothing: f64) -> Result<Array> {
    check_rows(CE, logits)?;
    check_float(CE, logits.dtype())?;
    if !targets.dtype().is_integer() {
        return Err(Error::invalid(CE, format!("Targets must be integers but got {}.", targets.dtype())));
    }
    let rows = &logits.shape()[..logits.ndim() - 1];
    if targets.shape() != rows {
        return Err(Error::ShapeMismatch {
            op: CE,
            msg: format!(
                "Targets shape {} does not match logits shape {}.",
                fmt_shape(targets.shape()),
                fmt_shape(logits.shape())
            ),
        });
    }
    if !(0.0..1.0).contains(&label_smoothing) {
        return Err(Error::invalid(CE, format!("Label smoothing must be in [0, 1), got {label_smoothing:?}.")));
    }
    if logits.shape()[logits.ndim() - 1] == 0 && rows.iter().product::<usize>() > 0 {
        return Err(Error::invalid(CE, "Logits must have at least one class."));
    }
    let specs = CrossEntropy::specs(rows, logits.dtype());
    let inputs = vec![logits.clone(), targets.astype(Dtype::I32)?];
    Ok(Array::siblings_from_primitive(specs, CrossEntropy { smoothing: label_smoothing }, inputs)?.swap_remove(0))
}

// ---------------------------------------------------------------------------
// Reference graphs (MLX's fallbacks), over the fused primitives' inputs.

fn c(v: f64, like: &Array) -> Array {
    Array::scalar_of(Scalar::Float(v), like.dtype())
}

/// [`rms_norm`] from ops, given the primitive's inputs `[x, w]`.
pub(crate) fn rms_norm_reference(eps: f32, inputs: &[Array]) -> Result<Vec<Array>> {
    let (x, w) = (&inputs[0], &inputs[1]);
    let xf = x.astype(compute_dtype(x.dtype()))?;
    let ms = ops::mean(&ops::square(&xf)?, Some(&[-1]), true)?;
    let y = ops::multiply(&xf, &ops::rsqrt(&ops::add(&ms, &c(eps as f64, &ms))?)?)?;
    Ok(vec![ops::multiply(&y.astype(x.dtype())?, w)?])
}

/// [`layer_norm`] from ops, given the primitive's inputs `[x, w, b]`.
pub(crate) fn layer_norm_reference(eps: f32, inputs: &[Array]) -> Result<Vec<Array>> {
    let (x, w, b) = (&inputs[0], &inputs[1], &inputs[2]);
    let xf = x.astype(compute_dtype(x.dtype()))?;
    let mean = ops::mean(&xf, Some(&[-1]), true)?;
    let xc = ops::subtract(&xf, &mean)?;
    let var = ops::mean(&ops::square(&xc)?, Some(&[-1]), true)?;
    let y = ops::multiply(&xc, &ops::rsqrt(&ops::add(&var, &c(eps as f64, &var))?)?)?;
    Ok(vec![ops::add(&ops::multiply(&y.astype(x.dtype())?, w)?, b)?])
}

/// [`rope`] from ops, given the primitive's inputs `[x, offset, freqs?]`.
pub(crate) fn rope_reference(p: &RopeParams, inputs: &[Array]) -> Result<Vec<Array>> {
    let x = &inputs[0];
    let shape = x.shape().to_vec();
    let nd = shape.len();
    // (B, N, T, D): the axes between the first and the last two fold into N.
    let lead: isize = shape[1..nd - 2].iter().product::<usize>() as isize;
    let x4 = x.reshape(&[shape[0] as isize, lead, shape[nd - 2] as isize, shape[nd - 1] as isize])?;
    let t = shape[nd - 2];
    let half = p.dims / 2;
    let compute = compute_dtype(x.dtype());
    let mut offset = inputs[1].astype(compute)?;
    if offset.size() > 1 {
        offset = offset.reshape(&[-1, 1, 1])?;
    } else {
        offset = offset.reshape(&[])?;
    }
    let positions = ops::multiply(
        &ops::add(&ops::arange(0.0, t as f64, 1.0, compute)?, &offset)?,
        &f32_scalar(p.scale).astype(compute)?,
    )?;
    let inv_freq = if p.freqs {
        ops::reciprocal(&inputs[2].astype(compute)?)?
    } else {
        let step = p.base.ln() / half as f32;
        ops::exp(&ops::multiply(&ops::arange(0.0, -(half as f64), -1.0, Dtype::F32)?, &f32_scalar(step))?)?
            .astype(compute)?
    };
    let theta = ops::multiply(&positions.expand_dims(&[-1])?, &inv_freq)?;
    let (cos, sin) = (ops::cos(&theta)?.astype(x.dtype())?, ops::sin(&theta)?.astype(x.dtype())?);
    let (x1, x2) = if p.traditional {
        (slice_axis(&x4, 3, 0, half, 2)?, slice_axis(&x4, 3, 1, half, 2)?)
    } else {
        (slice_axis(&x4, 3, 0, half, 1)?, slice_axis(&x4, 3, half, half, 1)?)
    };
    let (y1, y2) = if p.forward {
        (
            ops::subtract(&ops::multiply(&x1, &cos)?, &ops::multiply(&x2, &sin)?)?,
            ops::add(&ops::multiply(&x1, &sin)?, &ops::multiply(&x2, &cos)?)?,
        )
    } else {
        (
            ops::add(&ops::multiply(&x2, &sin)?, &ops::multiply(&x1, &cos)?)?,
            ops::subtract(&ops::multiply(&x2, &cos)?, &ops::multiply(&x1, &sin)?)?,
        )
    };
    let rotated = if p.traditional {
        let pairs = ops::stack(&[y1, y2], -1)?;
        let mut s: Vec<isize> = pairs.shape()[..3].iter().map(|&d| d as isize).collect();
        s.push(p.dims as isize);
        pairs.reshape(&s)?
    } else {
        ops::concatenate(&[y1, y2], -1)?
    };
    let last = shape[nd - 1];
    let out = if p.dims < last {
        ops::concatenate(&[rotated, slice_axis(&x4, 3, p.dims, last - p.dims, 1)?], -1)?
    } else {
        rotated
    };
    let shape: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
    Ok(vec![out.reshape(&shape)?])
}

/// [`cross_entropy`] from ops, given the primitive's inputs `[x, targets]`:
/// the loss per row and the row statistics `(max, log(sum(exp(x - max))))`
/// in the compute type (see [`crate::backend::FastOp::CrossEntropy`]).
pub(crate) fn cross_entropy_reference(smoothing: f64, inputs: &[Array]) -> Result<Vec<Array>> {
    let x = &inputs[0];
    let xf = x.astype(compute_dtype(x.dtype()))?;
    let peak = ops::stop_gradient(&ops::max(&xf, Some(&[-1]), true)?)?;
    let log_sum = ops::log(&ops::sum(&ops::exp(&ops::subtract(&xf, &peak)?)?, Some(&[-1]), true)?)?;
    let classes = x.shape()[x.ndim() - 1] as isize;
    // Negative targets count from the end.
    let t = inputs[1].expand_dims(&[-1])?;
    let t = ops::where_(&ops::less(&t, &Array::scalar(0i32))?, &ops::add(&t, &Array::scalar(classes as i32))?, &t)?;
    let picked = ops::take_along_axis(&xf, &t, Some(-1))?;
    let lse = ops::add(&peak, &log_sum)?;
    let mut loss = ops::subtract(&lse, &ops::multiply(&picked, &c(1.0 - smoothing, &xf))?)?;
    if smoothing > 0.0 {
        let mean = ops::mean(&xf, Some(&[-1]), true)?;
        loss = ops::subtract(&loss, &ops::multiply(&mean, &c(smoothing, &xf))?)?;
    }
    let loss = ops::squeeze(&loss, Some(&[-1]))?.astype(x.dtype())?;
    Ok(vec![loss, ops::concatenate(&[peak, log_sum], -1)?])
}

/// [`scaled_dot_product_attention`] from ops, given the primitive's inputs
/// `[q, k, v, mask?, sinks?]`: its outputs, o and each score row's
/// statistics `(B, Hq, Lq, 2)` in the compute type (see
/// [`crate::backend::FastOp::Attention`]).
pub(crate) fn attention_reference(p: &AttentionParams, inputs: &[Array]) -> Result<Vec<Array>> {
    let (q, k, v) = (&inputs[0], &inputs[1], &inputs[2]);
    let (hq, hk) = (q.shape()[1], k.shape()[1]);
    let (lq, lk) = (q.shape()[2], k.shape()[2]);
    let group = (hq / hk) as isize;
    let dtype = q.dtype();
    let stat = compute_dtype(dtype);
    // Repeat the key-value heads for their query heads.
    let expand = |x: &Array| -> Result<Array> {
        if group == 1 {
            return Ok(x.clone());
        }
        let s = x.shape();
        let e = x.expand_dims(&[2])?.broadcast_to(&[s[0], s[1], group as usize, s[2], s[3]])?;
        e.reshape(&[s[0] as isize, hq as isize, s[2] as isize, s[3] as isize])
    };
    let (k, v) = (expand(k)?, expand(v)?);
    let qf = q.astype(stat)?;
    let mut scores =
        ops::multiply(&ops::matmul(&qf, &ops::swapaxes(&k.astype(stat)?, -1, -2)?)?, &c(p.scale as f64, &qf))?;
    let lowest = Array::scalar_of(Scalar::Float(dtype.finfo().expect("a float dtype").min), stat);
    match p.mask {
        AttentionMask::None => {}
        AttentionMask::Causal => {
            let qi = ops::arange((lk as f64) - (lq as f64), lk as f64, 1.0, Dtype::I32)?.expand_dims(&[1])?;
            let kj = ops::arange(0.0, lk as f64, 1.0, Dtype::I32)?.expand_dims(&[0])?;
            scores = ops::where_(&ops::greater_equal(&qi, &kj)?, &scores, &lowest)?;
        }
        AttentionMask::Bool => scores = ops::where_(&inputs[3], &scores, &lowest)?,
        AttentionMask::Additive => scores = ops::add(&scores, &inputs[3].astype(stat)?)?,
    }
    if p.sinks {
        let s = inputs[inputs.len() - 1].astype(stat)?.reshape(&[1, hq as isize, 1, 1])?;
        let sh = scores.shape();
        scores = ops::concatenate(&[s.broadcast_to(&[sh[0], sh[1], sh[2], 1])?, scores], -1)?;
    }
    // The row's max and the log of its sum of exponentials past the max,
    // kept apart: their sum loses the second term where every score is the
    // mask's fill (about -3.4e38), whose softmax is uniform.
    let peak = ops::stop_gradient(&ops::max(&scores, Some(&[-1]), true)?)?;
    let peak = ops::where_(&ops::isinf(&peak)?, &ops::zeros_like(&peak)?, &peak)?;
    let shifted = ops::subtract(&scores, &peak)?;
    let log_sum = ops::log(&ops::sum(&ops::exp(&shifted)?, Some(&[-1]), true)?)?;
    let mut probs = ops::exp(&ops::subtract(&shifted, &log_sum)?)?;
    if p.sinks {
        probs = slice_axis(&probs, 3, 1, lk, 1)?;
    }
    let out = ops::matmul(&probs, &v.astype(stat)?)?.astype(dtype)?;
    Ok(vec![out, ops::concatenate(&[peak, log_sum], -1)?])
}
