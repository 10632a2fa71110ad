"""gather_mm, segmented_mm, block_masked_mm and depends against NumPy and
MLX, with finite-difference gradients."""

import importlib.util

import numpy as np
import pytest

import ferrox as fx

HAVE_MLX = importlib.util.find_spec("mlx") is not None


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_gather_mm_matches_take_then_matmul(rng):
    a, b = f32(rng, 3, 2, 4), f32(rng, 5, 4, 6)
    li, ri = np.array([0, 2, 2]), np.array([4, 1, 0])
    got = fx.gather_mm(fx.array(a), fx.array(b), fx.array(li), fx.array(ri))
    np.testing.assert_allclose(np.array(got), a[li] @ b[ri], rtol=1e-5, atol=1e-5)
    # Default indices: every batch member, broadcast against the other side.
    got = fx.gather_mm(fx.array(a), fx.array(b), None, fx.array([[4], [1]]))
    want = np.stack([np.stack([a[j] @ b[i] for j in range(3)]) for i in (4, 1)])
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-5)
    got = fx.gather_mm(fx.array(a[0]), fx.array(b), None, fx.array([1, 3]))
    np.testing.assert_allclose(np.array(got), a[0] @ b[[1, 3]], rtol=1e-5, atol=1e-5)
    # Batch axes are flattened.
    a4 = f32(rng, 2, 3, 2, 4)
    got = fx.gather_mm(fx.array(a4), fx.array(b[0]), fx.array([5, 0]))
    np.testing.assert_allclose(np.array(got), a4.reshape(6, 2, 4)[[5, 0]] @ b[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        fx.gather_mm(fx.array(a), fx.array(b), fx.array([0.5]))


def test_segmented_mm(rng):
    a, b = f32(rng, 2, 8), f32(rng, 8, 3)
    seg = np.array([[0, 3], [3, 8], [2, 2]])
    got = fx.segmented_mm(fx.array(a), fx.array(b), fx.array(seg))
    want = np.stack([a[:, s:e] @ b[s:e] for s, e in seg])
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-5)
    seg2 = np.array([[[0, 4], [4, 8]], [[1, 2], [0, 8]]])
    got = fx.segmented_mm(fx.array(a), fx.array(b), fx.array(seg2))
    assert got.shape == (2, 2, 2, 3)
    with pytest.raises(ValueError, match="Batched"):
        fx.segmented_mm(fx.ones((5, 2, 8)), fx.array(b), fx.array(seg))


def expand(mask, rows, cols, bs):
    return np.kron(mask, np.ones((bs, bs)))[..., :rows, :cols]


@pytest.mark.parametrize("bs", [32, 64])
def test_block_masked_mm(bs, rng):
    m, k, n = 70, 100, 40
    a, b = f32(rng, 2, m, k), f32(rng, 2, k, n)
    cm, ck, cn = -(-m // bs), -(-k // bs), -(-n // bs)
    ml = rng.random((2, cm, ck)) > 0.3
    mr = rng.random((2, ck, cn)) > 0.3
    mo = rng.uniform(0, 2, (2, cm, cn)).astype(np.float32)
    got = fx.block_masked_mm(fx.array(a), fx.array(b), bs, fx.array(mo), fx.array(ml), fx.array(mr))
    want = ((a * expand(ml, m, k, bs)) @ (b * expand(mr, k, n, bs))) * expand(mo, m, n, bs)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.array(fx.block_masked_mm(fx.array(a), fx.array(b), bs)), a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="block mask"):
        fx.block_masked_mm(fx.array(a), fx.array(b), bs, fx.ones((2, 1, 1)))


def test_gradients_flow_through_take_and_masks(rng):
    a, b = rng.standard_normal((3, 2, 4)), rng.standard_normal((4, 3))
    fa, fb = fx.array(a, dtype=fx.float64), fx.array(b, dtype=fx.float64)
    g = fx.grad(lambda x: fx.gather_mm(x, fb, fx.array([2, 2, 0])).sum())(fa)
    want = np.zeros_like(a)
    for i in (2, 2, 0):
        want[i] += np.ones((2, 3)) @ b.T
    np.testing.assert_allclose(np.array(g), want, rtol=1e-12)
    seg = fx.array([[0, 2], [1, 4]])
    g = fx.grad(lambda x: fx.segmented_mm(x, fb, seg).sum())(fx.array(a[0], dtype=fx.float64))
    mask = np.array([[1, 1, 0, 0], [0, 1, 1, 1]], np.float64)
    np.testing.assert_allclose(np.array(g), (mask.sum(0) * (np.ones((2, 3)) @ b.T)), rtol=1e-12)


def test_depends():
    a, b = fx.ones(3), fx.zeros(2)
    out = fx.depends(a, [b])
    assert isinstance(out, fx.array)
    np.testing.assert_array_equal(np.array(out), np.ones(3))
    outs = fx.depends([a, b], (b,))
    assert isinstance(outs, list) and len(outs) == 2
    np.testing.assert_array_equal(np.array(outs[1]), np.zeros(2))
    g = fx.grad(lambda x: (fx.depends(x * 2.0, [x * 3.0]) ** 2).sum())(fx.array([1.0, 2.0]))
    np.testing.assert_allclose(np.array(g), [8.0, 16.0])
    got = fx.vmap(lambda x: fx.depends(x + 1.0, x))(fx.array([[1.0, 2.0]]))
    np.testing.assert_array_equal(np.array(got), [[2.0, 3.0]])


if HAVE_MLX:
    import mlx.core as mx

    def test_matches_mlx(rng):
        a, b = f32(rng, 3, 2, 4), f32(rng, 5, 4, 6)
        want = np.array(mx.gather_mm(mx.array(a), mx.array(b), None, mx.array([[4], [1]])))
        got = np.array(fx.gather_mm(fx.array(a), fx.array(b), None, fx.array([[4], [1]])))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        seg = np.array([[0, 3], [3, 4], [2, 2]])
        want = np.array(mx.segmented_mm(mx.array(a[0]), mx.array(b[0]), mx.array(seg)))
        got = np.array(fx.segmented_mm(fx.array(a[0]), fx.array(b[0]), fx.array(seg)))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        x, y = f32(rng, 64, 64), f32(rng, 64, 64)
        mo = np.array([[0.5, 1], [2, 0]], np.float32)
        ml = np.array([[True, False], [True, True]])
        want = np.array(mx.block_masked_mm(mx.array(x), mx.array(y), 32, mx.array(mo), mx.array(ml)))
        got = np.array(fx.block_masked_mm(fx.array(x), fx.array(y), 32, fx.array(mo), fx.array(ml)))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------
# hadamard_transform
# --------------------------------------------------------------------------


def sylvester(n):
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h


@pytest.mark.parametrize("n", [1, 2, 8, 64])
def test_hadamard_powers_of_two(n, rng):
    x = rng.standard_normal((3, n)).astype(np.float32)
    got = fx.hadamard_transform(fx.array(x))
    np.testing.assert_allclose(np.array(got), x @ sylvester(n).T / np.sqrt(n), rtol=1e-5, atol=1e-5)
    got = fx.hadamard_transform(fx.array(x), scale=2.0)
    np.testing.assert_allclose(np.array(got), 2.0 * x @ sylvester(n).T, rtol=1e-5, atol=1e-4)


def test_hadamard_dtypes_and_errors():
    assert fx.hadamard_transform(fx.array([1, 2, 3, 4])).dtype == fx.float32
    np.testing.assert_allclose(np.array(fx.hadamard_transform(fx.array([1, 2, 3, 4]))), [5, -1, -2, 0])
    assert fx.hadamard_transform(fx.ones(4, dtype=fx.float16)).dtype == fx.float16
    with pytest.raises(ValueError, match="m\\*2\\^k"):
        fx.hadamard_transform(fx.ones(6))
    with pytest.raises(ValueError, match="empty"):
        fx.hadamard_transform(fx.ones((3, 0)))
    # Length 1 (or 0-d): the input itself, or scaled with promotion (MLX).
    same = fx.hadamard_transform(fx.array(3, dtype=fx.int32))
    assert same.dtype == fx.int32 and same.item() == 3
    assert fx.hadamard_transform(fx.array([1 + 2j])).dtype == fx.complex64
    scaled = fx.hadamard_transform(fx.array([[3]], dtype=fx.int16), scale=2.0)
    assert scaled.dtype == fx.float32 and scaled.shape == (1, 1) and scaled.item() == 6.0


def test_hadamard_half_precision_as_mlx():
    """MLX's test_hadamard case (float16, m = 28, k = 8) on its own data
    (np.random.seed(7), drawn in its loop's order): the m-stage sums in
    float32 and scales before one rounding, so float16 stays within 5e-2 * k
    of the exact transform and bfloat16 within twice that of float16."""
    from itertools import product

    draws = np.random.RandomState(7)
    for dtype, m, k in product([np.float32, np.float16, np.int32], [1, 28], range(1, 14)):
        if m > 1 and k > 8:
            continue
        x = draws.normal(size=(4, m * 2**k)).astype(dtype)
        if (dtype, m, k) == (np.float16, 28, 8):
            break
    a = fx.array(x)[::2]
    y = fx.hadamard_transform(a, scale=0.34)
    exact = np.array(fx.hadamard_transform(a.astype(fx.float64), scale=0.34))
    np.testing.assert_allclose(np.array(y), exact, atol=5e-2 * 8)
    y_bf16 = fx.hadamard_transform(a.astype(fx.bfloat16), scale=0.34)
    np.testing.assert_allclose(np.array(y_bf16.astype(fx.float16)), np.array(y), atol=5e-2 * 8 * 2)


def test_hadamard_gradient_is_its_transpose(rng):
    x = rng.standard_normal((2, 24))
    w = rng.standard_normal((2, 24))
    f = lambda v: (fx.hadamard_transform(v) * fx.array(w, dtype=fx.float64)).sum()  # noqa: E731
    g = np.array(fx.grad(f)(fx.array(x, dtype=fx.float64)))
    eye = np.eye(24)
    h = np.array(fx.hadamard_transform(fx.array(eye, dtype=fx.float64)))  # row i: H e_i, so h = H^T
    np.testing.assert_allclose(g, w @ h.T, rtol=1e-10, atol=1e-12)


if HAVE_MLX:

    @pytest.mark.parametrize("n", [4, 12, 40, 56, 96])
    def test_hadamard_matches_mlx(n, rng):
        x = rng.standard_normal((3, n)).astype(np.float32)
        want = np.array(mx.hadamard_transform(mx.array(x)))
        np.testing.assert_allclose(np.array(fx.hadamard_transform(fx.array(x))), want, rtol=1e-5, atol=1e-5)
