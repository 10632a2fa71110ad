"""fx.vmap checked against a Python loop over the batch followed by fx.stack."""

import numpy as np
import pytest

import ferrox as fx

RNG = np.random.default_rng(1234)


def data(*shape):
    return fx.array(RNG.uniform(0.5, 2.0, size=shape), dtype=fx.float64)


def take(x, axis, i):
    index = [slice(None)] * x.ndim
    index[axis] = i
    return x[tuple(index)]


def loop_reference(fun, args, in_axes, out_axis=0):
    batch = next(a.shape[ax] for a, ax in zip(args, in_axes) if ax is not None)
    rows = [fun(*[a if ax is None else take(a, ax, i) for a, ax in zip(args, in_axes)]) for i in range(batch)]
    return fx.stack(rows, out_axis)


def assert_same(got, want):
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.array(got.astype(fx.float64)), np.array(want.astype(fx.float64)), rtol=1e-12)


UNARY = {
    "exp": fx.exp,
    "log": fx.log,
    "sqrt": fx.sqrt,
    "sin": fx.sin,
    "tanh": fx.tanh,
    "sigmoid": fx.sigmoid,
    "abs": fx.abs,
    "negative": fx.negative,
    "astype": lambda x: x.astype(fx.float32),
    "scalar arithmetic": lambda x: 2.0 * x + 1,
    "sum last": lambda x: x.sum(axis=-1),
    "sum all": lambda x: x.sum(),
    "mean keepdims": lambda x: fx.mean(x, axis=0, keepdims=True),
    "max": lambda x: fx.max(x, axis=1),
    "min": lambda x: fx.min(x),
    "prod": lambda x: fx.prod(x, axis=0),
    "argmin": lambda x: fx.argmin(x, axis=1),
    "argmax all": lambda x: fx.argmax(x),
    "reshape": lambda x: x.reshape(-1),
    "transpose": lambda x: x.T,
    "swapaxes": lambda x: fx.swapaxes(x, 0, 1),
    "slice": lambda x: x[::-1, 1:3],
    "int index": lambda x: x[1],
    "newaxis": lambda x: x[None, :, None],
    "broadcast_to": lambda x: fx.broadcast_to(x, (5,) + x.shape),
    "expand_dims": lambda x: fx.expand_dims(x, 1),
    "squeeze": lambda x: fx.squeeze(fx.expand_dims(x, 0)),
    "flatten": lambda x: fx.flatten(x),
    "matmul": lambda x: x @ x.T,
    "vector matmul": lambda x: x[0] @ x.T,
    "where": lambda x: fx.where(x > 1.0, x, -x),
    "concatenate": lambda x: fx.concatenate([x, 2 * x], axis=1),
    "stack": lambda x: fx.stack([x, x], axis=-1),
    "constant": lambda x: x + fx.ones(x.shape[-1:], dtype=fx.float64),
}


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_vmap_matches_loop(name, axis):
    fun = UNARY[name]
    x = data(2, 3, 4)
    assert_same(fx.vmap(fun, in_axes=axis)(x), loop_reference(fun, [x], [axis]))


BINARY = {
    "add": fx.add,
    "subtract": fx.subtract,
    "multiply": fx.multiply,
    "divide": fx.divide,
    "power": fx.power,
    "maximum": fx.maximum,
    "minimum": fx.minimum,
    "equal": fx.equal,
    "greater": fx.greater,
    "matmul": lambda a, b: a @ b.T,
}


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 1), (1, 0)])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_vmap_binary_with_unbatched_operands(name, in_axes):
    fun = BINARY[name]
    a, b = data(3, 3), data(3, 3)
    assert_same(fx.vmap(fun, in_axes=in_axes)(a, b), loop_reference(fun, [a, b], list(in_axes)))


def test_vmap_lower_rank_batched_operand_broadcasts_per_example():
    a, b = data(2, 3, 4), data(2, 4)
    fun = lambda x, y: x * y  # noqa: E731
    assert_same(fx.vmap(fun)(a, b), loop_reference(fun, [a, b], [0, 0]))


def test_out_axes_and_multiple_outputs():
    x = data(2, 3)
    s, e = fx.vmap(lambda v: (v.sum(), fx.exp(v)), in_axes=1, out_axes=(0, 1))(x)
    assert_same(s, x.sum(axis=0))
    assert_same(e, fx.exp(x))


def test_unbatched_output_is_broadcast():
    x, c = data(4, 2), data(3)
    out = fx.vmap(lambda v, k: k * 2, in_axes=(0, None))(x, c)
    assert out.shape == (4, 3)


def test_nested_trees_of_arguments():
    params = {"w": data(3, 2), "b": data(2)}
    xs = data(5, 3)
    fun = lambda p, x: x @ p["w"] + p["b"]  # noqa: E731
    out = fx.vmap(fun, in_axes=(None, 0))(params, xs)
    assert_same(out, xs @ params["w"] + params["b"])


def test_nested_vmap():
    x = data(2, 3, 4)
    out = fx.vmap(fx.vmap(lambda v: v.sum()))(x)
    assert_same(out, x.sum(axis=-1))


def test_vmap_of_grad_gives_per_example_gradients():
    w = data(3)
    xs = data(5, 3)
    loss = lambda w, x: fx.sum(fx.tanh(w * x))  # noqa: E731
    per_example = fx.vmap(fx.grad(loss), in_axes=(None, 0))(w, xs)
    want = fx.stack([fx.grad(loss)(w, xs[i]) for i in range(5)])
    assert_same(per_example, want)


def test_grad_of_vmap():
    x = data(4, 3)
    g = fx.grad(lambda v: fx.vmap(lambda r: (r * r).sum())(v).sum())(x)
    assert_same(g, 2 * x)


def test_vmap_errors():
    x = data(2, 3)
    with pytest.raises(ValueError, match="scalar"):
        fx.vmap(lambda v: v)(fx.array(1.0))
    with pytest.raises(IndexError, match="out of bounds"):
        fx.vmap(lambda v: v, in_axes=2)(x)
    with pytest.raises(IndexError, match="out of bounds"):
        fx.vmap(lambda v: v, out_axes=3)(x)
    with pytest.raises(ValueError, match="non-None"):
        fx.vmap(lambda v: v, in_axes=None)(x)
    with pytest.raises(ValueError):
        fx.vmap(lambda a, b: a + b)(x, data(3, 3))
    with pytest.raises(ValueError):
        fx.vmap(lambda v: "not an array")(x)
    with pytest.raises(ValueError, match="in_axes"):
        fx.vmap(lambda a, b: a + b, in_axes=(0,))(x, x)
