"""ferrograd.optim's per-parameter optimizers (Adadelta, ASGD, Rprop,
Adafactor) against NumPy references of their published updates (written op
by op in PyTorch's single-tensor order, in the parameter's dtype) and against
values recorded from PyTorch; their state layout, state-dict round trips,
parameter groups, flags, hooks and argument errors; and SparseAdam, which
exists with PyTorch's checks but refuses ferrograd's (always dense) gradients."""

from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest

import ferrograd as torch
from ferrograd import nn, optim

SHAPES = [(3, 4), (5,), (2, 3, 5), (2, 1, 3), ()]
STEPS = 20


# ----- NumPy references ----------------------------------------------------------


def _lerp(a, b, w):
    # torch.lerp with a scalar weight, in the arrays' dtype.
    one = a.dtype.type(1)
    return a + w * (b - a) if abs(w) < 0.5 else b - (b - a) * (one - w)


def _grad_in(p, g, h, c):
    g = -g if h.get("maximize") else g
    if h.get("weight_decay", 0):
        g = g + c(h["weight_decay"]) * p
    return g


def ref_adadelta(p, g, s, h, c):
    lr, rho, eps = h.get("lr", 1.0), h.get("rho", 0.9), h.get("eps", 1e-6)
    g = _grad_in(p, g, h, c)
    if not s:
        s.update(v=np.zeros_like(p), u=np.zeros_like(p))
    s["v"] = s["v"] * c(rho) + c(1 - rho) * g * g
    delta = np.sqrt(s["u"] + c(eps)) / np.sqrt(s["v"] + c(eps)) * g
    s["u"] = s["u"] * c(rho) + c(1 - rho) * delta * delta
    return p - c(lr) * delta


def ref_asgd(p, g, s, h, c):
    lr, lambd, alpha = h.get("lr", 1e-2), h.get("lambd", 1e-4), h.get("alpha", 0.75)
    t0 = h.get("t0", 1e6)
    if not s:
        # eta and mu are float32 scalars in PyTorch's state.
        s.update(t=0, eta=float(np.float32(lr)), mu=1.0, ax=np.zeros_like(p))
    s["t"] += 1
    g = _grad_in(p, g, h, c)
    p = p * c(1 - lambd * s["eta"]) - c(s["eta"]) * g
    s["ax"] = s["ax"] + (p - s["ax"]) * c(s["mu"]) if s["mu"] != 1 else p.copy()
    s["eta"] = float(np.float32(lr / (1 + lambd * lr * s["t"]) ** alpha))
    s["mu"] = float(np.float32(1 / max(1, s["t"] - t0)))
    return p


def ref_rprop(p, g, s, h, c):
    etaminus, etaplus = h.get("etas", (0.5, 1.2))
    lo, hi = h.get("step_sizes", (1e-6, 50))
    if not s:
        s.update(prev=np.zeros_like(p), size=np.full_like(p, h.get("lr", 1e-2)))
    g = -g if h.get("maximize") else g
    sign = np.sign(g * s["prev"])
    factor = np.where(sign > 0, c(etaplus), np.where(sign < 0, c(etaminus), c(1)))
    s["size"] = np.clip(s["size"] * factor, c(lo), c(hi))
    g = np.where(sign < 0, c(0), g)
    s["prev"] = g
    return p - np.sign(g) * s["size"]


def ref_adafactor(p, g, s, h, c):
    lr, decay, d = h.get("lr", 1e-2), h.get("beta2_decay", -0.8), h.get("d", 1.0)
    eps1, eps2 = h.get("eps", (None, 1e-3))
    eps1 = np.finfo(p.dtype).eps if eps1 is None else eps1
    wd = h.get("weight_decay", 0.0)
    g = -g if h.get("maximize") else g
    if not s:
        s["t"] = 0
        if g.ndim > 1:
            s["row"] = np.zeros(g.shape[:-1] + (1,), g.dtype)
            s["col"] = np.zeros(g.shape[:-2] + (1, g.shape[-1]), g.dtype)
        else:
            s["var"] = np.zeros_like(g)
    s["t"] += 1
    t = float(s["t"])
    w = c(t**decay)
    rms = float(np.linalg.norm(p.ravel())) / max(p.size, 1) ** 0.5
    alpha = max(eps2, rms) * min(lr, 1 / t**0.5)
    if wd:
        p = p * c(1 - lr * wd)
    if g.ndim > 1:
        s["row"] = _lerp(s["row"], (g * g).mean(axis=-1, keepdims=True), w)
        s["col"] = _lerp(s["col"], (g * g).mean(axis=-2, keepdims=True), w)
        est = s["row"] @ s["col"] / np.maximum(s["row"].mean(axis=-2, keepdims=True), c(eps1))
    else:
        s["var"] = _lerp(s["var"], g * g, w)
        est = s["var"]
    u = g / np.sqrt(np.maximum(est, c(eps1 * eps1)))
    denom = max(1.0, float(np.linalg.norm(u.ravel())) / (u.size**0.5 * d))
    return p - c(alpha / denom) * u


REFS = {
    optim.Adadelta: ref_adadelta,
    optim.ASGD: ref_asgd,
    optim.Rprop: ref_rprop,
    optim.Adafactor: ref_adafactor,
}

CASES = [
    (optim.Adadelta, {}),
    (optim.Adadelta, {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1}),
    (optim.Adadelta, {"lr": 0.5, "rho": 0.95, "weight_decay": 0.2, "maximize": True}),
    (optim.ASGD, {}),
    (optim.ASGD, {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 3, "weight_decay": 0.1}),
    (optim.ASGD, {"lr": 0.02, "lambd": 0.1, "t0": 0, "maximize": True}),
    (optim.Rprop, {}),
    (optim.Rprop, {"lr": 0.03, "etas": (0.3, 1.7), "step_sizes": (1e-3, 0.1)}),
    (optim.Rprop, {"etas": (0.6, 1.1), "step_sizes": (0.005, 0.02), "maximize": True}),
    (optim.Adafactor, {}),
    (optim.Adafactor, {"lr": 0.5, "beta2_decay": -0.5, "eps": (1e-5, 1e-2), "d": 1.5}),
    (optim.Adafactor, {"lr": 0.1, "weight_decay": 0.1, "maximize": True}),
    (optim.Adafactor, {"lr": 0.3, "beta2_decay": 0.0, "eps": (1e-4, 0.0), "weight_decay": 0.05}),
]


def _ids(case):
    cls, h = case
    return cls.__name__ + "-" + "-".join(f"{k}={v}" for k, v in h.items())


def _grads(rng, shapes, dtype, step):
    gs = [rng.standard_normal(s).astype(dtype) for s in shapes]
    if step % 4 == 3:
        # Exact zeros: Rprop's "no sign" branch, and a zero row/column for Adafactor.
        for g in gs:
            if g.ndim:
                g[..., 0] = 0
    return gs


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_numpy_reference(case, dtype):
    cls, h = case
    ref = REFS[cls]
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    params = [nn.Parameter(torch.tensor(a)) for a in init]
    opt = cls(params, **h)
    want = [a.copy() for a in init]
    states: list[dict] = [{} for _ in init]
    c = np.dtype(dtype).type
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for step in range(STEPS):
        gs = _grads(rng, SHAPES, dtype, step)
        for p, g in zip(params, gs):
            p.grad = torch.tensor(g)
        opt.step()
        want = [ref(w, g, s, h, c) for w, g, s in zip(want, gs, states)]
        for p, w in zip(params, want):
            got = p.detach().numpy()
            assert got.dtype == dtype
            np.testing.assert_allclose(got, w, rtol=tol, atol=tol, err_msg=f"step {step}")


# Five steps on a (2, 3) weight and a (3,) bias in float64, recorded from
# PyTorch 2.15 (torch.optim.<name>([w, b], **kwargs), the gradients below).
W0 = [[0.5, -1.0, 2.0], [0.25, 1.5, -0.75]]
B0 = [0.1, -0.2, 0.3]
RECORDED = [
    (optim.Adadelta, {"lr": 0.9, "rho": 0.8, "eps": 1e-3, "weight_decay": 0.1, "maximize": True},
     [[0.7224908571132131, -0.9537126055141629, 1.9085969906100493],
      [0.13863202322367157, 1.335857983037253, -0.6758935406696913]],
     [0.33032532688043065, -0.1731252138768091, 0.25407533609999666]),
    (optim.ASGD, {"lr": 0.1, "lambd": 0.05, "alpha": 0.6, "t0": 2, "weight_decay": 0.1},
     [[0.212161004302215, -0.9772440040684969, 1.8897531401331875],
      [0.3354419815118237, 1.5255636039116316, -0.7400750277120502]],
     [-0.15889305889318384, -0.23513587767769925, 0.31277337155274254]),
    (optim.Rprop, {"lr": 0.05, "etas": (0.4, 1.5), "step_sizes": (0.01, 0.08), "maximize": True},
     [[0.7849999999999999, -0.8270000000000001, 2.0500000000000003],
      [0.20499999999999996, 1.5, -0.9229999999999999]],
     [0.38500000000000006, -0.02700000000000001, 0.35]),
    (optim.Adafactor, {"lr": 0.2, "beta2_decay": -0.6, "eps": (1e-4, 1e-2), "d": 1.2,
                       "weight_decay": 0.1},
     [[-0.053710782800534575, -0.9312465016591491, 2.04555876850886],
      [0.5146812421258558, 1.7063924269585653, -0.7560275645931274]],
     [-0.034325151776938734, -0.18135657238274067, 0.31887575113314265]),
    (optim.Adafactor, {},
     [[0.46950211770704414, -1.0050040899989754, 2.0106898577282792],
      [0.2654617861903504, 1.521778218797989, -0.7532461983888413]],
     [0.09272235523596445, -0.20049431073706336, 0.30222831924020044]),
]


def _recorded_grad(shape, t):
    n = int(np.prod(shape))
    k = np.arange(n)
    return (np.sin(k * 0.7 + t) + 0.3 * np.cos(k * 1.3 * t)).reshape(shape)


@pytest.mark.parametrize("case", RECORDED, ids=[_ids(c[:2]) for c in RECORDED])
def test_matches_values_recorded_from_pytorch(case):
    cls, h, w_want, b_want = case
    w = nn.Parameter(torch.tensor(W0, dtype=torch.float64))
    b = nn.Parameter(torch.tensor(B0, dtype=torch.float64))
    opt = cls([w, b], **h)
    for t in range(5):
        w.grad = torch.tensor(_recorded_grad((2, 3), t))
        b.grad = torch.tensor(_recorded_grad((3,), t))
        opt.step()
    np.testing.assert_allclose(w.detach().numpy(), w_want, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(b.detach().numpy(), b_want, rtol=1e-13, atol=1e-15)


# ----- state, groups, round trips ------------------------------------------------


def test_state_layout_matches_pytorch():
    w = nn.Parameter(torch.ones(2, 3, 4))
    b = nn.Parameter(torch.ones(4))
    want = {
        optim.Adadelta: (["step", "square_avg", "acc_delta"], ["step", "square_avg", "acc_delta"]),
        optim.ASGD: (["step", "eta", "mu", "ax"], ["step", "eta", "mu", "ax"]),
        optim.Rprop: (["step", "prev", "step_size"], ["step", "prev", "step_size"]),
        optim.Adafactor: (["step", "row_var", "col_var"], ["step", "variance"]),
    }
    for cls, (kw, kb) in want.items():
        opt = cls([w, b], lr=0.1)
        w.grad, b.grad = torch.ones(2, 3, 4), torch.ones(4)
        opt.step()
        sd = opt.state_dict()
        assert list(sd["state"][0]) == kw and list(sd["state"][1]) == kb, cls
        for st in sd["state"].values():
            assert st["step"].dtype == torch.float32 and st["step"].dim() == 0
            assert st["step"].item() == 1
        assert sd["param_groups"][0]["params"] == [0, 1]
    assert list(opt.state[w]["row_var"].shape) == [2, 3, 1]
    assert list(opt.state[w]["col_var"].shape) == [2, 1, 4]
    rprop = optim.Rprop([b], lr=0.25)
    b.grad = torch.ones(4)
    rprop.step()
    # First step: no previous sign, so the step size stays lr.
    np.testing.assert_array_equal(rprop.state[b]["step_size"].numpy(), [0.25] * 4)
    asgd = optim.ASGD([b], lr=0.5, lambd=0.1, alpha=1.0, t0=0)
    asgd.step()
    st = asgd.state[b]
    assert st["eta"].dtype == torch.float32 and st["mu"].dtype == torch.float32
    assert st["eta"].item() == pytest.approx(0.5 / 1.05) and st["mu"].item() == 1.0


TRAIN = [
    (optim.Adadelta, {"lr": 0.5, "weight_decay": 0.1}),
    (optim.ASGD, {"lr": 0.05, "t0": 4, "lambd": 0.01}),
    (optim.Rprop, {"lr": 0.02, "etas": (0.4, 1.3)}),
    (optim.Adafactor, {"lr": 0.05, "weight_decay": 0.1}),
]


def _train(ps, opt, start, stop):
    for step in range(start, stop):
        for i, p in enumerate(ps):
            g = np.sin(np.arange(p.numel()) * 0.7 + step + i).reshape(tuple(p.shape))
            p.grad = torch.tensor(g.astype(np.float32)) + p.detach() * 0.1
        opt.step()


@pytest.mark.parametrize("opt_cls,kw", TRAIN, ids=[o[0].__name__ for o in TRAIN])
def test_checkpoint_and_resume_equals_uninterrupted(opt_cls, kw):
    k, n = 7, 15
    rng = np.random.default_rng(3)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES[:4]]

    def fresh(**over):
        ps = [nn.Parameter(torch.tensor(a)) for a in init]
        groups = [{"params": ps[:2]}, {"params": ps[2:], "lr": kw["lr"] * 2}]
        return ps, opt_cls(groups, **{**kw, **over})

    ps, opt = fresh()
    _train(ps, opt, 0, n)
    final = [p.detach().numpy().copy() for p in ps]

    ps, opt = fresh()
    _train(ps, opt, 0, k)
    ckpt = {"params": [p.detach().clone() for p in ps], "optim": copy.deepcopy(opt.state_dict())}
    _train(ps, opt, k, n + 3)  # the original moves on; the checkpoint must not

    ps2 = [nn.Parameter(t.clone()) for t in ckpt["params"]]
    opt2 = opt_cls([{"params": ps2[:2]}, {"params": ps2[2:]}], **{**kw, "lr": 123.0})
    opt2.load_state_dict(ckpt["optim"])
    assert [g["lr"] for g in opt2.param_groups] == [kw["lr"], kw["lr"] * 2]
    _train(ps2, opt2, k, n)
    for p, f in zip(ps2, final):
        np.testing.assert_array_equal(p.detach().numpy(), f)


@pytest.mark.parametrize("cls", list(REFS), ids=lambda c: c.__name__)
def test_param_groups_with_different_options(cls):
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal(4)
    pa, pb = nn.Parameter(torch.tensor(a)), nn.Parameter(torch.tensor(b))
    ha = {"lr": 0.05}
    hb = {"lr": 0.2, "maximize": True}
    opt = cls([{"params": [pa]}, {"params": [pb], **hb}], **ha)
    assert opt.param_groups[0]["lr"] == 0.05 and opt.param_groups[1]["lr"] == 0.2
    assert opt.param_groups[0]["maximize"] is False and opt.param_groups[1]["maximize"] is True
    sa: dict = {}
    sb: dict = {}
    for _ in range(6):
        ga, gb = rng.standard_normal((3, 4)), rng.standard_normal(4)
        pa.grad, pb.grad = torch.tensor(ga), torch.tensor(gb)
        opt.step()
        a = REFS[cls](a, ga, sa, ha, np.float64)
        b = REFS[cls](b, gb, sb, hb, np.float64)
    np.testing.assert_allclose(pa.detach().numpy(), a, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(pb.detach().numpy(), b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cls", list(REFS), ids=lambda c: c.__name__)
def test_parameter_without_grad_is_skipped_and_its_state_waits(cls):
    w, b = nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(2))
    opt = cls([w, b], lr=0.1)
    for step in range(4):
        w.grad = torch.full((3,), 0.5)
        b.grad = torch.full((2,), 0.5) if step >= 2 else None
        opt.step()
    assert opt.state[w]["step"].item() == 4 and opt.state[b]["step"].item() == 2
    assert not np.array_equal(b.detach().numpy(), [1.0, 1.0])


@pytest.mark.parametrize("cls", list(REFS), ids=lambda c: c.__name__)
def test_tensor_lr_and_hooks_and_closure(cls):
    w = nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
    opt = cls([w], lr=torch.tensor(0.1))
    calls = []
    opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        calls.append("closure")
        return loss

    loss = opt.step(closure)
    assert loss.item() == pytest.approx(14.0)
    assert calls == ["pre", "closure", "post"]
    assert not w.requires_grad or w.grad_fn is None
    assert not np.array_equal(w.detach().numpy(), [1.0, -2.0, 3.0])


def test_training_a_model_reduces_the_loss():
    for cls, kw in TRAIN:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
        x = torch.randn(32, 3)
        y = x.sum(dim=1, keepdim=True).sin()
        opt = cls(model.parameters(), **{**kw, "lr": kw["lr"] * (4 if cls is optim.ASGD else 1)})
        first = None
        for _ in range(60):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            first = loss.item() if first is None else first
        assert loss.item() < 0.7 * first, cls.__name__


# ----- signatures, flags and errors ----------------------------------------------

# PyTorch 2.15's signatures: (argument, default) in order; "*" marks keyword-only.
SIGNATURES = {
    optim.Adadelta: [("lr", 1.0), ("rho", 0.9), ("eps", 1e-6), ("weight_decay", 0),
                     ("foreach", None), "*", ("capturable", False), ("maximize", False),
                     ("differentiable", False)],
    optim.ASGD: [("lr", 1e-2), ("lambd", 1e-4), ("alpha", 0.75), ("t0", 1e6),
                 ("weight_decay", 0), ("foreach", None), ("maximize", False),
                 ("differentiable", False), ("capturable", False)],
    optim.Rprop: [("lr", 1e-2), ("etas", (0.5, 1.2)), ("step_sizes", (1e-6, 50)), "*",
                  ("capturable", False), ("foreach", None), ("maximize", False),
                  ("differentiable", False)],
    optim.Adafactor: [("lr", 1e-2), ("beta2_decay", -0.8), ("eps", (None, 1e-3)), ("d", 1.0),
                      ("weight_decay", 0.0), "*", ("foreach", None), ("maximize", False)],
    optim.SparseAdam: [("lr", 1e-3), ("betas", (0.9, 0.999)), ("eps", 1e-8),
                       ("maximize", False)],
}


@pytest.mark.parametrize("cls", list(SIGNATURES), ids=lambda c: c.__name__)
def test_signature_and_defaults_match_pytorch(cls):
    params = list(inspect.signature(cls.__init__).parameters.values())[2:]
    got = []
    for p in params:
        if p.kind is p.KEYWORD_ONLY and "*" not in got:
            got.append("*")
        got.append((p.name, p.default))
    assert got == SIGNATURES[cls]
    opt = cls([nn.Parameter(torch.ones(2))])
    want = {k: v for k, v in (e for e in SIGNATURES[cls] if e != "*")}
    assert opt.defaults == want


@pytest.mark.parametrize("cls", [optim.Adadelta, optim.ASGD, optim.Rprop])
def test_flags_are_accepted_and_unsupported_ones_refused_at_step(cls):
    w = nn.Parameter(torch.ones(2))
    cls([w], foreach=True).step()  # no gradient: nothing to do
    w.grad = torch.ones(2)
    cls([w], foreach=False).step()
    for flag in ("differentiable", "capturable"):
        opt = cls([w], **{flag: True})
        assert opt.param_groups[0][flag] is True
        with pytest.raises(RuntimeError, match=flag):
            opt.step()


ERRORS = [
    (optim.Adadelta, {"lr": -1}, "Invalid learning rate: -1"),
    (optim.Adadelta, {"rho": 1.5}, "Invalid rho value: 1.5"),
    (optim.Adadelta, {"rho": -0.1}, "Invalid rho value: -0.1"),
    (optim.Adadelta, {"eps": -1e-6}, "Invalid epsilon value: -1e-06"),
    (optim.Adadelta, {"weight_decay": -0.1}, "Invalid weight_decay value: -0.1"),
    (optim.ASGD, {"lr": -0.5}, "Invalid learning rate: -0.5"),
    (optim.ASGD, {"lambd": -1}, "Invalid lambd value: -1"),
    (optim.ASGD, {"alpha": -0.75}, "Invalid alpha value: -0.75"),
    (optim.ASGD, {"weight_decay": -1}, "Invalid weight_decay value: -1"),
    (optim.Rprop, {"lr": -1}, "Invalid learning rate: -1"),
    (optim.Rprop, {"etas": (1.5, 1.2)}, "Invalid eta values: 1.5, 1.2"),
    (optim.Rprop, {"etas": (0.5, 0.9)}, "Invalid eta values: 0.5, 0.9"),
    (optim.Rprop, {"etas": (0.0, 1.2)}, "Invalid eta values: 0.0, 1.2"),
    (optim.Adafactor, {"lr": -1}, "Learning rate should be >= 0 but is: -1"),
    (optim.Adafactor, {"beta2_decay": 0.5}, "beta2_decay should be <= 0 but is: 0.5"),
    (optim.Adafactor, {"eps": (-1.0, 1e-3)}, "epsilon1 should be >= 0 but is: -1.0"),
    (optim.Adafactor, {"eps": (None, -1e-3)}, "epsilon2 should be >= 0 but is: -0.001"),
    (optim.Adafactor, {"d": 0.5}, "Clipping threshold d should be >= 1 but is: 0.5"),
    (optim.Adafactor, {"weight_decay": -0.1}, "weight_decay should be >= 0 but is: -0.1"),
    (optim.SparseAdam, {"lr": 0}, "Invalid learning rate: 0"),
    (optim.SparseAdam, {"eps": 0.0}, "Invalid epsilon value: 0.0"),
    (optim.SparseAdam, {"betas": (1.0, 0.999)}, "Invalid beta parameter at index 0: 1.0"),
    (optim.SparseAdam, {"betas": (0.9, -0.1)}, "Invalid beta parameter at index 1: -0.1"),
]


@pytest.mark.parametrize("cls,kw,msg", ERRORS, ids=[f"{e[0].__name__}-{e[2]}" for e in ERRORS])
def test_argument_errors_use_pytorchs_wording(cls, kw, msg):
    with pytest.raises(ValueError) as info:
        cls([nn.Parameter(torch.ones(2))], **kw)
    assert str(info.value) == msg


@pytest.mark.parametrize("cls", list(SIGNATURES), ids=lambda c: c.__name__)
def test_base_class_errors(cls):
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        cls([])
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        cls(torch.ones(2))
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        cls([nn.Parameter(torch.ones(2))], lr=torch.ones(2))


# ----- SparseAdam ------------------------------------------------------------------


def test_sparse_adam_refuses_dense_gradients_and_changes_nothing():
    w = nn.Parameter(torch.tensor([1.0, 2.0]))
    b = nn.Parameter(torch.tensor([3.0]))
    opt = optim.SparseAdam([w, b], lr=0.1)
    assert opt.defaults == {"lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-8, "maximize": False}
    # No gradient: nothing to refuse; the closure still runs with grad enabled.
    assert opt.step(lambda: torch.is_grad_enabled()) is True
    b.grad = torch.ones(1)
    with pytest.raises(RuntimeError) as info:
        opt.step()
    assert str(info.value) == (
        "SparseAdam does not support dense gradients, please consider Adam instead"
    )
    np.testing.assert_array_equal(w.detach().numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(b.detach().numpy(), [3.0])
    assert opt.state_dict()["state"] == {}
    emb = nn.Embedding(4, 2)
    opt = optim.SparseAdam(emb.parameters())
    emb(torch.tensor([0, 2])).sum().backward()
    with pytest.raises(RuntimeError, match="please consider Adam instead"):
        opt.step()


# ----- Muon --------------------------------------------------------------------------

# Three steps on a (3, 5) float64 weight, recorded from PyTorch 2.15. Muon
# orthogonalizes in bfloat16, so values agree to bfloat16 rounding of the update.
MUON_W0 = [[-0.802, -1.324, -0.248, 0.42, 1.136], [0.11, -0.553, -0.785, 0.749, 1.635],
           [0.273, -1.233, -0.958, 1.6, 0.203]]
MUON_GRADS = [
    [[-1.732, -0.084, -1.163, -0.629, -0.488], [-0.713, 0.553, -0.063, -0.589, 0.41],
     [0.83, -1.643, -0.257, -0.981, -0.173]],
    [[-1.289, 0.021, -0.038, -0.304, -1.048], [-0.396, -1.091, -1.355, 0.225, -1.109],
     [1.17, 0.717, -1.998, 0.272, -1.102]],
    [[0.033, 0.044, -1.988, -0.233, -0.256], [0.962, -1.181, 0.738, -1.099, -0.331],
     [-0.84, 1.449, 0.568, 2.432, 0.642]],
]
MUON_RECORDED = [
    ({"lr": 0.02},
     [[-0.7574836497715001, -1.3212412477205, -0.2150396962035, 0.43235802085874997,
       1.1525512393182495],
      [0.1145391556825, -0.5273883445447499, -0.77075008325125, 0.7561044360704999,
       1.6277360605137496],
      [0.24915305662849999, -1.220371691761, -0.9319555518125624, 1.58492551485625,
       0.21435652623146878]]),
    ({"lr": 0.05, "nesterov": False, "weight_decay": 0.01, "adjust_lr_fn": "match_rms_adamw"},
     [[-0.7497254551062229, -1.325951028968402, -0.2163722325821286, 0.43722433621444207,
       1.1598770780449272],
      [0.11663727283234698, -0.5331705620722742, -0.7662278544323353, 0.7634150946881577,
       1.631302962165566],
      [0.23880336612667294, -1.21057717147505, -0.9298338944864327, 1.6040073844179847,
       0.21934580430353645]]),
]


def _ns_reference(x, coefficients=(3.4445, -4.7750, 2.0315), steps=5):
    # The Newton-Schulz iteration in float64 (PyTorch runs it in bfloat16).
    a, b, c = coefficients
    tall = x.shape[0] > x.shape[1]
    x = x.T if tall else x
    x = x / max(np.linalg.norm(x), 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if tall else x


@pytest.mark.parametrize("h,want", MUON_RECORDED, ids=["nesterov", "plain-match_rms_adamw"])
def test_muon_matches_values_recorded_from_pytorch_and_a_float64_reference(h, want):
    w = nn.Parameter(torch.tensor(MUON_W0, dtype=torch.float64))
    opt = optim.Muon([w], **h)
    ref, buf = np.array(MUON_W0), np.zeros((3, 5))
    lr, mom = h["lr"], 0.95
    scale = 0.2 * 5**0.5 if h.get("adjust_lr_fn") == "match_rms_adamw" else 1.0
    for g in MUON_GRADS:
        w.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        g = np.array(g)
        buf = buf + (1 - mom) * (g - buf)
        upd = g + mom * (buf - g) if h.get("nesterov", True) else buf
        ref = ref * (1 - lr * h.get("weight_decay", 0.1)) - lr * scale * _ns_reference(upd)
    got = w.detach().numpy()
    # bfloat16 keeps 8 bits: the update is right to about 1%, 4 ulps of it here.
    np.testing.assert_allclose(got, want, rtol=0, atol=lr * scale * 2**-6)
    np.testing.assert_allclose(got, ref, rtol=0, atol=lr * scale * 0.1)
    assert list(opt.state[w]) == ["momentum_buffer"]
    assert opt.state[w]["momentum_buffer"].dtype == torch.float64


def test_muon_arguments_and_errors_match_pytorch():
    w = nn.Parameter(torch.ones(2, 3))
    opt = optim.Muon([w])
    assert opt.defaults == {"lr": 1e-3, "weight_decay": 0.1, "momentum": 0.95, "nesterov": True,
                            "ns_coefficients": (3.4445, -4.775, 2.0315), "eps": 1e-7,
                            "ns_steps": 5, "adjust_lr_fn": None}
    for kw, msg in [
        ({"lr": -1}, "Learning rate should be >= 0 but is: -1"),
        ({"momentum": -0.5}, "momentum should be >= 0 but is: -0.5"),
        ({"weight_decay": -1}, "weight decay should be >= 0 but is: -1"),
        ({"adjust_lr_fn": "x"}, "Adjust learning rate function x is not supported"),
    ]:
        with pytest.raises(ValueError) as info:
            optim.Muon([w], **kw)
        assert str(info.value) == msg
    with pytest.raises(ValueError, match=r"Muon only supports 2D parameters whereas we found a "
                                         r"parameter with size: ferrograd.Size\(\[3\]\)"):
        optim.Muon([w, nn.Parameter(torch.ones(3))])
    w.grad = torch.ones(2, 3)
    with pytest.raises(ValueError, match="Number of steps must be less than 100"):
        optim.Muon([w], ns_steps=100).step()


# ----- swap_in_optimizer_params_and_state ------------------------------------------


def _stepped_adam():
    model = nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 2, 3], [4, 5, 6]]))
        model.bias.copy_(torch.tensor([0.5, -0.5]))
    opt = optim.Adam([{"params": [model.weight]}, {"params": [model.bias], "lr": 0.1}], lr=0.01)
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    return model, opt


def test_swap_in_steps_other_params_and_state_then_restores_the_optimizer():
    model, opt = _stepped_adam()
    osd = copy.deepcopy(opt.state_dict())
    osd["param_groups"][0]["lr"] = 0.5
    params = {n: p.detach().clone().requires_grad_(True) for n, p in model.named_parameters()}
    for p in params.values():
        p.grad = torch.ones_like(p)
    own_weight = model.weight.detach().clone()
    own_params = opt.param_groups[0]["params"]
    own_exp_avg = opt.state[model.weight]["exp_avg"].clone()
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: seen.append(o.param_groups[0]["lr"]))
    with optim.swap_in_optimizer_params_and_state(opt, params, osd):
        assert opt.param_groups[0]["params"] == [params["weight"]]
        opt.step()
    assert seen == [0.5]
    # Adam's second step at lr 0.5 on the swapped-in weight (gradient 1 both steps:
    # m = 0.19, v = 0.001999, both bias-corrected to 1, so the step is lr / (1 + eps)).
    np.testing.assert_allclose(params["weight"].detach().numpy(),
                               [[0.49, 1.49, 2.49], [3.49, 4.49, 5.49]], rtol=1e-6)
    np.testing.assert_allclose(osd["state"][0]["exp_avg"].numpy(), 0.19, rtol=1e-6)
    assert osd["state"][0]["step"].item() == 2
    # The live optimizer is as it was.
    assert opt.param_groups[0]["params"] is own_params and opt.param_groups[0]["lr"] == 0.01
    assert opt.state[model.weight]["step"].item() == 1
    np.testing.assert_array_equal(opt.state[model.weight]["exp_avg"].numpy(), own_exp_avg.numpy())
    np.testing.assert_array_equal(model.weight.detach().numpy(), own_weight.numpy())


def test_swap_in_restores_after_an_error_in_the_block():
    model, opt = _stepped_adam()
    osd = copy.deepcopy(opt.state_dict())
    params = dict(model.named_parameters())
    own_state = opt.state
    with pytest.raises(KeyError):
        with optim.swap_in_optimizer_params_and_state(opt, params, osd):
            assert opt.state is not own_state
            raise KeyError("inside")
    assert opt.state is own_state and opt.param_groups[1]["lr"] == 0.1


def test_swap_in_errors_match_pytorch():
    model, opt = _stepped_adam()
    osd = copy.deepcopy(opt.state_dict())
    params = dict(model.named_parameters())
    name = "swap_in_optimizer_params_and_state"
    cases = [
        (dict(osd, state=[1]), f"{name} requires swapin_optim_state['state'] to be a dict "
         "mapping packed parameter ids to per-param state dicts, got list."),
        (dict(osd, param_groups=osd["param_groups"][:1]), "swapin_optim_state has a "
         "different number of parameter groups than the live optimizer."),
        ({"state": {**osd["state"], 7: {}}, "param_groups": osd["param_groups"]},
         f"{name} requires swapin_optim_state['state'] to be keyed only by packed parameter "
         "ids from param_groups[*]['params']; got extra keys [7]."),
        ({"state": osd["state"], "param_groups": [osd["param_groups"][0],
                                                  {**osd["param_groups"][1], "extra": 1}]},
         f"{name} requires optimizer.state_dict()-style param group keys to exactly match the "
         "live optimizer group keys for group 1. Keys only in swap-in: ['extra']. Keys only "
         "in live: []."),
        ([], f"{name} requires a DCP-style optimizer state_dict."),
    ]
    for bad, msg in cases:
        with pytest.raises(RuntimeError) as info:
            with optim.swap_in_optimizer_params_and_state(opt, params, bad):
                pass
        assert str(info.value) == msg
    with pytest.raises(RuntimeError, match=f"{name} requires initialized optimizer state"):
        with optim.swap_in_optimizer_params_and_state(optim.SGD(model.parameters()), params, osd):
            pass


# ----- optim.functional ----------------------------------------------------------------


def _lists(opt, group, *names):
    ps = [p for p in group["params"] if p.grad is not None]
    return ps, [p.grad for p in ps], *[[opt.state[p].get(n) for p in ps] for n in names]


def _h(group, *names, **rename):
    out = {n: group[n] for n in names}
    out.update({new: group[old] for new, old in rename.items()})
    return out


def _betas(group):
    return {"beta1": group["betas"][0], "beta2": group["betas"][1]}


FUNCTIONAL = [
    (optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
     lambda o, g: F.sgd(*_lists(o, g, "momentum_buffer"),
                        **_h(g, "weight_decay", "momentum", "lr", "dampening", "nesterov",
                             "maximize"))),
    (optim.Adam, {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1},
     lambda o, g: F.adam(*_lists(o, g, "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"),
                         **_h(g, "amsgrad", "lr", "weight_decay", "eps", "maximize"),
                         **_betas(g))),
    (optim.AdamW, {"lr": 0.01, "maximize": True},
     lambda o, g: F.adamw(*_lists(o, g, "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"),
                          **_h(g, "amsgrad", "lr", "weight_decay", "eps", "maximize"),
                          **_betas(g))),
    (optim.Adamax, {"lr": 0.01, "weight_decay": 0.1},
     lambda o, g: F.adamax(*_lists(o, g, "exp_avg", "exp_inf", "step"),
                           maximize=g["maximize"], **_h(g, "eps", "lr", "weight_decay"),
                           **_betas(g))),
    (optim.Adagrad, {"lr": 0.1, "lr_decay": 0.01},
     lambda o, g: F.adagrad(*_lists(o, g, "sum", "step"),
                            **_h(g, "lr", "weight_decay", "lr_decay", "eps", "maximize"))),
    (optim.NAdam, {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True},
     lambda o, g: F.nadam(*_lists(o, g, "exp_avg", "exp_avg_sq", "mu_product", "step"),
                          decoupled_weight_decay=True, maximize=g["maximize"],
                          **_h(g, "lr", "weight_decay", "momentum_decay", "eps"),
                          **_betas(g))),
    (optim.RAdam, {"lr": 0.01, "weight_decay": 0.1},
     lambda o, g: F.radam(*_lists(o, g, "exp_avg", "exp_avg_sq", "step"),
                          maximize=g["maximize"], **_h(g, "lr", "weight_decay", "eps"),
                          **_betas(g))),
    (optim.RMSprop, {"lr": 0.01, "momentum": 0.5, "centered": True},
     lambda o, g: F.rmsprop(*_lists(o, g, "square_avg", "grad_avg", "momentum_buffer", "step"),
                            maximize=g["maximize"],
                            **_h(g, "lr", "alpha", "eps", "weight_decay", "momentum",
                                 "centered"))),
    (optim.Adadelta, {"lr": 0.5, "weight_decay": 0.1},
     lambda o, g: F.adadelta(*_lists(o, g, "square_avg", "acc_delta", "step"),
                             **_h(g, "lr", "rho", "eps", "weight_decay", "maximize"))),
    (optim.ASGD, {"lr": 0.05, "t0": 3},
     lambda o, g: F.asgd(*_lists(o, g, "ax", "mu", "eta", "step"), maximize=g["maximize"],
                         **_h(g, "lambd", "lr", "t0", "alpha", "weight_decay"))),
    (optim.Rprop, {"lr": 0.02},
     lambda o, g: F.rprop(*_lists(o, g, "prev", "step_size", "step"), maximize=g["maximize"],
                          step_size_min=g["step_sizes"][0], step_size_max=g["step_sizes"][1],
                          etaminus=g["etas"][0], etaplus=g["etas"][1])),
    (optim.Adafactor, {"lr": 0.05, "weight_decay": 0.1},
     lambda o, g: F.adafactor(*_lists(o, g, "row_var", "col_var", "variance", "step"),
                              eps1=g["eps"][0], eps2=g["eps"][1],
                              **_h(g, "d", "lr", "beta2_decay", "weight_decay", "maximize"))),
    (optim.Muon, {"lr": 0.02},
     lambda o, g: F.muon(*_lists(o, g, "momentum_buffer"), has_complex=False,
                         **_h(g, "lr", "weight_decay", "momentum", "nesterov",
                              "ns_coefficients", "ns_steps", "eps", "adjust_lr_fn"))),
]

F = optim.functional


def test_functional_covers_pytorchs_names():
    # torch.optim.functional.__all__ in PyTorch 2.15.
    assert sorted(F.__all__) == ["adadelta", "adafactor", "adagrad", "adam", "adamax", "adamw",
                                 "asgd", "muon", "nadam", "radam", "rmsprop", "rprop", "sgd",
                                 "sparse_adam"]
    assert {c.__name__.lower() for c, _, _ in FUNCTIONAL} | {"sparseadam"} == {
        n.replace("_", "") for n in F.__all__}


@pytest.mark.parametrize("cls,kw,call", FUNCTIONAL, ids=[f[0].__name__ for f in FUNCTIONAL])
def test_functional_form_continues_the_optimizer_bit_for_bit(cls, kw, call):
    rng = np.random.default_rng(6)
    shapes = [(3, 4), (4, 5)] if cls is optim.Muon else SHAPES[:4]
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(6)]
    runs = []
    for functional in (False, True):
        ps = [nn.Parameter(torch.tensor(a)) for a in init]
        opt = cls(ps, **kw)
        for t, gs in enumerate(grads):
            for p, g in zip(ps, gs):
                p.grad = torch.tensor(g)
            if functional and t >= 2:
                call(opt, opt.param_groups[0])
            else:
                opt.step()
        runs.append((ps, opt))
    (pa, oa), (pb, ob) = runs
    for a, b in zip(pa, pb):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    for a, b in zip(pa, pb):
        for k, v in oa.state[a].items():
            np.testing.assert_array_equal(v.numpy(), ob.state[b][k].numpy(), err_msg=k)


def test_functional_sgd_fills_a_missing_momentum_buffer_and_others_check_steps():
    p = nn.Parameter(torch.tensor([1.0, 2.0]))
    bufs = [None]
    F.sgd([p], [torch.tensor([0.5, -0.5])], bufs, weight_decay=0.0, momentum=0.9, lr=0.1,
          dampening=0.0, nesterov=False, maximize=False)
    np.testing.assert_array_equal(bufs[0].numpy(), [0.5, -0.5])
    np.testing.assert_allclose(p.detach().numpy(), [0.95, 2.05], rtol=1e-6)
    with pytest.raises(RuntimeError, match="`state_steps` argument must contain a list of "
                                           "singleton tensors"):
        F.adam([p], [p.detach()], [p.detach()], [p.detach()], [], [1], amsgrad=False,
               beta1=0.9, beta2=0.999, lr=0.1, weight_decay=0.0, eps=1e-8, maximize=False)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        F.sparse_adam([p], [p.detach()], [p.detach()], [p.detach()], [1], eps=1e-8,
                      beta1=0.9, beta2=0.999, lr=0.1, maximize=False)
