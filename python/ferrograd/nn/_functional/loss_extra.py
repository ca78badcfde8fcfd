"""Multi-class margin losses, the triplet loss with a custom distance, ``pdist``
and ``gumbel_softmax``, composed from differentiable ops (``gather``,
``relu``, ``norm``, ``softmax``), so gradients of every order follow. Index
bookkeeping that carries no gradient (which classes are targets) is done on
the integer targets up front."""

from __future__ import annotations

import functools
import warnings
from typing import TYPE_CHECKING

import numpy as np

from ... import _C
from ..._autocast import autocast_op as _autocast_op
from ..._replay import replayed
from ._args import tensor_args
from .loss import _reduce, _reduction, pairwise_distance

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..._C import Tensor

__all__ = [
    "multi_margin_loss",
    "multilabel_margin_loss",
    "triplet_margin_with_distance_loss",
    "pdist",
    "gumbel_softmax",
]


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
    y = target.reshape(nframe)
    # The bounds from a list: NumPy's min and max cost more on a few targets.
    ys = y.tolist() if nframe <= 64 else y.numpy()
    if len(ys) and (min(ys) < 0 or max(ys) >= dim):
        raise RuntimeError("target out of range")
    x = input.reshape(nframe, dim)
    x_y = x.gather(1, y.unsqueeze(1))
    z = _C.relu(x - x_y + margin)
    if p == 2:
        z = z * z
    others = _C.arange(dim) != y.unsqueeze(1)
    per = _C.where(others, z, _C.zeros((), dtype=z.dtype)).sum(1) / dim
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
    t = target.reshape(nframe, dim)
    if 0 < nframe * dim <= 64 and target.dtype == _C.int64:
        counts = np.array(_target_counts_small(t.tolist(), dim), dtype=np.float64)
    else:
        counts = _target_counts(t.numpy(), nframe, dim).astype(np.float64)
    # pair[n, j, k]: how often target class j is paired with non-target class k.
    pair = counts[:, :, None] * (counts == 0)[:, None, :]
    x = input.reshape(nframe, dim)
    hinge = _C.relu(1.0 - x.unsqueeze(2) + x.unsqueeze(1))
    per = (hinge * _C.tensor(pair, dtype=x.dtype)).sum((1, 2)) / dim
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


def _target_counts_small(rows, dim):
    """``_target_counts`` of a few rows, counted on lists (NumPy's calls cost more)."""
    out = []
    for row in rows:
        counts = [0] * dim
        for v in row:
            if v < 0:
                break
            if v >= dim:
                raise RuntimeError("argument #2 'target' is out of range")
            counts[v] += 1
        out.append(counts)
    return out


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


@tensor_args("input")
def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm distance between every pair of rows ``i < j`` of ``input``: the upper
    triangle of the distance matrix, row by row.

    Args:
        input (Tensor): ``(N, M)``, floating point.
        p (float): the norm's exponent, non-negative. Default: ``2``.

    Shape:
        - Input: ``(N, M)``.
        - Output: ``(N * (N - 1) / 2,)``.

    Returns:
        Tensor: the distances.

    Example::

        >>> F.pdist(torch.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]]))
        tensor([ 5., 10.,  5.])
    """
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = _pair_rows(input.shape[0])
    diff = input.index_select(0, i) - input.index_select(0, j)
    return diff.norm(p, 1)


@functools.lru_cache(maxsize=32)
def _pair_rows(n):
    """The rows ``i < j`` of every pair, as int64 index tensors; kept per ``n``
    (only ever read by ``index_select``, never handed out)."""
    rows, cols = np.triu_indices(n, 1)
    return _C.tensor(rows.astype(np.int64)), _C.tensor(cols.astype(np.int64))


@tensor_args("logits")
def gumbel_softmax(
    logits: Tensor,
    tau: float = 1,
    hard: bool = False,
    eps: float = 1e-10,
    dim: int = -1,
) -> Tensor:
    """A sample from the Gumbel-softmax (concrete) distribution:
    ``softmax((logits + g) / tau)`` with ``g = -log(Exponential(1))`` noise.

    With ``hard=True`` the result is the one-hot of that sample's argmax, whose
    gradient is the soft sample's (straight-through estimator).

    Args:
        logits (Tensor): unnormalised log-probabilities, ``(*, C)``.
        tau (float): the temperature; small values give nearly one-hot samples.
            Default: ``1``.
        hard (bool): return a one-hot sample. Default: ``False``.
        eps (float): deprecated, has no effect (warns when changed).
            Default: ``1e-10``.
        dim (int): the class dimension. Default: ``-1``.

    Returns:
        Tensor: ``logits``' shape, summing to 1 along ``dim``.

    Example::

        >>> y = F.gumbel_softmax(torch.zeros(2, 5), tau=0.5, hard=True)
        >>> y.sum(dim=-1)
        tensor([1., 1.])
        >>> sorted(set(y.flatten().tolist()))
        [0.0, 1.0]
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    # Drawn into an `empty_like` of the logits, which keeps a vmap batch
    # dimension: the draw follows vmap's randomness mode.
    gumbels = -_C._like(logits, "full", 0.0, None, False).exponential_().log()
    y_soft = _C.softmax((logits + gumbels) / tau, dim)
    if hard:
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = _C._like(logits, "full", 0.0, None, False).scatter(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft
    return y_soft
