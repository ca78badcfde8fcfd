"""The file ``jit.save`` writes and ``jit.load`` reads.

A saved traced module is a safetensors file written by ``ferrograd.save``
whose object tree is plain data:

``{"format": "ferrograd.jit", "version": 1, "program": <JSON text>,
"tensors": {name: tensor}}``

``tensors`` holds the module's parameters and buffers under their state-dict
names and the trace's constants as ``"constants.<i>"``. ``program`` is JSON:
the module's structure (each submodule's class name, training flag,
parameter and buffer names), the slots of the parameters, the number of
tensor inputs and their structure, the ops and the outputs. An op is
``{"fn": F, "args": [...], "kwargs": {...}, "out": ...}`` with ``F`` one of
``["method", name]``, ``["attr", name]``, ``["function", namespace, name]``
(namespace ``_C``, ``ferrograd``, ``F`` for ``nn.functional``, ``linalg``) or
``["autograd_function", module, qualname]`` for ferrograd's own
``autograd.Function`` subclasses. An argument is JSON data, or a tagged
object: ``{"v": slot}``, ``{"c": constant}``, ``{"sym": expr}`` (a size
recomputed from the inputs' shapes), ``{"tuple": [...]}``, ``{"list":
[...]}``, ``{"dict": [[key, value], ...]}``, ``{"slice": [a, b, c]}``,
``{"ellipsis": null}``, ``{"float": "inf"}``, ``{"dtype": name}``,
``{"device": name}``, ``{"memory_format": name}``.

Loading parses JSON and the safetensors data and nothing else (no pickle),
checks every field, and resolves each op's name against a fixed allow-list
of ferrograd ops: functions and methods that compute on tensors, never ones
that read or write files, change global settings or take callables (the
arguments a file can give are numbers, strings, dtypes, tensors and
containers of them). A file that is not such a program is refused with a
``RuntimeError`` that says what it is.
"""

from __future__ import annotations

import json
import math
import sys

from .. import _C
from .._C import Tensor
from ._trace import DUNDER_METHODS, Program, _Const, _SliceT, _Slot, _Sym

FORMAT = "ferrograd.jit"
VERSION = 1


class SaveError(RuntimeError):
    pass


# ----- the allow-list ----------------------------------------------------------------------

_DENY = frozenset("""
save load compile from_numpy manual_seed seed initial_seed get_rng_state set_rng_state
set_default_dtype set_default_device set_default_tensor_type set_num_threads
set_num_interop_threads set_printoptions set_anomaly_enabled use_deterministic_algorithms
set_float32_matmul_precision set_grad_enabled enable_grad no_grad inference_mode vmap
is_grad_enabled register_hook register_post_accumulate_grad_hook backward numpy tolist item
apply_ map_ share_memory_ retain_grad requires_grad_ detach_ cuda pin_memory storage
untyped_storage data_ptr
""".split())

_PRIVATE_FUNCTIONS = frozenset({"_like", "_random_like"})
_ATTRS = frozenset({"T", "mT", "H", "mH", "data", "real"})


def _namespaces():
    import ferrograd

    from .. import linalg
    from ..nn import functional

    return {"_C": _C, "ferrograd": ferrograd, "F": functional, "linalg": linalg}


def _allowed_function(ns_name, name):
    ns = _namespaces().get(ns_name)
    if ns is None or not isinstance(name, str) or name in _DENY or name.startswith("set_"):
        return None
    if name.startswith("_") and name not in _PRIVATE_FUNCTIONS:
        return None
    f = getattr(ns, name, None)
    f = getattr(f, "_traced_original", f)
    if f is None or isinstance(f, type) or not callable(f):
        return None
    return f


def _allowed_method(name):
    if not isinstance(name, str):
        return False
    if name in DUNDER_METHODS:
        return True
    if name.startswith("_") or name in _DENY or name.startswith("register_"):
        return False
    return callable(getattr(Tensor, name, None))


def _allowed_autograd_function(module, qualname):
    from ..autograd import Function

    if not isinstance(module, str) or not isinstance(qualname, str):
        return None
    if not (module == "ferrograd" or module.startswith("ferrograd.")):
        return None
    mod = sys.modules.get(module)
    if mod is None:
        return None
    obj = mod
    for part in qualname.split("."):
        if part.startswith("__") or "<" in part:
            return None
        obj = getattr(obj, part, None)
    if isinstance(obj, type) and issubclass(obj, Function) and obj is not Function:
        return obj
    return None


def _fn_name(fn):
    """The JSON name of a recorded op, or a SaveError saying why it has none."""
    kind = fn[0]
    if kind in ("method", "attr"):
        ok = _allowed_method(fn[1]) if kind == "method" else fn[1] in _ATTRS
        if not ok:
            raise SaveError(f"the Tensor {kind} '{fn[1]}' cannot be saved")
        return [kind, fn[1]]
    f = fn[1]
    owner = getattr(f, "__self__", None)
    from ..autograd import Function

    if isinstance(owner, type) and issubclass(owner, Function) and f.__name__ == "apply":
        if _allowed_autograd_function(owner.__module__, owner.__qualname__) is owner:
            return ["autograd_function", owner.__module__, owner.__qualname__]
        raise SaveError(
            f"the custom autograd.Function {owner.__qualname__} cannot be saved (only "
            "ferrograd's own Functions can be named in a saved program)"
        )
    name = getattr(f, "__name__", None)
    for ns_name in ("_C", "ferrograd", "F", "linalg"):
        if name is not None and _allowed_function(ns_name, name) is f:
            return ["function", ns_name, name]
    raise SaveError(
        f"the function {getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', f)!s} is "
        "not a ferrograd op that a saved program can name"
    )


def _resolve(spec):
    if not isinstance(spec, list) or not spec:
        raise ValueError("an op has no function")
    kind = spec[0]
    if kind == "method" and len(spec) == 2 and _allowed_method(spec[1]):
        return ("method", spec[1])
    if kind == "attr" and len(spec) == 2 and spec[1] in _ATTRS:
        return ("attr", spec[1])
    if kind == "function" and len(spec) == 3:
        f = _allowed_function(spec[1], spec[2])
        if f is not None:
            return ("function", f)
    if kind == "autograd_function" and len(spec) == 3:
        cls = _allowed_autograd_function(spec[1], spec[2])
        if cls is not None:
            return ("function", cls.apply)
    raise ValueError(f"the op {spec!r} is not one a saved program may call")


# ----- arguments ---------------------------------------------------------------------------

def _enc(obj):
    if isinstance(obj, _Slot):
        return {"v": obj.i}
    if isinstance(obj, _Const):
        return {"c": obj.i}
    if isinstance(obj, _Sym):
        return {"sym": _enc_expr(obj.expr)}
    if isinstance(obj, _SliceT):
        return {"slice": [_enc(obj.start), _enc(obj.stop), _enc(obj.step)]}
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        return {"float": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
    if obj is Ellipsis:
        return {"ellipsis": None}
    if isinstance(obj, tuple):
        return {"tuple": [_enc(x) for x in obj]}
    if isinstance(obj, list):
        return {"list": [_enc(x) for x in obj]}
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise SaveError("a dict argument with non-string keys cannot be saved")
        return {"dict": [[k, _enc(v)] for k, v in obj.items()]}
    if isinstance(obj, _C.dtype):
        return {"dtype": str(obj).split(".")[-1]}
    from .._compat import memory_format
    from .._device import device

    if isinstance(obj, device):
        return {"device": str(obj)}
    if isinstance(obj, memory_format):
        return {"memory_format": repr(obj).split(".")[-1]}
    raise SaveError(f"an argument of type {type(obj).__name__} cannot be saved")


def _enc_expr(expr):
    if isinstance(expr, int):
        return int(expr)
    return [expr[0], *[_enc_expr(e) if not isinstance(e, str) else e for e in expr[1:]]]


_DTYPES = ("float32", "float64", "int64", "bool")
_MEMORY_FORMATS = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")


class _Checker:
    """Decodes a program's JSON, refusing anything malformed."""

    def __init__(self, nconst):
        self.nconst = nconst
        self.defined = 0

    def slot(self, i):
        if type(i) is not int or not 0 <= i < self.defined:
            raise ValueError(f"a slot reference {i!r} is not defined yet")
        return i

    def dec(self, obj):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, float)):
            return obj
        if isinstance(obj, list):
            raise ValueError("a bare JSON list is not an argument")
        if not isinstance(obj, dict) or len(obj) != 1:
            raise ValueError(f"malformed argument {obj!r}")
        (tag, val), = obj.items()
        if tag == "v":
            return _Slot(self.slot(val))
        if tag == "c":
            if type(val) is not int or not 0 <= val < self.nconst:
                raise ValueError(f"constant {val!r} does not exist")
            return _Const(val)
        if tag == "sym":
            return _Sym(self.expr(val))
        if tag == "slice" and isinstance(val, list) and len(val) == 3:
            return _SliceT(*[self.dec(v) for v in val])
        if tag == "ellipsis":
            return Ellipsis
        if tag == "float" and val in ("nan", "inf", "-inf"):
            return float(val)
        if tag == "tuple" and isinstance(val, list):
            return tuple(self.dec(v) for v in val)
        if tag == "list" and isinstance(val, list):
            return [self.dec(v) for v in val]
        if tag == "dict" and isinstance(val, list):
            out = {}
            for kv in val:
                if not (isinstance(kv, list) and len(kv) == 2 and isinstance(kv[0], str)):
                    raise ValueError("malformed dict argument")
                out[kv[0]] = self.dec(kv[1])
            return out
        if tag == "dtype" and val in _DTYPES:
            return getattr(_C, val)
        if tag == "device" and val in ("cpu", "meta"):
            from .._device import device

            return device(val)
        if tag == "memory_format" and val in _MEMORY_FORMATS:
            from .. import _compat

            return getattr(_compat, val)
        raise ValueError(f"unknown argument tag {tag!r}")

    def expr(self, e):
        if type(e) is int:
            return e
        if not isinstance(e, list) or not e:
            raise ValueError("malformed size expression")
        op = e[0]
        if op == "size" and len(e) == 3 and type(e[2]) is int:
            return ("size", self.slot(e[1]), e[2])
        if op == "numel" and len(e) == 2:
            return ("numel", self.slot(e[1]))
        if op == "neg" and len(e) == 2:
            return ("neg", self.expr(e[1]))
        if op in ("add", "sub", "mul", "floordiv", "mod") and len(e) == 3:
            return (op, self.expr(e[1]), self.expr(e[2]))
        raise ValueError(f"unknown size expression {op!r}")

    def out(self, t):
        """An op's result template; new slots must come in order."""
        if isinstance(t, dict) and set(t) == {"v"}:
            if t["v"] != self.defined:
                raise ValueError("an op's result slots are out of order")
            self.defined += 1
            return _Slot(t["v"])
        if isinstance(t, dict) and len(t) == 1 and next(iter(t)) in ("tuple", "list"):
            (tag, val), = t.items()
            if not isinstance(val, list):
                raise ValueError("malformed result")
            items = [self.out(v) for v in val]
            return tuple(items) if tag == "tuple" else items
        return self.dec(t)


def _enc_out(t, seen):
    """A result template: slots already defined are not redefined."""
    if isinstance(t, _Slot):
        if t.i in seen:
            return {"old": t.i}
        seen.add(t.i)
        return {"v": t.i}
    if isinstance(t, tuple):
        return {"tuple": [_enc_out(x, seen) for x in t]}
    if isinstance(t, list):
        return {"list": [_enc_out(x, seen) for x in t]}
    return _enc(t)


# ----- modules -----------------------------------------------------------------------------

def module_tree(module):
    """The structure of ``module`` as JSON data (names, classes, flags)."""
    return {
        "name": type(module).__name__ if not hasattr(module, "original_name") else (
            module.original_name
        ),
        "training": bool(module.training),
        "parameters": [[n, p is not None and bool(p.requires_grad)]
                       for n, p in module._parameters.items() if p is not None],  # fmt: skip
        "buffers": [[n, n not in module._non_persistent_buffers_set]
                    for n, b in module._buffers.items() if b is not None],  # fmt: skip
        "children": [[n, module_tree(m)] for n, m in module._modules.items() if m is not None],
    }


def encode_program(program, module_info):
    seen = set(range(len(program.params) + program.n_inputs))
    ops = []
    for fn, targs, tkw, tout in program.ops:
        ops.append({
            "fn": _fn_name(fn),
            "args": _enc(tuple(targs))["tuple"],
            "kwargs": _enc(dict(tkw))["dict"],
            "out": _enc_out(tout, seen),
        })  # fmt: skip
    return {
        "module": module_info,
        "params": list(program.params),
        "n_inputs": program.n_inputs,
        "input_spec": _enc(program.input_spec),
        "ops": ops,
        "outputs": _enc(program.outputs),
        "constants": len(program.consts),
    }


def decode_program(data, consts):
    """A ``Program`` from its JSON data; ``ValueError`` for anything malformed."""
    if not isinstance(data, dict):
        raise ValueError("the program is not a JSON object")
    params = data.get("params")
    n_inputs = data.get("n_inputs")
    ops = data.get("ops")
    if not (isinstance(params, list) and all(isinstance(p, str) for p in params)):
        raise ValueError("'params' must be a list of names")
    if type(n_inputs) is not int or n_inputs < 0:
        raise ValueError("'n_inputs' must be a count")
    if not isinstance(ops, list):
        raise ValueError("'ops' must be a list")
    if data.get("constants") != len(consts):
        raise ValueError("the number of constants does not match the stored tensors")
    chk = _Checker(len(consts))
    chk.defined = len(params) + n_inputs
    spec = _Checker(0)
    spec.defined = n_inputs
    input_spec = spec.dec(data.get("input_spec"))
    out_ops = []
    for op in ops:
        if not isinstance(op, dict) or set(op) != {"fn", "args", "kwargs", "out"}:
            raise ValueError("malformed op")
        fn = _resolve(op["fn"])
        if not isinstance(op["args"], list) or not isinstance(op["kwargs"], list):
            raise ValueError("malformed op arguments")
        args = tuple(chk.dec(a) for a in op["args"])
        kwargs = chk.dec({"dict": op["kwargs"]})
        out = _dec_out(chk, op["out"])
        out_ops.append((fn, args, kwargs, out))
    outputs = chk.dec(data.get("outputs"))
    return Program(params, n_inputs, input_spec, out_ops, outputs, consts)


def _dec_out(chk, t):
    if isinstance(t, dict) and set(t) == {"old"}:
        return _Slot(chk.slot(t["old"]))
    if isinstance(t, dict) and len(t) == 1 and next(iter(t)) in ("tuple", "list"):
        (tag, val), = t.items()
        if not isinstance(val, list):
            raise ValueError("malformed result")
        items = [_dec_out(chk, v) for v in val]
        return tuple(items) if tag == "tuple" else items
    return chk.out(t)


def dumps(data):
    return json.dumps(data, separators=(",", ":"), allow_nan=False)
