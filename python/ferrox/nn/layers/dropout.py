"""``Dropout``, ``Dropout2d`` and ``Dropout3d``: zero random elements (or
whole channels) during training."""

import ferrox as fx
from ferrox.nn.layers.base import Module


class Dropout(Module):
    r"""In training mode, zeroes each element with probability ``p`` and
    scales the others by :math:`1/(1-p)`, keeping the expected value; the
    identity in evaluation mode (see :meth:`Module.eval`).

    Args:
        p: the probability of zeroing an element, in ``[0, 1)``. Default ``0.5``.
    """

    def __init__(self, p: float = 0.5):
        super().__init__()
        if p < 0 or p >= 1:
            raise ValueError(f"The dropout probability {p} is not in [0, 1)")
        self._p_1 = 1 - p

    def _extra_repr(self) -> str:
        return f"p={1 - self._p_1}"

    def __call__(self, x: fx.array) -> fx.array:
        if self._p_1 == 1 or not self.training:
            return x
        mask = fx.random.bernoulli(self._p_1, x.shape)
        return (mask * x) * (1 / self._p_1)


class _ChannelDropout(Module):
    """Zeroes whole channels of channels-last inputs of ``_ndims`` (or one
    more, batched) dimensions in training, scaling the others by
    :math:`1/(1-p)`."""

    _ndims: int

    def __init__(self, p: float = 0.5):
        super().__init__()
        if p < 0 or p >= 1:
            raise ValueError(f"The dropout probability {p} is not in [0, 1)")
        self._p_1 = 1 - p

    def _extra_repr(self) -> str:
        return f"p={1 - self._p_1}"

    def __call__(self, x: fx.array) -> fx.array:
        n = self._ndims
        if x.ndim not in (n, n + 1):
            raise ValueError(
                f"[{type(self).__name__}] Received input with {x.ndim} dimensions. Expected {n} or {n + 1} dimensions."
            )
        if self._p_1 == 1 or not self.training:
            return x
        # One draw per (sample and) channel: the spatial axes of the mask are 1.
        mask_shape = list(x.shape)
        mask_shape[-n:-1] = [1] * (n - 1)
        mask = fx.random.bernoulli(p=self._p_1, shape=mask_shape)
        return (mask * x) * (1 / self._p_1)


class Dropout2d(_ChannelDropout):
    r"""Channel-wise dropout of ``[N, H, W, C]`` or ``[H, W, C]`` inputs: in
    training mode each channel (of each sample) is zeroed with probability
    ``p`` and the others scaled by :math:`1/(1-p)`; the identity in
    evaluation mode. Suits early convolution layers, whose neighbouring
    pixels are correlated.

    Args:
        p: the probability of zeroing a channel, in ``[0, 1)``. Default ``0.5``.
    """

    _ndims = 3


class Dropout3d(_ChannelDropout):
    r"""Channel-wise dropout of ``[N, D, H, W, C]`` or ``[D, H, W, C]``
    inputs: in training mode each channel (of each sample) is zeroed with
    probability ``p`` and the others scaled by :math:`1/(1-p)`; the identity
    in evaluation mode.

    Args:
        p: the probability of zeroing a channel, in ``[0, 1)``. Default ``0.5``.
    """

    _ndims = 4
