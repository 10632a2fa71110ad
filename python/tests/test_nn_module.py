"""ferrox.nn.Module: MLX's Module API (attributes, parameter trees,
freezing, updates, training mode, save/load), nn.value_and_grad,
nn.utils.checkpoint and average_gradients, and the names ferrox.nn
exports."""

import numpy as np
import pytest

import ferrox as fx
import ferrox.nn as nn
from ferrox.utils import tree_flatten, tree_map

try:
    import mlx.nn as mlx_nn
except ImportError:  # the export comparison with MLX needs it
    mlx_nn = None


def mlp():
    return nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))


def keys(tree):
    return [k for k, _ in tree_flatten(tree)]


# --------------------------------------------------------------------------
# attributes and parameter trees
# --------------------------------------------------------------------------


def test_attributes_go_to_the_dict_or_the_object():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.val = None
            self.val = fx.array(1.0)
            self.size = 3
            self.things = [fx.zeros((2,)), {"w": fx.ones((1,))}]

    m = Model()
    assert set(m.keys()) == {"val", "things"} and m.size == 3 and "size" not in m
    assert m.val.item() == 1.0
    m.val = None  # a non-array value leaves the dict
    assert m.val is None and "val" not in m
    m.val = fx.array([3])
    assert m.val.item() == 3 and "val" in m
    del m.val
    assert not hasattr(m, "val")
    del m.size
    assert not hasattr(m, "size")
    with pytest.raises(AttributeError):
        m.missing
    assert m.state is m
    m.state["hello"] = "world"
    assert m["hello"] == "world"


def test_parameters_and_trainable_parameters():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.weights = {"w1": fx.zeros((2, 2)), "w2": fx.ones((2, 2))}
            self.stack = [fx.ones((1,)), nn.Linear(1, 1, bias=False)]
            self._hidden = fx.ones((3,))  # underscore: not a parameter
            self.name = "m"

    m = Model()
    params = tree_flatten(m.parameters(), destination={})
    assert sorted(params) == ["lin.bias", "lin.weight", "stack.0", "stack.1.weight", "weights.w1", "weights.w2"]
    assert params["weights.w2"].tolist() == [[1.0, 1.0], [1.0, 1.0]]
    m.freeze(keys=["w1"], recurse=False)  # w1 is a key of a dict entry, not of m
    assert len(tree_flatten(m.trainable_parameters())) == 6
    m.freeze(keys="weights", recurse=False)
    assert "weights" not in m.trainable_parameters()
    assert sorted(keys(m.trainable_parameters())) == ["lin.bias", "lin.weight", "stack.0", "stack.1.weight"]


def test_children_leaf_modules_and_modules():
    m = nn.Sequential(
        nn.Sequential(nn.Linear(2, 10), nn.relu),
        nn.Sequential(nn.Linear(10, 10), nn.ReLU()),
        nn.Linear(10, 1),
        fx.sigmoid,
    )
    children = m.children()
    assert list(children) == ["layers"] and len(children["layers"]) == 4
    assert children["layers"][3] == {} and children["layers"][2] is m.layers[2]
    assert len(tree_flatten(children, is_leaf=nn.Module.is_module)) == 3
    leaves = tree_flatten(m.leaf_modules(), is_leaf=nn.Module.is_module)
    assert [k for k, _ in leaves] == ["layers.0.layers.0", "layers.1.layers.0", "layers.1.layers.1", "layers.2"]
    assert leaves[0][1] is m.layers[0].layers[0] and leaves[3][1] is m.layers[2]
    named = dict(m.named_modules())
    assert set(named) == {
        "",
        "layers.0",
        "layers.0.layers.0",
        "layers.1",
        "layers.1.layers.0",
        "layers.1.layers.1",
        "layers.2",
    }
    assert named[""] is m and named["layers.1.layers.1"] is m.layers[1].layers[1]
    assert len(m.modules()) == 7 and all(isinstance(x, nn.Module) for x in m.modules())


def test_train_and_eval_reach_every_module():
    m = nn.Sequential(nn.Sequential(nn.Dropout(0.5)), nn.Linear(2, 2))
    assert all(x.training for x in m.modules())
    assert m.eval() is m and not any(x.training for x in m.modules())
    assert m.train() is m and all(x.training for x in m.modules())
    m.train(False)
    assert not m.layers[0].layers[0].training


def test_repr_is_mlx_s():
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 1, bias=False)))
    assert repr(m) == (
        "Sequential(\n"
        "  (layers.0): Linear(input_dims=2, output_dims=3, bias=True)\n"
        "  (layers.1): ReLU()\n"
        "  (layers.2): Sequential(\n"
        "    (layers.0): Linear(input_dims=3, output_dims=1, bias=False)\n"
        "  )\n"
        ")"
    )
    assert repr(nn.ReLU()) == "ReLU()"


# --------------------------------------------------------------------------
# freeze / unfreeze
# --------------------------------------------------------------------------


def test_freeze_and_unfreeze():
    m = mlp()
    assert m.freeze() is m
    assert keys(m.trainable_parameters()) == []
    assert sorted(keys(m.parameters())) == ["layers.0.bias", "layers.0.weight", "layers.2.bias", "layers.2.weight"]
    m.unfreeze(keys="bias")
    assert sorted(keys(m.trainable_parameters())) == ["layers.0.bias", "layers.2.bias"]
    m.unfreeze()
    assert len(keys(m.trainable_parameters())) == 4
    m.freeze(keys=["weight"])
    assert sorted(keys(m.trainable_parameters())) == ["layers.0.bias", "layers.2.bias"]
    m.freeze(keys=["weight"])  # idempotent
    assert len(keys(m.trainable_parameters())) == 2
    m.unfreeze().layers[0].freeze(recurse=False)
    assert sorted(keys(m.trainable_parameters())) == ["layers.2.bias", "layers.2.weight"]


def test_freeze_recurse_false_touches_only_this_module():
    m = nn.Sequential(nn.Linear(2, 2))
    m.freeze(recurse=False)  # m has no parameters of its own
    assert len(keys(m.trainable_parameters())) == 2


def test_freeze_strict_keys():
    m = nn.Sequential(nn.Linear(2, 2, bias=False), nn.Linear(2, 2))
    m.freeze(keys="bias", strict=True)  # present somewhere: accepted
    assert not any(k.endswith("bias") for k in keys(m.trainable_parameters()))
    m.unfreeze(keys="bias", strict=True)
    assert any(k.endswith("bias") for k in keys(m.trainable_parameters()))
    with pytest.raises(KeyError, match="Module doesn't contain member not_a_member"):
        m.freeze(keys="not_a_member", strict=True)
    with pytest.raises(KeyError, match="Module doesn't contain member not_a_member"):
        m.unfreeze(keys=["not_a_member"], strict=True)
    with pytest.raises(KeyError, match="bias"):
        m.layers[0].freeze(keys="bias", strict=True, recurse=False)
    m.freeze(keys="not_a_member")  # not strict: ignored
    assert len(keys(m.trainable_parameters())) == 3


# --------------------------------------------------------------------------
# update / update_modules / apply / set_dtype
# --------------------------------------------------------------------------


def test_update_replaces_only_what_is_given():
    m = mlp()
    w = fx.ones((3, 2))
    assert m.update({"layers": [{"weight": w}]}) is m
    assert m.layers[0].weight is w
    old = m.layers[2].bias
    m.update({"layers": [{}, {}, {"bias": fx.zeros((1,))}]})
    assert m.layers[2].bias is not old and m.layers[2].bias.tolist() == [0.0]
    m.update(tree_map(lambda p: p * 0, m.parameters()))
    assert all(float(fx.abs(p).sum()) == 0 for _, p in tree_flatten(m.parameters()))


def test_update_strictness():
    m = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
    with pytest.raises(ValueError, match='Module does not have parameter named "value"'):
        m.update({"layers": [{"value": 0}]})
    with pytest.raises(ValueError, match="Received invalid type: str"):
        m.update({"layers": ["hello"]})
    with pytest.raises(ValueError, match="Received invalid type: str"):
        m.update({"layers": [{"weight": "hi"}]})
    with pytest.raises(ValueError, match="List index 2 is out of bounds for destination of length 2"):
        m.update({"layers": [{}, {}, {"weight": fx.ones((3, 3))}]})
    m.update({"layers": [{"value": 0}, {}, {"weight": 1}], "other": 1}, strict=False)
    assert "value" not in m.layers[0] and len(m.layers) == 2


def test_update_modules():
    m = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
    with pytest.raises(ValueError, match='Module does not have sub-module named "values"'):
        m.update_modules({"values": [0, 1]})
    with pytest.raises(ValueError, match="Received invalid type: int"):
        m.update_modules({"layers": [0, 1]})

    class WithArrays(nn.Module):
        def __init__(self):
            super().__init__()
            self.test = fx.array(1.0)
            self.list = [fx.array(1.0), fx.array(2.0)]

    w = WithArrays()
    with pytest.raises(ValueError, match="Received invalid type: str"):
        w.update_modules({"test": "hi"})
    with pytest.raises(ValueError, match="Received invalid type: str"):
        w.update_modules({"list": ["hi"]})

    new = nn.Linear(3, 4)
    assert m.update_modules({"layers": [{}, new]}) is m
    assert m.layers[1] is new and m.layers[1].weight.shape == (4, 3)
    with pytest.raises(ValueError, match="List index 2 is out of bounds"):
        m.update_modules({"layers": [{}, {}, nn.Linear(3, 4)]})
    m.update_modules({"layers": [{}, {}, nn.Linear(5, 5)]}, strict=False)
    assert len(m.layers) == 2

    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.stuff = [nn.Linear(2, 2), 0, nn.Linear(2, 2)]
            self.more_stuff = {"hi": nn.Linear(2, 2), "bye": 0}

    mixed = Mixed()
    mixed.update_modules(mixed.leaf_modules())  # always valid


def test_apply_and_filter_and_map():
    m = mlp()
    before = {k: np.array(v) for k, v in tree_flatten(m.parameters())}
    assert m.apply(lambda p: p * 2) is m
    for k, v in tree_flatten(m.parameters()):
        np.testing.assert_array_equal(np.array(v), 2 * before[k])
    m.apply(lambda p: p * 0, filter_fn=lambda mod, k, v: k != "bias" and nn.Module.valid_parameter_filter(mod, k, v))
    assert float(fx.abs(m.layers[0].weight).sum()) == 0 and float(fx.abs(m.layers[0].bias).sum()) > 0
    shapes = m.filter_and_map(nn.Module.valid_parameter_filter, map_fn=lambda p: p.shape)
    assert shapes == {"layers": [{"weight": (3, 2), "bias": (3,)}, {}, {"weight": (1, 3), "bias": (1,)}]}
    biases = m.filter_and_map(lambda mod, k, v: isinstance(v, (list, nn.Module)) or k == "bias")
    assert keys(biases) == ["layers.0.bias", "layers.2.bias"]


def test_set_dtype():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.ids = fx.array([1, 2], dtype=fx.int32)

    m = Model()
    m.set_dtype(fx.float16)
    assert m.lin.weight.dtype == fx.float16 and m.ids.dtype == fx.int32
    m.set_dtype(fx.float32, predicate=None)
    assert m.lin.weight.dtype == fx.float32 and m.ids.dtype == fx.float32
    m.set_dtype(fx.bfloat16, predicate=lambda d: False)
    assert m.lin.weight.dtype == fx.float32


def test_chaining():
    m = mlp()
    n_params = len(m.parameters())
    m.freeze().unfreeze()
    assert len(m.parameters()) == n_params
    assert not m.update(m.parameters()).eval().training
    assert m.train().training


# --------------------------------------------------------------------------
# save_weights / load_weights
# --------------------------------------------------------------------------


def assert_same_parameters(a, b):
    fa, fb = tree_flatten(a.parameters()), tree_flatten(b.parameters())
    assert [k for k, _ in fa] == [k for k, _ in fb]
    for (_, x), (_, y) in zip(fa, fb):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(np.array(x), np.array(y))


@pytest.mark.parametrize("ext", ["npz", "safetensors"])
def test_save_load_round_trip(tmp_path, ext):
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 2), nn.LayerNorm(2))
    m.layers[3].set_dtype(fx.float16)
    path = tmp_path / f"model.{ext}"
    m.save_weights(str(path))
    loaded = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 2), nn.LayerNorm(2))
    assert loaded.load_weights(str(path)) is loaded
    assert_same_parameters(m, loaded)
    again = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 2), nn.LayerNorm(2))
    again.load_weights(path)  # a path object works too
    assert_same_parameters(m, again)
    x = fx.array(np.random.default_rng(0).standard_normal((4, 2)).astype(np.float32))
    np.testing.assert_array_equal(np.array(m(x)), np.array(loaded(x)))


def test_save_keys_are_dotted(tmp_path):
    m = mlp()
    m.save_weights(str(tmp_path / "w.safetensors"))
    assert sorted(fx.load(str(tmp_path / "w.safetensors"))) == sorted(keys(m.parameters()))
    with pytest.raises(ValueError, match=r"Unsupported file extension for .*w\.bin\. Use '\.npz' or '\.safetensors'"):
        m.save_weights(str(tmp_path / "w.bin"))


def test_load_weights_checks():
    m = nn.Linear(2, 2)
    weights = [("weight", fx.ones((2, 2)))]
    with pytest.raises(ValueError, match="Missing 1 parameters: \nbias."):
        m.load_weights(weights)
    m.load_weights(weights, strict=False)
    assert m.weight.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    with pytest.raises(ValueError, match="Received 1 parameters not in model: \nweihgt."):
        m.load_weights([("weihgt", fx.ones((2, 2))), ("weight", fx.ones((2, 2))), ("bias", fx.ones((2,)))])
    m.load_weights([("weihgt", fx.ones((2, 2)))], strict=False)
    with pytest.raises(ValueError, match="Received 2 parameters not in model: \nbias2,\nbias3."):
        m.load_weights(
            [
                ("weight", fx.ones((2, 2))),
                ("bias", fx.ones((2,))),
                ("bias3", fx.ones((2,))),
                ("bias2", fx.ones((2,))),
            ]
        )
    with pytest.raises(ValueError, match=r"Expected shape \(2,\) but received shape \(2, 1\) for parameter bias"):
        m.load_weights([("weight", fx.ones((2, 2))), ("bias", fx.ones((2, 1)))])
    with pytest.raises(ValueError, match="Expected fx.array but received <class 'int'> for parameter bias"):
        m.load_weights([("weight", fx.ones((2, 2))), ("bias", 3)])
    assert m.load_weights([], strict=False) is m


def test_load_weights_non_strict_skips_missing_layers():
    m = nn.Sequential(nn.Linear(2, 2))
    m.load_weights(
        [
            ("layers.0.weight", fx.ones((2, 2))),
            ("layers.0.bias", fx.ones((2,))),
            ("layers.1.weight", fx.ones((2, 2))),
            ("layers.1.bias", fx.ones((2,))),
        ],
        strict=False,
    )
    assert m.layers[0].weight.tolist() == [[1.0, 1.0], [1.0, 1.0]] and len(m.layers) == 1


def test_load_weights_file_errors(tmp_path):
    m = nn.Linear(2, 2)
    nn.Linear(3, 2).save_weights(str(tmp_path / "other.npz"))
    with pytest.raises(ValueError, match=r"Expected shape \(2, 2\) but received shape \(2, 3\) for parameter weight"):
        m.load_weights(str(tmp_path / "other.npz"))
    with pytest.raises((ValueError, OSError, FileNotFoundError)):
        m.load_weights(str(tmp_path / "missing.npz"))


# --------------------------------------------------------------------------
# nn.value_and_grad, checkpoint, average_gradients
# --------------------------------------------------------------------------


def test_value_and_grad_of_a_linear_model(rng):
    m = nn.Linear(3, 2)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    y = rng.standard_normal((5, 2)).astype(np.float32)

    def loss(xb, yb):
        return fx.mean(fx.square(m(xb) - yb))

    value, grads = nn.value_and_grad(m, loss)(fx.array(x), fx.array(y))
    W, b = np.array(m.weight, dtype=np.float64), np.array(m.bias, dtype=np.float64)
    r = x @ W.T + b - y
    np.testing.assert_allclose(float(value), np.mean(r**2), rtol=1e-5)
    assert set(grads) == {"weight", "bias"}
    np.testing.assert_allclose(np.array(grads["weight"]), 2 * r.T @ x / r.size, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.array(grads["bias"]), 2 * r.sum(0) / r.size, rtol=1e-4, atol=1e-6)


def test_value_and_grad_follows_trainable_parameters():
    m = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1))
    m.layers[0].freeze(keys="bias")
    x = fx.ones((3, 2))
    fn = nn.value_and_grad(m, lambda x: (m(x).sum(), "aux"))
    (value, aux), grads = fn(x)
    assert aux == "aux" and value.shape == ()
    assert tree_map(lambda g: g.shape, grads) == tree_map(lambda p: p.shape, m.trainable_parameters())
    assert keys(grads) == ["layers.0.weight", "layers.2.weight", "layers.2.bias"]
    assert grads["layers"][1] == {}
    m.freeze()
    assert keys(nn.value_and_grad(m, lambda x: m(x).sum())(x)[1]) == []


def test_value_and_grad_training_step_reduces_the_loss(rng):
    m = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
    x = fx.array(rng.standard_normal((32, 2)).astype(np.float32))
    y = fx.sum(x, axis=1, keepdims=True)
    step = nn.value_and_grad(m, lambda: fx.mean(fx.square(m(x) - y)))
    first, _ = step()
    for _ in range(30):
        loss, grads = step()
        m.update(tree_map(lambda p, g: p - 0.1 * g, m.parameters(), grads))
    assert float(step()[0]) < 0.5 * float(first)


def test_checkpoint_matches_the_plain_call(rng):
    m = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 2))
    x = fx.array(rng.standard_normal((5, 3)).astype(np.float32))
    ckpt = nn.utils.checkpoint(m)
    np.testing.assert_allclose(np.array(ckpt(x)), np.array(m(x)), rtol=1e-6)
    plain = nn.value_and_grad(m, lambda x: m(x).sum())(x)
    checked = nn.value_and_grad(m, lambda x: nn.utils.checkpoint(m)(x).sum())(x)
    np.testing.assert_allclose(float(checked[0]), float(plain[0]), rtol=1e-6)
    for (k1, g1), (k2, g2) in zip(tree_flatten(plain[1]), tree_flatten(checked[1])):
        assert k1 == k2
        np.testing.assert_allclose(np.array(g2), np.array(g1), rtol=1e-5, atol=1e-6)
    # the input's gradient flows through too, with non-array arguments passed along
    def fn(x, k, opts, mask):
        assert mask is None
        return m(x * opts["s"]) * k

    scaled = nn.utils.checkpoint(m, fn)
    gx = fx.grad(lambda x: scaled(x, 3.0, {"s": fx.array(2.0)}, mask=None).sum())(x)
    want = fx.grad(lambda x: (m(x * 2.0) * 3.0).sum())(x)
    np.testing.assert_allclose(np.array(gx), np.array(want), rtol=1e-5, atol=1e-6)


def test_average_gradients_with_one_process():
    grads = {"w": fx.ones((2,)), "b": [fx.zeros((1,))]}
    assert nn.average_gradients(grads) is grads
    assert nn.average_gradients(grads, all_reduce_size=0) is grads

    class Group:
        def __init__(self, n):
            self.n = n

        def size(self):
            return self.n

    assert nn.average_gradients(grads, group=Group(1)) is grads
    with pytest.raises(ValueError, match="average_gradients"):
        nn.average_gradients(grads, group=Group(2))


# --------------------------------------------------------------------------
# exports
# --------------------------------------------------------------------------

OUT_OF_SCOPE = {
    # quantized and distributed layers come in later issues
    "AllToShardedLinear", "FullyShardedModule", "QQLinear", "QuantizedAllToShardedLinear",
    "QuantizedEmbedding", "QuantizedLinear", "QuantizedShardedToAllLinear", "ShardedToAllLinear",
    "fully_shard", "quantize",
    # MLX's submodule names
    "activations", "base", "containers", "convolution", "convolution_transpose", "distributed", "dropout",
    "embedding", "linear", "normalization", "pooling", "positional_encoding", "quantized", "recurrent",
    "transformer", "upsample",
}  # fmt: skip

EXPECTED = """ALiBi Bilinear CELU Dropout ELU Embedding GELU GLU GRU HardShrink HardTanh Hardswish Identity LSTM
LayerNorm LeakyReLU Linear LogSigmoid LogSoftmax Mish Module MultiHeadAttention PReLU RMSNorm RNN ReLU ReLU2 ReLU6
RoPE SELU Sequential SiLU Sigmoid SinusoidalPositionalEncoding Softmax Softmin Softplus Softshrink Softsign Step
Tanh Transformer TransformerDecoder TransformerDecoderLayer TransformerEncoder TransformerEncoderLayer
average_gradients celu elu gelu gelu_approx gelu_fast_approx glu hard_shrink hard_tanh hardswish init layers
leaky_relu log_sigmoid log_softmax losses mish prelu relu relu2 relu6 selu sigmoid silu softmax softmin softplus
softshrink softsign step tanh utils value_and_grad""".split()


def test_exports():
    missing = [name for name in EXPECTED if not hasattr(nn, name)]
    assert missing == []
    assert callable(nn.utils.checkpoint) and callable(nn.utils.value_and_grad)
    assert issubclass(nn.Linear, nn.Module) and issubclass(nn.Module, dict)


@pytest.mark.skipif(mlx_nn is None, reason="mlx is not importable")
def test_exports_cover_mlx_nn():
    mlx_names = {n for n in dir(mlx_nn) if not n.startswith("_")}
    assert sorted(mlx_names - OUT_OF_SCOPE - set(dir(nn))) == []
