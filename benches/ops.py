#!/usr/bin/env python3
"""Every registry op, timed: ferrograd against PyTorch (when importable) and
NumPy (where the op's reference is a NumPy function), in one process.

The cases come from the op registry (``ferrograd._registry``), so an op added
there is benchmarked with no edit here: elementwise ops on 16 elements and on
a 1024 x 1024 matrix (also read through a transposed view), reductions over
each dimension and over all, and fixed-shape ops at their sample's size (and
at ``Op.bench``'s when declared). Each case runs forward and, for
differentiable ops, forward + backward (and, for an op with an in-place form,
that form on the large case, repeatedly on one tensor), in float32, with the same thread
count in every library; the time is the best of ``--repeat`` runs of a loop
long enough to take ~2 ms.

    python benches/ops.py                      # every op, 1 thread
    python benches/ops.py --threads 1,2        # and 2 threads
    python benches/ops.py --only exp,sum,conv2d --json out.json
    python benches/ops.py --quick              # CI smoke run: small cases, few ops each family

The table's ratio is PyTorch's time over ferrograd's (above 1: ferrograd is
faster). The summary gives, per size, the number of cases below parity, the
median ratio and the worst cases; the header names the CPU and the measured
copy bandwidth, and each large elementwise forward also reports the
bandwidth it reached (bytes read + written per second).

Exit status is 1 when ferrograd raises or disagrees with PyTorch's values on
a case (a wrong answer fast is not a result); slow cases never fail it.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

import ferrograd as fg
from ferrograd import _registry
from ferrograd._registry import schema
from ferrograd.testing._realize import cases, entry_point

try:
    import torch
except ImportError:  # PyTorch is a yardstick, never a dependency
    torch = None


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
        model = next(ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name"))
        fam = next(ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("cpu family"))
        mod = next(ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model\t"))
        flags = set(next(ln for ln in info.splitlines() if ln.startswith("flags")).split())
        isa = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
        return f"{model} (family {fam}, model {mod}; {', '.join(isa)})"
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


def copy_bandwidth() -> float:
    """GB/s of a 64 MB NumPy copy (read + write), best of 5."""
    src = np.ones(8 * 1024 * 1024)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t)
    return 2 * src.nbytes / best / 1e9


def timeit(fn, repeat: int, budget: float = 2e-3) -> float:
    """Best time of one call in seconds: loops sized to ~``budget`` each."""
    fn()
    t = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t, 1e-7)
    n = max(1, int(budget / once))
    best = float("inf")
    for _ in range(repeat):
        gc.disable()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n)
        gc.enable()
    return best


# ----- calling an op the same way in each library --------------------------------------------


def _resolve(lib, op):
    return entry_point(lib, op)


def _tensor(lib, a, requires_grad, strided):
    if lib is fg:
        t = fg.from_numpy(np.ascontiguousarray(a.T if strided else a).copy())
        t = t.t() if strided else t
    else:
        t = torch.from_numpy(np.ascontiguousarray(a.T if strided else a).copy())
        t = t.t() if strided else t
    if t.dtype == (fg.float64 if lib is fg else torch.float64):
        t = t.float()
    if requires_grad:
        t = t.detach().requires_grad_()
    return t


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out] if hasattr(out, "shape") else []


def make_runner(lib, op, case, backward: bool, strided: bool):
    fn = _resolve(lib, op)
    def conv(a, g):
        if isinstance(a, np.ndarray):
            return _tensor(lib, a, backward and g, strided and a.ndim == 2)
        if isinstance(a, tuple) and any(isinstance(e, np.ndarray) for e in a):
            return tuple(conv(e, False) for e in a)
        return a

    args = [conv(a, g) for a, g in zip(case.args, case.grad)]
    kwargs = case.kwargs
    if not backward:
        ctx = fg.no_grad if lib is fg else torch.no_grad

        def run():
            with ctx():
                return fn(*args, **kwargs)

        return run, args
    outs = [o for o in _flat(fn(*args, **kwargs)) if o.requires_grad]
    if not outs:
        return None, args
    seeds = [o.detach() * 0 + 1 for o in outs]
    leaves = [a for a in args if hasattr(a, "requires_grad") and a.requires_grad]

    def run():
        for leaf in leaves:
            leaf.grad = None
        res = [o for o in _flat(fn(*args, **kwargs)) if o.requires_grad]
        lib.autograd.backward(res, seeds)

    return run, args


def make_inplace_runner(lib, op, case):
    """``x.<op>_(...)`` on the sample's first tensor, again and again under
    ``no_grad``: the in-place form as a training loop's ``relu_``, ``clamp_``
    or ``mul_`` runs (both libraries see the same drift of the values)."""
    args = [_tensor(lib, a, False, False) if isinstance(a, np.ndarray) else a for a in case.args]
    method = getattr(args[0], op.name + "_")
    rest, kwargs = args[1:], case.kwargs
    ctx = fg.no_grad if lib is fg else torch.no_grad

    def run():
        with ctx():
            return method(*rest, **kwargs)

    return run


def _np_ref(op):
    ref = op.ref
    mod = getattr(ref, "__module__", "") or ""
    return ref if ref is not None and (mod.startswith("numpy") or type(ref).__name__ == "ufunc") else None


def _agree(a, b) -> bool:
    a = np.asarray(a.detach().numpy() if hasattr(a, "detach") else a, dtype=np.float64)
    b = np.asarray(b.detach().numpy() if hasattr(b, "detach") else b, dtype=np.float64)
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-3, atol=1e-4, equal_nan=True)


# ----- the run -------------------------------------------------------------------------------


def _as_benched(op, size):
    """``op`` as the large cases call it: the small sample's ``call`` (packing
    tensors into a list, say) unless ``Op.bench`` declares its own."""
    if size == "large" and op.bench is not None and op.bench.call is not None:
        return dataclasses.replace(op, sample=dataclasses.replace(op.sample, call=op.bench.call))
    return op


def _same_values(op, case, got, want) -> bool:
    """Whether ferrograd's first output agrees with PyTorch's. Not checked for an
    op whose values are not defined by its inputs (random draws, uninitialised
    memory: the registry refuses its forward check); indices of a sort agree
    when they pick the same values (ties may be ordered either way)."""
    if schema.FORWARD in op.refuse:
        return True
    if _agree(got, want):
        return True
    if got.dtype.is_floating_point or not case.args or not isinstance(case.args[0], np.ndarray):
        return False
    # The values the libraries sorted: float64 samples run as float32 (`_tensor`).
    x = case.args[0].astype(np.float32) if case.args[0].dtype == np.float64 else case.args[0]
    second = case.args[1] if len(case.args) > 1 and isinstance(case.args[1], int) else -1
    dim = case.kwargs.get("dim", second)
    g, w = (np.asarray(t.detach().numpy()) for t in (got, want))
    try:
        return g.shape == w.shape and np.array_equal(np.take_along_axis(x, g, dim),
                                                     np.take_along_axis(x, w, dim))
    except (ValueError, IndexError):  # not indices into the input along `dim`
        return False


def bench_op(op, size, repeat, errors):
    rows = []
    op = _as_benched(op, size)
    for case in cases(op, size):
        layouts = [False]
        # The strided layout: each 2-D operand read through a transpose (for
        # `contiguous`, the one case where it copies).
        if size == "large" and (op.sample.kind == "ew" or op.bench is not None) and all(
            (not isinstance(a, np.ndarray)) or a.ndim == 2 for a in case.args
        ):
            layouts.append(True)
        for strided in layouts:
            for backward in ([False, True] if op.differentiable else [False]):
                row = {"op": op.name, "family": op.family, "size": size, "case": case.label,
                       "layout": "transposed" if strided else "contiguous",
                       "pass": "fwd+bwd" if backward else "fwd"}
                try:
                    run, args = make_runner(fg, op, case, backward, strided)
                    if run is None:
                        continue
                    row["ferrograd_us"] = timeit(run, repeat) * 1e6
                except Exception as e:  # noqa: BLE001 - reported, and fails the exit status
                    row["error"] = f"{type(e).__name__}: {e}"
                    errors.append(row)
                    rows.append(row)
                    continue
                if torch is not None:
                    try:
                        trun, targs = make_runner(torch, op, case, backward, strided)
                        if trun is not None:
                            row["torch_us"] = timeit(trun, repeat) * 1e6
                            if not backward:
                                got, want = _flat(run()), _flat(trun())
                                if got and want and not _same_values(op, case, got[0], want[0]):
                                    row["error"] = "ferrograd's values differ from PyTorch's"
                                    errors.append(row)
                    except Exception as e:  # noqa: BLE001 - PyTorch lacks the call or the form
                        row["torch_note"] = type(e).__name__
                ref = _np_ref(op)
                if ref is not None and not backward:
                    nargs = [a.T.copy().T if (strided and isinstance(a, np.ndarray)) else a for a in case.args]
                    nargs = [a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == np.float64 else a
                             for a in nargs]
                    try:
                        row["numpy_us"] = timeit(lambda ref=ref, nargs=nargs, kw=case.kwargs: ref(*nargs, **kw),
                                                 repeat) * 1e6
                    except Exception:  # noqa: BLE001 - NumPy lacks the keyword form
                        pass
                if "torch_us" in row:
                    row["ratio"] = row["torch_us"] / row["ferrograd_us"]
                if size == "large" and op.sample.kind == "ew" and not backward:
                    nbytes = sum(a.size * 4 for a in case.args if isinstance(a, np.ndarray))
                    nbytes += case.args[0].size * 4
                    row["GBps"] = nbytes / (row["ferrograd_us"] * 1e-6) / 1e9
                rows.append(row)
    if size == "large" and op.sample.kind == "ew" and op.has(schema.INPLACE):
        rows.extend(_bench_inplace(op, size, repeat, errors))
    return rows


def _bench_inplace(op, size, repeat, errors):
    rows = []
    for case in cases(op, size):
        row = {"op": op.name + "_", "family": op.family, "size": size, "case": case.label,
               "layout": "contiguous", "pass": "inplace"}
        try:
            row["ferrograd_us"] = timeit(make_inplace_runner(fg, op, case), repeat) * 1e6
        except Exception as e:  # noqa: BLE001 - reported, and fails the exit status
            row["error"] = f"{type(e).__name__}: {e}"
            errors.append(row)
            rows.append(row)
            continue
        if torch is not None:
            try:
                row["torch_us"] = timeit(make_inplace_runner(torch, op, case), repeat) * 1e6
                row["ratio"] = row["torch_us"] / row["ferrograd_us"]
            except Exception as e:  # noqa: BLE001 - PyTorch refuses the form (a dtype it cannot hold)
                row["torch_note"] = type(e).__name__
        rows.append(row)
    return rows


def summarize(rows, bandwidth):
    lines = []
    for size in ("small", "large"):
        rs = [r for r in rows if r["size"] == size and "ratio" in r]
        if not rs:
            continue
        ratios = sorted(r["ratio"] for r in rs)
        below = sum(1 for x in ratios if x < 1.0)
        lines.append(
            f"{size}: {len(rs)} cases against PyTorch; {below} below parity; "
            f"median {statistics.median(ratios):.2f}x; worst {ratios[0]:.2f}x"
        )
        worst = sorted(rs, key=lambda r: r["ratio"])[:10]
        for r in worst:
            lines.append(
                f"    {r['ratio']:6.2f}x  {r['op']:<28} {r['pass']:<8} {r['case']:<22} {r['layout']}"
            )
    ew = [r["GBps"] for r in rows if "GBps" in r]
    if ew:
        share = sorted(g / bandwidth for g in ew)
        lines.append(
            f"large elementwise forward: median {statistics.median(share) * 100:.0f}% of copy bandwidth, "
            f"lowest {share[0] * 100:.0f}%"
        )
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small cases of a few ops per family (CI)")
    ap.add_argument("--only", help="comma-separated op names")
    ap.add_argument("--family", help="comma-separated families")
    ap.add_argument("--threads", default="1", help="comma-separated thread counts (default 1)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="small,large")
    ap.add_argument("--json", help="write every row to this file")
    args = ap.parse_args(argv)

    ops = _registry.ops()
    if args.only:
        wanted = set(args.only.split(","))
        ops = [o for o in ops if o.name in wanted]
    if args.family:
        fams = set(args.family.split(","))
        ops = [o for o in ops if o.family in fams]
    sizes = args.sizes.split(",")
    repeat = args.repeat
    if args.quick:
        seen: dict = {}
        picked = []
        for o in ops:
            if seen.get(o.family, 0) < 2 and o.sample is not None and schema.FORWARD not in o.refuse:
                seen[o.family] = seen.get(o.family, 0) + 1
                picked.append(o)
        ops, sizes, repeat = picked, ["small"], 1

    bandwidth = copy_bandwidth()
    print(f"CPU: {cpu_name()}")
    print(f"ferrograd {fg.__version__}, NumPy {np.__version__}, "
          f"PyTorch {torch.__version__ if torch is not None else 'not installed'}")
    print(f"copy bandwidth: {bandwidth:.1f} GB/s (64 MB, read + write); load average "
          f"{os.getloadavg()[0]:.2f}")
    rows, errors = [], []
    for threads in [int(t) for t in args.threads.split(",")]:
        fg.set_num_threads(threads)
        if torch is not None:
            torch.set_num_threads(threads)
        print(f"\n== {threads} thread(s)")
        print(f"{'op':<28} {'pass':<8} {'case':<24} {'layout':<11} {'ferrograd':>10} {'torch':>10} "
              f"{'numpy':>10} {'ratio':>7}")
        for op in ops:
            for size in sizes:
                if op.sample is None:
                    continue
                for r in bench_op(op, size, repeat, errors):
                    r["threads"] = threads
                    rows.append(r)
                    fmt = lambda k, r=r: f"{r[k]:9.1f}u" if k in r else f"{'-':>10}"  # noqa: E731
                    ratio = f"{r['ratio']:6.2f}x" if "ratio" in r else f"{'-':>7}"
                    print(f"{r['op']:<28} {r['pass']:<8} {r['case'][:24]:<24} {r['layout']:<11} "
                          f"{fmt('ferrograd_us')} {fmt('torch_us')} {fmt('numpy_us')} {ratio}"
                          + (f"  ERROR {r['error']}" if "error" in r else ""))
        print()
        for line in summarize([r for r in rows if r["threads"] == threads], bandwidth):
            print(line)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_name(), "bandwidth_GBps": bandwidth, "rows": rows}, f, indent=1)
    if errors:
        print(f"\n{len(errors)} case(s) failed:", file=sys.stderr)
        for r in errors[:20]:
            print(f"  {r['op']} {r['pass']} {r['case']}: {r['error']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
