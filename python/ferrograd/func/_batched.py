"""``BatchedTensor``: the value a function sees inside ``vmap``.

A ``BatchedTensor`` is a level (one per active ``vmap``, ``jacrev`` or
``jacfwd``) and a physical value whose dimension 0 is that level's batch
dimension; the value is a ``Tensor`` or, under nested transforms, a
``BatchedTensor`` of a lower level, so a physical tensor holds one
dimension per level in level order, then the logical shape the function
sees. Every op runs once on the physical values through its batching rule
(``_rules.py``); an op without one raises an error naming it.
"""

from __future__ import annotations

import itertools
import operator
import threading

from .. import _C
from .._size import Size

__all__ = ["BatchedTensor"]

_Tensor = _C.Tensor

ITEM_ERROR = (
    "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
    "calling .item() on a Tensor, please try to rewrite what you're doing with other "
    "operations. If error is occurring somewhere inside PyTorch internals, please file a bug "
    "report."
)
NUMPY_ERROR = (
    "vmap: Tensor.numpy() was called on a batched tensor. A NumPy array holds one sample's "
    "values, and vmap runs the function once for the whole batch, so a NumPy round trip "
    "(numpy(), then NumPy code or from_numpy) cannot be batched; write it with tensor ops, "
    "or convert outside the vmapped function."
)
CONTROL_FLOW_ERROR = (
    "vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
    "flow. We don't support that yet, please shout over at "
    "https://github.com/pytorch/functorch/issues/257 ."
)
RANDOM_ERROR = (
    "vmap: called random operation while in randomness error mode. Please either use the "
    "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
    "of vmap"
)


def inplace_error(op):
    """PyTorch's error for writing a batched value into an unbatched tensor."""
    return RuntimeError(
        f"vmap: {op}(self, *extra_args) is not possible because there exists a Tensor `other` "
        "in extra_args that has more elements than `self`. This happened due to `other` being "
        "vmapped over but `self` not being vmapped over in a vmap. Please try to use "
        f"out-of-place operators instead of {op}. If said operator is being called inside the "
        "PyTorch framework, please file a bug report instead."
    )


# ----- levels ------------------------------------------------------------------------------


class Level:
    """One active batching transform: its id (higher is inner), batch size and randomness."""

    __slots__ = ("id", "size", "randomness")

    def __init__(self, id, size, randomness):
        self.id = id
        self.size = size
        self.randomness = randomness


_ids = itertools.count(1)
_local = threading.local()


def levels():
    """The active levels of this thread, outermost first."""
    st = getattr(_local, "stack", None)
    if st is None:
        st = _local.stack = []
    return st


class push_level:
    """Context manager that makes a new innermost level of ``size``."""

    def __init__(self, size, randomness="error"):
        self.level = Level(next(_ids), size, randomness)

    def __enter__(self):
        levels().append(self.level)
        return self.level

    def __exit__(self, *exc):
        levels().remove(self.level)
        return False


BACKWARD_ERROR = (
    "backward() called inside a functorch transform. This is not supported, please use "
    "functorch.grad or functorch.vjp instead or call backward() outside of functorch "
    "transforms."
)
REQUIRES_GRAD_ERROR = (
    "You are attempting to call Tensor.requires_grad_() (or perhaps using "
    "torch.autograd.functional.* APIs) inside of a function being transformed by a "
    "functorch transform. This is unsupported, please attempt to use the functorch "
    "transforms (e.g. grad, vjp, jacrev, jacfwd, hessian) or call requires_grad_() outside "
    "of a function being transformed instead."
)
RETAIN_GRAD_ERROR = (
    "You are attempting to call Tensor.retain_grad() inside of a function being transformed "
    "by a functorch transform. This is unsupported, please attempt to use the functorch "
    "transforms (e.g. grad, vjp, jacrev, jacfwd, hessian) or call retain_grad() outside of a "
    "function being transformed instead."
)


class running_transform:
    """Marks the call of a transformed function by ``grad``, ``vjp`` or ``jvp``
    (the batching transforms are marked by their levels)."""

    def __enter__(self):
        _local.depth = getattr(_local, "depth", 0) + 1

    def __exit__(self, *exc):
        _local.depth -= 1
        return False


def transforms_active():
    """Whether a transformed function is running in this thread (PyTorch's
    ``_are_functorch_transforms_active``)."""
    return bool(levels()) or getattr(_local, "depth", 0) > 0


def level_by_id(lid):
    """The active level ``lid``, or None once its transform has returned."""
    for lv in levels():
        if lv.id == lid:
            return lv
    return None


def check_random(lid):
    """Raises PyTorch's error for a random op under a level in 'error' mode;
    returns the level's randomness otherwise."""
    lv = level_by_id(lid)
    mode = lv.randomness if lv is not None else "different"
    if mode == "error":
        raise RuntimeError(RANDOM_ERROR)
    return mode


_FORWARD_AD = [None]


def forward_ad():
    """The ``autograd.forward_ad`` module while one of its dual levels is
    active, else None."""
    fw = _FORWARD_AD[0]
    if fw is None:
        try:
            from ..autograd import forward_ad as fw
        except ImportError:
            # Looked up once: a failed import is slow, and this runs per call.
            fw = False
        _FORWARD_AD[0] = fw
    if fw is False:
        return None
    level = getattr(fw, "_current_level", -1)
    if callable(level):
        level = level()
    return fw if isinstance(level, int) and level >= 0 else None


def forward_ad_active():
    """Whether an ``autograd.forward_ad`` dual level is active."""
    return forward_ad() is not None


# ----- wrapping ----------------------------------------------------------------------------


def is_tensorlike(x):
    """A Tensor or a BatchedTensor."""
    return isinstance(x, (_Tensor, BatchedTensor))


def wrap(x, lid):
    """``x`` (a physical result, or a structure of them) as BatchedTensors of level ``lid``."""
    if isinstance(x, (_Tensor, BatchedTensor)):
        return BatchedTensor(x, lid)
    if isinstance(x, tuple):
        vals = [wrap(v, lid) for v in x]
        return type(x)(*vals) if hasattr(type(x), "_fields") else tuple(vals)
    if isinstance(x, list):
        return [wrap(v, lid) for v in x]
    if x is None:
        return None
    raise RuntimeError(
        f"vmap: an op returned a value of type {type(x).__name__} computed from a batched "
        "Tensor; only Tensor results can be batched"
    )


def max_level(args, kwargs=None):
    """The highest level among the BatchedTensors in ``args`` (one list deep)."""
    best = 0
    vals = list(args) + (list(kwargs.values()) if kwargs else [])
    for a in vals:
        if isinstance(a, BatchedTensor):
            best = max(best, a._level)
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, BatchedTensor):
                    best = max(best, b._level)
    return best


def unwrap_at(x, lid):
    """The physical value of ``x`` at level ``lid``, or None when ``x`` is unbatched there."""
    if isinstance(x, BatchedTensor) and x._level == lid:
        return x._value
    return None


def materialize(x, lid, size):
    """``x``'s physical value at level ``lid``, expanding an unbatched ``x`` to ``size``."""
    v = unwrap_at(x, lid)
    if v is not None:
        return v
    return x.unsqueeze(0).expand(size, *x.shape)


def batch_size_of(args, lid):
    """The batch size of level ``lid``, read from an argument batched at it."""
    for a in args:
        if isinstance(a, BatchedTensor) and a._level == lid:
            return a._value.shape[0]
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, BatchedTensor) and b._level == lid:
                    return b._value.shape[0]
    raise RuntimeError("vmap: internal error: no argument batched at the current level")


def pad_to(v, nd):
    """Physical ``v`` with size-1 dimensions inserted after its batch dimension
    so that it has ``nd`` logical dimensions (unbatched operands broadcast from
    the right against it, as they do against the logical value)."""
    k = v.dim() - 1
    for _ in range(nd - k):
        v = v.unsqueeze(1)
    return v


def norm_dim(d, nd, fname="vmap"):
    """A logical dimension as a non-negative physical one (shifted past the batch dim)."""
    if not isinstance(d, int):
        d = operator.index(d)
    lo, hi = (-1, 0) if nd == 0 else (-nd, nd - 1)
    if d < lo or d > hi:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {d})"
        )
    return (d % nd if nd else 0) + 1


# ----- the class ---------------------------------------------------------------------------


class BatchedTensor:
    """A tensor inside a batching transform: the function sees its logical
    shape, ops run once on the physical value (batch dimension 0) through
    batching rules. Created by ``vmap``, ``jacrev`` and ``jacfwd``; never
    constructed by users."""

    __slots__ = ("_value", "_level", "__weakref__")
    __hash__ = object.__hash__

    def __init__(self, value, level):
        self._value = value
        self._level = level

    # --- the dispatch protocol ---
    @classmethod
    def __ferrograd_function__(cls, func, types, args, kwargs=None):
        """Runs ``func`` (a ``ferrograd._C`` function) through its batching rule."""
        from ._rules import function_rule

        return function_rule(func)(func, tuple(args), dict(kwargs or {}))

    # --- metadata ---
    @property
    def shape(self):
        """The logical shape (without the batch dimension)."""
        return Size(tuple(self._value.shape)[1:])

    def size(self, dim=None):
        """The logical shape, or its size along ``dim``."""
        shape = self.shape
        if dim is None:
            return shape
        nd = len(shape)
        return self._value.shape[norm_dim(dim, nd)] if nd else 1

    def dim(self):
        """The number of logical dimensions."""
        return self._value.dim() - 1

    ndim = property(dim, doc="The number of logical dimensions.")

    def numel(self):
        """The number of logical elements."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    nelement = numel

    @property
    def dtype(self):
        """The element type."""
        return self._value.dtype

    @property
    def device(self):
        """The device (always the CPU)."""
        return self._value.device

    @property
    def requires_grad(self):
        """Whether the physical value requires grad."""
        return self._value.requires_grad

    @property
    def is_leaf(self):
        """Whether the physical value is a leaf of the graph."""
        return self._value.is_leaf

    @property
    def grad_fn(self):
        """The physical value's ``grad_fn``."""
        return self._value.grad_fn

    def is_floating_point(self):
        """Whether the element type is a floating point type."""
        return self._value.is_floating_point()

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._value.shape[1]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __repr__(self):
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._value!r}\n)"

    # --- what vmap refuses ---
    def item(self):
        """Refused under vmap (PyTorch's error)."""
        raise RuntimeError(ITEM_ERROR)

    def tolist(self):
        """Refused under vmap (PyTorch's error)."""
        raise RuntimeError(ITEM_ERROR)

    def numpy(self, *, force=False):
        """Refused under vmap: the batched data has no per-sample NumPy view."""
        # PyTorch says "Cannot access data pointer of Tensor that doesn't have storage";
        # this names what was tried and what to do instead.
        raise RuntimeError(NUMPY_ERROR)

    def __bool__(self):
        raise RuntimeError(CONTROL_FLOW_ERROR)

    def __float__(self):
        raise RuntimeError(ITEM_ERROR)

    def __int__(self):
        raise RuntimeError(ITEM_ERROR)

    def __index__(self):
        raise RuntimeError(ITEM_ERROR)

    def backward(self, *args, **kwargs):
        """Refused (PyTorch's error): use ``ferrograd.func.grad`` inside ``vmap``."""
        raise RuntimeError(BACKWARD_ERROR)

    def retain_grad(self):
        """Refused (PyTorch's error) inside a transform."""
        raise RuntimeError(RETAIN_GRAD_ERROR)

    def __getattr__(self, name):
        # Any Tensor method without a batching rule lands here.
        if name.startswith("__") or not hasattr(_Tensor, name):
            raise AttributeError(f"'BatchedTensor' object has no attribute '{name}'")
        from ._rules import refusal

        raise RuntimeError(
            f"vmap: there is no batching rule for Tensor.{name}; it cannot be used inside "
            "vmap/jacrev/jacfwd (ferrograd never falls back to a slow per-sample loop)"
            + refusal(name)
        )


# The methods, properties and operators are attached by ``_methods.py``.
from . import _methods  # noqa: E402,F401


def _guard_backward():
    # Tensor.backward inside a transformed function would accumulate into
    # .grad behind the transform's back; PyTorch refuses it, and so do we.
    # Only the method is guarded: the engine's own calls (a reentrant
    # checkpoint's backward) go through autograd.backward.
    plain = _Tensor.backward
    if getattr(plain, "_transform_guard", False):
        return

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        if transforms_active():
            raise RuntimeError(BACKWARD_ERROR)
        return plain(self, gradient, retain_graph, create_graph, inputs)

    backward.__doc__ = plain.__doc__
    backward._transform_guard = True
    from .._methods import attach

    attach({"backward": backward}, __name__, replace=True)


_guard_backward()

# ----- physical layout across all levels (for the autograd transforms) ---------------------


def to_physical(x, lvls):
    """``x`` as a plain Tensor with one dimension per level of ``lvls`` (in
    order, expanded where ``x`` is unbatched) followed by its logical shape."""
    present = []
    v = x
    while isinstance(v, BatchedTensor):
        present.append(v._level)
        v = v._value
    present.reverse()
    for i, lv in enumerate(lvls):
        if i >= len(present) or present[i] != lv.id:
            v = v.unsqueeze(i)
            shape = list(v.shape)
            shape[i] = lv.size
            v = v.expand(*shape)
            present.insert(i, lv.id)
    if len(present) != len(lvls):
        raise RuntimeError(
            "vmap: a BatchedTensor of a transform that has already returned was used; "
            "transforms must not leak batched values through closures or globals"
        )
    return v


def from_physical(p, lvls):
    """The inverse of ``to_physical``: ``p``'s leading dimensions as the batch
    dimensions of ``lvls``."""
    for lv in lvls:
        p = BatchedTensor(p, lv.id)
    return p
