"""Type aliases for the annotations of the Python layer.

Imported only under ``typing.TYPE_CHECKING`` (the annotations are strings at run
time, ``from __future__ import annotations``), so they cost nothing at import.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Dict, Tuple, Union

import numpy as np

from ._C import Tensor, dtype
from ._size import Size

# One size for every spatial dimension or one per dimension (PyTorch's ``_size_any_t``).
IntOrInts = Union[int, Sequence[int]]
# ``scale_factor`` and friends.
FloatOrFloats = Union[float, Sequence[float]]
# A Python number (PyTorch's ``Number``).
Number = Union[int, float, bool]
TensorOrNumber = Union[Tensor, int, float, bool]
DType = dtype
# What ``dtype=`` accepts: a ferrograd dtype, ``float``/``int``/``bool``, a NumPy dtype or
# scalar type, or a name such as ``"float32"``.
DTypeLike = Union[dtype, type, np.dtype, str]
# Data a tensor is made from: a tensor, a number, a NumPy array or nested sequences.
TensorLike = Union[Tensor, int, float, bool, np.ndarray, Sequence[Any]]
# ``device=`` (the CPU is the only device).
Device = Union[str, None]


# What an optimizer takes (PyTorch's ``ParamsT``): tensors, named tensors, or param groups.
ParamsT = Union[Iterable[Tensor], Iterable[Dict[str, Any]], Iterable[Tuple[str, Tensor]]]

__all__ = [
    "DType",
    "DTypeLike",
    "Device",
    "FloatOrFloats",
    "IntOrInts",
    "Number",
    "ParamsT",
    "Size",
    "Tensor",
    "TensorLike",
    "TensorOrNumber",
]
