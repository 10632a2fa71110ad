"""Neural networks with MLX's ``mlx.nn`` API: :class:`Module` and the
layers, the activation functions (``nn.gelu`` ...), ``nn.losses``,
``nn.init``, and ``value_and_grad`` / ``average_gradients`` over a module's
parameters. The math of activations and losses runs in Rust
(``ferrox._core.nn``)."""

from ferrox.nn import init, losses
from ferrox.nn.functions import *  # noqa: F401,F403  (the activation functions, nn.gelu ...)
from ferrox.nn.layers import *  # noqa: F401,F403

# The layer modules under the names MLX's ``mlx.nn`` has them (``nn.activations.sigmoid``).
from ferrox.nn.layers import (  # noqa: F401
    activations,
    base,
    containers,
    convolution,
    convolution_transpose,
    distributed,
    dropout,
    embedding,
    linear,
    normalization,
    pooling,
    positional_encoding,
    quantized,
    recurrent,
    transformer,
    upsample,
)
from ferrox.nn.utils import average_gradients, value_and_grad
