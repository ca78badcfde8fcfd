"""RMS norm and local response normalisation (``nn.functional.rms_norm``,
``local_response_norm``) and the legacy cross-map LRN, composed from
differentiable ops as PyTorch composes them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ..._dtype_info import finfo
from ._args import tensor_args
from .padding import pad
from .pooling import avg_pool2d
from .pooling3d import avg_pool3d

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = ["rms_norm", "local_response_norm"]


def _check_normalized_shape(input, normalized_shape, weight):
    shape = list(normalized_shape)
    if len(shape) < 1:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
            f"least one element, but got normalized_shape = {shape}"
        )
    if weight is not None and list(weight.shape) != shape:
        raise RuntimeError(
            "Expected weight to be of same shape as normalized_shape, but got weight of shape "
            f"{list(weight.shape)} and normalized_shape = {shape}"
        )
    n = len(shape)
    if input.dim() < n or list(input.shape[input.dim() - n :]) != shape:
        inner = ", ".join(str(s) for s in shape)
        raise RuntimeError(
            f"Given normalized_shape={shape}, expected input with shape [*{inner}], but got "
            f"input of size{list(input.shape)}"
        )
    return shape


@tensor_args("input", optional=("weight",))
def rms_norm(
    input: Tensor,
    normalized_shape: IntOrInts,
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """Root-mean-square normalisation: ``x / sqrt(mean(x ** 2) + eps)`` over the trailing
    ``normalized_shape`` dimensions, times ``weight`` when given.

    Args:
        input (Tensor): ``(*, normalized_shape)``.
        normalized_shape (int or tuple): the trailing shape to normalise over.
        weight (Tensor, optional): of ``normalized_shape``, the scale. Default: ``None``.
        eps (float, optional): added to the mean square; ``None`` uses
            ``torch.finfo(input.dtype).eps``. Default: ``None``.

    Shape:
        - Input: ``(*, normalized_shape)``.
        - Output: the input's shape.

    Returns:
        Tensor: the normalised input.

    Example::

        >>> F.rms_norm(torch.tensor([[3.0, 4.0]]), (2,))
        tensor([[0.8485, 1.1314]])
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    shape = _check_normalized_shape(input, normalized_shape, weight)
    if eps is None:
        eps = finfo(input.dtype).eps
    dims = tuple(range(input.dim() - len(shape), input.dim()))
    out = input * _C.rsqrt(input.pow(2).mean(dims, keepdim=True) + eps)
    return out * weight if weight is not None else out


@tensor_args("input")
def local_response_norm(
    input: Tensor,
    size: IntOrInts | None,
    alpha: float = 1e-4,
    beta: float = 0.75,
    k: float = 1.0,
) -> Tensor:
    """Local response normalisation across channels (AlexNet's): each element is divided by
    ``(k + alpha * mean of x ** 2 over size neighbouring channels) ** beta``.

    Args:
        input (Tensor): ``(N, C, *)``, at least 3-d.
        size (int): the number of neighbouring channels in each window.
        alpha (float): the multiplier. Default: ``1e-4``.
        beta (float): the exponent. Default: ``0.75``.
        k (float): the additive constant. Default: ``1.0``.

    Shape:
        - Input: ``(N, C, *)``.
        - Output: the input's shape.

    Returns:
        Tensor: the normalised input.

    Example::

        >>> x = torch.tensor([[[1.0], [2.0], [3.0]]])
        >>> F.local_response_norm(x, size=2, alpha=1.0, beta=1.0)
        tensor([[[0.6667],
                 [0.5714],
                 [0.4000]]])
    """
    dim = input.dim()
    if dim < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality                          input (got {dim} "
            "dimensions)"
        )
    if input.numel() == 0:
        return input
    div = input * input
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.reshape(sizes)
    div = (div * alpha + k).pow(beta)
    return input / div


def _cross_map_window(channels, size):
    # The channels each output channel's scale sums, replaying the running sum
    # of PyTorch's legacy CrossMapLRN2d: it adds channel c + pre_pad - 1 and
    # drops channel c - pre_pad only while c > pre_pad, so channel 0 stays in
    # every window from the first on.
    pre_pad = int((size - 1) / 2 + 1)
    window = [[0.0] * channels for _ in range(channels)]
    current = set(range(min(pre_pad, channels)))
    for c in range(channels):
        if c > 0:
            if c < channels - pre_pad + 1:
                current.add(c + pre_pad - 1)
            if c > pre_pad:
                current.discard(c - pre_pad)
        for j in current:
            window[j][c] = 1.0
    return window


def cross_map_lrn2d(input, size, alpha=1e-4, beta=0.75, k=1):
    """The legacy ``CrossMapLRN2d`` forward on ``(N, C, H, W)``: ``input *
    (k + alpha / size * windowed sum of squares over channels) ** -beta``."""
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    if input.numel() == 0:
        # Nothing to scale: no channels x channels window for an empty batch.
        return input * 1
    window = _C.tensor(_cross_map_window(input.shape[1], size), dtype=input.dtype)
    sq = (input * input).movedim(1, -1)
    scale = _C.matmul(sq, window).movedim(-1, 1) * (alpha / size) + k
    return input * scale.pow(-beta)
