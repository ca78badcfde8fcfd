"""How ``ferrograd.compile`` records ops composed in Python that read their
inputs' values (through NumPy, ``.item()``, ``.tolist()``): a replay cannot
re-run that Python code op by op, so such an op is recorded as one call.

``replayed``: the op's output shapes follow from its arguments' shapes and
values given in Python, so a replay may call it again with the new tensors
(one Python call per replay, as for a custom ``autograd.Function``).
``data_dependent``: the op's output shape follows from its input's values
(``unique``, ``bincount``), so a tape recorded for one input cannot stand for
another; the capture fails naming the op, which ``torch.compile`` treats as a
graph break (an error under ``fullgraph=True``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from . import _C, _dispatch

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    _F = TypeVar("_F", bound=Callable[..., Any])


def _batched_with_rule(name, args, kwargs):
    """A vmap call of an op that reads its inputs' values goes to the op's batching
    rule (or its stated refusal), which calls the op on the physical values; ops
    without either run on the batched values as they are."""
    if not _dispatch.is_batched(*args, *kwargs.values()):
        return False
    from .func._rules import has_rule

    return has_rule(name)


def replayed(
    name: str, data_dependent_if: Callable[..., bool] | None = None
) -> Callable[[_F], _F]:
    """Records each call of the decorated op, while ``compile`` captures, as one
    entry whose rule calls it again with a replay's tensors. A call for which
    ``data_dependent_if(*args, **kwargs)`` is true (``repeat_interleave`` with a
    tensor of repeats) is refused as a ``data_dependent`` op is."""

    def deco(fn):
        refused = data_dependent(name)(fn)

        @functools.wraps(fn)
        def op(*args, **kwargs):
            if _batched_with_rule(fn.__name__, args, kwargs):
                return _dispatch.dispatch(op, args, kwargs)
            if _C._capture_active():
                if data_dependent_if is not None and data_dependent_if(*args, **kwargs):
                    return refused(*args, **kwargs)
                if _dispatch.has_protocol(*args, *kwargs.values()):
                    # A vmap BatchedTensor (or another tensor-like value) is not a tensor a
                    # replay could pass again.
                    _C._capture_refuse(f"`{name}` is given a tensor-like value that is not a "
                                       "Tensor (inside vmap?), which a replay could not pass again")
                    return fn(*args, **kwargs)
                return _C._capture_pyop(name, fn, args, kwargs)
            return fn(*args, **kwargs)

        return op

    return deco


def data_dependent(name: str) -> Callable[[_F], _F]:
    """Fails a capture that calls the decorated op: its output's shape depends
    on its input's values. The call itself runs (eagerly) with recording paused."""

    def deco(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            if _batched_with_rule(fn.__name__, args, kwargs):
                return _dispatch.dispatch(op, args, kwargs)
            if _C._capture_active():
                _C._capture_refuse(
                    f"`{name}` returns a tensor whose shape depends on its input's values, "
                    "which a replayed tape cannot follow"
                )
                return _C._capture_pyop(name, fn, args, kwargs)
            return fn(*args, **kwargs)

        return op

    return deco
