"""ferrox.fast next to PyTorch's fused kernels on the same GPU, in one run.

Issue "convolutions and fast ops" targets (one H200, bf16):
  * layer_norm and rms_norm forward+backward over (16384, 4096) within 1.1x
    of PyTorch and at >= 80% of copy bandwidth;
  * attention forward+backward (batch 8, 16 heads, seq 4096, head dim 128,
    causal) within 1.25x of torch's scaled_dot_product_attention (its
    FlashAttention backend);
  * decode attention (1 query, 32k keys) at >= 70% of bandwidth;
  * conv2d over ResNet-50's layer shapes (batch 64, forward+backward) within
    1.2x of PyTorch (cuDNN, channels-last).

Times are medians of --repeats runs of "enqueue, then wait for the GPU".
Ratios are ferrox time / PyTorch time (lower is better).

    python benches/fast_ops.py [--repeats 10] [--only norm,attention,decode,conv]
"""

import argparse
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

import ferrox as fx


def median_time(fn, sync, repeats):
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def torch_sync():
    torch.cuda.synchronize()


def fx_sync():
    fx.synchronize()


def bf16_pair(shape, rng, scale=1.0):
    x = (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32)
    return fx.array(x).astype(fx.bfloat16), torch.tensor(x, device="cuda").to(torch.bfloat16)


def row(name, t_fx, t_torch, extra=""):
    print(f"{name:<44} {t_fx * 1e3:9.3f} {t_torch * 1e3:9.3f} {t_fx / t_torch:7.2f}  {extra}")


def bench_norms(repeats, rng):
    rows, d = 16384, 4096
    x_fx, x_t = bf16_pair((rows, d), rng)
    w_fx, w_t = bf16_pair((d,), rng)
    b_fx, b_t = bf16_pair((d,), rng)
    g_fx, g_t = bf16_pair((rows, d), rng)
    nbytes = rows * d * 2
    x_t.requires_grad_(True)
    w_t.requires_grad_(True)
    b_t.requires_grad_(True)

    # Copy bandwidth: a ferrox copy (read + write) of 4 x's worth of bf16,
    # large enough that the per-call wait does not count.
    big = fx.zeros((4 * rows, d), dtype=fx.bfloat16)
    fx.eval(big)
    t_copy = median_time(lambda: fx.eval(big + 0), fx_sync, repeats)
    copy_bw = 8 * nbytes / t_copy
    print(f"{'copy (65536, 4096) bf16':<44} {t_copy * 1e3:9.3f} {'':>9} {'':>7}  {copy_bw / 1e12:.2f} TB/s")
    del big

    def bandwidth(moved, t):
        return f"{moved / t / 1e12:.2f} TB/s, {100 * moved / t / copy_bw:.0f}% of copy"

    cases = [
        ("layer_norm", lambda x, w, b: fx.fast.layer_norm(x, w, b, 1e-5), lambda: F.layer_norm(x_t, (d,), w_t, b_t, 1e-5)),
        ("rms_norm", lambda x, w, b: fx.fast.rms_norm(x, w, 1e-5), lambda: F.rms_norm(x_t, (d,), w_t, 1e-5)),
    ]
    for name, fx_fn, torch_fn in cases:
        t_fx = median_time(lambda: fx.eval(fx_fn(x_fx, w_fx, b_fx)), fx_sync, repeats)
        t_t = median_time(torch_fn, torch_sync, repeats)
        # Forward: read x, write y (2 bytes each).
        row(f"{name} fwd (16384, 4096)", t_fx, t_t, bandwidth(2 * nbytes, t_fx))
        vjp = lambda: fx.eval(fx.vjp(lambda x, w, b: fx_fn(x, w, b), [x_fx, w_fx, b_fx], [g_fx])[1])  # noqa: E731

        def torch_step():
            y = torch_fn()
            torch.autograd.grad(y, [x_t, w_t] + ([b_t] if name == "layer_norm" else []), g_t)

        t_fx = median_time(vjp, fx_sync, repeats)
        t_t = median_time(torch_step, torch_sync, repeats)
        # Forward + backward: read x, write y; read x, dy, write dx.
        row(f"{name} fwd+bwd (16384, 4096)", t_fx, t_t, bandwidth(5 * nbytes, t_fx))


def bench_attention(repeats, rng, b=8, h=16, s=4096, d=128):
    q_fx, q_t = bf16_pair((b, h, s, d), rng)
    k_fx, k_t = bf16_pair((b, h, s, d), rng)
    v_fx, v_t = bf16_pair((b, h, s, d), rng)
    g_fx, g_t = bf16_pair((b, h, s, d), rng)
    scale = d**-0.5
    flops = 4 * b * h * s * s * d / 2  # causal: half the score matrix
    fwd = lambda: fx.eval(fx.fast.scaled_dot_product_attention(q_fx, k_fx, v_fx, scale=scale, mask="causal"))  # noqa: E731
    t_fx = median_time(fwd, fx_sync, repeats)
    t_t = median_time(lambda: F.scaled_dot_product_attention(q_t, k_t, v_t, is_causal=True), torch_sync, repeats)
    row(f"attention fwd ({b},{h},{s},{d}) causal", t_fx, t_t, f"{flops / t_fx / 1e12:.0f} TFLOP/s vs {flops / t_t / 1e12:.0f}")

    def fx_step():
        f = lambda q, k, v: fx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask="causal")  # noqa: E731
        fx.eval(fx.vjp(f, [q_fx, k_fx, v_fx], [g_fx])[1])

    for t in (q_t, k_t, v_t):
        t.requires_grad_(True)

    def torch_step():
        y = F.scaled_dot_product_attention(q_t, k_t, v_t, is_causal=True)
        torch.autograd.grad(y, [q_t, k_t, v_t], g_t)

    t_fx = median_time(fx_step, fx_sync, repeats)
    t_t = median_time(torch_step, torch_sync, repeats)
    row(f"attention fwd+bwd ({b},{h},{s},{d}) causal", t_fx, t_t, f"{3.5 * flops / t_fx / 1e12:.0f} TFLOP/s vs {3.5 * flops / t_t / 1e12:.0f}")


def bench_decode(repeats, rng, b=1, h=32, s=32768, d=128):
    q_fx, q_t = bf16_pair((b, h, 1, d), rng)
    k_fx, k_t = bf16_pair((b, h, s, d), rng)
    v_fx, v_t = bf16_pair((b, h, s, d), rng)
    nbytes = 2 * b * h * s * d * 2
    t_fx = median_time(lambda: fx.eval(fx.fast.scaled_dot_product_attention(q_fx, k_fx, v_fx, scale=d**-0.5)), fx_sync, repeats)
    t_t = median_time(lambda: F.scaled_dot_product_attention(q_t, k_t, v_t), torch_sync, repeats)
    row(f"decode attention (1 query, {s} keys, {h} heads)", t_fx, t_t, f"{nbytes / t_fx / 1e12:.2f} TB/s vs {nbytes / t_t / 1e12:.2f}")


# ResNet-50's distinct convolutions: (name, H=W of the input, C_in, C_out,
# kernel, stride); padding keeps "same" sizes (kernel // 2).
RESNET50_CONVS = [
    ("stem 7x7/2 3->64 @224", 224, 3, 64, 7, 2),
    ("1x1 64->64 @56", 56, 64, 64, 1, 1),
    ("3x3 64->64 @56", 56, 64, 64, 3, 1),
    ("1x1 64->256 @56", 56, 64, 256, 1, 1),
    ("1x1 256->64 @56", 56, 256, 64, 1, 1),
    ("3x3/2 128->128 @56", 56, 128, 128, 3, 2),
    ("3x3 128->128 @28", 28, 128, 128, 3, 1),
    ("1x1 512->128 @28", 28, 512, 128, 1, 1),
    ("3x3 256->256 @14", 14, 256, 256, 3, 1),
    ("1x1 1024->256 @14", 14, 1024, 256, 1, 1),
    ("3x3 512->512 @7", 7, 512, 512, 3, 1),
    ("1x1 512->2048 @7", 7, 512, 2048, 1, 1),
]


def bench_conv(repeats, rng, batch=64):
    """Forward+backward (input and weight gradients) of each ResNet-50 shape."""
    total_fx = total_t = 0.0
    for name, hw, cin, cout, k, stride in RESNET50_CONVS:
        pad = k // 2
        ho = (hw + 2 * pad - k) // stride + 1
        x_fx, x_t = bf16_pair((batch, hw, hw, cin), rng)
        w_fx, w_t = bf16_pair((cout, k, k, cin), rng, scale=(k * k * cin) ** -0.5)
        g_fx, g_t = bf16_pair((batch, ho, ho, cout), rng)
        # torch: NCHW views of channels-last memory, so cuDNN runs NHWC kernels.
        x_t = x_t.permute(0, 3, 1, 2).requires_grad_(True)
        w_t = w_t.permute(0, 3, 1, 2).requires_grad_(True)
        g_t = g_t.permute(0, 3, 1, 2)
        f = lambda x, w: fx.conv2d(x, w, stride=stride, padding=pad)  # noqa: E731, B023
        t_fx = median_time(lambda: fx.eval(fx.vjp(f, [x_fx, w_fx], [g_fx])[1]), fx_sync, repeats)  # noqa: B023

        def torch_step():
            y = F.conv2d(x_t, w_t, stride=stride, padding=pad)  # noqa: B023
            torch.autograd.grad(y, [x_t, w_t], g_t)  # noqa: B023

        t_t = median_time(torch_step, torch_sync, repeats)
        flops = 3 * 2 * batch * ho * ho * cout * k * k * cin
        row(f"conv2d fwd+bwd {name}", t_fx, t_t, f"{flops / t_fx / 1e12:.0f} TFLOP/s vs {flops / t_t / 1e12:.0f}")
        total_fx += t_fx
        total_t += t_t
    row("conv2d fwd+bwd, all shapes above", total_fx, total_t)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--only", default="norm,attention,decode,conv")
    a = p.parse_args()
    assert fx.cuda.is_available(), "needs a GPU"
    fx.set_default_device(fx.gpu)
    rng = np.random.default_rng(0)
    print(f"{'case':<44} {'ferrox ms':>9} {'torch ms':>9} {'ratio':>7}")
    only = a.only.split(",")
    if "norm" in only:
        bench_norms(a.repeats, rng)
    if "attention" in only:
        bench_attention(a.repeats, rng)
    if "decode" in only:
        bench_decode(a.repeats, rng)
    if "conv" in only:
        bench_conv(a.repeats, rng)


if __name__ == "__main__":
    main()
