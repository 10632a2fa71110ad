"""The fused cross entropy (the CrossEntropy and CrossEntropyVJP primitives)
that `nn.losses.cross_entropy` runs on class-index targets over the last
axis: values and gradients against float64 NumPy over dtypes, layouts and
row lengths (rows shorter than a 16-byte pack, odd lengths that misalign
every row, rows longer than a block), label smoothing, negative targets,
masked (-inf) logits, targets out of range, MLX's results, forward-mode and
second derivatives and vmap through the reference graph, and compile."""

import importlib.util

import numpy as np
import pytest

import ferrox as fx
import ferrox.nn as nn
from conftest import to_np

HAVE_MLX = importlib.util.find_spec("mlx") is not None
L = nn.losses
# Loss and gradient tolerances: one rounding of the result to the dtype
# (the kernels compute in float32, float64 for float64).
TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-12}


def ref_loss(x, t, smoothing=0.0):
    """Per-row cross entropy in float64."""
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    lse = (np.log(np.exp(x - m).sum(axis=-1, keepdims=True)) + m)[..., 0]
    picked = np.take_along_axis(x, np.asarray(t)[..., None] % x.shape[-1], -1)[..., 0]
    return lse - (1 - smoothing) * picked - smoothing * x.mean(axis=-1)


def ref_grad(x, t, g, smoothing=0.0):
    """d(sum(g * loss))/dx in float64."""
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    onehot = np.eye(x.shape[-1])[np.asarray(t) % x.shape[-1]]
    return g[..., None] * (p - (1 - smoothing) * onehot - smoothing / x.shape[-1])


def as_dtype(x, dtype):
    """`x` in ferrox's `dtype`, and the values it holds there as float64."""
    a = fx.array(x.astype(np.float64), dtype=fx.float64).astype(getattr(fx, dtype))
    return a, to_np(a.astype(fx.float64))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(4, 1), (3, 5), (2, 3, 7), (6, 33), (3, 1001), (2, 4099)])
@pytest.mark.parametrize("smoothing", [0.0, 0.15])
def test_values_and_gradients(dtype, shape, smoothing, rng):
    x, held = as_dtype(rng.normal(size=shape) * 3, dtype)
    t = rng.integers(-shape[-1], shape[-1], size=shape[:-1])
    g = rng.uniform(-1, 1, size=shape[:-1])
    ga, g_held = as_dtype(g, dtype)
    loss = L.cross_entropy(x, fx.array(t), label_smoothing=smoothing, reduction="none")
    assert loss.dtype == x.dtype and loss.shape == shape[:-1]
    np.testing.assert_allclose(to_np(loss.astype(fx.float64)), ref_loss(held, t, smoothing), rtol=TOL[dtype],
                               atol=TOL[dtype] * 4)
    dx = fx.grad(lambda a: (L.cross_entropy(a, fx.array(t), label_smoothing=smoothing, reduction="none") * ga).sum())(x)
    assert dx.dtype == x.dtype and dx.shape == shape
    np.testing.assert_allclose(to_np(dx.astype(fx.float64)), ref_grad(held, t, g_held, smoothing), rtol=TOL[dtype],
                               atol=TOL[dtype] / 4)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "offset", "broadcast"])
def test_strided_logits(layout, rng):
    base = rng.normal(size=(6, 9, 10))
    views = {
        "transposed": lambda a: a.transpose(1, 0, 2)[..., ::-1],
        "sliced": lambda a: a[1:5, ::2, 1:],
        "offset": lambda a: a[1:, 1:, 1:],  # rows start off a 16-byte boundary
        "broadcast": lambda a: a[:1],
    }
    view = views[layout]
    x_np = view(base)
    if layout == "broadcast":
        x_np = np.broadcast_to(x_np, (4,) + x_np.shape[1:])
        x = fx.broadcast_to(view(fx.array(base)), (4,) + x_np.shape[1:])
    else:
        x = view(fx.array(base))
    t = rng.integers(0, x_np.shape[-1], size=x_np.shape[:-1])
    got = L.cross_entropy(x, fx.array(t), reduction="none")
    np.testing.assert_allclose(to_np(got), ref_loss(x_np, t), rtol=1e-5, atol=1e-5)
    dx = fx.grad(lambda a: L.cross_entropy(a, fx.array(t), reduction="sum"))(x)
    np.testing.assert_allclose(to_np(dx), ref_grad(x_np, t, np.ones(t.shape)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("tdtype", ["uint8", "int16", "int64", "uint32"])
def test_target_dtypes(tdtype, rng):
    x = rng.normal(size=(5, 7))
    t = rng.integers(0, 7, size=(5,))
    got = L.cross_entropy(fx.array(x, dtype=fx.float64), fx.array(t, dtype=getattr(fx, tdtype)), reduction="none")
    np.testing.assert_allclose(to_np(got), ref_loss(x, t), rtol=1e-12)


def test_masked_logits_and_large_values():
    x = np.array([[0.0, -np.inf, 2.0, -np.inf], [1e4, 1e4 + 1, -1e4, 1e4 - 2]], np.float32)
    t = np.array([2, 1])
    got = L.cross_entropy(fx.array(x), fx.array(t), reduction="none")
    want = ref_loss(np.where(np.isinf(x), -1e300, x.astype(np.float64)), t)
    np.testing.assert_allclose(to_np(got), want, rtol=1e-6, atol=1e-6)
    dx = to_np(fx.grad(lambda a: L.cross_entropy(a, fx.array(t), reduction="sum"))(fx.array(x)))
    assert np.all(np.isfinite(dx)) and dx[0, 1] == 0 and dx[0, 3] == 0
    np.testing.assert_allclose(dx.sum(axis=-1), 0, atol=1e-6)
    # A target on a hidden logit: an infinite loss.
    assert np.isinf(L.cross_entropy(fx.array(x), fx.array([1, 1]), reduction="none")[0].item())


def test_target_out_of_range(device):
    x = fx.array(np.zeros((2, 3), np.float32))
    loss = L.cross_entropy(x, fx.array([1, 3]), reduction="none")
    if device == "cpu":
        with pytest.raises(IndexError, match=r"\[cross_entropy\] Target 3 is out of range for 3 classes"):
            fx.eval(loss)
    else:
        # The GPU cannot raise without waiting: the row's loss and gradient are NaN.
        got = to_np(loss)
        assert got[0] == pytest.approx(np.log(3), rel=1e-6) and np.isnan(got[1])
        dx = to_np(fx.grad(lambda a: L.cross_entropy(a, fx.array([1, -4]), reduction="sum"))(x))
        assert np.all(np.isfinite(dx[0])) and np.all(np.isnan(dx[1]))


def test_bad_arguments():
    x = fx.array(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"\[cross_entropy\] Targets shape \(3,\) does not match logits shape \(2, 3\)"):
        L.cross_entropy(x, fx.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"Label smoothing must be in \[0, 1\)"):
        L.cross_entropy(x, fx.array([0, 1]), label_smoothing=1.0)


def test_forward_mode_second_derivatives_and_vmap(rng):
    x = rng.normal(size=(3, 4, 6))
    t = rng.integers(0, 6, size=(3, 4))
    v = rng.normal(size=x.shape)

    def f(a):
        return L.cross_entropy(a, fx.array(t), label_smoothing=0.1, reduction="none")

    f64 = lambda a: fx.array(a, dtype=fx.float64)  # noqa: E731
    _, tangent = fx.jvp(lambda a: [f(a)], [f64(x)], [f64(v)])
    eps = 1e-6
    want = (ref_loss(x + eps * v, t, 0.1) - ref_loss(x - eps * v, t, 0.1)) / (2 * eps)
    np.testing.assert_allclose(to_np(tangent[0]), want, rtol=1e-6, atol=1e-8)
    # Hessian-vector product through the backward primitive's reference graph.
    g = fx.grad(lambda a: (f(a) ** 2).sum())
    hvp = fx.jvp(lambda a: [g(a)], [f64(x)], [f64(v)])[1][0]
    grad_of = lambda a: 2 * ref_loss(a, t, 0.1)[..., None] * ref_grad(a, t, np.ones(t.shape), 0.1)  # noqa: E731
    want_hvp = (grad_of(x + 1e-5 * v) - grad_of(x - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(to_np(hvp), want_hvp, rtol=1e-5, atol=1e-7)
    # vmap over the logits' first axis and over the targets' too.
    got = fx.vmap(lambda a, b: L.cross_entropy(a, b, reduction="none"), in_axes=(1, 1))(f64(x), fx.array(t))
    np.testing.assert_allclose(to_np(got), ref_loss(x, t).T, rtol=1e-12)


def test_compiled_step_uses_the_fused_primitives(rng):
    x = fx.array(rng.normal(size=(4, 9)).astype(np.float32))
    t = fx.array(rng.integers(0, 9, size=(4,)))
    step = fx.compile(fx.value_and_grad(lambda a, b: L.cross_entropy(a, b, reduction="mean")))
    names = " ".join(step.graph(x, t))
    assert "CrossEntropy" in names and "CrossEntropyVJP" in names
    loss, dx = step(x, t)
    want = ref_loss(to_np(x), to_np(t)).mean()
    np.testing.assert_allclose(loss.item(), want, rtol=1e-6)
    np.testing.assert_allclose(to_np(dx), ref_grad(to_np(x), to_np(t), np.full(4, 0.25)), rtol=1e-5, atol=1e-7)


@pytest.mark.skipif(not HAVE_MLX, reason="MLX is not installed")
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
def test_matches_mlx(dtype, smoothing, rng):
    import mlx.core as mx
    import mlx.nn as mnn

    x = (rng.normal(size=(6, 300)) * 4).astype(np.float32)
    t = rng.integers(0, 300, size=(6,)).astype(np.int32)
    ours = L.cross_entropy(fx.array(x).astype(getattr(fx, dtype)), fx.array(t), label_smoothing=smoothing,
                           reduction="none")
    theirs = mnn.losses.cross_entropy(mx.array(x).astype(getattr(mx, dtype)), mx.array(t),
                                      label_smoothing=smoothing, reduction="none")
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    # MLX rounds its intermediate log-sum-exp and score to the dtype; ferrox
    # rounds once.
    tol = {"float32": 1e-5, "float16": 2e-2, "bfloat16": 1.5e-1}[dtype]
    np.testing.assert_allclose(to_np(ours.astype(fx.float32)), np.array(theirs.astype(mx.float32)), rtol=tol, atol=tol)
