"""256x256 Jacobian of tanh(W x): one engine call for all rows vs one autograd.grad per row.

    PYTHONPATH=python python benches/jacobian_batched.py [--n 256] [--repeat 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ferrograd as fg
from ferrograd.autograd.functional import jacobian


def _best(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    args = p.parse_args()
    dtype = getattr(fg, args.dtype)
    rng = np.random.default_rng(0)
    w = fg.tensor(rng.standard_normal((args.n, args.n)) / np.sqrt(args.n), dtype=dtype)
    x0 = fg.tensor(rng.standard_normal(args.n), dtype=dtype)

    def f(x):
        return fg.tanh(w @ x)

    def per_row_python():
        # What a user writes without vectorize: one autograd.grad call per output.
        x = x0.detach().requires_grad_(True)
        y = f(x)
        eye = fg.eye(args.n, dtype=dtype)
        rows = [fg.autograd.grad(y, x, eye[i], retain_graph=True)[0] for i in range(args.n)]
        return fg.stack(rows)

    def batched():
        return jacobian(f, x0, vectorize=True)

    def unvectorized():
        return jacobian(f, x0)

    a, b, c = per_row_python(), batched(), unvectorized()
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    t_rows = _best(per_row_python, args.repeat)
    t_batched = _best(batched, args.repeat)
    t_unvec = _best(unvectorized, args.repeat)
    print(f"{args.n}x{args.n} Jacobian of tanh(W x), {args.dtype}, best of {args.repeat}")
    print(f"  one autograd.grad per row (Python loop): {t_rows * 1e3:8.2f} ms")
    print(f"  jacobian(vectorize=False):               {t_unvec * 1e3:8.2f} ms")
    print(f"  jacobian(vectorize=True), one engine call:{t_batched * 1e3:8.2f} ms")
    print(f"  speedup vs per-row loop: {t_rows / t_batched:.1f}x")


if __name__ == "__main__":
    main()
