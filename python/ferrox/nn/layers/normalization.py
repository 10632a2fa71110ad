"""Normalization layers: ``LayerNorm`` and ``RMSNorm``.

Both normalize over the last axis with the arithmetic of MLX's
``fast.layer_norm`` / ``fast.rms_norm``: statistics in float32 for 16-bit
inputs (in the input's precision otherwise), the result cast to the output
dtype before the affine transform."""

from typing import Optional

import ferrox as fx
from ferrox.nn.layers.base import Module


def _check_affine(name: str, what: str, x: fx.array, p: Optional[fx.array]) -> None:
    """A ValueError unless ``p`` (a weight or bias) is 1-D with one entry per
    feature of ``x``."""
    if p is None:
        return
    if p.ndim != 1:
        raise ValueError(f"[{name}] {what} must have 1 dimension but has {p.ndim} dimensions.")
    if p.size != x.shape[-1]:
        raise ValueError(
            f"[{name}] {what} must have the same size as the last dimension of x but has {p.size} elements."
        )


def _normalize_input(name: str, x: fx.array, *affine: Optional[fx.array]):
    """``x`` in its compute dtype (float32 for 16-bit floats) and the output
    dtype (``x``'s promoted with the affine parameters), checked as MLX's
    fast normalizations check them."""
    if x.ndim == 0:
        raise ValueError(f"[{name}] Input must have at least 1 dimension but got input with 0 dimensions.")
    present = [p for p in affine if p is not None]
    out_type = fx.result_type(x, *present) if present else x.dtype
    if not fx.issubdtype(out_type, fx.floating):
        raise ValueError(f"[{name}] Received unsupported type {out_type}.")
    compute = fx.float32 if x.dtype in (fx.float16, fx.bfloat16) or not fx.issubdtype(x.dtype, fx.floating) else x.dtype
    return x.astype(compute), out_type


def _layer_norm(x: fx.array, weight: Optional[fx.array], bias: Optional[fx.array], eps: float) -> fx.array:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis."""
    xc, out_type = _normalize_input("layer_norm", x, weight, bias)
    _check_affine("layer_norm", "weight", x, weight)
    _check_affine("layer_norm", "bias", x, bias)
    xc = xc - fx.mean(xc, axis=-1, keepdims=True)
    var = fx.mean(fx.square(xc), axis=-1, keepdims=True)
    y = (xc * fx.rsqrt(var + eps)).astype(out_type)
    if weight is not None:
        y = y * weight.astype(out_type)
    if bias is not None:
        y = y + bias.astype(out_type)
    return y


def _rms_norm(x: fx.array, weight: Optional[fx.array], eps: float) -> fx.array:
    """``x / sqrt(mean(x**2) + eps) * weight`` over the last axis."""
    xc, out_type = _normalize_input("rms_norm", x, weight)
    _check_affine("rms_norm", "(*weight)", x, weight)
    y = (xc * fx.rsqrt(fx.mean(fx.square(xc), axis=-1, keepdims=True) + eps)).astype(out_type)
    if weight is not None:
        y = y * weight.astype(out_type)
    return y


class LayerNorm(Module):
    r"""Layer normalization over the last axis:
    :math:`y = \frac{x - E[x]}{\sqrt{Var[x] + \epsilon}} \gamma + \beta`,
    with per-feature ``weight`` :math:`\gamma` (ones) and ``bias``
    :math:`\beta` (zeros).

    Args:
        dims: the size of the last axis.
        eps: added to the variance for numerical stability. Default ``1e-5``.
        affine: learn ``weight`` (and ``bias``). Default ``True``.
        bias: with ``affine``, learn ``bias`` too. Default ``True``.
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = True, bias: bool = True):
        super().__init__()
        if eps <= 0.0:
            raise ValueError(f"[LayerNorm] 'eps' must be positive but got {eps}.")
        if affine:
            self.weight = fx.ones((dims,))
            if bias:
                self.bias = fx.zeros((dims,))
        self.eps = eps
        self.dims = dims

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x: fx.array) -> fx.array:
        weight = self["weight"] if "weight" in self else None
        bias = self["bias"] if "bias" in self else None
        return _layer_norm(x, weight, bias, self.eps)


class RMSNorm(Module):
    r"""Root-mean-square normalization over the last axis:
    :math:`y = \frac{x}{\sqrt{E[x^2] + \epsilon}} \gamma`, with per-feature
    ``weight`` :math:`\gamma` (ones).

    Args:
        dims: the size of the last axis.
        eps: added to the mean square for numerical stability. Default ``1e-5``.
    """

    def __init__(self, dims: int, eps: float = 1e-5):
        super().__init__()
        if eps <= 0.0:
            raise ValueError(f"[RMSNorm] 'eps' must be positive but got {eps}.")
        self.weight = fx.ones((dims,))
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"

    def __call__(self, x: fx.array) -> fx.array:
        return _rms_norm(x, self["weight"], self.eps)
