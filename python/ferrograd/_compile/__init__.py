"""``ferrograd.compile``: record a call's ops once, replay them in Rust.

The first call of a compiled function runs eagerly (it creates lazily built
state such as optimizer buffers). The next call with a new guard set runs
eagerly too while Rust records every op it runs into a tape
(``_C._capture_begin``/``_capture_end``); later calls whose guards match
replay that tape in one Rust call with the GIL released. See
ARCHITECTURE.md, "Capture and replay".
"""

from __future__ import annotations

import functools
import warnings
import weakref
from typing import Any, Callable

from .. import _C
from .._C import Tensor
from .._dynamo import config
from . import _guards

__all__ = ["compile", "CompiledFunction"]

_BACKENDS = ("inductor", "ferrograd", "tape")
_EAGER_BACKENDS = ("eager", "aot_eager")
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_OPTIONS = ("check",)

_ALL: weakref.WeakSet[CompiledFunction] = weakref.WeakSet()


def _reset_all() -> None:
    for f in list(_ALL):
        f._reset()


def _mark(method: str) -> Callable:
    base = getattr(float, method)

    def f(self, *args):
        if args and isinstance(args[0], Tensor):
            return NotImplemented
        self._derived = True
        return base(self, *args)

    f.__name__ = method
    return f


class _FloatArg(float):
    """A float argument during capture. An op given it directly makes it an
    input of the tape; any other use (arithmetic, comparison, formatting)
    marks it derived, and a derived number is specialised: its value becomes
    a guard, so a new value records a new tape instead of replaying a stale
    constant."""

    _derived = False


class _IntArg(int):
    """An int argument during capture; see ``_FloatArg``."""

    _derived = False


def _mark_int(method: str) -> Callable:
    base = getattr(int, method)

    def f(self, *args):
        if args and isinstance(args[0], Tensor):
            return NotImplemented
        self._derived = True
        return base(self, *args)

    f.__name__ = method
    return f


_DUNDERS = (
    "__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ "
    "__floordiv__ __rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __divmod__ __rdivmod__ "
    "__neg__ __pos__ __abs__ __float__ __int__ __round__ __trunc__ __floor__ __ceil__ "
    "__bool__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __hash__ __repr__ __str__ "
    "__format__ is_integer as_integer_ratio"
).split()
for _m in _DUNDERS:
    if hasattr(float, _m):
        setattr(_FloatArg, _m, _mark(_m))
for _m in _DUNDERS + "__index__ __and__ __or__ __xor__ __lshift__ __rshift__ __invert__ bit_length".split():
    if hasattr(int, _m):
        setattr(_IntArg, _m, _mark_int(_m))


# ----- argument structure ----------------------------------------------------------------


def _flatten(obj: Any, path: str, leaves: list, keep: list) -> Any:
    """The structure of ``obj`` (hashable) with tensors and numbers taken out
    into ``leaves`` as ``(kind, value, path)``."""
    if isinstance(obj, Tensor):
        leaves.append(("t", obj, path))
        return "T"
    tp = type(obj)
    if tp is float or tp is int:
        leaves.append(("n", obj, path))
        return tp.__name__
    if tp is bool or obj is None or tp is str or tp is bytes:
        return (tp.__name__, obj)
    if tp is tuple or tp is list:
        return (tp.__name__, tuple(_flatten(x, f"{path}[{i}]", leaves, keep) for i, x in enumerate(obj)))
    if tp is dict:
        return ("dict", tuple((k, _flatten(v, f"{path}[{k!r}]", leaves, keep)) for k, v in obj.items()))
    # Anything else (a module, a function, a dtype) is guarded by identity and
    # passed through as it is; the entry keeps a reference so the id cannot
    # be reused.
    keep.append(obj)
    leaves.append(("o", obj, path))
    return ("id", id(obj))


def _rebuild(spec: Any, it) -> Any:
    if spec == "T" or spec == "float" or spec == "int" or spec[0] == "id":
        return next(it)
    if spec[0] in ("bool", "NoneType", "str", "bytes"):
        return spec[1]
    if spec[0] == "tuple":
        return tuple(_rebuild(s, it) for s in spec[1])
    if spec[0] == "list":
        return [_rebuild(s, it) for s in spec[1]]
    if spec[0] == "dict":
        return {k: _rebuild(s, it) for k, s in spec[1]}
    if spec[0] == "const":
        return spec[1]
    raise AssertionError(spec)


def _tensor_guard(t: Tensor) -> tuple:
    return (tuple(t.shape), t.dtype, t.stride(), t.requires_grad, t.is_leaf)


def _describe_miss(old: tuple, new: tuple, paths: list[str]) -> str:
    """Names the first guard on which key ``new`` differs from ``old``."""
    if old[0] != new[0]:
        return "the structure of the arguments (their types, containers or non-tensor values)"
    if old[3] != new[3]:
        return "grad mode (ferrograd.is_grad_enabled())"
    if old[2] != new[2]:
        return "which tensor arguments are the same tensor"
    names = ("shape", "dtype", "stride", "requires_grad", "is_leaf")
    for (o, n, p) in zip(old[1], new[1], paths):
        for i, nm in enumerate(names):
            if o[i] != n[i]:
                return f"{nm} of tensor argument {p} ({o[i]} != {n[i]})"
    return "the arguments' guards"


class _Tape:
    """One recorded tape and the number arguments it is specialised on."""

    __slots__ = ("tape", "spec_values", "out_spec", "checks_left", "optimizers", "world")

    def __init__(self, tape, spec_values, out_spec, checks_left, optimizers, world):
        self.tape = tape
        self.spec_values = spec_values
        self.out_spec = out_spec
        self.checks_left = checks_left
        self.optimizers = optimizers
        # What the call read besides its arguments (``_guards.World``).
        self.world = world


class _Entry:
    """Everything recorded for one guard key."""

    __slots__ = ("tapes", "eager_reason", "keep")

    def __init__(self, keep):
        self.tapes: list[_Tape] = []
        self.eager_reason: str | None = None
        self.keep = keep


# The optimizers whose step a running capture recorded (for check=True).
_capture_optimizers: list = []


def _optimizer_step(opt: Any, call: Callable[[], Any], has_closure: bool) -> Any:
    """Called by ``Optimizer.step`` while a capture runs: the step is recorded
    as one Python call replayed at the same point, so learning-rate
    schedules and step counters behave exactly as in eager mode."""
    if has_closure:
        _C._capture_refuse("`optimizer.step(closure)` has no replay rule (call the closure's code directly)")
        return call()
    _capture_optimizers.append(opt)
    return _C._capture_pycall(f"{type(opt).__name__}.step", call)


class CompiledFunction:
    """A function compiled by ``ferrograd.compile``; call it like the original."""

    def __init__(self, fn: Callable, fullgraph: bool, check: bool, enabled: bool):
        self._fn = fn
        self._fullgraph = fullgraph
        self._check = check
        self._enabled = enabled
        self._entries: dict[tuple, _Entry] = {}
        self._ntapes = 0
        self._called = False
        self._last_key: tuple | None = None
        self._warned: set[str] = set()
        # Grad mode -> (key, tape) of a call without arguments, the usual
        # training step: its guards are only grad mode, so such a call skips
        # flattening and guard building.
        self._noarg: dict[bool, tuple] = {}
        # jit.trace's modules replay through compile; a capture that falls back
        # to eager is no news to their users.
        self._warn_fallback = True
        # Why the last replay candidate was refused by its world guards.
        self._world_miss: str | None = None
        functools.update_wrapper(self, fn)
        _ALL.add(self)

    def _reset(self) -> None:
        self._noarg.clear()
        self._entries.clear()
        self._ntapes = 0
        self._called = False
        self._last_key = None

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    @property
    def tapes(self) -> list:
        """The recorded tapes (``_C._Tape``: ``.ops`` lists their entries)."""
        return [t.tape for e in self._entries.values() for t in e.tapes]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs and self._enabled:
            hit = self._noarg.get(_C.is_grad_enabled())
            if (
                hit is not None
                and hit[1].checks_left == 0
                and not _C._capture_active()
                and hit[1].world.miss() is None
            ):
                self._last_key = hit[0]
                outs = hit[1].tape.replay([], [])
                # A lone tensor result (a loss) needs no rebuilding.
                spec = hit[1].out_spec
                return outs[0] if spec == "T" else _rebuild(spec, iter(outs))
        if not self._enabled or _C._capture_active():
            return self._fn(*args, **kwargs)
        leaves: list = []
        keep: list = []
        spec = _flatten((args, kwargs), "", leaves, keep)
        tensors = [v for k, v, _ in leaves if k == "t"]
        self._world_miss = None
        ids = [id(t) for t in tensors]
        alias = tuple(ids.index(i) for i in ids)
        key = (spec, tuple(_tensor_guard(t) for t in tensors), alias, _C.is_grad_enabled())
        if not self._called:
            self._called = True
            self._last_key = key
            return self._fn(*args, **kwargs)
        entry = self._entries.get(key)
        numbers = [v for k, v, _ in leaves if k == "n"]
        if entry is not None:
            if entry.eager_reason is not None:
                return self._fn(*args, **kwargs)
            for t in entry.tapes:
                if all(numbers[i] == v and type(numbers[i]) is type(v) for i, v in t.spec_values):
                    why = t.world.miss()
                    if why is not None:
                        self._world_miss = why
                        continue
                    self._last_key = key
                    if not args and not kwargs:
                        self._noarg[key[3]] = (key, t)
                    return self._replay(t, args, kwargs, tensors, numbers)
        miss = self._miss_name(key, entry, numbers, leaves)
        if self._ntapes >= config.cache_size_limit:
            if miss not in self._warned and self._warn_fallback:
                self._warned.add(miss)
                warnings.warn(
                    f"ferrograd.compile: {self._name()} hit config.cache_size_limit "
                    f"({config.cache_size_limit}) tapes; the guard that keeps failing is {miss}. "
                    "Calls that match no recorded tape now run eagerly (raise "
                    "ferrograd._dynamo.config.cache_size_limit, or pass that argument as a "
                    "tensor or keep it fixed).",
                    RuntimeWarning,
                    stacklevel=2,
                )
            return self._fn(*args, **kwargs)
        if entry is None:
            entry = _Entry(keep)
            self._entries[key] = entry
        self._last_key = key
        return self._capture(entry, args, kwargs, leaves, spec, tensors)

    def _name(self) -> str:
        return getattr(self._fn, "__qualname__", None) or repr(self._fn)

    def _miss_name(self, key, entry, numbers, leaves) -> str:
        if self._world_miss is not None:
            return self._world_miss
        paths = [p for k, _, p in leaves if k == "t"]
        npaths = [p for k, _, p in leaves if k == "n"]
        if entry is not None and entry.tapes:
            for i, v in entry.tapes[-1].spec_values:
                if numbers[i] != v or type(numbers[i]) is not type(v):
                    return (
                        f"the value of number argument {npaths[i] or i} ({v!r} != {numbers[i]!r}; it is "
                        "specialised because the function uses it in Python arithmetic or control "
                        "flow, or never hands it to an op)"
                    )
        if self._last_key is not None and self._last_key != key:
            return _describe_miss(self._last_key, key, paths)
        return "the arguments' guards"

    # ----- capture ------------------------------------------------------------------

    def _capture(self, entry: _Entry, args, kwargs, leaves, spec, tensors) -> Any:
        wrapped = []
        numbers = []
        for k, v, _ in leaves:
            if k == "t" or k == "o":
                wrapped.append(v)
            else:
                w = _FloatArg(v) if type(v) is float else _IntArg(v)
                wrapped.append(w)
                numbers.append(w)
        wargs, wkwargs = _rebuild(spec, iter(wrapped))
        grad_mode = _C.is_grad_enabled()
        del _capture_optimizers[:]
        _C._capture_begin(tensors, numbers)
        try:
            with _guards.Recorder(self._fn) as recorder:
                out = self._fn(*wargs, **wkwargs)
        except BaseException:
            _C._capture_abort()
            raise
        out_leaves: list = []
        out_keep: list = []
        try:
            out_spec = _flatten(out, "", out_leaves, out_keep)
            # A number in the result is returned as recorded: if it is an argument
            # (or made from one) that argument is specialised. A result that cannot be
            # rebuilt raises here, and the capture must end with it.
            out_spec = _constify(out_spec, out_leaves)
        except BaseException:
            _C._capture_abort()
            raise
        out_tensors = [v for k, v, _ in out_leaves if k == "t"]
        for k, v, _ in out_leaves:
            if k == "n" and isinstance(v, (_FloatArg, _IntArg)):
                v._derived = True
        tape, why, seen = _C._capture_end(out_tensors, grad_mode, len(tensors))
        optimizers = list(_capture_optimizers)
        del _capture_optimizers[:]
        result = _rebuild(out_spec, iter(out_tensors))
        if why is not None:
            msg = f"ferrograd.compile: cannot capture {self._name()}: {why}"
            if self._fullgraph:
                entry.eager_reason = msg
                raise RuntimeError(msg + " (fullgraph=True; this call ran eagerly)")
            entry.eager_reason = msg
            if self._warn_fallback:
                warnings.warn(msg + ". Calls with these guards run eagerly.", RuntimeWarning, stacklevel=3)
            return result
        spec_values = []
        for i, (w, s) in enumerate(zip(numbers, seen)):
            if w._derived or not s or type(w) is _IntArg and not s:
                spec_values.append((i, float(w) if type(w) is _FloatArg else int(w)))
        entry.tapes.append(
            _Tape(
                tape,
                tuple(spec_values),
                out_spec,
                config.check_calls if self._check else 0,
                optimizers,
                recorder.world,
            )
        )
        self._ntapes += 1
        return result

    # ----- replay -------------------------------------------------------------------

    def _replay(self, t: _Tape, args, kwargs, tensors, numbers) -> Any:
        if t.checks_left > 0:
            t.checks_left -= 1
            return self._checked(t, args, kwargs, tensors, numbers)
        outs = t.tape.replay(tensors, [float(n) for n in numbers])
        return _rebuild(t.out_spec, iter(outs))

    def _checked(self, t: _Tape, args, kwargs, tensors, numbers) -> Any:
        from ._check import compare, restore, snapshot

        state = snapshot(t.tape.constants, tensors, t.optimizers)
        outs = t.tape.replay(tensors, [float(n) for n in numbers])
        after = snapshot(t.tape.constants, tensors, t.optimizers)
        restore(state)
        eager = self._fn(*args, **kwargs)
        eager_leaves: list = []
        _flatten(eager, "", eager_leaves, [])
        eager_outs = [v for k, v, _ in eager_leaves if k == "t"]
        compare(self._name(), outs, eager_outs, after, snapshot(t.tape.constants, tensors, t.optimizers))
        restore(after)
        return _rebuild(t.out_spec, iter(outs))


def _constify_spec(s: Any, nums) -> Any:
    if s == "T":
        return s
    if s == "float" or s == "int":
        v = next(nums)
        return ("const", float(v) if s == "float" else int(v))
    if s[0] in ("tuple", "list"):
        return (s[0], tuple(_constify_spec(x, nums) for x in s[1]))
    if s[0] == "dict":
        return ("dict", tuple((k, _constify_spec(x, nums)) for k, x in s[1]))
    if s[0] == "id":
        raise RuntimeError(
            "ferrograd.compile: the function returned an object that is not a tensor, number, "
            "string, None or a tuple/list/dict of them; it cannot be rebuilt on replay"
        )
    return s


def _constify(spec: Any, leaves: list) -> Any:
    """``spec`` with its number leaves turned into constants (the tape's
    outputs are its tensors only)."""
    return _constify_spec(spec, iter([v for k, v, _ in leaves if k != "t"]))


def compile(
    model: Callable | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | Callable = "inductor",
    mode: str | None = None,
    options: dict | None = None,
    disable: bool = False,
    check: bool = False,
) -> Any:
    """Compiles ``model`` (a function or callable; used bare or as
    ``@ferrograd.compile(...)``) with ``torch.compile``'s signature. The first
    call runs eagerly, the second records a tape of the ops it runs (forward,
    ``backward()``, optimizer steps), and later calls whose guards match
    (tensor shapes, dtypes, strides, ``requires_grad``, grad mode, argument
    structure) replay it in Rust. ``fullgraph=True`` raises instead of
    warning when something cannot be captured; ``check=True`` (or
    ``options={"check": True}``) compares the first replays with eager runs.
    ``backend`` may be ``"inductor"`` (default), ``"ferrograd"`` or ``"tape"``
    (all the tape), or ``"eager"``/``"aot_eager"`` (no capture); ``mode`` is
    accepted for portability and changes nothing; ``dynamic`` is accepted but
    shapes are always specialised (each new shape records a new tape)."""
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: " + ", ".join(str(m) for m in _MODES[1:]))
    if callable(backend) or backend not in _BACKENDS + _EAGER_BACKENDS:
        raise ValueError(
            f"ferrograd.compile: unsupported backend {backend!r}; use one of "
            + ", ".join(repr(b) for b in _BACKENDS + _EAGER_BACKENDS)
        )
    opts = dict(options or {})
    for k in opts:
        if k not in _OPTIONS:
            raise ValueError(f"ferrograd.compile: unknown option {k!r} (supported: {', '.join(_OPTIONS)})")
    check = bool(check or opts.get("check", False))
    enabled = not disable and backend not in _EAGER_BACKENDS

    def wrap(fn: Callable) -> CompiledFunction:
        if not callable(fn):
            raise TypeError(f"ferrograd.compile expects a callable, got {type(fn).__name__}")
        return CompiledFunction(fn, fullgraph, check, enabled)

    if model is None:
        return wrap
    return wrap(model)
