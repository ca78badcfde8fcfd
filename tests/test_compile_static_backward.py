"""ferrograd.compile's static backward: a replay whose recorded backward()
reaches only ops with a VJP rule runs the forward without autograd nodes and
the backward as tape entries. Gradients, .grad accumulation and outputs must
equal eager execution bit for bit, and anything the static path cannot
express (hooks, retain_grad, ops without a rule) must take the dynamic path."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import ferrograd as torch
import ferrograd.nn as nn
import ferrograd.nn.functional as F


def arr(t):
    return t.detach().numpy()


def same(a, b):
    if a is None or b is None:
        return a is None and b is None
    x, y = arr(a), arr(b)
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)


def leaves(values, requires_grad=True):
    return [torch.tensor(v, requires_grad=requires_grad) for v in values]


def run_compiled(fn, make_args, calls=4):
    """Runs ``fn`` eagerly and compiled on fresh copies of the same arguments
    ``calls`` times; returns the compiled function and each call's pair of
    (result, gradients of the tensor arguments)."""
    c = torch.compile(fn, fullgraph=True)
    pairs = []
    for i in range(calls):
        ea, ca = make_args(i), make_args(i)
        re, rc = fn(*ea), c(*ca)
        pairs.append(((re, [a.grad for a in ea if isinstance(a, torch.Tensor)]),
                      (rc, [a.grad for a in ca if isinstance(a, torch.Tensor)])))
    return c, pairs


def assert_pairs_equal(pairs):
    for (re, ge), (rc, gc) in pairs:
        assert same(re, rc)
        assert len(ge) == len(gc)
        for a, b in zip(ge, gc):
            assert same(a, b)


def assert_static(c):
    (tape,) = c.tapes
    s = tape.stats()
    assert s["static"], s["static_reason"]
    assert s["last_static"]
    assert s["last_replay_nodes"] == 0
    return s


RNG = np.random.default_rng(0)


def data(shape, seed, lo=-1.5, hi=1.5):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


UNARY = {
    "exp": lambda x: x.exp(),
    "log": lambda x: (x.abs() + 0.5).log(),
    "sin": torch.sin,
    "cos": torch.cos,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
    "sqrt": lambda x: (x * x + 0.25).sqrt(),
    "neg": lambda x: -x,
    "abs": torch.abs,
    "reciprocal": lambda x: (x.abs() + 0.5).reciprocal(),
    "expm1": torch.expm1,
    "log1p": lambda x: (x.abs()).log1p(),
    "rsqrt": lambda x: (x.abs() + 0.5).rsqrt(),
    "scalar add": lambda x: x + 1.25,
    "scalar radd": lambda x: 1.25 + x,
    "scalar sub": lambda x: x - 0.75,
    "scalar rsub": lambda x: 0.75 - x,
    "scalar mul": lambda x: x * 2.5,
    "scalar rmul": lambda x: 2.5 * x,
    "scalar div": lambda x: x / 3.0,
    "scalar rdiv": lambda x: 2.0 / (x.abs() + 0.5),
    "pow 2": lambda x: x**2,
    "pow 3.5": lambda x: (x.abs() + 0.1) ** 3.5,
    "rpow": lambda x: 2.0**x,
    "sum dim": lambda x: x.sum(-1, keepdim=True) * x,
    "mean dim": lambda x: x.mean(0) * x,
    "mean": lambda x: x.mean() * x,
    "reshape": lambda x: x.reshape(-1).sin(),
    "view": lambda x: x.view(-1).cos(),
    "t": lambda x: x.t().exp() if x.ndim == 2 else x.exp(),
    "transpose": lambda x: x.transpose(0, -1).tanh(),
    "unsqueeze": lambda x: x.unsqueeze(0).sigmoid(),
    "index int": lambda x: x[0] * x[-1],
    "slice": lambda x: x[..., 1:].sin() if x.shape[-1] > 1 else x.sin(),
    "chunk": lambda x: torch.cat(list(reversed(x.chunk(2, -1))), -1) * x if x.shape[-1] % 2 == 0 else x * x,
    "cat": lambda x: torch.cat([x, x.exp()], 0),
    "stack": lambda x: torch.stack([x, x.sin(), x], 0),
    "expand": lambda x: x.unsqueeze(0).expand(3, *x.shape).exp(),
}

# `2 / x` is `x.reciprocal() * 2` in PyTorch's graph: its first node saves
# an intermediate the tape does not hold, so it keeps the engine.
DYNAMIC = {"scalar rdiv"}

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=8, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_unary_vjp_rules_match_eager(name, shape, seed):
    op = UNARY[name]

    def fn(x):
        y = op(x)
        loss = (y * y).sum()
        loss.backward()
        return loss

    c, pairs = run_compiled(fn, lambda i: leaves([data(shape, seed + i)]))
    assert_pairs_equal(pairs)
    if name in DYNAMIC:
        # Correct through the engine; named in the tape's reason.
        assert not c.tapes[0].stats()["static"]
    else:
        assert_static(c)


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b.abs() + 0.5),
    "pow": lambda a, b: (a.abs() + 0.5) ** b,
    "maximum mix": lambda a, b: (a * b).exp() + a.sin() * b.cos(),
}


@st.composite
def broadcast_pair(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    # The second operand drops leading dimensions and sets some to 1.
    k = draw(st.integers(0, len(shape) - 1))
    other = [1 if draw(st.booleans()) else n for n in shape[k:]]
    if draw(st.booleans()):
        return tuple(shape), tuple(other)
    return tuple(other), tuple(shape)


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=10, deadline=None)
@given(shapes=broadcast_pair(), seed=st.integers(0, 2**16))
def test_binary_vjp_rules_with_broadcasting_match_eager(name, shapes, seed):
    op = BINARY[name]

    def fn(a, b):
        loss = op(a, b).tanh().sum()
        loss.backward()
        return loss

    c, pairs = run_compiled(fn, lambda i: leaves([data(shapes[0], seed + i), data(shapes[1], seed + 99 + i)]))
    assert_pairs_equal(pairs)
    assert_static(c)


@pytest.mark.parametrize("bias", [True, False])
@settings(max_examples=8, deadline=None)
@given(n=st.integers(1, 5), k=st.integers(1, 5), m=st.integers(1, 5), seed=st.integers(0, 2**16))
# Draws where forming linear's weight gradient as g^T @ x instead of the rule's
# x^T @ g changed the last bit (the in-place accumulation must use the rule's frame).
@example(n=2, k=1, m=5, seed=7)
@example(n=2, k=1, m=5, seed=2)
def test_products_match_eager(bias, n, k, m, seed):
    def fn(x, w, b):
        h = F.linear(x, w, b if bias else None)
        loss = (h.sigmoid() @ w).mm(x.t()).sum() + torch.matmul(x, w.t()).mean()
        loss.backward()
        return loss

    def args(i):
        return leaves([data((n, k), seed + i), data((m, k), seed + 7 + i), data((m,), seed + 9 + i)])

    c, pairs = run_compiled(fn, args)
    for (re, ge), (rc, gc) in pairs:
        assert same(re, rc)
        for a, b in zip(ge[:2], gc[:2]):
            assert same(a, b)
        assert same(ge[2], gc[2])
    assert_static(c)


def test_forward_replay_makes_no_nodes_and_grads_follow_inputs():
    def fn(x, w):
        y = (x * w).sin().exp() * 0.5 + x
        loss = y.sum()
        loss.backward()
        return loss

    c = torch.compile(fn)
    for i in range(5):
        x1, w1 = leaves([data((3, 4), i), data((4,), 50 + i)])
        x2, w2 = leaves([data((3, 4), i), data((4,), 50 + i)])
        assert same(fn(x1, w1), c(x2, w2))
        assert same(x1.grad, x2.grad) and same(w1.grad, w2.grad)
    s = assert_static(c)
    assert s["vjp_entries"] >= 6
    # The four elementwise entries after the broadcast product (which takes
    # the general path) run as one fused group, forward and backward.
    assert s["fused_groups"] == 1 and s["fused_entries"] == 4
    assert s["last_fused_groups"] == 1


def test_number_argument_reaches_the_vjp_of_scalar_ops():
    # Rules that keep the number (x * s, x / s, x ** s, s ** x) must use this
    # call's value, not the capture's.
    def fn(x, s):
        loss = ((x * s) / s + x**s + s**x).sum()
        loss.backward()
        return loss

    c = torch.compile(fn)
    for s in [1.5, 2.0, 2.5, 3.25, 0.5]:
        (x1,) = leaves([data((4,), 3, 0.1, 2.0)])
        (x2,) = leaves([data((4,), 3, 0.1, 2.0)])
        assert same(fn(x1, s), c(x2, s))
        assert same(x1.grad, x2.grad)
    assert len(c.tapes) == 1
    assert_static(c)


def test_grad_accumulates_into_existing_grad_in_place_like_eager():
    w_e = torch.tensor(data((3,), 1), requires_grad=True)
    w_c = torch.tensor(data((3,), 1), requires_grad=True)

    def make(w):
        def fn(x):
            # w is used twice: its two contributions add up before .grad.
            loss = (w * x + w.exp()).sum()
            loss.backward()
            return loss

        return fn

    fe, fc = make(w_e), torch.compile(make(w_c))
    first_e = first_c = None
    for i in range(5):
        x = torch.tensor(data((3,), 10 + i))
        assert same(fe(x), fc(x))
        assert same(w_e.grad, w_c.grad)
        if i == 0:
            first_e, first_c = w_e.grad, w_c.grad
    # The first backward creates .grad, the others add into that tensor.
    assert same(first_e, w_e.grad) and same(first_c, w_c.grad)
    assert_static(fc)


def test_grad_none_then_new_tensor_each_call():
    w_c = torch.tensor(data((3,), 1), requires_grad=True)

    def fn(x):
        w_c.grad = None
        loss = (w_c * x).tanh().sum()
        loss.backward()
        return loss

    c = torch.compile(fn)
    grads = []
    for i in range(4):
        c(torch.tensor(data((3,), i)))
        grads.append(w_c.grad)
    assert len({id(g) for g in grads}) == 4
    for i, g in enumerate(grads):
        w = torch.tensor(data((3,), 1), requires_grad=True)
        (w * torch.tensor(data((3,), i))).tanh().sum().backward()
        assert same(g, w.grad)


@pytest.mark.parametrize("zero", ["none", "zeros"])
def test_training_step_with_optimizer_matches_eager(zero):
    def make():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad(set_to_none=zero == "none")
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        return model, step

    m1, s1 = make()
    m2, s2 = make()
    c2 = torch.compile(s2)
    rng = np.random.default_rng(3)
    for _ in range(6):
        x = torch.tensor(rng.standard_normal((4, 5)).astype(np.float32))
        y = torch.tensor(rng.standard_normal((4, 1)).astype(np.float32))
        assert same(s1(x, y), c2(x, y))
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert same(p, q)
        assert same(p.grad, q.grad)
    assert_static(c2)


def test_check_option_passes_on_the_static_path():
    w = torch.tensor(data((4,), 2), requires_grad=True)

    def fn(x):
        w.grad = None
        loss = (w.sigmoid() * x).sum()
        loss.backward()
        return loss

    c = torch.compile(fn, check=True)
    for i in range(4):
        c(torch.tensor(data((4,), i)))
    assert_static(c)


def test_leaf_hook_takes_the_dynamic_path():
    x_c = torch.tensor(data((3,), 0), requires_grad=True)
    x_e = torch.tensor(data((3,), 0), requires_grad=True)

    def make(x):
        def fn(a):
            loss = (x * a).exp().sum()
            loss.backward()
            return loss

        return fn

    fe, fc = make(x_e), torch.compile(make(x_c))
    for i in range(3):
        a = torch.tensor(data((3,), i))
        assert same(fe(a), fc(a))
    assert_static(fc)
    # A hook added later must run: the replay falls back to the engine.
    seen = []
    for x in (x_e, x_c):
        x.register_hook(lambda g: seen.append(1) or g * 2)
    for i in range(2):
        a = torch.tensor(data((3,), i))
        assert same(fe(a), fc(a))
        assert same(x_e.grad, x_c.grad)
    assert len(seen) == 4
    s = fc.tapes[0].stats()
    assert not s["last_static"] and s["last_replay_nodes"] > 0


def test_requires_grad_change_of_a_constant_takes_the_dynamic_path():
    w = torch.tensor(data((3,), 0), requires_grad=True)
    b = torch.tensor(data((3,), 1))

    def fn(x):
        w.grad = None
        loss = (w * x + b).sum()
        loss.backward()
        return loss

    c = torch.compile(fn)
    for i in range(3):
        c(torch.tensor(data((3,), i)))
    assert_static(c)
    # Now b needs a gradient the static plan does not compute: the engine runs.
    b.requires_grad_(True)
    c(torch.tensor(data((3,), 5)))
    assert same(b.grad, torch.ones(3, dtype=torch.float64))
    assert same(w.grad, torch.tensor(data((3,), 5)))
    assert not c.tapes[0].stats()["last_static"]


def test_retain_grad_is_refused_and_unsupported_rule_keeps_the_dynamic_path():
    # A replay's tensors are new, so `retain_grad` (a flag on the capture
    # call's tensor) has no replay rule: the call runs eagerly, with the eager
    # gradient, and the warning names it.
    def with_retain(x):
        y = x.exp()
        y.retain_grad()
        loss = (y * y).sum()
        loss.backward()
        return loss, y.grad

    c = torch.compile(with_retain)
    with pytest.warns(RuntimeWarning, match="`retain_grad` has no replay rule"):
        for i in range(3):
            (x,) = leaves([data((3,), i)])
            _, g = c(x)
            assert same(g, 2 * x.detach().exp())
    assert not c.tapes

    def with_cumsum(x):
        loss = x.cumsum(0).sin().sum()
        loss.backward()
        return loss

    c2 = torch.compile(with_cumsum)
    for i in range(3):
        (x1,) = leaves([data((4,), i)])
        (x2,) = leaves([data((4,), i)])
        assert same(with_cumsum(x1), c2(x2))
        assert same(x1.grad, x2.grad)
    s = c2.tapes[0].stats()
    assert not s["static"] and "CumsumBackward0" in s["static_reason"]
    assert s["last_replay_nodes"] > 0


def test_outputs_stay_fresh_with_the_buffer_pool():
    def fn(x):
        y = (x * 2.0).exp()
        z = y.sin() * 0.5
        loss = z.sum()
        loss.backward()
        return loss, z, y

    c = torch.compile(fn)
    outs = []
    for i in range(6):
        (x,) = leaves([data((8,), i)])
        outs.append((i, c(x)))
    for i, (loss, z, y) in outs:
        (x,) = leaves([data((8,), i)])
        el, ez, ey = fn(x)
        assert same(loss, el) and same(z, ez) and same(y, ey)


def test_float32_chain_matches_eager_bit_for_bit():
    # The workload of the compile benchmark, small.
    def make(x):
        cycle = [lambda y: y * 0.5, lambda y: y + x, torch.sin, torch.exp, lambda y: y * x]

        def fn():
            x.grad = None
            y = x
            for i in range(40):
                # A view between the ops keeps each one apart: this test is
                # about the one-op fast path, not fused runs.
                y = cycle[i % 5](y).view(16)
            loss = y.sum()
            loss.backward()
            return loss

        return fn

    v = np.random.default_rng(0).uniform(-1, 1, 16).astype(np.float32)
    xe, xc = torch.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    fe, fc = make(xe), torch.compile(make(xc))
    for _ in range(4):
        assert same(fe(), fc())
        assert same(xe.grad, xc.grad)
    s = assert_static(fc)
    assert s["fused_groups"] == 0
    assert s["last_fast_forward"] == 40


def test_returned_loss_is_detached_on_the_static_path():
    def fn(x):
        loss = (x * x).sum()
        loss.backward()
        return loss

    c = torch.compile(fn)
    for i in range(3):
        (x,) = leaves([data((3,), i)])
        r = c(x)
    assert_static(c)
    # Its graph was freed by backward() eagerly; the replay never built one.
    assert not r.requires_grad and r.grad_fn is None


def test_result_with_graph_not_differentiated_keeps_the_dynamic_path():
    def fn(x):
        y = x.exp()
        loss = x.sin().sum()
        loss.backward()
        return loss, y

    c = torch.compile(fn)
    for i in range(3):
        (x,) = leaves([data((3,), i)])
        _, y = c(x)
    s = c.tapes[0].stats()
    assert not s["static"]
    assert y.requires_grad and y.grad_fn is not None


def test_detached_output_is_replayed_fresh():
    # `detach()` is an entry of the tape: each replay returns a detached alias
    # of that call's result, never the capture call's value.
    f = torch.compile(lambda x: (x * 2).detach())
    outs = [f(torch.full((2,), float(i))) for i in range(4)]
    for i, o in enumerate(outs):
        assert same(o, torch.full((2,), 2.0 * i))
    assert len(f.tapes) == 1 and "detach" in f.tapes[0].ops

