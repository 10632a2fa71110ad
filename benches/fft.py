"""FFT benchmark: ferrox beside NumPy on the CPU and beside PyTorch on the GPU.

Targets (issue "Linear algebra and FFT"):
  * CPU, against NumPy (pocketfft, complex64/float32 as NumPy 2 computes
    them): fft and rfft of 2**20 points and of 1,000,003 points, each
    within 1.5x NumPy's time (ratio = ferrox ms / numpy ms <= 1.5);
  * GPU, against PyTorch (both cuFFT) on the same card: fft of 2**26
    complex64 points and rfft2 of 64 x 1024 x 1024 float32, each within
    1.25x PyTorch's time.

ferrox is lazy, so every timed ferrox call is "build the op + evaluate"
(on the GPU: enqueue, then wait for the device, for both frameworks).
Each case reports the median of --repeats runs after a warm-up (which
also makes both frameworks' plans).

Usage:  python benches/fft.py [--repeats N] [--only SUBSTRING] [--device cpu|gpu|all]
"""

import argparse
import statistics
import time

import numpy as np

import ferrox as fx


def median_ms(fn, sync, repeats, warmup=2):
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
    print(f"{name:<34} {ours:9.3f} {theirs:9.3f} {reference:>8} {ratio:7.2f}  (target <= {target}) {verdict}", flush=True)
    return ratio


def cpu_cases(rng, repeats, only):
    print(f"{'CPU case':<34} {'ferrox ms':>9} {'ref ms':>9} {'ref':>8} {'ratio':>7}")
    fx.set_default_device(fx.cpu)
    nothing = lambda: None  # noqa: E731  (the CPU has nothing to wait for)
    for n in (1 << 20, 1_000_003):
        c = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
        r = rng.standard_normal(n).astype(np.float32)
        fc, fr = fx.array(c), fx.array(r)
        fx.eval(fc, fr)
        cases = [
            (f"fft complex64 n={n}", lambda: fx.eval(fx.fft.fft(fc)), lambda: np.fft.fft(c)),
            (f"rfft float32 n={n}", lambda: fx.eval(fx.fft.rfft(fr)), lambda: np.fft.rfft(r)),
        ]
        for name, ours, theirs in cases:
            if only in name:
                row(name, median_ms(ours, nothing, repeats), median_ms(theirs, nothing, repeats), "numpy", 1.5)


def gpu_cases(rng, repeats, only):
    import torch

    print(f"{'GPU case (' + torch.cuda.get_device_name() + ')':<34} {'ferrox ms':>9} {'ref ms':>9} {'ref':>8} {'ratio':>7}")
    fx.set_default_device(fx.gpu)
    sync = lambda: (fx.synchronize(), torch.cuda.synchronize())  # noqa: E731
    n = 1 << 26
    c = (rng.standard_normal(n, dtype=np.float32) + 1j * rng.standard_normal(n, dtype=np.float32)).astype(np.complex64)
    fc, tc = fx.array(c), torch.from_numpy(c).cuda()
    img = rng.standard_normal((64, 1024, 1024), dtype=np.float32)
    fi, ti = fx.array(img), torch.from_numpy(img).cuda()
    fx.eval(fc, fi)
    del c, img
    cases = [
        ("fft complex64 n=2**26", lambda: fx.eval(fx.fft.fft(fc)), lambda: torch.fft.fft(tc)),
        ("rfft2 float32 64x1024x1024", lambda: fx.eval(fx.fft.rfft2(fi)), lambda: torch.fft.rfft2(ti)),
        ("ifft complex64 n=2**26", lambda: fx.eval(fx.fft.ifft(fc)), lambda: torch.fft.ifft(tc)),
        ("irfft2 of 64x1024x513", lambda: fx.eval(fx.fft.irfft2(spec)), lambda: torch.fft.irfft2(tspec)),
    ]
    spec = fx.fft.rfft2(fi)
    tspec = torch.fft.rfft2(ti)
    fx.eval(spec)
    for name, ours, theirs in cases:
        if only in name:
            row(name, median_ms(ours, sync, repeats), median_ms(theirs, sync, repeats), "torch", 1.25)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=10)
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
