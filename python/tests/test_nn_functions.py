"""ferrox.nn activation functions: values against NumPy float64 references
(random inputs, broadcast, empty and 0-d), MLX's result dtypes, numerical
stability at extreme inputs, gradients against finite differences, argument
errors, and agreement with MLX where it is installed."""

import importlib.util
import math

import numpy as np
import pytest

import ferrox as fx
from ferrox.nn import functions as F

HAVE_MLX = importlib.util.find_spec("mlx") is not None
needs_mlx = pytest.mark.skipif(not HAVE_MLX, reason="mlx is not installed")

FD_EPS = 1e-6
erf = np.vectorize(math.erf, otypes=[np.float64])


def f64(a):
    return fx.array(np.asarray(a, dtype=np.float64), dtype=fx.float64)


def sigmoid(x):
    return np.exp(-np.logaddexp(0.0, -x))


def softplus(x):
    return np.logaddexp(x, 0.0)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def elu(x, alpha):
    return np.where(x > 0, x, alpha * np.expm1(x))


# name -> (ferrox function with MLX's keyword names, float64 reference, points where it has a kink)
ELEMENTWISE = {
    "relu": (F.relu, lambda x: np.maximum(x, 0.0), [0.0]),
    "relu2": (F.relu2, lambda x: np.maximum(x, 0.0) ** 2, [0.0]),
    "relu6": (F.relu6, lambda x: np.clip(x, 0.0, 6.0), [0.0, 6.0]),
    "leaky_relu": (lambda x: F.leaky_relu(x, negative_slope=0.1), lambda x: np.where(x > 0, x, 0.1 * x), [0.0]),
    "elu": (lambda x: F.elu(x, alpha=1.5), lambda x: elu(x, 1.5), [0.0]),
    "celu": (
        lambda x: F.celu(x, alpha=0.7),
        lambda x: np.maximum(x, 0.0) + np.minimum(0.0, 0.7 * np.expm1(x / 0.7)),
        [],
    ),
    "selu": (F.selu, lambda x: 1.0507 * elu(x, 1.67326), [0.0]),
    "sigmoid": (F.sigmoid, sigmoid, []),
    "silu": (F.silu, lambda x: x * sigmoid(x), []),
    "softplus": (F.softplus, softplus, []),
    "log_sigmoid": (F.log_sigmoid, lambda x: -softplus(-x), []),
    "softsign": (F.softsign, lambda x: x / (1 + np.abs(x)), []),
    "mish": (F.mish, lambda x: x * np.tanh(softplus(x)), []),
    "tanh": (F.tanh, np.tanh, []),
    "gelu": (F.gelu, lambda x: x * (1 + erf(x / math.sqrt(2))) / 2, []),
    "gelu_approx": (
        F.gelu_approx,
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
        [],
    ),
    "gelu_fast_approx": (F.gelu_fast_approx, lambda x: x * sigmoid(1.702 * x), []),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6, [-3.0, 3.0]),
    "hard_tanh": (
        lambda x: F.hard_tanh(x, min_val=-0.5, max_val=2.0),
        lambda x: np.clip(x, -0.5, 2.0),
        [-0.5, 2.0],
    ),
    "hard_shrink": (
        lambda x: F.hard_shrink(x, lambd=0.7),
        lambda x: np.where(np.abs(x) > 0.7, x, 0.0),
        [-0.7, 0.7],
    ),
    "softshrink": (
        lambda x: F.softshrink(x, lambd=0.7),
        lambda x: np.where(np.abs(x) > 0.7, x - np.sign(x) * 0.7, 0.0),
        [-0.7, 0.7],
    ),
}

# name -> (ferrox function of x, reference of x) for functions along axes or with array parameters
ALPHA = np.array([0.1, -0.3, 0.25, 0.5])
AXIS_CASES = {
    "softmax_last": (lambda x: F.softmax(x, axis=-1), lambda x: softmax(x, -1)),
    "softmax_0": (lambda x: F.softmax(x, axis=0), lambda x: softmax(x, 0)),
    "softmax_all": (lambda x: F.softmax(x, axis=None), lambda x: softmax(x, None)),
    "softmin_last": (lambda x: F.softmin(x), lambda x: softmax(-x, -1)),
    "softmin_pair": (lambda x: F.softmin(x, axis=(0, 1)), lambda x: softmax(-x, (0, 1))),
    "log_softmax_last": (lambda x: F.log_softmax(x), lambda x: log_softmax(x, -1)),
    "log_softmax_0": (lambda x: F.log_softmax(x, axis=0), lambda x: log_softmax(x, 0)),
    "glu_last": (lambda x: F.glu(x), lambda x: x[:, :2] * sigmoid(x[:, 2:])),
    "glu_0": (lambda x: F.glu(x[:2], axis=0), lambda x: x[:1] * sigmoid(x[1:2])),
    "prelu_vector": (lambda x: F.prelu(x, f64(ALPHA)), lambda x: np.maximum(0, x) + ALPHA * np.minimum(0, x)),
    "prelu_scalar": (lambda x: F.prelu(x, f64([0.25])), lambda x: np.where(x > 0, x, 0.25 * x)),
}


def away_from(x, kinks, gap=0.05):
    """``x`` with values closer than ``gap`` to a kink moved away from it."""
    for k in kinks:
        near = np.abs(x - k) < gap
        x = np.where(near, k + np.where(x >= k, gap, -gap), x)
    return x


def assert_close(got, want, rtol=1e-12, atol=1e-12, what=""):
    want = np.asarray(want)
    assert tuple(got.shape) == want.shape, what
    np.testing.assert_allclose(np.array(got, dtype=np.float64), want, rtol=rtol, atol=atol, err_msg=what)


def fd_gradient(ref, x, w):
    """Central differences of ``sum(w * ref(x))`` in float64."""
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += FD_EPS
        lo[idx] -= FD_EPS
        g[idx] = (np.sum(w * ref(hi)) - np.sum(w * ref(lo))) / (2 * FD_EPS)
    return g


@pytest.mark.parametrize("shape", [(3, 4), (0, 5), ()], ids=["matrix", "empty", "scalar"])
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_values(name, shape):
    fun, ref, _ = ELEMENTWISE[name]
    x = np.random.default_rng(1).uniform(-7, 7, size=shape)
    out = fun(f64(x))
    assert out.dtype == fx.float64
    assert_close(out, ref(x))


def test_elementwise_values_on_views():
    x = np.random.default_rng(2).uniform(-4, 4, size=(4, 6))
    a = f64(x)
    for name, (fun, ref, _) in ELEMENTWISE.items():
        assert_close(fun(a.T), ref(x.T), what=name)
        assert_close(fun(a[::2, ::-3]), ref(x[::2, ::-3]), what=name)


def test_step():
    x = np.array([-1.0, 0.2, 0.3, 0.31, 2.0])
    out = F.step(f64(x), threshold=0.3)
    assert out.dtype == fx.int32
    assert np.array(out).tolist() == [0, 0, 1, 1, 1]
    assert np.array(F.step(f64(x))).tolist() == [0, 1, 1, 1, 1]
    assert F.step(f64(np.zeros((0, 2)))).shape == (0, 2)
    # A constant of the input: its gradient is zero.
    g = fx.grad(lambda a: (F.step(a) * a).sum())(f64(x))
    assert_close(g, (x >= 0).astype(np.float64))


@pytest.mark.parametrize("name", sorted(AXIS_CASES))
def test_axis_and_array_parameter_values(name):
    fun, ref = AXIS_CASES[name]
    x = np.random.default_rng(3).uniform(-5, 5, size=(3, 4))
    assert_close(fun(f64(x)), ref(x))


def test_prelu_broadcasts_alpha_against_x():
    x = np.random.default_rng(4).uniform(-2, 2, size=(2, 3, 4))
    assert_close(F.prelu(f64(x), f64(ALPHA)), np.maximum(0, x) + ALPHA * np.minimum(0, x))
    assert F.prelu(f64(np.zeros((0, 4))), f64(ALPHA)).shape == (0, 4)


def test_softmax_family_on_empty_and_scalar_inputs():
    assert F.softmax(f64(np.zeros((3, 0)))).shape == (3, 0)
    with pytest.raises(ValueError, match=r"\[logsumexp\] Received empty array"):  # as MLX
        F.log_softmax(f64(np.zeros((0, 3))))
    assert F.glu(f64(np.zeros((0, 4)))).shape == (0, 2)
    with pytest.raises(ValueError, match="non-empty axes"):
        F.softmax(f64(1.0))
    with pytest.raises(IndexError):
        F.log_softmax(f64(1.0))
    assert_close(F.softmax(f64(1.0), axis=[]), 1.0)


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_gradients(name):
    fun, ref, kinks = ELEMENTWISE[name]
    rng = np.random.default_rng(5)
    x = away_from(rng.uniform(-4, 4, size=(2, 5)), kinks)
    w = rng.uniform(-1, 1, size=x.shape)
    g = fx.grad(lambda a: (fun(a) * f64(w)).sum())(f64(x))
    assert_close(g, fd_gradient(ref, x, w), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(AXIS_CASES))
def test_axis_gradients(name):
    fun, ref = AXIS_CASES[name]
    rng = np.random.default_rng(6)
    x = away_from(rng.uniform(-3, 3, size=(3, 4)), [0.0])
    w = rng.uniform(-1, 1, size=ref(x).shape)
    g = fx.grad(lambda a: (fun(a) * f64(w)).sum())(f64(x))
    assert_close(g, fd_gradient(ref, x, w), rtol=1e-6, atol=1e-7)


def test_prelu_gradient_with_respect_to_alpha():
    rng = np.random.default_rng(7)
    x = away_from(rng.uniform(-3, 3, size=(3, 4)), [0.0])
    w = rng.uniform(-1, 1, size=x.shape)
    g = fx.grad(lambda a: (F.prelu(f64(x), a) * f64(w)).sum())(f64(ALPHA))
    want = fd_gradient(lambda al: np.maximum(0, x) + al * np.minimum(0, x), ALPHA.copy(), w)
    assert_close(g, want, rtol=1e-6, atol=1e-7)


def test_stable_at_extreme_inputs():
    x = np.array([-1000.0, -50.0, 50.0, 1000.0], dtype=np.float32)
    a = fx.array(x)
    assert_close(F.softplus(a), np.array([0.0, softplus(-50.0), 50.0, 1000.0]), rtol=1e-6, atol=1e-30)
    assert_close(F.log_sigmoid(a), np.array([-1000.0, -50.0, -softplus(-50.0), 0.0]), rtol=1e-6, atol=1e-30)
    assert_close(F.mish(a), np.array([0.0, -50.0 * np.tanh(softplus(-50.0)), 50.0, 1000.0]), rtol=1e-6, atol=1e-30)
    g = fx.grad(lambda v: F.log_sigmoid(v).sum())(a)
    assert_close(g, sigmoid(-x.astype(np.float64)), rtol=1e-5, atol=1e-30)
    logits = np.array([[1e4, 1e4 + 1, 1e4 + 2]], dtype=np.float32)
    assert_close(F.log_softmax(fx.array(logits)), log_softmax(logits.astype(np.float64) - 1e4, -1), rtol=1e-6)
    assert_close(F.softmax(fx.array(logits)), softmax(logits.astype(np.float64) - 1e4, -1), rtol=1e-6)


# MLX's result dtypes (checked against MLX itself in test_dtypes_match_mlx).
DTYPE_CASES = [
    (F.relu, "int32", "int32"),
    (F.relu, "bool_", "int32"),
    (F.relu2, "int32", "int32"),
    (F.relu6, "int32", "float32"),
    (F.hard_shrink, "int32", "int32"),
    (F.elu, "int32", "float32"),
    (F.softplus, "int32", "float32"),
    (F.step, "float16", "int32"),
    (F.gelu, "bfloat16", "bfloat16"),
    (F.gelu_approx, "float16", "float16"),
    (F.leaky_relu, "float16", "float16"),
    (F.log_softmax, "bfloat16", "bfloat16"),
    (F.softmax, "int32", "float32"),
    (F.hardswish, "float16", "float16"),
    (F.selu, "bfloat16", "bfloat16"),
]


@pytest.mark.parametrize("fun, dtype, result", DTYPE_CASES, ids=lambda v: getattr(v, "__name__", v))
def test_result_dtypes(fun, dtype, result):
    x = fx.array([-2, 0, 3]).astype(getattr(fx, dtype))
    assert fun(x).dtype == getattr(fx, result)


def test_argument_errors():
    x = f64(np.zeros((3, 5)))
    with pytest.raises(ValueError, match=r"\[glu\].*even"):
        F.glu(x)
    with pytest.raises(IndexError, match="glu"):
        F.glu(x, axis=2)
    with pytest.raises(IndexError):
        F.softmax(x, axis=2)
    with pytest.raises(TypeError):
        F.softmax(x, axis="last")
    with pytest.raises(TypeError):
        F.relu("not an array")
    with pytest.raises(TypeError):
        F.leaky_relu(x, negative_slope="steep")
    with pytest.raises(TypeError):
        F.prelu(x)
    with pytest.raises(ValueError, match="broadcast"):
        F.prelu(x, f64(ALPHA))
    with pytest.raises(ValueError):
        F.log_sigmoid(fx.array([True, False]))


def test_face_exports_every_function():
    names = sorted(ELEMENTWISE) + ["glu", "log_softmax", "prelu", "softmax", "softmin", "step"]
    assert sorted(F.__all__) == sorted(names)
    assert len(F.__all__) == 27
    for n in F.__all__:
        assert callable(getattr(F, n)) and getattr(F, n).__doc__


# --------------------------------------------------------------------------
# Agreement with MLX
# --------------------------------------------------------------------------

MLX_CALLS = {
    **{n: ((), {}) for n in ELEMENTWISE},
    "leaky_relu": ((), {"negative_slope": 0.1}),
    "elu": ((), {"alpha": 1.5}),
    "celu": ((), {"alpha": 0.7}),
    "hard_tanh": ((), {"min_val": -0.5, "max_val": 2.0}),
    "hard_shrink": ((), {"lambd": 0.7}),
    "softshrink": ((), {"lambd": 0.7}),
    "step": ((), {"threshold": 0.3}),
    "softmax": ((), {"axis": 0}),
    "softmin": ((), {}),
    "log_softmax": ((), {"axis": -1}),
    "glu": ((), {"axis": -1}),
    "prelu": (("alpha",), {}),
}


@needs_mlx
@pytest.mark.parametrize("name", sorted(MLX_CALLS))
def test_values_match_mlx(name):
    import mlx.core as mx
    import mlx.nn as mnn

    args, kwargs = MLX_CALLS[name]
    x = np.random.default_rng(8).uniform(-6, 6, size=(4, 6)).astype(np.float32)
    alpha = np.full((6,), 0.3, dtype=np.float32)
    fx_args = [fx.array(alpha) for _ in args]
    mx_args = [mx.array(alpha) for _ in args]
    got = getattr(F, name)(fx.array(x), *fx_args, **kwargs)
    want = getattr(mnn, name)(mx.array(x), *mx_args, **kwargs)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=2e-6, atol=2e-6)


@needs_mlx
@pytest.mark.parametrize("name", sorted(F.__all__))
@pytest.mark.parametrize("dtype", ["int32", "bool_", "float16", "bfloat16"])
def test_dtypes_match_mlx(name, dtype):
    import mlx.core as mx
    import mlx.nn as mnn

    args, kwargs = MLX_CALLS[name]
    values = [-2, 0, 3, 1] if dtype != "bool_" else [True, False, True, True]
    x_fx = fx.array(values).astype(getattr(fx, dtype))
    x_mx = mx.array(values).astype(getattr(mx, dtype))
    fx_args = [fx.array([0.25]) for _ in args]
    mx_args = [mx.array([0.25]) for _ in args]
    try:
        want = getattr(mnn, name)(x_mx, *mx_args, **kwargs)
    except Exception as e:  # MLX refuses the dtype: ferrox refuses it with the same class
        with pytest.raises(type(e)):
            getattr(F, name)(x_fx, *fx_args, **kwargs)
        return
    got = getattr(F, name)(x_fx, *fx_args, **kwargs)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(
        np.array(got.astype(fx.float32)), np.array(want.astype(mx.float32)), rtol=1e-2, atol=1e-2
    )


@needs_mlx
@pytest.mark.parametrize("name", sorted(F.__all__))
def test_signatures_match_mlx(name):
    import inspect

    import mlx.nn as mnn

    def params(f):
        return [(p.name, p.default) for p in inspect.signature(f).parameters.values()]

    assert params(getattr(F, name)) == params(getattr(mnn, name))


def test_gelu_approx_is_one_op_with_exact_derivatives():
    # gelu_approx runs one kernel (and one for its derivative); the second
    # derivative is composed from ops: both against central differences of
    # the float64 formula.
    x = np.linspace(-5, 5, 41)
    c, a = math.sqrt(2 / math.pi), 0.044715

    def first(v):
        t = np.tanh(c * (v + a * v**3))
        return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * c * (1 + 3 * a * v * v)

    h = 1e-5
    d1 = fx.grad(lambda v: F.gelu_approx(v).sum())
    assert_close(d1(f64(x)), first(x), rtol=1e-12, atol=1e-12)
    d2 = fx.grad(lambda v: d1(v).sum())
    assert_close(d2(f64(x)), (first(x + h) - first(x - h)) / (2 * h), rtol=1e-6, atol=1e-8)
    z = np.array([0.5 + 1j, -1 - 0.25j], dtype=np.complex64)
    want = 0.5 * z * (1 + np.tanh(c * (z + a * z**3)))
    np.testing.assert_allclose(np.array(F.gelu_approx(fx.array(z))), want, rtol=1e-5, atol=1e-6)
