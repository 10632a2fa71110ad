"""compile: compiled vs uncompiled ferrox, with torch.compile beside it on the GPU.

Issue "compile" targets:
  * GELU (erf form) over 32 x 1000 x 4096 float32: compiled >= 4x faster
    than uncompiled on the GPU, >= 85% of copy bandwidth, no slower than
    torch.compile; >= 2x faster than uncompiled on the CPU.
  * the elementwise tail of a transformer MLP block (bias + GELU +
    residual add) over the same shape.
  * a reduction fused with its chain: sum((x - b)**2, axis=-1).
  * a chain of 1,000 small ops that cannot fuse into one kernel (16 x 16
    matmuls interleaved with elementwise ops): time per op.
  * a training step: the GPT-2-small step of benches/train_step.py has its
    own compiled row there (--ferrox-compile); here a small MLP step.

Each row: median seconds of a call plus a device synchronization, after a
warmup (which traces). An eager row and its compiled row are timed in
alternation (eager, compiled, eager, ...), so a machine whose speed drifts
during the run (a shared VM) slows both alike and their ratio stays fair.
Copy bandwidth is measured with the device's own copy of the input (read +
write of the same bytes as GELU).

    python benches/compile.py [--device gpu|cpu] [--size 32,1000,4096] [--repeats 10] [--only gelu,tail,reduce,small,train]
"""

import argparse
import statistics
import time

import numpy as np


def median_time(fn, sync, warmup=2, repeats=10):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def paired_times(fns, sync, warmup, repeats):
    """Median seconds per call of each of `fns`, timed in alternation."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    sync()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, ts in zip(fns, times):
            start = time.perf_counter()
            fn()
            sync()
            ts.append(time.perf_counter() - start)
    return [statistics.median(ts) for ts in times]


def gelu_fx(fx):
    return lambda x: x * (1 + fx.erf(x / 1.4142135623730951)) / 2


def tail_fx(fx):
    gelu = gelu_fx(fx)
    return lambda x, b, r: gelu(x + b) + r


def small_chain_fx(fx, n_ops):
    """n_ops ops: matmuls of 16 x 16 matrices interleaved with elementwise ops."""

    def chain(x, w):
        for i in range(n_ops // 2):
            x = x @ w
            x = fx.tanh(x) if i % 2 else x * 0.5
        return x

    return chain


def ferrox_rows(args, rows):
    import ferrox as fx

    dev = fx.gpu if args.device == "gpu" else fx.cpu
    fx.set_default_device(dev)
    sync = fx.synchronize
    shape = tuple(int(s) for s in args.size.split(","))
    rng = np.random.default_rng(0)
    x = fx.array(rng.standard_normal(shape, dtype=np.float32))
    b = fx.array(rng.standard_normal(shape[-1:], dtype=np.float32))
    r = fx.array(rng.standard_normal(shape, dtype=np.float32))
    fx.eval(x, b, r)
    nbytes = x.nbytes
    only = set(args.only.split(",")) if args.only else None

    def want(name):
        return only is None or name in only

    copy = median_time(lambda: fx.eval(x + 0), sync, 1, args.repeats)
    rows["copy (x + 0)"] = (copy, 2 * nbytes)
    if want("gelu"):
        gelu = gelu_fx(fx)
        cgelu = fx.compile(gelu)
        eager, compiled = paired_times([lambda: fx.eval(gelu(x)), lambda: fx.eval(cgelu(x))], sync, 2, args.repeats)
        rows["gelu eager"] = (eager, 2 * nbytes)
        rows["gelu compiled"] = (compiled, 2 * nbytes)
    if want("tail"):
        tail = tail_fx(fx)
        ctail = fx.compile(tail)
        eager, compiled = paired_times([lambda: fx.eval(tail(x, b, r)), lambda: fx.eval(ctail(x, b, r))], sync, 2, args.repeats)
        rows["mlp tail eager"] = (eager, 3 * nbytes)
        rows["mlp tail compiled"] = (compiled, 3 * nbytes)
    if want("reduce"):
        # A final reduction fused with its chain (reads x once, writes rows).
        sq = lambda x, b: fx.sum(fx.square(x - b), axis=-1)  # noqa: E731
        csq = fx.compile(sq)
        eager, compiled = paired_times([lambda: fx.eval(sq(x, b)), lambda: fx.eval(csq(x, b))], sync, 2, args.repeats)
        rows["sum sq rows eager"] = (eager, nbytes)
        rows["sum sq rows compiled"] = (compiled, nbytes)
        # The same over the leading axes (a column reduction, as a bias gradient's).
        cols = lambda x, b: fx.sum(fx.square(x - b), axis=(0, 1))  # noqa: E731
        ccols = fx.compile(cols)
        eager, compiled = paired_times([lambda: fx.eval(cols(x, b)), lambda: fx.eval(ccols(x, b))], sync, 2, args.repeats)
        rows["sum sq columns eager"] = (eager, nbytes)
        rows["sum sq columns compiled"] = (compiled, nbytes)
    if want("small"):
        chain = small_chain_fx(fx, args.small_ops)
        cchain = fx.compile(chain)
        s = fx.array(rng.standard_normal((16, 16), dtype=np.float32) * 0.25)
        w = fx.array(rng.standard_normal((16, 16), dtype=np.float32) * 0.25)
        fx.eval(s, w)
        eager, compiled = paired_times([lambda: fx.eval(chain(s, w)), lambda: fx.eval(cchain(s, w))], sync, 2, args.repeats)
        rows[f"{args.small_ops} small ops eager"] = (eager, None)
        rows[f"{args.small_ops} small ops compiled"] = (compiled, None)
        print("graph replay (captured, refused, launches) of the small ops:", cchain.graph_info())
    if want("train"):
        import ferrox.nn as nn
        import ferrox.optimizers as optim

        fx.random.seed(0)
        model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512))
        opt = optim.AdamW(learning_rate=1e-3)
        loss_and_grad = nn.value_and_grad(model, lambda m, a, y: ((m(a) - y) ** 2).mean())
        a = fx.array(rng.standard_normal((256, 512), dtype=np.float32))
        y = fx.array(rng.standard_normal((256, 512), dtype=np.float32))

        def step():
            loss, grads = loss_and_grad(model, a, y)
            opt.update(model, grads)
            return loss

        state = [model.state, opt.state]
        cstep = fx.compile(step, inputs=state, outputs=state)
        eager, compiled = paired_times(
            [lambda: fx.eval(step(), state), lambda: fx.eval(cstep(), state)], sync, 3, args.repeats
        )
        rows["mlp train step eager"] = (eager, None)
        rows["mlp train step compiled"] = (compiled, None)
        print("graph replay (captured, refused, launches) of the train step:", cstep.graph_info())


def torch_rows(args, rows):
    import torch

    shape = tuple(int(s) for s in args.size.split(","))
    dev = "cuda"
    x = torch.randn(shape, device=dev)
    b = torch.randn(shape[-1:], device=dev)
    r = torch.randn(shape, device=dev)
    sync = torch.cuda.synchronize
    nbytes = x.numel() * 4
    only = set(args.only.split(",")) if args.only else None

    def gelu(x):
        return x * (1 + torch.erf(x / 1.4142135623730951)) / 2

    if only is None or "gelu" in only:
        cg = torch.compile(gelu)
        eager, compiled = paired_times([lambda: gelu(x), lambda: cg(x)], sync, 3, args.repeats)
        rows["torch gelu eager"] = (eager, 2 * nbytes)
        rows["torch gelu compile"] = (compiled, 2 * nbytes)
    if only is None or "tail" in only:
        tail = lambda x, b, r: gelu(x + b) + r  # noqa: E731
        ct = torch.compile(tail)
        rows["torch mlp tail compile"] = (median_time(lambda: ct(x, b, r), sync, 3, args.repeats), 3 * nbytes)
    if only is None or "small" in only:
        s = torch.randn(16, 16, device=dev) * 0.25
        w = torch.randn(16, 16, device=dev) * 0.25

        def chain(x, w):
            for i in range(args.small_ops // 2):
                x = x @ w
                x = torch.tanh(x) if i % 2 else x * 0.5
            return x

        rows[f"torch {args.small_ops} small ops eager"] = (median_time(lambda: chain(s, w), sync, 1, args.repeats), None)


def main():
    p = argparse.ArgumentParser(description="compile: compiled vs uncompiled ferrox (and torch.compile on the GPU)")
    p.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    p.add_argument("--size", default="32,1000,4096")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--small-ops", type=int, default=1000)
    p.add_argument("--only", default="", help="comma-separated subset of gelu,tail,reduce,small,train")
    p.add_argument("--no-torch", action="store_true")
    args = p.parse_args()

    rows = {}
    ferrox_rows(args, rows)
    if args.device == "gpu" and not args.no_torch:
        torch_rows(args, rows)
    copy = rows["copy (x + 0)"][0]
    print(f"\ncompile bench on {args.device}, shape {args.size}")
    print(f"{'row':32s} {'ms':>10s} {'GB/s':>8s} {'% of copy BW':>13s}")
    for name, (t, nbytes) in rows.items():
        bw = f"{nbytes / t / 1e9:8.1f}" if nbytes else f"{'':8s}"
        frac = f"{(nbytes / t) / (rows['copy (x + 0)'][1] / copy) * 100:12.0f}%" if nbytes else ""
        print(f"{name:32s} {t * 1e3:10.3f} {bw} {frac}")
    ratios = [("gelu eager", "gelu compiled"), ("mlp tail eager", "mlp tail compiled"),
              ("sum sq rows eager", "sum sq rows compiled"), ("sum sq columns eager", "sum sq columns compiled"),
              (f"{args.small_ops} small ops eager", f"{args.small_ops} small ops compiled"),
              ("mlp train step eager", "mlp train step compiled")]
    print()
    for slow, fast in ratios:
        if slow in rows and fast in rows:
            print(f"speedup {fast:32s} {rows[slow][0] / rows[fast][0]:6.2f}x")
    for ours, theirs in [("gelu compiled", "torch gelu compile"), ("mlp tail compiled", "torch mlp tail compile")]:
        if ours in rows and theirs in rows:
            print(f"ratio   {ours:24s} / {theirs:24s} {rows[ours][0] / rows[theirs][0]:6.2f}")
    key = f"{args.small_ops} small ops compiled"
    if key in rows:
        print(f"per op  {key:32s} {rows[key][0] / args.small_ops * 1e6:6.2f} us")
        eager = f"{args.small_ops} small ops eager"
        print(f"per op  {eager:32s} {rows[eager][0] / args.small_ops * 1e6:6.2f} us")
        tkey = f"torch {args.small_ops} small ops eager"
        if tkey in rows:
            print(f"per op  {tkey:32s} {rows[tkey][0] / args.small_ops * 1e6:6.2f} us")


if __name__ == "__main__":
    main()
