"""``compile``: the same results as the uncompiled function (the whole
elementwise op registry run through fused graphs, on every device), the
trace cache (hits, misses, retraces on new shapes, dtypes, structures and
constants), shapeless functions, captured state, composition with grad
and vmap, and errors."""

from functools import partial

import numpy as np
import pytest

import ferrox as fx
import ferrox.nn as nn
import ferrox.optimizers as optim
from conftest import to_fx, to_np
from opinfo import OPS, samples
from test_export import _structural_cases, same


def _same(a, b):
    """Equal values, NaNs in the same places, same dtype and shape."""
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(to_np(a), to_np(b))


def gelu(x):
    return x * (1 + fx.erf(x / np.sqrt(2).item())) / 2


REGISTRY_CASES = [(op, d) for op in OPS for d in op.dtypes]


@pytest.mark.parametrize("shape", [(5, 33), (9, 520)], ids=["blocks", "tiles"])
@pytest.mark.parametrize("op,dtype", REGISTRY_CASES, ids=[f"{o.name}-{d}" for o, d in REGISTRY_CASES])
def test_registry_ops_compiled_equal_uncompiled(op, dtype, shape, rng):
    """Each op reads its inputs through a `where` (an identity the fusion
    pass joins to the op), on a broadcast row, so the compiled graph is one
    fused node fed by broadcast inputs. The larger shape takes the CPU's
    tiled path (rows of full tiles and a short one), its first input a
    transposed view (gathered tile by tile)."""
    f = getattr(fx, op.name)
    nps = [samples(rng, shape, dtype, op.domain, arg=i) for i in range(op.arity)]
    xs = [to_fx(x, dtype) for x in nps]
    if shape[1] > 100 and xs:
        xs[0] = to_fx(np.ascontiguousarray(nps[0].T), dtype).T
    xs[-1] = xs[-1][:1]  # broadcast along the rows

    def chain(*args):
        keep = fx.ones(shape, fx.bool_)
        return f(*[fx.where(keep, a, a) for a in args])

    compiled = fx.compile(chain)
    _same(compiled(*xs), chain(*xs))
    plain, fused = compiled.graph(*xs, fused=False), compiled.graph(*xs)
    if len(plain) > 1:  # the op made a node (`real` of a real array does not)
        assert len(fused) == 1 and fused[0].startswith("Compiled["), (plain, fused)


@pytest.mark.parametrize("case", _structural_cases(), ids=lambda c: c[0])
def test_structural_ops_compiled_equal_uncompiled(case):
    """Every primitive kind (gathers, scatters, scans, sorts, views,
    convolutions, random bits, optimizer steps, fast ops and their vjps)
    through compile, against the same function run op by op."""
    _, fun, args = case
    got, want = fx.compile(fun)(*args), fun(*args)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert same(g, w)


@pytest.fixture
def replay_always():
    """Every compiled call with fixed shapes runs as one recorded graph (a
    CUDA graph on the GPU, op by op on the CPU)."""
    old = fx._core._set_graph_replay("always")
    yield
    fx._core._set_graph_replay(old)


def _check_replays(compiled, fun, args, device):
    """Three calls (op by op, capture, replay) equal the uncompiled
    function; on the GPU the graph was captured and replayed, or refused
    (returned so the caller can say which functions may be)."""
    want = fun(*args)
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    for _ in range(3):
        got = compiled(*args)
        got = list(got) if isinstance(got, (list, tuple)) else [got]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert same(g, w)
    captured, refused, launches = compiled.graph_info()
    if device == "gpu":
        why = compiled._core.graph_refusals()
        assert (captured, launches) == (1, 2) or refused == 1, (captured, refused, launches, why)
    else:
        assert (captured, refused, launches) == (0, 0, 0)
    return refused == 1


@pytest.mark.parametrize("op,dtype", REGISTRY_CASES, ids=[f"{o.name}-{d}" for o, d in REGISTRY_CASES])
def test_registry_ops_replay_as_graphs(op, dtype, rng, device, replay_always):
    """Each op on reversed (strided) inputs, then a reduction of its
    result: one recorded graph of two kernels or more, three calls."""
    f = getattr(fx, op.name)
    shape = (5, 33)
    xs = [to_fx(samples(rng, shape, dtype, op.domain, arg=i), dtype) for i in range(op.arity)]

    def chain(*args):
        y = f(*[a[::-1] for a in args])
        return y, y.sum(axis=0)

    compiled = fx.compile(chain)
    assert not _check_replays(compiled, chain, xs, device), compiled._core.graph_refusals()


# Structural cases whose graphs may not capture into a CUDA graph: the
# factorizations read back what cuSOLVER reports (a singular or indefinite
# matrix) to raise it, as PyTorch's do, and lu_solve replays its pivots on
# the host; their compiled graphs run op by op.
MAY_REFUSE = {"linalg"}


@pytest.mark.parametrize("case", _structural_cases(), ids=lambda c: c[0])
def test_structural_ops_replay_as_graphs(case, device, replay_always):
    """Gathers, scatters, scans, sorts, views, convolutions, random bits,
    optimizer steps and fast ops captured into one graph and replayed."""
    name, fun, args = case
    compiled = fx.compile(fun)
    refused = _check_replays(compiled, fun, args, device)
    assert not refused or name in MAY_REFUSE, (name, compiled._core.graph_refusals())


def test_small_kernel_chains_replay_by_default(rng, device):
    """Under the default policy a chain of small kernels on the GPU is
    captured and replayed; new inputs of the same shapes give new results."""
    w = fx.array(rng.standard_normal((16, 16)).astype(np.float32) * 0.25)

    def chain(x, w):
        for i in range(8):
            x = x @ w
            x = fx.tanh(x) if i % 2 else x * 0.5
        return x, x.sum()

    c = fx.compile(chain)
    for _ in range(4):
        x = fx.array(rng.standard_normal((16, 16)).astype(np.float32))
        for got, want in zip(c(x, w), chain(x, w)):
            _same(got, want)
    captured, refused, launches = c.graph_info()
    assert (captured, refused, launches) == ((1, 0, 3) if device == "gpu" else (0, 0, 0))


def test_launch_bound_functions_of_megabyte_arrays_replay_by_default(rng, device):
    """The default policy also replays a function whose launches cost more
    than copying its inputs and outputs (here at least 6 kernels over 4 MiB
    arrays: a replayed training step moves its whole state in and out)."""

    def scans(x):
        for _ in range(6):
            x = fx.cumsum(x * 0.5, axis=1)
        return x

    c = fx.compile(scans)
    for _ in range(4):
        x = fx.array(rng.standard_normal((1024, 1024)).astype(np.float32))
        _same(c(x), scans(x))
    assert c.graph_info() == ((1, 0, 3) if device == "gpu" else (0, 0, 0))


def test_replayed_outputs_are_new_arrays(rng, device, replay_always):
    """An output held from one replay keeps its values after the next; an
    output that is an input, a view of one or a constant comes back right."""
    k = fx.array(np.arange(4, dtype=np.float32))

    def f(x):
        return x, x.reshape(2, 2), fx.exp(x) + k, k

    c = fx.compile(f)
    firsts = []
    for i in range(4):
        x = fx.array(np.full(4, float(i), dtype=np.float32))
        out = c(x)
        firsts.append(out[2])
        _same(out[0], x)
        _same(out[1], x.reshape(2, 2))
        _same(out[3], k)
    for i, first in enumerate(firsts):
        _same(first, fx.exp(fx.array(np.full(4, float(i), dtype=np.float32))) + k)


def test_graph_replay_policy_errors():
    with pytest.raises(ValueError, match="auto"):
        fx._core._set_graph_replay("sometimes")


def test_gelu_is_one_fused_node_bit_for_bit(rng):
    x = fx.array(rng.standard_normal((64, 257)).astype(np.float32))
    g = fx.compile(gelu)
    _same(g(x), gelu(x))
    assert g.graph(x, fused=False) == ["divide", "erf", "add", "multiply", "divide"]
    assert len(g.graph(x)) == 1


REDUCED_CHAINS = {
    "sum_of_squares": lambda x, b: fx.sum(x * x),
    "row_max": lambda x, b: fx.max(fx.exp(x) + b, axis=-1),
    "row_mean_keepdims": lambda x, b: fx.mean(fx.abs(x - b), axis=-1, keepdims=True),
    "prod_two_trailing_axes": lambda x, b: fx.prod(1 + 0.001 * x, axis=(1, 2)),
    "min_first_axis": lambda x, b: fx.min(x * 2, axis=0),
    "sum_broadcast_all": lambda x, b: fx.sum(x + b),
    "count_true": lambda x, b: fx.sum(x > b),
    "half_row_sum": lambda x, b: fx.sum(x.astype(fx.float16) * 3, axis=-1),
    "bf16_sum": lambda x, b: fx.sum((x * b).astype(fx.bfloat16)),
    "int_sum_rows": lambda x, b: fx.sum((x * 100).astype(fx.int8), axis=-1),
    "sum_middle_axis": lambda x, b: fx.sum(x * b, axis=1),
    "half_sum_first_axis": lambda x, b: fx.sum((x * 3).astype(fx.float16), axis=0),
    "max_leading_axes": lambda x, b: fx.max(x - b, axis=(0, 1)),
    "int_sum_first_axis": lambda x, b: fx.sum((x * 100).astype(fx.int16), axis=0),
}


@pytest.mark.parametrize("shape", [(3, 40, 700), (2, 3, 5), (3, 0, 4)], ids=str)
@pytest.mark.parametrize("name", list(REDUCED_CHAINS))
def test_chains_ending_in_a_reduction_match_eager_bit_for_bit(name, shape, rng):
    """A reduction that is the only reader of an elementwise chain fuses
    with it (trailing axes, or leading and middle ones followed by at least
    256 columns on the CPU) or runs after it (narrower columns, inputs whose
    reduced axes are not one strided run); either way the bits are eager's,
    on the parallel paths (3 x 40 x 700), the serial ones and empty rows."""
    f = REDUCED_CHAINS[name]
    if name in ("row_max", "min_first_axis", "max_leading_axes") and 0 in shape:
        return  # max/min of an empty axis is an error, compiled or not
    x = fx.array(rng.standard_normal(shape).astype(np.float32))
    b = fx.array(rng.standard_normal(shape[-1:]).astype(np.float32))
    c = fx.compile(f)
    _same(c(x, b), f(x, b))
    _same(c(x.T.T[::-1], b), f(x.T.T[::-1], b))  # a reversed view
    fused = c.graph(x, b)
    assert not any(n in ("sum", "prod", "max", "min") for n in fused), fused
    assert any(" over " in n for n in fused), fused


def test_fused_reduction_gradients_and_vmap(rng):
    def f(x, b):
        return fx.sum(fx.exp(x) * b, axis=-1)

    x = fx.array(rng.standard_normal((4, 6, 9)).astype(np.float32))
    b = fx.array(rng.standard_normal((9,)).astype(np.float32))
    c = fx.compile(f)
    _same(c(x, b), f(x, b))
    for got, want in zip(fx.grad(lambda x, b: c(x, b).sum(), argnums=(0, 1))(x, b),
                         fx.grad(lambda x, b: f(x, b).sum(), argnums=(0, 1))(x, b)):
        np.testing.assert_allclose(to_np(got), to_np(want), rtol=1e-6, atol=1e-6)
    _same(fx.vmap(c, in_axes=(1, None))(x, b), fx.vmap(f, in_axes=(1, None))(x, b))
    _, tangent = fx.jvp(lambda x: c(x, b), [x], [fx.ones_like(x)])
    _, want = fx.jvp(lambda x: f(x, b), [x], [fx.ones_like(x)])
    np.testing.assert_allclose(to_np(tangent[0]), to_np(want[0]), rtol=1e-6, atol=1e-6)


def test_a_reduction_of_a_value_read_elsewhere_is_not_fused(rng):
    def f(x):
        y = fx.exp(x)
        return fx.sum(y, axis=-1), y

    x = fx.array(rng.standard_normal((5, 7)).astype(np.float32))
    c = fx.compile(f)
    for got, want in zip(c(x), f(x)):
        _same(got, want)
    assert "sum" in c.graph(x)


def test_mixed_dtype_chains_with_casts(rng):
    def f(x, w):
        h = x.astype(fx.float32) * w
        return fx.where(h > 0, h, 0.1 * h).astype(fx.bfloat16), fx.isnan(h)

    x = fx.array(rng.standard_normal((8, 16)).astype(np.float32)).astype(fx.bfloat16)
    w = fx.array(rng.standard_normal((16,)).astype(np.float32))
    c = fx.compile(f)
    for got, want in zip(c(x, w), f(x, w)):
        _same(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape", [(3, 50, 700), (70001,), (2, 9, 4099)], ids=str)
def test_fused_outputs_written_in_place_and_through_step_buffers(dtype, shape, rng):
    """The CPU evaluator writes an output that no later step reads straight
    into the output, and the rest (outputs read by later steps, the same
    value returned twice, bool outputs) through its step buffers; over many
    blocks (parallel runs, a short last block), a transposed or broadcast
    input and a sliced one, every output is eager's bit for bit."""

    def f(x, y, b):
        a = x * y + b  # an output that later steps read
        s = fx.exp(-a * a)
        return a, s * 2, a > 0, s, fx.where(a > 0, s, a).astype(fx.float32), s

    x = fx.array(rng.standard_normal(shape).astype(dtype))
    y = fx.array(rng.standard_normal(shape[::-1]).astype(dtype)).T  # a transposed view
    b = fx.array(rng.standard_normal(shape[-1:]).astype(dtype))
    c = fx.compile(f)
    for args in [(x, y, b), (x[..., 1:-1], y[..., 2:], b[:-2])]:
        got, want = c(*args), f(*args)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    assert sum(n.startswith("Compiled[") for n in c.graph(x, y, b)) >= 2


def test_layouts_transposed_sliced_and_zero_dim(rng):
    base = fx.array(rng.standard_normal((6, 10)).astype(np.float32))
    c = fx.compile(lambda a, b: fx.exp(a) * b + 1)
    empty = fx.zeros((3, 0, 4))  # a zero extent between others
    for a, b in [(base.T, base.T), (base[::2, 1:], base[::2, 1:]), (base[0, 0], base[1, 1]), (base[:0], base[:0]),
                 (empty, empty)]:
        _same(c(a, b), fx.exp(a) * b + 1)


def test_cache_hits_misses_and_retraces(rng):
    calls = []

    def f(x, scale, opts):
        calls.append(1)
        return x * scale if opts["double"] else x + scale

    c = fx.compile(f)
    x = fx.array(rng.standard_normal((3, 4)).astype(np.float32))
    _same(c(x, 2.0, {"double": True}), x * 2.0)
    _same(c(x + 1, 2.0, {"double": True}), (x + 1) * 2.0)
    assert c.cache_info() == (1, 1, 1) and len(calls) == 1
    _same(c(x, 3.0, {"double": True}), x * 3.0)  # a new constant
    _same(c(x, 3.0, {"double": False}), x + 3.0)  # a new structure value
    _same(c(x.astype(fx.float16), 3.0, {"double": False}), x.astype(fx.float16) + 3.0)  # a new dtype
    _same(c(x[:2], 3.0, {"double": False}), x[:2] + 3.0)  # a new shape
    assert c.cache_info() == (1, 5, 5) and len(calls) == 5
    c.clear_cache()
    assert c.cache_info()[2] == 0


def test_shapeless(rng):
    c = fx.compile(lambda x, y: fx.exp(x) + y, shapeless=True)
    for n in (3, 8, 1):
        x = fx.array(rng.standard_normal((2, n)).astype(np.float32))
        y = fx.array(rng.standard_normal((n,)).astype(np.float32))
        _same(c(x, y), fx.exp(x) + y)
    assert c.cache_info()[:2] == (2, 1)
    with pytest.raises(ValueError, match="shapeless"):
        fx.compile(lambda x: x[1:], shapeless=True)(fx.zeros((2, 3)))
    # reshape's -1 is inferred again on each call (as MLX's); a fixed
    # target shape fits only inputs of its size.
    flat = fx.compile(lambda x: x.reshape(-1), shapeless=True)
    _same(flat(fx.ones((2, 3))), fx.ones((6,)))
    _same(flat(fx.ones((2, 4))), fx.ones((8,)))
    fixed = fx.compile(lambda x: x.reshape(6), shapeless=True)
    _same(fixed(fx.ones((2, 3))), fx.ones((6,)))
    with pytest.raises(ValueError, match="shapeless"):
        fixed(fx.zeros((2, 4)))


def test_trees_and_constant_outputs(rng):
    def f(d, pair):
        return {"s": d["a"] + pair[0], "t": (pair[1] * 2, None, "tag")}

    c = fx.compile(f)
    a, b, e = (fx.array(rng.standard_normal((4,)).astype(np.float32)) for _ in range(3))
    out = c({"a": a}, (b, e))
    _same(out["s"], a + b)
    _same(out["t"][0], e * 2)
    assert out["t"][1:] == (None, "tag")


def test_grad_of_compiled_and_compiled_grad(rng):
    x = fx.array(rng.standard_normal((5, 7)).astype(np.float32))
    loss = lambda x: gelu(x).sum()  # noqa: E731
    want = fx.grad(loss)(x)
    _same(fx.grad(fx.compile(loss))(x), want)
    cg = fx.compile(fx.grad(loss))
    _same(cg(x), want)
    _same(cg(x), want)
    assert cg.cache_info()[:2] == (1, 1)
    # Forward mode and vmap through a compiled function.
    t = fx.ones_like(x)
    _same(fx.jvp(fx.compile(gelu), [x], [t])[1][0], fx.jvp(gelu, [x], [t])[1][0])
    _same(fx.vmap(fx.compile(gelu), in_axes=1)(x), fx.vmap(gelu, in_axes=1)(x))


def test_captured_state_trains_like_uncompiled(rng):
    def make():
        fx.random.seed(3)
        model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 2))
        return model, optim.Adam(learning_rate=1e-2)

    x = fx.array(rng.standard_normal((32, 6)).astype(np.float32))
    y = fx.array(rng.standard_normal((32, 2)).astype(np.float32))

    def run(compiled):
        model, opt = make()
        loss_and_grad = nn.value_and_grad(model, lambda m, x, y: ((m(x) - y) ** 2).mean())

        def step(x, y):
            loss, grads = loss_and_grad(model, x, y)
            opt.update(model, grads)
            return loss

        if compiled:
            state = [model.state, opt.state]
            step = fx.compile(step, inputs=state, outputs=state)
        losses = [step(x, y).item() for _ in range(5)]
        return losses, step

    eager, _ = run(False)
    compiled, step = run(True)
    np.testing.assert_allclose(compiled, eager, rtol=1e-5)
    assert compiled[-1] < compiled[0]
    hits, misses, _ = step.cache_info()
    assert hits >= 3 and misses <= 2


def test_captured_state_trees_and_their_errors():
    a, b, c = fx.array([1.0]), fx.array([2.0]), fx.array([3.0])
    state = {"w": a, "layers": [{"b": b}, (None, {"c": c})], "n": 3}
    step = fx.compile(lambda: state["w"] + state["layers"][1][1]["c"], inputs=state, outputs=state)
    _same(step(), fx.array([4.0]))
    # The state's arrays come back in place, in order, other leaves untouched.
    assert state["n"] == 3 and state["layers"][1][0] is None
    _same(state["layers"][0]["b"], b)

    looped = {"w": fx.ones((2,))}
    looped["self"] = looped
    with pytest.raises(ValueError, match="itself or is nested too deeply"):
        fx.compile(lambda: looped["w"] * 2, inputs=looped)()
    bad = [(fx.ones((2,)),)]
    with pytest.raises(ValueError, match="directly in a tuple"):
        fx.compile(lambda: bad[0][0] * 2, inputs=bad, outputs=bad)()


def test_graph_then_calls_and_a_failed_trace_between(rng):
    fail = [False]

    def f(x):
        if fail[0]:
            raise RuntimeError("trace failed")
        return {"y": x * 2}

    c = fx.compile(f)
    x = fx.array(rng.standard_normal((3,)).astype(np.float32))
    assert c.graph(x) == ["multiply"]  # traces
    _same(c(x)["y"], x * 2)  # a hit on the trace graph() made
    fail[0] = True
    with pytest.raises(RuntimeError, match="trace failed"):
        c(x[:2])
    fail[0] = False
    _same(c(x + 1)["y"], (x + 1) * 2)
    _same(c(x[:2])["y"], x[:2] * 2)
    assert c.cache_info() == (2, 2, 2)


def test_disable_and_enable_compile(rng):
    calls = []

    def f(x):
        calls.append(1)
        return x + 1

    c = fx.compile(f)
    x = fx.zeros((2,))
    fx.disable_compile()
    try:
        c(x)
        c(x)
    finally:
        fx.enable_compile()
    assert len(calls) == 2 and c.cache_info() == (0, 0, 0)
    c(x)
    c(x)
    assert len(calls) == 3


def test_decorator_forms_and_methods():
    @fx.compile
    def plain(x):
        return x * 2

    @partial(fx.compile, shapeless=True)
    def partial_form(x):
        return x * 3

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = fx.array([4.0, 5.0])

        @fx.compile
        def __call__(self, x):
            return x * self.w

    x = fx.ones((2,))
    _same(plain(x), x * 2)
    _same(partial_form(x), x * 3)
    scale = Scale()
    _same(scale(x), x * scale.w)
    scale.w = fx.array([1.0, 2.0])
    _same(scale(x), x * scale.w)
    assert plain.__name__ == "plain"


def test_errors():
    with pytest.raises(ValueError, match="eval"):
        fx.compile(lambda x: x + x.item())(fx.ones(()))
    with pytest.raises(ValueError, match="arguments must be trees"):
        fx.compile(lambda x: x)(object())
    with pytest.raises(ValueError, match="outputs must be"):
        fx.compile(lambda x: object())(fx.ones(()))
    with pytest.raises(ZeroDivisionError):
        fx.compile(lambda x: 1 / 0)(fx.ones(()))


def test_async_eval(rng):
    x = fx.array(rng.standard_normal((4, 4)).astype(np.float32))
    y = {"a": [fx.exp(x)], "b": (x * 2,)}
    fx.async_eval(y)
    _same(y["a"][0], fx.exp(x))
    _same(y["b"][0], x * 2)
    with pytest.raises(ValueError):
        fx.async_eval(fx.ones((2,)) + fx.ones((3,)))


def _adamw_loop(n, evaluate):
    """`n` AdamW steps of a small MLP, each handed to `evaluate`; the final
    parameters and losses."""
    fx.random.seed(3)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    opt = optim.AdamW(learning_rate=1e-2)
    loss_and_grad = nn.value_and_grad(model, lambda m, a, y: ((m(a) - y) ** 2).mean())
    a, y = fx.random.normal((32, 8)), fx.random.normal((32, 4))
    losses = []
    for _ in range(n):
        loss, grads = loss_and_grad(model, a, y)
        opt.update(model, grads)
        evaluate(loss, model.parameters(), opt.state)
        losses.append(loss)
    return model.parameters(), losses


def test_async_eval_training_loop_matches_eval():
    """MLX's pattern: each step is built on the previous step's pending
    parameters while that step computes."""
    sync_params, sync_losses = _adamw_loop(12, fx.eval)
    async_params, async_losses = _adamw_loop(12, fx.async_eval)
    for got, want in zip(async_losses, sync_losses):
        _same(got, want)
    flat = lambda tree: [v for _, v in fx.utils.tree_flatten(tree)]  # noqa: E731
    for got, want in zip(flat(async_params), flat(sync_params)):
        _same(got, want)


def test_async_eval_errors_surface_when_the_result_is_read(device):
    x = fx.zeros((2**60,), dtype=fx.uint8) + 1
    if device == "gpu":
        # GPU work is enqueued by async_eval itself, which reports the error.
        with pytest.raises(MemoryError):
            fx.async_eval(x)
    else:
        fx.async_eval(x)  # CPU work runs on the worker: the read reports it
    with pytest.raises(MemoryError):
        fx.eval(x)
    # The worker goes on with later work.
    y = fx.arange(4) * 2
    fx.async_eval(y)
    assert y.tolist() == [0, 2, 4, 6]


def test_async_eval_failure_is_reported_once_by_the_next_wait():
    """As MLX: the next synchronize (or eval) raises a failed async job's
    error once; the array stays pending and a later read raises again."""
    singular = fx.array([[1.0, 2.0], [2.0, 4.0]])
    a = fx.linalg.inv(singular, stream=fx.cpu)
    fx.async_eval(a)
    with pytest.raises(RuntimeError, match="singular"):
        fx.synchronize(fx.cpu)
    fx.synchronize(fx.cpu)
    b = fx.linalg.inv(singular, stream=fx.cpu)
    fx.async_eval(b)
    with pytest.raises(RuntimeError, match="singular"):
        fx.eval(fx.ones(2) + 1)
    fx.synchronize()
    with pytest.raises(RuntimeError, match="singular"):
        b.tolist()


def test_async_eval_then_synchronize_and_reads():
    xs = [fx.full((64, 64), float(i)) @ fx.ones((64, 64)) for i in range(8)]
    fx.async_eval(xs)
    fx.synchronize()
    for i, x in enumerate(xs):
        assert float(x[0, 0]) == 64.0 * i
    z = fx.exp(fx.arange(5, dtype=fx.float32))
    fx.async_eval(z)
    np.testing.assert_allclose(np.array(z), np.exp(np.arange(5, dtype=np.float32)), rtol=1e-6)


def test_async_eval_releases_zero_copy_imports():
    """The worker may drop the last reference to memory imported from
    NumPy; the producer gets it back (no wait for the GIL on the worker,
    which would deadlock with a reader holding it)."""
    import sys

    base = np.arange(1024, dtype=np.float32)
    before = sys.getrefcount(base)
    for _ in range(20):
        a = fx.from_dlpack(base)
        y = (a * 2).sum()
        del a
        fx.async_eval(y)
        assert float(y) == 2 * float(base.sum())
    fx.synchronize()
    fx.eval(fx.zeros(()))  # a call that takes the GIL applies deferred releases
    assert sys.getrefcount(base) == before
