"""ferrox.fast.cuda_kernel and precompiled_cuda_kernel: MLX's custom CUDA kernels.

On every machine: argument checking with MLX's messages, the errors for a
CPU stream or a missing GPU, and metal_kernel's missing back-end. On a CUDA
GPU: MLX's own custom-kernel tests (basic, arguments and templates, strides,
helpers, attributes, same name with different sources), the elementwise exp
of MLX's documentation, init_value with atomics, several outputs, 2-d grids,
cooperative groups, shared memory beyond 48 KiB, every dtype, compile
errors, transforms and export refusing the kernel, and precompiled PTX and
cubin kernels (compiled here with NVRTC) with scalar arguments.
(crates/ferrox/tests/custom_kernel.rs checks that the generated sources
compile with NVRTC on machines without a GPU.)
"""

import ctypes
import os

import numpy as np
import pytest

import ferrox as fx

from conftest import to_fx, to_np

GPU = fx.cuda.is_available()
# GPU tests choose their stream themselves, so they run once rather than
# once per default device.
gpu_test = [pytest.mark.skipif(not GPU, reason="needs a CUDA GPU"), pytest.mark.whole_process]

ELEM = "auto elem = cooperative_groups::this_grid().thread_rank();\n"
NO_GPU = "no CUDA GPU is available on this machine"
CPU_STREAM = "the stream runs on the CPU"


def copy_kernel(name="copy"):
    return fx.fast.cuda_kernel(name=name, input_names=["inp"], output_names=["out"],
                               source=ELEM + "out[elem] = inp[elem];")


def call(kernel, inputs, shapes, dtypes, grid=(4, 1, 1), threadgroup=(4, 1, 1), **kw):
    return kernel(inputs=inputs, output_shapes=shapes, output_dtypes=dtypes, grid=grid, threadgroup=threadgroup, **kw)


# ---- on every machine ----


def test_creation_checks_names_and_outputs():
    with pytest.raises(ValueError, match=r"^\[custom_kernel\] Must specify at least one output\.$"):
        fx.fast.cuda_kernel(name="k", input_names=["a"], output_names=[], source="")
    with pytest.raises(ValueError, match=r"\[custom_kernel\] The input name \"1a\" is not a valid C\+\+ identifier"):
        fx.fast.cuda_kernel(name="k", input_names=["1a"], output_names=["out"], source="")
    with pytest.raises(ValueError, match=r"\[custom_kernel\] The name \"a\" is used twice"):
        fx.fast.cuda_kernel(name="k", input_names=["a"], output_names=["a"], source="")
    with pytest.raises(ValueError, match="letters, digits and underscores"):
        fx.fast.cuda_kernel(name="my kernel", input_names=["a"], output_names=["b"], source="")
    with pytest.raises(ValueError, match=r"\[cuda_kernel\] shared_memory must be in \[0, 2\*\*31\)"):
        fx.fast.cuda_kernel(name="k", input_names=["a"], output_names=["b"], source="", shared_memory=-1)
    with pytest.raises(TypeError):
        fx.fast.cuda_kernel(name="k", input_names="a", output_names=["b"], source="")
    k = fx.fast.cuda_kernel("k", ["a"], ["b"], "b[0] = a[0];", "", False, 1024)  # MLX's positional order
    assert isinstance(k, fx.fast.CudaKernel)


def test_calls_check_arguments_with_mlx_messages():
    k = fx.fast.cuda_kernel(name="k", input_names=["a", "b"], output_names=["out"], source="out[0] = a[0];")
    a, b = fx.zeros((4,)), fx.zeros((4,))
    cpu = dict(stream=fx.cpu)
    with pytest.raises(ValueError, match=r"^\[custom_kernel\] Expected `inputs` to have size 2 but got size 1\.$"):
        call(k, [a], [(4,)], [fx.float32], **cpu)
    with pytest.raises(ValueError, match=r"^\[custom_kernel\] Expected `output_shapes` to have size 1 but got size 2\.$"):
        call(k, [a, b], [(4,), (4,)], [fx.float32], **cpu)
    with pytest.raises(ValueError, match=r"^\[custom_kernel\] Expected `output_dtypes` to have size 1 but got size 0\.$"):
        call(k, [a, b], [(4,)], [], **cpu)
    msg = r"^\[cuda_kernel\] Invalid template argument\. Must be `ferrox\.Dtype`, `int` or `bool`\.$"
    with pytest.raises(ValueError, match=msg):
        call(k, [a, b], [(4,)], [fx.float32], template=[("T", 1.5)], **cpu)
    with pytest.raises(TypeError, match="pairs"):
        call(k, [a, b], [(4,)], [fx.float32], template=[("T",)], **cpu)
    with pytest.raises(ValueError, match="used twice"):
        call(k, [a, b], [(4,)], [fx.float32], template=[("a", 1)], **cpu)
    with pytest.raises(ValueError, match="does not fit an int"):
        call(k, [a, b], [(4,)], [fx.float32], template=[("N", 2**40)], **cpu)
    shaped = fx.fast.cuda_kernel(name="k", input_names=["a"], output_names=["out"], source="out[0] = a_shape[0];")
    with pytest.raises(ValueError, match=r"Input \"a\" has 11 dimensions; its layout parameters hold at most 10\."):
        call(shaped, [fx.zeros((1,) * 11)], [(1,)], [fx.float32], **cpu)
    with pytest.raises(TypeError, match=r"\[cuda_kernel\] Expected a list or tuple of arrays"):
        call(k, a, [(4,)], [fx.float32], **cpu)
    with pytest.raises(TypeError, match="output shape must be a list or tuple"):
        call(k, [a, b], [4], [fx.float32], **cpu)
    with pytest.raises(ValueError, match="Negative dimensions"):
        call(k, [a, b], [(-1,)], [fx.float32], **cpu)
    with pytest.raises(TypeError, match="ferrox.Dtype"):
        call(k, [a, b], [(4,)], ["float32"], **cpu)
    with pytest.raises(ValueError, match="`grid` must have 3 entries"):
        call(k, [a, b], [(4,)], [fx.float32], grid=(4, 1), **cpu)
    with pytest.raises(ValueError, match=r"`grid` must hold ints in \[0, 2\*\*31\)"):
        call(k, [a, b], [(4,)], [fx.float32], grid=(-4, 1, 1), **cpu)
    with pytest.raises(TypeError, match="`threadgroup` must hold ints"):
        call(k, [a, b], [(4,)], [fx.float32], threadgroup=(4.0, 1, 1), **cpu)
    with pytest.raises(ValueError, match=r"threadgroup must be positive, got \(0, 1, 1\)"):
        call(k, [a, b], [(4,)], [fx.float32], threadgroup=(0, 1, 1), **cpu)
    with pytest.raises(ValueError, match=r"A block of \(64, 64, 1\) threads exceeds CUDA's limits"):
        call(k, [a, b], [(4,)], [fx.float32], grid=(64, 64, 1), threadgroup=(64, 64, 1), **cpu)
    # The threadgroup is capped by the grid, as in MLX: (2048, 1, 1) over 100 threads is one block of 100.
    with pytest.raises(ValueError, match="Only supports the GPU"):
        call(k, [a, b], [(4,)], [fx.float32], grid=(100, 1, 1), threadgroup=(2048, 1, 1), **cpu)


def test_kernels_need_a_gpu_stream():
    k = copy_kernel()
    x = fx.zeros((4,))
    with pytest.raises(ValueError, match=r"^\[custom_kernel\] Only supports the GPU; (%s|%s)\.$" % (CPU_STREAM, NO_GPU)):
        call(k, [x], [(4,)], [fx.float32], stream=fx.cpu)
    with pytest.raises(ValueError, match=r"^\[precompiled_cuda_kernel\] Only supports the GPU;"):
        fx.fast.precompiled_cuda_kernel(name="k", compiled_source=b"x", inputs=[x], output_shapes=[(4,)],
                                        output_dtypes=[fx.float32], scalars=[], grid=(4, 1, 1),
                                        threadgroup=(4, 1, 1), stream=fx.cpu)
    if GPU:
        with pytest.raises(ValueError, match=CPU_STREAM):
            call(k, [x], [(4,)], [fx.float32], stream=fx.cpu)
    else:
        with pytest.raises(ValueError, match=NO_GPU):
            call(k, [x], [(4,)], [fx.float32])
        with pytest.raises(ValueError, match=r"^\[cuda_kernel\] Device\(gpu, 0\) is not available"):
            call(k, [x], [(4,)], [fx.float32], stream=fx.gpu)
        with pytest.raises(ValueError, match=NO_GPU), fx.stream(fx.cpu):
            call(k, [x], [(4,)], [fx.float32])


def test_precompiled_kernels_check_arguments():
    def pre(**kw):
        args = dict(name="k", compiled_source=b"ptx", inputs=[fx.zeros((4,))], output_shapes=[(4,)],
                    output_dtypes=[fx.float32], scalars=[], grid=(4, 1, 1), threadgroup=(4, 1, 1), stream=fx.cpu)
        return fx.fast.precompiled_cuda_kernel(**{**args, **kw})

    msg = r"^\[precompiled_cuda_kernel\] Invalid scalar argument type\. Received str but must be one of bool, int or float$"
    with pytest.raises(ValueError, match=msg):
        pre(scalars=[1, "x"])
    with pytest.raises(ValueError, match="does not fit an int"):
        pre(scalars=[2**31])
    with pytest.raises(ValueError, match=r"Expected `output_dtypes` to have size 1 but got size 2\."):
        pre(output_dtypes=[fx.float32, fx.int32])
    with pytest.raises(ValueError, match="at least one output"):
        pre(output_shapes=[], output_dtypes=[])
    with pytest.raises(ValueError, match="compiled source is empty"):
        pre(compiled_source=b"")
    with pytest.raises(TypeError):
        pre(compiled_source="not bytes")
    with pytest.raises(TypeError):
        fx.fast.precompiled_cuda_kernel("k", b"ptx", [], [(4,)], [fx.float32], [], (4, 1, 1), (4, 1, 1))
    with pytest.raises(ValueError, match="Only supports the GPU"):
        pre(scalars=[True, 3, 2.5])


def test_metal_kernel_names_the_missing_backend():
    k = fx.fast.metal_kernel(name="k", input_names=["a"], output_names=["b"], source="b[0] = a[0];",
                             compile_options={"math_mode": "fast"})
    with pytest.raises(RuntimeError, match=r"^\[metal_kernel\] No Metal back-end\.$"):
        k(inputs=[fx.zeros((1,))], output_shapes=[(1,)], output_dtypes=[fx.float32], grid=(1, 1, 1),
          threadgroup=(1, 1, 1))
    with pytest.raises(ValueError, match=r"^\[metal_kernel\] Must specify at least one output\.$"):
        fx.fast.metal_kernel(name="k", input_names=["a"], output_names=[], source="")
    with pytest.raises(ValueError, match=r"^\[metal_kernel\] Expected math_mode to be 'safe', 'relaxed', or 'fast'\.$"):
        fx.fast.metal_kernel(name="k", input_names=[], output_names=["b"], source="", compile_options={"math_mode": "x"})
    with pytest.raises(ValueError, match=r"^\[metal_kernel\] Unknown compile option `opt`\.$"):
        fx.fast.metal_kernel(name="k", input_names=[], output_names=["b"], source="", compile_options={"opt": 1})


def test_metal_kernel_calls_are_recorded_for_export(tmp_path):
    # As MLX's builds without Metal: export records the call on the GPU
    # (shapeless too), refuses another stream, and running it raises.
    k = fx.fast.metal_kernel(name="copy", input_names=["a"], output_names=["out"],
                             source="uint e = thread_position_in_grid.x; out[e] = a[e];")

    def call(a, stream=fx.gpu):
        return k(inputs=[a], grid=(a.size, 1, 1), threadgroup=(min(a.size, 256), 1, 1), output_shapes=[a.shape],
                 output_dtypes=[a.dtype], template=[("T", fx.float32), ("N", 4), ("B", True)], stream=stream)[0]

    a = fx.zeros((2, 2))
    for shapeless in (False, True):
        path = str(tmp_path / f"k{shapeless}.mlxfn")
        fx.export_function(path, call, a, shapeless=shapeless)
        with pytest.raises(RuntimeError, match="No Metal back-end"):
            fx.eval(fx.import_function(path)(a))
    with pytest.raises(ValueError, match=r"^\[metal_kernel\] Only supports the GPU\.$"):
        fx.export_function(str(tmp_path / "cpu.mlxfn"), lambda a: call(a, fx.cpu), a)
    with pytest.raises(ValueError, match="Expected `output_shapes` to have size 1"):
        fx.export_function(str(tmp_path / "bad.mlxfn"), lambda a: k(inputs=[a], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                                                                    output_shapes=[], output_dtypes=[]), a)
    with pytest.raises(RuntimeError, match="No Metal back-end"):
        call(a)
    with pytest.raises(RuntimeError, match="No Metal back-end"):
        fx.eval(fx.compile(call)(a))


# ---- on a GPU ----


@pytest.fixture
def on_gpu():
    with fx.stream(fx.gpu):
        yield


@pytest.mark.usefixtures("on_gpu")
class TestOnGpu:
    pytestmark = gpu_test

    def test_exp_elementwise_of_mlx_docs(self, rng, capsys):
        source = """
            auto elem = cooperative_groups::this_grid().thread_rank();
            T tmp = inp[elem];
            out[elem] = exp(tmp);
        """
        kernel = fx.fast.cuda_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=source)
        x = rng.standard_normal((16, 16)).astype(np.float16)
        a = fx.array(x)
        (b,) = kernel(inputs=[a], template=[("T", fx.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
                      output_shapes=[a.shape], output_dtypes=[a.dtype], verbose=True)
        assert b.dtype == fx.float16 and b.shape == (16, 16)
        np.testing.assert_allclose(np.array(b).astype(np.float64), np.exp(x.astype(np.float64)), rtol=1e-3)
        printed = capsys.readouterr().out
        assert printed.startswith("Generated source code for `custom_kernel_myexp_float`:\n```\n")
        assert "    const __half* inp,\n    __half* out) {\n  using T = float;\n" in printed

    def test_basic(self, rng):
        x = rng.standard_normal((2, 2)).astype(np.float32)
        out = call(copy_kernel("basic"), [fx.array(x)], [(2, 2)], [fx.float32], grid=(4, 1, 1), threadgroup=(2, 1, 1))
        assert isinstance(out, list) and len(out) == 1
        np.testing.assert_array_equal(np.array(out[0]), x)

    def test_arguments_and_templates_of_mlx(self, rng):
        source = ELEM + """
            T tmp = a[0];
            if (e) {
                out1[elem] = a[1] + b[2] + static_cast<float>(c[3]) + d[0] + f;
            } else {
                out1[elem] = 1;
            }
            out2[elem] = a[1] + b[2] + static_cast<float>(c[1]) - d[0];
        """
        kernel = fx.fast.cuda_kernel(name="arg_test", input_names=["a", "b", "c", "d"],
                                     output_names=["out1", "out2"], source=source)
        a = rng.standard_normal((3, 6)).astype(np.float32)
        c = to_fx(rng.standard_normal((2, 2)).astype(np.float32), "bfloat16")
        cn = to_np(c).reshape(-1)
        for e in (True, False):
            out1, out2 = kernel(inputs=[fx.array(a), fx.array([3, 4, 5]), c, 7.3],
                                template=[("e", e), ("f", 3), ("T", fx.float16)], grid=(6, 1, 1),
                                threadgroup=(2, 1, 1), output_shapes=[(3, 2), (3, 2)],
                                output_dtypes=[fx.float32, fx.int32])
            d = np.float32(7.3)
            want1 = np.float32(a.flat[1]) + np.float32(5) + np.float32(cn[3]) + d + np.float32(3) if e else 1.0
            want2 = np.trunc(np.float32(a.flat[1]) + np.float32(5) + np.float32(cn[1]) - d)
            np.testing.assert_allclose(np.array(out1), np.full((3, 2), want1, np.float32), rtol=1e-6)
            assert out2.dtype == fx.int32
            np.testing.assert_array_equal(np.array(out2), np.full((3, 2), want2, np.int32))

    def test_strided_inputs(self, rng):
        strided = ELEM + """
            auto loc = elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim);
            T tmp = inp[loc];
            out[elem] = exp(tmp) * WARP_SIZE;
        """
        contiguous = ELEM + "T tmp = inp[elem];\nout[elem] = exp(tmp) * WARP_SIZE;"
        base = rng.standard_normal((6, 8)).astype(np.float32)
        row = rng.standard_normal((1, 8)).astype(np.float32)
        views = [
            (lambda v: v[::2], base, lambda v: v[::2]),
            (lambda v: v.T, base, lambda v: v.T),
            (lambda v: v[::-1, 1:7:2], base, lambda v: v[::-1, 1:7:2]),
            (lambda v: fx.broadcast_to(v, (5, 8)), row, lambda v: np.broadcast_to(v, (5, 8))),
            (lambda v: v[2:], base, lambda v: v[2:]),
        ]
        for contig in (True, False):
            kernel = fx.fast.cuda_kernel(name="myexp" + str(contig), input_names=["inp"], output_names=["out"],
                                         source=contiguous if contig else strided, ensure_row_contiguous=contig)
            for view, data, ref in views:
                x = view(fx.array(data))
                (y,) = kernel(inputs=[x], template=[("T", fx.float32)], grid=(x.size, 1, 1),
                              threadgroup=(256, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
                np.testing.assert_allclose(np.array(y), np.exp(ref(data).astype(np.float64)) * 32, rtol=1e-5)

    def test_header_helpers_need_no_device_qualifier(self, rng):
        header = "template <typename T>\nT do_exp(T x) {\n    return exp(x);\n}\n"
        kernel = fx.fast.cuda_kernel(name="helper", input_names=["a"], output_names=["out1"], header=header,
                                     source=ELEM + "out1[elem] = do_exp(a[elem]);")
        x = rng.standard_normal((2, 2)).astype(np.float32)
        (out,) = call(kernel, [fx.array(x)], [(2, 2)], [fx.float32], grid=(4, 1, 1), threadgroup=(2, 1, 1))
        np.testing.assert_allclose(np.array(out), np.exp(x.astype(np.float64)), rtol=1e-6)

    def test_the_grid_counts_threads_and_caps_the_block(self):
        kernel = fx.fast.cuda_kernel(name="test_fun", input_names=["a"], output_names=["out"],
                                     source="out[0] = blockDim.x; out[1] = gridDim.x;")
        a = fx.zeros((1, 1))
        for grid, tg, want in [((2, 1, 1), (2, 1, 1), [2, 1]), ((3, 1, 1), (8, 1, 1), [3, 1]),
                               ((10, 1, 1), (4, 1, 1), [4, 3])]:
            (out,) = call(kernel, [a], [(2,)], [fx.uint32], grid=grid, threadgroup=tg)
            assert out.dtype == fx.uint32 and out.tolist() == want, (grid, tg)

    def test_two_dimensional_grid(self, rng):
        source = """
            int x = blockIdx.x * blockDim.x + threadIdx.x;
            int y = blockIdx.y * blockDim.y + threadIdx.y;
            if (x < W && y < H) {
                out[x * H + y] = inp[y * W + x];
            }
        """
        kernel = fx.fast.cuda_kernel(name="transpose", input_names=["inp"], output_names=["out"], source=source)
        h, w = 21, 37
        data = rng.standard_normal((h, w)).astype(np.float32)
        (out,) = kernel(inputs=[fx.array(data)], template=[("W", w), ("H", h)], grid=(w, h, 1),
                        threadgroup=(16, 8, 1), output_shapes=[(w, h)], output_dtypes=[fx.float32])
        np.testing.assert_array_equal(np.array(out), data.T)

    def test_same_name_different_source_in_one_eval(self):
        def run(a, source):
            kernel = fx.fast.cuda_kernel(name="dup_name", input_names=["inp"], output_names=["out"], source=source)
            return call(kernel, [a], [a.shape], [a.dtype], grid=(a.size, 1, 1), threadgroup=(a.size, 1, 1))[0]

        a = fx.arange(32, dtype=fx.float32)
        out_a = run(a, ELEM + "out[elem] = inp[elem] * 2.0f;")
        out_b = run(a, ELEM + "out[elem] = inp[elem] + 100.0f;")
        fx.eval(out_a, out_b)
        np.testing.assert_array_equal(np.array(out_a), np.arange(32) * 2.0)
        np.testing.assert_array_equal(np.array(out_b), np.arange(32) + 100.0)

    def test_init_value_with_atomics_and_several_outputs(self, rng):
        source = ELEM + """
            if (elem < N) {
                atomicAdd(&total[0], inp[elem]);
                atomicMax(&largest[0], static_cast<int>(inp[elem] * 1000.0f));
                doubled[elem] = 2.0 * inp[elem];
            }
        """
        kernel = fx.fast.cuda_kernel(name="stats", input_names=["inp"], output_names=["total", "largest",
                                     "doubled", "untouched"], source=source)
        n = 1000
        data = rng.uniform(-1, 1, n).astype(np.float32)
        outs = kernel(inputs=[fx.array(data)], template=[("N", n)], grid=(n, 1, 1), threadgroup=(128, 1, 1),
                      output_shapes=[(1,), (1,), (n,), (3, 2)],
                      output_dtypes=[fx.float32, fx.int32, fx.float64, fx.int16], init_value=-7.0)
        total, largest, doubled, untouched = (np.array(o) for o in outs)
        np.testing.assert_allclose(total, [data.astype(np.float64).sum() - 7.0], rtol=1e-4, atol=1e-3)
        assert largest.tolist() == [max(-7, int(np.trunc(data * np.float32(1000)).max()))]
        np.testing.assert_array_equal(doubled, 2.0 * data.astype(np.float64))
        assert untouched.dtype == np.int16 and (untouched == -7).all()

    def test_cooperative_groups(self, rng):
        source = """
            auto block = cg::this_thread_block();
            auto warp = cg::tiled_partition<32>(block);
            auto quad = cg::tiled_partition<4>(block);
            auto i = cg::this_grid().thread_rank();
            float v = inp[i];
            float s = cg::reduce(warp, v, cg::plus<float>());
            float hi = cg::reduce(quad, v, cg::greater<float>());
            float lo = cg::reduce(quad, v, cg::less<float>());
            if (warp.thread_rank() == 0) {
                sums[i / 32] = s;
            }
            if (quad.thread_rank() == 0) {
                maxs[i / 4] = hi;
                mins[i / 4] = lo;
            }
            shifted[i] = warp.shfl_down(v, 1u);
            ranks[i] = quad.meta_group_rank() * 100 + quad.thread_rank();
        """
        kernel = fx.fast.cuda_kernel(name="groups", input_names=["inp"],
                                     output_names=["sums", "maxs", "mins", "shifted", "ranks"], source=source)
        n = 256
        data = rng.standard_normal(n).astype(np.float32)
        sums, maxs, mins, shifted, ranks = (np.array(o) for o in kernel(
            inputs=[fx.array(data)], grid=(n, 1, 1), threadgroup=(128, 1, 1),
            output_shapes=[(n // 32,), (n // 4,), (n // 4,), (n,), (n,)],
            output_dtypes=[fx.float32, fx.float32, fx.float32, fx.float32, fx.int32]))
        np.testing.assert_allclose(sums, data.reshape(-1, 32).astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(maxs, data.reshape(-1, 4).max(1))
        np.testing.assert_array_equal(mins, data.reshape(-1, 4).min(1))
        lanes = np.arange(n) % 32
        want = np.where(lanes < 31, np.roll(data, -1), data)  # the last lane keeps its own value
        np.testing.assert_array_equal(shifted, want)
        t = np.arange(n) % 128
        np.testing.assert_array_equal(ranks, (t // 4) * 100 + t % 4)

    @pytest.mark.parametrize("shared_memory", [1024, 64 * 1024])
    def test_dynamic_shared_memory(self, rng, shared_memory):
        # Each block reverses its elements through the far end of the shared memory.
        source = """
            extern __shared__ float smem[];
            constexpr int last = SMEM / sizeof(float) - 1;
            unsigned int t = threadIdx.x;
            unsigned int i = blockIdx.x * blockDim.x + t;
            smem[last - t] = inp[i];
            __syncthreads();
            out[i] = smem[last - (blockDim.x - 1 - t)];
        """
        kernel = fx.fast.cuda_kernel(name="reverse", input_names=["inp"], output_names=["out"], source=source,
                                     shared_memory=shared_memory)
        data = rng.standard_normal(512).astype(np.float32)
        (out,) = kernel(inputs=[fx.array(data)], grid=(512, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(512,)],
                        output_dtypes=[fx.float32], template=[("SMEM", shared_memory)])
        np.testing.assert_array_equal(np.array(out), data.reshape(2, 256)[:, ::-1].reshape(-1))

    def test_half_bfloat16_and_complex_elements(self, rng):
        source = ELEM + """
            h_out[elem] = h[elem] * 2 + 1;
            b_out[elem] = b[elem] + 1.0f;
            z_out[elem] = z[elem] * z[elem] + ferrox::cu::complex64_t(0.0f, 1.0f);
            re_out[elem] = z[elem].real() - z[elem].imag();
        """
        kernel = fx.fast.cuda_kernel(name="elements", input_names=["h", "b", "z"],
                                     output_names=["h_out", "b_out", "z_out", "re_out"], source=source)
        n = 64
        h = rng.standard_normal(n).astype(np.float16)
        b = to_fx(rng.standard_normal(n).astype(np.float32), "bfloat16")
        z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
        h_out, b_out, z_out, re_out = kernel(inputs=[fx.array(h), b, fx.array(z)], grid=(n, 1, 1),
                                             threadgroup=(32, 1, 1), output_shapes=[(n,)] * 4,
                                             output_dtypes=[fx.float16, fx.bfloat16, fx.complex64, fx.float32])
        np.testing.assert_allclose(np.array(h_out).astype(np.float64), h.astype(np.float64) * 2 + 1, rtol=1e-3,
                                   atol=1e-3)
        np.testing.assert_allclose(to_np(b_out), to_np(b) + 1, rtol=1e-2, atol=1e-2)
        np.testing.assert_allclose(np.array(z_out), z * z + 1j, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.array(re_out), z.real - z.imag, rtol=1e-6)

    @pytest.mark.parametrize("dtype", ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                                       "int64", "float16", "bfloat16", "float32", "float64", "complex64"])
    def test_every_dtype_passes_through(self, rng, dtype):
        kernel = fx.fast.cuda_kernel(name="copy", input_names=["x"], output_names=["y"],
                                     source=ELEM + "if (elem < 10) { y[elem] = x[elem]; }")
        data = rng.integers(0, 100, 10)
        x = to_fx(data > 50 if dtype == "bool_" else data, dtype)
        (y,) = call(kernel, [x], [(10,)], [x.dtype], grid=(10, 1, 1), threadgroup=(8, 1, 1))
        assert y.dtype == x.dtype
        np.testing.assert_array_equal(to_np(y), to_np(x))

    def test_compile_errors_are_reported(self):
        kernel = fx.fast.cuda_kernel(name="broken", input_names=["x"], output_names=["y"],
                                     source="y[0] = undefined_name;")
        (y,) = call(kernel, [fx.zeros((1,))], [(1,)], [fx.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1))
        with pytest.raises(ValueError, match="undefined_name"):
            fx.eval(y)

    def test_transforms_and_export_refuse_custom_kernels(self, tmp_path):
        kernel = copy_kernel("copy_t")

        def f(x):
            return call(kernel, [x], [x.shape], [x.dtype])[0]

        x = fx.ones((4,))
        with pytest.raises(ValueError, match=r"^\[Primitive::vjp\] Not implemented for CustomKernel\.$"):
            fx.grad(lambda v: f(v).sum())(x)
        with pytest.raises(ValueError, match=r"^\[Primitive::jvp\] Not implemented for CustomKernel\.$"):
            fx.jvp(lambda v: f(v), [x], [x])
        with pytest.raises(ValueError, match=r"^\[Primitive::vmap\] Not implemented for CustomKernel\.$"):
            fx.vmap(f)(fx.ones((3, 4)))
        with pytest.raises(ValueError, match="The primitive CustomKernel cannot be exported"):
            fx.export_function(str(tmp_path / "k.mlxfn"), f, x)

    def test_runs_on_the_stream_given(self, rng):
        data = rng.standard_normal(64).astype(np.float32)
        s = fx.new_stream(fx.gpu)
        (y,) = call(copy_kernel(), [fx.array(data) * 3], [(64,)], [fx.float32], grid=(64, 1, 1),
                    threadgroup=(32, 1, 1), stream=s)
        np.testing.assert_array_equal(np.array(y + 1), data * 3 + 1)

    @pytest.mark.parametrize("image", ["ptx", "cubin"])
    def test_precompiled_kernels(self, rng, image):
        source = r"""
            extern "C" __global__ void axpb(const float* x, const int* shift, float* out, float* count,
                                            float a, int n, bool negate) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) {
                    float v = a * x[i] + shift[i];
                    out[i] = negate ? -v : v;
                    count[i] += 1.0f;
                }
            }
        """
        arch = fx.device_info(fx.gpu)["architecture"]
        target = arch.replace("sm_", "compute_") if image == "ptx" else arch
        binary = nvrtc_compile(source, target, image)
        n = 300
        x = rng.standard_normal((20, n // 20)).astype(np.float32)
        shift = rng.integers(-5, 5, n).astype(np.int32)
        # x is transposed: ensure_row_contiguous hands the kernel its elements in row-major order.
        for negate in (False, True):
            out, count = fx.fast.precompiled_cuda_kernel(
                name="axpb", compiled_source=binary, inputs=[fx.array(x).T, fx.array(shift)],
                output_shapes=[(n,), (n + 4,)], output_dtypes=[fx.float32, fx.float32],
                scalars=[2.5, n, negate], grid=(n, 1, 1), threadgroup=(128, 1, 1), init_value=2.0,
                ensure_row_contiguous=True)
            want = np.float32(2.5) * x.T.reshape(-1) + shift
            np.testing.assert_allclose(np.array(out), -want if negate else want, rtol=1e-6, atol=1e-6)  # fma
            np.testing.assert_array_equal(np.array(count), [3.0] * n + [2.0] * 4)
        (missing,) = fx.fast.precompiled_cuda_kernel(
            name="no_such_kernel", compiled_source=binary, inputs=[], output_shapes=[(1,)],
            output_dtypes=[fx.float32], scalars=[], grid=(1, 1, 1), threadgroup=(1, 1, 1))
        with pytest.raises(ValueError, match="no kernel named"):
            fx.eval(missing)


# ---- NVRTC through ctypes, for the precompiled kernels ----


def _nvrtc():
    """The NVRTC library ferrox uses (from LD_LIBRARY_PATH or the nvidia wheel)."""
    names = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    try:
        import nvidia

        names += [os.path.join(p, "cu13", "lib", "libnvrtc.so.13") for p in nvidia.__path__]
    except ImportError:
        pass
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise AssertionError("NVRTC is needed to build the precompiled kernels and was not found")


def nvrtc_compile(source, arch, image):
    """`source` compiled by NVRTC for `arch` to PTX or a cubin (bytes)."""
    lib = _nvrtc()
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"precompiled.cu", 0, None, None) == 0
    try:
        options = (ctypes.c_char_p * 1)(f"--gpu-architecture={arch}".encode())
        if lib.nvrtcCompileProgram(prog, 1, options) != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            raise AssertionError(log.value.decode())
        get_size, get = ((lib.nvrtcGetPTXSize, lib.nvrtcGetPTX) if image == "ptx"
                         else (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN))
        size = ctypes.c_size_t()
        assert get_size(prog, ctypes.byref(size)) == 0
        buf = ctypes.create_string_buffer(size.value)
        assert get(prog, buf) == 0
        return buf.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
