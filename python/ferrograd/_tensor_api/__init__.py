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

The functions live in submodules by topic: ``_constructors`` (``new_*`` and
dtype helpers), ``_indexing``, ``_shapes`` (scans and shape helpers),
``_reductions`` (with counting and sets), ``_products`` (with integration),
``_creation`` (with windows) and ``_settings``, sharing ``_common``. This
package holds the methods made for ``Tensor`` (in-place forms) and the installation: it re-exports every name the single
``_tensor_api`` module had, under that module's name, and attaches the
methods to ``Tensor``.
"""

from __future__ import annotations

import functools
import types

from .. import _C, _inplace_docs
from .._C import Tensor
from .._inplace import apply_inplace
from .._methods import attach
from . import (
    _common,
    _constructors,
    _creation,
    _indexing,
    _products,
    _reductions,
    _settings,
    _shapes,
)
from ._common import (  # noqa: F401
    _alloc_guard,
    _check,
    _from_np,
    _np,
    _size_args,
    _vmap_level,
    _wrap_dim,
)
from ._constructors import (  # noqa: F401
    _element_size,
    _is_complex,
    _is_signed,
    _ndimension,
    _new,
    _new_empty,
    _new_full,
    _new_ones,
    _new_tensor,
    _new_zeros,
    _share_memory_,
    is_nonzero,
    is_same_size,
)
from ._creation import (  # noqa: F401
    _window,
    as_tensor,
    asarray,
    bartlett_window,
    blackman_window,
    hamming_window,
    hann_window,
    kaiser_window,
    logspace,
    scalar_tensor,
)
from ._indexing import (  # noqa: F401
    _REDUCES,
    _broadcast,
    _flat_index,
    _index_along,
    _index_put_,
    _put,
    _scatter_,
    index_add,
    index_add_,
    index_copy,
    index_copy_,
    index_fill,
    index_fill_,
    index_put,
    masked_scatter,
    masked_scatter_,
    put_,
    scatter_,
    scatter_add_,
    scatter_reduce,
    scatter_reduce_,
    take,
    take_along_dim,
)
from ._products import (  # noqa: F401
    _trap_parts,
    block_diag,
    cumulative_trapezoid,
    inner,
    tensordot,
    trapezoid,
    trapz,
    vdot,
)
from ._reductions import (  # noqa: F401
    _INTERP,
    _AMinMax,
    _quantile,
    _quantile_batched,
    _stat_mean,
    aminmax,
    bincount,
    count_nonzero,
    histc,
    isin,
    nanmean,
    nanquantile,
    nansum,
    quantile,
    std_mean,
    unique_consecutive,
    unravel_index,
    var_mean,
)
from ._settings import (  # noqa: F401
    _DETERMINISTIC,
    are_deterministic_algorithms_enabled,
    is_deterministic_algorithms_warn_only_enabled,
    set_printoptions,
    use_deterministic_algorithms,
)
from ._shapes import (  # noqa: F401
    _atleast,
    _cum_ext,
    _MinMax,
    _seq,
    _shift,
    argwhere,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    column_stack,
    cummax,
    cummin,
    cumprod,
    diff,
    dstack,
    fliplr,
    flipud,
    hstack,
    logcumsumexp,
    moveaxis,
    ravel,
    repeat_interleave,
    rot90,
    row_stack,
    swapdims,
    tile,
    vstack,
)

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


# ----- in-place forms ------------------------------------------------------------------


def _inplace(name, compute, direct=False):
    # `direct`: `compute` is one elementwise op of self, mapped in self's memory
    # when nothing records it, unless another tensor takes part; "operands": one
    # op of self and other tensors, which the core then checks.
    def method(self, *args, **kwargs):
        d = direct == "operands" or direct and not any(
            isinstance(a, Tensor) for a in (*args, *kwargs.values()))
        return apply_inplace(self, lambda: compute(self, *args, **kwargs), name, direct=d)

    method.__name__ = name
    return _inplace_docs.document(method, name, compute, _base_doc(name))


def _base_doc(name):
    base = getattr(Tensor, name[:-1], None)
    return getattr(base, "__doc__", None)


def _binary(fn, base):
    # The second argument under PyTorch's name for it, which help() shows.
    if base == "clamp_min":
        return lambda self, min: fn(self, min)
    if base == "clamp_max":
        return lambda self, max: fn(self, max)
    if base == "float_power":
        return lambda self, exponent: fn(self, exponent)
    return lambda self, other: fn(self, other)


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
    return _inplace_docs.document(method, name, view, _base_doc(name), view=True)


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


def _missing(table):
    return [name for name in table if not hasattr(Tensor, name)]


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
    # Only the missing ones are built: a wrapper is not made for a name Rust has.
    attach({n: _typed(methods[n]) for n in _missing(methods)}, __name__)
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
    attach({n: property(props[n], doc=docs[n]) for n in _missing(props)}, __name__)
    inplace = {
        "logical_and_": lambda self, other: self.logical_and(other),
        "logical_or_": lambda self, other: self.logical_or(other),
        "logical_xor_": lambda self, other: self.logical_xor(other),
        "cumprod_": lambda self, dim, *, dtype=None: cumprod(self, dim, dtype=dtype),
        "cumsum_": lambda self, dim, *, dtype=None: self.cumsum(dim, dtype=dtype),
    }
    # One elementwise op of self alone: mapped in self's memory when nothing records.
    direct = {
        "round_": lambda self, decimals=0: self.round(decimals=decimals),
        "ge_": lambda self, other: self.ge(other),
        "gt_": lambda self, other: self.gt(other),
        "le_": lambda self, other: self.le(other),
        "lt_": lambda self, other: self.lt(other),
        "ne_": lambda self, other: self.ne(other),
        "eq_": lambda self, other: self.eq(other),
    }
    attach({n: _typed(_inplace(n, inplace[n])) for n in _missing(inplace)}, __name__)
    attach({n: _typed(_inplace(n, direct[n], direct=True)) for n in _missing(direct)}, __name__)
    # The index writes touch only the picked elements, in self's memory (no
    # out-of-place copy); each falls back to the written-in copy under vmap.
    native = {
        "index_put_": (_index_put_, index_put),
        "scatter_": (scatter_, _scatter_),
        "scatter_add_": (scatter_add_, scatter_add_),
        "scatter_reduce_": (scatter_reduce_, scatter_reduce),
        "index_add_": (index_add_, index_add),
        "index_copy_": (index_copy_, index_copy),
        "index_fill_": (index_fill_, index_fill),
        "masked_scatter_": (masked_scatter_, masked_scatter),
        "put_": (put_, _put),
    }
    attach({n: _typed(_inplace_docs.document(f, n, base, _base_doc(n)))
            for n, (f, base) in native.items() if n in _missing(native)}, __name__)
    if hasattr(Tensor, "clamp_"):
        attach({"clip_": Tensor.clamp_}, __name__)
    # In-place forms of the binary math ops, and the `%` / `//` operators
    # (PyTorch's `x % y` is remainder, `x // y` floor_divide).
    for base in ("remainder", "fmod", "floor_divide", "atan2", "hypot", "copysign",
                 "logaddexp", "xlogy", "clamp_min", "clamp_max", "float_power"):  # fmt: skip
        fn = getattr(_C, base, None)
        if fn is not None and not hasattr(Tensor, base + "_"):
            attach({base + "_": _inplace(base + "_", _binary(fn, base), direct="operands")},
                   __name__)
    operators = {
        "__mod__": lambda self, other: _C.remainder(self, other),
        "__rmod__": lambda self, other: _C.remainder(other, self),
        "__floordiv__": lambda self, other: _C.floor_divide(self, other),
        "__rfloordiv__": lambda self, other: _C.floor_divide(other, self),
        "__imod__": lambda self, other: self.remainder_(other),
        "__ifloordiv__": lambda self, other: self.floor_divide_(other),
    }
    for name, fn in operators.items():
        fn.__name__ = name
    attach(operators, __name__)
    views = {
        "unsqueeze_": lambda self, dim: self.unsqueeze(dim),
        "squeeze_": lambda self, dim=None: self.squeeze(dim),
        "t_": lambda self: self.t(),
        "transpose_": lambda self, dim0, dim1: self.transpose(dim0, dim1),
        "swapaxes_": lambda self, dim0, dim1: self.transpose(dim0, dim1),
        "swapdims_": lambda self, dim0, dim1: self.transpose(dim0, dim1),
    }
    attach({n: _typed(_inplace_view(n, views[n])) for n in _missing(views)}, __name__)


# ----- one module ----------------------------------------------------------------------

_SUBMODULES = (
    _common,
    _constructors,
    _indexing,
    _shapes,
    _reductions,
    _products,
    _creation,
    _settings,
)


def _rehome():
    """The functions and classes above were one module's: they report this package as
    their module (``_install`` wraps the public ones it finds by that, and pickle finds
    them here by it)."""
    for mod in _SUBMODULES:
        for obj in vars(mod).values():
            if isinstance(obj, (types.FunctionType, type)) and obj.__module__ == mod.__name__:
                obj.__module__ = __name__


def _share_installed():
    """The submodules call one another's public functions by name: they get the
    wrapped ones ``_install`` left here, as the one module's globals held."""
    g = globals()
    for mod in _SUBMODULES:
        d = vars(mod)
        for name in __all__:
            if name in d:
                d[name] = g[name]


_rehome()
_install()
_share_installed()
