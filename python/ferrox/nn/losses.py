"""Loss functions of ``ferrox.nn`` (MLX's ``mlx.nn.losses``).

Each is implemented once, in Rust (the ``ferrox-nn`` crate, reached through
``ferrox._core.nn``), with MLX's parameters and defaults. ``reduction`` is
one of ``"none"``, ``"mean"`` and ``"sum"``; an invalid name, mismatched
shapes or an out-of-range option raises ``ValueError`` naming the loss.
"""

from typing import Literal

from ferrox._core.nn import (
    binary_cross_entropy,
    cosine_similarity_loss,
    cross_entropy,
    gaussian_nll_loss,
    hinge_loss,
    huber_loss,
    kl_div_loss,
    l1_loss,
    log_cosh_loss,
    margin_ranking_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
    triplet_loss,
)

#: The reductions a loss accepts.
Reduction = Literal["none", "mean", "sum"]

__all__ = [
    "binary_cross_entropy",
    "cosine_similarity_loss",
    "cross_entropy",
    "gaussian_nll_loss",
    "hinge_loss",
    "huber_loss",
    "kl_div_loss",
    "l1_loss",
    "log_cosh_loss",
    "margin_ranking_loss",
    "mse_loss",
    "nll_loss",
    "smooth_l1_loss",
    "triplet_loss",
]
