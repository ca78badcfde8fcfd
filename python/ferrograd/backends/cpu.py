"""``backends.cpu``: the CPU's vector capability, and which instructions
bfloat16 matrix products use.

bfloat16 products (``matmul``, ``mm``, ``bmm``, ``addmm``, ``linear`` and their
gradients) multiply pairs of bfloat16 values and sum them in float32, then
round each result once. Three paths do it, the fastest this CPU runs chosen at
import: ``"amx"`` (Intel AMX tiles, Sapphire Rapids and later),
``"avx512_bf16"`` (``vdpbf16ps``: AMD Zen 4/5, Intel Cooper Lake and later)
and ``"portable"`` (the operands widened to float32 for the float32 GEMM, on
any CPU). The environment variable ``FERROGRAD_BF16_GEMM`` names another
one at start-up; :func:`set_bf16_matmul_path` changes it at run time. The
paths agree within float32 summation-order differences.
"""

from __future__ import annotations

from .. import _C

__all__ = [
    "get_cpu_capability",
    "get_bf16_matmul_path",
    "set_bf16_matmul_path",
    "bf16_matmul_paths",
]


def get_cpu_capability() -> str:
    """``"AVX512"``, ``"AVX2"`` or ``"DEFAULT"``: the widest vector set the
    kernels use here, as PyTorch names it."""
    have = _C._cpu_features()
    if all(have.get(f) for f in ("avx512f", "avx512vl", "avx512bw", "avx512dq")):
        return "AVX512"
    if all(have.get(f) for f in ("avx2", "fma")):
        return "AVX2"
    return "DEFAULT"


def get_bf16_matmul_path() -> str:
    """The path bfloat16 matrix products take now."""
    return _C._bf16_matmul_path()


def bf16_matmul_paths() -> list[str]:
    """The paths this CPU can run, slowest first (``"portable"`` always)."""
    return list(_C._bf16_matmul_paths())


def set_bf16_matmul_path(name: str | None) -> None:
    """Make bfloat16 matrix products take ``name`` (one of
    :func:`bf16_matmul_paths`); ``None`` restores the fastest. Raises
    ``ValueError`` for an unknown name and ``RuntimeError`` for a path this
    CPU cannot run."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"set_bf16_matmul_path(): name must be a str or None, not {type(name).__name__}")
    _C._set_bf16_matmul_path(name)
