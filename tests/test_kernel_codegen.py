"""The vectorised copies of the elementwise loops call no software fused multiply-add.

`f32::mul_add` is one instruction where FMA is enabled and a call into libm's
`fma`/`fmaf` everywhere else. A closure handed to `kernels::vmath`'s loops is
compiled for the x86-64 baseline; when LLVM keeps it out of line, the AVX-512
and AVX2 copies of the loop run it once per element, scalar, with a libm call
per multiply-add (a 20-30x slowdown, invisible to every correctness test).
`tools/check_fma_calls.py` follows the call graph of the built extension from
each FMA-compiled function; this test fails on any path it finds.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

import ferrograd

TOOL = Path(__file__).resolve().parents[1] / "tools" / "check_fma_calls.py"


def _tool():
    spec = importlib.util.spec_from_file_location("check_fma_calls", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(
    shutil.which("objdump") is None or shutil.which("readelf") is None,
    reason="needs objdump and readelf (binutils) to disassemble the extension",
)
def test_no_vectorised_loop_reaches_software_fma():
    so = Path(ferrograd._C.__file__)
    roots, paths = _tool().offending_paths(so)
    # No FMA-compiled function at all means the symbols are gone (a stripped
    # build) and the check would pass without looking: that is a failure too.
    assert any("::vmath::map_on::wide" in r for r in roots), (
        f"no vectorised elementwise loop found in {so} (stripped?)"
    )
    assert not paths, "FMA-compiled code calls the software fma/fmaf:\n" + "\n".join(
        " -> ".join(p) for p in paths
    )
