"""Data-type and device functions of MLX's API: can_cast, result_type,
isdtype, finfo, iinfo, is_available, device_count, stream contexts,
set_default_stream, ferrox.metal — checked against MLX where installed."""

import importlib.util

import pytest

import ferrox as fx
from conftest import ALL_DTYPES

HAVE_MLX = importlib.util.find_spec("mlx") is not None
PAIRS = [(a, b) for a in ALL_DTYPES for b in ALL_DTYPES]
KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric"]


def test_can_cast_and_result_type_rules():
    assert fx.can_cast(fx.int32, fx.float32)
    assert not fx.can_cast(fx.float32, fx.int32)
    assert fx.can_cast(fx.array([1], dtype=fx.uint8), fx.int16)
    assert fx.result_type(fx.int8, fx.float16) == fx.float16
    assert fx.result_type(fx.array([1], dtype=fx.int8), fx.uint8) == fx.int16
    with pytest.raises(ValueError, match="result_type"):
        fx.result_type(fx.int8, 1.0)
    with pytest.raises(TypeError):
        fx.can_cast(fx.int8, "float32")


def test_isdtype():
    assert fx.isdtype(fx.float32, "real floating")
    assert fx.isdtype(fx.int32, ("bool", "integral"))
    assert fx.isdtype(fx.float16, fx.floating)
    assert fx.isdtype(fx.uint8, fx.uint8) and not fx.isdtype(fx.uint8, fx.int8)
    with pytest.raises(ValueError, match="Unknown data type kind"):
        fx.isdtype(fx.float32, "foo")


@pytest.mark.parametrize("a,b", PAIRS if HAVE_MLX else [], ids=str)
def test_can_cast_and_result_type_match_mlx(a, b):
    import mlx.core as mx

    assert fx.can_cast(getattr(fx, a), getattr(fx, b)) == mx.can_cast(getattr(mx, a), getattr(mx, b))
    expected = str(mx.result_type(getattr(mx, a), getattr(mx, b))).split(".")[-1]
    assert fx.result_type(getattr(fx, a), getattr(fx, b)) == getattr(fx, expected.replace("bool", "bool_"))


@pytest.mark.parametrize("kind", KINDS if HAVE_MLX else [])
def test_isdtype_matches_mlx(kind):
    import mlx.core as mx

    for d in ALL_DTYPES:
        assert fx.isdtype(getattr(fx, d), kind) == mx.isdtype(getattr(mx, d), kind), (d, kind)


def test_devices_and_stream_context():
    assert fx.is_available(fx.cpu)
    assert fx.is_available(fx.gpu) == fx.cuda.is_available()
    assert fx.device_count(fx.cpu) == 1
    assert fx.device_count(fx.gpu) == int(fx.cuda.is_available())
    assert fx.metal.is_available() is False
    s = fx.new_stream(fx.cpu)
    with fx.stream(s):
        a = fx.ones((2,)) + 1
    assert a.tolist() == [2.0, 2.0]
    with fx.stream(fx.cpu):
        b = fx.arange(3) * 2
    assert b.tolist() == [0, 2, 4]
    assert isinstance(fx.stream(fx.cpu), fx.StreamContext)


def test_set_default_stream():
    old_device = fx.default_device()
    old = fx.default_stream(fx.cpu)
    s = fx.new_stream(fx.cpu)
    try:
        fx.set_default_stream(s)
        assert fx.default_stream(fx.cpu) == s
        assert fx.default_device() == fx.Device(fx.cpu)
        assert (fx.ones((2,)) * 3).tolist() == [3.0, 3.0]
    finally:
        fx.set_default_stream(old)
        fx.set_default_device(old_device)
    assert fx.default_stream(fx.cpu) == old


def test_thread_local_and_thread_unsafe_streams():
    import threading

    t = fx.new_thread_local_stream(fx.cpu)
    assert repr(t).startswith("ThreadLocalStream(Device(cpu, 0)")
    assert (fx.ones((2,), stream=t) * 2).tolist() == [2.0, 2.0]
    results = []

    def work():
        with fx.stream(t):
            results.append((fx.arange(3) + 1).tolist())

    threads = [threading.Thread(target=work) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == [[1, 2, 3], [1, 2, 3]]
    u = fx.new_thread_unsafe_stream(fx.cpu)
    assert isinstance(u, fx.Stream)
    assert (fx.ones((1,), stream=u)).tolist() == [1.0]
    fx.clear_streams()
    assert (fx.ones((1,), stream=t)).tolist() == [1.0]
