"""Tensors as MPI buffers.

Tensors travel as their own memory: a contiguous tensor's ``numpy()`` view is handed to
mpi4py's buffer (upper-case) methods, which release the GIL while MPI works; a
non-contiguous tensor goes through one contiguous staging copy and is written back. Every
write into a tensor bumps its version counter (through an in-place op on an empty view of
it), so a tensor saved for backward and then overwritten by a collective is caught by
autograd exactly as an in-place op would be.
"""

from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import no_grad


def _check_tensor(t, name="tensor"):
    from .. import _C

    if not isinstance(t, _C.Tensor):
        raise TypeError(f"{name} must be a Tensor, but got {type(t).__name__}")


def _low_precision(t):
    return str(t.dtype).rsplit(".", 1)[-1] in ("float16", "bfloat16")


def _np(t):
    """``t``'s values as a NumPy array: its memory, or for float16/bfloat16 (which MPI has
    no type for, and NumPy no bfloat16) a float32 copy, exact for either."""
    d = t.detach()
    return d.float().numpy() if _low_precision(t) else d.numpy()


class _Buf:
    """A contiguous NumPy array over a tensor's memory (or a staging copy when the tensor
    is not contiguous, or float16/bfloat16: staged as float32, so a sum is done in float32
    and rounded once) and how to finish a write into the tensor."""

    def __init__(self, t):
        self.t = t
        self.staged = _low_precision(t)
        self.view = _np(t)
        if self.view.flags.c_contiguous and not self.staged:
            self.arr = self.view
        else:
            self.arr = np.ascontiguousarray(self.view)

    def written(self):
        if self.staged:
            from .. import _C

            with no_grad():
                self.t.detach().copy_(_C.from_numpy(self.arr))
            return
        if self.arr is not self.view:
            self.view[...] = self.arr
        _bump_version(self.t)


def _bump_version(t):
    # The data changed under autograd's feet; an in-place op on an empty view of the
    # tensor bumps its (shared) version counter without touching a byte.
    with no_grad():
        t.detach().reshape(-1)[:0].zero_()
