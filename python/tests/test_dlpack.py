"""DLPack: ferrox arrays export their buffers without a copy (NumPy reads
them through np.from_dlpack), and fx.from_dlpack imports NumPy arrays and
other producers without a copy too (host and GPU memory). GPU exchange with
PyTorch runs where a GPU is present."""

import ctypes
import gc
import weakref

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
    y = fx.from_dlpack(x, copy=True)
    x[0] = 100.0  # copy=True gives a buffer of ferrox's own
    assert y[0].item() == 0.0
    assert data_pointer(y) != x.ctypes.data
    z = fx.from_dlpack(x, copy=False)  # host memory is shared
    assert data_pointer(z) == x.ctypes.data
    with pytest.raises(TypeError, match="__dlpack__"):
        fx.from_dlpack([1, 2, 3])
    # complex128 arrives as complex64 (a copy), as MLX imports it.
    z = fx.from_dlpack(np.arange(3, dtype=np.complex128) * 1j)
    assert z.dtype == fx.complex64 and z.tolist() == [0j, 1j, 2j]
    with pytest.raises(BufferError):
        fx.from_dlpack(np.arange(3, dtype=np.longdouble))


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


# ----------------------------------------------------------------------------
# Zero-copy host imports
# ----------------------------------------------------------------------------


def data_pointer(a):
    """The address of element [0, ...] of an evaluated host ferrox array,
    read from the DLPack capsule it exports (works for bfloat16 too)."""
    capsule = a.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    tensor = get(capsule, b"dltensor")  # DLManagedTensor: the DLTensor comes first
    data = ctypes.c_void_p.from_address(tensor).value or 0
    byte_offset = ctypes.c_uint64.from_address(tensor + 40).value
    return data + byte_offset


class RetypedProducer:
    """A host DLPack producer over a NumPy array's memory that NumPy cannot
    describe itself (bfloat16, a misaligned float32): NumPy's own legacy
    capsule with its DLTensor patched. DLTensor fields: data at byte 0,
    device 8, ndim 16, dtype 20 (code, bits, lanes), shape 24, strides 32,
    byte_offset 40."""

    def __init__(self, source, code, bits, byte_offset=0, length=None):
        self.source, self.code, self.bits = source, code, bits
        self.byte_offset, self.length = byte_offset, length

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, **kwargs):
        capsule = self.source.__dlpack__()
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype = ctypes.c_void_p
        get.argtypes = [ctypes.py_object, ctypes.c_char_p]
        tensor = get(capsule, b"dltensor")
        ctypes.c_uint8.from_address(tensor + 20).value = self.code
        ctypes.c_uint8.from_address(tensor + 21).value = self.bits
        ctypes.c_uint64.from_address(tensor + 40).value += self.byte_offset
        if self.length is not None:  # 1-D: the new extent
            shape = ctypes.c_void_p.from_address(tensor + 24).value
            ctypes.c_int64.from_address(shape).value = self.length
        return capsule


def bfloat16_producer(bits):
    return RetypedProducer(bits, code=4, bits=16)


NUMPY_ONLY = [d for d in ALL_DTYPES if d != "bfloat16"]


@pytest.mark.parametrize("dtype", NUMPY_ONLY)
def test_host_imports_share_the_producers_memory(on_cpu, dtype):
    x = sample(dtype, (4, 3))
    a = fx.from_dlpack(x)
    assert a.dtype == getattr(fx, dtype)
    # The same memory: ferrox exports NumPy's pointer back, and a later
    # NumPy write shows through (arrays sharing DLPack memory see it).
    assert data_pointer(a) == x.ctypes.data
    assert np.from_dlpack(a).__array_interface__["data"][0] == x.ctypes.data
    assert np.asarray(a).__array_interface__["data"][0] == x.ctypes.data
    np.testing.assert_array_equal(np.array(a), x)
    x[...] = sample(dtype, (4, 3))
    np.testing.assert_array_equal(np.array(a), x)
    # copy=False shares too; copy=True does not.
    assert data_pointer(fx.from_dlpack(x, copy=False)) == x.ctypes.data
    c = fx.from_dlpack(x, copy=True)
    assert data_pointer(c) != x.ctypes.data
    np.testing.assert_array_equal(np.array(c), x)


def test_bfloat16_host_imports_share_memory(on_cpu):
    bits = np.array([0x3F80, 0x4000, 0xC040, 0x0000, 0x3F00, 0x4120], dtype=np.uint16).reshape(2, 3)
    a = fx.from_dlpack(bfloat16_producer(bits))
    assert a.dtype == fx.bfloat16
    assert data_pointer(a) == bits.ctypes.data
    np.testing.assert_array_equal(np.array(a.astype(fx.float32)), [[1.0, 2.0, -3.0], [0.0, 0.5, 10.0]])
    bits[0, 0] = 0x4080  # 4.0
    assert a[0, 0].item() == 4.0
    t = fx.from_dlpack(bfloat16_producer(bits.T))
    np.testing.assert_array_equal(np.array(t.astype(fx.float32)), [[4.0, 0.0], [2.0, 0.5], [-3.0, 10.0]])


def test_bfloat16_from_torch_shares_memory(on_cpu):
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3)
    a = fx.from_dlpack(t)
    assert a.dtype == fx.bfloat16
    assert data_pointer(a) == t.data_ptr()
    t.add_(1)
    np.testing.assert_array_equal(np.array(a.astype(fx.float32)), np.arange(1, 7).reshape(2, 3))


@pytest.mark.parametrize("dtype", ["float32", "int16", "complex64", "bool_"])
def test_strided_views_are_shared(on_cpu, dtype):
    base = sample(dtype, (6, 8))
    views = [
        base.T,
        base[::2, 1:],
        base[::-1],  # negative strides
        base[1:5, ::-3],
        base[3, 2:7],
        np.broadcast_to(base[0], (3, 8)),  # zero strides, read-only
        base[0, 0, ...],  # 0-d
        base[:0],  # empty
        base[2:2, ::-1],
    ]
    for view in views:
        a = fx.from_dlpack(view)
        assert a.shape == view.shape
        np.testing.assert_array_equal(np.array(a), view)
        if view.size:
            assert data_pointer(a) == view.__array_interface__["data"][0]
        assert data_pointer(fx.from_dlpack(view, copy=False)) == data_pointer(a)


def test_empty_and_zero_d_imports(on_cpu):
    for x, dtype in [
        (np.zeros((0, 3), np.float32), fx.float32),
        (np.zeros((2, 0, 4), np.int64), fx.int64),
        (np.array(2.5), fx.float64),
        (np.array(True), fx.bool_),
    ]:
        a = fx.from_dlpack(x, copy=False)
        assert a.shape == x.shape and a.dtype == dtype
        np.testing.assert_array_equal(np.array(a), x)


def test_imported_memory_lives_as_long_as_any_reader(on_cpu):
    x = np.arange(1000, dtype=np.float64) * 2
    alive = weakref.ref(x)
    a = fx.from_dlpack(x)
    view = a[10:20]  # a lazy view
    total = (a * 3).sum()  # a lazy graph
    del x
    gc.collect()
    fx.clear_cache()
    assert alive() is not None  # held through the DLPack tensor
    np.testing.assert_array_equal(np.array(a), np.arange(1000) * 2)
    del a
    gc.collect()
    np.testing.assert_array_equal(np.array(view), np.arange(10, 20) * 2)
    assert total.item() == 3 * 999 * 1000
    del view, total
    gc.collect()
    assert alive() is None  # released once the last reader is gone


def test_updates_never_write_to_the_producers_memory(on_cpu):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = fx.from_dlpack(x)
    a[0] = 5  # a new buffer: the imported one is never written
    a[1, 2] += 10
    assert data_pointer(a) != x.ctypes.data
    np.testing.assert_array_equal(x, np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(np.array(a), [[5, 5, 5], [3, 4, 15]])
    b = fx.from_dlpack(x)
    b[b > 2] = 0
    b = b + 1
    np.testing.assert_array_equal(x, np.arange(6, dtype=np.float32).reshape(2, 3))
    # Read-only producers: imported too; NumPy views of the import stay
    # read-only, and a writable request gets a copy.
    r = np.arange(4.0)
    r.flags.writeable = False
    c = fx.from_dlpack(r)
    assert data_pointer(c) == r.ctypes.data
    assert not np.asarray(c).flags.writeable
    assert memoryview(c).readonly
    assert np.array(c).flags.writeable  # np.array copies


def test_ops_on_imported_arrays(on_cpu):
    x = sample("float32", (5, 4))
    y = sample("float32", (4, 3))
    a, b = fx.from_dlpack(x), fx.from_dlpack(y[::-1])
    np.testing.assert_allclose(np.array(a.sum()), x.sum(), rtol=1e-5)
    np.testing.assert_allclose(np.array(a.sum(axis=0)), x.sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(np.array(a @ b), x @ y[::-1], rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(np.array(a.T), x.T)
    np.testing.assert_array_equal(np.array(fx.transpose(b)), y[::-1].T)
    np.testing.assert_array_equal(np.array(fx.concatenate([a, a[:1]])), np.concatenate([x, x[:1]]))


def test_unshareable_host_memory_is_copied_unless_copy_is_false(on_cpu):
    # Bool bytes other than 0/1 are not valid ferrox bools: copied and normalised.
    raw = np.array([0, 2, 1, 255], dtype=np.uint8)
    flags = raw.view(np.bool_)
    a = fx.from_dlpack(flags)
    assert data_pointer(a) != raw.ctypes.data
    np.testing.assert_array_equal(np.array(a), [False, True, True, True])
    with pytest.raises(BufferError, match="copy=False"):
        fx.from_dlpack(flags, copy=False)
    # A float32 tensor one byte into a buffer is misaligned: copied.
    buf = np.zeros(40, dtype=np.uint8)
    assert buf.ctypes.data % 4 == 0
    buf[1:33] = np.arange(8, dtype=np.float32).view(np.uint8)
    misaligned = RetypedProducer(buf, code=2, bits=32, byte_offset=1, length=8)
    a = fx.from_dlpack(misaligned)
    assert a.dtype == fx.float32
    np.testing.assert_array_equal(np.array(a), np.arange(8))
    assert data_pointer(a) != buf.ctypes.data + 1
    with pytest.raises(BufferError, match="copy=False"):
        fx.from_dlpack(misaligned, copy=False)
    # An aligned offset into the same buffer is shared.
    aligned = RetypedProducer(buf, code=2, bits=32, byte_offset=4, length=8)
    assert data_pointer(fx.from_dlpack(aligned, copy=False)) == buf.ctypes.data + 4


def test_foreign_memory_is_not_counted_as_active(on_cpu):
    x = np.ones(16 << 20, dtype=np.float32)  # 64 MiB
    gc.collect()
    before = fx.get_active_memory()
    a = fx.from_dlpack(x)
    assert fx.get_active_memory() - before < x.nbytes // 2
    cached = fx.get_cache_memory()
    del a, x
    gc.collect()
    assert fx.get_cache_memory() - cached < (16 << 20) * 4  # not kept for reuse
