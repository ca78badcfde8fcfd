"""Argument checks shared by the functional forms: a misuse is a TypeError
naming the argument, as PyTorch's generated bindings report it, never an
AttributeError from deep inside a composite; and the normalisation of
PyTorch's int-or-tuple sizes."""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING

from ... import _C

_Tensor = _C.Tensor

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    _F = TypeVar("_F", bound=Callable[..., Any])


def tensor_args(*required: str, optional: tuple[str, ...] = ()) -> Callable[[_F], _F]:
    """Checks that the named parameters are Tensors (``optional`` ones may be None)."""

    def wrap(fn):
        params = list(inspect.signature(fn).parameters.values())
        names = [p.name for p in params]
        # Where each checked argument can arrive: its position (None for a keyword-only
        # parameter or one after *args) and its name. Reading them directly rather than
        # binding the signature keeps the check to a few hundred nanoseconds, which is
        # most of a small activation's time.
        positional = set()
        for p in params:
            if p.kind == p.VAR_POSITIONAL:
                break
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                positional.add(p.name)
        checks = tuple(
            (names.index(n) if n in positional else None, n, n in optional)
            for n in (*required, *optional)
        )

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            n = len(args)
            for pos, name, may_be_none in checks:
                if pos is not None and pos < n:
                    v = args[pos]
                elif name in kwargs:
                    v = kwargs[name]
                else:
                    continue
                if isinstance(v, _Tensor) or (v is None and may_be_none):
                    continue
                # A type with __ferrograd_function__ (vmap's BatchedTensor)
                # is handed to its handler by the native function.
                if not hasattr(type(v), "__ferrograd_function__"):
                    kind = "Tensor" if not may_be_none else "Tensor or None"
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


def _tuple(v, n, name="argument"):
    """An int or a sequence of ``n`` ints as a list of ``n`` ints."""
    if isinstance(v, bool):
        raise TypeError(f"{name} must be an int or a tuple of {n} ints, not bool")
    if isinstance(v, int):
        return [v] * n
    try:
        out = [int(x) for x in v]
    except TypeError:
        raise TypeError(
            f"{name} must be an int or a tuple of {n} ints, not {type(v).__name__}"
        ) from None
    if len(out) == 1:
        return out * n
    if len(out) != n:
        raise RuntimeError(f"{name} must be an int or a tuple of {n} ints, but got {tuple(out)}")
    return out


def _check_tensor(input, name="input"):
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"{name} must be a Tensor, not {type(input).__name__}")


def _batched(input, name):
    _check_tensor(input)
    if input.dim() not in (4, 5):
        raise RuntimeError(
            f"Expected 4D (unbatched) or 5D (batched) input to {name}, but got input of size: "
            f"{list(input.shape)}"
        )
    return (input.unsqueeze(0), True) if input.dim() == 4 else (input, False)
