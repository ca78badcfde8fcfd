"""ferrograd.compile's fused groups: on the static path, a run of
consecutive elementwise ops over one shape and float dtype runs as one fused
program, forward and backward. Results and gradients must stay bit-for-bit
those of eager execution, whatever the run reads from outside, hands on to
later ops, or adds to a gradient its input already holds."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as torch


def same(a, b):
    if a is None or b is None:
        return a is None and b is None
    x, y = a.detach().numpy(), b.detach().numpy()
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)


def stats(c):
    (tape,) = c.tapes
    s = tape.stats()
    assert s["static"], s["static_reason"]
    assert s["last_static"] and s["last_replay_nodes"] == 0
    return s


def pair(values, dtype):
    """Two leaves with the same values: one for eager, one for compiled."""
    return [torch.tensor(np.asarray(values), dtype=dtype, requires_grad=True) for _ in range(2)]


def check(make, args_of, calls=4):
    """Runs ``make()`` eagerly and compiled on equal arguments and compares
    results and the arguments' gradients bit for bit."""
    fe, fc = make(), torch.compile(make(), fullgraph=True)
    for i in range(calls):
        ea, ca = args_of(i), args_of(i)
        re, rc = fe(*ea), fc(*ca)
        re = re if isinstance(re, tuple) else (re,)
        rc = rc if isinstance(rc, tuple) else (rc,)
        for a, b in zip(re, rc):
            assert same(a, b), (i, a, b)
        for a, b in zip(ea, ca):
            if isinstance(a, torch.Tensor):
                assert same(a.grad, b.grad), (i, a.grad, b.grad)
    return stats(fc)


CYCLE = [lambda y, x: y * 0.5, lambda y, x: y + x, lambda y, x: y.sin(),
         lambda y, x: y.exp(), lambda y, x: y * x]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [1, 16, 300, 70_000])
def test_a_long_chain_is_one_group_and_equals_eager(dtype, n):
    def make():
        def fn(x):
            y = x
            for i in range(200):
                y = CYCLE[i % 5](y, x)
            loss = y.sum()
            loss.backward()
            return loss
        return fn

    v = np.random.default_rng(n).uniform(-1, 1, n)
    s = check(make, lambda i: [torch.tensor(v + 0.01 * i, dtype=dtype, requires_grad=True)])
    assert s["fused_groups"] == 1 and s["fused_entries"] == 200
    assert s["last_fused_groups"] == 1


UNARY = [
    lambda y: -y, torch.exp, lambda y: (y.abs() + 0.5).log(), torch.sin, torch.cos,
    torch.tanh, torch.sigmoid, torch.relu, lambda y: (y * y + 0.25).sqrt(), torch.abs,
    lambda y: (y.abs() + 0.5).reciprocal(), lambda y: (y.abs() + 0.5).rsqrt(), torch.expm1,
    lambda y: (y.abs() + 0.5).log1p(),
]
BINARY = [
    lambda y, x: y + x, lambda y, x: y - x, lambda y, x: y * x,
    lambda y, x: y / (x.abs() + 1.0), lambda y, x: y + 0.25, lambda y, x: y - 3,
    lambda y, x: y * -1.5, lambda y, x: y / 4.0, lambda y, x: 2.0 - y,
    lambda y, x: (y.abs() + 0.5) ** 1.5, lambda y, x: 1.25 ** y, lambda y, x: y ** 2.0,
]


@settings(max_examples=30)
@given(
    ops=st.lists(st.tuples(st.booleans(), st.integers(0, 100)), min_size=2, max_size=40),
    n=st.sampled_from([1, 5, 16, 129]),
    f64=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_runs_of_every_op_equal_eager(ops, n, f64, seed):
    dtype = torch.float64 if f64 else torch.float32

    def make():
        def fn(x, w):
            y = x
            for binary, k in ops:
                y = BINARY[k % len(BINARY)](y, w) if binary else UNARY[k % len(UNARY)](y)
                # Keep values in a range where every op stays finite.
                y = torch.tanh(y)
            loss = y.sum()
            loss.backward()
            return loss
        return fn

    r = np.random.default_rng(seed)
    xv, wv = r.uniform(-1, 1, n), r.uniform(-1, 1, n)
    s = check(make, lambda i: [torch.tensor(xv, dtype=dtype, requires_grad=True),
                               torch.tensor(wv + i, dtype=dtype, requires_grad=True)], calls=3)
    assert s["fused_groups"] >= 1 and s["last_fused_groups"] == s["fused_groups"]


def test_values_used_after_the_run_are_materialised_and_returned_fresh():
    # `a` and `b` live inside the run but are also read by a product and
    # returned: they must exist as tensors, and a later call must not write
    # into tensors an earlier one returned.
    def make():
        def fn(x, m):
            a = x.sin() * 2.0
            b = a.exp() + x
            c = (b * a).tanh()
            loss = (a @ m).sum() + c.sum()
            loss.backward()
            return a, b, loss
        return fn

    m = torch.tensor(np.random.default_rng(1).uniform(-1, 1, (4, 3)))
    fc = torch.compile(make(), fullgraph=True)
    kept = []
    for i in range(4):
        xe = torch.tensor(np.linspace(-1, 1, 8).reshape(2, 4) + i, requires_grad=True)
        xc = torch.tensor(np.linspace(-1, 1, 8).reshape(2, 4) + i, requires_grad=True)
        re = make()(xe, m)
        rc = fc(xc, m)
        for a, b in zip(re, rc):
            assert same(a, b)
        assert same(xe.grad, xc.grad)
        kept.append((rc[0].detach().numpy().copy(), rc[0]))
    for snapshot, t in kept:
        assert np.array_equal(snapshot, t.detach().numpy())
    assert stats(fc)["fused_groups"] >= 1


def test_an_input_that_already_holds_a_gradient_adds_in_engine_order():
    # x feeds a product after the run (whose gradient reaches x first) and
    # the run itself; w is read inside the run twice and by a product
    # before it. Float32 and values of mixed magnitude make any change in
    # the order of additions show.
    def make():
        def fn(x, w, m):
            p = (w * 1e4) @ m
            y = x * w
            y = y.sin() + x * 3.0 + w * 1e-3
            y = y * y - x
            q = (x * 1e3) @ m
            loss = y.sum() + p.sum() + q.sum()
            loss.backward()
            return loss
        return fn

    m = torch.tensor(np.random.default_rng(2).uniform(-1, 1, (8, 2)).astype(np.float32))
    r = np.random.default_rng(3)
    xv = r.uniform(-1, 1, (1, 8)).astype(np.float32)
    wv = r.uniform(-1, 1, (1, 8)).astype(np.float32)
    s = check(make, lambda i: [torch.tensor(xv + i, requires_grad=True),
                               torch.tensor(wv, requires_grad=True), m])
    assert s["fused_groups"] >= 1


def test_accumulates_into_an_existing_grad_like_eager():
    def make():
        def fn(x):
            loss = ((x * 0.5).sin() * x).sum()
            loss.backward()
            return loss
        return fn

    fe, fc = make(), torch.compile(make(), fullgraph=True)
    xe, xc = pair(np.linspace(-2, 2, 16).astype(np.float32), torch.float32)
    for _ in range(4):  # .grad is not cleared: each call adds to it
        assert same(fe(xe), fc(xc))
        assert same(xe.grad, xc.grad)
    assert stats(fc)["last_fused_groups"] == 1


def test_a_number_argument_is_read_on_every_call():
    def fn(x, s):
        loss = ((x * s).exp() - s).sin().sum()
        loss.backward()
        return loss

    fc = torch.compile(fn, fullgraph=True)
    for s in [0.5, 1.5, -2.0, 0.25]:
        xe, xc = pair(np.linspace(-1, 1, 16), torch.float64)
        assert same(fn(xe, s), fc(xc, s))
        assert same(xe.grad, xc.grad)
    assert len(fc.tapes) == 1
    assert stats(fc)["last_fused_groups"] == 1


def test_no_grad_inside_a_run_stops_the_gradient():
    # z is computed under no_grad from y: eagerly no gradient flows through
    # it, so the fused reverse pass must not send one either.
    def make():
        def fn(x):
            y = x.sin() * 2.0
            with torch.no_grad():
                z = y * 3.0
            loss = (y * z + y.exp()).sum()
            loss.backward()
            return loss
        return fn

    s = check(make, lambda i: [torch.tensor(np.linspace(-1, 1, 16) + i, requires_grad=True)])
    assert s["last_fused_groups"] >= 1


def test_broadcasting_and_views_break_a_run():
    # A broadcast op and a view take their own path; the runs on either
    # side are fused separately.
    def make():
        def fn(x, b):
            y = (x.sin() * 2.0).exp()
            y = y * b  # broadcast: (4, 3) * (3,)
            y = (y.tanh() + 1.0).reshape(12)
            y = (y * y).sqrt()
            loss = y.sum()
            loss.backward()
            return loss
        return fn

    r = np.random.default_rng(4)
    xv, bv = r.uniform(-1, 1, (4, 3)).astype(np.float32), r.uniform(-1, 1, 3).astype(np.float32)
    s = check(make, lambda i: [torch.tensor(xv, requires_grad=True),
                               torch.tensor(bv + i, requires_grad=True)])
    assert s["fused_groups"] == 3


def test_a_training_step_with_an_optimizer_matches_eager():
    def make(seed):
        torch.manual_seed(seed)
        w = torch.randn(32, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
        x = torch.linspace(-1, 1, 32)

        def step():
            opt.zero_grad()
            y = (w * x).tanh() * 2.0 - x
            loss = (y * y).mean()
            loss.backward()
            opt.step()
            return loss
        return step, w

    (fe, we), (fc, wc) = make(0), make(0)
    fc = torch.compile(fc, fullgraph=True)
    for _ in range(6):
        assert same(fe(), fc())
        assert same(we, wc)
    assert stats(fc)["last_fused_groups"] == 1


def test_an_lstm_cell_training_step_matches_eager_bit_for_bit():
    # The gates are fused runs; the weights' gradients arrive 32 times, as
    # transposed views, and are added in place in the engine's order.
    def make():
        torch.manual_seed(0)
        cell, head = torch.nn.LSTMCell(8, 16), torch.nn.Linear(16, 1)
        params = list(cell.parameters()) + list(head.parameters())
        opt = torch.optim.SGD(params, lr=0.05)
        r = np.random.default_rng(0)
        xs = torch.tensor(r.standard_normal((12, 4, 8)).astype(np.float32))
        y = torch.tensor(r.standard_normal((4, 1)).astype(np.float32))

        def step():
            opt.zero_grad()
            h, c = torch.zeros(4, 16), torch.zeros(4, 16)
            for t in range(12):
                h, c = cell(xs[t], (h, c))
            loss = ((head(h) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        return step, params

    (fe, pe), (fc, pc) = make(), make()
    fc = torch.compile(fc, fullgraph=True)
    for _ in range(5):
        assert same(fe(), fc())
        for a, b in zip(pe, pc):
            assert same(a, b)
    s = stats(fc)
    assert s["fused_groups"] >= 12 and s["last_fused_groups"] == s["fused_groups"]


@pytest.mark.parametrize("no_grad", [True, False])
def test_inference_without_backward_is_fused(no_grad):
    # No backward() and no graph (no_grad(), or inputs that do not require
    # grad): the tape gets a forward-only plan and its runs are fused.
    w = torch.tensor(np.linspace(-1, 1, 32), requires_grad=no_grad)

    def fn(x):
        def body():
            y = x
            for i in range(30):
                y = CYCLE[i % 5](y, w)
            return y.tanh(), y
        if no_grad:
            with torch.no_grad():
                return body()
        return body()

    fc = torch.compile(fn, fullgraph=True)
    kept = []
    for i in range(4):
        x = torch.tensor(np.linspace(-0.5, 0.5, 32) * (i + 1))
        re, rc = fn(x), fc(x)
        for a, b in zip(re, rc):
            assert same(a, b) and not b.requires_grad
        kept.append((rc[1].numpy().copy(), rc[1]))
    for snapshot, t in kept:
        assert np.array_equal(snapshot, t.numpy())
    s = stats(fc)
    assert s["vjp_entries"] == 0 and s["fused_groups"] == 1 and s["last_fused_groups"] == 1


def test_a_tape_that_builds_a_graph_without_backward_keeps_the_engine():
    w = torch.tensor(np.linspace(-1, 1, 8), requires_grad=True)

    def fn(x):
        return (x * w).sin() * 2.0

    fc = torch.compile(fn, fullgraph=True)
    for _ in range(3):
        out = fc(torch.ones(8))
    (tape,) = fc.tapes
    s = tape.stats()
    assert not s["static"] and "builds a graph" in s["static_reason"]
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    assert np.allclose(w.grad.numpy(), 2.0 * np.cos(w.detach().numpy()))


def test_a_parameter_given_another_shape_after_capture_replays_as_eager():
    # `.data = ...` keeps the object but changes its shape: the static plan
    # (and its fused group, built for the old shape) steps aside and the
    # ops run on the tensor as it now is.
    def make():
        w = torch.tensor(np.linspace(-1, 1, 8), requires_grad=True)

        def fn(x):
            w.grad = None
            loss = ((x * w).sin() * 2.0 + w).sum()
            loss.backward()
            return loss
        return fn, w

    (fe, we), (fc, wc) = make(), make()
    fc = torch.compile(fc, fullgraph=True)
    x = torch.tensor(np.linspace(0, 1, 8))
    for _ in range(3):
        assert same(fe(x), fc(x)) and same(we.grad, wc.grad)
    assert stats(fc)["last_fused_groups"] == 1
    for w in (we, wc):
        w.data = torch.tensor([0.25])
    for _ in range(2):
        assert same(fe(x), fc(x)) and same(we.grad, wc.grad)
    assert wc.grad.shape == (1,)
    (tape,) = fc.tapes
    assert not tape.stats()["last_static"]


@settings(max_examples=20, deadline=None)
@given(
    scale=st.sampled_from([1e-3, 0.05, 0.3]),
    n=st.sampled_from([3, 16, 40]),
    seed=st.integers(0, 2**16),
    unary=st.sampled_from([torch.sin, torch.cos, torch.tanh, torch.sigmoid, torch.exp, torch.expm1]),
)
def test_a_gradient_decaying_through_subnormals_equals_eager(scale, n, seed, unary):
    # Small inputs make the gradient shrink by orders of magnitude per step,
    # down through float32's subnormals to zero: the fused reverse pass forms
    # those products in float64 and must still give eager's bits.
    def make():
        def fn(x):
            y = x
            for i in range(120):
                y = [lambda y: y * x, lambda y: unary(y), lambda y: y * 0.25, lambda y: y + x][i % 4](y)
            loss = y.sum()
            loss.backward()
            return loss
        return fn

    v = np.random.default_rng(seed).uniform(-scale, scale, n)
    s = check(make, lambda i: [torch.tensor(v * (1 + i), dtype=torch.float32, requires_grad=True)])
    assert s["last_fused_groups"] == 1


@pytest.mark.parametrize("kind", ["ones", "broadcast", "dense", "strided"])
def test_seeds_broadcast_or_not_equal_eager(kind):
    # `sum`'s gradient reaches the group as one element broadcast to the
    # whole shape; other seeds are dense or strided views.
    n = 24

    def grad_of(i):
        if kind == "broadcast":
            return torch.tensor([0.75 + i], dtype=torch.float32).expand(n)
        if kind == "dense":
            return torch.tensor(np.linspace(-1, 1, n) * (i + 1), dtype=torch.float32)
        if kind == "strided":
            return torch.tensor(np.linspace(-2, 2, 2 * n), dtype=torch.float32)[::2]
        return None

    def make():
        def fn(x, g):
            y = x
            for i in range(20):
                y = CYCLE[i % 5](y, x)
            if g is None:
                y.sum().backward()
            else:
                y.backward(g)
            return y
        return fn

    v = np.random.default_rng(3).uniform(-1, 1, n)
    check(make, lambda i: [torch.tensor(v + 0.1 * i, dtype=torch.float32, requires_grad=True), grad_of(i)])
