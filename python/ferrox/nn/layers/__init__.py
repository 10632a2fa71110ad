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
    celu,
    elu,
    gelu,
    gelu_approx,
    gelu_fast_approx,
    glu,
    hard_shrink,
    hard_tanh,
    hardswish,
    leaky_relu,
    log_sigmoid,
    log_softmax,
    mish,
    prelu,
    relu,
    relu2,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    step,
    tanh,
)
from ferrox.nn.layers.base import Module
from ferrox.nn.layers.containers import Sequential
from ferrox.nn.layers.convolution import Conv1d, Conv2d, Conv3d
from ferrox.nn.layers.convolution_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ferrox.nn.layers.distributed import (
    AllToShardedLinear,
    FullyShardedModule,
    QuantizedAllToShardedLinear,
    QuantizedShardedToAllLinear,
    ShardedToAllLinear,
    fully_shard,
)
from ferrox.nn.layers.dropout import Dropout, Dropout2d, Dropout3d
from ferrox.nn.layers.embedding import Embedding
from ferrox.nn.layers.linear import Bilinear, Identity, Linear
from ferrox.nn.layers.normalization import BatchNorm, GroupNorm, InstanceNorm, LayerNorm, RMSNorm
from ferrox.nn.layers.pooling import AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d
from ferrox.nn.layers.positional_encoding import ALiBi, RoPE, SinusoidalPositionalEncoding
from ferrox.nn.layers.quantized import QQLinear, QuantizedEmbedding, QuantizedLinear, quantize
from ferrox.nn.layers.recurrent import GRU, LSTM, RNN
from ferrox.nn.layers.transformer import (
    MultiHeadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from ferrox.nn.layers.upsample import Upsample

__all__ = [
    "ALiBi", "Bilinear", "CELU", "Dropout", "ELU", "Embedding", "GELU", "GLU", "GRU", "HardShrink",
    "HardTanh", "Hardswish", "Identity", "LSTM", "LayerNorm", "LeakyReLU", "Linear", "LogSigmoid",
    "LogSoftmax", "Mish", "Module", "MultiHeadAttention", "PReLU", "RMSNorm", "RNN", "ReLU", "ReLU2",
    "ReLU6", "RoPE", "SELU", "Sequential", "SiLU", "Sigmoid", "SinusoidalPositionalEncoding", "Softmax",
    "Softmin", "Softplus", "Softshrink", "Softsign", "Step", "Tanh", "Transformer", "TransformerDecoder",
    "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
    "AvgPool1d", "AvgPool2d", "AvgPool3d", "BatchNorm", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "Dropout2d", "Dropout3d", "GroupNorm", "InstanceNorm", "MaxPool1d",
    "MaxPool2d", "MaxPool3d", "Upsample",
    "AllToShardedLinear", "FullyShardedModule", "QuantizedAllToShardedLinear", "QuantizedShardedToAllLinear",
    "ShardedToAllLinear", "fully_shard",
    "QQLinear", "QuantizedEmbedding", "QuantizedLinear", "quantize",
]  # fmt: skip
