//! Elementwise ops: casts, unary math, binary arithmetic and comparisons
//! with broadcasting and MLX's type promotion, and `where`.

use crate::array::Array;
use crate::backend::{BinaryOp, UnaryOp};
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::{Error, Result};
use crate::primitives::{AsType, Binary, Select, StopGradient, Unary};
use crate::shape::broadcast_shapes;

/// `a` converted to `dtype` (the same array if it already has it).
pub fn astype(a: &Array, dtype: Dtype) -> Result<Array> {
    if a.dtype() == dtype {
        return Ok(a.clone());
    }
    Array::from_primitive(a.shape().to_vec(), dtype, AsType(dtype), vec![a.clone()])
}

/// A Python-style weakly typed scalar for combining with an array of dtype
/// `like`, following MLX: a bool takes `like`; an int takes `like` unless
/// `like` is bool (then int32); a float takes `like` if it is a real
/// float, else float32 (for complex64 too, as MLX); a complex number is
/// complex64. An int that the chosen integer dtype cannot hold is an error
/// (MLX's overflow check), never a silently wrapped value.
pub fn weak_scalar(value: Scalar, like: Dtype) -> Result<Array> {
    let dtype = match value {
        Scalar::Bool(_) => like,
        Scalar::Int(_) | Scalar::UInt(_) => {
            if like == Dtype::Bool {
                Dtype::I32
            } else {
                like
            }
        }
        Scalar::Float(_) => {
            if like.is_floating() {
                like
            } else {
                Dtype::F32
            }
        }
        Scalar::Complex(..) => Dtype::C64,
    };
    if !dtype.holds(value) {
        let shown = match value {
            Scalar::Int(v) => v.to_string(),
            Scalar::UInt(v) => v.to_string(),
            other => format!("{other:?}"),
        };
        return Err(Error::invalid("array", format!("Converting {shown} to {dtype} would result in overflow.")));
    }
    Ok(Array::scalar_of(value, dtype))
}

fn unary(op: UnaryOp, a: &Array) -> Result<Array> {
    let dtype = if op.is_transcendental() { a.dtype().at_least_float() } else { a.dtype() };
    if op == UnaryOp::Negative && dtype == Dtype::Bool {
        return Err(Error::UnsupportedDtype { op: "negative", dtype, detail: "The argument must not be boolean" });
    }
    let x = astype(a, dtype)?;
    Array::from_primitive(a.shape().to_vec(), dtype, Unary(op), vec![x])
}

/// Elementwise negation (not defined for bool).
pub fn negative(a: &Array) -> Result<Array> {
    unary(UnaryOp::Negative, a)
}

/// Elementwise absolute value; for complex64 the magnitude, as float32.
pub fn abs(a: &Array) -> Result<Array> {
    let out = unary(UnaryOp::Abs, a)?;
    if a.dtype().is_complex() {
        // The complex kernel leaves |z| in the real part.
        astype(&out, Dtype::F32)
    } else {
        Ok(out)
    }
}

/// Elementwise e^x (integers compute in float32).
pub fn exp(a: &Array) -> Result<Array> {
    unary(UnaryOp::Exp, a)
}

/// Elementwise natural logarithm.
pub fn log(a: &Array) -> Result<Array> {
    unary(UnaryOp::Log, a)
}

/// Elementwise square root.
pub fn sqrt(a: &Array) -> Result<Array> {
    unary(UnaryOp::Sqrt, a)
}

/// Elementwise sine.
pub fn sin(a: &Array) -> Result<Array> {
    unary(UnaryOp::Sin, a)
}

/// Elementwise cosine.
pub fn cos(a: &Array) -> Result<Array> {
    unary(UnaryOp::Cos, a)
}

/// Elementwise hyperbolic tangent.
pub fn tanh(a: &Array) -> Result<Array> {
    unary(UnaryOp::Tanh, a)
}

/// Elementwise logistic sigmoid.
pub fn sigmoid(a: &Array) -> Result<Array> {
    unary(UnaryOp::Sigmoid, a)
}

/// The broadcast shape of two operands, or an error naming `op`.
pub(crate) fn broadcast_pair(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    broadcast_shapes(a, b).ok_or_else(|| Error::Broadcast { op, lhs: a.to_vec(), rhs: b.to_vec() })
}

/// The binary op `op` with broadcasting and promotion (what each named op calls).
pub(crate) fn binary_op(op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    let shape = broadcast_pair(op.name(), a.shape(), b.shape())?;
    let mut dtype = Dtype::promote(a.dtype(), b.dtype());
    if op == BinaryOp::Divide {
        dtype = dtype.at_least_float();
    }
    let out_dtype = if op.is_comparison() { Dtype::Bool } else { dtype };
    let (x, y) = (astype(a, dtype)?, astype(b, dtype)?);
    Array::from_primitive(shape, out_dtype, Binary(op), vec![x, y])
}

macro_rules! binary_ops {
    ($($(#[$doc:meta])* $name:ident => $op:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array, b: &Array) -> Result<Array> {
            binary_op(BinaryOp::$op, a, b)
        }
    )*};
}

binary_ops! {
    /// Elementwise sum with broadcasting.
    ///
    /// ```
    /// use ferrox::{ops, Array};
    /// let a = Array::from_slice(&[1i32, 2, 3], &[3])?;
    /// let b = Array::from_slice(&[10i32], &[1])?;
    /// assert_eq!(ops::add(&a, &b)?.to_vec::<i32>()?, vec![11, 12, 13]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    add => Add;
    /// Elementwise difference with broadcasting.
    subtract => Subtract;
    /// Elementwise product with broadcasting.
    multiply => Multiply;
    /// Elementwise true division; integer inputs give float32.
    divide => Divide;
    /// Elementwise power.
    power => Power;
    /// Elementwise maximum (NaN propagates).
    maximum => Maximum;
    /// Elementwise minimum (NaN propagates).
    minimum => Minimum;
    /// Elementwise `a == b` (bool result).
    equal => Equal;
    /// Elementwise `a != b` (bool result).
    not_equal => NotEqual;
    /// Elementwise `a < b` (bool result).
    less => Less;
    /// Elementwise `a <= b` (bool result).
    less_equal => LessEqual;
    /// Elementwise `a > b` (bool result).
    greater => Greater;
    /// Elementwise `a >= b` (bool result).
    greater_equal => GreaterEqual;
}

/// `x` where `cond` is true, else `y`, with broadcasting of all three.
pub fn where_(cond: &Array, x: &Array, y: &Array) -> Result<Array> {
    let xy = broadcast_pair("where", x.shape(), y.shape())?;
    let shape = broadcast_pair("where", cond.shape(), &xy)?;
    let dtype = Dtype::promote(x.dtype(), y.dtype());
    let inputs = vec![astype(cond, Dtype::Bool)?, astype(x, dtype)?, astype(y, dtype)?];
    Array::from_primitive(shape, dtype, Select, inputs)
}

/// `a` unchanged, but treated as a constant by gradient transforms.
pub fn stop_gradient(a: &Array) -> Result<Array> {
    Array::from_primitive(a.shape().to_vec(), a.dtype(), StopGradient, vec![a.clone()])
}
