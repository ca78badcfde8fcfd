"""GradScaler: the disabled no-op, scaling, unscale_ once per optimizer, steps
skipped on inf/NaN, the growth/backoff schedule, PyTorch's state dict, and
the AMP recipe (autocast + GradScaler) training a small model."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd.amp import GradScaler


def _model(seed=0):
    fg.manual_seed(seed)
    return fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.ReLU(), fg.nn.Linear(8, 2))


def _params(m):
    return [p.detach().clone().numpy() for p in m.parameters()]


def test_disabled_is_a_true_no_op():
    m = _model()
    opt = fg.optim.SGD(m.parameters(), lr=0.1)
    s = GradScaler("cpu", enabled=False)
    loss = m(fg.ones(3, 4)).sum()
    assert s.scale(loss) is loss
    loss.backward()
    g = [p.grad.clone() for p in m.parameters()]
    s.unscale_(opt)
    assert all(np.array_equal(a.numpy(), p.grad.numpy()) for a, p in zip(g, m.parameters()))
    before = _params(m)
    s.step(opt)
    s.update()
    assert not all(np.array_equal(a, b) for a, b in zip(before, _params(m)))
    assert s.get_scale() == 1.0 and not s.is_enabled()
    assert s.state_dict() == {}
    s.load_state_dict({})  # a no-op too


def test_default_device_is_cuda_and_disables_itself():
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
        s = GradScaler()
    assert not s.is_enabled()
    with pytest.warns(FutureWarning, match="deprecated"):
        s = fg.cuda.amp.GradScaler(enabled=False)
    assert not s.is_enabled()
    with pytest.warns(FutureWarning, match="deprecated"):
        assert fg.cpu.amp.GradScaler().is_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fg.amp.GradScaler("cuda", enabled=False)


def test_scale_unscale_and_step():
    m = _model()
    opt = fg.optim.SGD(m.parameters(), lr=0.1)
    ref = _model()
    ref_opt = fg.optim.SGD(ref.parameters(), lr=0.1)
    x = fg.ones(3, 4)
    s = GradScaler("cpu", init_scale=1024.0)
    loss = m(x).sum()
    scaled = s.scale(loss)
    assert scaled.item() == pytest.approx(1024.0 * loss.item())
    assert s.scale([loss, (loss,)])[1][0].item() == pytest.approx(1024.0 * loss.item())
    scaled.backward()
    ref(x).sum().backward()
    s.unscale_(opt)
    for p, q in zip(m.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        s.unscale_(opt)
    s.step(opt)
    ref_opt.step()
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        s.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step\\(\\)"):
        s.unscale_(opt)
    s.update()
    for a, b in zip(_params(m), _params(ref)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_use_before_scale_is_refused():
    s = GradScaler("cpu")
    opt = fg.optim.SGD(_model().parameters(), lr=0.1)
    with pytest.raises(AssertionError, match="Attempted unscale_ but _scale is None"):
        s.unscale_(opt)
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        GradScaler("cpu", backoff_factor=1.0)


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_step_is_skipped_on_inf_and_nan(bad):
    m = _model()
    opt = fg.optim.SGD(m.parameters(), lr=0.1)
    s = GradScaler("cpu", init_scale=8.0)
    s.scale(m(fg.ones(2, 4)).sum()).backward()
    with fg.no_grad():
        next(m.parameters()).grad[0, 0] = bad
    before = _params(m)
    assert s.step(opt) is None
    s.update()
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(before, _params(m)))
    assert s.get_scale() == 4.0  # backed off
    assert s.state_dict()["_growth_tracker"] == 0


def test_growth_after_interval_and_backoff():
    m = _model()
    opt = fg.optim.SGD(m.parameters(), lr=1e-3)
    s = GradScaler("cpu", init_scale=4.0, growth_factor=3.0, backoff_factor=0.25,
                   growth_interval=3)
    scales = []
    for i in range(7):
        opt.zero_grad()
        s.scale(m(fg.ones(2, 4)).sum()).backward()
        if i == 4:
            with fg.no_grad():
                next(m.parameters()).grad.fill_(math.inf)
        s.step(opt)
        s.update()
        scales.append(s.get_scale())
    # 3 clean steps grow the scale; the overflow at step 4 backs it off and
    # resets the count.
    assert scales == [4.0, 4.0, 12.0, 12.0, 3.0, 3.0, 3.0]
    s.update(2.0)  # an explicit new scale
    assert s.get_scale() == 2.0
    s.update(fg.tensor([5.0]))
    assert s.get_scale() == 5.0


def test_one_unscale_per_optimizer_and_any_inf_backs_off():
    m1, m2 = _model(0), _model(1)
    o1 = fg.optim.SGD(m1.parameters(), lr=0.1)
    o2 = fg.optim.SGD(m2.parameters(), lr=0.1)
    s = GradScaler("cpu", init_scale=16.0)
    s.scale(m1(fg.ones(2, 4)).sum() + m2(fg.ones(2, 4)).sum()).backward()
    with fg.no_grad():
        next(m2.parameters()).grad[0, 0] = math.nan
    b1, b2 = _params(m1), _params(m2)
    s.unscale_(o1)
    s.step(o1)  # clean: steps
    s.step(o2)  # NaN: skipped
    s.update()
    assert not all(np.array_equal(a, b) for a, b in zip(b1, _params(m1)))
    assert all(np.array_equal(a, b) for a, b in zip(b2, _params(m2)))
    assert s.get_scale() == 8.0


def test_state_dict_has_pytorchs_keys_and_round_trips():
    s = GradScaler("cpu", init_scale=256.0, growth_factor=4.0, backoff_factor=0.125,
                   growth_interval=7)
    sd = s.state_dict()
    assert sd == {"scale": 256.0, "growth_factor": 4.0, "backoff_factor": 0.125,
                  "growth_interval": 7, "_growth_tracker": 0}
    m = _model()
    opt = fg.optim.SGD(m.parameters(), lr=0.1)
    s.scale(m(fg.ones(1, 4)).sum()).backward()
    s.step(opt)
    s.update()
    assert s.state_dict()["_growth_tracker"] == 1
    t = GradScaler("cpu")
    t.load_state_dict(s.state_dict())
    assert t.state_dict() == s.state_dict()
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        t.load_state_dict({})
    u = pickle.loads(pickle.dumps(s))
    assert u.state_dict() == s.state_dict()
    # Through ferrograd.save / load, as a checkpoint carries it.
    import io

    buf = io.BytesIO()
    fg.save({"scaler": s.state_dict()}, buf)
    buf.seek(0)
    assert fg.load(buf)["scaler"] == s.state_dict()


def test_closure_is_refused():
    s = GradScaler("cpu")
    m = _model()
    opt = fg.optim.SGD(m.parameters(), lr=0.1)
    s.scale(m(fg.ones(1, 4)).sum()).backward()
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        s.step(opt, closure=lambda: None)


@pytest.mark.parametrize("dtype", [fg.bfloat16, fg.float16], ids=str)
def test_amp_recipe_trains(dtype):
    """PyTorch's AMP recipe: forward under autocast, scaled backward, step, update."""
    fg.manual_seed(0)
    rng = np.random.default_rng(0)
    x = fg.tensor(rng.normal(size=(64, 4)).astype(np.float32))
    y = (x[:, :1] * 2 - x[:, 1:2]).squeeze(1).gt(0).long()
    m = _model()
    opt = fg.optim.SGD(m.parameters(), lr=0.2)
    scaler = fg.amp.GradScaler("cpu")
    losses = []
    for _ in range(40):
        with fg.autocast(device_type="cpu", dtype=dtype):
            out = m(x)
            loss = F.cross_entropy(out, y)
        assert out.dtype == dtype and loss.dtype == fg.float32
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        fg.nn.utils.clip_grad_norm_(m.parameters(), 5.0)
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert all(p.dtype == fg.float32 and p.grad.dtype == fg.float32 for p in m.parameters())
    assert losses[-1] < 0.5 * losses[0]
