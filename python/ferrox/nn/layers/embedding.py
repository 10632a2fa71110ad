"""``Embedding``: a lookup table from integer ids to vectors."""

import math
from typing import Optional

import ferrox as fx
from ferrox.nn.layers.base import Module
from ferrox.nn.layers.quantized import QuantizedEmbedding


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

    def to_quantized(
        self,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "affine",
        quantize_input: bool = False,
    ) -> "QuantizedEmbedding":
        """A :class:`QuantizedEmbedding` approximating this layer.

        Args:
            group_size (int, optional): The quantization group size; ``None``
                takes the mode's default.
            bits (int, optional): The bits per weight; ``None`` takes the mode's default.
            mode (str): The quantization mode (see :func:`ferrox.quantize`).
                Default: ``"affine"``.
            quantize_input (bool): Not supported (raises ``ValueError``). Default: ``False``.

        Returns:
            QuantizedEmbedding: The quantized layer.
        """
        if quantize_input:
            raise ValueError("Quantized input is not supported.")
        return QuantizedEmbedding.from_embedding(self, group_size, bits, mode)
