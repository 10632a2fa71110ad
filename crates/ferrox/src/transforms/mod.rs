//! Graph transforms. For now: evaluation. Autodiff, vmap and compile build
//! on the same graph (later issues).

pub mod eval;
