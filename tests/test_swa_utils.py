"""ferrograd.optim.swa_utils: weight averages against NumPy and SWALR's
annealing against its closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ferrograd as torch
from ferrograd import nn, optim
from ferrograd.optim import swa_utils


def _set(model, rng):
    vals = []
    with torch.no_grad():
        for p in model.parameters():
            v = rng.standard_normal(tuple(p.shape)).astype(np.float32)
            p.copy_(torch.tensor(v))
            vals.append(v)
    return vals


def test_swa_running_mean():
    rng = np.random.default_rng(0)
    model = nn.Linear(3, 2)
    avg = swa_utils.AveragedModel(model)
    seen = []
    for _ in range(5):
        seen.append(_set(model, rng))
        avg.update_parameters(model)
    assert avg.n_averaged.item() == 5
    for i, p in enumerate(avg.module.parameters()):
        want = np.mean([s[i] for s in seen], axis=0)
        np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    # The average is a copy: the model's later changes do not reach it.
    _set(model, rng)
    x = torch.randn(4, 3)
    assert not np.allclose(avg(x).detach().numpy(), model(x).detach().numpy())


@pytest.mark.parametrize("multi", [True, False])
def test_ema(multi):
    rng = np.random.default_rng(1)
    model = nn.Linear(2, 2)
    kw = ({"multi_avg_fn": swa_utils.get_ema_multi_avg_fn(0.9)} if multi
          else {"avg_fn": swa_utils.get_ema_avg_fn(0.9)})
    ema = swa_utils.AveragedModel(model, **kw)
    want = None
    for _ in range(6):
        vals = _set(model, rng)
        ema.update_parameters(model)
        want = vals if want is None else [0.9 * w + 0.1 * v for w, v in zip(want, vals)]
    for p, w in zip(ema.module.parameters(), want):
        np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Invalid decay value"):
        swa_utils.get_ema_avg_fn(1.5)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swalr_anneals_to_swa_lr(strategy):
    opt = optim.SGD([nn.Parameter(torch.ones(1))], lr=1.0)
    sched = swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=4, anneal_strategy=strategy)
    f = (lambda t: (1 - math.cos(math.pi * t)) / 2) if strategy == "cos" else (lambda t: t)
    for k in range(10):
        alpha = f(min(1.0, k / 4))
        assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * alpha + 1.0 * (1 - alpha), rel=1e-12)
        opt.step()
        sched.step()
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=-1)
