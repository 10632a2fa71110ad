//! Matrix products with structure: `gather_mm` (operands picked from
//! batches by index), `segmented_mm` (one product per range of the inner
//! dimension) and `block_masked_mm` (blocks of the operands and the result
//! masked). Each is built from `take`, masks and `matmul`, so it runs on
//! every backend and is differentiable.

use super::creation::arange;
use super::elementwise::{astype, broadcast_pair, greater_equal, less, multiply};
use super::gather::take;
use super::math::logical_and;
use super::matmul::matmul;
use super::shaping::{broadcast_to, expand_dims, flatten, reshape_to};
use crate::array::Array;
use crate::dtype::Dtype;
use crate::error::{Error, Result};

/// The `[batch, rows, cols]` view of a matrix stack and the default
/// indices (every batch member, in its batch shape).
fn flat_batches(op: &'static str, x: &Array) -> Result<(Array, Array)> {
    if x.ndim() < 2 {
        return Err(Error::invalid(op, "The operands must have at least two dimensions."));
    }
    let batch = &x.shape()[..x.ndim() - 2];
    let n: usize = batch.iter().product();
    // Flattened by axes, not to a fixed shape: shapeless compilation
    // re-derives the batch from each call's operands.
    let flat = match x.ndim() {
        2 => expand_dims(x, &[0])?,
        nd => flatten(x, 0, nd as isize - 3)?,
    };
    let all = reshape_to(&arange(0.0, n as f64, 1.0, Dtype::U32)?, batch.to_vec())?;
    Ok((flat, all))
}

/// MLX's `gather_mm`: `a[lhs_indices] @ b[rhs_indices]`, where the indices
/// count over the flattened batch axes of `a` (`[..., M, K]`) and `b`
/// (`[..., K, N]`) and default to every batch member; the index arrays
/// broadcast to a shape `I` and the result is `I ++ [M, N]`.
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[1f32, 2., 3., 4.], &[2, 1, 2])?;
/// let b = Array::from_slice(&[1f32, 1.], &[2, 1])?;
/// let lhs = Array::from_slice(&[1u32, 1, 0], &[3])?;
/// let out = ops::gather_mm(&a, &b, Some(&lhs), None)?;
/// assert_eq!(out.to_vec::<f32>()?, vec![7., 7., 3.]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn gather_mm(a: &Array, b: &Array, lhs_indices: Option<&Array>, rhs_indices: Option<&Array>) -> Result<Array> {
    let op = "gather_mm";
    let (fa, all_a) = flat_batches(op, a)?;
    let (fb, all_b) = flat_batches(op, b)?;
    let li = lhs_indices.cloned().unwrap_or(all_a);
    let ri = rhs_indices.cloned().unwrap_or(all_b);
    for idx in [&li, &ri] {
        if !idx.dtype().is_integer() {
            return Err(Error::invalid(op, "Got indices with invalid dtype. Indices must be integral."));
        }
    }
    let shape = broadcast_pair(op, li.shape(), ri.shape())?;
    let lhs = take(&fa, &broadcast_to(&li, &shape)?, Some(0))?;
    let rhs = take(&fb, &broadcast_to(&ri, &shape)?, Some(0))?;
    matmul(&lhs, &rhs)
}

/// MLX's `segmented_mm`: for `a` `[M, K]`, `b` `[K, N]` and `segments`
/// `[..., 2]` of `[start, end)` ranges over `K`, the product of each
/// segment's columns of `a` and rows of `b`: shape `[..., M, N]` (an empty
/// segment gives zeros).
pub fn segmented_mm(a: &Array, b: &Array, segments: &Array) -> Result<Array> {
    let op = "segmented_mm";
    if a.ndim() != 2 || b.ndim() != 2 {
        return Err(Error::invalid(op, "Batched matmul not supported"));
    }
    if a.shape()[1] != b.shape()[0] {
        return Err(Error::invalid(
            op,
            format!("Inner dimensions {} and {} do not match.", a.shape()[1], b.shape()[0]),
        ));
    }
    if segments.ndim() == 0 || segments.shape()[segments.ndim() - 1] != 2 || !segments.dtype().is_integer() {
        return Err(Error::invalid(op, "The segments must be integer [start, end) pairs along a last axis of 2."));
    }
    let k = a.shape()[1];
    let lead = &segments.shape()[..segments.ndim() - 1];
    let bounds = |i: i64| -> Result<Array> {
        let s = super::indexing::index(segments, &[super::indexing::Index::Ellipsis, super::indexing::Index::Int(i)])?;
        expand_dims(&astype(&s, Dtype::I64)?, &[-1])
    };
    let pos = arange(0.0, k as f64, 1.0, Dtype::I64)?;
    // mask[..., k]: whether column k of `a` lies in the segment.
    let mask = logical_and(&greater_equal(&pos, &bounds(0)?)?, &less(&pos, &bounds(1)?)?)?;
    let mut shape = lead.to_vec();
    shape.extend([1, k]);
    let mask = reshape_to(&astype(&mask, a.dtype())?, shape)?;
    matmul(&multiply(a, &mask)?, b)
}

/// A block mask of `[..., ceil(rows / bs), ceil(cols / bs)]` spread to one
/// value per element of `[..., rows, cols]`, in `dtype`.
fn spread_mask(op: &'static str, mask: &Array, rows: usize, cols: usize, bs: usize, dtype: Dtype) -> Result<Array> {
    let (br, bc) = (rows.div_ceil(bs), cols.div_ceil(bs));
    if mask.ndim() < 2 || mask.shape()[mask.ndim() - 2..] != [br, bc] {
        return Err(Error::invalid(
            op,
            format!("A block mask for a {rows}x{cols} operand must end in ({br}, {bc}); got {:?}.", mask.shape()),
        ));
    }
    let lead = &mask.shape()[..mask.ndim() - 2];
    let m = astype(mask, dtype)?;
    let mut shape = lead.to_vec();
    shape.extend([br, 1, bc, 1]);
    let m = reshape_to(&m, shape.clone())?;
    let n = shape.len();
    shape[n - 3] = bs;
    shape[n - 1] = bs;
    let m = broadcast_to(&m, &shape)?;
    let mut full = lead.to_vec();
    full.extend([br * bs, bc * bs]);
    let m = reshape_to(&m, full)?;
    let rows_cut = super::indexing::Index::Slice { start: None, stop: Some(rows as i64), step: None };
    let cols_cut = super::indexing::Index::Slice { start: None, stop: Some(cols as i64), step: None };
    super::indexing::index(&m, &[super::indexing::Index::Ellipsis, rows_cut, cols_cut])
}

/// MLX's `block_masked_mm`: `a @ b` (`[..., M, K]` by `[..., K, N]`) with
/// `block_size` square blocks of `a`, `b` and the result multiplied by the
/// entries of `mask_lhs` (`[..., ceil(M/bs), ceil(K/bs)]`), `mask_rhs`
/// and `mask_out` (bool masks keep or zero a block; float masks scale it).
pub fn block_masked_mm(
    a: &Array,
    b: &Array,
    block_size: usize,
    mask_out: Option<&Array>,
    mask_lhs: Option<&Array>,
    mask_rhs: Option<&Array>,
) -> Result<Array> {
    let op = "block_masked_mm";
    if block_size == 0 {
        return Err(Error::invalid(op, "The block size must be positive."));
    }
    if a.ndim() < 2 || b.ndim() < 2 {
        return Err(Error::invalid(op, "The operands must have at least two dimensions."));
    }
    let (m, k, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1], b.shape()[b.ndim() - 1]);
    let dtype = Dtype::promote(a.dtype(), b.dtype());
    let a = match mask_lhs {
        Some(mask) => multiply(a, &spread_mask(op, mask, m, k, block_size, dtype)?)?,
        None => a.clone(),
    };
    let b = match mask_rhs {
        Some(mask) => multiply(b, &spread_mask(op, mask, k, n, block_size, dtype)?)?,
        None => b.clone(),
    };
    let out = matmul(&a, &b)?;
    match mask_out {
        Some(mask) => multiply(&out, &spread_mask(op, mask, m, n, block_size, out.dtype())?),
        None => Ok(out),
    }
}
