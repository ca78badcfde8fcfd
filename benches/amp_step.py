"""Training-step time under ``autocast(bfloat16)`` against float32, in
ferrograd and (when it is installed) PyTorch, on the same step code: a small
MLP and a nanoGPT-style model (embedding, two transformer blocks with causal
attention and a GELU MLP, a head), forward + backward + SGD step.

    python benches/amp_step.py [--rounds 7] [--threads 2]

The configurations alternate round by round (the machine may be shared and
load drifts), and each reports its median. Name the CPU, whether it has
AVX512_BF16/AMX, and the load (``uptime``) with any figure you quote.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import ferrograd as fg

try:
    import torch
except ImportError:  # PyTorch is a yardstick, never a dependency
    torch = None


def workloads(lib):
    """The two models and their batches, written once for either library."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.heads = heads

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
                       for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    lib.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024),
                        nn.ReLU(), nn.Linear(1024, 10))
    xm, ym = lib.randn(256, 512), lib.randint(0, 10, (256,))
    gpt = nn.ModuleDict({"emb": nn.Embedding(256, 256), "b1": Block(256, 4),
                         "b2": Block(256, 4), "head": nn.Linear(256, 256)})
    xt, yt = lib.randint(0, 256, (8, 128)), lib.randint(0, 256, (8, 128))

    def gpt_fwd():
        h = gpt["b2"](gpt["b1"](gpt["emb"](xt)))
        return gpt["head"](h).reshape(-1, 256)

    return {
        "MLP 512-1024-1024-10, batch 256": (mlp, lambda: mlp(xm), ym),
        "GPT 2 blocks d=256 T=128, batch 8": (gpt, gpt_fwd, yt.reshape(-1)),
    }


def make_step(lib, model, fwd, y, amp):
    F = lib.nn.functional
    opt = lib.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        with lib.autocast("cpu", dtype=lib.bfloat16, enabled=amp):
            loss = F.cross_entropy(fwd(), y)
        loss.backward()
        opt.step()

    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-torch", action="store_true", help="time ferrograd alone")
    args = ap.parse_args()
    libs = {"ferrograd": fg}
    if torch is not None and not args.no_torch:
        libs["PyTorch"] = torch
    for lib in libs.values():
        lib.set_num_threads(args.threads)
    per_lib = {name: workloads(lib) for name, lib in libs.items()}
    print(f"{args.threads} thread(s); median of {args.rounds} rounds of {args.steps} steps")
    for work in per_lib["ferrograd"]:
        steps = {}
        for name, lib in libs.items():
            model, fwd, y = per_lib[name][work]
            for amp in (False, True):
                steps[name, amp] = make_step(lib, model, fwd, y, amp)
                steps[name, amp]()  # warm up
        times = {key: [] for key in steps}
        for _ in range(args.rounds):
            for key, step in steps.items():
                t0 = time.perf_counter()
                for _ in range(args.steps):
                    step()
                times[key].append((time.perf_counter() - t0) / args.steps)
        med = {key: statistics.median(ts) for key, ts in times.items()}
        print(work)
        for name in libs:
            f32, bf16 = med[name, False], med[name, True]
            print(f"  {name:9s} float32 {f32 * 1e3:7.1f} ms   autocast(bfloat16) {bf16 * 1e3:7.1f} ms"
                  f"   speedup {f32 / bf16:.2f}x")
        if "PyTorch" in libs:
            print(f"  autocast step, ferrograd vs PyTorch: "
                  f"{med['PyTorch', True] / med['ferrograd', True]:.2f}x")


if __name__ == "__main__":
    main()
