"""``CosineSimilarity`` and ``PairwiseDistance``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .module import Module

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """Cosine similarity of two inputs along ``dim``:
    ``sum(x1 * x2) / (max(norm(x1), eps) * max(norm(x2), eps))`` (see
    :func:`~ferrograd.nn.functional.cosine_similarity`).

    Args:
        dim (int): the dimension of the vectors. Default: ``1``.
        eps (float): the smallest norm divided by. Default: ``1e-8``.

    Shape:
        - Input1: ``(*1, D, *2)``, ``D`` at ``dim``.
        - Input2: broadcastable with input1.
        - Output: ``(*1, *2)``.

    Example::

        >>> cos = nn.CosineSimilarity(dim=1)
        >>> cos(torch.tensor([[1.0, 0.0], [1.0, 1.0]]), torch.tensor([[0.0, 1.0], [2.0, 2.0]]))
        tensor([0.0000, 1.0000])
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The ``p``-norm distance between the rows of two inputs, ``||x1 - x2 + eps||_p`` over the
    last dimension (see :func:`~ferrograd.nn.functional.pairwise_distance`).

    Args:
        p (float): the norm's exponent. Default: ``2.0``.
        eps (float): added to the difference. Default: ``1e-6``.
        keepdim (bool): keep the last dimension. Default: ``False``.

    Shape:
        - Input1: ``(N, D)`` or ``(D,)``.
        - Input2: broadcastable with input1.
        - Output: ``(N,)`` or ``()`` (``(N, 1)`` or ``(1,)`` with ``keepdim``).

    Example::

        >>> dist = nn.PairwiseDistance()
        >>> dist(torch.tensor([[0.0, 0.0], [1.0, 1.0]]), torch.tensor([[3.0, 4.0], [1.0, 1.0]]))
        tensor([5.0000e+00, 1.4142e-06])
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
