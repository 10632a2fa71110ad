"""ferrox.optimizers against a float64 transcription of MLX's formulas (and
against MLX itself where it is installed): every optimizer over several
steps on a tree of parameters, float32 and bfloat16, their state trees,
schedules, clip_grad_norm, MultiOptimizer, and argument errors."""

import math

import numpy as np
import pytest

import ferrox as fx
import ferrox.nn as nn
import ferrox.optimizers as optim
from ferrox.utils import tree_flatten, tree_map, tree_unflatten

try:
    import mlx.core as mx
    import mlx.optimizers as mopt
except ImportError:  # MLX is optional: the float64 references still run
    mx = None

SHAPES = {"w": (4, 5), "layers": [{"b": (3,)}, {"k": (2, 3, 4)}]}


def _tree(seed, lo=-1.0, hi=1.0):
    rng = np.random.default_rng(seed)
    return tree_map(lambda s: rng.uniform(lo, hi, s).astype(np.float32), SHAPES, is_leaf=lambda s: isinstance(s, tuple))


# ---------------------------------------------------------------------------
# float64 references of MLX's apply_single (state: dict of numpy arrays)
# ---------------------------------------------------------------------------


def ref_sgd(p, g, s, lr, t, momentum=0.0, weight_decay=0.0, dampening=0.0, nesterov=False):
    g = g + weight_decay * p
    if momentum <= 0:
        return p - lr * g
    v = momentum * s.get("v", 0.0) + ((1 - dampening) * g if dampening > 0 else g)
    s["v"] = v
    return p - lr * (g + momentum * v if nesterov else v)


def ref_rmsprop(p, g, s, lr, t, alpha=0.99, eps=1e-8):
    s["v"] = alpha * s.get("v", 0.0) + (1 - alpha) * g * g
    return p - lr * g / (np.sqrt(s["v"]) + eps)


def ref_adagrad(p, g, s, lr, t, eps=1e-8):
    s["v"] = s.get("v", 0.0) + g * g
    return p - lr * g / (np.sqrt(s["v"]) + eps)


def ref_adadelta(p, g, s, lr, t, rho=0.9, eps=1e-6):
    v = rho * s.get("v", 0.0) + (1 - rho) * g * g
    d = np.sqrt(s.get("u", 0.0) + eps) / np.sqrt(v + eps) * g
    s["v"], s["u"] = v, rho * s.get("u", 0.0) + (1 - rho) * d * d
    return p - lr * d


def ref_adam(p, g, s, lr, t, betas=(0.9, 0.999), eps=1e-8, bias_correction=False, weight_decay=0.0):
    b1, b2 = betas
    p = p * (1 - lr * weight_decay)
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    if bias_correction:
        return p - lr / (1 - b1**t) * s["m"] / (np.sqrt(s["v"]) / np.sqrt(1 - b2**t) + eps)
    return p - lr * s["m"] / (np.sqrt(s["v"]) + eps)


def ref_adamax(p, g, s, lr, t, betas=(0.9, 0.999), eps=1e-8):
    b1, b2 = betas
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    s["v"] = np.maximum(b2 * s.get("v", 0.0), np.abs(g))
    return p - lr * s["m"] / (s["v"] + eps)


def ref_lion(p, g, s, lr, t, betas=(0.9, 0.99), weight_decay=0.0):
    b1, b2 = betas
    m = s.get("m", 0.0)
    c = b1 * m + (1 - b1) * g
    s["m"] = b2 * m + (1 - b2) * g
    if weight_decay > 0:
        p = (1 - lr * weight_decay) * p
    return p - lr * np.sign(c)


def ref_adafactor(p, g, s, lr, t, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8, beta_1=None,
                  weight_decay=0.0, scale_parameter=True, relative_step=True, warmup_init=False):
    rms = lambda x: np.sqrt(np.mean(np.square(x)))  # noqa: E731
    p_rms = rms(p)
    rel = min(1e-6 * t if warmup_init else 1e-2, 1 / np.sqrt(t)) if relative_step else lr
    step_size = (max(eps[1], p_rms) if scale_parameter else 1.0) * rel
    beta_2 = 1.0 - t**decay_rate
    u = np.square(g) + eps[0]
    if g.ndim >= 2:
        row = beta_2 * s.get("exp_avg_sq_row", 0.0) + (1 - beta_2) * u.mean(-1)
        col = beta_2 * s.get("exp_avg_sq_col", 0.0) + (1 - beta_2) * u.mean(-2)
        s["exp_avg_sq_row"], s["exp_avg_sq_col"] = row, col
        r = 1 / np.sqrt(row / row.mean(-1, keepdims=True))
        update = r[..., None] * (1 / np.sqrt(col))[..., None, :] * g
    else:
        s["exp_avg_sq"] = beta_2 * s.get("exp_avg_sq", 0.0) + (1 - beta_2) * u
        update = g / np.sqrt(s["exp_avg_sq"])
    update = step_size * update / max(1.0, rms(update) / clip_threshold)
    if beta_1 is not None:
        s["exp_avg"] = beta_1 * s.get("exp_avg", 0.0) + (1 - beta_1) * update
        update = s["exp_avg"]
    if weight_decay != 0:
        p = p - p * weight_decay * step_size
    return p - update


def _newton_schulz(x, steps):
    a, b, c = 3.4445, -4.7750, 2.0315
    tr = x.shape[0] > x.shape[1]
    x = x.T if tr else x
    x = x / (np.sqrt(np.sum(x * x)) + 1e-7)
    for _ in range(steps):
        A = x @ x.T
        B = b * A + c * A @ A
        x = a * x + B @ x
    return x.T if tr else x


def ref_muon(p, g, s, lr, t, momentum=0.95, weight_decay=0.01, nesterov=True, ns_steps=5):
    g = g + weight_decay * p
    v = momentum * s.get("v", 0.0) + (1 - momentum) * g
    s["v"] = v
    update = g * (1 - momentum) + v * momentum if nesterov else v
    if update.ndim >= 2:
        shape = update.shape
        update = _newton_schulz(update.reshape(shape[0], -1), ns_steps).reshape(shape)
        lr = lr * max(1, shape[-2] / shape[-1]) ** 0.5
    return p - lr * update


CASES = [
    ("SGD", dict(learning_rate=0.1), ref_sgd),
    ("SGD", dict(learning_rate=0.1, momentum=0.9, weight_decay=0.01, nesterov=True), ref_sgd),
    ("SGD", dict(learning_rate=0.1, momentum=0.5, dampening=0.25), ref_sgd),
    ("RMSprop", dict(learning_rate=0.01), ref_rmsprop),
    ("Adagrad", dict(learning_rate=0.1), ref_adagrad),
    ("AdaDelta", dict(learning_rate=0.5, rho=0.8), ref_adadelta),
    ("Adam", dict(learning_rate=0.01), ref_adam),
    ("Adam", dict(learning_rate=0.01, betas=[0.8, 0.99], bias_correction=True), ref_adam),
    ("AdamW", dict(learning_rate=0.01, weight_decay=0.1), ref_adam),
    ("Adamax", dict(learning_rate=0.01), ref_adamax),
    ("Lion", dict(learning_rate=0.01, weight_decay=0.1), ref_lion),
    ("Adafactor", dict(), ref_adafactor),
    ("Adafactor", dict(learning_rate=0.05, relative_step=False, beta_1=0.9, weight_decay=0.1,
                       scale_parameter=False), ref_adafactor),
    ("Muon", dict(learning_rate=0.02), ref_muon),
]


def _ref_kwargs(name, kwargs):
    kw = {k: v for k, v in kwargs.items() if k != "learning_rate"}
    if name == "AdamW":
        kw.setdefault("weight_decay", 0.01)
    return kw


@pytest.mark.parametrize("name,kwargs,ref", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_optimizer_matches_reference_over_steps(name, kwargs, ref):
    opt = getattr(optim, name)(**kwargs)
    params = tree_map(fx.array, _tree(0))
    want = tree_map(lambda a: a.astype(np.float64), _tree(0))
    flat_s = {k: {} for k, _ in tree_flatten(want)}
    lr = kwargs.get("learning_rate", 0.0)
    for t in range(1, 4):
        grads = _tree(t, -2.0, 2.0)
        params = opt.apply_gradients(tree_map(fx.array, grads), params)
        flat_p, flat_g = tree_flatten(want), dict(tree_flatten(grads))
        want = tree_unflatten([(k, ref(p, flat_g[k].astype(np.float64), flat_s[k], lr, t, **_ref_kwargs(name, kwargs))) for k, p in flat_p])
        for k, got in tree_flatten(params):
            np.testing.assert_allclose(np.array(got), dict(tree_flatten(want))[k], rtol=2e-4, atol=2e-5, err_msg=f"{name} step {t} {k}")
        want = tree_map(lambda a: np.array(a, dtype=np.float64), params)
    assert opt.state["step"].item() == 3
    assert opt.state["step"].dtype == fx.uint64


@pytest.mark.skipif(mx is None, reason="MLX is not installed")
@pytest.mark.parametrize("name,kwargs,ref", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_optimizer_matches_mlx(name, kwargs, ref):
    ours, theirs = getattr(optim, name)(**kwargs), getattr(mopt, name)(**kwargs)
    p_ours, p_theirs = tree_map(fx.array, _tree(0)), tree_map(mx.array, _tree(0))
    for t in range(1, 4):
        grads = _tree(t, -2.0, 2.0)
        p_ours = ours.apply_gradients(tree_map(fx.array, grads), p_ours)
        p_theirs = theirs.apply_gradients(tree_map(mx.array, grads), p_theirs)
    for (k, a), (k2, b) in zip(tree_flatten(p_ours), tree_flatten(p_theirs)):
        assert k == k2
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-4, atol=1e-5, err_msg=f"{name} {k}")
    # The same state tree: keys, shapes and dtypes.
    ours_state = {k: (v.shape, str(v.dtype).split(".")[-1]) for k, v in tree_flatten(ours.state)}
    theirs_state = {k: (tuple(v.shape), str(v.dtype).split(".")[-1]) for k, v in tree_flatten(theirs.state)}
    assert ours_state == theirs_state


@pytest.mark.parametrize("name,kwargs", [("Adam", dict(learning_rate=0.01)), ("SGD", dict(learning_rate=0.1, momentum=0.9)),
                                          ("Lion", dict(learning_rate=0.01))])
def test_bfloat16_parameters_keep_their_dtype(name, kwargs):
    opt = getattr(optim, name)(**kwargs)
    p32 = _tree(0)
    params = tree_map(lambda a: fx.array(a).astype(fx.bfloat16), p32)
    ref32 = tree_map(fx.array, p32)
    ref_opt = getattr(optim, name)(**kwargs)
    g = tree_map(fx.array, _tree(1, -2.0, 2.0))
    out = opt.apply_gradients(tree_map(lambda a: a.astype(fx.bfloat16), g), params)
    want = ref_opt.apply_gradients(g, ref32)
    for (k, a), (_, b) in zip(tree_flatten(out), tree_flatten(want)):
        assert a.dtype == fx.bfloat16
        np.testing.assert_allclose(np.array(a.astype(fx.float32)), np.array(b), rtol=2e-2, atol=2e-2, err_msg=k)
    assert all(v.dtype == fx.bfloat16 for k, v in tree_flatten(opt.state) if k not in ("step", "learning_rate"))


def test_update_trains_a_module_and_state_round_trips(tmp_path):
    fx.random.seed(3)
    model = nn.Linear(4, 2)
    opt = optim.AdamW(learning_rate=0.05)
    x = fx.random.normal((32, 4))
    y = x @ fx.array(np.arange(8, dtype=np.float32).reshape(4, 2) / 8)

    def loss(m, x, y):
        return ((m(x) - y) ** 2).mean()

    step = nn.value_and_grad(model, loss)
    first = None
    for _ in range(100):
        value, grads = step(model, x, y)
        opt.update(model, grads)
        fx.eval(model.parameters(), opt.state)
        first = value.item() if first is None else first
    assert value.item() < 0.05 * first
    path = str(tmp_path / "opt.safetensors")
    fx.save_safetensors(path, dict(tree_flatten(opt.state)))
    restored = optim.AdamW(learning_rate=0.05)
    restored.state = tree_unflatten(list(fx.load(path).items()))
    assert restored.state["step"].item() == 100
    a = opt.apply_gradients(grads, model.parameters())
    b = restored.apply_gradients(grads, model.parameters())
    for (k, u), (_, v) in zip(tree_flatten(a), tree_flatten(b)):
        np.testing.assert_array_equal(np.array(u), np.array(v), err_msg=k)


def test_scheduled_learning_rate_and_init():
    sched = optim.cosine_decay(0.1, 10)
    opt = optim.SGD(learning_rate=sched)
    assert opt.learning_rate.item() == pytest.approx(0.1)
    params = {"w": fx.zeros((2,))}
    opt.init(params)
    assert sorted(opt.state.keys()) == ["learning_rate", "step", "w"]
    for t in range(3):
        params = opt.apply_gradients({"w": fx.ones((2,))}, params)
        assert opt.learning_rate.item() == pytest.approx(0.1 * 0.5 * (1 + math.cos(math.pi * t / 10)), rel=1e-6)
    opt.learning_rate = 0.5
    assert opt.learning_rate.item() == 0.5


SCHEDULES = [
    ("exponential_decay", (0.1, 0.9)),
    ("step_decay", (0.1, 0.9, 3)),
    ("cosine_decay", (0.1, 7, 0.01)),
    ("linear_schedule", (0.0, 0.1, 5)),
]


@pytest.mark.parametrize("name,args", SCHEDULES)
def test_schedules(name, args):
    f = getattr(optim, name)(*args)
    exact = {
        "exponential_decay": lambda t: 0.1 * 0.9**t,
        "step_decay": lambda t: 0.1 * 0.9 ** (t // 3),
        "cosine_decay": lambda t: 0.01 + 0.5 * (1 + math.cos(math.pi / 7 * min(t, 7))) * (0.1 - 0.01),
        "linear_schedule": lambda t: min(t, 5) * 0.1 / 5,
    }[name]
    for t in range(12):
        assert np.array(f(fx.array(t))).item() == pytest.approx(exact(t), rel=1e-5, abs=1e-7)
    if mx is not None:
        g = getattr(mopt, name)(*args)
        for t in range(12):
            assert np.array(f(fx.array(t))).item() == pytest.approx(np.array(g(mx.array(t))).item(), rel=1e-6, abs=1e-8)


def test_join_schedules():
    warmup = optim.linear_schedule(0.0, 0.1, 5)
    f = optim.join_schedules([warmup, optim.cosine_decay(0.1, 10)], [5])
    assert np.array(f(fx.array(0))).item() == 0.0
    assert np.array(f(fx.array(5))).item() == pytest.approx(0.1)
    assert np.array(f(fx.array(10))).item() == pytest.approx(0.05, rel=1e-5)
    with pytest.raises(ValueError):
        optim.join_schedules([], [])
    with pytest.raises(ValueError):
        optim.join_schedules([warmup], [3])


def test_clip_grad_norm():
    grads = {"w1": fx.array([2.0, 3.0]), "w2": [fx.array([1.0])]}
    clipped, norm = optim.clip_grad_norm(grads, max_norm=2.0)
    assert norm.item() == pytest.approx(math.sqrt(14))
    scale = 2.0 / (math.sqrt(14) + 1e-6)
    np.testing.assert_allclose(np.array(clipped["w1"]), [2 * scale, 3 * scale], rtol=1e-6)
    np.testing.assert_allclose(np.array(clipped["w2"][0]), [scale], rtol=1e-6)
    same, _ = optim.clip_grad_norm(grads, max_norm=100.0)
    np.testing.assert_allclose(np.array(same["w1"]), [2.0, 3.0])
    with pytest.raises(ValueError):
        optim.clip_grad_norm(grads, -1.0)


def test_multi_optimizer_splits_by_filter():
    sgd, adam = optim.SGD(learning_rate=1.0), optim.Adam(learning_rate=0.1)
    opt = optim.MultiOptimizer([sgd, adam], [lambda path, g: path.startswith("bias")])
    params = {"bias": fx.zeros((2,)), "weight": fx.zeros((2,))}
    grads = {"bias": fx.ones((2,)), "weight": fx.ones((2,))}
    out = opt.apply_gradients(grads, params)
    np.testing.assert_allclose(np.array(out["bias"]), [-1.0, -1.0])
    np.testing.assert_allclose(np.array(out["weight"]), [-0.1 * 0.1 / (np.sqrt(0.001) + 1e-8)] * 2, rtol=1e-5)
    assert len(opt.state["states"]) == 2
    with pytest.raises(ValueError, match="filters"):
        optim.MultiOptimizer([sgd, adam], [])
    with pytest.raises(ValueError, match="Invalid state"):
        opt.state = {"states": [{}]}


@pytest.mark.parametrize(
    "make",
    [
        lambda: optim.SGD(0.1, nesterov=True),
        lambda: optim.SGD(0.1, momentum=0.9, dampening=0.1, nesterov=True),
        lambda: optim.Adam(0.1, betas=[1.0, 0.9]),
        lambda: optim.Adam(0.1, eps=-1.0),
        lambda: optim.RMSprop(0.1, alpha=-0.1),
        lambda: optim.RMSprop(0.1, eps=0.0),
        lambda: optim.Adagrad(0.1, eps=0.0),
        lambda: optim.AdaDelta(0.1, rho=-1.0),
        lambda: optim.Lion(0.1, betas=[0.9, 1.5]),
        lambda: optim.step_decay(0.1, 0.9, 0),
        lambda: optim.cosine_decay(0.1, 0),
        lambda: optim.linear_schedule(0.0, 1.0, 0),
    ],
)
def test_bad_hyperparameters_raise_value_error(make):
    with pytest.raises(ValueError):
        make()


def test_bad_gradients_raise_value_error():
    opt = optim.Adam(0.1)
    with pytest.raises(ValueError, match="shape"):
        opt.apply_gradients({"w": fx.ones((3,))}, {"w": fx.ones((2,))})
    with pytest.raises(ValueError, match="real floats"):
        optim.SGD(0.1).apply_gradients({"w": fx.ones((2,), dtype=fx.int32)}, {"w": fx.ones((2,), dtype=fx.int32)})
    with pytest.raises(ValueError, match="learning rate is required"):
        optim.Adafactor(relative_step=False).apply_gradients({"w": fx.ones((2,))}, {"w": fx.ones((2,))})
