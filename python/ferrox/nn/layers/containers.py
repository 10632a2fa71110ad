"""``Sequential``: a module that calls its layers in order."""

from ferrox.nn.layers.base import Module


class Sequential(Module):
    """Calls the given callables in order, each on the previous one's
    output. Layers with parameters should be :class:`Module` instances
    (plain functions are called but hold nothing).

    Args:
        modules: the callables, in order; kept in ``self.layers``.
    """

    def __init__(self, *modules):
        super().__init__()
        self.layers = list(modules)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
