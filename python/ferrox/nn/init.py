"""Weight initializers of ``ferrox.nn`` (MLX's ``mlx.nn.init``).

Each function takes MLX's parameters and returns an ``initializer`` that
maps an array to a new array of its shape (``init.glorot_uniform()(w)``,
``init.he_normal()(w, mode="fan_out", gain=2.0)``). The samplers are the
Rust ones of the ``ferrox-nn`` crate (``ferrox._core.nn``); they draw from
the global key sequence (``ferrox.random.seed``) in the order MLX draws, so
after the same seed the values are MLX's.
"""

from typing import Callable, Literal

import ferrox as fx
from ferrox._core import nn as _nn

__all__ = [
    "constant",
    "normal",
    "uniform",
    "identity",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "sparse",
    "orthogonal",
]


def constant(value: float, dtype: fx.Dtype = fx.float32) -> Callable[[fx.array], fx.array]:
    """An initializer returning an array of the input's shape filled with ``value``.

    Args:
        value (float): The value to fill the array with.
        dtype (Dtype, optional): The data type of the array. Default: ``float32``.

    Returns:
        callable: An initializer taking an array and returning one of its shape and ``dtype``.
    """

    def initializer(a: fx.array) -> fx.array:
        return _nn.constant(a.shape, value, dtype=dtype)

    return initializer


def normal(mean: float = 0.0, std: float = 1.0, dtype: fx.Dtype = fx.float32) -> Callable[[fx.array], fx.array]:
    """An initializer returning samples from a normal distribution.

    Args:
        mean (float, optional): Mean of the distribution. Default: ``0.0``.
        std (float, optional): Standard deviation of the distribution. Default: ``1.0``.
        dtype (Dtype, optional): The data type of the array. Default: ``float32``.

    Returns:
        callable: An initializer taking an array and returning one of its shape and ``dtype``.
    """

    def initializer(a: fx.array) -> fx.array:
        return _nn.normal(a.shape, mean=mean, std=std, dtype=dtype)

    return initializer


def uniform(low: float = 0.0, high: float = 1.0, dtype: fx.Dtype = fx.float32) -> Callable[[fx.array], fx.array]:
    """An initializer returning samples from the uniform distribution on ``[low, high)``.

    Args:
        low (float, optional): The lower bound. Default: ``0.0``.
        high (float, optional): The upper bound. Default: ``1.0``.
        dtype (Dtype, optional): The data type of the array. Default: ``float32``.

    Returns:
        callable: An initializer taking an array and returning one of its shape and ``dtype``.
    """

    def initializer(a: fx.array) -> fx.array:
        return _nn.uniform(a.shape, low=low, high=high, dtype=dtype)

    return initializer


def identity(dtype: fx.Dtype = fx.float32) -> Callable[[fx.array], fx.array]:
    """An initializer returning the identity matrix of the (square) input's shape.

    Args:
        dtype (Dtype, optional): The data type of the array. Default: ``float32``.

    Returns:
        callable: An initializer taking an array and returning one of its shape and ``dtype``.
    """

    def initializer(arr: fx.array) -> fx.array:
        return _nn.identity(arr.shape, dtype=dtype)

    return initializer


def glorot_normal(dtype: fx.Dtype = fx.float32) -> Callable[[fx.array, float], fx.array]:
    r"""A Glorot normal initializer: samples with standard deviation
    :math:`\gamma \sqrt{2 / (\text{fan\_in} + \text{fan\_out})}`.

    ``fan_in`` is the last extent and ``fan_out`` the first, each times the
    product of the extents between them (at least 2 dimensions).

    Args:
        dtype (Dtype, optional): The data type of the array. Default: ``float32``.

    Returns:
        callable: An initializer ``init(a, gain=1.0)`` returning an array of ``a``'s shape and ``dtype``.
    """

    def initializer(a: fx.array, gain: float = 1.0) -> fx.array:
        return _nn.glorot_normal(a.shape, gain=gain, dtype=dtype)

    return initializer


def glorot_uniform(dtype: fx.Dtype = fx.float32) -> Callable[[fx.array, float], fx.array]:
    r"""A Glorot uniform initializer: samples on :math:`[-\text{limit}, \text{limit})`
    with :math:`\text{limit} = \gamma \sqrt{6 / (\text{fan\_in} + \text{fan\_out})}`.

    Args:
        dtype (Dtype, optional): The data type of the array. Default: ``float32``.

    Returns:
        callable: An initializer ``init(a, gain=1.0)`` returning an array of ``a``'s shape and ``dtype``.
    """

    def initializer(a: fx.array, gain: float = 1.0) -> fx.array:
        return _nn.glorot_uniform(a.shape, gain=gain, dtype=dtype)

    return initializer


def he_normal(
    dtype: fx.Dtype = fx.float32,
) -> Callable[[fx.array, Literal["fan_in", "fan_out"], float], fx.array]:
    r"""A He normal initializer: samples with standard deviation
    :math:`\gamma / \sqrt{\text{fan}}`, ``fan`` being ``fan_in`` or
    ``fan_out`` as ``mode`` says.

    Args:
        dtype (Dtype, optional): The data type of the array. Default: ``float32``.

    Returns:
        callable: An initializer ``init(a, mode='fan_in', gain=1.0)`` returning an array of ``a``'s shape and ``dtype``.
    """

    def initializer(a: fx.array, mode: Literal["fan_in", "fan_out"] = "fan_in", gain: float = 1.0) -> fx.array:
        return _nn.he_normal(a.shape, mode=mode, gain=gain, dtype=dtype)

    return initializer


def he_uniform(
    dtype: fx.Dtype = fx.float32,
) -> Callable[[fx.array, Literal["fan_in", "fan_out"], float], fx.array]:
    r"""A He uniform initializer: samples on :math:`[-\text{limit}, \text{limit})`
    with :math:`\text{limit} = \gamma \sqrt{3 / \text{fan}}`, ``fan`` being
    ``fan_in`` or ``fan_out`` as ``mode`` says.

    Args:
        dtype (Dtype, optional): The data type of the array. Default: ``float32``.

    Returns:
        callable: An initializer ``init(a, mode='fan_in', gain=1.0)`` returning an array of ``a``'s shape and ``dtype``.
    """

    def initializer(a: fx.array, mode: Literal["fan_in", "fan_out"] = "fan_in", gain: float = 1.0) -> fx.array:
        return _nn.he_uniform(a.shape, mode=mode, gain=gain, dtype=dtype)

    return initializer


def sparse(
    sparsity: float, mean: float = 0.0, std: float = 1.0, dtype: fx.Dtype = fx.float32
) -> Callable[[fx.array], fx.array]:
    """An initializer returning a 2-D matrix of normal samples with
    ``ceil(sparsity * columns)`` entries of every row set to zero.

    Args:
        sparsity (float): The fraction of each row set to zero, in [0, 1].
        mean (float, optional): Mean of the normal distribution. Default: ``0.0``.
        std (float, optional): Standard deviation of the normal distribution. Default: ``1.0``.
        dtype (Dtype, optional): The data type of the array. Default: ``float32``.

    Returns:
        callable: An initializer taking an array and returning one of its shape and ``dtype``.
    """

    def initializer(a: fx.array) -> fx.array:
        return _nn.sparse(a.shape, sparsity, mean=mean, std=std, dtype=dtype)

    return initializer


def orthogonal(gain: float = 1.0, dtype: fx.Dtype = fx.float32) -> Callable[[fx.array], fx.array]:
    """An initializer returning a 2-D matrix with orthonormal rows or
    columns (whichever are fewer), scaled by ``gain``.

    Args:
        gain (float, optional): Scaling factor. Default: ``1.0``.
        dtype (Dtype, optional): The data type of the array. Default: ``float32``.

    Returns:
        callable: An initializer taking an array and returning one of its shape and ``dtype``.
    """

    def initializer(a: fx.array) -> fx.array:
        return _nn.orthogonal(a.shape, gain=gain, dtype=dtype)

    return initializer
