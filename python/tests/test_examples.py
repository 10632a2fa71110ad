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
