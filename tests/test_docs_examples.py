"""Every Python code block on the documentation site's pages (docs/*.md) runs, and each
``print(...)  # text`` line prints that text, in order.

A block that starts a process group (``init_process_group``) runs in two processes under
``python -m ferrograd.distributed.run -n 2``, as its page says to run it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ferrograd

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# Where the ferrograd under test was imported from, so child processes import the same build.
PACKAGE_ROOT = str(Path(ferrograd.__file__).resolve().parent.parent)
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
EXPECT = re.compile(r"^[ \t]*print\(.*\)[ \t]+#[ \t]*(.*?)[ \t]*$", re.M)


def _blocks():
    for page in sorted(DOCS.glob("*.md")):
        for i, code in enumerate(FENCE.findall(page.read_text())):
            yield pytest.param(page.name, code, id=f"{page.stem}-{i}")


BLOCKS = list(_blocks())


def _mpiexec():
    if importlib.util.find_spec("mpi4py") is None:
        return None
    beside = Path(sys.executable).with_name("mpiexec")
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def test_the_guides_have_examples():
    pages = {p.values[0] for p in BLOCKS}
    for page in ("quickstart.md", "autograd.md", "training.md", "hooks.md", "func.md",
                 "compile.md", "distributed.md", "coming-from-pytorch.md", "testing.md"):
        assert page in pages, f"{page} has no Python example"


@pytest.mark.parametrize(("page", "code"), BLOCKS)
def test_docs_example_runs_and_prints_what_it_says(page, code, tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    script = tmp_path / "example.py"
    script.write_text(code)
    if "init_process_group" in code:
        if _mpiexec() is None:
            pytest.skip("needs mpi4py and mpiexec (pip install mpi4py mpich)")
        env["FERROGRAD_NUM_THREADS"] = "1"
        cmd = [sys.executable, "-m", "ferrograd.distributed.run", "-n", "2", str(script)]
    else:
        cmd = [sys.executable, str(script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300)
    assert proc.returncode == 0, f"{page}:\n{proc.stdout}\n{proc.stderr}"
    printed = [line.rstrip() for line in proc.stdout.splitlines()]
    expected = EXPECT.findall(code)
    # Each commented print's text appears in the output, in the order of the code.
    at = 0
    for want in expected:
        try:
            at = printed.index(want, at) + 1
        except ValueError:
            pytest.fail(f"{page}: expected the line {want!r} (after line {at}) in\n"
                        + "\n".join(printed))
