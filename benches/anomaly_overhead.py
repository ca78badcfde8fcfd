"""Per-op cost of anomaly detection: 200 elementwise ops on 16 floats, forward + backward.

    PYTHONPATH=python python benches/anomaly_overhead.py [--rounds 15] [--depth 30]

Configurations are interleaved round by round (the machine may be shared, and
load drifts over seconds), and each reports its median over the rounds:

* off: anomaly detection never enabled in this process yet;
* on: ``detect_anomaly()`` (every node keeps its forward stack, NaN checks);
* on, check_nan=False: only the stacks;
* on, deep stack: the same ops called ``--depth`` frames further down, since
  each node walks the whole Python stack;
* off again: after the mode was on, to show that nothing stays behind.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

import ferrograd as fg

N_OPS = 200


def make_step(n):
    x = fg.tensor(np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32), requires_grad=True)
    cycle = [lambda y: y * 0.5, lambda y: y + x, fg.sin, fg.exp, lambda y: y * x]
    chain = [cycle[i % len(cycle)] for i in range(N_OPS)]

    def step():
        x.grad = None
        y = x
        for op in chain:
            y = op(y)
        y.sum().backward()

    return step


def at_depth(depth, fn):
    if depth == 0:
        return fn()
    return at_depth(depth - 1, fn)


def per_op_us(step, inner, depth=0):
    t0 = time.perf_counter()
    for _ in range(inner):
        at_depth(depth, step)
    # 200 ops, each recorded forward and run backward, plus the sum.
    return (time.perf_counter() - t0) / inner / (N_OPS + 1) * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--inner", type=int, default=20)
    p.add_argument("--depth", type=int, default=30)
    args = p.parse_args()
    step = make_step(16)
    warnings.simplefilter("ignore")  # detect_anomaly's "has been enabled" warning

    assert not fg.is_anomaly_enabled()
    for _ in range(3):
        step()
    off_first = [per_op_us(step, args.inner) for _ in range(args.rounds)]

    results = {"on": [], "on, check_nan=False": [], f"on, {args.depth} frames deeper": [],
               "off again": []}
    for _ in range(args.rounds):
        with fg.autograd.detect_anomaly():
            results["on"].append(per_op_us(step, args.inner))
        with fg.autograd.detect_anomaly(check_nan=False):
            results["on, check_nan=False"].append(per_op_us(step, args.inner))
        with fg.autograd.detect_anomaly():
            results[f"on, {args.depth} frames deeper"].append(
                per_op_us(step, args.inner, args.depth)
            )
        results["off again"].append(per_op_us(step, args.inner))

    base = statistics.median(off_first)
    print(f"{N_OPS} elementwise ops on 16 float32, forward + backward, "
          f"median of {args.rounds} rounds x {args.inner} steps")
    print(f"  {'off (never enabled)':32s} {base:6.3f} us/op  1.00x")
    for name, ts in results.items():
        med = statistics.median(ts)
        print(f"  {name:32s} {med:6.3f} us/op  {med / base:.2f}x")


if __name__ == "__main__":
    main()
