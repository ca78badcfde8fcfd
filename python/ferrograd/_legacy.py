"""PyTorch's legacy tensor types: ``FloatTensor``, ``DoubleTensor``,
``LongTensor``, ``BoolTensor``.

Each is callable as PyTorch's legacy constructor (``FloatTensor(2, 3)``: an
uninitialised 2x3 tensor, here zero-filled; ``FloatTensor([1, 2])``: from
data; ``FloatTensor()``: empty) and works with ``isinstance`` (true for a
``Tensor`` of that dtype), with ``Tensor.type(FloatTensor)`` and as
``dtype=`` nowhere else. They are not subclasses of ``Tensor``: every
tensor is a plain ``Tensor``.
"""

from __future__ import annotations

from . import _C

__all__ = ["BoolTensor", "DoubleTensor", "FloatTensor", "LongTensor"]


class _LegacyTensorType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Tensor) and obj.dtype == cls.dtype

    def __call__(cls, *args, device=None):
        if device is not None and str(device) != "cpu":
            raise RuntimeError(
                f"ferrograd has no CUDA support: legacy constructor expects device type: "
                f"cpu but device type: {device} was passed"
            )
        if not args:
            return _C.zeros(0, dtype=cls.dtype)
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return _C.zeros(*args, dtype=cls.dtype)
        if len(args) == 1 and isinstance(args[0], (tuple, list)) and type(args[0]).__name__ == "Size":
            return _C.zeros(*args[0], dtype=cls.dtype)
        if len(args) == 1:
            data = args[0]
            if isinstance(data, _C.Tensor):
                if data.dtype != cls.dtype:
                    raise TypeError(
                        f"expected {cls.__module__.split('.')[0]}.{cls.__name__} "
                        f"(got {data.type()})"
                    )
                return data
            return _C.tensor(data, dtype=cls.dtype)
        raise TypeError(f"{cls.__name__}() received an invalid combination of arguments")

    def __repr__(cls):
        return f"<class 'torch.{cls.__name__}'>"


class FloatTensor(metaclass=_LegacyTensorType):
    """float32 tensors: ``FloatTensor(*size)`` or ``FloatTensor(data)``."""

    dtype = _C.float32


class DoubleTensor(metaclass=_LegacyTensorType):
    """float64 tensors: ``DoubleTensor(*size)`` or ``DoubleTensor(data)``."""

    dtype = _C.float64


class LongTensor(metaclass=_LegacyTensorType):
    """int64 tensors: ``LongTensor(*size)`` or ``LongTensor(data)``."""

    dtype = _C.int64


class BoolTensor(metaclass=_LegacyTensorType):
    """bool tensors: ``BoolTensor(*size)`` or ``BoolTensor(data)``."""

    dtype = _C.bool
