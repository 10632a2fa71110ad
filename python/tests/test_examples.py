"""The examples run: the MLP classifier reaches its accuracy, and a short
run of the demo's training loop learns, saves its weights and plot, and
samples text."""

import os
import subprocess
import sys

import pytest

import ferrox

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# The examples import the ferrox this test imported (the repository's
# python/ folder after `make build`, an installed wheel on a GPU machine).
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(ferrox.__file__)))


def run(*args):
    env = dict(os.environ, PYTHONPATH=PACKAGE_DIR)
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_mlp_classifier_reaches_high_accuracy():
    out = run("examples/mlp.py", "--epochs", "10")
    assert out.returncode == 0, out.stderr
    assert "test accuracy" in out.stdout


def test_char_lm_learns_saves_and_samples(tmp_path):
    pytest.importorskip("tqdm")
    pytest.importorskip("matplotlib")
    out = run("examples/char_lm.py", "--steps", "60", "--dims", "64", "--layers", "1", "--context", "32",
              "--max-loss-ratio", "0.95", "--out", str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert os.path.getsize(tmp_path / "char_lm.safetensors") > 0
    assert os.path.getsize(tmp_path / "loss.png") > 0
    assert "--- sample ---" in out.stdout


TINY = ["--dims", "128", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--hidden", "256", "--vocab", "300"]


def test_generate_prints_rates_and_the_bandwidth_bound():
    out = run("examples/generate.py", *TINY, "--prompt", "12", "--tokens", "4", "--copy-gb", "0.05")
    assert out.returncode == 0, out.stdout + out.stderr
    for line in ("prompt:", "generation:", "bandwidth bound:"):
        assert line in out.stdout, out.stdout


def test_generate_kv_cache_matches_the_full_forward():
    """Decoding the last prompt token with the cache of the others gives the
    logits of running the whole prompt at once (4-bit model)."""
    import argparse
    import importlib.util

    import numpy as np

    import ferrox.nn as nn

    spec = importlib.util.spec_from_file_location("generate", os.path.join(ROOT, "examples", "generate.py"))
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    args = argparse.Namespace(dims=128, layers=2, heads=4, kv_heads=2, hidden=256, vocab=300, rope_base=10000.0)
    ferrox.random.seed(3)
    model = generate.Decoder(args)
    nn.quantize(model, group_size=64, bits=4)
    tokens = ferrox.array(np.arange(7, dtype=np.int32)[None] * 37 % 300)
    full, _ = model(tokens, [None] * args.layers)
    _, caches = model(tokens[:, :-1], [None] * args.layers)
    step, caches = model(tokens[:, -1:], caches)
    assert caches[0][0].shape == (1, 2, 7, 32)
    np.testing.assert_allclose(np.array(step), np.array(full), rtol=1e-4, atol=1e-4)
