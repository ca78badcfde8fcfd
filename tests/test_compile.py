"""ferrograd.compile: compiled results equal eager ones bit for bit, and every
trap (numbers, shapes, aliasing, .item(), cache bound, guards) has a test."""


import warnings

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd._dynamo import config


def same(a, b):
    return np.array_equal(a.detach().numpy(), b.detach().numpy())


def clone_params(model):
    return [p.detach().clone() for p in model.parameters()]


def run_pair(make, steps, data):
    """Runs `steps` training steps eagerly and compiled from identical
    starting states; returns both loss lists and both models."""
    torch.manual_seed(0)
    m1, s1 = make()
    torch.manual_seed(0)
    m2, s2 = make()
    c2 = torch.compile(s2)
    l1 = [s1(*data(i)) for i in range(steps)]
    l2 = [c2(*data(i)) for i in range(steps)]
    return l1, l2, m1, m2, c2


def make_mlp(opt_cls, **kw):
    def make():
        model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))
        opt = opt_cls(model.parameters(), **kw)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return model, step

    return make


DATA_RNG = np.random.default_rng(0)
XS = [torch.tensor(DATA_RNG.standard_normal((8, 12)).astype(np.float32)) for _ in range(6)]
YS = [torch.tensor(DATA_RNG.integers(0, 4, 8)) for _ in range(6)]


@pytest.mark.parametrize(
    "opt_cls,kw",
    [(torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}), (torch.optim.Adam, {"lr": 0.01})],
)
def test_mlp_training_matches_eager_bit_for_bit(opt_cls, kw):
    l1, l2, m1, m2, c2 = run_pair(make_mlp(opt_cls, **kw), 6, lambda i: (XS[i], YS[i]))
    assert len(c2.tapes) == 1
    assert "backward" in c2.tapes[0].ops and any(o.endswith(".step") for o in c2.tapes[0].ops)
    for a, b in zip(l1, l2):
        assert same(a, b)
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert same(p, q)
        assert same(p.grad, q.grad)


def test_lr_schedule_reaches_replayed_steps():
    # The optimizer step is a recorded Python call, so a scheduler changing
    # the learning rate between calls acts as in eager mode.
    def make():
        model = nn.Linear(12, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return model, step, None, sched

    torch.manual_seed(0)
    m1, s1, _, sch1 = make()
    torch.manual_seed(0)
    m2, s2, _, sch2 = make()
    c2 = torch.compile(s2)
    l1, l2 = [], []
    for i in range(5):
        l1.append(s1(XS[i], YS[i]))
        sch1.step()
        l2.append(c2(XS[i], YS[i]))
        sch2.step()
    for a, b in zip(l1, l2):
        assert same(a, b)
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert same(p, q)


def test_lstm_cell_unrolled_matches_eager():
    def make():
        cell, head = nn.LSTMCell(5, 6), nn.Linear(6, 1)
        opt = torch.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            h, c = torch.zeros(3, 6), torch.zeros(3, 6)
            for t in range(x.shape[0]):
                h, c = cell(x[t], (h, c))
            loss = ((head(h) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        return nn.ModuleList([cell, head]), step

    rng = np.random.default_rng(1)
    xs = [torch.tensor(rng.standard_normal((4, 3, 5)).astype(np.float32)) for _ in range(4)]
    ys = [torch.tensor(rng.standard_normal((3, 1)).astype(np.float32)) for _ in range(4)]
    l1, l2, m1, m2, c2 = run_pair(make, 4, lambda i: (xs[i], ys[i]))
    assert len(c2.tapes) == 1
    for a, b in zip(l1, l2):
        assert same(a, b)
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert same(p, q)


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_encoder_layer_step_is_captured_and_matches_eager(batch_first):
    # layer_norm records a replay rule, so the whole step is one tape
    # (replayed through the engine: layer_norm's node saves intermediates).
    def make():
        layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=batch_first)
        opt = torch.optim.SGD(layer.parameters(), lr=0.05)

        def step(x):
            opt.zero_grad()
            loss = layer(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        return layer, step

    rng = np.random.default_rng(3)
    xs = [torch.tensor(rng.standard_normal((6, 2, 16)).astype(np.float32)) for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        l1, l2, m1, m2, c2 = run_pair(make, 4, lambda i: (xs[i],))
    assert len(c2.tapes) == 1 and "layer_norm" in c2.tapes[0].ops
    for a, b in zip(l1, l2):
        assert same(a, b)
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert same(p, q)


def scalar_chain(x, s):
    y = x
    for _ in range(20):
        y = (y * s).tanh() + 0.5
    loss = y.sum()
    loss.backward()
    return loss


def test_scalar_chain_and_python_number_is_an_input():
    x1 = torch.tensor([0.3, -0.2], requires_grad=True)
    x2 = torch.tensor([0.3, -0.2], requires_grad=True)
    f = torch.compile(scalar_chain)
    for s in [0.5, 0.7, 1.1, 0.7]:
        x1.grad = None
        x2.grad = None
        a = scalar_chain(x1, s)
        b = f(x2, s)
        assert same(a, b)
        assert same(x1.grad, x2.grad)
    # A new value of a number handed straight to ops replays the same tape.
    assert len(f.tapes) == 1


def test_number_used_in_python_arithmetic_is_specialised_not_baked():
    def g(x, s):
        return x * (s * 2.0)

    f = torch.compile(g)
    x = torch.ones(3)
    for s in [1.0, 2.0, 3.0, 2.0]:
        assert same(f(x, s), g(x, s))
    # One tape per value: the value is a guard, never a stale constant.
    assert len(f.tapes) == 2


def test_int_number_argument():
    def g(x, n):
        return x * n

    f = torch.compile(g)
    x = torch.arange(4)
    for n in [2, 3, 5]:
        r = f(x, n)
        assert r.dtype == torch.int64
        assert same(r, g(x, n))
    assert len(f.tapes) == 1


def test_shape_change_records_a_new_tape():
    f = torch.compile(lambda x: (x * 2).sum())
    for n in [3, 3, 3, 5, 5, 3]:
        x = torch.arange(float(n))
        assert same(f(x), (x * 2).sum())
    assert len(f.tapes) == 2


def test_every_tensor_argument_is_an_input():
    # tinygrad #10850: an argument must never be dropped for the capture's.
    f = torch.compile(lambda a, b: a * 2 + b)
    for i in range(4):
        a, b = torch.full((3,), float(i)), torch.full((3,), 10.0 * i)
        assert same(f(a, b), a * 2 + b)
    f2 = torch.compile(lambda a, b: a + 1)  # b unused: still no stale state
    for i in range(3):
        assert same(f2(torch.full((2,), float(i)), torch.ones(2)), torch.full((2,), i + 1.0))


def test_outputs_are_fresh_every_call():
    f = torch.compile(lambda x: x.exp() * 2)
    outs = [f(torch.full((4,), float(i))) for i in range(5)]
    for i, o in enumerate(outs):
        assert same(o, torch.full((4,), float(i)).exp() * 2)
    assert len({id(o) for o in outs}) == 5


def test_item_inside_falls_back_loudly_or_raises():
    def g(x):
        y = x * 2
        if y.sum().item() > 0:
            return y
        return -y

    f = torch.compile(g)
    f(torch.ones(2))
    with pytest.warns(RuntimeWarning, match="item"):
        r = f(torch.ones(2))
    assert same(r, torch.full((2,), 2.0))
    assert same(f(-torch.ones(2)), torch.full((2,), 2.0))  # eager from now on: correct
    fg = torch.compile(g, fullgraph=True)
    fg(torch.ones(2))
    with pytest.raises(RuntimeError, match="item"):
        fg(torch.ones(2))


@pytest.mark.parametrize("read", [bool, lambda t: t.tolist(), lambda t: t.numpy(), float])
def test_reads_into_python_are_refused(read):
    def g(x):
        y = (x * 2).sum()
        read(y.detach())
        return y

    f = torch.compile(g, fullgraph=True)
    f(torch.ones(2))
    with pytest.raises(RuntimeError, match="reads a tensor's value"):
        f(torch.ones(2))


def test_op_without_replay_rule_names_it():
    # `from_numpy` shares a NumPy array's memory: the object is Python's, so a
    # replay could not make it again.
    arr = np.ones(3, np.float32)
    f = torch.compile(lambda x: torch.from_numpy(arr) * x, fullgraph=True)
    f(torch.ones(3))
    with pytest.raises(RuntimeError, match="`from_numpy` has no replay rule"):
        f(torch.ones(3))


def test_cache_bound_warns_and_names_the_guard():
    old = config.cache_size_limit
    config.cache_size_limit = 2
    try:
        f = torch.compile(lambda x: x + 1)
        f(torch.zeros(1))
        with pytest.warns(RuntimeWarning, match="shape of tensor argument"):
            for n in range(1, 6):
                assert same(f(torch.zeros(n)), torch.ones(n))
        assert len(f.tapes) == 2
    finally:
        config.cache_size_limit = old


def test_requires_grad_change_is_a_guard():
    def g(x):
        y = (x * 3).sum()
        if y.requires_grad:
            y.backward()
        return y

    f = torch.compile(g)
    a = torch.ones(2)
    f(a)
    f(a)
    b = torch.ones(2, requires_grad=True)
    f(b)
    assert same(b.grad, torch.full((2,), 3.0))
    f(b)
    assert same(b.grad, torch.full((2,), 6.0))  # accumulates as eager
    assert len(f.tapes) == 2


def test_grad_mode_change_is_a_guard():
    w = torch.ones(2, requires_grad=True)
    f = torch.compile(lambda x: x * w)
    f(torch.ones(2))
    assert f(torch.ones(2)).requires_grad
    with torch.no_grad():
        r = f(torch.ones(2))
        r = f(torch.ones(2))
    assert not r.requires_grad
    assert len(f.tapes) == 2


def test_no_grad_block_inside_is_replayed():
    w = torch.ones(3, requires_grad=True)

    def g(x):
        loss = (w * x).sum()
        loss.backward()
        with torch.no_grad():
            w.sub_(0.1 * w.grad)
        w.grad = None
        return loss

    f = torch.compile(g)
    for _ in range(4):
        f(torch.ones(3))
    assert np.allclose(w.detach().numpy(), 1 - 0.4)
    assert "set_grad_enabled" in f.tapes[0].ops


def test_value_kept_in_python_state_is_refused():
    store = []

    def g(x):
        y = x * 2
        store.append(y)
        return y + 1

    f = torch.compile(g)
    f(torch.ones(1))
    with pytest.warns(RuntimeWarning, match="still referenced"):
        f(torch.ones(1))


def test_check_option_compares_with_eager():
    make = make_mlp(torch.optim.SGD, lr=0.1)
    torch.manual_seed(0)
    m1, s1 = make()
    torch.manual_seed(0)
    m2, s2 = make()
    c2 = torch.compile(s2, options={"check": True})
    for i in range(5):
        assert same(s1(XS[i], YS[i]), c2(XS[i], YS[i]))
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert same(p, q)


def test_compile_signature_and_refusals():
    @torch.compile(mode="reduce-overhead", dynamic=False)
    def g(x):
        return x + 1

    assert same(g(torch.zeros(2)), torch.ones(2))
    with pytest.raises(ValueError, match="backend"):
        torch.compile(lambda x: x, backend="cudagraphs")
    with pytest.raises(RuntimeError, match="mode"):
        torch.compile(lambda x: x, mode="fastest")
    with pytest.raises(ValueError, match="option"):
        torch.compile(lambda x: x, options={"triton.cudagraphs": True})
    h = torch.compile(lambda x: x + 1, disable=True)
    h(torch.zeros(1))
    h(torch.zeros(1))
    assert h.tapes == []


def test_exception_inside_capture_leaves_no_capture_running():
    def g(x):
        if g.fail:
            raise ValueError("boom")
        return x * 2

    g.fail = False
    f = torch.compile(g)
    f(torch.ones(1))
    g.fail = True
    with pytest.raises(ValueError):
        f(torch.ones(1))
    assert not torch._C._capture_active()
    assert same(torch.ones(1) * 3, torch.full((1,), 3.0))


def test_check_option_catches_a_python_side_effect_the_tape_misses():
    # A number read from Python state inside the function is a constant of
    # the tape; check=True is how a user finds such a difference.
    count = [0]

    def g(x):
        count[0] += 1
        return x * float(count[0])

    f = torch.compile(g, check=True)
    f(torch.ones(2))
    f(torch.ones(2))
    with pytest.raises(RuntimeError, match="differs between replay and eager"):
        f(torch.ones(2))


def test_dtype_conversion_inside_is_replayed():
    # `.double()` / `.to(dtype)` / `.float()` are ops of the tape: a mixed
    # precision step compiles to one tape and matches eager bit for bit.
    w = torch.tensor(np.linspace(-1, 1, 6).astype(np.float32), requires_grad=True)

    def step(x):
        w.grad = None
        y = (w * x).double().exp().to(torch.float32).float()
        loss = (y * y.double().float()).sum()
        loss.backward()
        return loss, w.grad.clone()

    c = torch.compile(step, fullgraph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(4):
            x = torch.tensor(np.full(6, 0.5 + i, np.float32))
            (le, ge), (lc, gc) = step(x), c(x)
            assert same(le, lc) and same(ge, gc)
            assert lc.dtype == torch.float32 and gc.dtype == torch.float32
    assert len(c.tapes) == 1
