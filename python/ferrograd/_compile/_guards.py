"""Guards on what a compiled function reads besides its arguments.

A tape bakes in everything the captured call read from Python: a global
number that scaled a tensor, a branch a closure flag chose, the dropout
probability of a module, which tensor a global name was bound to. Replaying
it after any of those changed would return a stale result, so each tape
keeps a :class:`World`: the values it was recorded against, checked before
every replay. A changed value is a guard miss (a new tape is recorded, or
the call runs eagerly past the cache limit), never a stale replay.

What is guarded:

* the closure cells of the compiled function, and of every function reached
  from a guarded value (a helper in a global, a lambda in a cell);
* every global name the captured call's own code refers to (its frames are
  seen with ``sys.setprofile`` during the capture; ferrograd's and the
  standard library's frames are skipped, their globals are not the user's);
* containers (lists, tuples, dicts, sets) reached that way, element by
  element (a list of weights that grows, a number in a dict);
* every ``nn.Module`` reached (as a value, or as ``self`` of a frame): its
  class, ``training``, the identity of each parameter, buffer and
  submodule, its plain attributes (``p``, ``eps``, ...), its hooks, and the
  ``requires_grad`` of its parameters. ``Module`` bumps a state epoch on
  every attribute write, registration and hook change, so a replay
  fingerprints the modules again only after one happened; ``requires_grad``
  is read on every replay;
* plain objects reached (a config object): their attributes that hold
  numbers, strings and the like.

Tensors are guarded by identity: a name rebound to another tensor is a miss,
and the new tape reads the new tensor. Values a tape reads through
``Optimizer.step`` (learning rates, betas, step counts) are not guarded:
the step is a Python call replayed live.
"""

from __future__ import annotations

import sys
import sysconfig
import types
from typing import Any

from .._C import Tensor

_SIMPLE = (int, float, bool, str, bytes, complex, type(None))
_MISSING = object()
_MAX_ITEMS = 256
_STDLIB = {
    p for p in (sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib")) if p
}


def _module_epoch() -> int:
    from ..nn.modules import module

    return module._STATE_EPOCH[0]


def _is_library(g: dict) -> bool:
    name = g.get("__name__", "")
    if name == "ferrograd" or name.startswith("ferrograd."):
        return True
    path = g.get("__file__") or ""
    return any(path.startswith(p) for p in _STDLIB) or "site-packages" in path


_IS = 0  # the same object
_EQ = 1  # an equal value of the same type (numbers, strings, None)
_SEQ = 2  # a list/tuple whose elements are the same objects (and equal simple values)
_MAP = 3  # a dict whose keys and values are the same objects
_OBJ = 4  # the same plain object, with equal simple attributes
_ABSENT = 5  # the name or cell is (still) unbound

_IDENTITY_ONLY = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)


def _item(read, key):
    """A reader of ``read()[key]`` (an element of a guarded container)."""
    return lambda: read()[key]


def _read_cell(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def _simple_attrs(v):
    return tuple((k, type(x), x) for k, x in sorted(vars(v).items()) if type(x) in _SIMPLE)


class World:
    """The non-argument state one tape was recorded against, as a list of
    guards ``(read, kind, expected, label)``: ``read()`` gives the current
    value, ``kind`` how to compare it (chosen when the guard is built, so a
    check is one fast comparison), ``label`` what a miss reports."""

    __slots__ = ("guards", "modules", "functions", "keep", "epoch", "params", "_rg", "seen")

    def __init__(self) -> None:
        self.guards: list = []
        self.modules: dict = {}  # id -> (module, state)
        self.functions: set = set()
        self.keep: list = []  # objects whose ids the guards hold
        self.epoch = -1
        self.params: list = []  # parameters of the reached modules
        self._rg: tuple = ()
        self.seen: set = set()

    # ----- building (during capture) ----------------------------------------------------

    def guard(self, read, value, label: str, depth: int = 0) -> None:
        """Adds the guard for ``value`` (now ``read()``) and for what it reaches."""
        from ..nn.modules.module import Module

        tp = type(value)
        if value is _MISSING:
            self.guards.append((read, _ABSENT, None, label))
            return
        if tp in _SIMPLE:
            self.guards.append((read, _EQ, (tp, value), label))
            return
        self.keep.append(value)
        if tp in (list, tuple) and depth < 3:
            items = list(value)
            self.keep.extend(items)
            self.guards.append((read, _SEQ, (tp, items), label))
            for k, x in enumerate(items):
                if type(x) not in _SIMPLE:
                    self.reach(x, _item(read, k), f"{label}[{k}]", depth + 1)
            return
        if tp is dict and depth < 3:
            items = list(value.items())
            self.keep.append(items)
            self.guards.append((read, _MAP, items, label))
            for k, x in items:
                if type(x) not in _SIMPLE:
                    self.reach(x, _item(read, k), f"{label}[{k!r}]", depth + 1)
            return
        if (
            depth < 3
            and not isinstance(value, (Tensor, Module, _IDENTITY_ONLY, types.ModuleType))
            and hasattr(value, "__dict__")
            and not tp.__module__.startswith(("ferrograd", "builtins", "numpy"))
        ):
            self.guards.append((read, _OBJ, (value, _simple_attrs(value)), label))
            return
        self.guards.append((read, _IS, value, label))
        self.reach(value, read, label, depth)

    def reach(self, value, read, label, depth) -> None:
        """Guards what an identity-guarded value leads to: a module's state, a
        function's closure, a container's elements."""
        from ..nn.modules.module import Module

        if id(value) in self.seen:
            return
        if isinstance(value, Module):
            self.add_module(value)
        elif isinstance(value, (types.FunctionType, types.MethodType)):
            self.add_function(value)
        elif type(value) in (list, tuple, dict) and depth < 3:
            self.seen.add(id(value))
            self.guard(read, value, label, depth)

    def add_function(self, f: Any) -> None:
        f = getattr(f, "__func__", f)
        if id(f) in self.functions or not isinstance(f, types.FunctionType):
            return
        self.functions.add(id(f))
        self.keep.append(f)
        for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
            self.keep.append(cell)
            self.guard(
                (lambda c: lambda: _read_cell(c))(cell),
                _read_cell(cell),
                f"closure variable {name!r} of {f.__qualname__}",
            )

    def add_global(self, g: dict, name: str) -> None:
        value = g.get(name, _MISSING)
        if value is _MISSING or isinstance(value, types.ModuleType):
            return
        self.guard(
            (lambda g, n: lambda: g.get(n, _MISSING))(g, name),
            value,
            f"global {name!r} of {g.get('__name__', '?')}",
        )

    def add_module(self, m: Any) -> None:
        for sub in m.modules():
            if id(sub) not in self.modules:
                self.modules[id(sub)] = (sub, _module_state(sub))
                self.params.extend(sub._parameters.values())
                # The state names its tensors and children by id: keep them so
                # an id cannot be reused by a replacement.
                self.keep.extend(sub._parameters.values())
                self.keep.extend(sub._buffers.values())
                self.keep.extend(sub._modules.values())

    def finish(self) -> None:
        self.params = [p for p in self.params if p is not None]
        self._rg = tuple(p.requires_grad for p in self.params)
        self.epoch = _module_epoch()
        self.seen = set()

    # ----- checking (before a replay) ----------------------------------------------------

    def miss(self) -> str | None:
        """``None`` when everything read is as recorded, else what changed."""
        for read, kind, want, label in self.guards:
            try:
                v = read()
            except Exception:  # noqa: BLE001 - an element that vanished
                return f"{label} (no longer there)"
            if kind == _IS:
                ok = v is want
            elif kind == _EQ:
                ok = type(v) is want[0] and v == want[1]
            elif kind == _SEQ:
                tp, items = want
                ok = type(v) is tp and len(v) == len(items) and all(map(_same, v, items))
            elif kind == _MAP:
                ok = type(v) is dict and len(v) == len(want) and all(
                    k2 is k and _same(x2, x) for (k, x), (k2, x2) in zip(want, v.items())
                )
            elif kind == _OBJ:
                ok = v is want[0] and _simple_attrs(v) == want[1]
            else:
                ok = v is _MISSING
            if not ok:
                return f"{label} changed"
        if self.modules and _module_epoch() != self.epoch:
            for m, state in self.modules.values():
                now = _module_state(m)
                if now != state:
                    return f"the state of module {type(m).__name__} ({_diff(state, now)})"
            self.epoch = _module_epoch()
        if self.params and tuple(p.requires_grad for p in self.params) != self._rg:
            return "requires_grad of a parameter"
        return None


def _module_state(m: Any) -> tuple:
    d = m.__dict__
    simple = tuple(
        (k, type(x), x) for k, x in sorted(d.items()) if type(x) in _SIMPLE and not k.startswith("_")
    )
    hooks = tuple(
        (k, len(x)) for k, x in sorted(d.items()) if k.endswith("_hooks") and isinstance(x, dict)
    )
    return (
        type(m),
        m.training,
        tuple((k, id(v)) for k, v in m._parameters.items()),
        tuple((k, id(v)) for k, v in m._buffers.items()),
        tuple((k, id(v)) for k, v in m._modules.items()),
        simple,
        hooks,
    )


def _same(a, b) -> bool:
    """The same object, or an equal simple value of the same type."""
    return a is b or (type(a) is type(b) and type(a) in _SIMPLE and a == b)


_FIELDS = ("class", "training", "parameters", "buffers", "submodules", "attributes", "hooks")


def _diff(old: tuple, new: tuple) -> str:
    for name, a, b in zip(_FIELDS, old, new):
        if a != b:
            return f"{name} changed"
    return "changed"


class Recorder:
    """Watches the frames a capture runs (``sys.setprofile``) and builds its World."""

    def __init__(self, fn: Any):
        self.world = World()
        self.codes: dict = {}
        self.prev = None
        self.fn = fn

    def _hook(self, frame, event, arg):  # noqa: ANN001
        if event == "call":
            code = frame.f_code
            g = frame.f_globals
            key = (id(code), id(g))
            if key not in self.codes and not _is_library(g):
                self.codes[key] = (code, g)
                loc = frame.f_locals
                s = loc.get("self")
                if s is not None:
                    from ..nn.modules.module import Module

                    if isinstance(s, Module):
                        self.world.add_module(s)
        if self.prev is not None:
            self.prev(frame, event, arg)

    def __enter__(self) -> Recorder:
        self.prev = sys.getprofile()
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc) -> None:
        sys.setprofile(self.prev)
        w = self.world
        fn = self.fn
        from ..nn.modules.module import Module

        if isinstance(fn, Module):
            w.add_module(fn)
        target = getattr(fn, "__func__", fn)
        if isinstance(target, types.FunctionType):
            w.add_function(target)
            self.codes.setdefault((id(target.__code__), id(target.__globals__)),
                                  (target.__code__, target.__globals__))
        for code, g in list(self.codes.values()):
            for name in _names(code):
                if name in g:
                    w.add_global(g, name)
        w.finish()


def _names(code: types.CodeType):
    """The global names ``code`` and the code objects nested in it refer to."""
    seen = set()
    stack = [code]
    while stack:
        c = stack.pop()
        for n in c.co_names:
            if n not in seen:
                seen.add(n)
                yield n
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
