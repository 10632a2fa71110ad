//! [`Dropout`]: zeroes random elements during training.

use crate::module::{Forward, Module};
use ferrox::{ops, random, Array, Dtype, Error, Result, Scalar};

/// In training mode, zeroes each element with probability `p` and scales
/// the others by `1 / (1 - p)`, keeping the expected value; the identity in
/// evaluation mode (`train(false)`).
#[derive(Clone, Debug)]
pub struct Dropout {
    keep: f64,
    training: bool,
}

impl Dropout {
    /// Dropout with probability `p`, which must lie in `[0, 1)`.
    pub fn new(p: f64) -> Result<Dropout> {
        if !(0.0..1.0).contains(&p) {
            return Err(Error::invalid("Dropout", format!("The dropout probability {p:?} is not in [0, 1)")));
        }
        Ok(Dropout { keep: 1.0 - p, training: true })
    }

    /// The probability of zeroing an element.
    pub fn p(&self) -> f64 {
        1.0 - self.keep
    }

    /// [`forward`](Forward::forward) with the mask drawn from `key` (the
    /// global sequence when `None`).
    pub fn forward_with_key(&self, x: &Array, key: Option<&Array>) -> Result<Array> {
        if self.keep == 1.0 || !self.training {
            return Ok(x.clone());
        }
        let p = Array::scalar_of(Scalar::Float(self.keep), Dtype::F32);
        let mask = random::bernoulli(&p, Some(x.shape()), key)?;
        &ops::multiply(&mask, x)? * (1.0 / self.keep)
    }
}

impl Module for Dropout {
    entries!();
    training_flag!();
}

impl Forward for Dropout {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_with_key(x, None)
    }
}
