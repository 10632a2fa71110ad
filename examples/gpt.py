"""A GPT-style decoder-only transformer written with ferrox.nn, as one would
write it with mlx.nn: token and learned position embeddings, pre-norm
blocks (causal multi-head attention and a GELU MLP), a final LayerNorm and
an output head tied to the token embedding.

``GPT(GPTConfig.gpt2_small())`` is GPT-2 small's shape (12 layers, d=768,
12 heads, vocab 50257, context 1024), which ``benches/train_step.py`` times;
``make demo`` trains a small one on characters (``examples/char_lm.py``).
"""

from dataclasses import dataclass

import ferrox as fx
import ferrox.nn as nn


@dataclass
class GPTConfig:
    """The model's sizes."""

    vocab_size: int
    context: int
    dims: int
    num_layers: int
    num_heads: int

    @staticmethod
    def gpt2_small() -> "GPTConfig":
        """GPT-2 small (124M parameters)."""
        return GPTConfig(vocab_size=50257, context=1024, dims=768, num_layers=12, num_heads=12)


class Block(nn.Module):
    """A pre-norm transformer block: ``x + attn(ln(x))``, then ``x + mlp(ln(x))``."""

    def __init__(self, dims: int, num_heads: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(dims)
        self.attention = nn.MultiHeadAttention(dims, num_heads, bias=True)
        self.ln2 = nn.LayerNorm(dims)
        self.mlp = nn.Sequential(nn.Linear(dims, 4 * dims), nn.GELU(approx="precise"), nn.Linear(4 * dims, dims))

    def __call__(self, x: fx.array, mask) -> fx.array:
        h = self.ln1(x)
        x = x + self.attention(h, h, h, mask)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """The language model: token ids ``[batch, length]`` to next-token
    logits ``[batch, length, vocab]``."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.tokens = nn.Embedding(config.vocab_size, config.dims)
        self.positions = nn.Embedding(config.context, config.dims)
        self.blocks = [Block(config.dims, config.num_heads) for _ in range(config.num_layers)]
        self.ln = nn.LayerNorm(config.dims)

    def __call__(self, ids: fx.array) -> fx.array:
        length = ids.shape[-1]
        x = self.tokens(ids) + self.positions(fx.arange(length))
        mask = "causal"
        for block in self.blocks:
            x = block(x, mask)
        return self.tokens.as_linear(self.ln(x))


def loss_fn(model: GPT, inputs: fx.array, targets: fx.array) -> fx.array:
    """Mean next-token cross-entropy."""
    logits = model(inputs)
    return nn.losses.cross_entropy(logits, targets, reduction="mean")


def generate(model: GPT, prompt: fx.array, length: int, temperature: float = 0.8, key=None):
    """Samples ``length`` tokens after ``prompt`` (1-D ids), keeping the last
    ``context`` tokens as the window; returns the new ids as a list."""
    ids = prompt
    out = []
    keys = fx.random.split(key if key is not None else fx.random.key(0), length)
    for i in range(length):
        window = ids[-model.config.context :]
        logits = model(window[None])[0, -1]
        token = fx.random.categorical(logits * (1.0 / temperature), key=keys[i])
        out.append(token.item())
        ids = fx.concatenate([ids, token.reshape(1).astype(ids.dtype)])
    return out
