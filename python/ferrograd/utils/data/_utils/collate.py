"""``default_collate`` and ``default_convert``: samples to batches, as PyTorch's."""

from __future__ import annotations

import collections.abc
import copy
import re
from typing import TYPE_CHECKING

import numpy as np

import ferrograd as _fg

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["default_collate", "default_convert"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
    "found {}"
)


_KEPT = {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.uint8, np.int8, np.int16,
                               np.int32, np.int64, np.bool_)}  # fmt: skip


def _np_to_tensor(a):
    # NumPy types ferrograd has keep their dtype, as in PyTorch; the others
    # (uint16-64, longdouble) widen to int64/float64.
    if a.dtype not in _KEPT:
        if a.dtype.kind == "f":
            a = a.astype(np.float64, copy=False)
        elif a.dtype.kind in "iu":
            a = a.astype(np.int64, copy=False)
    return _fg.tensor(np.ascontiguousarray(a))


def default_convert(data: Any) -> Any:
    """Turns NumPy arrays and numbers inside ``data`` into tensors, keeping
    the containers (what a loader without batching applies)."""
    elem_type = type(data)
    if isinstance(data, _fg.Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return _np_to_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def default_collate(batch: Sequence[Any]) -> Any:
    """Stacks a list of samples into a batch: tensors and NumPy arrays are
    stacked along a new first dimension, Python floats become a float64
    tensor, ints an int64 tensor, bools a bool tensor, strings stay a list,
    and dicts, namedtuples, tuples and lists are collated field by field
    (tuples and lists transposed into a list of batches)."""
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, _fg.Tensor):
        return _fg.stack(list(batch), 0)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ in ("ndarray", "memmap"):
            if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
                raise TypeError(default_collate_err_msg_format.format(elem.dtype))
            return default_collate([_np_to_tensor(b) for b in batch])
        if elem.shape == ():  # NumPy scalars
            return _np_to_tensor(np.array(batch))
    elif isinstance(elem, bool):
        return _fg.tensor(list(batch), dtype=_fg.bool)
    elif isinstance(elem, float):
        return _fg.tensor(list(batch), dtype=_fg.float64)
    elif isinstance(elem, int):
        return _fg.tensor(list(batch), dtype=_fg.int64)
    elif isinstance(elem, (str, bytes)):
        return batch
    elif isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: default_collate([d[key] for d in batch]) for key in elem})
                return clone
            return elem_type({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    elif isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    elif isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = default_collate(samples)
                return clone
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))
