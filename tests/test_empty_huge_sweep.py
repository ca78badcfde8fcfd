"""Every public op on tensors with no elements beside a huge size, and with
sizes whose output is astronomically large: an ordinary exception or an
answer, at once.

Two families of bugs live here. A tensor such as ``empty(2**62, 0)`` holds
nothing, so any kernel that loops over its outer positions before noticing
that each holds no element runs for ever, and any that sizes scratch by the
huge dimension asks for exabytes (sort, topk, gather, cumsum, pad ...). And a
size argument such as a padding or a repeat count of ``2**40`` makes an
output whose element count overflows or cannot be allocated: PyTorch refuses
it before any work ("Storage size calculation overflowed", its allocator's
"can't allocate memory"), where a careless op builds its index lists first.

Unlike ``test_fuzz_ops.py``, which draws hostile calls at random, this sweep
is exhaustive and deterministic: each op (enumerated from ``dir()``, as the
fuzz does) is called with each tensor below and each argument pattern. The
calls run in worker processes (this file run as a script) under an
address-space limit, so a request for terabytes fails at once, with
``faulthandler`` armed so that a hang is killed and reported; a worker that
dies is restarted after the call that killed it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile

import pytest

# Zero elements, with sizes whose product (without the zero) does not fit in
# memory or in an int64; and an empty batch of a small signal.
EMPTY_SHAPES = [(2**62, 0), (0, 2**62), (2**40, 3, 0), (3, 0, 2**40), (1, 2**31, 0, 3),
                (0, 4, 1)]
# Argument patterns after the tensor: dims, counts, and an int64 index of the
# tensor's own (empty) shape, spelled "IDX", or the tensor itself, "SELF".
EMPTY_ARGS = [(), (0,), (1,), (-1,), (2,), (1, 0), (3, 0), (1, 1), (3, -1), (0, True),
              (1, -1, True), ("SELF",), ("IDX",), (0, "IDX"), (-1, "IDX"), (0, "IDX", "SELF"),
              (-1, "IDX", "SELF"), ("IDX", "SELF"), ("SELF", "SELF"), ((0, 1),), ((1, 0),),
              (-1, 0)]
# Sizes whose outputs cannot exist (or, beside a zero, hold nothing).
HUGE_ARGS = [(2**40,), (2**62,), (2**63 - 1,), ((2**40, 2**40),), (2**31, 2**31),
             (2**40, 2**40, 2**40), ((2**40, 2**40, 2**40, 2**40),), (0, 2**40), (-1, 2**40),
             (1, 2**40), (0, 2**40, 1), (-1, 2**62, 2**62),
             *[((2**40, 2**40), mode) for mode in ("replicate", "reflect", "circular")],
             ((2**62, 2**62, 2**62, 2**62), "replicate")]
# Small tensors with elements, for the sizes.
SMALL_SHAPES = [(2, 3), (1, 2, 3), (1, 1, 2, 3)]

# Not ops, or ops whose effect is process-wide state, files or a long wait
# (test_fuzz_ops.py skips most of these already).
SKIP = {"fg.save", "fg.load", "fg.manual_seed", "fg.seed", "fg.set_rng_state",
        "fg.set_default_dtype", "fg.set_default_tensor_type", "fg.set_printoptions",
        "fg.use_deterministic_algorithms", "fg.set_num_threads", "fg.set_num_interop_threads",
        "fg.set_flush_denormal", "fg.set_anomaly_enabled", "fg.set_grad_enabled",
        "fg.compile", "fg.vmap", "Tensor.share_memory_", "Tensor.register_hook",
        "Tensor.register_post_accumulate_grad_hook"}


def _names():
    from test_fuzz_ops import ops

    return sorted(n for n in ops() if not n.startswith("reg.") and n not in SKIP)


def _calls(names):
    """The sweep's calls, in a fixed order: (op, tensor, args) descriptions."""
    out = []
    for name in names:
        for shape in EMPTY_SHAPES:
            out += [(name, ["empty", shape], list(a)) for a in EMPTY_ARGS + HUGE_ARGS]
        for shape in SMALL_SHAPES:
            out += [(name, ["ones", shape], list(a)) for a in HUGE_ARGS]
        if not name.startswith("Tensor."):
            # Creation functions take the sizes alone.
            out += [(name, ["none", []], list(a)) for a in HUGE_ARGS]
    return out


# -- the worker (this file run as a script) -------------------------------------------


def _worker(log_path, timeout, first, calls):
    import faulthandler
    import inspect
    import resource
    import types

    import ferrograd as fg
    import ferrograd.nn.functional as F

    (fg.ones(200_000) * 2).sum()  # the thread pool's stacks are mapped before the cap
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = used + (2 << 30)
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY
                                            else min(cap, hard), hard))
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND)

    def note(*event):
        os.write(log, (json.dumps(event) + "\n").encode())

    def resolve(name, t):
        space, attr = name.split(".", 1)
        if space == "Tensor":
            static = inspect.getattr_static(fg.Tensor, attr, None)
            if inspect.isdatadescriptor(static):
                return lambda: getattr(t, attr)
            return getattr(t, attr, None)
        fn = getattr(fg if space == "fg" else F, attr)
        return (lambda *a: fn(*a)) if t is None else (lambda *a: fn(t, *a))

    for i, (name, (kind, shape), args) in enumerate(calls, start=first):
        t = {"empty": fg.empty, "ones": fg.ones}[kind](shape) if kind != "none" else None
        idx = fg.empty(shape, dtype=fg.int64) if kind == "empty" else None
        args = [idx if a == "IDX" else t if a == "SELF" else
                tuple(a) if isinstance(a, list) else a for a in args]
        fn = resolve(name, t)
        if fn is None or not callable(fn):
            continue
        note("call", i)
        faulthandler.dump_traceback_later(timeout, exit=True)
        try:
            result = fn(*args)
            if isinstance(result, types.GeneratorType):
                next(result, None)
        except BaseException as e:  # noqa: BLE001 - PanicException is a BaseException
            if type(e).__name__ == "PanicException" or "internal error" in str(e):
                note("fail", i, f"{type(e).__name__}: {str(e)[:300]}")
        finally:
            faulthandler.cancel_dump_traceback_later()
    note("done", -1)


def _describe(call):
    name, (kind, shape), args = call
    on = "" if kind == "none" else f" on {kind}{tuple(shape)}"
    return f"{name}{on} with {tuple(args)}"


def run_calls(calls, timeout=60.0):
    """Runs `calls` in worker processes, restarting after any call that kills
    one; returns the failures as text.

    A hang is a call still running after `timeout` seconds. Some calls have
    real work proportional to a huge size: `split(2**40)` of an
    `empty(2**62, 0)` makes 4,194,304 views (13 s on a 2-core EPYC Zen 3,
    PyTorch 2.15 22 s). The limit leaves them room; a loop over a size of
    2**40 or more still takes hours."""
    failures, start = [], 0
    while start < len(calls):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(calls[start:], f)
            calls_path = f.name
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            log_path = f.name
        cmd = [sys.executable, __file__, log_path, str(timeout), str(start), calls_path]
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              env=dict(os.environ, RUST_BACKTRACE="0"))
        with open(log_path) as f:
            events = [json.loads(line) for line in f if line.strip()]
        os.unlink(log_path)
        os.unlink(calls_path)
        failures += [f"{_describe(calls[e[1]])}: {e[2]}" for e in events if e[0] == "fail"]
        if proc.returncode == 0 and events and events[-1][0] == "done":
            break
        seen = [i for kind, i, *_ in events if kind == "call"]
        if not seen:
            failures.append(f"worker failed before any call: {proc.stderr[-2000:]}")
            break
        last = seen[-1]
        rc = proc.returncode
        how = ("hang (no result within the time limit)" if "Timeout" in proc.stderr
               else f"killed by {signal.Signals(-rc).name}" if rc < 0
               else f"worker exited with {rc}")
        failures.append(f"{how} in {_describe(calls[last])}\n{proc.stderr[-1500:]}")
        start = last + 1
    return failures


@pytest.mark.slow
def test_ops_on_empty_tensors_beside_huge_sizes_and_huge_output_sizes():
    from concurrent.futures import ThreadPoolExecutor

    names = _names()
    assert len(names) > 600
    calls = _calls(names)
    shards = [calls[i::2] for i in range(2)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(run_calls, shards))
    failures = [f for shard in results for f in shard]
    assert not failures, "\n\n".join(failures)


if __name__ == "__main__":
    _log, _timeout, _first, _calls_path = sys.argv[1:]
    with open(_calls_path) as _f:
        _todo = json.load(_f)
    _worker(_log, float(_timeout), int(_first), _todo)
