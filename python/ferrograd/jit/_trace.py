"""Tracing: run a function once on real tensors and record the ops it calls.

While a trace runs, the function sees ``_Value`` objects instead of its
tensor inputs and instead of the module's parameters and buffers: each holds
the real tensor and the number of its *slot* in the program. A ``_Value`` is
not a ``Tensor``, so a ``ferrograd`` function given one hands the call to
``_Value.__ferrograd_function__`` (the dispatch protocol vmap's
``BatchedTensor`` uses); methods and operators are ``_Value``'s own. Either
way the tracer runs the real op on the real tensors, records the op (which
function or method, its arguments with ``_Value``s replaced by slot numbers,
its results as new slots) and returns ``_Value``s for the tensor results.
Factory functions (``arange``, ``zeros``, ``randn``, ...) are recorded too
while a trace runs, so a mask sized from the input or a noise sample is made
again on every call. Sizes read from a traced tensor (``x.size(0)``,
``x.shape``) are ``_SymInt``s: ints that remember where they came from, so
``x.view(x.size(0), -1)`` replays for any batch size; other Python uses of a
value (``bool(x)``, ``x.item()``, a size in an ``if``) are baked into the
trace, with PyTorch's ``TracerWarning``.

The result is a ``Program``: a straight-line list of ops over slots, run by
``Program.run`` with the parameters and inputs of a call.
"""

from __future__ import annotations

import contextlib
import threading
import warnings

from .. import _C
from .._C import Tensor

__all__ = ["TracerWarning", "Program", "is_tracing", "record"]


class TracerWarning(Warning):
    """A trace may not generalize: a value was used in a way the trace cannot record."""


_local = threading.local()


def _tracer():
    return getattr(_local, "tracer", None)


def is_tracing():
    """Whether a ``jit.trace`` is recording on this thread."""
    t = _tracer()
    return t is not None and not t.paused


# ----- templates: arguments with tensors replaced by references -----------------------------

class _Slot:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


class _Const:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


class _Sym:
    """A size computed from slots' shapes: ``("size", slot, dim)``, ``("numel",
    slot)``, ``(op, a, b)`` for ``add sub mul floordiv mod``, ``("neg", a)``,
    with ints as leaves."""

    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr


class _SliceT:
    __slots__ = ("start", "stop", "step")

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step


# ----- symbolic sizes ----------------------------------------------------------------------

def _sym_binary(op, fn, reflected=False):
    def method(self, other):
        if isinstance(other, bool) or not isinstance(other, int):
            res = getattr(int, f"__{'r' if reflected else ''}{op}__")(int(self), other)
            return res
        value = fn(int(other), int(self)) if reflected else fn(int(self), int(other))
        a, b = _expr_of(self), _expr_of(other)
        return _SymInt(value, (op, b, a) if reflected else (op, a, b))

    return method


def _expr_of(x):
    return x._expr if isinstance(x, _SymInt) else int(x)


class _SymInt(int):
    """An int read from a traced tensor's shape, remembering how: passed to a
    recorded op, it is recomputed from the call's shapes; ``+ - * // %`` keep
    it symbolic; any other use treats it as the number it is."""

    def __new__(cls, value, expr):
        self = super().__new__(cls, value)
        self._expr = expr
        return self

    def __neg__(self):
        return _SymInt(-int(self), ("neg", self._expr))

    def __pos__(self):
        return self

    def __repr__(self):
        return repr(int(self))

    __str__ = __repr__

    def __reduce__(self):
        return (int, (int(self),))


for _op, _fn in (
    ("add", lambda a, b: a + b),
    ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b),
    ("floordiv", lambda a, b: a // b),
    ("mod", lambda a, b: a % b),
):
    setattr(_SymInt, f"__{_op}__", _sym_binary(_op, _fn))
    setattr(_SymInt, f"__r{_op}__", _sym_binary(_op, _fn, reflected=True))


def eval_expr(expr, env):
    """The value of a ``_Sym`` expression for the tensors in ``env``."""
    if isinstance(expr, int):
        return expr
    op = expr[0]
    if op == "size":
        return env[expr[1]].shape[expr[2]]
    if op == "numel":
        return env[expr[1]].numel()
    if op == "neg":
        return -eval_expr(expr[1], env)
    a, b = eval_expr(expr[1], env), eval_expr(expr[2], env)
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "floordiv":
        return a // b
    if op == "mod":
        return a % b
    raise ValueError(f"unknown size expression {op!r}")


# ----- the traced value --------------------------------------------------------------------

def _warn_constant(kind):
    warnings.warn(
        f"Converting a tensor to a Python {kind} might cause the trace to be incorrect. We can't "
        "record the data flow of Python values, so this value will be treated as a constant in "
        "the future. This means that the trace might not generalize to other inputs!",
        TracerWarning,
        stacklevel=3,
    )


class _Value:
    """A tensor during a trace: the real tensor and its slot in the program."""

    __slots__ = ("_t", "_slot", "__weakref__")

    def __init__(self, t, slot):
        self._t = t
        self._slot = slot

    @classmethod
    def __ferrograd_function__(cls, func, types, args, kwargs=None):
        return _active().call(("function", func), args, kwargs or {})

    # ----- sizes -----
    @property
    def shape(self):
        from .._size import Size

        return Size(_SymInt(s, ("size", self._slot, i)) for i, s in enumerate(self._t.shape))

    def size(self, dim=None):
        if dim is None:
            return self.shape
        nd = self._t.dim()
        d = dim + nd if dim < 0 else dim
        return _SymInt(self._t.size(dim), ("size", self._slot, d))

    def numel(self):
        return _SymInt(self._t.numel(), ("numel", self._slot))

    nelement = numel

    def dim(self):
        return self._t.dim()

    ndimension = dim

    @property
    def ndim(self):
        return self._t.dim()

    def __len__(self):
        # len() must return a plain int, so the size is baked in (PyTorch warns too).
        warnings.warn(
            "Using len to get tensor shape might cause the trace to be incorrect. Recommended "
            "usage would be tensor.shape[0]. Passing a tensor of different shape might result "
            "in the trace being incorrect.",
            TracerWarning,
            stacklevel=2,
        )
        return len(self._t)

    # ----- values leaving the trace -----
    def item(self):
        _warn_constant("number")
        return self._t.item()

    def tolist(self):
        _warn_constant("list")
        return self._t.tolist()

    def numpy(self, *args, **kwargs):
        _warn_constant("array")
        return self._t.numpy(*args, **kwargs)

    def __array__(self, dtype=None, copy=None):
        _warn_constant("array")
        a = self._t.detach().numpy()
        return a if dtype is None else a.astype(dtype)

    def __bool__(self):
        _warn_constant("boolean")
        return bool(self._t)

    def __float__(self):
        _warn_constant("float")
        return float(self._t)

    def __int__(self):
        _warn_constant("integer")
        return int(self._t)

    def __index__(self):
        _warn_constant("index")
        return self._t.__index__()

    def __iter__(self):
        if self._t.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(_active().call(("method", "unbind"), (self, 0), {}))

    def __repr__(self):
        return repr(self._t)

    def __format__(self, spec):
        return self._t.__format__(spec)

    def __hash__(self):
        return id(self)

    def __setitem__(self, index, value):
        _active().call(("method", "__setitem__"), (self, index, value), {})

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        attr = getattr(self._t, name)
        if isinstance(attr, Tensor):
            return _active().call(("attr", name), (self,), {})
        if callable(attr):
            def method(*args, **kwargs):
                return _active().call(("method", name), (self, *args), kwargs)

            method.__name__ = name
            return method
        return attr


_DUNDERS = (
    "add radd iadd sub rsub isub mul rmul imul truediv rtruediv itruediv floordiv rfloordiv "
    "ifloordiv mod rmod imod pow rpow ipow matmul rmatmul imatmul and rand iand or ror ior xor "
    "rxor ixor lshift rlshift rshift rrshift eq ne lt le gt ge getitem neg pos abs invert"
).split()
DUNDER_METHODS = frozenset(f"__{n}__" for n in _DUNDERS) | {"__setitem__"}


def _dunder(name):
    def method(self, *args):
        return _active().call(("method", name), (self, *args), {})

    method.__name__ = name
    return method


for _n in DUNDER_METHODS:
    if _n != "__setitem__":
        setattr(_Value, _n, _dunder(_n))


# ----- the tracer --------------------------------------------------------------------------

class _Tracer:
    def __init__(self):
        self.ops = []
        self.values = {}  # id(real tensor) -> _Value
        self.keep = []  # the real tensors, so their ids stay unique while tracing
        self.consts = []
        self.const_ids = {}
        self.nslots = 0
        self.paused = False

    def value(self, t):
        v = self.values.get(id(t))
        if v is None:
            v = _Value(t, self.nslots)
            self.nslots += 1
            self.values[id(t)] = v
            self.keep.append(t)
        return v

    def template(self, obj):
        """``obj`` with traced values, sizes and other tensors replaced by references."""
        if isinstance(obj, _Value):
            return _Slot(obj._slot)
        if isinstance(obj, _SymInt):
            return _Sym(obj._expr)
        if isinstance(obj, Tensor):
            v = self.values.get(id(obj))
            if v is not None:
                return _Slot(v._slot)
            i = self.const_ids.get(id(obj))
            if i is None:
                i = len(self.consts)
                self.consts.append(obj)
                self.const_ids[id(obj)] = i
            return _Const(i)
        if isinstance(obj, slice):
            return _SliceT(self.template(obj.start), self.template(obj.stop),
                           self.template(obj.step))  # fmt: skip
        if isinstance(obj, tuple):
            return tuple(self.template(x) for x in obj)
        if isinstance(obj, list):
            return [self.template(x) for x in obj]
        if isinstance(obj, dict):
            return {k: self.template(v) for k, v in obj.items()}
        return obj

    def bind(self, result):
        """The template of an op's result (new slots for new tensors) and the
        result with its tensors wrapped."""
        if isinstance(result, Tensor):
            v = self.value(result)
            return _Slot(v._slot), v
        if isinstance(result, tuple):
            pairs = [self.bind(r) for r in result]
            wrapped = [w for _, w in pairs]
            if hasattr(result, "_fields"):
                return tuple(t for t, _ in pairs), type(result)(*wrapped)
            return tuple(t for t, _ in pairs), tuple(wrapped)
        if isinstance(result, list):
            pairs = [self.bind(r) for r in result]
            return [t for t, _ in pairs], [w for _, w in pairs]
        return result, result

    def call(self, fn, args, kwargs):
        targs, tkw = self.template(args), self.template(kwargs)
        rargs, rkw = _unwrap(args), _unwrap(kwargs)
        kind = fn[0]
        self.paused = True
        try:
            if kind == "method":
                result = getattr(rargs[0], fn[1])(*rargs[1:], **rkw)
            elif kind == "attr":
                result = getattr(rargs[0], fn[1])
            else:
                result = fn[1](*rargs, **rkw)
        finally:
            self.paused = False
        tout, wrapped = self.bind(result)
        self.ops.append((fn, targs, tkw, tout))
        return wrapped


def _active():
    t = _tracer()
    if t is None:
        raise RuntimeError(
            "ferrograd.jit: a traced value was used after its trace ended (a value computed "
            "inside the traced function escaped it, for example through an attribute)"
        )
    return t


def _unwrap(obj):
    if isinstance(obj, _Value):
        return obj._t
    if isinstance(obj, _SymInt):
        return int(obj)
    if isinstance(obj, slice):
        return slice(_unwrap(obj.start), _unwrap(obj.stop), _unwrap(obj.step))
    if isinstance(obj, tuple):
        items = [_unwrap(x) for x in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, list):
        return [_unwrap(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _unwrap(v) for k, v in obj.items()}
    return obj


# ----- factory functions -------------------------------------------------------------------

FACTORIES = (
    "arange", "zeros", "ones", "empty", "full", "eye", "linspace", "tensor", "rand", "randn",
    "randint", "randperm", "normal",
)  # fmt: skip


def _factory_wrapper(original):
    def factory(*args, **kwargs):
        t = _tracer()
        if t is None or t.paused:
            return original(*args, **kwargs)
        return t.call(("function", original), args, kwargs)

    factory.__name__ = getattr(original, "__name__", "factory")
    factory.__doc__ = getattr(original, "__doc__", None)
    factory._traced_original = original
    return factory


@contextlib.contextmanager
def _patched_factories():
    import ferrograd

    saved = []
    for ns in (ferrograd, _C):
        for name in FACTORIES:
            f = getattr(ns, name, None)
            if f is None or hasattr(f, "_traced_original"):
                continue
            saved.append((ns, name, f))
            setattr(ns, name, _factory_wrapper(f))
    try:
        yield
    finally:
        for ns, name, f in saved:
            setattr(ns, name, f)


# ----- the program -------------------------------------------------------------------------

class Program:
    """A traced function: ops over numbered slots. Slots ``0 .. len(params)-1``
    are the module's parameters and buffers (by qualified name), then the
    call's tensor inputs, then each op's tensor results."""

    def __init__(self, params, n_inputs, input_spec, ops, outputs, consts):
        self.params = list(params)
        self.n_inputs = n_inputs
        self.input_spec = input_spec
        self.ops = ops
        self.outputs = outputs
        self.consts = consts

    def run(self, param_values, inputs):
        env = {}
        for i, t in enumerate(param_values):
            env[i] = t
        base = len(self.params)
        if len(inputs) != self.n_inputs:
            raise RuntimeError(
                f"forward() expected {self.n_inputs} tensor input(s), got {len(inputs)}"
            )
        for i, t in enumerate(inputs):
            env[base + i] = t
        consts = self.consts
        for fn, targs, tkw, tout in self.ops:
            args = _fill(targs, env, consts)
            kwargs = _fill(tkw, env, consts)
            kind = fn[0]
            if kind == "method":
                result = getattr(args[0], fn[1])(*args[1:], **kwargs)
            elif kind == "attr":
                result = getattr(args[0], fn[1])
            else:
                result = fn[1](*args, **kwargs)
            _bind(tout, result, env)
        return _fill(self.outputs, env, consts)


def _fill(t, env, consts):
    if isinstance(t, _Slot):
        return env[t.i]
    if isinstance(t, _Const):
        return consts[t.i]
    if isinstance(t, _Sym):
        return eval_expr(t.expr, env)
    if isinstance(t, _SliceT):
        return slice(_fill(t.start, env, consts), _fill(t.stop, env, consts),
                     _fill(t.step, env, consts))  # fmt: skip
    if isinstance(t, tuple):
        return tuple(_fill(x, env, consts) for x in t)
    if isinstance(t, list):
        return [_fill(x, env, consts) for x in t]
    if isinstance(t, dict):
        return {k: _fill(v, env, consts) for k, v in t.items()}
    return t


def _bind(tout, result, env):
    if isinstance(tout, _Slot):
        env[tout.i] = result
    elif isinstance(tout, (tuple, list)):
        for t, r in zip(tout, result):
            _bind(t, r, env)


# ----- recording ---------------------------------------------------------------------------

def _flat_tensors(obj, out):
    """The structure of ``obj`` with its tensors taken out, in order, into ``out``."""
    if isinstance(obj, Tensor):
        out.append(obj)
        return _Slot(len(out) - 1)
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(_flat_tensors(x, out) for x in obj)
    if isinstance(obj, list):
        return [_flat_tensors(x, out) for x in obj]
    if isinstance(obj, dict):
        return {k: _flat_tensors(v, out) for k, v in obj.items()}
    return obj


def _rebuild_inputs(spec, values):
    if isinstance(spec, _Slot):
        return values[spec.i]
    if isinstance(spec, tuple):
        return tuple(_rebuild_inputs(x, values) for x in spec)
    if isinstance(spec, list):
        return [_rebuild_inputs(x, values) for x in spec]
    if isinstance(spec, dict):
        return {k: _rebuild_inputs(v, values) for k, v in spec.items()}
    return spec


def record(fn, module, args, kwargs):
    """Runs ``fn(*args, **kwargs)`` once on traced values and returns the
    program and the call's real result. ``module``'s parameters and buffers
    (if a module is given) are traced values during the call."""
    if _tracer() is not None:
        raise RuntimeError("ferrograd.jit.trace: traces cannot be nested")
    tracer = _Tracer()
    params = []
    swaps = []
    if module is not None:
        seen = {}
        for mod_name, mod in module.named_modules(remove_duplicate=False):
            for kind in ("_parameters", "_buffers"):
                for name, t in list(getattr(mod, kind).items()):
                    if t is None or not isinstance(t, Tensor):
                        continue
                    full = f"{mod_name}.{name}" if mod_name else name
                    if id(t) in seen:
                        v = seen[id(t)]
                    else:
                        v = tracer.value(t)
                        seen[id(t)] = v
                        params.append(full)
                    swaps.append((getattr(mod, kind), name, t, v))
    inputs = []
    spec = _flat_tensors((tuple(args), dict(kwargs)), inputs)
    owned = {id(p) for (_, _, p, _) in swaps}
    values = []
    for t in inputs:
        if id(t) in owned:
            raise RuntimeError(
                "ferrograd.jit.trace: an example input is one of the module's parameters or "
                "buffers; pass a separate tensor"
            )
        # Every input is a slot of its own, even one tensor passed twice.
        v = _Value(t, tracer.nslots)
        tracer.nslots += 1
        tracer.values[id(t)] = v
        tracer.keep.append(t)
        values.append(v)
    targs, tkwargs = _rebuild_inputs(spec, values)
    _local.tracer = tracer
    try:
        for d, name, _, v in swaps:
            d[name] = v
        with _patched_factories():
            out = fn(*targs, **tkwargs)
    finally:
        for d, name, t, _ in swaps:
            d[name] = t
        _local.tracer = None
    tout = tracer.template(out)
    real_out = _unwrap(out)
    program = Program(params, len(inputs), spec, tracer.ops, tout, tracer.consts)
    return program, real_out
