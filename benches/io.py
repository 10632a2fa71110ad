"""Loading and saving safetensors: ferrox beside the safetensors package.

Issue "Files and interop" targets:
  * loading a 2 GB safetensors file (many tensors) to the CPU within 1.1x of
    the safetensors package's own loader on a warm page cache;
  * loading it to the GPU within 1.2x of safetensors' torch loader (H200);
  * saving within 1.2x of the package's saver.

NumPy has no bfloat16, so the CPU rows against safetensors' NumPy loader use
a float16 file; with PyTorch installed, bfloat16 rows against its torch
loader (CPU, and GPU when present) are added. Each time is the median of
--repeats runs after a warm-up run (which also warms the page cache).
Ratios are ferrox time / reference time (lower is better).

    python benches/io.py [--gb 2] [--tensors 256] [--repeats 5] [--dir /tmp]
"""

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import safetensors.numpy

import ferrox as fx

try:
    import safetensors.torch
    import torch
except ImportError:  # PyTorch is optional here
    torch = None


def median_time(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def fx_load(path):
    loaded = fx.load(path)
    fx.eval(list(loaded.values()))
    return loaded


def fx_load_gpu(path):
    with fx.stream(fx.gpu):
        loaded = fx.load(path)
        fx.eval(list(loaded.values()))
    fx.synchronize()
    return loaded


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gb", type=float, default=2.0)
    p.add_argument("--tensors", type=int, default=256)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--dir", default=tempfile.gettempdir())
    args = p.parse_args()

    per_tensor = int(args.gb * 2**30) // args.tensors // 2  # 2-byte elements
    side = int(per_tensor**0.5)
    rng = np.random.default_rng(0)
    base = rng.standard_normal((side, side)).astype(np.float16)
    arrays = {f"layer.{i}.weight": base + np.float16(i % 7) for i in range(args.tensors)}
    total = sum(a.nbytes for a in arrays.values())
    theirs = os.path.join(args.dir, "ferrox_bench_theirs.safetensors")
    ours = os.path.join(args.dir, "ferrox_bench_ours.safetensors")
    rows = []

    fx_arrays = {k: fx.array(v) for k, v in arrays.items()}
    fx.eval(list(fx_arrays.values()))
    t_save_ref = median_time(lambda: safetensors.numpy.save_file(arrays, theirs), args.repeats)
    t_save_fx = median_time(lambda: fx.save_safetensors(ours, fx_arrays), args.repeats)
    rows.append(("save f16 (numpy)", t_save_fx, t_save_ref, 1.2))

    t_ref = median_time(lambda: safetensors.numpy.load_file(theirs), args.repeats)
    t_fx = median_time(lambda: fx_load(theirs), args.repeats)
    rows.append(("load f16 to CPU (numpy)", t_fx, t_ref, 1.1))
    check = fx_load(theirs)
    assert all(np.array_equal(np.array(check[k]), arrays[k]) for k in list(arrays)[:4])
    del check

    if torch is not None:
        bf = {k: torch.from_numpy(v.astype(np.float32)).to(torch.bfloat16) for k, v in arrays.items()}
        bf_path = os.path.join(args.dir, "ferrox_bench_bf16.safetensors")
        safetensors.torch.save_file(bf, bf_path)
        del bf
        def torch_cpu():
            # torch's CPU tensors view the memory-mapped file without reading
            # it; cloning reads every byte into memory, as ferrox's load does.
            return [t.clone() for t in safetensors.torch.load_file(bf_path, device="cpu").values()]

        t_ref = median_time(torch_cpu, args.repeats)
        t_fx = median_time(lambda: fx_load(bf_path), args.repeats)
        rows.append(("load bf16 to CPU (torch, read)", t_fx, t_ref, 1.1))
        if torch.cuda.is_available() and fx.cuda.is_available():

            def torch_gpu():
                safetensors.torch.load_file(bf_path, device="cuda")
                torch.cuda.synchronize()

            t_ref = median_time(torch_gpu, args.repeats)
            t_fx = median_time(lambda: fx_load_gpu(bf_path), args.repeats)
            rows.append(("load bf16 to GPU (torch)", t_fx, t_ref, 1.2))
        os.remove(bf_path)
    os.remove(theirs)
    os.remove(ours)

    print(f"\n{total / 2**30:.2f} GiB in {args.tensors} tensors; median of {args.repeats}")
    print(f"{'case':28s} {'ferrox':>10s} {'reference':>10s} {'ratio':>7s} {'target':>7s}")
    for name, ours_t, ref_t, target in rows:
        ratio = ours_t / ref_t
        flag = "ok" if ratio <= target else "MISS"
        print(f"{name:28s} {ours_t * 1e3:8.1f}ms {ref_t * 1e3:8.1f}ms {ratio:7.2f} {target:6.2f}x {flag}")


if __name__ == "__main__":
    main()
