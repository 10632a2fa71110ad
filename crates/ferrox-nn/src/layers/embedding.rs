//! [`Embedding`]: a lookup table from integer ids to vectors.

use super::transposed;
use crate::float_param;
use crate::module::{Forward, Module, Param};
use ferrox::{ops, random, Array, Dtype, Error, Result};

/// Maps each integer id to a `dims`-dimensional vector: row `id` of
/// `weight` (`[num_embeddings, dims]`, initialized from `N(0, 1 / dims)`).
#[derive(Clone, Debug)]
pub struct Embedding {
    /// The table, `[num_embeddings, dims]`.
    pub weight: Param,
    training: bool,
}

impl Embedding {
    /// A table of `num_embeddings` vectors of size `dims`.
    pub fn new(num_embeddings: usize, dims: usize, key: Option<&Array>) -> Result<Embedding> {
        if dims == 0 {
            return Err(Error::invalid("Embedding", "dims must be positive but got 0."));
        }
        let scale = float_param((1.0 / dims as f64).sqrt(), Dtype::F32);
        let weight = random::normal(&[num_embeddings, dims], Dtype::F32, None, Some(&scale), key)?;
        Ok(Embedding { weight: Param::new(weight), training: true })
    }

    /// `x @ weight.T`: the table used as an output projection (tied input
    /// and output embeddings).
    pub fn as_linear(&self, x: &Array) -> Result<Array> {
        ops::matmul(x, &transposed(&self.weight)?)
    }
}

impl Module for Embedding {
    entries!("weight": param weight);
    training_flag!();
}

impl Forward for Embedding {
    /// The rows of `weight` at the integer ids `x`: shape `x.shape + [dims]`.
    fn forward(&self, x: &Array) -> Result<Array> {
        if !x.dtype().is_integer() {
            return Err(Error::InvalidType {
                op: "Embedding",
                msg: format!("Indices must be integers but got {}.", x.dtype()),
            });
        }
        ops::take(&self.weight, x, Some(0))
    }
}
