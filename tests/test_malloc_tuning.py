"""The extension sets glibc's malloc thresholds when it loads (src/alloc.rs), so a step's
megabyte-sized buffers are not mapped and faulted in afresh every time, leaves malloc
alone when the user configured it, and does not make memory grow."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ferrograd

PACKAGE_ROOT = str(Path(ferrograd.__file__).resolve().parent.parent)
USER_VARS = (
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "GLIBC_TUNABLES",
    "FERROGRAD_MALLOC_TUNING",
)

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="the tuning is for glibc's malloc",
)

# Three 4 MiB buffers made and freed per round: with glibc's moving thresholds the 12 MiB
# free at the top of the heap exceed its trim threshold (twice the 4 MiB block), so every
# round gives the pages back and faults all 3,072 in again.
CHILD = """
import json, random, resource
import ferrograd as fg

def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))

def round_():
    a = fg.ones(1 << 20); b = fg.ones(1 << 20); c = fg.ones(1 << 20)
    del a, b, c

for _ in range(3):
    round_()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    round_()
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 20

# Buffers of random sizes (32 KiB to 40 MiB, some above the mmap threshold) with a few
# alive at a time: resident memory must not creep up.
r = random.Random(0)
keep = []
for i in range(300):
    keep.append(fg.ones(r.randint(1 << 13, 10 << 20)))
    if len(keep) > 5:
        keep.pop(r.randrange(len(keep)))
    if i == 100:
        rss_100 = rss()
print(json.dumps({"tuning": fg._C._malloc_tuning(), "faults": faults,
                  "growth": rss() - rss_100}))
"""


def run_child(_code=CHILD, **env_vars):
    env = {k: v for k, v in os.environ.items() if k not in USER_VARS}
    env.update(env_vars)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_thresholds_set_at_import_and_buffers_reused():
    res = run_child()
    assert res["tuning"] == {"mmap_threshold": 32 << 20, "trim_threshold": 128 << 20}
    # Reused heap memory: no page faults per round (a few for Python's own objects).
    assert res["faults"] < 100, res
    # Freed memory is reused or returned: at most the 128 MiB trim threshold is kept.
    assert res["growth"] < 144 << 20, res


def test_without_tuning_the_same_rounds_fault():
    # The fault count above really measures the problem the tuning removes.
    res = run_child(FERROGRAD_MALLOC_TUNING="0")
    assert res["tuning"] == {"skipped": "FERROGRAD_MALLOC_TUNING=0"}
    assert res["faults"] > 1000, res


@pytest.mark.parametrize(
    "var,value",
    [
        ("MALLOC_TRIM_THRESHOLD_", "1048576"),
        ("MALLOC_MMAP_THRESHOLD_", "262144"),
        ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1048576"),
    ],
)
def test_user_malloc_settings_are_kept(var, value):
    res = run_child(**{var: value})
    assert res["tuning"] == {"skipped": var}


# Per-sample gradients free an 8 MiB result and several smaller buffers together at the
# end of each call; at a 64 MiB trim threshold that still gave ~2,100 faults per call.
PER_SAMPLE = """
import json, resource
import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd.func import grad, vmap

fg.manual_seed(0)
p = {"w1": fg.randn(128, 64) * 0.1, "b1": fg.zeros(128),
     "w2": fg.randn(10, 128) * 0.1, "b2": fg.zeros(10)}
x, y = fg.randn(256, 64), fg.randint(0, 10, (256,))

def loss(p, x, y):
    h = F.relu(F.linear(x, p["w1"], p["b1"]))
    return F.cross_entropy(F.linear(h, p["w2"], p["b2"]), y)

f = vmap(grad(loss), in_dims=(None, 0, 0))
for _ in range(30):
    f(p, x, y)
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    f(p, x, y)
print(json.dumps({"faults": (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 20}))
"""


def test_per_sample_gradients_reuse_their_buffers():
    res = run_child(_code=PER_SAMPLE)
    assert res["faults"] < 100, res
