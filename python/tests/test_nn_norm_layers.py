"""ferrox.nn BatchNorm, InstanceNorm, GroupNorm, Dropout2d and Dropout3d:
forward passes and running statistics against NumPy float64 formulas
written here, MLX's layers given the same weights and inputs, frozen
running statistics, repr, argument errors, 16-bit dtypes, and gradients
(against MLX and finite differences in float64)."""

import numpy as np
import pytest

import ferrox as fx
import ferrox.nn as nn
from ferrox.utils import tree_flatten, tree_map

try:
    import mlx.core as mx
    import mlx.nn as mlx_nn
except ImportError:  # the comparisons with MLX need it
    mx = mlx_nn = None

needs_mlx = pytest.mark.skipif(mx is None, reason="mlx is not importable")


def N(a):
    """A ferrox (or MLX) array as float64 NumPy."""
    if isinstance(a, fx.array) and a.dtype == fx.bfloat16:  # no buffer format for bfloat16
        a = a.astype(fx.float32)
    return np.array(a, dtype=np.float64)


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(N(got), want, rtol=rtol, atol=atol)


def randomize(module, rng):
    """Random values for every trainable parameter."""
    module.update(
        tree_map(lambda v: fx.array(rng.standard_normal(v.shape).astype(np.float32)), module.trainable_parameters())
    )
    return module


def to_mlx(module, mlx_module):
    """Loads ``module``'s parameters (running statistics included) into ``mlx_module``."""
    mlx_module.load_weights([(k, mx.array(np.array(v))) for k, v in tree_flatten(module.parameters())])
    return mlx_module


def affine(module, y):
    """``y * weight + bias`` when the module has them."""
    return y * N(module.weight) + N(module.bias) if "weight" in module else y


def ref_batch_norm(x, eps):
    axes = tuple(range(x.ndim - 1))
    return (x - x.mean(axis=axes)) / np.sqrt(x.var(axis=axes) + eps)


def ref_instance_norm(x, eps):
    axes = tuple(range(1, x.ndim - 1))
    return (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)


def ref_group_norm(x, groups, eps, pytorch_compatible):
    """Channel ``c`` is in group ``c // (C / groups)`` (PyTorch) or ``c % groups`` (MLX's default)."""
    C = x.shape[-1]
    channels = np.arange(C)
    group_of = channels // (C // groups) if pytorch_compatible else channels % groups
    out = np.empty_like(x)
    for g in range(groups):
        sel = x[..., group_of == g]
        axes = tuple(range(1, x.ndim))
        mean = sel.mean(axis=axes, keepdims=True)
        var = sel.var(axis=axes, keepdims=True)
        out[..., group_of == g] = (sel - mean) / np.sqrt(var + eps)
    return out


# --------------------------------------------------------------------------
# BatchNorm
# --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(6, 3), (4, 5, 3), (2, 3, 4, 3)])
@pytest.mark.parametrize("affine_", [True, False])
def test_batch_norm_training_and_eval(shape, affine_):
    rng = np.random.default_rng(0)
    bn = randomize(nn.BatchNorm(3, eps=1e-3, momentum=0.3, affine=affine_), rng)
    assert ("weight" in bn) == affine_ and ("bias" in bn) == affine_
    run_mean, run_var = np.zeros(3), np.ones(3)
    for step in range(3):
        x = rng.standard_normal(shape) * (step + 1) + step
        y = bn(fx.array(x, dtype=fx.float32))
        close(y, affine(bn, ref_batch_norm(x, 1e-3)), rtol=1e-4, atol=1e-5)
        axes = tuple(range(x.ndim - 1))
        run_mean = 0.7 * run_mean + 0.3 * x.mean(axis=axes)
        run_var = 0.7 * run_var + 0.3 * x.var(axis=axes, ddof=1)
        close(bn.running_mean, run_mean, rtol=1e-5, atol=1e-6)
        close(bn.running_var, run_var, rtol=1e-5, atol=1e-6)
    bn.eval()
    x = rng.standard_normal(shape)
    close(bn(fx.array(x, dtype=fx.float32)), affine(bn, (x - run_mean) / np.sqrt(run_var + 1e-3)), rtol=1e-4)
    close(bn.running_mean, run_mean, rtol=1e-5, atol=1e-6)  # unchanged in evaluation mode
    # A single sample is fine in evaluation mode.
    assert bn(fx.zeros((1, 3))).shape == (1, 3)


def test_batch_norm_without_running_stats():
    rng = np.random.default_rng(1)
    bn = nn.BatchNorm(4, track_running_stats=False)
    assert sorted(bn.parameters()) == ["bias", "weight"]
    x = rng.standard_normal((5, 4))
    close(bn(fx.array(x, dtype=fx.float32)), ref_batch_norm(x, 1e-5), rtol=1e-4)
    bn.eval()  # batch statistics also in evaluation mode
    close(bn(fx.array(x, dtype=fx.float32)), ref_batch_norm(x, 1e-5), rtol=1e-4)


def test_batch_norm_running_stats_are_frozen():
    bn = nn.BatchNorm(3)
    assert sorted(bn.parameters()) == ["bias", "running_mean", "running_var", "weight"]
    assert sorted(bn.trainable_parameters()) == ["bias", "weight"]
    np.testing.assert_array_equal(N(bn.running_mean), np.zeros(3))
    np.testing.assert_array_equal(N(bn.running_var), np.ones(3))
    np.testing.assert_array_equal(N(bn.weight), np.ones(3))
    np.testing.assert_array_equal(N(bn.bias), np.zeros(3))
    assert bn.unfreeze() is bn
    assert sorted(bn.trainable_parameters()) == ["bias", "weight"]
    bn.unfreeze(keys=["running_mean"])
    assert sorted(bn.trainable_parameters()) == ["bias", "weight"]
    bn.freeze()
    assert bn.trainable_parameters() == {}
    # Without running statistics unfreeze has nothing to keep frozen.
    assert sorted(nn.BatchNorm(2, track_running_stats=False).unfreeze().trainable_parameters()) == ["bias", "weight"]


def test_batch_norm_repr_and_errors():
    assert repr(nn.BatchNorm(3)) == "BatchNorm(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    assert repr(nn.BatchNorm(2, eps=1e-3, momentum=0.5, affine=False, track_running_stats=False)) == (
        "BatchNorm(2, eps=0.001, momentum=0.5, affine=False, track_running_stats=False)"
    )
    with pytest.raises(ValueError, match=r"\[BatchNorm\] 'eps' must be positive but got 0.0"):
        nn.BatchNorm(3, eps=0.0)
    bn = nn.BatchNorm(3)
    for shape in [(3,), (1, 2, 2, 2, 3)]:
        with pytest.raises(ValueError, match=rf"\[BatchNorm\] Expected input tensor to have 2, 3 or 4 dim.*{len(shape)}"):
            bn(fx.zeros(shape))
    with pytest.raises(ValueError, match=r"\[BatchNorm\] Expected an input with 3 features .* got 4"):
        bn(fx.zeros((5, 4)))
    with pytest.raises(ValueError, match=r"\[BatchNorm\] BatchNorm training requires more than one value per channel"):
        bn(fx.zeros((1, 1, 3)))


@needs_mlx
@pytest.mark.parametrize("kwargs", [{}, dict(affine=False, momentum=0.25), dict(track_running_stats=False)])
def test_batch_norm_matches_mlx(kwargs):
    rng = np.random.default_rng(2)
    bn = randomize(nn.BatchNorm(4, **kwargs), rng)
    ref = to_mlx(bn, mlx_nn.BatchNorm(4, **kwargs))
    for _ in range(3):
        x = (rng.standard_normal((3, 5, 4)) * 2 + 1).astype(np.float32)
        close(bn(fx.array(x)), N(ref(mx.array(x))), rtol=1e-5, atol=1e-6)
    for key, value in tree_flatten(bn.parameters()):
        close(value, N(dict(tree_flatten(ref.parameters()))[key]), rtol=1e-6, atol=1e-7)
    bn.eval()
    ref.eval()
    x = rng.standard_normal((2, 4)).astype(np.float32)
    close(bn(fx.array(x)), N(ref(mx.array(x))), rtol=1e-5, atol=1e-6)
    assert repr(bn) == repr(ref)
    assert sorted(bn.trainable_parameters()) == sorted(ref.trainable_parameters())


# --------------------------------------------------------------------------
# InstanceNorm
# --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 4, 3), (1, 2, 3, 2, 3)])
@pytest.mark.parametrize("affine_", [False, True])
def test_instance_norm(shape, affine_):
    rng = np.random.default_rng(3)
    norm = randomize(nn.InstanceNorm(3, eps=1e-4, affine=affine_), rng)
    assert sorted(norm.parameters()) == (["bias", "weight"] if affine_ else [])
    x = rng.standard_normal(shape) * 3 + 2
    want = affine(norm, ref_instance_norm(x, 1e-4))
    close(norm(fx.array(x, dtype=fx.float32)), want, rtol=1e-4, atol=1e-5)
    norm.set_dtype(fx.float64)
    close(norm(fx.array(x, dtype=fx.float64)), want, rtol=1e-11, atol=1e-12)


def test_instance_norm_repr_and_errors():
    assert repr(nn.InstanceNorm(4)) == "InstanceNorm(4, eps=1e-05, affine=False)"
    assert repr(nn.InstanceNorm(4, eps=1e-3, affine=True)) == "InstanceNorm(4, eps=0.001, affine=True)"
    np.testing.assert_array_equal(N(nn.InstanceNorm(2, affine=True).weight), np.ones(2))
    with pytest.raises(ValueError, match=r"\[InstanceNorm\] 'eps' must be positive but got -1"):
        nn.InstanceNorm(4, eps=-1)
    with pytest.raises(ValueError, match=r"\[InstanceNorm\] .*at least 3 dimensions \(N, ..., C\) but the input has 2"):
        nn.InstanceNorm(4)(fx.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"\[InstanceNorm\] Expected an input with 4 features .* got 3"):
        nn.InstanceNorm(4)(fx.zeros((2, 5, 3)))


# --------------------------------------------------------------------------
# GroupNorm
# --------------------------------------------------------------------------


@pytest.mark.parametrize("pytorch_compatible", [False, True])
@pytest.mark.parametrize("shape,groups", [((2, 6), 3), ((2, 5, 6), 2), ((2, 3, 4, 6), 3), ((1, 2, 2, 3, 4), 4)])
def test_group_norm(shape, groups, pytorch_compatible):
    rng = np.random.default_rng(4)
    C = shape[-1]
    norm = randomize(nn.GroupNorm(groups, C, eps=1e-4, pytorch_compatible=pytorch_compatible), rng)
    x = rng.standard_normal(shape) * 2 + np.arange(C)  # per-channel offsets: the grouping matters
    want = affine(norm, ref_group_norm(x, groups, 1e-4, pytorch_compatible))
    close(norm(fx.array(x, dtype=fx.float32)), want, rtol=1e-4, atol=1e-4)
    norm.set_dtype(fx.float64)
    # eps is a float32 (MLX's fast.layer_norm takes a float): ~1e-8 relative in float64.
    close(norm(fx.array(x, dtype=fx.float64)), want, rtol=1e-7, atol=1e-9)


def test_group_norm_without_affine_and_repr():
    x = np.random.default_rng(5).standard_normal((2, 3, 4))
    norm = nn.GroupNorm(2, 4, affine=False)
    assert norm.parameters() == {}
    close(norm(fx.array(x, dtype=fx.float32)), ref_group_norm(x, 2, 1e-5, False), rtol=1e-4, atol=1e-5)
    assert repr(norm) == "GroupNorm(2, 4, eps=1e-05, affine=False, pytorch_compatible=False)"
    assert repr(nn.GroupNorm(1, 3, pytorch_compatible=True)) == (
        "GroupNorm(1, 3, eps=1e-05, affine=True, pytorch_compatible=True)"
    )


def test_group_norm_errors():
    with pytest.raises(ValueError, match=r"\[GroupNorm\] 'eps' must be positive but got 0"):
        nn.GroupNorm(2, 4, eps=0)
    with pytest.raises(ValueError, match=r"The number of groups \(0\) must be a positive integer"):
        nn.GroupNorm(0, 4)
    with pytest.raises(ValueError, match=r"The number of features \(-4\) must be a positive integer"):
        nn.GroupNorm(2, -4)
    with pytest.raises(ValueError, match=r"The number of features \(5\) must be evenly divisible by .* \(2\)"):
        nn.GroupNorm(2, 5)
    with pytest.raises(ValueError, match=r"\[GroupNorm\] Expected an input with at least 2 dimensions .* got 1"):
        nn.GroupNorm(2, 4)(fx.zeros((4,)))
    with pytest.raises(ValueError, match=r"\[GroupNorm\] Expected an input with 4 features .* got 6"):
        nn.GroupNorm(2, 4, affine=False)(fx.zeros((2, 3, 6)))


# --------------------------------------------------------------------------
# MLX, 16-bit dtypes, gradients
# --------------------------------------------------------------------------

LAYERS = [
    (lambda lib: lib.InstanceNorm(4, affine=True), (2, 3, 5, 4)),
    (lambda lib: lib.InstanceNorm(4), (2, 7, 4)),
    (lambda lib: lib.GroupNorm(2, 4), (2, 3, 5, 4)),
    (lambda lib: lib.GroupNorm(2, 4, pytorch_compatible=True), (2, 3, 5, 4)),
    (lambda lib: lib.GroupNorm(4, 8, affine=False, pytorch_compatible=True), (3, 2, 8)),
    (lambda lib: lib.BatchNorm(4), (3, 5, 4)),
]


@needs_mlx
@pytest.mark.parametrize("index", range(len(LAYERS)))
def test_matches_mlx_with_gradients(index):
    make, shape = LAYERS[index]
    rng = np.random.default_rng(6)
    layer = randomize(make(nn), rng)
    ref = to_mlx(layer, make(mlx_nn))
    assert repr(layer) == repr(ref)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    t = rng.standard_normal(shape).astype(np.float32)
    close(layer(fx.array(x)), N(ref(mx.array(x))), rtol=1e-5, atol=1e-5)

    def loss_fx(x):
        return (layer(x) * fx.array(t)).sum()

    def loss_mx(x):
        return (ref(x) * mx.array(t)).sum()

    value, grads = nn.value_and_grad(layer, loss_fx)(fx.array(x))
    if layer.trainable_parameters():  # MLX's value_and_grad refuses a model without any
        ref_value, ref_grads = mlx_nn.value_and_grad(ref, loss_mx)(mx.array(x))
        close(value, N(ref_value), rtol=1e-5, atol=1e-4)
        assert sorted(k for k, _ in tree_flatten(grads)) == sorted(k for k, _ in tree_flatten(ref_grads))
        for (key, g), (_, rg) in zip(tree_flatten(grads), tree_flatten(ref_grads)):
            close(g, N(rg), rtol=1e-4, atol=1e-4)
    else:
        assert grads == {}
        close(value, N(loss_mx(mx.array(x))), rtol=1e-5, atol=1e-4)
    close(fx.grad(loss_fx)(fx.array(x)), N(mx.grad(loss_mx)(mx.array(x))), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("index", range(len(LAYERS)))
def test_16bit_forward(index, dtype):
    make, shape = LAYERS[index]
    rng = np.random.default_rng(7)
    layer = randomize(make(nn), rng)
    x = rng.standard_normal(shape).astype(np.float32)
    want = N(layer(fx.array(x)))
    ref = to_mlx(layer, make(mlx_nn)) if mx is not None else None
    layer.set_dtype(getattr(fx, dtype))
    got = layer(fx.array(x).astype(getattr(fx, dtype)))
    tol = 3e-2 if dtype == "float16" else 1e-1
    close(got, want, rtol=tol, atol=tol)
    if ref is not None:  # the result dtype is MLX's
        ref.set_dtype(getattr(mx, dtype))
        ref_dtype = ref(mx.array(x).astype(getattr(mx, dtype))).dtype
        assert str(got.dtype).split(".")[-1] == str(ref_dtype).split(".")[-1]


@pytest.mark.parametrize("index", range(len(LAYERS)))
def test_input_gradient_finite_differences_float64(index):
    make, shape = LAYERS[index]
    rng = np.random.default_rng(8)
    layer = randomize(make(nn), rng)
    layer.set_dtype(fx.float64)
    x = rng.standard_normal(shape)
    t = fx.array(rng.standard_normal(shape), dtype=fx.float64)

    def loss(x):
        return (layer(x) * t).sum()

    g = N(fx.grad(loss)(fx.array(x, dtype=fx.float64))).reshape(-1)
    eps = 1e-6
    for i in rng.choice(x.size, size=5, replace=False):
        diffs = []
        for sign in (1, -1):
            bumped = x.reshape(-1).copy()
            bumped[i] += sign * eps
            diffs.append(float(loss(fx.array(bumped.reshape(shape), dtype=fx.float64))))
        np.testing.assert_allclose(g[i], (diffs[0] - diffs[1]) / (2 * eps), rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------
# Dropout2d, Dropout3d
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls,shape,spatial",
    [
        (nn.Dropout2d, (4, 3, 5, 50), (1, 2)),
        (nn.Dropout2d, (3, 5, 200), (0, 1)),
        (nn.Dropout3d, (4, 2, 3, 2, 50), (1, 2, 3)),
        (nn.Dropout3d, (2, 3, 2, 200), (0, 1, 2)),
    ],
)
def test_channel_dropout(cls, shape, spatial):
    fx.random.seed(9)
    x = np.random.default_rng(10).uniform(1, 2, shape)  # never zero
    layer = cls(p=0.25)
    y = N(layer(fx.array(x, dtype=fx.float32)))
    kept = y != 0
    # Whole channels are dropped: the mask is constant over the spatial axes.
    assert (kept == kept.all(axis=spatial, keepdims=True)).all()
    np.testing.assert_allclose(y[kept], (x / 0.75)[kept], rtol=1e-6)
    dropped = 1 - kept.all(axis=spatial).mean()
    assert 0.15 < dropped < 0.35
    layer.eval()
    close(layer(fx.array(x, dtype=fx.float32)), x, rtol=1e-7, atol=0)
    layer.train()
    close(cls(p=0.0)(fx.array(x, dtype=fx.float32)), x, rtol=1e-7, atol=0)


def test_channel_dropout_repr_and_errors():
    assert repr(nn.Dropout2d()) == "Dropout2d(p=0.5)"
    assert repr(nn.Dropout3d(0.25)) == "Dropout3d(p=0.25)"
    if mlx_nn is not None:
        assert repr(nn.Dropout2d(0.3)) == repr(mlx_nn.Dropout2d(0.3))
    for cls in (nn.Dropout2d, nn.Dropout3d):
        for p in (-0.1, 1.0):
            with pytest.raises(ValueError, match=rf"The dropout probability {p} is not in \[0, 1\)"):
                cls(p)
    with pytest.raises(ValueError, match=r"\[Dropout2d\] Received input with 2 dimensions. Expected 3 or 4"):
        nn.Dropout2d()(fx.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"\[Dropout3d\] Received input with 6 dimensions. Expected 4 or 5"):
        nn.Dropout3d().eval()(fx.zeros((1, 1, 1, 1, 1, 1)))  # checked in evaluation mode too
