"""ferrox.nn.losses: every loss and reduction against NumPy float64
references on random inputs (with broadcast, empty and 0-d cases),
gradients against finite differences, argument errors with MLX's messages,
and agreement with MLX where it is installed."""

import importlib.util
import zlib

import numpy as np
import pytest

import ferrox as fx
from ferrox.nn import losses as L

HAVE_MLX = importlib.util.find_spec("mlx") is not None
needs_mlx = pytest.mark.skipif(not HAVE_MLX, reason="mlx is not installed")

FD_EPS = 1e-6
REDUCTIONS = ["none", "mean", "sum"]


def f64(a):
    return fx.array(np.asarray(a, dtype=np.float64), dtype=fx.float64)


def log_softmax(x, axis=-1):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def reduce(loss, reduction):
    return {"none": loss, "mean": np.mean(loss), "sum": np.sum(loss)}[reduction]


def assert_close(got, want, rtol=1e-12, atol=1e-12, what=""):
    want = np.asarray(want, dtype=np.float64)
    assert tuple(got.shape) == want.shape, what
    np.testing.assert_allclose(np.array(got, dtype=np.float64), want, rtol=rtol, atol=atol, err_msg=what)


def smooth_l1(d, beta):
    d = np.abs(d)
    return np.where(d < beta, 0.5 * d**2 / beta, d - 0.5 * beta)


def huber(d, delta):
    d = np.abs(d)
    return np.where(d <= delta, 0.5 * d**2, delta * (d - 0.5 * delta))


def cross_entropy_ref(logits, targets, axis=-1, smoothing=0.0, weights=None):
    """MLX's formula: logits shifted by their maximum, the score of the
    targets subtracted from the logsumexp, smoothing toward the mean logit."""
    s = logits - logits.max(axis=axis, keepdims=True)
    lse = np.log(np.exp(s).sum(axis=axis))
    if targets.ndim == logits.ndim:
        score = np.sum(s * targets, axis=axis)
    else:
        score = np.squeeze(np.take_along_axis(s, np.expand_dims(targets, axis), axis), axis)
    loss = lse - (1 - smoothing) * score - smoothing * np.mean(s, axis=axis)
    return loss if weights is None else loss * weights


def triplet_ref(a, p, n, axis, deg, margin, eps):
    dist = lambda u, v: (np.sum(np.abs(u - v) ** deg, axis=axis) + eps) ** (1 / deg)  # noqa: E731
    return np.maximum(dist(a, p) - dist(a, n) + margin, 0)


def cosine_ref(x1, x2, axis, eps):
    n1, n2 = np.linalg.norm(x1, axis=axis), np.linalg.norm(x2, axis=axis)
    return np.sum(x1 * x2, axis=axis) / np.maximum(n1 * n2, eps)


def gaussian_ref(mu, t, var, full, eps):
    v = np.maximum(var, eps)
    loss = 0.5 * (np.log(v) + (t - mu) ** 2 / v)
    return loss + 0.5 * np.log(2 * np.pi) if full else loss


def make(rng, kind, shape):
    if kind == "real":
        return rng.uniform(-3, 3, size=shape)
    if kind == "pos":
        return rng.uniform(0.2, 2.0, size=shape)
    if kind == "sign":
        return rng.choice([-1.0, 1.0], size=shape)
    if kind == "bit":
        return rng.choice([0.0, 1.0], size=shape)
    if kind == "prob":
        return rng.uniform(0.02, 0.98, size=shape)
    if kind == "logp":
        return log_softmax(rng.uniform(-3, 3, size=shape))
    if kind == "dist":
        return np.exp(log_softmax(rng.uniform(-3, 3, size=shape)))
    if kind.startswith("class"):
        return rng.integers(0, int(kind[5:]), size=shape).astype(np.int32)
    raise ValueError(kind)


# name -> (the loss call on (module, arrays, reduction), NumPy unreduced loss of arrays,
#          [(kind, shape) per array], indices of the arrays to differentiate)
CASES = {
    "cross_entropy_classes": (
        lambda m, a, r: m.cross_entropy(a[0], a[1], reduction=r),
        lambda a: cross_entropy_ref(a[0], a[1]),
        [("real", (4, 5)), ("class5", (4,))],
        [0],
    ),
    "cross_entropy_probs": (
        lambda m, a, r: m.cross_entropy(a[0], a[1], reduction=r),
        lambda a: cross_entropy_ref(a[0], a[1]),
        [("real", (4, 5)), ("dist", (4, 5))],
        [0, 1],
    ),
    "cross_entropy_axis0_smoothing_weights": (
        lambda m, a, r: m.cross_entropy(a[0], a[1], weights=a[2], axis=0, label_smoothing=0.3, reduction=r),
        lambda a: cross_entropy_ref(a[0], a[1], axis=0, smoothing=0.3, weights=a[2]),
        [("real", (5, 2, 3)), ("class5", (2, 3)), ("pos", (2, 3))],
        [0, 2],
    ),
    "cross_entropy_last_axis_smoothing_weights": (
        lambda m, a, r: m.cross_entropy(a[0], a[1], weights=a[2], label_smoothing=0.2, reduction=r),
        lambda a: cross_entropy_ref(a[0], a[1], smoothing=0.2, weights=a[2]),
        [("real", (2, 3, 6)), ("class6", (2, 3)), ("pos", (2, 3))],
        [0, 2],
    ),
    "binary_cross_entropy_logits": (
        lambda m, a, r: m.binary_cross_entropy(a[0], a[1], reduction=r),
        lambda a: np.logaddexp(0, a[0]) - a[0] * a[1],
        [("real", (3, 4)), ("bit", (3, 4))],
        [0, 1],
    ),
    "binary_cross_entropy_probs_weights": (
        lambda m, a, r: m.binary_cross_entropy(a[0], a[1], weights=a[2], with_logits=False, reduction=r),
        lambda a: -(a[1] * np.log(a[0]) + (1 - a[1]) * np.log(1 - a[0])) * a[2],
        [("prob", (3, 4)), ("prob", (3, 4)), ("pos", (3, 4))],
        [0, 1, 2],
    ),
    "l1_loss": (
        lambda m, a, r: m.l1_loss(a[0], a[1], reduction=r),
        lambda a: np.abs(a[0] - a[1]),
        [("real", (3, 4))] * 2,
        [0, 1],
    ),
    "mse_loss": (
        lambda m, a, r: m.mse_loss(a[0], a[1], reduction=r),
        lambda a: (a[0] - a[1]) ** 2,
        [("real", (3, 4))] * 2,
        [0, 1],
    ),
    "nll_loss": (
        lambda m, a, r: m.nll_loss(a[0], a[1], reduction=r),
        lambda a: -np.take_along_axis(a[0], a[1][:, None], -1)[:, 0],
        [("logp", (4, 5)), ("class5", (4,))],
        [0],
    ),
    "nll_loss_axis0": (
        lambda m, a, r: m.nll_loss(a[0], a[1], axis=0, reduction=r),
        lambda a: -np.take_along_axis(a[0], a[1][None, :], 0)[0],
        [("real", (5, 3)), ("class5", (3,))],
        [0],
    ),
    "gaussian_nll_loss": (
        lambda m, a, r: m.gaussian_nll_loss(a[0], a[1], a[2], reduction=r),
        lambda a: gaussian_ref(a[0], a[1], a[2], False, 1e-6),
        [("real", (3, 4)), ("real", (3, 4)), ("pos", (3, 4))],
        [0, 1, 2],
    ),
    "gaussian_nll_loss_full_eps": (
        lambda m, a, r: m.gaussian_nll_loss(a[0], a[1], a[2], full=True, eps=0.5, reduction=r),
        lambda a: gaussian_ref(a[0], a[1], a[2], True, 0.5),
        [("real", (3, 4)), ("real", (3, 4)), ("pos", (3, 4))],
        [0, 1],
    ),
    "kl_div_loss": (
        lambda m, a, r: m.kl_div_loss(a[0], a[1], reduction=r),
        lambda a: np.sum(np.exp(a[1]) * (a[1] - a[0]), axis=-1),
        [("logp", (3, 5)), ("logp", (3, 5))],
        [0, 1],
    ),
    "kl_div_loss_broadcast_axis0": (
        lambda m, a, r: m.kl_div_loss(a[0], a[1], axis=0, reduction=r),
        lambda a: np.sum(np.exp(a[1]) * (a[1] - a[0]), axis=0),
        [("real", (4, 3)), ("real", (3,))],
        [0, 1],
    ),
    "smooth_l1_loss": (
        lambda m, a, r: m.smooth_l1_loss(a[0], a[1], beta=0.5, reduction=r),
        lambda a: smooth_l1(a[0] - a[1], 0.5),
        [("real", (3, 4))] * 2,
        [0, 1],
    ),
    "triplet_loss": (
        lambda m, a, r: m.triplet_loss(a[0], a[1], a[2], margin=2.0, reduction=r),
        lambda a: triplet_ref(a[0], a[1], a[2], -1, 2, 2.0, 1e-6),
        [("real", (4, 6))] * 3,
        [0, 1, 2],
    ),
    "triplet_loss_p3_axis0": (
        lambda m, a, r: m.triplet_loss(a[0], a[1], a[2], axis=0, p=3, margin=0.5, eps=1e-3, reduction=r),
        lambda a: triplet_ref(a[0], a[1], a[2], 0, 3, 0.5, 1e-3),
        [("real", (6, 4))] * 3,
        [0, 1, 2],
    ),
    "hinge_loss": (
        lambda m, a, r: m.hinge_loss(a[0], a[1], reduction=r),
        lambda a: np.maximum(1 - a[0] * a[1], 0),
        [("real", (3, 4)), ("sign", (3, 4))],
        [0],
    ),
    "hinge_loss_broadcast": (
        lambda m, a, r: m.hinge_loss(a[0], a[1], reduction=r),
        lambda a: np.maximum(1 - a[0] * a[1], 0),
        [("real", (3, 4)), ("sign", (4,))],
        [0],
    ),
    "huber_loss": (
        lambda m, a, r: m.huber_loss(a[0], a[1], delta=0.7, reduction=r),
        lambda a: huber(a[0] - a[1], 0.7),
        [("real", (3, 4)), ("real", (1, 4))],
        [0, 1],
    ),
    "log_cosh_loss": (
        lambda m, a, r: m.log_cosh_loss(a[0], a[1], reduction=r),
        lambda a: np.log(np.cosh(a[0] - a[1])),
        [("real", (3, 4)), ("real", (3, 1))],
        [0, 1],
    ),
    "cosine_similarity_loss": (
        lambda m, a, r: m.cosine_similarity_loss(a[0], a[1], reduction=r),
        lambda a: cosine_ref(a[0], a[1], 1, 1e-8),
        [("real", (4, 6))] * 2,
        [0, 1],
    ),
    "cosine_similarity_loss_axis_last": (
        lambda m, a, r: m.cosine_similarity_loss(a[0], a[1], axis=-1, eps=1e-3, reduction=r),
        lambda a: cosine_ref(a[0], a[1], -1, 1e-3),
        [("real", (2, 3, 4))] * 2,
        [0, 1],
    ),
    "margin_ranking_loss": (
        lambda m, a, r: m.margin_ranking_loss(a[0], a[1], a[2], margin=0.2, reduction=r),
        lambda a: np.maximum(0, -a[2] * (a[0] - a[1]) + 0.2),
        [("real", (6,)), ("real", (6,)), ("sign", (6,))],
        [0, 1],
    ),
}


def inputs(name, seed=0):
    rng = np.random.default_rng(zlib.crc32(name.encode()) + seed)
    return [make(rng, kind, shape) for kind, shape in CASES[name][2]]


def to_fx(arrays):
    return [fx.array(a, dtype=fx.int32) if a.dtype == np.int32 else f64(a) for a in arrays]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_values(name, reduction):
    loss, ref, _, _ = CASES[name]
    arrays = inputs(name)
    out = loss(L, to_fx(arrays), reduction)
    assert out.dtype == fx.float64
    assert_close(out, reduce(ref(arrays), reduction), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients(name):
    loss, ref, _, wrt = CASES[name]
    arrays = inputs(name, seed=1)
    rng = np.random.default_rng(2)
    w = rng.uniform(-1, 1, size=np.shape(ref(arrays)))
    for i in wrt:

        def objective(a, i=i):
            xs = to_fx(arrays)
            xs[i] = a
            return (loss(L, xs, "none") * f64(w)).sum()

        g = fx.grad(objective)(f64(arrays[i]))
        fd = np.zeros_like(arrays[i])
        for idx in np.ndindex(*arrays[i].shape):
            hi = [a.copy() for a in arrays]
            lo = [a.copy() for a in arrays]
            hi[i][idx] += FD_EPS
            lo[i][idx] -= FD_EPS
            fd[idx] = (np.sum(w * ref(hi)) - np.sum(w * ref(lo))) / (2 * FD_EPS)
        assert_close(g, fd, rtol=1e-6, atol=1e-7, what=f"{name}: d/d input {i}")


def test_mean_reduction_gradient_scales_by_count():
    x, t = np.random.default_rng(3).uniform(-1, 1, size=(2, 3, 4))
    g = fx.grad(lambda a: L.mse_loss(a, f64(t)))(f64(x))
    assert_close(g, 2 * (x - t) / x.size)


def test_empty_and_scalar_inputs():
    empty = f64(np.zeros((0, 3)))
    assert L.mse_loss(empty, empty, reduction="none").shape == (0, 3)
    assert np.isnan(L.l1_loss(empty, empty).item())  # the mean of nothing, as MLX
    assert L.huber_loss(empty, empty, reduction="sum").item() == 0.0
    logits = f64(np.zeros((0, 5)))
    with pytest.raises(ValueError, match=r"\[logsumexp\] Received empty array"):  # as MLX
        L.cross_entropy(logits, fx.array(np.zeros((0,), np.int32)), reduction="none")
    assert L.binary_cross_entropy(empty, empty, reduction="sum").item() == 0.0
    assert_close(L.mse_loss(f64(2.0), f64(0.5)), 2.25)
    assert_close(L.smooth_l1_loss(f64(2.0), f64(0.5), reduction="none"), 1.0)
    assert_close(L.log_cosh_loss(f64(0.25), f64(1.0), reduction="sum"), np.log(np.cosh(0.75)))
    assert_close(L.margin_ranking_loss(f64(1.0), f64(2.0), f64(1.0), margin=0.5), 1.5)


def test_stable_with_large_logits():
    logits = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, 0.0, 1000.0]], dtype=np.float32)
    targets = np.array([0, 2], dtype=np.int32)
    out = L.cross_entropy(fx.array(logits), fx.array(targets))
    assert_close(out, cross_entropy_ref(logits.astype(np.float64), targets), rtol=1e-6, atol=1e-6)
    z = np.array([-200.0, 200.0], dtype=np.float32)
    bce = L.binary_cross_entropy(fx.array(z), fx.array(np.array([1.0, 0.0], np.float32)), reduction="none")
    assert_close(bce, [200.0, 200.0], rtol=1e-6)
    probs = L.binary_cross_entropy(f64([0.0, 1.0]), f64([1.0, 0.0]), with_logits=False, reduction="none")
    assert_close(probs, [100.0, 100.0])  # log(0) clipped at -100
    assert_close(L.log_cosh_loss(f64([1000.0]), f64([0.0])), [1000.0 - np.log(2)])


def test_dtypes_follow_the_inputs():
    h = fx.array(np.array([[0.5, -1.0, 2.0]], np.float32)).astype(fx.float16)
    assert L.cross_entropy(h, fx.array([1])).dtype == fx.float16
    assert L.binary_cross_entropy(h, fx.array([[0, 1, 1]])).dtype == fx.float16
    assert L.huber_loss(h.astype(fx.bfloat16), fx.array([[0, 1, 1]])).dtype == fx.bfloat16
    assert L.mse_loss(fx.array([1, 2]), fx.array([0, 0])).dtype == fx.float32  # mean of int32
    assert L.mse_loss(fx.array([1, 2]), fx.array([0, 0]), reduction="sum").dtype == fx.int32


LOSS_ARGS = {
    "cross_entropy": 2,
    "binary_cross_entropy": 2,
    "l1_loss": 2,
    "mse_loss": 2,
    "nll_loss": 2,
    "gaussian_nll_loss": 3,
    "kl_div_loss": 2,
    "smooth_l1_loss": 2,
    "triplet_loss": 3,
    "hinge_loss": 2,
    "huber_loss": 2,
    "log_cosh_loss": 2,
    "cosine_similarity_loss": 2,
    "margin_ranking_loss": 3,
}


@pytest.mark.parametrize("name", sorted(LOSS_ARGS))
def test_invalid_reduction(name):
    args = [f64(np.ones((2, 3)))] * LOSS_ARGS[name]
    if name in ("cross_entropy", "nll_loss"):
        args[1] = fx.array([0, 1])
    with pytest.raises(ValueError, match=r"Invalid reduction\. Must be one of \('none', 'mean', 'sum'\)\."):
        getattr(L, name)(*args, reduction="average")
    with pytest.raises(TypeError):
        getattr(L, name)(*args, reduction=1)


SHAPE_ERRORS = [
    (
        lambda a, b: L.cross_entropy(a, fx.array([0, 1, 2])),
        r"Targets shape \(3,\) does not match logits shape \(2, 3\)\.",
    ),
    (
        lambda a, b: L.cross_entropy(a, f64(np.ones((3, 2)))),
        r"Targets shape \(3, 2\) does not match logits shape \(2, 3\)\.",
    ),
    (lambda a, b: L.binary_cross_entropy(a, b), r"Inputs shape \(2, 3\) does not match targets shape \(3,\)\."),
    (lambda a, b: L.l1_loss(a, b), r"Predictions shape \(2, 3\) does not match targets shape \(3,\)\."),
    (lambda a, b: L.mse_loss(a, b), r"Predictions shape \(2, 3\) does not match targets shape \(3,\)\."),
    (lambda a, b: L.smooth_l1_loss(a, b), r"Predictions shape \(2, 3\) does not match targets shape \(3,\)\."),
    (lambda a, b: L.gaussian_nll_loss(a, b, a), r"Inputs shape \(2, 3\) does not match targets shape \(3,\)\."),
    (lambda a, b: L.gaussian_nll_loss(a, a, b), r"Inputs shape \(2, 3\) does not match vars shape \(3,\)\."),
    (
        lambda a, b: L.margin_ranking_loss(a, a, b),
        r"inputs1\.shape=\(2, 3\), inputs2\.shape=\(2, 3\), and targets\.shape=\(3,\)\.",
    ),
    (
        lambda a, b: L.cross_entropy(a, fx.array([0, 1]), weights=b),
        r"Weights with shape \(3,\) is not the same as output loss with shape \(2,\)\.",
    ),
    (
        lambda a, b: L.binary_cross_entropy(a, a, weights=b),
        r"Weights with shape \(3,\) is not the same as output loss with shape \(2, 3\)\.",
    ),
]


@pytest.mark.parametrize("call, message", SHAPE_ERRORS)
def test_shape_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call(f64(np.ones((2, 3))), f64(np.ones(3)))


def test_option_errors():
    logits, targets = f64(np.ones((2, 3))), fx.array([0, 1])
    for bad in (-0.1, 1.0, float("nan")):
        with pytest.raises(ValueError, match=r"\[cross_entropy\] Label smoothing must be in \[0, 1\)"):
            L.cross_entropy(logits, targets, label_smoothing=bad)
    with pytest.raises(ValueError, match="triplet_loss"):
        L.triplet_loss(logits, logits, logits, p=0)
    with pytest.raises(IndexError):
        L.cross_entropy(logits, targets, axis=2)
    with pytest.raises(IndexError):
        L.kl_div_loss(logits, logits, axis=2)
    with pytest.raises(ValueError):
        L.nll_loss(logits, fx.array([0, 1, 2]))
    with pytest.raises(TypeError):
        L.huber_loss(logits, logits, delta="wide")


def test_face_exports_every_loss():
    assert sorted(L.__all__) == sorted(LOSS_ARGS)
    for n in L.__all__:
        assert callable(getattr(L, n)) and getattr(L, n).__doc__


# --------------------------------------------------------------------------
# Agreement with MLX
# --------------------------------------------------------------------------


@needs_mlx
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_mlx(name, reduction):
    import mlx.core as mx
    import mlx.nn as mnn

    loss, _, _, _ = CASES[name]
    arrays = [a if a.dtype == np.int32 else a.astype(np.float32) for a in inputs(name)]
    got = loss(L, [fx.array(a) for a in arrays], reduction)
    want = loss(mnn.losses, [mx.array(a) for a in arrays], reduction)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-5, atol=1e-5)


@needs_mlx
@pytest.mark.parametrize("name", sorted(LOSS_ARGS))
def test_signatures_match_mlx(name):
    import inspect

    import mlx.nn as mnn

    def params(f):
        return [(p.name, p.default) for p in inspect.signature(f).parameters.values()]

    assert params(getattr(L, name)) == params(getattr(mnn.losses, name))
