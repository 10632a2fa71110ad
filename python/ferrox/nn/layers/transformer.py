"""Attention and transformer layers: ``MultiHeadAttention``,
``TransformerEncoderLayer``, ``TransformerEncoder``,
``TransformerDecoderLayer``, ``TransformerDecoder`` and ``Transformer``."""

import math
from typing import Any, Callable, Optional, Union

import ferrox as fx
from ferrox.nn.functions import relu
from ferrox.nn.layers.base import Module
from ferrox.nn.layers.dropout import Dropout
from ferrox.nn.layers.linear import Linear
from ferrox.nn.layers.normalization import LayerNorm
from ferrox.nn.utils import checkpoint


class MultiHeadAttention(Module):
    """Scaled dot-product attention with several heads.

    Queries, keys and values are projected (without biases by default),
    split into ``num_heads`` heads, attended, and the result is projected
    again. ``mask`` may be an array broadcastable to ``[batch, num_heads,
    #queries, #keys]`` (additive, with ``-inf`` or large negative values
    where attention is not allowed; or boolean, true where it is) or the
    string ``"causal"``.

    Args:
        dims: the model dimensions (default for every size below).
        num_heads: the number of heads; must divide ``dims``.
        query_input_dims: the queries' input size. Default ``dims``.
        key_input_dims: the keys' input size. Default ``dims``.
        value_input_dims: the values' input size. Default ``key_input_dims``.
        value_dims: the size of the projected values. Default ``dims``.
        value_output_dims: the output size. Default ``dims``.
        bias: whether the projections have biases. Default ``False``.
    """

    def __init__(
        self,
        dims: int,
        num_heads: int,
        query_input_dims: Optional[int] = None,
        key_input_dims: Optional[int] = None,
        value_input_dims: Optional[int] = None,
        value_dims: Optional[int] = None,
        value_output_dims: Optional[int] = None,
        bias: bool = False,
    ):
        super().__init__()
        if (dims % num_heads) != 0:
            raise ValueError(
                "The input feature dimensions should be divisible by the "
                f"number of heads ({dims} % {num_heads}) != 0"
            )
        query_input_dims = query_input_dims or dims
        key_input_dims = key_input_dims or dims
        value_input_dims = value_input_dims or key_input_dims
        value_dims = value_dims or dims
        value_output_dims = value_output_dims or dims
        self.num_heads = num_heads
        self.query_proj = Linear(query_input_dims, dims, bias=bias)
        self.key_proj = Linear(key_input_dims, dims, bias=bias)
        self.value_proj = Linear(value_input_dims, value_dims, bias=bias)
        self.out_proj = Linear(value_dims, value_output_dims, bias=bias)

    def __call__(self, queries: fx.array, keys: fx.array, values: fx.array, mask=None) -> fx.array:
        queries = self.query_proj(queries)
        keys = self.key_proj(keys)
        values = self.value_proj(values)
        heads = self.num_heads
        queries = fx.unflatten(queries, -1, (heads, -1)).transpose(0, 2, 1, 3)
        keys = fx.unflatten(keys, -1, (heads, -1)).transpose(0, 2, 1, 3)
        values = fx.unflatten(values, -1, (heads, -1)).transpose(0, 2, 1, 3)
        scale = math.sqrt(1 / queries.shape[-1])
        output = fx.fast.scaled_dot_product_attention(queries, keys, values, scale=scale, mask=mask)
        return self.out_proj(output.transpose(0, 2, 1, 3).flatten(-2, -1))

    @staticmethod
    def create_additive_causal_mask(N: int, dtype: fx.Dtype = fx.float32) -> fx.array:
        """An ``[N, N]`` additive mask: 0 where key ``j <= i``, the dtype's
        lowest value above the diagonal.

        Args:
            N (int): Sequence length.
            dtype (Dtype, optional): Dtype of the mask.

        Returns:
            array: ``(N, N)`` mask: 0 where visible, a large negative value above the diagonal.
        """
        indices = fx.arange(N)
        mask = indices[:, None] < indices[None]
        return mask.astype(dtype) * fx.finfo(dtype).min


class TransformerEncoderLayer(Module):
    """One encoder block: self-attention and an MLP (``dims -> mlp_dims ->
    dims``), each with a residual connection, layer normalization (before
    each block with ``norm_first``, after otherwise) and dropout.

    Args:
        dims: the model dimensions.
        num_heads: the number of attention heads.
        mlp_dims: the MLP's hidden size. Default ``4 * dims``.
        dropout: the dropout probability. Default ``0.0``.
        activation: the MLP's activation. Default :func:`relu`.
        norm_first: normalize before the blocks. Default ``True``.
    """

    def __init__(
        self,
        dims: int,
        num_heads: int,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation: Callable[[Any], Any] = relu,
        norm_first: bool = True,
    ):
        super().__init__()
        mlp_dims = mlp_dims or dims * 4
        self.attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def __call__(self, x: fx.array, mask) -> fx.array:
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.attention(y, y, y, mask))
            y = self.linear1(self.ln2(x))
            y = self.linear2(self.dropout2(self.activation(y)))
            return x + y
        x = self.ln1(x + self.dropout1(self.attention(x, x, x, mask)))
        y = self.linear2(self.dropout2(self.activation(self.linear1(x))))
        return self.ln2(x + y)


class TransformerEncoder(Module):
    """``num_layers`` :class:`TransformerEncoderLayer` blocks and a final
    :class:`LayerNorm`; with ``checkpoint`` each block recomputes its
    intermediates in the backward pass (see :func:`ferrox.nn.utils.checkpoint`).
    Other arguments as :class:`TransformerEncoderLayer`.

    Args:
        num_layers (int): Number of layers.
        dims (int): Feature size.
        num_heads (int): Number of attention heads.
        mlp_dims (int, optional): Hidden size of the MLP; ``4 * dims`` when None.
        dropout (float, optional): Dropout probability.
        activation (callable, optional): Activation of the MLP.
        norm_first (bool, optional): Normalize before attention and MLP, not after.
        checkpoint (bool, optional): Recompute each layer's activations in the backward pass instead of storing them.
    """

    def __init__(
        self,
        num_layers: int,
        dims: int,
        num_heads: int,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation=relu,
        norm_first: bool = True,
        checkpoint: bool = False,
    ):
        super().__init__()
        self.layers = [
            TransformerEncoderLayer(dims, num_heads, mlp_dims, dropout, activation, norm_first)
            for _ in range(num_layers)
        ]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def __call__(self, x: fx.array, mask) -> fx.array:
        for layer in self.layers:
            layer = checkpoint(layer) if self.checkpoint else layer
            x = layer(x, mask)
        return self.ln(x)


class TransformerDecoderLayer(Module):
    """One decoder block: self-attention, cross-attention over ``memory``
    and an MLP, each with a residual connection, layer normalization
    (before each block with ``norm_first``, after otherwise) and dropout.
    Arguments as :class:`TransformerEncoderLayer`.

    Args:
        dims (int): Feature size.
        num_heads (int): Number of attention heads.
        mlp_dims (int, optional): Hidden size of the MLP; ``4 * dims`` when None.
        dropout (float, optional): Dropout probability.
        activation (callable, optional): Activation of the MLP.
        norm_first (bool, optional): Normalize before attention and MLP, not after.
    """

    def __init__(
        self,
        dims: int,
        num_heads: int,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation: Callable[[Any], Any] = relu,
        norm_first: bool = True,
    ):
        super().__init__()
        mlp_dims = mlp_dims or dims * 4
        self.self_attention = MultiHeadAttention(dims, num_heads)
        self.cross_attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.ln3 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def __call__(self, x: fx.array, memory: fx.array, x_mask, memory_mask) -> fx.array:
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.self_attention(y, y, y, x_mask))
            y = self.ln2(x)
            x = x + self.dropout2(self.cross_attention(y, memory, memory, memory_mask))
            y = self.linear1(self.ln3(x))
            y = self.linear2(self.dropout3(self.activation(y)))
            return x + y
        x = self.ln1(x + self.dropout1(self.self_attention(x, x, x, x_mask)))
        x = self.ln2(x + self.dropout2(self.cross_attention(x, memory, memory, memory_mask)))
        y = self.linear2(self.dropout3(self.activation(self.linear1(x))))
        return self.ln3(x + y)


class TransformerDecoder(Module):
    """``num_layers`` :class:`TransformerDecoderLayer` blocks and a final
    :class:`LayerNorm`; arguments as :class:`TransformerEncoder`.

    Args:
        num_layers (int): Number of layers.
        dims (int): Feature size.
        num_heads (int): Number of attention heads.
        mlp_dims (int, optional): Hidden size of the MLP; ``4 * dims`` when None.
        dropout (float, optional): Dropout probability.
        activation (callable, optional): Activation of the MLP.
        norm_first (bool, optional): Normalize before attention and MLP, not after.
        checkpoint (bool, optional): Recompute each layer's activations in the backward pass instead of storing them.
    """

    def __init__(
        self,
        num_layers: int,
        dims: int,
        num_heads: int,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation=relu,
        norm_first: bool = True,
        checkpoint: bool = False,
    ):
        super().__init__()
        self.layers = [
            TransformerDecoderLayer(dims, num_heads, mlp_dims, dropout, activation, norm_first)
            for _ in range(num_layers)
        ]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def __call__(self, x: fx.array, memory: fx.array, x_mask, memory_mask) -> fx.array:
        for layer in self.layers:
            layer = checkpoint(layer) if self.checkpoint else layer
            x = layer(x, memory, x_mask, memory_mask)
        return self.ln(x)


class Transformer(Module):
    """The encoder-decoder Transformer (`Attention Is All You Need
    <https://arxiv.org/abs/1706.03762>`_): ``decoder(tgt,
    encoder(src, src_mask), tgt_mask, memory_mask)``.

    Args:
        dims: the model dimensions. Default ``512``.
        num_heads: the number of attention heads. Default ``8``.
        num_encoder_layers: encoder blocks. Default ``6``.
        num_decoder_layers: decoder blocks. Default ``6``.
        mlp_dims: the MLP hidden size. Default ``4 * dims``.
        dropout: the dropout probability. Default ``0.0``.
        activation: the MLP activation. Default :func:`relu`.
        custom_encoder: a module used instead of the encoder.
        custom_decoder: a module used instead of the decoder.
        norm_first: normalize before each block. Default ``True``.
        checkpoint: recompute block intermediates in the backward pass.
            Default ``False``.
    """

    def __init__(
        self,
        dims: int = 512,
        num_heads: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation: Callable[[Any], Any] = relu,
        custom_encoder: Optional[Any] = None,
        custom_decoder: Optional[Any] = None,
        norm_first: bool = True,
        checkpoint: bool = False,
    ):
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                num_encoder_layers, dims, num_heads, mlp_dims, dropout, activation, norm_first, checkpoint
            )
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                num_decoder_layers, dims, num_heads, mlp_dims, dropout, activation, norm_first, checkpoint
            )

    def __call__(self, src: fx.array, tgt: fx.array, src_mask, tgt_mask, memory_mask) -> fx.array:
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)

