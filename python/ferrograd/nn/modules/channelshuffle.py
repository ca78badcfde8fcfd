"""``ChannelShuffle`` (ShuffleNet's channel interleaving)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .module import Module

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Splits the channels into ``groups`` groups and interleaves them (ShuffleNet; see
    :func:`~ferrograd.nn.functional.channel_shuffle`).

    Args:
        groups (int): the number of groups; divides the channel count.

    Shape:
        - Input: ``(N, C, *)``, at least 3-d.
        - Output: the input's shape.

    Example::

        >>> shuffle = nn.ChannelShuffle(2)
        >>> shuffle(torch.arange(4.0).reshape(1, 4, 1)).flatten()
        tensor([0., 2., 1., 3.])
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
