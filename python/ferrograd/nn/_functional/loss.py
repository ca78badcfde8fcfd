"""Losses PyTorch writes as composites (KL divergence, Poisson and Gaussian
negative log-likelihood), built here from the same differentiable ops so
first- and second-order gradients follow; and the reduction arguments and
target checks every loss shares."""

from __future__ import annotations

import math
import os
import sys
import warnings
from typing import TYPE_CHECKING

from ... import _C, _dispatch
from ..._autocast import autocast_op as _autocast_op
from ..._replay import replayed
from ...autograd.grad_mode import no_grad
from ._args import tensor_args

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = [
    "kl_div",
    "poisson_nll_loss",
    "gaussian_nll_loss",
]


def _reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    return reduction


def _legacy_reduction(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _shape_of(t):
    return getattr(t, "shape", None)


def _user_stacklevel() -> int:
    """The ``stacklevel`` that names the caller's first frame outside ferrograd, for a
    warning raised by the function calling this (wrappers such as autocast's add frames)."""
    pkg = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(pkg):
        frame, level = frame.f_back, level + 1
    return level


def _sizes_differ(input, target):
    """Whether both shapes are known and differ."""
    si, st = _shape_of(input), _shape_of(target)
    return si is not None and st is not None and tuple(si) != tuple(st)


def _warn_target_size(input, target):
    # A target that broadcasts against the input computes something else than
    # the user meant ((4, 1) against (4,) is a (4, 4) difference): PyTorch warns.
    if _sizes_differ(input, target):
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )


def _scalar_type(dtype):
    return {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}.get(
        str(dtype).rsplit(".", 1)[-1], str(dtype)
    )


def _reduce(x, reduction):
    if reduction == "none":
        return x
    if reduction == "mean":
        return x.mean()
    if reduction == "sum":
        return x.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _shared_memory_order(a, b):
    """The dimension order that makes both ``a`` and ``b`` contiguous when they are
    dense with the same non-row-major strides (a transposed pair), else None."""
    if not (isinstance(a, _C.Tensor) and isinstance(b, _C.Tensor)) or a.dim() < 2:
        return None
    if tuple(a.shape) != tuple(b.shape) or a.stride() != b.stride() or a.is_contiguous():
        return None
    perm = sorted(range(a.dim()), key=lambda d: -a.stride()[d])
    return perm if a.permute(*perm).is_contiguous() else None


def _zero(like):
    return _C.zeros((), dtype=like.dtype)


@tensor_args("input", "target")
@_autocast_op("kl_div")
def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Kullback-Leibler divergence loss: pointwise ``target * (log(target) - input)``, where
    ``input`` holds log-probabilities; reduced.

    Elements where ``target`` is 0 contribute 0. ``reduction='batchmean'`` divides the
    sum by the batch size (``input.size(0)``), which is the KL divergence of the
    distributions; ``'mean'`` averages over all elements instead.

    Args:
        input (Tensor): log-probabilities, of any shape.
        target (Tensor): probabilities (or log-probabilities with ``log_target``),
            ``input``'s shape.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'batchmean'``, ``'sum'`` or ``'mean'``.
            Default: ``'mean'``.
        log_target (bool): ``target`` holds log-probabilities. Default: ``False``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> p = torch.tensor([[0.5, 0.5]])
        >>> q = torch.tensor([[0.25, 0.75]])
        >>> F.kl_div(q.log(), p, reduction="batchmean")
        tensor(0.1438)
    """
    reduction = _reduction(size_average, reduce, reduction)
    perm = _shared_memory_order(input, target) if reduction != "batchmean" else None
    if perm is not None:
        # A transposed pair: computed over memory in order (every step contiguous),
        # the result given back the inputs' layout.
        inv = [perm.index(d) for d in range(len(perm))]
        out = kl_div(input.permute(*perm), target.permute(*perm), reduction=reduction,
                     log_target=log_target)
        return out.permute(*inv) if reduction == "none" else out
    if log_target:
        pointwise = _C.exp(target) * (target - input)
    else:
        # PyTorch's xlogy(target, target) - target * input: 0 where target is 0
        # (and no NaN gradient leaking from the unused log(0)), NaN where it is
        # negative or NaN.
        safe = _C.where(target == 0, _C.ones((), dtype=target.dtype), target)
        pointwise = target * _C.log(safe) - target * input
    if reduction == "batchmean":
        total = pointwise.sum()
        return total / input.size(0) if input.dim() != 0 else total
    return _reduce(pointwise, reduction)


@tensor_args("input", "target")
@_autocast_op("poisson_nll_loss")
def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average: bool | None = None,
    eps: float = 1e-8,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Poisson negative log-likelihood: ``exp(x) - target * x`` for a log rate
    (``log_input=True``), else ``x - target * log(x + eps)``; reduced.

    Args:
        input (Tensor): the predicted (log) rate, of any shape.
        target (Tensor): the observed counts, ``input``'s shape.
        log_input (bool): ``input`` is the log of the rate. Default: ``True``.
        full (bool): add Stirling's approximation of ``log(target!)``,
            ``t * log(t) - t + 0.5 * log(2 * pi * t)`` where ``t > 1``.
            Default: ``False``.
        size_average (bool, optional): deprecated, use ``reduction``.
        eps (float): keeps ``log`` finite when ``log_input=False``. Default: ``1e-8``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'`` over the per-element (or
            per-sample) losses. Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> F.poisson_nll_loss(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]), reduction="none")
        tensor([1.0000, 0.7183])
    """
    reduction = _reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_input:
        loss = _C.exp(input) - target * input
    else:
        loss = input - target * _C.log(input + eps)
    if full:
        safe = _C.where(target > 1, target, _C.ones((), dtype=target.dtype))
        stirling = safe * _C.log(safe) - safe + 0.5 * _C.log(2 * math.pi * safe)
        loss = loss + _C.where(target > 1, stirling, _zero(stirling))
    return _reduce(loss, reduction)


@tensor_args("input", "target")
@replayed("gaussian_nll_loss")
def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """Gaussian negative log-likelihood: ``0.5 * (log(var) + (x - target) ** 2 / var)`` (plus
    ``0.5 * log(2 * pi)`` with ``full``); reduced.

    ``var`` is clamped below at ``eps`` for stability, without blocking its gradient.

    Args:
        input (Tensor): the predicted mean, ``(N, *)`` or ``(*)``.
        target (Tensor): the observation, ``input``'s shape.
        var (Tensor or float): the predicted variance, non-negative: ``input``'s
            shape, or that shape with the last dimension 1 or dropped (one variance
            shared by the last dimension), or a number.
        full (bool): include the constant term. Default: ``False``.
        eps (float): the smallest variance used. Default: ``1e-6``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'`` over the per-element (or
            per-sample) losses. Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Raises:
        ValueError: if ``var`` has a negative entry or a wrong size.

    Example::

        >>> mean = torch.tensor([0.0, 1.0])
        >>> var = torch.tensor([1.0, 0.5])
        >>> F.gaussian_nll_loss(mean, torch.tensor([1.0, 1.0]), var, reduction="none")
        tensor([ 0.5000, -0.3466])
    """
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        var = _C.full(tuple(input.shape), float(var), dtype=input.dtype)
    elif not isinstance(var, _C.Tensor) and not hasattr(type(var), "__ferrograd_function__"):
        raise TypeError(
            "gaussian_nll_loss(): argument 'var' (position 3) must be Tensor or float, "
            f"not {type(var).__name__}"
        )
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.size(-1) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # Under vmap the check reads every sample at once (a batched bool would be a
    # data-dependent branch).
    if bool(_dispatch.physical(var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (_C.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)
