#!/usr/bin/env python3
"""Activation checkpointing on a 32-layer MLP: memory held for backward, peak
RSS, and the time of one forward + backward, with and without checkpointing.

Each configuration runs in its own child process so the peak RSS
(``ru_maxrss``) is that configuration's alone. Reported per configuration:

* saved bytes: what the graph keeps for backward after the forward pass
  (``ferrograd.autograd.graph.saved_tensors_summary(out).unique_bytes``);
* peak RSS and its growth over the RSS right before the first forward pass
  (model, input and the allocator's warm state are in the baseline);
* the median time of a training step's forward + backward.

    python benches/checkpoint_memory.py                 # 32 x 256, batch 1024
    python benches/checkpoint_memory.py --quick         # small sizes, a smoke test
    python benches/checkpoint_memory.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

CONFIGS = ["plain", "per_layer", "sequential_sqrt", "sequential_4"]


def rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def child(config: str, layers: int, width: int, batch: int, steps: int) -> dict:
    import ferrograd as torch
    import ferrograd.nn as nn
    from ferrograd.autograd.graph import saved_tensors_summary
    from ferrograd.utils.checkpoint import checkpoint, checkpoint_sequential

    torch.manual_seed(0)
    blocks = [nn.Sequential(nn.Linear(width, width), nn.Tanh()) for _ in range(layers)]
    model = nn.Sequential(*blocks)
    x = torch.randn(batch, width)

    def forward():
        if config == "plain":
            return model(x)
        if config == "per_layer":
            h = x
            for b in blocks:
                h = checkpoint(b, h, use_reentrant=False)
            return h
        segments = int(round(math.sqrt(layers))) if config == "sequential_sqrt" else 4
        return checkpoint_sequential(model, segments, x, use_reentrant=False)

    base = rss_kb()
    times = []
    saved = None
    for i in range(steps):
        model.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        out = forward()
        if i == 0:
            saved = saved_tensors_summary(out).unique_bytes
        out.square().mean().backward()
        times.append(time.perf_counter() - t0)
        del out
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "config": config,
        "saved_bytes": saved,
        "peak_rss_kb": peak,
        "peak_rss_growth_kb": peak - base,
        "step_ms_median": 1e3 * statistics.median(times[1:] if len(times) > 1 else times),
    }


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=32)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.quick:
        a.width, a.batch, a.steps = 32, 16, 2
    if a.child:
        print(json.dumps(child(a.child, a.layers, a.width, a.batch, a.steps)))
        return

    print(f"CPU: {cpu_model()}; load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"MLP: {a.layers} x Linear({a.width}, {a.width}) + Tanh, batch {a.batch}, "
          f"float32, {a.steps} steps per configuration (median of all but the first)")
    results = []
    for config in CONFIGS:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", config,
               "--layers", str(a.layers), "--width", str(a.width), "--batch", str(a.batch),
               "--steps", str(a.steps)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    plain = results[0]
    print(f"{'configuration':<18}{'saved MB':>10}{'peak RSS MB':>13}{'RSS growth MB':>15}"
          f"{'step ms':>10}{'time x':>8}")
    for r in results:
        print(f"{r['config']:<18}{r['saved_bytes'] / 2**20:>10.1f}{r['peak_rss_kb'] / 1024:>13.1f}"
              f"{r['peak_rss_growth_kb'] / 1024:>15.1f}{r['step_ms_median']:>10.1f}"
              f"{r['step_ms_median'] / plain['step_ms_median']:>8.2f}")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cpu": cpu_model(), "args": vars(a), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
