"""PyTorch names that copied training code touches and that mean little on a
CPU-only engine, each doing what PyTorch does on a machine without a GPU or
what the name promises on the CPU.

- ``f"{loss:.4f}"``: ``Tensor.__format__`` formats a one-element (0-d)
  tensor as its Python number, as PyTorch's does.
- ``torch.range`` (deprecated in PyTorch, with its warning; the end is
  included), ``set_float32_matmul_precision``/``get_...`` (float32 products
  are always computed in full float32 here, so the setting is kept and
  reported but changes nothing), ``get/set_num_interop_threads`` (ferrograd
  has one pool; the interop count is kept for code that reads it back).
- Memory formats (``channels_last``, ``contiguous_format``, ...): accepted
  wherever PyTorch takes ``memory_format=``; tensors keep their row-major
  layout, so results are identical.
- ``Tensor.pin_memory()`` returns the tensor (there is no device to copy to,
  so page-locking would buy nothing); ``is_pinned()`` is False.
"""

from __future__ import annotations

import math
import warnings

from . import _C
from ._C import Tensor
from ._methods import attach

__all__ = [
    "range",
    "set_float32_matmul_precision",
    "get_float32_matmul_precision",
    "set_num_interop_threads",
    "get_num_interop_threads",
    "memory_format",
    "contiguous_format",
    "channels_last",
    "channels_last_3d",
    "preserve_format",
]


# ----- formatting --------------------------------------------------------------------------

def _format(self, format_spec):
    # As PyTorch: a 0-d tensor formats as its value, anything else as ``object`` does
    # (its ``str`` for an empty spec, a TypeError otherwise).
    if self.dim() == 0:
        return self.item().__format__(format_spec)
    return object.__format__(self, format_spec)


# ----- memory formats ----------------------------------------------------------------------

class memory_format:  # noqa: N801 - PyTorch's name
    """A memory layout PyTorch can give a tensor (``ferrograd.channels_last``, ...).

    ferrograd keeps every tensor in row-major order, so a requested format
    changes no value; ``Tensor.is_contiguous(memory_format=...)`` still
    answers from the actual strides."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self):
        return f"ferrograd.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


# ----- deprecated and settings functions ---------------------------------------------------

def range(  # noqa: A001
    start: float = 0,
    end: float | None = None,
    step: float = 1,
    *,
    dtype: _C.dtype | None = None,
    device: str | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """``torch.range``: ``start`` to ``end`` *inclusive*, ``step`` apart, in the
    default float dtype unless ``dtype`` is given. Deprecated (as in PyTorch)
    in favour of ``arange``, whose end is excluded."""
    warnings.warn(
        "ferrograd.range is deprecated and will be removed in a future release because its "
        "behavior is inconsistent with Python's range builtin. Instead, use ferrograd.arange, "
        "which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = math.floor((end - start) / step) + 1
    dt = dtype if dtype is not None else _C.get_default_dtype()
    values = _C.arange(n, dtype=_C.float64) * step + start
    out = values.to(dt)
    if device is not None:
        out = out.to(device)
    return out.requires_grad_(True) if requires_grad else out


_MATMUL_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """Kept and reported by ``get_float32_matmul_precision``; ferrograd computes
    float32 products in full float32 whatever the setting (PyTorch's
    ``"high"``/``"medium"`` allow TF32 or bfloat16 on GPUs)."""
    global _matmul_precision
    if precision not in _MATMUL_PRECISIONS:
        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
            "setFloat32MatmulPrecision call has no effect.",
            UserWarning,
            stacklevel=2,
        )
        return
    _matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """The value last given to ``set_float32_matmul_precision`` (``"highest"``)."""
    return _matmul_precision


_interop_threads = None


def set_num_interop_threads(num: int) -> None:
    """Kept for ``get_num_interop_threads``: ferrograd runs ops one at a time on
    one pool (``set_num_threads`` sizes it), so there is no inter-op pool."""
    global _interop_threads
    if not isinstance(num, int) or isinstance(num, bool):
        raise TypeError(
            f"set_num_interop_threads(): argument 'num' must be int, not {type(num).__name__}"
        )
    if num <= 0:
        raise RuntimeError("Expected positive number of threads")
    _interop_threads = num


def get_num_interop_threads() -> int:
    """The number given to ``set_num_interop_threads``, else the pool's size."""
    return _interop_threads if _interop_threads is not None else _C.get_num_threads()


# ----- Tensor methods ----------------------------------------------------------------------

def _pin_memory(self, device=None):
    """Returns the tensor itself: ferrograd has no accelerator to copy to, so
    page-locked memory would buy nothing (PyTorch refuses without a GPU)."""
    return self


def _is_pinned(self, device=None):
    """Always False (see ``pin_memory``)."""
    return False


def _install():
    _pin_memory.__name__ = _pin_memory.__qualname__ = "pin_memory"
    _is_pinned.__name__ = _is_pinned.__qualname__ = "is_pinned"
    attach(
        {
            "__format__": _format,
            # Flags PyTorch code reads before treating a tensor specially; all true
            # answers here are "no" (ferrograd has no sparse or quantized tensors).
            "is_meta": False,
            "is_sparse": False,
            "is_quantized": False,
            "pin_memory": _pin_memory,
            "is_pinned": _is_pinned,
        },
        __name__,
        replace=True,
    )


_install()
