"""Handing a Python-level ``ferrograd`` function to the ``__ferrograd_function__``
protocol of an argument's type.

The Rust bindings dispatch on their own (``src/py/dispatch.rs``). Functions
written in Python that route such arguments themselves (convolution, pooling,
``embedding``) send vmap's ``BatchedTensor`` to its batching rules and every
other type with the protocol (meta tensors, ``jit.trace``'s tracing values)
here, naming the public function so the type can find its own rule.
"""

from __future__ import annotations

from collections.abc import Callable

from ._C import Tensor

__all__ = ["check_tensor", "dispatch", "has_protocol", "is_batched", "physical"]


def _flat(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def has_protocol(*values):
    """Whether any of ``values`` (nested lists and tuples too) asks for dispatch."""
    # A plain loop: every Python-composed op asks, for a few arguments, on every call.
    for v in values:
        if isinstance(v, Tensor):
            continue
        if isinstance(v, (list, tuple)):
            if has_protocol(*v):
                return True
        elif hasattr(type(v), "__ferrograd_function__"):
            return True
    return False


_BATCHED_TYPE = None


def is_batched(*values):
    """Whether any of ``values`` is a vmap ``BatchedTensor``."""
    global _BATCHED_TYPE
    if _BATCHED_TYPE is None:
        # Imported on first use (func imports this module), then kept: value-reading ops
        # ask on every call.
        from .func._batched import BatchedTensor

        _BATCHED_TYPE = BatchedTensor
    for v in values:
        if isinstance(v, _BATCHED_TYPE):
            return True
        if isinstance(v, (list, tuple)) and is_batched(*v):
            return True
    return False


def physical(value):
    """The tensor under every vmap level of ``value`` (``value`` itself when it is
    not batched): for checks that hold for all samples at once."""
    while is_batched(value):
        value = value._value
    return value


def dispatch(func, args, kwargs=None):
    """``type(arg).__ferrograd_function__(func, types, args, kwargs)`` for the
    first argument whose type defines the protocol."""
    kwargs = kwargs or {}
    values = list(_flat(args)) + list(_flat(kwargs.values()))
    types = tuple(
        type(v)
        for v in values
        if not isinstance(v, Tensor) and hasattr(type(v), "__ferrograd_function__")
    )
    return types[0].__ferrograd_function__(func, types, tuple(args), kwargs)


def _passes_protocol(value: object) -> bool:
    return hasattr(type(value), "__ferrograd_function__")


def check_tensor(
    fn: str,
    value: object,
    name: str = "input",
    position: int | None = 1,
    *,
    passes: Callable[[object], bool] | None = _passes_protocol,
) -> None:
    """PyTorch's argument-parser refusal of a non-tensor, raised before anything runs
    (``fn(): argument 'name' (position 1) must be Tensor, not list``; ``position=None``
    leaves the position out). A value ``passes`` accepts goes through: by default a type
    with the ``__ferrograd_function__`` protocol (vmap's BatchedTensor, meta and tracing
    values), which implements the methods the callers use; ``passes=None`` takes only
    Tensors."""
    if isinstance(value, Tensor) or (passes is not None and passes(value)):
        return
    where = "" if position is None else f" (position {position})"
    raise TypeError(
        f"{fn}(): argument '{name}'{where} must be Tensor, not {type(value).__name__}"
    )
