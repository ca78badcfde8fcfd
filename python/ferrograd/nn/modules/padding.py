"""Padding layers: constant/zero, reflection, replication and circular padding."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = [
    "ConstantPad1d",
    "ConstantPad2d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "CircularPad1d",
    "CircularPad2d",
    "ConstantPad3d",
    "ZeroPad3d",
    "ReflectionPad3d",
    "ReplicationPad3d",
    "CircularPad3d",
]


def _pads(padding, n):
    # As PyTorch's _ntuple: a sequence is kept as given (F.pad judges it at forward).
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    return tuple(padding)


class _ConstantPadNd(Module):
    _n = 2

    def __init__(self, padding, value):
        super().__init__()
        self.padding = _pads(padding, self._n)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dimension with ``value``: ``padding`` is an int or ``(left, right)``."""

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dimensions with ``value``: ``padding`` is an int or
    ``(left, right, top, bottom)``."""

    _n = 2


class ZeroPad1d(ConstantPad1d):
    """Pads the last dimension with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last two dimensions with zeros: ``padding`` is an int or
    ``(left, right, top, bottom)``."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class _ModePad(Module):
    _n = 2
    _mode = "reflect"

    def __init__(self, padding):
        super().__init__()
        self.padding = _pads(padding, self._n)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_ModePad):
    """Pads the last dimension with its reflection (edge not repeated)."""

    _n, _mode = 1, "reflect"


class ReflectionPad2d(_ModePad):
    """Pads the last two dimensions with their reflection (edge not repeated)."""

    _n, _mode = 2, "reflect"


class ReplicationPad1d(_ModePad):
    """Pads the last dimension by repeating its edge values."""

    _n, _mode = 1, "replicate"


class ReplicationPad2d(_ModePad):
    """Pads the last two dimensions by repeating their edge values."""

    _n, _mode = 2, "replicate"


class CircularPad1d(_ModePad):
    """Pads the last dimension by wrapping around."""

    _n, _mode = 1, "circular"


class CircularPad2d(_ModePad):
    """Pads the last two dimensions by wrapping around."""

    _n, _mode = 2, "circular"


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dimensions with ``value``: ``padding`` is an int or
    ``(left, right, top, bottom, front, back)``."""

    _n = 3


class ZeroPad3d(ConstantPad3d):
    """Pads the last three dimensions with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad3d(_ModePad):
    """Pads the last three dimensions with their reflection (edge not repeated)."""

    _n, _mode = 3, "reflect"


class ReplicationPad3d(_ModePad):
    """Pads the last three dimensions by repeating their edge values."""

    _n, _mode = 3, "replicate"


class CircularPad3d(_ModePad):
    """Pads the last three dimensions by wrapping around."""

    _n, _mode = 3, "circular"
