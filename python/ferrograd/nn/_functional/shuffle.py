"""Pixel and channel shuffles (``nn.functional.pixel_shuffle``,
``pixel_unshuffle``, ``channel_shuffle``): reshapes and one permutation, so
their gradients are the inverse rearrangement, to every order."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from ._args import tensor_args

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]


def _factor(v, what, fn):
    # Any integer-like value (a NumPy integer too), as PyTorch's int arguments take.
    try:
        if isinstance(v, bool):
            raise TypeError
        v = operator.index(v)
    except TypeError:
        raise TypeError(
            f"{fn}(): argument '{what}' (position 2) must be int, not {type(v).__name__}"
        ) from None
    if v <= 0:
        raise RuntimeError(f"{fn} expects a positive {what}, but got {v}")
    return v


@tensor_args("input")
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Rearranges channels into space: ``(*, C * r * r, H, W)`` to ``(*, C, H * r, W * r)``,
    ``r`` the ``upscale_factor`` (the output step of a sub-pixel convolution).

    Args:
        input (Tensor): ``(*, C * r * r, H, W)``.
        upscale_factor (int): ``r``, positive.

    Shape:
        - Input: ``(*, C_in, H_in, W_in)``, ``C_in`` divisible by ``r * r``.
        - Output: ``(*, C_out, H_out, W_out)``, ``C_out = C_in / r**2``,
          ``H_out = H_in * r``, ``W_out = W_in * r``.

    Returns:
        Tensor: the rearranged input.

    Example::

        >>> x = torch.arange(4.0).reshape(1, 4, 1, 1)
        >>> F.pixel_shuffle(x, 2)
        tensor([[[[0., 1.],
                  [2., 3.]]]])
    """
    r = _factor(upscale_factor, "upscale_factor", "pixel_shuffle")
    if input.dim() < 3:
        raise RuntimeError(
            "pixel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.dim()} dimension(s)"
        )
    *batch, c, h, w = input.shape
    if c % (r * r) != 0:
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
            f"square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    oc = c // (r * r)
    nb = len(batch)
    x = input.reshape(*batch, oc, r, r, h, w)
    x = x.permute(*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2)
    return x.reshape(*batch, oc, h * r, w * r)


@tensor_args("input")
def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """The inverse of :func:`pixel_shuffle`: ``(*, C, H * r, W * r)`` to
    ``(*, C * r * r, H, W)``, ``r`` the ``downscale_factor``.

    Args:
        input (Tensor): ``(*, C, H * r, W * r)``.
        downscale_factor (int): ``r``, positive.

    Shape:
        - Input: ``(*, C_in, H_in, W_in)``, ``H_in`` and ``W_in`` divisible by ``r``.
        - Output: ``(*, C_in * r**2, H_in / r, W_in / r)``.

    Returns:
        Tensor: the rearranged input.

    Example::

        >>> x = torch.arange(4.0).reshape(1, 1, 2, 2)
        >>> F.pixel_unshuffle(x, 2).flatten()
        tensor([0., 1., 2., 3.])
    """
    r = _factor(downscale_factor, "downscale_factor", "pixel_unshuffle")
    if input.dim() < 3:
        raise RuntimeError(
            "pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.dim()} dimension(s)"
        )
    *batch, c, h, w = input.shape
    if h % r != 0:
        raise RuntimeError(
            "pixel_unshuffle expects height to be divisible by downscale_factor, but "
            f"input.size(-2)={h} is not divisible by {r}"
        )
    if w % r != 0:
        raise RuntimeError(
            "pixel_unshuffle expects width to be divisible by downscale_factor, but "
            f"input.size(-1)={w} is not divisible by {r}"
        )
    nb = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


@tensor_args("input")
def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Splits the channels (dimension 1) into ``groups`` groups and interleaves them: channel
    ``g * (C / groups) + i`` moves to ``i * groups + g`` (ShuffleNet).

    Args:
        input (Tensor): ``(N, C, *)``, at least 3-d, ``C`` divisible by ``groups``.
        groups (int): the number of groups.

    Shape:
        - Input: ``(N, C, *)``.
        - Output: the input's shape.

    Returns:
        Tensor: the input with its channels reordered.

    Example::

        >>> x = torch.arange(6.0).reshape(1, 6, 1)
        >>> F.channel_shuffle(x, 2).flatten()
        tensor([0., 3., 1., 4., 2., 5.])
    """
    if input.dim() <= 2:
        raise RuntimeError(
            f"channel_shuffle expects input with > 2 dims, but got input with sizes "
            f"{list(input.shape)}"
        )
    groups = operator.index(groups)
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    n, c, *rest = input.shape
    if c % groups != 0:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups."
        )
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle
