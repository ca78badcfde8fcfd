"""ferrograd.compile over whole models: every family of ops replays as eager
does, bit for bit, with ``fullgraph=True`` so that any op without a replay
rule raises instead of falling back. The coverage matrix
(``test_op_coverage.py -k compile``) checks each op alone; these check what it
cannot show: state that lives across calls (BatchNorm's running statistics,
the random generator), layers built from several ops (LSTM/GRU, attention),
in-place Python-composed ops, and the refusals' wording."""

import warnings

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import Function


def same(a, b):
    return np.array_equal(a.detach().numpy(), b.detach().numpy())


def both(make, steps, data):
    """Runs ``steps`` calls of an eager step and of its compiled twin, each
    from a model built after ``manual_seed(0)``; returns both result lists,
    both models and the compiled function."""
    torch.manual_seed(0)
    m1, s1 = make()
    torch.manual_seed(0)
    m2, s2 = make()
    c2 = torch.compile(s2, fullgraph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r1 = [s1(*data(i)) for i in range(steps)]
        r2 = [c2(*data(i)) for i in range(steps)]
    return r1, r2, m1, m2, c2


def assert_models_equal(m1, m2):
    for (n, p), q in zip(m1.named_parameters(), m2.parameters()):
        assert same(p, q), n
        if p.grad is not None or q.grad is not None:
            assert same(p.grad, q.grad), n
    for (n, b), c in zip(m1.named_buffers(), m2.buffers()):
        assert same(b, c), n


def arrays(shape, n, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [torch.tensor(rng.standard_normal(shape).astype(dtype)) for _ in range(n)]


def test_convnet_with_batchnorm_keeps_running_statistics_as_eager():
    # Convolution, BatchNorm (training: running statistics updated in place on
    # every call), in-place ReLU (composed in Python), pooling, a linear head.
    def make():
        model = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(4, 6, 3, padding=1, bias=False),
            nn.BatchNorm2d(6),
            nn.ReLU(),
            nn.AvgPool2d(2),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(6, 3),
        )
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()

        return model, step

    xs = arrays((5, 3, 8, 8), 6, 0)
    ys = [torch.tensor(np.random.default_rng(i).integers(0, 3, 5)) for i in range(6)]
    r1, r2, m1, m2, c2 = both(make, 6, lambda i: (xs[i], ys[i]))
    assert len(c2.tapes) == 1
    ops = c2.tapes[0].ops
    assert ops.count("batch_norm") == 2 and "convolution" in ops and "relu_" in ops
    for a, b in zip(r1, r2):
        assert same(a, b)
    assert_models_equal(m1, m2)
    bn = m2[1]
    # Six calls, each updating the statistics once (four of them replays).
    assert int(bn.num_batches_tracked) == 6
    assert not np.array_equal(bn.running_mean.numpy(), np.zeros(4, np.float32))


def test_batchnorm_in_eval_mode_reads_the_running_statistics():
    def make():
        model = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.Tanh())
        return model, model

    torch.manual_seed(0)
    m1, _ = make()
    torch.manual_seed(0)
    m2, _ = make()
    xs = arrays((7, 4), 3, 1)
    for x in xs:  # a few training steps to move the statistics
        m1(x)
        m2(x)
    m1.eval()
    m2.eval()
    c2 = torch.compile(m2, fullgraph=True)
    for x in arrays((7, 4), 4, 2):
        assert same(m1(x), c2(x))
    assert_models_equal(m1, m2)


def test_dropout_and_randn_draw_as_eager_and_leave_the_generator_in_the_same_state():
    gen_e, gen_c = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)

    def step(x, gen):
        a = F.dropout(x, 0.5, training=True)
        b = torch.randn(3, 4) + torch.rand(4, generator=gen)
        c = torch.bernoulli(torch.full((3, 4), 0.3))
        d = torch.empty(2).normal_(1.0, 2.0)
        return a * b + c, d, torch.randint(0, 10, (5,)), torch.randperm(6)

    c = torch.compile(step, fullgraph=True)
    xs = arrays((3, 4), 5, 3)
    torch.manual_seed(0)
    want = [step(x, gen_e) for x in xs]
    state_e = torch.get_rng_state()
    torch.manual_seed(0)
    got = [c(x, gen_c) for x in xs]
    state_c = torch.get_rng_state()
    assert len(c.tapes) == 1
    for w, g in zip(want, got):
        for a, b in zip(w, g):
            assert same(a, b)
    assert same(state_e, state_c)
    assert same(gen_e.get_state(), gen_c.get_state())


def test_seeding_inside_the_compiled_function_is_replayed():
    def step(x):
        torch.manual_seed(3)
        return x + torch.randn(4)

    c = torch.compile(step, fullgraph=True)
    outs = [c(torch.zeros(4)) for _ in range(4)]
    torch.manual_seed(3)
    want = torch.randn(4)
    for o in outs:
        assert same(o, want)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_recurrent_layer_training_step_matches_eager(kind, bidirectional):
    def make():
        rnn = getattr(nn, kind)(5, 6, num_layers=2, bidirectional=bidirectional)
        head = nn.Linear(6 * (2 if bidirectional else 1), 1)
        model = nn.ModuleList([rnn, head])
        opt = torch.optim.Adam(model.parameters(), lr=0.01)

        def step(x, y):
            opt.zero_grad()
            out, _ = rnn(x)
            loss = ((head(out[-1]) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss.detach(), out

        return model, step

    xs = arrays((4, 3, 5), 4, 4)
    ys = arrays((3, 1), 4, 5)
    r1, r2, m1, m2, c2 = both(make, 4, lambda i: (xs[i], ys[i]))
    assert len(c2.tapes) == 1
    for (l1, o1), (l2, o2) in zip(r1, r2):
        assert same(l1, l2) and same(o1, o2)
    assert_models_equal(m1, m2)


def causal_attention(q, k, v):
    # The mask from `arange`, applied with `masked_fill`, as nanoGPT writes it.
    n = q.shape[-2]
    i = torch.arange(n)
    mask = i.unsqueeze(1) < i.unsqueeze(0)
    scores = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
    scores = scores.masked_fill(mask, float("-inf"))
    return scores.softmax(-1) @ v


@pytest.mark.parametrize("fused", [False, True])
def test_causal_attention_step_with_arange_and_masked_fill(fused):
    def make():
        proj = nn.Linear(8, 24)
        opt = torch.optim.AdamW(proj.parameters(), lr=0.01)

        def step(x):
            opt.zero_grad()
            q, k, v = proj(x).view(2, 5, 3, 8).transpose(1, 2).chunk(3, dim=-1)
            if fused:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                y = y + F.scaled_dot_product_attention(q, k, v)  # the native kernel's node
            else:
                y = causal_attention(q, k, v)
            loss = y.pow(2).mean()
            loss.backward()
            opt.step()
            return loss.detach()

        return proj, step

    xs = arrays((2, 5, 8), 4, 6)
    r1, r2, m1, m2, c2 = both(make, 4, lambda i: (xs[i],))
    assert len(c2.tapes) == 1
    ops = c2.tapes[0].ops
    # The causal mask is the kernel's own when fused, recorded ops otherwise.
    assert ("arange" in ops and "masked_fill" in ops) != fused
    for a, b in zip(r1, r2):
        assert same(a, b)
    assert_models_equal(m1, m2)


def test_embedding_and_clip_grad_norm_in_a_language_model_step():
    def make():
        emb, head = nn.Embedding(11, 6), nn.Linear(6, 11)
        model = nn.ModuleList([emb, head])
        opt = torch.optim.RMSprop(model.parameters(), lr=0.01)

        def step(tokens, targets):
            opt.zero_grad()
            logits = head(torch.tanh(emb(tokens)))
            loss = F.cross_entropy(logits.view(-1, 11), targets.view(-1))
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            return loss.detach(), norm

        return model, step

    rng = np.random.default_rng(7)
    toks = [torch.tensor(rng.integers(0, 11, (3, 4))) for _ in range(5)]
    tgts = [torch.tensor(rng.integers(0, 11, (3, 4))) for _ in range(5)]
    r1, r2, m1, m2, c2 = both(make, 5, lambda i: (toks[i], tgts[i]))
    assert len(c2.tapes) == 1
    for (l1, n1), (l2, n2) in zip(r1, r2):
        assert same(l1, l2) and same(n1, n2)
    assert_models_equal(m1, m2)


@pytest.mark.parametrize(
    "opt_cls,kw",
    [
        (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
        (torch.optim.Adam, {"lr": 0.01, "amsgrad": True}),
        (torch.optim.AdamW, {"lr": 0.01}),
        (torch.optim.Adagrad, {"lr": 0.1}),
        (torch.optim.Adamax, {"lr": 0.01}),
        (torch.optim.NAdam, {"lr": 0.01}),
        (torch.optim.RAdam, {"lr": 0.01}),
        (torch.optim.RMSprop, {"lr": 0.01, "momentum": 0.5, "centered": True}),
    ],
)
def test_every_optimizer_step_replays_as_eager(opt_cls, kw):
    def make():
        model = nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.LayerNorm(6), nn.Linear(6, 2))
        opt = opt_cls(model.parameters(), **kw)

        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()

        return model, step

    xs, ys = arrays((5, 4), 5, 8), arrays((5, 2), 5, 9)
    r1, r2, m1, m2, c2 = both(make, 5, lambda i: (xs[i], ys[i]))
    assert len(c2.tapes) == 1
    for a, b in zip(r1, r2):
        assert same(a, b)
    assert_models_equal(m1, m2)


def test_returned_detached_loss_is_fresh_on_every_call():
    w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)

    def step(x):
        w.grad = None
        loss = (w * x).sin().sum()
        loss.backward()
        return loss.detach(), w.grad

    c = torch.compile(step, fullgraph=True)
    outs = [c(torch.full((3,), float(i))) for i in range(5)]
    assert len(c.tapes) == 1 and "detach" in c.tapes[0].ops
    for i, (loss, g) in enumerate(outs):
        x = np.full(3, float(i), np.float32)
        wv = w.detach().numpy()
        assert loss.item() == pytest.approx(float(np.sin(wv * x).sum()), rel=1e-6)
        assert not loss.requires_grad
        np.testing.assert_allclose(g.numpy(), np.cos(wv * x) * x, rtol=1e-6)


class Cube(Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x**3 * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x**2 * ctx.scale, None


def test_custom_function_is_applied_again_on_every_replay():
    def step(x):
        y = Cube.apply(x, 2.0)
        y.sum().backward()
        return y

    c = torch.compile(step, fullgraph=True)
    for i in range(4):
        xe = torch.tensor([1.0, -2.0, 0.5 + i], requires_grad=True)
        xc = torch.tensor([1.0, -2.0, 0.5 + i], requires_grad=True)
        assert same(step(xe), c(xc))
        assert same(xe.grad, xc.grad)
    assert "Cube.apply" in c.tapes[0].ops


class CosineGrad(Function):
    # A backward that runs recorded ops (cos, mul) the forward never runs, and counts itself.
    calls = 0

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        CosineGrad.calls += 1
        (x,) = ctx.saved_tensors
        return g * x.cos()


def test_a_custom_backward_runs_once_per_replay():
    # The replay's engine run calls the Function's backward; the ops it ran during capture
    # are not entries of their own (they would compute it a second time, from the capture
    # call's incoming gradient).
    def step(x):
        y = CosineGrad.apply(x * 3.0)
        (y * y).sum().backward()
        return y

    c = torch.compile(step, fullgraph=True)
    for i in range(4):
        xe = torch.tensor([1.0, -2.0, 0.5 + i], requires_grad=True)
        xc = torch.tensor([1.0, -2.0, 0.5 + i], requires_grad=True)
        CosineGrad.calls = 0
        assert same(step(xe), c(xc))
        assert CosineGrad.calls == 2
        assert same(xe.grad, xc.grad)
    assert "cos" not in c.tapes[0].ops and "backward" in c.tapes[0].ops


class Stash(Function):
    # A backward that keeps a tensor it makes where the step reads it afterwards.
    kept = []

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        Stash.kept.append(g.exp())
        return g


def test_a_tensor_made_inside_backward_and_used_after_it_is_refused():
    # The replay's engine run makes the tensor again where the tape cannot see it, so the
    # capture is refused (under fullgraph=False the step keeps running eagerly).
    def step(x):
        Stash.apply(x * 2.0).sum().backward()
        return Stash.kept[-1] * 2.0

    want = 2 * np.exp(np.ones(2, np.float32))
    c = torch.compile(step, fullgraph=True)
    c(torch.tensor([1.0, 2.0], requires_grad=True))  # the first call runs eagerly
    with pytest.raises(RuntimeError, match="`exp`, made while backward ran"):
        c(torch.tensor([1.0, 2.0], requires_grad=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = torch.compile(step)
        for i in range(4):
            x = torch.tensor([1.0, 2.0 + i], requires_grad=True)
            np.testing.assert_allclose(c(x).numpy(), want, rtol=1e-6)


def test_autograd_grad_with_create_graph_inside_the_step():
    # A physics-informed loss: the derivative of the network is part of it.
    def make():
        net = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1))
        opt = torch.optim.Adam(net.parameters(), lr=0.01)

        def step(x):
            opt.zero_grad()
            x = x.detach().requires_grad_()
            u = net(x)
            (du,) = torch.autograd.grad(u.sum(), x, create_graph=True)
            loss = ((du - torch.cos(x)) ** 2).mean() + u.pow(2).mean()
            loss.backward()
            opt.step()
            return loss.detach()

        return net, step

    xs = arrays((6, 1), 4, 10)
    r1, r2, m1, m2, c2 = both(make, 4, lambda i: (xs[i],))
    assert len(c2.tapes) == 1
    for a, b in zip(r1, r2):
        assert same(a, b)
    assert_models_equal(m1, m2)


def test_factories_make_fresh_tensors_on_every_replay():
    def step(x):
        z = torch.zeros(3) + torch.ones(3) * torch.full((3,), 2.0)
        e = torch.eye(3) @ x
        lin = torch.linspace(0, 1, 3) + torch.arange(3) + torch.tensor([1.0, 2.0, 3.0])
        return z + e + lin, torch.zeros_like(x), torch.ones(2, requires_grad=True)

    c = torch.compile(step, fullgraph=True)
    outs = [c(torch.full((3,), float(i))) for i in range(4)]
    for i, o in enumerate(outs):
        for a, b in zip(o, step(torch.full((3,), float(i)))):
            assert same(a, b)
        assert o[2].requires_grad and o[2].is_leaf
    # Results are never shared between calls.
    assert outs[1][1] is not outs[2][1]


def test_op_without_replay_rule_is_named_in_the_warning():
    arr = np.ones(3, np.float32)

    def step(x):
        return torch.from_numpy(arr) * x

    c = torch.compile(step)
    c(torch.ones(3))
    with pytest.warns(RuntimeWarning, match="`from_numpy` has no replay rule") as w:
        c(torch.ones(3))
    assert not any("closure" in str(x.message) for x in w)
    cf = torch.compile(step, fullgraph=True)
    cf(torch.ones(3))
    with pytest.raises(RuntimeError, match="`from_numpy` has no replay rule"):
        cf(torch.ones(3))
