//! Channel-wise dropout of channels-last inputs: [`Dropout2d`] and
//! [`Dropout3d`] zero whole channels (of each sample) during training.

use crate::module::{Forward, Module};
use ferrox::{ops, random, Array, Dtype, Error, Result, Scalar};

/// The keep probability `1 - p`, refusing a `p` outside `[0, 1)`.
fn keep_probability(layer: &'static str, p: f64) -> Result<f64> {
    if !(0.0..1.0).contains(&p) {
        return Err(Error::invalid(layer, format!("The dropout probability {p:?} is not in [0, 1)")));
    }
    Ok(1.0 - p)
}

/// Zeroes whole channels of `x` (`ndims` dimensions, or `ndims + 1` with a
/// batch axis) with probability `1 - keep` and scales the others by
/// `1 / keep`, the mask drawn from `key`.
fn channel_dropout(
    layer: &'static str,
    ndims: usize,
    keep: f64,
    training: bool,
    x: &Array,
    key: Option<&Array>,
) -> Result<Array> {
    let nd = x.ndim();
    if nd != ndims && nd != ndims + 1 {
        return Err(Error::invalid(
            layer,
            format!("Received input with {nd} dimensions. Expected {ndims} or {} dimensions.", ndims + 1),
        ));
    }
    if keep == 1.0 || !training {
        return Ok(x.clone());
    }
    // One draw per (sample and) channel: the spatial axes of the mask are 1.
    let mut mask_shape = x.shape().to_vec();
    for d in &mut mask_shape[nd - ndims..nd - 1] {
        *d = 1;
    }
    let p = Array::scalar_of(Scalar::Float(keep), Dtype::F32);
    let mask = random::bernoulli(&p, Some(&mask_shape), key)?;
    &ops::multiply(&mask, x)? * (1.0 / keep)
}

/// Defines a channel-wise dropout layer.
macro_rules! channel_dropout_layer {
    ($name:ident, $ndims:literal, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Debug)]
        pub struct $name {
            keep: f64,
            training: bool,
        }

        impl $name {
            /// Dropout of channels with probability `p`, which must lie in
            /// `[0, 1)`.
            pub fn new(p: f64) -> Result<$name> {
                Ok($name { keep: keep_probability(stringify!($name), p)?, training: true })
            }

            /// The probability of zeroing a channel.
            pub fn p(&self) -> f64 {
                1.0 - self.keep
            }

            /// [`forward`](Forward::forward) with the mask drawn from `key`
            /// (the global sequence when `None`).
            pub fn forward_with_key(&self, x: &Array, key: Option<&Array>) -> Result<Array> {
                channel_dropout(stringify!($name), $ndims, self.keep, self.training, x, key)
            }
        }

        impl Module for $name {
            entries!();
            training_flag!();
        }

        impl Forward for $name {
            fn forward(&self, x: &Array) -> Result<Array> {
                self.forward_with_key(x, None)
            }
        }
    };
}

channel_dropout_layer!(
    Dropout2d,
    3,
    "Channel-wise dropout of `[N, H, W, C]` or `[H, W, C]` inputs: in training mode each channel (of each \
     sample) is zeroed with probability `p` and the others are scaled by `1 / (1 - p)`; the identity in \
     evaluation mode."
);
channel_dropout_layer!(
    Dropout3d,
    4,
    "Channel-wise dropout of `[N, D, H, W, C]` or `[D, H, W, C]` inputs: in training mode each channel (of \
     each sample) is zeroed with probability `p` and the others are scaled by `1 / (1 - p)`; the identity in \
     evaluation mode."
);
