"""The layers of :mod:`ferrox.nn`, one family per module (as ``mlx.nn.layers``)."""

from ferrox.nn.layers.activations import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    HardShrink,
    Hardswish,
    HardTanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU2,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Step,
    Tanh,
)
from ferrox.nn.layers.base import Module
from ferrox.nn.layers.containers import Sequential
from ferrox.nn.layers.dropout import Dropout
from ferrox.nn.layers.embedding import Embedding
from ferrox.nn.layers.linear import Bilinear, Identity, Linear
from ferrox.nn.layers.normalization import LayerNorm, RMSNorm
from ferrox.nn.layers.positional_encoding import ALiBi, RoPE, SinusoidalPositionalEncoding
from ferrox.nn.layers.recurrent import GRU, LSTM, RNN
from ferrox.nn.layers.transformer import (
    MultiHeadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "ALiBi", "Bilinear", "CELU", "Dropout", "ELU", "Embedding", "GELU", "GLU", "GRU", "HardShrink",
    "HardTanh", "Hardswish", "Identity", "LSTM", "LayerNorm", "LeakyReLU", "Linear", "LogSigmoid",
    "LogSoftmax", "Mish", "Module", "MultiHeadAttention", "PReLU", "RMSNorm", "RNN", "ReLU", "ReLU2",
    "ReLU6", "RoPE", "SELU", "Sequential", "SiLU", "Sigmoid", "SinusoidalPositionalEncoding", "Softmax",
    "Softmin", "Softplus", "Softshrink", "Softsign", "Step", "Tanh", "Transformer", "TransformerDecoder",
    "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
]  # fmt: skip
