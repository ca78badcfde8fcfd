"""``backends.cuda``: no CUDA; the flags scripts set (nanoGPT's
``backends.cuda.matmul.allow_tf32 = True``) are plain attributes that change
nothing, since ferrograd's float32 products are always full float32."""

from __future__ import annotations

import contextlib

__all__ = [
    "is_built",
    "matmul",
    "sdp_kernel",
    "enable_flash_sdp",
    "enable_mem_efficient_sdp",
    "enable_math_sdp",
    "flash_sdp_enabled",
    "mem_efficient_sdp_enabled",
    "math_sdp_enabled",
]


class _Matmul:
    """``backends.cuda.matmul``: its switches, kept as set."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __repr__(self):
        return (
            f"<backends.cuda.matmul allow_tf32={self.allow_tf32} "
            f"allow_fp16_reduced_precision_reduction={self.allow_fp16_reduced_precision_reduction} "
            f"allow_bf16_reduced_precision_reduction={self.allow_bf16_reduced_precision_reduction}>"
        )


matmul = _Matmul()


def is_built():
    """Always ``False``: ferrograd is not built with CUDA."""
    return False


_sdp = {"flash": True, "mem_efficient": True, "math": True}


def enable_flash_sdp(enabled):
    _sdp["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled):
    _sdp["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled):
    _sdp["math"] = bool(enabled)


def flash_sdp_enabled():
    return _sdp["flash"]


def mem_efficient_sdp_enabled():
    return _sdp["mem_efficient"]


def math_sdp_enabled():
    return _sdp["math"]


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True,
               enable_cudnn=True):  # fmt: skip
    """Sets the attention switches for the block and restores them; on the CPU
    ferrograd always runs its own attention kernel."""
    old = dict(_sdp)
    _sdp.update(flash=bool(enable_flash), math=bool(enable_math),
                mem_efficient=bool(enable_mem_efficient))  # fmt: skip
    try:
        yield
    finally:
        _sdp.clear()
        _sdp.update(old)
