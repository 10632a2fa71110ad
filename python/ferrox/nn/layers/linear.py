"""Affine layers: ``Identity``, ``Linear`` and ``Bilinear``."""

import math
from typing import Any, Optional

import ferrox as fx
from ferrox.nn.layers.base import Module
from ferrox.nn.layers.quantized import QQLinear, QuantizedLinear


class Identity(Module):
    """Returns its input unchanged; accepts and ignores any constructor
    arguments (a placeholder for a layer).

    Args:
        *args: Ignored.
        **kwargs: Ignored.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def __call__(self, x: fx.array) -> fx.array:
        return x


class Linear(Module):
    r"""Applies an affine transformation, :math:`y = x W^\top + b`, with
    ``weight`` :math:`W` of shape ``[output_dims, input_dims]`` and ``bias``
    :math:`b` of shape ``[output_dims]``, both initialized from
    :math:`\mathcal{U}(-k, k)`, :math:`k = 1/\sqrt{\text{input\_dims}}`.

    Args:
        input_dims: the size of the input features.
        output_dims: the size of the output features.
        bias: whether to add a bias. Default ``True``.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True) -> None:
        super().__init__()
        scale = math.sqrt(1.0 / input_dims)
        self.weight = fx.random.uniform(low=-scale, high=scale, shape=(output_dims, input_dims))
        if bias:
            self.bias = fx.random.uniform(low=-scale, high=scale, shape=(output_dims,))

    def _extra_repr(self) -> str:
        return f"input_dims={self.weight.shape[1]}, output_dims={self.weight.shape[0]}, bias={'bias' in self}"

    def __call__(self, x: fx.array) -> fx.array:
        if "bias" in self:
            return fx.addmm(self["bias"], x, self["weight"].T)
        return x @ self["weight"].T

    def to_quantized(
        self,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "affine",
        quantize_input: bool = False,
    ) -> Module:
        """A quantized approximation of this layer: a :class:`QuantizedLinear`
        (weight quantized), or with ``quantize_input`` a :class:`QQLinear`
        (weight and input quantized; ``"nvfp4"`` and ``"mxfp8"`` only).

        Args:
            group_size (int, optional): The quantization group size; ``None``
                takes the mode's default.
            bits (int, optional): The bits per weight; ``None`` takes the mode's default.
            mode (str): The quantization mode (see :func:`ferrox.quantize`).
                Default: ``"affine"``.
            quantize_input (bool): Quantize the input too. Default: ``False``.

        Returns:
            Module: The quantized layer.
        """
        if quantize_input:
            if mode not in ("nvfp4", "mxfp8"):
                raise ValueError(
                    f"Quantized activations are only supported for 'nvfp4' and 'mxfp8' modes, got {mode}."
                )
            return QQLinear.from_linear(self, group_size, bits, mode)
        return QuantizedLinear.from_linear(self, group_size, bits, mode)


class Bilinear(Module):
    r"""Applies a bilinear transformation, :math:`y_i = x_2^\top W_i x_1 +
    b_i`, with ``weight`` of shape ``[output_dims, input2_dims,
    input1_dims]`` and ``bias`` of shape ``[output_dims]``, both initialized
    from :math:`\mathcal{U}(-k, k)`, :math:`k = 1/\sqrt{\text{input1\_dims}}`.

    Args:
        input1_dims: the size of the first input's features.
        input2_dims: the size of the second input's features.
        output_dims: the size of the output features.
        bias: whether to add a bias. Default ``True``.
    """

    def __init__(self, input1_dims: int, input2_dims: int, output_dims: int, bias: bool = True) -> None:
        super().__init__()
        scale = math.sqrt(1.0 / input1_dims)
        self.weight = fx.random.uniform(low=-scale, high=scale, shape=(output_dims, input2_dims, input1_dims))
        if bias:
            self.bias = fx.random.uniform(low=-scale, high=scale, shape=(output_dims,))

    def _extra_repr(self) -> str:
        out, in2, in1 = self.weight.shape
        return f"input1_dims={in1}, input2_dims={in2}, output_dims={out}, bias={'bias' in self}"

    def __call__(self, x1: fx.array, x2: fx.array) -> fx.array:
        out, in2, in1 = self.weight.shape
        batch_shape = x1.shape[:-1]
        x1 = x1.reshape(-1, in1)
        x2 = x2.reshape(-1, 1, in2)
        # (x1 W_i^T) for every output i at once, then contracted with x2.
        y = x1 @ self.weight.reshape(out * in2, in1).T
        y = y.reshape(-1, out, in2).swapaxes(-2, -1)
        y = (x2 @ y).squeeze(1).reshape(*batch_shape, out)
        if "bias" in self:
            y = y + self.bias
        return y
