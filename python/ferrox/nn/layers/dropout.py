"""``Dropout``: zeroes random elements during training."""

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
