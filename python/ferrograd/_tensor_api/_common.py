"""Argument checks and conversions shared by the tensor API modules."""

from __future__ import annotations

import builtins

import numpy as np

from .. import _C
from .._dispatch import check_tensor, is_batched

_check = check_tensor


def _vmap_level(*values):
    """The innermost ``vmap`` level among ``values`` (BatchedTensors) and the
    batching module, or ``(0, None)`` when none is batched."""
    # Most calls carry plain tensors and numbers: answered by one loop, without
    # importing the batching module or listing the arguments.
    if not is_batched(*values):
        return 0, None
    from ..func import _batched

    return _batched.max_level(values), _batched


def _wrap_dim(dim, ndim):
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def _from_np(arr, dtype=None):
    arr = np.asarray(arr)
    if arr.ndim == 0:
        # A 0-d result stays 0-d, in its own dtype (ascontiguousarray would make it 1-d).
        out = _C.from_numpy(arr.reshape(1).copy()).reshape(())
    else:
        out = _C.from_numpy(np.ascontiguousarray(arr))
    return out if dtype is None or out.dtype == dtype else out.to(dtype)


def _alloc_guard(nbytes):
    # Refuse before NumPy tries to allocate (a MemoryError is no PyTorch error),
    # with the text the native allocator raises.
    if nbytes > 1 << 33:
        raise RuntimeError(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate "
            f"{nbytes} bytes. Error code 12 (Cannot allocate memory)"
        )


def _np(t):
    return t.detach().numpy()


def _size_args(fn, size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, int) or isinstance(s, builtins.bool):
            raise TypeError(
                f"{fn}(): argument 'size' must be tuple of ints, but found element of type "
                f"{type(s).__name__}"
            )
    return tuple(size)
