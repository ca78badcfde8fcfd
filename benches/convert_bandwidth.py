#!/usr/bin/env python3
"""float32 <-> float16/bfloat16 conversion of 16M elements against copy bandwidth.

Each conversion's bandwidth counts the bytes it reads and writes (6 bytes an
element); the copy's, a float32 clone, 8. The target is 70% of the copy's
bandwidth. PyTorch's figures are shown when it is installed.

    python benches/convert_bandwidth.py [--n 16777216] [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import time


def best(fn, repeat: int) -> tuple[float, float]:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def rows(lib, n: int, repeat: int) -> list[tuple[str, float, float]]:
    x = lib.rand(n)
    h = {"bf16": x.bfloat16(), "f16": x.half()}
    out = []
    t, m = best(lambda: x.clone(), repeat)
    out.append(("copy f32", 8 * n / t / 1e9, 8 * n / m / 1e9))
    for name, dt in (("bf16", lib.bfloat16), ("f16", lib.float16)):
        t, m = best(lambda dt=dt: x.to(dt), repeat)
        out.append((f"f32->{name}", 6 * n / t / 1e9, 6 * n / m / 1e9))
        t, m = best(lambda name=name: h[name].float(), repeat)
        out.append((f"{name}->f32", 6 * n / t / 1e9, 6 * n / m / 1e9))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    libs = [("ferrograd", __import__("ferrograd"))]
    try:
        libs.append(("torch", __import__("torch")))
    except ImportError:
        pass
    for label, lib in libs:
        res = rows(lib, args.n, args.repeat)
        copy = res[0][1]
        print(f"{label}: {args.n} elements, GB/s best (median)")
        for name, gbs, med in res:
            share = gbs / copy
            mark = "" if name.startswith("copy") else (" met" if share >= 0.7 else " MISSED")
            print(f"  {name:10s} {gbs:7.2f} ({med:6.2f})  {100 * share:5.1f}% of copy{mark}")


if __name__ == "__main__":
    main()
