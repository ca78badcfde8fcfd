"""``autograd.Variable``: the pre-0.4 wrapper, which is a plain tensor today.

``Variable(t, requires_grad=True)`` returns ``t`` detached with
``requires_grad`` set (PyTorch returns the tensor itself, so old code's
``.data`` and ``.grad`` keep working), and every tensor is an instance of
``Variable``, as in PyTorch since 0.4.
"""

from __future__ import annotations

import warnings

from .. import _C

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _C.Tensor)


class Variable(metaclass=_VariableMeta):
    """Kept for old code: ``Variable(tensor, requires_grad=False)`` is the tensor
    (detached, with ``requires_grad``); ``isinstance(t, Variable)`` holds for
    every tensor. ``volatile=True`` (removed in PyTorch 0.4) is ignored with
    PyTorch's warning (which names ``torch.no_grad``, ``ferrograd.no_grad`` here)."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with ferrograd.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            data = _C.empty(0)
        if not isinstance(data, _C.Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
