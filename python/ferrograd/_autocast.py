"""The autocast hook of the ops written in Python: ``@autocast_op("kl_div")``
casts the op's tensor arguments by the policy the op registry declares for
it (the core's generated table answers, as for native ops) and runs the
body with autocast off, so the ops it is composed of run in the dtype the
policy chose, as one PyTorch kernel would."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from . import _C

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    _F = TypeVar("_F", bound=Callable[..., Any])

_on = _C._autocast_cpu_enabled
_cast = _C._autocast_args
_set = _C._set_autocast_cpu_enabled


def autocast_op(name: str) -> Callable[[_F], _F]:
    """Decorates the Python function of the op ``name``."""

    def deco(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            if not _on():
                return fn(*args, **kwargs)
            if kwargs:
                args, values = _cast(name, (args, tuple(kwargs.values())))
                kwargs = dict(zip(kwargs, values))
            else:
                args = _cast(name, args)
            _set(False)
            try:
                return fn(*args, **kwargs)
            finally:
                _set(True)

        op.__autocast__ = name
        return op

    return deco
