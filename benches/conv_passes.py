"""Where a convolution's time goes: ResNet-50's shapes (bfloat16, batch 64,
channels-last), the forward pass, the input gradient and the filter
gradient timed one by one, ferrox beside PyTorch (cuDNN) in one run.

    python benches/conv_passes.py [--repeats 10]
    FERROX_CUDNN=0 python benches/conv_passes.py   # ferrox's own kernels

Each ferrox pass is one evaluated node of the `Convolution` vjp (the
others stay lazy and unevaluated); PyTorch runs the matching
`torch.nn.grad` routine. Needs a CUDA GPU."""

import argparse
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from fast_ops import RESNET50_CONVS, bf16_pair, fx_sync, median_time, torch_sync  # noqa: E402

import ferrox as fx  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--batch", type=int, default=64)
    a = p.parse_args()
    fx.set_default_device(fx.gpu)
    rng = np.random.default_rng(0)
    mode = "ferrox kernels (FERROX_CUDNN=0)" if os.environ.get("FERROX_CUDNN") == "0" else "cuDNN"
    print(f"convolution passes, ms (ferrox: {mode}; ratio ferrox / PyTorch)")
    print(f"{'shape':<24}{'forward':>22}{'input grad':>22}{'filter grad':>22}")
    sums = np.zeros((3, 2))
    for name, hw, cin, cout, k, stride in RESNET50_CONVS:
        pad = k // 2
        ho = (hw + 2 * pad - k) // stride + 1
        x_fx, x_t = bf16_pair((a.batch, hw, hw, cin), rng)
        w_fx, w_t = bf16_pair((cout, k, k, cin), rng, scale=(k * k * cin) ** -0.5)
        g_fx, g_t = bf16_pair((a.batch, ho, ho, cout), rng)
        x_t, w_t, g_t = (t.permute(0, 3, 1, 2) for t in (x_t, w_t, g_t))

        def conv(x, w):
            return fx.conv2d(x, w, stride=stride, padding=pad)  # noqa: B023

        fx_runs = [
            lambda: fx.eval(conv(x_fx, w_fx)),  # noqa: B023
            lambda: fx.eval(fx.vjp(lambda x: conv(x, w_fx), [x_fx], [g_fx])[1]),  # noqa: B023
            lambda: fx.eval(fx.vjp(lambda w: conv(x_fx, w), [w_fx], [g_fx])[1]),  # noqa: B023
        ]
        torch_runs = [
            lambda: F.conv2d(x_t, w_t, stride=stride, padding=pad),  # noqa: B023
            lambda: torch.nn.grad.conv2d_input(x_t.shape, w_t, g_t, stride=stride, padding=pad),  # noqa: B023
            lambda: torch.nn.grad.conv2d_weight(x_t, w_t.shape, g_t, stride=stride, padding=pad),  # noqa: B023
        ]
        cells = []
        for i, (f, t) in enumerate(zip(fx_runs, torch_runs)):
            tf, tt = median_time(f, fx_sync, a.repeats), median_time(t, torch_sync, a.repeats)
            sums[i] += (tf, tt)
            cells.append(f"{tf * 1e3:7.3f}/{tt * 1e3:6.3f} {tf / tt:5.2f}x")
        print(f"{name:<24}" + "".join(f"{c:>22}" for c in cells))
    print(f"{'all shapes':<24}" + "".join(f"{f'{s[0] * 1e3:7.3f}/{s[1] * 1e3:6.3f} {s[0] / s[1]:5.2f}x':>22}" for s in sums))


if __name__ == "__main__":
    main()
