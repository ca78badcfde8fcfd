"""Train a small MLP to separate three interleaved spirals (a classic
non-linear toy problem), with plain SGD written against ferrograd's API.

    python examples/train_spirals.py
"""

import math

import numpy as np

import ferrograd as fg
from ferrograd import nn
from ferrograd.nn import functional as F


def spirals(points_per_class=200, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.05, 1.0, points_per_class)
        t = np.linspace(c * 2 * math.pi / classes, (c + 2) * 2 * math.pi / classes, points_per_class)
        t = t + rng.normal(scale=0.15, size=points_per_class)
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        ys.append(np.full(points_per_class, c))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int64)


def main():
    fg.manual_seed(0)
    x_np, y_np = spirals()
    x, y = fg.from_numpy(x_np), fg.from_numpy(y_np)
    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3))
    lr = 0.5
    for step in range(601):
        loss = F.cross_entropy(model(x), y)
        model.zero_grad()
        loss.backward()
        with fg.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
        if step % 100 == 0:
            with fg.no_grad():
                acc = (model(x).argmax(dim=1) == y).float().mean().item()
            print(f"step {step:4d}  loss {loss.item():.4f}  accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
