"""Gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_``."""

from __future__ import annotations

import types
import warnings
from typing import TYPE_CHECKING

from ... import _C
from ...autograd.grad_mode import no_grad

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..._C import Tensor

__all__ = [
    "clip_grad_norm_",
    "clip_grad_norm",
    "clip_grad_value_",
    "get_total_norm",
    "clip_grads_with_norm_",
]


def _tensor_list(tensors, warn_generator=True):
    if isinstance(tensors, _C.Tensor):
        return [tensors]
    is_generator = isinstance(tensors, types.GeneratorType)
    # A generator is consumed once, and read twice below.
    tensors = list(tensors)
    if warn_generator and is_generator and len(tensors) == 0:
        warnings.warn(
            "`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=4
        )
    return tensors


def _check_foreach(foreach):
    # Every tensor lives on the CPU, where PyTorch's foreach kernels are
    # available too; the per-tensor loop below computes the same numbers.
    if foreach not in (None, True, False):
        raise TypeError(f"foreach must be None or a bool, got {foreach!r}")


def get_total_norm(
    tensors: Tensor | Iterable[Tensor],
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together, as if they were concatenated into
    one vector (the norm of their individual norms).

    Args:
        tensors (Tensor or iterable of Tensors): the tensors, typically gradients.
        norm_type (float): the norm's order; ``inf`` for the largest absolute value.
            Default: ``2.0``.
        error_if_nonfinite (bool): raise if the total is NaN or infinite.
            Default: ``False``.
        foreach (bool, optional): PyTorch's switch between its per-tensor and fused
            kernels; accepted (``None``, ``True`` or ``False``), the result is the
            same. Default: ``None``.

    Returns:
        Tensor: the total norm, a scalar (0 for no tensors).

    Example::

        >>> nn.utils.get_total_norm([torch.tensor([3.0]), torch.tensor([4.0])])
        tensor(5.)
        >>> nn.utils.get_total_norm([torch.tensor([3.0, -7.0])], norm_type=float("inf"))
        tensor(7.)
    """
    _check_foreach(foreach)
    tensors = _tensor_list(tensors, warn_generator=False)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return _C.tensor(0.0)
    with no_grad():
        norms = [t.norm(norm_type) for t in tensors]
        # torch.stack promotes mixed float32/float64 norms to float64.
        if any(n.dtype == _C.float64 for n in norms):
            norms = [n.to(_C.float64) for n in norms]
        total_norm = _C.stack(norms).norm(norm_type)
    if error_if_nonfinite and bool(total_norm.isnan() or total_norm.isinf()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from "
            "`parameters` is non-finite, so it cannot be clipped. To disable "
            "this error and scale the gradients by the non-finite norm anyway, "
            "set `error_if_nonfinite=False`"
        )
    return total_norm


def clip_grads_with_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    total_norm: Tensor,
    foreach: bool | None = None,
) -> None:
    """Scales the gradients of ``parameters`` in place by
    ``min(1, max_norm / (total_norm + 1e-6))``, given their total norm (from
    :func:`get_total_norm`); the second half of :func:`clip_grad_norm_`.

    Args:
        parameters (Tensor or iterable of Tensors): the parameters whose ``.grad`` to
            scale (those without one are skipped).
        max_norm (float): the largest total norm allowed.
        total_norm (Tensor): the gradients' total norm.
        foreach (bool, optional): PyTorch's switch between its per-tensor and fused
            kernels; accepted (``None``, ``True`` or ``False``), the result is the
            same. Default: ``None``.

    Returns:
        None

    Example::

        >>> p = nn.Parameter(torch.zeros(2))
        >>> p.grad = torch.tensor([3.0, 4.0])
        >>> total = nn.utils.get_total_norm([p.grad])
        >>> nn.utils.clip_grads_with_norm_([p], 1.0, total)
        >>> p.grad
        tensor([0.6000, 0.8000])
    """
    _check_foreach(foreach)
    parameters = _tensor_list(parameters, warn_generator=False)
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    with no_grad():
        clip_coef = max_norm / (total_norm + 1e-6)
        # Multiplying by a coefficient clamped to 1 rather than branching is
        # PyTorch's choice, kept so the gradients are bit-for-bit the same.
        clip_coef_clamped = _C.clamp(clip_coef, max=1.0)
        for g in grads:
            g.mul_(clip_coef_clamped.to(g.dtype))


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scales the gradients of ``parameters`` in place so that their total ``norm_type``-norm,
    computed as if they were one vector, is at most ``max_norm``.

    The scale factor is ``min(1, max_norm / (total_norm + 1e-6))``; call it between
    ``backward()`` and the optimizer's ``step()``.

    Args:
        parameters (Tensor or iterable of Tensors): the parameters whose ``.grad`` to
            clip (those without one are skipped; an empty generator warns).
        max_norm (float): the largest total norm allowed.
        norm_type (float): the norm's order; ``inf`` for the largest absolute value.
            Default: ``2.0``.
        error_if_nonfinite (bool): raise if the total norm is NaN or infinite instead
            of scaling by it. Default: ``False``.
        foreach (bool, optional): accepted for PyTorch compatibility, same result.
            Default: ``None``.

    Returns:
        Tensor: the total norm of the gradients before clipping.

    Example::

        >>> model = nn.Linear(2, 1)
        >>> model.weight.grad = torch.tensor([[3.0, 4.0]])
        >>> model.bias.grad = torch.tensor([0.0])
        >>> nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        tensor(5.)
        >>> model.weight.grad
        tensor([[0.6000, 0.8000]])
    """
    parameters = _tensor_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_value_(
    parameters: Tensor | Iterable[Tensor],
    clip_value: float,
    foreach: bool | None = None,
) -> None:
    """Clamps every gradient of ``parameters`` in place to ``[-clip_value, clip_value]``.

    Args:
        parameters (Tensor or iterable of Tensors): the parameters whose ``.grad`` to
            clamp (those without one are skipped).
        clip_value (float): the largest absolute value allowed.
        foreach (bool, optional): accepted for PyTorch compatibility, same result.
            Default: ``None``.

    Returns:
        None

    Example::

        >>> p = nn.Parameter(torch.zeros(3))
        >>> p.grad = torch.tensor([-5.0, 0.5, 2.0])
        >>> nn.utils.clip_grad_value_([p], clip_value=1.0)
        >>> p.grad
        tensor([-1.0000,  0.5000,  1.0000])
    """
    _check_foreach(foreach)
    parameters = _tensor_list(parameters, warn_generator=False)
    clip_value = float(clip_value)
    with no_grad():
        for p in parameters:
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)


def clip_grad_norm(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_`: scales the gradients of
    ``parameters`` in place so that their total ``norm_type``-norm is at most
    ``max_norm``, warning with ``FutureWarning`` (as PyTorch does) that the name with
    the trailing underscore is the one to use.

    Args:
        parameters (Tensor or iterable of Tensors): the parameters whose ``.grad`` to
            clip (those without one are skipped).
        max_norm (float): the largest total norm allowed.
        norm_type (float): the norm's order; ``inf`` for the largest absolute value.
            Default: ``2.0``.
        error_if_nonfinite (bool): raise if the total norm is NaN or infinite instead
            of scaling by it. Default: ``False``.
        foreach (bool, optional): accepted for PyTorch compatibility, same result.
            Default: ``None``.

    Returns:
        Tensor: the total norm of the gradients before clipping.

    Example::

        >>> model = nn.Linear(2, 1)
        >>> model.weight.grad = torch.tensor([[3.0, 4.0]])
        >>> model.bias.grad = torch.tensor([0.0])
        >>> nn.utils.clip_grad_norm(model.parameters(), max_norm=1.0)
        tensor(5.)
        >>> model.weight.grad
        tensor([[0.6000, 0.8000]])
    """
    warnings.warn(
        "`ferrograd.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`ferrograd.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)
