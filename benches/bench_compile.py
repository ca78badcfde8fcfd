"""Workloads of ``ferrograd.compile`` (issue 16), used by compare.py's compile
rows and runnable alone: ``python benches/bench_compile.py`` prints ferrograd
eager, ferrograd compiled and PyTorch eager for each.

Each ``make_*(lib, compiled)`` returns a zero-argument training step; with
``compiled`` the step is wrapped in ``ferrograd.compile`` and already warm
(its eager call and its capture are done), so timings are replays."""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

EW_OPS, EW_N = 200, 16
CHAIN_OPS = 100_000
LSTM = (64, 64, 32, 8)  # input, hidden, steps, batch
MLP = (784, 512, 256, 10)
MLP_BATCH = 128


def _warm(mod: Any, step: Callable, compiled: bool, params: list | None = None) -> Callable:
    """Compile ``step`` and run its eager and capture calls. A training step
    moves ``params``; they are put back afterwards so the first timed call
    computes the same loss as the first eager call of another library."""
    if not compiled:
        return step
    saved = [p.detach().clone() for p in params or []]
    c = mod.compile(step, fullgraph=True)
    c()
    c()
    with mod.no_grad():
        for p, v in zip(params or [], saved):
            p.copy_(v)
    return c


def make_elementwise(mod: Any, compiled: bool) -> Callable:
    """200 ops mixing scalar and tensor operands on 16 floats, fwd+bwd."""
    x = mod.tensor(np.random.default_rng(0).uniform(-1, 1, EW_N).astype(np.float32), requires_grad=True)
    cycle = [lambda y: y * 0.5, lambda y: y + x, mod.sin, mod.exp, lambda y: y * x]
    chain = [cycle[i % len(cycle)] for i in range(EW_OPS)]

    def step():
        x.grad = None
        y = x
        for op in chain:
            y = op(y)
        loss = y.sum()
        loss.backward()
        return loss

    return _warm(mod, step, compiled)


def make_scalar_chain(mod: Any, compiled: bool) -> Callable:
    """``y = y * 1.0001 + 0.0`` repeated: 100,000 one-element ops, fwd+bwd."""
    x = mod.tensor(np.ones(1, np.float32), requires_grad=True)

    def step():
        x.grad = None
        y = x
        for _ in range(CHAIN_OPS // 2):
            y = y * 1.0001 + 0.0
        loss = y.sum()
        loss.backward()
        return loss

    return _warm(mod, step, compiled)


def make_lstm_cell(mod: Any, compiled: bool) -> Callable:
    """LSTMCell unrolled 32 steps, hidden 64, batch 8, with an SGD step."""
    isz, hsz, steps, batch = LSTM
    mod.manual_seed(0)
    cell, head = mod.nn.LSTMCell(isz, hsz), mod.nn.Linear(hsz, 1)
    params = list(cell.parameters()) + list(head.parameters())
    opt = mod.optim.SGD(params, lr=0.01)
    r = np.random.default_rng(0)
    x = mod.tensor(r.standard_normal((steps, batch, isz)).astype(np.float32))
    y = mod.tensor(r.standard_normal((batch, 1)).astype(np.float32))

    def step():
        opt.zero_grad()
        h = mod.zeros(batch, hsz)
        c = mod.zeros(batch, hsz)
        for t in range(steps):
            h, c = cell(x[t], (h, c))
        loss = ((head(h) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    return _warm(mod, step, compiled, params)


def make_mlp(mod: Any, compiled: bool) -> Callable:
    """MLP 784-512-256-10, batch 128, cross entropy, SGD step."""
    mod.manual_seed(0)
    nn = mod.nn
    model = nn.Sequential(nn.Linear(MLP[0], MLP[1]), nn.ReLU(), nn.Linear(MLP[1], MLP[2]), nn.ReLU(), nn.Linear(MLP[2], MLP[3]))
    opt = mod.optim.SGD(model.parameters(), lr=0.01)
    r = np.random.default_rng(0)
    x = mod.tensor(r.standard_normal((MLP_BATCH, MLP[0])).astype(np.float32))
    y = mod.tensor(r.integers(0, MLP[3], MLP_BATCH))

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return _warm(mod, step, compiled, list(model.parameters()))


def make_capture(mod: Any, compiled: bool) -> Callable:
    """The capture call of the LSTMCell step (a new compiled function each
    time, its eager warm-up call done), or one eager call of it."""
    step = make_lstm_cell(mod, False)
    if not compiled:
        return step

    def capture():
        c = mod.compile(step, fullgraph=True)
        c._called = True  # skip the eager first call: time the capture alone
        return c()

    return capture


def best(fn: Callable, seconds: float = 1.0, repeat: int = 5) -> float:
    """Best of ``repeat`` samples, each the mean over as many calls as fit."""
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-6)
    n = max(1, int(seconds / repeat / one))
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) / n)
    return min(out)


WORKLOADS = [
    ("200 elementwise ops on 16 floats, fwd+bwd", make_elementwise, 1e6 / EW_OPS, "us/op"),
    ("scalar chain 100,000 ops, fwd+bwd", make_scalar_chain, 1e3, "ms"),
    ("LSTMCell x32 h64 b8 training step", make_lstm_cell, 1e3, "ms"),
    ("MLP 784-512-256-10 b128 training step", make_mlp, 1e3, "ms"),
    ("capture call (LSTMCell step)", make_capture, 1e3, "ms"),
]


def main() -> None:
    """Prints the table of the compile workloads."""
    import os

    import ferrograd

    try:
        import torch
    except ImportError:
        torch = None
    print(f"load average: {os.getloadavg()}")
    print(f"{'workload':45s} {'unit':6s} {'fg eager':>10s} {'fg compiled':>12s} {'torch eager':>12s}")
    for name, make, scale, unit in WORKLOADS:
        e = best(make(ferrograd, False)) * scale
        c = best(make(ferrograd, True), repeat=3 if make is make_capture else 5) * scale
        t = best(make(torch, False)) * scale if torch is not None else float("nan")
        print(f"{name:45s} {unit:6s} {e:10.4f} {c:12.4f} {t:12.4f}   eager/compiled {e / c:5.2f}x  torch/compiled {t / c:5.2f}x")


if __name__ == "__main__":
    main()


def rows(Row: Any, Target: Any, timed: Callable) -> list:
    """compare.py's compile rows: ferrograd runs the step compiled (warm),
    PyTorch eagerly."""

    def adapt(make: Callable) -> Callable:
        def m(lib, cfg):
            step = make(lib.mod, lib.name == "ferrograd")
            return lambda: {"loss": step()}

        return m

    per = {"us/op": lambda cfg: 1e6 / EW_OPS, "ms": lambda cfg: 1e3}
    targets = [Target(">=100x torch", 100.0), None, Target(">=5x torch", 5.0), Target(">=1.0x torch", 1.0), None]
    return [
        Row("compile", f"compiled: {name}", unit, timed(adapt(make), per[unit]), target=tgt, rtol=1e-2)
        for (name, make, _, unit), tgt in zip(WORKLOADS, targets)
    ]
