"""Argument checks shared by the functional forms: a misuse is a TypeError
naming the argument, as PyTorch's generated bindings report it, never an
AttributeError from deep inside a composite."""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING

from ... import _C

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    _F = TypeVar("_F", bound=Callable[..., Any])


def tensor_args(*required: str, optional: tuple[str, ...] = ()) -> Callable[[_F], _F]:
    """Checks that the named parameters are Tensors (``optional`` ones may be None)."""

    def wrap(fn):
        sig = inspect.signature(fn)
        names = list(sig.parameters)

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            for name in (*required, *optional):
                if name not in bound.arguments:
                    continue
                v = bound.arguments[name]
                if v is None and name in optional:
                    continue
                # A type with __ferrograd_function__ (vmap's BatchedTensor)
                # is handed to its handler by the native function.
                if not isinstance(v, _C.Tensor) and not hasattr(type(v), "__ferrograd_function__"):
                    kind = "Tensor" if name in required else "Tensor or None"
                    raise TypeError(
                        f"{fn.__name__}(): argument '{name}' (position "
                        f"{names.index(name) + 1}) must be {kind}, not {type(v).__name__}"
                    )
            return fn(*args, **kwargs)

        return checked

    return wrap


class PaddingIdxError(ValueError, AssertionError):
    """PyTorch asserts on an out-of-range ``padding_idx``; this is also a
    ValueError, so it is an ordinary exception that ``except AssertionError``
    written for PyTorch still catches."""
