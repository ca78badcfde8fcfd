"""No kernel compiled for AVX2+FMA or AVX-512 may reach the software fma.

A `mul_add` in an elementwise closure compiles (outside the FMA copies) to a
call into the bundled libm, which keeps LLVM from inlining the closure into
the vectorised loop: the op then runs scalar, one call per multiply-add
(softplus, mish and logaddexp ran ~30x slower than they should). The check
disassembles the built extension (`tools/check_fma_calls.py`).
"""

from __future__ import annotations

import importlib.util
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ferrograd

ROOT = Path(__file__).resolve().parents[1]
SO = Path(ferrograd._C.__file__)

pytestmark = pytest.mark.skipif(
    platform.machine() != "x86_64"
    or sys.platform != "linux"
    or shutil.which("objdump") is None
    or shutil.which("readelf") is None,
    reason="needs an x86-64 Linux build and binutils",
)


def _tool():
    spec = importlib.util.spec_from_file_location(
        "check_fma_calls", ROOT / "tools" / "check_fma_calls.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _has_symbols(so: Path) -> bool:
    sections = subprocess.run(
        ["readelf", "-SW", str(so)], check=True, capture_output=True, text=True
    ).stdout
    return ".symtab" in sections


def test_fma_copies_never_call_the_software_fma():
    if not _has_symbols(SO):
        pytest.skip("the extension is stripped: no function names to follow")
    roots, paths = _tool().offending_paths(SO)
    # The walk starts from the copies it is meant to check (a renamed copy
    # would otherwise make this pass vacuously).
    assert any(r.endswith("vmath::map_on::wide") for r in roots)
    assert any("_fma_" in r for r in roots)
    assert not paths, "\n".join(" -> ".join(p) for p in paths)
