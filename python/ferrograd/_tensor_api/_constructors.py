"""The ``new_*`` constructors (installed as ``Tensor`` methods), the dtype and
size helpers, ``is_nonzero`` and ``is_same_size``."""

from __future__ import annotations

import builtins
import warnings

from .. import _C
from .._C import Tensor
from ._common import _check, _size_args

# ----- new_* constructors --------------------------------------------------------------


def _new(self, fn, size, fill, dtype, requires_grad):
    out = _C.full(_size_args(fn, size), fill, dtype=dtype if dtype is not None else self.dtype)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _new_zeros(
    self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False
):
    """A tensor of zeros of shape ``size``, of ``self``'s dtype unless ``dtype`` is given."""
    return _new(self, "new_zeros", size, 0, dtype, requires_grad)


def _new_ones(
    self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False
):
    """A tensor of ones of shape ``size``, of ``self``'s dtype unless ``dtype`` is given."""
    return _new(self, "new_ones", size, 1, dtype, requires_grad)


def _new_empty(
    self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False
):
    """A new tensor of shape ``size`` (ferrograd zeroes it), of ``self``'s dtype unless
    ``dtype`` is given."""
    return _new(self, "new_empty", size, 0, dtype, requires_grad)


def _new_full(
    self,
    size,
    fill_value,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
    layout=None,
    pin_memory=False,
):
    """A tensor of shape ``size`` filled with ``fill_value``, of ``self``'s dtype unless
    ``dtype`` is given."""
    return _new(self, "new_full", (size,) if isinstance(size, int) else size, fill_value,
                dtype, requires_grad)  # fmt: skip


def _new_tensor(
    self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False
):
    """A new tensor holding a copy of ``data``, of ``self``'s dtype unless ``dtype`` is
    given (PyTorch's rule: the data's own type does not matter)."""
    dtype = dtype if dtype is not None else self.dtype
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use "
            "sourceTensor.clone().detach() or sourceTensor.clone().detach().requires_grad_(True), "
            "rather than tensor.new_tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
        out = data.detach().clone().to(dtype)
    else:
        out = _C.tensor(data, dtype=dtype)
    if requires_grad:
        out.requires_grad_(True)
    return out


# ----- dtype and size helpers ----------------------------------------------------------


def _element_size(self):
    """The size in bytes of one element of ``self``'s dtype."""
    return self.dtype.itemsize


def _ndimension(self):
    """Alias of ``dim()``: the number of dimensions."""
    return self.dim()


def _share_memory_(self):
    """A no-op returning ``self``: ferrograd tensors live in ordinary process memory on
    the CPU and are not shared between processes (PyTorch moves the storage to shared
    memory)."""
    return self


def _is_signed(self):
    """Whether ``self``'s dtype is signed (every ferrograd dtype but ``bool`` and ``uint8``)."""
    return self.dtype.is_signed


def _is_complex(self):
    """Whether ``self`` has a complex dtype: always False, ferrograd has none."""
    return False


def is_nonzero(input: Tensor) -> bool:
    """The truth value of a one-element tensor; raises PyTorch's RuntimeError otherwise."""
    _check("is_nonzero", input)
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item() != 0)


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether ``input`` and ``other`` have the same shape."""
    _check("is_same_size", input)
    _check("is_same_size", other, "other", 2)
    return tuple(input.shape) == tuple(other.shape)
