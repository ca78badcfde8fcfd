"""Reductions (``aminmax``, ``nansum``, ``quantile``, ``var_mean``, ...) and
counting and sets, done by NumPy without gradients (``bincount``, ``histc``,
``isin``, ``unique_consecutive``, ...)."""

from __future__ import annotations

import builtins
import collections
import itertools
import math
from typing import TYPE_CHECKING

import numpy as np

from .. import _C
from .._autocast import autocast_op as _autocast_op
from .._C import Tensor
from .._replay import data_dependent as _data_dependent
from .._replay import replayed as _replayed
from ._common import _alloc_guard, _check, _from_np, _np, _vmap_level, _wrap_dim

if TYPE_CHECKING:
    from .._typing import DTypeLike, IntOrInts, TensorOrNumber


# ----- reductions ----------------------------------------------------------------------


_AMinMax = collections.namedtuple("aminmax", ["min", "max"])


def aminmax(
    input: Tensor,
    *,
    dim: int | None = None,
    keepdim: bool = False,
) -> tuple[Tensor, Tensor]:
    """The minimum and maximum of ``input`` (over ``dim`` if given), as ``(min, max)``."""
    _check("aminmax", input)
    if input.numel() == 0:
        raise RuntimeError(
            "aminmax(): Expected reduction dim to be specified for input.numel() == 0."
            if dim is None
            else "aminmax(): Expected reduction dim 0 to have non-zero size."  # fmt: skip
        )
    if dim is None:
        mn, mx = input.amin(), input.amax()
        if keepdim:
            shape = (1,) * input.dim()
            mn, mx = mn.reshape(shape), mx.reshape(shape)
        return _AMinMax(mn, mx)
    return _AMinMax(input.amin(dim, keepdim), input.amax(dim, keepdim))


def count_nonzero(input: Tensor, dim: IntOrInts | None = None) -> Tensor:
    """The number of nonzero elements of ``input``, over all of them or over ``dim``."""
    _check("count_nonzero", input)
    nz = (input != 0).long()
    return nz.sum() if dim is None else nz.sum(dim)


def nansum(
    input: Tensor,
    dim: IntOrInts | None = None,
    keepdim: bool = False,
    *,
    dtype: DTypeLike | None = None,
) -> Tensor:
    """The sum of ``input`` with NaN counted as zero."""
    _check("nansum", input)
    if (
        isinstance(input, Tensor)
        and input.is_floating_point()
        and (dtype is None or dtype.is_floating_point)
    ):
        # One Rust pass zeroes the NaNs before `sum`'s kernels (no mask tensor).
        return _C._nansum(input if dtype is None else input.to(dtype), dim, keepdim)
    if input.is_floating_point():
        input = input.masked_fill(input.isnan(), 0)
    return input.sum(dim, keepdim, dtype=dtype)


def nanmean(
    input: Tensor,
    dim: IntOrInts | None = None,
    keepdim: bool = False,
    *,
    dtype: DTypeLike | None = None,
) -> Tensor:
    """The mean of the non-NaN elements of ``input``."""
    _check("nanmean", input)
    if not input.is_floating_point():
        raise RuntimeError(
            "nanmean(): expected input to have floating point dtype but got "
            f"{str(input.dtype).split('.')[-1].capitalize()}"
        )
    keep = ~input.isnan()
    total = nansum(input, dim, keepdim, dtype=dtype)
    return total / keep.sum(dim, keepdim).to(total.dtype)


def _stat_mean(fn, input, dim, unbiased, keepdim, correction):
    _check(fn, input)
    stat = getattr(input, fn[:3])(dim, unbiased, keepdim, correction=correction)
    return stat, input.mean(dim, keepdim)


def std_mean(
    input: Tensor,
    dim: IntOrInts | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
) -> tuple[Tensor, Tensor]:
    """The standard deviation and the mean of ``input`` (see ``std``), as a pair."""
    return _stat_mean("std_mean", input, dim, unbiased, keepdim, correction)


def var_mean(
    input: Tensor,
    dim: IntOrInts | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
) -> tuple[Tensor, Tensor]:
    """The variance and the mean of ``input`` (see ``var``), as a pair."""
    return _stat_mean("var_mean", input, dim, unbiased, keepdim, correction)


_INTERP = ("linear", "lower", "higher", "midpoint", "nearest")


def _positions(valid, qs, interpolation):
    """Where each quantile lies among ``valid`` sorted values (an int or an array
    of one count per row): the two neighbours' ranks and the weight of the upper
    one, in float64 as NumPy computes them."""
    # np.maximum: np.clip's dispatch costs several microseconds per call.
    pos = qs * np.maximum(np.asarray(valid) - 1, 0)[..., None]
    lo = np.floor(pos).astype(np.int64)
    hi = np.ceil(pos).astype(np.int64)
    frac = pos - lo
    if interpolation == "lower":
        hi, frac = lo, frac * 0
    elif interpolation == "higher":
        lo, frac = hi, frac * 0
    elif interpolation == "nearest":
        lo = hi = np.round(pos).astype(np.int64)
        frac = frac * 0
    elif interpolation == "midpoint":
        frac = np.where(hi > lo, 0.5, 0.0)
    return lo, hi, frac


# (row length, quantiles, interpolation, dtype) -> the ranks and weights of
# `quantile`, which do not depend on the values; never handed out.
_QUANTILE_RANKS: dict = {}


def _quantile_ranks(n, qs, interpolation, dtype):
    key = (n, qs if isinstance(qs, float) else qs.tobytes(), interpolation, dtype)
    hit = _QUANTILE_RANKS.get(key)
    if hit is None:
        lo, hi, frac = _positions(n, np.atleast_1d(np.asarray(qs, dtype=np.float64)), interpolation)
        if len(_QUANTILE_RANKS) >= 256:
            _QUANTILE_RANKS.clear()
        hit = _QUANTILE_RANKS[key] = (_from_np(lo), _from_np(hi), _from_np(frac, dtype))
    return hit


def _quantile(fn, input, q, dim, keepdim, interpolation, ignore_nan):
    _check(fn, input)
    lid, b = _vmap_level(input, q)
    if lid:
        return _quantile_batched(fn, input, q, dim, keepdim, interpolation, ignore_nan, lid, b)
    if not input.is_floating_point():
        raise RuntimeError(f"{fn}() input tensor must be either float or double dtype")
    if interpolation not in _INTERP:
        raise ValueError(
            f"{fn}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
            f"Got {interpolation}"
        )
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        qs = float(q)
        out_of_range = not 0 <= qs <= 1  # NaN too, as PyTorch's check refuses it
    else:
        qs = np.asarray(_np(q), dtype=np.float64)
        if q.dim() > 1:
            raise RuntimeError(f"{fn}() q must be a scalar or 1D tensor")
        out_of_range = not ((qs >= 0) & (qs <= 1)).all()
    if out_of_range:
        raise RuntimeError(f"{fn}() q values must be in the range [0, 1]")
    if input.numel() == 0:
        raise RuntimeError(f"{fn}() input tensor must be non-empty")
    if dim is None:
        x = input.reshape(-1)
        d = 0
    else:
        d = _wrap_dim(dim, input.dim())
        x = input.reshape(1) if input.dim() == 0 else input
    moved = x.movedim(d, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    n = rows.shape[-1]
    # NaN sorts last; the sort is stable, so among equal values each quantile
    # reads (and its gradient reaches) the first in the input, as a stable
    # argsort's gather did.
    srt = rows.sort(-1, stable=True)[0]
    has_nan = srt.narrow(1, n - 1, 1).isnan()  # rows x 1
    if ignore_nan and has_nan.any().item():
        # Each row's quantiles lie among its own count of non-NaN values.
        valid = n - _np(srt.isnan().sum(1))
        lo, hi, frac = _positions(valid, np.atleast_1d(np.asarray(qs, dtype=np.float64)),
                                  interpolation)
        lo, hi, w = _from_np(lo), _from_np(hi), _from_np(frac, input.dtype)
        vlo, vhi = srt.gather(1, lo), srt.gather(1, hi)
        bad = srt.narrow(1, 0, 1).isnan()  # every value NaN
    else:
        # Every row has n values: the ranks depend on n and q only.
        lo, hi, w = _quantile_ranks(n, qs, interpolation, input.dtype)
        vlo, vhi = srt.index_select(1, lo), srt.index_select(1, hi)
        bad = None if ignore_nan else has_nan
    val = vlo + w * (vhi - vlo)  # rows x Q
    if bad is not None:
        val = val.masked_fill(bad, math.nan)
    # Q first, then the reduced shape.
    if dim is None:
        out_shape = (1,) * input.dim() if keepdim else ()
    else:
        shp = list(x.shape)
        if keepdim:
            shp[d] = 1
        else:
            del shp[d]
        out_shape = tuple(shp)
    if scalar_q:
        return val.reshape(out_shape)
    return val.transpose(0, 1).reshape((len(qs),) + out_shape)


def _quantile_batched(fn, input, q, dim, keepdim, interpolation, ignore_nan, lid, b):
    # The sort runs in NumPy, so under vmap the quantiles of every sample come
    # from one call on the physical value, reduced along the shifted dimension.
    if b.unwrap_at(q, lid) is not None:
        raise RuntimeError(f"vmap: there is no batching rule for {fn} with a batched q")
    v = b.unwrap_at(input, lid)
    if v is None:
        # Only an outer level batches the input: the result is the same for every sample.
        return _quantile(fn, input, q, dim, keepdim, interpolation, ignore_nan)
    nd = input.dim()
    if dim is None:
        out = _quantile(fn, v.reshape(v.shape[0], -1), q, 1, False, interpolation, ignore_nan)
    else:
        d = _wrap_dim(dim, nd) + 1 if nd else 1
        x = v if nd else v.unsqueeze(1)
        out = _quantile(fn, x, q, d, keepdim, interpolation, ignore_nan)
    if isinstance(q, Tensor):
        out = out.movedim(1, 0)  # quantiles first in each sample's result
    if keepdim and dim is None:
        for _ in range(nd):
            out = out.unsqueeze(-1)
    return b.wrap(out, lid)


@_replayed("quantile")
@_autocast_op("quantile")
def quantile(
    input: Tensor,
    q: float | Tensor,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """The ``q``-th quantiles of ``input`` (over all elements or along ``dim``), between
    neighbouring sorted values as ``interpolation`` says; NaN when a slice has NaN.
    With a 1-D ``q`` the quantiles come first in the result."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@_replayed("nanquantile")
@_autocast_op("nanquantile")
def nanquantile(
    input: Tensor,
    q: float | Tensor,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """``quantile`` of the non-NaN elements (NaN only when a slice is all NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


# ----- counting and sets (NumPy, no gradients) -----------------------------------------


@_data_dependent("bincount")
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How many times each non-negative integer occurs in the 1-D int64 ``input`` (or the
    sum of ``weights`` at its occurrences), at least ``minlength`` bins."""
    _check("bincount", input)
    if input.dim() != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if input.dtype != _C.int64:
        raise RuntimeError(
            f"\"bincount_cpu\" not implemented for '{str(input.dtype).split('.')[-1].capitalize()}'"
        )
    if weights is None and isinstance(input, _C.Tensor) and input.numel() <= _NATIVE_COUNT_MAX:
        # A few values: one native call. NumPy's bincount is the faster pass on many.
        return _C._bincount(input, int(minlength))
    arr = _np(input)
    if arr.size and arr.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    _alloc_guard(8 * builtins.max(int(minlength), int(arr.max(initial=0)) + 1))
    if weights is not None:
        if weights.dim() != 1 or weights.shape[0] != input.shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        res = np.bincount(arr, weights=_np(weights).astype(np.float64), minlength=minlength)
        return _from_np(res, weights.dtype if weights.is_floating_point() else _C.float64)
    return _from_np(np.bincount(arr, minlength=minlength).astype(np.int64))


@_replayed("histc")
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """A histogram of ``input`` with ``bins`` equal-width bins between ``min`` and ``max``
    (the data's range when both are 0); elements outside are ignored."""
    _check("histc", input)
    if not input.is_floating_point():
        raise RuntimeError(
            f"\"histogram_cpu\" not implemented for '{str(input.dtype).split('.')[-1].capitalize()}'"
        )
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins} for dimension 0")
    _alloc_guard(8 * int(bins))
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if _vmap_level(input)[0]:
        return _histc_batched(input, int(bins), lo, hi)
    if input.dtype == _C.float32 or input.dtype == _C.float64:
        return _C._histc(input, int(bins), lo, hi)
    arr = _np(input).reshape(-1)
    if lo == hi and arr.size:
        lo, hi = float(arr.min()), float(arr.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    # PyTorch's bin of x, in the input's dtype: (x - lo) / (hi - lo) * bins,
    # truncated, the top edge in the last bin; NaN and x outside [lo, hi] are not
    # counted. Its rounding decides the bins near an edge (NumPy's histogram
    # corrects them exactly and so differs there).
    inside = arr[(arr >= lo) & (arr <= hi)]
    lo_t, hi_t = np.array(lo, dtype=arr.dtype), np.array(hi, dtype=arr.dtype)
    with np.errstate(all="ignore"):
        pos = ((inside - lo_t) / (hi_t - lo_t) * arr.dtype.type(bins)).astype(np.int64)
    pos = np.minimum(np.maximum(pos, 0), int(bins) - 1)  # np.clip's dispatch costs more
    counts = np.bincount(pos, minlength=int(bins))
    return _from_np(counts.astype(np.float64), input.dtype)


def _histc_batched(input, bins, lo, hi):
    """``histc`` under vmap: every sample's histogram in one NumPy pass over the
    physical value (one row per sample, each with its own data range when
    ``min == max``, the bins of row r offset by r * bins), wrapped back into
    the levels it came from."""
    from ..func._batched import BatchedTensor

    levels, v = [], input
    while isinstance(v, BatchedTensor):
        levels.append(v._level)
        v = v._value
    arr = _np(v)
    batch = arr.shape[: len(levels)]
    rows = arr.reshape(math.prod(batch), -1)
    n = rows.shape[0]
    lo_r, hi_r = np.full(n, lo), np.full(n, hi)
    if lo == hi and rows.shape[1]:
        lo_r, hi_r = rows.min(1).astype(np.float64), rows.max(1).astype(np.float64)
    same = lo_r == hi_r
    lo_r[same] -= 1
    hi_r[same] += 1
    bad = ~(np.isfinite(lo_r) & np.isfinite(hi_r))
    if bad.any():
        r = int(np.argmax(bad))
        raise RuntimeError(f"torch.histc: range of [{lo_r[r]}, {hi_r[r]}] is not finite")
    # The unbatched path's arithmetic, row by row (see histc).
    lo_t, hi_t = lo_r.astype(arr.dtype)[:, None], hi_r.astype(arr.dtype)[:, None]
    inside = (rows >= lo_t) & (rows <= hi_t)
    with np.errstate(all="ignore"):
        pos = ((rows - lo_t) / (hi_t - lo_t) * arr.dtype.type(bins)).astype(np.int64)
    pos = np.minimum(np.maximum(pos, 0), bins - 1) + np.arange(n, dtype=np.int64)[:, None] * bins
    counts = np.bincount(pos[inside], minlength=n * bins).reshape(*batch, bins)
    out = _from_np(counts.astype(np.float64), input.dtype)
    for level in reversed(levels):
        out = BatchedTensor(out, level)
    return out


# The most elements bincount and isin count natively: one call beats NumPy's
# dozen below this, NumPy's vectorised passes win above it.
_NATIVE_COUNT_MAX = 1 << 12

# The dtypes the native membership test takes (both tensors of one dtype).
_ISIN_DTYPES = frozenset(
    (_C.float32, _C.float64, _C.int64, _C.int32, _C.int16, _C.int8, _C.uint8, _C.bool)
)


@_replayed("isin")
def isin(
    elements: TensorOrNumber,
    test_elements: TensorOrNumber,
    *,
    assume_unique: bool = False,
    invert: bool = False,
) -> Tensor:
    """Whether each element of ``elements`` occurs in ``test_elements`` (either may be a
    number), as a bool tensor of ``elements``' shape."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments: expected at "
                        "least one Tensor")  # fmt: skip
    if (
        isinstance(elements, Tensor)
        and isinstance(test_elements, Tensor)
        and elements.dtype == test_elements.dtype
        and elements.dtype in _ISIN_DTYPES
        # Many elements against many: NumPy's isin (a table for integers) is faster.
        and (elements.numel() <= _NATIVE_COUNT_MAX or test_elements.numel() <= 16)
    ):
        return _C._isin(elements, test_elements, bool(invert))
    a = _np(elements) if isinstance(elements, Tensor) else np.asarray(elements)
    b = _np(test_elements) if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    if a.size * b.size <= 1 << 16 and a.dtype.kind in "biuf" and b.dtype.kind in "biuf":
        # Every pair compared at once (what np.isin does for a short test set, with a
        # Python loop over it): NaN matches nothing, -0.0 matches 0.0.
        found = (a.reshape(-1, 1) == b.reshape(1, -1)).any(1).reshape(a.shape)
        return _from_np(~found if invert else found)
    return _from_np(np.isin(a, b, assume_unique=assume_unique, invert=invert))


@_data_dependent("unique_consecutive")
def unique_consecutive(
    input: Tensor,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Tensor | tuple[Tensor, ...]:
    """``input`` with each run of equal consecutive elements (or slices along ``dim``)
    collapsed to one; optionally where each element went and each run's length."""
    _check("unique_consecutive", input)
    if dim is None and 0 < input.numel() <= 64:
        # A few elements: the runs found on a list (NaN != NaN, -0.0 == 0.0 as in
        # NumPy), the values read from the input itself so they keep its dtype; the
        # index lists go in through NumPy (a tensor from a list costs more).
        flat = input.detach().reshape(-1)
        items = flat.tolist()
        first = [True, *(a != b for a, b in zip(items[1:], items))]
        starts = [i for i, f in enumerate(first) if f]
        out = [flat.index_select(0, _from_np(np.array(starts, dtype=np.int64)))]
        if return_inverse:
            inverse = [c - 1 for c in itertools.accumulate(first)]
            out.append(_from_np(np.array(inverse, dtype=np.int64)).reshape(tuple(input.shape)))
        if return_counts:
            ends = [*starts[1:], len(items)]
            out.append(_from_np(np.array([e - b for b, e in zip(starts, ends)], dtype=np.int64)))
        return tuple(out) if len(out) > 1 else out[0]
    arr = _np(input)
    if dim is None:
        flat = arr.reshape(-1)
        start = np.ones(flat.size, dtype=bool)
        start[1:] = flat[1:] != flat[:-1]
        values = flat[start]
        inverse = (np.cumsum(start) - 1).reshape(arr.shape)
    else:
        d = _wrap_dim(dim, arr.ndim)
        moved = np.moveaxis(arr, d, 0)
        n = moved.shape[0]
        start = np.ones(n, dtype=bool)
        if n > 1:
            start[1:] = (moved[1:] != moved[:-1]).reshape(n - 1, -1).any(-1)
        values = np.moveaxis(moved[start], 0, d)
        inverse = np.cumsum(start) - 1
    counts = np.diff(np.append(np.flatnonzero(start), start.size))
    out = [_from_np(values, input.dtype)]
    if return_inverse:
        out.append(_from_np(inverse.astype(np.int64)))
    if return_counts:
        out.append(_from_np(counts.astype(np.int64)))
    return tuple(out) if len(out) > 1 else out[0]


@_replayed("unravel_index")
def unravel_index(indices: Tensor, shape: IntOrInts) -> tuple[Tensor, ...]:
    """The coordinates in a tensor of ``shape`` of the flat ``indices``, as a tuple of
    int64 tensors (one per dimension)."""
    if isinstance(indices, Tensor):
        if indices.is_floating_point() or indices.dtype == _C.bool:
            raise TypeError("expected 'indices' to be integer dtype, but got "
                            f"{indices.dtype}")  # fmt: skip
        arr = _np(indices)
    else:
        arr = np.asarray(indices, dtype=np.int64)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if builtins.any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    total = math.prod(shape)
    if total >= 1 << 63:
        total = int(np.prod(shape))  # NumPy's int64 product, as before
    if arr.size <= 64:
        # A few indices: their bounds from a list (NumPy's min and max cost more).
        flat = arr.reshape(-1).tolist()
        lo, hi = (builtins.min(flat), builtins.max(flat)) if flat else (0, 0)
    else:
        lo, hi = arr.min(), arr.max()
    if arr.size and (lo < -total or hi >= total):
        raise RuntimeError(f"'indices' must be in range [-{total}, {total})"
                           if total else "'indices' must be empty for a shape with no elements")  # fmt: skip
    if lo < 0:
        arr = np.where(arr < 0, arr + total, arr)
    coords = np.unravel_index(arr, shape) if shape else ()
    return tuple(_from_np(np.asarray(c, dtype=np.int64)) for c in coords)
