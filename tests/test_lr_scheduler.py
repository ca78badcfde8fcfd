"""ferrograd.optim.lr_scheduler: each scheduler's learning-rate sequence
against its hand-computed closed form over many steps, the chainable form
after manual changes, momentum cycling, state dicts and errors."""

from __future__ import annotations

import math
import warnings
from bisect import bisect_right

import pytest

import ferrograd as torch
from ferrograd import nn, optim
from ferrograd.optim import lr_scheduler as S

BASE = 0.1


def _opt(lr=BASE, cls=optim.SGD, **kw):
    return cls([nn.Parameter(torch.ones(2))], lr=lr, **kw)


def _run(opt, sched, n):
    """The lr in effect for epochs 0..n-1 (optimizer stepped before the scheduler)."""
    out = [opt.param_groups[0]["lr"]]
    assert sched.get_last_lr() == [out[0]]
    for _ in range(n - 1):
        opt.step()
        sched.step()
        out.append(opt.param_groups[0]["lr"])
        assert sched.get_last_lr() == [out[-1]]
    return out


def _close(got, want, rel=1e-12, abs_=1e-15):
    assert len(got) == len(want)
    for e, (g, w) in enumerate(zip(got, want)):
        assert g == pytest.approx(w, rel=rel, abs=abs_), f"epoch {e}: {g} != {w}"


def test_step_lr():
    opt = _opt()
    _close(_run(opt, S.StepLR(opt, step_size=3, gamma=0.5), 20),
           [BASE * 0.5 ** (e // 3) for e in range(20)])


def test_multi_step_lr_with_repeated_milestone():
    opt = _opt()
    ms = [2, 5, 5, 9]
    _close(_run(opt, S.MultiStepLR(opt, milestones=ms, gamma=0.1), 14),
           [BASE * 0.1 ** bisect_right(ms, e) for e in range(14)])


def test_exponential_lr():
    opt = _opt()
    _close(_run(opt, S.ExponentialLR(opt, gamma=0.9), 30), [BASE * 0.9**e for e in range(30)],
           rel=1e-11)


def _cos(e, t_max, eta_min, base=BASE):
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * e / t_max)) / 2


def test_cosine_annealing_follows_the_cosine_past_t_max():
    opt = _opt()
    lrs = _run(opt, S.CosineAnnealingLR(opt, T_max=10, eta_min=0.001), 45)
    _close(lrs, [_cos(e, 10, 0.001) for e in range(45)], rel=1e-9, abs_=1e-12)


def test_cosine_annealing_chainable_form_continues_from_a_manual_change():
    opt = _opt()
    sched = S.CosineAnnealingLR(opt, T_max=10, eta_min=0.001)
    for _ in range(3):
        opt.step()
        sched.step()
    opt.param_groups[0]["lr"] *= 0.5
    changed = opt.param_groups[0]["lr"]
    opt.step()
    sched.step()
    want = (1 + math.cos(math.pi * 4 / 10)) / (1 + math.cos(math.pi * 3 / 10)) * (changed - 0.001) + 0.001
    assert opt.param_groups[0]["lr"] == pytest.approx(want, rel=1e-12)
    # An explicit epoch takes the closed form (with PyTorch's deprecation warning).
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched.step(7)
    assert opt.param_groups[0]["lr"] == pytest.approx(_cos(7, 10, 0.001), rel=1e-12)


def test_cosine_annealing_warm_restarts():
    opt = _opt()
    lrs = _run(opt, S.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.01), 40)
    want = []
    t_i, t_cur = 3, 0
    for _ in range(40):
        want.append(_cos(t_cur, t_i, 0.01))
        t_cur += 1
        if t_cur >= t_i:
            t_cur, t_i = 0, t_i * 2
    _close(lrs, want, rel=1e-12)
    # Fractional epochs within a cycle.
    sched = S.CosineAnnealingWarmRestarts(_opt(), T_0=4, T_mult=1, eta_min=0.0)
    sched.step(5.5)
    assert sched.get_last_lr()[0] == pytest.approx(_cos(1.5, 4, 0.0), rel=1e-12)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        S.CosineAnnealingWarmRestarts(_opt(), T_0=0)


def test_lambda_and_multiplicative_lr():
    opt = _opt()
    f = lambda e: 0.95**e + 0.01 * e  # noqa: E731
    _close(_run(opt, S.LambdaLR(opt, f), 20), [BASE * f(e) for e in range(20)])
    opt = _opt()
    _close(_run(opt, S.MultiplicativeLR(opt, lambda e: 0.8), 20), [BASE * 0.8**e for e in range(20)],
           rel=1e-11)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        S.LambdaLR(_opt(), [f, f])


def test_linear_constant_and_polynomial_lr():
    opt = _opt()
    _close(_run(opt, S.LinearLR(opt, start_factor=0.25, end_factor=1.0, total_iters=4), 10),
           [BASE * (0.25 + 0.75 * min(e, 4) / 4) for e in range(10)])
    opt = _opt()
    _close(_run(opt, S.ConstantLR(opt, factor=0.5, total_iters=3), 8),
           [BASE * (0.5 if e < 3 else 1.0) for e in range(8)])
    opt = _opt()
    _close(_run(opt, S.PolynomialLR(opt, total_iters=6, power=2.0), 10),
           [BASE * (1 - min(e, 6) / 6) ** 2 for e in range(10)], abs_=1e-15)
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be between 0 and 1."):
        S.ConstantLR(_opt(), factor=2.0)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        S.LinearLR(_opt(), start_factor=0)


def _one_cycle(step, total, max_lr, pct, lo_m, hi_m, anneal, three_phase=False):
    init = max_lr / 25.0
    min_lr = init / 1e4
    if anneal == "cos":
        f = lambda a, b, t: b + (a - b) / 2.0 * (math.cos(math.pi * t) + 1)  # noqa: E731
    else:
        f = lambda a, b, t: (b - a) * t + a  # noqa: E731
    e1 = pct * total - 1
    if three_phase:
        e2 = 2 * pct * total - 2
        phases = [(0, e1, init, max_lr, hi_m, lo_m), (e1, e2, max_lr, init, lo_m, hi_m),
                  (e2, total - 1, init, min_lr, hi_m, hi_m)]
    else:
        phases = [(0, e1, init, max_lr, hi_m, lo_m), (e1, total - 1, max_lr, min_lr, lo_m, hi_m)]
    for i, (s, e, a, b, ma, mb) in enumerate(phases):
        if step <= e or i == len(phases) - 1:
            t = (step - s) / (e - s)
            return f(a, b, t), f(ma, mb, t)
    raise AssertionError


@pytest.mark.parametrize("anneal,three_phase", [("cos", False), ("linear", False), ("cos", True)])
def test_one_cycle_lr_and_momentum(anneal, three_phase):
    opt = _opt(momentum=0.9)
    total = 20
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=total, anneal_strategy=anneal,
                         three_phase=three_phase)
    for step in range(total):
        lr, m = _one_cycle(step, total, 1.0, 0.3, 0.85, 0.95, anneal, three_phase)
        assert opt.param_groups[0]["lr"] == pytest.approx(lr, rel=1e-12)
        assert opt.param_groups[0]["momentum"] == pytest.approx(m, rel=1e-12)
        opt.step()
        if step < total - 1:
            sched.step()
    with pytest.raises(ValueError, match="Tried to step 21 times"):
        sched.step()
        sched.step()


def test_one_cycle_cycles_adam_beta1():
    opt = _opt(cls=optim.Adam)
    sched = S.OneCycleLR(opt, max_lr=0.01, epochs=2, steps_per_epoch=5)
    for step in range(10):
        lr, m = _one_cycle(step, 10, 0.01, 0.3, 0.85, 0.95, "cos")
        assert opt.param_groups[0]["lr"] == pytest.approx(lr, rel=1e-12)
        assert opt.param_groups[0]["betas"][0] == pytest.approx(m, rel=1e-12)
        assert opt.param_groups[0]["betas"][1] == 0.999
        opt.step()
        if step < 9:
            sched.step()
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        S.OneCycleLR(_opt(), max_lr=1.0)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        S.OneCycleLR(_opt(cls=optim.Adagrad), max_lr=1.0, total_steps=5)


def test_cyclic_lr_triangular():
    opt = _opt(momentum=0.9)
    sched = S.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=4)
    for e in range(20):
        cycle = math.floor(1 + e / 8)
        x = abs(e / 4 - 2 * cycle + 1)
        h = max(0.0, 1 - x)
        assert opt.param_groups[0]["lr"] == pytest.approx(0.1 + 0.9 * h, rel=1e-12)
        assert opt.param_groups[0]["momentum"] == pytest.approx(0.9 - 0.1 * h, rel=1e-12)
        opt.step()
        sched.step()


def test_sequential_lr():
    opt = _opt()
    sched = S.SequentialLR(
        opt,
        [S.ConstantLR(opt, factor=0.1, total_iters=2), S.ExponentialLR(opt, gamma=0.9)],
        milestones=[2],
    )
    _close(_run(opt, sched, 12), [BASE * (0.1 if e < 2 else 0.9 ** (e - 2)) for e in range(12)],
           rel=1e-11)
    with pytest.raises(ValueError, match="number of milestone points"):
        S.SequentialLR(opt, [S.ExponentialLR(opt, 0.9)], milestones=[2])


def test_chained_scheduler():
    opt = _opt()
    sched = S.ChainedScheduler(
        [S.ConstantLR(opt, factor=0.1, total_iters=2), S.ExponentialLR(opt, gamma=0.9)]
    )
    _close(_run(opt, sched, 12), [BASE * 0.9**e * (0.1 if e < 2 else 1.0) for e in range(12)],
           rel=1e-11)


def test_reduce_lr_on_plateau():
    opt = _opt(lr=1.0)
    sched = S.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2, threshold=0.1,
                                cooldown=1, min_lr=0.2)
    metrics = [10, 9.5, 9.2, 9.1, 9.0] + [5] * 12
    lrs = []
    for m in metrics:
        opt.step()
        sched.step(m)
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs == [1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.2, 0.2, 0.2, 0.2, 0.2]
    assert sched.get_last_lr() == [0.2]
    # 'max' with an absolute threshold: improvements smaller than 1 do not count.
    opt = _opt(lr=1.0)
    sched = S.ReduceLROnPlateau(opt, mode="max", factor=0.1, patience=0, threshold=1.0,
                                threshold_mode="abs")
    for m in [1.0, 2.5, 3.0]:
        sched.step(m)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1)
    with pytest.raises(ValueError, match=r"Factor should be < 1.0."):
        S.ReduceLROnPlateau(_opt(), factor=1.0)
    with pytest.raises(ValueError, match="mode foo is unknown!"):
        S.ReduceLROnPlateau(_opt(), mode="foo")


def test_state_dict_roundtrip_continues_the_sequence():
    opt = _opt()
    sched = S.CosineAnnealingLR(opt, T_max=7, eta_min=0.01)
    for _ in range(4):
        opt.step()
        sched.step()
    sd = sched.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 4
    opt_sd = opt.state_dict()
    rest = [opt.param_groups[0]["lr"]]
    for _ in range(6):
        opt.step()
        sched.step()
        rest.append(opt.param_groups[0]["lr"])
    opt2 = _opt(lr=5.0)
    opt2.load_state_dict(opt_sd)
    sched2 = S.CosineAnnealingLR(opt2, T_max=7, eta_min=0.01, last_epoch=-1)
    sched2.load_state_dict(sd)
    got = [opt2.param_groups[0]["lr"]]
    for _ in range(6):
        opt2.step()
        sched2.step()
        got.append(opt2.param_groups[0]["lr"])
    assert got == rest


def test_initial_lr_and_resume_errors():
    opt = _opt()
    S.StepLR(opt, step_size=2)
    assert opt.param_groups[0]["initial_lr"] == BASE
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(_opt(), step_size=2, last_epoch=3)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR(object(), step_size=2)


def test_warns_when_scheduler_steps_before_optimizer():
    opt = _opt()
    sched = S.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt = _opt()
    sched = S.StepLR(opt, step_size=2)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()


class _Warmup:
    """A callable lr_lambda with state: its __dict__ is saved with the scheduler."""

    def __init__(self, steps):
        self.steps = steps

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.steps)


@pytest.mark.parametrize("cls", [S.LambdaLR, S.MultiplicativeLR])
def test_lambda_object_state_round_trips(cls):
    p = nn.Parameter(torch.ones(1))
    opt = optim.SGD([p], lr=1.0)
    sched = cls(opt, [_Warmup(4)])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"steps": 4}] and "optimizer" not in sd
    other = cls(optim.SGD([p], lr=1.0), _Warmup(9))
    other.load_state_dict(sd)
    assert other.lr_lambdas[0].steps == 4 and sd["lr_lambdas"] == [{"steps": 4}]
    plain = cls(optim.SGD([p], lr=1.0), lambda e: 0.5)
    assert plain.state_dict()["lr_lambdas"] == [None]


def test_multiplicative_lr_refuses_a_non_callable():
    p = nn.Parameter(torch.ones(1))
    with pytest.raises(TypeError, match="lr_lambda should be a function, but got int"):
        S.MultiplicativeLR(optim.SGD([p], lr=1.0), 3)


def _sequential_lr(opt):
    return S.SequentialLR(
        opt, [S.LinearLR(opt, start_factor=0.2, total_iters=3), S.CosineAnnealingLR(opt, T_max=8)],
        milestones=[3],
    )


RESUMABLE = {
    "StepLR": lambda o: S.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda o: S.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda o: S.CosineAnnealingLR(o, T_max=6, eta_min=0.01),
    "CosineAnnealingWarmRestarts": lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2,
                                                                           eta_min=0.01),
    "LambdaLR": lambda o: S.LambdaLR(o, lambda e: 1 / (e + 1)),
    "LinearLR": lambda o: S.LinearLR(o, start_factor=0.2, total_iters=9),
    "OneCycleLR": lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=20),
    "SequentialLR": _sequential_lr,
    "ReduceLROnPlateau": lambda o: S.ReduceLROnPlateau(o, patience=1, cooldown=1, factor=0.5),
}
METRICS = [5, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2]


@pytest.mark.parametrize("name", list(RESUMABLE))
def test_saved_and_loaded_scheduler_continues_the_sequence(name, tmp_path):
    # Through ferrograd.save / load with the default weights_only=True, as a
    # checkpoint is: the resumed run sees the same lr (and momentum) sequence.
    def fresh():
        opt = optim.SGD([nn.Parameter(torch.ones(2))], lr=0.1, momentum=0.9)
        return opt, RESUMABLE[name](opt)

    def run(opt, sched, start, stop):
        out = []
        for i in range(start, stop):
            opt.step()
            if name == "ReduceLROnPlateau":
                sched.step(METRICS[i])
            else:
                sched.step()
            out.append((opt.param_groups[0]["lr"], opt.param_groups[0]["momentum"],
                        sched.get_last_lr()))
        return out

    k, n = 6, len(METRICS)
    whole = run(*fresh(), 0, n)
    opt, sched = fresh()
    run(opt, sched, 0, k)
    torch.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, tmp_path / "ck")
    ckpt = torch.load(tmp_path / "ck")
    opt2, sched2 = fresh()
    opt2.load_state_dict(ckpt["optimizer"])
    sched2.load_state_dict(ckpt["scheduler"])
    assert sched2.get_last_lr() == sched.get_last_lr()
    assert run(opt2, sched2, k, n) == whole[k:]
    assert len({lr for lr, _, _ in whole}) > 2  # the sequence does change
