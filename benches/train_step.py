"""One training step of a GPT-2-small-shaped model: ferrox beside PyTorch.

Issue "nn, optimizers" target (one H200): ferrox's step within 1.3x of
PyTorch eager's (bf16 mixed precision, AdamW): 12 layers, d=768, 12 heads,
vocab 50257, sequence 1024, batch 8.

Rows (median of --repeats steps after --warmup, each step ending in a
device synchronization; memory is the device's peak during the steps):
  * torch eager      autocast bf16 compute, float32 weights and AdamW state;
                     nanoGPT's model (fused scaled_dot_product_attention)
  * torch compile    the same model through torch.compile
  * torch eager bf16 weights and AdamW state in bfloat16 (no autocast)
  * ferrox bf16      examples/gpt.py with weights and AdamW state in
                     bfloat16 (ferrox has no autocast; this is the
                     like-for-like row for "torch eager bf16")
Ratios are ferrox / torch eager (autocast), the target's reference.

    python benches/train_step.py [--repeats 10] [--batch 8] [--layers 12] [--no-compile] [--ferrox-compile] [--kernels 30]
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))


def time_steps(step, sync, warmup, repeats):
    """Median seconds of `step()` + `sync()`, after `warmup` steps."""
    for _ in range(warmup):
        step()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def torch_rows(args, data):
    import torch
    import torch.nn as tnn
    import torch.nn.functional as F

    dev = "cuda"

    class Attention(tnn.Module):
        """nanoGPT's causal self-attention (PyTorch's fused SDPA kernels)."""

        def __init__(self, d, h):
            super().__init__()
            self.h = h
            self.qkv, self.out = tnn.Linear(d, 3 * d), tnn.Linear(d, d)

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.out(y.transpose(1, 2).reshape(b, n, d))

    class Block(tnn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.ln1, self.ln2 = tnn.LayerNorm(d), tnn.LayerNorm(d)
            self.attn = Attention(d, h)
            self.mlp = tnn.Sequential(tnn.Linear(d, 4 * d), tnn.GELU(approximate="tanh"), tnn.Linear(4 * d, d))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(tnn.Module):
        def __init__(self):
            super().__init__()
            self.tok = tnn.Embedding(args.vocab, args.dims)
            self.pos = tnn.Embedding(args.seq, args.dims)
            self.blocks = tnn.ModuleList([Block(args.dims, args.heads) for _ in range(args.layers)])
            self.ln = tnn.LayerNorm(args.dims)

        def forward(self, ids):
            n = ids.shape[1]
            x = self.tok(ids) + self.pos(torch.arange(n, device=ids.device))
            for b in self.blocks:
                x = b(x)
            return self.ln(x) @ self.tok.weight.T

    inputs = torch.as_tensor(data[0], device=dev, dtype=torch.long)
    targets = torch.as_tensor(data[1], device=dev, dtype=torch.long)
    rows = {}

    def run(name, model, autocast, compile_):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
        fwd = torch.compile(model) if compile_ else model

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
                logits = fwd(inputs)
                loss = F.cross_entropy(logits.float().view(-1, args.vocab), targets.view(-1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        torch.cuda.reset_peak_memory_stats()
        t = time_steps(step, torch.cuda.synchronize, args.warmup, args.repeats)
        rows[name] = (t, torch.cuda.max_memory_allocated() / 2**30)
        del opt

    torch.manual_seed(0)
    run("torch eager", GPT().to(dev), True, False)
    if not args.no_compile:
        run("torch compile", GPT().to(dev), True, True)
    run("torch eager bf16", GPT().to(dev).to(torch.bfloat16), False, False)
    return rows


def print_kernel_table(step, sync, top, steps=3):
    """Prints the `top` kernels by GPU time per step over `steps` steps.

    PyTorch's profiler (CUPTI) records every kernel of the process, so it
    sees ferrox's kernels as well as PyTorch's.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.zeros(1, device="cuda")  # CUPTI needs the runtime initialized
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        sync()
    events = sorted((e for e in prof.key_averages() if e.device_time_total > 0), key=lambda e: -e.device_time_total)
    total = sum(e.device_time_total for e in events) / steps / 1e3
    print(f"\nferrox bf16 step: {total:.2f} ms of kernels per step; the top {top}:")
    print(f"{'ms/step':>8s} {'calls':>6s}  kernel")
    for e in events[:top]:
        print(f"{e.device_time_total / steps / 1e3:8.2f} {e.count // steps:6d}  {e.key[:100]}")


def ferrox_row(args, data):
    import ferrox as fx
    import ferrox.nn as nn
    import ferrox.optimizers as optim
    from gpt import GPT, GPTConfig, loss_fn

    fx.set_default_device(fx.gpu)
    fx.random.seed(0)
    model = GPT(GPTConfig(vocab_size=args.vocab, context=args.seq, dims=args.dims, num_layers=args.layers, num_heads=args.heads))
    model.set_dtype(fx.bfloat16)
    opt = optim.AdamW(learning_rate=1e-4, weight_decay=0.01)
    loss_and_grad = nn.value_and_grad(model, loss_fn)
    inputs, targets = fx.array(data[0]), fx.array(data[1])

    def step():
        loss, grads = loss_and_grad(model, inputs, targets)
        opt.update(model, grads)
        fx.eval(loss, model.parameters(), opt.state)

    fx.reset_peak_memory()
    t = time_steps(step, fx.synchronize, args.warmup, args.repeats)
    rows = {"ferrox bf16": (t, fx.get_peak_memory() / 2**30)}
    if args.kernels:
        print_kernel_table(step, fx.synchronize, args.kernels)
    # Where the time goes: the forward pass alone, and with the backward.
    forward = time_steps(lambda: fx.eval(loss_fn(model, inputs, targets)), fx.synchronize, 1, args.repeats)
    backward = time_steps(lambda: fx.eval(loss_and_grad(model, inputs, targets)), fx.synchronize, 1, args.repeats)
    rows["  ferrox forward"] = (forward, float("nan"))
    rows["  ferrox fwd+bwd"] = (backward, float("nan"))
    if args.ferrox_compile:
        # The whole step (model and optimizer) through fx.compile, as in MLX's docs.
        state = [model.state, opt.state]

        def traced_step():
            loss, grads = loss_and_grad(model, inputs, targets)
            opt.update(model, grads)
            return loss

        compiled = fx.compile(traced_step, inputs=state, outputs=state)
        t = time_steps(lambda: fx.eval(compiled(), state), fx.synchronize, args.warmup, args.repeats)
        rows["ferrox compiled"] = (t, float("nan"))
    return rows


def main():
    p = argparse.ArgumentParser(description="GPT-2-small training step: ferrox vs PyTorch")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--dims", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile row")
    p.add_argument("--ferrox-compile", action="store_true", help="add the row of the step through fx.compile")
    p.add_argument("--kernels", type=int, default=0, metavar="N",
                   help="also print ferrox's N most expensive kernels per step (PyTorch's profiler)")
    args = p.parse_args()

    rng = np.random.default_rng(0)
    ids = rng.integers(0, args.vocab, (args.batch, args.seq + 1)).astype(np.int32)
    data = (ids[:, :-1], ids[:, 1:])
    rows = torch_rows(args, data)
    rows.update(ferrox_row(args, data))
    base = rows["torch eager"][0]
    print(f"\nGPT step: {args.layers} layers, d={args.dims}, {args.heads} heads, vocab {args.vocab}, "
          f"seq {args.seq}, batch {args.batch}")
    print(f"{'row':20s} {'ms/step':>9s} {'peak GiB':>9s} {'vs torch eager':>15s}")
    for name, (t, mem) in rows.items():
        print(f"{name:20s} {t * 1e3:9.1f} {mem:9.2f} {t / base:15.2f}")


if __name__ == "__main__":
    main()
