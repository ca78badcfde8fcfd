"""Creation (``scalar_tensor``, ``as_tensor``, ``logspace``, ...) and the
window functions."""

from __future__ import annotations

import builtins
import functools
import math
from typing import TYPE_CHECKING

import numpy as np

from .. import _C
from .._C import Tensor
from ._common import _alloc_guard

if TYPE_CHECKING:
    from .._typing import Device, DTypeLike, Number, TensorLike

# ----- creation ------------------------------------------------------------------------


def logspace(
    start: float,
    end: float,
    steps: int,
    base: float = 10.0,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
) -> Tensor:
    """``steps`` values ``base ** p`` for ``p`` evenly spaced from ``start`` to ``end``."""
    p = _C.linspace(start, end, steps, dtype=_C.float64)
    out = _C.full((), float(base), dtype=_C.float64).pow(p)
    out = out.to(dtype if dtype is not None else _C.get_default_dtype())
    if requires_grad:
        out.requires_grad_(True)
    return out


def scalar_tensor(
    s: Number,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
) -> Tensor:
    """A 0-D tensor holding the number ``s``, of the default float dtype unless ``dtype``
    is given."""
    if isinstance(s, Tensor):
        s = s.item()
    out = _C.tensor(float(s) if not isinstance(s, builtins.bool) or dtype != _C.bool else s,
                    dtype=dtype if dtype is not None else _C.get_default_dtype())  # fmt: skip
    if requires_grad:
        out.requires_grad_(True)
    return out


def as_tensor(data: TensorLike, dtype: DTypeLike | None = None, device: Device = None) -> Tensor:
    """``data`` as a tensor, sharing memory where it can: a tensor of the right dtype is
    returned as is, a NumPy array of a ferrograd dtype is wrapped without a copy."""
    if device is not None and str(device) != "cpu":
        raise RuntimeError(f"ferrograd runs on the CPU only; got device {device}")
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype == dtype else data.to(dtype)
    if isinstance(data, np.ndarray) and data.dtype in (np.float32, np.float64, np.int64,
                                                         np.bool_) and data.ndim:  # fmt: skip
        out = _C.from_numpy(data)
        return out if dtype is None or out.dtype == dtype else out.to(dtype)
    return _C.tensor(data, dtype=dtype)


def asarray(
    obj: TensorLike,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    copy: bool | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """``obj`` as a tensor: shared when possible (``copy=None``), always copied with
    ``copy=True``, refused with ``copy=False`` when a copy is needed."""
    if isinstance(obj, Tensor):
        same = dtype is None or obj.dtype == dtype
        if copy is False and not same:
            raise ValueError("can't alias tensor with a different dtype without a copy")
        out = obj.clone() if copy else obj
        out = out if same else out.to(dtype)
    elif isinstance(obj, np.ndarray) and copy is not True:
        out = as_tensor(obj, dtype)
        if copy is False and not np.shares_memory(obj, out.numpy()):
            raise ValueError("can't alias NumPy array with a different dtype without a copy")
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor without a copy")
        out = _C.tensor(obj, dtype=dtype)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _window(fn, window_length, periodic, dtype, requires_grad, make):
    """``make(k, m)`` of ``k = 0..n-1`` and ``m = n - 1`` (float64 tensors), ``n`` the
    window's length (one more when ``periodic``, the last value dropped), in ``dtype``.
    Written with tensor ops, so ``ferrograd.compile`` replays it."""
    if not isinstance(window_length, int) or window_length < 0:
        raise RuntimeError(f"{fn} requires non-negative window_length, got window_length="
                           f"{window_length}")  # fmt: skip
    dtype = dtype if dtype is not None else _C.get_default_dtype()
    if dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f"{fn} expects floating point dtypes, got: {dtype}")
    if window_length == 0:
        out = _C.zeros(0, dtype=dtype)
    elif window_length == 1:
        out = _C.ones(1, dtype=dtype)
    else:
        n = window_length + 1 if periodic else window_length
        _alloc_guard(8 * n)
        k = _C.arange(window_length, dtype=_C.float64)
        out = make(k, float(n - 1)).to(dtype)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _cos(k, m, times):
    return (k * (times * math.pi / m)).cos()


def hann_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1))``, periodic (for spectral
    analysis: ``N = window_length + 1``, last value dropped) by default."""
    return _window("hann_window", window_length, periodic, dtype, requires_grad,
                   lambda k, m: 0.5 - 0.5 * _cos(k, m, 2))  # fmt: skip


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Hamming window ``alpha - beta cos(2 pi n / (N - 1))`` (periodic by default)."""
    return _window("hamming_window", window_length, periodic, dtype, requires_grad,
                   lambda k, m: alpha - beta * _cos(k, m, 2))  # fmt: skip


def blackman_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``
    (periodic by default)."""
    return _window("blackman_window", window_length, periodic, dtype, requires_grad,
                   lambda k, m: 0.42 - 0.5 * _cos(k, m, 2) + 0.08 * _cos(k, m, 4))  # fmt: skip


def bartlett_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Bartlett (triangular) window ``1 - |2n / (N - 1) - 1|`` (periodic by default)."""
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad,
                   lambda k, m: 1.0 - (k * (2.0 / m) - 1.0).abs())  # fmt: skip


@functools.lru_cache(maxsize=64)
def _i0_of(beta: float) -> float:
    return float(np.i0(beta))


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Kaiser window ``I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)`` with shape
    parameter ``beta`` (periodic by default)."""

    def make(k, m):
        # NumPy's I0 of a Python number is a dozen array calls: kept per beta.
        scale = _i0_of(beta) if type(beta) in (float, int) else float(np.i0(beta))
        r = k * (2.0 / m) - 1.0
        return (beta * (1.0 - r * r).clamp_min(0.0).sqrt()).i0() / scale

    return _window("kaiser_window", window_length, periodic, dtype, requires_grad, make)
