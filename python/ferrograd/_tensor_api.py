"""More of PyTorch's tensor API, composed from existing differentiable ops.

The ``new_*`` constructors, dtype and size helpers, the in-place forms of
comparisons, the index/scatter family (``index_add``, ``scatter_reduce``,
``masked_scatter``, ``take``, ...), scans (``cumprod``, ``cummax``,
``logcumsumexp``), shape helpers (``tile``, ``repeat_interleave``, ``rot90``,
the ``*stack`` family), reductions (``quantile``, ``nansum``, ``aminmax``,
...), windows and a few module-level aliases of ``nn.functional``.

Differentiable results are built from ops that record their own backward
rules (``gather``, ``scatter_add``, ``cat``, ``narrow``, ``mul``, ...), so
first and higher-order gradients, forward mode and capture follow from them;
where PyTorch returns indices or counts (``bincount``, ``histc``, ``isin``,
``unique_consecutive``, the indices of ``cummax``) the work is done by NumPy.
"""

from __future__ import annotations

import builtins
import collections
import functools
import math
import types
import warnings

import numpy as np

from . import _C
from ._C import Tensor

__all__ = [
    "are_deterministic_algorithms_enabled",
    "argwhere",
    "as_tensor",
    "asarray",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "aminmax",
    "bartlett_window",
    "bincount",
    "blackman_window",
    "block_diag",
    "column_stack",
    "count_nonzero",
    "cummax",
    "cummin",
    "cumprod",
    "cumulative_trapezoid",
    "diff",
    "dstack",
    "fliplr",
    "flipud",
    "hamming_window",
    "hann_window",
    "histc",
    "hstack",
    "index_add",
    "index_copy",
    "index_fill",
    "index_put",
    "inner",
    "is_deterministic_algorithms_warn_only_enabled",
    "is_nonzero",
    "is_same_size",
    "isin",
    "kaiser_window",
    "logcumsumexp",
    "logspace",
    "masked_scatter",
    "moveaxis",
    "nanmean",
    "nanquantile",
    "nansum",
    "quantile",
    "ravel",
    "repeat_interleave",
    "rot90",
    "row_stack",
    "scalar_tensor",
    "scatter_reduce",
    "set_printoptions",
    "std_mean",
    "swapdims",
    "take",
    "take_along_dim",
    "tensordot",
    "tile",
    "trapezoid",
    "trapz",
    "unique_consecutive",
    "unravel_index",
    "use_deterministic_algorithms",
    "var_mean",
    "vdot",
    "vstack",
]


def _check(fn, value, name="input", position=1):
    if not isinstance(value, Tensor) and not hasattr(type(value), "__ferrograd_function__"):
        raise TypeError(
            f"{fn}(): argument '{name}' (position {position}) must be Tensor, "
            f"not {type(value).__name__}"
        )


def _vmap_level(*values):
    """The innermost ``vmap`` level among ``values`` (BatchedTensors) and the
    batching module, or ``(0, None)`` when none is batched."""
    if all(v is None or isinstance(v, Tensor) for v in values):
        return 0, None
    from .func import _batched

    return _batched.max_level(values), _batched


def _wrap_dim(dim, ndim):
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def _from_np(arr, dtype=None):
    arr = np.ascontiguousarray(arr)
    out = _C.tensor(arr.item()) if arr.ndim == 0 else _C.from_numpy(arr)
    return out if dtype is None or out.dtype == dtype else out.to(dtype)


def _alloc_guard(nbytes):
    # Refuse before NumPy tries to allocate (a MemoryError is no PyTorch error).
    if nbytes > 1 << 33:
        raise RuntimeError(
            "[enforce fail at alloc_cpu.cpp] DefaultCPUAllocator: not enough memory: "
            f"you tried to allocate {nbytes} bytes."
        )


def _np(t):
    return t.detach().numpy()


def _size_args(fn, size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, int) or isinstance(s, builtins.bool):
            raise TypeError(
                f"{fn}(): argument 'size' must be tuple of ints, but found element of type "
                f"{type(s).__name__}"
            )
    return tuple(size)


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


def _missing_dtype(method, name):
    def convert(self, memory_format=None):
        raise TypeError(
            f"Cannot convert a CPU Tensor to {name} dtype as ferrograd doesn't support {name}. "
            "Please use int64 (Tensor.long()) instead."
        )

    convert.__name__ = method
    convert.__doc__ = (
        f"PyTorch's ``Tensor.{method}()`` converts to {name}, a dtype ferrograd does not have: "
        "raises ``TypeError``."
    )
    return convert


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
    """Whether ``self``'s dtype is signed (every ferrograd dtype but ``bool``)."""
    return self.dtype != _C.bool


def _is_complex(self):
    """Whether ``self`` has a complex dtype: always False, ferrograd has none."""
    return False


def is_nonzero(input):
    """The truth value of a one-element tensor; raises PyTorch's RuntimeError otherwise."""
    _check("is_nonzero", input)
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item() != 0)


def is_same_size(input, other):
    """Whether ``input`` and ``other`` have the same shape."""
    _check("is_same_size", input)
    _check("is_same_size", other, "other", 2)
    return tuple(input.shape) == tuple(other.shape)


# ----- in-place forms ------------------------------------------------------------------


def _inplace(name, compute):
    def method(self, *args, **kwargs):
        return _C._apply_inplace(self, lambda: compute(self, *args, **kwargs), name)

    method.__name__ = name
    method.__doc__ = f"In-place form of ``{name[:-1]}``: writes the result into ``self``."
    return method


# ----- index and scatter family --------------------------------------------------------


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


def index_add(input, dim, index, source, *, alpha=1):
    """A copy of ``input`` with ``alpha * source[.., i, ..]`` added at ``input[.., index[i], ..]``
    along ``dim`` (repeated indices accumulate)."""
    _check("index_add", input)
    _check("index_add", index, "index", 3)
    _check("index_add", source, "source", 4)
    dim = _wrap_dim(dim, input.dim())
    if input.dim() == 0:
        return input + (alpha * source).sum()
    if source.dim() != input.dim() or source.shape[dim] != index.numel():
        raise RuntimeError(
            f"index_add_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim) ({source.shape[dim] if source.dim() else 1})"
        )
    idx = _index_along("index_add", input, dim, index, tuple(source.shape))
    return input.scatter_add(dim, idx, source if alpha == 1 else alpha * source)


def index_copy(input, dim, index, source):
    """A copy of ``input`` with ``source[.., i, ..]`` written at ``input[.., index[i], ..]``
    along ``dim``."""
    _check("index_copy", input)
    _check("index_copy", index, "index", 3)
    _check("index_copy", source, "source", 4)
    dim = _wrap_dim(dim, input.dim())
    if input.dim() == 0:
        return source.reshape(()).to(input.dtype) + input * 0
    if source.dim() != input.dim() or source.shape[dim] != index.numel():
        raise IndexError(
            f"index_copy_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim) ({source.shape[dim] if source.dim() else 1})"
        )
    idx = _index_along("index_copy", input, dim, index, tuple(source.shape))
    return input.scatter(dim, idx, source)


def index_fill(input, dim, index, value):
    """A copy of ``input`` with the slices ``index`` along ``dim`` set to ``value``."""
    _check("index_fill", input)
    _check("index_fill", index, "index", 3)
    dim = _wrap_dim(dim, input.dim())
    if index.dtype != _C.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    n = input.shape[dim] if input.dim() else 1
    flat = _np(index).reshape(-1)
    if flat.size and (flat.max() >= n or flat.min() < -n):
        bad = flat[(flat >= n) | (flat < -n)][0]
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {n}")
    mask = np.zeros(n, dtype=bool)
    mask[flat] = True
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


def masked_scatter(input, mask, source):
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
    need = int(mask.sum().item())
    if need > source.numel():
        raise RuntimeError("masked_scatter: expected source to have at least as many elements "
                           "as there are True values in mask")  # fmt: skip
    pos = (mask.reshape(-1).long().cumsum(0) - 1).clamp(min=0)
    flat_src = source.reshape(-1)
    if flat_src.numel() == 0:
        return input.clone()
    vals = flat_src.gather(0, pos).reshape(tuple(input.shape)).to(input.dtype)
    return _C.where(mask, vals, input)


def _flat_index(fn, input, index):
    n = input.numel()
    idx = _np(index).astype(np.int64)
    if idx.size and (idx.max() >= n or idx.min() < -n):
        bad = idx[(idx >= n) | (idx < -n)].reshape(-1)[0]
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return _from_np(np.where(idx < 0, idx + n, idx))


def take(input, index):
    """The elements of ``input``, viewed as 1-D, at ``index`` (negative counts from the
    end), in ``index``'s shape."""
    _check("take", input)
    _check("take", index, "index", 2)
    if index.dtype != _C.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype}")
    idx = _flat_index("take", input, index)
    return input.reshape(-1).index_select(0, idx.reshape(-1)).reshape(tuple(index.shape))


def _put(self, index, source, accumulate=False):
    """A copy of ``self`` with ``source`` written at the flat positions ``index`` (added
    there with ``accumulate=True``)."""
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
    flat = self.reshape(-1)
    out = flat.scatter_add(0, idx, src) if accumulate else flat.scatter(0, idx, src)
    return out.reshape(tuple(self.shape))


def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``values`` written (added, with ``accumulate=True``) at
    ``input[indices]``, where ``indices`` is a tuple of int64 or bool tensors indexing
    the leading dimensions, as ``input[indices] = values`` does."""
    _check("index_put", input)
    _check("index_put", values, "values", 3)
    if not isinstance(indices, (tuple, list)):
        raise TypeError(
            "index_put(): argument 'indices' (position 2) must be tuple of Tensors, not "
            f"{type(indices).__name__}"
        )
    idx = []
    for t in indices:
        if not isinstance(t, Tensor):
            raise TypeError(
                "index_put(): argument 'indices' (position 2) must be tuple of Tensors, "
                f"but found element of type {type(t).__name__}"
            )
        if t.dtype == _C.bool:
            idx.extend(t.nonzero().unbind(1) if t.dim() else [t.long()])
        elif t.dtype == _C.int64:
            idx.append(t)
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    k = len(idx)
    if k > input.dim():
        raise IndexError(f"too many indices for tensor of dimension {input.dim()} (got {k})")
    if k == 0:
        # `input[()] = values` overwrites everything.
        filled = values.to(input.dtype).expand(*input.shape)
        return input + filled if accumulate else filled.clone()
    lead = tuple(input.shape[:k])
    rest = tuple(input.shape[k:])
    arrs = np.broadcast_arrays(*[_np(t) for t in idx])
    for d, (a, n) in enumerate(zip(arrs, lead)):
        if a.size and (a.max() >= n or a.min() < -n):
            bad = a[(a >= n) | (a < -n)].reshape(-1)[0]
            raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {n}")
    lin = np.ravel_multi_index(tuple(np.where(a < 0, a + n, a) for a, n in zip(arrs, lead)), lead)
    lin_t = _from_np(lin.reshape(-1).astype(np.int64))
    vals = values.to(input.dtype).expand(*(lin.shape + rest)).reshape((lin.size,) + rest)
    flat = input.reshape((-1,) + rest)
    out = flat.index_add(0, lin_t, vals) if accumulate else flat.index_copy(0, lin_t, vals)
    return out.reshape(tuple(input.shape))


def take_along_dim(input, indices, dim=None):
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
    from . import broadcast_shapes

    return tuple(broadcast_shapes(tuple(a), tuple(b)))


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
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
    arr = _np(input).copy()
    fill = -np.inf if reduce == "amax" else np.inf
    if not include_self:
        arr[_np(touched)] = fill if input.is_floating_point() else (
            np.iinfo(np.int64).min if reduce == "amax" else np.iinfo(np.int64).max)  # fmt: skip
    ufunc = np.maximum if reduce == "amax" else np.minimum
    idx_np, src_np = _np(index), _np(src)
    coords = list(np.indices(idx_np.shape))
    coords[dim] = idx_np
    ufunc.at(arr, tuple(coords), src_np)
    res = _from_np(arr, input.dtype)
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


# ----- scans ---------------------------------------------------------------------------


def _shift(x, dim, k, fill):
    n = x.shape[dim]
    k = builtins.min(k, n)
    shape = list(x.shape)
    shape[dim] = k
    pad = _C.full(tuple(shape), fill, dtype=x.dtype)
    return _C.cat([pad, x.narrow(dim, 0, n - k)], dim)


def cumprod(input, dim, *, dtype=None):
    """The cumulative product along ``dim``. A log-depth scan of multiplications, so
    zeros are exact and every gradient comes from the product rule."""
    _check("cumprod", input)
    if dtype is not None:
        input = input.to(dtype)
    elif input.dtype == _C.bool:
        input = input.long()
    if input.dim() == 0:
        return input.clone()
    dim = _wrap_dim(dim, input.dim())
    out = input
    k = 1
    while k < input.shape[dim]:
        out = out * _shift(out, dim, k, 1)
        k *= 2
    return out if out is not input else input.clone()


_MinMax = collections.namedtuple("_MinMax", ["values", "indices"])


def _cum_ext(fn, input, dim, better):
    _check(fn, input)
    lid, b = _vmap_level(input)
    if lid:
        # The scan runs in NumPy, so under vmap it runs once on the physical
        # value with the batch dimension in front.
        if input.dim() == 0:
            size = input._value.shape[0]
            return _MinMax(input.clone(), b.wrap(_C.zeros(size, dtype=_C.int64), lid))
        res = _cum_ext(fn, input._value, _wrap_dim(dim, input.dim()) + 1, better)
        return _MinMax(b.wrap(res.values, lid), b.wrap(res.indices, lid))
    if input.dim() == 0:
        return _MinMax(input.clone(), _C.zeros((), dtype=_C.int64))
    dim = _wrap_dim(dim, input.dim())
    arr = np.moveaxis(_np(input), dim, -1)
    # The running extreme, then for each position the last index where the element
    # equals it (ties move the index forward, as PyTorch's scan does); NaN wins and
    # stays, so every NaN moves the index too.
    acc = better.accumulate(arr, axis=-1)
    hit = arr == acc
    if arr.dtype.kind == "f":
        hit |= np.isnan(arr)
    pos = np.arange(arr.shape[-1], dtype=np.int64)
    idx = (
        np.maximum.accumulate(np.where(hit, pos, 0), axis=-1)
        if arr.shape[-1]
        else np.zeros(arr.shape, dtype=np.int64)
    )
    indices = _from_np(np.moveaxis(idx, -1, dim))
    return _MinMax(input.gather(dim, indices), indices)


def cummax(input, dim):
    """The running maximum along ``dim`` and where it was found, as
    ``(values, indices)``; the gradient flows to the element each value came from."""
    return _cum_ext("cummax", input, dim, np.maximum)


def cummin(input, dim):
    """The running minimum along ``dim`` and where it was found, as
    ``(values, indices)``; the gradient flows to the element each value came from."""
    return _cum_ext("cummin", input, dim, np.minimum)


def logcumsumexp(input, dim):
    """``log(cumsum(exp(input)))`` along ``dim``, computed after subtracting the
    maximum so large values do not overflow."""
    _check("logcumsumexp", input)
    if not input.is_floating_point():
        raise RuntimeError(
            f"\"logcumsumexp_out_cpu\" not implemented for '{str(input.dtype).split('.')[-1].capitalize()}'"
        )
    if input.dim() == 0:
        return input.clone()
    dim = _wrap_dim(dim, input.dim())
    if input.shape[dim] == 0:
        return input.clone()
    m = input.detach().amax(dim, keepdim=True)
    m = _C.where(_C.isfinite(m), m, _C.zeros((), dtype=m.dtype))
    return (input - m).exp().cumsum(dim).log() + m


# ----- shape helpers -------------------------------------------------------------------


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim`` (``out[i] = input[i+1] - input[i]``),
    after joining ``prepend`` and ``append``; logical XOR for bool tensors."""
    _check("diff", input)
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = _wrap_dim(dim, input.dim())
    parts = [p for p in (prepend, input, append) if p is not None]
    if len(parts) > 1:
        fixed = []
        for p in parts:
            # A vmap BatchedTensor is a tensor here too.
            tensorlike = isinstance(p, Tensor) or hasattr(type(p), "__ferrograd_function__")
            if not tensorlike or p.dim() == 0:
                shape = list(input.shape)
                shape[dim] = 1
                # A 0-d tensor is expanded, not read out, so its gradient flows.
                p = (p.to(input.dtype).expand(*shape) if tensorlike
                     else _C.full(tuple(shape), p, dtype=input.dtype))  # fmt: skip
            fixed.append(p)
        input = _C.cat(fixed, dim)
    out = input
    for _ in range(n):
        length = out.shape[dim]
        if length == 0:
            break
        hi, lo = out.narrow(dim, 1, length - 1), out.narrow(dim, 0, length - 1)
        out = hi.logical_xor(lo) if out.dtype == _C.bool else hi - lo
    return out


def tile(input, dims):
    """``input`` repeated ``dims[i]`` times along each dimension; ``dims`` shorter than
    the number of dimensions is padded with leading ones."""
    _check("tile", input)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    dims = (1,) * (input.dim() - len(dims)) + dims
    return input.repeat(*dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (or slice along ``dim``) of ``input`` repeated ``repeats`` times
    in place. With a single int64 tensor, the indices ``i`` repeated ``input[i]`` times."""
    if repeats is None:
        _check("repeat_interleave", input, "repeats")
        if input.dim() != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if input.dtype != _C.int64:
            raise RuntimeError("repeats has to be Long tensor")
        counts = _np(input)
        if (counts < 0).any():
            raise RuntimeError("repeats can not be negative")
        _alloc_guard(8 * int(counts.sum()))
        return _from_np(np.repeat(np.arange(len(counts), dtype=np.int64), counts))
    _check("repeat_interleave", input)
    if dim is None:
        input = input.reshape(-1)
        dim = 0
    dim = _wrap_dim(dim, input.dim())
    if input.dim() == 0:
        input = input.reshape(1)
    n = input.shape[dim]
    if isinstance(repeats, Tensor):
        if repeats.dim() > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        reps = _np(repeats).reshape(-1).astype(np.int64)
        if reps.size == 1:
            reps = np.full(n, reps[0])
        elif reps.size != n:
            raise RuntimeError("repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {reps.size} and input.size({dim}) = {n}")  # fmt: skip
    else:
        reps = np.full(n, int(repeats))
    if (reps < 0).any():
        raise RuntimeError("repeats can not be negative")
    _alloc_guard(8 * int(reps.sum()) * builtins.max(input.numel() // builtins.max(n, 1), 1))
    idx = np.repeat(np.arange(n, dtype=np.int64), reps)
    if output_size is not None and output_size != idx.size:
        raise RuntimeError("allocated size does not match required size")
    return input.index_select(dim, _from_np(idx))


def rot90(input, k=1, dims=(0, 1)):
    """``input`` rotated by 90 degrees ``k`` times in the plane ``dims``, from the first
    axis towards the second."""
    _check("rot90", input)
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = _wrap_dim(dims[0], input.dim()), _wrap_dim(dims[1], input.dim())
    if d0 == d1:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
        )
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip(d0, d1)
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


def fliplr(input):
    """``input`` with its columns (dim 1) in reverse order."""
    _check("fliplr", input)
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip(1)


def flipud(input):
    """``input`` with its rows (dim 0) in reverse order."""
    _check("flipud", input)
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip(0)


def ravel(input):
    """``input`` flattened to 1-D (a view when possible)."""
    _check("ravel", input)
    return input.reshape(-1)


def moveaxis(input, source, destination):
    """Alias of ``movedim``."""
    _check("moveaxis", input)
    return input.movedim(source, destination)


def swapdims(input, dim0, dim1):
    """Alias of ``transpose``."""
    _check("swapdims", input)
    return input.transpose(dim0, dim1)


def argwhere(input):
    """The coordinates of the nonzero elements of ``input``, one row each."""
    _check("argwhere", input)
    return input.nonzero()


def _atleast(n, tensors):
    single = len(tensors) == 1 and not isinstance(tensors[0], (list, tuple))
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    out = []
    for t in tensors:
        _check(f"atleast_{n}d", t, "tensors")
        if t.dim() >= n:
            out.append(t)
        elif t.dim() == 0:
            out.append(t.reshape((1,) * n))
        elif n == 3:
            out.append(t.reshape(1, -1, 1) if t.dim() == 1 else t.unsqueeze(-1))
        else:
            out.append(t.unsqueeze(0))
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    """Each tensor with at least one dimension (0-d becomes shape ``(1,)``)."""
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    """Each tensor with at least two dimensions (leading ones added)."""
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    """Each tensor with at least three dimensions: ``(n,)`` becomes ``(1, n, 1)`` and
    ``(m, n)`` becomes ``(m, n, 1)``, as NumPy's."""
    return _atleast(3, tensors)


def _seq(fn, tensors):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")  # fmt: skip
    if not tensors:
        raise RuntimeError(f"{fn} expects a non-empty TensorList")
    return list(tensors)


def hstack(tensors):
    """Joins ``tensors`` column-wise: along dim 0 for 1-D tensors, else dim 1."""
    ts = _atleast(1, (_seq("hstack", tensors),))
    return _C.cat(list(ts), 0 if ts[0].dim() == 1 else 1)


def vstack(tensors):
    """Joins ``tensors`` row-wise (dim 0), 1-D tensors as rows."""
    return _C.cat(list(_atleast(2, (_seq("vstack", tensors),))), 0)


row_stack = vstack


def dstack(tensors):
    """Joins ``tensors`` depth-wise (dim 2), after ``atleast_3d``."""
    return _C.cat(list(_atleast(3, (_seq("dstack", tensors),))), 2)


def column_stack(tensors):
    """Joins ``tensors`` as columns: 0-D and 1-D tensors become columns, the rest are
    joined along dim 1."""
    ts = [t.reshape(-1, 1) if t.dim() <= 1 else t for t in _seq("column_stack", tensors)]
    return _C.cat(ts, 1)


# ----- reductions ----------------------------------------------------------------------


_AMinMax = collections.namedtuple("aminmax", ["min", "max"])


def aminmax(input, *, dim=None, keepdim=False):
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


def count_nonzero(input, dim=None):
    """The number of nonzero elements of ``input``, over all of them or over ``dim``."""
    _check("count_nonzero", input)
    nz = (input != 0).long()
    return nz.sum() if dim is None else nz.sum(dim)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum of ``input`` with NaN counted as zero."""
    _check("nansum", input)
    if input.is_floating_point():
        input = input.masked_fill(input.isnan(), 0)
    return input.sum(dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
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


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The standard deviation and the mean of ``input`` (see ``std``), as a pair."""
    return _stat_mean("std_mean", input, dim, unbiased, keepdim, correction)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The variance and the mean of ``input`` (see ``var``), as a pair."""
    return _stat_mean("var_mean", input, dim, unbiased, keepdim, correction)


_INTERP = ("linear", "lower", "higher", "midpoint", "nearest")


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
    qs = np.asarray([q] if scalar_q else _np(q), dtype=np.float64)
    if not scalar_q and q.dim() > 1:
        raise RuntimeError(f"{fn}() q must be a scalar or 1D tensor")
    if ((qs < 0) | (qs > 1)).any():
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
    arr = _np(rows)
    n = arr.shape[-1]
    order = np.argsort(arr, axis=-1, kind="stable")  # NaN sorts last
    nan_count = np.isnan(arr).sum(-1)
    valid = n - nan_count if ignore_nan else np.full(arr.shape[0], n)
    pos = qs[None, :] * (valid[:, None] - 1).clip(min=0)  # rows x Q
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
    ilo = _from_np(np.take_along_axis(order, lo, -1))
    ihi = _from_np(np.take_along_axis(order, hi, -1))
    w = _from_np(frac, input.dtype)
    vlo, vhi = rows.gather(-1, ilo), rows.gather(-1, ihi)
    val = vlo + w * (vhi - vlo)  # rows x Q
    bad = (valid == 0) if ignore_nan else (nan_count > 0)
    if bad.any():
        val = val.masked_fill(_from_np(bad[:, None]), math.nan)
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
    val = val.transpose(0, 1).reshape((len(qs),) + out_shape)
    return val[0] if scalar_q else val


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


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-th quantiles of ``input`` (over all elements or along ``dim``), between
    neighbouring sorted values as ``interpolation`` says; NaN when a slice has NaN.
    With a 1-D ``q`` the quantiles come first in the result."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``quantile`` of the non-NaN elements (NaN only when a slice is all NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


# ----- counting and sets (NumPy, no gradients) -----------------------------------------


def bincount(input, weights=None, minlength=0):
    """How many times each non-negative integer occurs in the 1-D int64 ``input`` (or the
    sum of ``weights`` at its occurrences), at least ``minlength`` bins."""
    _check("bincount", input)
    if input.dim() != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if input.dtype != _C.int64:
        raise RuntimeError(
            f"\"bincount_cpu\" not implemented for '{str(input.dtype).split('.')[-1].capitalize()}'"
        )
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


def histc(input, bins=100, min=0, max=0):  # noqa: A002
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
    arr = _np(input).reshape(-1).astype(np.float64)
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if lo == hi and arr.size:
        lo, hi = float(arr.min()), float(arr.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    counts, _ = np.histogram(arr[(arr >= lo) & (arr <= hi)], bins=bins, range=(lo, hi))
    return _from_np(counts.astype(np.float64), input.dtype)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of ``elements`` occurs in ``test_elements`` (either may be a
    number), as a bool tensor of ``elements``' shape."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments: expected at "
                        "least one Tensor")  # fmt: skip
    a = _np(elements) if isinstance(elements, Tensor) else np.asarray(elements)
    b = _np(test_elements) if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    return _from_np(np.isin(a, b, assume_unique=assume_unique, invert=invert))


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``input`` with each run of equal consecutive elements (or slices along ``dim``)
    collapsed to one; optionally where each element went and each run's length."""
    _check("unique_consecutive", input)
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


def unravel_index(indices, shape):
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
    total = int(np.prod(shape)) if shape else 1
    if arr.size and (arr.min() < -total or arr.max() >= total):
        raise RuntimeError(f"'indices' must be in range [-{total}, {total})"
                           if total else "'indices' must be empty for a shape with no elements")  # fmt: skip
    arr = np.where(arr < 0, arr + total, arr)
    coords = np.unravel_index(arr, shape) if shape else ()
    return tuple(_from_np(np.asarray(c, dtype=np.int64)) for c in coords)


# ----- products ------------------------------------------------------------------------


def tensordot(a, b, dims=2, out=None):
    """Sums the products of ``a``'s last ``dims`` dimensions with ``b``'s first ``dims``
    (or the listed pairs of dimensions ``dims = (dims_a, dims_b)``)."""
    _check("tensordot", a, "a")
    _check("tensordot", b, "b", 2)
    if isinstance(dims, Tensor):
        dims = dims.tolist() if dims.dim() else int(dims.item())
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > builtins.min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da = list(range(a.dim() - dims, a.dim()))
        db = list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
        da = [_wrap_dim(d, a.dim()) for d in da]
        db = [_wrap_dim(d, b.dim()) for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[x]} in dim "
                f"{x} and second has size {b.shape[y]} in dim {y}"
            )
    fa = [d for d in range(a.dim()) if d not in da]
    fb = [d for d in range(b.dim()) if d not in db]
    k = 1
    for d in da:
        k *= a.shape[d]
    ma = a.permute(*fa, *da).reshape(-1, k)
    mb = b.permute(*db, *fb).reshape(k, -1)
    out_shape = tuple(a.shape[d] for d in fa) + tuple(b.shape[d] for d in fb)
    return ma.matmul(mb).reshape(out_shape)


def inner(input, other):
    """The inner product over the last dimension (a product when either is 0-D)."""
    _check("inner", input)
    _check("inner", other, "other", 2)
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            "inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    return tensordot(input, other, ([-1], [-1]))


def vdot(input, other):
    """The dot product of two 1-D tensors (real: no conjugation needed)."""
    _check("vdot", input)
    _check("vdot", other, "other", 2)
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors"
        )
    return input.dot(other)


def block_diag(*tensors):
    """A block-diagonal matrix of the given tensors (0-D and 1-D become single rows)."""
    if not tensors:
        return _C.zeros(1, 0)
    mats = []
    for i, t in enumerate(tensors):
        _check("block_diag", t, "tensors", i + 1)
        if t.dim() > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                f"has {t.dim()} dimensions"
            )
        mats.append(t.reshape(1, -1) if t.dim() < 2 else t)
    dtype = mats[0].dtype
    for m in mats[1:]:
        dtype = (_C.zeros((), dtype=dtype) + _C.zeros((), dtype=m.dtype)).dtype
    total = builtins.sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        m = m.to(dtype)
        right = total - left - m.shape[1]
        parts = []
        if left:
            parts.append(_C.zeros(m.shape[0], left, dtype=dtype))
        parts.append(m)
        if right:
            parts.append(_C.zeros(m.shape[0], right, dtype=dtype))
        rows.append(_C.cat(parts, 1) if len(parts) > 1 else m)
        left += m.shape[1]
    return _C.cat(rows, 0)


# ----- integration ---------------------------------------------------------------------


def _trap_parts(fn, y, x, dx, dim):
    _check(fn, y, "y")
    dim = _wrap_dim(dim, y.dim())
    n = y.shape[dim]
    if n == 0:
        return None, dim
    avg = (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)) / 2
    if x is None:
        return avg * (1.0 if dx is None else dx), dim
    if isinstance(x, Tensor):
        if x.dim() == 1:
            if x.shape[0] != n:
                raise RuntimeError(f"{fn}: There must be one `x` value for each sample point")
            shape = [1] * y.dim()
            shape[dim] = n - 1
            spacing = (x[1:] - x[:-1]).reshape(tuple(shape))
        else:
            spacing = diff(x, dim=dim)
        return avg * spacing, dim
    return avg * x, dim


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule integral of ``y`` along ``dim``, at sample points ``x`` (a
    tensor) or with spacing ``x``/``dx`` (a number, 1 by default)."""
    parts, dim = _trap_parts("trapezoid", y, x, dx, dim)
    if parts is None:
        return y.sum(dim)
    return parts.sum(dim)


def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid rule integral of ``y`` along ``dim`` (one element shorter)."""
    parts, dim = _trap_parts("cumulative_trapezoid", y, x, dx, dim)
    if parts is None:
        return y.clone()
    return parts.cumsum(dim)


# ----- creation ------------------------------------------------------------------------


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """``steps`` values ``base ** p`` for ``p`` evenly spaced from ``start`` to ``end``."""
    p = _C.linspace(start, end, steps, dtype=_C.float64)
    out = _C.full((), float(base), dtype=_C.float64).pow(p)
    out = out.to(dtype if dtype is not None else _C.get_default_dtype())
    if requires_grad:
        out.requires_grad_(True)
    return out


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """A 0-D tensor holding the number ``s``, of the default float dtype unless ``dtype``
    is given."""
    if isinstance(s, Tensor):
        s = s.item()
    out = _C.tensor(float(s) if not isinstance(s, builtins.bool) or dtype != _C.bool else s,
                    dtype=dtype if dtype is not None else _C.get_default_dtype())  # fmt: skip
    if requires_grad:
        out.requires_grad_(True)
    return out


def as_tensor(data, dtype=None, device=None):
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


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
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


def _window(fn, window_length, periodic, dtype, make):
    if not isinstance(window_length, int) or window_length < 0:
        raise RuntimeError(f"{fn} requires non-negative window_length, got window_length="
                           f"{window_length}")  # fmt: skip
    dtype = dtype if dtype is not None else _C.get_default_dtype()
    if dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f"{fn} expects floating point dtypes, got: {dtype}")
    if window_length == 0:
        return _C.zeros(0, dtype=dtype)
    if window_length == 1:
        return _C.ones(1, dtype=dtype)
    n = window_length + 1 if periodic else window_length
    _alloc_guard(8 * n)
    return _from_np(make(n)[:window_length], dtype)


def hann_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1))``, periodic (for spectral
    analysis: ``N = window_length + 1``, last value dropped) by default."""
    return _window("hann_window", window_length, periodic, dtype, np.hanning)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   device=None, requires_grad=False):  # fmt: skip
    """The Hamming window ``alpha - beta cos(2 pi n / (N - 1))`` (periodic by default)."""
    return _window("hamming_window", window_length, periodic, dtype,
                   lambda n: alpha - beta * np.cos(2 * np.pi * np.arange(n) / (n - 1)))  # fmt: skip


def blackman_window(window_length, periodic=True, *, dtype=None, device=None,
                    requires_grad=False):  # fmt: skip
    """The Blackman window (periodic by default)."""
    return _window("blackman_window", window_length, periodic, dtype, np.blackman)


def bartlett_window(window_length, periodic=True, *, dtype=None, device=None,
                    requires_grad=False):  # fmt: skip
    """The Bartlett (triangular) window ``1 - |2n / (N - 1) - 1|`` (periodic by default)."""
    return _window("bartlett_window", window_length, periodic, dtype, np.bartlett)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device=None,
                  requires_grad=False):  # fmt: skip
    """The Kaiser window with shape parameter ``beta`` (periodic by default)."""
    return _window("kaiser_window", window_length, periodic, dtype,
                   lambda n: np.kaiser(n, beta))  # fmt: skip


# ----- global settings -----------------------------------------------------------------

_DETERMINISTIC = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Records the flag, as PyTorch's: every ferrograd kernel is already deterministic
    (reductions split work the same way on every run), so nothing else changes."""
    if not isinstance(mode, builtins.bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must "
                        f"be bool, not {type(mode).__name__}")  # fmt: skip
    _DETERMINISTIC["mode"] = mode
    _DETERMINISTIC["warn_only"] = builtins.bool(warn_only)


def are_deterministic_algorithms_enabled():
    """The flag last set by ``use_deterministic_algorithms`` (False by default)."""
    return _DETERMINISTIC["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    """The ``warn_only`` flag last set by ``use_deterministic_algorithms``."""
    return _DETERMINISTIC["warn_only"]


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):  # fmt: skip
    """Sets how tensors print, as ``torch.set_printoptions``: ``precision`` digits,
    summarizing past ``threshold`` elements with ``edgeitems`` at each end, lines of
    ``linewidth``, ``sci_mode`` (None: automatic), ``profile`` (``"default"``,
    ``"short"``, ``"full"``) applied first."""
    from . import _tensor_str

    # Checked before anything is set, so a bad value cannot break every later repr.
    for name, v in (("precision", precision), ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if v is not None and (not isinstance(v, int) or isinstance(v, builtins.bool) or v < 0):
            raise TypeError(f"set_printoptions(): '{name}' must be a non-negative int, got {v!r}")
    if threshold is not None and (
        not isinstance(threshold, (int, float)) or isinstance(threshold, builtins.bool)
    ):
        raise TypeError(f"set_printoptions(): 'threshold' must be a number, got {threshold!r}")
    if sci_mode is not None and not isinstance(sci_mode, builtins.bool):
        raise TypeError(f"set_printoptions(): 'sci_mode' must be a bool or None, got {sci_mode!r}")
    if profile is not None and not isinstance(profile, str):
        raise TypeError(f"set_printoptions(): 'profile' must be a str, got {profile!r}")
    _tensor_str.set_printoptions(precision, threshold, edgeitems, linewidth, profile, sci_mode)


# ----- in-place view ops ---------------------------------------------------------------


def _inplace_view(name, view):
    def method(self, *args, **kwargs):
        if self.requires_grad and _C.is_grad_enabled():
            # The view's history would have to replace self's; only plain tensors are
            # re-shaped in place.
            raise RuntimeError(
                f"{name}(): ferrograd changes the shape of a tensor in place only when it "
                f"does not require grad; use {name[:-1]}() instead"
            )
        out = view(self, *args, **kwargs)
        self.data = out
        return self

    method.__name__ = name
    method.__doc__ = (
        f"In-place form of ``{name[:-1]}``: ``self`` takes the new shape (for tensors "
        "that do not require grad, or under ``no_grad()``)."
    )
    return method


# ----- installation --------------------------------------------------------------------


def _typed(fn):
    """``fn`` with an argument of the wrong kind reported as PyTorch reports
    it, a TypeError, rather than the AttributeError a composed function
    meets when it uses a list or a number as a tensor."""
    if getattr(fn, "_typed", False):
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AttributeError as e:
            if "object has no attribute" not in str(e) or "'Tensor' object" in str(e):
                raise
            raise TypeError(f"{fn.__name__}(): an argument has the wrong type ({e})") from None

    wrapper._typed = True
    return wrapper


def _install():
    g = globals()
    for name in __all__:
        if isinstance(g.get(name), types.FunctionType) and g[name].__module__ == __name__:
            g[name] = _typed(g[name])
    methods = {
        "new_zeros": _new_zeros,
        "new_ones": _new_ones,
        "new_full": _new_full,
        "new_empty": _new_empty,
        "new_tensor": _new_tensor,
        "int": _missing_dtype("int", "int32"),
        "short": _missing_dtype("short", "int16"),
        "byte": _missing_dtype("byte", "uint8"),
        "char": _missing_dtype("char", "int8"),
        "half": _missing_dtype("half", "float16"),
        "element_size": _element_size,
        "ndimension": _ndimension,
        "share_memory_": _share_memory_,
        "is_signed": _is_signed,
        "is_complex": _is_complex,
        "is_nonzero": is_nonzero,
        "is_same_size": is_same_size,
        "index_add": index_add,
        "index_copy": index_copy,
        "index_fill": index_fill,
        "masked_scatter": masked_scatter,
        "scatter_reduce": scatter_reduce,
        "take": take,
        "take_along_dim": take_along_dim,
        "put": _put,
        "index_put": index_put,
        "cumprod": cumprod,
        "cummax": cummax,
        "cummin": cummin,
        "logcumsumexp": logcumsumexp,
        "diff": diff,
        "tile": tile,
        "repeat_interleave": repeat_interleave,
        "rot90": rot90,
        "fliplr": fliplr,
        "flipud": flipud,
        "ravel": ravel,
        "moveaxis": moveaxis,
        "swapdims": swapdims,
        "argwhere": argwhere,
        "aminmax": aminmax,
        "count_nonzero": count_nonzero,
        "nansum": nansum,
        "nanmean": nanmean,
        "quantile": quantile,
        "nanquantile": nanquantile,
        "bincount": bincount,
        "histc": histc,
        "unique_consecutive": unique_consecutive,
        "inner": inner,
        "vdot": vdot,
    }
    for name, fn in methods.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, _typed(fn))
    props = {
        "nbytes": lambda self: self.numel() * self.dtype.itemsize,
        "itemsize": lambda self: self.dtype.itemsize,
        "is_cpu": lambda self: True,
    }
    docs = {
        "nbytes": "The number of bytes the elements take (numel * element_size()).",
        "itemsize": "The size in bytes of one element (element_size()).",
        "is_cpu": "Always True: ferrograd tensors live on the CPU.",
    }
    for name, fget in props.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, property(fget, doc=docs[name]))
    inplace = {
        "round_": lambda self, decimals=0: self.round(decimals=decimals),
        "ge_": lambda self, other: self.ge(other),
        "gt_": lambda self, other: self.gt(other),
        "le_": lambda self, other: self.le(other),
        "lt_": lambda self, other: self.lt(other),
        "ne_": lambda self, other: self.ne(other),
        "eq_": lambda self, other: self.eq(other),
        "logical_and_": lambda self, other: self.logical_and(other),
        "logical_or_": lambda self, other: self.logical_or(other),
        "logical_xor_": lambda self, other: self.logical_xor(other),
        "scatter_": _scatter_,
        "scatter_add_": lambda self, dim, index, src: self.scatter_add(dim, index, src),
        "scatter_reduce_": scatter_reduce,
        "index_add_": index_add,
        "index_copy_": index_copy,
        "index_fill_": index_fill,
        "masked_scatter_": masked_scatter,
        "put_": _put,
        "index_put_": index_put,
        "cumprod_": lambda self, dim, *, dtype=None: cumprod(self, dim, dtype=dtype),
        "cumsum_": lambda self, dim, *, dtype=None: self.cumsum(dim, dtype=dtype),
    }
    for name, fn in inplace.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, _typed(_inplace(name, fn)))
    if not hasattr(Tensor, "clip_") and hasattr(Tensor, "clamp_"):
        Tensor.clip_ = Tensor.clamp_
    # In-place forms of the binary math ops, and the `%` / `//` operators
    # (PyTorch's `x % y` is remainder, `x // y` floor_divide).
    for base in ("remainder", "fmod", "floor_divide", "atan2", "hypot", "copysign",
                 "logaddexp", "xlogy", "clamp_min", "clamp_max", "float_power"):  # fmt: skip
        fn = getattr(_C, base, None)
        if fn is not None and not hasattr(Tensor, base + "_"):
            setattr(Tensor, base + "_", _inplace(base + "_", lambda self, other, fn=fn: fn(self, other)))
    operators = {
        "__mod__": lambda self, other: _C.remainder(self, other),
        "__rmod__": lambda self, other: _C.remainder(other, self),
        "__floordiv__": lambda self, other: _C.floor_divide(self, other),
        "__rfloordiv__": lambda self, other: _C.floor_divide(other, self),
        "__imod__": lambda self, other: self.remainder_(other),
        "__ifloordiv__": lambda self, other: self.floor_divide_(other),
    }
    for name, fn in operators.items():
        if name not in Tensor.__dict__:
            fn.__name__ = name
            setattr(Tensor, name, fn)
    views = {
        "unsqueeze_": lambda self, dim: self.unsqueeze(dim),
        "squeeze_": lambda self, dim=None: self.squeeze(dim),
        "t_": lambda self: self.t(),
        "transpose_": lambda self, dim0, dim1: self.transpose(dim0, dim1),
        "swapaxes_": lambda self, dim0, dim1: self.transpose(dim0, dim1),
        "swapdims_": lambda self, dim0, dim1: self.transpose(dim0, dim1),
    }
    for name, fn in views.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, _typed(_inplace_view(name, fn)))


_install()
