"""Gradient transforms (grad, value_and_grad, vjp, jvp, stop_gradient) against
float64 central finite differences, analytic derivatives and MLX semantics."""

import re
from collections import namedtuple

import numpy as np
import pytest

import ferrox as fx
from conftest import FLOATS, assert_close, rand, to_fx, to_np

# ==========================================================================
# Finite-difference checker
# ==========================================================================
#
# An input is described by an ``Arg``: the shape of its base buffer, the kind
# of values to draw and a view ``view(module, base)`` applied identically to
# the NumPy base (for the reference values) and to the ferrox base (so that
# the transforms see a non-contiguous, sliced, reversed or broadcast array).

Arg = namedtuple("Arg", "base_shape kind view")

FD_EPS = 1e-6
FD_RTOL = 1e-5
FD_ATOL = 1e-5


def _plain(m, x):
    return x


def _transposed(m, x):
    return x.T


def _sliced(m, x):
    return x[tuple(slice(1, None, 2) for _ in range(x.ndim))]


def _reversed(m, x):
    return x[tuple(slice(None, None, -2) for _ in range(x.ndim))]


def A(*shape, kind="pos"):
    """Contiguous input of the given shape."""
    return Arg(tuple(shape), kind, _plain)


def AT(*shape, kind="pos"):
    """Transposed view (``x.T`` of a contiguous base) with logical ``shape``."""
    return Arg(tuple(reversed(shape)), kind, _transposed)


def AS(*shape, kind="pos"):
    """Strided view ``x[1::2, 1::2, ...]`` with logical ``shape``."""
    return Arg(tuple(2 * d + 1 for d in shape), kind, _sliced)


def AN(*shape, kind="pos"):
    """Negative-step view ``x[::-2, ::-2, ...]`` with logical ``shape``."""
    return Arg(tuple(2 * d for d in shape), kind, _reversed)


def AB(*shape, kind="pos"):
    """Broadcast view of a base whose first axis has length 1."""
    shape = tuple(shape)
    return Arg((1,) + shape[1:], kind, lambda m, x: m.broadcast_to(x, shape))


def gen(rng, shape, kind):
    """float64 test data of the given kind."""
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    if kind == "pos":  # smooth, strictly positive
        v = rng.uniform(0.5, 2.0, size=shape)
    elif kind == "any":  # both signs
        v = rng.uniform(-2.0, 2.0, size=shape)
    elif kind == "nz":  # both signs, away from 0 (abs)
        v = rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    elif kind == "near1":  # products of many of them stay moderate
        v = rng.uniform(0.8, 1.25, size=shape)
    elif kind == "distinct":  # well separated values, no ties (max/min)
        v = 0.5 + rng.permutation(n).reshape(shape) * (1.5 / max(n, 1))
    elif kind == "gridA":  # never within 0.25 of a gridB value (maximum/minimum)
        v = rng.choice([0.5, 1.0, 1.5, 2.0], size=shape)
    elif kind == "gridB":
        v = rng.choice([0.75, 1.25, 1.75], size=shape)
    else:
        raise ValueError(kind)
    return np.asarray(v, dtype=np.float64)


def make_inputs(rng, args):
    """[(numpy float64 logical value, ferrox float64 view)] for each Arg."""
    out = []
    for a in args:
        base = gen(rng, a.base_shape, a.kind)
        x_np = np.array(a.view(np, base), dtype=np.float64)  # contiguous copy
        x_fx = a.view(fx, fx.array(base, dtype=fx.float64))
        assert tuple(x_fx.shape) == x_np.shape
        out.append((x_np, x_fx))
    return out


def _f64(a):
    return fx.array(np.array(a, dtype=np.float64), dtype=fx.float64)  # keeps 0-d


def _close(got, expected, what, rtol=FD_RTOL, atol=FD_ATOL):
    assert isinstance(got, fx.array), f"{what}: expected an array, got {type(got)}"
    expected = np.asarray(expected, dtype=np.float64)
    assert tuple(got.shape) == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    assert got.dtype == fx.float64, f"{what}: dtype {got.dtype} != float64"
    g = np.array(got, dtype=np.float64)
    ok = np.abs(g - expected) <= atol + rtol * np.abs(expected)
    if not np.all(ok):
        bad = [tuple(int(i) for i in b) for b in np.argwhere(~ok)[:5]]
        raise AssertionError(
            f"{what} differs at {bad}: got {[g[b] for b in bad]} expected {[expected[b] for b in bad]}"
        )


def fd_check(fun, inputs, rng):
    """Checks grad, value_and_grad, vjp and jvp of ``fun`` against central
    differences. ``inputs`` are (numpy float64 value, ferrox array) pairs."""
    xs_np = [x for x, _ in inputs]
    xs_fx = [x for _, x in inputs]
    n = len(inputs)

    def F(xs):  # forward pass on fresh contiguous float64 arrays
        out = fun(*[_f64(x) for x in xs])
        return np.array(out, dtype=np.float64)

    out = fun(*xs_fx)
    assert isinstance(out, fx.array)
    assert out.dtype == fx.float64, out.dtype
    y0 = F(xs_np)
    _close(out, y0, "forward value on the views", rtol=1e-12, atol=1e-12)

    w_np = rng.uniform(-1.0, 1.0, size=y0.shape)
    w = _f64(w_np)

    # central differences of the weighted sum, one input element at a time
    fd_grads = []
    for i, x in enumerate(xs_np):
        g = np.zeros(x.shape, dtype=np.float64)
        for idx in np.ndindex(*x.shape):
            hi = [y.copy() for y in xs_np]
            lo = [y.copy() for y in xs_np]
            hi[i][idx] += FD_EPS
            lo[i][idx] -= FD_EPS
            g[idx] = (np.sum(F(hi) * w_np) - np.sum(F(lo) * w_np)) / (2 * FD_EPS)
        fd_grads.append(g)

    def scalar(*xs):
        return (fun(*xs) * w).sum()

    # grad with respect to every input
    grads = fx.grad(scalar, argnums=tuple(range(n)))(*xs_fx)
    if n == 1:
        # As MLX: one differentiated argument gives its gradient, not a 1-tuple.
        assert isinstance(grads, fx.array)
        grads = (grads,)
    assert isinstance(grads, tuple) and len(grads) == n
    for i, (g, e) in enumerate(zip(grads, fd_grads)):
        _close(g, e, f"grad[{i}]")

    # value_and_grad, one argument at a time (int argnums -> a single array)
    for i in range(n):
        v, g = fx.value_and_grad(scalar, argnums=i)(*xs_fx)
        _close(v, np.sum(y0 * w_np), "value_and_grad value", rtol=1e-10, atol=1e-10)
        _close(g, fd_grads[i], f"value_and_grad grad[{i}]")

    # vjp with the same weights as cotangent
    outs, vjps = fx.vjp(fun, xs_fx, [w])
    assert isinstance(outs, list) and isinstance(vjps, list)
    assert len(outs) == 1 and len(vjps) == n
    _close(outs[0], y0, "vjp output", rtol=1e-12, atol=1e-12)
    for i, (g, e) in enumerate(zip(vjps, fd_grads)):
        _close(g, e, f"vjp[{i}]")

    # jvp with a random tangent against the directional difference
    ts_np = [rng.uniform(-1.0, 1.0, size=x.shape) for x in xs_np]
    hi = [x + FD_EPS * t for x, t in zip(xs_np, ts_np)]
    lo = [x - FD_EPS * t for x, t in zip(xs_np, ts_np)]
    fd_dir = (F(hi) - F(lo)) / (2 * FD_EPS)
    outs, jvps = fx.jvp(fun, xs_fx, [_f64(t) for t in ts_np])
    assert isinstance(outs, list) and isinstance(jvps, list)
    assert len(outs) == 1 and len(jvps) == 1
    _close(outs[0], y0, "jvp output", rtol=1e-12, atol=1e-12)
    _close(jvps[0], fd_dir, "jvp")


def P(name, fun, *args):
    return pytest.param(fun, list(args), id=name)


# ==========================================================================
# Every differentiable op under finite differences
# ==========================================================================

UNARY = [
    ("negative", fx.negative, "any"),
    ("neg_op", lambda x: -x, "any"),
    ("abs", fx.abs, "nz"),
    ("abs_builtin", lambda x: abs(x), "nz"),
    ("exp", fx.exp, "any"),
    ("log", fx.log, "pos"),
    ("sqrt", fx.sqrt, "pos"),
    ("sin", fx.sin, "any"),
    ("cos", fx.cos, "any"),
    ("tanh", fx.tanh, "any"),
    ("sigmoid", fx.sigmoid, "any"),
]

UNARY_CASES = []
for _name, _f, _kind in UNARY:
    UNARY_CASES += [
        P(f"{_name}-contig", _f, A(3, 4, kind=_kind)),
        P(f"{_name}-transposed", _f, AT(3, 4, kind=_kind)),
        P(f"{_name}-0d", _f, A(kind=_kind)),
    ]
UNARY_CASES += [
    P("exp-sliced", fx.exp, AS(2, 3, kind="any")),
    P("log-negstep", fx.log, AN(3, 2)),
    P("sqrt-broadcast", fx.sqrt, AB(3, 4)),
    P("sin-3d-sliced", fx.sin, AS(2, 2, 3, kind="any")),
    P("abs-negstep", fx.abs, AN(2, 3, kind="nz")),
]


@pytest.mark.parametrize("fun,args", UNARY_CASES)
def test_fd_unary(fun, args, rng):
    fd_check(fun, make_inputs(rng, args), rng)


BINARY = [
    ("add", fx.add, "any", "any"),
    ("subtract", fx.subtract, "any", "any"),
    ("multiply", fx.multiply, "any", "any"),
    ("divide", fx.divide, "any", "pos"),
    ("power", fx.power, "pos", "any"),
    ("maximum", fx.maximum, "gridA", "gridB"),
    ("minimum", fx.minimum, "gridA", "gridB"),
]
BROADCAST_SHAPES = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((3, 1), (1, 4)),
    ((2, 3, 4), (3, 1)),
    ((), (3, 4)),
    ((3, 4), ()),
    ((), ()),
]

BINARY_CASES = []
for _name, _f, _ka, _kb in BINARY:
    for _sa, _sb in BROADCAST_SHAPES:
        BINARY_CASES.append(P(f"{_name}-{_sa}-{_sb}", _f, A(*_sa, kind=_ka), A(*_sb, kind=_kb)))
    BINARY_CASES.append(
        P(f"{_name}-transposed-negstep", _f, AT(3, 4, kind=_ka), AN(3, 4, kind=_kb))
    )
    BINARY_CASES.append(P(f"{_name}-sliced-bcastview", _f, AS(3, 4, kind=_ka), AB(3, 4, kind=_kb)))
BINARY_CASES += [
    P("op_add", lambda a, b: a + b, A(3, 4, kind="any"), A(4, kind="any")),
    P("op_sub", lambda a, b: a - b, A(3, 1, kind="any"), A(4, kind="any")),
    P("op_mul", lambda a, b: a * b, A(2, 3, 4, kind="any"), A(3, 4, kind="any")),
    P("op_div", lambda a, b: a / b, A(4, kind="any"), A(3, 4)),
    P("op_pow", lambda a, b: a**b, A(3, 4), A(3, 1, kind="any")),
    P("op_pow_bcast_base", lambda a, b: a**b, A(4), A(3, 4, kind="any")),
]


@pytest.mark.parametrize("fun,args", BINARY_CASES)
def test_fd_binary(fun, args, rng):
    fd_check(fun, make_inputs(rng, args), rng)


SCALAR_EXPR_CASES = [
    P("x*2.0+1", lambda x: x * 2.0 + 1, A(3, 4, kind="any")),
    P("2.0/x", lambda x: 2.0 / x, A(3, 4)),
    P("3-x", lambda x: 3 - x, A(3, 4, kind="any")),
    P("x**2", lambda x: x**2, A(3, 4, kind="any")),
    P("x**3", lambda x: x**3, A(kind="any")),
    P("x**0.5", lambda x: x**0.5, A(3, 4)),
    P("x**-1.5", lambda x: x**-1.5, A(3, 4)),
    P("2.0**x", lambda x: 2.0**x, A(3, 4, kind="any")),
    P("(x-1.5)/0.5", lambda x: (x - 1.5) / 0.5, A(3, 4, kind="any")),
    P("-x*3+x/4", lambda x: -x * 3 + x / 4, AT(3, 4, kind="any")),
    P("1+x*x-x", lambda x: 1 + x * x - x, AS(3, 4, kind="any")),
    P("fx.add(x,2)", lambda x: fx.multiply(fx.add(x, 2), 0.5), A(3, kind="any")),
    P("fx.maximum(x,1.0)", lambda x: fx.maximum(x, 1.125), A(3, 4, kind="gridA")),
    P("fx.minimum(1.0,x)", lambda x: fx.minimum(1.125, x), A(3, 4, kind="gridA")),
    P("fx.power(x,3)", lambda x: fx.power(x, 3), A(3, 4, kind="any")),
]


@pytest.mark.parametrize("fun,args", SCALAR_EXPR_CASES)
def test_fd_python_scalars(fun, args, rng):
    fd_check(fun, make_inputs(rng, args), rng)


REDUCTIONS = [
    ("sum", fx.sum, "any"),
    ("mean", fx.mean, "any"),
    ("max", fx.max, "distinct"),
    ("min", fx.min, "distinct"),
    ("prod", fx.prod, "near1"),
]
AXES = [None, 0, -1, (0, 2), (0, 1, 2), [1, 2]]


def _reduce_fun(op, axis, keepdims):
    return lambda x: op(x, axis=axis, keepdims=keepdims)


REDUCTION_CASES = []
for _name, _op, _kind in REDUCTIONS:
    for _axis in AXES:
        for _kd in (False, True):
            REDUCTION_CASES.append(
                P(f"{_name}-axis={_axis}-keepdims={_kd}", _reduce_fun(_op, _axis, _kd), A(2, 3, 4, kind=_kind))
            )
    REDUCTION_CASES.append(P(f"{_name}-default", _op, A(3, 4, kind=_kind)))
    REDUCTION_CASES.append(P(f"{_name}-0d", _op, A(kind=_kind)))
    REDUCTION_CASES.append(P(f"{_name}-transposed-axis1", _reduce_fun(_op, 1, False), AT(2, 3, 4, kind=_kind)))
    REDUCTION_CASES.append(P(f"{_name}-negstep-axis0-keep", _reduce_fun(_op, 0, True), AN(3, 4, kind=_kind)))
REDUCTION_CASES += [
    P("sum-bcastview-axis0", lambda x: fx.sum(x, axis=0), AB(3, 4, kind="any")),
    P("mean-bcastview-all", fx.mean, AB(3, 4, kind="any")),
    P("method-sum", lambda x: x.sum(axis=1), A(3, 4, kind="any")),
    P("method-mean-keep", lambda x: x.mean(axis=(0, 1), keepdims=True), A(2, 3, 4, kind="any")),
    P("method-max", lambda x: x.max(axis=-1), A(3, 4, kind="distinct")),
    P("method-min-keep", lambda x: x.min(axis=0, keepdims=True), A(3, 4, kind="distinct")),
    P("method-prod", lambda x: x.prod(axis=1), A(3, 4, kind="near1")),
    P("max-of-sum", lambda x: fx.max(fx.sum(x, axis=0) * 1.0), A(3, 4, kind="any")),
    P("sum-of-max", lambda x: fx.sum(fx.max(x, axis=1, keepdims=True) * x), A(3, 4, kind="distinct")),
]


@pytest.mark.parametrize("fun,args", REDUCTION_CASES)
def test_fd_reductions(fun, args, rng):
    fd_check(fun, make_inputs(rng, args), rng)


# the FD checker uses weights of the output's shape, so shape ops are checked
# through a non-linearity as well as directly
SHAPE_CASES = [
    P("reshape-2x6", lambda x: fx.reshape(x, (2, 6)), A(3, 4, kind="any")),
    P("reshape-flat", lambda x: fx.reshape(x, (-1,)) ** 2, A(3, 4, kind="any")),
    P("reshape-3d", lambda x: fx.reshape(x, (4, -1)), A(2, 3, 4, kind="any")),
    P("reshape-transposed", lambda x: fx.sin(fx.reshape(x, (6, 2))), AT(3, 4, kind="any")),
    P("reshape-0d", lambda x: fx.reshape(x, (1, 1)) * 3.0, A(kind="any")),
    P("reshape-method", lambda x: x.reshape(4, 3) ** 2, AS(3, 4, kind="any")),
    P("transpose-default", lambda x: fx.transpose(x), A(2, 3, 4, kind="any")),
    P("transpose-axes", lambda x: fx.transpose(x, (2, 0, 1)) ** 2, A(2, 3, 4, kind="any")),
    P("transpose-method", lambda x: x.transpose(1, 0, 2) ** 3, A(2, 3, 4, kind="any")),
    P("T", lambda x: x.T * fx.arange(3).astype(fx.float64), A(3, 4, kind="any")),
    P("broadcast_to-3d", lambda x: fx.broadcast_to(x, (2, 3, 4)) ** 2, A(3, 1, kind="any")),
    P("broadcast_to-row", lambda x: fx.broadcast_to(x, (3, 4)) ** 2, A(4, kind="any")),
    P("broadcast_to-0d", lambda x: fx.broadcast_to(x, (2, 3)) ** 2, A(kind="any")),
    P("broadcast_to-negstep", lambda x: fx.broadcast_to(x, (2, 3, 4)) ** 2, AN(3, 4, kind="any")),
    P("expand_dims-0", lambda x: fx.expand_dims(x, 0) ** 2, A(3, 4, kind="any")),
    P("expand_dims--1", lambda x: fx.expand_dims(x, -1) ** 2, A(3, 4, kind="any")),
    P("expand_dims-(0,2)", lambda x: fx.expand_dims(x, (0, 2)) ** 2, AT(3, 4, kind="any")),
    P("squeeze-all", lambda x: fx.squeeze(x) ** 2, A(1, 3, 1, 4, kind="any")),
    P("squeeze-axis", lambda x: fx.squeeze(x, 2) ** 2, A(1, 3, 1, 4, kind="any")),
    P("squeeze-axes", lambda x: fx.squeeze(x, (0, 2)) ** 2, A(1, 3, 1, 4, kind="any")),
    P("squeeze-method", lambda x: x.squeeze() ** 2, A(3, 1, kind="any")),
    P("flatten-default", lambda x: fx.flatten(x) ** 2, A(2, 3, 4, kind="any")),
    P("flatten-1-2", lambda x: fx.flatten(x, 1, 2) ** 2, A(2, 3, 4, kind="any")),
    P("flatten-method", lambda x: x.flatten(0, 1) ** 2, AT(2, 3, 4, kind="any")),
    P("swapaxes", lambda x: fx.swapaxes(x, 0, 2) ** 2, A(2, 3, 4, kind="any")),
    P("swapaxes-method", lambda x: x.swapaxes(-1, 0) ** 2, AS(2, 3, 4, kind="any")),
]


@pytest.mark.parametrize("fun,args", SHAPE_CASES)
def test_fd_shape_ops(fun, args, rng):
    fd_check(fun, make_inputs(rng, args), rng)


INDEX_CASES = [
    P("x[1]", lambda x: x[1] ** 2, A(4, 5, kind="any")),
    P("x[1:3]", lambda x: x[1:3] ** 2, A(4, 5, kind="any")),
    P("x[::-1]", lambda x: x[::-1] ** 2, A(4, 5, kind="any")),
    P("x[::-2,1:]", lambda x: x[::-2, 1:] ** 2, A(4, 5, kind="any")),
    P("x[None,...,1]", lambda x: x[None, ..., 1] ** 2, A(2, 3, 4, kind="any")),
    P("x[...,-1]", lambda x: x[..., -1] ** 2, A(2, 3, 4, kind="any")),
    P("x[:,None,3:0:-1]", lambda x: x[:, None, 3:0:-1] ** 2, A(4, 5, kind="any")),
    P("x[-1,::2]", lambda x: x[-1, ::2] ** 2, A(4, 5, kind="any")),
    P("x[1,2]-0d", lambda x: x[1, 2] ** 2, A(4, 5, kind="any")),
    P("x[1,2,3]-0d", lambda x: fx.sin(x[1, 2, 3]), A(2, 3, 4, kind="any")),
    P("x[...,None]", lambda x: x[..., None] ** 2, A(3, 4, kind="any")),
    P("chained", lambda x: x[1:3][::-1, 2] ** 2, A(4, 5, kind="any")),
    P("x[1:-1:2,::-3]", lambda x: x[1:-1:2, ::-3] ** 2, A(5, 7, kind="any")),
    P("index-of-transposed", lambda x: x[1:, ::-1] ** 2, AT(4, 5, kind="any")),
    P("index-of-negstep", lambda x: x[0] * x[-1], AN(3, 4, kind="any")),
    P("index-of-bcastview", lambda x: x[:, 1:3] ** 2, AB(3, 4, kind="any")),
    P("same-element-twice", lambda x: x[0] * x[0] + x[0], A(3, 4, kind="any")),
    P("overlapping-slices", lambda x: x[1:] * x[:-1], A(5, 3, kind="any")),
    P("empty-slice-plus", lambda x: x[2:2].sum() + x[1] ** 2, A(4, 3, kind="any")),
]


@pytest.mark.parametrize("fun,args", INDEX_CASES)
def test_fd_indexing(fun, args, rng):
    fd_check(fun, make_inputs(rng, args), rng)


MATMUL_CASES = [
    P("2d", fx.matmul, A(3, 4, kind="any"), A(4, 5, kind="any")),
    P("batched", fx.matmul, A(2, 3, 4, kind="any"), A(2, 4, 5, kind="any")),
    P("bcast-batch", fx.matmul, A(2, 1, 3, 4, kind="any"), A(3, 4, 2, kind="any")),
    P("bcast-batch-2d-rhs", fx.matmul, A(2, 3, 4, kind="any"), A(4, 2, kind="any")),
    P("bcast-batch-2d-lhs", fx.matmul, A(3, 4, kind="any"), A(2, 4, 2, kind="any")),
    P("vec-mat", fx.matmul, A(4, kind="any"), A(4, 5, kind="any")),
    P("mat-vec", fx.matmul, A(3, 4, kind="any"), A(4, kind="any")),
    P("vec-vec-0d", fx.matmul, A(4, kind="any"), A(4, kind="any")),
    P("batched-mat-vec", fx.matmul, A(2, 3, 4, kind="any"), A(4, kind="any")),
    P("vec-batched-mat", fx.matmul, A(4, kind="any"), A(2, 4, 3, kind="any")),
    P("op", lambda a, b: a @ b, A(3, 4, kind="any"), A(4, 2, kind="any")),
    P("transposed-operands", fx.matmul, AT(3, 4, kind="any"), AT(4, 5, kind="any")),
    P("sliced-negstep", fx.matmul, AS(3, 4, kind="any"), AN(4, 2, kind="any")),
    P("a@b.T", lambda a, b: a @ b.T, A(3, 4, kind="any"), A(5, 4, kind="any")),
    P("a@a", lambda a: a @ a, A(3, 3, kind="any")),
    P("x.T@x", lambda a: a.T @ a, A(3, 2, kind="any")),
]


@pytest.mark.parametrize("fun,args", MATMUL_CASES)
def test_fd_matmul(fun, args, rng):
    fd_check(fun, make_inputs(rng, args), rng)


_COND = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]])

OTHER_CASES = [
    P("where-const-cond", lambda a, b: fx.where(fx.array(_COND), a, b), A(3, 4, kind="any"), A(4, kind="any")),
    P("where-computed-cond", lambda a, b: fx.where(a > 1.0, a * a, b), A(3, 4), A(3, 1, kind="any")),
    P("where-scalar-branch", lambda a: fx.where(a > 1.0, a, 0.0) * a, A(3, 4)),
    P("where-both-from-a", lambda a, b: fx.where(a > b, a, b) ** 2, A(3, 4, kind="gridA"), A(4, kind="gridB")),
    P("where-0d", lambda a, b: fx.where(fx.array(True), a, b), A(kind="any"), A(3, kind="any")),
    P("concat-axis0", lambda a, b: fx.concatenate([a, b], axis=0) ** 2, A(2, 4, kind="any"), A(3, 4, kind="any")),
    P("concat-axis1", lambda a, b: fx.concatenate([a, b], axis=1) ** 2, A(3, 2, kind="any"), AT(3, 5, kind="any")),
    P(
        "concat-3-axis-1",
        lambda a, b, c: fx.concatenate([a, b, c], axis=-1) ** 2,
        A(2, 1, kind="any"),
        A(2, 3, kind="any"),
        AN(2, 2, kind="any"),
    ),
    P("concat-same-twice", lambda a: fx.concatenate([a, a * 2.0], axis=0) ** 2, A(2, 3, kind="any")),
    P("stack-axis0", lambda a, b: fx.stack([a, b]) ** 2, A(3, 4, kind="any"), A(3, 4, kind="any")),
    P("stack-axis1", lambda a, b: fx.stack([a, b], axis=1) ** 2, A(3, 4, kind="any"), AT(3, 4, kind="any")),
    P("stack-axis-1", lambda a, b: fx.stack([a, b], axis=-1) ** 2, A(3, kind="any"), A(3, kind="any")),
    P("stack-0d", lambda a, b: fx.stack([a, b, a]) ** 2, A(kind="any"), A(kind="any")),
    P("astype-float64", lambda a: a.astype(fx.float64) ** 2, A(3, 4, kind="any")),
    P("fx.astype-float64", lambda a: fx.astype(a, fx.float64) * 3.0, AT(3, 4, kind="any")),
]


@pytest.mark.parametrize("fun,args", OTHER_CASES)
def test_fd_where_concat_stack_astype(fun, args, rng):
    fd_check(fun, make_inputs(rng, args), rng)


def _softmax(x):
    e = fx.exp(x - fx.max(x, axis=-1, keepdims=True))
    return e / fx.sum(e, axis=-1, keepdims=True)


def _logsumexp(x):
    m = fx.max(x, axis=-1, keepdims=True)
    return fx.log(fx.sum(fx.exp(x - m), axis=-1)) + fx.squeeze(m, -1)


def _layernorm(x):
    mu = fx.mean(x, axis=-1, keepdims=True)
    var = fx.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / fx.sqrt(var + 1e-5)


COMPOSITE_CASES = [
    P("softmax", _softmax, A(3, 4, kind="distinct")),
    P("logsumexp", _logsumexp, A(3, 4, kind="distinct")),
    P("layernorm", _layernorm, A(3, 5, kind="distinct")),
    P("mlp", lambda x, w, b: fx.tanh(x @ w + b), A(2, 3, kind="any"), A(3, 4, kind="any"), A(4, kind="any")),
    P(
        "two-layer",
        lambda x, w1, w2: fx.sigmoid(fx.tanh(x @ w1) @ w2),
        A(2, 3, kind="any"),
        AT(3, 4, kind="any"),
        A(4, 2, kind="any"),
    ),
    P("x*sin(x)+x", lambda x: x * fx.sin(x) + x, A(3, 4, kind="any")),
    P("softplus", lambda x: fx.log(1 + fx.exp(x)) * fx.sigmoid(x), A(3, 4, kind="any")),
    P("0d*array", lambda s, x: s * x + fx.cos(s), A(kind="any"), A(3, 4, kind="any")),
    P("0d-chain", lambda s: fx.exp(fx.sin(s) * s) / (1 + s * s), A(kind="any")),
    P("mse", lambda p, t: fx.mean((p - t) ** 2), A(3, 4, kind="any"), A(3, 4, kind="any")),
    P("unused-input", lambda a, b: a * 2.0, A(3, kind="any"), A(2, 2, kind="any")),
    P("rational", lambda a, b: (a * b - a / b) / (a + b), A(3, 4), AB(3, 4)),
    P("norm", lambda x: fx.sqrt(fx.sum(x * x, axis=1)), A(3, 4, kind="any")),
    P("min-max-mix", lambda x: fx.max(x, axis=0) - fx.min(x, axis=1).sum(), A(3, 4, kind="distinct")),
    P("prod-log", lambda x: fx.log(fx.prod(x, axis=(0, 1))), A(2, 3, 4, kind="near1")),
]


@pytest.mark.parametrize("fun,args", COMPOSITE_CASES)
def test_fd_composites(fun, args, rng):
    fd_check(fun, make_inputs(rng, args), rng)


def test_fd_multiple_outputs(rng):
    """vjp with one cotangent per output; jvp gives one tangent per output."""
    (a_np, a), (b_np, b) = make_inputs(rng, [A(3, 4), A(4, kind="any")])

    def fun(x, y):
        return [x * y, fx.sin(x).sum(axis=0), fx.exp(y)]

    c_np = [rng.uniform(-1, 1, size=s) for s in [(3, 4), (4,), (4,)]]
    outs, vjps = fx.vjp(fun, [a, b], [_f64(c) for c in c_np])
    assert len(outs) == 3 and len(vjps) == 2
    _close(outs[0], a_np * b_np, "out0", 1e-12, 1e-12)
    _close(outs[1], np.sin(a_np).sum(axis=0), "out1", 1e-12, 1e-12)
    _close(outs[2], np.exp(b_np), "out2", 1e-12, 1e-12)
    _close(vjps[0], c_np[0] * b_np + c_np[1] * np.cos(a_np), "vjp a", 1e-12, 1e-12)
    _close(vjps[1], (c_np[0] * a_np).sum(axis=0) + c_np[2] * np.exp(b_np), "vjp b", 1e-12, 1e-12)

    ta, tb = rng.uniform(-1, 1, size=(3, 4)), rng.uniform(-1, 1, size=(4,))
    outs, jvps = fx.jvp(fun, [a, b], [_f64(ta), _f64(tb)])
    assert len(outs) == 3 and len(jvps) == 3
    _close(jvps[0], ta * b_np + a_np * tb, "jvp0", 1e-12, 1e-12)
    _close(jvps[1], (np.cos(a_np) * ta).sum(axis=0), "jvp1", 1e-12, 1e-12)
    _close(jvps[2], np.exp(b_np) * tb, "jvp2", 1e-12, 1e-12)


def test_vjp_jvp_output_not_depending_on_input(rng):
    (x_np, x), (y_np, y) = make_inputs(rng, [A(3), A(2, 2)])
    outs, vjps = fx.vjp(lambda a, b: [a * 2.0, fx.ones((2,), dtype=fx.float64)], [x, y],
                        [_f64(np.ones(3)), _f64(np.ones(2))])
    _close(vjps[0], np.full(3, 2.0), "vjp x", 0, 0)
    _close(vjps[1], np.zeros((2, 2)), "vjp y (unused)", 0, 0)
    outs, jvps = fx.jvp(lambda a, b: [fx.ones((2,), dtype=fx.float64), b * 3.0], [x, y],
                        [_f64(np.ones(3)), _f64(np.ones((2, 2)))])
    _close(jvps[0], np.zeros(2), "jvp of a constant output", 0, 0)
    _close(jvps[1], np.full((2, 2), 3.0), "jvp b", 0, 0)


def test_identity_constant_and_repeated_outputs(rng):
    x_np = gen(rng, (3,), "any")
    x = _f64(x_np)
    x0 = _f64(1.5)
    # the output is the argument itself
    _close(fx.grad(lambda a: a)(x0), np.float64(1.0), "grad identity", 0, 0)
    v, g = fx.value_and_grad(lambda a: a)(x0)
    _close(v, np.float64(1.5), "value identity", 0, 0)
    _close(g, np.float64(1.0), "value_and_grad identity", 0, 0)
    c_np = gen(rng, (3,), "any")
    _, (vj,) = fx.vjp(lambda a: a, [x], [_f64(c_np)])
    _close(vj, c_np, "vjp identity", 0, 0)
    _, (jv,) = fx.jvp(lambda a: a, [x], [_f64(c_np)])
    _close(jv, c_np, "jvp identity", 0, 0)
    # the output does not depend on the argument
    _close(fx.grad(lambda a: fx.array(2.0, dtype=fx.float64))(x), np.zeros(3), "constant", 0, 0)
    # the same array returned twice: the cotangents add up
    d_np = gen(rng, (3,), "any")

    def twice(a):
        y = fx.sin(a)
        return [y, y]

    outs, (vj,) = fx.vjp(twice, [x], [_f64(c_np), _f64(d_np)])
    assert len(outs) == 2
    _close(vj, np.cos(x_np) * (c_np + d_np), "vjp of a repeated output", 1e-12, 1e-12)
    outs, jvps = fx.jvp(twice, [x], [_f64(c_np)])
    assert len(jvps) == 2
    for j in jvps:
        _close(j, np.cos(x_np) * c_np, "jvp of a repeated output", 1e-12, 1e-12)


def test_vjp_cotangent_cast_to_output_dtype(rng):
    # MLX (transforms.cpp, vjp) casts each cotangent to its output's dtype, so a
    # float64 cotangent on a float32 function gives float32 vjps.
    x_np = rand(rng, (3,), "float32", "small")
    x = to_fx(x_np, "float32")
    c = _f64(np.ones(3))
    outs, (vj,) = fx.vjp(lambda a: a * a, [x], [c])
    assert outs[0].dtype == fx.float32
    assert_close(vj, 2 * x_np.astype(np.float64), "float32")


# ==========================================================================
# Higher order
# ==========================================================================

SECOND_DERIVATIVES = [
    ("x**3", lambda x: x**3, lambda x: 6 * x, "any"),
    ("x**4", lambda x: x**4, lambda x: 12 * x**2, "any"),
    ("sin", fx.sin, lambda x: -np.sin(x), "any"),
    ("cos", fx.cos, lambda x: -np.cos(x), "any"),
    ("exp", fx.exp, np.exp, "any"),
    ("log", fx.log, lambda x: -1 / x**2, "pos"),
    ("sqrt", fx.sqrt, lambda x: -0.25 * x**-1.5, "pos"),
    ("tanh", fx.tanh, lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2), "any"),
    (
        "sigmoid",
        fx.sigmoid,
        lambda x: (lambda s: s * (1 - s) * (1 - 2 * s))(1 / (1 + np.exp(-x))),
        "any",
    ),
    ("1/x", lambda x: 1.0 / x, lambda x: 2 / x**3, "pos"),
    ("2**x", lambda x: 2.0**x, lambda x: 2.0**x * np.log(2.0) ** 2, "any"),
    ("x*x*x-abs", lambda x: x * x * x - fx.abs(x), lambda x: 6 * x, "nz"),
]


@pytest.mark.parametrize(
    "f,d2,kind", [pytest.param(f, d2, k, id=n) for n, f, d2, k in SECOND_DERIVATIVES]
)
def test_grad_of_grad_elementwise(f, d2, kind, rng):
    x_np = gen(rng, (3, 4), kind)
    x = _f64(x_np)
    # elementwise f: the gradient of sum(f'(x)) is f''(x)
    df = fx.grad(lambda y: f(y).sum())
    d2f = fx.grad(lambda y: df(y).sum())
    _close(d2f(x), d2(x_np), "second derivative", 1e-10, 1e-10)
    # scalar form: grad(grad(f)) on a 0-d input
    x0 = float(x_np[0, 0])
    _close(fx.grad(fx.grad(f))(_f64(x0)), d2(np.float64(x0)), "0-d grad(grad(f))", 1e-10, 1e-10)


def test_third_and_fourth_order():
    x0 = 1.3
    x = fx.array(x0, dtype=fx.float64)
    f = lambda y: y**4  # noqa: E731
    g3 = fx.grad(fx.grad(fx.grad(f)))
    g4 = fx.grad(fx.grad(fx.grad(fx.grad(f))))
    _close(g3(x), np.float64(24 * x0), "d3/dx3 x^4", 1e-12, 1e-12)
    _close(g4(x), np.float64(24.0), "d4/dx4 x^4", 1e-12, 1e-12)
    h = fx.grad(fx.grad(fx.grad(fx.sin)))
    _close(h(x), np.float64(-np.cos(x0)), "d3/dx3 sin", 1e-12, 1e-12)


def test_grad_of_grad_reductions(rng):
    x_np = gen(rng, (2, 3), "pos")
    x = _f64(x_np)
    n, s = x_np.size, x_np.sum()
    # f = sum(x)^3: grad = 3 s^2, grad of sum(grad) = 6 n s
    df = fx.grad(lambda y: y.sum() ** 3)
    _close(df(x), np.full((2, 3), 3 * s**2), "grad sum^3", 1e-12, 1e-12)
    _close(fx.grad(lambda y: df(y).sum())(x), np.full((2, 3), 6 * n * s), "hess sum^3", 1e-12, 1e-12)

    # f = prod(x): grad_i = p / x_i; d/dx_j sum_i p/x_i = p/x_j * sum(1/x) - p/x_j^2
    p = np.prod(x_np)
    dp = fx.grad(fx.prod)
    _close(dp(x), p / x_np, "grad prod", 1e-12, 1e-12)
    exp2 = p / x_np * np.sum(1 / x_np) - p / x_np**2
    _close(fx.grad(lambda y: dp(y).sum())(x), exp2, "hess prod", 1e-10, 1e-10)

    # f = max(x)^2: grad = 2 m e_argmax; grad of sum(grad) = 2 e_argmax
    xd_np = gen(rng, (2, 3), "distinct")
    xd = _f64(xd_np)
    e = (xd_np == xd_np.max()).astype(np.float64)
    dm = fx.grad(lambda y: fx.max(y) ** 2)
    _close(dm(xd), 2 * xd_np.max() * e, "grad max^2", 1e-12, 1e-12)
    _close(fx.grad(lambda y: dm(y).sum())(xd), 2 * e, "hess max^2", 1e-12, 1e-12)

    # mean over an axis with keepdims: f = sum(mean(x, 1, keepdims)^2 * x)
    def f(y):
        return (fx.mean(y, axis=1, keepdims=True) ** 2 * y).sum()

    m = x_np.mean(axis=1, keepdims=True)
    c = x_np.shape[1]
    g_exp = m**2 + 2 * m / c * x_np.sum(axis=1, keepdims=True)  # = m^2 + 2 m^2 = 3 m^2
    df = fx.grad(f)
    _close(df(x), np.broadcast_to(g_exp, x_np.shape), "grad mean", 1e-12, 1e-12)
    # sum(grad) = c * sum_rows 3 m^2; d/dx = c * 6 m / c = 6 m
    _close(fx.grad(lambda y: df(y).sum())(x), np.broadcast_to(6 * m, x_np.shape), "hess mean", 1e-12, 1e-12)


def test_hessian_of_matmul(rng):
    a_np = gen(rng, (3, 4), "any")
    x_np = gen(rng, (4,), "any")
    a, x = _f64(a_np), _f64(x_np)

    def f(y):
        return ((a @ y) ** 2).sum()

    H = 2 * a_np.T @ a_np
    df = fx.grad(f)
    _close(df(x), H @ x_np, "grad", 1e-12, 1e-12)
    for i in range(4):
        row = fx.grad(lambda y: df(y)[i])(x)
        _close(row, H[i], f"hessian row {i} (grad of grad)", 1e-12, 1e-12)
        e = np.zeros(4)
        e[i] = 1.0
        # forward over reverse
        _, (col,) = fx.jvp(df, [x], [_f64(e)])
        _close(col, H[:, i], f"hessian column {i} (jvp of grad)", 1e-12, 1e-12)
        # reverse over reverse through vjp
        _, (row2,) = fx.vjp(df, [x], [_f64(e)])
        _close(row2, H[i], f"hessian row {i} (vjp of grad)", 1e-12, 1e-12)

    # with respect to the matrix: grad_A f = 2 (A x) x^T; grad_A sum(grad_A f * V) = 2 (V x) x^T
    v_np = gen(rng, (3, 4), "any")
    v = _f64(v_np)

    def g(m):
        return ((m @ x) ** 2).sum()

    dg = fx.grad(g)
    _close(dg(a), 2 * np.outer(a_np @ x_np, x_np), "grad wrt A", 1e-12, 1e-12)
    _close(fx.grad(lambda m: (dg(m) * v).sum())(a), 2 * np.outer(v_np @ x_np, x_np), "hess wrt A", 1e-12, 1e-12)

    # batched matmul, grad of grad with both operands: f = sum((A@B)^2)
    ab_np = gen(rng, (2, 3, 4), "any")
    bb_np = gen(rng, (2, 4, 2), "any")
    ab, bb = _f64(ab_np), _f64(bb_np)

    def fb(p, q):
        return ((p @ q) ** 2).sum()

    # d/dq sum(grad_p f) where grad_p f = 2 (p q) q^T: sum over entries = 2 sum_b 1^T (p q) q^T 1
    gp = fx.grad(fb, argnums=0)
    got = fx.grad(lambda p, q: gp(p, q).sum(), argnums=1)(ab, bb)
    # check against FD in q of S(q) = sum(2 (p q) q^T)
    def S(q):
        return np.sum(2 * np.matmul(np.matmul(ab_np, q), np.swapaxes(q, -1, -2)))

    fd = np.zeros_like(bb_np)
    for idx in np.ndindex(*bb_np.shape):
        hi, lo = bb_np.copy(), bb_np.copy()
        hi[idx] += 1e-6
        lo[idx] -= 1e-6
        fd[idx] = (S(hi) - S(lo)) / 2e-6
    _close(got, fd, "mixed second derivative (batched matmul)")


def test_grad_of_grad_shape_ops(rng):
    x_np = gen(rng, (3, 4), "any")
    w_np = gen(rng, (12,), "any")
    v_np = gen(rng, (3, 4), "any")
    x, w, v = _f64(x_np), _f64(w_np), _f64(v_np)

    def f(y):
        return ((y.T.reshape(-1)[::-1]) ** 3 * w).sum()

    W = w_np[::-1].reshape(4, 3).T  # the weight each x element meets
    df = fx.grad(f)
    _close(df(x), 3 * x_np**2 * W, "grad", 1e-12, 1e-12)
    _close(fx.grad(lambda y: (df(y) * v).sum())(x), 6 * x_np * W * v_np, "second", 1e-12, 1e-12)

    # broadcast / expand / squeeze / concatenate / stack / index, second order
    def g(y):
        b = fx.broadcast_to(fx.expand_dims(y, 0), (2, 3, 4))  # each element used twice
        c = fx.concatenate([b[0], fx.squeeze(b[1:2], 0)], axis=1)  # (3, 8)
        s = fx.stack([c, c[:, ::-1]], axis=-1)  # (3, 8, 2): each x element 4 times in all
        return (s**2).sum()

    # g = 4 * sum(x^2): grad 8 x, second 8
    dg = fx.grad(g)
    _close(dg(x), 8 * x_np, "grad g", 1e-12, 1e-12)
    _close(fx.grad(lambda y: dg(y).sum())(x), np.full((3, 4), 8.0), "second g", 1e-12, 1e-12)


def test_value_and_grad_of_grad(rng):
    x_np = gen(rng, (4,), "any")
    x = _f64(x_np)
    df = fx.grad(lambda y: (fx.sin(y) * y).sum())  # sin + x cos
    val, g2 = fx.value_and_grad(lambda y: df(y).sum())(x)
    _close(val, np.sum(np.sin(x_np) + x_np * np.cos(x_np)), "value", 1e-12, 1e-12)
    _close(g2, 2 * np.cos(x_np) - x_np * np.sin(x_np), "second", 1e-12, 1e-12)


def test_jvp_of_jvp_and_vjp_of_jvp(rng):
    x_np = gen(rng, (3,), "any")
    x = _f64(x_np)
    one = _f64(np.ones(3))

    def d1(y):  # forward-mode derivative of sin (elementwise): cos(y)
        return fx.jvp(fx.sin, [y], [one])[1][0]

    _, (d2,) = fx.jvp(d1, [x], [one])
    _close(d2, -np.sin(x_np), "jvp of jvp", 1e-12, 1e-12)
    _, (d2r,) = fx.vjp(d1, [x], [one])
    _close(d2r, -np.sin(x_np), "vjp of jvp", 1e-12, 1e-12)


# ==========================================================================
# Argument forms
# ==========================================================================


def _f3(a, b, c):
    return (a * 2.0 + b * b + a * b * c).sum()


@pytest.fixture
def abc(rng):
    a_np, b_np, c_np = gen(rng, (3,), "any"), gen(rng, (3,), "any"), gen(rng, (3,), "any")
    return (a_np, b_np, c_np), (_f64(a_np), _f64(b_np), _f64(c_np))


def test_argnums_default_int_tuple(abc):
    (a_np, b_np, c_np), (a, b, c) = abc
    da = 2.0 + b_np * c_np
    db = 2 * b_np + a_np * c_np
    dc = a_np * b_np
    g = fx.grad(_f3)(a, b, c)
    assert isinstance(g, fx.array)
    _close(g, da, "default argnums", 1e-12, 1e-12)
    _close(fx.grad(_f3, argnums=1)(a, b, c), db, "argnums=1", 1e-12, 1e-12)
    _close(fx.grad(_f3, 2)(a, b, c), dc, "argnums=2 positional", 1e-12, 1e-12)
    g = fx.grad(_f3, argnums=(0, 2))(a, b, c)
    assert isinstance(g, tuple) and len(g) == 2
    _close(g[0], da, "tuple[0]", 1e-12, 1e-12)
    _close(g[1], dc, "tuple[1]", 1e-12, 1e-12)
    # As MLX: a one-element argnums sequence gives the gradient itself.
    g = fx.grad(_f3, argnums=(1,))(a, b, c)
    assert isinstance(g, fx.array)
    _close(g, db, "1-tuple", 1e-12, 1e-12)
    v, g = fx.value_and_grad(_f3, argnums=(0, 1, 2))(a, b, c)
    _close(v, np.sum(a_np * 2 + b_np**2 + a_np * b_np * c_np), "value", 1e-12, 1e-12)
    for got, exp in zip(g, (da, db, dc)):
        _close(got, exp, "all argnums", 1e-12, 1e-12)


def test_argnums_negative_rejected_like_mlx(abc):
    # MLX (python/src/transforms.cpp, py_value_and_grad) raises
    # "Can't compute the gradient of negative argument index -1".
    _, (a, b, c) = abc
    with pytest.raises(ValueError):
        fx.grad(_f3, argnums=-1)(a, b, c)
    with pytest.raises(ValueError):
        fx.value_and_grad(_f3, argnums=(0, -2))(a, b, c)


def test_argnums_duplicate_rejected(abc):
    # MLX: "Duplicate argument index 0 is not allowed."
    _, (a, b, c) = abc
    with pytest.raises(ValueError):
        fx.grad(_f3, argnums=(0, 0))(a, b, c)
    with pytest.raises(ValueError):
        fx.value_and_grad(_f3, argnums=(1, 2, 1))(a, b, c)


def test_argnums_empty_rejected(abc):
    # MLX: "Gradient wrt no argument requested"
    _, (a, b, c) = abc
    with pytest.raises(ValueError):
        fx.grad(_f3, argnums=())(a, b, c)
    with pytest.raises(ValueError):
        fx.value_and_grad(_f3, argnums=[])(a, b, c)


def test_nested_arguments(rng):
    x_np = gen(rng, (2, 3), "any")
    W_np, b1_np, b2_np = gen(rng, (3, 4), "any"), gen(rng, (4,), "any"), gen(rng, (3,), "any")
    b3_np = np.float64(0.7)
    params = {"w": _f64(W_np), "b": [_f64(b1_np), (_f64(b2_np), _f64(b3_np))]}
    x = _f64(x_np)

    def loss(p, inp):
        return ((inp @ p["w"]) * p["b"][0]).sum() + (p["b"][1][0] ** 2).sum() + 3.0 * p["b"][1][1]

    gW = np.outer(x_np.sum(axis=0), b1_np)
    gb1 = (x_np @ W_np).sum(axis=0)
    gx = np.broadcast_to(b1_np @ W_np.T, (2, 3))

    g = fx.grad(loss)(params, x)
    assert type(g) is dict and list(g) == ["w", "b"]
    assert type(g["b"]) is list and len(g["b"]) == 2
    assert type(g["b"][1]) is tuple and len(g["b"][1]) == 2
    _close(g["w"], gW, "w", 1e-12, 1e-12)
    _close(g["b"][0], gb1, "b1", 1e-12, 1e-12)
    _close(g["b"][1][0], 2 * b2_np, "b2", 1e-12, 1e-12)
    _close(g["b"][1][1], np.float64(3.0), "b3", 1e-12, 1e-12)

    v, (gp, gxx) = fx.value_and_grad(loss, argnums=(0, 1))(params, x)
    exp_v = np.sum((x_np @ W_np) * b1_np) + np.sum(b2_np**2) + 3 * b3_np
    _close(v, exp_v, "value", 1e-12, 1e-12)
    assert type(gp) is dict
    _close(gp["w"], gW, "w (tuple argnums)", 1e-12, 1e-12)
    _close(gxx, gx, "x", 1e-12, 1e-12)

    # a top-level list / tuple argument
    g = fx.grad(lambda xs: (xs[0] * xs[1]).sum())([_f64(b2_np), _f64(2 * b2_np)])
    assert type(g) is list and len(g) == 2
    _close(g[0], 2 * b2_np, "list[0]", 1e-12, 1e-12)
    _close(g[1], b2_np, "list[1]", 1e-12, 1e-12)
    g = fx.grad(lambda xs: (xs[0] * xs[1]).sum())((_f64(b2_np), _f64(2 * b2_np)))
    assert type(g) is tuple and len(g) == 2
    # the arguments are left untouched
    _close(params["w"], W_np, "params unchanged", 0, 0)


def test_value_and_grad_aux_outputs(rng):
    x_np = gen(rng, (3, 4), "any")
    x = _f64(x_np)

    def f(y):
        loss = (y**2).sum()
        return loss, y * 3.0, {"m": fx.mean(y), "s": [fx.sin(y)]}

    v, g = fx.value_and_grad(f)(x)
    assert type(v) is tuple and len(v) == 3
    _close(v[0], np.sum(x_np**2), "loss", 1e-12, 1e-12)
    _close(v[1], 3 * x_np, "aux array", 1e-12, 1e-12)
    assert type(v[2]) is dict and type(v[2]["s"]) is list
    _close(v[2]["m"], np.mean(x_np), "aux dict", 1e-12, 1e-12)
    _close(v[2]["s"][0], np.sin(x_np), "aux nested", 1e-12, 1e-12)
    # the auxiliary outputs do not contribute to the gradient
    _close(g, 2 * x_np, "grad", 1e-12, 1e-12)
    # grad of such a function raises, as MLX's (value_and_grad is the form)
    with pytest.raises(ValueError, match="value_and_grad"):
        fx.grad(f)(x)


def test_value_and_grad_non_array_aux(rng):
    # MLX: "tuple[array, Any, ...]" -- the rest of the tuple may hold anything
    x_np = gen(rng, (3,), "any")
    x = _f64(x_np)
    v, g = fx.value_and_grad(lambda y: ((y * y).sum(), "note", 7, y))(x)
    assert type(v) is tuple and len(v) == 4
    assert v[1] == "note" and v[2] == 7
    _close(v[3], x_np, "aux array", 0, 0)
    _close(g, 2 * x_np, "grad", 1e-12, 1e-12)


def test_same_array_twice(rng):
    x_np = gen(rng, (3, 4), "any")
    x = _f64(x_np)

    def f(a, b):
        return (a * b**2).sum()

    ga, gb = fx.grad(f, argnums=(0, 1))(x, x)
    _close(ga, x_np**2, "d/da", 1e-12, 1e-12)
    _close(gb, 2 * x_np * x_np, "d/db", 1e-12, 1e-12)
    _close(fx.grad(f)(x, x), x_np**2, "d/da only", 1e-12, 1e-12)
    _close(fx.grad(f, 1)(x, x), 2 * x_np**2, "d/db only", 1e-12, 1e-12)
    # and inside one nested argument
    g = fx.grad(lambda t: (t[0] * t[1]).sum())([x, x])
    _close(g[0], x_np, "list[0]", 1e-12, 1e-12)
    _close(g[1], x_np, "list[1]", 1e-12, 1e-12)
    # vjp / jvp with the same primal twice
    _, vj = fx.vjp(lambda a, b: a * b, [x, x], [_f64(np.ones((3, 4)))])
    _close(vj[0], x_np, "vjp[0]", 1e-12, 1e-12)
    _close(vj[1], x_np, "vjp[1]", 1e-12, 1e-12)
    _, (jv,) = fx.jvp(lambda a, b: a * b, [x, x], [_f64(np.ones((3, 4))), _f64(np.zeros((3, 4)))])
    _close(jv, x_np, "jvp", 1e-12, 1e-12)


def test_keyword_and_non_array_arguments(rng):
    x_np, y_np = gen(rng, (3,), "any"), gen(rng, (3,), "any")
    x, y = _f64(x_np), _f64(y_np)

    def f(a, scale=1.0, *, offset=None, mode="sum"):
        out = a * a * scale
        if offset is not None:
            out = out + offset * a
        return out.sum() if mode == "sum" else out.mean()

    _close(fx.grad(f)(x), 2 * x_np, "defaults", 1e-12, 1e-12)
    _close(fx.grad(f)(x, scale=3.0), 6 * x_np, "python float kwarg", 1e-12, 1e-12)
    _close(fx.grad(f)(x, 3.0, offset=y), 6 * x_np + y_np, "array kwarg", 1e-12, 1e-12)
    _close(fx.grad(f)(x, offset=y, mode="mean"), (2 * x_np + y_np) / 3, "str kwarg", 1e-12, 1e-12)
    v, g = fx.value_and_grad(f)(x, fx.array(2.0, dtype=fx.float64), offset=y)
    _close(v, np.sum(2 * x_np**2 + y_np * x_np), "value", 1e-12, 1e-12)
    _close(g, 4 * x_np + y_np, "grad", 1e-12, 1e-12)
    # the gradient with respect to an array passed positionally next to non-arrays
    _close(fx.grad(f, argnums=1)(x, fx.array(2.0, dtype=fx.float64)), np.sum(x_np**2), "d/dscale", 1e-12, 1e-12)


def test_eval_and_item_inside_function(rng):
    x_np = gen(rng, (3, 4), "any")
    x = _f64(x_np)

    def f(y):
        s = fx.sin(y)
        fx.eval(s)
        t = s * y
        fx.eval(t, s)
        return t.sum()

    _close(fx.grad(f)(x), np.cos(x_np) * x_np + np.sin(x_np), "fx.eval inside", 1e-12, 1e-12)
    def f2(y):
        s = fx.sin(y)
        fx.eval(s)
        return s * y

    outs, (vj,) = fx.vjp(f2, [x], [_f64(np.ones((3, 4)))])
    _close(vj, np.cos(x_np) * x_np + np.sin(x_np), "fx.eval inside vjp", 1e-12, 1e-12)

    def g(y):
        k = (y * y).sum().item()  # a Python float: a constant for the gradient
        assert isinstance(k, float)
        return (y * k).sum() + (y**2).sum()

    k = float(np.sum(x_np**2))
    _close(fx.grad(g)(x), k + 2 * x_np, ".item() inside", 1e-10, 1e-10)

    # evaluated intermediates inside a second-order gradient
    def h(y):
        z = y**3
        fx.eval(z)
        return z.sum()

    _close(fx.grad(lambda y: fx.grad(h)(y).sum())(x), 6 * x_np, "eval inside grad of grad", 1e-12, 1e-12)

    # the function's intermediate was evaluated before the gradient was asked
    y = fx.sin(x)
    fx.eval(y)
    _close(fx.grad(lambda a: (a * y).sum())(x), np.sin(x_np), "pre-evaluated closure", 1e-12, 1e-12)


def test_integer_valued_paths_have_zero_gradient(rng):
    x_np = gen(rng, (3, 4), "distinct")
    x = _f64(x_np)
    am = int(np.argmax(x_np))
    # argmax value used as a constant factor
    _close(fx.grad(lambda y: (y * fx.argmax(y)).sum())(x), np.full((3, 4), float(am)), "x*argmax", 1e-12, 0)
    # comparison used as a mask
    mask = (x_np > 1.2).astype(np.float64)
    _close(fx.grad(lambda y: ((y > 1.2) * y).sum())(x), mask, "mask*x", 0, 0)
    # only integer / boolean paths: the gradient is zero, with the input's shape and dtype
    def only_int(y):
        a = fx.argmax(y, axis=1).astype(fx.float64).sum()
        b = fx.argmin(y).astype(fx.float64)
        c = (y > 1.0).astype(fx.float64).sum() + fx.equal(y, y).astype(fx.float64).sum()
        d = (fx.less(y, 1.5) * 2.0 + fx.greater_equal(y, 0.7) + fx.not_equal(y, 1.0) + fx.less_equal(y, 2.0)).sum()
        return a + b + c + d

    g = fx.grad(only_int)(x)
    _close(g, np.zeros((3, 4)), "integer paths", 0, 0)
    _, (j,) = fx.jvp(
        lambda y: fx.argmax(y, axis=0).astype(fx.float64) + (y > 1.0).sum(axis=0), [x], [_f64(np.ones((3, 4)))]
    )
    _close(j, np.zeros(4), "jvp through argmax/compare", 0, 0)


def test_stop_gradient(rng):
    x_np = gen(rng, (3, 4), "any")
    x = _f64(x_np)
    sg = fx.stop_gradient
    _close(sg(x), x_np, "value", 0, 0)
    _close(fx.grad(lambda y: (sg(y) * y).sum())(x), x_np, "sg(x)*x", 1e-12, 1e-12)
    _close(fx.grad(lambda y: sg(y**2).sum())(x), np.zeros((3, 4)), "sg(x^2)", 0, 0)
    _close(fx.grad(lambda y: (sg(fx.sin(y)) + fx.sin(y)).sum())(x), np.cos(x_np), "sg + f", 1e-12, 1e-12)
    _, (vj,) = fx.vjp(lambda y: sg(y) * 2.0 + y, [x], [_f64(np.ones((3, 4)))])
    _close(vj, np.ones((3, 4)), "vjp", 0, 0)
    _, (jv,) = fx.jvp(lambda y: sg(y) * 2.0 + y * 3.0, [x], [_f64(np.ones((3, 4)))])
    _close(jv, np.full((3, 4), 3.0), "jvp", 0, 0)
    # second order: sg inside the first derivative
    df = fx.grad(lambda y: (y**3).sum())
    _close(fx.grad(lambda y: sg(df(y)).sum() + y.sum())(x), np.ones((3, 4)), "sg of a gradient", 0, 0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_gradient_dtype(dtype, rng):
    x_np = rand(rng, (3, 4), dtype, "small")
    x = to_fx(x_np, dtype)
    xr = x_np.astype(np.float64)
    loose = {"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12)}
    rt, at = loose[dtype]

    g = fx.grad(lambda y: (y * y * 0.5 + 3 * y).sum())(x)
    assert_close(g, xr + 3, dtype, rtol=rt, atol=at)
    g = fx.grad(lambda y: fx.sin(y).sum())(x)
    assert_close(g, np.cos(xr), dtype, rtol=rt, atol=at)
    g = fx.grad(lambda y: fx.mean(fx.exp(y * 0.5), axis=0).sum())(x)
    assert_close(g, 0.5 * np.exp(0.5 * xr) / 3, dtype, rtol=rt, atol=at)

    # matmul gradient: d/dW sum(W @ v) = broadcast v
    v_np = rand(rng, (4,), dtype, "small")
    g = fx.grad(lambda w: (w @ to_fx(v_np, dtype)).sum())(x)
    assert_close(g, np.broadcast_to(v_np.astype(np.float64), (3, 4)), dtype, rtol=rt, atol=at)

    # value_and_grad keeps the loss dtype; second order keeps the dtype too
    v, g = fx.value_and_grad(lambda y: (y * y).sum())(x)
    assert v.dtype == getattr(fx, dtype)
    assert g.dtype == getattr(fx, dtype)
    g2 = fx.grad(lambda y: fx.grad(lambda z: (z**3).sum())(y).sum())(x)
    assert_close(g2, 6 * xr, dtype, rtol=rt, atol=max(at, 4 * at * np.abs(xr).max()))

    # vjp / jvp
    ones = to_fx(np.ones((3, 4)), dtype)
    outs, (vj,) = fx.vjp(lambda y: y * y, [x], [ones])
    assert outs[0].dtype == getattr(fx, dtype)
    assert_close(vj, 2 * xr, dtype, rtol=rt, atol=at)
    outs, (jv,) = fx.jvp(lambda y: y * y, [x], [ones])
    assert_close(jv, 2 * xr, dtype, rtol=rt, atol=at)

    # unused argument: zeros of that argument's dtype
    ga, gb = fx.grad(lambda a, b: a.sum(), argnums=(0, 1))(x, to_fx(np.ones(2), dtype))
    assert_close(gb, np.zeros(2), dtype, rtol=0, atol=0)


def test_gradient_dtype_mixed(rng):
    # a float32 input used in a float64 computation gets a float32 gradient
    x_np = rand(rng, (3,), "float32", "small")
    x = to_fx(x_np, "float32")
    g = fx.grad(lambda y: (y.astype(fx.float64) ** 2).sum())(x)
    assert_close(g, 2 * x_np.astype(np.float64), "float32")
    # a float64 input used through float32 gets a float64 gradient
    xd = _f64(x_np.astype(np.float64))
    g = fx.grad(lambda y: (y.astype(fx.float32) * 2.0).sum())(xd)
    assert_close(g, np.full(3, 2.0), "float64", rtol=1e-6, atol=1e-6)
    # float16 * float32 promotes; the float16 gradient stays float16
    h = to_fx(np.array([0.5, 1.0, 1.5], dtype=np.float16), "float16")
    w = to_fx(np.array([2.0, 3.0, 4.0], dtype=np.float32), "float32")
    gh, gw = fx.grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(h, w)
    assert_close(gh, np.array([2.0, 3.0, 4.0]), "float16")
    assert_close(gw, np.array([0.5, 1.0, 1.5]), "float32")


# ==========================================================================
# Errors
# ==========================================================================


def test_error_non_scalar_loss():
    x = _f64(np.ones(3))
    for fun in (lambda y: y * 2.0, lambda y: y.sum(keepdims=True), lambda y: fx.reshape(y.sum(), (1, 1))):
        with pytest.raises(ValueError, match="scalar"):
            fx.grad(fun)(x)
        with pytest.raises(ValueError, match="scalar"):
            fx.value_and_grad(fun)(x)
    with pytest.raises(ValueError, match="scalar"):
        fx.value_and_grad(lambda y: (y * 2.0, y.sum()))(x)


def test_error_argnums_out_of_range():
    x = _f64(np.ones(3))
    f = lambda a, b: (a * b).sum()  # noqa: E731
    with pytest.raises(ValueError):
        fx.grad(f, argnums=2)(x, x)
    with pytest.raises(ValueError):
        fx.grad(f, argnums=(0, 5))(x, x)
    with pytest.raises(ValueError):
        fx.value_and_grad(lambda a: a.sum(), argnums=1)(x)


def test_error_fun_returns_non_array():
    x = _f64(np.ones(3))
    for bad in (lambda y: 3.0, lambda y: "loss", lambda y: None, lambda y: ("a", y.sum()), lambda y: ()):
        with pytest.raises(ValueError):
            fx.grad(bad)(x)
        with pytest.raises(ValueError):
            fx.value_and_grad(bad)(x)
    for bad in (lambda y: 3.0, lambda y: "out"):
        with pytest.raises(ValueError):
            fx.vjp(bad, [x], [x])
        with pytest.raises(ValueError):
            fx.jvp(bad, [x], [x])


def test_error_differentiating_non_array_argument():
    x = _f64(np.ones(3))
    with pytest.raises(ValueError):
        fx.grad(lambda a, s: (a * s).sum(), argnums=1)(x, 2.0)
    with pytest.raises(ValueError):
        fx.grad(lambda d: d["a"].sum())({"a": x, "s": "text"})


def test_error_vjp_cotangents():
    x = _f64(np.ones(3))
    two = lambda a: [a * 2.0, a.sum()]  # noqa: E731
    with pytest.raises(ValueError):
        fx.vjp(two, [x], [_f64(np.ones(3))])  # too few
    with pytest.raises(ValueError):
        fx.vjp(lambda a: a * 2.0, [x], [])
    with pytest.raises(ValueError):
        fx.vjp(lambda a: a * 2.0, [x], [_f64(np.ones(4))])  # shape mismatch
    with pytest.raises(ValueError):
        fx.vjp(lambda a: a * 2.0, [x], [_f64(np.ones((3, 1)))])
    with pytest.raises(ValueError):
        fx.vjp(two, [x], [_f64(np.ones(3)), _f64(np.ones(1))])  # (1,) for a 0-d output


def test_error_jvp_tangents():
    x = _f64(np.ones(3))
    with pytest.raises(ValueError):
        fx.jvp(lambda a: a * 2.0, [x], [_f64(np.ones(4))])
    with pytest.raises(ValueError):
        fx.jvp(lambda a: a * 2.0, [x], [_f64(np.ones((1, 3)))])
    with pytest.raises(ValueError):
        fx.jvp(lambda a, b: a * b, [x, x], [_f64(np.ones(3))])  # count


class _Boom(Exception):
    pass


@pytest.mark.parametrize("exc", [KeyError("missing key"), RuntimeError("inner failure"), _Boom("custom"),
                                 TypeError("bad type"), ValueError("value problem")])
def test_exception_inside_fun_propagates(exc):
    x = _f64(np.ones(3))

    def fun(*args, **kwargs):
        raise exc

    def fun_after_ops(a, *rest):
        (a * 2.0).sum()
        raise exc

    calls = [
        lambda: fx.grad(fun)(x),
        lambda: fx.grad(fun_after_ops)(x),
        lambda: fx.value_and_grad(fun, argnums=(0, 1))(x, x),
        lambda: fx.vjp(fun_after_ops, [x], [x]),
        lambda: fx.jvp(fun, [x], [x]),
        lambda: fx.grad(fx.grad(fun_after_ops))(_f64(1.0)),  # nested transform
        lambda: fx.grad(lambda a: fx.grad(fun)(a).sum())(x),
    ]
    for call in calls:
        with pytest.raises(type(exc)) as info:
            call()
        assert type(info.value) is type(exc)
        assert str(info.value) == str(exc)

    # everything still works afterwards (no tracing state leaked)
    _close(fx.grad(lambda a: (a * a).sum())(x), np.full(3, 2.0), "after exceptions", 0, 0)
    y = x * 3.0
    fx.eval(y)
    _close(y, np.full(3, 3.0), "plain evaluation after exceptions", 0, 0)


def test_exception_from_op_inside_fun_propagates():
    # an error raised by ferrox itself inside fun keeps its class and message
    x = _f64(np.ones(3))

    def bad(a):
        return (a + _f64(np.ones(4))).sum()  # broadcast failure

    with pytest.raises(ValueError) as direct:
        bad(x)
    with pytest.raises(ValueError) as traced:
        fx.grad(bad)(x)
    assert str(traced.value) == str(direct.value)


# --------------------------------------------------------------------------
# argnames: gradients with respect to keyword arguments (MLX's form)
# --------------------------------------------------------------------------


def test_argnames_only_keyword_gradients():
    def f(x, *, w):
        return (x * w * w).sum()

    x, w = fx.array([1.0, 2.0]), fx.array([3.0, 4.0])
    pos, kw = fx.grad(f, argnames="w")(x, w=w)
    assert pos is None
    assert kw.keys() == {"w"}
    assert kw["w"].tolist() == [6.0, 16.0]  # 2 * x * w


def test_argnames_with_argnums_and_trees():
    def f(x, scale=1.0, params=None):
        return (scale * x * params["a"] + params["b"][0]).sum()

    x = fx.array([1.0, 2.0])
    params = {"a": fx.array([3.0, 5.0]), "b": [fx.array([7.0, 7.0])]}
    value, (gx, kw) = fx.value_and_grad(f, argnums=0, argnames=["params"])(x, scale=2.0, params=params)
    assert value.item() == 2 * (3 + 10) + 14
    assert gx.tolist() == [6.0, 10.0]
    assert kw["params"]["a"].tolist() == [2.0, 4.0]
    assert kw["params"]["b"][0].tolist() == [1.0, 1.0]
    # Two positional argnums give a tuple beside the keyword dict.
    (g0, g1), kw = fx.grad(lambda a, b, c: (a * b * c).sum(), argnums=(0, 1), argnames="c")(x, x, c=x)
    assert g0.tolist() == [1.0, 4.0] and g1.tolist() == [1.0, 4.0] and kw["c"].tolist() == [1.0, 4.0]


def test_argnames_errors():
    f = fx.grad(lambda x, w=None: (x * w).sum(), argnames="w")
    with pytest.raises(ValueError, match="called without it"):
        f(fx.ones((2,)))
    with pytest.raises(TypeError, match="argnames"):
        fx.grad(lambda x: x.sum(), argnames=[1])(fx.ones((2,)))
    with pytest.raises(ValueError, match="Duplicate"):
        fx.grad(lambda x: x.sum(), argnames=["w", "w"])


# --------------------------------------------------------------------------
# complex inputs: MLX's (and PyTorch's) convention, the vjp conjugates
# --------------------------------------------------------------------------

HOLOMORPHIC = {
    "exp": (fx.exp, np.exp),
    "sin": (fx.sin, np.cos),
    "cos": (fx.cos, lambda z: -np.sin(z)),
    "log": (fx.log, lambda z: 1 / z),
    "sqrt": (fx.sqrt, lambda z: 0.5 / np.sqrt(z)),
    "tanh": (fx.tanh, lambda z: 1 / np.cosh(z) ** 2),
    "square": (lambda x: x * x, lambda z: 2 * z),
    "reciprocal": (lambda x: 1.0 / x, lambda z: -1 / z**2),
    "cube": (lambda x: fx.power(x, fx.array(3 + 0j, dtype=fx.complex64)), lambda z: 3 * z**2),
}


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_complex_vjps_conjugate_the_derivative(name, rng):
    # For holomorphic f: vjp(ct) = ct * conj(f'(z)) (MLX 0.32's rule, so
    # that a real loss's gradient is dL/dRe + i dL/dIm) and jvp(t) = f'(z) * t.
    f, df = HOLOMORPHIC[name]
    z = (rng.uniform(0.3, 1.5, 5) + 1j * rng.uniform(-1.0, 1.0, 5)).astype(np.complex64)
    ct = (rng.normal(size=5) + 1j * rng.normal(size=5)).astype(np.complex64)
    d = df(z.astype(np.complex128))
    _, (g,) = fx.vjp(f, [fx.array(z)], [fx.array(ct)])
    _, (t,) = fx.jvp(f, [fx.array(z)], [fx.array(ct)])
    assert_close(g, ct.astype(np.complex128) * np.conj(d), "complex64", rtol=1e-4, atol=1e-5)
    assert_close(t, ct.astype(np.complex128) * d, "complex64", rtol=1e-4, atol=1e-5)


def test_add_and_subtract_pass_cotangents_without_products(tmp_path):
    """The partials of + and - are 1 and -1: their vjps hand the cotangent
    on (negated for the subtrahend) instead of multiplying it, with the same
    bits, so a residual network's backward pass launches no products for
    its sums."""
    rng = np.random.default_rng(0)
    a, b, c, cot = (fx.array(rng.normal(size=(3, 4)).astype(np.float32)) for _ in range(4))
    bias = fx.array(rng.normal(size=(4,)).astype(np.float32))
    _, grads = fx.vjp(lambda a, b, c, bias: (a + b) - c + bias, [a, b, c, bias], [cot])
    dot = tmp_path / "grads.dot"
    fx.export_to_dot(str(dot), *grads)
    labels = re.findall(r'label="([^"\\\\]+)', dot.read_text())
    assert "multiply" not in labels and labels.count("negative") == 1, labels
    expected = np.array(cot)
    for g, want in zip(grads, [expected, expected, -expected, expected.sum(axis=0)]):
        np.testing.assert_array_equal(np.array(g), want)
    # Integer differences keep the product by -1 (it wraps as the forward op does).
    i, j = fx.array([5, 7], dtype=fx.uint8), fx.array([1, 2], dtype=fx.uint8)
    _, (gi, gj) = fx.vjp(lambda i, j: i - j, [i, j], [fx.array([1, 2], dtype=fx.uint8)])
    assert np.array(gi).tolist() == [1, 2] and np.array(gj).tolist() == [255, 254]
