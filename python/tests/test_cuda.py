"""The CUDA backend's own behaviour: transfers, streams, synchronization,
memory accounting and the kernel cache. The op-by-op checks of every other
test file run on the GPU too (conftest parametrizes them by device); these
tests need a GPU and are skipped without one."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ferrox as fx

pytestmark = pytest.mark.skipif(not fx.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(autouse=True)
def on_gpu(device):
    if device != "gpu":
        pytest.skip("GPU-only test")


def test_default_device_is_the_gpu_in_a_fresh_process():
    out = subprocess.run(
        [sys.executable, "-c", "import ferrox as fx; print(fx.default_device())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "gpu" in out.stdout


def test_host_data_moves_once_and_results_come_back_once():
    host = np.arange(1000, dtype=np.float32)
    x = fx.array(host)
    before = fx.transfer_count()
    y = x + 1
    z = x * 2.0  # the Python scalar is passed by value: no transfer
    fx.eval(y, z)
    w = x - y  # x is on the GPU now
    fx.eval(w)
    assert fx.transfer_count() - before == 1
    np.testing.assert_array_equal(np.array(z), host * 2)
    assert fx.transfer_count() - before == 2
    np.testing.assert_array_equal(np.array(w), -np.ones(1000, np.float32))


def test_results_stay_on_the_gpu_until_read():
    before = fx.transfer_count()
    b = (fx.ones((4, 4)) @ fx.ones((4, 4))).sum()
    fx.eval(b)
    assert fx.transfer_count() == before
    assert b.item() == 64.0
    assert fx.transfer_count() == before + 1


def test_second_stream_is_ordered_after_the_first():
    s2 = fx.new_stream(fx.gpu)
    assert s2 != fx.default_stream(fx.gpu)
    a = fx.ones((4096, 4096))
    for i in range(20):
        # Alternate streams: each step reads what the other stream wrote.
        a = fx.add(a, 1.0, stream=s2 if i % 2 else fx.default_stream(fx.gpu))
        a = fx.multiply(a, 1.0, stream=fx.default_stream(fx.gpu) if i % 2 else s2)
    fx.eval(a)
    fx.synchronize(s2)
    assert float(fx.max(a).item()) == 21.0
    assert float(fx.min(a).item()) == 21.0


def test_synchronize_forms():
    a = fx.exp(fx.ones((1 << 20,)))
    fx.eval(a)
    fx.synchronize()
    fx.synchronize(fx.default_stream(fx.gpu))
    assert abs(a[0].item() - np.e) < 1e-6


def test_memory_accounting_and_cache():
    fx.synchronize()
    fx.clear_cache()
    base = fx.get_active_memory()
    a = fx.zeros((1 << 24,))  # 64 MiB on the GPU
    fx.eval(a)
    assert fx.get_active_memory() - base >= 64 << 20
    del a
    assert fx.get_cache_memory() >= 64 << 20
    fx.clear_cache()
    assert fx.get_cache_memory() < 64 << 20


def test_memory_limit_is_a_guideline():
    # As MLX's: past the limit the cache goes back to the driver and the
    # evaluation still runs; only a real allocation failure raises.
    old = fx.set_memory_limit(1 << 30)
    try:
        cached = fx.zeros((1 << 26,)) + 1.0  # 256 MiB, then freed into the cache
        fx.eval(cached)
        del cached
        assert fx.get_cache_memory() >= 1 << 28
        big = fx.ones((1 << 29,))  # 2 GiB, past the limit, no intermediate
        fx.eval(big)
        assert big[-1].item() == 1.0
        assert fx.get_cache_memory() < 1 << 28
    finally:
        fx.set_memory_limit(old)


def test_oversized_allocation_is_a_memory_error_not_a_crash():
    with pytest.raises(MemoryError):
        fx.eval(fx.zeros((1 << 40,), dtype=fx.float32))  # 4 TiB
    # Each within the device's memory, together beyond it: the driver
    # refuses the second, and that is a MemoryError too.
    total = fx.device_info(fx.gpu)["total_memory"]
    first = fx.zeros((int(total * 0.6) // 4,), dtype=fx.float32)
    fx.eval(first)
    with pytest.raises(MemoryError):
        fx.eval(fx.zeros((int(total * 0.6) // 4,), dtype=fx.float32))
    del first
    fx.clear_cache()


def test_kernels_are_cached_on_disk(tmp_path):
    code = "import ferrox as fx; print((fx.arange(10, dtype=fx.int16) * 3).sum().item())"
    env = dict(os.environ, FERROX_KERNEL_CACHE=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "135"
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files and all(f.endswith(".cubin") for f in files)
    stamps = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "135"
    # The second process read the cache: nothing was rewritten.
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == stamps


def test_tf32_switch():
    assert fx.cuda.set_allow_tf32(True) is False
    try:
        x = fx.array(np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32))
        got = np.array(x @ x)
        ref = np.array(x).astype(np.float64) @ np.array(x).astype(np.float64)
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-3
    finally:
        assert fx.cuda.set_allow_tf32(False) is True
