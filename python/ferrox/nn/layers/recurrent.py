"""Recurrent layers: ``RNN``, ``GRU`` and ``LSTM`` (MLX's parameter names
and gate layouts)."""

import math
from typing import Callable, Optional

import ferrox as fx
from ferrox.nn.functions import tanh
from ferrox.nn.layers.base import Module


def _uniform(scale: float, *shape: int) -> fx.array:
    return fx.random.uniform(low=-scale, high=scale, shape=shape)


class RNN(Module):
    r"""An Elman recurrent layer: :math:`h_{t+1} = \sigma(W_{xh} x_t + W_{hh}
    h_t + b)` for each step of an input of shape ``[N, L, D]`` or ``[L, D]``;
    returns the hidden state of every step (``[N, L, H]`` or ``[L, H]``).

    Parameters ``Wxh`` ``[H, D]``, ``Whh`` ``[H, H]`` and ``bias`` ``[H]``,
    initialized from :math:`\mathcal{U}(-k, k)`, :math:`k = 1/\sqrt{H}`.

    Args:
        input_size: the input's feature size ``D``.
        hidden_size: the hidden state's size ``H``.
        bias: whether to use a bias. Default ``True``.
        nonlinearity: the activation :math:`\sigma`; :func:`tanh` when None.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: Optional[Callable] = None):
        super().__init__()
        self.nonlinearity = nonlinearity or tanh
        if not callable(self.nonlinearity):
            raise ValueError(f"Nonlinearity must be callable. Current value: {nonlinearity}.")
        scale = 1.0 / math.sqrt(hidden_size)
        self.hidden_size = hidden_size
        self.Wxh = _uniform(scale, hidden_size, input_size)
        self.Whh = _uniform(scale, hidden_size, hidden_size)
        self.bias = _uniform(scale, hidden_size) if bias else None

    def _extra_repr(self) -> str:
        return (
            f"input_dims={self.Wxh.shape[1]}, hidden_size={self.hidden_size}, "
            f"nonlinearity={self.nonlinearity}, bias={self.bias is not None}"
        )

    def __call__(self, x: fx.array, hidden: Optional[fx.array] = None) -> fx.array:
        """Hidden states of every step, starting from ``hidden`` (zeros when
        None)."""
        x = fx.addmm(self.bias, x, self.Wxh.T) if self.bias is not None else x @ self.Wxh.T
        states = []
        for t in range(x.shape[-2]):
            step = x[..., t, :]
            hidden = step if hidden is None else fx.addmm(step, hidden, self.Whh.T)
            hidden = self.nonlinearity(hidden)
            states.append(hidden)
        return fx.stack(states, axis=-2)


class GRU(Module):
    r"""A gated recurrent unit layer. For each step of an input of shape
    ``[N, L, D]`` or ``[L, D]``:

    .. math::

        r_t &= \sigma(W_{xr} x_t + W_{hr} h_t + b_r) \\
        z_t &= \sigma(W_{xz} x_t + W_{hz} h_t + b_z) \\
        n_t &= \tanh(W_{xn} x_t + b_n + r_t \odot (W_{hn} h_t + b_{hn})) \\
        h_{t+1} &= (1 - z_t) \odot n_t + z_t \odot h_t

    Parameters ``Wx`` ``[3H, D]`` and ``Wh`` ``[3H, H]`` (rows: r, z, n),
    ``b`` ``[3H]`` and ``bhn`` ``[H]``, initialized from
    :math:`\mathcal{U}(-k, k)`, :math:`k = 1/\sqrt{H}`. Returns the hidden
    state of every step.

    Args:
        input_size: the input's feature size ``D``.
        hidden_size: the hidden state's size ``H``.
        bias: whether to use biases. Default ``True``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        self.hidden_size = hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(scale, 3 * hidden_size, input_size)
        self.Wh = _uniform(scale, 3 * hidden_size, hidden_size)
        self.b = _uniform(scale, 3 * hidden_size) if bias else None
        self.bhn = _uniform(scale, hidden_size) if bias else None

    def _extra_repr(self) -> str:
        return f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, bias={self.b is not None}"

    def __call__(self, x: fx.array, hidden: Optional[fx.array] = None) -> fx.array:
        """Hidden states of every step, starting from ``hidden`` (zeros when
        None)."""
        H = self.hidden_size
        x = fx.addmm(self.b, x, self.Wx.T) if self.b is not None else x @ self.Wx.T
        x_rz, x_n = x[..., :-H], x[..., -H:]
        states = []
        for t in range(x.shape[-2]):
            rz = x_rz[..., t, :]
            if hidden is not None:
                h_proj = hidden @ self.Wh.T
                h_proj_rz, h_proj_n = h_proj[..., :-H], h_proj[..., -H:]
                if self.bhn is not None:
                    h_proj_n = h_proj_n + self.bhn
                rz = rz + h_proj_rz
            r, z = fx.split(fx.sigmoid(rz), 2, axis=-1)
            n = x_n[..., t, :]
            if hidden is not None:
                n = n + r * h_proj_n
            elif self.bhn is not None:
                n = n + r * self.bhn
            n = fx.tanh(n)
            hidden = (1 - z) * n if hidden is None else (1 - z) * n + z * hidden
            states.append(hidden)
        return fx.stack(states, axis=-2)


class LSTM(Module):
    r"""A long short-term memory layer. For each step of an input of shape
    ``[N, L, D]`` or ``[L, D]``:

    .. math::

        i_t &= \sigma(W_{xi} x_t + W_{hi} h_t + b_i) \\
        f_t &= \sigma(W_{xf} x_t + W_{hf} h_t + b_f) \\
        g_t &= \tanh(W_{xg} x_t + W_{hg} h_t + b_g) \\
        o_t &= \sigma(W_{xo} x_t + W_{ho} h_t + b_o) \\
        c_{t+1} &= f_t \odot c_t + i_t \odot g_t \\
        h_{t+1} &= o_t \odot \tanh(c_{t+1})

    Parameters ``Wx`` ``[4H, D]`` and ``Wh`` ``[4H, H]`` (rows: i, f, g, o)
    and ``bias`` ``[4H]``, initialized from :math:`\mathcal{U}(-k, k)`,
    :math:`k = 1/\sqrt{H}`. Returns ``(hidden, cell)``: the states of every
    step.

    Args:
        input_size: the input's feature size ``D``.
        hidden_size: the hidden state's size ``H``.
        bias: whether to use a bias. Default ``True``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        self.hidden_size = hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(scale, 4 * hidden_size, input_size)
        self.Wh = _uniform(scale, 4 * hidden_size, hidden_size)
        self.bias = _uniform(scale, 4 * hidden_size) if bias else None

    def _extra_repr(self) -> str:
        return f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, bias={self.bias is not None}"

    def __call__(self, x: fx.array, hidden: Optional[fx.array] = None, cell: Optional[fx.array] = None):
        """Hidden and cell states of every step, starting from ``hidden`` and
        ``cell`` (zeros when None)."""
        x = fx.addmm(self.bias, x, self.Wx.T) if self.bias is not None else x @ self.Wx.T
        hiddens, cells = [], []
        for t in range(x.shape[-2]):
            ifgo = x[..., t, :]
            if hidden is not None:
                ifgo = fx.addmm(ifgo, hidden, self.Wh.T)
            i, f, g, o = fx.split(ifgo, 4, axis=-1)
            i, f, g, o = fx.sigmoid(i), fx.sigmoid(f), fx.tanh(g), fx.sigmoid(o)
            cell = i * g if cell is None else f * cell + i * g
            hidden = o * fx.tanh(cell)
            hiddens.append(hidden)
            cells.append(cell)
        return fx.stack(hiddens, axis=-2), fx.stack(cells, axis=-2)
