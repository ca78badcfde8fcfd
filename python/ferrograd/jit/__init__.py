"""``ferrograd.jit``: PyTorch's ``torch.jit`` entry points for code copied from
PyTorch, on ferrograd's own capture.

- ``trace(model, example_inputs)`` runs the model once, records the ops it
  calls (``jit._trace``) and returns a ``TracedModule``: a module with the
  same parameters and buffers (shared with the model, so training either
  trains both) whose ``forward`` replays the recorded ops through
  ``ferrograd.compile``. As with PyTorch's tracer, Python control flow is
  fixed at trace time (with ``TracerWarning`` where a value decided it);
  sizes read from the inputs stay symbolic, so other batch sizes work.
- ``save(traced, path)`` writes the weights and the recorded program as a
  safetensors file (``jit._format``); ``load(path)`` rebuilds a module that
  runs the same ops, with no Python class of the model needed and no code
  from the file run.
- ``script`` has no compiler behind it: it returns the function or module
  unchanged, so scripted code keeps running eagerly. ``ignore``, ``unused``,
  ``export``, ``interface``, ``annotate``, ``Final``, ``fork``/``wait``,
  ``freeze`` and ``optimize_for_inference`` keep the code working as it
  does without TorchScript.
"""

from __future__ import annotations

import copy
import functools
import os
import warnings
from typing import Final  # noqa: F401 - ``torch.jit.Final``, re-exported

from .._C import Tensor
from ..nn.modules.module import Module
from . import _format
from ._trace import TracerWarning, is_tracing, record

__all__ = [
    "Attribute",
    "Error",
    "Final",
    "Future",
    "ScriptFunction",
    "ScriptModule",
    "TracedModule",
    "TracerWarning",
    "annotate",
    "export",
    "fork",
    "freeze",
    "ignore",
    "interface",
    "is_scripting",
    "is_tracing",
    "isinstance",
    "load",
    "optimize_for_inference",
    "save",
    "script",
    "script_if_tracing",
    "trace",
    "trace_module",
    "unused",
    "wait",
]

_builtin_isinstance = isinstance


class Error(RuntimeError):
    """``torch.jit.Error``: raised where TorchScript code would raise."""


# ----- decorators that keep eager code working ---------------------------------------------

def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Returns ``obj`` unchanged: ferrograd has no TorchScript compiler, and the
    Python code it would compile runs eagerly as written (``@jit.script``
    functions, ``jit.script(model)``). To capture a model for speed or for
    ``jit.save``, use ``jit.trace``."""
    if obj is None:
        return functools.partial(script, optimize=optimize)
    return obj


def script_if_tracing(fn):
    """Returns ``fn``: it runs eagerly, traced or not."""
    return fn


def ignore(drop=False, **kwargs):
    """``@jit.ignore`` / ``@jit.ignore(drop=True)``: leaves the function as it is."""
    if callable(drop):
        return drop

    def decorator(fn):
        return fn

    return decorator


def unused(fn):
    """``@jit.unused``: leaves the function (or property) as it is."""
    return fn


def export(fn):
    """``@jit.export``: leaves the method as it is."""
    return fn


def interface(obj):
    """``@jit.interface``: leaves the class as it is."""
    return obj


def is_scripting():
    """Always ``False``: code never runs under a TorchScript compiler here."""
    return False


def annotate(the_type, the_value):
    """Returns ``the_value`` (a type hint for the TorchScript compiler)."""
    return the_value


def isinstance(obj, target_type):  # noqa: A001 - PyTorch's name
    """``builtins.isinstance`` for the types it understands; typing generics
    (``List[int]``) are checked by their origin."""
    origin = getattr(target_type, "__origin__", None)
    return _builtin_isinstance(obj, origin if origin is not None else target_type)


class Attribute:
    """``jit.Attribute(value, type)``: the value itself (a type hint)."""

    def __new__(cls, value, type=None):  # noqa: A002
        return value


class Future:
    """The result of ``fork``: the call already ran; ``wait()`` returns it."""

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def value(self):
        return self._value

    def done(self):
        return True


def fork(func, *args, **kwargs):
    """Runs ``func(*args, **kwargs)`` now and returns a ``Future`` of its result
    (PyTorch may run it asynchronously; the result is the same)."""
    return Future(func(*args, **kwargs))


def wait(future):
    """The result of a ``fork``."""
    return future.wait()


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """Returns the module in eval mode (there is no TorchScript graph to fold);
    ``mod`` must be in eval mode, as PyTorch requires."""
    if mod.training:
        raise RuntimeError(
            "Freezing is currently only implemented for modules in eval mode. Please call "
            ".eval() on your module before freezing."
        )
    return mod


def optimize_for_inference(mod, other_methods=None):
    """Returns the module in eval mode (ferrograd's replay already runs the
    recorded ops with no autograd graph when grad mode is off)."""
    return mod.eval()


# ----- tracing -----------------------------------------------------------------------------

class ScriptModule(Module):
    """Base class of the modules ``jit.trace`` and ``jit.load`` return."""


class ScriptFunction:
    """A traced function: calling it replays the recorded ops."""

    def __init__(self, program, name):
        from .. import compile as _compile

        self._program = program
        self.__name__ = self.__qualname__ = name
        self._compiled = _quiet(_compile(self._run))

    def _run(self, *inputs):
        return self._program.run([], list(inputs))

    def __call__(self, *args, **kwargs):
        return self._compiled(*_flat_inputs(self._program, args, kwargs))

    @property
    def code(self):
        return _code_text(self._program, self.__name__)

    graph = code


class _TracedNode(Module):
    """A submodule of a traced module: it holds its parameters and buffers
    under the original names; its class name is the original's."""

    def __init__(self, original_name):
        super().__init__()
        self.original_name = original_name

    def _get_name(self):
        return self.original_name

    def extra_repr(self):
        return f"original_name={self.original_name}"

    def forward(self, *args, **kwargs):
        raise RuntimeError(
            f"ferrograd.jit: only the top-level forward of a traced module was recorded; "
            f"this submodule ({self.original_name}) cannot be called on its own"
        )


class TracedModule(ScriptModule):
    """What ``jit.trace(module, ...)`` and ``jit.load`` return: the module's
    parameters and buffers under their names, and a ``forward`` that replays
    the recorded program through ``ferrograd.compile``."""

    def __init__(self, program, tree):
        super().__init__()
        self.original_name = tree["name"]
        object.__setattr__(self, "_program", program)
        from .. import compile as _compile

        object.__setattr__(self, "_compiled", _quiet(_compile(self._run)))

    def _get_name(self):
        return self.original_name

    def extra_repr(self):
        return f"original_name={self.original_name}"

    def _param_values(self):
        out = []
        for name in self._program.params:
            mod, _, attr = name.rpartition(".")
            owner = self.get_submodule(mod) if mod else self
            t = owner._parameters.get(attr)
            if t is None:
                t = owner._buffers.get(attr)
            if t is None:
                raise RuntimeError(f"ferrograd.jit: the traced module has lost '{name}'")
            out.append(t)
        return out

    def _run(self, params, *inputs):
        return self._program.run(params, list(inputs))

    def forward(self, *args, **kwargs):
        return self._compiled(self._param_values(), *_flat_inputs(self._program, args, kwargs))

    @property
    def code(self):
        """The recorded program, one op per line."""
        return _code_text(self._program, "forward")

    graph = code

    def save(self, f, **kwargs):
        """``jit.save(self, f)``."""
        save(self, f)

    def __deepcopy__(self, memo):
        new = copy.copy(self)
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            if k in ("_program", "_compiled"):
                continue
            object.__setattr__(new, k, copy.deepcopy(v, memo))
        from .. import compile as _compile

        object.__setattr__(new, "_compiled", _quiet(_compile(new._run)))
        return new

    def __getstate__(self):
        raise RuntimeError(
            "ferrograd.jit: a traced module pickles through jit.save (a safetensors file), "
            "not pickle"
        )


def _quiet(compiled):
    compiled._warn_fallback = False
    return compiled


def _flat_inputs(program, args, kwargs):
    from ._trace import _flat_tensors

    flat = []
    _flat_tensors((tuple(args), dict(kwargs)), flat)
    if len(flat) != program.n_inputs:
        raise RuntimeError(
            f"forward() expected {program.n_inputs} tensor argument(s) as traced, got {len(flat)}"
        )
    return flat


def _copy_structure(module, node):
    for name, p in module._parameters.items():
        if p is not None and _builtin_isinstance(p, Tensor):
            node._parameters[name] = p
    for name, b in module._buffers.items():
        if b is not None and _builtin_isinstance(b, Tensor):
            node._buffers[name] = b
            if name in module._non_persistent_buffers_set:
                node._non_persistent_buffers_set.add(name)
    node.training = module.training
    for name, child in module._modules.items():
        if child is None:
            continue
        sub = _TracedNode(_original_name(child))
        node._modules[name] = sub
        _copy_structure(child, sub)


def _original_name(module):
    from ..nn.utils.parametrize import type_before_parametrizations

    return getattr(module, "original_name", None) or type_before_parametrizations(module).__name__


def _check(program, fn, args, kwargs, out, params):
    """Replays the program on the example inputs from the same random state and
    warns (PyTorch's ``TracerWarning``) if its outputs differ from the traced call's."""
    from .. import random as _random

    state = _random.get_rng_state()
    saved = [(t, t.detach().clone()) for t in params]
    try:
        replayed = program.run(params, _flat_inputs(program, args, kwargs))
    finally:
        with _no_grad():
            for t, old in saved:
                t.copy_(old)
        _random.set_rng_state(state)
    a, b = [], []
    from ._trace import _flat_tensors

    _flat_tensors(out, a)
    _flat_tensors(replayed, b)
    for i, (x, y) in enumerate(zip(a, b)):
        if x.shape != y.shape or not bool((x.detach() == y.detach()).all()):
            warnings.warn(
                f"Output nr {i + 1}. of the traced function does not match the corresponding "
                "output of the Python function.",
                TracerWarning,
                stacklevel=3,
            )
            break


def _no_grad():
    from ..autograd.grad_mode import no_grad

    return no_grad()


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-05, strict=True, _force_outplace=False,
          _module_class=None, _compilation_unit=None, example_kwarg_inputs=None,
          _store_inputs=True):  # fmt: skip
    """Records ``func(*example_inputs)`` and returns a callable that replays it.

    ``func`` is a module (the result is a ``TracedModule`` sharing its
    parameters and buffers) or a function of tensors (a ``ScriptFunction``).
    ``example_inputs`` is a tensor or a tuple of them; ``example_kwarg_inputs``
    a dict. The recorded ops replay through ``ferrograd.compile``. With
    ``check_trace`` the program is replayed once on the examples (from the
    same random state, buffers restored afterwards) and a ``TracerWarning``
    says if it disagrees with the Python call."""
    if _builtin_isinstance(example_inputs, Tensor):
        example_inputs = (example_inputs,)
    args = tuple(example_inputs) if example_inputs is not None else ()
    kwargs = dict(example_kwarg_inputs or {})
    if not args and not kwargs:
        raise RuntimeError("ferrograd.jit.trace: example_inputs (or example_kwarg_inputs) are needed")
    from .. import random as _random

    state = _random.get_rng_state()
    if _builtin_isinstance(func, Module):
        program, out = record(func, func, args, kwargs)
        traced = TracedModule(program, {"name": _original_name(func)})
        _copy_structure(func, traced)
        params = traced._param_values()
    elif callable(func):
        program, out = record(func, None, args, kwargs)
        traced = ScriptFunction(program, getattr(func, "__name__", "traced"))
        params = []
    else:
        raise TypeError(f"ferrograd.jit.trace: cannot trace a {type(func).__name__}")
    if check_trace:
        after = _random.get_rng_state()
        _random.set_rng_state(state)
        try:
            _check(program, func, args, kwargs, out, params)
        finally:
            _random.set_rng_state(after)
    return traced


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-05, strict=True, _force_outplace=False,
                 _module_class=None, _compilation_unit=None, example_inputs_is_kwarg=False,
                 _store_inputs=True):  # fmt: skip
    """``jit.trace`` of ``mod``'s ``forward`` given ``inputs = {"forward": example}``;
    other methods cannot be traced here."""
    if not _builtin_isinstance(inputs, dict) or set(inputs) - {"forward"}:
        raise RuntimeError(
            "ferrograd.jit.trace_module: only the 'forward' method can be traced "
            "(inputs must be {'forward': example_inputs})"
        )
    ex = inputs["forward"]
    if example_inputs_is_kwarg:
        return trace(mod, check_trace=check_trace, example_kwarg_inputs=ex)
    return trace(mod, ex, check_trace=check_trace)


def _code_text(program, name):
    from ._trace import _Const, _SliceT, _Slot, _Sym

    def show(t):
        if _builtin_isinstance(t, _Slot):
            return f"%{t.i}"
        if _builtin_isinstance(t, _Const):
            return f"CONSTANT{t.i}"
        if _builtin_isinstance(t, _Sym):
            return f"size{t.expr!r}"
        if _builtin_isinstance(t, _SliceT):
            return f"{show(t.start)}:{show(t.stop)}:{show(t.step)}"
        if _builtin_isinstance(t, tuple):
            return "(" + ", ".join(show(x) for x in t) + ("," if len(t) == 1 else "") + ")"
        if _builtin_isinstance(t, list):
            return "[" + ", ".join(show(x) for x in t) + "]"
        if _builtin_isinstance(t, dict):
            return ", ".join(f"{k}={show(v)}" for k, v in t.items())
        return repr(t)

    lines = [f"def {name}(self, " + ", ".join(
        f"%{len(program.params) + i}" for i in range(program.n_inputs)) + "):"]  # fmt: skip
    for i, p in enumerate(program.params):
        lines.append(f"  %{i} = self.{p}")
    for fn, targs, tkw, tout in program.ops:
        kind = fn[0]
        if kind == "method":
            call = f"{show(targs[0])}.{fn[1]}({', '.join(show(a) for a in targs[1:])}"
        elif kind == "attr":
            call = f"{show(targs[0])}.{fn[1]}"
        else:
            f = fn[1]
            call = f"{getattr(f, '__module__', '') or ''}.{getattr(f, '__qualname__', f)}(" + (
                ", ".join(show(a) for a in targs)
            )
        if kind != "attr":
            if tkw:
                call += (", " if targs[1 if kind == "method" else 0:] else "") + show(tkw)
            call += ")"
        lines.append(f"  {show(tout)} = {call}")
    lines.append(f"  return {show(program.outputs)}")
    return "\n".join(lines)


# ----- saving and loading ------------------------------------------------------------------

def save(m, f, _extra_files=None):
    """Writes a traced module (from ``jit.trace`` or ``jit.load``) to ``f`` (a
    path or a binary file): its parameters, buffers and recorded program, as
    a safetensors file. A module that was not traced, or whose program calls
    something that cannot be named in a file (a Python function of the
    user's, a custom ``autograd.Function``), is refused with a
    ``RuntimeError`` saying which."""
    from .. import save as _save

    if not _builtin_isinstance(m, TracedModule):
        raise RuntimeError(
            "ferrograd.jit.save saves traced modules: trace the model first "
            "(ferrograd.jit.trace(model, example_inputs)); jit.script does not compile here. "
            "To save only the weights, use ferrograd.save(model.state_dict(), path)."
        )
    if _extra_files:
        raise RuntimeError("ferrograd.jit.save: _extra_files is not supported")
    try:
        data = _format.encode_program(m._program, _format.module_tree(m))
    except _format.SaveError as e:
        raise RuntimeError(f"ferrograd.jit.save: the traced program cannot be saved: {e}") from None
    tensors = {}
    # Every parameter and buffer, non-persistent buffers too (the program may read them);
    # a tensor under two names is stored once and loads as one tensor.
    for k, v in m.named_parameters(remove_duplicate=False):
        tensors[k] = v
    for k, v in m.named_buffers(remove_duplicate=False):
        tensors[k] = v
    for i, c in enumerate(m._program.consts):
        tensors[f"constants.{i}"] = c.detach()
    tree = {"format": _format.FORMAT, "version": _format.VERSION,
            "program": _format.dumps(data), "tensors": tensors}  # fmt: skip
    _save(tree, f)


def _refuse(path, why):
    return RuntimeError(f"ferrograd.jit.load: {path!s} is not a module saved by ferrograd.jit.save: {why}")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Loads a module written by ``jit.save``. It needs no Python class of the
    original model: the structure and the program come from the file, and
    only ferrograd's own ops (a fixed allow-list) are called. Nothing in the
    file is executed; a corrupt file, a PyTorch TorchScript archive or an
    ordinary checkpoint is refused with a ``RuntimeError`` saying what it is."""
    import json

    from .. import load as _load

    if map_location is not None:
        from .._device import device

        device(map_location)
    name = f if _builtin_isinstance(f, (str, os.PathLike)) else getattr(f, "name", "the file")
    head = b""
    if _builtin_isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            head = fh.read(4)
    elif hasattr(f, "peek"):
        head = f.peek(4)[:4]
    if head == b"PK\x03\x04":
        raise _refuse(name, "it is a zip archive, the format of PyTorch's TorchScript files; "
                            "ferrograd cannot run TorchScript programs")  # fmt: skip
    try:
        tree = _load(f, weights_only=True)
    except Exception as e:  # the checkpoint reader names what is wrong
        raise _refuse(name, f"it is not a valid safetensors file ({e})") from None
    if not (_builtin_isinstance(tree, dict) and tree.get("format") == _format.FORMAT):
        raise _refuse(name, "it holds no ferrograd.jit program (an ordinary checkpoint loads "
                            "with ferrograd.load)")  # fmt: skip
    if tree.get("version") != _format.VERSION:
        raise _refuse(name, f"its format version {tree.get('version')!r} is not one this "
                            "ferrograd reads")  # fmt: skip
    tensors = tree.get("tensors")
    text = tree.get("program")
    if not (_builtin_isinstance(tensors, dict) and _builtin_isinstance(text, str)):
        raise _refuse(name, "its program or tensors are missing")
    try:
        data = json.loads(text)
        nconst = data.get("constants") if _builtin_isinstance(data, dict) else None
        if type(nconst) is not int or nconst < 0:
            raise ValueError("'constants' must be a count")
        consts = []
        for i in range(nconst):
            c = tensors.get(f"constants.{i}")
            if not _builtin_isinstance(c, Tensor):
                raise ValueError(f"constant {i} is missing")
            consts.append(c)
        program = _format.decode_program(data, consts)
        module = _build(data.get("module"), tensors, program)
    except (ValueError, TypeError, KeyError, RecursionError) as e:
        raise _refuse(name, f"its program is malformed ({e})") from None
    return module


def _build(tree, tensors, program):
    from ..nn.parameter import Parameter

    if not _builtin_isinstance(tree, dict):
        raise ValueError("the module structure is missing")

    def fill(node, info, prefix):
        if not _builtin_isinstance(info, dict):
            raise ValueError("malformed module structure")
        node.training = bool(info.get("training", False))
        for entry in info.get("parameters", []):
            pname, rg = entry
            t = tensors.get(prefix + pname)
            if not _builtin_isinstance(t, Tensor):
                raise ValueError(f"parameter {prefix + pname} is missing")
            node._parameters[pname] = t if _builtin_isinstance(t, Parameter) else Parameter(
                t, bool(rg)
            )
        for entry in info.get("buffers", []):
            bname, persistent = entry
            t = tensors.get(prefix + bname)
            if not _builtin_isinstance(t, Tensor):
                raise ValueError(f"buffer {prefix + bname} is missing")
            node._buffers[bname] = t
            if not persistent:
                node._non_persistent_buffers_set.add(bname)
        for entry in info.get("children", []):
            cname, cinfo = entry
            if not _builtin_isinstance(cname, str) or "." in cname or not cname:
                raise ValueError("malformed submodule name")
            child = _TracedNode(str(cinfo.get("name", "Module")))
            node._modules[cname] = child
            fill(child, cinfo, prefix + cname + ".")

    module = TracedModule(program, {"name": str(tree.get("name", "Module"))})
    fill(module, tree, "")
    module._param_values()  # every name the program reads exists
    return module
