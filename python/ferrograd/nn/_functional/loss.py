"""Losses and distances PyTorch writes as composites, built here from the same
differentiable ops so first- and second-order gradients follow."""

from __future__ import annotations

import math

from ... import _C
from ...autograd.grad_mode import no_grad
from ._args import tensor_args

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


def _zero(like):
    return _C.zeros((), dtype=like.dtype)


@tensor_args("x1", "x2")
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``x1 . x2 / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim`` (after
    broadcasting), each norm clamped on its own as in PyTorch."""
    x1, x2 = _C.broadcast_tensors(x1, x2)
    n1 = x1.norm(2, dim, True).clamp(min=eps)
    n2 = x2.norm(2, dim, True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


@tensor_args("x1", "x2")
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dimension."""
    d = max(x1.dim(), x2.dim()) - 1
    diff = x1 - x2 + eps
    if d < 0:
        return diff.abs() if not keepdim else diff.abs().reshape(1)
    return diff.norm(p, d, keepdim)


@tensor_args("input", "target")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """``target * (log(target) - input)`` pointwise (``input`` holds log-probabilities;
    with ``log_target`` so does ``target``). ``'batchmean'`` divides the sum by the
    batch size, the mathematically correct KL divergence."""
    reduction = _reduction(size_average, reduce, reduction)
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
def cosine_embedding_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
):
    """``1 - cos(x1, x2)`` where ``target`` is 1, ``max(0, cos(x1, x2) - margin)``
    where it is -1 (PyTorch's form, with 1e-12 added to each squared norm)."""
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
def margin_ranking_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
):
    """``max(0, -target * (x1 - x2) + margin)``."""
    reduction = _reduction(size_average, reduce, reduction)
    if not (input1.dim() == input2.dim() == target.dim()):
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got "
            f"sizes: input1: {list(input1.shape)}, input2: {list(input2.shape)}, "
            f"target: {list(target.shape)} "
        )
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


@tensor_args("anchor", "positive", "negative")
def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the pairwise ``p``-distance;
    ``swap`` uses ``min(d(a, n), d(p, n))`` as the negative distance."""
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
def hinge_embedding_loss(
    input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"
):
    """``x`` where ``target`` is 1, ``max(0, margin - x)`` where it is -1."""
    reduction = _reduction(size_average, reduce, reduction)
    zero = _zero(input)
    out_margin = _C.where(target != 1, (margin - input).clamp(min=0.0), zero)
    out_self = _C.where(target != -1, input, zero)
    return _reduce(out_margin + out_self, reduction)


@tensor_args("input", "target")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * x))``, as a softplus so it never overflows."""
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce(_C.softplus(-target * input, 1.0, 20.0), reduction)


@tensor_args("input", "target", optional=("weight",))
def multilabel_soft_margin_loss(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """One-vs-all logistic loss averaged over the classes (last dimension)."""
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
def poisson_nll_loss(
    input,
    target,
    log_input=True,
    full=False,
    size_average=None,
    eps=1e-8,
    reduce=None,
    reduction="mean",
):
    """Poisson negative log-likelihood: ``exp(x) - target * x`` for a log rate
    (``log_input``), else ``x - target * log(x + eps)``; ``full`` adds Stirling's
    approximation of ``log(target!)`` where ``target > 1``."""
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
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log-likelihood ``0.5 * (log(var) + (x - target)^2 / var)``
    (plus ``0.5 * log(2 pi)`` when ``full``); ``var`` is clamped to ``eps`` for
    stability without blocking its gradient, as in PyTorch."""
    if isinstance(var, (int, float)):
        var = _C.full(tuple(input.shape), float(var), dtype=input.dtype)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.size(-1) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (_C.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)
