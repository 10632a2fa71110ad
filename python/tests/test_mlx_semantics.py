"""MLX's exact semantics where ferrox used to differ (issue 39): each test
pins what MLX does, checked against the pinned ``mlx[cpu]`` where it can run
here, else against the value MLX gives (noted beside it). Runs on every
device (the conftest's autouse ``device`` fixture)."""

import gc
import threading
import weakref

import numpy as np
import pytest

import ferrox as fx

try:
    import mlx.core as mx
except ImportError:  # pragma: no cover - CI installs the pinned mlx[cpu]
    mx = None

needs_mlx = pytest.mark.skipif(mx is None, reason="needs MLX (mlx[cpu] from requirements-dev.txt)")


def close(a, b, tol=1e-5):
    return np.allclose(np.array(a), np.array(b), rtol=tol, atol=tol)


# --------------------------------------------------------------------------
# A. Operators with non-array operands
# --------------------------------------------------------------------------


@pytest.mark.parametrize("other", [[1, 2, 3], (1, 2, 3), "causal", (1, 2)])
def test_equality_with_non_arrays_is_a_python_bool(other):
    a = fx.array([1, 2, 3])
    assert (a == other) is False
    assert (a != other) is True
    if mx is not None:
        m = mx.array([1, 2, 3])
        assert (m == other) is False and (m != other) is True


@pytest.mark.parametrize(
    "op",
    [
        lambda a, o: a < o,
        lambda a, o: a >= o,
        lambda a, o: a + o,
        lambda a, o: o + a,
        lambda a, o: a * o,
        lambda a, o: a // o,
        lambda a, o: a % o,
        lambda a, o: a @ o,
        lambda a, o: a & o,
        lambda a, o: a**o,
    ],
)
@pytest.mark.parametrize("other", [[1, 2, 3], (1.0, 2.0, 3.0), "hello"])
def test_other_operators_with_non_arrays_raise_value_error(op, other):
    # (`a == None` is False here; MLX's binding raises TypeError for None, a
    # difference no MLX program can rely on.)
    with pytest.raises(ValueError, match="Cannot perform"):
        op(fx.array([1, 2, 3]), other)
    if mx is not None:
        with pytest.raises((ValueError, TypeError)):  # MLX's `@` raises TypeError
            op(mx.array([1, 2, 3]), other)


def test_in_place_operator_with_a_list_raises():
    a = fx.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="inplace"):
        a /= [1.0, 2.0, 3.0]


def test_operators_still_take_scalars_numpy_and_mlx_array_protocol():
    a = fx.array([1, 2, 3])
    assert (a == np.array([1, 2, 3])).tolist() == [True, True, True]
    assert (a + np.array([1, 1, 1])).tolist() == [2, 3, 4]
    assert (a == 2).tolist() == [False, True, False]

    class Wrapped:
        def __mlx_array__(self):
            return fx.array([1, 1, 1])

    assert (a + Wrapped()).tolist() == [2, 3, 4]
    assert (a == Wrapped()).tolist() == [True, False, False]
    assert fx.array(Wrapped()).tolist() == [1, 1, 1]


# --------------------------------------------------------------------------
# B. Complex derivatives: the cotangent times the conjugate derivative
# --------------------------------------------------------------------------


def complex_draw(rng, shape):
    z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    z = np.where(np.abs(z) < 1e-2, 0.5 + 0.5j, z)
    return z.astype(np.complex64)


HOLOMORPHIC = {
    "exp": (fx.exp, np.exp),
    "log": (fx.log, lambda z: 1 / z),
    "square": (fx.square, lambda z: 2 * z),
    "sin": (fx.sin, np.cos),
    "cos": (fx.cos, lambda z: -np.sin(z)),
    "sinh": (fx.sinh, np.cosh),
    "cosh": (fx.cosh, np.sinh),
    "tan": (fx.tan, lambda z: 1 / np.cos(z) ** 2),
    "tanh": (fx.tanh, lambda z: 1 - np.tanh(z) ** 2),
    "log1p": (fx.log1p, lambda z: 1 / (1 + z)),
    "sqrt": (fx.sqrt, lambda z: 0.5 / np.sqrt(z)),
}


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_complex_unary_vjp_conjugates_the_derivative(name, rng):
    fn, deriv = HOLOMORPHIC[name]
    z, c = complex_draw(rng, (3, 4)), complex_draw(rng, (3, 4))
    _, (g,) = fx.vjp(fn, [fx.array(z)], [fx.array(c)])
    assert g.dtype == fx.complex64
    assert close(g, c * np.conj(deriv(z.astype(np.complex128))), 1e-4)
    # The jvp is the plain (holomorphic) derivative times the tangent.
    _, (t,) = fx.jvp(fn, [fx.array(z)], [fx.array(c)])
    assert close(t, c * deriv(z.astype(np.complex128)), 1e-4)


def test_complex_binary_prod_and_matmul_vjps_conjugate_the_other_operand(rng):
    a, b, c = complex_draw(rng, (3, 4)), complex_draw(rng, (3, 4)), complex_draw(rng, (3, 4))
    _, (ga, gb) = fx.vjp(fx.multiply, [fx.array(a), fx.array(b)], [fx.array(c)])
    assert close(ga, c * np.conj(b)) and close(gb, c * np.conj(a))
    _, (ga, gb) = fx.vjp(fx.divide, [fx.array(a), fx.array(b)], [fx.array(c)])
    assert close(ga, c * np.conj(1 / b), 1e-4) and close(gb, c * np.conj(-a / b**2), 1e-4)
    # prod agrees with multiply (MLX's test_complex_prod_vjp).
    _, (gp,) = fx.vjp(lambda x: x.prod(axis=0), [fx.array(np.stack([a, b]))], [fx.array(c)])
    assert close(gp, np.stack([c * np.conj(b), c * np.conj(a)]))
    m, n = complex_draw(rng, (3, 5)), complex_draw(rng, (5, 2))
    ct = complex_draw(rng, (3, 2))
    _, (gm, gn) = fx.vjp(fx.matmul, [fx.array(m), fx.array(n)], [fx.array(ct)])
    assert close(gm, ct @ n.conj().T, 1e-4) and close(gn, m.conj().T @ ct, 1e-4)


def test_complex_non_holomorphic_rules_match_mlx():
    z = fx.array(1 + 2j)
    # Values MLX 0.32.4 gives (the table).
    _, (g_exp,) = fx.vjp(fx.exp, [z], [fx.array(1.0 + 0j)])
    assert close(g_exp, np.conj(np.exp(1 + 2j)))
    _, (t,) = fx.jvp(fx.conj, [z], [fx.array(3 + 4j)])
    assert t.item() == pytest.approx(3 - 4j)
    assert fx.grad(lambda x: fx.imag(x).sum())(z).item() == pytest.approx(1j)
    assert fx.grad(lambda x: (2 * fx.real(x)).sum())(z).item() == pytest.approx(2 + 0j)
    _, (t,) = fx.jvp(fx.abs, [z], [fx.array(1j)])
    assert t.dtype == fx.float32 and t.item() == pytest.approx(2 / 5**0.5, rel=1e-6)
    _, (g,) = fx.vjp(fx.abs, [z], [fx.array(1.0)])
    assert g.item() == pytest.approx((1 + 2j) / 5**0.5, rel=1e-6)
    if mx is not None:
        _, (t_mx,) = mx.jvp(mx.abs, [mx.array(1 + 2j)], [mx.array(1j)])
        assert t.item() == pytest.approx(t_mx.item(), rel=1e-6)
        _, (g_mx,) = mx.vjp(mx.exp, [mx.array(1 + 2j)], [mx.array(1.0 + 0j)])
        assert np.array(g_exp).item() == pytest.approx(np.array(g_mx).item(), rel=1e-5)


def test_real_inputs_are_unaffected_by_the_complex_rules(rng):
    x = rng.standard_normal(8).astype(np.float32)
    t = rng.standard_normal(8).astype(np.float32)
    _, (j,) = fx.jvp(fx.abs, [fx.array(x)], [fx.array(t)])
    assert close(j, np.sign(x) * t)
    _, (g,) = fx.vjp(fx.exp, [fx.array(x)], [fx.array(t)])
    assert close(g, t * np.exp(x), 1e-5)


# --------------------------------------------------------------------------
# C. Transform rules
# --------------------------------------------------------------------------


def test_grad_of_a_function_returning_a_tuple_raises():
    def fun(x, y):
        return (x * y).sum(), {"extra": y}

    (loss, aux), g = fx.value_and_grad(fun)(fx.ones((2, 2)), fx.ones((2, 2)))
    assert loss.item() == 4 and aux["extra"].shape == (2, 2) and g.shape == (2, 2)
    with pytest.raises(ValueError, match="value_and_grad"):
        fx.grad(fun)(fx.ones((2, 2)), fx.ones((2, 2)))


def test_argnums_are_checked_when_the_transform_is_made():
    f = lambda x: x  # noqa: E731
    with pytest.raises(ValueError):
        fx.grad(f, argnums=(0, 0))
    with pytest.raises(ValueError):
        fx.value_and_grad(f, ())
    with pytest.raises(TypeError):
        fx.value_and_grad(f, (None, None))
    with pytest.raises(ValueError):
        fx.grad(f, argnums=-1)
    # Out of range is known only when called.
    g = fx.grad(lambda x: x.sum(), argnums=1)
    with pytest.raises(ValueError):
        g(fx.ones(2))


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8", "nvfp4"])
def test_fp_quantized_products_refuse_scale_gradients(mode):
    rng = np.random.default_rng(0)
    x = fx.array(rng.standard_normal((2, 64)).astype(np.float32))
    wq, s = fx.quantize(fx.array(rng.standard_normal((32, 64)).astype(np.float32)), mode=mode)

    def mm(s, x, wq):
        return fx.quantized_matmul(x, wq, s, mode=mode).sum()

    def gmm(s, x, wq):
        return fx.gather_qmm(x, wq, s, rhs_indices=fx.array(0), mode=mode).sum()

    for f in (mm, gmm):
        with pytest.raises(ValueError, match="no gradient wrt scales"):
            fx.grad(f)(s, x, wq)
        # The gradient with respect to x still flows (scales not differentiated).
        gx = fx.grad(f, argnums=1)(s, x, wq)
        assert gx.shape == x.shape and np.isfinite(np.array(gx)).all()
    if mx is not None:
        with pytest.raises(ValueError):
            mwq, ms = mx.quantize(mx.array(np.array(fx.dequantize(wq, s, mode=mode))), mode=mode)
            mx.grad(lambda s: mx.quantized_matmul(mx.array(np.array(x)), mwq, s, mode=mode).sum())(ms)


def test_vjp_with_respect_to_indices_asks_for_stop_gradient():
    x, idx, upd = fx.array([1.0, 2.0, 3.0, 4.0]), fx.array([1, 3]), fx.array([5.0, 6.0])
    with pytest.raises(ValueError, match="stop_gradient"):
        fx.vjp(lambda x, i: fx.take(x, i), [x, idx], [fx.ones((2,))])
    with pytest.raises(ValueError, match="stop_gradient"):
        fx.vjp(lambda x, i: fx.take_along_axis(x, i, axis=0), [x[:, None], idx[:, None]], [fx.ones((2, 1))])
    with pytest.raises(ValueError, match="stop_gradient"):
        fx.vjp(lambda x, i, u: x.at[i].add(u), [x, idx, upd], [fx.ones((4,))])
    with pytest.raises(ValueError, match="stop_gradient"):
        fx.vjp(lambda a, i: fx.gather_mm(a, fx.ones((2, 2)), lhs_indices=i), [fx.ones((2, 1, 2)), fx.array([0, 1])], [fx.ones((2, 1, 2))])
    # Indices computed from the input are fine behind stop_gradient, and the
    # sort family's own rules use them so (second order included).
    g = fx.grad(lambda w: fx.take(w, fx.stop_gradient(fx.argsort(w)[:2])).sum())(fx.array([4.0, 3.0, 2.0, 1.0]))
    assert g.tolist() == [0.0, 0.0, 1.0, 1.0]
    gg = fx.grad(lambda w: fx.grad(lambda v: (fx.sort(v) ** 3).sum())(w).sum())(fx.array([3.0, 1.0, 2.0]))
    assert close(gg, 6 * np.array([3.0, 1.0, 2.0]))


def test_multiplying_update_has_a_vjp_and_jvp_with_repeats_and_zeros():
    src = fx.array([1.0, 2.0, 3.0, 4.0])
    upd = fx.array([[2.0, 3.0]])
    cot = fx.array([4.0, 5.0, 6.0, 7.0])
    _, (gs, gu) = fx.vjp(lambda s, u: s.at[1:3].multiply(u), [src, upd], [cot])
    assert gs.tolist() == [4.0, 10.0, 18.0, 7.0]
    assert gu.tolist() == [[10.0, 18.0]]
    # Repeated indices multiply together; a zero update gets the product of
    # the others; two zeros at one place give zero gradients there.
    base = np.array([1.5, -2.0, 3.0], np.float32)
    idx = np.array([0, 0, 2, 2, 2], np.int32)
    u = np.array([2.0, 0.0, 3.0, 0.0, 0.0], np.float32)
    c = np.array([1.0, 2.0, 3.0], np.float32)
    _, (gb, gu) = fx.vjp(lambda b, v: b.at[fx.array(idx)].multiply(v), [fx.array(base), fx.array(u)], [fx.array(c)])
    assert gb.tolist() == [0.0, 2.0, 0.0]
    assert gu.tolist() == [0.0, 1.5 * 2.0, 0.0, 0.0, 0.0]
    u2 = np.array([2.0, 5.0, 3.0, 0.5, 4.0], np.float32)
    _, (gb, gu) = fx.vjp(lambda b, v: b.at[fx.array(idx)].multiply(v), [fx.array(base), fx.array(u2)], [fx.array(c)])
    assert close(gb, [10.0, 2.0, 6.0 * 3.0])
    assert close(gu, [1.5 * 5.0, 1.5 * 2.0, 3.0 * 3.0 * 0.5 * 4.0, 3.0 * 3.0 * 3.0 * 4.0, 3.0 * 3.0 * 3.0 * 0.5])
    # The jvp agrees with finite differences of the same update.
    tb, tu = np.ones(3, np.float32), np.ones(5, np.float32)
    f = lambda b, v: b.at[fx.array(idx)].multiply(v)  # noqa: E731
    _, (t,) = fx.jvp(f, [fx.array(base), fx.array(u2)], [fx.array(tb), fx.array(tu)])
    eps = 1e-3
    fd = (np.array(f(fx.array(base + eps * tb), fx.array(u2 + eps * tu))) - np.array(f(fx.array(base - eps * tb), fx.array(u2 - eps * tu)))) / (2 * eps)
    assert close(t, fd, 1e-2)


def test_custom_function_takes_and_returns_trees():
    @fx.custom_function
    def double(params):
        return {"out": 2 * params["x"] * params["y"]}

    g = fx.grad(lambda p: double(p)["out"].sum())({"x": fx.ones(2), "y": fx.ones(2)})
    assert g["x"].tolist() == [2.0, 2.0] and g["y"].tolist() == [2.0, 2.0]

    @double.vjp
    def rule(primals, cotangents, outputs):
        assert set(cotangents) == {"out"} and set(outputs) == {"out"}
        return {"x": fx.zeros_like(primals["x"]), "y": fx.ones_like(primals["y"])}

    g = fx.grad(lambda p: double(p)["out"].sum())({"x": fx.ones(2), "y": fx.ones(2)})
    assert g["x"].tolist() == [0.0, 0.0] and g["y"].tolist() == [1.0, 1.0]


def test_vmap_axes_trees_and_one_item_out_axes():
    tree = {"a": fx.ones((2, 4)), "b": (fx.ones((4, 2)) * 2, fx.ones((4, 2)) * 3)}
    out = fx.vmap(lambda t: (t["a"] + t["b"][0]) * t["b"][1], in_axes={"a": 0, "b": (1, 1)})(tree)
    assert out.shape == (2, 4) and out.tolist() == [[9.0] * 4] * 2
    with pytest.raises(ValueError):
        fx.vmap(lambda t: t["a"], in_axes={"a": 0, "b": ((0, 0), 0)})(tree)
    a, b = fx.ones((3, 2, 4)), fx.ones((4, 5))
    out = fx.vmap(fx.matmul, in_axes=(1, None), out_axes=(1,))(a, b)
    assert out.shape == (3, 2, 5)


def test_async_eval_inside_a_transform_raises():
    def fun(x):
        y = x + 1.0
        fx.async_eval(y)
        return fx.exp(y)

    with pytest.raises(ValueError, match="graph transformation"):
        fx.grad(fun)(fx.array(1.0))
    with pytest.raises(ValueError, match="graph transformation"):
        fx.vmap(fun)(fx.ones((2, 2)))
    y = fx.ones(3) + 1
    fx.async_eval(y)
    assert y.tolist() == [2.0, 2.0, 2.0]


def test_compiled_functions_run_in_other_threads():
    f = fx.compile(lambda x, y: (x + y, x * y))
    results, errors = [], []

    def work():
        try:
            a, b = f(fx.array(1.0), fx.array(2.0))
            results.append((a.item(), b.item()))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [(3.0, 2.0)] * 3


# --------------------------------------------------------------------------
# E. Array protocols
# --------------------------------------------------------------------------


def test_arrays_are_weak_referenceable():
    a = fx.array([1, 2, 3])
    r = weakref.ref(a)
    assert r() is a
    del a
    gc.collect()
    assert r() is None


def test_buffer_protocol_exports_views_with_their_strides():
    with fx.stream(fx.cpu):
        x = fx.arange(12, dtype=fx.float32).reshape(3, 4)
        t = memoryview(x.T)
        assert t.strides == (4, 16) and not t.c_contiguous
        b = memoryview(fx.broadcast_to(fx.array([[1.0, 2.0]]), (3, 2)))
        assert b.strides == (0, 4)
        r = memoryview(fx.array([1, 2, 3, 4])[::-2])
        assert r.strides == (-8,) and r.tolist() == [4, 2]
        assert np.array(x.T).tolist() == np.arange(12).reshape(3, 4).T.tolist()
        bf = memoryview(fx.ones((3, 4), dtype=fx.bfloat16))
        assert bf.format == "bfloat16" and bf.itemsize == 2 and bf.strides == (8, 2)
        if mx is not None:
            m = memoryview(mx.ones((3, 4), dtype=mx.bfloat16))
            assert (m.format, m.strides) == (bf.format, bf.strides)


def test_from_dlpack_narrows_complex128_and_keeps_strides():
    z = np.array([1 + 2j, 3 - 4j, 0.5j])[::-1]
    out = fx.from_dlpack(z)
    assert out.dtype == fx.complex64 and out.tolist() == [0.5j, 3 - 4j, 1 + 2j]
    if mx is not None:
        assert str(mx.from_dlpack(np.ones(3, np.complex128)).dtype).endswith("complex64")
    with pytest.raises(BufferError):
        fx.from_dlpack(np.ones(3, np.complex128), copy=False)
    # float64 is shared as float64 (a deliberate difference: MLX narrows it
    # to float32; ferrox computes in float64 and DLPack imports keep dtypes).
    assert fx.from_dlpack(np.ones(3)).dtype == fx.float64
    view = np.arange(12, dtype=np.float32).reshape(3, 4).T
    with fx.stream(fx.cpu):
        y = fx.from_dlpack(view)
        assert y.tolist() == view.tolist()
        assert memoryview(y).strides == view.strides


def test_asarray_copy_false_never_copies():
    a = fx.array([1, 2, 3])
    assert fx.asarray(a, copy=False) is not None
    with pytest.raises(ValueError):
        fx.asarray(a, dtype=fx.float32, copy=False)
    with pytest.raises(ValueError):
        fx.asarray([1, 2, 3], copy=False)
    with pytest.raises(ValueError):
        fx.asarray(np.arange(16, dtype=np.float64), dtype=fx.float32, copy=False)
    src = np.arange(8, dtype=np.int32)
    shared = fx.asarray(src, copy=False)
    assert shared.tolist() == list(range(8))


def test_complex_conversion():
    assert complex(fx.array(1 + 2j)) == 1 + 2j
    assert complex(fx.array(1.5)) == 1.5 + 0j
    with pytest.raises(ValueError):
        complex(fx.zeros((2, 1)))


# --------------------------------------------------------------------------
# F. Devices and streams
# --------------------------------------------------------------------------


def test_a_device_equals_its_type():
    assert fx.Device(fx.cpu) == fx.cpu and fx.cpu == fx.Device(fx.cpu)
    assert fx.Device(fx.cpu, 1) != fx.cpu
    assert fx.Device(fx.gpu) != fx.cpu
    kind = fx.gpu if fx.default_device().type == fx.gpu else fx.cpu
    assert fx.default_device() == kind


def test_default_stream_of_a_missing_device_raises():
    if fx.is_available(fx.gpu):
        assert fx.default_stream(fx.gpu).device == fx.gpu
    else:
        with pytest.raises(ValueError):
            fx.default_stream(fx.gpu)
        with pytest.raises(ValueError):
            fx.set_default_device(fx.gpu)


# --------------------------------------------------------------------------
# G. arange
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((2**40, 2**40 + 3), {}),
        ((-(2**40), -(2**40) + 3), {}),
        ((2**31 - 3, 2**31 - 1), {}),
        ((-(2**31) - 1, -(2**31) + 1), {}),
        ((2**40, 2**40 + 3, 2**40), {}),
        ((), {"stop": 2, "step": 2**40}),
        ((2**40 + 3, 2**40, -1), {}),
        ((), {"stop": 2**40, "step": -1}),
        ((2**40, 2**40 + 3), {"dtype": "int32"}),
        ((0.5, 2**40, 2**39), {}),
        ((-3,), {"step": -1}),
        ((-3, None, -1), {}),
        ((), {"stop": 2, "step": 0.5}),
        ((), {"stop": 3}),
        ((0, 5, float("inf")), {}),
        ((5, 0, float("inf")), {}),
        ((1, 5.0, 1), {}),
        # Integer dtypes step by int(start + step) - int(start) and wrap.
        ((2**31 - 2, 2**31 + 2), {"dtype": "int32"}),
        ((-(2**31), -(2**31) - 3, -1), {"dtype": "int32"}),
        ((0.5, 5, 1.5), {"dtype": "int32"}),
        ((1.0, 3.0, 0.2), {"dtype": "int32"}),
        ((-2.5, 3, 1.3), {"dtype": "uint8"}),
        ((0, 600, 100), {"dtype": "int8"}),
        ((250, 260), {"dtype": "uint16"}),
        ((3e9, 3e9 + 5), {"dtype": "uint32"}),
        ((5, -5, -3), {"dtype": "uint32"}),
        ((2**62, 2**62 + 2**61, 2**59), {"dtype": "int64"}),
        ((0, 2**63 - 1, 2**61), {"dtype": "uint64"}),
    ],
)
def test_arange_overloads_and_inferred_dtype_match_mlx(args, kwargs):
    fk = {k: (getattr(fx, v) if k == "dtype" else v) for k, v in kwargs.items()}
    out = fx.arange(*args, **fk)
    if mx is None:
        pytest.skip("needs MLX")
    mk = {k: (getattr(mx, v) if k == "dtype" else v) for k, v in kwargs.items()}
    ref = mx.arange(*args, **mk)
    assert str(out.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    assert out.tolist() == ref.tolist()


def test_arange_errors():
    for args in [(float("nan"), 1, 5), (0, 2, float("nan")), (0, float("inf"), 1), (2, 2, 0)]:
        with pytest.raises(ValueError):
            fx.arange(*args)
    with pytest.raises(TypeError):
        fx.arange(start=1, step=2)


# --------------------------------------------------------------------------
# H. Errors
# --------------------------------------------------------------------------


def test_errors_raise_the_classes_mlx_raises():
    a = fx.array(0)
    with pytest.raises(ValueError):
        a[0] = fx.array(1)
    with pytest.raises(ValueError):
        fx.array(1).at[0].add(1)
    with pytest.raises(ValueError):
        fx.array(1).at.add(1)
    assert fx.array(1).at[None].add(1).item() == 2
    b = fx.array([1])
    with pytest.raises(ValueError, match="In place division"):
        b /= 1
    c = fx.array([2.0])
    c /= 2
    assert c.item() == 1.0
    with pytest.raises(ValueError, match="c must broadcast"):
        fx.addmm(fx.ones((2, 2, 2)), fx.ones((2, 2)), fx.ones((2, 2)))
    with pytest.raises(ValueError, match="empty"):
        fx.kron(fx.zeros((0,)), fx.ones((2,)))
    with pytest.raises(ValueError) as e:
        fx.array([[1, 2], [3]])
    assert str(e.value) == "Initialization encountered non-uniform length."
    with pytest.raises(IndexError):  # still an IndexError for NumPy-style code
        fx.array([1, 2, 3])[5]


# --------------------------------------------------------------------------
# I. Op semantics
# --------------------------------------------------------------------------


def test_clip_promotes_with_array_bounds():
    a = fx.array([1.0, 2.0, 3.0], dtype=fx.float16)
    assert fx.clip(a, fx.array(1.5), 2).dtype == fx.float32
    assert fx.clip(a, 1.5, 2).dtype == fx.float16
    assert fx.clip(a, fx.array(1.5), 2).tolist() == [1.5, 2.0, 2.0]


@needs_mlx
def test_conv1d_is_conv_general_with_one_option_per_call():
    # MLX's conv1d passes one stride/padding/dilation to conv_general, which
    # takes them on every spatial axis: a 2-D input convolves in 2-D.
    x = np.random.default_rng(0).standard_normal((1, 5, 5, 2)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((2, 3, 3, 1)).astype(np.float32)
    got = fx.conv1d(fx.array(x), fx.array(w), stride=1, padding=1, groups=2)
    want = mx.conv1d(mx.array(x), mx.array(w), stride=1, padding=1, groups=2)
    assert got.shape == want.shape == (1, 5, 5, 2)
    assert close(got, want)
    assert close(got, fx.conv2d(fx.array(x), fx.array(w), padding=(1, 1), groups=2))
    with pytest.raises(ValueError, match="groups"):
        fx.conv1d(fx.ones((1, 5, 5, 5, 2)), fx.ones((2, 3, 3, 3, 1)), groups=2)
    with pytest.raises(ValueError):
        fx.conv1d(fx.ones((5, 2)), fx.ones((2, 3, 2)))


def test_concatenate_axis_none_flattens():
    out = fx.concatenate([fx.ones((2, 2)), fx.zeros((3,))], axis=None)
    assert out.tolist() == [1.0] * 4 + [0.0] * 3


def test_pad_broadcasts_one_pair_to_every_axis():
    x = fx.ones((2, 2))
    assert fx.pad(x, [(1, 2)]).shape == (5, 5)
    assert fx.pad(x, (1, 2)).shape == (5, 5)
    assert fx.pad(x, [1]).shape == (4, 4)


def test_put_along_axis_on_empty_input():
    a = fx.array([], fx.float32)
    out = fx.put_along_axis(a, a, a, axis=None)
    assert out.shape == (0,)


def test_view_to_bool_and_back_keeps_the_bits():
    x = fx.array([3, -2], dtype=fx.int32)
    assert x.view(fx.bool_).view(fx.int32).tolist() == [3, -2]
    assert x.view(fx.bool_).tolist() == np.array([3, -2], np.int32).view(np.bool_).tolist()


def test_categorical_with_no_samples():
    assert fx.random.categorical(fx.zeros((4,)), num_samples=0).shape == (0,)
    assert fx.random.categorical(fx.zeros((2, 4)), num_samples=0).shape == (2, 0)


def test_half_addmm_accumulates_in_float32():
    a = fx.full((2, 100), 16, fx.float16)
    b = fx.full((100, 2), 8, fx.float16)
    out = fx.addmm(fx.zeros((2, 2), fx.float16), a, b, alpha=0.01)
    assert out.dtype == fx.float16 and out.tolist() == [[128.0, 128.0], [128.0, 128.0]]
    if mx is not None:
        ref = mx.addmm(mx.zeros((2, 2), mx.float16), mx.full((2, 100), 16, mx.float16), mx.full((100, 2), 8, mx.float16), alpha=0.01)
        assert out.tolist() == ref.tolist()


def test_adafactor_keeps_half_parameters_and_has_mlx_helpers():
    from ferrox import optimizers as opt

    for shape in [(5, 5), (5,)]:
        x = fx.zeros(shape, fx.float16)
        o = opt.Adafactor()
        for _ in range(2):
            xp = o.apply_gradients({"x": fx.ones_like(x)}, {"x": x})
            assert xp["x"].dtype == fx.float16 and xp["x"].shape == shape
    o = opt.Adafactor()
    v = fx.array([3.0, 4.0])
    assert o._compute_rms(v).item() == pytest.approx((12.5) ** 0.5)
    lr = o._compute_learning_rate(fx.array(4.0), fx.array(2.0))
    assert lr.item() == pytest.approx(2.0 * 1e-2)
    r, c = fx.array([[1.0, 4.0]]), fx.array([[1.0, 4.0, 16.0]])
    approx = o._approximate_exp_moving_avg(r, c)
    assert approx.shape == (1, 2, 3)


# --------------------------------------------------------------------------
# J, K. Memory
# --------------------------------------------------------------------------


def test_reset_peak_memory_sets_zero():
    keep = fx.ones((1024,)) + 1
    fx.eval(keep)
    fx.reset_peak_memory()
    assert fx.get_peak_memory() == 0
    more = fx.ones((4096,)) + 1
    fx.eval(more)
    assert fx.get_peak_memory() >= more.nbytes


def test_memory_limit_is_a_guideline():
    old = fx.set_memory_limit(1000)
    try:
        x = fx.arange(10_000) * 2
        fx.eval(x)
        assert x[-1].item() == 19_998
    finally:
        assert fx.set_memory_limit(old) == 1000
    # The limit was restored: later work is unaffected.
    assert (fx.ones((100_000,)) + 1).sum().item() == 200_000


def test_a_new_stream_belongs_to_its_thread():
    # As MLX's: another thread using it raises RuntimeError; thread-local
    # and thread-unsafe streams serve every thread.
    s = fx.new_stream(fx.cpu)
    assert (fx.arange(3, stream=s) * 2).tolist() == [0, 2, 4]
    local, shared = fx.new_thread_local_stream(fx.cpu), fx.new_thread_unsafe_stream(fx.cpu)
    outcome = {}

    def work():
        with pytest.raises(RuntimeError, match="new_thread_local_stream"):
            with fx.stream(s):
                fx.eval(fx.arange(3) * 2)
        with fx.stream(local):
            outcome["local"] = (fx.arange(3) * 2).tolist()
        outcome["shared"] = (fx.arange(3, stream=shared) * 2).tolist()
        fx.clear_streams()

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert outcome == {"local": [0, 2, 4], "shared": [0, 2, 4]}


def test_shapeless_compile_derives_like_shapes_and_mean_counts():
    zeros = fx.compile(lambda x: fx.zeros_like(x), shapeless=True)
    full = fx.compile(lambda x: fx.full_like(x, 3.0, dtype=fx.float16), shapeless=True)
    mean = fx.compile(lambda x: fx.mean(x, keepdims=True), shapeless=True)
    for shape in [(1, 1, 32), (2, 2, 16), (3, 5, 7)]:
        x = fx.ones(shape) * 2
        assert zeros(x).shape == shape and zeros(x).dtype == fx.float32
        f = full(x)
        assert f.shape == shape and f.dtype == fx.float16 and f[0, 0, 0].item() == 3.0
        m = mean(fx.arange(int(np.prod(shape)), dtype=fx.float32).reshape(shape))
        assert m.shape == (1, 1, 1) and m.item() == pytest.approx((np.prod(shape) - 1) / 2)


def test_compile_refuses_arguments_read_through_a_closure():
    # MLX raises when the traced graph reaches an argument itself (not its
    # stand-in): the closure's value would be baked into the trace.
    x = fx.array([1, 2, 3]) + 2

    def fn(a):
        return a + (x + 1)

    with pytest.raises(ValueError, match="uncaptured inputs"):
        fx.compile(fn)(x)
    fx.eval(x)
    with pytest.raises(ValueError, match="uncaptured inputs"):
        fx.compile(fn)(x)
    # Another array, or the argument used as a parameter, is fine.
    assert fx.compile(fn)(fx.array([0, 0, 0])).tolist() == [4, 5, 6]
    assert fx.compile(lambda a: a * 2)(x).tolist() == [6, 8, 10]
    if mx is not None:
        mxx = mx.array([1, 2, 3]) + 2
        with pytest.raises(ValueError):
            mx.compile(lambda a: a + (mxx + 1))(mxx)

    # Inside another transform the arguments are its tracers, which a
    # closure may share (MLX's test_vmap_compiled).
    def outer(x):
        x = fx.abs(x)

        @fx.compile
        def inner(z):
            return -fx.exp(x)

        return inner(x)

    v = fx.array([[1.0, -3.0], [0.5, -0.5]])
    assert np.allclose(np.array(fx.vmap(outer)(v)), -np.exp(np.abs(np.array(v))))


def test_shapeless_compile_rederives_reshapes():
    # MLX keeps reshape's -1 (and squeezes, expansions, flattens follow the
    # input), so a shapeless function replays on other shapes.
    cases = [
        (lambda x: x.reshape(x.shape[0] * x.shape[1], -1), [(2, 3, 4), (2, 3, 8)]),
        (lambda x: fx.flatten(x, 1, 2) * 2, [(2, 3, 4), (5, 1, 2)]),
        (lambda x: fx.expand_dims(x, (0, 2)) + 1, [(2, 3), (4, 1)]),
        (lambda x: fx.squeeze(x, 1) - 1, [(2, 1, 3), (5, 1, 1)]),
        (lambda x: fx.sum(x, axis=0) + fx.max(x, axis=(1, 2)).sum(), [(2, 3, 4), (3, 1, 2)]),
        (lambda x: fx.argmax(x, axis=1) + fx.argmin(x), [(2, 3), (4, 5)]),
    ]
    rng = np.random.default_rng(0)
    for fun, shapes in cases:
        cfun = fx.compile(fun, shapeless=True)
        for shape in shapes:
            x = fx.array(rng.standard_normal(shape).astype(np.float32))
            got, want = cfun(x), fun(x)
            assert got.shape == want.shape and np.allclose(np.array(got), np.array(want))
    # A size that the recorded known extent does not divide raises (MLX: ValueError).
    cfun = fx.compile(cases[0][0], shapeless=True)
    cfun(fx.zeros((2, 3, 4)))
    with pytest.raises(ValueError):
        cfun(fx.zeros((5, 5, 5)))


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "min", "max", "all", "any", "argmin", "argmax"])
def test_shapeless_compile_reduces_after_a_gather(name):
    # Traced with one gathered element (an extent-1 reduction), replayed with more.
    reduction = getattr(fx, name)
    buf = fx.array([10.0, 20.0, 30.0, 40.0, 50.0])

    def fun(buf, idx):
        return reduction(fx.take(buf, idx, axis=0))

    cfun = fx.compile(fun, shapeless=True)
    for n in [1, 2, 3, 4]:
        idx = fx.arange(n)
        assert fx.array_equal(cfun(buf, idx), fun(buf, idx)), n


def test_shapeless_compile_slice_update():
    def fun(x):
        x[2] = fx.array([3.0])
        return x

    cfun = fx.compile(fun, shapeless=True)
    for n in [4, 5, 7]:
        a = fx.arange(n, dtype=fx.float32)
        assert cfun(a).tolist() == fun(fx.arange(n, dtype=fx.float32)).tolist()
    with pytest.raises(ValueError):
        cfun(fx.arange(2, dtype=fx.float32))  # the recorded window leaves the array


def test_shapeless_compile_broadcasts_against_the_inputs():
    # broadcast_arrays follows its inputs; broadcast_to keeps its fixed shape.
    cfun = fx.compile(lambda a, b: fx.broadcast_arrays(a, b), shapeless=True)
    for a, b in [(fx.zeros((1, 3)), fx.ones((2, 1))), (fx.zeros((1, 5)), fx.ones((4, 1)))]:
        got = cfun(a, b)
        assert [g.shape for g in got] == [(b.shape[0], a.shape[1])] * 2
    fixed = fx.compile(lambda a: fx.broadcast_to(a, (2, 2)), shapeless=True)
    fixed(fx.array(0.0))
    with pytest.raises(ValueError):
        fixed(fx.array(0.0).reshape(1, 1, 1))


def test_shapeless_compile_batched_matmul_and_its_gradient():
    cfun = fx.compile(lambda a, b: a @ b, shapeless=True)
    assert cfun(fx.zeros((2, 1, 4, 2)), fx.zeros((3, 2, 5))).shape == (2, 3, 4, 5)

    def fun(args):
        return (args[0] @ args[1]).sum()

    grad = fx.compile(fx.grad(fun), shapeless=True)
    rng = np.random.default_rng(0)
    for sa, sb in [((2, 1, 4, 2), (3, 2, 5)), ((3, 1, 4, 2), (2, 2, 5))]:
        a = fx.array(rng.standard_normal(sa).astype(np.float32))
        b = fx.array(rng.standard_normal(sb).astype(np.float32))
        got, want = grad((a, b)), fx.grad(fun)((a, b))
        assert [g.shape for g in got] == [sa, sb]
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("quantized", [False, True])
def test_shapeless_compile_gather_mm_follows_the_rows(quantized):
    k, n, experts = 64, 32, 4
    idx = fx.array([0, 1, 2, 3])
    w = fx.random.normal((experts, n, k), key=fx.random.key(1))
    if quantized:
        qw, s, b = fx.quantize(w)
        fn = lambda x: fx.gather_qmm(x, qw, s, b, lhs_indices=idx, rhs_indices=idx, transpose=True)  # noqa: E731
    else:
        fn = lambda x: fx.gather_mm(x, fx.swapaxes(w, 1, 2), lhs_indices=idx, rhs_indices=idx)  # noqa: E731
    cfn = fx.compile(fn, shapeless=True)
    for rows in [4, 8]:
        x = fx.random.normal((experts, rows, k), key=fx.random.key(rows))
        got, want = cfn(x), fn(x)
        assert got.shape == want.shape == (experts, rows, n)
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-4, atol=1e-4)


def test_shapeless_compile_of_a_batched_product():
    # vmap's rank alignment inserts axes by position, so the compiled
    # batched function replays on other batch extents.
    calls = [0]

    def fn(x, y):
        calls[0] += 1
        return fx.matmul(x, y)

    vfn = fx.vmap(fn, in_axes=(0, 1))
    cfn = fx.compile(vfn, shapeless=True)
    key = fx.random.key(3)
    shapes = [((2, 3, 1, 4, 5), (1, 2, 5, 6)), ((3, 2, 1, 4, 5), (2, 3, 5, 6))]
    for sx, sy in shapes:
        kx, ky, key = fx.random.split(key, 3)
        x, y = fx.random.normal(sx, key=kx), fx.random.normal(sy, key=ky)
        np.testing.assert_allclose(np.array(cfn(x, y)), np.array(vfn(x, y)), rtol=1e-5, atol=1e-5)
    assert calls[0] == 1 + len(shapes)  # one trace, plus the eager calls
