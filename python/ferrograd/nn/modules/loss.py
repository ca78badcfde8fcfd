"""Loss modules, each a thin wrapper over its ``nn.functional`` form."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .._functional.loss import _legacy_reduction
from .module import Module

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..._C import Tensor

__all__ = [
    "MSELoss",
    "L1Loss",
    "SmoothL1Loss",
    "HuberLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "NLLLoss",
    "CrossEntropyLoss",
]


class _Loss(Module):
    reduction: str

    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    # PyTorch keeps a class weight as a buffer, so it is in the state dict and
    # follows ``to()``; None registers nothing.
    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error between the input and the target: ``(x - y) ** 2`` per element,
    reduced (see :func:`~ferrograd.nn.functional.mse_loss`).

    Args:
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Shape:
        - Input: ``(*)``, any shape.
        - Target: ``(*)``, the input's shape.
        - Output: a scalar; the input's shape with ``reduction='none'``.

    Example::

        >>> loss = nn.MSELoss()
        >>> loss(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 0.0]))
        tensor(4.3333)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error between the input and the target: ``|x - y|`` per element, reduced
    (see :func:`~ferrograd.nn.functional.l1_loss`).

    Args:
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Shape:
        - Input: ``(*)``, any shape.
        - Target: ``(*)``, the input's shape.
        - Output: a scalar; the input's shape with ``reduction='none'``.

    Example::

        >>> loss = nn.L1Loss(reduction="sum")
        >>> loss(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 0.0]))
        tensor(5.)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Smooth L1 loss: ``0.5 * d ** 2 / beta`` where ``|d| < beta``, ``|d| - 0.5 * beta``
    elsewhere, ``d = x - y``; reduced (see :func:`~ferrograd.nn.functional.smooth_l1_loss`).

    Args:
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.
        beta (float): where the loss turns from quadratic to linear. Default: ``1.0``.

    Shape:
        - Input: ``(*)``, any shape.
        - Target: ``(*)``, the input's shape.
        - Output: a scalar; the input's shape with ``reduction='none'``.

    Example::

        >>> loss = nn.SmoothL1Loss(reduction="none")
        >>> loss(torch.tensor([0.0, 3.0]), torch.tensor([0.5, 0.0]))
        tensor([0.1250, 2.5000])
    """

    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        beta: float = 1.0,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Huber loss: ``0.5 * d ** 2`` where ``|d| <= delta``, ``delta * (|d| - 0.5 * delta)``
    elsewhere, ``d = x - y``; reduced (see :func:`~ferrograd.nn.functional.huber_loss`).

    Args:
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.
        delta (float): where the loss turns from quadratic to linear. Default: ``1.0``.

    Shape:
        - Input: ``(*)``, any shape.
        - Target: ``(*)``, the input's shape.
        - Output: a scalar; the input's shape with ``reduction='none'``.

    Example::

        >>> loss = nn.HuberLoss(delta=2.0, reduction="none")
        >>> loss(torch.tensor([0.0, 3.0]), torch.tensor([0.5, 0.0]))
        tensor([0.1250, 4.0000])
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    """Binary cross entropy between probabilities and targets:
    ``-w * (y * log(x) + (1 - y) * log(1 - x))`` per element, reduced (see
    :func:`~ferrograd.nn.functional.binary_cross_entropy`).

    The logs are clamped at -100, so probabilities of exactly 0 or 1 give finite
    losses. For logits use :class:`BCEWithLogitsLoss`, which is more accurate.

    Args:
        weight (Tensor, optional): a weight per element, broadcastable to the input
            (kept as a buffer). Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Shape:
        - Input: ``(*)``, probabilities in ``[0, 1]``.
        - Target: ``(*)``, the input's shape, in ``[0, 1]``.
        - Output: a scalar; the input's shape with ``reduction='none'``.

    Example::

        >>> loss = nn.BCELoss()
        >>> probs = torch.sigmoid(torch.tensor([2.0, -1.0, 0.0]))
        >>> loss(probs, torch.tensor([1.0, 0.0, 1.0]))
        tensor(0.3778)
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy on logits: a sigmoid followed by :class:`BCELoss`, in one
    numerically stable step (see
    :func:`~ferrograd.nn.functional.binary_cross_entropy_with_logits`).

    Args:
        weight (Tensor, optional): a weight per element, broadcastable to the input.
            Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.
        pos_weight (Tensor, optional): a weight for the positive term per class
            (broadcast along the last dimension), e.g. ``negatives / positives`` to
            balance classes. Default: ``None``.

    Shape:
        - Input: ``(*)``, logits.
        - Target: ``(*)``, the input's shape, in ``[0, 1]``.
        - Output: a scalar; the input's shape with ``reduction='none'``.

    Example::

        >>> loss = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0]))
        >>> loss(torch.tensor([2.0, -1.0, 0.0]), torch.tensor([1.0, 0.0, 1.0]))
        tensor(0.6511)
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood loss for classification: ``-weight[y] * x[n, y]`` for each
    sample with class ``y``, reduced; the input holds log-probabilities (see
    :func:`~ferrograd.nn.functional.nll_loss`).

    Pair it with :class:`LogSoftmax`, or use :class:`CrossEntropyLoss`, which does both.

    Args:
        weight (Tensor, optional): ``(C,)``, a weight per class. Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``.
        ignore_index (int): targets equal to this contribute nothing and do not count in
            the mean. Default: ``-100``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` (divided by the summed weights of the
            counted targets) or ``'sum'``. Default: ``'mean'``.

    Shape:
        - Input: ``(N, C)``, ``(C,)`` or ``(N, C, d1, ..., dK)``.
        - Target: int64 ``(N,)``, ``()`` or ``(N, d1, ..., dK)``, values in ``[0, C)``.
        - Output: a scalar; the target's shape with ``reduction='none'``.

    Example::

        >>> loss = nn.NLLLoss()
        >>> logp = nn.LogSoftmax(dim=1)(torch.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]]))
        >>> loss(logp, torch.tensor([2, 0]))
        tensor(0.4076)
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(
            input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction
        )


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy between logits and targets: :class:`LogSoftmax` over the classes followed
    by :class:`NLLLoss`, in one stable step (see
    :func:`~ferrograd.nn.functional.cross_entropy`).

    The target holds class indices (int64) or class probabilities (floating point, the
    input's shape).

    Args:
        weight (Tensor, optional): ``(C,)``, a weight per class. Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``.
        ignore_index (int): class-index targets equal to this contribute nothing.
            Default: ``-100``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.
        label_smoothing (float): in ``[0, 1]``; the target becomes
            ``(1 - s) * target + s / C``. Default: ``0.0``.

    Shape:
        - Input: ``(N, C)``, ``(C,)`` or ``(N, C, d1, ..., dK)`` logits.
        - Target: int64 ``(N,)``, ``()`` or ``(N, d1, ..., dK)`` class indices, or
          probabilities of the input's shape.
        - Output: a scalar; the target's shape (without ``C``) with
          ``reduction='none'``.

    Example::

        >>> loss = nn.CrossEntropyLoss()
        >>> logits = torch.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]], requires_grad=True)
        >>> out = loss(logits, torch.tensor([2, 0]))
        >>> out
        tensor(0.4076, grad_fn=<NllLossBackward0>)
        >>> out.backward()
        >>> logits.grad
        tensor([[ 0.0450,  0.1224, -0.1674],
                [-0.1674,  0.1224,  0.0450]])
        >>> nn.CrossEntropyLoss(label_smoothing=0.1)(logits, torch.tensor([2, 0]))
        tensor(0.5076, grad_fn=<AddBackward0>)
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


# ----- more losses: KLDivLoss, CosineEmbeddingLoss, MarginRankingLoss, ... -------------------

__all__ += [
    "KLDivLoss",
    "CosineEmbeddingLoss",
    "MarginRankingLoss",
    "TripletMarginLoss",
    "HingeEmbeddingLoss",
    "SoftMarginLoss",
    "MultiLabelSoftMarginLoss",
    "PoissonNLLLoss",
    "GaussianNLLLoss",
]


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence loss: ``y * (log(y) - x)`` per element, where the input
    ``x`` holds log-probabilities; reduced (see :func:`~ferrograd.nn.functional.kl_div`).

    Use ``reduction='batchmean'`` for the KL divergence itself (the sum divided by the
    batch size); ``'mean'`` averages over every element.

    Args:
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'batchmean'``, ``'sum'`` or ``'mean'``.
            Default: ``'mean'``.
        log_target (bool): the target holds log-probabilities too. Default: ``False``.

    Shape:
        - Input: ``(*)``, log-probabilities.
        - Target: ``(*)``, the input's shape.
        - Output: a scalar; the input's shape with ``reduction='none'``.

    Example::

        >>> loss = nn.KLDivLoss(reduction="batchmean")
        >>> loss(torch.tensor([[0.25, 0.75]]).log(), torch.tensor([[0.5, 0.5]]))
        tensor(0.1438)
    """

    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        log_target: bool = False,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class _PairMarginLoss(_Loss):
    # The two losses of a pair of inputs against a target of 1 or -1 with a margin.
    def __init__(
        self,
        margin: float = 0.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class CosineEmbeddingLoss(_PairMarginLoss):
    """Cosine embedding loss of pairs: ``1 - cos(x1, x2)`` for similar pairs (target 1),
    ``max(0, cos(x1, x2) - margin)`` for dissimilar ones (target -1); reduced (see
    :func:`~ferrograd.nn.functional.cosine_embedding_loss`).

    Args:
        margin (float): in ``[-1, 1]``. Default: ``0.0``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per sample), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Shape:
        - Input1: ``(N, D)`` or ``(D,)``; input2: the same shape.
        - Target: ``(N,)`` or ``()``, 1 or -1.
        - Output: a scalar; ``(N,)`` with ``reduction='none'``.

    Example::

        >>> loss = nn.CosineEmbeddingLoss(reduction="none")
        >>> a = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
        >>> loss(a, torch.tensor([[1.0, 1.0], [1.0, 1.0]]), torch.tensor([1, -1]))
        tensor([0.2929, 0.7071])
    """

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(
            input1, input2, target, margin=self.margin, reduction=self.reduction
        )


class MarginRankingLoss(_PairMarginLoss):
    """Margin ranking loss: ``max(0, -y * (x1 - x2) + margin)``, where ``y = 1`` asks for
    ``x1`` to rank above ``x2`` and ``y = -1`` below; reduced.

    Args:
        margin (float): the required gap. Default: ``0.0``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Shape:
        - Input1, input2, target: ``(N,)`` or ``()``.
        - Output: a scalar; ``(N,)`` with ``reduction='none'``.

    Example::

        >>> loss = nn.MarginRankingLoss(margin=1.0, reduction="none")
        >>> loss(torch.tensor([1.0, 1.0]), torch.tensor([0.5, 2.0]), torch.tensor([1.0, -1.0]))
        tensor([0.5000, 0.0000])
    """

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(
            input1, input2, target, margin=self.margin, reduction=self.reduction
        )


class TripletMarginLoss(_Loss):
    """Triplet margin loss: ``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the pairwise
    ``p``-norm distance; reduced (see :func:`~ferrograd.nn.functional.triplet_margin_loss`).

    Its ``forward(anchor, positive, negative)`` takes the three batches.

    Args:
        margin (float): the required gap. Default: ``1.0``.
        p (float): the norm of the distance. Default: ``2.0``.
        eps (float): added to the differences. Default: ``1e-6``.
        swap (bool): use ``min(d(a, n), d(p, n))`` as the negative distance.
            Default: ``False``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per sample), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Shape:
        - Anchor, positive, negative: ``(N, D)`` or ``(D,)``.
        - Output: a scalar; ``(N,)`` with ``reduction='none'``.

    Example::

        >>> loss = nn.TripletMarginLoss(margin=1.0)
        >>> a = torch.tensor([[0.0, 0.0]])
        >>> loss(a, torch.tensor([[0.0, 1.0]]), torch.tensor([[0.0, 1.5]]))
        tensor(0.5000)
    """

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead"
            )
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(
            anchor,
            positive,
            negative,
            margin=self.margin,
            p=self.p,
            eps=self.eps,
            swap=self.swap,
            reduction=self.reduction,
        )


class HingeEmbeddingLoss(_Loss):
    """Hinge embedding loss: ``x`` where the target is 1, ``max(0, margin - x)`` where it is
    -1; reduced. The input is usually a distance between two embeddings.

    Args:
        margin (float): the margin of the -1 targets. Default: ``1.0``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Shape:
        - Input: ``(*)``, any shape.
        - Target: ``(*)``, the input's shape.
        - Output: a scalar; the input's shape with ``reduction='none'``.

    Example::

        >>> loss = nn.HingeEmbeddingLoss(reduction="none")
        >>> loss(torch.tensor([0.3, 0.3, 2.0]), torch.tensor([1.0, -1.0, -1.0]))
        tensor([0.3000, 0.7000, 0.0000])
    """

    def __init__(
        self,
        margin: float = 1.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss: ``log(1 + exp(-y * x))`` with targets ``y`` of 1 or -1;
    reduced.

    Args:
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Shape:
        - Input: ``(*)``, any shape.
        - Target: ``(*)``, the input's shape.
        - Output: a scalar; the input's shape with ``reduction='none'``.

    Example::

        >>> loss = nn.SoftMarginLoss()
        >>> loss(torch.tensor([2.0, -1.0]), torch.tensor([1.0, -1.0]))
        tensor(0.2201)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all logistic loss: per sample, the mean over the ``C`` classes of
    ``-(y * log(sigmoid(x)) + (1 - y) * log(sigmoid(-x)))``; reduced.

    Args:
        weight (Tensor, optional): ``(C,)``, a weight per class. Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per sample), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Shape:
        - Input: ``(N, C)`` or ``(C,)``.
        - Target: the input's shape, 0 or 1 per class.
        - Output: a scalar; ``(N,)`` with ``reduction='none'``.

    Example::

        >>> loss = nn.MultiLabelSoftMarginLoss()
        >>> loss(torch.tensor([[2.0, -2.0]]), torch.tensor([[1.0, 0.0]]))
        tensor(0.1269)
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(
            input, target, weight=self.weight, reduction=self.reduction
        )


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood of target counts given predicted rates:
    ``exp(x) - y * x`` for a log rate (``log_input=True``), else ``x - y * log(x + eps)``;
    reduced (see :func:`~ferrograd.nn.functional.poisson_nll_loss`).

    Args:
        log_input (bool): the input is the log of the rate. Default: ``True``.
        full (bool): add Stirling's approximation of ``log(y!)`` where ``y > 1``.
            Default: ``False``.
        size_average (bool, optional): deprecated, use ``reduction``.
        eps (float): keeps the log finite when ``log_input=False``. Default: ``1e-8``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Shape:
        - Input: ``(*)``, any shape.
        - Target: ``(*)``, the input's shape.
        - Output: a scalar; the input's shape with ``reduction='none'``.

    Example::

        >>> loss = nn.PoissonNLLLoss()
        >>> loss(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
        tensor(0.8591)
    """

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average: bool | None = None,
        eps: float = 1e-8,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(
            log_input,
            target,
            log_input=self.log_input,
            full=self.full,
            eps=self.eps,
            reduction=self.reduction,
        )


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood of targets given a predicted mean and variance:
    ``0.5 * (log(var) + (x - y) ** 2 / var)`` (plus ``0.5 * log(2 * pi)`` with ``full``);
    reduced (see :func:`~ferrograd.nn.functional.gaussian_nll_loss`).

    Its ``forward(input, target, var)`` takes the variance as a third argument.

    Args:
        full (bool): include the constant term. Default: ``False``.
        eps (float): the variance is clamped below at this (without blocking its
            gradient). Default: ``1e-6``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Shape:
        - Input: ``(N, *)`` or ``(*)``.
        - Target: the input's shape.
        - Var: the input's shape, or with the last dimension 1 or dropped, or a number.
        - Output: a scalar; the input's shape with ``reduction='none'``.

    Example::

        >>> loss = nn.GaussianNLLLoss()
        >>> mean, var = torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.5])
        >>> loss(mean, torch.tensor([1.0, 1.0]), var)
        tensor(0.0767)
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor) -> Tensor:
        return F.gaussian_nll_loss(
            input, target, var, full=self.full, eps=self.eps, reduction=self.reduction
        )


__all__ += ["CTCLoss"]


class CTCLoss(_Loss):
    """Connectionist temporal classification loss: the negative log-probability of each target
    sequence summed over its alignments to the input frames (see
    :func:`~ferrograd.nn.functional.ctc_loss`).

    Its ``forward(log_probs, targets, input_lengths, target_lengths)`` takes the
    per-frame log-probabilities, the labels and the lengths of each sample.

    Args:
        blank (int): the blank class. Default: ``0``.
        reduction (str): ``'none'``, ``'sum'``, or ``'mean'`` (each loss divided by its
            target length, then averaged). Default: ``'mean'``.
        zero_infinity (bool): turn the infinite losses of impossible alignments into
            zeros. Default: ``False``.

    Shape:
        - Log_probs: ``(T, N, C)`` or ``(T, C)``, from a :class:`LogSoftmax`.
        - Targets: ``(N, S)`` padded, or the sequences concatenated in 1-d.
        - Input_lengths, target_lengths: ``(N,)``.
        - Output: a scalar; ``(N,)`` with ``reduction='none'``.

    Note:
        The gradient is the exact derivative with respect to ``log_probs``, where
        PyTorch returns the gradient with respect to the logits of a ``log_softmax``;
        through ``log_softmax`` both give the same gradient.

    Example::

        >>> ctc = nn.CTCLoss()
        >>> log_probs = torch.zeros(6, 2, 4).log_softmax(2)
        >>> targets = torch.tensor([[1, 2], [3, 3]])
        >>> ctc(log_probs, targets, [6, 6], [2, 2])
        tensor(2.2079)
    """

    def __init__(
        self,
        blank: int = 0,
        reduction: str = "mean",
        zero_infinity: bool = False,
    ) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(
        self,
        log_probs: Tensor,
        targets: Tensor,
        input_lengths: Tensor,
        target_lengths: Tensor,
    ) -> Tensor:
        return F.ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            self.blank,
            self.reduction,
            self.zero_infinity,
        )


# ----- multi-class margin losses and the triplet loss with a custom distance ------------------

__all__ += ["MultiMarginLoss", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss"]


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss: per sample with class ``y``, the sum over the other classes
    ``j`` of ``weight[y] * max(0, margin - x[y] + x[j]) ** p``, divided by ``C``; reduced
    (see :func:`~ferrograd.nn.functional.multi_margin_loss`).

    Args:
        p (int): 1 or 2. Default: ``1``.
        margin (float): the required gap. Default: ``1.0``.
        weight (Tensor, optional): ``(C,)``, a weight per class. Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per sample), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Shape:
        - Input: ``(N, C)`` or ``(C,)``.
        - Target: int64 ``(N,)`` or ``()``, class indices.
        - Output: a scalar; ``(N,)`` with ``reduction='none'``.

    Example::

        >>> loss = nn.MultiMarginLoss()
        >>> loss(torch.tensor([[0.1, 0.2, 0.4, 0.8]]), torch.tensor([3]))
        tensor(0.3250)
    """

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p != 1 and p != 2:
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(
                f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                f"{weight.dim()}D instead"
            )
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(
            input, target, p=self.p, margin=self.margin, weight=self.weight,
            reduction=self.reduction,
        )  # fmt: skip


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss: per sample, the sum over its target classes ``j`` and other
    classes ``k`` of ``max(0, 1 - (x[j] - x[k]))``, divided by ``C``; reduced.

    The target lists each sample's classes first and ends them with -1.

    Args:
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per sample), ``'mean'`` or ``'sum'``.
            Default: ``'mean'``.

    Shape:
        - Input: ``(N, C)`` or ``(C,)``.
        - Target: int64, the input's shape.
        - Output: a scalar; ``(N,)`` with ``reduction='none'``.

    Example::

        >>> loss = nn.MultiLabelMarginLoss()
        >>> loss(torch.tensor([[0.1, 0.2, 0.4, 0.8]]), torch.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet margin loss with any distance: ``max(0, margin + d(a, p) - d(a, n))``; reduced
    (see :func:`~ferrograd.nn.functional.triplet_margin_with_distance_loss`).

    Args:
        distance_function (callable, optional): ``d(x, y)``, returning a tensor of
            distances; ``None`` uses :class:`PairwiseDistance`. Default: ``None``.
        margin (float): the required gap, positive. Default: ``1.0``.
        swap (bool): use ``min(d(a, n), d(p, n))`` as the negative distance.
            Default: ``False``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'mean'``.

    Shape:
        - Anchor, positive, negative: ``(N, D)`` or ``(D,)``.
        - Output: a scalar; ``(N,)`` with ``reduction='none'``.

    Example::

        >>> loss = nn.TripletMarginWithDistanceLoss(
        ...     distance_function=lambda x, y: 1 - F.cosine_similarity(x, y)
        ... )
        >>> a = torch.tensor([[1.0, 0.0]])
        >>> loss(a, torch.tensor([[1.0, 0.1]]), torch.tensor([[0.0, 1.0]]))
        tensor(0.0050)
    """

    def __init__(
        self,
        *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got "
                f"{margin} instead"
            )
        from .distance import PairwiseDistance

        self.distance_function = (
            distance_function if distance_function is not None else PairwiseDistance()
        )
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction,
        )  # fmt: skip
