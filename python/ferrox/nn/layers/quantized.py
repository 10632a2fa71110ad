"""Quantized layers (MLX's ``mlx.nn.layers.quantized``): ``QuantizedLinear``,
``QuantizedEmbedding`` and ``QQLinear``, and :func:`quantize`, which swaps a
model's layers for them in place.

The parameters keep MLX's names and shapes (``weight`` packed into uint32,
``scales``, and ``biases`` in the affine mode), so checkpoints of models MLX
quantized load into a model quantized the same way."""

import math
from typing import Callable, Optional, Union

import ferrox as fx
from ferrox.nn.layers.base import Module
from ferrox.utils import tree_map_with_path

# Each mode's default (group_size, bits), as MLX's.
_MODE_DEFAULTS = {"affine": (64, 4), "mxfp4": (32, 4), "nvfp4": (16, 4), "mxfp8": (32, 8)}


def _defaults_for_mode(mode: str, group_size: Optional[int], bits: Optional[int]):
    """``(group_size, bits)`` with ``mode``'s defaults for those not given."""
    if mode not in _MODE_DEFAULTS:
        raise ValueError(f"Invalid quantization mode '{mode}'. Valid modes are: {', '.join(_MODE_DEFAULTS)}.")
    default_group_size, default_bits = _MODE_DEFAULTS[mode]
    return group_size or default_group_size, bits or default_bits


def _quantized(weight: fx.array, group_size: int, bits: int, mode: str):
    """``(weight, scales, biases)`` of ``weight`` quantized; ``biases`` is
    ``None`` outside the affine mode."""
    weight, scales, *biases = fx.quantize(weight, group_size, bits, mode=mode)
    return weight, scales, (biases[0] if biases else None)


def _quantized_product(layer: Module, x: fx.array) -> fx.array:
    """``x`` times the transpose of ``layer``'s quantized ``weight`` (with
    its ``scales``, ``biases``, ``group_size``, ``bits`` and ``mode``): the
    product of every layer holding a quantized matrix."""
    return fx.quantized_matmul(
        x,
        layer["weight"],
        scales=layer["scales"],
        biases=layer.get("biases"),
        transpose=True,
        group_size=layer.group_size,
        bits=layer.bits,
        mode=layer.mode,
    )


def quantize(
    model: Module,
    group_size: Optional[int] = None,
    bits: Optional[int] = None,
    *,
    mode: str = "affine",
    quantize_input: bool = False,
    class_predicate: Optional[Callable[[str, Module], Union[bool, dict]]] = None,
) -> None:
    """Replaces the leaf modules of ``model`` that ``class_predicate`` picks
    with their quantized versions (their ``to_quantized()``), in place.

    Args:
        model (Module): The model whose leaf modules may be quantized.
        group_size (int, optional): The quantization group size (see
            :func:`ferrox.quantize`); ``None`` takes the mode's default.
        bits (int, optional): The bits per weight; ``None`` takes the
            mode's default.
        mode (str): ``"affine"``, ``"mxfp4"``, ``"mxfp8"`` or ``"nvfp4"``.
            Default: ``"affine"``.
        quantize_input (bool): Quantize the activations too (``QQLinear``;
            ``"nvfp4"`` and ``"mxfp8"`` with ``Linear`` layers). Default: ``False``.
        class_predicate (callable, optional): Called with each leaf module's
            path and the module; returns ``True`` to quantize it with the
            arguments above, a dict of ``to_quantized`` arguments, or
            ``False``. By default every layer with a ``to_quantized`` method
            is quantized.
    """
    class_predicate = class_predicate or (lambda _, m: hasattr(m, "to_quantized"))

    def maybe_quantize(path, m):
        choice = class_predicate(path, m)
        if not choice:
            return m
        if not hasattr(m, "to_quantized"):
            raise ValueError(f"Unable to quantize model of type {type(m)}")
        if isinstance(choice, bool):
            kwargs = {"group_size": group_size, "bits": bits, "mode": mode}
            if quantize_input:
                kwargs["quantize_input"] = True
            return m.to_quantized(**kwargs)
        if isinstance(choice, dict):
            if "quantize_input" in choice and not choice["quantize_input"]:
                choice = {k: v for k, v in choice.items() if k != "quantize_input"}
            return m.to_quantized(**choice)
        raise ValueError("``class_predicate`` must return a bool or a dict of parameters to pass to ``to_quantized``")

    leaves = tree_map_with_path(maybe_quantize, model.leaf_modules(), is_leaf=Module.is_module)
    model.update_modules(leaves)


class QuantizedEmbedding(Module):
    """:class:`Embedding` with a quantized (frozen) weight matrix.

    Args:
        num_embeddings (int): How many ids there are (the vocabulary size).
        dims (int): The size of each vector.
        group_size (int, optional): The quantization group size; ``None``
            takes the mode's default.
        bits (int, optional): The bits per weight; ``None`` takes the mode's default.
        mode (str): The quantization mode (see :func:`ferrox.quantize`).
            Default: ``"affine"``.
    """

    def __init__(
        self,
        num_embeddings: int,
        dims: int,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "affine",
    ):
        super().__init__()
        self.group_size, self.bits = _defaults_for_mode(mode, group_size, bits)
        self.mode = mode
        weight = fx.random.normal(shape=(num_embeddings, dims), scale=math.sqrt(1 / dims))
        self.weight, self.scales, self.biases = _quantized(weight, group_size, bits, mode)
        self.num_embeddings = num_embeddings
        self.dims = dims
        self.freeze()

    def __call__(self, x: fx.array) -> fx.array:
        biases = self.get("biases")
        return fx.dequantize(
            self["weight"][x],
            scales=self["scales"][x],
            biases=biases[x] if biases is not None else None,
            group_size=self.group_size,
            bits=self.bits,
            mode=self.mode,
        )

    def as_linear(self, x: fx.array) -> fx.array:
        """``x`` times the transposed (quantized) embedding matrix: the
        embedding used as an output projection (tied embeddings).

        Args:
            x (array): Input features, last axis ``dims``.

        Returns:
            array: The scores for every id, last axis ``num_embeddings``.
        """
        return _quantized_product(self, x)

    def _extra_repr(self) -> str:
        return (
            f"{self.num_embeddings}, {self.dims}, group_size={self.group_size}, bits={self.bits}, mode={self.mode}"
        )

    @classmethod
    def from_embedding(
        cls, embedding_layer: Module, group_size: Optional[int] = None, bits: Optional[int] = None, mode: str = "affine"
    ) -> "QuantizedEmbedding":
        """A :class:`QuantizedEmbedding` holding ``embedding_layer``'s weight, quantized.

        Args:
            embedding_layer (Embedding): The layer to quantize.
            group_size (int, optional): The quantization group size.
            bits (int, optional): The bits per weight.
            mode (str): The quantization mode. Default: ``"affine"``.

        Returns:
            QuantizedEmbedding: The quantized layer.
        """
        num_embeddings, dims = embedding_layer.weight.shape
        ql = cls(num_embeddings, dims, group_size, bits, mode=mode)
        ql.weight, ql.scales, ql.biases = _quantized(embedding_layer.weight, group_size, bits, mode)
        return ql


class QuantizedLinear(Module):
    r""":class:`Linear` with a quantized weight matrix: :math:`y = x \hat W^\top + b`.
    Its parameters are frozen (left out of gradients).

    Args:
        input_dims (int): The size of the input features.
        output_dims (int): The size of the output features.
        bias (bool): Whether to add a bias. Default: ``True``.
        group_size (int, optional): The quantization group size; ``None``
            takes the mode's default.
        bits (int, optional): The bits per weight; ``None`` takes the mode's default.
        mode (str): The quantization mode (see :func:`ferrox.quantize`).
            Default: ``"affine"``.
    """

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        bias: bool = True,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "affine",
    ):
        super().__init__()
        self.group_size, self.bits = _defaults_for_mode(mode, group_size, bits)
        self.mode = mode
        scale = math.sqrt(1 / input_dims)
        weight = fx.random.uniform(low=-scale, high=scale, shape=(output_dims, input_dims))
        self.weight, self.scales, self.biases = _quantized(weight, group_size, bits, mode)
        if bias:
            self.bias = fx.zeros((output_dims,))
        self.freeze()

    def _extra_repr(self) -> str:
        out_dims, packed = self.weight.shape
        return (
            f"input_dims={packed * 32 // self.bits}, output_dims={out_dims}, bias={'bias' in self}, "
            f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}"
        )

    def __call__(self, x: fx.array) -> fx.array:
        y = _quantized_product(self, x)
        if "bias" in self:
            y = y + self["bias"]
        return y

    @classmethod
    def from_linear(
        cls, linear_layer: Module, group_size: Optional[int] = None, bits: Optional[int] = None, mode: str = "affine"
    ) -> "QuantizedLinear":
        """A :class:`QuantizedLinear` holding ``linear_layer``'s weight,
        quantized, and its bias.

        Args:
            linear_layer (Linear): The layer to quantize.
            group_size (int, optional): The quantization group size.
            bits (int, optional): The bits per weight.
            mode (str): The quantization mode. Default: ``"affine"``.

        Returns:
            QuantizedLinear: The quantized layer.
        """
        output_dims, input_dims = linear_layer.weight.shape
        ql = cls(input_dims, output_dims, False, group_size, bits, mode=mode)
        ql.weight, ql.scales, ql.biases = _quantized(linear_layer.weight, group_size, bits, mode)
        if "bias" in linear_layer:
            ql.bias = linear_layer.bias
        return ql


class QQLinear(Module):
    r"""A linear layer (no bias) that quantizes its input as well as its
    weight (:func:`ferrox.qqmm`). In training mode the weight is kept in
    full precision and quantized on the fly, so it receives gradients; in
    eval mode it is stored quantized with its ``scales``. ``train()`` and
    ``eval()`` switch between the two.

    Args:
        input_dims (int): The size of the input features.
        output_dims (int): The size of the output features.
        group_size (int, optional): The quantization group size; ``None``
            takes the mode's default.
        bits (int, optional): The bits per weight; ``None`` takes the mode's default.
        mode (str): ``"nvfp4"`` or ``"mxfp8"``. Default: ``"nvfp4"``.
    """

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "nvfp4",
    ):
        super().__init__()
        self.group_size, self.bits = _defaults_for_mode(mode, group_size, bits)
        self.mode = mode
        scale = math.sqrt(1 / input_dims)
        self.weight = fx.random.uniform(low=-scale, high=scale, shape=(output_dims, input_dims))
        self._quantized = False

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        if self.weight.dtype == fx.uint32:
            in_dims = in_dims * 32 // self.bits
        return (
            f"input_dims={in_dims}, output_dims={out_dims}, "
            f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}"
        )

    def quantize(self) -> None:
        """Stores the weight quantized, with its ``scales`` (eval mode)."""
        if not self._quantized:
            self.weight, self.scales = fx.quantize(self.weight, self.group_size, self.bits, mode=self.mode)
            self._quantized = True

    def dequantize(self) -> None:
        """Stores the weight in full precision again (training mode)."""
        if self._quantized:
            self.weight = fx.dequantize(
                self.weight, scales=self.scales, group_size=self.group_size, bits=self.bits, mode=self.mode
            )
            del self.scales
            self._quantized = False

    def _set_training_mode(self, mode: bool) -> None:
        super()._set_training_mode(mode)
        if self._training:
            self.dequantize()
        else:
            self.quantize()

    def __call__(self, x: fx.array) -> fx.array:
        return fx.qqmm(
            x, self["weight"], scales=self.get("scales"), group_size=self.group_size, bits=self.bits, mode=self.mode
        )

    @classmethod
    def from_linear(
        cls, linear_layer: Module, group_size: Optional[int] = None, bits: Optional[int] = None, mode: str = "nvfp4"
    ) -> "QQLinear":
        """A :class:`QQLinear` holding ``linear_layer``'s weight (in
        ``linear_layer``'s training mode).

        Args:
            linear_layer (Linear): The layer to convert; it must have no bias.
            group_size (int, optional): The quantization group size.
            bits (int, optional): The bits per weight.
            mode (str): ``"nvfp4"`` or ``"mxfp8"``. Default: ``"nvfp4"``.

        Returns:
            QQLinear: The converted layer.
        """
        output_dims, input_dims = linear_layer.weight.shape
        if linear_layer.get("bias") is not None:
            raise NotImplementedError("QQLinear does not support bias yet.")
        ql = cls(input_dims, output_dims, group_size, bits, mode=mode)
        ql.weight = linear_layer.weight
        ql.train(linear_layer.training)
        return ql
