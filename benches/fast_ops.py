"""ferrox.fast next to PyTorch's fused kernels on the same GPU, in one run.

Issue "convolutions and fast ops" targets (one H200, bf16):
  * layer_norm and rms_norm forward+backward over (16384, 4096) within 1.1x
    of PyTorch and at >= 80% of copy bandwidth;
  * attention forward+backward (batch 8, 16 heads, seq 4096, head dim 128,
    causal) within 1.25x of torch's scaled_dot_product_attention (its
    FlashAttention backend);
  * decode attention (1 query, 32k keys) at >= 70% of bandwidth.

Times are medians of --repeats runs of "enqueue, then wait for the GPU".
Ratios are ferrox time / PyTorch time (lower is better).

    python benches/fast_ops.py [--repeats 10] [--only norm,attention,decode]
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

    cases = [
        ("layer_norm", lambda x, w, b: fx.fast.layer_norm(x, w, b, 1e-5), lambda: F.layer_norm(x_t, (d,), w_t, b_t, 1e-5)),
        ("rms_norm", lambda x, w, b: fx.fast.rms_norm(x, w, 1e-5), lambda: F.rms_norm(x_t, (d,), w_t, 1e-5)),
    ]
    for name, fx_fn, torch_fn in cases:
        t_fx = median_time(lambda: fx.eval(fx_fn(x_fx, w_fx, b_fx)), fx_sync, repeats)
        t_t = median_time(torch_fn, torch_sync, repeats)
        # Forward: read x, write y (2 bytes each).
        row(f"{name} fwd (16384, 4096)", t_fx, t_t, f"{2 * nbytes / t_fx / 1e12:.2f} TB/s")
        vjp = lambda: fx.eval(fx.vjp(lambda x, w, b: fx_fn(x, w, b), [x_fx, w_fx, b_fx], [g_fx])[1])  # noqa: E731

        def torch_step():
            y = torch_fn()
            torch.autograd.grad(y, [x_t, w_t] + ([b_t] if name == "layer_norm" else []), g_t)

        t_fx = median_time(vjp, fx_sync, repeats)
        t_t = median_time(torch_step, torch_sync, repeats)
        # Forward + backward: read x, write y; read x, dy, write dx.
        row(f"{name} fwd+bwd (16384, 4096)", t_fx, t_t, f"{5 * nbytes / t_fx / 1e12:.2f} TB/s")


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


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--only", default="norm,attention,decode")
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


if __name__ == "__main__":
    main()
