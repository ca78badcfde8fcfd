"""ferrograd.optim: every optimizer against a NumPy reference of its published
update (written op by op in PyTorch's foreach order, in the parameter's dtype)
over many steps; groups, state dicts, checkpoint/resume, hooks and errors;
LBFGS on the Rosenbrock function."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import ferrograd as torch
from ferrograd import nn, optim

SHAPES = [(3, 4), (5,), (2, 1, 3)]
STEPS = 25


# ----- NumPy references ----------------------------------------------------------


def _lerp(a, b, w):
    # torch.lerp with a scalar weight, in the arrays' dtype.
    one = a.dtype.type(1)
    return a + w * (b - a) if abs(w) < 0.5 else b - (b - a) * (one - w)


def _grad_in(p, g, h, c):
    g = -g if h.get("maximize") else g
    if h.get("weight_decay", 0) and not h.get("decoupled_weight_decay"):
        g = g + c(h["weight_decay"]) * p
    return g


def ref_sgd(p, g, s, h, c):
    g = _grad_in(p, g, h, c)
    m = h.get("momentum", 0)
    if m:
        if "b" not in s:
            s["b"] = g.copy()
        else:
            s["b"] = s["b"] * c(m) + c(1 - h.get("dampening", 0)) * g
        g = g + c(m) * s["b"] if h.get("nesterov") else s["b"]
    return p + c(-h["lr"]) * g


def _moments(p, g, s, h, c):
    lr, wd = h.get("lr", 1e-3), h.get("weight_decay", 0)
    b1, b2 = h.get("betas", (0.9, 0.999))
    g = _grad_in(p, g, h, c)
    if wd and h.get("decoupled_weight_decay"):
        p = p * c(1 - lr * wd)
    if "m" not in s:
        s.update(m=np.zeros_like(p), v=np.zeros_like(p), t=0)
    s["t"] += 1
    s["m"] = _lerp(s["m"], g, c(1 - b1))
    s["v"] = s["v"] * c(b2) + c(1 - b2) * g * g
    return p, g


def ref_adam(p, g, s, h, c):
    p, g = _moments(p, g, s, h, c)
    lr, eps = h.get("lr", 1e-3), h.get("eps", 1e-8)
    b1, b2 = h.get("betas", (0.9, 0.999))
    t = s["t"]
    v = s["v"]
    if h.get("amsgrad"):
        s["vmax"] = np.maximum(s.get("vmax", np.zeros_like(p)), v)
        v = s["vmax"]
    denom = np.sqrt(v) / c((1 - b2**t) ** 0.5) + c(eps)
    return p + c(-(lr / (1 - b1**t))) * s["m"] / denom


def ref_adamw(p, g, s, h, c):
    return ref_adam(p, g, s, {"weight_decay": 1e-2, **h, "decoupled_weight_decay": True}, c)


def ref_rmsprop(p, g, s, h, c):
    lr, alpha, eps = h.get("lr", 1e-2), h.get("alpha", 0.99), h.get("eps", 1e-8)
    mom = h.get("momentum", 0)
    g = _grad_in(p, g, h, c)
    sq = s.get("sq", np.zeros_like(p)) * c(alpha) + c(1 - alpha) * g * g
    s["sq"] = sq
    if h.get("centered"):
        s["ga"] = _lerp(s.get("ga", np.zeros_like(p)), g, c(1 - alpha))
        avg = np.sqrt(sq + c(-1) * s["ga"] * s["ga"]) + c(eps)
    else:
        avg = np.sqrt(sq) + c(eps)
    if mom > 0:
        s["b"] = s.get("b", np.zeros_like(p)) * c(mom) + g / avg
        return p + c(-lr) * s["b"]
    return p + c(-lr) * g / avg


def ref_adagrad(p, g, s, h, c):
    lr, lr_decay, eps = h.get("lr", 1e-2), h.get("lr_decay", 0), h.get("eps", 1e-10)
    s["t"] = s.get("t", 0) + 1
    g = _grad_in(p, g, h, c)
    clr = -lr / (1 + (s["t"] - 1) * lr_decay)
    s["sum"] = s.get("sum", np.full_like(p, h.get("initial_accumulator_value", 0))) + g * g
    return p + (g * c(clr)) / (np.sqrt(s["sum"]) + c(eps))


def ref_adamax(p, g, s, h, c):
    lr, eps = h.get("lr", 2e-3), h.get("eps", 1e-8)
    b1, b2 = h.get("betas", (0.9, 0.999))
    s["t"] = s.get("t", 0) + 1
    g = _grad_in(p, g, h, c)
    s["m"] = _lerp(s.get("m", np.zeros_like(p)), g, c(1 - b1))
    s["u"] = np.maximum(s.get("u", np.zeros_like(p)) * c(b2), np.abs(g) + c(eps))
    return p + c(-(lr / (1 - b1 ** s["t"]))) * s["m"] / s["u"]


def ref_nadam(p, g, s, h, c):
    h = {"lr": 2e-3, **h}
    p, g = _moments(p, g, s, h, c)
    lr, eps, md = h["lr"], h.get("eps", 1e-8), h.get("momentum_decay", 4e-3)
    b1, b2 = h.get("betas", (0.9, 0.999))
    t = s["t"]
    mu = b1 * (1.0 - 0.5 * 0.96 ** (t * md))
    mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * md))
    # PyTorch keeps the running product as a float32 scalar tensor.
    s["mp"] = np.float32(s.get("mp", np.float32(1.0)) * np.float32(mu))
    mp = float(s["mp"])
    denom = np.sqrt(s["v"]) / c((1 - b2**t) ** 0.5) + c(eps)
    p = p + c(-(lr * (1.0 - mu) / (1.0 - mp))) * g / denom
    return p + c(-(lr * mu_next / (1.0 - mp * mu_next))) * s["m"] / denom


def ref_radam(p, g, s, h, c):
    p, g = _moments(p, g, s, h, c)
    lr, eps = h.get("lr", 1e-3), h.get("eps", 1e-8)
    b1, b2 = h.get("betas", (0.9, 0.999))
    t = s["t"]
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * b2**t / (1 - b2**t)
    m_hat_scale = lr / (1 - b1**t)
    if rho_t > 5:
        r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        adaptive = c(-(((1 - b2**t) ** 0.5) * m_hat_scale * r)) / (np.sqrt(s["v"]) + c(eps))
        return p + s["m"] * adaptive
    return p + s["m"] * c(-m_hat_scale)


CASES = [
    (optim.SGD, ref_sgd, {"lr": 0.1}),
    (optim.SGD, ref_sgd, {"lr": 0.05, "momentum": 0.9}),
    (optim.SGD, ref_sgd, {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.1}),
    (optim.SGD, ref_sgd, {"lr": 0.05, "momentum": 0.8, "nesterov": True, "maximize": True}),
    (optim.SGD, ref_sgd, {"lr": 0.05, "weight_decay": 0.2, "maximize": True}),
    (optim.Adam, ref_adam, {}),
    (optim.Adam, ref_adam, {"lr": 0.01, "betas": (0.8, 0.9), "amsgrad": True}),
    (optim.Adam, ref_adam, {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    (optim.Adam, ref_adam, {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    (optim.AdamW, ref_adamw, {"lr": 0.01}),
    (optim.AdamW, ref_adamw, {"lr": 0.01, "weight_decay": 0.3, "amsgrad": True, "maximize": True}),
    (optim.RMSprop, ref_rmsprop, {}),
    (optim.RMSprop, ref_rmsprop, {"centered": True, "weight_decay": 0.1}),
    (optim.RMSprop, ref_rmsprop, {"momentum": 0.9, "alpha": 0.9}),
    (optim.RMSprop, ref_rmsprop, {"momentum": 0.5, "centered": True, "maximize": True}),
    (optim.Adagrad, ref_adagrad, {}),
    (optim.Adagrad, ref_adagrad, {"lr_decay": 0.1, "initial_accumulator_value": 0.5,
                                  "weight_decay": 0.1}),
    (optim.Adagrad, ref_adagrad, {"maximize": True}),
    (optim.Adamax, ref_adamax, {}),
    (optim.Adamax, ref_adamax, {"weight_decay": 0.1, "betas": (0.5, 0.9), "maximize": True}),
    (optim.NAdam, ref_nadam, {}),
    (optim.NAdam, ref_nadam, {"weight_decay": 0.1, "momentum_decay": 0.01}),
    (optim.NAdam, ref_nadam, {"weight_decay": 0.1, "decoupled_weight_decay": True}),
    (optim.RAdam, ref_radam, {}),
    (optim.RAdam, ref_radam, {"weight_decay": 0.1, "betas": (0.9, 0.9)}),
    (optim.RAdam, ref_radam, {"weight_decay": 0.1, "decoupled_weight_decay": True,
                              "maximize": True}),
    # Every option of each rule at once, so their order in the update is checked too.
    (optim.SGD, ref_sgd, {"lr": 0.05, "momentum": 0.7, "nesterov": True, "weight_decay": 0.1}),
    (optim.SGD, ref_sgd, {"lr": 0.05, "momentum": 0.9, "dampening": 0.5, "weight_decay": 0.1,
                          "maximize": True}),
    (optim.Adam, ref_adam, {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True, "maximize": True}),
    (optim.Adam, ref_adam, {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True,
                            "decoupled_weight_decay": True}),
    (optim.RMSprop, ref_rmsprop, {"momentum": 0.9, "weight_decay": 0.1}),
    (optim.RMSprop, ref_rmsprop, {"momentum": 0.9, "centered": True, "weight_decay": 0.1,
                                  "alpha": 0.9}),
    (optim.RMSprop, ref_rmsprop, {"momentum": 0.9, "centered": True, "weight_decay": 0.1,
                                  "maximize": True}),
    (optim.Adagrad, ref_adagrad, {"lr_decay": 0.05, "initial_accumulator_value": 0.1,
                                  "weight_decay": 0.1, "maximize": True, "eps": 1e-6}),
    (optim.Adamax, ref_adamax, {"weight_decay": 0.1}),
    (optim.NAdam, ref_nadam, {"maximize": True}),
    (optim.NAdam, ref_nadam, {"weight_decay": 0.1, "decoupled_weight_decay": True,
                              "momentum_decay": 0.01, "maximize": True}),
    (optim.RAdam, ref_radam, {"weight_decay": 0.1, "maximize": True}),
]


def _ids(case):
    cls, _, h = case
    return cls.__name__ + "-" + "-".join(f"{k}={v}" for k, v in h.items())


def _grads(rng, shapes, dtype, steps):
    return [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(steps)]


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_numpy_reference(case, dtype):
    cls, ref, h = case
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    params = [nn.Parameter(torch.tensor(a)) for a in init]
    opt = cls(params, **h)
    want = [a.copy() for a in init]
    states = [{} for _ in init]
    c = np.dtype(dtype).type
    tol = 2e-6 if dtype == np.float32 else 1e-13
    for step, gs in enumerate(_grads(rng, SHAPES, dtype, STEPS)):
        for p, g in zip(params, gs):
            p.grad = torch.tensor(g)
        opt.step()
        want = [ref(w, g, s, h, c) for w, g, s in zip(want, gs, states)]
        for p, w in zip(params, want):
            got = p.detach().numpy()
            assert got.dtype == dtype
            np.testing.assert_allclose(got, w, rtol=tol, atol=tol, err_msg=f"step {step}")


@pytest.mark.parametrize("case", CASES[:1] + CASES[5:6] + CASES[11:12])
def test_skips_parameters_without_grad_and_non_contiguous(case):
    cls, ref, h = case
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 3))
    b = rng.standard_normal(3)
    # A transposed (non-contiguous) leaf is updated through a contiguous copy.
    pa = torch.tensor(a.T.copy()).t().detach().requires_grad_(True)
    assert not pa.is_contiguous()
    pb = nn.Parameter(torch.tensor(b))
    opt = cls([pa, pb], **h)
    st: dict = {}
    want = a.copy()
    for _ in range(5):
        g = rng.standard_normal((4, 3))
        pa.grad = torch.tensor(g.T.copy()).t()
        before = pa._version
        opt.step()
        assert pa._version > before
        want = ref(want, g, st, h, np.float64)
    np.testing.assert_allclose(pa.detach().numpy(), want, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(pb.detach().numpy(), b)
    assert len(opt.state[pb]) == 0


# One case per optimizer class, with most of its options on.
ONE_PER_CLASS = list({cls: (cls, ref, h) for cls, ref, h in CASES}.values())


@pytest.mark.parametrize("case", ONE_PER_CLASS, ids=[_ids(c) for c in ONE_PER_CLASS])
def test_parameter_whose_grad_is_none_is_skipped_and_its_state_waits(case):
    # A parameter that gets a gradient only on some steps: on the others it is
    # neither moved nor is its state (step count, moments) advanced.
    cls, ref, h = case
    rng = np.random.default_rng(2)
    init = [rng.standard_normal(s) for s in SHAPES]
    params = [nn.Parameter(torch.tensor(a)) for a in init]
    opt = cls(params, **h)
    want = [a.copy() for a in init]
    states: list[dict] = [{} for _ in init]
    for step in range(12):
        gs = [rng.standard_normal(s) for s in SHAPES]
        has = [True, step % 3 == 1, step >= 5]
        for p, g, on in zip(params, gs, has):
            p.grad = torch.tensor(g) if on else None
        before = [p._version for p in params]
        opt.step()
        for i, on in enumerate(has):
            if on:
                want[i] = ref(want[i], gs[i], states[i], h, np.float64)
            else:
                assert params[i]._version == before[i]
        for p, w in zip(params, want):
            np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-12, atol=1e-12,
                                       err_msg=f"step {step}")
    for p, count in zip(params, [12, 4, 7]):
        if cls is not optim.SGD:
            assert opt.state[p]["step"].item() == count


def test_per_group_options_and_defaults():
    w, b = nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(2))
    opt = optim.SGD([{"params": [w]}, {"params": b, "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["momentum"] == 0
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["params"] == [b]
    assert opt.param_groups[1]["nesterov"] is False
    w.grad, b.grad = torch.ones(3), torch.ones(2)
    opt.step()
    np.testing.assert_allclose(w.detach().numpy(), 0.9, rtol=1e-7)
    np.testing.assert_allclose(b.detach().numpy(), 0.5, rtol=1e-7)
    assert "momentum_buffer" in opt.state[b] and w not in opt.state
    opt.step()
    np.testing.assert_allclose(b.detach().numpy(), 0.5 - 0.5 * 1.9, rtol=1e-6)
    c = nn.Parameter(torch.zeros(1))
    opt.add_param_group({"params": [c], "lr": 1.0})
    c.grad = torch.ones(1)
    opt.step()
    assert c.item() == -1.0


def test_zero_grad():
    w = nn.Parameter(torch.ones(3))
    opt = optim.Adam([w])
    w.grad = torch.ones(3)
    g = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is g and w.grad.tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None
    opt.step()  # nothing has a gradient: nothing happens
    assert w.tolist() == [1.0, 1.0, 1.0] and len(opt.state) == 0


def test_closure_runs_with_grad_enabled():
    w = nn.Parameter(torch.tensor([2.0]))
    opt = optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with torch.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 4.0 and w.item() == 1.0


def _train(opt_cls, kw, params, opt, start, stop, sched=None):
    """Deterministic pseudo-training: the gradient depends on the step and parameters."""
    for step in range(start, stop):
        for i, p in enumerate(params):
            g = np.sin(np.arange(p.numel()) * 0.7 + step + i).reshape(tuple(p.shape))
            p.grad = torch.tensor(g.astype(np.float32)) + p.detach() * 0.1
        opt.step()
        if sched is not None:
            sched.step()


OPTS = [
    (optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    (optim.Adam, {"lr": 0.01, "amsgrad": True}),
    (optim.AdamW, {"lr": 0.01}),
    (optim.RMSprop, {"lr": 0.01, "momentum": 0.5, "centered": True}),
    (optim.Adagrad, {"lr": 0.1, "lr_decay": 0.01}),
    (optim.Adamax, {"lr": 0.01}),
    (optim.NAdam, {"lr": 0.01}),
    (optim.RAdam, {"lr": 0.01}),
]


@pytest.mark.parametrize("opt_cls,kw", OPTS, ids=[o[0].__name__ for o in OPTS])
def test_checkpoint_and_resume_equals_uninterrupted(opt_cls, kw):
    k, n = 7, 15
    rng = np.random.default_rng(3)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]

    def fresh():
        ps = [nn.Parameter(torch.tensor(a)) for a in init]
        opt = opt_cls([{"params": ps[:2]}, {"params": ps[2:], "lr": kw["lr"] * 2}], **kw)
        return ps, opt, optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)

    ps, opt, sched = fresh()
    _train(opt_cls, kw, ps, opt, 0, n, sched)
    final = [p.detach().numpy().copy() for p in ps]

    ps, opt, sched = fresh()
    _train(opt_cls, kw, ps, opt, 0, k, sched)
    ckpt = {
        "params": [p.detach().clone() for p in ps],
        "optim": copy.deepcopy(opt.state_dict()),
        "sched": copy.deepcopy(sched.state_dict()),
    }
    _train(opt_cls, kw, ps, opt, k, n + 3, sched)  # the original moves on; the checkpoint must not

    ps2 = [nn.Parameter(t.clone()) for t in ckpt["params"]]
    # Built with other hyper-parameters: loading restores the saved ones.
    opt2 = opt_cls([{"params": ps2[:2]}, {"params": ps2[2:]}], **{**kw, "lr": 123.0})
    sched2 = optim.lr_scheduler.StepLR(opt2, step_size=4, gamma=0.5)
    opt2.load_state_dict(ckpt["optim"])
    sched2.load_state_dict(ckpt["sched"])
    _train(opt_cls, kw, ps2, opt2, k, n, sched2)
    for p, f in zip(ps2, final):
        np.testing.assert_array_equal(p.detach().numpy(), f)


def test_state_dict_layout_and_dtype_cast():
    w = nn.Parameter(torch.ones(2, dtype=torch.float64))
    b = nn.Parameter(torch.ones(3, dtype=torch.float64))
    opt = optim.Adam([{"params": [w]}, {"params": [b], "lr": 0.1}])
    w.grad, b.grad = torch.ones(2, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert sorted(sd["state"]) == [0, 1]
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.1
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    step = sd["state"][0]["step"]
    assert step.dtype == torch.float32 and step.shape == () and step.item() == 1.0
    # Into float32 parameters: buffers take the parameter's dtype, 'step' keeps its own.
    w32 = nn.Parameter(torch.ones(2))
    b32 = nn.Parameter(torch.ones(3))
    opt32 = optim.Adam([{"params": [w32]}, {"params": [b32]}])
    opt32.load_state_dict(sd)
    assert opt32.state[w32]["exp_avg"].dtype == torch.float32
    assert opt32.state[w32]["step"].dtype == torch.float32
    assert opt32.param_groups[1]["lr"] == 0.1 and opt32.param_groups[1]["params"] == [b32]
    w32.grad = torch.ones(2)
    opt32.step()
    assert opt32.state[w32]["step"].item() == 2.0


def test_load_state_dict_errors_leave_optimizer_unchanged():
    w, b = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(3))
    opt = optim.SGD([w, b], lr=0.1, momentum=0.9)
    other = optim.SGD([{"params": [w]}, {"params": [b]}], lr=0.1)
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        opt.load_state_dict(other.state_dict())
    small = optim.SGD([w], lr=0.5)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict(small.state_dict())
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["params"] == [w, b]


def test_construction_errors():
    w = nn.Parameter(torch.ones(2))
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is float"):
        optim.SGD([w, 1.0], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        optim.Adam(w)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.Adam([{"params": {w}}])
    with pytest.raises(ValueError, match=r"Invalid learning rate: -1.0"):
        optim.Adam([w], lr=-1.0)
    with pytest.raises(ValueError, match=r"Invalid beta parameter at index 1: 1.0"):
        optim.Adam([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match=r"Invalid epsilon value: -1"):
        optim.RMSprop([w], eps=-1)
    with pytest.raises(ValueError, match=r"Invalid momentum value: -0.5"):
        optim.SGD([w], momentum=-0.5)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match=r"Invalid weight_decay value: -0.1"):
        optim.AdamW([w], weight_decay=-0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([torch.ones(2, requires_grad=True) * 2], lr=0.1)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": [w]}, {"params": [nn.Parameter(torch.ones(1))]}])
    opt = optim.Adam([w], differentiable=True)
    w.grad = torch.ones(2)
    with pytest.raises(RuntimeError, match="differentiable"):
        opt.step()
    assert w.tolist() == [1.0, 1.0]


def test_mismatched_state_is_an_error_and_writes_nothing():
    w, b = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(3))
    opt = optim.SGD([b, w], lr=0.1, momentum=0.9)
    sd = opt.state_dict()
    sd["state"] = {0: {"momentum_buffer": torch.zeros(2)}, 1: {"momentum_buffer": torch.zeros(2)}}
    opt.load_state_dict(sd)
    b.grad, w.grad = torch.ones(3), torch.ones(2)
    with pytest.raises(RuntimeError, match=r"shape \[2\] but the parameter has \[3\]"):
        opt.step()
    assert b.tolist() == [1.0, 1.0, 1.0] and w.tolist() == [1.0, 1.0]


def test_step_hooks():
    w = nn.Parameter(torch.ones(2))
    opt = optim.SGD([w], lr=0.1)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt, a, k)))
    post = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", o is opt)))
    w.grad = torch.ones(2)
    opt.step()
    assert calls == [("pre", True, (), {}), ("post", True)]
    pre.remove()
    post.remove()
    opt.step()
    assert len(calls) == 2
    # A pre hook may replace the arguments.
    seen = []

    def closure():
        seen.append(1)
        return torch.tensor(0.0)

    with opt.register_step_pre_hook(lambda o, a, k: ((closure,), {})):
        opt.step()
    assert seen == [1]


def test_global_step_hooks_wrap_every_optimizer_in_pytorchs_order():
    from ferrograd.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    w, v = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(2))
    sgd, adam = optim.SGD([w], lr=0.5), optim.Adam([v])
    calls = []
    g_pre = register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("global pre", o)))
    g_post = register_optimizer_step_post_hook(lambda o, a, k: calls.append(("global post", o)))
    try:
        sgd.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o)))
        sgd.register_step_post_hook(lambda o, a, k: calls.append(("post", o, w.tolist())))
        w.grad = torch.ones(2)
        sgd.step()
        adam.step()
    finally:
        g_pre.remove()
        g_post.remove()
    assert calls == [("global pre", sgd), ("pre", sgd), ("post", sgd, [0.5, 0.5]),
                     ("global post", sgd), ("global pre", adam), ("global post", adam)]
    sgd.step()
    assert len(calls) == 8  # the optimizer's own hooks stay, the global ones are gone


def test_a_pre_hook_returning_something_else_is_an_error():
    w = nn.Parameter(torch.ones(2))
    opt = optim.SGD([w], lr=0.5)
    opt.register_step_pre_hook(lambda o, a, k: "oops")
    w.grad = torch.ones(2)
    with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, new_kwargs\)"):
        opt.step()
    assert w.tolist() == [1.0, 1.0]


def test_repr_matches_pytorch_layout():
    opt = optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1, momentum=0.9)
    assert repr(opt) == (
        "SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n"
        "    foreach: None\n    fused: None\n    lr: 0.1\n    maximize: False\n"
        "    momentum: 0.9\n    nesterov: False\n    weight_decay: 0\n)"
    )
    assert "decoupled_weight_decay: True" in repr(optim.AdamW([nn.Parameter(torch.ones(1))]))


def test_training_a_model_reduces_the_loss():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    x = torch.randn(32, 4)
    y = x.sum(1, keepdim=True)
    opt = optim.Adam(model.parameters(), lr=0.05)
    first = None
    for _ in range(60):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 0.1 * first


def _rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


@pytest.mark.parametrize("line_search", ["strong_wolfe", None])
def test_lbfgs_minimises_rosenbrock(line_search):
    x = nn.Parameter(torch.tensor([-1.5, 2.0], dtype=torch.float64))
    lr = 1.0 if line_search else 0.05
    opt = optim.LBFGS([x], lr=lr, max_iter=200, history_size=10, line_search_fn=line_search,
                      tolerance_grad=1e-12, tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(x)
        loss.backward()
        return loss

    for _ in range(10 if line_search else 40):
        opt.step(closure)
    tol = 1e-6 if line_search else 1e-3
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=tol)
    state = opt.state[x]
    assert state["n_iter"] > 0 and state["func_evals"] >= state["n_iter"]


# ----- LBFGS -----------------------------------------------------------------------


def _lbfgs_problem():
    rng = np.random.default_rng(5)
    m = rng.standard_normal((5, 5))
    a = m @ m.T / 5 + np.eye(5)
    b = rng.standard_normal(5)
    x0 = rng.standard_normal(5) * 0.5

    def f_np(x):
        return 0.25 * np.sum(x**4) + 0.5 * x @ a @ x + b @ x

    def g_np(x):
        return x**3 + a @ x + b

    # Two parameters of different shapes, so the flat view crosses a boundary.
    params = [nn.Parameter(torch.tensor(x0[:3])), nn.Parameter(torch.tensor(x0[3:].reshape(2, 1)))]
    at, bt = torch.tensor(a), torch.tensor(b)

    def f_fg():
        x = torch.cat([params[0], params[1].reshape(-1)])
        return 0.25 * (x**4).sum() + 0.5 * (x @ (at @ x)) + (bt * x).sum()

    def flat():
        return np.concatenate([p.detach().numpy().reshape(-1) for p in params])

    return params, f_fg, flat, f_np, g_np, x0


def ref_lbfgs_steps(x, g_fn, f_fn, calls, lr, max_iter, history_size, tol_change=1e-9):
    """PyTorch's LBFGS (fixed step, no line search) in NumPy: two-loop
    recursion over the last ``history_size`` pairs (a pair kept only when
    ``y.s > 1e-10``), first step ``min(1, 1/|g|_1) * lr``; yields the
    parameters after each ``step`` call."""
    st: dict = {"n_iter": 0, "dirs": [], "stps": [], "ro": [], "h": 1.0}
    for _ in range(calls):
        loss, g = f_fn(x), g_fn(x)
        n = 0
        while n < max_iter:
            n += 1
            st["n_iter"] += 1
            if st["n_iter"] == 1:
                d = -g
                st.update(dirs=[], stps=[], ro=[], h=1.0)
            else:
                y, s_ = g - st["prev_g"], st["d"] * st["t"]
                ys = y @ s_
                if ys > 1e-10:
                    if len(st["dirs"]) == history_size:
                        for k in ("dirs", "stps", "ro"):
                            st[k].pop(0)
                    st["dirs"].append(y)
                    st["stps"].append(s_)
                    st["ro"].append(1.0 / ys)
                    st["h"] = ys / (y @ y)
                q = -g
                al = [0.0] * len(st["dirs"])
                for i in reversed(range(len(st["dirs"]))):
                    al[i] = (st["stps"][i] @ q) * st["ro"][i]
                    q = q - al[i] * st["dirs"][i]
                d = q * st["h"]
                for i in range(len(st["dirs"])):
                    be = (st["dirs"][i] @ d) * st["ro"][i]
                    d = d + st["stps"][i] * (al[i] - be)
            st["prev_g"], prev_loss = g.copy(), loss
            t = min(1.0, 1.0 / np.abs(g).sum()) * lr if st["n_iter"] == 1 else lr
            st["d"], st["t"] = d, t
            if g @ d > -tol_change:
                break
            x = x + t * d
            if n != max_iter:
                loss, g = f_fn(x), g_fn(x)
            if n == max_iter or np.abs(g).max() <= 1e-7 or np.abs(d * t).max() <= tol_change:
                break
            if abs(loss - prev_loss) < tol_change:
                break
        yield x


def _closure_for(opt, f):
    def closure():
        opt.zero_grad()
        loss = f()
        loss.backward()
        return loss

    return closure


def test_lbfgs_matches_numpy_reference():
    params, f, flat, f_np, g_np, x0 = _lbfgs_problem()
    # history_size=3 < the iterations run, so old pairs are dropped as in PyTorch.
    opt = optim.LBFGS(params, lr=0.5, max_iter=4, history_size=3)
    closure = _closure_for(opt, f)
    for call, want in enumerate(ref_lbfgs_steps(x0, g_np, f_np, 6, 0.5, 4, 3)):
        opt.step(closure)
        np.testing.assert_allclose(flat(), want, rtol=1e-11, atol=1e-12, err_msg=f"call {call}")
    assert len(opt.state[params[0]]["old_dirs"]) == 3
    assert f_np(flat()) < f_np(x0)


def test_lbfgs_strong_wolfe_steps_satisfy_the_conditions():
    params, f, flat, f_np, g_np, x0 = _lbfgs_problem()
    # lr=3 overshoots, so the search has to bracket and zoom back.
    opt = optim.LBFGS(params, lr=3.0, max_iter=1, max_eval=25, tolerance_change=1e-14,
                      line_search_fn="strong_wolfe")
    closure = _closure_for(opt, f)
    x = x0
    steps = []
    while np.abs(g_np(x)).max() > 1e-6 and len(steps) < 30:
        evals = opt.state[params[0]].get("func_evals", 0)
        opt.step(closure)
        st = opt.state[params[0]]
        d, t = st["d"].numpy(), st["t"]
        new = flat()
        np.testing.assert_allclose(new, x + t * d, rtol=1e-12, atol=1e-12)
        gtd = g_np(x) @ d
        assert gtd < 0
        assert f_np(new) <= f_np(x) + 1e-4 * t * gtd  # sufficient decrease
        assert abs(g_np(new) @ d) <= 0.9 * abs(gtd)  # curvature
        steps.append((t, st["func_evals"] - evals))
        x = new
    assert np.abs(g_np(x)).max() <= 1e-6
    assert any(t != 3.0 and evals > 2 for t, evals in steps[1:])


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_checkpoint_and_resume_equals_uninterrupted(line_search):
    k, n = 3, 7

    def fresh():
        params, f, flat, *_ = _lbfgs_problem()
        opt = optim.LBFGS(params, lr=0.5, max_iter=3, history_size=4, line_search_fn=line_search)
        return params, opt, _closure_for(opt, f), flat

    params, opt, closure, flat = fresh()
    for _ in range(n):
        opt.step(closure)
    final = flat()

    params, opt, closure, flat = fresh()
    for _ in range(k):
        opt.step(closure)
    saved = [p.detach().clone() for p in params]
    sd = copy.deepcopy(opt.state_dict())
    opt.step(closure)  # the original moves on; the checkpoint must not

    params2, opt2, closure2, flat2 = fresh()
    with torch.no_grad():
        for p, v in zip(params2, saved):
            p.copy_(v)
    opt2.load_state_dict(sd)
    for _ in range(k, n):
        opt2.step(closure2)
    np.testing.assert_array_equal(flat2(), final)


def test_gradient_sharing_the_parameters_memory():
    # The fused kernel refuses aliasing memory; the step then runs per tensor
    # on a copy of the gradient, which is what an op-by-op update would read.
    p = nn.Parameter(torch.ones(3))
    p.grad = p.detach()
    opt = optim.SGD([p], lr=0.5, momentum=0.9)
    opt.step()
    assert p.tolist() == [0.5, 0.5, 0.5]
    assert opt.state[p]["momentum_buffer"].tolist() == [1.0, 1.0, 1.0]


def test_step_records_nothing_and_invalidates_saved_parameters():
    w = nn.Parameter(torch.ones(3))
    y = (w * w).sum()  # saves w
    w.grad = torch.ones(3)
    v = w._version
    optim.Adam([w]).step()
    assert w.is_leaf and w.grad_fn is None and w._version == v + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
