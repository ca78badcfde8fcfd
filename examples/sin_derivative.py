"""Plot sin(x) and its derivative computed by autograd, and check it is cos(x).

The classic first autograd exercise of the tutorials: make ``x`` require a
gradient, compute ``y = sin(x)``, backpropagate ``y.sum()`` and read ``x.grad``.

    python examples/sin_derivative.py [--out sin.png]
"""

from __future__ import annotations

import argparse
import math

import ferrograd as fg


def main(argv=None):
    parser = argparse.ArgumentParser(description="sin(x) and its autograd derivative")
    parser.add_argument("--out", default="sin.png")
    args = parser.parse_args(argv)

    x = fg.linspace(-2 * math.pi, 2 * math.pi, 200, dtype=fg.float64, requires_grad=True)
    y = fg.sin(x)
    y.sum().backward()  # d/dx_i of sum_j sin(x_j) is cos(x_i)

    error = (x.grad - fg.cos(x.detach())).abs().max().item()
    print(f"max |x.grad - cos(x)| = {error:.2e}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = x.detach().numpy()
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    ax.plot(xs, y.detach().numpy(), label="sin(x)")
    ax.plot(xs, x.grad.numpy(), "--", label="d sin(x)/dx from autograd")
    ax.set_xlabel("x")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 1.16), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.out}")
    if error > 1e-12:
        raise SystemExit("the autograd derivative of sin is not cos")


if __name__ == "__main__":
    main()
