"""The losses of a prediction against a real-valued target, elementwise:
squared and absolute error, smooth L1 and Huber, each one Rust op."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ..._autocast import autocast_op as _autocast_op
from .loss import _reduction, _warn_target_size

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = [
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
]


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Mean squared error: ``(input - target) ** 2``, reduced.

    Args:
        input (Tensor): the prediction, of any shape.
        target (Tensor): the target, broadcastable to ``input``'s shape.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> F.mse_loss(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 0.0]))
        tensor(4.3333)
    """
    _warn_target_size(input, target)
    return _C.mse_loss(input, target, _reduction(size_average, reduce, reduction))


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Mean absolute error: ``|input - target|``, reduced.

    Args:
        input (Tensor): the prediction, of any shape.
        target (Tensor): the target, broadcastable to ``input``'s shape.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> F.l1_loss(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 0.0]))
        tensor(1.6667)
    """
    _warn_target_size(input, target)
    return _C.l1_loss(input, target, _reduction(size_average, reduce, reduction))


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """Smooth L1 loss: ``0.5 * d**2 / beta`` where ``|d| < beta``, ``|d| - 0.5 * beta``
    elsewhere, with ``d = input - target``; reduced.

    Args:
        input (Tensor): the prediction, of any shape.
        target (Tensor): the target, broadcastable to ``input``'s shape.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.
        beta (float): where the loss turns from quadratic to linear; ``0`` gives the
            L1 loss. Default: ``1.0``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> F.smooth_l1_loss(torch.tensor([0.0, 3.0]), torch.tensor([0.5, 0.0]), reduction="none")
        tensor([0.1250, 2.5000])
    """
    _warn_target_size(input, target)
    return _C.smooth_l1_loss(input, target, _reduction(size_average, reduce, reduction), beta)


@_autocast_op("huber_loss")
def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
) -> Tensor:
    """Huber loss: ``0.5 * d**2`` where ``|d| <= delta``, ``delta * (|d| - 0.5 * delta)``
    elsewhere, with ``d = input - target``; reduced. It equals
    ``delta * smooth_l1_loss(..., beta=delta)``.

    Args:
        input (Tensor): the prediction, of any shape.
        target (Tensor): the target, broadcastable to ``input``'s shape.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.
        delta (float): where the loss turns from quadratic to linear. Default: ``1.0``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> F.huber_loss(torch.tensor([0.0, 3.0]), torch.tensor([0.5, 0.0]), reduction="none")
        tensor([0.1250, 2.5000])
    """
    _warn_target_size(input, target)
    return _C.huber_loss(input, target, reduction, delta)
