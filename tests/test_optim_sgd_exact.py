"""SGD's fused update pinned bit for bit: a NumPy reference of PyTorch's
formula, one rounding per operation in the parameter's dtype and in PyTorch's
order, must equal ferrograd's parameters and momentum buffers exactly after
every step, for each of dampening, nesterov, weight_decay and maximize, on
sizes that take the kernel's vector, scalar-tail and multi-chunk parallel
paths (one parameter spans several 65,536-element tasks)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ferrograd as torch
from ferrograd import nn, optim

# A vector-width multiple, an odd size (scalar tail), and one above the
# parallel grain that splits into several tasks with a partial last one.
SIZES = [64, 37, 3 * 65_536 + 123]
STEPS = 4


def ref_sgd_step(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, maximize):
    """PyTorch's SGD (torch/optim/sgd.py), one NumPy operation per PyTorch
    one, so each rounding happens where PyTorch's does; returns (p, buf)."""
    c = p.dtype.type
    d = -g if maximize else g
    if weight_decay != 0:
        d = d + c(weight_decay) * p
    if momentum != 0:
        if buf is None:
            buf = d.copy()
        else:
            buf = buf * c(momentum) + c(1 - dampening) * d
        d = d + c(momentum) * buf if nesterov else buf
    return p + c(-lr) * d, buf


FLAGS = list(
    itertools.product(
        [0.0, 0.9],  # momentum
        [0.0, 0.25],  # dampening
        [0.0, 0.01],  # weight_decay
        [False, True],  # nesterov
        [False, True],  # maximize
    )
)
# Nesterov needs momentum and no dampening (PyTorch refuses the rest).
FLAGS = [f for f in FLAGS if not (f[3] and (f[0] == 0 or f[1] != 0))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("momentum,dampening,weight_decay,nesterov,maximize", FLAGS)
def test_sgd_is_bit_exact_against_numpy(dtype, momentum, dampening, weight_decay, nesterov,
                                        maximize):
    rng = np.random.default_rng(7)
    init = [rng.standard_normal(n).astype(dtype) for n in SIZES]
    params = [nn.Parameter(torch.tensor(a)) for a in init]
    lr = 0.03
    opt = optim.SGD(params, lr=lr, momentum=momentum, dampening=dampening,
                    weight_decay=weight_decay, nesterov=nesterov, maximize=maximize)
    want = [a.copy() for a in init]
    bufs = [None] * len(init)
    for step in range(STEPS):
        grads = [rng.standard_normal(n).astype(dtype) for n in SIZES]
        for p, g in zip(params, grads):
            p.grad = torch.tensor(g)
        opt.step()
        for i, g in enumerate(grads):
            want[i], bufs[i] = ref_sgd_step(want[i], g, bufs[i], lr, momentum, dampening,
                                            weight_decay, nesterov, maximize)
            got = params[i].detach().numpy()
            assert got.dtype == dtype
            np.testing.assert_array_equal(got, want[i], err_msg=f"param {i}, step {step}")
            if momentum:
                state = opt.state[params[i]]["momentum_buffer"].numpy()
                np.testing.assert_array_equal(state, bufs[i], err_msg=f"buffer {i}, step {step}")


def test_sgd_bit_exact_on_one_and_two_threads():
    """The split across threads changes which thread writes an element, never
    its value."""
    rng = np.random.default_rng(3)
    init = rng.standard_normal(5 * 65_536 + 17).astype(np.float32)
    grads = [rng.standard_normal(init.size).astype(np.float32) for _ in range(3)]
    results = []
    before = torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            p = nn.Parameter(torch.tensor(init))
            opt = optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)
            for g in grads:
                p.grad = torch.tensor(g)
                opt.step()
            results.append(p.detach().numpy().copy())
    finally:
        torch.set_num_threads(before)
    np.testing.assert_array_equal(results[0], results[1])
