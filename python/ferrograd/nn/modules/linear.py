"""``Linear``, ``Identity`` and ``Flatten``."""

from __future__ import annotations

import math

from ... import _C
from .. import functional as F
from .module import Module, Parameter

__all__ = ["Linear", "Identity", "Flatten"]


def _init_uniform(shape, bound, dtype=None):
    # PyTorch fills the parameter in its own dtype with ``uniform_(-bound, bound)``:
    # the same draws, so a seeded model starts from PyTorch's numbers.
    t = _C.zeros(*shape, dtype=dtype)
    if t.numel() > 0:
        t.uniform_(-bound, bound)
    return t


def _kaiming_uniform_bound(fan_in):
    # Spelled as ``init.kaiming_uniform_(a=sqrt(5))`` computes it, rounding included.
    a = math.sqrt(5)
    gain = math.sqrt(2.0 / (1 + a**2))
    std = gain / math.sqrt(fan_in)
    return math.sqrt(3.0) * std


class Linear(Module):
    """``y = x @ weight.T + bias``, initialised as PyTorch does
    (uniform in +-1/sqrt(in_features) for both weight and bias)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        wb = _kaiming_uniform_bound(in_features) if in_features > 0 else 0.0
        self.weight = Parameter(_init_uniform((out_features, in_features), wb, dtype))
        if bias:
            bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
            self.bias = Parameter(_init_uniform((out_features,), bound, dtype))
        else:
            self.bias = None

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)
