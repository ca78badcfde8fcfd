"""Whole training steps, eager and under ``ferrograd.compile``, against PyTorch
eager (and ``torch.compile`` with ``--torch-compile``) in one process: a
nanoGPT-style character model (AdamW), a ResNet-style CNN with BatchNorm (SGD
with momentum), a physics-informed MLP (a Laplacian through two
``create_graph`` gradients, Adam) and an ``LSTM(64, 128)`` over 32 steps.

    python benches/compile_models.py                 # every model
    python benches/compile_models.py --only gpt,pinn --threads 2
    python benches/compile_models.py --torch-compile  # also torch.compile (minutes per model)

Each step is the same code for both libraries (``lib`` is ``ferrograd`` or
``torch``); ferrograd's compiled step runs with ``fullgraph=True``, so a
fallback to eager is an error rather than a silently eager timing. The
capture time (first call of the compiled step) is printed too. Name the CPU
and the load (``uptime``) with any figure you quote.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import numpy as np

import ferrograd as fg

try:
    import torch
except ImportError:  # PyTorch is a yardstick, never a dependency
    torch = None


# ----- the models, written once for either library --------------------------------------------


def gpt(lib, vocab=65, block=64, n_embd=128, n_head=4, n_layer=4, batch=16):
    nn, F = lib.nn, lib.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn, self.c_proj = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd)
            self.register_buffer("bias", lib.tril(lib.ones(block, block)).view(1, 1, block, block))

        def forward(self, x):
            b, t, c = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            q, k, v = (z.view(b, t, n_head, c // n_head).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = F.softmax(att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf")), dim=-1)
            return self.c_proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(n_embd), Attention(), nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                     nn.Linear(4 * n_embd, n_embd))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class CharGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block, n_embd)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f, self.lm_head = nn.LayerNorm(n_embd), nn.Linear(n_embd, vocab, bias=False)
            self.wte.weight = self.lm_head.weight

        def forward(self, idx, targets):
            pos = lib.arange(0, idx.size(1), dtype=lib.long)
            x = self.wte(idx) + self.wpe(pos)
            for blk in self.h:
                x = blk(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, vocab), targets.view(-1))

    model = CharGPT()
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    rng = np.random.default_rng(0)
    idx = lib.tensor(rng.integers(0, vocab, (batch, block)))
    targets = lib.tensor(rng.integers(0, vocab, (batch, block)))

    def step(idx, targets):
        loss = model(idx, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.detach()

    return model, step, (idx, targets)


def resnet(lib, widths=(16, 32, 64), batch=32, side=32, classes=10):
    nn, F = lib.nn, lib.nn.functional

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.short = nn.Sequential()
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                           nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
            return F.relu(out + self.short(x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, padding=1, bias=False),
                                      nn.BatchNorm2d(widths[0]), nn.ReLU())
            layers, cin = [], widths[0]
            for i, w in enumerate(widths):
                layers.append(Basic(cin, w, 1 if i == 0 else 2))
                cin = w
            self.layers = nn.Sequential(*layers)
            self.pool, self.fc = nn.AdaptiveAvgPool2d((1, 1)), nn.Linear(cin, classes)

        def forward(self, x):
            return self.fc(lib.flatten(self.pool(self.layers(self.stem(x))), 1))

    model = Net()
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((batch, 3, side, side), dtype=np.float32))
    y = lib.tensor(rng.integers(0, classes, batch))

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()

    return model, step, (x, y)


def pinn(lib, width=64, points=256):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(2, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(),
                          nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    xy = lib.tensor(rng.uniform(-1, 1, (points, 2)).astype(np.float32))
    f = lib.tensor(rng.standard_normal((points, 1), dtype=np.float32))

    def step(xy, f):
        xy = xy.detach().requires_grad_(True)
        u = model(xy)
        (g,) = lib.autograd.grad(u.sum(), xy, create_graph=True)
        lap = 0.0
        for d in range(2):
            (gd,) = lib.autograd.grad(g[:, d].sum(), xy, create_graph=True)
            lap = lap + gd[:, d : d + 1]
        loss = ((lap - f) ** 2).mean() + (u**2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()

    return model, step, (xy, f)


def lstm(lib, inp=64, hidden=128, steps=32, batch=16):
    nn = lib.nn
    model = nn.LSTM(inp, hidden)
    head = nn.Linear(hidden, 1)
    params = list(model.parameters()) + list(head.parameters())
    opt = lib.optim.Adam(params, lr=1e-3)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((steps, batch, inp), dtype=np.float32))
    y = lib.tensor(rng.standard_normal((batch, 1), dtype=np.float32))

    def step(x, y):
        out, _ = model(x)
        loss = ((head(out[-1]) - y) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()

    return model, step, (x, y)


MODELS = {"gpt": gpt, "resnet": resnet, "pinn": pinn, "lstm": lstm}


# ----- timing ---------------------------------------------------------------------------------


def best_ms(step, args, repeat, budget=0.3):
    step(*args)
    t0 = time.perf_counter()
    step(*args)
    once = time.perf_counter() - t0
    n = max(1, min(200, int(budget / max(once, 1e-6))))
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            step(*args)
        samples.append((time.perf_counter() - t0) / n * 1e3)
    return min(samples), statistics.median(samples)


def run(name, threads, repeat, torch_compile):
    row = {"model": name, "threads": threads}
    fg.set_num_threads(threads)
    _, step, args = MODELS[name](fg)
    row["fg_eager"] = best_ms(step, args, repeat)[0]
    _, step, args = MODELS[name](fg)
    compiled = fg.compile(step, fullgraph=True)
    compiled(*args)  # eager call
    t0 = time.perf_counter()
    compiled(*args)  # capture
    row["capture_s"] = time.perf_counter() - t0
    row["fg_compiled"] = best_ms(compiled, args, repeat)[0]
    if torch is not None:
        torch.set_num_threads(threads)
        torch.manual_seed(0)
        _, step, args = MODELS[name](torch)
        row["torch_eager"] = best_ms(step, args, repeat)[0]
        if torch_compile:
            _, step, args = MODELS[name](torch)
            tc = torch.compile(step)
            t0 = time.perf_counter()
            tc(*args)
            tc(*args)
            row["torch_compile_s"] = time.perf_counter() - t0
            row["torch_compiled"] = best_ms(tc, args, repeat)[0]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(MODELS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--torch-compile", action="store_true")
    ap.add_argument("--quick", action="store_true", help="one model, one sample (CI smoke run)")
    args = ap.parse_args()
    names = ["pinn"] if args.quick else args.only.split(",")
    repeat = 1 if args.quick else args.repeat
    print(f"ferrograd {fg.__version__}" + (f", PyTorch {torch.__version__}" if torch else "")
          + f"; {args.threads} thread(s); load average {os.getloadavg()[0]:.2f}")
    head = f"{'model':8} {'eager':>9} {'compiled':>9} {'capture':>8} {'torch':>9} {'vs torch':>9}"
    print(head + (f" {'t.compile':>9} {'vs t.c':>7}" if args.torch_compile else ""))
    for name in names:
        r = run(name, args.threads, repeat, args.torch_compile)
        line = (f"{name:8} {r['fg_eager']:8.2f}m {r['fg_compiled']:8.2f}m {r['capture_s']:7.2f}s "
                + (f"{r['torch_eager']:8.2f}m {r['torch_eager'] / r['fg_compiled']:8.2f}x"
                   if "torch_eager" in r else f"{'-':>9} {'-':>9}"))
        if "torch_compiled" in r:
            line += f" {r['torch_compiled']:8.2f}m {r['torch_compiled'] / r['fg_compiled']:6.2f}x"
        print(line, flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
