//! Matrix products.

use super::elementwise::astype;
use super::rearrange::{pad, PadMode};
use super::shaping::reshape_to;
use crate::array::Array;
use crate::device::{current_stream, DeviceType};
use crate::dtype::Dtype;
use crate::error::{fmt_shape, Error, Result};
use crate::primitives::{Matmul, Slice};
use crate::shape::broadcast_shapes;

/// Half-precision products on the GPU run on operands zero-padded to
/// multiples of this where a matrix dimension is not one: cuBLASLt picks
/// its slow one-element-aligned kernels otherwise ((8192, 768) · (768,
/// 50257) in bfloat16 took 6.7 ms against 0.9 ms padded on the H200).
const GPU_HALF_ALIGN: usize = 8;

/// Whether an `[m, k] · [k, n]` product of `dtype` runs on padded operands:
/// a half-precision product on the GPU with a dimension that is not a
/// multiple of [`GPU_HALF_ALIGN`], large enough in every dimension for the
/// padding copies to be small next to the product.
pub(super) fn pads_for_the_gpu(dtype: Dtype, m: usize, k: usize, n: usize) -> bool {
    current_stream().device.kind == DeviceType::Gpu
        && matches!(dtype, Dtype::F16 | Dtype::BF16)
        && [m, k, n].iter().any(|d| !d.is_multiple_of(GPU_HALF_ALIGN))
        && [m, k, n].iter().all(|&d| d >= 256)
}

/// `x` with its last two axes zero-padded to `rows` and `cols` (itself when
/// they already are).
fn pad_matrix(x: &Array, rows: usize, cols: usize) -> Result<Array> {
    let nd = x.ndim();
    let (r, c) = (x.shape()[nd - 2], x.shape()[nd - 1]);
    if (r, c) == (rows, cols) {
        return Ok(x.clone());
    }
    let mut widths = vec![(0i64, 0i64); nd];
    widths[nd - 2].1 = (rows - r) as i64;
    widths[nd - 1].1 = (cols - c) as i64;
    pad(x, &widths, PadMode::Constant, &Array::scalar_of(crate::element::Scalar::Float(0.0), x.dtype()))
}

/// The product of `x: [..., m, k]` and `y: [..., k, n]` (of one dtype) as
/// a graph node: on padded operands where [`pads_for_the_gpu`] says so,
/// the result then a view of the padded product. Zeros along `k` add
/// nothing; the gradient flows back through the same padding, so the
/// backward products are aligned too and share one padded cotangent.
fn product(x: &Array, y: &Array, shape: Vec<usize>, dtype: Dtype) -> Result<Array> {
    let nd = shape.len();
    let (m, k, n) = (shape[nd - 2], x.shape()[x.ndim() - 1], shape[nd - 1]);
    if !pads_for_the_gpu(dtype, m, k, n) {
        return Array::from_primitive(shape, dtype, Matmul, vec![x.clone(), y.clone()]);
    }
    let up = |d: usize| d.div_ceil(GPU_HALF_ALIGN) * GPU_HALF_ALIGN;
    let (mp, kp, np) = (up(m), up(k), up(n));
    let mut padded_shape = shape.clone();
    padded_shape[nd - 2] = mp;
    padded_shape[nd - 1] = np;
    let full =
        Array::from_primitive(padded_shape, dtype, Matmul, vec![pad_matrix(x, mp, kp)?, pad_matrix(y, kp, np)?])?;
    let window = Slice { start: vec![0; nd], len: shape.clone(), step: vec![1; nd] };
    Array::from_primitive(shape, dtype, window, vec![full])
}

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
    let out = product(&astype(&x, dtype)?, &astype(&y, dtype)?, shape.clone(), dtype)?;
    let mut final_shape = batch;
    if a.ndim() > 1 {
        final_shape.push(shape[shape.len() - 2]);
    }
    if b.ndim() > 1 {
        final_shape.push(shape[shape.len() - 1]);
    }
    reshape_to(&out, final_shape)
}
