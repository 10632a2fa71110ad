"""GPU convolutions without cuDNN: with FERROX_CUDNN=0 (read once per
process, so each check runs in a child process) float16 and bfloat16
convolutions run on the implicit-GEMM tensor-core kernels
(backend/cuda/conv_igemm.rs) and float32 on the im2col path. The forward
pass, the input gradient and the filter gradient of convolutions with
strides, asymmetric padding, kernel and input dilation, groups, flips,
1 to 3 spatial axes, odd sizes (the kernels' element-wise loaders,
zero-padded channels), input-dilated nodes split into phases (the input
gradient of a strided convolution; phases meeting no filter tap) and
transposed input views must match the CPU. Needs a CUDA GPU."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ferrox as fx

pytestmark = pytest.mark.skipif(not fx.cuda.is_available(), reason="needs a CUDA GPU")

# (input shape, filter shape, stride, lo, hi, kernel dilation, input dilation, groups, flip)
CASES = [
    # 3x3 "same", channels multiples of 8 and a batch of 8: the vector loaders.
    ((8, 12, 12, 16), (32, 3, 3, 16), [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], 1, False),
    # Stride 2 (the input gradient reads a dilated output gradient).
    ((8, 13, 11, 16), (24, 3, 3, 16), [2, 2], [1, 1], [1, 1], [1, 1], [1, 1], 1, False),
    # The ResNet stem's shape in small: 3 input channels (element loaders).
    ((8, 20, 20, 3), (16, 7, 7, 3), [2, 2], [3, 3], [3, 3], [1, 1], [1, 1], 1, False),
    # Asymmetric padding, kernel dilation, groups.
    ((8, 10, 9, 16), (16, 3, 2, 8), [1, 2], [2, 0], [1, 3], [2, 1], [1, 1], 2, False),
    # Odd batch and channel counts, more than one tile of output channels.
    ((5, 9, 7, 12), (160, 3, 3, 12), [1, 1], [1, 0], [0, 1], [1, 1], [1, 1], 1, True),
    # 1-D, transposed (input dilation), flipped, cropping.
    ((8, 17, 8), (8, 4, 8), [1], [2], [-1], [1], [2], 1, True),
    # 3-D.
    ((8, 5, 6, 4, 8), (16, 2, 3, 2, 8), [1, 2, 1], [0, 1, 1], [1, 0, 0], [1, 1, 2], [1, 1, 1], 1, False),
    # Depthwise-like: 4 groups of 8 channels.
    ((8, 9, 9, 32), (32, 3, 3, 8), [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], 4, False),
    # 1x1 with stride 2: input-gradient phases that meet no filter tap.
    ((8, 9, 9, 16), (16, 1, 1, 16), [2, 2], [0, 0], [0, 0], [1, 1], [1, 1], 1, False),
    # Transposed (input dilations 3 and 2), asymmetric padding, flipped,
    # 6 channels (zero-padded to 8 for the vector loaders).
    ((4, 10, 7, 6), (8, 3, 3, 6), [1, 1], [1, 2], [2, 1], [1, 1], [3, 2], 1, True),
    # Two groups of 3 channels (element loaders), stride on one axis.
    ((8, 9, 9, 6), (8, 3, 3, 3), [2, 1], [1, 1], [1, 1], [1, 1], [1, 1], 2, False),
    # 3-D with strides on two axes.
    ((8, 5, 6, 7, 8), (8, 3, 2, 3, 8), [2, 1, 2], [1, 0, 1], [1, 1, 0], [1, 1, 1], [1, 1, 1], 1, False),
]

TOL = {"float16": 4e-3, "bfloat16": 2.5e-2, "float32": 2e-3}


def _conv(case):
    _, _, stride, lo, hi, kdil, idil, groups, flip = case
    kw = dict(stride=stride, padding=(lo, hi), kernel_dilation=kdil, input_dilation=idil, groups=groups, flip=flip)
    return lambda x, w: fx.conv_general(x, w, **kw)


def _check(got, expected, tol, what):
    got = np.asarray(got, np.float64)
    expected = np.asarray(expected, np.float64)
    assert got.shape == expected.shape, what
    scale = max(float(np.abs(expected).max()), 1e-3)
    err = float(np.abs(got - expected).max())
    assert err <= tol * scale, f"{what}: max error {err:.3g} against scale {scale:.3g}"


def child(dtype_name):
    """Runs every case on the GPU (in `dtype_name`) and the CPU (float32
    from the same rounded values); raises on a mismatch."""
    dtype = getattr(fx, dtype_name)
    rng = np.random.default_rng(7)
    for i, case in enumerate(CASES):
        f = _conv(case)
        x = rng.standard_normal(case[0]).astype(np.float32)
        w = (rng.standard_normal(case[1]) / np.sqrt(np.prod(case[1][1:]))).astype(np.float32)
        with fx.stream(fx.cpu):
            out_shape = f(fx.array(x), fx.array(w)).shape
        ct = rng.standard_normal(out_shape).astype(np.float32)
        with fx.stream(fx.gpu):
            xg, wg, cg = (fx.array(a).astype(dtype) for a in (x, w, ct))
            # The same rounded values for the CPU, in float32.
            xr, wr, cr = (np.array(a.astype(fx.float32)) for a in (xg, wg, cg))
            variants = [("plain", xg)]
            if len(case[0]) == 4:
                # A channels-first array viewed channels-last (no unit channel stride).
                t = fx.array(np.ascontiguousarray(xr.transpose(0, 3, 1, 2))).astype(dtype)
                variants.append(("transposed view", fx.transpose(t, (0, 2, 3, 1))))
        with fx.stream(fx.cpu):
            (ye,), (dxe, dwe) = fx.vjp(f, [fx.array(xr), fx.array(wr)], [fx.array(cr)])
            ye, dxe, dwe = np.array(ye), np.array(dxe), np.array(dwe)
        for label, xgpu in variants:
            with fx.stream(fx.gpu):
                (y,), (dx, dw) = fx.vjp(f, [xgpu, wg], [cg])
                y, dx, dw = (np.array(a.astype(fx.float32)) for a in (y, dx, dw))
            tol = TOL[dtype_name]
            what = f"case {i} {case[:2]} ({label}, {dtype_name})"
            _check(y, ye, tol, what + " forward")
            _check(dx, dxe, tol, what + " input gradient")
            _check(dw, dwe, tol, what + " filter gradient")
    print("ok")


@pytest.mark.whole_process
@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16", "float32"])
def test_convolutions_without_cudnn_match_the_cpu(dtype_name):
    env = dict(os.environ, FERROX_CUDNN="0")
    out = subprocess.run(
        [sys.executable, __file__, dtype_name], env=env, capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stdout[-2000:] + out.stderr[-4000:]


if __name__ == "__main__":
    child(sys.argv[1])
