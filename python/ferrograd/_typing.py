"""Type aliases for the annotations of the Python layer.

Imported only under ``typing.TYPE_CHECKING`` (the annotations are strings at run
time, ``from __future__ import annotations``), so they cost nothing at import.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Dict, Tuple, Union

from ._C import Tensor, dtype

# One size for every spatial dimension or one per dimension (PyTorch's ``_size_any_t``).
IntOrInts = Union[int, Sequence[int]]
# ``scale_factor`` and friends.
FloatOrFloats = Union[float, Sequence[float]]
# A Python number (PyTorch's ``Number``).
Number = Union[int, float, bool]
TensorOrNumber = Union[Tensor, int, float, bool]
DType = dtype


# What an optimizer takes (PyTorch's ``ParamsT``): tensors, named tensors, or param groups.
ParamsT = Union[Iterable[Tensor], Iterable[Dict[str, Any]], Iterable[Tuple[str, Tensor]]]

__all__ = [
    "DType",
    "FloatOrFloats",
    "IntOrInts",
    "Number",
    "ParamsT",
    "Tensor",
    "TensorOrNumber",
]
