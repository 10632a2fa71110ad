"""Activation layers: modules calling the functions of
:mod:`ferrox.nn.functions` (where each formula is documented)."""

from typing import Callable

import ferrox as fx
from ferrox.nn import functions as F
from ferrox.nn.functions import (  # noqa: F401  (importable from here, as from mlx.nn.layers.activations)
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


def _calls(fn: Callable):
    """Class decorator: the layer's ``__call__(x)`` is ``fn(x)``."""

    def decorate(cls):
        cls.__call__ = lambda self, x: fn(x)
        return cls

    return decorate


@_calls(F.sigmoid)
class Sigmoid(Module):
    """Applies :func:`ferrox.nn.sigmoid` element-wise."""


@_calls(F.mish)
class Mish(Module):
    """Applies :func:`ferrox.nn.mish` element-wise."""


@_calls(F.relu)
class ReLU(Module):
    """Applies :func:`ferrox.nn.relu` element-wise."""


@_calls(F.relu2)
class ReLU2(Module):
    """Applies :func:`ferrox.nn.relu2` element-wise."""


@_calls(F.relu6)
class ReLU6(Module):
    """Applies :func:`ferrox.nn.relu6` element-wise."""


@_calls(F.softmax)
class Softmax(Module):
    """Applies :func:`ferrox.nn.softmax` over the last axis."""


@_calls(F.softplus)
class Softplus(Module):
    """Applies :func:`ferrox.nn.softplus` element-wise."""


@_calls(F.softsign)
class Softsign(Module):
    """Applies :func:`ferrox.nn.softsign` element-wise."""


@_calls(F.silu)
class SiLU(Module):
    """Applies :func:`ferrox.nn.silu` (Swish) element-wise."""


@_calls(F.log_softmax)
class LogSoftmax(Module):
    """Applies :func:`ferrox.nn.log_softmax` over the last axis."""


@_calls(F.log_sigmoid)
class LogSigmoid(Module):
    """Applies :func:`ferrox.nn.log_sigmoid` element-wise."""


@_calls(F.tanh)
class Tanh(Module):
    """Applies :func:`ferrox.nn.tanh` element-wise."""


@_calls(F.hardswish)
class Hardswish(Module):
    """Applies :func:`ferrox.nn.hardswish` element-wise."""


@_calls(F.selu)
class SELU(Module):
    """Applies :func:`ferrox.nn.selu` element-wise."""


@_calls(F.hard_tanh)
class HardTanh(Module):
    """Applies :func:`ferrox.nn.hard_tanh` (clip to ``[-1, 1]``) element-wise."""


@_calls(F.softmin)
class Softmin(Module):
    """Applies :func:`ferrox.nn.softmin` over the last axis."""


class GLU(Module):
    """Applies :func:`ferrox.nn.glu`: splits ``axis`` in halves ``a`` and
    ``b`` and returns ``a * sigmoid(b)``.

    Args:
        axis: the axis to split. Default ``-1``.
    """

    def __init__(self, axis: int = -1):
        super().__init__()
        self.axis = axis

    def __call__(self, x: fx.array) -> fx.array:
        return F.glu(x, self.axis)


class LeakyReLU(Module):
    """Applies :func:`ferrox.nn.leaky_relu`: ``maximum(negative_slope * x, x)``.

    Args:
        negative_slope: the slope for negative inputs. Default ``1e-2``.
    """

    def __init__(self, negative_slope: float = 1e-2):
        super().__init__()
        self._negative_slope = negative_slope

    def __call__(self, x: fx.array) -> fx.array:
        return F.leaky_relu(x, self._negative_slope)


class ELU(Module):
    """Applies :func:`ferrox.nn.elu`.

    Args:
        alpha: the scale of the negative part. Default ``1.0``.
    """

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self._alpha = alpha

    def __call__(self, x: fx.array) -> fx.array:
        return F.elu(x, self._alpha)


class CELU(Module):
    """Applies :func:`ferrox.nn.celu`.

    Args:
        alpha: the scale of the negative part. Default ``1.0``.
    """

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self._alpha = alpha

    def __call__(self, x: fx.array) -> fx.array:
        return F.celu(x, self._alpha)


class Softshrink(Module):
    """Applies :func:`ferrox.nn.softshrink`.

    Args:
        lambd: the threshold. Default ``0.5``.
    """

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def __call__(self, x: fx.array) -> fx.array:
        return F.softshrink(x, self.lambd)


class HardShrink(Module):
    """Applies :func:`ferrox.nn.hard_shrink`.

    Args:
        lambd: the threshold. Default ``0.5``.
    """

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def __call__(self, x: fx.array) -> fx.array:
        return F.hard_shrink(x, self.lambd)


class Step(Module):
    """Applies :func:`ferrox.nn.step`: 1 where ``x >= threshold``, else 0.

    Args:
        threshold: the threshold. Default ``0.0``.
    """

    def __init__(self, threshold: float = 0.0):
        super().__init__()
        self.threshold = threshold

    def __call__(self, x: fx.array) -> fx.array:
        return F.step(x, self.threshold)


class PReLU(Module):
    """Applies :func:`ferrox.nn.prelu`: ``maximum(0, x) + weight *
    minimum(0, x)`` with a learned ``weight``.

    Args:
        num_parameters: the size of ``weight``. Default ``1``.
        init: the initial value of ``weight``. Default ``0.25``.
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25):
        super().__init__()
        self.weight = fx.full([num_parameters], init)

    def __call__(self, x: fx.array) -> fx.array:
        return F.prelu(x, self.weight)


class GELU(Module):
    """Applies the Gaussian error linear unit: :func:`ferrox.nn.gelu` with
    ``approx="none"``, :func:`ferrox.nn.gelu_approx` with ``"precise"`` (or
    its PyTorch alias ``"tanh"``), :func:`ferrox.nn.gelu_fast_approx` with
    ``"fast"``.

    Args:
        approx: ``"none"``, ``"precise"``, ``"tanh"`` or ``"fast"``. Default ``"none"``.
    """

    def __init__(self, approx: str = "none"):
        super().__init__()
        allowed = ["none", "precise", "tanh", "fast"]
        if approx not in allowed:
            raise ValueError(f"The approximation should be in {allowed} but '{approx}' was given")
        self._approx = approx

    def __call__(self, x: fx.array) -> fx.array:
        if self._approx == "none":
            return F.gelu(x)
        if self._approx in ("precise", "tanh"):
            return F.gelu_approx(x)
        return F.gelu_fast_approx(x)
