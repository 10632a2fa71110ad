"""Linear algebra benchmark: ferrox beside NumPy (LAPACK) on the CPU and
beside PyTorch (cuSOLVER) on the GPU.

Targets (issue "Linear algebra and FFT"):
  * CPU, float64, against NumPy: solve, cholesky, qr, svd and eigh at
    512 x 512 and 1024 x 1024, each within 1.5x NumPy's time;
  * GPU, against PyTorch: batched solve, cholesky and qr (1024 x 64 x 64),
    eigh (256 x 128 x 128), a single 4096 x 4096 solve and svd, each within
    1.25x PyTorch's time. Both run cuSOLVER and cuBLAS underneath.

Every timed ferrox call is "build the op + evaluate" (on the GPU: and wait
for the device, for both frameworks); each case reports the median of
--repeats runs after a warm-up.

Usage:  python benches/linalg.py [--repeats N] [--only SUBSTRING] [--device cpu|gpu|all]
"""

import argparse
import statistics
import time

import numpy as np

import ferrox as fx


def median_ms(fn, sync, repeats, warmup=1):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def row(name, ours, theirs, reference, target):
    ratio = ours / theirs
    verdict = "ok" if ratio <= target else "SLOW"
    print(f"{name:<32} {ours:10.2f} {theirs:10.2f} {reference:>6} {ratio:7.2f}  (target <= {target}) {verdict}", flush=True)


def spd(rng, shape):
    """Symmetric positive definite matrices of `shape` (float64)."""
    x = rng.standard_normal(shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def cpu_cases(rng, repeats, only):
    print(f"{'CPU case (float64)':<32} {'ferrox ms':>10} {'ref ms':>10} {'ref':>6} {'ratio':>7}")
    fx.set_default_device(fx.cpu)
    nothing = lambda: None  # noqa: E731
    for n in (512, 1024):
        a = rng.standard_normal((n, n))
        s = spd(rng, (n, n))
        b = rng.standard_normal((n, n))
        fa, fs, fb = fx.array(a), fx.array(s), fx.array(b)
        cases = [
            ("solve", lambda: fx.eval(fx.linalg.solve(fa, fb)), lambda: np.linalg.solve(a, b)),
            ("cholesky", lambda: fx.eval(fx.linalg.cholesky(fs)), lambda: np.linalg.cholesky(s)),
            ("qr", lambda: fx.eval(*fx.linalg.qr(fa)), lambda: np.linalg.qr(a)),
            ("svd", lambda: fx.eval(*fx.linalg.svd(fa)), lambda: np.linalg.svd(a)),
            ("eigh", lambda: fx.eval(*fx.linalg.eigh(fs)), lambda: np.linalg.eigh(s)),
        ]
        for name, ours, theirs in cases:
            label = f"{name} {n}x{n}"
            if only in label:
                row(label, median_ms(ours, nothing, repeats), median_ms(theirs, nothing, repeats), "numpy", 1.5)


def gpu_cases(rng, repeats, only):
    import torch

    print(f"{'GPU case (' + torch.cuda.get_device_name() + ')':<32} {'ferrox ms':>10} {'ref ms':>10} {'ref':>6} {'ratio':>7}")
    fx.set_default_device(fx.gpu)
    sync = lambda: (fx.synchronize(), torch.cuda.synchronize())  # noqa: E731
    f32 = np.float32
    small = rng.standard_normal((1024, 64, 64)).astype(f32)
    small_spd = spd(rng, (1024, 64, 64)).astype(f32)
    rhs = rng.standard_normal((1024, 64, 1)).astype(f32)
    mid_spd = spd(rng, (256, 128, 128)).astype(f32)
    big = rng.standard_normal((4096, 4096)).astype(f32)
    big_rhs = rng.standard_normal((4096, 1)).astype(f32)
    F = {k: fx.array(v) for k, v in dict(small=small, small_spd=small_spd, rhs=rhs, mid=mid_spd, big=big, big_rhs=big_rhs).items()}
    T = {k: torch.from_numpy(v).cuda() for k, v in dict(small=small, small_spd=small_spd, rhs=rhs, mid=mid_spd, big=big, big_rhs=big_rhs).items()}
    fx.eval(*F.values())
    cases = [
        ("solve 1024x64x64", lambda: fx.eval(fx.linalg.solve(F["small"], F["rhs"])), lambda: torch.linalg.solve(T["small"], T["rhs"])),
        ("cholesky 1024x64x64", lambda: fx.eval(fx.linalg.cholesky(F["small_spd"])), lambda: torch.linalg.cholesky(T["small_spd"])),
        ("qr 1024x64x64", lambda: fx.eval(*fx.linalg.qr(F["small"])), lambda: torch.linalg.qr(T["small"])),
        ("eigh 256x128x128", lambda: fx.eval(*fx.linalg.eigh(F["mid"])), lambda: torch.linalg.eigh(T["mid"])),
        ("solve 4096x4096", lambda: fx.eval(fx.linalg.solve(F["big"], F["big_rhs"])), lambda: torch.linalg.solve(T["big"], T["big_rhs"])),
        ("svd 4096x4096", lambda: fx.eval(*fx.linalg.svd(F["big"])), lambda: torch.linalg.svd(T["big"])),
    ]
    for name, ours, theirs in cases:
        if only in name:
            row(name, median_ms(ours, sync, repeats), median_ms(theirs, sync, repeats), "torch", 1.25)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--only", default="")
    p.add_argument("--device", default="all", choices=["cpu", "gpu", "all"])
    a = p.parse_args()
    rng = np.random.default_rng(0)
    if a.device in ("cpu", "all"):
        cpu_cases(rng, a.repeats, a.only)
    if a.device in ("gpu", "all"):
        if fx.cuda.is_available():
            gpu_cases(rng, a.repeats, a.only)
        else:
            print("no GPU: the GPU cases are skipped")


if __name__ == "__main__":
    main()
