"""The index and scatter family: ``index_add``, ``index_copy``, ``index_fill``,
``index_put``, ``scatter_reduce``, ``masked_scatter``, ``take``,
``take_along_dim`` and ``put``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import _C
from .._autocast import autocast_op as _autocast_op
from .._C import Tensor
from .._inplace import apply_inplace
from .._replay import replayed as _replayed
from ._common import _check, _from_np, _np, _vmap_level, _wrap_dim

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._typing import Number, TensorOrNumber

# ----- index and scatter family --------------------------------------------------------


def _checks_values(*values):
    """Whether ``values`` may be read into NumPy for PyTorch's bounds errors. Not
    while ``ferrograd.compile`` captures (a replay cannot re-run Python) nor under
    ``vmap`` (a batched value has no NumPy view): the indices are then normalised
    with tensor ops and the kernels check their bounds."""
    return not _C._capture_active() and all(isinstance(v, Tensor) for v in values)


def _wrap_negative(index, n):
    """``index`` with negative entries counted from the end of a dimension of ``n``."""
    return _C.where(index < 0, index + n, index)


def _index_along(fn, self, dim, index, source_shape):
    """``index`` (1-D) shaped to address ``source_shape`` along ``dim``."""
    if index.dim() > 1:
        raise IndexError(f"{fn}(): Index is supposed to be a vector")
    if index.dtype != _C.int64:
        raise IndexError(f"{fn}(): Expected dtype int64 for index")
    index = index.reshape(-1)
    view = [1] * len(source_shape)
    if view:
        view[dim] = index.shape[0]
    return index.reshape(tuple(view)).expand(*source_shape)


def index_add(
    input: Tensor,
    dim: int,
    index: Tensor,
    source: Tensor,
    *,
    alpha: Number = 1,
) -> Tensor:
    """A copy of ``input`` with ``alpha * source[.., i, ..]`` added at ``input[.., index[i], ..]``
    along ``dim`` (repeated indices accumulate)."""
    _check("index_add", input)
    _check("index_add", index, "index", 3)
    _check("index_add", source, "source", 4)
    dim = _wrap_dim(dim, input.dim())
    if input.dim() == 0:
        return input + (alpha * source).sum()
    _rows_fit("index_add", RuntimeError, dim, index, source, input)
    src = source if alpha == 1 else alpha * source
    if _plain(input, src, index):
        return _C._index_add(input, dim, _row_index("index_add", index), src)
    idx = _index_along("index_add", input, dim, index, tuple(source.shape))
    return input.scatter_add(dim, idx, src)


def _plain(*values):
    """Whether every value is a ferrograd Tensor (none batched by ``vmap``), so the
    core's own op takes them."""
    return all(isinstance(v, Tensor) for v in values)


def _row_index(fn, index):
    """``index`` of ``index_add``/``index_copy`` as 1-D, after PyTorch's checks."""
    if index.dim() > 1:
        raise IndexError(f"{fn}(): Index is supposed to be a vector")
    if index.dtype != _C.int64:
        raise IndexError(f"{fn}(): Expected dtype int64 for index")
    return index.reshape(-1)


def index_add_(
    self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Number = 1
) -> Tensor:
    """``index_add`` written into ``self``'s memory (``alpha * source`` added at the
    rows ``index`` along ``dim``)."""
    if _plain(self, index, source) and self.dim() > 0:
        _check("index_add_", index, "index", 3)
        d = _wrap_dim(dim, self.dim())
        _rows_fit("index_add", RuntimeError, d, index, source, self)
        src = source if alpha == 1 else alpha * source
        _C._index_rows_(self, d, _row_index("index_add", index), src, True)
        return self
    return apply_inplace(self, lambda: index_add(self, dim, index, source, alpha=alpha),
                         "index_add_")


def _rows_fit(fn, error, dim, index, source, input):
    if source.dim() != input.dim() or source.shape[dim] != index.numel():
        raise error(
            f"{fn}_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim) ({source.shape[dim] if source.dim() else 1})"
        )


@_autocast_op("index_copy")
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with ``source[.., i, ..]`` written at ``input[.., index[i], ..]``
    along ``dim``."""
    _check("index_copy", input)
    _check("index_copy", index, "index", 3)
    _check("index_copy", source, "source", 4)
    dim = _wrap_dim(dim, input.dim())
    if input.dim() == 0:
        return source.reshape(()).to(input.dtype) + input * 0
    _rows_fit("index_copy", IndexError, dim, index, source, input)
    if _plain(input, source, index):
        return _C._index_copy(input, dim, _row_index("index_copy", index), source)
    idx = _index_along("index_copy", input, dim, index, tuple(source.shape))
    return input.scatter(dim, idx, source)


def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """``index_copy`` written into ``self``'s memory."""
    if _plain(self, index, source) and self.dim() > 0:
        _check("index_copy_", index, "index", 3)
        d = _wrap_dim(dim, self.dim())
        _rows_fit("index_copy", IndexError, d, index, source, self)
        _C._index_rows_(self, d, _row_index("index_copy", index), source, False)
        return self
    return apply_inplace(self, lambda: index_copy(self, dim, index, source), "index_copy_")


@_replayed("index_fill")
def index_fill(input: Tensor, dim: int, index: Tensor, value: TensorOrNumber) -> Tensor:
    """A copy of ``input`` with the slices ``index`` along ``dim`` set to ``value``."""
    dim, negative = _fill_checks("index_fill", input, dim, index, value)
    n = input.shape[dim] if input.dim() else 1
    if _fills_rows(input, index, value):
        return _C._index_copy(input, dim, *_fill_rows(input, dim, index, value, negative))
    mask = np.zeros(n, dtype=bool)
    mask[_np(index).reshape(-1)] = True
    view = [1] * input.dim()
    if view:
        view[dim] = n
    m = _from_np(mask.reshape(view))
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(
                "index_fill_ only supports a 0-dimensional value tensor, but got tensor "
                f"with {value.dim()} dimension(s)."
            )
        return _C.where(m, value.to(input.dtype), input)
    return input.masked_fill(m, value)


def _fills_rows(input, index, value):
    return _plain(input, index) and input.dim() > 0 and isinstance(value, (Tensor, int, float))


def _fill_rows(input, dim, index, value, negative):
    """The filled slices as ``index_copy``'s index and source: rows of the
    (broadcast) value."""
    idx = index.reshape(-1)
    if negative:
        idx = _wrap_negative(idx, input.shape[dim])
    v = value.to(input.dtype) if isinstance(value, Tensor) else _C.full(
        (), value, dtype=input.dtype)  # fmt: skip
    shape = list(input.shape)
    shape[dim] = idx.numel()
    return idx, v.expand(*shape)


def _fill_checks(fn, input, dim, index, value):
    """PyTorch's checks of ``index_fill``'s arguments: the wrapped ``dim``, and
    whether ``index`` may hold negative entries."""
    _check(fn, input)
    _check(fn, index, "index", 3)
    dim = _wrap_dim(dim, input.dim())
    if index.dtype != _C.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    n = input.shape[dim] if input.dim() else 1
    negative = True
    if _checks_values(index):
        if index.numel() <= 64:
            # A few indices read as one list: less than NumPy's passes.
            flat = index.reshape(-1).tolist()
            lo, hi = (min(flat), max(flat)) if flat else (0, 0)
        else:
            flat = _np(index).reshape(-1)
            lo, hi = flat.min(), flat.max()
        if hi >= n or lo < -n:
            bad = next(int(i) for i in flat if i >= n or i < -n)
            raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {n}")
        negative = lo < 0
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor "
            f"with {value.dim()} dimension(s)."
        )
    return dim, negative


def index_fill_(self: Tensor, dim: int, index: Tensor, value: TensorOrNumber) -> Tensor:
    """``index_fill`` written into ``self``'s memory."""
    if _fills_rows(self, index, value):
        d, negative = _fill_checks("index_fill_", self, dim, index, value)
        _C._index_rows_(self, d, *_fill_rows(self, d, index, value, negative), False)
        return self
    return apply_inplace(self, lambda: index_fill(self, dim, index, value), "index_fill_")


@_replayed("masked_scatter")
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the elements where ``mask`` is True replaced, in order, by
    the leading elements of ``source``."""
    _check("masked_scatter", input)
    _check("masked_scatter", mask, "mask", 2)
    _check("masked_scatter", source, "source", 3)
    if mask.dtype != _C.bool:
        raise RuntimeError(
            f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}"
        )
    mask = mask.expand(*input.shape) if tuple(mask.shape) != tuple(input.shape) else mask
    if _checks_values(mask, input, source):
        # The leading k elements written in order at the True positions, as
        # x[mask] = source[:k] writes them: one native op instead of a running count,
        # a gather and a where.
        values = _masked_values(input, mask, source)
        if values is None:
            return input.clone()
        return _C._index_put(input, (mask,), values, False)
    # Each element's source position: the running count of True values, less one
    # (the last count is the number of True values).
    pos = mask.reshape(-1).cumsum(0)
    if _checks_values(mask) and pos.numel() and int(pos[-1].item()) > source.numel():
        raise RuntimeError("masked_scatter: expected source to have at least as many elements "
                           "as there are True values in mask")  # fmt: skip
    pos = pos.sub_(1).clamp_(min=0)
    flat_src = source.reshape(-1)
    if flat_src.numel() == 0:
        return input.clone()
    vals = flat_src.gather(0, pos).reshape(tuple(input.shape)).to(input.dtype)
    return _C.where(mask, vals, input)


def _masked_values(input, mask, source):
    """The leading elements of ``source``, one per True flag of ``mask`` (None for an
    empty ``source``), after PyTorch's count check."""
    # NumPy counts the flags in one pass over the bytes (a tensor sum widens each to int64).
    k = int(np.count_nonzero(_np(mask)))
    if k > source.numel():
        raise RuntimeError("masked_scatter: expected source to have at least as many "
                           "elements as there are True values in mask")
    flat_src = source.reshape(-1)
    if flat_src.numel() == 0:
        return None
    return flat_src[:k].to(input.dtype)


def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``masked_scatter`` written into ``self``'s memory."""
    if _checks_values(self, mask, source) and isinstance(mask, Tensor) and mask.dtype == _C.bool:
        m = mask.expand(*self.shape) if tuple(mask.shape) != tuple(self.shape) else mask
        values = _masked_values(self, m, source)
        if values is not None:
            _C._index_put_(self, (m,), values, False)
        return self
    return apply_inplace(self, lambda: masked_scatter(self, mask, source), "masked_scatter_")


def _flat_index(fn, input, index):
    n = input.numel()
    if _checks_values(index):
        if index.numel() <= 64:
            # A few indices read as one list: less than the array passes below.
            idx = index.reshape(-1).tolist()
            lo, hi = (min(idx), max(idx)) if idx else (0, 0)
        else:
            idx = _np(index).astype(np.int64, copy=False)
            lo, hi = (idx.min(), idx.max()) if idx.size else (0, 0)
        if hi >= n or lo < -n:
            bad = (next(i for i in idx if i >= n or i < -n) if isinstance(idx, list)
                   else idx[(idx >= n) | (idx < -n)].reshape(-1)[0])
            raise IndexError(
                f"out of range: tried to access index {bad} on a tensor of {n} elements."
            )
        if lo >= 0:
            # Nothing counts from the end: skip three passes over the index.
            return index
    return _wrap_negative(index, n)


@_replayed("take")
def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements of ``input``, viewed as 1-D, at ``index`` (negative counts from the
    end), in ``index``'s shape."""
    _check("take", input)
    _check("take", index, "index", 2)
    if index.dtype != _C.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype}")
    if _vmap_level(input, index)[0]:
        # Under vmap each sample is flattened on its own: the composition's
        # ops carry the batch dimension through.
        idx = _flat_index("take", input, index)
        return input.reshape(-1).index_select(0, idx.reshape(-1)).reshape(tuple(index.shape))
    return _C._take(input, index)


@_replayed("put")
def _put(self, index, source, accumulate=False):
    """A copy of ``self`` with ``source`` written at the flat positions ``index`` (added
    there with ``accumulate=True``)."""
    idx, src = _put_args(self, index, source)
    flat = self.reshape(-1)
    out = flat.scatter_add(0, idx, src) if accumulate else flat.scatter(0, idx, src)
    return out.reshape(tuple(self.shape))


def _put_args(self, index, source):
    """``put``'s flat index (negative entries wrapped) and flat source, after
    PyTorch's checks."""
    _check("put_", index, "index", 2)
    _check("put_", source, "source", 3)
    if index.dtype != _C.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {index.dtype}")
    idx = _flat_index("put_", self, index).reshape(-1)
    src = source.reshape(-1)
    if idx.numel() != src.numel():
        raise RuntimeError(
            f"put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {src.numel()}, index.numel() = {idx.numel()}"
        )
    return idx, src


def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """``put`` written into ``self``'s memory: ``source`` at the flat positions
    ``index`` (added there with ``accumulate=True``)."""
    recorded = _C.is_grad_enabled() and (
        getattr(self, "requires_grad", False) or getattr(source, "requires_grad", False))
    if _plain(self, index, source) and self.is_contiguous() and not recorded:
        idx, src = _put_args(self, index, source)
        # A view of the contiguous self written in place: nothing is recorded.
        _C._scatter_(self.view(-1), 0, idx, src, "sum" if accumulate else "none")
        return self
    return apply_inplace(self, lambda: _put(self, index, source, accumulate), "put_")


def index_put(
    input: Tensor,
    indices: Sequence[Tensor | None],
    values: TensorOrNumber,
    accumulate: bool = False,
) -> Tensor:
    """A copy of ``input`` with ``values`` written (added, with ``accumulate=True``) at
    ``input[indices]``, where ``indices`` is a tuple of int64 or bool tensors indexing
    the leading dimensions, as ``input[indices] = values`` does."""
    idx = _index_put_args("index_put", input, indices, values)
    lid, b = _vmap_level(input, values, *idx)
    if lid:
        return _index_put_batched(b, lid, input, idx, values, accumulate)
    return _C._index_put(input, idx, values, accumulate)


def _index_put_(
    self: Tensor,
    indices: Sequence[Tensor | None],
    values: Tensor,
    accumulate: bool = False,
) -> Tensor:
    """``index_put`` written into ``self``'s memory."""
    idx = _index_put_args("index_put_", self, indices, values)
    if _vmap_level(self, values, *idx)[0]:
        return apply_inplace(self, lambda: index_put(self, idx, values, accumulate), "index_put_")
    _C._index_put_(self, idx, values, accumulate)
    return self


def _index_put_args(name, input, indices, values):
    """``indices`` as a list after PyTorch's argument checks."""
    _check(name, input)
    _check(name, values, "values", 3)
    if not isinstance(indices, (tuple, list)):
        raise TypeError(
            f"{name}(): argument 'indices' (position 2) must be tuple of Tensors, not "
            f"{type(indices).__name__}"
        )
    for k, t in enumerate(indices):
        if not isinstance(t, Tensor) and not _is_batched(t):
            raise TypeError(
                f"expected Tensor as element {k} in argument 1, but got {type(t).__name__}"
            )
    return list(indices)


def _is_batched(t):
    return type(t).__name__ == "BatchedTensor"


def _index_put_batched(b, lid, input, idx, values, accumulate):
    """``index_put`` under ``vmap``: one call on the physical tensors, the batch picked by
    an extra leading index (the indices themselves may not be batched)."""
    if any(b.unwrap_at(t, lid) is not None for t in idx):
        raise RuntimeError(
            "vmap: index_put with a batched index tensor is not supported; use scatter instead"
        )
    size = b.batch_size_of((input, values), lid)
    x = b.materialize(input, lid, size)
    # Masks as their positions, so every index is an integer tensor to broadcast with.
    flat = []
    for t in idx:
        flat.extend(t.nonzero().unbind(1) if t.dtype == _C.bool and t.dim() else [t])
    nbd = len(_C.broadcast_tensors(*flat)[0].shape) if flat else 0
    batch = _C.arange(size).reshape((size,) + (1,) * nbd)
    v = b.unwrap_at(values, lid)
    if v is not None:
        result_nd = nbd + input.dim() - len(flat)
        values = b.pad_to(v, result_nd)
    out = _C._index_put(x, [batch, *flat], values, accumulate)
    return b.wrap(out, lid)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """Values of ``input`` at ``indices`` along ``dim`` (broadcasting the other dimensions),
    or of the flattened ``input`` when ``dim`` is None."""
    _check("take_along_dim", input)
    _check("take_along_dim", indices, "indices", 2)
    if indices.dtype != _C.int64:
        raise RuntimeError(
            f"torch.take_along_dim(): dtype of indices should be Long but got {indices.dtype}"
        )
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    if input.dim() != indices.dim():
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {input.dim()} dimensions for input, and {indices.dim()} "
            "dimensions for indices"
        )
    dim = _wrap_dim(dim, input.dim())
    a = list(input.shape)
    b = list(indices.shape)
    a[dim] = b[dim] = 1
    common = list(_broadcast(a, b))
    ishape, jshape = list(common), list(common)
    ishape[dim] = input.shape[dim]
    jshape[dim] = indices.shape[dim]
    return input.expand(*ishape).gather(dim, indices.expand(*jshape))


def _broadcast(a, b):
    from .. import broadcast_shapes

    return tuple(broadcast_shapes(tuple(a), tuple(b)))


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(
    input: Tensor,
    dim: int,
    index: Tensor,
    src: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """A copy of ``input`` with the elements of ``src`` reduced into the positions
    ``index`` along ``dim`` by ``reduce`` (``"sum"``, ``"prod"``, ``"mean"``, ``"amax"``,
    ``"amin"``), counting ``input``'s own value unless ``include_self=False``."""
    _check("scatter_reduce", input)
    _check("scatter_reduce", index, "index", 3)
    _check("scatter_reduce", src, "src", 4)
    if index.dtype != _C.int64:
        raise RuntimeError("scatter_reduce(): Expected dtype int64 for index")
    lid, b = _vmap_level(input, index, src)
    if lid and input.dim() > 0:
        # The prod/amax/amin paths work in NumPy: under vmap every operand gets
        # the batch dimension in front and one call scatters all samples.
        size = b.batch_size_of((input, index, src), lid)
        phys = [b.materialize(t, lid, size) for t in (input, index, src)]
        out = scatter_reduce(phys[0], _wrap_dim(dim, input.dim()) + 1, phys[1], phys[2], reduce,
                             include_self=include_self)
        return b.wrap(out, lid)
    if reduce not in _REDUCES:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    dim = _wrap_dim(dim, input.dim())
    if index.dim() != src.dim() or (input.dim() and index.dim() != input.dim()):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    for d in range(index.dim()):
        if index.shape[d] > src.shape[d]:
            raise RuntimeError(
                f"Expected index {list(index.shape)} to be smaller than self "
                f"{list(input.shape)} apart from dimension {dim} and to be smaller size than "
                f"src {list(src.shape)}"
            )
    src = src.to(input.dtype)
    if tuple(src.shape) != tuple(index.shape):
        for d, n in enumerate(index.shape):
            src = src.narrow(d, 0, n)
    if reduce == "sum" and include_self:
        # Nothing to count: no scatter of ones, no mask.
        return input.scatter_add(dim, index, src)
    res = None
    if reduce in ("prod", "amax", "amin"):
        # The core reduces in one pass; only a gradient needs the compositions below.
        res = _C._scatter_reduce_value(input, dim, index, src, reduce, include_self)
        if not _differentiates(input, src):
            return res
    ones = _C.ones(tuple(index.shape), dtype=input.dtype)
    hit = _C.zeros(tuple(input.shape), dtype=input.dtype).scatter_add(dim, index, ones)
    touched = hit > 0
    base = input if include_self else input.masked_fill(touched, 0)
    if reduce == "sum":
        return base.scatter_add(dim, index, src)
    if reduce == "mean":
        total = base.scatter_add(dim, index, src)
        count = hit + (1 if include_self else 0)
        count = count.masked_fill(~touched, 1)
        if input.is_floating_point():
            return total / count
        return (total.double() / count).floor().long()  # PyTorch floors the integer mean
    if reduce == "prod":
        # One factor per rank of arrival: at most one element of each rank lands on a
        # position, so each round is a scatter_add into ones. Exact with zeros, and
        # the product rule gives every gradient.
        idx_np = _np(index)
        coords = list(np.indices(idx_np.shape))
        coords[dim] = idx_np
        keys = np.ravel_multi_index(tuple(coords), tuple(input.shape)).reshape(-1)
        # The rank of an element is how many earlier elements share its target.
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        pos = np.arange(sk.size)
        first = np.maximum.accumulate(np.where(np.r_[True, sk[1:] != sk[:-1]], pos, 0))
        rflat = np.empty(sk.size, dtype=np.int64)
        rflat[order] = pos - first
        ranks = _from_np(rflat.reshape(idx_np.shape))
        out = base if include_self else base.masked_fill(touched, 1)
        for r in range(int(ranks.max().item()) + 1 if ranks.numel() else 0):
            pick = _C.where(ranks == r, src - 1, _C.zeros((), dtype=src.dtype))
            factor = _C.ones(tuple(input.shape), dtype=input.dtype).scatter_add(dim, index, pick)
            out = out * factor
        return out
    # amax / amin: the winning value as an average of the tied candidates, so the
    # gradient is shared among ties as PyTorch shares it.
    if res is None:
        res = _C._scatter_reduce_value(input, dim, index, src, reduce, include_self)
    keep_self = input == res
    if not include_self:
        keep_self = keep_self & ~touched
    win = src == res.gather(dim, index)
    count = keep_self.to(input.dtype).scatter_add(dim, index, win.to(input.dtype))
    if not input.is_floating_point():
        return res
    w_self = keep_self.to(input.dtype) / count
    w_src = win.to(input.dtype) / count.gather(dim, index)
    return (input * w_self).scatter_add(dim, index, src * w_src)


def scatter_reduce_(
    self: Tensor,
    dim: int,
    index: Tensor,
    src: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """``scatter_reduce`` written into ``self``'s memory."""
    # Counting ``self``, a sum, product or extremum combines each element of
    # ``src`` into place in one pass (a sum is recorded as ``scatter_add``).
    if (include_self and _plain(self, index, src)
            and (reduce == "sum" or reduce in ("prod", "amax", "amin")
                 and not _differentiates(self, src))):  # fmt: skip
        _check("scatter_reduce_", index, "index", 3)
        if index.dtype != _C.int64:
            raise RuntimeError("scatter_reduce(): Expected dtype int64 for index")
        _C._scatter_(self, dim, index, src, reduce)
        return self
    return apply_inplace(
        self,
        lambda: scatter_reduce(self, dim, index, src, reduce, include_self=include_self),
        "scatter_reduce_",
    )


def _differentiates(*ts):
    """Whether a result computed from ``ts`` needs a gradient or a tangent."""
    if _C.is_grad_enabled() and any(t.requires_grad for t in ts):
        return True
    return any(_C._fw_tangent(t) is not None for t in ts)


def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    """``scatter`` written into ``self``'s memory (``src`` a tensor or a number)."""
    given = value if src is None else src
    if reduce is None and _plain(self, index) and (
            _plain(given) or type(given) in (int, float, bool)):  # fmt: skip
        _C._scatter_(self, dim, index, given, "none")
        return self
    return apply_inplace(
        self, lambda: _scatter_(self, dim, index, src, value=value, reduce=reduce), "scatter_")


def scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``scatter_add`` written into ``self``'s memory."""
    if _plain(self, index, src):
        _C._scatter_(self, dim, index, src, "sum")
        return self
    return apply_inplace(self, lambda: self.scatter_add(dim, index, src), "scatter_add_")


def _scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    if reduce is None:
        if src is None:
            return self.scatter(dim, index, value=value)
        return self.scatter(dim, index, src) if isinstance(src, Tensor) else self.scatter(
            dim, index, value=src)  # fmt: skip
    if reduce not in ("add", "multiply"):
        raise RuntimeError(f"reduce argument must be either add or multiply. Got {reduce}")
    if src is None or not isinstance(src, Tensor):
        v = value if src is None else src
        src = _C.full(tuple(index.shape), v, dtype=self.dtype)
    return scatter_reduce(self, dim, index, src, "sum" if reduce == "add" else "prod")
