"""ferrox's main demo: train a small character-level GPT on Shakespeare.

It trains on the GPU when ferrox sees one and on the CPU otherwise, shows a
progress bar (loss, tokens/s), saves the weights, writes a loss-curve PNG,
and prints text sampled from the model, beside the numbers that show it
learned: the final loss against the text's unigram entropy (what a model
that knows only the letter frequencies would reach).

    python examples/char_lm.py [--steps 600] [--out demo-output]
"""

import argparse
import math
import os
import sys
import time
from collections import Counter

import numpy as np
from tqdm import tqdm

import ferrox as fx
import ferrox.nn as nn
import ferrox.optimizers as optim
from ferrox.utils import tree_flatten

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt import GPT, GPTConfig, generate, loss_fn  # noqa: E402

TEXT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tinyshakespeare.txt")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600, help="training steps")
    parser.add_argument("--batch", type=int, default=32, help="sequences per step")
    parser.add_argument("--context", type=int, default=64, help="characters per sequence")
    parser.add_argument("--dims", type=int, default=128, help="model width")
    parser.add_argument("--layers", type=int, default=2, help="transformer blocks")
    parser.add_argument("--heads", type=int, default=4, help="attention heads")
    parser.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    parser.add_argument("--out", default="demo-output", help="folder for the weights and the plot")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-loss-ratio", type=float, default=0.75,
                        help="fail unless the validation loss is below this fraction of the unigram entropy")
    args = parser.parse_args()

    device = "gpu" if fx.cuda.is_available() else "cpu"
    fx.set_default_device(fx.gpu if device == "gpu" else fx.cpu)
    fx.random.seed(args.seed)
    rng = np.random.default_rng(args.seed)

    text = open(TEXT, encoding="utf-8").read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = np.array([index[c] for c in text], dtype=np.int32)
    split = int(0.95 * len(data))
    train, valid = data[:split], data[split:]
    counts = np.array(list(Counter(text).values()), dtype=np.float64)
    unigram = float(-(counts / counts.sum() * np.log(counts / counts.sum())).sum())

    config = GPTConfig(vocab_size=len(chars), context=args.context, dims=args.dims, num_layers=args.layers, num_heads=args.heads)
    model = GPT(config)
    n_params = sum(p.size for _, p in tree_flatten(model.parameters()))
    print(f"ferrox {fx.__version__} on {device}: {n_params / 1e6:.2f}M parameters, vocabulary {len(chars)}, "
          f"{len(train):,} training characters")

    warmup = max(1, args.steps // 10)
    schedule = optim.join_schedules(
        [optim.linear_schedule(1e-4, args.lr, warmup), optim.cosine_decay(args.lr, args.steps - warmup, args.lr / 10)],
        [warmup],
    )
    optimizer = optim.AdamW(learning_rate=schedule, weight_decay=0.01)
    loss_and_grad = nn.value_and_grad(model, loss_fn)

    def batch(source, size):
        starts = rng.integers(0, len(source) - args.context - 1, size)
        windows = np.stack([source[s : s + args.context + 1] for s in starts])
        return fx.array(windows[:, :-1]), fx.array(windows[:, 1:])

    losses = []
    tokens = args.batch * args.context
    start = time.perf_counter()
    bar = tqdm(range(args.steps), desc="training", unit="step")
    for step in bar:
        inputs, targets = batch(train, args.batch)
        loss, grads = loss_and_grad(model, inputs, targets)
        grads, _ = optim.clip_grad_norm(grads, 1.0)
        optimizer.update(model, grads)
        fx.eval(loss, model.parameters(), optimizer.state)
        losses.append(loss.item())
        if step % 10 == 0 or step == args.steps - 1:
            rate = tokens * (step + 1) / (time.perf_counter() - start)
            bar.set_postfix(loss=f"{np.mean(losses[-10:]):.3f}", tok_s=f"{rate:,.0f}")
    elapsed = time.perf_counter() - start

    model.eval()
    valid_loss = np.mean([loss_fn(model, *batch(valid, args.batch)).item() for _ in range(10)])
    train_loss = float(np.mean(losses[-20:]))

    os.makedirs(args.out, exist_ok=True)
    weights = os.path.join(args.out, "char_lm.safetensors")
    model.save_weights(weights)
    plot = os.path.join(args.out, "loss.png")
    write_plot(losses, unigram, plot)

    prompt = "ROMEO:\n"
    ids = generate(model, fx.array([index[c] for c in prompt], dtype=fx.int32), 300, key=fx.random.key(args.seed))
    sample = prompt + "".join(chars[i] for i in ids)

    print(f"\ntrained {args.steps} steps in {elapsed:.0f} s ({tokens * args.steps / elapsed:,.0f} tokens/s)")
    print(f"loss: train {train_loss:.3f}, validation {valid_loss:.3f} nats/char; "
          f"unigram entropy {unigram:.3f}; uniform {math.log(len(chars)):.3f}")
    print(f"weights: {weights}\nloss curve: {plot}\n\n--- sample ---\n{sample}\n--------------")
    if not valid_loss < args.max_loss_ratio * unigram:
        raise SystemExit(f"the model did not learn: validation loss {valid_loss:.3f} vs unigram entropy {unigram:.3f}")


def write_plot(losses, unigram, path):
    """The training loss per step, its running mean and the unigram entropy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(losses, color="#9ab", linewidth=0.8, label="loss per step")
    window = 20
    if len(losses) >= window:
        smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
        ax.plot(range(window - 1, len(losses)), smooth, color="#14c", label=f"mean of {window}")
    ax.axhline(unigram, color="#c41", linestyle="--", label="unigram entropy")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats/char)")
    ax.set_title("ferrox: character-level GPT on tiny Shakespeare")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
