"""The Convolution primitive: every parameter (strides, asymmetric and
negative padding, kernel and input dilation, groups, flip) over 1-3
spatial axes against a float64 NumPy reference, non-contiguous and empty
operands, float16/bfloat16/float32 tolerances, finite-difference gradients
of both operands (first and second order), forward mode, vmap against a
loop, and the graph a convolution builds (one node, whose derivatives are
convolutions again)."""

import itertools

import numpy as np
import pytest

import ferrox as fx
from conftest import f64, fd_check, round_bf16


def reference(x, w, stride, lo, hi, kdil, idil, groups, flip):
    """conv_general in float64: negative padding crops the input, then the
    input is dilated and padded, and each filter tap adds its shifted window
    times its weights (per group)."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    dims = x.ndim - 2
    crop = (slice(None),) + tuple(
        slice(max(-lo[a], 0), max(x.shape[a + 1] + min(hi[a], 0), max(-lo[a], 0))) for a in range(dims)
    )
    x = x[crop]
    shape = [x.shape[0]] + [(n - 1) * d + 1 if n else 0 for n, d in zip(x.shape[1:-1], idil)] + [x.shape[-1]]
    xd = np.zeros(shape)
    xd[(slice(None),) + tuple(slice(None, None, d) for d in idil)] = x
    xp = np.pad(xd, [(0, 0)] + [(max(a, 0), max(b, 0)) for a, b in zip(lo, hi)] + [(0, 0)])
    if flip:
        w = w[(slice(None),) + (slice(None, None, -1),) * dims]
    k = w.shape[1:-1]
    out = [(xp.shape[a + 1] - (k[a] - 1) * kdil[a] - 1) // stride[a] + 1 for a in range(dims)]
    n, c_in, c_out = x.shape[0], x.shape[-1], w.shape[0]
    cg, og = c_in // groups, c_out // groups
    y = np.zeros([n] + out + [groups, og])
    wg = w.reshape((groups, og) + k + (cg,))
    for taps in itertools.product(*[range(s) for s in k]):
        window = xp[(slice(None),) + tuple(
            slice(taps[a] * kdil[a], taps[a] * kdil[a] + (out[a] - 1) * stride[a] + 1, stride[a]) for a in range(dims)
        )]
        window = window.reshape(window.shape[:-1] + (groups, cg))
        y += np.einsum("...gc,goc->...go", window, wg[(slice(None), slice(None)) + taps])
    return y.reshape([n] + out + [c_out])


def args_of(stride, lo, hi, kdil, idil, groups, flip):
    return dict(stride=stride, padding=(lo, hi), kernel_dilation=kdil, input_dilation=idil, groups=groups, flip=flip)


def random_case(rng, dims):
    """A random valid (x shape, w shape, parameters) with `dims` spatial axes."""
    while True:
        groups = int(rng.choice([1, 2, 3])) if dims < 3 else 1  # MLX: groups only in 1-D and 2-D
        cg, og = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        k = [int(rng.integers(1, 4)) for _ in range(dims)]
        n_in = [int(rng.integers(1, 7)) for _ in range(dims)]
        stride = [int(rng.integers(1, 4)) for _ in range(dims)]
        kdil = [int(rng.integers(1, 3)) for _ in range(dims)]
        idil = [int(rng.integers(1, 4)) for _ in range(dims)]
        lo = [int(rng.integers(-1, 4)) for _ in range(dims)]
        hi = [int(rng.integers(-1, 4)) for _ in range(dims)]
        flip = bool(rng.integers(0, 2))
        # Negative padding crops the input; the rest must cover the filters.
        cropped = [n + min(a, 0) + min(b, 0) for n, a, b in zip(n_in, lo, hi)]
        spans = [(c - 1) * d + 1 + max(a, 0) + max(b, 0) - (kk - 1) * kd - 1
                 for c, d, a, b, kk, kd in zip(cropped, idil, lo, hi, k, kdil)]
        if min(cropped) > 0 and min(spans) >= 0:
            x_shape = (int(rng.integers(1, 3)), *n_in, groups * cg)
            w_shape = (groups * og, *k, cg)
            return x_shape, w_shape, (stride, lo, hi, kdil, idil, groups, flip)


CASES = [random_case(np.random.default_rng(100 + i), 1 + i % 3) for i in range(36)]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}x{c[1]}" for c in CASES])
def test_every_parameter_against_float64_reference(case, rng):
    x_shape, w_shape, params = case
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    got = fx.conv_general(f64(x), f64(w), **args_of(*params))
    want = reference(x, w, *params)
    assert got.dtype == fx.float64 and got.shape == want.shape
    np.testing.assert_allclose(np.array(got), want, rtol=1e-11, atol=1e-11)
    got32 = fx.conv_general(fx.array(x, dtype=fx.float32), fx.array(w, dtype=fx.float32), **args_of(*params))
    want32 = reference(x.astype(np.float32), w.astype(np.float32), *params)
    np.testing.assert_allclose(np.array(got32), want32, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_strided_windows_and_larger_channels(dims, rng):
    # Enough rows and channels for several tiles, threads and GEMM blocks.
    x = rng.standard_normal((3,) + (9,) * dims + (20,))
    w = rng.standard_normal((24,) + (3,) * dims + (20 // (2 if dims < 3 else 1),))
    groups = 2 if dims < 3 else 1
    params = ([2] + [1] * (dims - 1), [1] * dims, [2] * dims, [1] * dims, [1] * dims, groups, False)
    got = fx.conv_general(f64(x), f64(w), **args_of(*params))
    np.testing.assert_allclose(np.array(got), reference(x, w, *params), rtol=1e-11, atol=1e-11)


def test_depthwise_and_channel_multiplier(rng):
    x = rng.standard_normal((2, 11, 9, 6))
    for og in [1, 2]:
        w = rng.standard_normal((6 * og, 3, 3, 1))
        for params in [([1, 1], [1, 1], [1, 1], [1, 1], [1, 1], 6, False),
                       ([2, 1], [0, 2], [1, 0], [2, 1], [1, 2], 6, True)]:
            got = fx.conv_general(f64(x), f64(w), **args_of(*params))
            np.testing.assert_allclose(np.array(got), reference(x, w, *params), rtol=1e-11, atol=1e-11)


def test_non_contiguous_operands(rng):
    x = rng.standard_normal((3, 8, 7, 4))
    w = rng.standard_normal((6, 3, 2, 2))
    params = ([1, 2], [1, 0], [2, 1], [1, 1], [1, 1], 2, True)
    views = [
        (lambda a: a.transpose(0, 2, 1, 3), lambda a: a.transpose(0, 2, 1, 3)),  # swapped spatial axes
        (lambda a: a[:, ::-1, 1:], lambda a: a[:, ::-1, 1:]),  # negative step and offset
        (lambda a: a[..., ::-1], lambda a: a[..., ::-1]),  # channels reversed (stride -1)
        (lambda a: a[::2], lambda a: a[::2]),  # batch step
    ]
    for view_np, view_fx in views:
        got = fx.conv_general(view_fx(f64(x)), f64(w), **args_of(*params))
        want = reference(view_np(x), w, *params)
        np.testing.assert_allclose(np.array(got), want, rtol=1e-11, atol=1e-11)
    # Filters as views: transposed storage, reversed taps, a broadcast.
    wt = np.ascontiguousarray(w.transpose(3, 1, 2, 0))
    got = fx.conv_general(f64(x), f64(wt).transpose(3, 1, 2, 0)[:, ::-1], **args_of(*params))
    np.testing.assert_allclose(np.array(got), reference(x, w[:, ::-1], *params), rtol=1e-11, atol=1e-11)
    wb = fx.broadcast_to(f64(w[:1]), w.shape)
    got = fx.conv_general(f64(x), wb, **args_of(*params))
    np.testing.assert_allclose(np.array(got), reference(x, np.broadcast_to(w[:1], w.shape), *params), rtol=1e-11,
                               atol=1e-11)


@pytest.mark.parametrize(
    "x_shape, w_shape, params",
    [
        ((0, 5, 4), (3, 2, 4), ([1], [0], [0], [1], [1], 1, False)),  # no batch
        ((2, 5, 4), (0, 2, 4), ([1], [1], [0], [1], [1], 1, False)),  # no output channels
        ((2, 5, 0), (3, 2, 0), ([2], [1], [1], [1], [1], 1, False)),  # no input channels: zeros
        ((2, 0, 3), (2, 1, 3), ([1], [1], [1], [1], [1], 1, False)),  # empty axis, padding only: zeros
        ((1, 4, 0, 2), (2, 1, 1, 2), ([1, 1], [0, 0], [0, 1], [1, 1], [1, 1], 1, False)),
    ],
)
def test_empty_operands(x_shape, w_shape, params, rng):
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    got = fx.conv_general(f64(x), f64(w), **args_of(*params))
    want = reference(x, w, *params)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.array(got), want)
    # Their gradients are zeros of the operands' shapes.
    if got.size:
        gx, gw = fx.grad(lambda a, b: fx.conv_general(a, b, **args_of(*params)).sum(), argnums=(0, 1))(f64(x), f64(w))
        assert gx.shape == x.shape and gw.shape == w.shape
        np.testing.assert_array_equal(np.array(gw), np.zeros(w.shape))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_reduced_precision(dtype, rng):
    x = rng.standard_normal((2, 9, 8, 16)).astype(np.float32)
    w = (rng.standard_normal((12, 3, 3, 8)) / 6).astype(np.float32)
    if dtype == "bfloat16":
        x, w = round_bf16(x), round_bf16(w)
    elif dtype == "float16":
        x, w = x.astype(np.float16).astype(np.float32), w.astype(np.float16).astype(np.float32)
    params = ([1, 2], [1, 1], [1, 0], [1, 1], [2, 1], 2, True)
    fdt = getattr(fx, dtype)
    got = fx.conv_general(fx.array(x).astype(fdt), fx.array(w).astype(fdt), **args_of(*params))
    assert got.dtype == fdt
    want = reference(x, w, *params)
    # Products accumulate in float32; the result is rounded once.
    tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6}[dtype]
    np.testing.assert_allclose(np.array(got.astype(fx.float32)), want, rtol=tol, atol=tol * np.abs(want).max())


GRAD_CASES = [
    ((2, 7, 3), (4, 3, 3), ([2], [1], [2], [1], [1], 1, False)),
    ((2, 6, 4), (4, 2, 2), ([1], [2], [0], [2], [2], 2, True)),  # dilations, groups, flip
    ((1, 5, 3), (2, 3, 3), ([3], [-1], [3], [1], [2], 1, False)),  # cropping, large high padding
    ((1, 5, 4, 2), (3, 3, 2, 2), ([2, 1], [0, 2], [1, 0], [1, 2], [2, 1], 1, True)),
    ((2, 4, 5, 4), (6, 2, 3, 2), ([1, 2], [1, 1], [2, 1], [2, 1], [1, 1], 2, False)),
    ((1, 3, 4, 3, 2), (2, 2, 2, 2, 2), ([1, 2, 1], [1, 0, 1], [0, 1, 1], [1, 1, 2], [1, 2, 1], 1, True)),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[str(c[:2]) for c in GRAD_CASES])
def test_gradients_of_both_operands(case, rng):
    x_shape, w_shape, params = case
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    args = args_of(*params)
    fd_check(lambda v: fx.conv_general(v, f64(w), **args), x, rng)
    fd_check(lambda v: fx.conv_general(f64(x), v, **args), w, rng)


@pytest.mark.parametrize("case", GRAD_CASES[1:5:2], ids=[str(c[:2]) for c in GRAD_CASES[1:5:2]])
def test_second_order_gradients(case, rng):
    x_shape, w_shape, params = case
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    args = args_of(*params)
    y_weights = f64(rng.standard_normal(fx.conv_general(f64(x), f64(w), **args).shape))

    def loss(a, b):
        return (fx.conv_general(a, b, **args) * y_weights).square().sum()

    # Each operand's gradient, differentiated with respect to the other
    # operand (quadratic in it): convolutions of convolutions.
    fd_check(lambda v: fx.grad(loss, argnums=1)(v, f64(w)), x, rng, rtol=1e-5, atol=1e-5)
    fd_check(lambda v: fx.grad(loss, argnums=0)(f64(x), v), w, rng, rtol=1e-5, atol=1e-5)


def test_transposed_convolution_gradients(rng):
    x, w = rng.standard_normal((2, 4, 3, 3)), rng.standard_normal((4, 3, 2, 3))
    kw = dict(stride=(2, 1), padding=(1, 0), output_padding=(1, 0), dilation=(1, 2))
    fd_check(lambda v: fx.conv_transpose2d(v, f64(w), **kw), x, rng)
    fd_check(lambda v: fx.conv_transpose2d(f64(x), v, **kw), w, rng)


def test_jvp_is_linear_in_each_operand(rng):
    x, w = rng.standard_normal((2, 6, 5, 4)), rng.standard_normal((4, 3, 3, 2))
    tx, tw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
    params = ([1, 2], [1, 0], [0, 2], [2, 1], [1, 2], 2, True)
    args = args_of(*params)
    out, (d,) = fx.jvp(lambda a, b: fx.conv_general(a, b, **args), [f64(x), f64(w)], [f64(tx), f64(tw)])
    np.testing.assert_allclose(np.array(out[0]), reference(x, w, *params), rtol=1e-11, atol=1e-11)
    want = reference(tx, w, *params) + reference(x, tw, *params)
    np.testing.assert_allclose(np.array(d), want, rtol=1e-11, atol=1e-11)


VMAP_CASES = [
    ((2, 7, 4), (6, 3, 2), ([2], [1], [0], [1], [2], 2, False)),
    ((2, 5, 6, 3), (4, 2, 3, 3), ([1, 2], [1, 0], [1, 2], [2, 1], [1, 1], 1, True)),
    ((1, 4, 3, 4, 2), (3, 2, 2, 2, 2), ([1, 1, 2], [0, 1, 1], [1, 0, 0], [1, 1, 1], [2, 1, 1], 1, False)),
]


@pytest.mark.parametrize("case", VMAP_CASES, ids=[str(c[:2]) for c in VMAP_CASES])
@pytest.mark.parametrize("batched", ["input", "weight", "both"])
def test_vmap_matches_a_loop(case, batched, rng):
    x_shape, w_shape, params = case
    b = 3
    args = args_of(*params)
    xs = rng.standard_normal((b,) + x_shape) if batched != "weight" else rng.standard_normal(x_shape)
    ws = rng.standard_normal((b,) + w_shape) if batched != "input" else rng.standard_normal(w_shape)
    # Batch axes away from the front exercise the moves.
    x_axis = None if batched == "weight" else 1
    w_axis = None if batched == "input" else 2
    xs_in = np.moveaxis(xs, 0, 1) if x_axis is not None else xs
    ws_in = np.moveaxis(ws, 0, 2) if w_axis is not None else ws
    got = fx.vmap(lambda a, c: fx.conv_general(a, c, **args), in_axes=(x_axis, w_axis))(f64(xs_in), f64(ws_in))
    for i in range(b):
        xi = xs[i] if x_axis is not None else xs
        wi = ws[i] if w_axis is not None else ws
        np.testing.assert_allclose(np.array(got[i]), reference(xi, wi, *params), rtol=1e-11, atol=1e-11)


def test_vmap_of_gradients(rng):
    x, ws = rng.standard_normal((2, 6, 4)), rng.standard_normal((3, 4, 3, 2))
    args = args_of([2], [1], [1], [1], [1], 2, False)

    def grad_x(w):
        return fx.grad(lambda a: fx.conv_general(a, w, **args).square().sum())(f64(x))

    got = fx.vmap(grad_x)(f64(ws))
    for i in range(3):
        np.testing.assert_allclose(np.array(got[i]), np.array(grad_x(f64(ws[i]))), rtol=1e-11, atol=1e-11)


def primitive_names(fun, *args):
    names = []
    fx.export_function(lambda e: names.append(e["name"]) if e["type"] == "primitive" else None, fun, *args)
    return names


def test_one_node_and_convolutions_for_derivatives():
    x, w = fx.ones((2, 6, 6, 4)), fx.ones((8, 3, 3, 2))
    names = primitive_names(lambda a, b: fx.conv2d(a, b, stride=2, padding=1, dilation=2, groups=2), x, w)
    assert names == ["Convolution"]
    names = primitive_names(lambda a, b: fx.conv_transpose2d(a, b, stride=2, padding=1, groups=2), x, w)
    assert names == ["Convolution"]
    grads = primitive_names(
        lambda a, b: fx.grad(lambda p, q: fx.conv2d(p, q, stride=2, groups=2).sum(), argnums=(0, 1))(a, b), x, w
    )
    assert grads.count("Convolution") >= 2 and "Matmul" not in grads and "AsStrided" not in grads
