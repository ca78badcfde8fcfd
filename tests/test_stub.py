"""The type stub python/ferrograd/_C.pyi against the built extension.

``mypy.stubtest`` imports ``ferrograd._C`` and compares every class, method,
property, function and constant with the stub: a name in one but not the
other, or a parameter whose name, kind or default differs, fails the test.
A new or changed ``#[pyfunction]``/``#[pymethods]`` entry in src/py/*.rs
therefore needs the matching change in the stub. What stubtest cannot check
is listed, with the reason, in tests/stubtest_allowlist.txt; an entry that is
no longer needed fails the test too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ferrograd

ROOT = Path(__file__).resolve().parent.parent
ALLOWLIST = Path(__file__).resolve().parent / "stubtest_allowlist.txt"


def test_stub_and_marker_ship_with_the_package():
    # Next to the package that is imported: in CI that is the installed wheel.
    pkg = Path(ferrograd.__file__).parent
    assert (pkg / "_C.pyi").is_file()
    assert (pkg / "py.typed").is_file()


@pytest.mark.slow
def test_stub_matches_the_extension():
    pytest.importorskip("mypy.stubtest", reason="mypy is not installed (pip install '.[test]')")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy.stubtest",
            "ferrograd._C",
            "--allowlist",
            str(ALLOWLIST),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (
        "stubtest found differences between python/ferrograd/_C.pyi and ferrograd._C:\n"
        + proc.stdout
        + proc.stderr
    )
