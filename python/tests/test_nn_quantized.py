"""The quantized layers (QuantizedLinear, QuantizedEmbedding, QQLinear) and
nn.quantize against MLX's (mlx.nn, CPU build, 0.32.4): the same packed
parameters bit for bit from the same float weights, the same outputs, the
same frozen and trainable parameters, the same predicate handling and
errors, and checkpoints MLX wrote loading into a model ferrox quantized the
same way."""

import numpy as np
import pytest

import ferrox as fx
import ferrox.nn as nn
from ferrox.utils import tree_flatten

mx = pytest.importorskip("mlx.core")
mnn = pytest.importorskip("mlx.nn")
from mlx.utils import tree_flatten as mlx_tree_flatten  # noqa: E402

# (mode, group_size, bits): every affine width MLX has at two group sizes,
# and the floating-point modes with their defaults.
CONFIGS = [("affine", gs, b) for gs in (32, 128) for b in (2, 3, 4, 5, 6, 8)] + [
    ("affine", 64, 4),
    ("mxfp4", None, None),
    ("mxfp8", None, None),
    ("nvfp4", None, None),
]


def both(x):
    """The same NumPy data as a ferrox and an MLX array."""
    return fx.array(x), mx.array(x)


def flat(params):
    return {k: np.array(v) for k, v in tree_flatten(params)}


def mlx_flat(params):
    return {k: np.array(v) for k, v in mlx_tree_flatten(params)}


def same_linear(rng, din, dout, bias=True):
    """A ferrox and an MLX Linear with the same weights."""
    w = (rng.standard_normal((dout, din)) / np.sqrt(din)).astype(np.float32)
    ours, theirs = nn.Linear(din, dout, bias=bias), mnn.Linear(din, dout, bias=bias)
    ours.weight, theirs.weight = both(w)
    if bias:
        ours.bias, theirs.bias = both(rng.standard_normal(dout).astype(np.float32))
    return ours, theirs


@pytest.mark.parametrize("mode, gs, bits", CONFIGS)
def test_quantized_linear_matches_mlx(rng, mode, gs, bits):
    ours, theirs = same_linear(rng, 256, 24)
    q = ours.to_quantized(group_size=gs, bits=bits, mode=mode)
    mq = theirs.to_quantized(group_size=gs, bits=bits, mode=mode)
    assert type(q) is nn.QuantizedLinear and repr(q) == repr(mq)
    got, want = flat(q.parameters()), mlx_flat(mq.parameters())
    assert got.keys() == want.keys()
    for k in got:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    assert flat(q.trainable_parameters()).keys() == mlx_flat(mq.trainable_parameters()).keys()
    x = rng.standard_normal((3, 5, 256)).astype(np.float32)
    fxx, mxx = both(x)
    np.testing.assert_allclose(np.array(q(fxx)), np.array(mq(mxx)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode, gs, bits", [("affine", 32, 4), ("affine", 64, 8), ("mxfp4", None, None), ("nvfp4", None, None)])
def test_quantized_embedding_matches_mlx(rng, mode, gs, bits):
    w = rng.standard_normal((50, 128)).astype(np.float32)
    ours, theirs = nn.Embedding(50, 128), mnn.Embedding(50, 128)
    ours.weight, theirs.weight = both(w)
    q = ours.to_quantized(gs, bits, mode)
    mq = theirs.to_quantized(gs, bits, mode)
    assert type(q) is nn.QuantizedEmbedding and repr(q) == repr(mq)
    assert flat(q.parameters()).keys() == mlx_flat(mq.parameters()).keys()
    assert not flat(q.trainable_parameters()) and not mlx_flat(mq.trainable_parameters())
    ids = rng.integers(0, 50, size=(4, 7)).astype(np.int32)
    got, want = q(fx.array(ids)), mq(mx.array(ids))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(np.array(got.astype(fx.float32)), np.array(want.astype(mx.float32)))
    x = rng.standard_normal((2, 128)).astype(np.float32)
    fxx, mxx = both(x)
    np.testing.assert_allclose(np.array(q.as_linear(fxx)), np.array(mq.as_linear(mxx)), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="Quantized input is not supported."):
        ours.to_quantized(quantize_input=True)


def test_fresh_layers_have_mlx_shapes_and_defaults():
    for mode, gs, bits in [("affine", 64, 4), ("mxfp4", 32, 4), ("nvfp4", 16, 4), ("mxfp8", 32, 8)]:
        q, mq = nn.QuantizedLinear(128, 16, mode=mode), mnn.QuantizedLinear(128, 16, mode=mode)
        assert (q.group_size, q.bits) == (mq.group_size, mq.bits) == (gs, bits)
        shapes = {k: v.shape for k, v in flat(q.parameters()).items()}
        assert shapes == {k: v.shape for k, v in mlx_flat(mq.parameters()).items()}
        e, me = nn.QuantizedEmbedding(10, 64, mode=mode), mnn.QuantizedEmbedding(10, 64, mode=mode)
        assert {k: v.shape for k, v in flat(e.parameters()).items()} == {
            k: v.shape for k, v in mlx_flat(me.parameters()).items()
        }
    assert "bias" not in nn.QuantizedLinear(64, 8, bias=False)
    with pytest.raises(ValueError, match="Invalid quantization mode 'int4'. Valid modes are: affine, mxfp4, nvfp4, mxfp8."):
        nn.QuantizedLinear(64, 8, mode="int4")


class Tiny(nn.Module):
    def __init__(self, lib):
        super().__init__()
        self.embed = lib.Embedding(32, 64)
        self.proj = lib.Linear(64, 64)
        self.norm = lib.LayerNorm(64)
        self.head = lib.Linear(64, 16, bias=False)

    def __call__(self, ids):
        return self.head(self.norm(self.proj(self.embed(ids))))


class MlxTiny(mnn.Module):
    def __init__(self):
        super().__init__()
        self.embed = mnn.Embedding(32, 64)
        self.proj = mnn.Linear(64, 64)
        self.norm = mnn.LayerNorm(64)
        self.head = mnn.Linear(64, 16, bias=False)

    def __call__(self, ids):
        return self.head(self.norm(self.proj(self.embed(ids))))


def test_quantize_predicates_and_errors():
    model = Tiny(nn)
    nn.quantize(model, class_predicate=lambda path, m: path == "head")
    assert type(model.head) is nn.QuantizedLinear and type(model.proj) is nn.Linear
    nn.quantize(model, class_predicate=lambda path, m: {"group_size": 32, "bits": 8} if path == "proj" else False)
    assert (model.proj.group_size, model.proj.bits) == (32, 8)
    nn.quantize(model, 32, 2)  # the rest: the embedding (LayerNorm has no to_quantized)
    assert (model.embed.group_size, model.embed.bits) == (32, 2) and type(model.norm) is nn.LayerNorm
    with pytest.raises(ValueError, match="Unable to quantize model of type"):
        nn.quantize(Tiny(nn), class_predicate=lambda path, m: path == "norm")
    with pytest.raises(ValueError, match="must return a bool or a dict"):
        nn.quantize(Tiny(nn), class_predicate=lambda path, m: "yes")
    with pytest.raises(ValueError, match="Quantized activations are only supported for 'nvfp4' and 'mxfp8' modes, got affine."):
        nn.Linear(64, 8).to_quantized(quantize_input=True)
    qq = Tiny(nn)
    nn.quantize(qq, mode="nvfp4", quantize_input=True, class_predicate=lambda path, m: path == "head")
    assert type(qq.head) is nn.QQLinear
    # A dict with quantize_input False drops it (Embedding.to_quantized would refuse it).
    nn.quantize(qq, class_predicate=lambda path, m: {"quantize_input": False} if path == "embed" else False)
    assert type(qq.embed) is nn.QuantizedEmbedding


def test_checkpoints_mlx_quantized_load_and_run(tmp_path, rng):
    theirs = MlxTiny()
    mnn.quantize(theirs, group_size=32, bits=4)
    path = str(tmp_path / "model.safetensors")
    mx.save_safetensors(path, dict(mlx_tree_flatten(theirs.parameters())))
    ours = Tiny(nn)
    nn.quantize(ours, group_size=32, bits=4)
    ours.load_weights(path)
    ids = rng.integers(0, 32, size=(2, 9)).astype(np.int32)
    np.testing.assert_allclose(np.array(ours(fx.array(ids))), np.array(theirs(mx.array(ids))), rtol=1e-4, atol=1e-4)
    # A model quantized another way does not take the checkpoint.
    other = Tiny(nn)
    nn.quantize(other, group_size=64, bits=8)
    with pytest.raises(ValueError):
        other.load_weights(path)


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8"])
def test_qqlinear_train_and_eval(rng, mode):
    w = (rng.standard_normal((32, 64)) / 8).astype(np.float32)
    linear = nn.Linear(64, 32, bias=False)
    linear.weight = fx.array(w)
    layer = nn.QQLinear.from_linear(linear, mode=mode)
    m = mnn.QQLinear(64, 32, mode=mode)
    assert repr(layer) == repr(m)
    assert layer.training and layer.weight.dtype == fx.float32 and "scales" not in layer
    x = fx.array(rng.standard_normal((4, 64)).astype(np.float32))
    want = fx.qqmm(x, fx.array(w), group_size=layer.group_size, bits=layer.bits, mode=mode)
    np.testing.assert_array_equal(np.array(layer(x)), np.array(want))
    # Training: the float weight gets a gradient.
    grads = nn.value_and_grad(layer, lambda model, x: model(x).sum())(layer, x)[1]
    assert grads["weight"].shape == (32, 64)
    layer.eval()
    assert layer.weight.dtype == fx.uint32 and "scales" in layer
    wq, scales = fx.quantize(fx.array(w), mode=mode)
    np.testing.assert_array_equal(np.array(layer.weight), np.array(wq))
    want = fx.qqmm(x, wq, scales=scales, group_size=layer.group_size, bits=layer.bits, mode=mode)
    np.testing.assert_array_equal(np.array(layer(x)), np.array(want))
    assert repr(layer) == repr(m.eval())
    layer.train()
    m.train()
    # Back to floats, in dequantize's dtype (bfloat16 for these modes, as MLX).
    assert str(layer.weight.dtype).split(".")[-1] == str(m.weight.dtype).split(".")[-1] == "bfloat16"
    assert "scales" not in layer
    with pytest.raises(NotImplementedError, match="QQLinear does not support bias yet."):
        nn.QQLinear.from_linear(nn.Linear(64, 32))
