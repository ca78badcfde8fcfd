"""Forward-mode automatic differentiation, with PyTorch's API.

Inside a ``dual_level()``, ``make_dual(x, t)`` gives a tensor carrying the
tangent ``t``; every op on it computes its output's tangent (the
Jacobian-vector product) as it runs, and ``unpack_dual(y)`` returns
``(primal, tangent)``. Tangents are ordinary tensors: they can require grad
and be differentiated (reverse-over-forward), and a backward computed with
``create_graph=True`` under a dual level propagates them
(forward-over-reverse). One level exists at a time, as in PyTorch.
"""

from __future__ import annotations

from collections import namedtuple

from .. import _C

__all__ = [
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
]

_current_level = -1


def enter_dual_level():
    """Enters a new forward grad level, used by default by ``make_dual`` and
    ``unpack_dual``, and returns its index. Levels cannot be nested."""
    global _current_level
    new_level = _C._enter_dual_level()
    if new_level != _current_level + 1:
        raise RuntimeError(
            "Entering a new forward AD level but the current level "
            "is not valid. Make sure you did not modified it directly."
        )
    _current_level = new_level
    return new_level


def exit_dual_level(*, level=None):
    """Exits the forward grad level ``level`` (the current one by default),
    deleting every tangent made in it."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one "
            "that was created. This is not supported."
        )
    _C._exit_dual_level(level=level)
    _current_level = level - 1


def make_dual(tensor, tangent, *, level=None):
    """Returns a tensor sharing memory with ``tensor`` (and differentiable
    into it in reverse mode) that carries ``tangent`` as its forward gradient.

    ``tangent`` must have ``tensor``'s shape and dtype; both must be floating
    point. Must be called inside a ``dual_level``.
    """
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level "
            "exists, make sure to enter_dual_level() first."
        )
    if not tensor.is_floating_point():
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {tensor.dtype}"
        )
    if not tangent.is_floating_point():
        raise ValueError(
            f"Expected tangent to be floating point or complex, but got: {tangent.dtype}"
        )
    return _C._make_dual(tensor, tangent, level=level)


_UnpackedDualTensor = namedtuple("_UnpackedDualTensor", ["primal", "tangent"])


class UnpackedDualTensor(_UnpackedDualTensor):
    """Named tuple ``(primal, tangent)`` returned by :func:`unpack_dual`."""


def unpack_dual(tensor, *, level=None):
    """Splits a dual tensor into ``(primal, tangent)``: the primal shares
    ``tensor``'s memory without the tangent, the tangent is ``None`` when
    ``tensor`` has none (or no level is open)."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    primal, tangent = _C._unpack_dual(tensor, level=level)
    return UnpackedDualTensor(primal, tangent)


class dual_level:
    """Context manager for forward AD: enters a dual level on entry and exits
    it (dropping every tangent made in it) on exit."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)

        return wrapper


_is_fwd_grad_enabled = _C._is_fwd_grad_enabled


class _set_fwd_grad_enabled:
    """Turns tangent propagation on or off until the block ends."""

    def __init__(self, mode):
        self.prev = _is_fwd_grad_enabled()
        _C._set_fwd_grad_enabled(mode)

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc_value, traceback):
        _C._set_fwd_grad_enabled(self.prev)
