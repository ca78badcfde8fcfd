"""Training-step time under ``autocast(bfloat16)`` against float32: a small MLP
and a nanoGPT-style transformer block (causal attention + MLP, weights tied
to nothing), forward + backward + SGD step.

    PYTHONPATH=python python benches/amp_step.py [--rounds 7]

The two configurations alternate round by round (the machine may be shared
and load drifts), and each reports its median. Name the CPU, whether it has
AVX512_BF16/AMX, and the load (``uptime``) with any figure you quote.
"""

from __future__ import annotations

import argparse
import statistics
import time

import ferrograd as fg
import ferrograd.nn.functional as F


class Block(fg.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = fg.nn.LayerNorm(d), fg.nn.LayerNorm(d)
        self.qkv, self.proj = fg.nn.Linear(d, 3 * d), fg.nn.Linear(d, d)
        self.fc, self.out = fg.nn.Linear(d, 4 * d), fg.nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


def workloads():
    fg.manual_seed(0)
    mlp = fg.nn.Sequential(fg.nn.Linear(512, 1024), fg.nn.ReLU(), fg.nn.Linear(1024, 1024),
                           fg.nn.ReLU(), fg.nn.Linear(1024, 10))
    xm, ym = fg.randn(256, 512), fg.randint(0, 10, (256,))
    gpt = fg.nn.ModuleDict({"emb": fg.nn.Embedding(256, 256), "b1": Block(256, 4),
                            "b2": Block(256, 4), "head": fg.nn.Linear(256, 256)})
    xt, yt = fg.randint(0, 256, (8, 128)), fg.randint(0, 256, (8, 128))

    def gpt_fwd(x):
        h = gpt["b2"](gpt["b1"](gpt["emb"](x)))
        return gpt["head"](h).reshape(-1, 256)

    return {
        "MLP 512-1024-1024-10, batch 256": (mlp, lambda: mlp(xm), ym),
        "GPT 2 blocks d=256 T=128, batch 8": (gpt, lambda: gpt_fwd(xt), yt.reshape(-1)),
    }


def step(model, fwd, y, opt, amp):
    opt.zero_grad()
    with fg.autocast("cpu", dtype=fg.bfloat16, enabled=amp):
        loss = F.cross_entropy(fwd(), y)
    loss.backward()
    opt.step()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    for name, (model, fwd, y) in workloads().items():
        opt = fg.optim.SGD(model.parameters(), lr=1e-3)
        times = {False: [], True: []}
        for amp in (False, True):
            step(model, fwd, y, opt, amp)  # warm up
        for _ in range(args.rounds):
            for amp in (False, True):
                t0 = time.perf_counter()
                for _ in range(args.steps):
                    step(model, fwd, y, opt, amp)
                times[amp].append((time.perf_counter() - t0) / args.steps)
        f32, bf16 = statistics.median(times[False]), statistics.median(times[True])
        print(f"{name}: float32 {f32 * 1e3:.1f} ms, autocast(bfloat16) {bf16 * 1e3:.1f} ms, "
              f"speedup {f32 / bf16:.2f}x")


if __name__ == "__main__":
    main()
