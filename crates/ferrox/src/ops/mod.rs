//! User-facing ops. Each validates its arguments, applies MLX's dtype rules,
//! infers the output shape and adds a node to the graph; none computes.
//! The same ops are methods on [`Array`](crate::Array) (see `methods.rs`)
//! and operators on `&Array` (see `operators.rs`).

mod contraction;
mod convolution;
mod creation;
pub mod custom_kernel;
mod einsum;
mod elementwise;
pub mod fast;
pub mod fft;
mod gather;
mod hadamard;
mod indexing;
pub mod linalg;
mod math;
mod matmul;
mod methods;
mod operators;
mod optimizer;
// Not glob-exported: `random::split` would clash with the array op.
mod quantized;
pub mod random;
mod rearrange;
mod reduction;
mod scan;
mod shaping;
mod sort;
mod structured_matmul;
mod tables;
mod triangular;
mod windows;

pub use contraction::*;
pub use convolution::*;
pub use creation::*;
pub use einsum::*;
pub use elementwise::*;
pub use gather::*;
pub use hadamard::*;
pub use indexing::*;
pub use math::*;
pub use matmul::*;
pub use optimizer::*;
pub use quantized::*;
pub use rearrange::*;
pub use reduction::*;
pub use scan::*;
pub use shaping::*;
pub use sort::*;
pub use structured_matmul::*;
pub use triangular::*;
pub use windows::*;

use crate::error::{Error, Result};
use crate::shape::normalize_axis;

/// Resolves possibly negative axes against `ndim`: sorted, checked for range
/// and duplicates.
pub(crate) fn normalize_axes(op: &'static str, axes: &[isize], ndim: usize) -> Result<Vec<usize>> {
    let mut out = axes
        .iter()
        .map(|&a| normalize_axis(a, ndim).ok_or(Error::AxisOutOfRange { op, axis: a, ndim }))
        .collect::<Result<Vec<_>>>()?;
    out.sort_unstable();
    if out.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::invalid(op, "Received duplicate axes."));
    }
    Ok(out)
}

/// Resolves one possibly negative axis against `ndim`.
pub(crate) fn axis(op: &'static str, axis: isize, ndim: usize) -> Result<usize> {
    normalize_axis(axis, ndim).ok_or(Error::AxisOutOfRange { op, axis, ndim })
}
