"""Whole training steps under ``ferrograd.compile``: a nanoGPT-style character
model, a ResNet-style CNN with BatchNorm, LeNet-5, a physics-informed MLP
(a Laplacian through higher-order grads), LSTM/GRU/RNN sequence models, a VAE
and a GAN, each captured once with
``fullgraph=True`` (so an op without a replay rule raises instead of falling
back), then replayed for several steps, bit for bit equal to the same step
run eagerly: losses, parameters, gradients, optimizer state, buffers (BatchNorm's
running statistics) and the random generator (dropout) after every step."""

import math
import warnings

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn as nn
import ferrograd.nn.functional as F


def same(a, b):
    return np.array_equal(a.detach().numpy(), b.detach().numpy())


def assert_same_state(m1, m2, o1, o2):
    for (n, p), q in zip(m1.named_parameters(), m2.parameters()):
        assert same(p, q), n
        assert (p.grad is None) == (q.grad is None), n
        if p.grad is not None:
            assert same(p.grad, q.grad), n
    for (n, b), c in zip(m1.named_buffers(), m2.buffers()):
        assert same(b, c), n
    for s1, s2 in zip(o1.state.values(), o2.state.values()):
        for k in s1:
            if isinstance(s1[k], torch.Tensor):
                assert same(s1[k], s2[k]), k
            else:
                assert s1[k] == s2[k], k


def run_both(make, data, steps):
    """Builds the model and optimizer twice from one seed and runs ``steps``
    training steps, each eagerly on one copy and compiled on the other from
    the same generator state; after each step the losses, the generator's
    state, the parameters, gradients, buffers and optimizer states must be
    equal bit for bit. Returns the compiled step."""
    torch.manual_seed(0)
    m1, o1, s1 = make()
    torch.manual_seed(0)
    m2, o2, s2 = make()
    compiled = torch.compile(s2, fullgraph=True)
    torch.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(steps):
            state = torch.get_rng_state()
            loss_e = s1(*data(i))
            state_e = torch.get_rng_state()
            torch.set_rng_state(state)
            loss_c = compiled(*data(i))
            assert same(loss_c, loss_e), f"step {i}: loss {loss_c.item()} != {loss_e.item()}"
            assert same(torch.get_rng_state(), state_e), f"step {i}: generator state"
            assert_same_state(m1, m2, o1, o2)
    return compiled


# ----- nanoGPT-style character model ---------------------------------------------------------


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head, self.n_embd = n_head, n_embd
        mask = torch.tril(torch.ones(block_size, block_size))
        self.register_buffer("bias", mask.view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout)
        )

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class CharGPT(nn.Module):
    def __init__(self, vocab=13, block_size=8, n_embd=16, n_head=2, n_layer=2, dropout=0.1):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList([Block(n_embd, n_head, block_size, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying, as nanoGPT

    def forward(self, idx, targets):
        _, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


def make_gpt():
    model = CharGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.95), weight_decay=0.1)

    def step(idx, targets):
        loss = model(idx, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.detach()

    return model, opt, step


def test_nanogpt_character_model_step_compiles_and_matches_eager():
    rng = np.random.default_rng(0)
    text = rng.integers(0, 13, 200)
    batches = []
    for _ in range(5):
        starts = rng.integers(0, len(text) - 9, 3)
        x = np.stack([text[s : s + 8] for s in starts])
        y = np.stack([text[s + 1 : s + 9] for s in starts])
        batches.append((torch.tensor(x), torch.tensor(y)))
    compiled = run_both(make_gpt, lambda i: batches[i], 5)
    assert len(compiled.tapes) == 1
    ops = compiled.tapes[0].ops
    for op in ("embedding", "arange", "masked_fill", "dropout", "layer_norm", "AdamW.step"):
        assert op in ops, op


# ----- ResNet-style CNN with BatchNorm -------------------------------------------------------


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, widths=(4, 8, 16), classes=5):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        layers, cin = [], widths[0]
        for i, w in enumerate(widths):
            layers.append(BasicBlock(cin, w, 1 if i == 0 else 2))
            cin = w
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.layers(out)
        return self.fc(torch.flatten(self.pool(out), 1))


def make_resnet():
    model = ResNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return model, opt, step


def test_resnet_style_cnn_with_batchnorm_step_compiles_and_matches_eager():
    rng = np.random.default_rng(1)
    xs = [torch.tensor(rng.standard_normal((4, 3, 12, 12)).astype(np.float32)) for _ in range(4)]
    ys = [torch.tensor(rng.integers(0, 5, 4)) for _ in range(4)]
    compiled = run_both(make_resnet, lambda i: (xs[i], ys[i]), 4)
    assert len(compiled.tapes) == 1
    ops = compiled.tapes[0].ops
    for op in ("convolution", "batch_norm", "adaptive_avg_pool2d", "SGD.step"):
        assert op in ops, op


def test_resnet_eval_forward_compiled_reads_the_trained_running_statistics():
    torch.manual_seed(0)
    m1, _, s1 = make_resnet()
    torch.manual_seed(0)
    m2, _, s2 = make_resnet()
    rng = np.random.default_rng(2)
    for _ in range(2):
        x = torch.tensor(rng.standard_normal((4, 3, 12, 12)).astype(np.float32))
        y = torch.tensor(rng.integers(0, 5, 4))
        s1(x, y)
        s2(x, y)
    m1.eval()
    m2.eval()
    c2 = torch.compile(m2, fullgraph=True)
    with torch.no_grad():
        for _ in range(3):
            x = torch.tensor(rng.standard_normal((2, 3, 12, 12)).astype(np.float32))
            assert same(m1(x), c2(x))
    for (n, b), c in zip(m1.named_buffers(), m2.buffers()):
        assert same(b, c), n


# ----- LeNet-5 -------------------------------------------------------------------------------


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(torch.tanh(self.conv1(x)))
        x = F.max_pool2d(torch.tanh(self.conv2(x)), 2)
        x = x.view(x.size(0), -1)
        x = torch.tanh(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        return self.fc3(x)


def make_lenet():
    model = LeNet5()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return model, opt, step


def test_lenet5_step_compiles_and_matches_eager():
    rng = np.random.default_rng(3)
    xs = [torch.tensor(rng.standard_normal((3, 1, 28, 28)).astype(np.float32)) for _ in range(4)]
    ys = [torch.tensor(rng.integers(0, 10, 3)) for _ in range(4)]
    compiled = run_both(make_lenet, lambda i: (xs[i], ys[i]), 4)
    assert len(compiled.tapes) == 1
    ops = compiled.tapes[0].ops
    assert ops.count("convolution") == 2 and "Adam.step" in ops
    assert any(op.startswith("max_pool2d") for op in ops)


@pytest.mark.parametrize("make", [make_gpt, make_resnet, make_lenet], ids=["gpt", "resnet", "lenet"])
def test_model_steps_capture_with_no_fallback_warning(make):
    # fullgraph=False: a capture that fell back would warn (RuntimeWarning).
    torch.manual_seed(0)
    _, _, step = make()
    c = torch.compile(step)
    if make is make_gpt:
        x = torch.tensor(np.arange(16).reshape(2, 8) % 13)
        args = (x, x)
    elif make is make_resnet:
        args = (torch.zeros(2, 3, 12, 12), torch.tensor([0, 1]))
    else:
        args = (torch.zeros(2, 1, 28, 28), torch.tensor([0, 1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            c(*args)
    assert len(c.tapes) == 1


# ----- physics-informed MLP: a Laplacian through two create_graph grads ---------------------


def make_pinn():
    model = nn.Sequential(
        nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1)
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(x):
        x = x.clone().requires_grad_(True)
        u = model(x)
        (g,) = torch.autograd.grad(u.sum(), x, create_graph=True)
        lap = 0
        for i in range(2):
            (gi,) = torch.autograd.grad(g[:, i].sum(), x, create_graph=True)
            lap = lap + gi[:, i]
        # Poisson's equation -lap(u) = 1 inside, u = 0 on the boundary x0 = 0.
        boundary = model(x * torch.tensor([0.0, 1.0]))
        loss = (lap + 1).pow(2).mean() + boundary.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    return model, opt, step


def test_physics_informed_mlp_step_compiles_and_matches_eager():
    rng = np.random.default_rng(4)
    xs = [torch.tensor(rng.random((32, 2)).astype(np.float32)) for _ in range(4)]
    compiled = run_both(make_pinn, lambda i: (xs[i],), 4)
    assert len(compiled.tapes) == 1


# ----- recurrent layers ----------------------------------------------------------------------


class Seq2One(nn.Module):
    def __init__(self, cell, hidden=12):
        super().__init__()
        self.rnn = cell(6, hidden, num_layers=2)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[-1])


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU, nn.RNN], ids=["lstm", "gru", "rnn"])
def test_recurrent_step_compiles_and_matches_eager(cell):
    def make():
        model = Seq2One(cell)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

        def step(x, y):
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            return loss.detach()

        return model, opt, step

    rng = np.random.default_rng(5)
    xs = [torch.tensor(rng.standard_normal((7, 3, 6)).astype(np.float32)) for _ in range(4)]
    ys = [torch.tensor(rng.standard_normal((3, 1)).astype(np.float32)) for _ in range(4)]
    compiled = run_both(make, lambda i: (xs[i], ys[i]), 4)
    assert len(compiled.tapes) == 1


# ----- a VAE (reparameterisation draws noise) and a GAN (two optimizers, detach) ------------


class VAE(nn.Module):
    def __init__(self, d=20, z=4):
        super().__init__()
        self.enc = nn.Linear(d, 16)
        self.mu, self.logvar = nn.Linear(16, z), nn.Linear(16, z)
        self.dec = nn.Sequential(nn.Linear(z, 16), nn.ReLU(), nn.Linear(16, d))

    def forward(self, x):
        h = F.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return torch.sigmoid(self.dec(z)), mu, logvar


def make_vae():
    model = VAE()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(x):
        recon, mu, logvar = model(x)
        bce = F.binary_cross_entropy(recon, x, reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = bce + kld
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    return model, opt, step


def test_vae_step_compiles_and_matches_eager():
    rng = np.random.default_rng(6)
    xs = [torch.tensor(rng.random((5, 20)).astype(np.float32)) for _ in range(4)]
    compiled = run_both(make_vae, lambda i: (xs[i],), 4)
    assert len(compiled.tapes) == 1
    assert "randn_like" in compiled.tapes[0].ops


class _Optimizers:
    """Two optimizers seen as one by ``assert_same_state`` (their states side by side)."""

    def __init__(self, *opts):
        self.opts = opts

    @property
    def state(self):
        return {k: v for o in self.opts for k, v in o.state.items()}


def make_gan():
    gen = nn.Sequential(nn.Linear(3, 16), nn.LeakyReLU(0.2), nn.Linear(16, 8), nn.Tanh())
    disc = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Dropout(0.3), nn.Linear(16, 1))
    opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(disc.parameters(), lr=2e-4, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()

    def step(real):
        n = real.size(0)
        fake = gen(torch.randn(n, 3))
        d_loss = bce(disc(real), torch.ones(n, 1)) + bce(disc(fake.detach()), torch.zeros(n, 1))
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        g_loss = bce(disc(fake), torch.ones(n, 1))
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        return (d_loss + g_loss).detach()

    return nn.ModuleList([gen, disc]), _Optimizers(opt_g, opt_d), step


def test_gan_step_compiles_and_matches_eager():
    rng = np.random.default_rng(7)
    xs = [torch.tensor(rng.standard_normal((6, 8)).astype(np.float32)) for _ in range(4)]
    compiled = run_both(make_gan, lambda i: (xs[i],), 4)
    assert len(compiled.tapes) == 1


# ----- every optimizer's step ----------------------------------------------------------------

_OPTIMIZERS = sorted(
    n for n in dir(torch.optim)
    if isinstance(getattr(torch.optim, n), type)
    and issubclass(getattr(torch.optim, n), torch.optim.Optimizer)
    # LBFGS needs a closure (see below); SparseAdam refuses dense gradients and Muon
    # takes only 2-D parameters (see below).
    and n not in ("Optimizer", "LBFGS", "SparseAdam", "Muon")
)


@pytest.mark.parametrize("name", _OPTIMIZERS)
def test_every_optimizer_step_compiles_and_matches_eager(name):
    def make():
        model = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2))
        opt = getattr(torch.optim, name)(model.parameters(), lr=0.01)

        def step(x):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss.detach()

        return model, opt, step

    rng = np.random.default_rng(8)
    xs = [torch.tensor(rng.standard_normal((3, 4)).astype(np.float32)) for _ in range(4)]
    compiled = run_both(make, lambda i: (xs[i],), 4)
    assert f"{name}.step" in compiled.tapes[0].ops


def test_muon_step_compiles_and_matches_eager():
    def make():
        model = nn.Sequential(nn.Linear(4, 5, bias=False), nn.Tanh(), nn.Linear(5, 2, bias=False))
        opt = torch.optim.Muon(model.parameters(), lr=0.01)

        def step(x):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss.detach()

        return model, opt, step

    rng = np.random.default_rng(8)
    xs = [torch.tensor(rng.standard_normal((3, 4)).astype(np.float32)) for _ in range(4)]
    compiled = run_both(make, lambda i: (xs[i],), 4)
    assert "Muon.step" in compiled.tapes[0].ops


def test_sparse_adam_step_raises_the_same_error_compiled_as_eager():
    # Every ferrograd gradient is dense, which SparseAdam refuses with PyTorch's message.
    model = nn.Linear(4, 3)
    opt = torch.optim.SparseAdam(model.parameters(), lr=0.01)
    x = torch.randn(5, 4)

    def step(x):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()

    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        step(x)
    compiled = torch.compile(step, fullgraph=True)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
            compiled(x)
    assert opt.state_dict()["state"] == {}


@pytest.mark.parametrize("name", ["LBFGS", "SGD"])
def test_optimizer_step_with_a_closure_is_refused_by_name_and_runs_eagerly(name):
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = getattr(torch.optim, name)(model.parameters(), lr=0.1)
    x = torch.randn(5, 4)

    def step(x):
        def closure():
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            return loss

        return opt.step(closure).detach()

    strict = torch.compile(step, fullgraph=True)
    with pytest.raises(RuntimeError, match=r"optimizer\.step\(closure\)"):
        for _ in range(3):
            strict(x)
    relaxed = torch.compile(step)
    with pytest.warns(RuntimeWarning, match=r"optimizer\.step\(closure\)"):
        for _ in range(3):
            loss = relaxed(x)
    assert np.isfinite(loss.item())
