"""export_function / exporter / import_function / export_to_dot, as MLX's
(cases of MLX's python/tests/test_export_import.py and its export guide),
over every primitive that can be exported, and against corrupt files."""

import json
import os
import struct

import numpy as np
import pytest

import ferrox as fx
import ferrox.nn as nn
from conftest import fxd, to_fx
from opinfo import OPS, samples


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "fn.fxfn")


def same(a, b):
    """Bitwise-equal values (NaNs included), shapes and dtypes."""
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    return bool(fx.array_equal(a, b, equal_nan=a.dtype in (fx.float16, fx.bfloat16, fx.float32, fx.float64)))


# ---- MLX's basic cases ----


def test_function_without_inputs(path):
    fx.export_function(path, lambda: fx.zeros((3, 3)))
    (out,) = fx.import_function(path)()
    assert same(out, fx.zeros((3, 3)))


def test_inputs_as_arrays_list_or_tuple(path):
    x = fx.array([1.0, 2.0, 3.0, 4.0, 5.0])
    expected = fx.abs(fx.sin(x))
    fx.export_function(path, lambda x: fx.abs(fx.sin(x)), x)
    imported = fx.import_function(path)
    assert fx.allclose(imported(x)[0], expected)
    for form in ([x], (x,)):
        fx.export_function(path, lambda x: fx.abs(fx.sin(x)), form)
        imported = fx.import_function(path)
        assert fx.allclose(imported(form)[0], expected)
        assert fx.allclose(imported(x)[0], expected)


@pytest.mark.parametrize("wrap", [lambda y: [y], lambda y: (y,), lambda y: y])
def test_outputs_always_come_back_as_a_tuple(path, wrap):
    x = fx.array([1.0, -2.0])
    fx.export_function(path, lambda x: wrap(fx.abs(x)), x)
    out = fx.import_function(path)(x)
    assert isinstance(out, tuple) and len(out) == 1 and same(out[0], fx.abs(x))


def test_invalid_inputs_and_outputs_raise_value_error(path):
    with pytest.raises(ValueError):
        fx.export_function(path, fx.abs, "hi")
    with pytest.raises(ValueError):
        fx.export_function(path, fx.abs, fx.array(1.0), "hi")
    with pytest.raises(ValueError):
        fx.export_function(path, lambda x: fx.abs(x[0][0]), [[fx.array(1.0)]])
    with pytest.raises(ValueError):
        fx.export_function(path, lambda: (fx.zeros((3, 3)), 1))
    with pytest.raises(ValueError):
        fx.export_function(path, lambda: (fx.zeros((3, 3)), [fx.zeros((3, 3))]))


def test_calls_must_match_a_trace(path):
    fx.export_function(path, lambda x, y: x + y, fx.array(1.0), fx.array(1.0))
    imported = fx.import_function(path)
    assert imported(fx.array(1.0), fx.array(2.0))[0].item() == 3.0
    for bad in [
        (fx.array(1), fx.array(3.0)),  # dtype
        (fx.array([1.0, 2.0]), fx.array(3.0)),  # shape
        (fx.array(1.0), 1.0),  # not an array
        (fx.array(1.0), fx.array(1.0), fx.array(1.0)),  # count
        (fx.array(1.0), [fx.array(1.0)]),
    ]:
        with pytest.raises(ValueError):
            imported(*bad)


def test_keyword_arguments(path):
    def fun(x, z=None):
        return x + z if z is not None else x

    x, y, z = fx.array([1, 2, 3]), fx.array([1, 1, 0]), fx.array([2, 2, 2])
    fx.export_function(path, fun, (x,), {"z": z})
    imported = fx.import_function(path)
    for bad in [lambda: imported(x, z), lambda: imported(x, y=z), lambda: imported((x,), {"y": z})]:
        with pytest.raises(ValueError):
            bad()
    assert imported(x, z=z)[0].tolist() == [3, 4, 5]
    assert imported((x,), {"z": z})[0].tolist() == [3, 4, 5]

    fx.export_function(path, fun, x=x, z=z)
    imported = fx.import_function(path)
    with pytest.raises(ValueError):
        imported(x, z=z)
    assert imported(x=x, z=z)[0].tolist() == [3, 4, 5]
    assert imported({"x": x, "z": z})[0].tolist() == [3, 4, 5]


def test_keyword_order_does_not_matter(path):
    fx.export_function(path, lambda x, y: x - y, x=fx.array(1.0), y=fx.array(1.0))
    imported = fx.import_function(path)
    assert imported(x=fx.array(2.0), y=fx.array(3.0))[0].item() == -1.0
    assert imported(y=fx.array(2.0), x=fx.array(3.0))[0].item() == 1.0


def test_random_sample_is_reproduced(path):
    fx.random.seed(5)
    fx.export_function(path, lambda: fx.random.uniform(shape=(3,)))
    (out,) = fx.import_function(path)()
    fx.random.seed(5)
    assert same(out, fx.random.uniform(shape=(3,)))


def test_random_with_a_key_input(path):
    def fun(key):
        return fx.random.normal((4, 2), key=key), fx.random.randint(0, 10, (5,), key=key)

    key = fx.random.key(3)
    fx.export_function(path, fun, key)
    for k in (key, fx.random.key(11)):
        got = fx.import_function(path)(k)
        for a, b in zip(got, fun(k)):
            assert same(a, b)


# ---- exporter: several traces, shared constants, shapeless ----


def test_exporter_with_variable_inputs(path):
    def fun(x, y, z=None):
        out = x + y
        return out + z if z is not None else out

    with fx.exporter(path, fun) as exporter:
        exporter(fx.array([1, 2, 3]), fx.array([1, 1, 1]))
        exporter(fx.array([1, 2, 3]), fx.array([1, 1, 1]), z=fx.array([2]))
    with pytest.raises(RuntimeError):
        exporter(fx.array([1, 2, 3, 4]), fx.array([1, 1, 1, 1]))
    imported = fx.import_function(path)
    assert imported(fx.array([1, 2, 3]), fx.array([1, 1, 1]))[0].tolist() == [2, 3, 4]
    assert imported(fx.array([1, 2, 3]), fx.array([1, 1, 1]), z=fx.array([2]))[0].tolist() == [4, 5, 6]
    with pytest.raises(ValueError):
        imported(fx.array([1, 2, 3, 4]), fx.array([1, 1, 1, 1]))


def test_constants_are_stored_once(path):
    constant = fx.zeros((16, 2048))
    fx.eval(constant)

    def fun(*args):
        return constant + sum(args)

    with fx.exporter(path, fun) as exporter:
        for i in range(5):
            exporter(*[fx.array(1)] * i)
    assert os.path.getsize(path) < constant.nbytes + 8192
    imported = fx.import_function(path)
    for i in range(5):
        assert same(imported(*[fx.array(1)] * i)[0], fun(*[fx.array(1)] * i))


def test_same_signature_twice_is_refused(path):
    with fx.exporter(path, fx.abs) as exporter:
        exporter(fx.array([1.0]))
        with pytest.raises(ValueError, match="same signature"):
            exporter(fx.array([2.0]))


def test_multi_trace_constants(path):
    def fun(y):
        i = y.shape[0]
        x = fx.array(i)
        for j in range(10):
            x = x + fx.array(i + j)
        return x * y.sum()

    ys = [fx.array([1]), fx.array([1, 1]), fx.array([1, 1, 1])]
    with fx.exporter(path, fun) as exporter:
        for y in ys:
            exporter(y)
    imported = fx.import_function(path)
    for y in ys:
        assert imported(y)[0].item() == fun(y).item()


def test_shapeless_sum_of_arguments(path):
    with fx.exporter(path, lambda *args: sum(args), shapeless=True) as exporter:
        exporter(fx.array(1))
        exporter(fx.array(1), fx.array(2))
        exporter(fx.array(1), fx.array(2), fx.array(3))
    f = fx.import_function(path)
    assert f(fx.array(1))[0].item() == 1
    assert f(fx.array(1), fx.array(1))[0].item() == 2
    assert f(fx.array(1), fx.array(1), fx.array(1))[0].item() == 3
    with pytest.raises(ValueError):
        f(fx.array(10), fx.array([5, 10, 20]))  # a different number of dimensions


def test_shapeless_abs(path):
    fx.export_function(path, fx.abs, fx.array([0.0]), shapeless=True)
    f = fx.import_function(path)
    assert f(fx.array([-1.0]))[0].tolist() == [1.0]
    assert f(fx.array([-1.0, -2.0]))[0].tolist() == [1.0, 2.0]
    fx.export_function(path, fx.abs, fx.array([0.0]))
    with pytest.raises(ValueError):
        fx.import_function(path)(fx.array([-1.0, -2.0]))


@pytest.mark.parametrize("batch", [1, 2])
def test_shapeless_matmul_mid_and_batch_dims(path, batch):
    e, h = 32, 17
    w = fx.arange(e * h, dtype=fx.float32).reshape((e, h)) * (1.0 / (e * h))

    def fn(x):
        return fx.matmul(x, w)

    fx.export_function(path, fn, fx.zeros((batch, 10, e)), shapeless=True)
    imported = fx.import_function(path)
    for b, n in [(batch, 10), (batch, 50), (3, 7)]:
        x = fx.arange(b * n * e, dtype=fx.float32).reshape((b, n, e))
        (y,) = imported(x)
        assert y.shape == (b, n, h) and fx.allclose(y, fn(x))


def test_shapeless_export_of_a_fixed_shape_graph_fails_clearly(path):
    # A strided view fixes its shape: shapeless export names the primitive.
    with pytest.raises(ValueError, match="shapeless"):
        fx.export_function(path, lambda x: x[1:3], fx.zeros((4,)), shapeless=True)


def test_shapeless_reshape_checks_the_size_when_called(path):
    fx.export_function(path, lambda x: x.reshape(6), fx.zeros((2, 3)), shapeless=True)
    f = fx.import_function(path)
    assert f(fx.ones((3, 2)))[0].shape == (6,)
    with pytest.raises(ValueError):
        f(fx.ones((3, 3)))


# ---- transforms of imported functions ----


def test_grad_vmap_and_jvp_of_an_imported_function(path):
    fx.export_function(path, fx.sin, fx.array(0.0))
    imported = fx.import_function(path)
    assert fx.grad(lambda x: imported(x)[0])(fx.array(0.0)).item() == 1.0
    fx.export_function(path, lambda x: fx.sin(x) * x, fx.array([0.0, 0.0, 0.0]))
    imported = fx.import_function(path)
    x = fx.array([0.5, 1.0, 2.0])
    g = fx.grad(lambda v: imported(v)[0].sum())(x)
    assert fx.allclose(g, fx.cos(x) * x + fx.sin(x))
    xs = fx.array([[0.5, 1.0, 2.0], [1.0, 2.0, 3.0]])
    assert fx.allclose(fx.vmap(lambda v: imported(v)[0])(xs), fx.sin(xs) * xs)
    _, (t,) = fx.jvp(lambda v: imported(v)[0], [x], [fx.ones((3,))])
    assert fx.allclose(t, fx.cos(x) * x + fx.sin(x))


def test_exporting_a_gradient(path):
    fun = fx.grad(lambda x: (fx.exp(x) * x).sum())
    x = fx.array([0.1, 0.2, -0.3])
    fx.export_function(path, fun, x)
    assert fx.allclose(fx.import_function(path)(x)[0], fun(x))


# ---- every exportable primitive, every elementwise op and dtype ----

SHAPE = (2, 3)


@pytest.mark.parametrize("op", OPS, ids=str)
def test_every_elementwise_op_and_dtype_round_trips(op, path, rng):
    fun = getattr(fx, op.name)
    for d in op.dtypes:
        args = [to_fx(samples(rng, SHAPE, d, op.domain, i), d) for i in range(op.arity)]
        fx.export_function(path, fun, *args)
        (got,) = fx.import_function(path)(*args)
        assert same(got, fun(*args)), (op.name, d)


def _structural_cases():
    x = fx.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5)
    idx = fx.array([2, 0, 1, 2])
    return [
        ("where", lambda a: fx.where(a > 0, a, -a), [x]),
        ("astype", lambda a: a.astype(fx.int16), [x]),
        ("concatenate", lambda a: fx.concatenate([a, a * 2], axis=1), [x]),
        ("take", lambda a, i: fx.take(a, i, axis=2), [x, idx]),
        ("take_along_axis", lambda a: fx.take_along_axis(a, fx.argsort(a, axis=1), axis=1), [x]),
        ("at_add", lambda a, i: a.at[i].add(1.0), [fx.zeros((3, 4)), idx]),
        ("scatter_max", lambda a, i: a.at[i].maximum(fx.ones((4, 4))), [fx.zeros((3, 4)), idx]),
        ("setitem", lambda a: _setitem(a), [x]),
        ("matmul", lambda a: a @ fx.swapaxes(a, 1, 2), [x]),
        ("addmm", lambda a, c: fx.addmm(c, a, fx.swapaxes(a[0], 0, 1)), [x, fx.array([1.0, 2.0, 3.0])]),
        ("softmax_logsumexp", lambda a: (fx.softmax(a, axis=-1), fx.logsumexp(a, axis=-1)), [x]),
        ("sum_max_argmax", lambda a: (a.sum(axis=(0, 2)), a.max(axis=1, keepdims=True), a.argmax(axis=-1)), [x]),
        ("scans", lambda a: (fx.cumsum(a, axis=1, reverse=True), fx.cumprod(a, axis=2, inclusive=False)), [x]),
        ("sorts", lambda a: (fx.sort(a, axis=1), fx.argsort(a), fx.partition(a, 1, axis=2), fx.argpartition(a, 2)),
         [x]),
        ("searchsorted", fx.searchsorted, [fx.array([1.0, 2.0, 4.0]), fx.array([[0.5, 3.0], [4.0, 9.0]])]),
        ("views", lambda a: (a.T, a[:, ::-2, 1:], a.reshape(6, 4), fx.broadcast_to(a[:1], (5, 3, 4))), [x]),
        ("view_dtype", lambda a: a.view(fx.uint8), [x]),
        ("as_strided", lambda a: fx.as_strided(a, (3, 3), (1, 1), 2), [x]),
        ("stop_gradient", lambda a: fx.stop_gradient(a) + 1, [x]),
        ("contiguous", lambda a: fx.contiguous(a.T), [x]),
        ("depends", lambda a: fx.depends([a + 1], [a * 2])[0], [x]),
        ("conv2d", lambda a, w: fx.conv2d(a, w, padding=1), [fx.ones((1, 5, 5, 2)), fx.ones((3, 3, 3, 2))]),
        ("compiled", fx.compile(lambda a: (fx.exp(a) * 2 + (a > 0), a < 1)), [x]),
        ("compiled_reduction", fx.compile(lambda a: fx.sum(fx.exp(a) * a, axis=-1)), [x]),
        ("random", lambda k: fx.random.normal((3,), key=k), [fx.random.key(0)]),
        ("optimizer_update", lambda p, g: tuple(_adam_step(p, g)), [x, x * 0.5]),
        ("vjp", lambda a: fx.vjp(lambda v: [fx.sin(v)], [a], [fx.ones_like(a)])[1][0], [x]),
        ("fast", _fast_ops, [x, fx.array([1.0, 2.0, 3.0, 4.0])]),
        ("fast_vjps", lambda a, w: tuple(fx.vjp(_fast_ops, [a, w], list(_fast_ops(a, w)))[1]),
         [x, fx.array([1.0, 2.0, 3.0, 4.0])]),
        ("cross_entropy", _cross_entropy, [x]),
        ("broadcast_arrays", lambda a, b: fx.broadcast_arrays(a, b), [x[:, :1], fx.ones((4,))]),
        ("mxfp4_matmul", _mxfp4_matmul, [fx.ones((2, 32))]),
        ("fft", lambda a: (fx.fft.fft(a), fx.fft.rfft2(a, norm="ortho"), fx.fft.irfft(fx.fft.fft(a), n=5)), [x]),
        ("linalg", _linalg_ops, [x]),
    ]


def _linalg_ops(a):
    """The Linalg primitive's routines (inverse, solves, factorizations) and
    lu_solve's PivotPermutation."""
    m = a[:, :, :3] + 20 * fx.eye(3)
    s = m @ fx.swapaxes(m, -1, -2)
    return (fx.linalg.inv(m), fx.linalg.solve(m, a), fx.linalg.solve_triangular(m, a, upper=True),
            *fx.linalg.qr(a), *fx.linalg.svd(a), *fx.linalg.eigh(s), fx.linalg.cholesky(s), *fx.linalg.lu_factor(a),
            fx.linalg.lu_solve(*fx.linalg.lu_factor(m), a))


def _mxfp4_matmul(x):
    """An fp-mode quantized product (its scales guarded by RefuseGradient)."""
    w, s = fx.quantize(fx.arange(64, dtype=fx.float32).reshape(2, 32) / 64, mode="mxfp4")
    return fx.quantized_matmul(x, w, s, mode="mxfp4")


def _cross_entropy(a):
    """The fused cross entropy and its vjp (CrossEntropy, CrossEntropyVJP)."""
    t = fx.array([[0, 1, 2], [3, -1, 0]])
    loss = lambda v: nn.losses.cross_entropy(v, t, label_smoothing=0.1, reduction="sum")  # noqa: E731
    return fx.value_and_grad(loss)(a)


def _fast_ops(a, w):
    """Every fast primitive (normalizations, rotary embedding, attention)."""
    q = a.reshape(1, 2, 3, 4)
    return (
        fx.fast.rms_norm(a, w, 1e-5),
        fx.fast.layer_norm(a, w, w, 1e-5),
        fx.fast.rope(a, 4, traditional=False, base=1e4, scale=1.0, offset=1),
        fx.fast.scaled_dot_product_attention(q, q, q, scale=0.5, mask="causal"),
    )


def _adam_step(p, g):
    """One fused AdamW step (the OptimizerUpdate primitive, three outputs)."""
    zeros = fx.zeros_like(p)
    return fx._core._optimizers.adam_update(p, g, [zeros, zeros], fx.array(0.1), fx.array(1.0), beta1=0.9,
                                            beta2=0.999, eps=1e-8, weight_decay=0.01, bias_correction=True)


def _setitem(a):
    a = a * 1
    a[0, 1:] = 5.0
    return a


@pytest.mark.parametrize("case", _structural_cases(), ids=lambda c: c[0])
def test_structural_ops_round_trip(case, path):
    _, fun, args = case
    fx.export_function(path, fun, *args)
    got = fx.import_function(path)(*args)
    want = fun(*args)
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert same(g, w)


def test_every_primitive_with_inputs_is_covered(path):
    seen = set()

    def record(event):
        if event["type"] == "primitive":
            seen.add(event["name"])

    for _, fun, args in _structural_cases():
        fx.export_function(record, fun, *args)
    fx.export_function(record, lambda a: fx.vjp(fx.sin, [a], [a])[1][0], fx.array([1.0]))
    metal = fx.fast.metal_kernel(name="k", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
    fx.export_function(record, lambda a: metal(inputs=[a], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                                               output_shapes=[(1,)], output_dtypes=[fx.float32]), fx.array([1.0]))
    # Primitives without inputs (creation) are stored as constants.
    expected = set(fx._core._primitive_tags()) - {"Unary", "Binary", "Full", "Arange", "Eye"}
    assert expected <= seen, expected - seen


# ---- callback, metadata, dot ----


def test_export_with_callback(path):
    events = []
    fun = lambda x, y: fx.log(fx.abs(x - y)).astype(fx.int32)  # noqa: E731
    fx.export_function(events.append, fun, fx.array(1.0), y=fx.array(1.0))
    by_type = {}
    for e in events:
        by_type.setdefault(e["type"], []).append(e)
    assert len(by_type["inputs"][0]["inputs"]) == 2
    assert len(by_type["outputs"][0]["outputs"]) == 1
    assert len(by_type["constants"][0]["constants"]) == 0
    assert [k for k, _ in by_type["keyword_inputs"][0]["keywords"]] == ["y"]
    prims = by_type["primitive"]
    assert [p["name"] for p in prims] == ["Subtract", "Abs", "Log", "AsType"]
    # As MLX: the Log primitive carries its base (2: e), AsType its dtype.
    assert [p["arguments"] for p in prims] == [[], [], [2], [fx.int32]]
    events.clear()
    fx.export_function(events.append, lambda x: (fx.log2(x), fx.log10(x)), fx.array(1.0))
    assert [e["arguments"] for e in events if e["type"] == "primitive"] == [[0], [1]]
    with pytest.raises(ValueError, match="metadata"):
        fx.export_function(events.append, fx.abs, fx.array(1.0), metadata="x")


def test_metadata(path):
    metadata = json.dumps({"name": "model", "params": 7_000_000_000, "lr": 0.1})
    x = fx.array([1.0, -2.0, 3.0])
    fx.export_function(path, fx.abs, x, metadata=metadata)
    imported, got = fx.import_function(path, return_metadata=True)
    assert got == metadata and same(imported(x)[0], fx.abs(x))
    fx.export_function(path, fx.abs, x)
    assert fx.import_function(path, return_metadata=True)[1] == ""


def test_export_to_dot(tmp_path):
    import io

    x, y = fx.array(1), fx.array(2)
    out = io.StringIO()
    fx.export_to_dot(out, x + y, x=x, y=y)
    text = out.getvalue()
    assert text.startswith("digraph {") and text.rstrip().endswith("}")
    assert 'label="x' in text and 'label="y' in text and 'label="add"' in text
    fx.export_to_dot(str(tmp_path / "g.dot"), fx.sin(x) * y)
    assert "multiply" in (tmp_path / "g.dot").read_text()
    with pytest.raises(ValueError):
        fx.export_to_dot(3, x)
    with pytest.raises(ValueError, match="only arrays"):
        fx.export_to_dot(out, [x, 1])
    deep = [x]
    for _ in range(5000):
        deep = [deep]
    fx.export_to_dot(io.StringIO(), deep)  # no recursion limit


# ---- what cannot be exported ----


def test_evaluating_a_traced_input_is_an_error(path):
    with pytest.raises(ValueError, match="traced"):
        fx.export_function(path, lambda x: x * x.item(), fx.array(2.0))


def test_custom_functions_cannot_be_exported(path):
    @fx.custom_function
    def f(x):
        return x * 2

    with pytest.raises(ValueError, match="cannot be exported"):
        fx.export_function(path, f, fx.array(1.0))


def test_exceptions_in_the_function_propagate(path):
    def fun(x):
        raise KeyError("boom")

    with pytest.raises(KeyError):
        fx.export_function(path, fun, fx.array(1.0))


# ---- corrupt files ----


def _parts(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[12:20])
    return data, json.loads(data[20 : 20 + n]), 20 + n


def _rewrite(path, header, tail):
    body = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(b"FERROXFN" + struct.pack("<I", 1) + struct.pack("<Q", len(body)) + body + tail)


def _padded_tail(data, end):
    return data[end:]


@pytest.fixture
def exported(path):
    w = fx.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    fx.export_function(path, lambda x: (x @ w)[:, 1:3].reshape(-1), fx.ones((2, 3)))
    return path


def test_file_format_round_trips_by_hand(exported):
    data, header, end = _parts(exported)
    assert header["shapeless"] is False and len(header["traces"]) == 1
    _rewrite(exported, header, data[end:])
    (out,) = fx.import_function(exported)(fx.ones((2, 3)))
    assert out.shape == (4,)


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d[:10],
        lambda d: d[: len(d) // 2],
        lambda d: b"NOTAFILE" + d[8:],
        lambda d: d[:8] + struct.pack("<I", 99) + d[12:],
        lambda d: d[:12] + struct.pack("<Q", 2**62) + d[20:],
        lambda d: d[:20] + b"[" + d[21:],
        lambda d: b"",
    ],
    ids=["truncated_preamble", "truncated_half", "magic", "version", "header_length", "json", "empty"],
)
def test_damaged_files_raise_value_error(exported, damage):
    data = open(exported, "rb").read()
    with open(exported, "wb") as f:
        f.write(damage(data))
    with pytest.raises(ValueError):
        fx.import_function(exported)


def _lie(exported, edit):
    data, header, end = _parts(exported)
    edit(header)
    _rewrite(exported, header, data[end:])
    with pytest.raises(ValueError):
        fx.import_function(exported)


def _nodes(h):
    return h["traces"][0]["nodes"]


def _node(h, tag):
    return next(n for n in _nodes(h) if n["primitive"] == tag)


LIES = {
    "unknown_primitive": lambda h: _nodes(h)[0].update(primitive="Teleport"),
    "bad_params": lambda h: _node(h, "Reshape").update(params={"shape": "x"}),
    "reshape_size": lambda h: _node(h, "Reshape").update(params={"shape": [5]}),
    "slice_out_of_range": lambda h: _node(h, "Slice").update(params={"start": [0, 3], "len": [2, 3], "step": [1, 1]}),
    "zero_step": lambda h: _node(h, "Slice")["params"].update(step=[0, 1]),
    "forward_reference": lambda h: _nodes(h)[0].update(inputs=[{"node": [5, 0]}, {"input": 0}]),
    "missing_input": lambda h: _nodes(h)[0].update(inputs=[{"input": 7}, {"constant": 0}]),
    "missing_constant": lambda h: _nodes(h)[0].update(inputs=[{"input": 0}, {"constant": 9}]),
    "wrong_arity": lambda h: _nodes(h)[0].update(inputs=[{"input": 0}]),
    "recorded_shape": lambda h: _nodes(h)[0]["outputs"][0].update(shape=[7, 7]),
    "constant_past_end": lambda h: h["constants"][0].update(offset=2**40),
    "constant_huge_shape": lambda h: h["constants"][0].update(shape=[2**40, 2**40]),
    "unknown_dtype": lambda h: h["constants"][0].update(dtype="float128"),
    "output_reference": lambda h: h["traces"][0].update(outputs=[{"node": [99, 0]}]),
    "huge_argument": lambda h: h["traces"][0]["args"][0].update(shape=[2**62, 4]),
}


@pytest.mark.parametrize("lie", LIES, ids=str)
def test_lying_headers_raise_value_error(exported, lie):
    _lie(exported, LIES[lie])


def test_as_strided_outside_its_input_is_refused(path):
    fx.export_function(path, lambda x: fx.as_strided(x, (2,), (1,), 1), fx.zeros((3,)))
    _lie(path, lambda h: _node(h, "AsStrided")["params"].update(offset=100))


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        fx.import_function(str(tmp_path / "nope.fxfn"))


def test_export_to_dot_labels_compiled_nodes_by_their_parts():
    import io

    def fun(x, y, z):
        yy = fx.broadcast_to(y, z.shape)
        return x + yy * z, yy.sum()

    a, b, c = fx.ones((10, 10)), fx.array(0.1), fx.full((10, 10), 2.0)
    d = fx.compile(fun)(a, b, c)
    out = io.StringIO()
    fx.export_to_dot(out, a=a, b=b, c=c, d1=d[0], d2=d[1])
    assert "CompiledBroadcastMultiplyAdd" in out.getvalue()
    assert same(d[0], fun(a, b, c)[0]) and same(d[1], fun(a, b, c)[1])


def test_export_to_dot_walks_self_referencing_containers_once():
    import io

    d = {"x": fx.ones((2,))}
    d["self"] = d
    out = io.StringIO()
    fx.export_to_dot(out, d, [d["x"], d])
    assert "digraph" in out.getvalue()
