//! Layers (MLX's `mlx.nn.layers`), each a [`Module`](crate::module::Module)
//! with MLX's parameter names, shapes, initialization and arithmetic.
//!
//! Constructors that draw random initial values take an optional PRNG key:
//! with one, the draws are a pure function of it (split into one subkey per
//! draw, or per child layer); without, they take the next keys of ferrox's
//! global sequence in the order MLX's constructors draw them, so after the
//! same `random::seed` the weights are MLX's. Layers with one input
//! implement [`Forward`](crate::module::Forward); the others have inherent
//! `forward` methods with MLX's `__call__` arguments.

use ferrox::ops::{self, random, Index};
use ferrox::{Array, Result};

/// The training flag of a layer: `set_training_mode` and `training` over a
/// `training: bool` field, for a `Module` impl block.
macro_rules! training_flag {
    () => {
        fn set_training_mode(&mut self, on: bool) {
            self.training = on;
        }

        fn training(&self) -> bool {
            self.training
        }
    };
}

/// `visit_entries` and `visit_entries_mut` for a `Module` impl block, from
/// a list of `"name": kind field` entries, kind being `param` (a `Param`),
/// `opt` (an `Option<Param>`), `module` (a child layer) or `list` (a `Vec`
/// of child layers, named `name.0`, `name.1`, ...).
macro_rules! entries {
    ($($name:literal: $kind:ident $field:ident),* $(,)?) => {
        #[allow(unused_variables)]
        fn visit_entries(&self, f: &mut dyn FnMut(&str, $crate::module::Entry<'_>)) {
            #[allow(unused_imports)]
            use $crate::module::Entry as E;
            $(entries!(@ref self, f, E, $name, $kind, $field);)*
        }

        #[allow(unused_variables)]
        fn visit_entries_mut(&mut self, f: &mut dyn FnMut(&str, $crate::module::EntryMut<'_>)) {
            #[allow(unused_imports)]
            use $crate::module::EntryMut as E;
            $(entries!(@mut self, f, E, $name, $kind, $field);)*
        }
    };
    (@ref $s:ident, $f:ident, $e:ident, $name:literal, param, $field:ident) => {
        $f($name, $e::Param(&$s.$field));
    };
    (@mut $s:ident, $f:ident, $e:ident, $name:literal, param, $field:ident) => {
        $f($name, $e::Param(&mut $s.$field));
    };
    (@ref $s:ident, $f:ident, $e:ident, $name:literal, opt, $field:ident) => {
        if let Some(p) = &$s.$field {
            $f($name, $e::Param(p));
        }
    };
    (@mut $s:ident, $f:ident, $e:ident, $name:literal, opt, $field:ident) => {
        if let Some(p) = &mut $s.$field {
            $f($name, $e::Param(p));
        }
    };
    (@ref $s:ident, $f:ident, $e:ident, $name:literal, module, $field:ident) => {
        $f($name, $e::Module(&$s.$field));
    };
    (@mut $s:ident, $f:ident, $e:ident, $name:literal, module, $field:ident) => {
        $f($name, $e::Module(&mut $s.$field));
    };
    (@ref $s:ident, $f:ident, $e:ident, $name:literal, list, $field:ident) => {
        for (i, m) in $s.$field.iter().enumerate() {
            $f(&format!("{}.{i}", $name), $e::Module(m));
        }
    };
    (@mut $s:ident, $f:ident, $e:ident, $name:literal, list, $field:ident) => {
        for (i, m) in $s.$field.iter_mut().enumerate() {
            $f(&format!("{}.{i}", $name), $e::Module(m));
        }
    };
}

mod activations;
mod convolution;
mod dropout;
mod dropout_nd;
mod embedding;
mod image_norm;
mod linear;
mod normalization;
mod pooling;
mod positional;
mod quantized;
mod recurrent;
mod sequential;
mod transformer;
mod upsample;

pub use activations::*;
pub use convolution::{
    Conv1d, Conv2d, Conv3d, ConvLayerOptions, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, ConvTransposeOptions,
};
pub use dropout::Dropout;
pub use dropout_nd::{Dropout2d, Dropout3d};
pub use embedding::Embedding;
pub use image_norm::{BatchNorm, GroupNorm, InstanceNorm};
pub use linear::{Bilinear, Identity, Linear};
pub use normalization::{layer_norm, rms_norm, LayerNorm, RMSNorm};
pub use pooling::{AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d};
pub use positional::{rope, ALiBi, RoPE, SinusoidalPositionalEncoding};
pub use quantized::{Quantization, QuantizedEmbedding, QuantizedLinear};
pub use recurrent::{GRU, LSTM, RNN};
pub use sequential::Sequential;
pub use transformer::{
    scaled_dot_product_attention, MultiHeadAttention, MultiHeadAttentionOptions, Transformer, TransformerConfig,
    TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer, TransformerOptions,
};
pub use upsample::{upsample_cubic, upsample_linear, upsample_nearest, Upsample, UpsampleMode, UpsampleScale};

/// An activation function, as the recurrent and transformer layers take it.
pub type Activation = fn(&Array) -> Result<Array>;

/// `n` keys for `n` draws: the rows of `random::split(key, n)` with a key,
/// `None` (the global sequence) for each without.
pub(crate) fn split_key(key: Option<&Array>, n: usize) -> Result<Vec<Option<Array>>> {
    let Some(key) = key else { return Ok(vec![None; n]) };
    let keys = random::split(key, n)?;
    (0..n).map(|i| ops::index(&keys, &[Index::Int(i as i64)]).map(Some)).collect()
}

/// The transposed last two axes of a weight (`W.T` of a matrix).
pub(crate) fn transposed(w: &Array) -> Result<Array> {
    ops::swapaxes(w, -1, -2)
}
