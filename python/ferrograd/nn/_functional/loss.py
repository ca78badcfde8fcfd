"""Losses and distances PyTorch writes as composites, built here from the same
differentiable ops so first- and second-order gradients follow."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ... import _C, _dispatch
from ..._autocast import autocast_op as _autocast_op
from ..._replay import replayed
from ...autograd.grad_mode import no_grad
from ._args import tensor_args

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = [
    "cosine_similarity",
    "pairwise_distance",
    "kl_div",
    "cosine_embedding_loss",
    "margin_ranking_loss",
    "triplet_margin_loss",
    "hinge_embedding_loss",
    "soft_margin_loss",
    "multilabel_soft_margin_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
]


def _reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        if not reduce:
            return "none"
        return "mean" if size_average else "sum"
    return reduction


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


@tensor_args("x1", "x2")
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``:
    ``sum(x1 * x2) / (max(norm(x1), eps) * max(norm(x2), eps))``.

    Args:
        x1 (Tensor): the first input.
        x2 (Tensor): the second input, broadcastable with ``x1``.
        dim (int): the dimension of the vectors. Default: ``1``.
        eps (float): the smallest norm divided by (each norm is clamped on its own).
            Default: ``1e-8``.

    Shape:
        - Input: ``x1`` and ``x2`` broadcast to ``(*1, D, *2)``, ``D`` at ``dim``.
        - Output: ``(*1, *2)``.

    Returns:
        Tensor: the similarities, in ``[-1, 1]``.

    Example::

        >>> a = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
        >>> F.cosine_similarity(a, torch.tensor([[1.0, 0.0]]))
        tensor([1.0000, 0.7071])
    """
    x1, x2 = _C.broadcast_tensors(x1, x2)
    n1 = x1.norm(2, dim, True).clamp(min=eps)
    n2 = x2.norm(2, dim, True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


@tensor_args("x1", "x2")
def pairwise_distance(
    x1: Tensor,
    x2: Tensor,
    p: float = 2.0,
    eps: float = 1e-6,
    keepdim: bool = False,
) -> Tensor:
    """The ``p``-norm distance between the rows of ``x1`` and ``x2``: ``||x1 - x2 + eps||_p``
    over the last dimension.

    Args:
        x1 (Tensor): ``(N, D)`` or ``(D,)``.
        x2 (Tensor): broadcastable with ``x1``.
        p (float): the norm's exponent. Default: ``2.0``.
        eps (float): added to the difference, to keep the norm's gradient finite at
            0. Default: ``1e-6``.
        keepdim (bool): keep the last dimension (size 1). Default: ``False``.

    Shape:
        - Input: ``(N, D)`` or ``(D,)``.
        - Output: ``(N,)`` or ``()`` (``(N, 1)`` or ``(1,)`` with ``keepdim``).

    Returns:
        Tensor: the distances.

    Example::

        >>> F.pairwise_distance(torch.tensor([[0.0, 0.0], [1.0, 1.0]]), torch.tensor([[3.0, 4.0]]))
        tensor([5.0000, 3.6056])
    """
    d = max(x1.dim(), x2.dim()) - 1
    diff = x1 - x2 + eps
    if d < 0:
        return diff.abs() if not keepdim else diff.abs().reshape(1)
    return diff.norm(p, d, keepdim)


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


@tensor_args("input1", "input2", "target")
@_autocast_op("cosine_embedding_loss")
def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Cosine embedding loss: ``1 - cos(x1, x2)`` where ``target`` is 1,
    ``max(0, cos(x1, x2) - margin)`` where it is -1; reduced.

    Args:
        input1 (Tensor): ``(N, D)`` or ``(D,)``.
        input2 (Tensor): ``input1``'s shape.
        target (Tensor): ``(N,)`` or ``()``, 1 (similar) or -1 (dissimilar).
        margin (float): in ``[-1, 1]``; dissimilar pairs are penalised above it.
            Default: ``0.0``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'`` over the per-element (or
            per-sample) losses. Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``(N,)`` with ``reduction='none'``.

    Example::

        >>> a = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
        >>> b = torch.tensor([[1.0, 1.0], [1.0, 1.0]])
        >>> F.cosine_embedding_loss(a, b, torch.tensor([1, -1]), reduction="none")
        tensor([0.2929, 0.7071])
    """
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() not in (1, 2):
        raise RuntimeError(
            f"cosine_embedding_loss(): expected 1D or 2D inputs of equal dimension, got "
            f"{input1.dim()}D and {input2.dim()}D"
        )
    d = input1.dim() - 1
    eps = 1e-12
    prod = (input1 * input2).sum(d)
    mag1 = (input1 * input1).sum(d) + eps
    mag2 = (input2 * input2).sum(d) + eps
    cos = prod / _C.sqrt(mag1 * mag2)
    zero = _zero(cos)
    pos = _C.where(target == 1, 1.0 - cos, zero)
    neg = _C.where(target == -1, (cos - margin).clamp(min=0.0), zero)
    return _reduce(pos + neg, reduction)


@tensor_args("input1", "input2", "target")
@_autocast_op("margin_ranking_loss")
def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Margin ranking loss: ``max(0, -target * (x1 - x2) + margin)``; reduced.

    ``target`` 1 means ``x1`` should rank higher than ``x2``, -1 lower.

    Args:
        input1 (Tensor): ``(N,)`` or ``()``.
        input2 (Tensor): ``input1``'s shape.
        target (Tensor): ``input1``'s shape, 1 or -1.
        margin (float): the required gap. Default: ``0.0``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'`` over the per-element (or
            per-sample) losses. Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``(N,)`` with ``reduction='none'``.

    Example::

        >>> x1, x2 = torch.tensor([1.0, 1.0]), torch.tensor([0.5, 2.0])
        >>> F.margin_ranking_loss(x1, x2, torch.tensor([1.0, 1.0]), margin=1.0, reduction="none")
        tensor([0.5000, 2.0000])
    """
    reduction = _reduction(size_average, reduce, reduction)
    if not (input1.dim() == input2.dim() == target.dim()):
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got "
            f"sizes: input1: {list(input1.shape)}, input2: {list(input2.shape)}, "
            f"target: {list(target.shape)} "
        )
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


@tensor_args("anchor", "positive", "negative")
@_autocast_op("triplet_margin_loss")
def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Triplet margin loss: ``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the
    :func:`pairwise_distance`; reduced.

    Args:
        anchor (Tensor): ``(N, D)`` or ``(D,)``.
        positive (Tensor): ``anchor``'s shape, to be close to the anchor.
        negative (Tensor): ``anchor``'s shape, to be far from it.
        margin (float): the required gap. Default: ``1.0``.
        p (float): the norm of the distance. Default: ``2``.
        eps (float): as in :func:`pairwise_distance`. Default: ``1e-6``.
        swap (bool): use ``min(d(a, n), d(p, n))`` as the negative distance.
            Default: ``False``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'`` over the per-element (or
            per-sample) losses. Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``(N,)`` with ``reduction='none'``.

    Example::

        >>> a = torch.tensor([[0.0, 0.0]])
        >>> F.triplet_margin_loss(a, torch.tensor([[0.0, 1.0]]), torch.tensor([[0.0, 1.5]]))
        tensor(0.5000)
    """
    reduction = _reduction(size_average, reduce, reduction)
    a, po, ne = anchor.dim(), positive.dim(), negative.dim()
    if not (a == po == ne):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a}D, positive {po}D, and negative {ne}D inputs"
        )
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _C.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp(min=0.0), reduction)


@tensor_args("input", "target")
@_autocast_op("hinge_embedding_loss")
def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Hinge embedding loss: ``x`` where ``target`` is 1, ``max(0, margin - x)`` where it is
    -1; reduced. ``x`` is usually a distance between two inputs.

    Args:
        input (Tensor): of any shape.
        target (Tensor): ``input``'s shape, 1 or -1.
        margin (float): the margin for the -1 targets. Default: ``1.0``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'`` over the per-element (or
            per-sample) losses. Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> x = torch.tensor([0.3, 0.3, 2.0])
        >>> F.hinge_embedding_loss(x, torch.tensor([1.0, -1.0, -1.0]), reduction="none")
        tensor([0.3000, 0.7000, 0.0000])
    """
    reduction = _reduction(size_average, reduce, reduction)
    zero = _zero(input)
    out_margin = _C.where(target != 1, (margin - input).clamp(min=0.0), zero)
    out_self = _C.where(target != -1, input, zero)
    return _reduce(out_margin + out_self, reduction)


@tensor_args("input", "target")
@_autocast_op("soft_margin_loss")
def soft_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Two-class logistic loss: ``log(1 + exp(-target * x))``; reduced.

    Args:
        input (Tensor): of any shape.
        target (Tensor): ``input``'s shape, 1 or -1.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'`` over the per-element (or
            per-sample) losses. Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> x = torch.tensor([2.0, -1.0])
        >>> F.soft_margin_loss(x, torch.tensor([1.0, 1.0]), reduction="none")
        tensor([0.1269, 1.3133])
    """
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce(_C.softplus(-target * input, 1.0, 20.0), reduction)


@tensor_args("input", "target", optional=("weight",))
def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-label one-versus-all logistic loss: per sample, the mean over the ``C`` classes of
    ``-(y * log(sigmoid(x)) + (1 - y) * log(sigmoid(-x)))``; reduced.

    Args:
        input (Tensor): ``(N, C)`` or ``(C,)`` scores.
        target (Tensor): ``input``'s shape, 0 or 1 per class.
        weight (Tensor, optional): ``(C,)``, a weight per class. Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'`` over the per-element (or
            per-sample) losses. Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``(N,)`` with ``reduction='none'``.

    Example::

        >>> x = torch.tensor([[2.0, -2.0]])
        >>> F.multilabel_soft_margin_loss(x, torch.tensor([[1.0, 0.0]]))
        tensor(0.1269)
    """
    reduction = _reduction(size_average, reduce, reduction)
    logsig_pos = -_C.softplus(-input, 1.0, 20.0)
    logsig_neg = -_C.softplus(input, 1.0, 20.0)
    loss = -(target * logsig_pos + (1 - target) * logsig_neg)
    if weight is not None:
        loss = loss * weight
    d = input.dim() - 1
    loss = loss.sum(d) / input.size(d)
    return _reduce(loss, reduction)


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
