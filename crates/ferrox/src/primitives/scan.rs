//! Scans along one axis (cumsum, cumprod, cummax, cummin, logcumsumexp),
//! with their derivatives and batching rule.
//!
//! Derivatives follow MLX's (`Scan::vjp` in `primitives.cpp`): the
//! transpose of a scan is the scan in the other direction with the same
//! inclusiveness; a product's derivative treats the first zero of each line
//! apart (without dividing by it); a running maximum or minimum passes each
//! output's cotangent to the element that holds the extreme there (the
//! latest one on ties); logcumsumexp splits the cotangent by sign to stay in
//! log space. Unlike MLX, every op also has a forward-mode rule.

use super::{constant, fresh, OutputSpec, Primitive, Slice};
use crate::array::{Array, ArrayData};
use crate::backend::{Backend, ScanOp};
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::Result;
use crate::ops;

/// Scans `op` along `axis`; the output has the input's shape and dtype.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Scan {
    /// Which scan.
    pub op: ScanOp,
    /// The scanned axis.
    pub axis: usize,
    /// Whether the scan runs from the end of the axis.
    pub reverse: bool,
    /// Whether element i includes itself (otherwise the first is the identity).
    pub inclusive: bool,
}

impl Primitive for Scan {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
        super::arity(self.name(), inputs, 1)?;
        let x = &inputs[0];
        if self.axis >= x.ndim() || ops::scan_dtype(self.op, x.dtype()) != x.dtype() {
            return Err(super::mismatch(self.name(), format!("axis {} of {:?} {}.", self.axis, x.shape(), x.dtype())));
        }
        super::one_output(x.shape().to_vec(), x.dtype())
    }
    fn eval(&self, backend: &dyn Backend, inputs: &[ArrayData], outputs: &[OutputSpec]) -> Result<Vec<ArrayData>> {
        let x = &inputs[0];
        let out = backend.scan(self.op, &x.storage, &x.layout, self.axis, self.reverse, self.inclusive)?;
        Ok(fresh(out, &outputs[0].shape))
    }
    fn vjp(&self, inputs: &[Array], outputs: &[Array], cotangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        let (x, out, c) = (&inputs[0], &outputs[0], &cotangents[0]);
        let dx = match self.op {
            ScanOp::Sum => self.transposed(c)?,
            ScanOp::Prod => {
                let p = self.prod_parts(x)?;
                let zero = constant(0.0, c);
                let spread = ops::where_(&p.clean, &ops::multiply(out, c)?, &zero)?;
                let regular = ops::where_(&p.is_zero, &zero, &ops::divide(&self.transposed(&spread)?, &p.safe)?)?;
                let at_zero = ops::where_(&p.first_zero, &self.transposed(&ops::multiply(&p.with_one, c)?)?, &zero)?;
                ops::add(&regular, &at_zero)?
            }
            ScanOp::Max | ScanOp::Min => self.extreme_vjp(x, out, c)?,
            ScanOp::LogAddExp => self.logaddexp_vjp(x, out, c)?,
        };
        Ok(vec![dx])
    }
    fn jvp(&self, inputs: &[Array], outputs: &[Array], tangents: &[Array]) -> Result<Vec<Array>> {
        let (x, out, t) = (&inputs[0], &outputs[0], &tangents[0]);
        let dout = match self.op {
            ScanOp::Sum => self.again(ScanOp::Sum, t, self.reverse)?,
            ScanOp::Prod => {
                let p = self.prod_parts(x)?;
                let zero = constant(0.0, t);
                let ratio = ops::where_(&p.is_zero, &zero, &ops::divide(t, &p.safe)?)?;
                let regular = ops::where_(
                    &p.clean,
                    &ops::multiply(out, &self.again(ScanOp::Sum, &ratio, self.reverse)?)?,
                    &zero,
                )?;
                let at_zero = self.again(ScanOp::Sum, &ops::where_(&p.first_zero, t, &zero)?, self.reverse)?;
                ops::add(&regular, &ops::multiply(&p.with_one, &at_zero)?)?
            }
            ScanOp::Max | ScanOp::Min => self.extreme_jvp(x, out, t)?,
            ScanOp::LogAddExp => self.logaddexp_jvp(x, out, t)?,
        };
        Ok(vec![dout])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<super::Batched> {
        let x = super::front(inputs, axes)?;
        let p = Scan { axis: self.axis + 1, ..self.clone() };
        super::batched(Array::from_primitive(x.shape().to_vec(), x.dtype(), p, vec![x])?)
    }
}

/// What the derivatives of a cumulative product need.
struct ProdParts {
    /// Where x is zero.
    is_zero: Array,
    /// The first zero of each line, in scan order.
    first_zero: Array,
    /// Where no zero enters the output (none in element i's window).
    clean: Array,
    /// x with its zeros replaced by ones (a safe divisor).
    safe: Array,
    /// The same cumulative product with each line's first zero replaced by one.
    with_one: Array,
}

impl Scan {
    /// `op` scanned over `a` along this axis, in direction `reverse`, with
    /// this scan's inclusiveness.
    fn again(&self, op: ScanOp, a: &Array, reverse: bool) -> Result<Array> {
        self.scan_of(op, a, reverse, self.inclusive)
    }

    fn scan_of(&self, op: ScanOp, a: &Array, reverse: bool, inclusive: bool) -> Result<Array> {
        let axis = Some(self.axis as isize);
        match op {
            ScanOp::Sum => ops::cumsum(a, axis, reverse, inclusive),
            ScanOp::Prod => ops::cumprod(a, axis, reverse, inclusive),
            ScanOp::Max => ops::cummax(a, axis, reverse, inclusive),
            ScanOp::Min => ops::cummin(a, axis, reverse, inclusive),
            ScanOp::LogAddExp => ops::logcumsumexp(a, axis, reverse, inclusive),
        }
    }

    /// The transpose of a cumulative sum with this scan's parameters: the
    /// cumulative sum in the other direction.
    fn transposed(&self, c: &Array) -> Result<Array> {
        self.again(ScanOp::Sum, c, !self.reverse)
    }

    fn prod_parts(&self, x: &Array) -> Result<ProdParts> {
        let (zero, one) = (constant(0.0, x), constant(1.0, x));
        let is_zero = ops::equal(x, &zero)?;
        let zeros = ops::astype(&is_zero, Dtype::I32)?;
        let count = |inclusive| self.scan_of(ScanOp::Sum, &zeros, self.reverse, inclusive);
        let first_zero = ops::logical_and(&is_zero, &ops::equal(&count(true)?, &Array::scalar(1i32))?)?;
        let clean = ops::equal(&count(self.inclusive)?, &Array::scalar(0i32))?;
        let safe = ops::where_(&is_zero, &one, x)?;
        let with_one = self.again(ScanOp::Prod, &ops::where_(&first_zero, &one, x)?, self.reverse)?;
        Ok(ProdParts { is_zero, first_zero, clean, safe, with_one })
    }

    /// `a` in scan order (reversed along the axis for a reverse scan); its
    /// own inverse.
    fn in_scan_order(&self, a: &Array) -> Result<Array> {
        let n = a.shape()[self.axis];
        if !self.reverse || n <= 1 {
            return Ok(a.clone());
        }
        let nd = a.ndim();
        let mut start = vec![0; nd];
        let mut step = vec![1; nd];
        start[self.axis] = n - 1;
        step[self.axis] = -1;
        let p = Slice { start, len: a.shape().to_vec(), step };
        Array::from_primitive(a.shape().to_vec(), a.dtype(), p, vec![a.clone()])
    }

    /// vjp of a running max/min: each output's cotangent goes to the input
    /// element that holds the extreme there.
    fn extreme_vjp(&self, x: &Array, out: &Array, c: &Array) -> Result<Array> {
        let ax = self.axis;
        let n = x.shape()[ax];
        if n == 0 || (!self.inclusive && n == 1) {
            return ops::zeros_like(c);
        }
        let (xs, os, cs) = (self.in_scan_order(x)?, self.in_scan_order(out)?, self.in_scan_order(c)?);
        let d = if self.inclusive {
            owners_sum(&xs, &os, &cs, ax)?
        } else {
            // Output i + 1 is the inclusive extreme of inputs 0..=i; the
            // last input reaches no output.
            let m = n - 1;
            let d = owners_sum(&window(&xs, ax, 0, m)?, &window(&os, ax, 1, m)?, &window(&cs, ax, 1, m)?, ax)?;
            ops::concatenate(&[d.clone(), filled(&d, ax, 1, &constant(0.0, &d))?], ax as isize)?
        };
        self.in_scan_order(&d)
    }

    /// jvp of a running max/min: each output takes the tangent of the input
    /// element that holds the extreme there.
    fn extreme_jvp(&self, x: &Array, out: &Array, t: &Array) -> Result<Array> {
        let ax = self.axis;
        let n = x.shape()[ax];
        if n == 0 || (!self.inclusive && n == 1) {
            return ops::zeros_like(t);
        }
        let (xs, os, ts) = (self.in_scan_order(x)?, self.in_scan_order(out)?, self.in_scan_order(t)?);
        let d = if self.inclusive {
            owners_value(&xs, &os, &ts, ax)?
        } else {
            let m = n - 1;
            let d = owners_value(&window(&xs, ax, 0, m)?, &window(&os, ax, 1, m)?, &window(&ts, ax, 0, m)?, ax)?;
            ops::concatenate(&[filled(&d, ax, 1, &constant(0.0, &d))?, d], ax as isize)?
        };
        self.in_scan_order(&d)
    }

    /// vjp of logcumsumexp: d out_i / d x_k = exp(x_k - out_i), summed with
    /// the cotangent split by sign so that every sum is a logcumsumexp.
    fn logaddexp_vjp(&self, x: &Array, out: &Array, c: &Array) -> Result<Array> {
        if c.dtype().is_complex() {
            let weighted = ops::multiply(c, &ops::exp(&ops::negative(out)?)?)?;
            return ops::multiply(&ops::exp(x)?, &self.transposed(&weighted)?);
        }
        let part = |log_c: &Array| -> Result<Array> {
            let summed = self.again(ScanOp::LogAddExp, &ops::subtract(log_c, out)?, !self.reverse)?;
            ops::exp(&ops::add(&summed, x)?)
        };
        let (pos, neg) = log_parts(c)?;
        ops::subtract(&part(&pos)?, &part(&neg)?)
    }

    /// jvp of logcumsumexp: sum over the window of t_k exp(x_k - out_i).
    fn logaddexp_jvp(&self, x: &Array, out: &Array, t: &Array) -> Result<Array> {
        if t.dtype().is_complex() {
            let summed = self.again(ScanOp::Sum, &ops::multiply(t, &ops::exp(x)?)?, self.reverse)?;
            return ops::multiply(&summed, &ops::exp(&ops::negative(out)?)?);
        }
        let part = |log_t: &Array| -> Result<Array> {
            let summed = self.again(ScanOp::LogAddExp, &ops::add(log_t, x)?, self.reverse)?;
            ops::exp(&ops::subtract(&summed, out)?)
        };
        let (pos, neg) = log_parts(t)?;
        let d = ops::subtract(&part(&pos)?, &part(&neg)?)?;
        // An output of -inf (an empty window, or only -inf inputs) is constant.
        ops::where_(&ops::isneginf(out)?, &constant(0.0, &d), &d)
    }
}

/// log|v| where v > 0 and where v < 0, the dtype's lowest finite value
/// elsewhere (MLX's split of a cotangent for logcumsumexp).
fn log_parts(v: &Array) -> Result<(Array, Array)> {
    let dt = v.dtype();
    let lowest = Array::scalar_of(Scalar::Float(dt.finfo().map_or(f64::MIN, |f| f.min)), dt);
    let zero = constant(0.0, v);
    let log_abs = ops::log(&ops::abs(v)?)?;
    let pos = ops::where_(&ops::greater(v, &zero)?, &log_abs, &lowest)?;
    let neg = ops::where_(&ops::less(v, &zero)?, &log_abs, &lowest)?;
    Ok((pos, neg))
}

/// `a[start..start + len]` along `ax` (a view).
fn window(a: &Array, ax: usize, start: usize, len: usize) -> Result<Array> {
    let nd = a.ndim();
    let mut starts = vec![0; nd];
    let mut lens = a.shape().to_vec();
    starts[ax] = start;
    lens[ax] = len;
    let p = Slice { start: starts, len: lens.clone(), step: vec![1; nd] };
    Array::from_primitive(lens, a.dtype(), p, vec![a.clone()])
}

/// `value` (0-d) broadcast to `like`'s shape with extent `len` along `ax`,
/// in `like`'s dtype.
fn filled(like: &Array, ax: usize, len: usize, value: &Array) -> Result<Array> {
    let mut shape = like.shape().to_vec();
    shape[ax] = len;
    ops::broadcast_to(&ops::astype(value, like.dtype())?, &shape)
}

/// `b[i] = a[i + s]`, and `fill` where `i + s` is past the end.
fn ahead(a: &Array, ax: usize, s: usize, fill: &Array) -> Result<Array> {
    let n = a.shape()[ax];
    if s >= n {
        return filled(a, ax, n, fill);
    }
    ops::concatenate(&[window(a, ax, s, n - s)?, filled(a, ax, s, fill)?], ax as isize)
}

/// `b[i] = a[i - s]`, and `fill` where `i < s`.
fn behind(a: &Array, ax: usize, s: usize, fill: &Array) -> Result<Array> {
    let n = a.shape()[ax];
    if s >= n {
        return filled(a, ax, n, fill);
    }
    ops::concatenate(&[filled(a, ax, s, fill)?, window(a, ax, 0, n - s)?], ax as isize)
}

/// For a forward inclusive running extreme `out` of `x`, element k that
/// holds the extreme (`x[k] == out[k]`) owns the outputs from k up to the
/// next such element. Returns, at each owner, the sum of `c` over the
/// outputs it owns (zero elsewhere): a segmented sum computed by doubling,
/// in ceil(log2 n) steps of shifted adds.
fn owners_sum(x: &Array, out: &Array, c: &Array, ax: usize) -> Result<Array> {
    let n = x.shape()[ax];
    let owner = ops::equal(x, out)?;
    let zero = constant(0.0, c);
    let yes = Array::scalar(true);
    // v[i]: c summed over [i, min(i + span, end of i's segment)); ends[i]:
    // whether that end is reached.
    let mut ends = ahead(&owner, ax, 1, &yes)?;
    let mut v = c.clone();
    let mut span = 1;
    while span < n {
        let more = ops::add(&v, &ahead(&v, ax, span, &zero)?)?;
        v = ops::where_(&ends, &v, &more)?;
        ends = ops::logical_or(&ends, &ahead(&ends, ax, span, &yes)?)?;
        span *= 2;
    }
    ops::where_(&owner, &v, &zero)
}

/// For a forward inclusive running extreme `out` of `x`, the value of `t`
/// at the owner of each output (see [`owners_sum`]; zero before the first
/// owner): a forward fill by doubling.
fn owners_value(x: &Array, out: &Array, t: &Array, ax: usize) -> Result<Array> {
    let n = x.shape()[ax];
    let mut seen = ops::equal(x, out)?;
    let zero = constant(0.0, t);
    let no = Array::scalar(false);
    // v[i]: t at the last owner in (i - span, i], if any (`seen`).
    let mut v = ops::where_(&seen, t, &zero)?;
    let mut span = 1;
    while span < n {
        v = ops::where_(&seen, &v, &behind(&v, ax, span, &zero)?)?;
        seen = ops::logical_or(&seen, &behind(&seen, ax, span, &no)?)?;
        span *= 2;
    }
    Ok(v)
}
