"""fx.custom_function rules and fx.checkpoint."""

import numpy as np
import pytest

import ferrox as fx


def test_custom_vjp_jvp_vmap_rules_are_used():
    @fx.custom_function
    def f(x, y):
        return x * y

    @f.vjp
    def f_vjp(primals, cotangent, output):
        x, y = primals
        return cotangent * 10, cotangent * 20

    @f.jvp
    def f_jvp(primals, tangents):
        return tangents[0] + tangents[1]

    @f.vmap
    def f_vmap(inputs, axes):
        return inputs[0] - inputs[1], axes[0]

    x, y = fx.array([1.0, 2.0]), fx.array([3.0, 4.0])
    assert f(x, y).tolist() == [3.0, 8.0]
    gx, gy = fx.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(x, y)
    assert gx.tolist() == [10.0, 10.0] and gy.tolist() == [20.0, 20.0]
    _, (t,) = fx.jvp(f, [x, y], [fx.ones(2), fx.ones(2)])
    assert t.tolist() == [2.0, 2.0]
    xb, yb = fx.ones((3, 2)), fx.zeros((3, 2))
    assert fx.vmap(f)(xb, yb).tolist() == [[1.0, 1.0]] * 3


def test_rules_default_to_the_function_derivatives():
    @fx.custom_function
    def g(x):
        return fx.sin(x)

    x = fx.array([0.5, 1.0], dtype=fx.float64)
    np.testing.assert_allclose(np.array(fx.grad(lambda v: g(v).sum())(x)), np.cos(np.array(x)))
    np.testing.assert_allclose(np.array(fx.vmap(g)(fx.stack([x, x]))), np.sin(np.array(fx.stack([x, x]))))


def test_custom_vjp_replaces_an_unstable_derivative():
    @fx.custom_function
    def safe_log(x):
        return fx.log(x)

    @safe_log.vjp
    def _(primals, cotangent, output):
        return (cotangent * 0,)

    g = fx.grad(lambda v: safe_log(v).sum())(fx.array([0.0, 1.0]))
    assert g.tolist() == [0.0, 0.0]


def test_multiple_outputs_pass_tuples_to_the_rule():
    @fx.custom_function
    def two(x):
        return x * 2, x * 3

    @two.vjp
    def _(primals, cotangents, outputs):
        assert isinstance(cotangents, tuple) and len(cotangents) == 2
        return (cotangents[0] + cotangents[1],)

    def loss(v):
        a, b = two(v)
        return a.sum() + b.sum()

    # The rule sums the two cotangents (ones each), not the true 2 + 3.
    assert fx.grad(loss)(fx.array([1.0])).tolist() == [2.0]


def test_errors_in_rules_keep_their_type():
    @fx.custom_function
    def f(x):
        return x

    @f.vjp
    def _(primals, cotangent, output):
        raise RuntimeError("boom")

    @f.jvp
    def _(primals, tangents):
        raise KeyError("jvp rule")

    with pytest.raises(RuntimeError, match="boom"):
        fx.grad(lambda v: f(v).sum())(fx.array([1.0]))
    with pytest.raises(KeyError, match="jvp rule"):
        fx.jvp(f, [fx.array([1.0])], [fx.array([1.0])])
    # A later, unrelated error is not confused with the carried exception.
    with pytest.raises(ValueError, match="broadcast"):
        fx.ones((2,)) + fx.ones((3,))


def test_errors_in_the_forward_function_keep_their_type():
    @fx.custom_function
    def f(x):
        raise ZeroDivisionError("forward")

    with pytest.raises(ZeroDivisionError, match="forward"):
        f(fx.array([1.0]))


def test_checkpoint_matches_plain_gradients():
    def block(x, w):
        return fx.tanh(x @ w)

    x = fx.array(np.arange(6.0).reshape(2, 3) / 6, dtype=fx.float64)
    w = fx.array(np.arange(12.0).reshape(3, 4) / 12 - 0.5, dtype=fx.float64)
    plain = fx.grad(lambda a, b: block(a, b).sum(), argnums=(0, 1))(x, w)
    ck = fx.checkpoint(block)
    recomputed = fx.grad(lambda a, b: ck(a, b).sum(), argnums=(0, 1))(x, w)
    for p, r in zip(plain, recomputed):
        np.testing.assert_allclose(np.array(p), np.array(r), rtol=1e-12)
    assert ck(x, w).shape == (2, 4)
