"""The rest of MLX's Python surface (issue 38, item 5): array-API aliases,
constants, print options, array protocols (pickle, copy, format, complex,
array namespace), AxisError, the clean namespace, ferrox.metal,
ferrox.distributed and ferrox.nn.layers.distributed. Behaviour is compared
with MLX where MLX defines it."""

import copy
import importlib
import pickle
import warnings

import mlx.core as mx
import numpy as np
import pytest

import ferrox as fx
import ferrox.nn as nn
from conftest import ALL_DTYPES, NP, fxd

# --------------------------------------------------------------------------
# aliases and constants
# --------------------------------------------------------------------------

ALIASES = {
    "acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
    "atanh": "arctanh", "atan2": "arctan2", "bitwise_left_shift": "left_shift",
    "bitwise_right_shift": "right_shift", "cumulative_prod": "cumprod", "cumulative_sum": "cumsum",
    "empty": "zeros", "empty_like": "zeros_like", "pow": "power",
}  # fmt: skip


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_alias_is_the_same_function_as_in_mlx(alias):
    assert getattr(mx, alias) is getattr(mx, ALIASES[alias])
    assert getattr(fx, alias) is getattr(fx, ALIASES[alias])


def test_alias_values_match_mlx():
    x = [0.1, 0.5, 0.9]
    for name in ["acos", "asin", "atan", "asinh", "atanh"]:
        np.testing.assert_allclose(np.array(getattr(fx, name)(fx.array(x))), np.array(getattr(mx, name)(mx.array(x))))
    assert fx.pow(fx.array([2, 3]), 3).tolist() == mx.pow(mx.array([2, 3]), 3).tolist() == [8, 27]
    assert fx.bitwise_left_shift(fx.array([1, 2]), 2).tolist() == [4, 8]
    assert fx.cumulative_sum(fx.array([1, 2, 3])).tolist() == [1, 3, 6]
    assert fx.empty((2, 3)).shape == (2, 3) and fx.empty((2,), dtype=fx.int32).dtype == fx.int32


def test_matrix_transpose():
    a = fx.arange(24).reshape(2, 3, 4)
    assert fx.matrix_transpose(a).shape == (2, 4, 3)
    np.testing.assert_array_equal(np.array(fx.matrix_transpose(a)), np.swapaxes(np.arange(24).reshape(2, 3, 4), -1, -2))
    with pytest.raises(ValueError, match=r"\[matrix_transpose\] Input array must have at least 2 dimensions"):
        fx.matrix_transpose(fx.array([1, 2]))


def test_zeros_like_and_ones_like_take_a_dtype():
    a = fx.array([[1, 2]], dtype=fx.int32)
    for f, g in [(fx.zeros_like, mx.zeros_like), (fx.ones_like, mx.ones_like)]:
        out = f(a, dtype=fx.float16)
        ref = g(mx.array([[1, 2]]), dtype=mx.float16)
        assert out.dtype == fx.float16 and out.shape == (1, 2) and out.tolist() == ref.tolist()
        assert f(a).dtype == fx.int32
        assert fx.empty_like(a, fx.bool_).dtype == fx.bool_


def test_constants_match_mlx():
    for name in ["e", "euler_gamma", "inf", "pi"]:
        assert getattr(fx, name) == getattr(mx, name)
    assert np.isnan(fx.nan) and fx.newaxis is None
    assert fx.zeros((2,))[fx.newaxis].shape == (1, 2)


def test_set_wired_limit_matches_mlx():
    assert fx.set_wired_limit(1 << 20) == mx.set_wired_limit(1 << 20) == 0
    assert fx.set_wired_limit(0) == 0


def test_force_fused_attention():
    q = fx.random.normal((1, 2, 4, 8), key=fx.random.key(0))
    plain = fx.fast.scaled_dot_product_attention(q, q, q, scale=0.5)
    fused = fx.fast.scaled_dot_product_attention(q, q, q, scale=0.5, force_fused=True)
    assert fx.array_equal(plain, fused).item()


# --------------------------------------------------------------------------
# printing
# --------------------------------------------------------------------------


@pytest.fixture
def restore_printoptions():
    yield
    fx.set_printoptions()
    mx.set_printoptions()


PRINTED = [
    ([0.125, -0.0, float("nan"), 2.5, 0.375, 1.123456789], "float32"),
    ([0.125, -0.0, float("inf"), 2.5, 0.375], "float16"),
    ([1.5, 100.25], "bfloat16"),
    ([1e20, -3.25], "float64"),
    ([1 + 2j, -0.5 - 0.25j], "complex64"),
    ([1, 2, 300], "int32"),
    ([True, False], "bool_"),
]


@pytest.mark.parametrize("precision", [-1, -2, 0, 2, 8])
def test_printing_honours_the_precision_as_mlx(precision, restore_printoptions):
    fx.set_printoptions(precision=precision)
    mx.set_printoptions(precision=precision)
    assert fx.get_printoptions().precision == precision
    for values, name in PRINTED:
        mdt = getattr(mx, name)
        assert repr(fx.array(values, dtype=fxd(name))) == repr(mx.array(values, dtype=mdt)), name


def test_printoptions_context_restores(restore_printoptions):
    a = fx.array([1.123456789, 2.0])
    before = repr(a)
    fx.set_printoptions(precision=4)
    with fx.printoptions(precision=1) as ctx:
        assert ctx is not None
        assert repr(a) == "array([1.1, 2.0], dtype=float32)"
        assert fx.get_printoptions().precision == 1
    assert fx.get_printoptions().precision == 4
    fx.set_printoptions()
    assert repr(a) == before == "array([1.12346, 2], dtype=float32)"
    assert str(a) == repr(a)


def test_print_options_object():
    opts = fx.PrintOptions()
    assert opts.precision == -1
    opts.precision = 3
    assert opts.precision == 3 and fx.PrintOptions(precision=5).precision == 5
    fx.get_printoptions().precision = 7  # a copy: the global options do not change
    assert fx.get_printoptions().precision == -1
    with pytest.raises(TypeError):
        fx.set_printoptions(precision=1.5)


def test_a_precision_too_large_to_print_is_refused(restore_printoptions):
    fx.set_printoptions(precision=3)
    for bad in (65536, 2**31 - 1):
        with pytest.raises(ValueError, match="set_printoptions"):
            fx.set_printoptions(precision=bad)
        with pytest.raises(ValueError, match="set_printoptions"):
            with fx.printoptions(precision=bad):
                pass
    assert fx.get_printoptions().precision == 3
    fx.set_printoptions(precision=65535)
    assert repr(fx.array([0.5])).startswith("array([0.5000")


# --------------------------------------------------------------------------
# array protocols
# --------------------------------------------------------------------------

PICKLE_VALUES = {
    "bool_": [[True, False, True]],
    "complex64": [[1 + 2j, -3.5 - 0.25j, 0j]],
}


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_pickle_every_dtype(name, device):
    values = PICKLE_VALUES.get(name, [[1, 2, 3], [4, 5, 126]])
    a = fx.array(values, dtype=fxd(name)) * 1  # computed on the device under test
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        b = pickle.loads(pickle.dumps(a, protocol=protocol))
        assert isinstance(b, fx.array) and b.dtype == a.dtype and b.shape == a.shape
        assert fx.array_equal(a, b).item()
    if name == "bfloat16":
        assert pickle.loads(pickle.dumps(fx.array([1.5, -2.25], dtype=fx.bfloat16))).tolist() == [1.5, -2.25]
    else:
        np.testing.assert_array_equal(np.array(pickle.loads(pickle.dumps(a))), np.array(values, dtype=NP[name]))


def test_pickle_views_scalars_and_empty(device):
    base = fx.arange(12, dtype=fx.float32).reshape(3, 4)
    for a in [base.T, base[::-1, 1::2], fx.broadcast_to(fx.array([1.0, 2.0]), (3, 2)), fx.array(7), fx.zeros((0, 3))]:
        b = pickle.loads(pickle.dumps(a))
        assert b.shape == a.shape and b.dtype == a.dtype and b.tolist() == a.tolist()
    nested = pickle.loads(pickle.dumps({"w": [base, fx.array(1.5, dtype=fx.float16)]}))
    assert nested["w"][0].tolist() == base.tolist() and nested["w"][1].item() == 1.5


def test_setstate_rejects_bad_state():
    a = fx.array(0)
    with pytest.raises(ValueError, match="bytes do not hold a float32 array"):
        a.__setstate__((b"\x00", (3,), "float32"))
    with pytest.raises(ValueError, match="Invalid pickle state"):
        a.__setstate__((b"\x00" * 4, (1,), "float128"))
    with pytest.raises(ValueError, match="Invalid pickle state"):
        a.__setstate__("nope")


def test_copy_and_deepcopy(device):
    a = fx.array([1.0, 2.0, 3.0])
    for c in [copy.copy(a), copy.deepcopy(a), copy.deepcopy({"x": [a]})["x"][0]]:
        assert c is not a and c.tolist() == [1.0, 2.0, 3.0]
        a_before = a.tolist()
        c[0] = 9.0  # an update of the copy leaves the original alone
        assert a.tolist() == a_before and c.tolist()[0] == 9.0


def test_format_as_numpy_and_mlx():
    for spec in [".3f", ">8.2f", "", "e"]:
        assert format(fx.array(3.14159), spec) == format(mx.array(3.14159), spec)
    assert f"{fx.array(7, dtype=fx.uint8):04d}" == "0007"
    assert f"{fx.array(2.5, dtype=fx.bfloat16):.3f}" == "2.500"
    assert f"{fx.array(True)}" == "True"
    assert f"{fx.array([1, 2])}" == "array([1, 2], dtype=int32)"
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{fx.array([2.5]):.2f}"


def test_complex():
    assert complex(fx.array(1 + 2j)) == complex(mx.array(1 + 2j)) == 1 + 2j
    assert complex(fx.array([3.0])) == 3 + 0j and complex(fx.array(True)) == 1 + 0j
    with pytest.raises(ValueError):
        complex(fx.array([1.0, 2.0]))


def test_array_namespace():
    assert fx.array([1]).__array_namespace__() is fx
    with pytest.raises(ValueError, match="api_version"):
        fx.array([1]).__array_namespace__(api_version="2023.12")


# --------------------------------------------------------------------------
# AxisError
# --------------------------------------------------------------------------

AXIS_ERRORS = [
    lambda x: fx.sum(x, axis=3),
    lambda x: fx.expand_dims(x, 5),
    lambda x: fx.swapaxes(x, 0, 4),
    lambda x: fx.cumsum(x, axis=4),
    lambda x: fx.take(x, fx.array([0]), axis=3),
    lambda x: fx.moveaxis(x, 0, 5),
    lambda x: fx.sort(x, axis=3),
    lambda x: fx.concatenate([x, x], axis=3),
    lambda x: fx.softmax(x, axis=2),
]


@pytest.mark.parametrize("op", range(len(AXIS_ERRORS)))
def test_out_of_range_axis_is_value_error_and_index_error(op):
    with pytest.raises(fx.AxisError) as info:
        AXIS_ERRORS[op](fx.zeros((2, 3)))
    assert isinstance(info.value, ValueError) and isinstance(info.value, IndexError)
    assert issubclass(fx.AxisError, ValueError) and issubclass(fx.AxisError, IndexError)


# --------------------------------------------------------------------------
# namespace
# --------------------------------------------------------------------------


def test_namespace_has_no_private_core_names():
    private = {n for n in fx._core.__all__ if n.startswith("_") and not n.startswith("__")}
    assert private, "expected _core to have private helpers"
    assert private.isdisjoint(dir(fx))
    namespace = {}
    exec("from ferrox import *", namespace)
    assert not [n for n in namespace if n.startswith("_") and n != "__builtins__"]
    assert "array" in namespace and "distributed" in namespace


# --------------------------------------------------------------------------
# ferrox.metal
# --------------------------------------------------------------------------


def public(module):
    return sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n)))


def test_metal_names_match_mlx():
    assert [n for n in public(fx.metal)] == public(mx.metal)


def test_metal_behaves_as_mlx_without_metal():
    assert fx.metal.is_available() is False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert fx.metal.get_active_memory() == fx.get_active_memory()
        assert fx.metal.get_cache_memory() == fx.get_cache_memory()
        assert isinstance(fx.metal.get_peak_memory(), int)
        fx.metal.reset_peak_memory()
        previous = fx.metal.set_cache_limit(1 << 20)
        assert fx.set_cache_limit(previous) == 1 << 20
        previous = fx.set_memory_limit(1 << 30)
        assert fx.metal.set_memory_limit(previous) == 1 << 30
        assert fx.metal.set_wired_limit(10) == 0
        fx.metal.clear_cache()
        info = fx.metal.device_info()
        assert info == ({} if not fx.is_available(fx.gpu) else fx.device_info(fx.gpu))
    with pytest.warns(DeprecationWarning, match="ferrox.get_active_memory"):
        fx.metal.get_active_memory()
    with pytest.raises(RuntimeError, match="Metal is not available"):
        fx.metal.start_capture("trace.gputrace")
    with pytest.raises(RuntimeError, match="Metal is not available"):
        fx.metal.stop_capture()


# --------------------------------------------------------------------------
# ferrox.distributed
# --------------------------------------------------------------------------


def test_distributed_names_match_mlx():
    assert public(fx.distributed) == public(mx.distributed)
    assert sorted(n for n in dir(fx.distributed.Group) if not n.startswith("_")) == ["rank", "size", "split"]


def test_distributed_group_of_one_as_mlx():
    d, m = fx.distributed, mx.distributed
    g, mg = d.init(), m.init()
    assert (g.rank(), g.size()) == (mg.rank(), mg.size()) == (0, 1)
    assert d.init(backend="ring").size() == 1
    assert d.is_available() is False and d.is_available("mpi") is False
    x = fx.array([[1.0, 2.0], [3.0, 4.0]])
    for name in ["all_sum", "all_max", "all_min", "all_gather", "sum_scatter"]:
        out = getattr(d, name)(x)
        ref = getattr(m, name)(mx.array([[1.0, 2.0], [3.0, 4.0]]))
        assert out.tolist() == ref.tolist() and out.dtype == x.dtype
        assert getattr(d, name)(x, group=g, stream=fx.cpu).tolist() == x.tolist()
    assert d.all_sum(1.5).item() == 1.5
    for ours, theirs in [
        (lambda: d.send(x, 0), lambda: m.send(mx.array(1), 0)),
        (lambda: d.recv((2,), fx.float32, 0), lambda: m.recv((2,), mx.float32, 0)),
        (lambda: d.recv_like(x, 0), lambda: m.recv_like(mx.array(1), 0)),
    ]:
        with pytest.raises(ValueError) as ref:
            theirs()
        with pytest.raises(ValueError, match=str(ref.value)):
            ours()
    with pytest.raises(RuntimeError, match="Cannot split the distributed group further"):
        g.split(0)
    with pytest.raises(RuntimeError, match="initialize"):
        d.init(strict=True)
    with pytest.raises(ValueError, match="valid values for backend"):
        d.init(backend="bogus")
    with pytest.raises(TypeError):
        d.Group()
    with pytest.raises(TypeError):
        d.all_sum(x, group=3)


# --------------------------------------------------------------------------
# ferrox.nn: module paths and distributed layers
# --------------------------------------------------------------------------

LAYER_MODULES = [
    "activations", "base", "containers", "convolution", "convolution_transpose", "distributed", "dropout",
    "embedding", "linear", "normalization", "pooling", "positional_encoding", "recurrent", "transformer",
    "upsample",
]  # fmt: skip


@pytest.mark.parametrize("name", LAYER_MODULES)
def test_layer_module_paths_import(name):
    theirs = importlib.import_module(f"mlx.nn.layers.{name}")
    ours = importlib.import_module(f"ferrox.nn.layers.{name}")
    defined = [n for n in dir(theirs) if not n.startswith("_") and getattr(getattr(theirs, n), "__module__", None) == theirs.__name__]
    assert defined
    assert [n for n in defined if not hasattr(ours, n)] == []


@pytest.mark.parametrize("name", LAYER_MODULES)
def test_layer_modules_are_attributes_of_nn_as_in_mlx(name):
    # MLX's `from mlx.nn.layers import *` leaves them on mlx.nn: nn.activations.sigmoid.
    assert getattr(nn, name) is importlib.import_module(f"ferrox.nn.layers.{name}")
    assert hasattr(importlib.import_module("mlx.nn"), name)


def test_activation_functions_import_from_activations():
    from ferrox.nn.layers.activations import gelu, relu, silu

    assert gelu is nn.gelu and relu is nn.relu and silu is nn.silu
    assert nn.layers.gelu is nn.gelu


def test_shard_linear_for_a_group_of_one_computes_the_linear():
    from ferrox.nn.layers.distributed import shard_inplace, shard_linear, sum_gradients

    fx.random.seed(3)
    lin = nn.Linear(8, 6)
    x = fx.random.normal((2, 8))
    ref = lin(x)
    a2s = shard_linear(lin, "all-to-sharded")
    s2a = shard_linear(lin, "sharded-to-all", segments=[0.5])
    assert isinstance(a2s, nn.AllToShardedLinear) and isinstance(s2a, nn.ShardedToAllLinear)
    for layer in [a2s, s2a]:
        np.testing.assert_allclose(np.array(layer(x)), np.array(ref), rtol=1e-5, atol=1e-6)
    assert "input_dims=8, output_dims=6, bias=True" in repr(a2s)

    def loss(model, x):
        return model(x).sum()

    _, g_ref = nn.value_and_grad(lin, loss)(lin, x)
    _, g = nn.value_and_grad(a2s, loss)(a2s, x)
    np.testing.assert_allclose(np.array(g["weight"]), np.array(g_ref["weight"]), rtol=1e-5)
    assert sum_gradients(fx.distributed.init())(x) is x
    shard_inplace(lin, "all-to-sharded", segments=3)
    np.testing.assert_allclose(np.array(lin(x)), np.array(ref), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="not supported"):
        shard_linear(lin, "rows")
    assert nn.fully_shard(lin) is lin


def test_quantized_sharded_linear_layers():
    from ferrox.nn.layers.distributed import shard_linear

    fx.random.seed(4)
    a2s = nn.QuantizedAllToShardedLinear(64, 16, bias=True, group_size=32, bits=4)
    x = fx.random.normal((3, 64))
    a2s.bias = fx.arange(16, dtype=fx.float32)
    expected = fx.quantized_matmul(
        x, a2s.weight, scales=a2s.scales, biases=a2s.biases, transpose=True, group_size=32, bits=4
    ) + a2s.bias
    np.testing.assert_allclose(np.array(a2s(x)), np.array(expected), rtol=1e-5, atol=1e-5)
    assert a2s.trainable_parameters() == {}
    a2s.unfreeze()
    assert a2s.trainable_parameters() == {}
    # A quantized linear layer (duck-typed: weight, scales, biases, group_size, bits) shards too.
    for sharding, cls in [("all-to-sharded", nn.QuantizedAllToShardedLinear), ("sharded-to-all", nn.QuantizedShardedToAllLinear)]:
        sharded = shard_linear(a2s, sharding)
        assert isinstance(sharded, cls)
        np.testing.assert_allclose(np.array(sharded(x)), np.array(expected), rtol=1e-5, atol=1e-5)
    assert "input_dims=64, output_dims=16" in repr(sharded)


def test_fully_sharded_module_and_gradient_helpers():
    from ferrox.nn.utils import clip_grad_norm_sharded

    lin = nn.Linear(4, 4)
    wrapped = nn.FullyShardedModule(lin)  # wrapping by hand works for a group of one too
    x = fx.ones((2, 4))
    np.testing.assert_allclose(np.array(wrapped(x)), np.array(lin(x)), rtol=1e-6)

    def loss(model, x):
        return (model(x) ** 2).sum()

    _, g_ref = nn.value_and_grad(lin, loss)(lin, x)
    _, g = nn.value_and_grad(wrapped, loss)(wrapped, x)
    np.testing.assert_allclose(np.array(g["module"]["weight"]), np.array(g_ref["weight"]), rtol=1e-5)
    grads = {"w": fx.full((3,), 4.0), "b": [fx.full((4,), 3.0)]}
    clipped, norm = clip_grad_norm_sharded(grads, 1.0)
    assert abs(norm.item() - np.sqrt(3 * 16 + 4 * 9)) < 1e-4
    assert abs(np.linalg.norm(np.array(clipped["w"])) ** 2 + np.linalg.norm(np.array(clipped["b"][0])) ** 2 - 1) < 1e-4
    assert nn.average_gradients(grads) is grads
    assert nn.average_gradients(grads, group=fx.distributed.init()) is grads


def test_random_state_as_mlx():
    state = fx.random.state
    assert len(state) == len(mx.random.state) == 1
    fx.random.seed(3)
    mx.random.seed(3)
    assert state[0].tolist() == state[-1].tolist() == mx.random.state[0].tolist() == [0, 3]
    assert state[0].dtype == fx.uint32
    fx.random.uniform()
    mx.random.uniform()
    assert [k.tolist() for k in state] == [mx.random.state[0].tolist()]
    with pytest.raises(IndexError, match="random state index out of range"):
        state[1]
    # Assignable (compile's captured random.state is written back through
    # it; MLX's binding refuses the assignment with a TypeError).
    state[0] = fx.random.key(1)
    assert state[0].tolist() == fx.random.key(1).tolist()
    with pytest.raises(TypeError):
        state[0] = [0, 1]
