"""Activation functions of ``ferrox.nn`` (MLX's functional activations).

Each is implemented once, in Rust (the ``ferrox-nn`` crate, reached through
``ferrox._core.nn``), as a composition of ferrox ops: results are lazy
arrays, and ``ferrox.grad`` / ``vmap`` / ``compile`` see through them.
Parameters, defaults and result dtypes are MLX's (``relu`` keeps integer
dtypes, ``step`` returns int32, float constants keep half-precision inputs
in their dtype).
"""

from ferrox._core.nn import (
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

__all__ = [
    "celu",
    "elu",
    "gelu",
    "gelu_approx",
    "gelu_fast_approx",
    "glu",
    "hard_shrink",
    "hard_tanh",
    "hardswish",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "mish",
    "prelu",
    "relu",
    "relu2",
    "relu6",
    "selu",
    "sigmoid",
    "silu",
    "softmax",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "step",
    "tanh",
]
