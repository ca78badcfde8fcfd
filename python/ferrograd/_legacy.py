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

__all__ = [
    "BFloat16Tensor",
    "BoolTensor",
    "ByteTensor",
    "CharTensor",
    "DoubleTensor",
    "FloatTensor",
    "HalfTensor",
    "IntTensor",
    "LongTensor",
    "ShortTensor",
    "set_default_tensor_type",
]


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


class HalfTensor(metaclass=_LegacyTensorType):
    """float16 tensors: ``HalfTensor(*size)`` or ``HalfTensor(data)``."""

    dtype = _C.float16


class BFloat16Tensor(metaclass=_LegacyTensorType):
    """bfloat16 tensors: ``BFloat16Tensor(*size)`` or ``BFloat16Tensor(data)``."""

    dtype = _C.bfloat16


class IntTensor(metaclass=_LegacyTensorType):
    """int32 tensors: ``IntTensor(*size)`` or ``IntTensor(data)``."""

    dtype = _C.int32


class ShortTensor(metaclass=_LegacyTensorType):
    """int16 tensors: ``ShortTensor(*size)`` or ``ShortTensor(data)``."""

    dtype = _C.int16


class CharTensor(metaclass=_LegacyTensorType):
    """int8 tensors: ``CharTensor(*size)`` or ``CharTensor(data)``."""

    dtype = _C.int8


class ByteTensor(metaclass=_LegacyTensorType):
    """uint8 tensors: ``ByteTensor(*size)`` or ``ByteTensor(data)``."""

    dtype = _C.uint8


def set_default_tensor_type(t: type | str) -> None:
    """PyTorch's deprecated ``set_default_tensor_type``: ``FloatTensor`` or
    ``DoubleTensor`` (the type or its name, ``"torch.DoubleTensor"``) sets the
    default dtype as ``set_default_dtype`` does; other types raise PyTorch's
    ``TypeError``. Warns, as PyTorch 2.1+ does, that it is deprecated."""
    import warnings

    warnings.warn(
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
        UserWarning,
        stacklevel=2,
    )
    if isinstance(t, str):
        by_name = {c.__name__: c for c in (FloatTensor, DoubleTensor, LongTensor, BoolTensor)}
        name = t.rsplit(".", 1)[-1]
        if t.split(".", 1)[0] not in ("torch", "ferrograd") or name not in by_name:
            raise TypeError(f"invalid type: '{t}'")
        t = by_name[name]
    if not isinstance(t, _LegacyTensorType):
        raise TypeError(f"invalid type: '{t}'")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _C.set_default_dtype(t.dtype)
