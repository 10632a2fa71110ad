"""An MLP classifier with ferrox.nn on data made on the spot (two
interleaved spirals, three classes), trained with Adam to high accuracy.

    python examples/mlp.py [--epochs 30]
"""

import argparse
import time

import numpy as np

import ferrox as fx
import ferrox.nn as nn
import ferrox.optimizers as optim


def spirals(n_per_class: int, classes: int, rng) -> tuple:
    """Points on `classes` noisy spiral arms in the plane, and their labels."""
    radius = np.tile(np.linspace(0.05, 1.0, n_per_class), classes)
    labels = np.repeat(np.arange(classes), n_per_class)
    angle = labels * 2 * np.pi / classes + radius * 9.0 + rng.normal(0, 0.2, radius.shape)
    points = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    order = rng.permutation(len(labels))
    return points[order].astype(np.float32), labels[order].astype(np.int32)


class MLP(nn.Module):
    """Two hidden ReLU layers."""

    def __init__(self, inputs: int, hidden: int, outputs: int):
        super().__init__()
        self.layers = [nn.Linear(inputs, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, outputs)]

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = nn.relu(layer(x))
        return self.layers[-1](x)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    fx.random.seed(0)
    x_train, y_train = spirals(1000, 3, rng)
    x_test, y_test = spirals(300, 3, rng)
    model = MLP(2, 64, 3)
    opt = optim.Adam(learning_rate=1e-2)

    def loss_fn(model, x, y):
        return nn.losses.cross_entropy(model(x), y, reduction="mean")

    def accuracy(x, y):
        return (fx.argmax(model(fx.array(x)), axis=1) == fx.array(y)).mean().item()

    step = nn.value_and_grad(model, loss_fn)
    start = time.perf_counter()
    for epoch in range(args.epochs):
        for i in range(0, len(x_train), args.batch):
            loss, grads = step(model, fx.array(x_train[i : i + args.batch]), fx.array(y_train[i : i + args.batch]))
            opt.update(model, grads)
            fx.eval(model.parameters(), opt.state)
        if epoch % 5 == 4 or epoch == args.epochs - 1:
            print(f"epoch {epoch + 1:3d}: loss {loss.item():.3f}, test accuracy {accuracy(x_test, y_test):.3f}")
    acc = accuracy(x_test, y_test)
    print(f"trained in {time.perf_counter() - start:.1f} s; test accuracy {acc:.3f}")
    if acc < 0.95:
        raise SystemExit(f"accuracy {acc:.3f} is below 0.95")


if __name__ == "__main__":
    main()
