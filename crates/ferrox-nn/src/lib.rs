//! # ferrox-nn
//!
//! Neural-network building blocks for [`ferrox`] with the names, parameters
//! and semantics of MLX's `mlx.nn`: activation functions ([`functions`]),
//! loss functions ([`losses`]) and weight initializers ([`init`]), and the
//! module system ([`module`]: parameter trees, training mode, weight files)
//! with MLX's layers ([`layers`]). Every
//! function composes ferrox ops, so results are lazy arrays that evaluate on
//! any device and that `ferrox`'s transforms (grad, vjp, vmap) see through.
//! The Python package `ferrox.nn` calls these same functions.
//!
//! ```
//! use ferrox::Array;
//! use ferrox_nn::{functions, losses};
//! let x = Array::from_slice(&[-1.0f32, 0.5, 2.0], &[3])?;
//! assert_eq!(functions::relu(&x)?.to_vec::<f32>()?, vec![0.0, 0.5, 2.0]);
//! let loss = losses::mse_loss(&x, &ferrox::ops::zeros_like(&x)?, losses::Reduction::Sum)?;
//! assert_eq!(loss.item::<f32>()?, 5.25);
//! # Ok::<(), ferrox::Error>(())
//! ```

pub mod functions;
pub mod init;
pub mod layers;
pub mod losses;
pub mod module;
pub mod optim;

use ferrox::{ops, Array, Dtype, Result, Scalar};

/// A Python float `value` as MLX types it next to an operand of dtype `like`
/// (weakly: it takes `like` when that is a real float, else float32).
pub(crate) fn float(value: f64, like: &Array) -> Result<Array> {
    ops::weak_scalar(Scalar::Float(value), like.dtype())
}

/// A Python int `value` as MLX types it next to an operand of dtype `like`
/// (weakly: it takes `like`, or int32 next to bool).
pub(crate) fn int(value: i64, like: &Array) -> Result<Array> {
    ops::weak_scalar(Scalar::Int(value), like.dtype())
}

/// A Python float passed to a sampler as a parameter, as MLX converts it:
/// rounded to float32, then held in `dtype` when that is a real float.
pub(crate) fn float_param(value: f64, dtype: Dtype) -> Array {
    let dtype = if dtype.is_floating() { dtype } else { Dtype::F32 };
    Array::scalar_of(Scalar::Float(value as f32 as f64), dtype)
}

/// A shape as Python prints a tuple (`(2, 3)`, `(4,)`, `()`), for error
/// messages worded as MLX's Python code words them.
pub(crate) fn py_shape(shape: &[usize]) -> String {
    match shape {
        [d] => format!("({d},)"),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}
