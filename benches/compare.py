#!/usr/bin/env python3
"""Side-by-side benchmark: ferrograd vs PyTorch vs NumPy, all in one process.

Every workload is one of ferrograd's speed targets. The table shows each target next to its
row and whether ferrograd met it. A ratio says how many times better ferrograd did:
other_time / ferrograd_time, ferrograd_GFLOPs / other_GFLOPs, or other_peak / ferrograd_peak.
So a ratio > 1 always means ferrograd won.

    python benches/compare.py                  # full run, a few minutes
    python benches/compare.py --quick          # CI smoke test: tiny sizes, targets not judged
    python benches/compare.py --only matmul1024,mlp --repeat 10 --json out.json

PyTorch is optional; without it the torch column shows "-". NumPy has no autograd, so it only
runs the forward-only rows. Those rows build no graph, so all three libraries do the same work.
A library missing a function (AttributeError/TypeError/NotImplementedError) gets "n/a".

Exit status is 0 unless ferrograd fails to import, raises any other error, computes an
answer that disagrees with torch/NumPy, or can run no workload at all. Missed targets never
change the exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import bench_compile  # benches/ is the script's directory
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_func  # noqa: E402

WORKLOADS = [
    "elementwise",
    "scalar_chain",
    "matmul1024",
    "matmul_sizes",
    "matmul_bf16",
    "tanh",
    "mlp",
    "mlp_rss",
    "cnn_rss",
    "optim",
    "dataloader",
    "save_load",
    "conv2d",
    "lenet",
    "batchnorm",
    "layernorm",
    "lstm",
    "transformer",
    *bench_func.WORKLOADS,
    "compile",
]
NA_ERRORS = (AttributeError, TypeError, NotImplementedError)
LR = 0.01
NOISY = 1.5  # median/best sample ratio above which a cell is marked noisy


@dataclass
class Config:
    quick: bool
    repeat: int
    warmup: int
    min_sample: float  # seconds; fast calls are looped so the timer resolution doesn't matter
    warm_time: float  # minimum seconds of warm-up calls
    budget: float  # seconds per (row, library), so a very slow library can't stall the run
    settle: float  # pause before each sample, see run_timed
    ew_n: int = 16
    ew_ops: int = 200
    chain_ops: int = 100_000
    mm_n: int = 1024
    mm_sizes: tuple = (256, 2048)
    bmm: tuple = (32, 128)
    tanh_n: int = 1 << 22
    mlp_dims: tuple = (784, 512, 256, 10)
    batch: int = 128
    rss_steps: int = 1000
    cnn_rss_steps: int = 200
    loss: str = "mse"
    threads: int = 1
    optim_params: tuple = (20, 5_000_000)  # tensors, total float32 parameters
    dl_shape: tuple = (60000, 784)
    dl_batch: int = 64
    sl_tensors: int = 100
    sl_numel: int = 1_000_000
    conv: tuple = (32, 32, 64, 32)  # batch, in channels, out channels, image side
    lenet_batch: int = 64
    bn_shape: tuple = (64, 64, 32, 32)
    ln_shape: tuple = (64, 128, 512)
    lstm: tuple = (64, 128, 32, 16)  # input size, hidden size, steps, batch
    tel: tuple = (128, 4, 512, 16, 64)  # d_model, heads, feed-forward, batch, sequence


def make_config(args) -> Config:
    if args.quick:
        cfg = Config(
            quick=True,
            repeat=2,
            warmup=1,
            warm_time=0.02,
            min_sample=0.002,
            budget=1.0,
            settle=0.002,
            chain_ops=2000,
            mm_n=128,
            mm_sizes=(32, 256),
            bmm=(4, 32),
            tanh_n=4096,
            mlp_dims=(64, 32, 16, 10),
            batch=16,
            rss_steps=20,
            cnn_rss_steps=5,
            optim_params=(4, 4096),
            dl_shape=(600, 16),
            sl_tensors=4,
            sl_numel=1000,
            conv=(2, 4, 8, 8),
            lenet_batch=4,
            bn_shape=(4, 8, 4, 4),
            ln_shape=(4, 8, 16),
            lstm=(8, 16, 4, 2),
            tel=(16, 2, 32, 2, 8),
        )
    else:
        cfg = Config(
            quick=False,
            repeat=5,
            warmup=2,
            warm_time=0.3,
            min_sample=0.05,
            budget=30.0,
            settle=0.1,
        )
    if args.repeat:
        cfg.repeat = args.repeat
    return cfg


# ----------------------------------------------------------------------------- adapters


class AutogradLib:
    """The few calls the workloads need. ferrograd copies the torch API, so this one
    class wraps either library."""

    autograd = True

    def __init__(self, name: str, mod: Any):
        self.name, self.mod = name, mod
        self.sin = self._unary("sin")
        self.exp = self._unary("exp")
        self.tanh = self._unary("tanh")
        self.relu = self._unary("relu")

    def _unary(self, op: str) -> Callable:
        functional = getattr(getattr(self.mod, "nn", None), "functional", None)
        f = getattr(self.mod, op, None) or getattr(functional, op, None)
        # Fall back to the method so a library that only has `t.relu()` can still run the row.
        return f if f is not None else (lambda t: getattr(t, op)())

    def tensor(self, a: np.ndarray, requires_grad: bool = False):
        return self.mod.tensor(np.array(a), requires_grad=requires_grad)

    def no_grad(self):
        return self.mod.no_grad()

    def cross_entropy(self, logits, target):
        return self.mod.nn.functional.cross_entropy(logits, target)

    def clear_grad(self, p) -> None:
        try:
            p.grad = None
        except NA_ERRORS:
            p.grad.zero_()

    def sgd_step(self, params: list) -> None:
        with self.no_grad():
            for p in params:
                q = p
                q -= LR * p.grad
                # Without __isub__, Python rebinds q to a new tensor and p never changes. The
                # step would then do less work than torch's, so count it as unsupported.
                if q is not p:
                    raise NotImplementedError("`p -= lr * p.grad` does not update p in place")
                self.clear_grad(p)

    def to_numpy(self, t) -> np.ndarray:
        if hasattr(t, "detach"):
            t = t.detach()
        if getattr(t, "dtype", None) == getattr(self.mod, "bfloat16", ()):
            t = t.float()  # NumPy has no bfloat16
        return np.asarray(t.numpy() if hasattr(t, "numpy") else t, dtype=np.float64)

    def get_threads(self) -> int | None:
        f = getattr(self.mod, "get_num_threads", None)
        return f() if callable(f) else None

    def set_threads(self, n: int) -> None:
        f = getattr(self.mod, "set_num_threads", None)
        if callable(f):
            f(n)


class NumpyLib:
    """Forward-only stand-in with the same call names, used as a plain-kernel baseline."""

    name = "numpy"
    autograd = False
    mod = np
    sin, exp, tanh = staticmethod(np.sin), staticmethod(np.exp), staticmethod(np.tanh)

    @staticmethod
    def relu(a):
        return np.maximum(a, 0.0)

    def tensor(self, a, requires_grad=False):
        return np.array(a)

    def no_grad(self):
        return contextlib.nullcontext()

    def cross_entropy(self, logits, target):
        z = logits - logits.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return -logp[np.arange(len(target)), target].mean()

    def to_numpy(self, a):
        return np.asarray(a, dtype=np.float64)


# ---------------------------------------------------------------------------- workloads
# A `make(lib, cfg)` sets up inputs (not timed) and returns the timed zero-argument call.
# That call returns {name: tensor}, which is used once to compare answers between libraries.


def rng():
    return np.random.default_rng(0)


def make_elementwise(grad: bool):
    def make(lib, cfg):
        x = lib.tensor(rng().uniform(-1, 1, cfg.ew_n).astype(np.float32), requires_grad=grad)
        # Mixes scalar and tensor operands with transcendentals. Values stay in about [-3, 3],
        # so float32 results are comparable across libraries even after 200 ops.
        cycle = [lambda y: y * 0.5, lambda y: y + x, lib.sin, lib.exp, lambda y: y * x]
        chain = [cycle[i % len(cycle)] for i in range(cfg.ew_ops)]

        def forward():
            y = x
            for op in chain:
                y = op(y)
            return y

        if not grad:
            return lambda: {"out": forward()}

        def fwd_bwd():
            lib.clear_grad(x)
            loss = forward().sum()
            loss.backward()
            return {"loss": loss, "grad_x": x.grad}

        return fwd_bwd

    return make


def make_scalar_chain(grad: bool):
    def make(lib, cfg):
        # One element, not 0-d: every library handles shape (1,), some don't take 0-d arrays.
        x = lib.tensor(np.ones(1, np.float32), requires_grad=grad)
        steps = cfg.chain_ops // 2

        def forward():
            y = x
            for _ in range(steps):
                y = y * 1.0001 + 0.0
            return y

        if not grad:
            return lambda: {"out": forward()}

        def fwd_bwd():
            lib.clear_grad(x)
            loss = forward().sum()
            loss.backward()
            return {"loss": loss, "grad_x": x.grad}

        return fwd_bwd

    return make


def make_matmul(n: int | None, grad: bool, batched: bool = False, bf16: bool = False):
    def make(lib, cfg):
        size = n or cfg.mm_n
        shape = (cfg.bmm[0], cfg.bmm[1], cfg.bmm[1]) if batched else (size, size)
        r = rng()
        a = lib.tensor(r.standard_normal(shape, np.float32), requires_grad=grad and not bf16)
        b = lib.tensor(r.standard_normal(shape, np.float32), requires_grad=grad and not bf16)
        if bf16:  # bfloat16 leaves: float32 accumulation, each result rounded once
            a = a.bfloat16().requires_grad_(grad)
            b = b.bfloat16().requires_grad_(grad)
        if not grad:
            return lambda: {"out": a @ b}

        def fwd_bwd():
            lib.clear_grad(a)
            lib.clear_grad(b)
            (a @ b).sum().backward()
            return {"grad_a": a.grad, "grad_b": b.grad}

        return fwd_bwd

    return make


def make_tanh(grad: bool):
    def make(lib, cfg):
        r = rng()
        # Keeps most outputs positive so the 4M-element sum doesn't cancel to near zero; that
        # would make a relative tolerance on the loss meaningless.
        x = lib.tensor(r.uniform(-1, 1, cfg.tanh_n).astype(np.float32))
        w = lib.tensor(r.uniform(0.5, 1.5, cfg.tanh_n).astype(np.float32), requires_grad=grad)
        b = lib.tensor(r.uniform(0, 1, cfg.tanh_n).astype(np.float32), requires_grad=grad)
        if not grad:
            return lambda: {"loss": lib.tanh(x * w + b).sum()}

        def fwd_bwd():
            lib.clear_grad(w)
            lib.clear_grad(b)
            loss = lib.tanh(x * w + b).sum()
            loss.backward()
            return {"loss": loss, "grad_w": w.grad, "grad_b": b.grad}

        return fwd_bwd

    return make


def build_mlp(lib, dims, batch: int, loss_kind: str, train: bool) -> Callable:
    r = rng()
    params = []
    for fan_in, fan_out in zip(dims[:-1], dims[1:]):
        w = (r.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        params.append(lib.tensor(w, requires_grad=train))
        params.append(lib.tensor(np.zeros(fan_out, np.float32), requires_grad=train))
    x = lib.tensor(r.standard_normal((batch, dims[0]), np.float32))
    labels = r.integers(0, dims[-1], batch)
    if loss_kind == "ce":
        target = lib.tensor(labels.astype(np.int64))
    else:
        target = lib.tensor(np.eye(dims[-1], dtype=np.float32)[labels])

    def forward():
        h = x
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i + 2 < len(params):
                h = lib.relu(h)
        if loss_kind == "ce":
            return lib.cross_entropy(h, target)
        d = h - target
        return (d * d).mean()

    if not train:
        return lambda: {"loss": forward()}

    def step():
        loss = forward()
        loss.backward()
        # Grab the last layer's gradient before sgd_step drops it. After an update the weights
        # barely change, so comparing them would miss a wrong gradient.
        g = params[-2].grad
        lib.sgd_step(params)
        return {"loss": loss, "grad_w_last": g}

    return step


def make_optim_step(kind: str):
    """One optimizer step over many parameter tensors with gradients already set;
    the first call's updated parameters are compared across libraries."""

    def make(lib, cfg):
        count, total = cfg.optim_params
        r = rng()
        params = []
        for i in range(count):
            n = total // count + (1 if i < total % count else 0)
            p = lib.tensor(r.standard_normal(n).astype(np.float32), requires_grad=True)
            p.grad = lib.tensor(r.standard_normal(n).astype(np.float32))
            params.append(p)
        if kind == "adam":
            opt = lib.mod.optim.Adam(params, lr=1e-3)
        else:
            opt = lib.mod.optim.SGD(params, lr=1e-2, momentum=0.9)

        def step():
            opt.step()
            return {"p0": params[0], "p_last": params[-1]}

        return step

    return make


def make_mlp(train: bool):
    return lambda lib, cfg: build_mlp(lib, cfg.mlp_dims, cfg.batch, cfg.loss, train)


def make_conv2d(grad: bool):
    """``F.conv2d`` 3x3, padding 1, with a bias; fwd+bwd reduces the output with ``sum``."""

    def make(lib, cfg):
        b, cin, cout, side = cfg.conv
        r = rng()
        x = lib.tensor(r.standard_normal((b, cin, side, side), np.float32), requires_grad=grad)
        w = (r.standard_normal((cout, cin, 3, 3)) / np.sqrt(cin * 9)).astype(np.float32)
        w = lib.tensor(w, requires_grad=grad)
        bias = lib.tensor(r.standard_normal(cout).astype(np.float32), requires_grad=grad)
        conv2d = lib.mod.nn.functional.conv2d

        def forward():
            return {"y": conv2d(x, w, bias, padding=1)}

        def fwd_bwd():
            for t in (x, w, bias):
                lib.clear_grad(t)
            conv2d(x, w, bias, padding=1).sum().backward()
            return {"grad_w": w.grad, "grad_x": x.grad}

        return fwd_bwd if grad else forward

    return make


def make_norm(kind: str, grad: bool):
    """`BatchNorm2d(C)` in training mode or `LayerNorm(D)`, then a weighted sum so the
    gradient reaching the layer is not constant (a constant one cancels in batch norm)."""

    def make(lib, cfg):
        r = rng()
        shape = cfg.bn_shape if kind == "bn" else cfg.ln_shape
        nn = lib.mod.nn
        mod = nn.BatchNorm2d(shape[1]) if kind == "bn" else nn.LayerNorm(shape[-1])
        x = lib.tensor(r.standard_normal(shape).astype(np.float32), requires_grad=grad)
        gy = lib.tensor(r.standard_normal(shape).astype(np.float32))
        if not grad:

            def forward():
                with lib.no_grad():
                    return {"out_sum": (mod(x) * gy).sum()}

            return forward

        def fwd_bwd():
            for p in (x, mod.weight, mod.bias):
                lib.clear_grad(p)
            loss = (mod(x) * gy).sum()
            loss.backward()
            return {"loss": loss, "grad_x": x.grad, "grad_w": mod.weight.grad}

        return fwd_bwd

    return make


def make_lenet(lib, cfg):
    """LeNet-5 on 1x28x28 (conv 6@5x5 pad 2, max pool, conv 16@5x5, max pool, 120-84-10),
    one cross-entropy SGD step written with the functional API."""
    r = rng()
    shapes = [
        (6, 1, 5, 5),
        (6,),
        (16, 6, 5, 5),
        (16,),
        (120, 400),
        (120,),
        (84, 120),
        (84,),
        (10, 84),
        (10,),
    ]
    params = []
    for shape in shapes:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        a = (r.uniform(-1, 1, shape) / np.sqrt(fan_in)).astype(np.float32)
        params.append(lib.tensor(a, requires_grad=True))
    n = cfg.lenet_batch
    x = lib.tensor(r.standard_normal((n, 1, 28, 28), np.float32))
    target = lib.tensor(r.integers(0, 10, n).astype(np.int64))
    F = lib.mod.nn.functional

    def step():
        c1, b1, c2, b2, w3, b3, w4, b4, w5, b5 = params
        h = F.max_pool2d(lib.relu(F.conv2d(x, c1, b1, padding=2)), 2)
        h = F.max_pool2d(lib.relu(F.conv2d(h, c2, b2)), 2)
        h = h.reshape(n, 400)
        h = lib.relu(F.linear(h, w3, b3))
        h = lib.relu(F.linear(h, w4, b4))
        loss = lib.cross_entropy(F.linear(h, w5, b5), target)
        for p in params:
            lib.clear_grad(p)
        loss.backward()
        g = params[0].grad
        lib.sgd_step(params)
        return {"loss": loss, "grad_conv1": g}

    return step


def _set_params(lib, module, r, scale: float) -> list:
    """Overwrites every parameter of ``module`` with seeded uniform values, so both libraries
    run the same model whatever their initialisation."""
    params = [p for _, p in module.named_parameters()]
    with lib.no_grad():
        for p in params:
            p.copy_(lib.tensor(r.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return params


def make_lstm(lib, cfg):
    isz, hsz, steps, batch = cfg.lstm
    r = rng()
    m = lib.mod.nn.LSTM(isz, hsz)
    params = _set_params(lib, m, r, 1.0 / np.sqrt(hsz))
    x = lib.tensor(r.standard_normal((steps, batch, isz)).astype(np.float32))

    def fwd_bwd():
        for p in params:
            lib.clear_grad(p)
        out, _ = m(x)
        loss = (out * out).mean()
        loss.backward()
        return {"loss": loss, "grad_w_hh": m.weight_hh_l0.grad, "grad_w_ih": m.weight_ih_l0.grad}

    return fwd_bwd


def make_transformer(lib, cfg):
    d, heads, ff, batch, seq = cfg.tel
    r = rng()
    # dropout=0 so both libraries compute the same function (and answers can be compared).
    layer = lib.mod.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True)
    params = _set_params(lib, layer, r, 1.0 / np.sqrt(d))
    x = lib.tensor(r.standard_normal((batch, seq, d)).astype(np.float32))

    def fwd_bwd():
        for p in params:
            lib.clear_grad(p)
        loss = (layer(x) ** 2).mean()
        loss.backward()
        return {"loss": loss, "grad_linear1": layer.linear1.weight.grad}

    return fwd_bwd


# ------------------------------------------------------------------------------ rows


@dataclass
class Target:
    text: str
    vs_torch: float | None = None  # ferrograd's ratio vs torch must be >= this
    max_value: float | None = None  # ferrograd's own value must be <= this

    def met(self, ratio: float | None, value: float | None) -> str:
        if self.vs_torch is not None:
            if ratio is None:
                return "no torch" if value is not None else "n/a"
            return "yes" if ratio >= self.vs_torch else "NO"
        if value is None:
            return "n/a"
        return "yes" if value <= self.max_value else "NO"


@dataclass
class Cell:
    status: str  # ok | n/a | err | - (not applicable by design, or library absent)
    value: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    fingerprint: dict[str, np.ndarray] = field(default_factory=dict)
    error: str = ""


@dataclass
class Row:
    workload: str
    label: str
    unit: str
    measure: Timed | Callable[[Any, Config], Cell]  # a custom callable measures one library
    higher_is_better: bool = False
    grad: bool = True  # NumPy sits out rows that need autograd
    target: Target | None = None
    ratio: bool = True
    rtol: float = 1e-3


def make_dataloader(lib, cfg):
    """One epoch of a shuffled DataLoader over a TensorDataset (MNIST-sized)."""
    data = lib.mod.utils.data
    r = rng()
    x = lib.tensor(r.standard_normal(cfg.dl_shape, np.float32))
    y = lib.tensor(r.integers(0, 10, cfg.dl_shape[0]))
    loader = data.DataLoader(data.TensorDataset(x, y), batch_size=cfg.dl_batch, shuffle=True)

    def epoch():
        rows = 0
        for xb, _ in loader:
            rows += xb.shape[0]
        # The orders differ between libraries' generators; what every epoch must see is
        # each row once.
        return {"rows": np.array([rows], np.float64)}

    return epoch


def _state_dict(lib, cfg):
    r = rng()
    base = r.standard_normal(cfg.sl_numel, np.float32)
    # Distinct tensors (not views of one buffer) so each is written on its own.
    return {f"layer{i}.weight": lib.tensor(base + i) for i in range(cfg.sl_tensors)}


def _ckpt_path(lib):
    import atexit
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"fg_bench_{os.getpid()}_{lib.name}.ckpt")
    atexit.register(lambda: os.path.exists(path) and os.unlink(path))
    return path


def make_save(lib, cfg):
    sd, path = _state_dict(lib, cfg), _ckpt_path(lib)

    def save():
        lib.mod.save(sd, path)
        return {}

    return save


def make_load(lib, cfg):
    sd, path = _state_dict(lib, cfg), _ckpt_path(lib)
    lib.mod.save(sd, path)
    del sd
    last = f"layer{cfg.sl_tensors - 1}.weight"

    def load():
        out = lib.mod.load(path)
        return {"first": out["layer0.weight"], "last": out[last]}

    return load


@dataclass
class Timed:
    """A row measured by timing: value = seconds * per_call(cfg), or with rate=True,
    per_call(cfg) flops / seconds in GFLOP/s."""

    make: Callable  # (lib, cfg) -> the zero-argument call to time
    per_call: Callable[[Config], float]
    rate: bool = False


def timed(make: Callable, per_call: Callable[[Config], float], rate: bool = False) -> Timed:
    return Timed(make, per_call, rate)


def warm_up(fn: Callable, cfg: Config) -> int:
    """Calls fn until it is warm. Returns how many calls to loop per sample."""
    start = time.perf_counter()
    durations: list[float] = []
    # Counting calls isn't enough: torch needs a handful of calls (allocator, thread pool,
    # kernel selection) before it reaches steady state, so also warm up for cfg.warm_time.
    while len(durations) < cfg.warmup or time.perf_counter() - start < cfg.warm_time:
        t0 = time.perf_counter()
        fn()
        durations.append(time.perf_counter() - t0)
        if time.perf_counter() - start > cfg.budget / 4:
            break
    # The median, not the last call: one slow call would otherwise shrink every sample to a
    # couple of calls, and then thread wake-up after the settle pause dominates them.
    per_call = max(statistics.median(durations), 1e-9)
    return max(1, min(100_000, round(cfg.min_sample / per_call)))


def sample(fn: Callable, number: int) -> float:
    gc.collect()
    # Like timeit: a cyclic GC pass in the middle of a sample is noise, not the workload.
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - t0) / number
    finally:
        gc.enable()


def guarded(fn: Callable) -> tuple[Any, Cell | None]:
    """Runs fn; an exception becomes an n/a cell (missing feature) or an err cell."""
    try:
        return fn(), None
    except NA_ERRORS as e:
        return None, Cell("n/a", error=f"{type(e).__name__}: {e}")
    except Exception as e:  # one broken row must not take the other rows down with it
        return None, Cell("err", error=f"{type(e).__name__}: {e}\n{traceback.format_exc()}")


def run_timed(row: Row, libs: list, cfg: Config) -> dict[str, Cell]:
    cells: dict[str, Cell] = {}
    calls: dict[str, tuple[Callable, int]] = {}
    for name, lib in libs:
        if lib is None or (row.grad and not lib.autograd):
            cells[name] = Cell("-")
            continue

        def prepare(lib=lib):
            fn = row.measure.make(lib, cfg)
            return fn, warm_up(fn, cfg)

        calls[name], bad = guarded(prepare)
        if bad:
            cells[name] = bad
            del calls[name]
    # Samples go round-robin across libraries, so drift (clock boost, other load, another
    # library's worker threads still spinning) hits every library alike, not the first one.
    samples: dict[str, list[float]] = {name: [] for name in calls}
    spent = dict.fromkeys(calls, 0.0)
    for round_no in range(cfg.repeat):
        order = list(calls) if round_no % 2 == 0 else list(calls)[::-1]
        # Alternating the direction means no library always runs right after the same one.
        # OpenBLAS threads busy-wait ~0.1s after numpy's call, and in a fixed order that cost
        # would always land on the library that runs next.
        for name in order:
            if name not in calls or spent[name] > cfg.budget:
                continue
            # Gives the previous library's worker threads time to stop spinning, so they
            # don't steal cores from this one.
            time.sleep(cfg.settle)
            fn, number = calls[name]
            t, bad = guarded(lambda fn=fn, number=number: sample(fn, number))
            if bad:
                cells[name] = bad
                del calls[name]
                continue
            samples[name].append(t)
            spent[name] += t * number
    for name, lib in libs:
        if name not in calls:
            continue
        number = calls.pop(name)[1]  # also drops the timed inputs before building fresh ones
        best, k = min(samples[name]), row.measure.per_call(cfg)
        value = k / best / 1e9 if row.measure.rate else best * k
        # Answers come from a freshly built call, so the number of timed calls can't change
        # them (e.g. SGD steps that moved the weights).
        fp, bad = guarded(lambda lib=lib: fingerprint(lib, row.measure.make(lib, cfg)()))
        if bad:
            cells[name] = bad
            continue
        extra = {
            "best_s": best,
            "median_s": statistics.median(samples[name]),
            "samples": len(samples[name]),
            "calls_per_sample": number,
        }
        cells[name] = Cell("ok", value, extra=extra, fingerprint=fp)
    return {name: cells[name] for name, _ in libs}  # table order, not completion order


def fingerprint(lib, outputs: dict[str, Any]) -> dict[str, np.ndarray]:
    fp = {}
    for key, t in outputs.items():
        a = lib.to_numpy(t).ravel()
        # A strided sample is enough to catch a wrong answer, and keeps the JSON small.
        fp[key] = a[:: max(1, a.size // 4096)]
    return fp


class RssProbe:
    """Runs a training loop (the MLP, or with ``model="cnn"`` the LeNet step) in a child
    process, once per library. Each child holds only its own library, so the peak RSS of
    one library can't include the other's."""

    def __init__(self, modules: dict[str, str], model: str = "mlp"):
        self.modules = modules
        self.model = model
        self.cache: dict[str, Any] = {}  # library name -> result dict or the exception it raised

    def run(self, lib, cfg) -> dict:
        # Both RSS rows read one child run; a failure is cached too so it isn't re-run.
        if lib.name not in self.cache:
            try:
                self.cache[lib.name] = self._spawn(lib, cfg)
            except Exception as e:
                self.cache[lib.name] = e
        res = self.cache[lib.name]
        if isinstance(res, Exception):
            raise res
        return res

    def _spawn(self, lib, cfg) -> dict:
        spec = {
            "module": self.modules[lib.name],
            "model": self.model,
            "threads": cfg.threads,
            "dims": list(cfg.mlp_dims),
            "batch": cfg.batch,
            "lenet_batch": cfg.lenet_batch,
            "loss": cfg.loss,
            "steps": cfg.rss_steps if self.model == "mlp" else cfg.cnn_rss_steps,
        }
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--_rss-child", json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=120 if cfg.quick else 1800,
        )
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            raise RuntimeError(f"rss child failed: {tail[0]}")
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        if "unsupported" in res:
            raise NotImplementedError(f"in RSS child: {res['unsupported']}")
        return res

    def peak(self, lib, cfg) -> Cell:
        res = self.run(lib, cfg)
        return Cell("ok", res["peak_bytes"] / 2**20, extra=res)

    def growth(self, lib, cfg) -> Cell:
        res = self.run(lib, cfg)
        if res.get("rss_early") is None:
            raise NotImplementedError("current RSS unavailable (no /proc/self/status)")
        return Cell("ok", 100.0 * (res["rss_end"] - res["rss_early"]) / res["rss_early"], extra=res)


def rss_child(spec_json: str) -> None:
    spec = json.loads(spec_json)
    lib = AutogradLib("child", importlib.import_module(spec["module"]))
    lib.set_threads(spec["threads"])
    steps = spec["steps"]
    early = max(1, steps // 10)
    rss = {}
    try:
        if spec.get("model", "mlp") == "cnn":
            # make_lenet reads only the batch size from its config.
            step = make_lenet(lib, argparse.Namespace(lenet_batch=spec["lenet_batch"]))
        else:
            step = build_mlp(lib, spec["dims"], spec["batch"], spec["loss"], train=True)
        after_setup = proc_status("VmRSS")
        for i in range(1, steps + 1):
            step()
            if i in (early, steps):
                rss[i] = proc_status("VmRSS")
    except NA_ERRORS as e:
        print(json.dumps({"unsupported": f"{type(e).__name__}: {e}"}))
        return
    peak = proc_status("VmHWM")
    if peak is None:
        import resource

        # ru_maxrss is in kilobytes on Linux and in bytes on macOS.
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        peak *= 1 if sys.platform == "darwin" else 1024
    print(
        json.dumps(
            {
                "peak_bytes": peak,
                "rss_after_setup": after_setup,
                "early_step": early,
                "rss_early": rss.get(early),
                "rss_end": rss.get(steps),
                "steps": steps,
            }
        )
    )


def proc_status(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def us_per_op(cfg: Config) -> float:
    return 1e6 / cfg.ew_ops


def ms(cfg: Config) -> float:
    return 1e3


def seconds(cfg: Config) -> float:
    return 1.0


def build_rows(cfg: Config, rss: RssProbe, cnn_rss: RssProbe) -> list[Row]:
    ops, n, (s1, s2), (bb, bn) = cfg.ew_ops, cfg.mm_n, cfg.mm_sizes, cfg.bmm
    mlp = "-".join(map(str, cfg.mlp_dims)) + f" b{cfg.batch}"
    li, lh, ls, lb = cfg.lstm
    td, th, tf, tb, tsq = cfg.tel
    loss = "CE" if cfg.loss == "ce" else "MSE"
    optim_k, optim_n = cfg.optim_params
    dl = cfg.dl_shape
    cb, cin, cout, side = cfg.conv
    return [
        Row(
            "elementwise",
            f"{ops} ops on {cfg.ew_n} floats, fwd",
            "us/op",
            timed(make_elementwise(False), us_per_op),
            grad=False,
        ),
        Row(
            "elementwise",
            f"{ops} ops on {cfg.ew_n} floats, fwd+bwd",
            "us/op",
            timed(make_elementwise(True), us_per_op),
            target=Target(">=4x torch", 4.0),
        ),
        Row(
            "scalar_chain",
            f"scalar chain {cfg.chain_ops} ops, fwd",
            "s",
            timed(make_scalar_chain(False), seconds),
            grad=False,
            rtol=1e-2,
        ),
        Row(
            "scalar_chain",
            f"scalar chain {cfg.chain_ops} ops, fwd+bwd",
            "s",
            timed(make_scalar_chain(True), seconds),
            target=Target(">=5x torch", 5.0),
            rtol=1e-2,
        ),
        Row(
            "matmul1024",
            f"matmul {n}, fwd",
            "GFLOP/s",
            timed(make_matmul(None, False), lambda c: 2 * c.mm_n**3, rate=True),
            higher_is_better=True,
            grad=False,
            target=Target(">=0.9x torch", 0.9),
        ),
        Row(
            "matmul1024",
            f"matmul {n}, fwd+bwd (3 matmuls)",
            "GFLOP/s",
            timed(make_matmul(None, True), lambda c: 6 * c.mm_n**3, rate=True),
            higher_is_better=True,
            target=Target(">=0.9x torch", 0.9),
        ),
        Row(
            "matmul_sizes",
            f"matmul {s1}, fwd",
            "GFLOP/s",
            timed(make_matmul(s1, False), lambda c: 2 * s1**3, rate=True),
            higher_is_better=True,
            grad=False,
            target=Target(">=0.8x torch", 0.8),
        ),
        Row(
            "matmul_sizes",
            f"matmul {s2}, fwd",
            "GFLOP/s",
            timed(make_matmul(s2, False), lambda c: 2 * s2**3, rate=True),
            higher_is_better=True,
            grad=False,
            target=Target(">=0.8x torch", 0.8),
        ),
        Row(
            "matmul_sizes",
            f"bmm {bb}x({bn}x{bn} @ {bn}x{bn}), fwd",
            "GFLOP/s",
            timed(make_matmul(None, False, batched=True), lambda c: 2 * bb * bn**3, rate=True),
            higher_is_better=True,
            grad=False,
            target=Target(">=0.8x torch", 0.8),
        ),
        Row(
            "matmul_bf16",
            f"matmul {n} bfloat16, fwd",
            "GFLOP/s",
            timed(make_matmul(None, False, bf16=True), lambda c: 2 * c.mm_n**3, rate=True),
            higher_is_better=True,
            grad=False,
            target=Target(">=1x torch (and >=1.6x the float32 row)", 1.0),
            rtol=2e-2,
        ),
        Row(
            "matmul_bf16",
            f"matmul {n} bfloat16, fwd+bwd (3 matmuls)",
            "GFLOP/s",
            timed(make_matmul(None, True, bf16=True), lambda c: 6 * c.mm_n**3, rate=True),
            higher_is_better=True,
            target=Target(">=1x torch", 1.0),
            rtol=2e-2,
        ),
        Row(
            "tanh",
            f"tanh(x*w+b).sum() on {cfg.tanh_n}, fwd",
            "ms",
            timed(make_tanh(False), ms),
            grad=False,
            rtol=1e-2,
        ),
        Row(
            "tanh",
            f"tanh(x*w+b).sum() on {cfg.tanh_n}, fwd+bwd",
            "ms",
            timed(make_tanh(True), ms),
            target=Target(">=1.0x torch", 1.0),
            rtol=1e-2,
        ),
        Row("mlp", f"MLP {mlp} {loss}, fwd", "ms", timed(make_mlp(False), ms), grad=False),
        Row(
            "mlp",
            f"MLP {mlp} {loss}, SGD step",
            "ms",
            timed(make_mlp(True), ms),
            target=Target(">=1.0x torch", 1.0),
        ),
        Row(
            "optim",
            f"Adam.step() over {optim_n} float32 params in {optim_k} tensors",
            "ms",
            timed(make_optim_step("adam"), ms),
            target=Target(">=1.5x torch", 1.5),
            rtol=1e-5,
        ),
        Row(
            "optim",
            f"SGD(momentum=0.9).step() over {optim_n} float32 params in {optim_k} tensors",
            "ms",
            timed(make_optim_step("sgd"), ms),
            target=Target(">=1.5x torch", 1.5),
            rtol=1e-5,
        ),
        Row(
            "conv2d",
            f"conv2d {cb}x{cin}x{side}x{side} -> {cout}, 3x3 pad 1, fwd",
            "ms",
            timed(make_conv2d(False), ms),
            grad=False,
            rtol=1e-2,
        ),
        Row(
            "conv2d",
            f"conv2d {cb}x{cin}x{side}x{side} -> {cout}, 3x3 pad 1, fwd+bwd",
            "ms",
            timed(make_conv2d(True), ms),
            target=Target(">=1.0x torch", 1.0),
            rtol=1e-2,
        ),
        Row(
            "lenet",
            f"LeNet-5 b{cfg.lenet_batch} 1x28x28 CE, SGD step",
            "ms",
            timed(lambda lib, cfg: make_lenet(lib, cfg), ms),
            target=Target(">=1.2x torch", 1.2),
            rtol=1e-2,
        ),
        Row(
            "mlp_rss",
            f"MLP {cfg.rss_steps} steps, peak RSS (child)",
            "MB",
            rss.peak,
            target=Target("<= torch peak", 1.0),
        ),
        Row(
            "mlp_rss",
            f"MLP RSS growth step {max(1, cfg.rss_steps // 10)}->{cfg.rss_steps}",
            "%",
            rss.growth,
            ratio=False,
            target=Target("<=5% growth", max_value=5.0),
        ),
        Row(
            "cnn_rss",
            f"LeNet-5 b{cfg.lenet_batch} {cfg.cnn_rss_steps} steps, peak RSS (child)",
            "MB",
            cnn_rss.peak,
            target=Target("<= torch peak", 1.0),
        ),
        Row(
            "cnn_rss",
            f"LeNet RSS growth step {max(1, cfg.cnn_rss_steps // 10)}->{cfg.cnn_rss_steps}",
            "%",
            cnn_rss.growth,
            ratio=False,
            target=Target("<=5% growth", max_value=5.0),
        ),
        # grad=True only so NumPy, which has no DataLoader or checkpoints, sits these out.
        Row(
            "dataloader",
            f"DataLoader epoch {dl[0]}x{dl[1]} b{cfg.dl_batch} shuffle",
            "ms",
            timed(make_dataloader, ms),
            target=Target(">=1.0x torch", 1.0),
        ),
        Row(
            "save_load",
            f"save state dict {cfg.sl_tensors}x{cfg.sl_numel} f32",
            "ms",
            timed(make_save, ms),
            target=Target(">=1.0x torch", 1.0),
        ),
        Row(
            "save_load",
            f"load state dict {cfg.sl_tensors}x{cfg.sl_numel} f32",
            "ms",
            timed(make_load, ms),
            target=Target(">=1.0x torch", 1.0),
        ),
        Row(
            "batchnorm",
            f"BatchNorm2d({cfg.bn_shape[1]}) on {'x'.join(map(str, cfg.bn_shape))}, fwd",
            "ms",
            timed(make_norm("bn", False), ms),
            grad=False,
            rtol=1e-3,
        ),
        Row(
            "batchnorm",
            f"BatchNorm2d({cfg.bn_shape[1]}) on {'x'.join(map(str, cfg.bn_shape))}, fwd+bwd",
            "ms",
            timed(make_norm("bn", True), ms),
            target=Target(">=1.0x torch", 1.0),
            rtol=1e-3,
        ),
        Row(
            "layernorm",
            f"LayerNorm({cfg.ln_shape[-1]}) on {'x'.join(map(str, cfg.ln_shape))}, fwd",
            "ms",
            timed(make_norm("ln", False), ms),
            grad=False,
            rtol=1e-3,
        ),
        Row(
            "layernorm",
            f"LayerNorm({cfg.ln_shape[-1]}) on {'x'.join(map(str, cfg.ln_shape))}, fwd+bwd",
            "ms",
            timed(make_norm("ln", True), ms),
            target=Target(">=1.0x torch", 1.0),
            rtol=1e-3,
        ),
        Row(
            "lstm",
            f"LSTM({li}, {lh}) {ls} steps b{lb}, fwd+bwd",
            "ms",
            timed(make_lstm, ms),
            target=Target(">=2x torch", 2.0),
            rtol=1e-2,
        ),
        Row(
            "transformer",
            f"TransformerEncoderLayer({td}, {th}, {tf}) {tb}x{tsq}, fwd+bwd",
            "ms",
            timed(make_transformer, ms),
            target=Target(">=1.2x torch", 1.2),
            rtol=1e-2,
        ),
        # --- ferrograd.func rows (workloads in benches/bench_func.py)
        *bench_func.func_rows(cfg, Row, Target, timed, ms),
        # --- compile rows (ferrograd.compile replays vs PyTorch eager; workloads in bench_compile.py)
        *bench_compile.rows(Row, Target, timed),
    ]


# ------------------------------------------------------------------------------ running


def run_row(row: Row, libs: list, cfg: Config) -> dict[str, Cell]:
    if isinstance(row.measure, Timed):
        return run_timed(row, libs, cfg)
    cells = {}
    for name, lib in libs:
        if lib is None or (row.grad and not lib.autograd):
            cells[name] = Cell("-")
        else:
            cell, bad = guarded(lambda lib=lib: row.measure(lib, cfg))
            cells[name] = bad or cell
    return cells


def compare(fp: dict[str, np.ndarray], ref: dict[str, np.ndarray], rtol: float) -> list[str]:
    bad = []
    for key in sorted(fp.keys() & ref.keys()):
        a, b = fp[key], ref[key]
        if a.shape != b.shape:
            bad.append(f"{key}: shape {a.shape} vs {b.shape}")
            continue
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        err = float(np.max(np.abs(a - b))) if a.size else 0.0
        if not np.isfinite(err) or err > rtol * max(scale, 1e-6):
            bad.append(f"{key}: max abs diff {err:.3g} (reference max {scale:.3g})")
    return bad


def ratio(row: Row, fg: Cell, other: Cell) -> float | None:
    if not row.ratio or fg.value is None or other.value is None or other.status != "ok":
        return None
    if fg.value == 0 or other.value == 0:
        return None
    return fg.value / other.value if row.higher_is_better else other.value / fg.value


def fmt(v: float | None) -> str:
    if v is None:
        return ""
    if abs(v) >= 1000:
        return f"{v:.0f}"
    if abs(v) >= 100:
        return f"{v:.1f}"
    return f"{v:.3g}"


COLS = [
    ("workload", 44),
    ("unit", 8),
    ("ferrograd", 10),
    ("torch", 10),
    ("numpy", 10),
    ("vs torch", 9),
    ("vs numpy", 9),
    ("target", 14),
    ("met", 8),
]


def print_line(values: list[str]) -> None:
    parts = [
        v.ljust(w) if i < 2 or i >= 7 else v.rjust(w)
        for i, (v, (_, w)) in enumerate(zip(values, COLS))
    ]
    print("  ".join(parts).rstrip(), flush=True)


def noisy(c: Cell) -> bool:
    # On a quiet machine the median sample is within a few tens of percent of the best one.
    # A much larger spread means outside load hit this cell, so its ratio is not trustworthy.
    return (
        c.status == "ok" and "best_s" in c.extra and c.extra["median_s"] > NOISY * c.extra["best_s"]
    )


def cell_text(c: Cell, mismatch: bool = False) -> str:
    if c.status == "ok":
        return fmt(c.value) + ("!" if mismatch else "") + ("~" if noisy(c) else "")
    return {"err": "ERR", "n/a": "n/a"}.get(c.status, "-")


def machine_info(fg_mod, fg_label: str, torch_mod, threads: int, numpy_threads: str) -> dict:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            cpu = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu
            )
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "usable_cpus": usable,
        "loadavg": [round(x, 2) for x in load],
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": platform.python_version(),
        "ferrograd": f"{fg_label} {version_of(fg_mod)}",
        "torch": version_of(torch_mod) if torch_mod else None,
        "numpy": np.__version__,
        "threads": threads,
        "numpy_threads": numpy_threads,
    }


def busy(load: list, info: dict, own: float = 0.0) -> str:
    # Another build or benchmark on the box skews every ratio. Say so next to the numbers
    # rather than leave the reader to spot it. `own` is the load this run adds by itself.
    if load and load[0] > 0.5 * (info["usable_cpus"] or 1) + own:
        return " (BUSY: other load, expect noisy results)"
    return ""


def version_of(mod) -> str:
    v = getattr(mod, "__version__", None)
    if v is None:
        try:
            from importlib.metadata import version

            v = version(mod.__name__)
        except Exception:
            v = "?"
    return str(v)


def pick_loss(fg: AutogradLib) -> str:
    """Cross-entropy if ferrograd can do it end to end, else MSE. All libraries use the same
    loss, so the comparison stays fair."""
    try:
        logits = fg.tensor(np.zeros((2, 3), np.float32), requires_grad=True)
        fg.cross_entropy(logits, fg.tensor(np.array([0, 2], np.int64))).backward()
        return "ce"
    except Exception:
        return "mse"


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="workloads: " + ", ".join(WORKLOADS),
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes, 2 repeats; smoke test, targets are not judged",
    )
    p.add_argument("--only", help="comma-separated workload names (or numbers 1-7)")
    p.add_argument("--json", metavar="PATH", help="write all results to PATH")
    p.add_argument("--repeat", type=int, help="timed samples per cell (default 5, quick 2)")
    # Runs the whole suite with another torch-API module standing in for ferrograd, so every
    # code path can be checked before the native module exists (e.g. --as-ferrograd torch).
    p.add_argument("--as-ferrograd", metavar="MODULE", help=argparse.SUPPRESS)
    p.add_argument("--_rss-child", dest="rss_child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.repeat is not None and args.repeat < 1:
        p.error("--repeat must be >= 1")
    selected = list(WORKLOADS)
    if args.only:
        selected = []
        for name in (s.strip() for s in args.only.split(",") if s.strip()):
            if name.isdigit() and 1 <= int(name) <= len(WORKLOADS):
                name = WORKLOADS[int(name) - 1]
            if name not in WORKLOADS:
                p.error(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")
            selected.append(name)
    args.selected = selected
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.rss_child:
        rss_child(args.rss_child)
        return 0

    fg_name = args.as_ferrograd or "ferrograd"
    try:
        fg_mod = importlib.import_module(fg_name)
    except Exception as e:
        print(f"error: cannot import {fg_name}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    try:
        torch_mod = importlib.import_module("torch")
    except Exception:  # torch is optional; a broken install counts as absent
        torch_mod = None

    cfg = make_config(args)
    fg = AutogradLib("ferrograd", fg_mod)
    torch = AutogradLib("torch", torch_mod) if torch_mod else None
    npl = NumpyLib()
    try:
        cfg.threads = fg.get_threads() or os.cpu_count() or 1
    except Exception:
        cfg.threads = os.cpu_count() or 1
    if torch:
        torch.set_threads(cfg.threads)
    numpy_threads = "library default (install threadpoolctl to pin)"
    with contextlib.suppress(ImportError):
        from threadpoolctl import threadpool_limits

        # BLAS only: an OpenMP limit would also reach torch's pool. Kept referenced for the
        # whole run because the limit only lasts while the object is alive.
        _blas_limit = threadpool_limits(cfg.threads, user_api="blas")  # noqa: F841
        numpy_threads = str(cfg.threads)
    if "mlp" in args.selected or "mlp_rss" in args.selected:
        cfg.loss = pick_loss(fg)

    fg_label = fg_name if fg_name == "ferrograd" else f"ferrograd=({fg_name}, --as-ferrograd)"
    info = machine_info(fg_mod, fg_label, torch_mod, cfg.threads, numpy_threads)
    print(
        f"ferrograd compare  {info['date']}"
        + ("  [--quick: tiny sizes, targets shown but not judged]" if cfg.quick else "")
    )
    print(
        f"machine: {info['cpu']} | {info['cpus']} cpus ({info['usable_cpus']} usable) | "
        f"load {' '.join(map(str, info['loadavg']))}{busy(info['loadavg'], info)} | "
        f"{info['platform']} | Python {info['python']}"
    )
    print(
        f"versions: {info['ferrograd']} | torch {info['torch'] or 'not installed'} | "
        f"numpy {info['numpy']}"
    )
    pinned = f"; torch.set_num_threads({cfg.threads})" if torch else ""
    print(f"threads: ferrograd {cfg.threads}{pinned}; numpy BLAS: {numpy_threads}")
    print(
        f"timing: best of {cfg.repeat} samples, taken round-robin across libraries, after "
        f">= {cfg.warmup} warm-up calls and >= {cfg.warm_time:g}s; fast calls are looped "
        f"to >= {cfg.min_sample:g}s per sample. fwd rows build no graph."
    )
    print(
        "ratio = other/ferrograd for time and memory, ferrograd/other for GFLOP/s: "
        "ratio > 1 means ferrograd is faster (or leaner). '!' = answer differs, "
        f"'~' = noisy (median > {NOISY:g}x best)."
    )
    print()
    print_line([name for name, _ in COLS])
    print_line(["-" * w for _, w in COLS])

    modules = {"ferrograd": fg_name, "torch": "torch"}
    probes = RssProbe(modules), RssProbe(modules, model="cnn")
    rows = [r for r in build_rows(cfg, *probes) if r.workload in args.selected]
    libs = [("ferrograd", fg), ("torch", torch), ("numpy", npl)]
    notes: list[str] = []
    records = []
    failed = False
    fg_ran = False
    met_count = judged = 0
    for row in rows:
        cells = run_row(row, libs, cfg)
        fgc = cells["ferrograd"]
        mismatches = []
        for other in ("torch", "numpy"):
            if fgc.status == "ok" and cells[other].status == "ok":
                for msg in compare(fgc.fingerprint, cells[other].fingerprint, row.rtol):
                    mismatches.append(f"vs {other}: {msg}")
        if torch is not None and cells["torch"].status == "ok" and cells["numpy"].status == "ok":
            for msg in compare(cells["torch"].fingerprint, cells["numpy"].fingerprint, row.rtol):
                notes.append(f"[bench] {row.label}: torch vs numpy disagree ({msg})")
        r_torch, r_numpy = ratio(row, fgc, cells["torch"]), ratio(row, fgc, cells["numpy"])
        met = "-"
        if row.target and not cfg.quick:
            met = row.target.met(r_torch, fgc.value)
            if met in ("yes", "NO"):
                judged += 1
                met_count += met == "yes"
        print_line(
            [
                row.label,
                row.unit,
                cell_text(fgc, bool(mismatches)),
                cell_text(cells["torch"]),
                cell_text(cells["numpy"]),
                f"{r_torch:.2f}x" if r_torch else "-",
                f"{r_numpy:.2f}x" if r_numpy else "-",
                row.target.text if row.target else "",
                met,
            ]
        )
        for name, c in cells.items():
            if c.status in ("n/a", "err"):
                notes.append(f"[{c.status}] {name}: {row.label}: {c.error.splitlines()[0]}")
            elif noisy(c):
                spread = c.extra["median_s"] / c.extra["best_s"]
                notes.append(f"[noisy] {name}: {row.label}: median {spread:.1f}x the best sample")
        for msg in mismatches:
            notes.append(f"[mismatch] ferrograd: {row.label}: {msg}")
        failed |= fgc.status == "err" or bool(mismatches)
        fg_ran |= fgc.status == "ok"
        records.append(
            {
                "workload": row.workload,
                "row": row.label,
                "unit": row.unit,
                "higher_is_better": row.higher_is_better,
                "target": row.target.text if row.target else None,
                "met": met,
                "ratio_vs_torch": r_torch,
                "ratio_vs_numpy": r_numpy,
                "mismatches": mismatches,
                "results": {
                    name: {
                        "status": c.status,
                        "value": c.value,
                        "error": c.error or None,
                        **c.extra,
                    }
                    for name, c in cells.items()
                },
            }
        )

    print()
    info["loadavg_end"] = (
        [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    )
    end_load = info["loadavg_end"] or []
    print(
        f"load average at end: {' '.join(map(str, end_load))}{busy(end_load, info, info['threads'])}"
    )
    if not cfg.quick:
        print(
            f"targets met: {met_count}/{judged} judged"
            + ("" if torch else " (torch not installed: ratio targets not judged)")
        )
    for note in notes:
        print(note)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "machine": info,
                    "quick": cfg.quick,
                    "loss": cfg.loss,
                    "repeat": cfg.repeat,
                    "rows": records,
                },
                f,
                indent=2,
            )
        print(f"wrote {args.json}")
    if rows and not fg_ran:
        # n/a everywhere is what an empty or half-installed package looks like (e.g. a namespace
        # package without the native module), so the smoke test must not pass on it.
        print(f"error: {fg_name} could not run a single workload", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
