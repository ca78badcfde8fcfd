"""``PixelShuffle`` and ``PixelUnshuffle``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .module import Module

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = ["PixelShuffle", "PixelUnshuffle"]


class PixelShuffle(Module):
    """Rearranges channels into space: ``(*, C * r * r, H, W)`` to ``(*, C, H * r, W * r)``,
    ``r`` the ``upscale_factor`` (sub-pixel convolution; see
    :func:`~ferrograd.nn.functional.pixel_shuffle`).

    Args:
        upscale_factor (int): ``r``.

    Shape:
        - Input: ``(*, C_in, H_in, W_in)``, ``C_in`` divisible by ``r * r``.
        - Output: ``(*, C_out, H_out, W_out)``, ``C_out = C_in / r**2``,
          ``H_out = H_in * r``, ``W_out = W_in * r``.

    Example::

        >>> nn.PixelShuffle(3)(torch.ones(1, 9, 4, 4)).shape
        ferrograd.Size([1, 1, 12, 12])
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """The inverse of :class:`PixelShuffle`: ``(*, C, H * r, W * r)`` to
    ``(*, C * r * r, H, W)``, ``r`` the ``downscale_factor``.

    Args:
        downscale_factor (int): ``r``.

    Shape:
        - Input: ``(*, C_in, H_in, W_in)``, ``H_in`` and ``W_in`` divisible by ``r``.
        - Output: ``(*, C_in * r**2, H_in / r, W_in / r)``.

    Example::

        >>> nn.PixelUnshuffle(3)(torch.ones(1, 1, 12, 12)).shape
        ferrograd.Size([1, 9, 4, 4])
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
