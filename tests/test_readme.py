"""The README's Python examples run as printed, and print what their comments say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ferrograd

ROOT = Path(__file__).resolve().parent.parent
# Where the ferrograd under test was imported from (the source tree in a development
# install, site-packages in a plain one), so child processes import the same build.
PACKAGE_ROOT = str(Path(ferrograd.__file__).resolve().parent.parent)
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
# The distributed example needs mpiexec and is run by tests/test_distributed.py instead.
RUNNABLE = [b for b in BLOCKS if "init_process_group" not in b]


def test_the_readme_has_examples():
    assert len(RUNNABLE) >= 1


@pytest.mark.parametrize("index", range(len(RUNNABLE)))
def test_readme_example_runs_and_prints_what_it_says(index, tmp_path):
    code = RUNNABLE[index]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    # `print(x)  # expected` lines: the printed text, in order.
    expected = [m.strip() for m in re.findall(r"^print\(.*?\)\s+#\s*(.*)$", code, re.M)]
    printed = proc.stdout.strip().splitlines()
    assert printed[: len(expected)] == expected
