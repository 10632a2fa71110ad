//! Attention and transformer layers: [`MultiHeadAttention`] (and the
//! attention itself, [`scaled_dot_product_attention`]),
//! [`TransformerEncoderLayer`], [`TransformerEncoder`],
//! [`TransformerDecoderLayer`], [`TransformerDecoder`] and [`Transformer`].

use super::{split_key, Activation, Dropout, LayerNorm, Linear};
use crate::functions::relu;
use crate::module::{Forward, Module, Params};
use ferrox::ops::fast::AttentionMaskArg;
use ferrox::{ops, Array, Dtype, Error, Result, Scalar};

/// `softmax(scale * q k^T + mask) v` over heads of shape `[B, H, L, D]`,
/// MLX's `fast.scaled_dot_product_attention` (one fused kernel, see
/// [`ops::fast::scaled_dot_product_attention`]): a boolean `mask` keeps
/// the positions where it is true, any other mask is added to the scores
/// (cast to the queries' dtype).
pub fn scaled_dot_product_attention(
    queries: &Array,
    keys: &Array,
    values: &Array,
    scale: f64,
    mask: Option<&Array>,
) -> Result<Array> {
    let mask = match mask {
        None => AttentionMaskArg::None,
        Some(m) if m.dtype() == Dtype::Bool => AttentionMaskArg::Array(m.clone()),
        Some(m) => AttentionMaskArg::Array(m.astype(queries.dtype())?),
    };
    ops::fast::scaled_dot_product_attention(queries, keys, values, scale as f32, &mask, None)
}

/// The lowest finite value of the floating dtype `dtype`, as a 0-d array.
fn lowest(dtype: Dtype) -> Result<Array> {
    let info = dtype.finfo().ok_or(Error::UnsupportedDtype {
        op: "scaled_dot_product_attention",
        dtype,
        detail: "Masking requires floating-point scores",
    })?;
    Ok(Array::scalar_of(Scalar::Float(info.min), dtype))
}

/// The optional sizes of a [`MultiHeadAttention`] (each defaults as MLX's
/// does) and whether its projections have biases.
#[derive(Clone, Copy, Debug, Default)]
pub struct MultiHeadAttentionOptions {
    /// The queries' input size (default `dims`).
    pub query_input_dims: Option<usize>,
    /// The keys' input size (default `dims`).
    pub key_input_dims: Option<usize>,
    /// The values' input size (default `key_input_dims`).
    pub value_input_dims: Option<usize>,
    /// The size of the projected values (default `dims`).
    pub value_dims: Option<usize>,
    /// The output size (default `dims`).
    pub value_output_dims: Option<usize>,
    /// Whether the projections have biases (default `false`).
    pub bias: bool,
}

/// Scaled dot-product attention with several heads: queries, keys and
/// values are projected (`query_proj`, `key_proj`, `value_proj`), split
/// into heads, attended with scale `1 / sqrt(head size)`, merged and
/// projected again (`out_proj`).
#[derive(Clone, Debug)]
pub struct MultiHeadAttention {
    /// The query projection.
    pub query_proj: Linear,
    /// The key projection.
    pub key_proj: Linear,
    /// The value projection.
    pub value_proj: Linear,
    /// The output projection.
    pub out_proj: Linear,
    num_heads: usize,
    training: bool,
}

impl MultiHeadAttention {
    /// MLX's defaults: every size `dims`, no biases.
    pub fn new(dims: usize, num_heads: usize, key: Option<&Array>) -> Result<MultiHeadAttention> {
        MultiHeadAttention::with_options(dims, num_heads, &MultiHeadAttentionOptions::default(), key)
    }

    /// Attention of model size `dims` (divisible by `num_heads`) with the
    /// sizes in `options`; the projections are drawn in the order query,
    /// key, value, output.
    pub fn with_options(
        dims: usize,
        num_heads: usize,
        options: &MultiHeadAttentionOptions,
        key: Option<&Array>,
    ) -> Result<MultiHeadAttention> {
        if num_heads == 0 {
            return Err(Error::invalid("MultiHeadAttention", "num_heads must be positive but got 0."));
        }
        if !dims.is_multiple_of(num_heads) {
            return Err(Error::invalid(
                "MultiHeadAttention",
                format!(
                    "The input feature dimensions should be divisible by the number of heads ({dims} % {num_heads}) != 0"
                ),
            ));
        }
        let query_input_dims = options.query_input_dims.unwrap_or(dims);
        let key_input_dims = options.key_input_dims.unwrap_or(dims);
        let value_input_dims = options.value_input_dims.unwrap_or(key_input_dims);
        let value_dims = options.value_dims.unwrap_or(dims);
        let value_output_dims = options.value_output_dims.unwrap_or(dims);
        let bias = options.bias;
        let keys = split_key(key, 4)?;
        Ok(MultiHeadAttention {
            query_proj: Linear::new(query_input_dims, dims, bias, keys[0].as_ref())?,
            key_proj: Linear::new(key_input_dims, dims, bias, keys[1].as_ref())?,
            value_proj: Linear::new(value_input_dims, value_dims, bias, keys[2].as_ref())?,
            out_proj: Linear::new(value_dims, value_output_dims, bias, keys[3].as_ref())?,
            num_heads,
            training: true,
        })
    }

    /// The number of heads.
    pub fn num_heads(&self) -> usize {
        self.num_heads
    }

    /// Attention of `queries` (`[B, L_q, query_input_dims]`) over `keys`
    /// and `values` (`[B, L_k, ...]`). `mask`, broadcastable to
    /// `[B, num_heads, L_q, L_k]`, is additive (`-inf` or very negative
    /// where attention is not allowed) or boolean (true where it is).
    pub fn forward(&self, queries: &Array, keys: &Array, values: &Array, mask: Option<&Array>) -> Result<Array> {
        let heads = |x: Array| -> Result<Array> {
            ops::transpose(&ops::unflatten(&x, -1, &[self.num_heads as isize, -1])?, Some(&[0, 2, 1, 3]))
        };
        let q = heads(self.query_proj.forward(queries)?)?;
        let k = heads(self.key_proj.forward(keys)?)?;
        let v = heads(self.value_proj.forward(values)?)?;
        let scale = (1.0 / q.shape()[3] as f64).sqrt();
        let out = scaled_dot_product_attention(&q, &k, &v, scale, mask)?;
        let merged = ops::flatten(&ops::transpose(&out, Some(&[0, 2, 1, 3]))?, -2, -1)?;
        self.out_proj.forward(&merged)
    }

    /// An `[n, n]` additive causal mask of floating `dtype`: 0 where key
    /// `j <= i`, the dtype's lowest value above the diagonal.
    pub fn create_additive_causal_mask(n: usize, dtype: Dtype) -> Result<Array> {
        let lowest = lowest(dtype)?;
        let indices = ops::arange(0.0, n as f64, 1.0, Dtype::I32)?;
        let above = ops::less(&ops::expand_dims(&indices, &[1])?, &ops::expand_dims(&indices, &[0])?)?;
        ops::multiply(&above.astype(dtype)?, &lowest)
    }
}

impl Module for MultiHeadAttention {
    entries!(
        "query_proj": module query_proj,
        "key_proj": module key_proj,
        "value_proj": module value_proj,
        "out_proj": module out_proj,
    );
    training_flag!();
}

/// The options of a transformer block (MLX's defaults by `Default`).
#[derive(Clone, Copy, Debug)]
pub struct TransformerOptions {
    /// The MLP's hidden size (default `4 * dims`).
    pub mlp_dims: Option<usize>,
    /// The dropout probability after attention and in the MLP (default 0).
    pub dropout: f64,
    /// The MLP's activation (default [`relu`]).
    pub activation: Activation,
    /// Normalize before each block (`true`, the default) or after.
    pub norm_first: bool,
}

impl Default for TransformerOptions {
    fn default() -> TransformerOptions {
        TransformerOptions { mlp_dims: None, dropout: 0.0, activation: relu, norm_first: true }
    }
}

/// The MLP of a block: `linear2(dropout(activation(linear1(x))))`.
fn mlp(x: &Array, linear1: &Linear, activation: Activation, dropout: &Dropout, linear2: &Linear) -> Result<Array> {
    linear2.forward(&dropout.forward(&activation(&linear1.forward(x)?)?)?)
}

/// One encoder block: self-attention and an MLP (`dims -> mlp_dims ->
/// dims`), each with a residual connection, layer normalization (before
/// the block with `norm_first`, after the residual otherwise) and dropout.
#[derive(Clone, Debug)]
pub struct TransformerEncoderLayer {
    /// The self-attention.
    pub attention: MultiHeadAttention,
    /// The normalization of the attention block.
    pub ln1: LayerNorm,
    /// The normalization of the MLP block.
    pub ln2: LayerNorm,
    /// The MLP's first projection.
    pub linear1: Linear,
    /// The MLP's second projection.
    pub linear2: Linear,
    /// Dropout after the attention.
    pub dropout1: Dropout,
    /// Dropout after the activation.
    pub dropout2: Dropout,
    activation: Activation,
    norm_first: bool,
    training: bool,
}

impl TransformerEncoderLayer {
    /// A block of model size `dims` with `num_heads` heads; draws the
    /// attention, then `linear1`, then `linear2`.
    pub fn new(
        dims: usize,
        num_heads: usize,
        options: &TransformerOptions,
        key: Option<&Array>,
    ) -> Result<TransformerEncoderLayer> {
        let mlp_dims = options.mlp_dims.unwrap_or(4 * dims);
        let keys = split_key(key, 3)?;
        Ok(TransformerEncoderLayer {
            attention: MultiHeadAttention::new(dims, num_heads, keys[0].as_ref())?,
            ln1: LayerNorm::new(dims)?,
            ln2: LayerNorm::new(dims)?,
            linear1: Linear::new(dims, mlp_dims, true, keys[1].as_ref())?,
            linear2: Linear::new(mlp_dims, dims, true, keys[2].as_ref())?,
            dropout1: Dropout::new(options.dropout)?,
            dropout2: Dropout::new(options.dropout)?,
            activation: options.activation,
            norm_first: options.norm_first,
            training: true,
        })
    }

    /// The block applied to `x` (`[B, L, dims]`) with the attention `mask`.
    pub fn forward(&self, x: &Array, mask: Option<&Array>) -> Result<Array> {
        let attend = |y: &Array| -> Result<Array> { self.dropout1.forward(&self.attention.forward(y, y, y, mask)?) };
        let feed = |y: &Array| mlp(y, &self.linear1, self.activation, &self.dropout2, &self.linear2);
        if self.norm_first {
            let x = ops::add(x, &attend(&self.ln1.forward(x)?)?)?;
            ops::add(&x, &feed(&self.ln2.forward(&x)?)?)
        } else {
            let x = self.ln1.forward(&ops::add(x, &attend(x)?)?)?;
            self.ln2.forward(&ops::add(&x, &feed(&x)?)?)
        }
    }
}

impl Module for TransformerEncoderLayer {
    entries!(
        "attention": module attention,
        "ln1": module ln1,
        "ln2": module ln2,
        "linear1": module linear1,
        "linear2": module linear2,
        "dropout1": module dropout1,
        "dropout2": module dropout2,
    );
    training_flag!();
}

/// `call(layer, args)` recomputed in the backward pass instead of keeping
/// its intermediate values (MLX's `nn.utils.checkpoint`): the layer's
/// trainable parameters become inputs of the checkpointed function, so
/// their gradients flow.
fn checkpointed<L>(
    layer: &L,
    args: Vec<Array>,
    call: impl Fn(&L, &[Array]) -> Result<Array> + Send + Sync + 'static,
) -> Result<Array>
where
    L: Module + Clone + Send + Sync + 'static,
{
    let params = layer.trainable_parameters();
    let names: Vec<String> = params.keys().cloned().collect();
    let num_args = args.len();
    let template = layer.clone();
    let function = ferrox::checkpoint(move |inputs: &[Array]| {
        let mut copy = template.clone();
        let swapped: Params = names.iter().cloned().zip(inputs[num_args..].iter().cloned()).collect();
        copy.update(&swapped)?;
        Ok(vec![call(&copy, &inputs[..num_args])?])
    });
    let mut inputs = args;
    inputs.extend(params.into_values());
    Ok(function.call(&inputs)?.swap_remove(0))
}

/// A stack of [`TransformerEncoderLayer`]s followed by a [`LayerNorm`].
#[derive(Clone, Debug)]
pub struct TransformerEncoder {
    /// The blocks.
    pub layers: Vec<TransformerEncoderLayer>,
    /// The final normalization.
    pub ln: LayerNorm,
    checkpoint: bool,
    training: bool,
}

impl TransformerEncoder {
    /// `num_layers` blocks (drawn in order); with `checkpoint`, each block
    /// is recomputed in the backward pass instead of keeping its
    /// intermediate values.
    pub fn new(
        num_layers: usize,
        dims: usize,
        num_heads: usize,
        options: &TransformerOptions,
        checkpoint: bool,
        key: Option<&Array>,
    ) -> Result<TransformerEncoder> {
        let layers = split_key(key, num_layers)?
            .iter()
            .map(|k| TransformerEncoderLayer::new(dims, num_heads, options, k.as_ref()))
            .collect::<Result<_>>()?;
        Ok(TransformerEncoder { layers, ln: LayerNorm::new(dims)?, checkpoint, training: true })
    }

    /// The encoding of `x` (`[B, L, dims]`) with the attention `mask`.
    pub fn forward(&self, x: &Array, mask: Option<&Array>) -> Result<Array> {
        let mut x = x.clone();
        for layer in &self.layers {
            x = if self.checkpoint {
                let mut args = vec![x];
                args.extend(mask.cloned());
                checkpointed(layer, args, |l, a| l.forward(&a[0], a.get(1)))?
            } else {
                layer.forward(&x, mask)?
            };
        }
        self.ln.forward(&x)
    }
}

impl Module for TransformerEncoder {
    entries!("layers": list layers, "ln": module ln);
    training_flag!();
}

/// One decoder block: self-attention, cross-attention over the encoder's
/// output and an MLP, each with a residual connection, layer normalization
/// and dropout (arranged as in [`TransformerEncoderLayer`]).
#[derive(Clone, Debug)]
pub struct TransformerDecoderLayer {
    /// The self-attention.
    pub self_attention: MultiHeadAttention,
    /// The attention over the encoder's output.
    pub cross_attention: MultiHeadAttention,
    /// The normalization of the self-attention block.
    pub ln1: LayerNorm,
    /// The normalization of the cross-attention block.
    pub ln2: LayerNorm,
    /// The normalization of the MLP block.
    pub ln3: LayerNorm,
    /// The MLP's first projection.
    pub linear1: Linear,
    /// The MLP's second projection.
    pub linear2: Linear,
    /// Dropout after the self-attention.
    pub dropout1: Dropout,
    /// Dropout after the cross-attention.
    pub dropout2: Dropout,
    /// Dropout after the activation.
    pub dropout3: Dropout,
    activation: Activation,
    norm_first: bool,
    training: bool,
}

impl TransformerDecoderLayer {
    /// A block of model size `dims` with `num_heads` heads; draws the
    /// self-attention, the cross-attention, `linear1`, then `linear2`.
    pub fn new(
        dims: usize,
        num_heads: usize,
        options: &TransformerOptions,
        key: Option<&Array>,
    ) -> Result<TransformerDecoderLayer> {
        let mlp_dims = options.mlp_dims.unwrap_or(4 * dims);
        let keys = split_key(key, 4)?;
        Ok(TransformerDecoderLayer {
            self_attention: MultiHeadAttention::new(dims, num_heads, keys[0].as_ref())?,
            cross_attention: MultiHeadAttention::new(dims, num_heads, keys[1].as_ref())?,
            ln1: LayerNorm::new(dims)?,
            ln2: LayerNorm::new(dims)?,
            ln3: LayerNorm::new(dims)?,
            linear1: Linear::new(dims, mlp_dims, true, keys[2].as_ref())?,
            linear2: Linear::new(mlp_dims, dims, true, keys[3].as_ref())?,
            dropout1: Dropout::new(options.dropout)?,
            dropout2: Dropout::new(options.dropout)?,
            dropout3: Dropout::new(options.dropout)?,
            activation: options.activation,
            norm_first: options.norm_first,
            training: true,
        })
    }

    /// The block applied to `x` (`[B, L, dims]`) attending to `memory`
    /// (`[B, L_m, dims]`), with the self-attention mask `x_mask` and the
    /// cross-attention mask `memory_mask`.
    pub fn forward(
        &self,
        x: &Array,
        memory: &Array,
        x_mask: Option<&Array>,
        memory_mask: Option<&Array>,
    ) -> Result<Array> {
        let attend_self =
            |y: &Array| -> Result<Array> { self.dropout1.forward(&self.self_attention.forward(y, y, y, x_mask)?) };
        let attend_memory = |y: &Array| -> Result<Array> {
            self.dropout2.forward(&self.cross_attention.forward(y, memory, memory, memory_mask)?)
        };
        let feed = |y: &Array| mlp(y, &self.linear1, self.activation, &self.dropout3, &self.linear2);
        if self.norm_first {
            let x = ops::add(x, &attend_self(&self.ln1.forward(x)?)?)?;
            let x = ops::add(&x, &attend_memory(&self.ln2.forward(&x)?)?)?;
            ops::add(&x, &feed(&self.ln3.forward(&x)?)?)
        } else {
            let x = self.ln1.forward(&ops::add(x, &attend_self(x)?)?)?;
            let x = self.ln2.forward(&ops::add(&x, &attend_memory(&x)?)?)?;
            self.ln3.forward(&ops::add(&x, &feed(&x)?)?)
        }
    }
}

impl Module for TransformerDecoderLayer {
    entries!(
        "self_attention": module self_attention,
        "cross_attention": module cross_attention,
        "ln1": module ln1,
        "ln2": module ln2,
        "ln3": module ln3,
        "linear1": module linear1,
        "linear2": module linear2,
        "dropout1": module dropout1,
        "dropout2": module dropout2,
        "dropout3": module dropout3,
    );
    training_flag!();
}

/// A stack of [`TransformerDecoderLayer`]s followed by a [`LayerNorm`].
#[derive(Clone, Debug)]
pub struct TransformerDecoder {
    /// The blocks.
    pub layers: Vec<TransformerDecoderLayer>,
    /// The final normalization.
    pub ln: LayerNorm,
    checkpoint: bool,
    training: bool,
}

impl TransformerDecoder {
    /// `num_layers` blocks (drawn in order), checkpointed as in
    /// [`TransformerEncoder::new`].
    pub fn new(
        num_layers: usize,
        dims: usize,
        num_heads: usize,
        options: &TransformerOptions,
        checkpoint: bool,
        key: Option<&Array>,
    ) -> Result<TransformerDecoder> {
        let layers = split_key(key, num_layers)?
            .iter()
            .map(|k| TransformerDecoderLayer::new(dims, num_heads, options, k.as_ref()))
            .collect::<Result<_>>()?;
        Ok(TransformerDecoder { layers, ln: LayerNorm::new(dims)?, checkpoint, training: true })
    }

    /// The decoding of `x` attending to `memory`, with the masks of
    /// [`TransformerDecoderLayer::forward`].
    pub fn forward(
        &self,
        x: &Array,
        memory: &Array,
        x_mask: Option<&Array>,
        memory_mask: Option<&Array>,
    ) -> Result<Array> {
        let mut x = x.clone();
        for layer in &self.layers {
            x = if self.checkpoint {
                let (has_x_mask, has_memory_mask) = (x_mask.is_some(), memory_mask.is_some());
                let mut args = vec![x, memory.clone()];
                args.extend(x_mask.cloned());
                args.extend(memory_mask.cloned());
                checkpointed(layer, args, move |l, a| {
                    let x_mask = if has_x_mask { Some(&a[2]) } else { None };
                    let memory_mask = if has_memory_mask { a.last() } else { None };
                    l.forward(&a[0], &a[1], x_mask, memory_mask)
                })?
            } else {
                layer.forward(&x, memory, x_mask, memory_mask)?
            };
        }
        self.ln.forward(&x)
    }
}

impl Module for TransformerDecoder {
    entries!("layers": list layers, "ln": module ln);
    training_flag!();
}

/// The sizes and options of a [`Transformer`] (MLX's defaults by `Default`).
#[derive(Clone, Copy, Debug)]
pub struct TransformerConfig {
    /// The model size (default 512).
    pub dims: usize,
    /// The number of attention heads (default 8).
    pub num_heads: usize,
    /// The number of encoder blocks (default 6).
    pub num_encoder_layers: usize,
    /// The number of decoder blocks (default 6).
    pub num_decoder_layers: usize,
    /// The options of every block.
    pub layer: TransformerOptions,
    /// Recompute the blocks in the backward pass (default `false`).
    pub checkpoint: bool,
}

impl Default for TransformerConfig {
    fn default() -> TransformerConfig {
        TransformerConfig {
            dims: 512,
            num_heads: 8,
            num_encoder_layers: 6,
            num_decoder_layers: 6,
            layer: TransformerOptions::default(),
            checkpoint: false,
        }
    }
}

/// An encoder-decoder transformer
/// ([Attention Is All You Need](https://arxiv.org/abs/1706.03762)).
#[derive(Clone, Debug)]
pub struct Transformer {
    /// The encoder.
    pub encoder: TransformerEncoder,
    /// The decoder.
    pub decoder: TransformerDecoder,
    training: bool,
}

impl Transformer {
    /// A transformer as `config` describes it; draws the encoder, then the
    /// decoder.
    pub fn new(config: &TransformerConfig, key: Option<&Array>) -> Result<Transformer> {
        let keys = split_key(key, 2)?;
        let c = config;
        Ok(Transformer {
            encoder: TransformerEncoder::new(
                c.num_encoder_layers,
                c.dims,
                c.num_heads,
                &c.layer,
                c.checkpoint,
                keys[0].as_ref(),
            )?,
            decoder: TransformerDecoder::new(
                c.num_decoder_layers,
                c.dims,
                c.num_heads,
                &c.layer,
                c.checkpoint,
                keys[1].as_ref(),
            )?,
            training: true,
        })
    }

    /// The decoding of `tgt` attending to the encoding of `src`.
    pub fn forward(
        &self,
        src: &Array,
        tgt: &Array,
        src_mask: Option<&Array>,
        tgt_mask: Option<&Array>,
        memory_mask: Option<&Array>,
    ) -> Result<Array> {
        let memory = self.encoder.forward(src, src_mask)?;
        self.decoder.forward(tgt, &memory, tgt_mask, memory_mask)
    }
}

impl Module for Transformer {
    entries!("encoder": module encoder, "decoder": module decoder);
    training_flag!();
}
