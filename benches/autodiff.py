"""Cost of the backward pass of an MLP step relative to its forward pass.

Target (issue: function transforms): backward <= 2.2x forward, on the CPU and
on the GPU, for 4 layers of 4096 units, batch 1024, float32. The backward
time is (forward + backward via value_and_grad) minus forward. PyTorch's
ratio is printed beside ferrox's when torch is installed.

    python benches/autodiff.py [--layers 4 --width 4096 --batch 1024 --repeats 3]
"""

import argparse
import statistics
import time

import numpy as np

import ferrox as fx


def median_time(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def ferrox_ratio(layers, width, batch, repeats):
    rng = np.random.default_rng(0)
    ws = [fx.array(rng.standard_normal((width, width), dtype=np.float32) / np.sqrt(width)) for _ in range(layers)]
    x = fx.array(rng.standard_normal((batch, width), dtype=np.float32))
    fx.eval(ws, x)

    def loss(params, inputs):
        h = inputs
        for w in params:
            h = fx.maximum(h @ w, 0.0)
        return fx.mean(h * h)

    step = fx.value_and_grad(loss)

    def run(f):
        fx.eval(f(ws, x))
        fx.synchronize()

    forward = median_time(lambda: run(loss), repeats)
    both = median_time(lambda: run(step), repeats)
    return forward, both - forward


def torch_ratio(layers, width, batch, repeats, device):
    import torch

    g = torch.Generator().manual_seed(0)
    ws = [(torch.randn(width, width, generator=g) / width**0.5).to(device).requires_grad_() for _ in range(layers)]
    x = torch.randn(batch, width, generator=g).to(device)

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    def forward():
        with torch.no_grad():
            h = x
            for w in ws:
                h = torch.relu(h @ w)
            (h * h).mean().item()
        sync()

    def both():
        h = x
        for w in ws:
            h = torch.relu(h @ w)
        (h * h).mean().backward()
        sync()

    f = median_time(forward, repeats)
    return f, median_time(both, repeats) - f


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=4096)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    device = "gpu" if fx.cuda.is_available() else "cpu"
    rows = [("ferrox", device, *ferrox_ratio(a.layers, a.width, a.batch, a.repeats))]
    try:
        import torch  # noqa: F401

        tdev = "cuda" if device == "gpu" else "cpu"
        rows.append(("torch", tdev, *torch_ratio(a.layers, a.width, a.batch, a.repeats, tdev)))
    except ImportError:
        pass
    print(f"MLP {a.layers}x{a.width}, batch {a.batch}, float32")
    print(f"{'framework':<10}{'device':<8}{'forward ms':>12}{'backward ms':>13}{'bwd/fwd':>9}  target <= 2.2")
    for name, dev, f, b in rows:
        print(f"{name:<10}{dev:<8}{f * 1e3:>12.1f}{b * 1e3:>13.1f}{b / f:>9.2f}  {'yes' if b / f <= 2.2 else 'NO'}")


if __name__ == "__main__":
    main()
