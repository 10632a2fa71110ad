//! Fused scaled dot-product attention, forward and backward (the twin of
//! `kernels/attention.cu`). Both passes keep one row of scores at a time,
//! never the whole score matrix; the backward pass recomputes each row's
//! probabilities. Computes in float32 (float64 for float64). The loops
//! read row-contiguous operands and write row-contiguous results:
//! [`with_dense_rows`] copies strided head rows in and lays the results out
//! as [`FastOp::output_layouts`] asks (a copy of O(L * D) beside the
//! O(L^2 * D) work).

use super::elementwise::copy_buffer;
use super::fast::{typed_slice, Input};
use super::storage::{output_vec, zeroed_vec, CpuElement};
use super::widen::Widen;
use super::CpuBuffer;
use crate::backend::{AttentionMask, AttentionParams, FastOp};
use crate::error::{Error, Result};
use crate::shape::Layout;
use num_traits::{Float, NumCast, Zero};
use rayon::prelude::*;

/// Query rows per parallel task.
const ROWS_PER_TASK: usize = 16;

/// The problem's extents.
#[derive(Clone, Copy)]
struct Dims {
    batch: usize,
    q_heads: usize,
    kv_heads: usize,
    queries: usize,
    keys: usize,
    head_dim: usize,
    value_dim: usize,
}

impl Dims {
    fn of(q: Input, k: Input, v: Input) -> Dims {
        let (qs, ks, vs) = (&q.1.shape, &k.1.shape, &v.1.shape);
        Dims {
            batch: qs[0],
            q_heads: qs[1],
            kv_heads: ks[1],
            queries: qs[2],
            keys: ks[2],
            head_dim: qs[3],
            value_dim: vs[3],
        }
    }

    /// Query heads per key-value head.
    fn group(&self) -> usize {
        self.q_heads / self.kv_heads.max(1)
    }
}

/// How one score is masked: read from the mask array by its strides.
struct Masking<'a, C> {
    kind: AttentionMask,
    bits: Option<&'a [bool]>,
    additive: Vec<C>,
    strides: [isize; 4],
    offset: usize,
    /// `keys - queries`: the causal diagonal's shift.
    shift: isize,
    /// The value hidden scores take (MLX's `finfo(dtype).min`).
    lowest: C,
}

impl<C: Float> Masking<'_, C> {
    fn index(&self, b: usize, h: usize, i: usize, j: usize) -> usize {
        let s = &self.strides;
        (self.offset as isize + b as isize * s[0] + h as isize * s[1] + i as isize * s[2] + j as isize * s[3]) as usize
    }

    /// The masked score and whether it is hidden (a hidden score passes no gradient).
    fn apply(&self, score: C, b: usize, h: usize, i: usize, j: usize) -> (C, bool) {
        match self.kind {
            AttentionMask::None => (score, false),
            AttentionMask::Causal if j as isize > i as isize + self.shift => (self.lowest, true),
            AttentionMask::Causal => (score, false),
            AttentionMask::Bool => {
                let keep = self.bits.expect("a boolean mask")[self.index(b, h, i, j)];
                if keep {
                    (score, false)
                } else {
                    (self.lowest, true)
                }
            }
            AttentionMask::Additive => (score + self.additive[self.index(b, h, i, j)], false),
        }
    }
}

/// The mask input's view (its whole buffer is read through its strides).
fn masking<'a, T: Widen>(p: &AttentionParams, mask: Option<Input<'a>>, d: &Dims) -> Result<Masking<'a, T::C>> {
    let mut m = Masking {
        kind: p.mask,
        bits: None,
        additive: Vec::new(),
        strides: [0; 4],
        offset: 0,
        shift: d.keys as isize - d.queries as isize,
        lowest: T::mask_fill(),
    };
    if let Some((buffer, layout)) = mask {
        m.strides.copy_from_slice(&layout.strides);
        m.offset = layout.offset;
        match p.mask {
            AttentionMask::Bool => m.bits = Some(bool::slice_of(buffer).ok_or_else(internal)?),
            _ => m.additive = T::slice_of(buffer).ok_or_else(internal)?.iter().map(|v| v.widen()).collect(),
        }
    }
    Ok(m)
}

fn internal() -> Error {
    Error::invalid("scaled_dot_product_attention", "internal error: inputs the kernel does not take")
}

/// `sum a[i] * b[i]` with eight independent sums (so that it vectorizes).
fn dot<C: Float>(a: &[C], b: &[C]) -> C {
    let mut acc = [C::zero(); 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] = acc[l] + x[l] * y[l];
        }
    }
    let mut sum = acc.iter().fold(C::zero(), |s, &v| s + v);
    for (&x, &y) in ra.iter().zip(rb) {
        sum = sum + x * y;
    }
    sum
}

/// `acc += w * x`.
fn axpy<C: Float>(acc: &mut [C], w: C, x: &[C]) {
    for (a, &v) in acc.iter_mut().zip(x) {
        *a = *a + w * v;
    }
}

fn widen_all<T: Widen>(x: &[T]) -> Vec<T::C> {
    x.iter().map(|v| v.widen()).collect()
}

fn cast<C: NumCast>(v: f32) -> C {
    C::from(v).expect("a float32 fits")
}

/// Runs `kernel` on `inputs` with every operand but the mask row-contiguous,
/// then lays out each of its row-contiguous results of `shapes` as
/// [`FastOp::output_layouts`] says `op`'s outputs are.
fn with_dense_rows(
    op: FastOp,
    inputs: &[Input],
    shapes: &[Vec<usize>],
    kernel: impl Fn(&[Input]) -> Result<Vec<CpuBuffer>>,
) -> Result<Vec<CpuBuffer>> {
    let mask = match op {
        FastOp::Attention(p) | FastOp::AttentionVjp(p) if p.mask_input() => Some(3),
        _ => None,
    };
    let copies = inputs
        .iter()
        .enumerate()
        .map(|(i, &(buffer, layout))| {
            if Some(i) == mask || layout.is_row_contiguous() {
                Ok(None)
            } else {
                Ok(Some((copy_buffer(buffer, layout)?, Layout::contiguous(&layout.shape))))
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let dense: Vec<Input> = inputs.iter().zip(&copies).map(|(x, c)| c.as_ref().map_or(*x, |(b, l)| (b, l))).collect();
    let results = kernel(&dense)?;
    // The layouts as received, not as copied: they decide the outputs'.
    let in_layouts: Vec<&Layout> = inputs.iter().map(|x| x.1).collect();
    results
        .into_iter()
        .zip(op.output_layouts(&in_layouts, shapes))
        .map(|(result, layout)| {
            if layout.is_row_contiguous() {
                return Ok(result);
            }
            // The physical order: axes by decreasing stride.
            let mut order: Vec<usize> = (0..layout.ndim()).collect();
            order.sort_by_key(|&a| std::cmp::Reverse(layout.strides[a]));
            copy_buffer(&result, &Layout::contiguous(&layout.shape).permute(&order))
        })
        .collect()
}

/// The forward pass: `[o, stats]` (each score row's max and log of its sum
/// of exponentials past the max, in the compute type).
pub(crate) fn attention(p: &AttentionParams, inputs: &[Input]) -> Result<Vec<CpuBuffer>> {
    let (q, v) = (&inputs[0].1.shape, &inputs[2].1.shape);
    let shapes = [vec![q[0], q[1], q[2], v[3]], vec![q[0], q[1], q[2], 2]];
    with_dense_rows(
        FastOp::Attention(*p),
        inputs,
        &shapes,
        |inputs| crate::with_real_float_buffer!(inputs[0].0, v => forward::<_>(p, inputs, v.as_slice()), _ => Err(internal())),
    )
}

/// The optional inputs after q, k, v: the mask and the sinks.
fn extras<'a>(p: &AttentionParams, inputs: &[Input<'a>]) -> (Option<Input<'a>>, Option<Input<'a>>) {
    let mask = p.mask_input().then(|| inputs[3]);
    let sinks = p.sinks.then(|| inputs[3 + p.mask_input() as usize]);
    (mask, sinks)
}

fn forward<T: Widen>(p: &AttentionParams, inputs: &[Input], _: &[T]) -> Result<Vec<CpuBuffer>> {
    let d = Dims::of(inputs[0], inputs[1], inputs[2]);
    let (mask, sinks) = extras(p, inputs);
    let m = masking::<T>(p, mask, &d)?;
    let q = typed_slice::<T>(inputs[0], inputs[0].1.size())?;
    let k = typed_slice::<T>(inputs[1], inputs[1].1.size())?;
    let v = typed_slice::<T>(inputs[2], inputs[2].1.size())?;
    let sinks: Option<Vec<T::C>> = sinks.map(|s| typed_slice::<T>(s, d.q_heads).map(widen_all)).transpose()?;
    let rows = d.batch * d.q_heads * d.queries;
    // Rows of o `width` apart (a scratch element each when dv is 0, so the
    // rows still pair with their log-sum-exps).
    let width = d.value_dim.max(1);
    let mut o = output_vec::<T>(rows * width)?;
    let mut stats = vec![T::C::zero(); rows * 2];
    let scale: T::C = cast(p.scale);
    let (kn, vn) = (d.keys * d.head_dim, d.keys * d.value_dim);
    if rows > 0 {
        let heads = o.par_chunks_mut(d.queries * width).zip(stats.par_chunks_mut(d.queries * 2));
        heads.enumerate().for_each(|(bh, (o_bh, stats_bh))| {
            let (b, h) = (bh / d.q_heads, bh % d.q_heads);
            let kv = b * d.kv_heads + h / d.group();
            let ks = widen_all(&k[kv * kn..(kv + 1) * kn]);
            let vs = widen_all(&v[kv * vn..(kv + 1) * vn]);
            let sink = sinks.as_ref().map(|s| s[h]);
            let tasks = o_bh.par_chunks_mut(ROWS_PER_TASK * width).zip(stats_bh.par_chunks_mut(ROWS_PER_TASK * 2));
            tasks.enumerate().for_each(|(task, (o_rows, stats_rows))| {
                let mut scores = vec![T::C::zero(); d.keys];
                let mut acc = vec![T::C::zero(); d.value_dim];
                for (r, row_stats) in stats_rows.chunks_mut(2).enumerate() {
                    let i = task * ROWS_PER_TASK + r;
                    let q_at = (bh * d.queries + i) * d.head_dim;
                    let qi = widen_all(&q[q_at..q_at + d.head_dim]);
                    let mut max = sink.unwrap_or(T::C::neg_infinity());
                    for (j, s) in scores.iter_mut().enumerate() {
                        let raw = scale * dot(&qi, &ks[j * d.head_dim..(j + 1) * d.head_dim]);
                        *s = m.apply(raw, b, h, i, j).0;
                        max = max.max(*s);
                    }
                    acc.iter_mut().for_each(|a| *a = T::C::zero());
                    let mut sum = sink.map_or(T::C::zero(), |s| (s - max).exp());
                    for (j, &s) in scores.iter().enumerate() {
                        let w = (s - max).exp();
                        sum = sum + w;
                        axpy(&mut acc, w, &vs[j * d.value_dim..(j + 1) * d.value_dim]);
                    }
                    let o_row = &mut o_rows[r * width..r * width + d.value_dim];
                    for (out, &a) in o_row.iter_mut().zip(&acc) {
                        *out = T::narrow(a / sum);
                    }
                    row_stats[0] = max;
                    row_stats[1] = sum.ln();
                }
            });
        });
    }
    o.truncate(rows * d.value_dim);
    Ok(vec![T::into_buffer(o), <T::C as CpuElement>::into_buffer(stats)])
}

/// The backward pass: `[dq, dk, dv]` and the sinks' cotangent when present.
pub(crate) fn attention_vjp(p: &AttentionParams, inputs: &[Input]) -> Result<Vec<CpuBuffer>> {
    let sinks = p.sinks.then(|| p.forward_inputs() - 1);
    let shapes: Vec<Vec<usize>> = [0, 1, 2].into_iter().chain(sinks).map(|i| inputs[i].1.shape.clone()).collect();
    with_dense_rows(
        FastOp::AttentionVjp(*p),
        inputs,
        &shapes,
        |inputs| crate::with_real_float_buffer!(inputs[0].0, v => backward::<_>(p, inputs, v.as_slice()), _ => Err(internal())),
    )
}

fn backward<T: Widen>(p: &AttentionParams, inputs: &[Input], _: &[T]) -> Result<Vec<CpuBuffer>> {
    let d = Dims::of(inputs[0], inputs[1], inputs[2]);
    let (mask, sinks) = extras(p, inputs);
    let m = masking::<T>(p, mask, &d)?;
    let base = p.forward_inputs();
    let slice = |i: usize| typed_slice::<T>(inputs[i], inputs[i].1.size());
    let (q, k, v, o, g) = (slice(0)?, slice(1)?, slice(2)?, slice(base)?, slice(base + 2)?);
    let stats = typed_slice::<T::C>(inputs[base + 1], inputs[base + 1].1.size())?;
    let sinks: Option<Vec<T::C>> = sinks.map(|s| typed_slice::<T>(s, d.q_heads).map(widen_all)).transpose()?;
    let group = d.group();
    let (dh, dv_len) = (d.head_dim, d.value_dim);
    // Zeroed: with no queries, no task writes dk and dv.
    let mut dq = zeroed_vec::<T>(q.len())?;
    let mut dk = zeroed_vec::<T>(k.len())?;
    let mut dv = zeroed_vec::<T>(v.len())?;
    let scale: T::C = cast(p.scale);
    let (kn, vn) = (d.keys * dh, d.keys * dv_len);
    let qn = group * d.queries * dh;
    let tasks = d.batch * d.kv_heads;
    // Each task: one (batch, kv head), its group of query heads' dq rows.
    let sink_grads: Vec<Vec<T::C>> = if tasks == 0 {
        Vec::new()
    } else {
        dq.par_chunks_mut(qn.max(1))
            .zip(dk.par_chunks_mut(kn.max(1)))
            .zip(dv.par_chunks_mut(vn.max(1)))
            .take(tasks)
            .enumerate()
            .map(|(kv, ((dq_t, dk_t), dv_t))| {
                let b = kv / d.kv_heads;
                let ks = widen_all(&k[kv * kn..(kv + 1) * kn]);
                let vs = widen_all(&v[kv * vn..(kv + 1) * vn]);
                let mut dk_acc = vec![T::C::zero(); kn];
                let mut dv_acc = vec![T::C::zero(); vn];
                let mut dq_row = vec![T::C::zero(); dh];
                let mut scores = vec![(T::C::zero(), false); d.keys];
                let mut sink_grad = vec![T::C::zero(); group];
                for hg in 0..group {
                    let h = (kv % d.kv_heads) * group + hg;
                    let bh = b * d.q_heads + h;
                    for i in 0..d.queries {
                        let row = bh * d.queries + i;
                        let qi = widen_all(&q[row * dh..(row + 1) * dh]);
                        let gi = widen_all(&g[row * dv_len..(row + 1) * dv_len]);
                        let oi = widen_all(&o[row * dv_len..(row + 1) * dv_len]);
                        let delta = dot(&gi, &oi);
                        // The row's scores; its max and log-sum past the max
                        // (the sink included) are the forward's.
                        for (j, sj) in scores.iter_mut().enumerate() {
                            *sj = m.apply(scale * dot(&qi, &ks[j * dh..(j + 1) * dh]), b, h, i, j);
                        }
                        let (max, log_sum) = (stats[2 * row], stats[2 * row + 1]);
                        dq_row.iter_mut().for_each(|x| *x = T::C::zero());
                        for (j, &(s, hidden)) in scores.iter().enumerate() {
                            let kj = &ks[j * dh..(j + 1) * dh];
                            let prob = (s - max - log_sum).exp();
                            axpy(&mut dv_acc[j * dv_len..(j + 1) * dv_len], prob, &gi);
                            if hidden {
                                continue;
                            }
                            let ds = prob * (dot(&gi, &vs[j * dv_len..(j + 1) * dv_len]) - delta);
                            axpy(&mut dq_row, ds, kj);
                            axpy(&mut dk_acc[j * dh..(j + 1) * dh], ds, &qi);
                        }
                        let out = &mut dq_t[(hg * d.queries + i) * dh..(hg * d.queries + i + 1) * dh];
                        for (x, &a) in out.iter_mut().zip(&dq_row) {
                            *x = T::narrow(a * scale);
                        }
                        if let Some(s) = &sinks {
                            sink_grad[hg] = sink_grad[hg] - (s[h] - max - log_sum).exp() * delta;
                        }
                    }
                }
                for (x, &a) in dk_t.iter_mut().zip(&dk_acc) {
                    *x = T::narrow(a * scale);
                }
                for (x, &a) in dv_t.iter_mut().zip(&dv_acc) {
                    *x = T::narrow(a);
                }
                sink_grad
            })
            .collect()
    };
    let mut outs = vec![T::into_buffer(dq), T::into_buffer(dk), T::into_buffer(dv)];
    if p.sinks {
        let mut total = vec![T::C::zero(); d.q_heads];
        for (kv, grads) in sink_grads.iter().enumerate() {
            for (hg, &gr) in grads.iter().enumerate() {
                let h = (kv % d.kv_heads) * group + hg;
                total[h] = total[h] + gr;
            }
        }
        outs.push(T::into_buffer(total.into_iter().map(T::narrow).collect()));
    }
    Ok(outs)
}
