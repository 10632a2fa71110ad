"""Neural networks with MLX's ``mlx.nn`` API: :class:`Module` and the
layers, the activation functions (``nn.gelu`` ...), ``nn.losses``,
``nn.init``, and ``value_and_grad`` / ``average_gradients`` over a module's
parameters. The math of activations and losses runs in Rust
(``ferrox._core.nn``)."""

from ferrox.nn import init, losses
from ferrox.nn.functions import (
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
from ferrox.nn.layers import *  # noqa: F401,F403
from ferrox.nn.utils import average_gradients, value_and_grad
