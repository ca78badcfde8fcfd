"""Normalisation functional forms: argument adapters over the Rust ops
(``_C.batch_norm``, ``layer_norm``, ``group_norm``), and RMS norm, local
response normalisation and the legacy cross-map LRN, composed from
differentiable ops as PyTorch composes them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ..._dtype_info import finfo
from ...autograd.grad_mode import no_grad
from ._args import tensor_args
from .avg_pooling import avg_pool2d
from .padding import pad
from .pooling3d import avg_pool3d

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = [
    "batch_norm",
    "instance_norm",
    "layer_norm",
    "group_norm",
    "rms_norm",
    "local_response_norm",
    "normalize",
]


def _verify_batch_size(size):
    n = size[0]
    for d in size[2:]:
        n *= d
    if n == 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {list(size)}"
        )


def _refuse_empty_affine(weight, bias):
    # PyTorch's batch and instance norm read the first element of an affine parameter
    # even without channels, so `BatchNorm1d(0)` is built and refused at its first
    # forward, with these words (`affine=False` runs).
    for p in (weight, bias):
        if p is not None and p.numel() == 0:
            raise IndexError(
                "select(): index 0 out of range for tensor of size [0] at dimension 0"
            )


def _verify_spatial_size(size):
    n = 1
    for d in size[2:]:
        n *= d
    if n == 1:
        raise ValueError(
            f"Expected more than 1 spatial element when training, got input size {list(size)}"
        )


@tensor_args(
    "input",
    optional=(
        "running_mean",
        "running_var",
        "weight",
        "bias",
    ),
)
def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalisation: normalises each channel (dimension 1) over the batch and spatial
    dimensions, then applies the per-channel affine ``weight``/``bias``.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias``. In training mode ``mean`` and
    ``var`` are the batch's (biased variance) and the running statistics, when given,
    are updated in place, ``running = (1 - momentum) * running + momentum * stat``
    with the unbiased variance. Otherwise the running statistics are used.

    Args:
        input (Tensor): ``(N, C)`` or ``(N, C, *)``.
        running_mean (Tensor, optional): ``(C,)``, the running mean (updated in place
            when training).
        running_var (Tensor, optional): ``(C,)``, the running variance (updated in
            place when training).
        weight (Tensor, optional): ``(C,)``, the scale. Default: ``None``.
        bias (Tensor, optional): ``(C,)``, the shift. Default: ``None``.
        training (bool): use the batch's statistics. Default: ``False``.
        momentum (float, optional): the running statistics' update factor; ``None``
            counts as 0 here. Default: ``0.1``.
        eps (float): added to the variance. Default: ``1e-5``.

    Shape:
        - Input: ``(N, C)`` or ``(N, C, *)``.
        - Output: the input's shape.

    Returns:
        Tensor: the normalised input.

    Raises:
        ValueError: when training on one value per channel.

    Example::

        >>> x = torch.tensor([[1.0, 10.0], [3.0, 30.0]])
        >>> mean, var = torch.zeros(2), torch.ones(2)
        >>> F.batch_norm(x, mean, var, training=True)
        tensor([[-1.0000, -1.0000],
                [ 1.0000,  1.0000]])
        >>> mean, var
        (tensor([0.2000, 2.0000]), tensor([ 1.1000, 20.9000]))
    """
    _refuse_empty_affine(weight, bias)
    if training:
        _verify_batch_size(input.size())
    return _C.batch_norm(
        input,
        running_mean,
        running_var,
        weight,
        bias,
        training,
        0.0 if momentum is None else float(momentum),
        float(eps),
    )


@tensor_args(
    "input",
    optional=(
        "running_mean",
        "running_var",
        "weight",
        "bias",
    ),
)
def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Instance normalisation: normalises each channel of each sample over its spatial
    dimensions, then applies the per-channel affine ``weight``/``bias``.

    Args:
        input (Tensor): ``(N, C, *)`` with at least one spatial dimension.
        running_mean (Tensor, optional): ``(C,)``, updated with the batch average of
            the per-instance means when ``use_input_stats``. Default: ``None``.
        running_var (Tensor, optional): ``(C,)``, likewise for the variances.
            Default: ``None``.
        weight (Tensor, optional): ``(C,)``, the scale. Default: ``None``.
        bias (Tensor, optional): ``(C,)``, the shift. Default: ``None``.
        use_input_stats (bool): normalise with each instance's statistics; ``False``
            uses the running ones. Default: ``True``.
        momentum (float, optional): the running statistics' update factor.
            Default: ``0.1``.
        eps (float): added to the variance. Default: ``1e-5``.

    Shape:
        - Input: ``(N, C, *)``.
        - Output: the input's shape.

    Returns:
        Tensor: the normalised input.

    Example::

        >>> x = torch.tensor([[[1.0, 3.0], [10.0, 30.0]]])
        >>> F.instance_norm(x)
        tensor([[[-1.0000,  1.0000],
                 [-1.0000,  1.0000]]])
    """
    _refuse_empty_affine(weight, bias)
    if use_input_stats:
        _verify_spatial_size(input.size())
    shape = tuple(input.shape)
    if len(shape) < 2:
        raise ValueError(f"expected at least 2D input (got {len(shape)}D input)")
    n, c = shape[0], shape[1]
    x = input.reshape(1, n * c, *shape[2:])
    w = weight.repeat(n) if weight is not None else None
    b = bias.repeat(n) if bias is not None else None
    rm = running_mean.repeat(n) if running_mean is not None else None
    rv = running_var.repeat(n) if running_var is not None else None
    out = _C.batch_norm(
        x, rm, rv, w, b, use_input_stats, 0.0 if momentum is None else float(momentum), float(eps)
    )
    if use_input_stats:
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(rm.view(n, c).mean(0))
            if running_var is not None:
                running_var.copy_(rv.view(n, c).mean(0))
    return out.view(*shape)


@tensor_args(
    "input",
    optional=(
        "weight",
        "bias",
    ),
)
def layer_norm(
    input: Tensor,
    normalized_shape: IntOrInts,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Layer normalisation: normalises over the trailing ``normalized_shape`` dimensions of
    each sample, then applies the elementwise affine ``weight``/``bias``.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias``, the biased variance.

    Args:
        input (Tensor): ``(*, normalized_shape)``.
        normalized_shape (int or tuple): the trailing shape to normalise over.
        weight (Tensor, optional): of ``normalized_shape``, the scale. Default: ``None``.
        bias (Tensor, optional): of ``normalized_shape``, the shift. Default: ``None``.
        eps (float): added to the variance. Default: ``1e-5``.

    Shape:
        - Input: ``(*, normalized_shape)``.
        - Output: the input's shape.

    Returns:
        Tensor: the normalised input.

    Example::

        >>> F.layer_norm(torch.tensor([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]]), (3,))
        tensor([[-1.2247,  0.0000,  1.2247],
                [ 0.0000,  0.0000,  0.0000]])
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _C.layer_norm(input, list(normalized_shape), weight, bias, float(eps))


@tensor_args(
    "input",
    optional=(
        "weight",
        "bias",
    ),
)
def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Group normalisation: normalises each sample over groups of ``C / num_groups`` channels
    (with their spatial dimensions), then applies the per-channel affine
    ``weight``/``bias``.

    Args:
        input (Tensor): ``(N, C, *)``, ``C`` divisible by ``num_groups``.
        num_groups (int): the number of channel groups.
        weight (Tensor, optional): ``(C,)``, the scale. Default: ``None``.
        bias (Tensor, optional): ``(C,)``, the shift. Default: ``None``.
        eps (float): added to the variance. Default: ``1e-5``.

    Shape:
        - Input: ``(N, C, *)``.
        - Output: the input's shape.

    Returns:
        Tensor: the normalised input.

    Example::

        >>> x = torch.tensor([[1.0, 3.0, 10.0, 30.0]])
        >>> F.group_norm(x, 2)
        tensor([[-1.0000,  1.0000, -1.0000,  1.0000]])
    """
    """Normalises each sample over groups of ``C / num_groups`` channels, then
    applies the per-channel affine ``weight``/``bias`` when given."""
    if isinstance(input, _C.Tensor) and input.dim() >= 2 and input.shape[1] == 0:
        raise RuntimeError("Expected number of channels to be greater than 0, got 0")
    return _C.group_norm(input, int(num_groups), weight, bias, float(eps))


# ----- RMS norm and local response normalisation ---------------------------------------------


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


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input`` divided by its ``p``-norm along ``dim``: ``v / max(||v||_p, eps)``.

    The ``eps`` floor keeps an all-zero slice at zero instead of NaN; there the
    gradient is ``1 / eps`` times the incoming one, as in PyTorch.

    Args:
        input (Tensor): the input, of any shape.
        p (float): the exponent of the norm. Default: ``2.0``.
        dim (int or tuple of ints): the dimension(s) to normalise over. Default: ``1``.
        eps (float): the smallest norm divided by. Default: ``1e-12``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.normalize(torch.tensor([[3.0, 4.0], [0.0, 0.0]]), dim=1)
        tensor([[0.6000, 0.8000],
                [0.0000, 0.0000]])
    """
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps)
    return input / denom
