"""ferrox.nn layers: every forward pass against a NumPy float64 reference
written here from the layer's own parameters, initializations, argument
errors, gradients (tree structure through nn.value_and_grad, finite
differences in float64) and, where mlx is importable, MLX's layers given
the same weights."""

import math

import numpy as np
import pytest

import ferrox as fx
import ferrox.nn as nn
from ferrox.utils import tree_flatten, tree_map, tree_unflatten

try:
    import mlx.core as mx
    import mlx.nn as mlx_nn
except ImportError:  # the comparisons with MLX need it
    mx = mlx_nn = None

needs_mlx = pytest.mark.skipif(mx is None, reason="mlx is not importable")


def N(a):
    """A ferrox array (or Python tree of them) as float64 NumPy."""
    return tree_map(lambda v: np.array(v, dtype=np.float64), a)


def F(a, dtype=fx.float32):
    """NumPy data as a ferrox array of ``dtype``."""
    return fx.array(np.asarray(a, dtype=np.float64), dtype=dtype)


def close(got, want, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.array(got, dtype=np.float64), want, rtol=rtol, atol=atol)


def randomize(module, rng, scale=0.5):
    """Gives every parameter random values (so that ones/zeros initial
    weights do not hide mistakes)."""
    module.update(tree_map(lambda p: F(rng.standard_normal(p.shape) * scale).astype(p.dtype), module.parameters()))
    return module


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# --------------------------------------------------------------------------
# Identity, Linear, Bilinear, Embedding
# --------------------------------------------------------------------------


def test_identity():
    x = fx.ones((2, 3))
    assert nn.Identity(1, 2, key="ignored")(x) is x
    assert nn.Identity().parameters() == {}


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (3,), (0, 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(rng, shape, bias):
    layer = nn.Linear(3, 4, bias=bias)
    assert layer.weight.shape == (4, 3) and ("bias" in layer) == bias
    x = rng.standard_normal(shape)
    want = x @ N(layer.weight).T + (N(layer.bias) if bias else 0)
    out = layer(F(x))
    assert out.shape == shape[:-1] + (4,) and out.dtype == fx.float32
    close(out, want)


def test_linear_and_bilinear_initialization():
    layer = nn.Linear(64, 300)
    w, b = N(layer.weight), N(layer.bias)
    k = 1 / math.sqrt(64)
    assert np.abs(w).max() <= k and np.abs(w).max() > 0.95 * k and abs(w.mean()) < 0.05 * k
    assert np.abs(b).max() <= k
    bil = nn.Bilinear(16, 5, 300)
    assert bil.weight.shape == (300, 5, 16) and bil.bias.shape == (300,)
    assert np.abs(N(bil.weight)).max() <= 0.25 and np.abs(N(bil.weight)).max() > 0.24


@pytest.mark.parametrize("batch", [(), (4,), (2, 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear(rng, batch, bias):
    layer = nn.Bilinear(3, 5, 2, bias=bias)
    x1, x2 = rng.standard_normal(batch + (3,)), rng.standard_normal(batch + (5,))
    want = np.einsum("...j,ijk,...k->...i", x2, N(layer.weight), x1) + (N(layer.bias) if bias else 0)
    out = layer(F(x1), F(x2))
    assert out.shape == batch + (2,)
    close(out, want)


def test_embedding(rng):
    layer = nn.Embedding(10, 4)
    ids = rng.integers(0, 10, size=(2, 3))
    out = layer(fx.array(ids))
    assert out.shape == (2, 3, 4)
    close(out, N(layer.weight)[ids], rtol=0, atol=0)
    x = rng.standard_normal((5, 4))
    close(layer.as_linear(F(x)), x @ N(layer.weight).T)
    big = N(nn.Embedding(400, 64).weight)
    assert abs(big.std() - 1 / 8) < 0.005 and abs(big.mean()) < 0.005  # N(0, 1/dims)


# --------------------------------------------------------------------------
# Dropout
# --------------------------------------------------------------------------


def test_dropout():
    x = fx.ones((200, 100))
    layer = nn.Dropout(0.25)
    y = np.array(layer(x))
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.02
    assert layer.eval()(x) is x
    assert nn.Dropout(0.0)(x) is x
    assert repr(nn.Dropout(0.5)) == "Dropout(p=0.5)"
    for p in (-0.1, 1.0, 1.5):
        with pytest.raises(ValueError, match=r"The dropout probability .* is not in \[0, 1\)"):
            nn.Dropout(p)


# --------------------------------------------------------------------------
# LayerNorm, RMSNorm
# --------------------------------------------------------------------------


def np_layer_norm(x, w, b, eps):
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@pytest.mark.parametrize("shape", [(6,), (3, 6), (2, 4, 6)])
def test_layer_norm(rng, shape):
    layer = randomize(nn.LayerNorm(6, eps=1e-3), rng)
    x = rng.standard_normal(shape) * 3 + 1
    close(layer(F(x)), np_layer_norm(x, N(layer.weight), N(layer.bias), 1e-3))
    plain = nn.LayerNorm(6, affine=False)
    assert plain.parameters() == {}
    close(plain(F(x)), np_layer_norm(x, None, None, 1e-5))
    no_bias = randomize(nn.LayerNorm(6, bias=False), rng)
    assert set(no_bias.parameters()) == {"weight"}
    close(no_bias(F(x)), np_layer_norm(x, N(no_bias.weight), None, 1e-5))


def test_layer_norm_initial_weights_and_errors():
    layer = nn.LayerNorm(4)
    assert N(layer.weight).tolist() == [1.0] * 4 and N(layer.bias).tolist() == [0.0] * 4
    assert repr(layer) == "LayerNorm(4, eps=1e-05, affine=True)"
    with pytest.raises(ValueError, match=r"\[LayerNorm\] 'eps' must be positive but got 0.0"):
        nn.LayerNorm(4, eps=0.0)
    with pytest.raises(ValueError, match=r"\[layer_norm\] weight must have the same size as the last dimension"):
        layer(fx.ones((2, 5)))
    with pytest.raises(ValueError, match=r"\[layer_norm\] Input must have at least 1 dimension"):
        nn.LayerNorm(1)(fx.array(1.0))


def test_norm_dtypes(rng):
    x = rng.standard_normal((3, 8)).astype(np.float16)
    ln, rms = nn.LayerNorm(8), nn.RMSNorm(8)
    assert ln(fx.array(x)).dtype == fx.float32  # float16 input, float32 weights
    ln.set_dtype(fx.float16)
    rms.set_dtype(fx.float16)
    out = ln(fx.array(x))
    assert out.dtype == fx.float16
    close(out, np_layer_norm(x.astype(np.float64), None, None, 1e-5), rtol=2e-3, atol=2e-3)
    out = rms(fx.array(x))
    x64 = x.astype(np.float64)
    assert out.dtype == fx.float16
    close(out, x64 / np.sqrt((x64**2).mean(-1, keepdims=True) + 1e-5), rtol=2e-3, atol=2e-3)
    x64 = rng.standard_normal((2, 8))
    ln.set_dtype(fx.float64)
    close(ln(F(x64, fx.float64)), np_layer_norm(x64, None, None, 1e-5), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 5)])
def test_rms_norm(rng, shape):
    layer = randomize(nn.RMSNorm(5, eps=1e-4), rng)
    x = rng.standard_normal(shape)
    want = x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-4) * N(layer.weight)
    close(layer(F(x)), want)
    assert repr(nn.RMSNorm(3)) == "RMSNorm(3, eps=1e-05)" and N(nn.RMSNorm(3).weight).tolist() == [1.0] * 3
    with pytest.raises(ValueError, match=r"\[RMSNorm\] 'eps' must be positive but got -1"):
        nn.RMSNorm(3, eps=-1)
    with pytest.raises(ValueError, match=r"\[rms_norm\] \(\*weight\) must have the same size"):
        layer(fx.ones((4,)))


# --------------------------------------------------------------------------
# RoPE, SinusoidalPositionalEncoding, ALiBi
# --------------------------------------------------------------------------


def np_rope(x, dims, traditional, base, scale, offset):
    """Rotation of feature pairs, one position (row of axis -2) at a time."""
    x = np.array(x, dtype=np.float64)
    out = x.copy()
    L = x.shape[-2]
    half = dims // 2
    offsets = np.broadcast_to(np.asarray(offset), (x.shape[0],))
    for b in range(x.shape[0]):
        for t in range(L):
            pos = (offsets[b] + t) * scale
            for i in range(half):
                theta = pos * base ** (-2 * i / dims)
                p, q = (2 * i, 2 * i + 1) if traditional else (i, i + half)
                u, v = x[b, ..., t, p], x[b, ..., t, q]
                out[b, ..., t, p] = u * np.cos(theta) - v * np.sin(theta)
                out[b, ..., t, q] = u * np.sin(theta) + v * np.cos(theta)
    return out


@pytest.mark.parametrize("traditional", [False, True])
@pytest.mark.parametrize(
    "shape,dims,offset",
    [((2, 3, 5, 8), 8, 0), ((2, 3, 5, 8), 4, 3), ((2, 4, 6), 6, 2), ((2, 2, 3, 4, 8), 8, 1), ((2, 1, 3, 4), 4, None)],
)
def test_rope(rng, traditional, shape, dims, offset):
    layer = nn.RoPE(dims, traditional=traditional, base=500.0, scale=0.5)
    x = rng.standard_normal(shape)
    if offset is None:  # one offset per batch entry
        offsets = np.array([1, 4])
        out = layer(F(x), offset=fx.array(offsets))
        want = np_rope(x, dims, traditional, 500.0, 0.5, offsets)
    else:
        out = layer(F(x), offset=offset)
        want = np_rope(x, dims, traditional, 500.0, 0.5, offset)
    assert out.shape == shape and out.dtype == fx.float32
    close(out, want)


def test_rope_defaults_and_errors():
    layer = nn.RoPE(4)
    assert (layer.traditional, layer.base, layer.scale) == (False, 10000, 1.0)
    assert repr(layer) == "RoPE(4, traditional=False)" and layer.parameters() == {}
    x = np.linspace(-1, 1, 24).reshape(1, 6, 4)
    close(layer(F(x)), np_rope(x, 4, False, 10000, 1.0, 0))
    with pytest.raises(ValueError, match=r"\[rope\] Input must have at least 3 dimensions"):
        layer(fx.ones((6, 4)))
    with pytest.raises(ValueError, match=r"\[rope\] dims must be even but got 3"):
        nn.RoPE(3)(fx.ones((1, 2, 4)))
    with pytest.raises(ValueError, match=r"\[rope\] dims must not exceed the input's last dimension \(2\)"):
        layer(fx.ones((1, 2, 2)))
    with pytest.raises(ValueError, match=r"\[rope\] offset must be an integer"):
        layer(fx.ones((1, 2, 4)), offset=fx.array(1.5))
    with pytest.raises(ValueError, match=r"\[rope\] offset must be a scalar or vector with 1 elements"):
        layer(fx.ones((1, 2, 4)), offset=fx.array([1, 2]))
    with pytest.raises(ValueError, match=r"\[rope\] Input must be a floating type"):
        layer(fx.ones((1, 2, 4), dtype=fx.int32))


def np_sinusoidal(x, dims, min_freq=1e-4, max_freq=1.0, scale=None, cos_first=False, full_turns=False):
    h = dims // 2
    sigmas = np.geomspace(max_freq, min_freq, h) if h > 1 else np.array([max_freq])
    if full_turns:
        sigmas = sigmas * 2 * np.pi
    y = x[..., None] * sigmas
    parts = [np.cos(y), np.sin(y)] if cos_first else [np.sin(y), np.cos(y)]
    return np.concatenate(parts, -1) * (math.sqrt(2 / dims) if scale is None else scale)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"cos_first": True}, {"full_turns": True, "scale": 1.0}, {"min_freq": 0.01, "max_freq": 2.0, "scale": 3.0}],
)
@pytest.mark.parametrize("dims", [2, 8])
def test_sinusoidal_positional_encoding(rng, kwargs, dims):
    layer = nn.SinusoidalPositionalEncoding(dims, **kwargs)
    assert layer.parameters() == {}  # the frequencies are not parameters
    x = rng.uniform(0, 50, size=(3, 4))
    out = layer(F(x))
    assert out.shape == (3, 4, dims)
    close(out, np_sinusoidal(x, dims, **kwargs), rtol=1e-4, atol=1e-4)
    for bad in (0, 3, -2):
        with pytest.raises(ValueError, match="dims must be positive and even"):
            nn.SinusoidalPositionalEncoding(bad)


def np_alibi_slopes(n):
    def power_of_two(m):
        return [2 ** (-8 * (i + 1) / m) for i in range(m)]

    p = 2 ** int(math.floor(math.log2(n)))
    return np.array(power_of_two(p) + power_of_two(2 * p)[0::2][: n - p])


@pytest.mark.parametrize("heads", [1, 4, 6])
def test_alibi(rng, heads):
    slopes = np_alibi_slopes(heads)
    np.testing.assert_allclose(N(nn.ALiBi.create_alibi_slope(heads, fx.float32)).reshape(-1), slopes, rtol=1e-6)
    scores = rng.standard_normal((2, heads, 3, 5))
    for offset in (0, 2):
        q = np.arange(offset, offset + 3)[:, None]
        bias = -np.abs(q - np.arange(5)[None]) * slopes[:, None, None]
        close(nn.ALiBi()(F(scores), offset=offset), scores + bias)
    mask = rng.standard_normal((3, 5))
    bias = -np.abs(np.arange(3)[:, None] - np.arange(5)) * slopes[:, None, None]
    close(nn.ALiBi()(F(scores), mask=F(mask)), scores + bias + mask)
    m = nn.ALiBi.create_alibi_matrix(4, 4, heads, 1, dtype=fx.float16)
    assert m.shape == (1, heads, 3, 4) and m.dtype == fx.float16


# --------------------------------------------------------------------------
# RNN, GRU, LSTM
# --------------------------------------------------------------------------


def np_rnn(p, x, h, act=np.tanh):
    outs = []
    for t in range(x.shape[-2]):
        h = act(x[..., t, :] @ p["Wxh"].T + h @ p["Whh"].T + p.get("bias", 0))
        outs.append(h)
    return np.stack(outs, -2)


def np_gru(p, x, h):
    H = p["Wh"].shape[1]
    b, bhn = p.get("b", np.zeros(3 * H)), p.get("bhn", np.zeros(H))
    Wx = {g: p["Wx"][i * H : (i + 1) * H] for i, g in enumerate("rzn")}
    Wh = {g: p["Wh"][i * H : (i + 1) * H] for i, g in enumerate("rzn")}
    bx = {g: b[i * H : (i + 1) * H] for i, g in enumerate("rzn")}
    outs = []
    for t in range(x.shape[-2]):
        xt = x[..., t, :]
        r = sigmoid(xt @ Wx["r"].T + bx["r"] + h @ Wh["r"].T)
        z = sigmoid(xt @ Wx["z"].T + bx["z"] + h @ Wh["z"].T)
        n = np.tanh(xt @ Wx["n"].T + bx["n"] + r * (h @ Wh["n"].T + bhn))
        h = (1 - z) * n + z * h
        outs.append(h)
    return np.stack(outs, -2)


def np_lstm(p, x, h, c):
    H = p["Wh"].shape[1]
    b = p.get("bias", np.zeros(4 * H))
    gates = {}
    outs_h, outs_c = [], []
    for t in range(x.shape[-2]):
        pre = x[..., t, :] @ p["Wx"].T + h @ p["Wh"].T + b
        for i, g in enumerate("ifgo"):
            gates[g] = pre[..., i * H : (i + 1) * H]
        i_, f_, g_, o_ = sigmoid(gates["i"]), sigmoid(gates["f"]), np.tanh(gates["g"]), sigmoid(gates["o"])
        c = f_ * c + i_ * g_
        h = o_ * np.tanh(c)
        outs_h.append(h)
        outs_c.append(c)
    return np.stack(outs_h, -2), np.stack(outs_c, -2)


@pytest.mark.parametrize("batch", [(), (2,)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("with_hidden", [False, True])
def test_rnn(rng, batch, bias, with_hidden):
    layer = nn.RNN(3, 4, bias=bias)
    assert layer.Wxh.shape == (4, 3) and layer.Whh.shape == (4, 4) and (layer.bias is not None) == bias
    x = rng.standard_normal(batch + (5, 3))
    h0 = rng.standard_normal(batch + (4,)) if with_hidden else np.zeros(batch + (4,))
    out = layer(F(x), F(h0) if with_hidden else None)
    assert out.shape == batch + (5, 4)
    close(out, np_rnn(N(layer.parameters()), x, h0))


def test_rnn_nonlinearity():
    layer = nn.RNN(2, 3, nonlinearity=nn.relu)
    x = np.random.default_rng(1).standard_normal((4, 2))
    close(layer(F(x)), np_rnn(N(layer.parameters()), x, np.zeros(3), act=lambda v: np.maximum(v, 0)))
    with pytest.raises(ValueError, match="Nonlinearity must be callable"):
        nn.RNN(2, 3, nonlinearity="relu")


@pytest.mark.parametrize("batch", [(), (3,)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("with_hidden", [False, True])
def test_gru(rng, batch, bias, with_hidden):
    layer = nn.GRU(3, 4, bias=bias)
    assert layer.Wx.shape == (12, 3) and layer.Wh.shape == (12, 4)
    assert sorted(layer.parameters()) == (["Wh", "Wx", "b", "bhn"] if bias else ["Wh", "Wx"])
    x = rng.standard_normal(batch + (5, 3))
    h0 = rng.standard_normal(batch + (4,)) if with_hidden else np.zeros(batch + (4,))
    out = layer(F(x), F(h0) if with_hidden else None)
    assert out.shape == batch + (5, 4)
    close(out, np_gru(N(layer.parameters()), x, h0))


@pytest.mark.parametrize("batch", [(), (3,)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("with_state", [False, True])
def test_lstm(rng, batch, bias, with_state):
    layer = nn.LSTM(3, 4, bias=bias)
    assert layer.Wx.shape == (16, 3) and layer.Wh.shape == (16, 4)
    x = rng.standard_normal(batch + (5, 3))
    h0 = rng.standard_normal(batch + (4,)) if with_state else np.zeros(batch + (4,))
    c0 = rng.standard_normal(batch + (4,)) if with_state else np.zeros(batch + (4,))
    hs, cs = layer(F(x), F(h0) if with_state else None, F(c0) if with_state else None)
    want_h, want_c = np_lstm(N(layer.parameters()), x, h0, c0)
    assert hs.shape == cs.shape == batch + (5, 4)
    close(hs, want_h)
    close(cs, want_c)


def test_recurrent_initialization_and_repr():
    layer = nn.LSTM(10, 100)
    w = N(layer.Wx)
    assert np.abs(w).max() <= 0.1 and np.abs(w).max() > 0.095
    assert repr(nn.GRU(3, 4)) == "GRU(input_dims=3, hidden_size=4, bias=True)"
    assert repr(nn.LSTM(3, 4, bias=False)) == "LSTM(input_dims=3, hidden_size=4, bias=False)"
    assert repr(nn.RNN(3, 4)).startswith("RNN(input_dims=3, hidden_size=4, nonlinearity=")


# --------------------------------------------------------------------------
# attention and transformers
# --------------------------------------------------------------------------


def np_linear(p, x):
    return x @ p["weight"].T + p.get("bias", 0)


def np_mha(p, heads, q, k, v, mask=None):
    q, k, v = np_linear(p["query_proj"], q), np_linear(p["key_proj"], k), np_linear(p["value_proj"], v)

    def split(a):
        B, L, D = a.shape
        return a.reshape(B, L, heads, D // heads).transpose(0, 2, 1, 3)

    q, k, v = split(q), split(k), split(v)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + mask
    out = softmax(scores) @ v
    B, _, L, _ = out.shape
    return np_linear(p["out_proj"], out.transpose(0, 2, 1, 3).reshape(B, L, -1))


def test_additive_causal_mask():
    m = nn.MultiHeadAttention.create_additive_causal_mask(4)
    assert m.dtype == fx.float32
    want = np.where(np.arange(4)[None] > np.arange(4)[:, None], np.finfo(np.float32).min, 0.0)
    np.testing.assert_array_equal(np.array(m), want.astype(np.float32))
    m16 = nn.MultiHeadAttention.create_additive_causal_mask(3, dtype=fx.float16)
    assert m16.dtype == fx.float16 and np.array(m16)[0, 2] == np.finfo(np.float16).min


@pytest.mark.parametrize("bias", [False, True])
def test_multi_head_attention(rng, bias):
    layer = nn.MultiHeadAttention(8, 2, bias=bias)
    assert layer.query_proj.weight.shape == (8, 8) and ("bias" in layer.out_proj) == bias
    q, k = rng.standard_normal((2, 3, 8)), rng.standard_normal((2, 5, 8))
    v = rng.standard_normal((2, 5, 8))
    p = N(layer.parameters())
    close(layer(F(q), F(k), F(v)), np_mha(p, 2, q, k, v))
    additive = rng.standard_normal((3, 5))
    close(layer(F(q), F(k), F(v), mask=F(additive)), np_mha(p, 2, q, k, v, additive))
    keep = rng.random((2, 1, 3, 5)) > 0.3
    keep[..., 0] = True  # every query sees some key
    close(layer(F(q), F(k), F(v), mask=fx.array(keep)), np_mha(p, 2, q, k, v, keep))
    causal = np.arange(2, 5)[:, None] >= np.arange(5)[None]  # queries aligned to the end of the keys
    close(layer(F(q), F(k), F(v), mask="causal"), np_mha(p, 2, q, k, v, causal))
    x = rng.standard_normal((1, 4, 8))
    close(
        layer(F(x), F(x), F(x), mask=nn.MultiHeadAttention.create_additive_causal_mask(4)),
        np_mha(p, 2, x, x, x, np.where(np.tril(np.ones((4, 4))) > 0, 0.0, -1e30)),
    )


def test_multi_head_attention_dimensions(rng):
    layer = nn.MultiHeadAttention(
        6, 3, query_input_dims=4, key_input_dims=5, value_input_dims=7, value_dims=9, value_output_dims=2
    )
    shapes = tree_map(lambda a: a.shape, layer.parameters())
    assert shapes == {
        "query_proj": {"weight": (6, 4)},
        "key_proj": {"weight": (6, 5)},
        "value_proj": {"weight": (9, 7)},
        "out_proj": {"weight": (2, 9)},
    }
    q, k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5)), rng.standard_normal((2, 4, 7))
    out = layer(F(q), F(k), F(v))
    assert out.shape == (2, 3, 2)
    close(out, np_mha(N(layer.parameters()), 3, q, k, v))
    with pytest.raises(ValueError, match=r"divisible by the number of heads \(6 % 4\) != 0"):
        nn.MultiHeadAttention(6, 4)
    with pytest.raises(ValueError, match="invalid mask option"):
        layer(F(q), F(k), F(v), mask="upper")


def np_encoder_layer(p, heads, x, mask, norm_first, act):
    ln = lambda q, a: np_layer_norm(a, q["weight"], q["bias"], 1e-5)  # noqa: E731
    mlp = lambda a: np_linear(p["linear2"], act(np_linear(p["linear1"], a)))  # noqa: E731
    if norm_first:
        y = ln(p["ln1"], x)
        x = x + np_mha(p["attention"], heads, y, y, y, mask)
        return x + mlp(ln(p["ln2"], x))
    x = ln(p["ln1"], x + np_mha(p["attention"], heads, x, x, x, mask))
    return ln(p["ln2"], x + mlp(x))


def np_decoder_layer(p, heads, x, memory, x_mask, memory_mask, norm_first, act):
    ln = lambda q, a: np_layer_norm(a, q["weight"], q["bias"], 1e-5)  # noqa: E731
    mlp = lambda a: np_linear(p["linear2"], act(np_linear(p["linear1"], a)))  # noqa: E731
    if norm_first:
        y = ln(p["ln1"], x)
        x = x + np_mha(p["self_attention"], heads, y, y, y, x_mask)
        y = ln(p["ln2"], x)
        x = x + np_mha(p["cross_attention"], heads, y, memory, memory, memory_mask)
        return x + mlp(ln(p["ln3"], x))
    x = ln(p["ln1"], x + np_mha(p["self_attention"], heads, x, x, x, x_mask))
    x = ln(p["ln2"], x + np_mha(p["cross_attention"], heads, x, memory, memory, memory_mask))
    return ln(p["ln3"], x + mlp(x))


def relu(v):
    return np.maximum(v, 0)


@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_encoder_and_decoder_layers(rng, norm_first):
    enc = randomize(nn.TransformerEncoderLayer(8, 2, mlp_dims=12, norm_first=norm_first), rng)
    assert enc.linear1.weight.shape == (12, 8)
    x = rng.standard_normal((2, 4, 8))
    mask = np.where(np.tril(np.ones((4, 4))) > 0, 0.0, -1e9)
    close(enc(F(x), F(mask)), np_encoder_layer(N(enc.parameters()), 2, x, mask, norm_first, relu))
    close(enc(F(x), None), np_encoder_layer(N(enc.parameters()), 2, x, None, norm_first, relu))
    dec = randomize(nn.TransformerDecoderLayer(8, 2, norm_first=norm_first, activation=nn.gelu), rng)
    assert dec.linear1.weight.shape == (32, 8)  # mlp_dims defaults to 4 * dims
    memory = rng.standard_normal((2, 3, 8))
    gelu = lambda v: v * 0.5 * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))  # noqa: E731
    want = np_decoder_layer(N(dec.parameters()), 2, x, memory, mask, None, norm_first, gelu)
    close(dec(F(x), F(memory), F(mask), None), want)


def test_transformer(rng):
    model = randomize(nn.Transformer(dims=8, num_heads=2, num_encoder_layers=2, num_decoder_layers=1, mlp_dims=16), rng)
    assert len(model.encoder.layers) == 2 and len(model.decoder.layers) == 1
    src, tgt = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 3, 8))
    tgt_mask = np.where(np.tril(np.ones((3, 3))) > 0, 0.0, -1e9)
    p = N(model.parameters())
    memory = src
    for lp in p["encoder"]["layers"]:
        memory = np_encoder_layer(lp, 2, memory, None, True, relu)
    memory = np_layer_norm(memory, p["encoder"]["ln"]["weight"], p["encoder"]["ln"]["bias"], 1e-5)
    y = tgt
    for lp in p["decoder"]["layers"]:
        y = np_decoder_layer(lp, 2, y, memory, tgt_mask, None, True, relu)
    y = np_layer_norm(y, p["decoder"]["ln"]["weight"], p["decoder"]["ln"]["bias"], 1e-5)
    close(model(F(src), F(tgt), None, F(tgt_mask), None), y)
    custom = nn.Transformer(dims=8, num_heads=2, custom_encoder=nn.Identity(), custom_decoder=nn.Identity())
    assert isinstance(custom.encoder, nn.Identity) and isinstance(custom.decoder, nn.Identity)


def test_transformer_checkpoint_matches(rng):
    def build(checkpoint):
        fx.random.seed(7)
        return nn.TransformerEncoder(2, 8, 2, mlp_dims=16, checkpoint=checkpoint)

    plain, ckpt = build(False), build(True)
    x = F(rng.standard_normal((2, 4, 8)))
    mask = nn.MultiHeadAttention.create_additive_causal_mask(4)
    close(ckpt(x, mask), N(plain(x, mask)), rtol=1e-6, atol=1e-6)
    v1, g1 = nn.value_and_grad(plain, lambda: (plain(x, mask) ** 2).sum())()
    v2, g2 = nn.value_and_grad(ckpt, lambda: (ckpt(x, mask) ** 2).sum())()
    close(v2, float(v1), rtol=1e-6)
    for (k1, a), (k2, b) in zip(tree_flatten(g1), tree_flatten(g2)):
        assert k1 == k2
        close(b, N(a), rtol=1e-4, atol=1e-5)


def test_dropout_inside_transformer_follows_training_mode():
    layer = nn.TransformerEncoderLayer(8, 2, dropout=0.5)
    x = fx.ones((1, 3, 8))
    layer.eval()
    a, b = layer(x, None), layer(x, None)
    np.testing.assert_array_equal(np.array(a), np.array(b))
    layer.train()
    assert not np.array_equal(np.array(layer(x, None)), np.array(layer(x, None)))


# --------------------------------------------------------------------------
# activation layers
# --------------------------------------------------------------------------


def np_gelu(v):
    return v * 0.5 * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))


def softplus(v):
    return np.logaddexp(v, 0)


ACTIVATIONS = [
    (nn.Sigmoid(), sigmoid),
    (nn.ReLU(), relu),
    (nn.ReLU2(), lambda v: relu(v) ** 2),
    (nn.ReLU6(), lambda v: np.minimum(relu(v), 6)),
    (nn.LeakyReLU(), lambda v: np.where(v > 0, v, 0.01 * v)),
    (nn.LeakyReLU(0.2), lambda v: np.where(v > 0, v, 0.2 * v)),
    (nn.ELU(), lambda v: np.where(v > 0, v, np.exp(v) - 1)),
    (nn.ELU(alpha=0.5), lambda v: np.where(v > 0, v, 0.5 * (np.exp(v) - 1))),
    (nn.CELU(alpha=2.0), lambda v: relu(v) + np.minimum(0, 2.0 * (np.exp(v / 2.0) - 1))),
    (nn.SELU(), lambda v: 1.0507 * np.where(v > 0, v, 1.67326 * (np.exp(v) - 1))),
    (nn.Softplus(), softplus),
    (nn.Softsign(), lambda v: v / (1 + np.abs(v))),
    (nn.Softshrink(), lambda v: np.where(np.abs(v) > 0.5, v - np.sign(v) * 0.5, 0)),
    (nn.Softshrink(lambd=1.0), lambda v: np.where(np.abs(v) > 1.0, v - np.sign(v), 0)),
    (nn.HardShrink(), lambda v: np.where(np.abs(v) > 0.5, v, 0)),
    (nn.HardShrink(lambd=1.0), lambda v: np.where(np.abs(v) > 1.0, v, 0)),
    (nn.HardTanh(), lambda v: np.clip(v, -1, 1)),
    (nn.Hardswish(), lambda v: v * np.clip(v + 3, 0, 6) / 6),
    (nn.SiLU(), lambda v: v * sigmoid(v)),
    (nn.Mish(), lambda v: v * np.tanh(softplus(v))),
    (nn.Tanh(), np.tanh),
    (nn.LogSigmoid(), lambda v: -softplus(-v)),
    (nn.Softmax(), softmax),
    (nn.Softmin(), lambda v: softmax(-v)),
    (nn.LogSoftmax(), lambda v: np.log(softmax(v))),
    (nn.GELU(), np_gelu),
    (nn.GELU(approx="precise"), lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))),
    (nn.GELU(approx="tanh"), lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))),
    (nn.GELU(approx="fast"), lambda v: v * sigmoid(1.702 * v)),
    (nn.GLU(), lambda v: v[..., :3] * sigmoid(v[..., 3:])),
    (nn.GLU(axis=0), lambda v: v[:2] * sigmoid(v[2:])),
    (nn.Step(), lambda v: (v >= 0).astype(np.float64)),
    (nn.Step(threshold=0.5), lambda v: (v >= 0.5).astype(np.float64)),
    (nn.PReLU(), lambda v: np.where(v > 0, v, 0.25 * v)),
]


@pytest.mark.parametrize("layer,ref", ACTIVATIONS, ids=lambda v: repr(v) if isinstance(v, nn.Module) else "")
def test_activation_layers(rng, layer, ref):
    x = rng.standard_normal((4, 6)) * 3
    out = layer(F(x))
    assert out.shape == ref(x).shape
    close(out, ref(x), rtol=1e-4, atol=1e-4)


def test_activation_layer_parameters_and_errors():
    assert all(layer.parameters() == {} for layer, _ in ACTIVATIONS if not isinstance(layer, nn.PReLU))
    prelu = nn.PReLU(num_parameters=3, init=0.1)
    assert N(prelu.parameters()) == {"weight": pytest.approx(np.full(3, 0.1))}
    close(prelu(F(-np.ones((2, 3)))), np.full((2, 3), -0.1))
    with pytest.raises(ValueError, match=r"The approximation should be in \['none', 'precise', 'tanh', 'fast'\]"):
        nn.GELU(approx="erf")


# --------------------------------------------------------------------------
# gradients
# --------------------------------------------------------------------------

GRAD_CASES = {
    "Linear": (lambda: nn.Linear(3, 2), lambda: ((4, 3),)),
    "Bilinear": (lambda: nn.Bilinear(3, 2, 2), lambda: ((4, 3), (4, 2))),
    "Embedding": (lambda: nn.Embedding(5, 3), None),
    "LayerNorm": (lambda: nn.LayerNorm(3), lambda: ((4, 3),)),
    "RMSNorm": (lambda: nn.RMSNorm(3), lambda: ((4, 3),)),
    "PReLU": (lambda: nn.PReLU(3), lambda: ((4, 3),)),
    "RNN": (lambda: nn.RNN(3, 2), lambda: ((2, 4, 3),)),
    "GRU": (lambda: nn.GRU(3, 2), lambda: ((2, 4, 3),)),
    "LSTM": (lambda: nn.LSTM(3, 2), lambda: ((2, 4, 3),)),
    "MultiHeadAttention": (lambda: nn.MultiHeadAttention(4, 2, bias=True), lambda: ((2, 3, 4),) * 3),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(4, 2, mlp_dims=6), lambda: ((2, 3, 4), None)),
    "Sequential": (lambda: nn.Sequential(nn.Linear(3, 4), nn.SiLU(), nn.Linear(4, 1)), lambda: ((4, 3),)),
}


def grad_inputs(name, rng, dtype=fx.float32):
    if name == "Embedding":
        return [fx.array(rng.integers(0, 5, size=(2, 3)))]
    return [None if s is None else F(rng.standard_normal(s), dtype) for s in GRAD_CASES[name][1]()]


def scalar_loss(out, weights):
    outs = out if isinstance(out, tuple) else (out,)
    return sum((o * w).sum() for o, w in zip(outs, weights))


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_reach_every_trainable_parameter(rng, name):
    model = randomize(GRAD_CASES[name][0](), rng)
    inputs = grad_inputs(name, rng)
    outs = model(*inputs)
    weights = [F(rng.standard_normal(o.shape)) for o in (outs if isinstance(outs, tuple) else (outs,))]
    value, grads = nn.value_and_grad(model, lambda *a: scalar_loss(model(*a), weights))(*inputs)
    assert value.shape == ()
    described = lambda tree: tree_map(lambda a: (a.shape, a.dtype), tree)  # noqa: E731
    assert described(grads) == described(model.trainable_parameters())
    assert all(float(fx.abs(g).sum()) > 0 for _, g in tree_flatten(grads))


FD_CASES = ["Linear", "Bilinear", "LayerNorm", "RMSNorm", "GRU", "LSTM", "MultiHeadAttention"]
FD_CASES += ["TransformerEncoderLayer"]


@pytest.mark.parametrize("name", FD_CASES)
def test_gradients_against_finite_differences(rng, name):
    model = randomize(GRAD_CASES[name][0](), rng)
    model.set_dtype(fx.float64)
    inputs = grad_inputs(name, rng, fx.float64)
    outs = model(*inputs)
    weights = [F(rng.standard_normal(o.shape), fx.float64) for o in (outs if isinstance(outs, tuple) else (outs,))]

    def loss(*a):
        return scalar_loss(model(*a), weights)

    _, grads = nn.value_and_grad(model, loss)(*inputs)
    params = dict(tree_flatten(model.parameters()))
    eps = 1e-6
    for key, g in tree_flatten(grads):
        base = np.array(params[key], dtype=np.float64)
        for idx in [tuple(rng.integers(0, n) for n in base.shape) for _ in range(2)]:
            bumped = []
            for sign in (1, -1):
                p = base.copy()
                p[idx] += sign * eps
                model.update(tree_unflatten([(key, F(p, fx.float64))]))
                bumped.append(float(loss(*inputs)))
            model.update(tree_unflatten([(key, F(base, fx.float64))]))
            fd = (bumped[0] - bumped[1]) / (2 * eps)
            np.testing.assert_allclose(np.array(g)[idx], fd, rtol=1e-5, atol=1e-7, err_msg=f"{name}.{key}{idx}")


def test_input_gradient_of_rope_and_attention_against_finite_differences(rng):
    rope = nn.RoPE(4, traditional=True)
    x = rng.standard_normal((1, 3, 6))
    w = rng.standard_normal((1, 3, 6))
    g = np.array(fx.grad(lambda v: (rope(v, offset=2) * F(w, fx.float64)).sum())(F(x, fx.float64)))
    eps = 1e-6
    for idx in [(0, 1, 2), (0, 2, 5), (0, 0, 1)]:
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        fd = ((np_rope(hi, 4, True, 10000, 1.0, 2) - np_rope(lo, 4, True, 10000, 1.0, 2)) * w).sum() / (2 * eps)
        np.testing.assert_allclose(g[idx], fd, rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------
# against MLX given the same weights
# --------------------------------------------------------------------------


def to_mlx(model, mlx_model):
    """Loads ``model``'s parameters into ``mlx_model`` (strictly: the
    parameter names and shapes must be MLX's)."""
    mlx_model.load_weights([(k, mx.array(np.array(v))) for k, v in tree_flatten(model.parameters())])
    return mlx_model


MLX_CASES = [
    (lambda m: m.Linear(3, 4), [(2, 3)]),
    (lambda m: m.Bilinear(3, 2, 4), [(5, 3), (5, 2)]),
    (lambda m: m.LayerNorm(6), [(2, 6)]),
    (lambda m: m.LayerNorm(6, affine=False), [(2, 6)]),
    (lambda m: m.RMSNorm(6), [(2, 3, 6)]),
    (lambda m: m.RoPE(6), [(2, 2, 4, 8)]),
    (lambda m: m.RoPE(8, traditional=True, base=100, scale=2.0), [(2, 4, 8)]),
    (lambda m: m.SinusoidalPositionalEncoding(8, full_turns=True), [(3, 4)]),
    (lambda m: m.RNN(3, 4), [(2, 5, 3)]),
    (lambda m: m.GRU(3, 4), [(2, 5, 3)]),
    (lambda m: m.LSTM(3, 4), [(5, 3)]),
    (lambda m: m.MultiHeadAttention(8, 4, bias=True), [(2, 3, 8), (2, 5, 8), (2, 5, 8)]),
    (lambda m: m.TransformerEncoderLayer(8, 2, mlp_dims=16, norm_first=False), [(2, 3, 8), None]),
    (lambda m: m.TransformerDecoderLayer(8, 2, mlp_dims=16), [(2, 3, 8), (2, 4, 8), None, None]),
    (lambda m: m.Sequential(m.Linear(4, 4), m.GELU(approx="tanh"), m.Mish(), m.LogSoftmax()), [(3, 4)]),
]


@needs_mlx
@pytest.mark.parametrize("case", range(len(MLX_CASES)))
def test_layers_match_mlx(rng, case):
    build, shapes = MLX_CASES[case]
    ours = randomize(build(nn), rng)
    theirs = to_mlx(ours, build(mlx_nn))
    inputs = [None if s is None else rng.standard_normal(s).astype(np.float32) for s in shapes]
    got = ours(*[None if a is None else fx.array(a) for a in inputs])
    want = theirs(*[None if a is None else mx.array(a) for a in inputs])
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        close(g, np.array(w, dtype=np.float64), rtol=1e-4, atol=1e-5)


@needs_mlx
def test_alibi_and_causal_mask_match_mlx():
    np.testing.assert_allclose(
        N(nn.ALiBi.create_alibi_matrix(5, 6, 6, 2)), np.array(mlx_nn.ALiBi.create_alibi_matrix(5, 6, 6, 2)), rtol=1e-6
    )
    np.testing.assert_array_equal(
        np.array(nn.MultiHeadAttention.create_additive_causal_mask(5)),
        np.array(mlx_nn.MultiHeadAttention.create_additive_causal_mask(5)),
    )
