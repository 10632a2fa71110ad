"""ferrox.nn.init: shapes and dtypes, statistics of large draws, fans as
MLX counts them, determinism (seed and key), sparsity per row,
orthogonality, argument errors, and equality with MLX's values after the
same seed where MLX is installed."""

import importlib.util
import math

import numpy as np
import pytest

import ferrox as fx
from ferrox._core import nn as core
from ferrox.nn import init

HAVE_MLX = importlib.util.find_spec("mlx") is not None
needs_mlx = pytest.mark.skipif(not HAVE_MLX, reason="mlx is not installed")

BIG = (300, 400)


def values(a):
    return np.array(a.astype(fx.float32), dtype=np.float64)


def check_stats(a, mean, std, tol=0.02):
    v = values(a)
    assert abs(v.mean() - mean) < tol * max(std, 1.0), (v.mean(), mean)
    assert abs(v.std() / std - 1) < tol, (v.std(), std)


# name -> (initializer, extra call arguments)
INITIALIZERS = {
    "constant": (lambda d: init.constant(0.5, dtype=d), {}),
    "normal": (lambda d: init.normal(mean=1.0, std=2.0, dtype=d), {}),
    "uniform": (lambda d: init.uniform(low=-1.0, high=3.0, dtype=d), {}),
    "identity": (lambda d: init.identity(dtype=d), {}),
    "glorot_normal": (lambda d: init.glorot_normal(dtype=d), {"gain": 2.0}),
    "glorot_uniform": (lambda d: init.glorot_uniform(dtype=d), {}),
    "he_normal": (lambda d: init.he_normal(dtype=d), {"mode": "fan_out"}),
    "he_uniform": (lambda d: init.he_uniform(dtype=d), {"gain": 0.5}),
    "sparse": (lambda d: init.sparse(0.3, dtype=d), {}),
    "orthogonal": (lambda d: init.orthogonal(gain=1.5, dtype=d), {}),
}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(INITIALIZERS))
def test_shapes_and_dtypes(name, dtype):
    make, kwargs = INITIALIZERS[name]
    a = fx.zeros((6, 6), dtype=fx.int32)
    out = make(getattr(fx, dtype))(a, **kwargs)
    assert out.shape == (6, 6)
    assert out.dtype == getattr(fx, dtype)
    assert np.all(np.isfinite(values(out)))


def test_default_dtype_is_float32():
    for name, (_, kwargs) in INITIALIZERS.items():
        make = getattr(init, name)
        fn = make(0.5) if name in ("constant", "sparse") else make()
        assert fn(fx.zeros((4, 4)), **kwargs).dtype == fx.float32, name


def test_distribution_statistics():
    a = fx.zeros(BIG)
    check_stats(init.normal(mean=1.0, std=2.0)(a), 1.0, 2.0)
    u = values(init.uniform(low=-1.0, high=3.0)(a))
    assert u.min() >= -1.0 and u.max() < 3.0
    check_stats(fx.array(u), 1.0, 4 / math.sqrt(12))
    fan_sum = BIG[0] + BIG[1]
    check_stats(init.glorot_normal()(a, gain=1.5), 0.0, 1.5 * math.sqrt(2 / fan_sum))
    limit = math.sqrt(6 / fan_sum)
    g = values(init.glorot_uniform()(a))
    assert np.abs(g).max() <= limit
    check_stats(fx.array(g), 0.0, limit / math.sqrt(3))
    check_stats(init.he_normal()(a), 0.0, 1 / math.sqrt(BIG[1]))
    check_stats(init.he_normal()(a, mode="fan_out", gain=2.0), 0.0, 2 / math.sqrt(BIG[0]))
    h = values(init.he_uniform()(a, mode="fan_out"))
    assert np.abs(h).max() <= math.sqrt(3 / BIG[0])
    check_stats(fx.array(h), 0.0, 1 / math.sqrt(BIG[0]))


def test_fans_of_convolution_weights():
    # (out, kh, kw, in): fan_in = in * kh * kw, fan_out = out * kh * kw.
    w = fx.zeros((64, 3, 3, 40))
    check_stats(init.he_normal()(w), 0.0, 1 / math.sqrt(40 * 9), tol=0.04)
    check_stats(init.he_normal()(w, mode="fan_out"), 0.0, 1 / math.sqrt(64 * 9), tol=0.04)
    check_stats(init.glorot_normal()(w), 0.0, math.sqrt(2 / (40 * 9 + 64 * 9)), tol=0.04)


def test_seed_and_key_determinism():
    a = fx.zeros((6, 6))
    for name, (make, kwargs) in INITIALIZERS.items():
        fx.random.seed(42)
        first = values(make(fx.float32)(a, **kwargs))
        fx.random.seed(42)
        again = values(make(fx.float32)(a, **kwargs))
        np.testing.assert_array_equal(first, again, err_msg=name)
    key, other = fx.random.key(1), fx.random.key(2)
    for fn in (core.normal, core.uniform, core.glorot_normal, core.glorot_uniform, core.he_normal, core.he_uniform,
               core.orthogonal):
        x, y, z = (values(fn((5, 7), key=k)) for k in (key, key, other))
        np.testing.assert_array_equal(x, y, err_msg=fn.__name__)
        assert not np.array_equal(x, z), fn.__name__
    x, y = (values(core.sparse((5, 7), 0.5, key=key)) for _ in range(2))
    np.testing.assert_array_equal(x, y)


def test_constant_and_identity():
    a = fx.zeros((2, 3))
    np.testing.assert_array_equal(np.array(init.constant(-1.25)(a)), np.full((2, 3), -1.25, np.float32))
    assert np.array(init.constant(2.7, dtype=fx.int32)(a)).tolist() == [[2, 2, 2], [2, 2, 2]]
    assert init.constant(1.0)(fx.zeros((0, 4))).shape == (0, 4)
    assert init.constant(3.0)(fx.array(1.0)).shape == ()
    np.testing.assert_array_equal(np.array(init.identity(dtype=fx.int32)(fx.zeros((3, 3)))), np.eye(3, dtype=np.int32))
    with pytest.raises(ValueError, match=r"The input array must be a square matrix but got shape \(2, 3\)\."):
        init.identity()(a)


@pytest.mark.parametrize("sparsity, zeros", [(0.0, 0), (0.25, 3), (0.5, 5), (0.95, 10), (1.0, 10)])
def test_sparse_zeroes_each_row(sparsity, zeros):
    out = values(init.sparse(sparsity, mean=3.0, std=0.5)(fx.zeros((8, 10))))
    assert [int(np.sum(r == 0)) for r in out] == [zeros] * 8
    nonzero = out[out != 0]
    if nonzero.size > 40:
        assert abs(nonzero.mean() - 3.0) < 0.2
    # Rows choose their zeroed columns independently.
    if 0 < zeros < 10:
        assert len({tuple(r == 0) for r in out}) > 1


@pytest.mark.parametrize("shape", [(6, 6), (3, 8), (8, 3), (1, 5), (0, 4)])
def test_orthogonal(shape):
    q = values(init.orthogonal(gain=2.0)(fx.zeros(shape)))
    assert q.shape == shape
    rows, cols = shape
    gram = q @ q.T if rows <= cols else q.T @ q
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-5)
    assert init.orthogonal(dtype=fx.bfloat16)(fx.zeros(shape)).dtype == fx.bfloat16


def test_argument_errors():
    vec = fx.zeros((5,))
    for make in (init.glorot_normal, init.glorot_uniform, init.he_normal, init.he_uniform):
        with pytest.raises(
            ValueError,
            match=r"Glorot / He initialization requires at least 2 dimensional input but input with 1 dimensions\.",
        ):
            make()(vec)
        with pytest.raises(ValueError):
            make()(fx.zeros((0, 0)))
    for make in (init.he_normal, init.he_uniform):
        with pytest.raises(ValueError, match="Invalid mode: fan_avg. Valid modes are: fan_in, fan_out"):
            make()(fx.zeros((2, 2)), mode="fan_avg")
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse(0.5)(vec)
    with pytest.raises(ValueError, match=r"\[sparse\] sparsity must be in \[0, 1\]"):
        init.sparse(-0.5)(fx.zeros((2, 2)))
    with pytest.raises(ValueError, match="Orthogonal initialization requires a 2D array but got a 3D array."):
        init.orthogonal()(fx.zeros((2, 2, 2)))
    with pytest.raises(ValueError):
        init.normal(dtype=fx.int32)(fx.zeros((2, 2)))
    with pytest.raises(TypeError):
        init.normal(std="wide")(fx.zeros((2, 2)))
    with pytest.raises(TypeError):
        core.glorot_uniform((2, 2), dtype="float32")


def test_face_exports_every_initializer():
    assert sorted(init.__all__) == sorted(INITIALIZERS)


# --------------------------------------------------------------------------
# Equality with MLX after the same seed (ferrox's generator is MLX's, bit for bit)
# --------------------------------------------------------------------------

MLX_SAME = [
    ("normal", (0.5, 2.0), {}),
    ("uniform", (-2.0, 1.0), {}),
    ("glorot_normal", (), {"gain": 1.7}),
    ("glorot_uniform", (), {}),
    ("he_normal", (), {"mode": "fan_out"}),
    ("he_uniform", (), {"gain": 3.0}),
    ("sparse", (0.4,), {}),
]


@needs_mlx
@pytest.mark.parametrize("name, args, kwargs", MLX_SAME, ids=[c[0] for c in MLX_SAME])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_equal_to_mlx_after_the_same_seed(name, args, kwargs, dtype):
    import mlx.core as mx
    import mlx.nn as mnn

    fx.random.seed(7)
    mx.random.seed(7)
    got = getattr(init, name)(*args, dtype=getattr(fx, dtype))(fx.zeros((9, 13)), **kwargs)
    want = getattr(mnn.init, name)(*args, dtype=getattr(mx, dtype))(mx.zeros((9, 13)), **kwargs)
    np.testing.assert_array_equal(np.array(got.astype(fx.float32)), np.array(want.astype(mx.float32)))


@needs_mlx
@pytest.mark.parametrize("shape", [(7, 7), (4, 9), (9, 4)])
def test_orthogonal_matches_mlx_after_the_same_seed(shape):
    import mlx.core as mx
    import mlx.nn as mnn

    fx.random.seed(3)
    mx.random.seed(3)
    got = init.orthogonal(gain=0.5)(fx.zeros(shape))
    want = mnn.init.orthogonal(gain=0.5)(mx.zeros(shape))
    np.testing.assert_allclose(np.array(got), np.array(want), atol=2e-5)


@needs_mlx
@pytest.mark.parametrize("name", sorted(INITIALIZERS))
def test_signatures_match_mlx(name):
    import inspect

    import mlx.core as mx
    import mlx.nn as mnn

    def params(f, dtype_module):
        out = []
        for p in inspect.signature(f).parameters.values():
            default = p.default
            if default is dtype_module.float32:
                default = "float32"
            out.append((p.name, default))
        return out

    assert params(getattr(init, name), fx) == params(getattr(mnn.init, name), mx)
    # The returned initializers take MLX's arguments too.
    args = (0.5,) if name in ("constant", "sparse") else ()
    ours, theirs = getattr(init, name)(*args), getattr(mnn.init, name)(*args)
    assert [p.name for p in inspect.signature(ours).parameters.values()] == [
        p.name for p in inspect.signature(theirs).parameters.values()
    ]
