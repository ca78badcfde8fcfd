"""``finfo`` and ``iinfo``: the limits of ferrograd's number types, as PyTorch's."""

from __future__ import annotations

import numpy as np

from . import _C

__all__ = ["finfo", "iinfo"]


class finfo:  # noqa: N801 - PyTorch's name
    """Machine limits of a floating dtype (float16, bfloat16, float32, float64; default:
    `get_default_dtype()`): ``bits``, ``eps``,
    ``max``, ``min``, ``tiny`` (= ``smallest_normal``), ``resolution``, ``dtype``."""

    def __init__(self, type: _C.dtype | None = None) -> None:  # noqa: A002
        dt = _C.get_default_dtype() if type is None else type
        if not isinstance(dt, _C.dtype) or not dt.is_floating_point:
            raise TypeError(
                "torch.finfo() requires a floating point input type. Use torch.iinfo to "
                "handle 'torch.finfo'"
            )
        name = str(dt).rsplit(".", 1)[-1]
        if name == "bfloat16":
            # NumPy has no bfloat16: 8 exponent bits as float32's, 7 mantissa bits.
            self.bits = 16
            self.eps = 2.0**-7
            self.max = (2.0 - 2.0**-7) * 2.0**127
            self.tiny = 2.0**-126
            digits10 = 2
        else:
            info = np.finfo(getattr(np, name))
            self.bits = int(info.bits)
            self.eps = float(info.eps)
            self.max = float(info.max)
            self.tiny = float(info.tiny)
            digits10 = int(info.precision)
        self.min = -self.max
        self.smallest_normal = self.tiny
        # PyTorch computes 10**-digits10 in double: 1e-06, not float32(1e-06).
        self.resolution = 10.0**-digits10
        self.dtype = name

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
    """Machine limits of an integer dtype (uint8, int8, int16, int32, int64): ``bits``,
    ``max``, ``min``, ``dtype``."""

    def __init__(self, type: _C.dtype) -> None:  # noqa: A002
        if type == _C.bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if not isinstance(type, _C.dtype) or type.is_floating_point:
            raise TypeError(
                "torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                "'torch.iinfo'"
            )
        name = str(type).rsplit(".", 1)[-1]
        info = np.iinfo(getattr(np, name))
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = name

    def __eq__(self, other):
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
