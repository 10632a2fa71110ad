//! Graph transforms: evaluation, automatic differentiation, vmap and
//! compile.

pub mod async_eval;
pub mod autodiff;
pub mod compile;
pub mod custom;
pub mod eval;
pub mod vmap;
