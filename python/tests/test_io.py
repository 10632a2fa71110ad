"""Files: .npy, .npz, safetensors and GGUF, written by ferrox and read by
NumPy, the safetensors and gguf packages and MLX, and the other way round,
for every dtype each format holds; file objects and paths; and corrupt,
truncated or lying files, which must raise an error naming the problem."""

import io
import pathlib
import struct

import importlib.util

import gguf
import numpy as np
import pytest
import safetensors
import safetensors.numpy

import ferrox as fx

# MLX (the semantic reference) is installed with the dev requirements; where
# it is absent (the GPU machine) the comparisons with it are left out.
HAVE_MLX = importlib.util.find_spec("mlx") is not None
if HAVE_MLX:
    import mlx.core as mx

RNG = np.random.default_rng(0)

# NumPy dtype of each ferrox dtype that NumPy has.
NUMPY_DTYPES = {
    "bool_": np.bool_, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "float16": np.float16, "float32": np.float32, "float64": np.float64, "complex64": np.complex64,
}  # fmt: skip
ALL_DTYPES = list(NUMPY_DTYPES) + ["bfloat16"]
SHAPES = [(), (0,), (5,), (2, 3, 4), (3, 0, 2)]

# safetensors' name of each dtype.
ST_NAMES = {
    "bool_": "BOOL", "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64", "int8": "I8",
    "int16": "I16", "int32": "I32", "int64": "I64", "float16": "F16", "bfloat16": "BF16",
    "float32": "F32", "float64": "F64", "complex64": "C64",
}  # fmt: skip


def sample(dtype, shape):
    """Random values of a ferrox dtype as a NumPy array (bfloat16 as its uint16 bits)."""
    if dtype == "bool_":
        return RNG.random(shape) < 0.5
    if dtype == "bfloat16":
        return RNG.integers(0, 2**16, size=shape, dtype=np.uint16)
    np_dtype = np.dtype(NUMPY_DTYPES[dtype])
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        return RNG.integers(info.min, info.max, size=shape, dtype=np_dtype, endpoint=True)
    if np_dtype.kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np_dtype)
    return (RNG.standard_normal(shape) * 100).astype(np_dtype)


def to_fx(values, dtype):
    if dtype == "bfloat16":
        return fx.array(values).view(fx.bfloat16)
    return fx.array(values, dtype=getattr(fx, dtype))


def bits(a):
    """A ferrox array's exact contents as NumPy (bfloat16 as uint16 bits)."""
    if a.dtype == fx.bfloat16:
        return np.array(a.view(fx.uint16))
    return np.array(a)


def same(a, expected, dtype):
    expected = np.asarray(expected)
    got = bits(a)
    assert a.dtype == getattr(fx, dtype)
    assert got.shape == expected.shape
    assert got.tobytes() == np.ascontiguousarray(expected).tobytes()


# ---------------------------------------------------------------- .npy


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_npy_round_trip_and_numpy_reads_it(tmp_path, dtype, shape):
    values = sample(dtype, shape)
    fx.save(str(tmp_path / "a"), to_fx(values, dtype))  # .npy is appended
    path = tmp_path / "a.npy"
    same(fx.load(str(path)), values, dtype)
    if dtype == "bfloat16":
        # NumPy has no bfloat16: MLX's '<V2' type string, raw bytes.
        assert np.load(path).tobytes() == values.tobytes()
    else:
        np.testing.assert_array_equal(np.load(path), values)
        assert np.load(path).dtype == values.dtype


@pytest.mark.parametrize("dtype", list(NUMPY_DTYPES))
def test_npy_written_by_numpy_loads(tmp_path, dtype):
    values = sample(dtype, (3, 5))
    np.save(tmp_path / "a.npy", values)
    same(fx.load(tmp_path / "a.npy"), values, dtype)
    # Fortran order and big-endian files.
    np.save(tmp_path / "f.npy", np.asfortranarray(values))
    same(fx.load(tmp_path / "f.npy"), values, dtype)
    swapped = values.astype(values.dtype.newbyteorder(">"))
    np.save(tmp_path / "b.npy", swapped)
    same(fx.load(tmp_path / "b.npy"), values, dtype)


def test_npy_views_and_broadcasts_save_their_values(tmp_path):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    for view, expected in [
        (fx.array(x).T, x.T),
        (fx.array(x)[::2, 1::3], x[::2, 1::3]),
        (fx.broadcast_to(fx.array(x[0]), (3, 6)), np.broadcast_to(x[0], (3, 6))),
    ]:
        fx.save(tmp_path / "v.npy", view)
        np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), expected)


@pytest.mark.skipif(not HAVE_MLX, reason="needs MLX")
def test_npy_matches_mlx_both_ways(tmp_path):
    for dtype in ALL_DTYPES:
        values = sample(dtype, (2, 3))
        fx.save(tmp_path / "f.npy", to_fx(values, dtype))
        m = mx.load(str(tmp_path / "f.npy"))
        assert m.dtype == getattr(mx, dtype)
        mlx_bits = np.array(m.view(mx.uint16)) if dtype == "bfloat16" else np.array(m)
        assert mlx_bits.tobytes() == values.tobytes()
        mx.save(str(tmp_path / "m.npy"), m)
        same(fx.load(tmp_path / "m.npy"), values, dtype)


def test_npy_file_objects_and_large_headers(tmp_path):
    x = fx.arange(6).reshape(2, 3)
    buffer = io.BytesIO()
    fx.save(buffer, x)
    buffer.seek(0)
    np.testing.assert_array_equal(np.load(buffer), np.arange(6).reshape(2, 3))
    buffer.seek(0)
    np.testing.assert_array_equal(np.array(fx.load(buffer, format="npy")), np.arange(6).reshape(2, 3))
    with open(tmp_path / "x.npy", "wb") as f:
        fx.save(f, x)
    with open(tmp_path / "x.npy", "rb") as f:  # the format comes from f.name
        np.testing.assert_array_equal(np.array(fx.load(f)), np.arange(6).reshape(2, 3))
    # A version-2 header (NumPy writes one when the header exceeds 64 KiB).
    def v2(shape):
        header = f"{{'descr': '<i2', 'fortran_order': False, 'shape': {shape}, }}".ljust(70000) + "\n"
        return b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header.encode()

    data = np.arange(6, dtype=np.int16).tobytes()
    np.testing.assert_array_equal(np.array(fx.load(io.BytesIO(v2((2, 3)) + data), format="npy")), np.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match="dimensions"):
        fx.load(io.BytesIO(v2((1,) * 65) + data), format="npy")


# ---------------------------------------------------------------- .npz


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_round_trip_and_numpy_reads_it(tmp_path, compressed):
    arrays = {dtype: sample(dtype, (3, 4)) for dtype in ALL_DTYPES}
    save = fx.savez_compressed if compressed else fx.savez
    save(str(tmp_path / "z"), to_fx(arrays["float32"], "float32"), **{k: to_fx(v, k) for k, v in arrays.items()})
    loaded = fx.load(str(tmp_path / "z.npz"))
    assert set(loaded) == set(arrays) | {"arr_0"}
    same(loaded["arr_0"], arrays["float32"], "float32")
    for dtype, values in arrays.items():
        same(loaded[dtype], values, dtype)
    with np.load(tmp_path / "z.npz") as z:
        for dtype in NUMPY_DTYPES:
            np.testing.assert_array_equal(z[dtype], arrays[dtype])
        assert z.zip.infolist()[0].compress_type == (8 if compressed else 0)
    if HAVE_MLX:
        loaded = mx.load(str(tmp_path / "z.npz"))
        np.testing.assert_array_equal(np.array(loaded["int64"]), arrays["int64"])


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_written_by_numpy_loads(tmp_path, compressed):
    arrays = {dtype: sample(dtype, (2, 5)) for dtype in NUMPY_DTYPES}
    (np.savez_compressed if compressed else np.savez)(tmp_path / "z.npz", *arrays.values(), **arrays)
    loaded = fx.load(tmp_path / "z.npz")
    for i, (dtype, values) in enumerate(arrays.items()):
        same(loaded[dtype], values, dtype)
        same(loaded[f"arr_{i}"], values, dtype)


def test_npz_file_objects_and_errors(tmp_path):
    buffer = io.BytesIO()
    fx.savez(buffer, fx.arange(3), y=fx.ones((2,)))
    buffer.seek(0)
    loaded = fx.load(buffer, format="npz")
    np.testing.assert_array_equal(np.array(loaded["arr_0"]), np.arange(3))
    with pytest.raises(ValueError, match="arr_0"):
        fx.savez(tmp_path / "bad.npz", fx.arange(3), arr_0=fx.arange(2))
    with pytest.raises(ValueError, match="metadata not supported"):
        fx.load(buffer, format="npz", return_metadata=True)


# ---------------------------------------------------------------- safetensors


def test_safetensors_round_trip_every_dtype_with_metadata(tmp_path):
    arrays = {dtype: sample(dtype, shape) for dtype, shape in zip(ALL_DTYPES, [(2, 3), (0,), (), (4,)] * 4)}
    metadata = {"format": "mlx", "quote\"key": "new\nline"}
    fx.save_safetensors(str(tmp_path / "m"), {k: to_fx(v, k) for k, v in arrays.items()}, metadata)
    loaded, meta = fx.load(str(tmp_path / "m.safetensors"), return_metadata=True)
    assert meta == metadata
    for dtype, values in arrays.items():
        same(loaded[dtype], values, dtype)
    # The safetensors package reads every tensor, bit for bit, and the metadata.
    data = (tmp_path / "m.safetensors").read_bytes()
    theirs = dict(safetensors.deserialize(data))
    for dtype, values in arrays.items():
        assert theirs[dtype]["dtype"] == ST_NAMES[dtype]
        assert list(theirs[dtype]["shape"]) == list(values.shape)
        assert bytes(theirs[dtype]["data"]) == values.tobytes()
    with safetensors.safe_open(tmp_path / "m.safetensors", framework="numpy") as f:
        assert f.metadata() == metadata
    if HAVE_MLX:  # MLX has no float64 in safetensors
        fx.save_safetensors(tmp_path / "m.safetensors", {"float32": to_fx(arrays["float32"], "float32")}, metadata)
        m, m_meta = mx.load(str(tmp_path / "m.safetensors"), return_metadata=True)
        assert m_meta == metadata
        np.testing.assert_array_equal(np.array(m["float32"]), arrays["float32"])


def test_safetensors_written_by_others_load(tmp_path):
    arrays = {dtype: sample(dtype, (3, 2)) for dtype in NUMPY_DTYPES}
    safetensors.numpy.save_file(arrays, tmp_path / "n.safetensors", metadata={"a": "b"})
    loaded, meta = fx.load(tmp_path / "n.safetensors", return_metadata=True)
    assert meta == {"a": "b"}
    for dtype, values in arrays.items():
        same(loaded[dtype], values, dtype)
    # bfloat16 and fp8 payloads through the package's raw serializer (fp8
    # loads as its uint8 bytes, as in MLX).
    raw = sample("bfloat16", (4, 3))
    fp8 = RNG.integers(0, 256, size=(5,), dtype=np.uint8)
    blob = safetensors.serialize(
        {
            "b": safetensors.TensorSpec(dtype="bfloat16", shape=[4, 3], data_ptr=raw.ctypes.data, data_len=raw.nbytes),
            "f": safetensors.TensorSpec(dtype="float8_e4m3fn", shape=[5], data_ptr=fp8.ctypes.data, data_len=fp8.nbytes),
        }
    )
    loaded = fx.load(io.BytesIO(blob), format="safetensors")
    same(loaded["b"], raw, "bfloat16")
    same(loaded["f"], fp8, "uint8")
    if HAVE_MLX:  # files MLX writes
        mx.save_safetensors(str(tmp_path / "x.safetensors"), {"w": mx.array(raw).view(mx.bfloat16)}, {"k": "v"})
        loaded, meta = fx.load(tmp_path / "x.safetensors", return_metadata=True)
        same(loaded["w"], raw, "bfloat16")
        assert meta == {"k": "v"}


def test_safetensors_file_objects_paths_and_argument_errors(tmp_path):
    buffer = io.BytesIO()
    fx.save_safetensors(buffer, {"x": fx.arange(4)})
    buffer.seek(0)
    np.testing.assert_array_equal(np.array(fx.load(buffer, format="safetensors")["x"]), np.arange(4))
    path = pathlib.Path(tmp_path / "p.safetensors")
    fx.save_safetensors(path, {"x": fx.arange(4)})
    assert list(fx.load(path)) == ["x"]
    with pytest.raises(ValueError, match="Metadata must be a dictionary"):
        fx.save_safetensors(path, {"x": fx.arange(4)}, {"k": 1})
    with pytest.raises(ValueError, match="__metadata__"):
        fx.save_safetensors(path, {"__metadata__": fx.arange(4)})


# ---------------------------------------------------------------- GGUF


def gguf_file(tmp_path, tensors, kv=None):
    """A GGUF file written by the gguf package: (name, values, raw dtype)."""
    path = tmp_path / "g.gguf"
    writer = gguf.GGUFWriter(str(path), "test")
    for key, value, vtype in kv or []:
        writer.add_key_value(key, value, vtype)
    for name, values, raw in tensors:
        if raw is None:
            writer.add_tensor(name, values)
        else:
            writer.add_tensor(name, values, raw_shape=None, raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_gguf_round_trip_and_the_gguf_package_reads_it(tmp_path):
    dtypes = ["float32", "float16", "bfloat16", "int8", "int16", "int32", "int64", "float64"]
    arrays = {d: sample(d, (3, 4) if i % 2 else (5,)) for i, d in enumerate(dtypes)}
    metadata = {
        "s": "hello", "names": ["a", "bc"], "n": fx.array(7), "f": fx.array(1.5),
        "v": fx.array([1, 2, 3], dtype=fx.uint16), "flag": fx.array(True),
    }  # fmt: skip
    fx.save_gguf(str(tmp_path / "r"), {k: to_fx(v, k) for k, v in arrays.items()}, metadata)
    loaded, meta = fx.load(str(tmp_path / "r.gguf"), return_metadata=True)
    for dtype, values in arrays.items():
        if dtype == "bfloat16":  # written as BF16, which MLX loads as float16
            as_f32 = (values.astype(np.uint32) << 16).view(np.float32)
            with np.errstate(over="ignore"):
                np.testing.assert_array_equal(np.array(loaded[dtype]), as_f32.astype(np.float16))
            assert loaded[dtype].dtype == fx.float16
        else:
            same(loaded[dtype], values, dtype)
    assert meta["s"] == "hello" and meta["names"] == ["a", "bc"]
    assert meta["n"].dtype == fx.int32 and meta["n"].item() == 7
    assert meta["f"].dtype == fx.float32 and meta["f"].item() == 1.5
    assert meta["v"].dtype == fx.uint16 and meta["v"].tolist() == [1, 2, 3]
    assert meta["flag"].dtype == fx.bool_ and meta["flag"].item() is True
    reader = gguf.GGUFReader(tmp_path / "r.gguf")
    for t in reader.tensors:
        expected = arrays[t.name]
        assert list(t.shape[::-1]) == list(expected.shape) or expected.ndim <= 1
        assert t.data.tobytes() == expected.tobytes()
    fields = {f.name: f for f in reader.fields.values()}
    assert fields["s"].contents() == "hello" and fields["names"].contents() == ["a", "bc"]
    assert fields["v"].contents() == [1, 2, 3]
    if HAVE_MLX:  # MLX reads the types it knows
        fx.save_gguf(tmp_path / "r.gguf", {"float32": to_fx(arrays["float32"], "float32")})
        m = mx.load(str(tmp_path / "r.gguf"))
        np.testing.assert_array_equal(np.array(m["float32"]), arrays["float32"])


def test_gguf_written_by_the_gguf_package_loads(tmp_path):
    values = {d: sample(d, (2, 3)) for d in ["float32", "float16", "int8", "int16", "int32", "int64", "float64"]}
    kv = [
        ("general.name", "tiny", gguf.GGUFValueType.STRING),
        ("count", 3, gguf.GGUFValueType.UINT64),
        ("scale", 0.25, gguf.GGUFValueType.FLOAT64),
        ("ids", [4, 5, 6], gguf.GGUFValueType.ARRAY),
    ]
    path = gguf_file(tmp_path, [(d, v, None) for d, v in values.items()], kv)
    loaded, meta = fx.load(path, return_metadata=True)
    for dtype, v in values.items():
        same(loaded[dtype], v, dtype)
    assert meta["general.name"] == "tiny"
    assert meta["count"].dtype == fx.uint64 and meta["count"].item() == 3
    assert meta["scale"].dtype == fx.float32 and meta["scale"].item() == 0.25  # as MLX
    assert meta["ids"].tolist() == [4, 5, 6]


def unpack(words, bits):
    """MLX's packed uint32 weights as unsigned integers, lowest bits first."""
    w = np.array(words).astype(np.uint64)
    shifts = np.arange(0, 32, bits, dtype=np.uint64)
    return ((w[..., None] >> shifts) & np.uint64((1 << bits) - 1)).reshape(*w.shape[:-1], -1)


@pytest.mark.parametrize("qtype, bits", [("Q4_0", 4), ("Q4_1", 4), ("Q8_0", 8)])
def test_gguf_quantized_tensors_load_as_mlx_loads_them(tmp_path, qtype, bits):
    t = getattr(gguf.GGMLQuantizationType, qtype)
    x = RNG.standard_normal((3, 64)).astype(np.float32)
    packed = gguf.quants.quantize(x, t)
    path = gguf_file(tmp_path, [("blk.0.weight", packed, t)])
    loaded = fx.load(path)
    assert set(loaded) == {"blk.0.weight", "blk.0.scales", "blk.0.biases"}
    w, s, b = loaded["blk.0.weight"], loaded["blk.0.scales"], loaded["blk.0.biases"]
    assert (w.dtype, w.shape) == (fx.uint32, (3, 64 * bits // 32))
    assert (s.dtype, s.shape, b.shape) == (fx.float16, (3, 2), (3, 2))
    q = unpack(w, bits).reshape(3, 2, 32).astype(np.float32)
    dequantized = (q * np.array(s, np.float32)[..., None] + np.array(b, np.float32)[..., None]).reshape(3, 64)
    np.testing.assert_allclose(dequantized, gguf.quants.dequantize(packed, t), rtol=1e-3, atol=1e-3)
    if HAVE_MLX:
        m = mx.load(str(path))
        for key in loaded:
            np.testing.assert_array_equal(np.array(loaded[key]), np.array(m[key]))


# GGML types MLX converts to float16 through gguflib (`gguf_tensor_to_f16`).
K_QUANTS = ["Q2_K", "Q4_K", "Q6_K"]
# Byte offset of each K-quant block's float16 scales (d, and dmin when present).
K_SCALES = {"Q2_K": slice(80, 84), "Q4_K": slice(0, 4), "Q6_K": slice(208, 210)}


def k_blocks(qtype, n_blocks, scales=None):
    """Random blocks of a K-quant (the gguf package has no K-quant quantizer)
    with float16 scales drawn from `scales` (small normal values by default)."""
    size = gguf.GGML_QUANT_SIZES[getattr(gguf.GGMLQuantizationType, qtype)][1]
    blocks = RNG.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    where = K_SCALES[qtype]
    n = (where.stop - where.start) // 2
    values = RNG.standard_normal((n_blocks, n)) * 0.05 if scales is None else RNG.choice(scales, (n_blocks, n))
    blocks[:, where] = values.astype(np.float16).view(np.uint8)
    return blocks


def gguflib_q4_k(blocks):
    """Q4_K blocks as gguflib (so MLX) reads them: in each pair of 32-weight
    sub-blocks both use the first one's 6-bit scale and min. Re-encodes them."""
    sc, m = gguf.quants.Q4_K.get_scale_min(blocks[:, 4:16].copy())
    sc[:, 1::2], m[:, 1::2] = sc[:, 0::2], m[:, 0::2]
    out = blocks.copy()
    out[:, 4:8] = (sc[:, :4] & 63) | ((sc[:, 4:] >> 4) << 6)
    out[:, 8:12] = (m[:, :4] & 63) | ((m[:, 4:] >> 4) << 6)
    out[:, 12:16] = (sc[:, 4:] & 0xF) | ((m[:, 4:] & 0xF) << 4)
    return out


def f16_reference(blocks, qtype, n):
    """The first `n` weights of `blocks`, by gguf.quants.dequantize, rounded to float16."""
    if qtype == "Q4_K":
        blocks = gguflib_q4_k(blocks)
    values = gguf.quants.dequantize(blocks, getattr(gguf.GGMLQuantizationType, qtype)).reshape(-1)[:n]
    return values.astype(np.float16)


def raw_gguf(path, name, shape, ggml_type, data):
    """A GGUF file of one tensor with `data` as its bytes, whatever its shape
    (the gguf package refuses K-quant rows that end inside a block)."""
    info = gguf_string(name.encode()) + struct.pack("<I", len(shape))
    info += b"".join(struct.pack("<Q", d) for d in reversed(shape)) + struct.pack("<IQ", int(ggml_type), 0)
    head = gguf_blob(1, [], info)
    path.write_bytes(head + b"\0" * (-len(head) % 32) + data)
    return path


def assert_mlx_loads_the_same(path, loaded):
    if HAVE_MLX:
        m = mx.load(str(path))
        assert set(m) == set(loaded)
        for key, a in loaded.items():
            assert m[key].dtype == mx.float16 and tuple(m[key].shape) == a.shape
            assert np.array(m[key]).tobytes() == np.array(a).tobytes(), key


@pytest.mark.parametrize("qtype", K_QUANTS)
@pytest.mark.parametrize("shape", [(256,), (3, 256), (2, 2, 512), (5, 1024)])
def test_gguf_k_quants_load_as_float16_as_mlx_loads_them(tmp_path, qtype, shape):
    n = int(np.prod(shape))
    blocks = k_blocks(qtype, n // 256)
    data = blocks.reshape(*shape[:-1], shape[-1] // 256 * blocks.shape[1])  # rows of bytes
    path = gguf_file(tmp_path, [("blk.0.weight", data, getattr(gguf.GGMLQuantizationType, qtype))])
    loaded = fx.load(path)
    assert set(loaded) == {"blk.0.weight"}  # no scales and biases: plain float16
    w = loaded["blk.0.weight"]
    assert w.dtype == fx.float16 and w.shape == shape
    assert np.array(w).reshape(-1).tobytes() == f16_reference(blocks, qtype, n).tobytes()
    assert_mlx_loads_the_same(path, loaded)


@pytest.mark.parametrize("qtype", K_QUANTS)
@pytest.mark.parametrize("shape", [(1,), (100,), (3, 100), (257,)])
def test_gguf_k_quants_ending_inside_a_block(tmp_path, qtype, shape):
    # The last block is stored whole; only the tensor's weights are read.
    n = int(np.prod(shape))
    blocks = k_blocks(qtype, -(-n // 256))
    path = raw_gguf(tmp_path / "p.gguf", "w", shape, getattr(gguf.GGMLQuantizationType, qtype), blocks.tobytes())
    loaded = fx.load(path)
    assert loaded["w"].dtype == fx.float16 and loaded["w"].shape == shape
    assert np.array(loaded["w"]).reshape(-1).tobytes() == f16_reference(blocks, qtype, n).tobytes()
    assert_mlx_loads_the_same(path, loaded)


@pytest.mark.skipif(not HAVE_MLX, reason="needs MLX")
@pytest.mark.parametrize("qtype", K_QUANTS)
def test_gguf_k_quants_with_extreme_scales_match_mlx(tmp_path, qtype):
    # Infinite, NaN, subnormal and huge scales: overflow, NaN signs and
    # float16 rounding at the edges all as MLX has them.
    extremes = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 6e-8, -1e-6, 6e4, -3e4, 1.0, 0.5])
    blocks = k_blocks(qtype, 16, extremes)
    path = raw_gguf(tmp_path / "x.gguf", "w", (16, 256), getattr(gguf.GGMLQuantizationType, qtype), blocks.tobytes())
    assert_mlx_loads_the_same(path, fx.load(path))


def test_gguf_bfloat16_loads_as_float16_as_mlx_loads_it(tmp_path):
    # Every bfloat16 bit pattern; MLX converts them to float16 (overflowing
    # to infinity, NaN made the quiet NaN 0x7E00 with its sign).
    raw = np.arange(2**16, dtype=np.uint16).reshape(256, 256)
    path = gguf_file(tmp_path, [("b", raw.view(np.uint8), gguf.GGMLQuantizationType.BF16)])
    loaded = fx.load(path)
    assert loaded["b"].dtype == fx.float16 and loaded["b"].shape == (256, 256)
    with np.errstate(over="ignore"):
        expected = (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float16).view(np.uint16)
    expected = np.where((raw & 0x7FFF) > 0x7F80, (raw & 0x8000) | 0x7E00, expected)
    assert np.array(loaded["b"]).view(np.uint16).tobytes() == expected.astype(np.uint16).tobytes()
    assert_mlx_loads_the_same(path, loaded)


@pytest.mark.parametrize("qtype", K_QUANTS + ["BF16"])
def test_gguf_truncated_converted_tensors_are_errors(tmp_path, qtype):
    t = getattr(gguf.GGMLQuantizationType, qtype)
    data = RNG.integers(0, 2**16, (4, 256), dtype=np.uint16).view(np.uint8) if qtype == "BF16" else k_blocks(qtype, 4)
    blob = gguf_file(tmp_path, [("w", data, t)]).read_bytes()
    end = gguf.GGUFReader(tmp_path / "g.gguf").tensors[0].data_offset + data.nbytes
    load_everything(blob[:end], "gguf")  # the whole tensor, without padding, loads
    for cut in [end - 1, end - data.shape[1] // 2, end - data.nbytes + 1]:
        with pytest.raises(ValueError, match='tensor "w" extends past the end of the file'):
            load_everything(blob[:cut], "gguf")


@pytest.mark.parametrize("qtype", ["Q5_0", "Q5_1", "Q8_1", "Q3_K", "Q5_K", "Q8_K", "IQ4_NL", "IQ2_XXS"])
def test_gguf_types_mlx_cannot_convert_are_errors(tmp_path, qtype):
    t = getattr(gguf.GGMLQuantizationType, qtype)
    block, size = gguf.GGML_QUANT_SIZES[t]
    path = raw_gguf(tmp_path / "u.gguf", "blk.1.ffn", (2, block), t, b"\0" * (2 * size))
    with pytest.raises(ValueError, match=f'tensor "blk.1.ffn" has unsupported type {qtype}'):
        fx.load(path)
    if HAVE_MLX:
        with pytest.raises(Exception):
            mx.load(str(path))


def test_gguf_metadata_errors(tmp_path):
    with pytest.raises(ValueError, match="more than one dimension"):
        fx.save_gguf(tmp_path / "e", {}, {"m": fx.zeros((2, 2))})
    with pytest.raises(ValueError, match="empty"):
        fx.save_gguf(tmp_path / "e", {}, {"m": fx.zeros((0,))})
    with pytest.raises(ValueError, match="not supported"):
        fx.save_gguf(tmp_path / "e", {"x": fx.zeros((2,), dtype=fx.uint8)})


# ---------------------------------------------------------------- laziness, devices, errors


def test_loaded_arrays_outlive_the_file(tmp_path):
    fx.save_safetensors(tmp_path / "a.safetensors", {"x": fx.arange(5)})
    x = fx.load(tmp_path / "a.safetensors")["x"]  # lazy: read on evaluation
    (tmp_path / "a.safetensors").unlink()
    np.testing.assert_array_equal(np.array(x + 1), np.arange(1, 6))


def test_load_on_a_stream_and_under_transforms(tmp_path):
    fx.save(tmp_path / "a.npy", fx.array([1.0, 2.0, 3.0]))
    x = fx.load(tmp_path / "a.npy", stream=fx.cpu)
    np.testing.assert_array_equal(np.array(x), [1, 2, 3])
    g = fx.grad(lambda w: (fx.load(tmp_path / "a.npy") * w).sum())(fx.array(2.0))
    assert g.item() == 6.0


def test_path_and_format_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.npy"):
        fx.load(tmp_path / "missing.npy")
    with pytest.raises(ValueError, match="Unknown file format xyz"):
        fx.load(tmp_path / "a.xyz")
    with pytest.raises(ValueError, match="Could not infer file format"):
        fx.load(tmp_path / "noext")
    with pytest.raises(ValueError, match="Could not infer file format"):
        fx.load(io.BytesIO(b""))
    with pytest.raises(ValueError, match="metadata not supported for format npy"):
        fx.load(tmp_path / "a.npy", return_metadata=True)
    with pytest.raises(TypeError, match="file-like object, or string"):
        fx.load(3)
    with pytest.raises(TypeError, match="binary mode"):
        fx.load(io.StringIO("text"), format="npy")
    (tmp_path / "dir.npy").mkdir()
    with pytest.raises(IsADirectoryError, match="dir.npy"):
        fx.save(tmp_path / "dir.npy", fx.zeros(2))
    with pytest.raises(OSError):
        fx.load(tmp_path / "dir.npy")


# ---------------------------------------------------------------- corrupt files


def small_files(tmp_path):
    """One valid small file of each format: (format, bytes)."""
    x = {"a": fx.arange(6, dtype=fx.float32).reshape(2, 3), "b": fx.array([1, 2], dtype=fx.int16)}
    out = []
    fx.save(tmp_path / "s.npy", x["a"])
    out.append(("npy", (tmp_path / "s.npy").read_bytes()))
    fx.savez(tmp_path / "s.npz", **x)
    out.append(("npz", (tmp_path / "s.npz").read_bytes()))
    fx.savez_compressed(tmp_path / "c.npz", **x)
    out.append(("npz", (tmp_path / "c.npz").read_bytes()))
    fx.save_safetensors(tmp_path / "s.safetensors", x, {"k": "v"})
    out.append(("safetensors", (tmp_path / "s.safetensors").read_bytes()))
    fx.save_gguf(tmp_path / "s.gguf", {"a": x["a"]}, {"s": "x", "l": ["p", "q"], "v": fx.array([1, 2])})
    out.append(("gguf", (tmp_path / "s.gguf").read_bytes()))
    return out


def load_everything(blob, fmt):
    """Loads `blob` and evaluates every array (the reads happen there)."""
    loaded = fx.load(io.BytesIO(blob), format=fmt)
    arrays = [loaded] if isinstance(loaded, fx.array) else list(loaded.values())
    fx.eval(arrays)
    return loaded


def test_every_truncation_is_an_error(tmp_path):
    for fmt, blob in small_files(tmp_path):
        load_everything(blob, fmt)  # the whole file loads
        for n in range(len(blob)):
            if fmt == "gguf" and n >= len(blob) - 8:
                continue  # the last tensor's alignment padding is optional
            with pytest.raises(ValueError):
                load_everything(blob[:n], fmt)


def test_random_corruption_never_crashes(tmp_path):
    rng = np.random.default_rng(1)
    for fmt, blob in small_files(tmp_path):
        for _ in range(300):
            data = bytearray(blob)
            for i in rng.integers(0, len(data), size=rng.integers(1, 4)):
                data[i] = rng.integers(0, 256)
            try:
                load_everything(bytes(data), fmt)
            except ValueError:
                pass


def test_lying_npy_headers(tmp_path):
    def npy(header, data=b""):
        header = header.ljust(118) + "\n"
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data

    cases = {
        "truncated": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", b"\0" * 12),
        "shape too large": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2**62, 8), }"),
        "huge dims": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"),
        "unknown dtype": npy("{'descr': '<U4', 'fortran_order': False, 'shape': (1,), }", b"\0" * 16),
        "structured": npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", b"\0" * 4),
        "no shape": npy("{'descr': '<f4', 'fortran_order': False, }", b"\0" * 4),
        "negative": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", b"\0" * 4),
        "bad magic": b"\x93NUMPX\x01\x00" + b"\0" * 40,
        "version": b"\x93NUMPY\x07\x00" + b"\0" * 40,
        "header length": b"\x93NUMPY\x02\x00" + struct.pack("<I", 2**31) + b"{",
    }
    for name, blob in cases.items():
        with pytest.raises(ValueError, match=r"\[load\]"):
            load_everything(blob, "npy")
        path = tmp_path / "bad.npy"
        path.write_bytes(blob)
        with pytest.raises(ValueError, match="bad.npy"):  # errors name the file
            fx.load(path)


def safetensors_blob(header, data=b""):
    text = header.encode()
    return struct.pack("<Q", len(text)) + text + data


def test_lying_safetensors_headers():
    cases = {
        "past the end": safetensors_blob('{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', b"\0" * 8),
        "size disagrees": safetensors_blob('{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}}', b"\0" * 8),
        "overlap": safetensors_blob(
            '{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}',
            b"\0" * 12,
        ),
        "unknown dtype": safetensors_blob('{"x":{"dtype":"Q9","shape":[1],"data_offsets":[0,1]}}', b"\0"),
        "huge header": struct.pack("<Q", 2**40) + b"{}",
        "not json": safetensors_blob("{nope", b""),
        "huge shape": safetensors_blob('{"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}', b"\0" * 4),
        "short": b"\x01\x00",
    }
    for name, blob in cases.items():
        with pytest.raises(ValueError, match="safetensors"):
            load_everything(blob, "safetensors")


class check:
    """Names the failing case of a table-driven test."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is not None and not issubclass(kind, ValueError):
            raise AssertionError(f"case {self.name!r}") from value
        return False


def gguf_blob(n_tensors, kv, infos, data=b"", version=3):
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, len(kv) if isinstance(kv, list) else kv) + b"".join(
        kv if isinstance(kv, list) else []
    ) + infos + data


def gguf_string(s):
    return struct.pack("<Q", len(s)) + s


def test_lying_gguf_headers():
    info = gguf_string(b"t") + struct.pack("<I", 1) + struct.pack("<Q", 4) + struct.pack("<IQ", 0, 0)
    cases = {
        "version": gguf_blob(0, [], b"", version=1),
        "huge kv count": gguf_blob(0, 2**62, b""),
        "huge tensor count": b"GGUF" + struct.pack("<IQQ", 3, 2**62, 0),
        "string past end": gguf_blob(0, [gguf_string(b"k") + struct.pack("<IQ", 8, 2**60)], b""),
        "huge string array": gguf_blob(0, [gguf_string(b"k") + struct.pack("<IIQ", 9, 8, 2**62)], b""),
        "huge number array": gguf_blob(0, [gguf_string(b"k") + struct.pack("<IIQ", 9, 6, 2**62)], b""),
        "nested array": gguf_blob(0, [gguf_string(b"k") + struct.pack("<IIQ", 9, 9, 1)], b""),
        "unknown type": gguf_blob(0, [gguf_string(b"k") + struct.pack("<I", 99)], b""),
        "data past end": gguf_blob(1, [], info, b"\0" * 8),
        "huge dims": gguf_blob(1, [], gguf_string(b"t") + struct.pack("<I", 2) + struct.pack("<QQ", 2**40, 2**40) + struct.pack("<IQ", 0, 0)),
        "too many dims": gguf_blob(1, [], gguf_string(b"t") + struct.pack("<I", 10**6)),
        "offset overflow": gguf_blob(1, [], gguf_string(b"t") + struct.pack("<I", 1) + struct.pack("<Q", 4) + struct.pack("<IQ", 0, 2**64 - 8)),
        "unknown tensor type": gguf_blob(1, [], gguf_string(b"t") + struct.pack("<I", 1) + struct.pack("<Q", 4) + struct.pack("<IQ", 13, 0), b"\0" * 64),
        "quantized shape": gguf_blob(1, [], gguf_string(b"t") + struct.pack("<I", 1) + struct.pack("<Q", 20) + struct.pack("<IQ", 8, 0), b"\0" * 64),
        "bad alignment": gguf_blob(0, [gguf_string(b"general.alignment") + struct.pack("<II", 4, 3)], b""),
        "duplicate": gguf_blob(2, [], info + info, b"\0" * 64),
    }  # fmt: skip
    for name, blob in cases.items():
        with check(name), pytest.raises(ValueError, match="load_gguf"):
            load_everything(blob, "gguf")


def test_lying_npz_entries(tmp_path):
    fx.savez(tmp_path / "z.npz", x=fx.arange(4))
    blob = bytearray((tmp_path / "z.npz").read_bytes())
    # The central directory's uncompressed size of the entry, made larger.
    central = blob.rindex(b"PK\x01\x02")
    blob[central + 24 : central + 28] = struct.pack("<I", 10**9)
    with pytest.raises(ValueError, match="load"):
        load_everything(bytes(blob), "npz")
    with pytest.raises(ValueError, match="zip"):
        load_everything(b"PK\x03\x04" + b"\0" * 50, "npz")
