"""Lazy evaluation, graph release, memory accounting and devices."""

import gc
import time

import numpy as np
import pytest

import ferrox as fx

MB = 1 << 20
SLACK = 64 * 1024  # bytes of tolerated noise (scalars, bookkeeping)


def active():
    gc.collect()
    m = fx.get_active_memory()
    assert isinstance(m, int) and m >= 0
    return m


# --------------------------------------------------------------------------
# laziness and eval
# --------------------------------------------------------------------------


def test_building_ops_does_not_compute():
    base = fx.ones((1 << 20,)) * 1.0  # 4 MiB
    fx.eval(base)
    m0 = active()
    y = fx.exp(base * 2 + 1)
    z = y * y
    m1 = active()
    assert m1 <= m0 + SLACK, f"building the graph allocated {m1 - m0} bytes"
    fx.eval(z)
    # z (and y, kept alive by Python) are materialised now
    assert active() >= m0 + 4 * MB
    assert z[7].item() == pytest.approx(np.exp(3.0) ** 2, rel=1e-5)
    assert y[-1].item() == pytest.approx(np.exp(3.0), rel=1e-5)


def test_huge_lazy_graph_is_cheap():
    # 2**28 float32 elements = 1 GiB if anything were materialised
    big = fx.broadcast_to(fx.array(1.0), (1 << 14, 1 << 14))
    m0 = active()
    t0 = time.perf_counter()
    y = fx.exp(big + 1.0) * 3.0
    built = time.perf_counter() - t0
    assert y.shape == (1 << 14, 1 << 14)
    assert y.dtype == fx.float32
    assert built < 0.5
    assert active() <= m0 + SLACK
    del y, big


def test_eval_signatures():
    a = fx.array([1, 2]) + 1
    b = fx.array([3.0]) * 2
    c = fx.arange(3) - 1
    assert fx.eval(a) is None
    fx.eval(a, b)
    fx.eval([a, b, c])
    fx.eval(a, [b, c])
    fx.eval()
    assert a.tolist() == [2, 3] and b.tolist() == [6.0] and c.tolist() == [-1, 0, 1]


def test_tolist_item_numpy_force_evaluation():
    a = fx.arange(4) * 2
    assert a.tolist() == [0, 2, 4, 6]
    assert (fx.sum(a) + 1).item() == 13
    assert np.array_equal(np.array(fx.arange(3) + 10), [10, 11, 12])


def test_intermediates_stay_valid_after_eval():
    x = fx.array([1.0, 2.0, 3.0])
    steps = [x]
    for _ in range(50):
        steps.append(steps[-1] * 2.0)
    fx.eval(steps[-1])
    for i, s in enumerate(steps):
        assert s.tolist() == [1.0 * 2**i, 2.0 * 2**i, 3.0 * 2**i]


def test_shared_subgraph_evaluated_once_and_correct():
    x = fx.arange(6).astype(fx.float32)
    shared = fx.exp(x * 0.1)
    a = shared + 1
    b = shared * 2
    c = a + b  # diamond
    fx.eval(c)
    ref = np.exp(np.arange(6, dtype=np.float32) * np.float32(0.1))
    assert np.allclose(np.array(c), 3 * ref + 1, rtol=1e-5)


def test_long_chain_10000_adds():
    x = fx.array([1.0, 2.0])
    for _ in range(10_000):
        x = x + 1.0
    fx.eval(x)
    assert x.tolist() == [10_001.0, 10_002.0]
    # and again with integer dtype, evaluated through tolist (implicit eval)
    z = fx.zeros((3,), dtype=fx.int32)
    for _ in range(10_000):
        z = z + 1
    assert z.tolist() == [10_000] * 3


def test_drop_deep_unevaluated_chain():
    # freeing a very deep graph must not recurse (stack overflow)
    x = fx.array([1.0])
    for _ in range(100_000):
        x = x + 1.0
    del x
    gc.collect()
    y = fx.array([1.0])
    for _ in range(100_000):
        y = fx.negative(y)
    fx.eval(y)
    assert y.tolist() == [1.0]


def test_shared_nodes_are_not_recomputed():
    # each level uses the previous node three times; without memoisation the
    # evaluation would visit 3**14 (~4.8M) nodes
    a = fx.array([1, 2, 3])
    x = a
    for _ in range(14):
        x = fx.maximum(x, a) + (x - x)
    t0 = time.perf_counter()
    fx.eval(x)
    assert time.perf_counter() - t0 < 1.0
    assert x.tolist() == [1, 2, 3]


# --------------------------------------------------------------------------
# memory
# --------------------------------------------------------------------------


def test_memory_flat_in_eval_loop():
    x = fx.ones((1000,))
    fx.eval(x)
    x_ref = np.ones((1000,), dtype=np.float32)
    m100 = None
    for i in range(10_000):
        x = x * 1.0001 + 0.5
        fx.eval(x)
        if i == 100:
            m100 = fx.get_active_memory()
    m_end = fx.get_active_memory()
    assert m_end <= m100 + 16 * 1024, f"active memory grew {m100} -> {m_end}"
    for _ in range(10_000):
        x_ref = x_ref * np.float32(1.0001) + np.float32(0.5)
    np.testing.assert_allclose(np.array(x), x_ref, rtol=1e-4)


def test_memory_released_when_array_deleted():
    m0 = active()
    a = fx.ones((4 * MB // 4,)) * 3.0  # 4 MiB
    fx.eval(a)
    m1 = active()
    assert m1 >= m0 + 4 * MB
    del a
    m2 = active()
    assert m2 <= m0 + SLACK


def test_graph_inputs_released_after_eval():
    m0 = active()
    a = fx.ones((MB // 4,)) * 1.0  # 1 MiB, only referenced by the graph below
    b = fx.exp(a) + 1.0
    del a
    fx.eval(b)
    # b holds 1 MiB; the temporary for `a` and exp(a) must be gone
    assert active() <= m0 + MB + SLACK
    del b
    assert active() <= m0 + SLACK


VIEWS = {
    "reshape": lambda b: b.reshape(256, 4096),
    "reshape_flat": lambda b: fx.reshape(b, (-1,)),
    "transpose": lambda b: b.T,
    "transpose_fn": lambda b: fx.transpose(b, (1, 0)),
    "slice": lambda b: b[::2, 100:],
    "slice_negstep": lambda b: b[::-1, ::-3],
    "index_row": lambda b: b[5],
    "broadcast_to": lambda b: fx.broadcast_to(b[0], (4096, 1024)),
    "broadcast_expand": lambda b: fx.broadcast_to(b, (3, 1024, 1024)),
}


@pytest.mark.parametrize("view", list(VIEWS))
def test_views_do_not_allocate(view):
    base = fx.ones((1024, 1024)) * 2.0  # 4 MiB
    fx.eval(base)
    m0 = active()
    v = VIEWS[view](base)
    fx.eval(v)
    m1 = active()
    assert m1 <= m0 + SLACK, f"{view} allocated {m1 - m0} bytes"
    # the view still reads the right data
    assert fx.sum(v).item() == 2.0 * v.size


def test_peak_memory():
    a = fx.ones((2 * MB // 4,)) * 1.0
    fx.eval(a)
    assert fx.get_peak_memory() >= fx.get_active_memory()
    assert isinstance(fx.get_peak_memory(), int)
    big = fx.ones((8 * MB // 4,)) * 1.0  # 8 MiB
    fx.eval(big)
    peak_with_big = fx.get_peak_memory()
    assert peak_with_big >= active()
    del big
    gc.collect()
    assert fx.get_peak_memory() >= peak_with_big  # peak never decreases by itself
    fx.reset_peak_memory()
    p = fx.get_peak_memory()
    assert p <= fx.get_active_memory() + SLACK
    assert p < peak_with_big
    c = fx.ones((4 * MB // 4,)) * 1.0  # 4 MiB
    fx.eval(c)
    assert fx.get_peak_memory() >= 4 * MB
    assert fx.get_peak_memory() >= fx.get_active_memory()
    del a, c


# --------------------------------------------------------------------------
# devices and streams
# --------------------------------------------------------------------------


def test_device_types():
    assert fx.cpu != fx.gpu
    assert type(fx.cpu).__name__ == "DeviceType"
    assert type(fx.cpu) is type(fx.gpu)


def test_device_objects():
    d = fx.Device(fx.cpu)
    assert d.type == fx.cpu
    assert fx.Device(fx.gpu).type == fx.gpu


def test_default_device_is_the_parametrized_one(device):
    # conftest makes each device the default in turn.
    d = fx.default_device()
    assert isinstance(d, fx.Device)
    assert d.type == getattr(fx, device)


def test_gpu_presence_is_reported():
    if fx.cuda.is_available():
        assert isinstance(fx.cuda.device_name(), str)
        return
    # Without a GPU: no name, and asking for it is a clear error.
    assert fx.cuda.device_name() is None
    with pytest.raises(ValueError, match="not available"):
        fx.set_default_device(fx.gpu)
    with pytest.raises(ValueError, match="not available"):
        fx.add(fx.ones((2,)), 1, stream=fx.gpu)


def test_set_default_device():
    old = fx.default_device()
    try:
        fx.set_default_device(fx.cpu)
        assert fx.default_device().type == fx.cpu
        fx.set_default_device(fx.Device(fx.cpu))
        assert fx.default_device().type == fx.cpu
        assert (fx.ones((2,)) + 1).tolist() == [2.0, 2.0]
    finally:
        fx.set_default_device(old)


def test_streams():
    s = fx.default_stream(fx.cpu)
    assert s.device.type == fx.cpu
    s2 = fx.default_stream(fx.default_device())
    assert s2.device == fx.default_device()
    n = fx.new_stream(fx.cpu)
    assert n.device.type == fx.cpu
    n2 = fx.new_stream(fx.Device(fx.cpu))
    assert n2.device.type == fx.cpu


def test_device_info_reports_name_architecture_and_memory():
    info = fx.device_info()
    assert set(info) >= {"device_name", "architecture", "total_memory", "memory_size"}
    cpu = fx.device_info(fx.cpu)
    assert cpu["total_memory"] == cpu["memory_size"] > 0 and isinstance(cpu["device_name"], str)
    if not fx.cuda.is_available():
        with pytest.raises(ValueError, match="not available"):
            fx.device_info(fx.gpu)
