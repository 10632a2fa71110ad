//! Graph transforms: evaluation and automatic differentiation. vmap and
//! compile build on the same graph (later issues).

pub mod autodiff;
pub mod eval;
