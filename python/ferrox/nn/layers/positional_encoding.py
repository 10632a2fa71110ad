"""Positional encodings: ``RoPE``, ``SinusoidalPositionalEncoding`` and
``ALiBi``."""

import math
from typing import Optional, Union

import ferrox as fx
from ferrox.nn.layers.base import Module


class RoPE(Module):
    """Rotary positional encoding (`RoFormer <https://arxiv.org/abs/2104.09864>`_).

    The input has shape ``[B, ..., L, D]`` (at least 3 dimensions); the
    position of a row is its index along axis -2 plus ``offset``.
    Features ``i`` and ``i + dims/2`` are rotated together, or features
    ``2i`` and ``2i + 1`` with ``traditional=True``; features past ``dims``
    are left unchanged.

    Args:
        dims: how many features are rotated (even).
        traditional: rotate consecutive pairs. Default ``False``.
        base: the base of the angular frequencies. Default ``10000``.
        scale: the scale of the positions. Default ``1.0``.
    """

    def __init__(self, dims: int, traditional: bool = False, base: float = 10000, scale: float = 1.0):
        super().__init__()
        self.dims = dims
        self.traditional = traditional
        self.base = base
        self.scale = scale

    def _extra_repr(self) -> str:
        return f"{self.dims}, traditional={self.traditional}"

    def __call__(self, x: fx.array, offset: Union[int, fx.array] = 0) -> fx.array:
        return fx.fast.rope(x, self.dims, traditional=self.traditional, base=self.base, scale=self.scale, offset=offset)


class SinusoidalPositionalEncoding(Module):
    r"""Sinusoidal positional encoding (`Attention Is All You Need
    <https://arxiv.org/abs/1706.03762>`_): maps each value ``p`` of the input
    to ``scale * [sin(p * f); cos(p * f)]`` for ``dims/2`` frequencies ``f``
    spaced geometrically from ``max_freq`` down to ``min_freq``.

    Args:
        dims: the size of each embedding (positive and even).
        min_freq: the smallest frequency. Default ``0.0001``.
        max_freq: the largest frequency. Default ``1``.
        scale: the multiplier of the embeddings. Default ``sqrt(2/dims)``.
        cos_first: embed as ``[cos; sin]`` instead. Default ``False``.
        full_turns: multiply the frequencies by :math:`2\pi`. Default ``False``.
    """

    def __init__(
        self,
        dims: int,
        min_freq: float = 0.0001,
        max_freq: float = 1,
        scale: Optional[float] = None,
        cos_first: bool = False,
        full_turns: bool = False,
    ):
        super().__init__()
        if dims <= 0 or dims % 2 != 0:
            raise ValueError(f"[SinusoidalPositionalEncoding] dims must be positive and even but got {dims}.")
        if dims == 2:  # one frequency: max_freq
            one_zero = fx.array([1.0])
        else:
            one_zero = 1 - fx.arange(0, dims // 2) / (dims // 2 - 1)
        min_freq = math.log(min_freq)
        max_freq = math.log(max_freq)
        # The underscore keeps the frequencies out of the parameters.
        self._sigmas = fx.exp(one_zero * (max_freq - min_freq) + min_freq)
        if full_turns:
            self._sigmas = self._sigmas * (2 * math.pi)
        self.scale = scale if scale is not None else (2 / dims) ** 0.5
        self.cos_first = cos_first

    def __call__(self, x: fx.array) -> fx.array:
        y = x[..., None] * self._sigmas
        cosy, siny = fx.cos(y), fx.sin(y)
        y = fx.concatenate([cosy, siny] if self.cos_first else [siny, cosy], axis=-1)
        if self.scale != 1:
            y = y * self.scale
        return y


class ALiBi(Module):
    """Attention with linear biases (`ALiBi <https://arxiv.org/abs/2108.12409>`_):
    adds ``-slope_h * |i - j|`` to the attention score of query ``i`` and key
    ``j`` in head ``h``, with geometric slopes per head."""

    @staticmethod
    def create_alibi_matrix(
        q_sequence_length: int,
        k_sequence_length: int,
        num_heads: int,
        offset: int,
        dtype: fx.Dtype = fx.float32,
    ) -> fx.array:
        """The biases, shape ``[1, num_heads, q_sequence_length - offset,
        k_sequence_length]``, for queries at positions ``offset ..
        q_sequence_length - 1``.

        Args:
            q_sequence_length (int): Number of queries.
            k_sequence_length (int): Number of keys.
            num_heads (int): Number of heads.
            offset (int): Position of the first query.
            dtype (Dtype, optional): Dtype of the result.

        Returns:
            array: The bias, shape ``(1, num_heads, q_sequence_length, k_sequence_length)``.
        """
        x1 = fx.arange(offset, q_sequence_length)
        x2 = fx.arange(0, k_sequence_length)
        distance = -fx.abs(fx.expand_dims(x1[:, None] - x2[None, :], axis=(0, 1)))
        slope = ALiBi.create_alibi_slope(num_heads=num_heads, dtype=dtype)
        return (distance * slope).astype(dtype)

    @staticmethod
    def create_alibi_slope(num_heads: int, dtype: fx.Dtype) -> fx.array:
        """The slope of each head, shape ``[num_heads, 1, 1]``: ``2**(-8i/n)``
        for ``n`` a power of two, interleaved from the next power otherwise.

        Args:
            num_heads (int): Number of heads.
            dtype (Dtype): Dtype of the result.

        Returns:
            array: One slope per head, shape ``(num_heads, 1, 1)``.
        """

        def slopes(n: int):
            if math.log2(n).is_integer():
                start = 2 ** (-(2 ** -(math.log2(n) - 3)))
                return [start * start**i for i in range(n)]
            power = 2 ** math.floor(math.log2(n))
            return slopes(power) + slopes(2 * power)[0::2][: n - power]

        return fx.expand_dims(fx.array(slopes(num_heads), dtype=dtype), axis=(-1, -2))

    def __call__(self, attention_scores: fx.array, offset: int = 0, mask: Optional[fx.array] = None) -> fx.array:
        """``attention_scores`` (shape ``[B, heads, L_q, L_k]``) plus the
        biases (and ``mask`` when given), queries starting at ``offset``."""
        alibi = ALiBi.create_alibi_matrix(
            q_sequence_length=attention_scores.shape[-2] + offset,
            k_sequence_length=attention_scores.shape[-1],
            num_heads=attention_scores.shape[1],
            offset=offset,
            dtype=attention_scores.dtype,
        )
        if mask is not None:
            alibi = alibi + mask
        return attention_scores + alibi
