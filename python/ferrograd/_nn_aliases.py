"""The ``nn.functional`` ops PyTorch also exposes at the top level (``torch.conv2d``,
``torch.dropout``, ``torch.layer_norm``, ...). Most take the same leading arguments as
their functional and are the same objects; the four whose ``torch.*`` argument order
differs (``embedding``, ``batch_norm``, ``instance_norm``, ``adaptive_max_pool1d``) are
wrapped here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .nn import functional as F
from .nn.functional import (
    adaptive_avg_pool1d,
    alpha_dropout,
    avg_pool1d,
    bilinear,
    celu,
    celu_,
    channel_shuffle,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    cosine_similarity,
    dropout,
    feature_alpha_dropout,
    group_norm,
    hardshrink,
    layer_norm,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    pairwise_distance,
    pdist,
    pixel_shuffle,
    pixel_unshuffle,
    prelu,
    relu_,
    rrelu,
    rrelu_,
    selu,
    selu_,
    threshold,
    threshold_,
)

if TYPE_CHECKING:
    from ._C import Tensor
    from ._typing import IntOrInts

__all__ = [
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "alpha_dropout", "avg_pool1d", "batch_norm",
    "bilinear", "celu", "celu_", "channel_shuffle", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "cosine_similarity", "dropout", "embedding",
    "feature_alpha_dropout", "group_norm", "hardshrink", "instance_norm", "layer_norm",
    "max_pool1d", "max_pool2d", "max_pool3d", "pairwise_distance", "pdist", "pixel_shuffle",
    "pixel_unshuffle", "prelu", "relu_", "rrelu", "rrelu_", "selu", "selu_", "threshold",
    "threshold_",
]  # fmt: skip


def embedding(
    weight: Tensor,
    input: Tensor,
    padding_idx: int = -1,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """``torch.embedding``: the rows of ``weight`` at ``input`` (note the order:
    weight first, unlike ``nn.functional.embedding``)."""
    return F.embedding(input, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)  # fmt: skip


def batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool = True,
) -> Tensor:
    """``torch.batch_norm``: ``nn.functional.batch_norm`` with PyTorch's low-level
    argument order (weight and bias before the running statistics)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training,
                        momentum, eps)  # fmt: skip


def instance_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    use_input_stats: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool = True,
) -> Tensor:
    """``torch.instance_norm``: ``nn.functional.instance_norm`` with PyTorch's
    low-level argument order."""
    return F.instance_norm(input, running_mean, running_var, weight, bias,
                           use_input_stats, momentum, eps)  # fmt: skip


def adaptive_max_pool1d(input: Tensor, output_size: IntOrInts) -> tuple[Tensor, Tensor]:
    """``torch.adaptive_max_pool1d``: values and indices, as PyTorch's."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


for _fn in (embedding, batch_norm, instance_norm, adaptive_max_pool1d):
    _fn.__module__ = "ferrograd"
del _fn
