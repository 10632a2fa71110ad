//! Matrix products.

use super::elementwise::astype;
use super::shaping::reshape_to;
use crate::array::Array;
use crate::dtype::Dtype;
use crate::error::{fmt_shape, Error, Result};
use crate::primitives::Matmul;
use crate::shape::broadcast_shapes;

/// Matrix product with NumPy's rules: batch dims broadcast, a 1-D first
/// operand is a row vector and a 1-D second operand a column vector (the
/// added axis is removed from the result).
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// let v = Array::from_slice(&[1.0f32, 1.0], &[2])?;
/// assert_eq!(ops::matmul(&a, &v)?.to_vec::<f32>()?, vec![3.0, 7.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn matmul(a: &Array, b: &Array) -> Result<Array> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return Err(Error::invalid("matmul", "Got 0 dimension input. Inputs must have at least one dimension."));
    }
    let x = if a.ndim() == 1 { reshape_to(a, vec![1, a.size()])? } else { a.clone() };
    let y = if b.ndim() == 1 { reshape_to(b, vec![b.size(), 1])? } else { b.clone() };
    let (xs, ys) = (x.shape(), y.shape());
    let (xn, yn) = (xs.len(), ys.len());
    if xs[xn - 1] != ys[yn - 2] {
        return Err(Error::ShapeMismatch {
            op: "matmul",
            msg: format!(
                "Last dimension of first input with shape {} must match second to last dimension of second input with shape {}.",
                fmt_shape(a.shape()),
                fmt_shape(b.shape())
            ),
        });
    }
    let batch = broadcast_shapes(&xs[..xn - 2], &ys[..yn - 2]).ok_or_else(|| Error::Broadcast {
        op: "matmul",
        lhs: a.shape().to_vec(),
        rhs: b.shape().to_vec(),
    })?;
    let dtype = Dtype::promote(a.dtype(), b.dtype());
    let mut shape = batch.clone();
    shape.extend_from_slice(&[xs[xn - 2], ys[yn - 1]]);
    let out = Array::from_primitive(shape.clone(), dtype, Matmul, vec![astype(&x, dtype)?, astype(&y, dtype)?])?;
    let mut final_shape = batch;
    if a.ndim() > 1 {
        final_shape.push(shape[shape.len() - 2]);
    }
    if b.ndim() > 1 {
        final_shape.push(shape[shape.len() - 1]);
    }
    reshape_to(&out, final_shape)
}
