"""``finfo`` and ``iinfo``: the limits of ferrograd's number types, as PyTorch's."""

from __future__ import annotations

import numpy as np

from . import _C

__all__ = ["finfo", "iinfo"]


class finfo:  # noqa: N801 - PyTorch's name
    """Machine limits of a floating dtype (default: `get_default_dtype()`): ``bits``, ``eps``,
    ``max``, ``min``, ``tiny`` (= ``smallest_normal``), ``resolution``, ``dtype``."""

    def __init__(self, type=None):  # noqa: A002
        dt = _C.get_default_dtype() if type is None else type
        if dt not in (_C.float32, _C.float64):
            raise TypeError(
                "torch.finfo() requires a floating point input type. Use torch.iinfo to "
                "handle 'torch.finfo'"
            )
        info = np.finfo(np.float32 if dt == _C.float32 else np.float64)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = float(info.tiny)
        self.smallest_normal = self.tiny
        # PyTorch computes 10**-digits10 in double: 1e-06, not float32(1e-06).
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = "float32" if dt == _C.float32 else "float64"

    def __eq__(self, other):
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
            f"tiny={self.tiny:g}, dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - PyTorch's name
    """Machine limits of an integer dtype: ``bits``, ``max``, ``min``, ``dtype``."""

    def __init__(self, type):  # noqa: A002
        if type == _C.bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if type != _C.int64:
            raise TypeError(
                "torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                "'torch.iinfo'"
            )
        self.bits = 64
        self.max = 2**63 - 1
        self.min = -(2**63)
        self.dtype = "int64"

    def __eq__(self, other):
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
