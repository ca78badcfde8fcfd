"""``Tensor.shape``: a tuple that prints like PyTorch's ``torch.Size``."""

from __future__ import annotations


class Size(tuple):
    """A tensor's shape: a tuple of ints (``tensor.shape``, ``tensor.size()``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"ferrograd.Size([{', '.join(str(d) for d in self)}])"

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n
