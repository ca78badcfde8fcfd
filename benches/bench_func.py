"""``ferrograd.func`` workloads for ``benches/compare.py``, run side by side
with ``torch.func`` in the same process: per-sample gradients of a small MLP
(``vmap(grad)``), ``jacfwd`` of a 64 -> 64 function and ``hessian`` of a
32-dimensional scalar function. Each ``make_*(lib, cfg)`` builds the inputs
(not timed) and returns the timed call, which returns ``{name: tensor}``."""

from __future__ import annotations

import numpy as np

WORKLOADS = ["func_psg", "func_jacfwd", "func_hessian"]

PSG_DIMS = (64, 128, 10)
PSG_BATCH = 256
JAC_N = 64
HESS_N = 32


def _rng():
    return np.random.default_rng(0)


def make_per_sample_grads(lib, cfg):
    """Per-sample gradients of cross entropy through an MLP 64-128-10, batch 256:
    ``vmap(grad(loss), in_dims=(None, 0, 0))`` over ``functional_call``."""
    mod = lib.mod
    func, nn, F = mod.func, mod.nn, mod.nn.functional
    d_in, d_h, d_out = PSG_DIMS
    batch = 4 if cfg.quick else PSG_BATCH
    r = _rng()
    model = nn.Sequential(nn.Linear(d_in, d_h), nn.ReLU(), nn.Linear(d_h, d_out))
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor((r.standard_normal(tuple(p.shape)) * 0.1).astype(np.float32)))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = lib.tensor(r.standard_normal((batch, d_in)).astype(np.float32))
    y = lib.tensor(r.integers(0, d_out, batch))

    def loss(p, xb, yb):
        return F.cross_entropy(func.functional_call(model, p, (xb,)), yb)

    per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))

    def step():
        g = per_sample(params, x, y)
        return {k: g[k] for k in ("0.weight", "2.bias")}

    return step


def make_jacfwd(lib, cfg):
    """``jacfwd`` of ``x -> tanh(W @ x + b) * x + sin(x)`` from 64 to 64 values."""
    mod = lib.mod
    n = 8 if cfg.quick else JAC_N
    r = _rng()
    w = lib.tensor((r.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32))
    b = lib.tensor(r.standard_normal(n).astype(np.float32))
    x = lib.tensor(r.standard_normal(n).astype(np.float32))

    def f(t):
        return mod.tanh(w @ t + b) * t + mod.sin(t)

    jac = mod.func.jacfwd(f)
    return lambda: {"jac": jac(x)}


def make_hessian(lib, cfg):
    """``hessian`` (forward over reverse) of ``x -> sum(tanh(A @ x)^2) + sum(sin(x) * x)``,
    32 inputs."""
    mod = lib.mod
    n = 6 if cfg.quick else HESS_N
    r = _rng()
    a = lib.tensor((r.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32))
    x = lib.tensor(r.standard_normal(n).astype(np.float32))

    def f(t):
        return (mod.tanh(a @ t) ** 2).sum() + (mod.sin(t) * t).sum()

    hess = mod.func.hessian(f)
    return lambda: {"hessian": hess(x)}


def func_rows(cfg, Row, Target, timed, ms):
    """The rows of these workloads, built with ``compare.py``'s classes."""
    return [
        Row(
            "func_psg",
            f"vmap(grad) per-sample grads MLP {'-'.join(map(str, PSG_DIMS))} b{PSG_BATCH}",
            "ms",
            timed(make_per_sample_grads, ms),
            target=Target(">=1.5x torch.func", 1.5),
            rtol=1e-3,
        ),
        Row(
            "func_jacfwd",
            f"jacfwd of {JAC_N}->{JAC_N} elementwise+matmul function",
            "ms",
            timed(make_jacfwd, ms),
            target=Target(">=1.5x torch.func", 1.5),
            rtol=1e-3,
        ),
        Row(
            "func_hessian",
            f"hessian of a {HESS_N}-dim scalar function (jacfwd(jacrev))",
            "ms",
            timed(make_hessian, ms),
            target=Target(">=1.5x torch.func", 1.5),
            rtol=1e-3,
        ),
    ]
