#!/usr/bin/env python3
"""Data movement, selection and reduction ops: ferrograd vs PyTorch in one process.

Each op runs on 1M float32 values (1024 x 1024 for matrix ops) and on 16 values,
forward and forward+backward, best of ``--repeat`` samples, on 1 and 2 threads.
A ratio is PyTorch's time over ferrograd's: above 1 ferrograd is faster.

    python benches/data_ops.py                      # every op, 1 and 2 threads
    python benches/data_ops.py --only topk,sum1 --threads 1 --json out.json

PyTorch is required (it is the yardstick); nothing else imports it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np


def _ops(m, big):
    """``name -> (make_inputs(lib_module, rng) -> args, fn(*args) -> tensor, differentiable)``."""
    n = 1024 if big else 4
    nn_ = n * n

    def x2(mod, r, grad=True):
        return mod.tensor(r.standard_normal((n, n)).astype(np.float32), requires_grad=grad)

    def idx(mod, r, hi, k):
        return mod.tensor(r.integers(0, hi, k).astype(np.int64))

    k8 = 8 if big else 2
    ops = {
        # gather / scatter / index
        "index_select0": (lambda mod, r: (x2(mod, r), idx(mod, r, n, n)),
                          lambda x, i: x.index_select(0, i), True),
        "index_select1": (lambda mod, r: (x2(mod, r), idx(mod, r, n, n)),
                          lambda x, i: x.index_select(1, i), True),
        "x[idx]": (lambda mod, r: (x2(mod, r), idx(mod, r, n, n)), lambda x, i: x[i], True),
        "x[:,idx]": (lambda mod, r: (x2(mod, r), idx(mod, r, n, n)), lambda x, i: x[:, i], True),
        "x[mask]": (lambda mod, r: (x2(mod, r), mod.tensor(r.random((n, n)) < 0.5)),
                    lambda x, mk: x[mk], True),
        "gather1": (lambda mod, r: (x2(mod, r), mod.tensor(r.integers(0, n, (n, n)))),
                    lambda x, i: x.gather(1, i), True),
        "scatter_add1": (lambda mod, r: (x2(mod, r), mod.tensor(r.integers(0, n, (n, n))),
                                         x2(mod, r)),
                         lambda x, i, s: x.scatter_add(1, i, s), True),
        "scatter1": (lambda mod, r: (x2(mod, r), mod.tensor(r.integers(0, n, (n, n))),
                                     x2(mod, r)),
                     lambda x, i, s: x.scatter(1, i, s), True),
        "index_add0": (lambda mod, r: (x2(mod, r), idx(mod, r, n, n), x2(mod, r)),
                       lambda x, i, s: x.index_add(0, i, s), True),
        "index_copy0": (lambda mod, r: (x2(mod, r), mod.tensor(r.permutation(n)), x2(mod, r)),
                        lambda x, i, s: x.index_copy(0, i, s), True),
        "index_fill1": (lambda mod, r: (x2(mod, r), idx(mod, r, n, n // 2)),
                        lambda x, i: x.index_fill(1, i, 0.5), True),
        "masked_fill": (lambda mod, r: (x2(mod, r), mod.tensor(r.random((n, n)) < 0.5)),
                        lambda x, mk: x.masked_fill(mk, 0.0), True),
        "masked_scatter": (lambda mod, r: (x2(mod, r), mod.tensor(r.random((n, n)) < 0.5),
                                           x2(mod, r)),
                           lambda x, mk, s: x.masked_scatter(mk, s), True),
        "take": (lambda mod, r: (x2(mod, r), mod.tensor(r.integers(0, nn_, nn_))),
                 lambda x, i: x.take(i), True),
        "put": (lambda mod, r: (x2(mod, r), mod.tensor(r.permutation(nn_)), x2(mod, r)),
                lambda x, i, s: x.put(i, s), True),
        "scatter_reduce_amax": (
            lambda mod, r: (x2(mod, r), mod.tensor(r.integers(0, n, (n, n))), x2(mod, r)),
            lambda x, i, s: x.scatter_reduce(1, i, s, "amax"), True),
        # copies and shapes
        "t_contiguous": (lambda mod, r: (x2(mod, r),), lambda x: x.t().contiguous(), True),
        "permute3_contig": (
            lambda mod, r: (mod.tensor(r.standard_normal((n // 4 or 1, 64 if big else 4, n // 16 or 1))
                                       .astype(np.float32), requires_grad=True),),
            lambda x: x.permute(2, 0, 1).contiguous(), True),
        "narrow_contig": (lambda mod, r: (x2(mod, r),),
                          lambda x: x.narrow(1, 1, n - 2).contiguous(), True),
        "flip0": (lambda mod, r: (x2(mod, r),), lambda x: x.flip(0), True),
        "flip1": (lambda mod, r: (x2(mod, r),), lambda x: x.flip(1), True),
        "roll0": (lambda mod, r: (x2(mod, r),), lambda x: x.roll(3, 0), True),
        "roll1": (lambda mod, r: (x2(mod, r),), lambda x: x.roll(3, 1), True),
        "roll_flat": (lambda mod, r: (x2(mod, r),), lambda x: x.roll(5), True),
        "repeat": (lambda mod, r: (x2(mod, r),), lambda x: x.repeat(2, 1), True),
        "tile": (lambda mod, r: (x2(mod, r),), lambda x: x.tile((1, 2)), True),
        "repeat_interleave": (lambda mod, r: (x2(mod, r),),
                              lambda x: x.repeat_interleave(2, dim=0), True),
        "pad_const": (lambda mod, r: (x2(mod, r),),
                      lambda x: m(x).nn.functional.pad(x, (2, 2, 2, 2)), True),
        "pad_reflect": (lambda mod, r: (x2(mod, r),),
                        lambda x: m(x).nn.functional.pad(x[None], (2, 2, 2, 2), mode="reflect"),
                        True),
        "pad_replicate": (lambda mod, r: (x2(mod, r),),
                          lambda x: m(x).nn.functional.pad(x[None], (2, 2, 2, 2),
                                                           mode="replicate"), True),
        "pad_circular": (lambda mod, r: (x2(mod, r),),
                         lambda x: m(x).nn.functional.pad(x[None], (2, 2, 2, 2),
                                                          mode="circular"), True),
        "cat0": (lambda mod, r: (x2(mod, r), x2(mod, r)), lambda a, b: m(a).cat([a, b], 0), True),
        "cat1": (lambda mod, r: (x2(mod, r), x2(mod, r)), lambda a, b: m(a).cat([a, b], 1), True),
        "stack0": (lambda mod, r: (x2(mod, r), x2(mod, r)), lambda a, b: m(a).stack([a, b], 0),
                   True),
        "stack2": (lambda mod, r: (x2(mod, r), x2(mod, r)), lambda a, b: m(a).stack([a, b], 2),
                   True),
        "tril": (lambda mod, r: (x2(mod, r),), lambda x: x.tril(), True),
        "triu1": (lambda mod, r: (x2(mod, r),), lambda x: x.triu(1), True),
        "diag": (lambda mod, r: (x2(mod, r),), lambda x: m(x).diag(x), True),
        "diag_embed": (lambda mod, r: (mod.tensor(r.standard_normal(n).astype(np.float32),
                                                  requires_grad=True),),
                       lambda x: m(x).diag_embed(x), True),
        # sorting and selection
        "sort1": (lambda mod, r: (x2(mod, r),), lambda x: x.sort(1)[0], True),
        "sort0": (lambda mod, r: (x2(mod, r),), lambda x: x.sort(0)[0], True),
        "argsort1": (lambda mod, r: (x2(mod, r, False),), lambda x: x.argsort(1), False),
        "topk8": (lambda mod, r: (x2(mod, r),), lambda x: x.topk(k8, 1)[0], True),
        "topk8_0": (lambda mod, r: (x2(mod, r),), lambda x: x.topk(k8, 0)[0], True),
        "kthvalue": (lambda mod, r: (x2(mod, r),), lambda x: x.kthvalue(n // 2, 1)[0], True),
        "median1": (lambda mod, r: (x2(mod, r),), lambda x: x.median(1)[0], True),
        "median_all": (lambda mod, r: (x2(mod, r),), lambda x: x.median(), True),
        "mode1": (lambda mod, r: (mod.tensor(r.integers(0, 50, (n, n)).astype(np.float32),
                                             requires_grad=True),),
                  lambda x: x.mode(1)[0], True),
        "msort": (lambda mod, r: (x2(mod, r),), lambda x: x.msort(), True),
        "unique": (lambda mod, r: (mod.tensor(r.integers(0, 1000, nn_)),),
                   lambda x: m(x).unique(x), False),
        "searchsorted": (lambda mod, r: (mod.tensor(np.sort(r.standard_normal(nn_))
                                                    .astype(np.float32)),
                                         mod.tensor(r.standard_normal(nn_).astype(np.float32))),
                         lambda s, v: m(s).searchsorted(s, v), False),
        # reductions
        "sum": (lambda mod, r: (x2(mod, r),), lambda x: x.sum(), True),
        "sum0": (lambda mod, r: (x2(mod, r),), lambda x: x.sum(0), True),
        "sum1": (lambda mod, r: (x2(mod, r),), lambda x: x.sum(1), True),
        "mean0": (lambda mod, r: (x2(mod, r),), lambda x: x.mean(0), True),
        "mean1": (lambda mod, r: (x2(mod, r),), lambda x: x.mean(1), True),
        "prod1": (lambda mod, r: (x2(mod, r),), lambda x: x.prod(1), True),
        "amax0": (lambda mod, r: (x2(mod, r),), lambda x: x.amax(0), True),
        "amax1": (lambda mod, r: (x2(mod, r),), lambda x: x.amax(1), True),
        "amin_all": (lambda mod, r: (x2(mod, r),), lambda x: x.amin(), True),
        "max1_idx": (lambda mod, r: (x2(mod, r),), lambda x: x.max(1)[0], True),
        "min0_idx": (lambda mod, r: (x2(mod, r),), lambda x: x.min(0)[0], True),
        "argmax1": (lambda mod, r: (x2(mod, r, False),), lambda x: x.argmax(1), False),
        "argmin0": (lambda mod, r: (x2(mod, r, False),), lambda x: x.argmin(0), False),
        "norm1": (lambda mod, r: (x2(mod, r),), lambda x: x.norm(dim=1), True),
        "norm0": (lambda mod, r: (x2(mod, r),), lambda x: x.norm(dim=0), True),
        "norm": (lambda mod, r: (x2(mod, r),), lambda x: x.norm(), True),
        "var1": (lambda mod, r: (x2(mod, r),), lambda x: x.var(1), True),
        "std0": (lambda mod, r: (x2(mod, r),), lambda x: x.std(0), True),
        "logsumexp1": (lambda mod, r: (x2(mod, r),), lambda x: x.logsumexp(1), True),
        "cumsum1": (lambda mod, r: (x2(mod, r),), lambda x: x.cumsum(1), True),
        "cumsum0": (lambda mod, r: (x2(mod, r),), lambda x: x.cumsum(0), True),
        "cumprod1": (lambda mod, r: (x2(mod, r),), lambda x: x.cumprod(1), True),
        "all1": (lambda mod, r: (mod.tensor(r.random((n, n)) < 0.99),), lambda x: x.all(1), False),
        "any": (lambda mod, r: (mod.tensor(r.random((n, n)) < 0.01),), lambda x: x.any(), False),
        "count_nonzero1": (lambda mod, r: (mod.tensor(r.integers(0, 2, (n, n))
                                                      .astype(np.float32)),),
                           lambda x: m(x).count_nonzero(x, 1), False),
    }
    return ops


def _best(fn, repeat, min_time):
    """Best per-call time (s) over ``repeat`` samples, each looping >= ``min_time``."""
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    loops = max(1, int(min_time / one))
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter() - t0) / loops)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--sizes", default="big,small")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.02)
    ap.add_argument("--json", default="")
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
    import ferrograd as fg

    libs = {"fg": fg}
    if not args.no_torch:
        import torch

        libs["torch"] = torch
    mods = {id(v): v for v in libs.values()}

    def m(t):
        return fg if isinstance(t, fg.Tensor) else libs["torch"]

    only = {s for s in args.only.split(",") if s}
    rows = []
    with open("/proc/loadavg") as f:
        load0 = f.read().split()[:3]
    for threads in [int(t) for t in args.threads.split(",")]:
        for name in libs:
            libs[name].set_num_threads(threads)
        for size in args.sizes.split(","):
            big = size == "big"
            ops = _ops(m, big)
            for op, (make, fn, diff) in ops.items():
                if only and op not in only:
                    continue
                for mode in ("fwd", "fwd+bwd") if diff else ("fwd",):
                    times = {}
                    for lname, mod in libs.items():
                        r = np.random.default_rng(0)
                        a = make(mod, r)
                        if mode == "fwd":
                            def call(a=a, mod=mod, fn=fn):
                                with mod.no_grad():
                                    return fn(*a)
                        else:
                            out0 = fn(*a)
                            g = mod.tensor(np.random.default_rng(1).standard_normal(
                                tuple(out0.shape)).astype(np.float32))
                            leaves = [t for t in a if getattr(t, "requires_grad", False)]

                            def call(a=a, g=g, leaves=leaves, fn=fn):
                                for t in leaves:
                                    t.grad = None
                                fn(*a).backward(g)
                        try:
                            times[lname] = _best(call, args.repeat, args.min_time)
                        except Exception as e:  # noqa: BLE001
                            times[lname] = None
                            print(f"  {lname} {op} {mode}: {type(e).__name__}: {e}",
                                  file=sys.stderr)
                    f_ms = times["fg"] and times["fg"] * 1e3
                    t_ms = times.get("torch") and times["torch"] * 1e3
                    ratio = (t_ms / f_ms) if f_ms and t_ms else None
                    row = dict(op=op, size="1M" if big else "16", mode=mode, threads=threads,
                               fg_ms=f_ms, torch_ms=t_ms, ratio=ratio)
                    rows.append(row)
                    print(f"{op:20s} {row['size']:>3s} {mode:8s} t{threads}  "
                          f"fg {f_ms if f_ms is None else round(f_ms, 4)!s:>9} ms  "
                          f"torch {t_ms if t_ms is None else round(t_ms, 4)!s:>9} ms  "
                          f"x{ratio if ratio is None else round(ratio, 2)}", flush=True)
    with open("/proc/loadavg") as f:
        load1 = f.read().split()[:3]
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    if ratios:
        print(f"median ratio {statistics.median(ratios):.2f}; "
              f"{sum(r < 1 for r in ratios)} of {len(ratios)} cases slower than PyTorch; "
              f"load before {load0}, after {load1}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(rows=rows, load_before=load0, load_after=load1), f, indent=1)
    del mods


if __name__ == "__main__":
    main()
