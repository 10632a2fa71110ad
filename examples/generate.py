"""Token generation with a 4-bit quantized Llama-shaped decoder: RoPE,
grouped-query attention with a KV cache (`fast.scaled_dot_product_attention`),
SwiGLU feed-forward layers, RMSNorm, tied input and output embeddings.

The weights are random (the point is the speed, not the text): the model is
built with `nn.Linear` and `nn.Embedding` layers, `nn.quantize` turns them
into 4-bit `QuantizedLinear` / `QuantizedEmbedding` layers (MLX's affine
format, group 64), then a random prompt is run through it (prefill) and
tokens are generated greedily one at a time (decode).

It prints prompt tokens/s, generation tokens/s and the bandwidth bound of
generation: each generated token reads every quantized weight once (and the
KV cache), so tokens/s can be at most the memory bandwidth (a copy measured
here) over those bytes.

    python examples/generate.py                   # Llama 3.2 1B's shape, default device
    python examples/generate.py --device cpu --dims 256 --layers 2 --vocab 1000 --hidden 512
"""

import argparse
import math
import time

import numpy as np

import ferrox as fx
import ferrox.nn as nn
from ferrox.utils import tree_flatten


class Attention(nn.Module):
    """Grouped-query self-attention with rotary positions and a KV cache."""

    def __init__(self, dims: int, heads: int, kv_heads: int, rope_base: float):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dims // heads
        self.q_proj = nn.Linear(dims, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dims, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dims, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, dims, bias=False)
        self.rope_base = rope_base

    def __call__(self, x, cache):
        b, t, _ = x.shape
        split = lambda y, n: y.reshape(b, t, n, self.head_dim).transpose(0, 2, 1, 3)  # noqa: E731
        q, k, v = split(self.q_proj(x), self.heads), split(self.k_proj(x), self.kv_heads), split(self.v_proj(x), self.kv_heads)
        offset = 0 if cache is None else cache[0].shape[2]
        rope = lambda y: fx.fast.rope(y, self.head_dim, traditional=False, base=self.rope_base, scale=1.0, offset=offset)  # noqa: E731
        q, k = rope(q), rope(k)
        if cache is not None:
            k, v = fx.concatenate([cache[0], k], axis=2), fx.concatenate([cache[1], v], axis=2)
        mask = "causal" if t > 1 else None
        o = fx.fast.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(self.head_dim), mask=mask)
        return self.o_proj(o.transpose(0, 2, 1, 3).reshape(b, t, -1)), (k, v)


class FeedForward(nn.Module):
    """SwiGLU: `down(silu(gate(x)) * up(x))`."""

    def __init__(self, dims: int, hidden: int):
        super().__init__()
        self.gate_proj = nn.Linear(dims, hidden, bias=False)
        self.up_proj = nn.Linear(dims, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dims, bias=False)

    def __call__(self, x):
        return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.input_layernorm = nn.RMSNorm(args.dims, eps=1e-5)
        self.self_attn = Attention(args.dims, args.heads, args.kv_heads, args.rope_base)
        self.post_attention_layernorm = nn.RMSNorm(args.dims, eps=1e-5)
        self.mlp = FeedForward(args.dims, args.hidden)

    def __call__(self, x, cache):
        h, cache = self.self_attn(self.input_layernorm(x), cache)
        x = x + h
        return x + self.mlp(self.post_attention_layernorm(x)), cache


class Decoder(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.embed_tokens = nn.Embedding(args.vocab, args.dims)
        self.layers = [Block(args) for _ in range(args.layers)]
        self.norm = nn.RMSNorm(args.dims, eps=1e-5)

    def __call__(self, tokens, caches):
        x = self.embed_tokens(tokens)
        new_caches = []
        for layer, cache in zip(self.layers, caches):
            x, cache = layer(x, cache)
            new_caches.append(cache)
        # Tied embeddings: the output projection is the (quantized) table.
        return self.embed_tokens.as_linear(self.norm(x[:, -1:, :])), new_caches


def parameter_bytes(model) -> int:
    return sum(v.nbytes for _, v in tree_flatten(model.parameters()))


def copy_bandwidth(gigabytes: float = 1.0) -> float:
    """Bytes per second a device copy moves (read plus write), best of 5."""
    x = fx.ones((int(gigabytes * 2**30 / 4),), dtype=fx.float32)
    fx.eval(x)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        fx.eval(x + 1)
        best = min(best, time.perf_counter() - start)
    return 2 * x.nbytes / best


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "gpu"], default=None, help="default: ferrox's default device")
    p.add_argument("--dims", type=int, default=2048)
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--hidden", type=int, default=8192)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--rope-base", type=float, default=500000.0)
    p.add_argument("--bits", type=int, default=4)
    p.add_argument("--group-size", type=int, default=64)
    p.add_argument("--prompt", type=int, default=128, help="prompt length (tokens)")
    p.add_argument("--tokens", type=int, default=64, help="tokens to generate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--copy-gb", type=float, default=1.0, help="size of the bandwidth-measuring copy (GiB)")
    args = p.parse_args()
    if args.device:
        fx.set_default_device(getattr(fx, args.device))
    fx.random.seed(args.seed)

    model = Decoder(args)
    nn.quantize(model, group_size=args.group_size, bits=args.bits)
    # Materialize one layer at a time: the float weights exist only while
    # their own layer is being quantized.
    for _, leaf in tree_flatten(model.leaf_modules(), is_leaf=nn.Module.is_module):
        fx.eval(leaf.parameters())
    weight_bytes = parameter_bytes(model)
    print(f"device {fx.default_device()}: {args.layers} layers, dims {args.dims}, vocab {args.vocab}, "
          f"{args.bits}-bit group {args.group_size}: {weight_bytes / 2**30:.2f} GiB of weights")

    rng = np.random.default_rng(args.seed)
    prompt = fx.array(rng.integers(0, args.vocab, size=(1, args.prompt)).astype(np.int32))
    caches = [None] * args.layers

    start = time.perf_counter()
    logits, caches = model(prompt, caches)
    token = fx.argmax(logits[:, -1, :], axis=-1, keepdims=True).astype(fx.int32)
    fx.eval(token, caches)
    prefill = time.perf_counter() - start

    generated = []
    start = time.perf_counter()
    for _ in range(args.tokens):
        logits, caches = model(token, caches)
        token = fx.argmax(logits[:, -1, :], axis=-1, keepdims=True).astype(fx.int32)
        fx.eval(token, caches)
        generated.append(token.item())
    decode = time.perf_counter() - start

    bandwidth = copy_bandwidth(args.copy_gb)
    kv_bytes = sum(k.nbytes + v.nbytes for k, v in caches) * (args.prompt + args.tokens / 2) / (args.prompt + args.tokens)
    bound = bandwidth / (weight_bytes + kv_bytes)
    gen_rate = args.tokens / decode
    print(f"prompt:     {args.prompt} tokens in {prefill * 1e3:.1f} ms: {args.prompt / prefill:.1f} tokens/s")
    print(f"generation: {args.tokens} tokens in {decode * 1e3:.1f} ms: {gen_rate:.1f} tokens/s")
    print(f"bandwidth bound: {bound:.1f} tokens/s (copy bandwidth {bandwidth / 1e9:.1f} GB/s over "
          f"{(weight_bytes + kv_bytes) / 2**20:.0f} MiB read per token): {100 * gen_rate / bound:.0f}% of it")
    print("tokens:", generated[:16], "..." if len(generated) > 16 else "")


if __name__ == "__main__":
    main()
