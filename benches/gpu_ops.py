"""ferrox's CUDA backend next to PyTorch on the same GPU, in one run.

Issue "CUDA backend" targets (one H200):
  * elementwise ops and copies at >= 85% of the measured copy bandwidth and
    no slower than PyTorch;
  * reductions within 1.1x of PyTorch's time;
  * bf16 matmul 8192^3 within 5% of PyTorch (both use cuBLAS);
  * per-op overhead of a loop of small ops within 1.5x of PyTorch eager.

Each case is timed as the median of --repeats runs of "enqueue, then wait for
the GPU" after a warm-up, with the same host clock for both frameworks.
Ratios are ferrox time / PyTorch time (lower is better).

    python benches/gpu_ops.py [--repeats 20] [--small 1000] [--only sort,take]
"""

import argparse
import statistics
import sys
import time

import numpy as np
import torch

import ferrox as fx

N = 256 << 20  # 256M elements
SIDE = 16384
MM = 8192
INNER = 5  # calls enqueued per timed sample in the throughput cases


def median_time(fn, sync, repeats, inner=1):
    """Median over `repeats` samples of the time per call of `fn`, where a
    sample enqueues `inner` calls back to back and then waits for the GPU
    (so the wait's latency is not charged to every call)."""
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        times.append((time.perf_counter() - t) / inner)
    return statistics.median(times)


def fx_run(make):
    return lambda: fx.eval(make())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--small", type=int, default=1000, help="ops in the launch-overhead loop")
    p.add_argument("--only", default="", help="run the cases whose name contains one of these (comma-separated)")
    a = p.parse_args()
    only = [w for w in a.only.split(",") if w]

    def wanted(name):
        return not only or any(w in name for w in only)
    if not fx.cuda.is_available() or not torch.cuda.is_available():
        sys.exit("gpu_ops.py needs a CUDA GPU visible to both ferrox and PyTorch")
    fx.set_default_device(fx.gpu)
    dev = torch.device("cuda")
    fsync, tsync = fx.synchronize, torch.cuda.synchronize
    rng = np.random.default_rng(0)

    # Inputs: random values (never zeros), the same data in both frameworks.
    host = rng.standard_normal(N, dtype=np.float32)
    host2 = rng.standard_normal(N, dtype=np.float32)
    fx_f32, fx_g32 = fx.array(host), fx.array(host2)
    fx_bf16, fx_gbf16 = fx_f32.astype(fx.bfloat16), fx_g32.astype(fx.bfloat16)
    t_f32, t_g32 = torch.from_numpy(host).to(dev), torch.from_numpy(host2).to(dev)
    t_bf16, t_gbf16 = t_f32.to(torch.bfloat16), t_g32.to(torch.bfloat16)
    hmat = host[: SIDE * SIDE].reshape(SIDE, SIDE)
    fx_mat = fx.array(hmat)
    t_mat = t_f32[: SIDE * SIDE].view(SIDE, SIDE)
    fx.eval(fx_f32, fx_g32, fx_bf16, fx_gbf16, fx_mat)
    del host, host2

    # The ceiling: a device-to-device copy, bytes read + written.
    copy_src = torch.empty(N, dtype=torch.float32, device=dev).normal_()
    copy_dst = torch.empty_like(copy_src)
    t_copy = median_time(lambda: copy_dst.copy_(copy_src), tsync, a.repeats, INNER)
    ceiling = 2 * N * 4 / t_copy
    del copy_src, copy_dst

    rows = []

    def bandwidth_case(name, nbytes, fx_fn, t_fn):
        if not wanted(name):
            return
        tf = median_time(fx_fn, fsync, a.repeats, INNER)
        tt = median_time(t_fn, tsync, a.repeats, INNER)
        rows.append((name, tf, tt, f"{nbytes / tf / 1e9:7.0f} GB/s ({nbytes / tf / ceiling:4.0%})"))

    def rate_case(name, flops, fx_fn, t_fn):
        if not wanted(name):
            return
        tf = median_time(fx_fn, fsync, a.repeats)
        tt = median_time(t_fn, tsync, a.repeats)
        rows.append((name, tf, tt, f"{flops / tf / 1e12:7.1f} TFLOP/s (torch {flops / tt / 1e12:.1f})"))

    bandwidth_case("add f32 256M", 3 * N * 4, fx_run(lambda: fx_f32 + fx_g32), lambda: t_f32 + t_g32)
    bandwidth_case("add bf16 256M", 3 * N * 2, fx_run(lambda: fx_bf16 + fx_gbf16), lambda: t_bf16 + t_gbf16)
    bandwidth_case("exp f32 256M", 2 * N * 4, fx_run(lambda: fx.exp(fx_f32)), lambda: torch.exp(t_f32))
    bandwidth_case("exp bf16 256M", 2 * N * 2, fx_run(lambda: fx.exp(fx_bf16)), lambda: torch.exp(t_bf16))
    bandwidth_case("sum f32 256M", N * 4, fx_run(lambda: fx.sum(fx_f32)), lambda: torch.sum(t_f32))
    side_bytes = SIDE * SIDE * 4
    for axis in (0, 1):
        bandwidth_case(
            f"sum axis {axis} 16384^2", side_bytes, fx_run(lambda: fx.sum(fx_mat, axis=axis)), lambda: t_mat.sum(dim=axis)
        )
        bandwidth_case(
            f"max axis {axis} 16384^2",
            side_bytes,
            fx_run(lambda: fx.max(fx_mat, axis=axis)),
            lambda: t_mat.amax(dim=axis),
        )
    bandwidth_case(
        "transpose copy 16384^2",
        2 * side_bytes,
        fx_run(lambda: fx.flatten(fx.transpose(fx_mat))),
        lambda: t_mat.t().contiguous(),
    )
    # Issue 9: scans, arg-reductions and random numbers at sizes that fill the GPU.
    bandwidth_case("cumsum f32 256M", 2 * N * 4, fx_run(lambda: fx.cumsum(fx_f32)), lambda: torch.cumsum(t_f32, 0))
    bandwidth_case(
        "cumsum axis -1 16384^2", 2 * side_bytes, fx_run(lambda: fx.cumsum(fx_mat, axis=-1)), lambda: t_mat.cumsum(1)
    )
    bandwidth_case(
        "cumsum axis 0 16384^2", 2 * side_bytes, fx_run(lambda: fx.cumsum(fx_mat, axis=0)), lambda: t_mat.cumsum(0)
    )
    bandwidth_case(
        "argmax axis -1 16384^2", side_bytes, fx_run(lambda: fx.argmax(fx_mat, axis=-1)), lambda: t_mat.argmax(1)
    )
    # Sorts (stable, as MLX's; torch.sort with stable=True): 1M float32 and
    # the rows of 1024 x 4096; bandwidth counts the bytes read and written.
    sort_1m, sort_rows = fx_f32[: 1 << 20], fx_mat[:1024, :4096]
    t_sort_1m, t_sort_rows = t_f32[: 1 << 20], t_mat[:1024, :4096].contiguous()
    fx_sort_rows = fx.contiguous(sort_rows)
    fx.eval(sort_1m, fx_sort_rows)
    for name, fx_in, t_in in (("1M", sort_1m, t_sort_1m), ("1024x4096", fx_sort_rows, t_sort_rows)):
        nbytes = 2 * fx_in.size * 4
        bandwidth_case(f"sort f32 {name}", nbytes, fx_run(lambda: fx.sort(fx_in)),
                       lambda: torch.sort(t_in, dim=-1, stable=True))
        bandwidth_case(f"argsort f32 {name}", nbytes, fx_run(lambda: fx.argsort(fx_in)),
                       lambda: torch.argsort(t_in, dim=-1, stable=True))
    key = fx.random.key(0)
    gen = torch.Generator(device=dev)
    t_out = torch.empty(N, dtype=torch.float32, device=dev)
    bandwidth_case(
        "random.normal f32 256M", N * 4, fx_run(lambda: fx.random.normal((N,), key=key)),
        lambda: t_out.normal_(generator=gen),
    )
    bandwidth_case(
        "random.uniform f32 256M", N * 4, fx_run(lambda: fx.random.uniform(shape=(N,), key=key)),
        lambda: t_out.uniform_(generator=gen),
    )
    # Gather and scatter: 64M random positions of a 256M vector, rows of a
    # matrix, and accumulation with many repeats (`.at[].add`, index_add_).
    M = N // 4
    t_idx = torch.randint(0, N, (M,), device=dev)
    fx_idx = fx.array(t_idx.cpu().numpy())
    bandwidth_case("take f32 64M of 256M", M * (4 + 8 + 4), fx_run(lambda: fx.take(fx_f32, fx_idx)), lambda: t_f32[t_idx])
    t_rows = torch.randint(0, SIDE, (SIDE // 2,), device=dev)
    fx_rows = fx.array(t_rows.cpu().numpy())
    bandwidth_case(
        "take rows 8192 of 16384^2", side_bytes, fx_run(lambda: fx.take(fx_mat, fx_rows, axis=0)),
        lambda: t_mat.index_select(0, t_rows),
    )
    t_small = torch.randint(0, 1 << 20, (M,), device=dev)
    fx_small = fx.array(t_small.cpu().numpy())
    fx_zeros, t_zeros = fx.zeros(1 << 20), torch.zeros(1 << 20, device=dev)
    fx_vals, t_vals = fx_f32[:M], t_f32[:M]
    bandwidth_case(
        ".at[].add 64M into 1M", M * (4 + 8), fx_run(lambda: fx_zeros.at[fx_small].add(fx_vals)),
        lambda: t_zeros.index_add(0, t_small, t_vals),
    )
    del t_out
    del fx_f32, fx_g32, fx_bf16, fx_gbf16, t_f32, t_g32, t_bf16, t_gbf16, fx_mat, t_mat
    fx.clear_cache()
    torch.cuda.empty_cache()

    ha = rng.standard_normal((MM, MM), dtype=np.float32)
    hb = rng.standard_normal((MM, MM), dtype=np.float32)
    flops = 2 * MM**3
    for dtname, fdt, tdt in (("bf16", fx.bfloat16, torch.bfloat16), ("f32", fx.float32, torch.float32)):
        if not wanted(f"matmul {dtname} 8192^3"):
            continue
        fa, fb = fx.array(ha).astype(fdt), fx.array(hb).astype(fdt)
        ta, tb = torch.from_numpy(ha).to(dev, tdt), torch.from_numpy(hb).to(dev, tdt)
        fx.eval(fa, fb)
        rate_case(f"matmul {dtname} 8192^3", flops, fx_run(lambda: fa @ fb), lambda: ta @ tb)
        del fa, fb, ta, tb

    # Launch overhead: a chain of small elementwise ops, waited on once.
    fs = fx.ones((1024,))
    ts = torch.ones(1024, device=dev)
    fx.eval(fs)

    def fx_loop():
        x = fs
        for _ in range(a.small):
            x = x * 1.0001
        fx.eval(x)

    def t_loop():
        x = ts
        for _ in range(a.small):
            x = x * 1.0001

    if wanted("small ops"):
        tf = median_time(fx_loop, fsync, max(3, a.repeats // 4))
        tt = median_time(t_loop, tsync, max(3, a.repeats // 4))
        rows.append((f"{a.small} small ops (per op)", tf / a.small, tt / a.small, ""))

    print(f"device: {fx.cuda.device_name()}; copy bandwidth (torch copy_, read+write): {ceiling / 1e9:.0f} GB/s")
    print(f"{'case':<28}{'ferrox':>11}{'torch':>11}{'ratio':>8}  throughput (ferrox)")
    for name, tf, tt, note in rows:
        unit, scale = ("us", 1e6) if tf < 1e-3 else ("ms", 1e3)
        print(f"{name:<28}{tf * scale:>9.3f}{unit}{tt * scale:>9.3f}{unit}{tf / tt:>8.2f}  {note}")


if __name__ == "__main__":
    main()
