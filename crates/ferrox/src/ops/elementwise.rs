//! Elementwise ops: casts, unary math, binary arithmetic and comparisons
//! with broadcasting and MLX's type promotion, and `where`.

use crate::array::Array;
use crate::backend::{BinaryOp, UnaryKind, UnaryOp};
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

/// `a`'s bytes (in row-major order) read as `dtype`. With a different
/// element size the last axis scales by the size ratio (its byte size must
/// be a multiple of the new size); a 0-d array keeps sizes equal.
///
/// A view of a pending view to bool reads the original bytes: bool arrays
/// hold 0 or 1, so `x.view(bool_).view(int32)` gives `x` back (as MLX's
/// does) only while the bool view is not yet computed.
pub fn view(a: &Array, dtype: Dtype) -> Result<Array> {
    if a.dtype() == Dtype::Bool && dtype != Dtype::Bool {
        if let Some(recipe) = a.pending_recipe() {
            if recipe.primitive.as_any().downcast_ref::<crate::primitives::View>().is_some() {
                return view(&recipe.inputs[0], dtype);
            }
        }
    }
    let (from, to) = (a.dtype().size(), dtype.size());
    let mut shape = a.shape().to_vec();
    if from != to {
        let Some(last) = shape.last_mut() else {
            return Err(Error::invalid(
                "view",
                "Changing the type of a scalar is only allowed for types with the same size.",
            ));
        };
        if (*last * from) % to != 0 {
            return Err(Error::invalid(
                "view",
                "When viewing as a larger dtype, the size in bytes of the last axis must be a multiple of the requested type size.",
            ));
        }
        *last = *last * from / to;
    }
    Array::from_primitive(shape, dtype, crate::primitives::View(dtype), vec![a.clone()])
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

/// The unary op `op` with its dtype rules (what every generated builder calls).
pub(crate) fn unary_op(op: UnaryOp, a: &Array) -> Result<Array> {
    let kind = op.kind();
    let dtype = kind.compute_dtype(a.dtype()).ok_or(Error::UnsupportedDtype {
        op: op.name(),
        dtype: a.dtype(),
        detail: kind.refusal(),
    })?;
    let x = astype(a, dtype)?;
    let out = Array::from_primitive(a.shape().to_vec(), kind.kernel_output(dtype), Unary(op), vec![x])?;
    if kind == UnaryKind::Magnitude && dtype.is_complex() {
        // The complex kernel leaves |z| in the real part.
        astype(&out, Dtype::F32)
    } else {
        Ok(out)
    }
}

macro_rules! unary_builders {
    ($($name:ident: $Var:ident, $kind:ident, $py:ident, $doc:literal, |$x:ident, $y:ident| $d:expr;)*) => {$(
        #[doc = $doc]
        pub fn $name(a: &Array) -> Result<Array> {
            unary_op(UnaryOp::$Var, a)
        }
    )*};
}

crate::unary_ops!(unary_builders);

/// The broadcast shape of two operands, or an error naming `op`.
pub(crate) fn broadcast_pair(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    broadcast_shapes(a, b).ok_or_else(|| Error::Broadcast { op, lhs: a.to_vec(), rhs: b.to_vec() })
}

/// The binary op `op` with broadcasting, promotion and its dtype rules
/// (what every generated builder calls).
pub(crate) fn binary_op(op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    let shape = broadcast_pair(op.name(), a.shape(), b.shape())?;
    let kind = op.kind();
    let promoted = Dtype::promote(a.dtype(), b.dtype());
    let dtype = kind.compute_dtype(promoted).ok_or(Error::UnsupportedDtype {
        op: op.name(),
        dtype: promoted,
        detail: kind.refusal(),
    })?;
    let (x, y) = (astype(a, dtype)?, astype(b, dtype)?);
    Array::from_primitive(shape, kind.kernel_output(dtype), Binary(op), vec![x, y])
}

macro_rules! binary_builders {
    ($($name:ident: $Var:ident, $kind:ident, $doc:literal, |$a:ident, $b:ident, $out:ident| $d:expr;)*) => {$(
        #[doc = $doc]
        pub fn $name(a: &Array, b: &Array) -> Result<Array> {
            binary_op(BinaryOp::$Var, a, b)
        }
    )*};
}

crate::binary_ops!(binary_builders);

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
