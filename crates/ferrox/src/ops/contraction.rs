//! Products built on `matmul` and broadcasting (`tensordot`, `inner`,
//! `outer`, `kron`, `vecdot`, `addmm`) and the diagonal family (`diagonal`,
//! `diag`, `trace`).

use super::elementwise::{add, astype, conj, multiply};
use super::matmul::matmul;
use super::rearrange::slice_axis;
use super::reduction::sum;
use super::shaping::{reshape_to, transpose};
use super::{axis, zeros};
use crate::array::Array;
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};
use crate::primitives::{AddMatmul, SliceUpdate};
use crate::shape::numel;

/// How [`tensordot`] pairs axes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TensordotAxes {
    /// The last `n` axes of `a` with the first `n` of `b`.
    Count(i64),
    /// These axes of `a` with those of `b`.
    Pairs(Vec<isize>, Vec<isize>),
}

/// The sum of products over paired axes of `a` and `b`; the result has
/// `a`'s other axes, then `b`'s.
pub fn tensordot(a: &Array, b: &Array, axes: &TensordotAxes) -> Result<Array> {
    let (xa, xb): (Vec<usize>, Vec<usize>) = match axes {
        TensordotAxes::Count(n) => {
            let n = *n;
            if n < 0 {
                return Err(Error::invalid("tensordot", "axes must be a non-negative integer."));
            }
            let n = n as usize;
            if n > a.ndim() || n > b.ndim() {
                return Err(Error::invalid("tensordot", "axis must be less than the number of dimensions of a and b."));
            }
            ((a.ndim() - n..a.ndim()).collect(), (0..n).collect())
        }
        TensordotAxes::Pairs(pa, pb) => {
            if pa.len() != pb.len() {
                return Err(Error::invalid("tensordot", "Must provide the same number of axes for a and b."));
            }
            let ra = pa.iter().map(|&v| axis("tensordot", v, a.ndim())).collect::<Result<Vec<_>>>()?;
            let rb = pb.iter().map(|&v| axis("tensordot", v, b.ndim())).collect::<Result<Vec<_>>>()?;
            (ra, rb)
        }
    };
    for (&i, &j) in xa.iter().zip(&xb) {
        if a.shape()[i] != b.shape()[j] {
            return Err(Error::invalid("tensordot", "a and b must have the same shape on the contracted axes."));
        }
    }
    let free_a: Vec<usize> = (0..a.ndim()).filter(|i| !xa.contains(i)).collect();
    let free_b: Vec<usize> = (0..b.ndim()).filter(|i| !xb.contains(i)).collect();
    let k = numel(&xa.iter().map(|&i| a.shape()[i]).collect::<Vec<_>>());
    let m = numel(&free_a.iter().map(|&i| a.shape()[i]).collect::<Vec<_>>());
    let n = numel(&free_b.iter().map(|&i| b.shape()[i]).collect::<Vec<_>>());
    let order_a: Vec<isize> = free_a.iter().chain(&xa).map(|&i| i as isize).collect();
    let order_b: Vec<isize> = xb.iter().chain(&free_b).map(|&i| i as isize).collect();
    let am = reshape_to(&transpose(a, Some(&order_a))?, vec![m, k])?;
    let bm = reshape_to(&transpose(b, Some(&order_b))?, vec![k, n])?;
    let mut out: Vec<usize> = free_a.iter().map(|&i| a.shape()[i]).collect();
    out.extend(free_b.iter().map(|&i| b.shape()[i]));
    reshape_to(&matmul(&am, &bm)?, out)
}

/// The sum of products over the last axes of `a` and `b` (a product when
/// either is 0-d).
pub fn inner(a: &Array, b: &Array) -> Result<Array> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return multiply(a, b);
    }
    if a.shape()[a.ndim() - 1] != b.shape()[b.ndim() - 1] {
        return Err(Error::invalid("inner", "a and b must have the same last dimension."));
    }
    tensordot(a, b, &TensordotAxes::Pairs(vec![-1], vec![-1]))
}

/// The outer product of the flattened `a` and `b`.
pub fn outer(a: &Array, b: &Array) -> Result<Array> {
    multiply(&reshape_to(a, vec![a.size(), 1])?, &reshape_to(b, vec![1, b.size()])?)
}

/// The Kronecker product: blocks `a[i] * b`.
pub fn kron(a: &Array, b: &Array) -> Result<Array> {
    if a.size() == 0 || b.size() == 0 {
        return Err(Error::invalid("kron", "Input arrays cannot be empty."));
    }
    if a.ndim() == 0 || b.ndim() == 0 {
        return multiply(a, b);
    }
    let nd = a.ndim().max(b.ndim());
    let pad = |s: &[usize]| [vec![1; nd - s.len()], s.to_vec()].concat();
    let (sa, sb) = (pad(a.shape()), pad(b.shape()));
    let ia: Vec<usize> = sa.iter().flat_map(|&d| [d, 1]).collect();
    let ib: Vec<usize> = sb.iter().flat_map(|&d| [1, d]).collect();
    let out: Vec<usize> = sa.iter().zip(&sb).map(|(&x, &y)| x * y).collect();
    reshape_to(&multiply(&reshape_to(a, ia)?, &reshape_to(b, ib)?)?, out)
}

/// `sum(conj(a) * b)` along `axis` (the array API's `vecdot`).
pub fn vecdot(a: &Array, b: &Array, axis_: isize) -> Result<Array> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return Err(Error::invalid("vecdot", "inputs must be at least 1D."));
    }
    let ax = axis("vecdot", axis_, a.ndim()).map_err(|_| Error::invalid("vecdot", "axis is out of bounds."))?;
    let bx = if axis_ < 0 { axis_ + b.ndim() as isize } else { axis_ };
    if bx != ax as isize || bx >= b.ndim() as isize {
        return Err(Error::invalid("vecdot", "axis is out of bounds."));
    }
    if a.shape()[ax] != b.shape()[ax] {
        return Err(Error::invalid("vecdot", "a and b must have the same size along axis."));
    }
    sum(&multiply(&conj(a)?, b)?, Some(&[ax as isize]), false)
}

/// `beta * c + alpha * (a @ b)`. A linear layer's case (`alpha = beta =
/// 1`, `a: [..., M, K]`, `b: [K, N]`, `c: [N]`, one float dtype) is one
/// [`AddMatmul`] node, which the GPU computes in one library call.
pub fn addmm(c: &Array, a: &Array, b: &Array, alpha: f64, beta: f64) -> Result<Array> {
    if let Some(y) = linear_addmm(c, a, b, alpha, beta)? {
        return Ok(y);
    }
    // As MLX: `c` broadcasts to the product's shape, never widens it, and
    // half-precision inputs accumulate `alpha * a @ b + beta * c` in float32
    // (rounded once at the end, so a product past the half range that
    // `alpha` brings back stays finite).
    let dtype = Dtype::promote(Dtype::promote(a.dtype(), b.dtype()), c.dtype());
    let half = matches!(dtype, Dtype::F16 | Dtype::BF16);
    let wide = |x: &Array| if half { astype(x, Dtype::F32) } else { Ok(x.clone()) };
    let ab = matmul(&wide(a)?, &wide(b)?)?;
    if super::elementwise::broadcast_pair("addmm", c.shape(), ab.shape())? != ab.shape() {
        return Err(Error::invalid("addmm", "input c must broadcast to the output shape"));
    }
    let scaled = |x: &Array, k: f64| -> Result<Array> {
        if k == 1.0 {
            Ok(x.clone())
        } else {
            multiply(x, &super::weak_scalar(Scalar::Float(k), x.dtype())?)
        }
    };
    let out = add(&scaled(&ab, alpha)?, &scaled(&wide(c)?, beta)?)?;
    if half {
        astype(&out, dtype)
    } else {
        Ok(out)
    }
}

/// [`addmm`] as one [`AddMatmul`] node, where it is a linear layer's
/// product and its padding-free (see `ops::matmul`); None otherwise.
fn linear_addmm(c: &Array, a: &Array, b: &Array, alpha: f64, beta: f64) -> Result<Option<Array>> {
    let dtype = a.dtype();
    let fits = alpha == 1.0
        && beta == 1.0
        && a.ndim() >= 2
        && b.ndim() == 2
        && c.ndim() == 1
        && b.dtype() == dtype
        && c.dtype() == dtype
        && dtype.is_inexact()
        && a.shape()[a.ndim() - 1] == b.shape()[0]
        && c.shape()[0] == b.shape()[1];
    if !fits {
        return Ok(None);
    }
    let (m, k, n) = (a.shape()[a.ndim() - 2], b.shape()[0], b.shape()[1]);
    if super::matmul::pads_for_the_gpu(dtype, m, k, n) {
        return Ok(None);
    }
    let mut shape = a.shape()[..a.ndim() - 1].to_vec();
    shape.push(n);
    Array::from_primitive(shape, dtype, AddMatmul, vec![a.clone(), b.clone(), c.clone()]).map(Some)
}

/// The diagonal of the 2-D slices spanned by `axis1` and `axis2`, offset
/// by `offset` (above the main diagonal when positive); it becomes the
/// last axis of the result.
pub fn diagonal(a: &Array, offset: i64, axis1: isize, axis2: isize) -> Result<Array> {
    if a.ndim() < 2 {
        return Err(Error::invalid(
            "diagonal",
            format!("Array must have at least two dimensions, but got {} dimensions.", a.ndim()),
        ));
    }
    let (ax1, ax2) = (axis("diagonal", axis1, a.ndim())?, axis("diagonal", axis2, a.ndim())?);
    if ax1 == ax2 {
        return Err(Error::invalid("diagonal", "axis1 and axis2 cannot be the same axis"));
    }
    let (n, m) = (a.shape()[ax1] as i64, a.shape()[ax2] as i64);
    let mut order: Vec<isize> = (0..a.ndim()).filter(|&i| i != ax1 && i != ax2).map(|i| i as isize).collect();
    order.extend([ax1 as isize, ax2 as isize]);
    let batch: Vec<usize> = order[..order.len() - 2].iter().map(|&i| a.shape()[i as usize]).collect();
    let len = if offset >= 0 { n.min(m - offset).max(0) } else { (n + offset).min(m).max(0) };
    let start = if offset >= 0 { offset } else { -offset * m };
    let mut flat_shape = batch.clone();
    flat_shape.push((n * m) as usize);
    let flat = reshape_to(&transpose(a, Some(&order))?, flat_shape)?;
    if len == 0 {
        let mut shape = batch;
        shape.push(0);
        return zeros(&shape, a.dtype());
    }
    slice_axis(&flat, batch.len(), start as usize, len as usize, (m + 1) as isize)
}

/// The `k`-th diagonal of a 2-D array, or a 2-D array with a 1-D array on
/// its `k`-th diagonal.
pub fn diag(a: &Array, k: i64) -> Result<Array> {
    match a.ndim() {
        1 => {
            let n = a.size() + k.unsigned_abs() as usize;
            let flat = zeros(&[n * n], a.dtype())?;
            let start = if k >= 0 { k as usize } else { k.unsigned_abs() as usize * n };
            let p = SliceUpdate { start: vec![start], len: vec![a.size()], step: vec![n as isize + 1] };
            let out = Array::from_primitive(vec![n * n], a.dtype(), p, vec![flat, a.clone()])?;
            reshape_to(&out, vec![n, n])
        }
        2 => diagonal(a, k, 0, 1),
        _ => Err(Error::invalid("diag", "array must be 1-D or 2-D")),
    }
}

/// The sum of a diagonal (see [`diagonal`]), accumulated in `dtype` (the
/// input's by default; a bool sum counts in int32).
pub fn trace(a: &Array, offset: i64, axis1: isize, axis2: isize, dtype: Option<Dtype>) -> Result<Array> {
    let d = diagonal(a, offset, axis1, axis2)?;
    let d = astype(&d, dtype.unwrap_or(a.dtype()))?;
    sum(&d, Some(&[-1]), false)
}
