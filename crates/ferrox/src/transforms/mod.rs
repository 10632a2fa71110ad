//! Graph transforms: evaluation, automatic differentiation and vmap.
//! compile builds on the same graph (a later issue).

pub mod autodiff;
pub mod custom;
pub mod eval;
pub mod vmap;
