"""``BatchedTensor``'s methods, operators and properties, each through the
batching rule of its category (``_rules.py``); shape ops are written here
against the physical value directly."""

from __future__ import annotations

import operator
import types

from .. import _C, _registry
from .._registry import schema as _schema
from ._batched import (
    REQUIRES_GRAD_ERROR,
    BatchedTensor,
    check_random,
    inplace_error,
    max_level,
    norm_dim,
    pad_to,
    unwrap_at,
)
from ._rules import (
    batched_matmul,
    dim_op,
    elementwise,
    index_op,
    inplace_elementwise,
    max_min,
)

__all__: list[str] = []


def _method_call(name):
    def call(self, *args, **kwargs):
        return getattr(self, name)(*args, **kwargs)

    call.__name__ = name
    return call


def _attach(name, rule, call=None):
    call = call or _method_call(name)

    def method(self, *args, **kwargs):
        return rule(call, (self, *args), kwargs)

    method.__name__ = name
    method.__doc__ = f"``Tensor.{name}`` on the logical value (batching rule: {rule.__name__})."
    setattr(BatchedTensor, name, method)


# `contiguous` copies the logical value whatever its layout: elementwise under vmap.
_attach("contiguous", elementwise)

# Every elementwise op of the registry: its methods (aliases included) and
# in-place forms, by its declaration.
for _op in _registry.ops():
    if _op.batching != _schema.EW and _op.batching_rule != "elementwise":
        continue
    for _n, _surf in _op.alias_surfaces():
        if _schema.METHOD in _surf and not hasattr(BatchedTensor, _n):
            _attach(_n, elementwise)
        if _schema.INPLACE in _surf and not hasattr(BatchedTensor, _n + "_"):
            _attach(_n + "_", inplace_elementwise(_n + "_"))



def unbatched_factory(call, args, kwargs):
    """``x.new_zeros(size)`` and the other ``new_*`` methods: ``x`` lends only its
    dtype and device, so the result is one tensor shared by every sample."""
    lid = max_level(args, kwargs)
    return call(unwrap_at(args[0], lid), *args[1:], **kwargs)


# Ops declared with a named rule (``Op.batching_rule``) that serves their methods as
# it serves their functions.
_NAMED_RULES = {"elementwise": elementwise, "_like": unbatched_factory}
for _op in _registry.ops():
    _rule = _NAMED_RULES.get(_op.batching_rule) if _op.batching == _schema.CUSTOM else None
    if _rule is None:
        continue
    for _n, _surf in _op.alias_surfaces():
        if _schema.METHOD in _surf and not hasattr(BatchedTensor, _n):
            _attach(_n, _rule)

_OPERATORS = {
    "__add__": operator.add, "__sub__": operator.sub, "__mul__": operator.mul,
    "__truediv__": operator.truediv, "__pow__": operator.pow, "__floordiv__": operator.floordiv,
    "__mod__": operator.mod, "__lt__": operator.lt, "__le__": operator.le,
    "__gt__": operator.gt, "__ge__": operator.ge, "__eq__": operator.eq, "__ne__": operator.ne,
    "__and__": operator.and_, "__or__": operator.or_, "__xor__": operator.xor,
}  # fmt: skip
for _n, _op in _OPERATORS.items():
    _attach(_n, elementwise, _op)
    _r = "__r" + _n[2:]
    if _n not in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        _attach(_r, elementwise, (lambda op: lambda a, b: op(b, a))(_op))
for _n, _op in {"__neg__": operator.neg, "__abs__": operator.abs, "__invert__": operator.invert,
                "__pos__": operator.pos}.items():  # fmt: skip
    _attach(_n, elementwise, _op)
for _n, _m in {"__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_",
               "__itruediv__": "div_"}.items():  # fmt: skip
    _attach(_n, inplace_elementwise(_m), _method_call(_m))

# Reductions (dim=None reduces every logical dimension) and dimension-taking ops.
_DIM_OPS = {
    "sum": dim_op(1, "dim", "all"),
    "mean": dim_op(1, "dim", "all"),
    "prod": dim_op(1, "dim", "all"),
    "amax": dim_op(1, "dim", "all"),
    "amin": dim_op(1, "dim", "all"),
    "argmax": dim_op(1, "dim", "all"),
    "argmin": dim_op(1, "dim", "all"),
    "var": dim_op(1, "dim", "all"),
    "std": dim_op(1, "dim", "all"),
    "median": dim_op(1, "dim", "all"),
    "norm": dim_op(2, "dim", "all"),
    "logsumexp": dim_op(1, "dim"),
    "softmax": dim_op(1, "dim"),
    "log_softmax": dim_op(1, "dim"),
    "cumsum": dim_op(1, "dim"),
    "narrow": dim_op(1, "dim"),
    "select": dim_op(1, "dim"),
    "unflatten": dim_op(1, "dim"),
    "flip": dim_op(1, "dims"),
    "split": dim_op(2, "dim", 0),
    "chunk": dim_op(2, "dim", 0),
    "unbind": dim_op(1, "dim", 0),
    "sort": dim_op(1, "dim", -1),
    "argsort": dim_op(1, "dim", -1),
    "topk": dim_op(2, "dim", -1),
    "kthvalue": dim_op(2, "dim", -1),
    "mode": dim_op(1, "dim", -1),
    "diagonal": None,
    "max": max_min("max"),
    "min": max_min("min"),
}
for _n, _rule in _DIM_OPS.items():
    if _rule is not None:
        _attach(_n, _rule)

_attach("gather", index_op(1, 2, "gather"))
_attach("index_select", index_op(1, 2, "index_select"))
_attach("scatter", index_op(1, 2, "scatter"))
_attach("scatter_add", index_op(1, 2, "scatter_add"))


def _matmul(call, args, kwargs):
    a, b = args
    return batched_matmul(a, b, max_level(args))


_matmul.__name__ = "matmul"
_attach("matmul", _matmul)
_attach("__matmul__", _matmul)
BatchedTensor.__rmatmul__ = lambda self, other: batched_matmul(other, self, self._level)


def _mm(self, other):
    """Matrix product of 2-D logical tensors."""
    return _C.mm(self, other)


BatchedTensor.mm = _mm
BatchedTensor.mv = lambda self, vec: _C.mv(self, vec)
BatchedTensor.dot = lambda self, other: _C.dot(self, other)
BatchedTensor.bmm = lambda self, other: _C.bmm(self, other)
BatchedTensor.outer = lambda self, other: _C.outer(self, other)


# ----- shape and view ops on the physical value --------------------------------------------


def _sizes(args):
    if (
        len(args) == 1
        and isinstance(args[0], (tuple, list))
        or (len(args) == 1 and hasattr(args[0], "__len__") and not isinstance(args[0], int))
    ):
        return tuple(args[0])
    return tuple(args)


def _view(self, *shape):
    """A view of the logical value with ``shape``."""
    v = self._value
    try:
        return BatchedTensor(v.view(v.shape[0], *_sizes(shape)), self._level)
    except RuntimeError:
        # The physical value may be non-contiguous where the per-sample one is not.
        return BatchedTensor(v.reshape(v.shape[0], *_sizes(shape)), self._level)


def _reshape(self, *shape):
    """The logical value with ``shape``."""
    v = self._value
    return BatchedTensor(v.reshape(v.shape[0], *_sizes(shape)), self._level)


def _flatten(self, start_dim=0, end_dim=-1):
    """The logical dimensions ``start_dim..end_dim`` flattened into one."""
    v, nd = self._value, self.dim()
    if nd == 0:
        return BatchedTensor(v.reshape(v.shape[0], 1), self._level)
    return BatchedTensor(v.flatten(norm_dim(start_dim, nd), norm_dim(end_dim, nd)), self._level)


def _permute(self, *dims):
    """The logical dimensions reordered as ``dims``."""
    nd = self.dim()
    return BatchedTensor(
        self._value.permute(0, *[norm_dim(d, nd) for d in _sizes(dims)]), self._level
    )


def _transpose(self, dim0, dim1):
    """Logical dimensions ``dim0`` and ``dim1`` swapped."""
    nd = self.dim()
    return BatchedTensor(self._value.transpose(norm_dim(dim0, nd), norm_dim(dim1, nd)), self._level)


def _t(self):
    """The transpose of a logical matrix (a vector is returned as is)."""
    return self if self.dim() < 2 else _transpose(self, 0, 1)


def _unsqueeze(self, dim):
    """A size-1 logical dimension inserted at ``dim``."""
    return BatchedTensor(self._value.unsqueeze(norm_dim(dim, self.dim() + 1)), self._level)


def _squeeze(self, dim=None):
    """Size-1 logical dimensions removed (all, or those in ``dim``)."""
    v, nd = self._value, self.dim()
    if dim is None:
        dims = [i + 1 for i, s in enumerate(self.shape) if s == 1]
    elif isinstance(dim, (tuple, list)):
        dims = [norm_dim(d, nd) for d in dim]
    else:
        dims = [norm_dim(dim, nd)] if nd else []
    for d in sorted(dims, reverse=True):
        if v.shape[d] == 1:
            v = v.squeeze(d)
    return BatchedTensor(v, self._level)


def _expand(self, *sizes):
    """The logical value broadcast to ``sizes`` (-1 keeps a size)."""
    sizes = _sizes(sizes)
    v = pad_to(self._value, len(sizes))
    return BatchedTensor(v.expand(v.shape[0], *sizes), self._level)


def _repeat(self, *sizes):
    """The logical value tiled ``sizes`` times along each dimension."""
    sizes = _sizes(sizes)
    v = pad_to(self._value, len(sizes))
    return BatchedTensor(v.repeat(1, *sizes), self._level)


def _movedim(self, source, destination):
    """Logical dimension(s) ``source`` moved to ``destination``."""
    nd = self.dim()

    def conv(d):
        return [norm_dim(x, nd) for x in d] if isinstance(d, (tuple, list)) else norm_dim(d, nd)

    return BatchedTensor(self._value.movedim(conv(source), conv(destination)), self._level)


def _diagonal(self, offset=0, dim1=0, dim2=1):
    """The diagonal of the logical planes ``dim1``, ``dim2``."""
    nd = self.dim()
    return BatchedTensor(
        self._value.diagonal(offset, norm_dim(dim1, nd), norm_dim(dim2, nd)), self._level
    )


def _unfold(self, dimension, size, step):
    """A view of every window of ``size`` elements, ``step`` apart, along logical
    ``dimension`` (a new last dimension)."""
    return BatchedTensor(self._value.unfold(norm_dim(dimension, self.dim()), size, step),
                         self._level)


def _restride(view):
    """The in-place form of a shape op: ``self`` takes the view's layout. The
    physical value is rebound rather than restrided, so a tensor vmap was
    given keeps its own shape, as each sample's view does in a loop."""

    def method(self, *args, **kwargs):
        self._value = view(self, *args, **kwargs)._value
        return self

    method.__name__ = view.__name__.lstrip("_") + "_"
    method.__doc__ = f"``Tensor.{method.__name__}`` on the logical value, in place."
    return method


def _key(self, key):
    key = key if isinstance(key, tuple) else (key,)
    for k in key:
        if isinstance(k, BatchedTensor) and k._level == self._level:
            raise RuntimeError(
                "vmap: indexing with a batched index tensor is not supported; use gather instead"
            )
    return (slice(None), *key)


def _getitem(self, key):
    lid = max_level((self, *(key if isinstance(key, tuple) else (key,))))
    if lid != self._level:
        # The index is batched at a level the tensor is not.
        raise RuntimeError(
            "vmap: indexing with a batched index tensor is not supported; use gather instead"
        )
    return BatchedTensor(self._value[_key(self, key)], self._level)


def _setitem(self, key, value):
    lid = max_level((self, value))
    if lid != self._level:
        raise inplace_error("index_put_")
    k = _key(self, key)
    v = unwrap_at(value, lid)
    if v is not None:
        target_nd = self._value[k].dim() - 1
        value = pad_to(v, target_nd)
    self._value[k] = value


def _random_(name):
    def method(self, *args, **kwargs):
        mode = check_random(self._level)
        if mode == "different":
            getattr(self._value, name)(*args, **kwargs)
        else:
            one = _C.zeros(*self.shape, dtype=self.dtype)
            getattr(one, name)(*args, **kwargs)
            self._value.copy_(one.expand_as(self._value))
        return self

    method.__name__ = name
    method.__doc__ = f"``Tensor.{name}`` under vmap's ``randomness`` mode."
    return method


def _bernoulli(self, p=None, *, generator=None):
    """``Tensor.bernoulli`` under vmap's ``randomness`` mode (the function's rule)."""
    from ._rules import bernoulli_rule

    kwargs = {} if generator is None else {"generator": generator}
    return bernoulli_rule(_C.bernoulli, (self, p), kwargs)


def _requires_grad_(self, requires_grad=True):
    """Refused (PyTorch's error): gradients inside vmap come from ``ferrograd.func.grad``."""
    raise RuntimeError(REQUIRES_GRAD_ERROR)


for _n, _f in {
    "view": _view, "reshape": _reshape, "flatten": _flatten, "permute": _permute,
    "transpose": _transpose, "swapaxes": _transpose, "t": _t, "unsqueeze": _unsqueeze,
    "squeeze": _squeeze, "expand": _expand, "broadcast_to": _expand, "repeat": _repeat,
    "movedim": _movedim, "diagonal": _diagonal, "unfold": _unfold, "__getitem__": _getitem,
    "t_": _restride(_t), "transpose_": _restride(_transpose),
    "swapaxes_": _restride(_transpose), "swapdims_": _restride(_transpose),
    "squeeze_": _restride(_squeeze), "unsqueeze_": _restride(_unsqueeze),
    "__setitem__": _setitem, "uniform_": _random_("uniform_"), "normal_": _random_("normal_"),
    "bernoulli_": _random_("bernoulli_"), "bernoulli": _bernoulli,
    "exponential_": _random_("exponential_"), "geometric_": _random_("geometric_"),
    "log_normal_": _random_("log_normal_"), "cauchy_": _random_("cauchy_"),
    "random_": _random_("random_"),
    "requires_grad_": _requires_grad_,
}.items():  # fmt: skip
    if _f.__doc__ is None:
        _f.__doc__ = f"``Tensor.{_n}`` on the logical value."
    setattr(BatchedTensor, _n, _f)

BatchedTensor.view_as = lambda self, other: _view(self, *other.shape)
BatchedTensor.reshape_as = lambda self, other: _reshape(self, *other.shape)
BatchedTensor.expand_as = lambda self, other: _expand(self, *other.shape)
BatchedTensor.T = property(
    lambda self: _permute(self, *reversed(range(self.dim()))), doc="The reversed dimensions."
)
BatchedTensor.mT = property(
    lambda self: _transpose(self, -2, -1), doc="The last two dimensions swapped."
)


def _data(self):
    return BatchedTensor(self._value.detach(), self._level)


BatchedTensor.data = property(_data, doc="The detached value.")

# ----- tensor API additions (ferrograd._tensor_api) -----
# In-place forms of the op table's unary ops and of the comparisons go through the
# in-place elementwise rule; the composed methods call their function, which is
# written with ops that have batching rules.
for _n in [
    "sin_", "cos_", "tan_", "sqrt_", "rsqrt_", "log_", "log2_", "log1p_", "expm1_", "abs_",
    "sign_", "erf_", "floor_", "ceil_", "trunc_", "reciprocal_", "square_", "logical_not_",
    "round_", "clip_", "ge_", "gt_", "le_", "lt_", "ne_", "eq_", "logical_and_",
    "logical_or_", "logical_xor_",
]:  # fmt: skip
    if _n not in BatchedTensor.__dict__:
        _attach(_n, inplace_elementwise(_n))


def _attach_composed():
    from .. import _tensor_api as api

    for name in (
        "diff", "tile", "rot90", "fliplr", "flipud", "ravel", "moveaxis", "swapdims",
        "cumprod", "logcumsumexp", "nansum", "nanmean", "count_nonzero", "inner",
        "index_add", "index_copy", "index_fill", "take_along_dim",
    ):  # fmt: skip
        if name not in BatchedTensor.__dict__:
            setattr(BatchedTensor, name, getattr(api, name))


_attach_composed()
# ----- end of tensor API additions -----


# ----- in-place forms of ops with an out-of-place batching rule ------------------------------


def write_inplace(self, out, name):
    """``self.<name>(...)`` under vmap, given its out-of-place value ``out``
    (computed through the batching rules): ``out`` is copied into ``self``.
    As in PyTorch, ``self`` must be batched wherever ``out`` is, and the
    value must have ``self``'s shape."""
    lid = max_level((self, out))
    if unwrap_at(self, lid) is None:
        raise inplace_error(name)
    if tuple(out.shape) != tuple(self.shape):
        raise RuntimeError(
            f"output with shape {list(self.shape)} doesn't match the broadcast shape "
            f"{list(out.shape)}"
        )
    self.copy_(out)
    return self


def _inplace_composed(name):
    base = name[:-1]

    def method(self, *args, **kwargs):
        return write_inplace(self, getattr(self, base)(*args, **kwargs), name)

    method.__name__ = name
    method.__doc__ = f"``Tensor.{name}``: ``Tensor.{base}``'s batching rule, written into ``self``."
    return method


#: In-place forms that change a tensor's storage or layout in ways no batching rule
#: describes (the shape ops' in-place forms have their own rules above).
_RESTRIDING = {"detach_", "resize_", "resize_as_", "as_strided_", "set_", "share_memory_"}


def _attach_inplace_forms():
    # Every in-place method of Tensor whose out-of-place form batches and that has no
    # rule of its own (addmm_, index_copy_, masked_scatter_, cumsum_, ...); the random
    # fills (uniform_, ...) have their own rules above. An out-of-place form written in
    # Python (Tensor.addmm) runs on the batched value as it is, through the rules of
    # the ops it is made of.
    for name in dir(_C.Tensor):
        if not name.endswith("_") or name.startswith("_") or name in BatchedTensor.__dict__:
            continue
        if name in _RESTRIDING:
            continue
        base = name[:-1]
        if base not in BatchedTensor.__dict__:
            fn = getattr(_C.Tensor, base, None)
            if not isinstance(fn, types.FunctionType):
                continue
            setattr(BatchedTensor, base, fn)
        setattr(BatchedTensor, name, _inplace_composed(name))


_attach_inplace_forms()
BatchedTensor.zeros_ = BatchedTensor.zero_
