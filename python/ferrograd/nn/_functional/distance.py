"""Distances: ``cosine_similarity`` and ``pairwise_distance``, composed from
differentiable ops so gradients of every order follow, and ``pdist``, one
native pass over the pairs whose gradient under ``create_graph`` is taken
through the same composition."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from ... import _C, _dispatch
from ._args import tensor_args

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = [
    "cosine_similarity",
    "pairwise_distance",
    "pdist",
]


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
    if _dispatch.is_batched(input) or _C._fw_tangent(input) is not None:
        # vmap and forward mode take the composition, which they batch and
        # differentiate op by op: the rows of every pair, their difference, its norm.
        i, j = _pair_rows(input.shape[0])
        return (input.index_select(0, i) - input.index_select(0, j)).norm(p, 1)
    return _C._pdist(input, float(p))


@functools.lru_cache(maxsize=32)
def _pair_rows(n):
    """The rows ``i < j`` of every pair, as int64 index tensors; kept per ``n``
    (only ever read by ``index_select``, never handed out)."""
    rows, cols = np.triu_indices(n, 1)
    return _C.tensor(rows.astype(np.int64)), _C.tensor(cols.astype(np.int64))
