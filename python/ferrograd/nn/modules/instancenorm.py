"""Instance normalisation layers (``InstanceNorm1d/2d/3d``)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from .. import functional as F
from .batchnorm import _NormBase

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import DType

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _no_batch_dim = 0

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        nb = self._no_batch_dim
        if input.dim() not in (nb, nb + 1):
            raise ValueError(f"expected {nb}D or {nb + 1}D input (got {input.dim()}D input)")
        feature_dim = input.dim() - nb
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match num_features "
                    f"({self.num_features}), but got: {input.size(feature_dim)}."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. You can "
                "silence this warning by not passing in num_features, which is not used "
                "because affine=False",
                stacklevel=2,
            )
        if input.dim() == nb:
            return self._apply_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_norm(input)

    def _apply_norm(self, input):
        return F.instance_norm(
            input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation over ``(N, C, L)`` (or unbatched ``(C, L)``): each channel of
    each sample is normalised over its own spatial positions,
    ``y = (x - mean) / sqrt(var + eps) * weight + bias``.

    Args:
        num_features (int): ``C``, the number of channels.
        eps (float): added to the variance. Default: ``1e-5``.
        momentum (float or None): the running statistics' update factor.
            Default: ``0.1``.
        affine (bool): learn per-channel ``weight`` and ``bias``. Default: ``False``.
        track_running_stats (bool): keep running statistics (the batch average of the
            per-instance ones) and use them in ``eval()`` mode. Default: ``False``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        - Input: ``(N, C, L)`` or ``(C, L)``.
        - Output: the input's shape.

    Example::

        >>> m = nn.InstanceNorm1d(2)
        >>> x = torch.arange(6.0).reshape(1, 2, 3)
        >>> m(x).flatten()
        tensor([-1.2247,  0.0000,  1.2247, -1.2247,  0.0000,  1.2247])
    """

    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation over ``(N, C, H, W)`` (or unbatched ``(C, H, W)``): each channel
    of each sample is normalised over its own spatial positions,
    ``y = (x - mean) / sqrt(var + eps) * weight + bias``.

    Args:
        num_features (int): ``C``, the number of channels.
        eps (float): added to the variance. Default: ``1e-5``.
        momentum (float or None): the running statistics' update factor.
            Default: ``0.1``.
        affine (bool): learn per-channel ``weight`` and ``bias``. Default: ``False``.
        track_running_stats (bool): keep running statistics (the batch average of the
            per-instance ones) and use them in ``eval()`` mode. Default: ``False``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``.
        - Output: the input's shape.

    Example::

        >>> m = nn.InstanceNorm2d(2)
        >>> x = torch.arange(8.0).reshape(1, 2, 2, 2)
        >>> m(x).flatten()
        tensor([-1.3416, -0.4472,  0.4472,  1.3416, -1.3416, -0.4472,  0.4472,  1.3416])
    """

    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation over ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``): each
    channel of each sample is normalised over its own spatial positions,
    ``y = (x - mean) / sqrt(var + eps) * weight + bias``.

    Args:
        num_features (int): ``C``, the number of channels.
        eps (float): added to the variance. Default: ``1e-5``.
        momentum (float or None): the running statistics' update factor.
            Default: ``0.1``.
        affine (bool): learn per-channel ``weight`` and ``bias``. Default: ``False``.
        track_running_stats (bool): keep running statistics (the batch average of the
            per-instance ones) and use them in ``eval()`` mode. Default: ``False``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        - Input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        - Output: the input's shape.

    Example::

        >>> m = nn.InstanceNorm3d(2)
        >>> x = torch.arange(4.0).reshape(1, 2, 2, 1, 1)
        >>> m(x).flatten()
        tensor([-1.0000,  1.0000, -1.0000,  1.0000])
    """

    _no_batch_dim = 4
