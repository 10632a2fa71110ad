"""``Embedding``: a lookup table from integer ids to vectors."""

import math

import ferrox as fx
from ferrox.nn.layers.base import Module


class Embedding(Module):
    r"""Maps each integer id to a ``dims``-dimensional vector: row ``id`` of
    ``weight`` (shape ``[num_embeddings, dims]``, initialized from
    :math:`\mathcal{N}(0, 1/\text{dims})`).

    Args:
        num_embeddings: how many ids there are (the vocabulary size).
        dims: the size of each vector.
    """

    def __init__(self, num_embeddings: int, dims: int):
        super().__init__()
        scale = math.sqrt(1 / dims)
        self.weight = fx.random.normal(shape=(num_embeddings, dims), scale=scale)

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, {self.weight.shape[1]}"

    def __call__(self, x: fx.array) -> fx.array:
        return self.weight[x]

    def as_linear(self, x: fx.array) -> fx.array:
        """``x @ weight.T``: the embedding used as an output projection (for
        tied input and output embeddings).

        Args:
            x (array): Input features.

        Returns:
            array: ``x`` times the transposed embedding matrix (tied output projection).
        """
        return x @ self.weight.T
