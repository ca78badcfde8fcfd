"""Fit a line y = w x + b to noisy points by gradient descent, printing the loss.

The tutorials' classic second exercise: parameters that require gradients, a
mean-squared-error loss, ``loss.backward()``, and an update under ``no_grad``.

    python examples/fit_line.py
"""

from __future__ import annotations

import ferrograd as fg


def main(steps=200, lr=0.1):
    fg.manual_seed(0)
    x = fg.rand(100, 1) * 4 - 2
    y = 3.0 * x + 0.5 + 0.1 * fg.randn(100, 1)  # the line to recover: w = 3, b = 0.5

    w = fg.zeros(1, requires_grad=True)
    b = fg.zeros(1, requires_grad=True)
    for step in range(steps + 1):
        loss = ((x * w + b - y) ** 2).mean()
        loss.backward()
        with fg.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
            w.grad.zero_()
            b.grad.zero_()
        if step % 20 == 0:
            print(f"step {step:3d}  loss {loss.item():.6f}  w {w.item():.4f}  b {b.item():.4f}")
    print(f"fitted y = {w.item():.3f} x + {b.item():.3f} (true: y = 3 x + 0.5)")
    return w.item(), b.item()


if __name__ == "__main__":
    main()
