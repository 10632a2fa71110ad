"""async_eval: a training loop that waits for each step against one that
queues it and builds the next step meanwhile, in ferrox and in MLX.

Issue "compile" asks that ``async_eval`` evaluate without blocking the
caller. The loop is MLX's documented pattern: each iteration builds a step
(forward, backward, optimizer update) on the previous step's pending
parameters and hands it to ``async_eval``; reading the loss at the end waits.
With ``eval`` the caller builds nothing while a step computes. The gain is
the graph-building time the worker hides, so it is largest for small steps.

Each row: seconds per step (median over --repeats runs of --steps steps),
and the sync/async ratio (> 1: async_eval is faster).

    python benches/async_eval.py [--device cpu|gpu] [--steps 50] [--repeats 5] [--width 256] [--batch 64]
"""

import argparse
import statistics
import time

import numpy as np


def per_step(run, steps, repeats):
    run(3)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(steps)
        times.append((time.perf_counter() - start) / steps)
    return statistics.median(times)


def training_loop(core, nn, optim, width, batch, rng):
    """A function running `n` AdamW steps of a small MLP, each evaluated
    with core.eval (async_=False) or core.async_eval (async_=True)."""
    model = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
    opt = optim.AdamW(learning_rate=1e-3)
    loss_and_grad = nn.value_and_grad(model, lambda m, a, y: ((m(a) - y) ** 2).mean())
    a = core.array(rng.standard_normal((batch, width), dtype=np.float32))
    y = core.array(rng.standard_normal((batch, width), dtype=np.float32))
    core.eval(model.parameters())

    def run(n, async_):
        loss = None
        for _ in range(n):
            loss, grads = loss_and_grad(model, a, y)
            opt.update(model, grads)
            if async_:
                core.async_eval(loss, model.parameters(), opt.state)
            else:
                core.eval(loss, model.parameters(), opt.state)
        return loss.item()

    return run


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args()

    frameworks = []
    import ferrox as fx
    import ferrox.nn as fnn
    import ferrox.optimizers as foptim

    fx.set_default_device(fx.gpu if args.device == "gpu" else fx.cpu)
    frameworks.append(("ferrox", fx, fnn, foptim))
    try:
        import mlx.core as mx
        import mlx.nn as mnn
        import mlx.optimizers as moptim

        if args.device == "cpu":
            mx.set_default_device(mx.cpu)
            frameworks.append(("mlx", mx, mnn, moptim))
    except ImportError:
        print("mlx is not installed: its rows are skipped")

    print(f"AdamW step of an MLP {args.width} -> {4 * args.width} -> {args.width}, batch {args.batch}, "
          f"{args.device}, {args.steps} steps x {args.repeats} runs")
    print(f"{'framework':<10} {'eval ms/step':>13} {'async_eval ms/step':>19} {'sync/async':>11}")
    results = {}
    for name, core, nn, optim in frameworks:
        core.random.seed(0)
        run = training_loop(core, nn, optim, args.width, args.batch, np.random.default_rng(0))
        sync = per_step(lambda n: run(n, False), args.steps, args.repeats)
        asyn = per_step(lambda n: run(n, True), args.steps, args.repeats)
        results[name] = (sync, asyn)
        print(f"{name:<10} {sync * 1e3:>13.3f} {asyn * 1e3:>19.3f} {sync / asyn:>10.2f}x")
    if "mlx" in results:
        fx_async, mlx_async = results["ferrox"][1], results["mlx"][1]
        print(f"ferrox async_eval step / MLX async_eval step: {fx_async / mlx_async:.2f}")


if __name__ == "__main__":
    main()
