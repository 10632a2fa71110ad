"""DLPack: ferrox arrays export their buffers without a copy (NumPy reads
them through np.from_dlpack), and fx.from_dlpack imports NumPy arrays and
other producers. GPU exchange with PyTorch runs where a GPU is present."""

import gc

import numpy as np
import pytest

import ferrox as fx

from test_io import ALL_DTYPES, bits, sample, to_fx


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != "bfloat16"])
def test_numpy_reads_ferrox_arrays_without_a_copy(dtype):
    values = sample(dtype, (3, 4))
    a = to_fx(values, dtype)
    assert a.__dlpack_device__() == (1, 0)
    b = np.from_dlpack(a)
    np.testing.assert_array_equal(b, values)
    assert b.dtype == values.dtype
    # The same memory: a second export points at the same bytes.
    assert np.from_dlpack(a).__array_interface__["data"][0] == b.__array_interface__["data"][0]
    assert not b.flags.writeable  # ferrox buffers are immutable


@pytest.fixture
def on_cpu():
    """NumPy reads host memory only: build the arrays on the CPU whatever
    the default device."""
    with fx.stream(fx.cpu):
        yield


def test_views_export_their_strides_and_offset(on_cpu):
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    a = fx.array(x)
    for view, expected in [
        (a.transpose(2, 0, 1), x.transpose(2, 0, 1)),
        (a[1:, ::2, 3], x[1:, ::2, 3]),
        (fx.broadcast_to(a[0, 0], (2, 5)), np.broadcast_to(x[0, 0], (2, 5))),
        (a[2, 3, 4], x[2, 3, 4]),
        (a[:, :0], x[:, :0]),
    ]:
        np.testing.assert_array_equal(np.from_dlpack(view), expected)


def test_exported_memory_outlives_the_array(on_cpu):
    a = fx.arange(1000, dtype=fx.int64) * 3
    b = np.from_dlpack(a)
    del a
    gc.collect()
    fx.clear_cache()
    np.testing.assert_array_equal(b, np.arange(1000) * 3)
    # An unconsumed capsule frees its tensor.
    for _ in range(100):
        fx.arange(10).__dlpack__()


def test_versioned_and_legacy_capsules():
    a = fx.array([1.5, 2.5])
    assert "dltensor_versioned" in repr(a.__dlpack__(max_version=(1, 0)))
    assert "dltensor" in repr(a.__dlpack__())
    np.testing.assert_array_equal(np.from_dlpack(a, copy=True), [1.5, 2.5])
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(2, 0))


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != "bfloat16"])
def test_from_dlpack_imports_numpy(dtype):
    values = sample(dtype, (4, 3))
    for source in (values, values.T, values[::2, 1:], np.asarray(values[0, 0])):
        got = fx.from_dlpack(source)
        assert got.dtype == getattr(fx, dtype)
        np.testing.assert_array_equal(np.array(got), source)


def test_from_dlpack_round_trip_and_arguments():
    a = to_fx(sample("bfloat16", (2, 3)), "bfloat16")
    assert fx.from_dlpack(a) is not None
    assert np.array_equal(bits(fx.from_dlpack(a, copy=True)), bits(a))
    x = np.arange(5.0)
    y = fx.from_dlpack(x)
    x[0] = 100.0  # host imports are copies
    assert y[0].item() == 0.0
    with pytest.raises(BufferError, match="copy=False"):
        fx.from_dlpack(np.arange(3), copy=False)
    with pytest.raises(TypeError, match="__dlpack__"):
        fx.from_dlpack([1, 2, 3])
    with pytest.raises(BufferError, match="dtype"):
        fx.from_dlpack(np.arange(3, dtype=np.complex128))


@pytest.mark.skipif(not fx.cuda.is_available(), reason="needs a CUDA GPU")
def test_torch_reads_ferrox_gpu_arrays():
    torch = pytest.importorskip("torch")
    with fx.stream(fx.gpu):
        a = fx.arange(12, dtype=fx.float32).reshape(3, 4) * 2
        fx.eval(a)
    assert a.__dlpack_device__() == (2, 0)
    t = torch.from_dlpack(a)
    assert t.is_cuda
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(12, dtype=np.float32).reshape(3, 4) * 2)


@pytest.mark.skipif(not fx.cuda.is_available(), reason="needs a CUDA GPU")
def test_torch_gpu_tensors_import_without_a_copy():
    torch = pytest.importorskip("torch")
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4) * 3
    a = fx.from_dlpack(t)
    assert a.__dlpack_device__() == (2, 0)
    np.testing.assert_array_equal(np.array(a), t.cpu().numpy())
    # The same memory: an in-place write through torch shows in ferrox, and
    # exporting back to torch gives torch's own pointer.
    t.add_(1)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(np.array(a), t.cpu().numpy())
    assert torch.from_dlpack(a).data_ptr() == t.data_ptr()
    # Views, other dtypes, and lifetimes: the tensor outlives torch's handle.
    for view in (t.T, t[:, 1:3], t[1]):
        np.testing.assert_array_equal(np.array(fx.from_dlpack(view)), view.cpu().numpy())
    b = torch.randn(5, 7, device="cuda").to(torch.bfloat16)
    fb = fx.from_dlpack(b)
    assert fb.dtype == fx.bfloat16
    expected = b.float().cpu().numpy()
    del b
    torch.cuda.empty_cache()
    np.testing.assert_array_equal(np.array(fb.astype(fx.float32)), expected)
    # copy=True gives a buffer of ferrox's own, copied before it returns.
    c = fx.from_dlpack(t, copy=True)
    assert c.__dlpack_device__() == (2, 0)
    t.zero_()
    torch.cuda.synchronize()
    assert np.array(c).sum() != 0
