"""The ``meta`` device: tensors with a shape and a dtype but no data.

``ferrograd.empty(3, 4, device="meta")``, ``nn.Linear(..., device="meta")``,
``module.to("meta")`` and factory calls under ``with ferrograd.device("meta")``
make ``MetaTensor`` objects: a shape, a dtype and ``requires_grad``, no
memory. Ops on them compute only the shape and dtype of their result, so a
model far too large for memory can be built, sized and run through to its
output shape (``Linear(100_000, 100_000, device="meta")`` takes no time).

Design (see ARCHITECTURE.md, "The meta device"): ``MetaTensor`` is a Python
class, not a ``Tensor`` subclass, so the Rust bindings never mistake it for
data. A ``ferrograd`` function given one fails to convert it and hands the
call to ``MetaTensor.__ferrograd_function__`` (the dispatch protocol vmap's
``BatchedTensor`` uses); methods and operators are the class's own. Each
reaches a *shape rule*, looked up by the op's name in ``_RULES``, which this
package's modules fill, one per kind of op. A rule computes the result's
shape from the input shapes; its dtype (and its structure: a tensor, a
tuple, a ``return_types`` pair) comes from running the real op on
one-element stand-ins of the inputs' dtypes, so promotion and argument
errors are the real op's. Ordinary tensors never reach this package.
"""

from __future__ import annotations

import builtins
import math

from .. import _C
from .._device import _META
from .._size import Size

__all__ = ["MetaTensor", "MetaParameter", "is_meta"]

_COPY_OUT = "Cannot copy out of meta tensor; no data!"


def is_meta(x):
    """Whether ``x`` is a meta tensor."""
    return isinstance(x, MetaTensor)


def _norm_dim(dim, nd, wrap_scalar=True):
    n = builtins.max(nd, 1) if wrap_scalar else nd
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, not {type(dim).__name__}")
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n if n else 0


def _broadcast(*shapes):
    nd = builtins.max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        s = (1,) * (nd - len(s)) + tuple(s)
        for i, d in enumerate(s):
            if d == out[i] or d == 1:
                continue
            if out[i] == 1:
                out[i] = d
            else:
                # PyTorch names the two operands "a" and "b" from the right.
                raise RuntimeError(
                    f"The size of tensor a ({out[i]}) must match the size of tensor b ({d}) at "
                    f"non-singleton dimension {i}"
                )
    return tuple(out)


def _is_tensorish(x):
    return isinstance(x, (MetaTensor, _C.Tensor))


def _stand_in(x):
    """A one-element real tensor of ``x``'s dtype and rank (0-d stays 0-d)."""
    if isinstance(x, MetaTensor):
        nd = len(x._shape)
        return _C.zeros(*([1] * nd), dtype=x._dtype) if nd else _C.zeros((), dtype=x._dtype)
    if isinstance(x, _C.Tensor):
        nd = x.dim()
        return _C.zeros(*([1] * nd), dtype=x.dtype) if nd else _C.zeros((), dtype=x.dtype)
    if isinstance(x, (list, tuple)):
        return type(x)(_stand_in(v) for v in x)
    return x


def _any_requires_grad(args, kwargs=None):
    if not _C.is_grad_enabled():
        return False
    for a in list(args) + list((kwargs or {}).values()):
        if isinstance(a, (list, tuple)):
            if _any_requires_grad(a):
                return True
        elif _is_tensorish(a) and a.requires_grad:
            return True
    return False


def _check_devices(args, kwargs=None):
    """Refuses a real tensor of more than 0 dimensions mixed with meta ones, as PyTorch."""
    for a in list(args) + list((kwargs or {}).values()):
        if isinstance(a, (list, tuple)):
            _check_devices(a)
        elif isinstance(a, _C.Tensor) and a.dim() > 0:
            raise RuntimeError("Tensor on device cpu is not on the expected device meta!")


def _like_result(real, shape, requires_grad):
    """A meta result shaped ``shape`` (a shape, or a structure of shapes matching
    ``real``) with the dtypes of the stand-in result ``real``."""
    if isinstance(real, _C.Tensor):
        rg = requires_grad and real.is_floating_point()
        return MetaTensor(shape, real.dtype, rg, leaf=not rg)
    if isinstance(real, tuple):
        shapes = shape if _is_shape_list(shape, len(real)) else [shape] * len(real)
        items = [_like_result(r, s, requires_grad) for r, s in zip(real, shapes)]
        if hasattr(real, "_fields"):
            return type(real)(*items)
        return tuple(items)
    if isinstance(real, list):
        return [_like_result(r, s, requires_grad) for r, s in zip(real, shape)]
    return real


def _is_shape_list(shape, n):
    return (
        isinstance(shape, list)
        and len(shape) == n
        and all(isinstance(s, (tuple, list)) for s in shape)
    )


def _run(op, args, kwargs, shape):
    """The meta result of ``op``: ``shape`` and the dtypes of ``op`` run on stand-ins."""
    _check_devices(args, kwargs)
    real = op(*[_stand_in(a) for a in args], **{k: _stand_in(v) for k, v in kwargs.items()})
    return _like_result(real, shape, _any_requires_grad(args, kwargs))


def _real_fn(name):
    """The real ferrograd function or Tensor method called ``name``."""
    for ns in (_C, _ferrograd(), _functional()):
        f = getattr(ns, name, None)
        if callable(f):
            return f
    m = getattr(_C.Tensor, name, None)
    if m is not None:
        return m
    raise NotImplementedError(f"ferrograd: '{name}' has no meta implementation")


def _ferrograd():
    import ferrograd

    return ferrograd


def _functional():
    from ..nn import functional

    return functional


# ----- the rule table (filled by the rule modules imported at the end) ---------------------

_RULES = {}


def _rule(*names):
    def deco(fn):
        for n in names:
            _RULES[n] = fn
        return fn

    return deco


# ----- the tensor class --------------------------------------------------------------------

def _contiguous_strides(shape):
    strides = []
    acc = 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= builtins.max(s, 1)
    return tuple(reversed(strides))


class MetaTensor:
    """A tensor on the ``meta`` device: a shape, a dtype and ``requires_grad``,
    no data. Ops give the shape and dtype of their result; reading values
    (``item()``, ``tolist()``, ``numpy()``, ``.to("cpu")``) raises PyTorch's
    errors, and in-place initialisers (``uniform_``, ``zero_``, ``copy_``, the
    ``nn.init`` functions) do nothing. It is not a ``ferrograd.Tensor``
    subclass (``isinstance(x, ferrograd.Tensor)`` is False; use
    ``ferrograd.is_tensor`` or ``x.is_meta``)."""

    __slots__ = ("_shape", "_dtype", "_rg", "_leaf", "_grad", "__dict__", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, shape, dtype=None, requires_grad=False, leaf=True):
        shape = tuple(int(s) for s in shape)
        for s in shape:
            if s < 0:
                raise RuntimeError(
                    f"Trying to create tensor with negative dimension {s}: {list(shape)}"
                )
        self._shape = shape
        self._dtype = dtype if dtype is not None else _C.get_default_dtype()
        if requires_grad and not self._dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point dtype can require gradients")
        self._rg = bool(requires_grad)
        self._leaf = leaf or not requires_grad
        self._grad = None

    @classmethod
    def __ferrograd_function__(cls, func, types, args, kwargs=None):
        """Runs ``func`` (a ``ferrograd`` function) through its shape rule."""
        name = getattr(func, "__name__", repr(func))
        owner = getattr(func, "__self__", None)
        if name == "apply" and isinstance(owner, type):
            return _function_apply(owner, args, kwargs or {})
        rule = _RULES.get(name)
        if rule is None:
            raise NotImplementedError(
                f"ferrograd.{name} has no meta implementation (meta tensors carry a shape and a "
                "dtype only)"
            )
        if getattr(rule, "takes_op", False):
            # The function itself runs on the stand-ins (its argument order can differ
            # from the method's: ``where(cond, x, y)`` against ``x.where(cond, y)``).
            return rule(*args, _op=func, **(kwargs or {}))
        return rule(*args, **(kwargs or {}))

    def _derive(self, shape, dtype=None):
        rg = self._rg and _C.is_grad_enabled()
        return MetaTensor(shape, dtype if dtype is not None else self._dtype,
                          rg and (dtype is None or dtype.is_floating_point), leaf=not rg)  # fmt: skip

    # ----- metadata -----
    @property
    def shape(self):
        return Size(self._shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._shape)
        return self._shape[_norm_dim(dim, len(self._shape))] if self._shape else 1

    def dim(self):
        return len(self._shape)

    ndimension = dim

    @property
    def ndim(self):
        return len(self._shape)

    def numel(self):
        return math.prod(self._shape)

    nelement = numel

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return _META

    is_meta = True
    is_cuda = False
    is_cpu = False
    is_sparse = False
    is_quantized = False
    is_mkldnn = False
    is_nested = False

    def get_device(self):
        return -1

    def element_size(self):
        return {"bool": 1, "int64": 8, "float32": 4, "float64": 8}[str(self._dtype).split(".")[-1]]

    @property
    def itemsize(self):
        return self.element_size()

    @property
    def nbytes(self):
        return self.numel() * self.element_size()

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def is_complex(self):
        return False

    def is_signed(self):
        return str(self._dtype) != "ferrograd.bool"

    def stride(self, dim=None):
        st = _contiguous_strides(self._shape)
        return st if dim is None else st[_norm_dim(dim, len(self._shape))]

    def is_contiguous(self, memory_format=None):
        return True

    def storage_offset(self):
        return 0

    def data_ptr(self):
        return 0

    # ----- autograd state -----
    @property
    def requires_grad(self):
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value):
        if value and not self._dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if not self._leaf and not value:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        self._rg = bool(value)

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self):
        return self._leaf

    @property
    def grad_fn(self):
        return None

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        self._grad = value

    def retain_grad(self):
        pass

    @property
    def data(self):
        return MetaTensor(self._shape, self._dtype)

    @data.setter
    def data(self, value):
        if not isinstance(value, MetaTensor):
            raise RuntimeError(
                "ferrograd: cannot give a meta tensor real data through .data; use "
                "Module.to_empty() or load_state_dict(..., assign=True)"
            )
        self._shape, self._dtype = value._shape, value._dtype

    def detach(self):
        return MetaTensor(self._shape, self._dtype)

    def detach_(self):
        self._rg = False
        self._leaf = True
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        raise RuntimeError(
            "ferrograd: meta tensors record no graph, so backward() cannot run on them (they "
            "carry a shape and a dtype only)"
        )

    # ----- conversions -----
    def to(self, *args, **kwargs):
        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, (MetaTensor, _C.Tensor)):
                dtype, device = a.dtype, a.device
            elif isinstance(a, str):
                device = a
        if device is not None and str(device) != "meta":
            from .. import _device

            _device.device(device)
            raise NotImplementedError(_COPY_OUT)
        if dtype is None or dtype == self._dtype:
            return self
        return self._derive(self._shape, dtype)

    def cpu(self, *args, **kwargs):
        raise NotImplementedError(_COPY_OUT)

    def cuda(self, *args, **kwargs):
        from .._device import _tensor_cuda

        _tensor_cuda(self, *args, **kwargs)

    def type_as(self, other):
        return self.to(other.dtype)

    def type(self, dtype=None, **kwargs):
        if dtype is None:
            return "ferrograd.meta." + {"float32": "FloatTensor", "float64": "DoubleTensor",
                                        "int64": "LongTensor", "bool": "BoolTensor"}[
                str(self._dtype).split(".")[-1]]  # fmt: skip
        return self.to(dtype)

    def item(self):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    def tolist(self):
        raise NotImplementedError(_COPY_OUT)

    def numpy(self, *, force=False):
        raise TypeError(
            "can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
            "to host memory first."
        )

    def __array__(self, dtype=None, copy=None):
        self.numpy()

    def __float__(self):
        return self.item()

    __int__ = __index__ = __bool__ = __complex__ = __float__

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(_unbind(self, 0))

    def __hash__(self):
        return id(self)

    def __repr__(self):
        parts = [f"size={tuple(self._shape)}"]
        if self._dtype != _C.get_default_dtype():
            parts.append(f"dtype={self._dtype}")
        if self._rg and self._leaf:
            parts.append("requires_grad=True")
        return f"tensor(..., device='meta', {', '.join(parts)})"

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(self._shape, self._dtype, self._rg)
        import copy

        for k, v in self.__dict__.items():
            setattr(out, k, copy.deepcopy(v, memo))
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, proto):
        return (_rebuild, (type(self), self._shape, str(self._dtype).split(".")[-1], self._rg))

    # ----- in place: the shape is checked, nothing is written -----
    def _inplace(self, *args, **kwargs):
        for a in list(args) + list(kwargs.values()):
            if _is_tensorish(a) and _broadcast(self._shape, tuple(a.shape)) != self._shape:
                raise RuntimeError(
                    f"output with shape {list(self._shape)} doesn't match the broadcast shape "
                    f"{list(_broadcast(self._shape, tuple(a.shape)))}"
                )
        return self

    def __setitem__(self, index, value):
        out = _getitem(self, index)
        if _is_tensorish(value):
            _broadcast(tuple(out.shape), tuple(value.shape))

    def copy_(self, src, non_blocking=False):
        return self._inplace(src)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        rule = _RULES.get(name)
        if rule is not None:
            return lambda *args, **kwargs: rule(self, *args, **kwargs)
        if name.endswith("_") and not name.endswith("__"):
            base = name[:-1]
            if base in _RULES or name in _INIT_METHODS:
                return lambda *args, **kwargs: self._inplace(*args, **kwargs)
        if hasattr(_C.Tensor, name):
            raise NotImplementedError(
                f"Tensor.{name} has no meta implementation (meta tensors carry a shape and a "
                "dtype only)"
            )
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @property
    def T(self):  # noqa: N802
        return self._derive(tuple(reversed(self._shape)))

    @property
    def mT(self):  # noqa: N802
        return _transpose(self, -2, -1)


_INIT_METHODS = {
    "uniform_", "normal_", "zero_", "fill_", "bernoulli_", "exponential_", "random_",
    "geometric_", "cauchy_", "log_normal_", "fill_diagonal_", "clamp_", "index_fill_",
    "masked_fill_", "scatter_", "scatter_add_", "index_add_", "index_copy_", "put_",
}  # fmt: skip


def _binary_dunder(name, reflected=False):
    rule_name = {
        "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
        "mod": "remainder", "pow": "pow", "and": "bitwise_and", "or": "bitwise_or",
        "xor": "bitwise_xor", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt",
        "ge": "ge",
    }[name]  # fmt: skip

    def method(self, other):
        if not (_is_tensorish(other) or isinstance(other, (int, float, bool))):
            return NotImplemented
        if reflected:
            if name == "sub":
                return _RULES["sub"](_scalar_like(other, self), self)
            if name in ("truediv", "floordiv", "mod", "pow"):
                return _RULES[rule_name](_scalar_like(other, self), self)
            return _RULES[rule_name](self, other)
        return _RULES[rule_name](self, other)

    return method


def _scalar_like(value, like):
    """A Python number as a 0-d meta operand (its dtype as PyTorch wraps numbers)."""
    if isinstance(value, MetaTensor) or isinstance(value, _C.Tensor):
        return value
    t = _C.tensor(value)
    return MetaTensor((), t.dtype)


for _op in ("add sub mul truediv floordiv mod pow and or xor eq ne lt le gt ge").split():
    setattr(MetaTensor, f"__{_op}__", _binary_dunder(_op))
    if _op not in ("eq", "ne", "lt", "le", "gt", "ge"):
        setattr(MetaTensor, f"__r{_op}__", _binary_dunder(_op, reflected=True))
        setattr(MetaTensor, f"__i{_op}__", lambda self, other: self._inplace(other))

MetaTensor.__matmul__ = lambda self, other: _RULES["matmul"](self, other)
MetaTensor.__rmatmul__ = lambda self, other: _RULES["matmul"](other, self)
MetaTensor.__imatmul__ = lambda self, other: _RULES["matmul"](self, other)
MetaTensor.__neg__ = lambda self: _RULES["neg"](self)
MetaTensor.__pos__ = lambda self: self
MetaTensor.__abs__ = lambda self: _RULES["abs"](self)
MetaTensor.__invert__ = lambda self: self._derive(self._shape)
MetaTensor.__format__ = lambda self, spec: object.__format__(self, spec)


class MetaParameter(MetaTensor):
    """A ``Parameter`` on the meta device (``nn.Parameter(meta_tensor)``):
    ``isinstance(p, nn.Parameter)`` holds, so modules register it as one."""

    __slots__ = ()

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = MetaParameter(self._shape, self._dtype, self._rg)
        memo[id(self)] = out
        return out


def _function_apply(cls, args, kwargs):
    """A custom ``autograd.Function`` on meta tensors: its forward runs on them
    (so its ops' shape rules give the result); no graph is recorded."""
    from ..autograd.function import Function, FunctionCtx
    from ..autograd.grad_mode import no_grad

    if not issubclass(cls, Function):
        raise NotImplementedError(f"{cls.__name__}.apply has no meta implementation")
    rg = _any_requires_grad(args, kwargs)
    try:
        with no_grad():
            if cls.setup_context is not Function.setup_context:
                out = cls.forward(*args, **kwargs)
            else:
                out = cls.forward(FunctionCtx(), *args, **kwargs)
    except TypeError as e:
        # Its forward calls a kernel that takes real tensors only.
        raise NotImplementedError(
            f"{cls.__name__} has no meta implementation (its forward needs data: {e})"
        ) from None

    def mark(o):
        if isinstance(o, MetaTensor) and rg and o.is_floating_point():
            return MetaTensor(o._shape, o._dtype, True, leaf=False)
        return o

    return tuple(mark(o) for o in out) if isinstance(out, tuple) else mark(out)


def _rebuild(cls, shape, dtype, requires_grad):
    return cls(shape, getattr(_C, dtype), requires_grad)


def _factory(shape, dtype, requires_grad):
    """A new meta tensor (called by the Rust factory functions for ``device="meta"``)."""
    return MetaTensor(shape, dtype, requires_grad)


def _like_factory(fn, input, device, dtype, requires_grad, make):
    """``*_like`` with a meta input or ``device="meta"``; ``make(*shape, dtype=...)``
    builds a real tensor when a meta input asks for a CPU result."""
    from .._device import _check_cpu

    to_meta = _check_cpu(fn, device)
    if device is None:
        to_meta = isinstance(input, MetaTensor)
    if not _is_tensorish(input):
        raise TypeError(
            f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    dt = dtype if dtype is not None else input.dtype
    if to_meta:
        return MetaTensor(tuple(input.shape), dt, requires_grad)
    out = make(*tuple(input.shape), dtype=dt)
    if requires_grad:
        out.requires_grad_(True)
    return out


# The shape rules, one module per kind of op: each registers its rules in _RULES
# and reads the helpers and MetaTensor above, so they load once those exist.
from . import creation, nn_ops, pointwise, products, reductions  # noqa: E402, F401
from .shapes import _getitem, _transpose, _unbind  # noqa: E402

MetaTensor.__getitem__ = _getitem
