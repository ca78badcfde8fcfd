#!/usr/bin/env python3
"""Elementwise ops and activations, ferrograd vs PyTorch in one process.

Each op runs on float32 values (1M and 16 elements by default), forward and forward+backward,
best of `--repeat` timings after a warm-up; the ratio is PyTorch's time over ferrograd's, so
above 1 means ferrograd is faster. One thread each unless `--threads` says otherwise.

    python benches/elementwise_sweep.py                       # every op, 1M and 16 elements
    python benches/elementwise_sweep.py --only gelu,erf --sizes 1048576 --threads 2
    python benches/elementwise_sweep.py --json out.json       # also write the rows

Also prints the machine's copy bandwidth (a 1M-float clone) and each forward's bytes per
second (read + written) against it. The machine must be quiet for the numbers to mean anything:
the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import ferrograd as fg
import ferrograd.nn.functional as fF

try:
    import torch
    import torch.nn.functional as tF
except ImportError:  # pragma: no cover - the sweep needs PyTorch
    sys.exit("this benchmark compares against PyTorch, which is not installed")


def _inputs(lib, n, kind, grad):
    rng = np.random.default_rng(0)
    if kind == "unit":
        x = rng.uniform(-0.99, 0.99, n)
    elif kind == "pos":
        x = rng.uniform(0.01, 10.0, n)
    elif kind == "ge1":
        x = rng.uniform(1.01, 10.0, n)
    else:
        x = rng.normal(0.0, 3.0, n)
    x = x.astype(np.float32)
    t = lib.tensor(x)
    if grad:
        t.requires_grad_(True)
    return t


# name -> (input kind, function of (lib, functional module, x, y)); y is a second operand.
OPS = {
    "exp": ("any", lambda L, F, x, y: x.exp()),
    "log": ("pos", lambda L, F, x, y: x.log()),
    "log2": ("pos", lambda L, F, x, y: x.log2()),
    "log10": ("pos", lambda L, F, x, y: x.log10()),
    "log1p": ("pos", lambda L, F, x, y: x.log1p()),
    "expm1": ("any", lambda L, F, x, y: x.expm1()),
    "exp2": ("any", lambda L, F, x, y: L.exp2(x)),
    "sqrt": ("pos", lambda L, F, x, y: x.sqrt()),
    "rsqrt": ("pos", lambda L, F, x, y: x.rsqrt()),
    "sin": ("any", lambda L, F, x, y: x.sin()),
    "cos": ("any", lambda L, F, x, y: x.cos()),
    "tan": ("unit", lambda L, F, x, y: x.tan()),
    "asin": ("unit", lambda L, F, x, y: x.asin()),
    "acos": ("unit", lambda L, F, x, y: x.acos()),
    "atan": ("any", lambda L, F, x, y: x.atan()),
    "sinh": ("any", lambda L, F, x, y: x.sinh()),
    "cosh": ("any", lambda L, F, x, y: x.cosh()),
    "tanh": ("any", lambda L, F, x, y: x.tanh()),
    "asinh": ("any", lambda L, F, x, y: x.asinh()),
    "acosh": ("ge1", lambda L, F, x, y: x.acosh()),
    "atanh": ("unit", lambda L, F, x, y: x.atanh()),
    "erf": ("any", lambda L, F, x, y: x.erf()),
    "erfc": ("any", lambda L, F, x, y: x.erfc()),
    "erfinv": ("unit", lambda L, F, x, y: x.erfinv()),
    "sigmoid": ("any", lambda L, F, x, y: x.sigmoid()),
    "abs": ("any", lambda L, F, x, y: x.abs()),
    "neg": ("any", lambda L, F, x, y: -x),
    "reciprocal": ("pos", lambda L, F, x, y: x.reciprocal()),
    "square": ("any", lambda L, F, x, y: x.square()),
    "round": ("any", lambda L, F, x, y: x.round()),
    "floor": ("any", lambda L, F, x, y: x.floor()),
    "ceil": ("any", lambda L, F, x, y: x.ceil()),
    "trunc": ("any", lambda L, F, x, y: x.trunc()),
    "clamp_min": ("any", lambda L, F, x, y: x.clamp(min=0)),
    "clamp": ("any", lambda L, F, x, y: x.clamp(-1.0, 1.0)),
    "relu": ("any", lambda L, F, x, y: F.relu(x)),
    "relu6": ("any", lambda L, F, x, y: F.relu6(x)),
    "hardtanh": ("any", lambda L, F, x, y: F.hardtanh(x)),
    "leaky_relu": ("any", lambda L, F, x, y: F.leaky_relu(x, 0.01)),
    "elu": ("any", lambda L, F, x, y: F.elu(x)),
    "selu": ("any", lambda L, F, x, y: F.selu(x)),
    "celu": ("any", lambda L, F, x, y: F.celu(x, 0.7)),
    "gelu": ("any", lambda L, F, x, y: F.gelu(x)),
    "gelu_tanh": ("any", lambda L, F, x, y: F.gelu(x, approximate="tanh")),
    "silu": ("any", lambda L, F, x, y: F.silu(x)),
    "softplus": ("any", lambda L, F, x, y: F.softplus(x)),
    "mish": ("any", lambda L, F, x, y: F.mish(x)),
    "logsigmoid": ("any", lambda L, F, x, y: F.logsigmoid(x)),
    "hardswish": ("any", lambda L, F, x, y: F.hardswish(x)),
    "hardsigmoid": ("any", lambda L, F, x, y: F.hardsigmoid(x)),
    "hardshrink": ("any", lambda L, F, x, y: F.hardshrink(x)),
    "softshrink": ("any", lambda L, F, x, y: F.softshrink(x)),
    "threshold": ("any", lambda L, F, x, y: F.threshold(x, 0.1, 0.0)),
    "softsign": ("any", lambda L, F, x, y: F.softsign(x)),
    "tanhshrink": ("any", lambda L, F, x, y: F.tanhshrink(x)),
    "add": ("any", lambda L, F, x, y: x + y),
    "mul": ("any", lambda L, F, x, y: x * y),
    "div": ("pos", lambda L, F, x, y: x / y),
    "maximum": ("any", lambda L, F, x, y: L.maximum(x, y)),
    "atan2": ("any", lambda L, F, x, y: L.atan2(x, y)),
    "hypot": ("any", lambda L, F, x, y: L.hypot(x, y)),
    "logaddexp": ("any", lambda L, F, x, y: L.logaddexp(x, y)),
    "where": ("any", lambda L, F, x, y: L.where(x > 0, x, y)),
    "gt": ("any", lambda L, F, x, y: x > y),
    "pow2": ("any", lambda L, F, x, y: x**2),
}
NO_GRAD = {"round", "floor", "ceil", "trunc", "gt"}


def best(f, repeat):
    f()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def time_op(lib, F, fn, kind, n, backward, repeat):
    x = _inputs(lib, n, kind, backward)
    y = _inputs(lib, n, "pos" if kind == "pos" else "any", backward)
    if not backward:
        return best(lambda: fn(lib, F, x, y), repeat)
    g = None

    def step():
        nonlocal g
        out = fn(lib, F, x, y)
        if g is None:
            g = lib.ones_like(out)
        out.backward(g)
        x.grad = None
        y.grad = None

    return best(step, repeat)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default="")
    p.add_argument("--sizes", default="1048576,16")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", default="")
    a = p.parse_args()
    fg.set_num_threads(a.threads)
    torch.set_num_threads(a.threads)
    names = [s for s in a.only.split(",") if s] or list(OPS)
    sizes = [int(s) for s in a.sizes.split(",")]
    print(f"load before: {os.getloadavg()}, threads {a.threads}, torch {torch.__version__}")
    n = sizes[0]
    xs = fg.tensor(np.ones(n, np.float32))
    copy = best(lambda: xs.clone(), max(a.repeat, 10))
    copy_bw = 8 * n / copy
    print(f"copy of {n} floats: {copy * 1e3:.3f} ms ({copy_bw / 1e9:.1f} GB/s)")
    rows = []
    hdr = f"{'op':<12}{'n':>9}{'pass':>6}{'ferrograd ms':>14}{'torch ms':>10}{'ratio':>8}"
    print(hdr)
    for name in names:
        kind, fn = OPS[name]
        for n in sizes:
            for backward in (False, True):
                if backward and name in NO_GRAD:
                    continue
                mine = time_op(fg, fF, fn, kind, n, backward, a.repeat)
                theirs = time_op(torch, tF, fn, kind, n, backward, a.repeat)
                rows.append(
                    dict(op=name, n=n, backward=backward, ferrograd=mine, torch=theirs,
                         ratio=theirs / mine)
                )
                bw = ""
                if not backward and n >= 1 << 20:
                    nbytes = 8 * n * (2 if name in ("add", "mul", "div", "maximum", "atan2",
                                                    "hypot", "logaddexp", "gt") else 1)
                    bw = f"  {nbytes / mine / copy_bw:.0%} of copy"
                print(f"{name:<12}{n:>9}{'f+b' if backward else 'f':>6}{mine * 1e3:>14.4f}"
                      f"{theirs * 1e3:>10.4f}{theirs / mine:>8.2f}{bw}", flush=True)
    ratios = [r["ratio"] for r in rows]
    print(f"median ratio {statistics.median(ratios):.2f}, slower than torch in "
          f"{sum(r < 1 for r in ratios)} of {len(ratios)} cases")
    print(f"load after: {os.getloadavg()}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
