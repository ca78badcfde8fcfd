"""The losses of class probabilities or scores against class targets: binary cross
entropy (on probabilities or logits), negative log-likelihood and cross entropy,
each one Rust op after PyTorch's argument checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ..._autocast import autocast_op as _autocast_op
from .loss import _reduction, _scalar_type, _sizes_differ

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "nll_loss",
    "cross_entropy",
]


@_autocast_op("binary_cross_entropy")
def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross entropy between probabilities and targets:
    ``-weight * (target * log(input) + (1 - target) * log(1 - input))``, reduced.

    Each log is clamped below at -100, so a probability of exactly 0 or 1 gives a
    finite loss, as in PyTorch. For logits, :func:`binary_cross_entropy_with_logits` is
    more accurate.

    Args:
        input (Tensor): probabilities in ``[0, 1]``, of any shape.
        target (Tensor): targets in ``[0, 1]``, ``input``'s shape.
        weight (Tensor, optional): a weight per element, broadcastable to ``input``.
            Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> F.binary_cross_entropy(torch.tensor([0.8, 0.2]), torch.tensor([1.0, 0.0]))
        tensor(0.2231)
    """
    if _sizes_differ(input, target):
        raise ValueError(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}) is deprecated. Please ensure they have the same size."
        )
    dt, it = getattr(target, "dtype", None), getattr(input, "dtype", None)
    if dt is not None and it is not None and getattr(it, "is_floating_point", False) and dt != it:
        # PyTorch's kernel refuses a target of another dtype (an int64 one included).
        raise RuntimeError(f"Found dtype {_scalar_type(dt)} but expected {_scalar_type(it)}")
    return _C.binary_cross_entropy(
        input, target, weight, _reduction(size_average, reduce, reduction)
    )


@_autocast_op("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross entropy on logits: ``binary_cross_entropy(sigmoid(input), target)``
    computed in one stable step (no overflow for large logits).

    Per element the loss is ``-weight * (pos_weight * target * log(sigmoid(x)) +
    (1 - target) * log(1 - sigmoid(x)))``.

    Args:
        input (Tensor): logits, of any shape.
        target (Tensor): targets in ``[0, 1]``, ``input``'s shape.
        weight (Tensor, optional): a weight per element, broadcastable to ``input``.
            Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.
        pos_weight (Tensor, optional): a weight for the positive term per class
            (broadcast along the last dimension); above 1 favours recall.
            Default: ``None``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> logits = torch.tensor([2.0, -1.0, 0.0])
        >>> F.binary_cross_entropy_with_logits(logits, torch.tensor([1.0, 0.0, 1.0]))
        tensor(0.3778)
    """
    if _sizes_differ(input, target):
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    dt = getattr(target, "dtype", None)
    if dt is not None and not getattr(dt, "is_floating_point", True):
        # PyTorch computes the loss in the target's dtype, which cannot hold it.
        raise RuntimeError(
            f"result type Float can't be cast to the desired output type {_scalar_type(dt)}"
        )
    return _C.binary_cross_entropy_with_logits(
        input, target, weight, _reduction(size_average, reduce, reduction), pos_weight
    )


def _check_batch_size(input, target):
    # PyTorch raises ValueError here (a TORCH_CHECK_VALUE), before any other check.
    if (
        isinstance(input, _C.Tensor)
        and isinstance(target, _C.Tensor)
        and input.dim() >= 2
        and target.dim() >= 1
        and not target.is_floating_point()
        and input.shape[0] != target.shape[0]
    ):
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({target.shape[0]})."
        )


def _check_class_target(input, target, probabilities_allowed):
    # A float target of the input's shape holds class probabilities
    # (cross_entropy only); any other float target was meant as class indices.
    dt = getattr(target, "dtype", None)
    if dt is None or dt == _C.int64:
        return
    if probabilities_allowed and dt.is_floating_point:
        if tuple(getattr(target, "shape", ())) == tuple(getattr(input, "shape", ())):
            return
    raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_scalar_type(dt)}")


@_autocast_op("nll_loss")
def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood loss: ``-weight[y] * input[n, y]`` for each sample ``n`` with
    class ``y = target[n]``, reduced.

    ``input`` holds log-probabilities (the output of :func:`log_softmax`).

    Args:
        input (Tensor): ``(N, C)``, ``(C,)`` or ``(N, C, d1, ..., dK)``
            log-probabilities over ``C`` classes.
        target (Tensor): int64 class indices in ``[0, C)``: ``(N,)``, ``()`` or
            ``(N, d1, ..., dK)``.
        weight (Tensor, optional): ``(C,)``, a weight per class. Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        ignore_index (int): targets equal to this contribute nothing (and do not count
            in the mean). Default: ``-100``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.

    Shape:
        - Input: ``(N, C)``, ``(C,)`` or ``(N, C, d1, ..., dK)``.
        - Target: ``(N,)``, ``()`` or ``(N, d1, ..., dK)``.
        - Output: a scalar; with ``reduction='none'`` the target's shape.

    Returns:
        Tensor: the loss. ``'mean'`` divides by the sum of the weights of the counted
        targets.

    Example::

        >>> logp = F.log_softmax(torch.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]]), dim=1)
        >>> F.nll_loss(logp, torch.tensor([2, 0]), reduction="none")
        tensor([0.4076, 0.4076])
    """
    _check_batch_size(input, target)
    _check_class_target(input, target, probabilities_allowed=False)
    return _C.nll_loss(
        input, target, weight, ignore_index, _reduction(size_average, reduce, reduction)
    )


@_autocast_op("cross_entropy")
def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy between logits and targets: :func:`log_softmax` over the classes followed
    by :func:`nll_loss`, in one stable step.

    ``target`` is either class indices (int64) or class probabilities (floating, the
    same shape as ``input``).

    Args:
        input (Tensor): unnormalised scores ``(N, C)``, ``(C,)`` or
            ``(N, C, d1, ..., dK)``.
        target (Tensor): int64 class indices ``(N,)``, ``()`` or ``(N, d1, ..., dK)``
            in ``[0, C)``, or probabilities of ``input``'s shape.
        weight (Tensor, optional): ``(C,)``, a weight per class. Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        ignore_index (int): class-index targets equal to this contribute nothing.
            Default: ``-100``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.
        label_smoothing (float): in ``[0, 1]``; mixes the target with the uniform
            distribution over the classes, ``(1 - s) * target + s / C``.
            Default: ``0.0``.

    Shape:
        - Input: ``(N, C)``, ``(C,)`` or ``(N, C, d1, ..., dK)``.
        - Target: ``(N,)``, ``()`` or ``(N, d1, ..., dK)`` for indices; ``input``'s
          shape for probabilities.
        - Output: a scalar; with ``reduction='none'`` the shape without ``C``.

    Returns:
        Tensor: the loss.

    Raises:
        ValueError: if the batch sizes of ``input`` and an index ``target`` differ.

    Example::

        >>> logits = torch.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]])
        >>> F.cross_entropy(logits, torch.tensor([2, 0]))
        tensor(0.4076)
        >>> F.cross_entropy(logits, torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]))
        tensor(0.4076)
    """
    _check_batch_size(input, target)
    _check_class_target(input, target, probabilities_allowed=True)
    return _C.cross_entropy(
        input,
        target,
        weight,
        ignore_index,
        _reduction(size_average, reduce, reduction),
        label_smoothing,
    )
