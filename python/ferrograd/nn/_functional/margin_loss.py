"""Margin and embedding losses (hinge, ranking, triplet, soft-margin and the
multi-class margin losses), composed from differentiable ops (``gather``,
``relu``, ``norm``, ``softplus``), so gradients of every order follow. The
multi-class margin losses are one native op each (``src/ops/margin_loss.rs``,
their backward beside them) for float32/float64 scores and int64 targets; a
differentiated ``weight`` or another dtype takes the composite, whose index
bookkeeping (which classes are targets) is done on the integer targets up
front."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import _C
from ..._autocast import autocast_op as _autocast_op
from ..._replay import replayed
from ._args import tensor_args
from .distance import pairwise_distance
from .loss import _reduce, _reduction, _zero

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..._C import Tensor

__all__ = [
    "cosine_embedding_loss",
    "margin_ranking_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
    "hinge_embedding_loss",
    "soft_margin_loss",
    "multilabel_soft_margin_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
]


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


@tensor_args("anchor", "positive", "negative")
def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """Triplet margin loss with any distance: ``max(0, margin + d(a, p) - d(a, n))``; reduced.

    Args:
        anchor (Tensor): ``(N, D)`` or ``(D,)``.
        positive (Tensor): ``anchor``'s shape, to be close to the anchor.
        negative (Tensor): ``anchor``'s shape, to be far from it.
        distance_function (callable, optional): ``d(x, y)`` returning a tensor of
            distances; ``None`` uses :func:`pairwise_distance`. Default: ``None``.
        margin (float): the required gap, positive. Default: ``1.0``.
        swap (bool): use ``min(d(a, n), d(p, n))`` as the negative distance.
            Default: ``False``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``(N,)`` with ``reduction='none'``.

    Example::

        >>> a = torch.tensor([[1.0, 0.0]])
        >>> cos = lambda x, y: 1 - F.cosine_similarity(x, y)
        >>> F.triplet_margin_with_distance_loss(
        ...     a, torch.tensor([[1.0, 0.1]]), torch.tensor([[0.0, 1.0]]), distance_function=cos
        ... )
        tensor(0.0050)
    """
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative "
            f"{n_dim}D inputs"
        )
    dist = distance_function if distance_function is not None else pairwise_distance
    dist_pos = dist(anchor, positive)
    dist_neg = dist(anchor, negative)
    if swap:
        dist_neg = _C.minimum(dist_neg, dist(positive, negative))
    loss = _C.relu(margin + dist_pos - dist_neg)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


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


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _frames(input):
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(input.shape)}"
        )
    if nd <= 1:
        return 1, 1 if nd == 0 else input.shape[0]
    return input.shape[0], input.shape[1]


def _native(input, target, weight):
    """Whether the native margin losses take these arguments: float32/float64 scores,
    int64 targets, a weight of the scores' dtype that is not differentiated (the
    composite below differentiates it; PyTorch refuses to)."""
    return (
        isinstance(input, _C.Tensor)
        and isinstance(target, _C.Tensor)
        and input.dtype in (_C.float32, _C.float64)
        and target.dtype == _C.int64
        and (
            weight is None
            or (
                isinstance(weight, _C.Tensor)
                and weight.dtype == input.dtype
                and not (weight.requires_grad and _C.is_grad_enabled())
            )
        )
    )


def _finish(per_sample, target, reduction):
    # PyTorch's reduction='none' keeps one value per sample, or a scalar when
    # the target is a scalar.
    if reduction == "none":
        return per_sample if target.dim() > 0 else per_sample.reshape(())
    return _reduce(per_sample, reduction)


@tensor_args("input", "target", optional=("weight",))
@_autocast_op("multi_margin_loss")
@replayed("multi_margin_loss")
def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-class hinge loss: per sample with class ``y``, the sum over the other classes
    ``j`` of ``weight[y] * max(0, margin - x[y] + x[j]) ** p``, divided by ``C``; reduced.

    Args:
        input (Tensor): ``(N, C)`` or ``(C,)`` scores.
        target (Tensor): int64 ``(N,)`` or ``()`` class indices in ``[0, C)``.
        p (int): 1 or 2, the hinge's power. Default: ``1``.
        margin (float): the required gap. Default: ``1.0``.
        weight (Tensor, optional): ``(C,)``, a weight per class. Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per sample), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``(N,)`` with ``reduction='none'``.

    Example::

        >>> x = torch.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> F.multi_margin_loss(x, torch.tensor([3]))
        tensor(0.3250)
    """
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    nframe, dim = _frames(input)
    if target.dim() > 1 or target.numel() != nframe:
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{nframe}], but got "
            f"{list(target.shape)}. Input has shape {list(input.shape)}."
        )
    if weight is not None and weight.numel() != dim:
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got {list(weight.shape)}")
    if _native(input, target, weight):
        # One native op (`src/ops/margin_loss.rs`), its backward beside it.
        return _C._multi_margin_loss(
            input, target, p, float(margin), weight, reduction, nframe, dim, target.dim() > 0
        )
    y = target.reshape(nframe)
    # The bounds from a list: NumPy's min and max cost more on a few targets.
    ys = y.tolist() if nframe <= 64 else y.numpy()
    if len(ys) and (min(ys) < 0 or max(ys) >= dim):
        raise RuntimeError("target out of range")
    x = input.reshape(nframe, dim)
    at = y.unsqueeze(1)
    z = x - x.gather(1, at) + margin
    # A hinge counts where positive, so a NaN score adds nothing, as in PyTorch.
    z = _C.where(z > 0, z, _zero(z))
    if p == 2:
        z = z * z
    # The target class is no term of its own sum: zeroed in place of the mask's where.
    per = z.scatter(1, at, 0.0).sum(1) / dim
    if weight is not None:
        per = per * weight.index_select(0, y)
    return _finish(per, target, reduction)


@tensor_args("input", "target")
@_autocast_op("multilabel_margin_loss")
@replayed("multilabel_margin_loss")
def multilabel_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-label hinge loss: per sample, the sum over its target classes ``j`` and its other
    classes ``k`` of ``max(0, 1 - (x[j] - x[k]))``, divided by ``C``; reduced.

    Args:
        input (Tensor): ``(N, C)`` or ``(C,)`` scores.
        target (Tensor): int64, ``input``'s shape: each sample's target classes first,
            ended by the first ``-1`` (the rest is ignored).
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per sample), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``(N,)`` with ``reduction='none'``.

    Example::

        >>> x = torch.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> F.multilabel_margin_loss(x, torch.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    nframe, dim = _frames(input)
    if input.dim() <= 1:
        ok = target.dim() <= 1 and target.numel() == dim
    else:
        ok = target.dim() == 2 and tuple(target.shape) == (nframe, dim)
    if not ok:
        raise RuntimeError(
            f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}"
        )
    if _native(input, target, None):
        # One native op (`src/ops/margin_loss.rs`), its backward beside it.
        return _C._multilabel_margin_loss(
            input, target, reduction, nframe, dim, input.dim() == 2
        )
    t = target.reshape(nframe, dim)
    # pair[n, j, k]: how often target class j is paired with non-target class k.
    if 0 < nframe * dim <= 64 and target.dtype == _C.int64:
        pair = _C.tensor(_pair_counts_small(t.tolist(), dim), dtype=input.dtype)
        pair = pair.reshape(nframe, dim, dim)
    else:
        counts = _target_counts(t.numpy(), nframe, dim).astype(np.float64)
        pair = _C.tensor(counts[:, :, None] * (counts == 0)[:, None, :], dtype=input.dtype)
    x = input.reshape(nframe, dim)
    hinge = 1.0 - x.unsqueeze(2) + x.unsqueeze(1)
    # A hinge counts where positive, so a NaN score adds nothing, as in PyTorch.
    hinge = _C.where(hinge > 0, hinge, _zero(hinge))
    per = (hinge * pair).sum((1, 2)) / dim
    if reduction == "none":
        return per if input.dim() == 2 else per.reshape(())
    return _reduce(per, reduction)


def _target_counts(t, nframe, dim):
    """counts[n, j]: how often row n lists class j among its targets."""
    # Each row's targets: the entries before its first negative one.
    listed = (t >= 0).cumprod(1, dtype=bool)
    if (t[listed] >= dim).any():
        raise RuntimeError("argument #2 'target' is out of range")
    # A class listed twice counts twice, as in ATen's loop.
    flat = (t + np.arange(0, nframe * dim, dim)[:, None])[listed]
    return np.bincount(flat, minlength=nframe * dim).reshape(nframe, dim)


def _pair_counts_small(rows, dim):
    """The pair counts of a few rows, flat (row, target class, other class), counted
    on lists: NumPy's calls cost more than the loops at this size."""
    out = []
    for row in rows:
        counts = [0.0] * dim
        for v in row:
            if v < 0:
                break
            if v >= dim:
                raise RuntimeError("argument #2 'target' is out of range")
            counts[v] += 1.0
        others = [0.0 if c else 1.0 for c in counts]
        for c in counts:
            out += [c * o for o in others] if c else [0.0] * dim
    return out
