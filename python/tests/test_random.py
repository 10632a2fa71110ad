"""ferrox.random: MLX's key-based generator (threefry2x32 laid out as MLX's
RandomBits).

* key, split, bits, uniform and normal equal MLX bit for bit: against MLX
  itself when it is installed, against golden values from MLX's C++
  `random::bits` (which `mlx.core.random` does not expose) and against a
  NumPy model of RandomBits everywhere, and between the CPU and the GPU
  where there is one;
* every sampler has its distribution checked (loose moment bounds on a
  fixed key), its argument errors, seeding and vmap over keys.
"""

import importlib.util
import math
import threading

import numpy as np
import pytest

import ferrox as fx
import ferrox.random  # noqa: F401  (the submodule imports by name, as mlx.core.random)
from conftest import round_bf16

HAVE_MLX = importlib.util.find_spec("mlx") is not None
HAVE_GPU = fx.cuda.is_available()
needs_mlx = pytest.mark.skipif(not HAVE_MLX, reason="mlx is not installed")
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU")

SEEDS = [0, 1, 42, 0xDEADBEEFCAFE, 2**64 - 1]
SHAPES = [(), (0,), (1,), (2,), (3,), (5,), (7,), (8,), (2, 3), (3, 0, 2), (33, 31), (4097,)]


# --------------------------------------------------------------------------
# A NumPy model of MLX's RandomBits (mlx/backend/cpu/primitives.cpp)
# --------------------------------------------------------------------------

ROTATIONS = [[13, 15, 26, 6], [17, 29, 16, 24]]


def threefry(key, c0, c1):
    """threefry2x32 with 20 rounds on uint32 counter arrays."""
    k0, k1 = np.uint32(key[0]), np.uint32(key[1])
    ks = [k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA)]
    x = c0.astype(np.uint32) + ks[0]
    y = c1.astype(np.uint32) + ks[1]
    for i in range(5):
        for r in ROTATIONS[i % 2]:
            x = x + y
            y = (y << np.uint32(r)) | (y >> np.uint32(32 - r))
            y = y ^ x
        x = x + ks[(i + 1) % 3]
        y = y + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x, y


def model_bits(key, shape, width=4):
    """MLX's bits(shape, width, key): W words, pair (j, j + h2) fills words
    j and j + h2, an odd count's middle word is pair (half, 0)."""
    key = np.asarray(key, np.uint32)
    n = math.prod(shape)
    nbytes = n * width
    words = (nbytes + 3) // 4
    half, odd = words // 2, words % 2
    out = np.zeros(words, np.uint32)
    j = np.arange(half, dtype=np.uint64)
    with np.errstate(over="ignore"):
        a, b = threefry(key, j, j + half + odd)
        out[:half], out[half + odd :] = a, b
        if odd:
            out[half] = threefry(key, np.array([half], np.uint64), np.array([0], np.uint64))[0][0]
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[width]
    return out.view(np.uint8)[:nbytes].view(dtype).reshape(shape)


def model_key(seed):
    return np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32)


UPPER = {"float32": np.float32(1 - 2.0**-24), "float16": np.float32(1 - 2.0**-11), "bfloat16": np.float32(1 - 2.0**-8)}


def model_uniform(key, shape, dtype):
    """MLX's uniform(0, 1): min(f32(bits) / 2^32, largest value below 1)."""
    u = np.minimum(model_bits(key, shape).astype(np.float32) / np.float32(2.0**32), UPPER[dtype])
    if dtype == "float16":
        return u.astype(np.float16)
    if dtype == "bfloat16":
        return round_bf16(u)
    return u


# MLX's C++ random::bits(shape, width, key(seed)) on the CPU (mlx 0.32.4).
GOLDEN = {
    (1, 0, ()): [89],
    (1, 0, (3,)): [89, 1, 32],
    (1, 0, (5,)): [143, 35, 95, 55, 29],
    (1, 0, (7,)): [143, 35, 95, 55, 29, 21, 219],
    (1, 0, (2, 3)): [143, 35, 95, 55, 29, 21],
    (1, 42, (1,)): [143],
    (1, 42, (3,)): [143, 4, 62],
    (1, 42, (7,)): [45, 179, 215, 3, 244, 131, 208],
    (1, 0xDEADBEEFCAFE, (5,)): [23, 210, 83, 209, 53],
    (1, 0xDEADBEEFCAFE, (2, 3)): [23, 210, 83, 209, 53, 50],
    (2, 0, ()): [345],
    (2, 0, (3,)): [9103, 14175, 5405],
    (2, 0, (5,)): [20137, 63263, 64300, 20622, 16513],
    (2, 0, (7,)): [20137, 63263, 1497, 14756, 16513, 41486, 44591],
    (2, 42, (1,)): [1167],
    (2, 42, (3,)): [45869, 983, 33780],
    (2, 42, (2, 3)): [8426, 37627, 63599, 6563, 55571, 3896],
    (2, 0xDEADBEEFCAFE, (5,)): [57855, 37980, 33144, 15572, 25636],
    (2, 0xDEADBEEFCAFE, (7,)): [57855, 37980, 9578, 58777, 25636, 65080, 64320],
}


def _mx():
    import mlx.core as mx

    return mx


def raw(a):
    """The bits of a ferrox or MLX array as unsigned NumPy integers
    (bfloat16 through float32, which holds it exactly)."""
    if "bfloat16" in str(a.dtype):
        a = a.astype(fx.float32) if isinstance(a, fx.array) else a.astype(_mx().float32)
    x = np.array(a)
    return x.view(f"u{x.dtype.itemsize}") if x.dtype.kind in "fc" else x


def assert_same_bits(got, want):
    g, w = raw(got), raw(want)
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
    assert np.array_equal(g, w)


def np_bits(x):
    """A NumPy float array's bits (bfloat16 data held as float32)."""
    x = np.asarray(x)
    return x.view(f"u{x.dtype.itemsize}")


# --------------------------------------------------------------------------
# Keys and bits
# --------------------------------------------------------------------------


def test_submodule():
    import ferrox.random as r
    from ferrox.random import normal

    assert r is fx.random
    assert normal is fx.random.normal
    assert fx.random.__name__ == "ferrox.random"


@pytest.mark.parametrize("seed", SEEDS)
def test_key_is_the_seed_split_in_two_words(seed):
    k = fx.random.key(seed)
    assert k.dtype == fx.uint32 and k.shape == (2,)
    assert np.array(k).tolist() == model_key(seed).tolist()


@pytest.mark.parametrize("bad", [-1, 2**64, 1.5])
def test_seed_must_be_a_uint64(bad):
    with pytest.raises(TypeError):
        fx.random.key(bad)
    with pytest.raises(TypeError):
        fx.random.seed(bad)


@pytest.mark.parametrize("width, seed, shape", sorted(GOLDEN, key=str))
def test_bits_match_mlx_cpp(width, seed, shape):
    b = fx.random.bits(shape, width, key=fx.random.key(seed))
    assert b.dtype == {1: fx.uint8, 2: fx.uint16}[width]
    assert b.shape == shape
    assert np.array(b).reshape(-1).tolist() == GOLDEN[(width, seed, shape)]


@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize("shape", SHAPES)
def test_bits_match_the_model(width, shape):
    for seed in (0, 0xDEADBEEFCAFE):
        b = fx.random.bits(shape, width, key=fx.random.key(seed))
        assert b.dtype == {1: fx.uint8, 2: fx.uint16, 4: fx.uint32}[width]
        assert np.array_equal(np.array(b), model_bits(model_key(seed), shape, width))


def test_bits_default_width_and_key():
    assert fx.random.bits((3,)).dtype == fx.uint32
    k = fx.random.key(3)
    assert np.array_equal(np.array(fx.random.bits([4], key=k)), model_bits(model_key(3), (4,)))


@pytest.mark.parametrize("num", [0, 1, 2, 3, 5])
def test_split_is_bits_of_shape_num_by_2(num):
    for seed in SEEDS:
        s = fx.random.split(fx.random.key(seed), num)
        assert s.shape == (num, 2) and s.dtype == fx.uint32
        assert np.array_equal(np.array(s), model_bits(model_key(seed), (num, 2)))
    assert fx.random.split(fx.random.key(0)).shape == (2, 2)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", SHAPES)
def test_uniform_matches_the_model(dtype, shape):
    for seed in (1, 42):
        u = fx.random.uniform(shape=shape, dtype=getattr(fx, dtype), key=fx.random.key(seed))
        assert u.dtype == getattr(fx, dtype) and u.shape == shape
        got = np.array(u.astype(fx.float32)) if dtype == "bfloat16" else np.array(u)
        assert np.array_equal(np_bits(got), np_bits(model_uniform(model_key(seed), shape, dtype)))


# --------------------------------------------------------------------------
# Against MLX
# --------------------------------------------------------------------------


@needs_mlx
def test_model_matches_mlx():
    mx = _mx()
    for seed in SEEDS[:4]:
        assert np.array_equal(np.array(mx.random.split(mx.random.key(seed), 7)), model_bits(model_key(seed), (7, 2)))
        u = np.array(mx.random.uniform(shape=(5, 3), key=mx.random.key(seed)))
        assert np.array_equal(np_bits(u), np_bits(model_uniform(model_key(seed), (5, 3), "float32")))


@needs_mlx
@pytest.mark.parametrize("seed", SEEDS)
def test_key_and_split_match_mlx(seed):
    mx = _mx()
    assert np.array_equal(np.array(fx.random.key(seed)), np.array(mx.random.key(seed)))
    for num in (0, 1, 2, 5):
        got = fx.random.split(fx.random.key(seed), num)
        assert np.array_equal(np.array(got), np.array(mx.random.split(mx.random.key(seed), num)))


@needs_mlx
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("seed", SEEDS)
def test_uniform_matches_mlx(dtype, seed):
    mx = _mx()
    for shape in SHAPES:
        got = fx.random.uniform(shape=shape, dtype=getattr(fx, dtype), key=fx.random.key(seed))
        want = mx.random.uniform(shape=shape, dtype=getattr(mx, dtype), key=mx.random.key(seed))
        assert got.shape == want.shape
        assert np.array_equal(raw(got), raw(want))


@needs_mlx
def test_uniform_with_bounds_matches_mlx():
    mx = _mx()
    cases = [
        (2, 5, (4,), "float32"),
        (5, 2, (3,), "float32"),
        (0.5, 1.5, (7,), "float16"),
        (-1.0, 1.0, (6,), "bfloat16"),
        (np.array([0.0, 10.0], np.float32), 11.0, (3, 2), "float32"),
        (np.zeros((3, 1), np.float32), np.ones((1, 4), np.float32), (3, 4), "float32"),
    ]
    for low, high, shape, dtype in cases:
        fl, fh = (fx.array(v) if isinstance(v, np.ndarray) else v for v in (low, high))
        ml, mh = (mx.array(v) if isinstance(v, np.ndarray) else v for v in (low, high))
        got = fx.random.uniform(fl, fh, shape, getattr(fx, dtype), key=fx.random.key(9))
        want = mx.random.uniform(ml, mh, shape, getattr(mx, dtype), key=mx.random.key(9))
        assert np.array_equal(raw(got), raw(want)), (low, high, shape, dtype)


@needs_mlx
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "complex64"])
@pytest.mark.parametrize("seed", SEEDS)
def test_normal_matches_mlx(dtype, seed):
    mx = _mx()
    for shape in SHAPES:
        got = fx.random.normal(shape, getattr(fx, dtype), key=fx.random.key(seed))
        want = mx.random.normal(shape, getattr(mx, dtype), key=mx.random.key(seed), stream=mx.cpu)
        assert got.dtype == getattr(fx, dtype) and got.shape == want.shape
        assert np.array_equal(raw(got), raw(want)), (dtype, seed, shape)


@needs_mlx
def test_normal_tails_match_mlx():
    # |x| > 3.3 takes erfinv's other polynomial; 2^18 samples hold a few hundred.
    mx = _mx()
    got = fx.random.normal((1 << 18,), key=fx.random.key(123))
    want = mx.random.normal((1 << 18,), key=mx.random.key(123))
    assert np.array_equal(raw(got), raw(want))
    assert np.abs(np.array(got)).max() > 4


@needs_mlx
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "complex64"])
def test_normal_with_loc_and_scale_matches_mlx(dtype):
    mx = _mx()
    cases = [(1.0, None), (None, 2.0), (1.5, 0.25), (np.array([[0.0], [3.0]], np.float32), 2.0)]
    for loc, scale in cases:
        fl, fs = (fx.array(v) if isinstance(v, np.ndarray) else v for v in (loc, scale))
        ml, ms = (mx.array(v) if isinstance(v, np.ndarray) else v for v in (loc, scale))
        got = fx.random.normal((5,), getattr(fx, dtype), fl, fs, key=fx.random.key(4))
        want = mx.random.normal((5,), getattr(mx, dtype), ml, ms, key=mx.random.key(4))
        assert got.shape == want.shape and got.dtype == getattr(fx, dtype)
        assert np.array_equal(raw(got), raw(want)), (dtype, loc, scale)


@needs_mlx
def test_global_sequence_matches_mlx():
    mx = _mx()
    for s in (0, 7, 2**40 + 3):
        fx.random.seed(s)
        mx.random.seed(s)
        got = [fx.random.uniform(shape=(3,)), fx.random.normal((2, 2)), fx.random.split(fx.random.key(1))]
        got.append(fx.random.normal((4,), fx.float16))
        want = [mx.random.uniform(shape=(3,)), mx.random.normal((2, 2)), mx.random.split(mx.random.key(1))]
        want.append(mx.random.normal((4,), mx.float16))
        for g, w in zip(got, want):
            assert np.array_equal(raw(g), raw(w))


@needs_mlx
def test_exact_compositions_match_mlx():
    # randint and bernoulli combine the uniform/bits with exact ops.
    mx = _mx()
    k, mk = fx.random.key(11), mx.random.key(11)
    pairs = [
        (fx.random.randint(0, 10, (64,), key=k), mx.random.randint(0, 10, (64,), key=mk)),
        (fx.random.randint(-5, 300, (9,), fx.uint8, key=k), mx.random.randint(-5, 300, (9,), mx.uint8, key=mk)),
        (fx.random.randint(0, 2, (9,), fx.bool_, key=k), mx.random.randint(0, 2, (9,), mx.bool_, key=mk)),
        (fx.random.randint(0.5, 3.7, (9,), key=k), mx.random.randint(0.5, 3.7, (9,), key=mk)),
        (fx.random.bernoulli(key=k), mx.random.bernoulli(key=mk)),
        (fx.random.bernoulli(0.3, (64,), key=k), mx.random.bernoulli(0.3, (64,), key=mk)),
        (
            fx.random.bernoulli(fx.array([0.1, 0.9]), (3, 2), key=k),
            mx.random.bernoulli(mx.array([0.1, 0.9]), (3, 2), key=mk),
        ),
    ]
    for got, want in pairs:
        g, w = np.array(got), np.array(want)
        assert g.shape == w.shape and g.dtype == w.dtype
        assert np.array_equal(g, w)


@needs_mlx
def test_permutation_matches_mlx():
    # argsort of bits: the same permutation as MLX's for the same key.
    mx = _mx()
    for seed in (0, 5, 2**33 + 1):
        k, mk = fx.random.key(seed), mx.random.key(seed)
        for n in (0, 1, 7, 1000, 5000):
            got, want = fx.random.permutation(n, key=k), mx.random.permutation(n, key=mk)
            assert got.dtype == fx.uint32 and np.array_equal(np.array(got), np.array(want))
        x = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
        for axis in (0, 1, -1):
            got = fx.random.permutation(fx.array(x), axis=axis, key=k)
            want = mx.random.permutation(mx.array(x), axis=axis, key=mk)
            assert got.dtype == fx.float32 and np.array_equal(np.array(got), np.array(want))
    fx.random.seed(3)
    mx.random.seed(3)
    assert np.array_equal(np.array(fx.random.permutation(50)), np.array(mx.random.permutation(50)))


def test_permutation_is_a_permutation():
    p = np.array(fx.random.permutation(10_000, key=fx.random.key(1)))
    assert sorted(p.tolist()) == list(range(10_000))
    x = fx.arange(12).reshape(3, 4)
    y = fx.random.permutation(x, axis=1, key=fx.random.key(2))
    assert sorted(np.array(y)[0].tolist()) == [0, 1, 2, 3]
    d = np.array(y) - np.array(y)[:, :1]
    assert np.array_equal(d, np.broadcast_to(d[:1], d.shape))  # the same order in every row
    with pytest.raises(IndexError):
        fx.random.permutation(x, axis=2)
    with pytest.raises(IndexError):
        fx.random.permutation(fx.array(3))
    with pytest.raises(ValueError):
        fx.random.permutation(-1)
    with pytest.raises(TypeError):
        fx.random.permutation(3.5)


@needs_mlx
def test_float_compositions_follow_mlx():
    # gumbel, laplace and truncated_normal go through log, log1p, erf and
    # erfinv, whose last bits may differ from MLX's: compare closely.
    mx = _mx()
    k, mk = fx.random.key(5), mx.random.key(5)
    pairs = [
        (fx.random.gumbel((256,), key=k, stream=fx.cpu), mx.random.gumbel((256,), key=mk), 1e-5),
        (fx.random.laplace((256,), key=k, stream=fx.cpu), mx.random.laplace((256,), key=mk), 1e-5),
        (
            fx.random.laplace((64,), fx.float16, 1.0, 2.0, key=k, stream=fx.cpu),
            mx.random.laplace((64,), mx.float16, 1.0, 2.0, key=mk),
            4e-3,
        ),
        (
            fx.random.truncated_normal(-1.0, 2.0, (256,), key=k, stream=fx.cpu),
            mx.random.truncated_normal(-1.0, 2.0, (256,), key=mk),
            1e-4,
        ),
    ]
    for got, want, tol in pairs:
        assert got.shape == want.shape
        g, w = np.array(got.astype(fx.float32)), np.array(want.astype(mx.float32))
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@needs_mlx
def test_categorical_matches_mlx_on_the_gumbel_path():
    mx = _mx()
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))
    k, mk = fx.random.key(8), mx.random.key(8)
    fl, ml = fx.array(logits), mx.array(logits)
    pairs = [
        (fx.random.categorical(fl, key=k, stream=fx.cpu), mx.random.categorical(ml, key=mk)),
        (fx.random.categorical(fl, axis=0, key=k, stream=fx.cpu), mx.random.categorical(ml, axis=0, key=mk)),
        (
            fx.random.categorical(fl, num_samples=50, key=k, stream=fx.cpu),
            mx.random.categorical(ml, num_samples=50, key=mk),
        ),
        (
            fx.random.categorical(fl, shape=(6, 2), key=k, stream=fx.cpu),
            mx.random.categorical(ml, shape=(6, 2), key=mk),
        ),
    ]
    for got, want in pairs:
        assert got.dtype == fx.uint32 and got.shape == want.shape
        assert np.array_equal(np.array(got), np.array(want))


@needs_mlx
def test_multivariate_normal_follows_mlx():
    mx = _mx()
    k, mk = fx.random.key(6), mx.random.key(6)
    mean = np.array([1.0, -2.0], np.float32)
    for cov in (np.diag([4.0, 9.0]).astype(np.float32), np.array([[2.0, 0.6], [0.6, 1.0]], np.float32)):
        got = fx.random.multivariate_normal(fx.array(mean), fx.array(cov), (5,), key=k, stream=fx.cpu)
        want = mx.random.multivariate_normal(mx.array(mean), mx.array(cov), (5,), key=mk, stream=mx.cpu)
        assert got.shape == want.shape == (5, 2)
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-4, atol=1e-5)


@needs_mlx
@pytest.mark.parametrize(
    "call",
    [
        lambda r, m: r.split(m.array([1, 2, 3], m.uint32)),
        lambda r, m: r.split(m.array([1, 2])),
        lambda r, m: r.split(r.key(0), -1),
        lambda r, m: r.uniform(shape=(-1,)),
        lambda r, m: r.uniform(shape=3),
        lambda r, m: r.uniform(shape=(2,), dtype=m.int32),
        lambda r, m: r.uniform(shape=(2,), dtype=m.complex64),
        lambda r, m: r.uniform(m.array([0.0, 10.0]), 11.0, (3,)),
        lambda r, m: r.uniform(m.zeros((3, 1)), 1.0, (3,)),
        lambda r, m: r.uniform(key=m.zeros((3,), m.uint32)),
        lambda r, m: r.normal((2,), m.int32),
        lambda r, m: r.normal((2,), m.bool_),
        lambda r, m: r.randint(0, 10, (6,), m.float32),
        lambda r, m: r.bernoulli(1, (5,)),
        lambda r, m: r.bernoulli(m.array([[0.1, 0.9]]), (2,)),
        lambda r, m: r.truncated_normal(-1, 1, (5,), m.int32),
        lambda r, m: r.gumbel((4,), m.int32),
        lambda r, m: r.laplace((4,), m.int32),
        lambda r, m: r.categorical(m.array([0.0, 1.0]), shape=(5,), num_samples=2),
        lambda r, m: r.categorical(m.array([[0.0, 1.0, 2.0]]), axis=2),
        lambda r, m: r.categorical(m.array(1.0)),
        lambda r, m: r.categorical(m.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]), shape=(3, 1)),
        lambda r, m: r.multivariate_normal(m.zeros((2,)), m.eye(2), (3,), m.float16),
        lambda r, m: r.multivariate_normal(m.zeros((3,)), m.eye(2)),
        lambda r, m: r.multivariate_normal(m.array(0.0), m.eye(2)),
        lambda r, m: r.multivariate_normal(m.zeros((2,)), m.zeros((2,))),
        lambda r, m: r.multivariate_normal(m.zeros((2,)), m.zeros((2, 3))),
    ],
)
def test_errors_match_mlx(call):
    mx = _mx()
    with pytest.raises(Exception) as want:
        call(mx.random, mx)
    with pytest.raises(want.type):
        call(fx.random, fx)


def test_float64_uniform_is_refused():
    # MLX raises RuntimeError("[uniform] Unsupported type."); ferrox a ValueError.
    with pytest.raises(ValueError, match="Unsupported type"):
        fx.random.uniform(shape=(2,), dtype=fx.float64)
    with pytest.raises(ValueError, match="Unsupported type"):
        fx.random.gumbel((2,), fx.float64)


# --------------------------------------------------------------------------
# Devices, seeding, vmap
# --------------------------------------------------------------------------


@needs_gpu
def test_gpu_gives_the_cpu_values():
    for seed in (0, 42, 0xDEADBEEFCAFE):
        k = fx.random.key(seed)
        for shape in SHAPES + [((1 << 20) + 3,), (1 << 20,)]:
            for width in (1, 2, 4):
                assert_same_bits(
                    fx.random.bits(shape, width, key=k, stream=fx.gpu),
                    fx.random.bits(shape, width, key=k, stream=fx.cpu),
                )
            for dtype in (fx.float32, fx.float16, fx.bfloat16):
                assert_same_bits(
                    fx.random.uniform(shape=shape, dtype=dtype, key=k, stream=fx.gpu),
                    fx.random.uniform(shape=shape, dtype=dtype, key=k, stream=fx.cpu),
                )
            for dtype in (fx.float32, fx.float16, fx.bfloat16, fx.float64, fx.complex64):
                assert_same_bits(
                    fx.random.normal(shape, dtype, key=k, stream=fx.gpu),
                    fx.random.normal(shape, dtype, key=k, stream=fx.cpu),
                )
        assert_same_bits(
            fx.random.normal((17,), fx.float16, 1.0, 3.0, key=k, stream=fx.gpu),
            fx.random.normal((17,), fx.float16, 1.0, 3.0, key=k, stream=fx.cpu),
        )


@needs_gpu
def test_gpu_vmapped_keys_give_the_cpu_values():
    # vmap builds the batched nodes on the default device (the fixture
    # restores it afterwards).
    keys = fx.random.split(fx.random.key(3), 5)
    results = {}
    for device in ("gpu", "cpu"):
        fx.set_default_device(getattr(fx, device))
        out = []
        for shape in [(1,), (3,), (7,), (2, 3), (1000,)]:
            for width in (1, 2, 4):
                out.append(fx.vmap(lambda k: fx.random.bits(shape, width, key=k))(keys))
            out.append(fx.vmap(lambda k: fx.random.normal(shape, fx.float16, key=k), in_axes=1)(keys.T))
        results[device] = out
    for g, c in zip(results["gpu"], results["cpu"]):
        assert_same_bits(g, c)


def test_seed_makes_the_sequence_reproducible():
    fx.random.seed(7)
    a = [np.array(fx.random.uniform(shape=(4,))), np.array(fx.random.normal((3,)))]
    fx.random.seed(7)
    b = [np.array(fx.random.uniform(shape=(4,))), np.array(fx.random.normal((3,)))]
    for x, y in zip(a, b):
        assert np.array_equal(x, y)
    assert not np.array_equal(a[0], np.array(fx.random.uniform(shape=(4,))))


def test_global_sequence_is_split_of_the_state():
    # next key = split(state)[1], new state = split(state)[0] (MLX's KeySequence).
    fx.random.seed(5)
    state = model_key(5)
    for _ in range(3):
        both = model_bits(state, (2, 2))
        state, k = both[0], both[1]
        assert np.array_equal(np.array(fx.random.bits((6,))), model_bits(k, (6,)))


def test_global_sequence_is_thread_safe():
    # Each draw consumes one key of the sequence, whatever thread draws it.
    n_threads, per_thread = 4, 25
    fx.random.seed(11)
    serial = sorted(tuple(np.array(fx.random.bits((2,))).tolist()) for _ in range(n_threads * per_thread))
    fx.random.seed(11)
    drawn, lock = [], threading.Lock()

    def work():
        for _ in range(per_thread):
            v = tuple(np.array(fx.random.bits((2,))).tolist())
            with lock:
                drawn.append(v)

    threads = [threading.Thread(target=work) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(drawn) == serial


def test_vmap_over_keys_matches_a_loop():
    keys = fx.random.split(fx.random.key(2), 4)

    def loop(f, ks):
        return np.stack([np.array(f(ks[i])) for i in range(ks.shape[0])])

    for f in [
        lambda k: fx.random.uniform(shape=(3,), key=k),
        lambda k: fx.random.normal((2, 3), fx.float16, key=k).astype(fx.float32),
        lambda k: fx.random.bits((5,), 1, key=k),
        lambda k: fx.random.bits((3,), 2, key=k),
        lambda k: fx.random.split(k, 3),
        lambda k: fx.random.randint(0, 100, (4,), key=k),
        lambda k: fx.random.bernoulli(0.5, (6,), key=k),
        lambda k: fx.random.uniform(-1.0, 1.0, (2,), key=k),
    ]:
        assert np.array_equal(np.array(fx.vmap(f)(keys)), loop(f, keys))
        assert np.array_equal(np.array(fx.vmap(f, in_axes=1)(keys.T)), loop(f, keys))
        out1 = np.array(fx.vmap(f, out_axes=1)(keys))
        assert np.array_equal(np.moveaxis(out1, 1, 0), loop(f, keys))


def test_nested_vmap_over_keys():
    keys = fx.random.split(fx.random.key(9), 6).reshape(2, 3, 2)
    f = fx.vmap(fx.vmap(lambda k: fx.random.uniform(shape=(2,), key=k)))
    want = np.array([[np.array(fx.random.uniform(shape=(2,), key=keys[i, j])) for j in range(3)] for i in range(2)])
    assert np.array_equal(np.array(f(keys)), want)


@needs_mlx
def test_vmap_over_keys_matches_mlx():
    mx = _mx()
    fk, mk = fx.random.split(fx.random.key(5), 3), mx.random.split(mx.random.key(5), 3)
    got = fx.vmap(lambda k: fx.random.normal((2, 3), key=k), in_axes=1)(fk.T)
    want = mx.vmap(lambda k: mx.random.normal((2, 3), key=k), in_axes=1)(mk.T)
    assert np.array_equal(raw(got), raw(want))


def test_samples_are_constants_under_grad():
    k = fx.random.key(1)
    noise = fx.random.normal((3,), key=k)
    g = fx.grad(lambda x: (x * fx.random.normal((3,), key=k)).sum())(fx.ones((3,)))
    assert np.array_equal(np.array(g), np.array(noise))


def test_gradient_through_a_key_is_refused():
    with pytest.raises(ValueError):
        fx.vjp(lambda k: fx.random.uniform(shape=(2,), key=k), [fx.random.key(0)], [fx.ones((2,))])


# --------------------------------------------------------------------------
# Distributions (fixed keys, loose bounds)
# --------------------------------------------------------------------------

N = 100_000


def moments(a):
    x = np.array(a.astype(fx.float64))
    return x.mean(), x.var()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_uniform_distribution(dtype):
    u = fx.random.uniform(shape=(N,), dtype=getattr(fx, dtype), key=fx.random.key(1))
    x = np.array(u.astype(fx.float32))
    assert x.min() >= 0 and x.max() < 1
    m, v = moments(u)
    assert abs(m - 0.5) < 0.01 and abs(v - 1 / 12) < 0.005
    b = np.array(fx.random.uniform(-2, 3, (N,), key=fx.random.key(2)))
    assert b.min() >= -2 and b.max() < 3 and abs(b.mean() - 0.5) < 0.05
    low, high = fx.array([[0.0], [10.0]]), fx.array([[1.0], [20.0]])
    rows = np.array(fx.random.uniform(low, high, (2, N // 2), key=fx.random.key(3)))
    assert abs(rows[0].mean() - 0.5) < 0.02 and abs(rows[1].mean() - 15) < 0.2
    assert rows[1].min() >= 10 and rows[1].max() < 20


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_normal_distribution(dtype):
    z = fx.random.normal((N,), getattr(fx, dtype), key=fx.random.key(4))
    assert z.dtype == getattr(fx, dtype)
    m, v = moments(z)
    assert abs(m) < 0.02 and abs(v - 1) < 0.03
    m, v = moments(fx.random.normal((N,), getattr(fx, dtype), 3.0, 2.0, key=fx.random.key(5)))
    assert abs(m - 3) < 0.05 and abs(v - 4) < 0.15


def test_complex_normal_distribution():
    z = np.array(fx.random.normal((N,), fx.complex64, key=fx.random.key(6)))
    assert abs(z.mean()) < 0.02
    assert abs(z.real.var() - 0.5) < 0.02 and abs(z.imag.var() - 0.5) < 0.02
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 0.02


def test_randint_distribution():
    r = fx.random.randint(0, 10, (N,), key=fx.random.key(7))
    assert r.dtype == fx.int32
    counts = np.bincount(np.array(r), minlength=10)
    assert counts.size == 10 and np.all(np.abs(counts - N / 10) < 600)
    r = np.array(fx.random.randint(-3, 4, (N,), fx.int8, key=fx.random.key(8)))
    assert r.dtype == np.int8 and r.min() == -3 and r.max() == 3
    rows = np.array(fx.random.randint(fx.array([0, 100]), fx.array([10, 110]), (N // 2, 2), key=fx.random.key(9)))
    assert rows[:, 0].min() == 0 and rows[:, 0].max() == 9 and rows[:, 1].min() == 100 and rows[:, 1].max() == 109
    assert np.all(np.array(fx.random.randint(5, 2, (10,), key=fx.random.key(1))) == 5)


def test_bernoulli_distribution():
    b = fx.random.bernoulli(0.3, (N,), key=fx.random.key(10))
    assert b.dtype == fx.bool_ and abs(np.array(b).mean() - 0.3) < 0.01
    p = fx.array([[0.1], [0.9]])
    rows = np.array(fx.random.bernoulli(p, (2, N // 2), key=fx.random.key(11)))
    assert abs(rows[0].mean() - 0.1) < 0.01 and abs(rows[1].mean() - 0.9) < 0.01
    assert fx.random.bernoulli(p, key=fx.random.key(12)).shape == (2, 1)
    assert fx.random.bernoulli(key=fx.random.key(12)).shape == ()
    assert np.all(np.array(fx.random.bernoulli(1.0, (1000,), key=fx.random.key(1))))
    assert not np.any(np.array(fx.random.bernoulli(0.0, (1000,), key=fx.random.key(1))))
    half = fx.random.bernoulli(fx.array([0.5], fx.float16), (N,), key=fx.random.key(2))
    assert abs(np.array(half).mean() - 0.5) < 0.01


def truncated_moments(a, b):
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    z = cdf(b) - cdf(a)
    mean = (pdf(a) - pdf(b)) / z
    var = 1 + (a * pdf(a) - b * pdf(b)) / z - mean**2
    return mean, var


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_truncated_normal_distribution(dtype):
    t = fx.random.truncated_normal(-1.0, 2.0, (N,), getattr(fx, dtype), key=fx.random.key(13))
    assert t.dtype == getattr(fx, dtype)
    x = np.array(t.astype(fx.float32))
    assert x.min() >= -1 and x.max() <= 2
    mean, var = truncated_moments(-1.0, 2.0)
    assert abs(x.mean() - mean) < 0.02 and abs(x.var() - var) < 0.03
    both = fx.random.truncated_normal(fx.array([-1.0, 0.0]), 1.0, key=fx.random.key(14))
    assert both.shape == (2,)


def test_gumbel_distribution():
    g = fx.random.gumbel((N,), key=fx.random.key(15))
    m, v = moments(g)
    assert abs(m - 0.5772156649) < 0.02 and abs(v - math.pi**2 / 6) < 0.06
    assert fx.random.gumbel((3,), fx.float16, key=fx.random.key(1)).dtype == fx.float16


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_laplace_distribution(dtype):
    m, v = moments(fx.random.laplace((N,), getattr(fx, dtype), key=fx.random.key(16)))
    assert abs(m) < 0.02 and abs(v - 2) < 0.08
    s = fx.random.laplace((N,), getattr(fx, dtype), 1.0, 2.0, key=fx.random.key(17))
    assert s.dtype == getattr(fx, dtype)
    m, v = moments(s)
    assert abs(m - 1) < 0.05 and abs(v - 8) < 0.35


def test_categorical_distribution():
    p = np.array([0.1, 0.2, 0.7])
    logits = fx.array(np.log(p).astype(np.float32))
    c = fx.random.categorical(logits, num_samples=N, key=fx.random.key(18))
    assert c.dtype == fx.uint32 and c.shape == (N,)
    freq = np.bincount(np.array(c), minlength=3) / N
    assert np.all(np.abs(freq - p) < 0.01)
    shaped = fx.random.categorical(logits, shape=(N // 10, 10), key=fx.random.key(19))
    assert shaped.shape == (N // 10, 10)
    assert np.all(np.abs(np.bincount(np.array(shaped).ravel(), minlength=3) / N - p) < 0.01)
    rows = fx.array(np.log(np.array([[0.9, 0.1], [0.1, 0.9]], np.float32)))
    one = fx.random.categorical(rows, key=fx.random.key(20))
    assert one.shape == (2,)
    many = np.array(fx.random.categorical(rows, num_samples=N // 10, key=fx.random.key(21)))
    assert many.shape == (2, N // 10) and abs(many[0].mean() - 0.1) < 0.02 and abs(many[1].mean() - 0.9) < 0.02
    column = fx.array(np.log(np.array([[0.9], [0.1]], np.float32)))
    cols = np.array(fx.random.categorical(column, axis=0, num_samples=N // 10, key=fx.random.key(22)))
    assert cols.shape == (1, N // 10) and abs(cols.mean() - 0.1) < 0.02
    # An infinite logit wins every draw.
    sure = fx.random.categorical(fx.array([0.0, float("inf"), 0.0]), num_samples=100, key=fx.random.key(1))
    assert np.all(np.array(sure) == 1)


def test_multivariate_normal_distribution():
    mean = np.array([1.0, -2.0, 0.5], np.float32)
    a = np.array([[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [-0.3, 0.2, 0.7]], np.float32)
    cov = a @ a.T
    s = fx.random.multivariate_normal(fx.array(mean), fx.array(cov), (N,), key=fx.random.key(23))
    assert s.shape == (N, 3) and s.dtype == fx.float32
    x = np.array(s).astype(np.float64)
    assert np.all(np.abs(x.mean(0) - mean) < 0.03)
    assert np.all(np.abs(np.cov(x.T) - cov) < 0.05)
    # Batch shapes broadcast: mean (4, 1, 2), cov (2, 2), shape (3,) -> (4, 3, 2).
    out = fx.random.multivariate_normal(fx.zeros((4, 1, 2)), fx.eye(2), (3,), key=fx.random.key(1))
    assert out.shape == (4, 3, 2)
    covs = fx.stack([fx.eye(2)] * 5)
    assert fx.random.multivariate_normal(fx.zeros((2,)), covs, key=fx.random.key(1)).shape == (5, 2)
    # A diagonal covariance scales each coordinate of the same normal draw.
    z = np.array(fx.random.normal((6, 2), key=fx.random.key(24)))
    diag = fx.array(np.diag([4.0, 9.0]).astype(np.float32))
    d = np.array(fx.random.multivariate_normal(fx.zeros((2,)), diag, (6,), key=fx.random.key(24)))
    np.testing.assert_allclose(d, z * np.array([2.0, 3.0], np.float32), rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------
# Argument errors
# --------------------------------------------------------------------------


def test_key_checks():
    with pytest.raises(ValueError, match="key type uint32"):
        fx.random.uniform(key=fx.array([1, 2]))
    with pytest.raises(ValueError, match="key shape"):
        fx.random.normal(key=fx.zeros((3,), fx.uint32))
    with pytest.raises(ValueError, match="key shape"):
        fx.random.split(fx.zeros((2, 2), fx.uint32))


def test_bits_checks():
    with pytest.raises(ValueError, match="width"):
        fx.random.bits((3,), 3, key=fx.random.key(0))
    with pytest.raises(ValueError, match="Negative dimensions"):
        fx.random.bits((-1,), key=fx.random.key(0))
    with pytest.raises(ValueError, match="Negative dimensions"):
        fx.random.split(fx.random.key(0), -1)
    with pytest.raises(TypeError):
        fx.random.bits(3, key=fx.random.key(0))


def test_sampler_checks():
    k = fx.random.key(0)
    with pytest.raises(ValueError, match="real floating point"):
        fx.random.uniform(shape=(2,), dtype=fx.int32, key=k)
    with pytest.raises(ValueError, match="broadcasted shape"):
        fx.random.uniform(fx.zeros((3, 1)), 1.0, (3,), key=k)
    with pytest.raises(ValueError, match="Only floating point and complex64"):
        fx.random.normal((2,), fx.int32, key=k)
    with pytest.raises(ValueError, match="integer dtypes and bool"):
        fx.random.randint(0, 10, (2,), fx.float32, key=k)
    with pytest.raises(ValueError, match="must be a float type"):
        fx.random.bernoulli(1, (2,), key=k)
    with pytest.raises(ValueError, match="incompatible"):
        fx.random.bernoulli(fx.array([[0.1, 0.9]]), (2,), key=k)
    with pytest.raises(ValueError, match="floating point dtypes"):
        fx.random.truncated_normal(-1, 1, (2,), fx.int32, key=k)
    with pytest.raises(ValueError, match="real floating point"):
        fx.random.laplace((2,), fx.int32, key=k)
    with pytest.raises(ValueError, match="At most one"):
        fx.random.categorical(fx.zeros((3,)), shape=(2,), num_samples=2, key=k)
    with pytest.raises(IndexError, match="Invalid axis"):
        fx.random.categorical(fx.zeros((3,)), axis=1, key=k)
    with pytest.raises(ValueError, match="not broadcast compatible"):
        fx.random.categorical(fx.zeros((2, 3)), shape=(3, 1), key=k)
    with pytest.raises(ValueError, match="float32"):
        fx.random.multivariate_normal(fx.zeros((2,)), fx.eye(2), dtype=fx.float16, key=k)
    with pytest.raises(ValueError, match="compatible shapes"):
        fx.random.multivariate_normal(fx.zeros((3,)), fx.eye(2), key=k)
    with pytest.raises(ValueError, match="must be equal"):
        fx.random.multivariate_normal(fx.zeros((2,)), fx.zeros((2, 3)), key=k)


def test_empty_and_scalar_shapes():
    k = fx.random.key(0)
    for f in (
        lambda s: fx.random.uniform(shape=s, key=k),
        lambda s: fx.random.normal(s, key=k),
        lambda s: fx.random.normal(s, fx.complex64, key=k),
        lambda s: fx.random.randint(0, 5, s, key=k),
        lambda s: fx.random.bernoulli(0.5, s, key=k),
        lambda s: fx.random.truncated_normal(-1, 1, s, key=k),
        lambda s: fx.random.gumbel(s, key=k),
        lambda s: fx.random.laplace(s, key=k),
        lambda s: fx.random.bits(s, 1, key=k),
    ):
        for s in [(), (0,), (2, 0)]:
            assert f(s).shape == s
            np.array(f(s))
