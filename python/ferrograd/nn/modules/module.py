"""``Module``, the base class of every layer, as PyTorch's ``torch.nn.Module``:
attribute registration, traversal, state dicts, hooks and ``__call__``."""

from __future__ import annotations

import functools
import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import _C
from ..._size import Size
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter
from ._hooks import BackwardHook, RemovableHandle

__all__ = ["Parameter", "Module"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"

_TENSOR_TYPE_NAMES = {
    "float32": "FloatTensor",
    "float64": "DoubleTensor",
    "int64": "LongTensor",
    "bool": "BoolTensor",
}


def _tensor_type(t):
    name = str(t.dtype).rsplit(".", 1)[-1]
    return "ferrograd." + _TENSOR_TYPE_NAMES.get(name, "Tensor")


def typename(obj):
    """The name PyTorch's error messages give ``obj`` (``torch.typename``):
    ``ferrograd.FloatTensor`` for a float32 tensor, ``int`` for ``3``."""
    if isinstance(obj, _C.Tensor):
        return _tensor_type(obj)
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in {"", "builtins"}:
        return qualname
    return f"{module}.{qualname}"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line for line in s]
    return first + "\n" + "\n".join(s)


# Hooks every module runs (``register_module_forward_hook``), before its own.
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()


def register_module_forward_pre_hook(hook):
    """Registers ``hook(module, args)`` to run before every module's ``forward``."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook, *, always_call=False):
    """Registers ``hook(module, args, output)`` to run after every module's ``forward``."""
    handle = RemovableHandle(
        _global_forward_hooks, extra_dict=_global_forward_hooks_always_called
    )
    _global_forward_hooks[handle.id] = hook
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def _forward_unimplemented(self, *input):
    raise NotImplementedError(
        f'Module [{type(self).__name__}] is missing the required "forward" function'
    )


class _LoadPlan:
    """The copies ``load_state_dict`` will make once every key has been checked,
    so a failing load leaves the module as it was."""

    def __init__(self):
        self.actions = []

    # Pickling and deepcopy keep the Parameter type and requires_grad; as in
    # PyTorch, neither carries .grad or hooks, and deepcopy's memo keeps one
    # Parameter shared by two modules shared in the copy.
    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Module:
    """Base class of layers and models. Assigning a ``Parameter``, a ``Module``
    or (after ``register_buffer``) a tensor as an attribute registers it, so
    ``parameters()``, ``state_dict()``, ``to()`` and ``repr`` see it;
    ``module(x)`` runs the forward hooks around ``forward``."""

    dump_patches = False
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                f"'{next(iter(kwargs))}'"
            )
        if self.call_super_init is False and bool(args):
            raise TypeError(
                f"{type(self).__name__}.__init__() takes 1 positional argument but "
                f"{len(args) + 1} were given"
            )
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", OrderedDict())
        setattr_("_buffers", OrderedDict())
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_backward_pre_hooks", OrderedDict())
        setattr_("_backward_hooks", OrderedDict())
        setattr_("_is_full_backward_hook", None)
        setattr_("_forward_hooks", OrderedDict())
        setattr_("_forward_hooks_with_kwargs", OrderedDict())
        setattr_("_forward_hooks_always_called", OrderedDict())
        setattr_("_forward_pre_hooks", OrderedDict())
        setattr_("_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_("_state_dict_hooks", OrderedDict())
        setattr_("_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_post_hooks", OrderedDict())
        setattr_("_modules", OrderedDict())
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward = _forward_unimplemented

    # ----- registration ------------------------------------------------------------------

    def register_buffer(self, name, tensor, persistent=True):
        """Adds a tensor that is state but not a parameter (BatchNorm's running
        mean): moved by ``to()``, saved in ``state_dict()`` unless
        ``persistent=False``, never returned by ``parameters()``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        elif not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {typename(name)}")
        elif "." in name:
            raise KeyError('buffer name can\'t contain "."')
        elif name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        elif hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        elif tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(
                f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                "(ferrograd Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Adds a parameter (or ``None``: declared but absent, as ``bias=False``)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        elif not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {typename(name)}")
        elif "." in name:
            raise KeyError('parameter name can\'t contain "."')
        elif name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        elif hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{typename(param)}' object to parameter '{name}' "
                "(ferrograd.nn.Parameter or None required)"
            )
        elif param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                f"parameters must be created explicitly. To express '{name}' "
                "as a function of another Tensor, compute the value in "
                "the forward() method."
            )
        else:
            self._parameters[name] = param

    def add_module(self, name, module):
        """Adds a child module, reachable as the attribute ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{typename(module)} is not a Module subclass")
        elif not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {typename(name)}")
        elif hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        elif "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        elif name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name, module):
        """Alias of ``add_module``."""
        self.add_module(name, module)

    def get_submodule(self, target):
        """The submodule at the dotted path ``target`` (``""`` is ``self``)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        """Replaces (or, unless ``strict``, adds) the submodule at the dotted path ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError("`" + "module" + f"` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]):
            mod = getattr(parent, atoms[-1])
            if not isinstance(mod, Module):
                raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target):
        """The parameter at the dotted path ``target`` (``"fc.weight"``)."""
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at the dotted path ``target``."""
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        buffer = getattr(mod, buffer_name)
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return buffer

    def get_extra_state(self):
        """Override with ``set_extra_state`` to save non-tensor state in ``state_dict``."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
            "to report this bug."
        )

    def set_extra_state(self, state):
        """Receives what ``get_extra_state`` returned, on ``load_state_dict``."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
            "to report this bug."
        )

    # ----- attribute protocol ------------------------------------------------------------

    def __getattr__(self, name):
        d = self.__dict__
        if "_parameters" in d:
            if name in d["_parameters"]:
                return d["_parameters"][name]
        if "_buffers" in d:
            if name in d["_buffers"]:
                return d["_buffers"][name]
        if "_modules" in d:
            if name in d["_modules"]:
                return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(
                self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set
            )
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{typename(value)}' as parameter '{name}' "
                    "(ferrograd.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(
                    self.__dict__,
                    self._parameters,
                    self._buffers,
                    self._non_persistent_buffers_set,
                )
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(
                        f"cannot assign '{typename(value)}' as child module '{name}' "
                        "(ferrograd.nn.Module or None expected)"
                    )
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, _C.Tensor):
                        raise TypeError(
                            f"cannot assign '{typename(value)}' as buffer '{name}' "
                            "(ferrograd.Tensor or None expected)"
                        )
                    buffers[name] = value
                else:
                    super().__setattr__(name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self):
        module_attrs = dir(self.__class__)
        attrs = list(self.__dict__.keys())
        parameters = list(self._parameters.keys())
        modules = list(self._modules.keys())
        buffers = list(self._buffers.keys())
        keys = module_attrs + attrs + parameters + modules + buffers
        # Sequential's "0", "1" are not attribute names.
        keys = [key for key in keys if not key[0].isdigit()]
        return sorted(keys)

    def __setstate__(self, state):
        self.__dict__.update(state)
        # Modules pickled before a dict existed get an empty one.
        for name in (
            "_forward_pre_hooks",
            "_forward_pre_hooks_with_kwargs",
            "_forward_hooks",
            "_forward_hooks_with_kwargs",
            "_forward_hooks_always_called",
            "_state_dict_hooks",
            "_state_dict_pre_hooks",
            "_load_state_dict_pre_hooks",
            "_load_state_dict_post_hooks",
            "_backward_pre_hooks",
            "_backward_hooks",
        ):
            if name not in self.__dict__:
                self.__dict__[name] = OrderedDict()
        if "_non_persistent_buffers_set" not in self.__dict__:
            self.__dict__["_non_persistent_buffers_set"] = set()
        if "_is_full_backward_hook" not in self.__dict__:
            self.__dict__["_is_full_backward_hook"] = None

    # ----- traversal ---------------------------------------------------------------------

    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        # By identity: a tensor's == is elementwise.
        memo = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                name = module_prefix + ("." if module_prefix else "") + k
                yield name, v

    def parameters(self, recurse=True):
        """The parameters of this module and (``recurse``) its submodules, each once."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, parameter)`` pairs; a shared parameter comes once,
        under its first name, unless ``remove_duplicate=False``."""
        yield from self._named_members(
            lambda module: module._parameters.items(),
            prefix=prefix,
            recurse=recurse,
            remove_duplicate=remove_duplicate,
        )

    def buffers(self, recurse=True):
        """The buffers of this module and (``recurse``) its submodules."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, buffer)`` pairs."""
        yield from self._named_members(
            lambda module: module._buffers.items(),
            prefix=prefix,
            recurse=recurse,
            remove_duplicate=remove_duplicate,
        )

    def children(self):
        """The immediate submodules, each once."""
        for _, module in self.named_children():
            yield module

    def named_children(self):
        """``(name, submodule)`` for the immediate submodules, each once."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self):
        """This module and every submodule, depth first, each once."""
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """``(dotted name, module)`` for this module (name ``prefix``) and every
        submodule, depth first; a shared submodule comes once."""
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    def apply(self, fn):
        """Calls ``fn`` on every submodule (children first) and then on ``self``."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ----- modes and gradients -----------------------------------------------------------

    def train(self, mode=True):
        """Sets training mode here and in every submodule (Dropout, BatchNorm read it)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        """``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Sets ``requires_grad`` on every parameter (freezing with ``False``)."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Resets the gradients of every parameter: to ``None`` by default, else to zeros."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    # ----- conversion --------------------------------------------------------------------

    def _apply(self, fn, recurse=True):
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            # ``.data`` is swapped, so the Parameter object an optimizer holds
            # stays the model's parameter.
            with no_grad():
                param_applied = fn(param)
            param_grad = param.grad
            # ``t.data = t`` on one object never returns from the engine (a
            # lock taken twice); a conversion that changed nothing is skipped.
            if param_applied is not param:
                param.data = param_applied
            if param_grad is not None:
                with no_grad():
                    grad_applied = fn(param_grad)
                if grad_applied is not param_grad:
                    param_grad.data = grad_applied
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """Converts the floating-point parameters and buffers to ``dtype``:
        ``to(dtype)``, ``to("cpu")``, ``to(device, dtype)``, ``to(tensor)``
        (its dtype), keyword forms too. Parameters keep their identity."""
        device, dtype = _parse_to(*args, **kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(
                "nn.Module.to only accepts floating point or complex "
                f"dtypes, but got desired dtype={dtype}"
            )
        if device is not None:
            # Refuses a device the engine cannot use before anything moves.
            _C.empty(0).to(device)

        def convert(t):
            if dtype is not None and t.is_floating_point():
                return t.to(dtype)
            return t

        return self._apply(convert)

    def cpu(self):
        """Every tensor already lives on the CPU: returns ``self``."""
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        """Refused: ferrograd runs on the CPU only."""
        _C.empty(0).to("cuda")

    def float(self):
        """Casts floating-point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        """Casts floating-point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def type(self, dst_type):
        """Casts every parameter and buffer to ``dst_type`` (a dtype or a
        ``'ferrograd.DoubleTensor'``-style name)."""
        dtype = _dtype_from_type(dst_type)
        return self._apply(lambda t: t.to(dtype))

    def share_memory(self):
        """A no-op kept for API compatibility: tensors live in process memory."""
        return self

    # ----- repr --------------------------------------------------------------------------

    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self):
        """The text inside this module's parentheses in ``repr``; override it."""
        return ""

    def __repr__(self):
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        main_str += ")"
        return main_str

    # ----- state dict --------------------------------------------------------------------

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[extra_state_key] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ``OrderedDict`` of every parameter and persistent buffer under its
        dotted name, detached unless ``keep_vars`` (tied weights appear under
        every name)."""
        if args:
            # PyTorch's deprecated positional form state_dict(destination, prefix, keep_vars).
            if len(args) > 3:
                raise TypeError(
                    f"state_dict() takes from 1 to 4 positional arguments but {len(args) + 1} "
                    "were given"
                )
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars
                )
        for hook in self._state_dict_hooks.values():
            hook_result = hook(self, destination, prefix, local_metadata)
            if hook_result is not None:
                destination = hook_result
        return destination

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs,
    ):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent_buffers = {
            k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set
        }
        local_name_params = itertools.chain(self._parameters.items(), persistent_buffers.items())
        local_state = {k: v for k, v in local_name_params if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        plan = local_metadata.get("_ferrograd_load_plan")

        for name, param in local_state.items():
            key = prefix + name
            if key in state_dict:
                input_param = state_dict[key]
                if not isinstance(input_param, _C.Tensor):
                    error_msgs.append(
                        f'While copying the parameter named "{key}", '
                        "expected ferrograd.Tensor or Tensor-like object from checkpoint but "
                        f"received {type(input_param)}"
                    )
                    continue
                # Checkpoints of PyTorch 0.3 stored scalars as one-element vectors.
                if len(param.shape) == 0 and len(input_param.shape) == 1:
                    input_param = input_param[0]
                if input_param.shape != param.shape:
                    error_msgs.append(
                        f"size mismatch for {key}: copying a param with shape "
                        f"{_torch_size(input_param.shape)} from checkpoint, "
                        f"the shape in current model is {_torch_size(param.shape)}."
                    )
                    continue
                action = _LoadAction(self, name, key, param, input_param, assign)
                if plan is not None:
                    plan.actions.append(action)
                else:
                    try:
                        action.apply()
                    except Exception as ex:
                        error_msgs.append(_copy_error(key, param, input_param, ex))
            elif strict:
                missing_keys.append(key)

        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_state_key in state_dict:
                value = state_dict[extra_state_key]
                if plan is not None:
                    plan.actions.append(_ExtraStateAction(self, value))
                else:
                    self.set_extra_state(value)
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and (extra_state_key in state_dict):
            unexpected_keys.append(extra_state_key)

        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def _raise_load_errors(self, strict, missing_keys, unexpected_keys, error_msgs):
        error_msgs = list(error_msgs)
        if strict:
            if len(unexpected_keys) > 0:
                error_msgs.insert(
                    0,
                    "Unexpected key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in unexpected_keys)
                    ),
                )
            if len(missing_keys) > 0:
                error_msgs.insert(
                    0,
                    "Missing key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in missing_keys)
                    ),
                )
        raise RuntimeError(
            "Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)
            )
        )

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies ``state_dict``'s tensors into the parameters and buffers, in
        place under ``no_grad`` (optimizers holding the parameters keep working),
        or assigns them with ``assign=True``. Returns ``(missing_keys,
        unexpected_keys)``; with ``strict`` a missing or unexpected key raises,
        and a wrong shape always does. Every key is checked before anything is
        copied, so a load that raises leaves the module unchanged."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys = []
        unexpected_keys = []
        error_msgs = []
        plan = _LoadPlan()
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        post_hooks = []

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            local_metadata["_ferrograd_load_plan"] = plan
            module._load_from_state_dict(
                local_state_dict, prefix, local_metadata, True, missing_keys, unexpected_keys,
                error_msgs,
            )
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {
                        k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)
                    }
                    load(child, child_state_dict, child_prefix)
            post_hooks.append(module)

        load(self, state_dict)
        _check_castable(plan, error_msgs)
        if error_msgs:
            # Shape, type or conversion errors: raised whatever ``strict`` is
            # (with the key errors first, as PyTorch orders them).
            self._raise_load_errors(strict, missing_keys, unexpected_keys, error_msgs)

        hooked = [m for m in post_hooks if m._load_state_dict_post_hooks]
        if not hooked:
            if strict and (missing_keys or unexpected_keys):
                self._raise_load_errors(strict, missing_keys, unexpected_keys, error_msgs)
            for action in plan.actions:
                action.apply()
            return _IncompatibleKeys(missing_keys, unexpected_keys)

        # Post-hooks run on the loaded module and may clear or add keys in
        # place, which decides a strict load's errors; a load they leave
        # failing is rolled back.
        undo = [action.snapshot() for action in plan.actions]
        for action in plan.actions:
            action.apply()
        incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
        try:
            for module in hooked:
                for hook in module._load_state_dict_post_hooks.values():
                    out = hook(module, incompatible_keys)
                    if out is not None:
                        raise AssertionError(
                            "Hooks registered with ``register_load_state_dict_post_hook`` are "
                            "not expected to return new values, if incompatible_keys need to be "
                            "modified, it should be done inplace."
                        )
            if strict and (missing_keys or unexpected_keys):
                self._raise_load_errors(strict, missing_keys, unexpected_keys, error_msgs)
        except BaseException:
            for restore in reversed(undo):
                restore()
            raise
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict`` saves this module."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` runs after this
        module is saved; it may edit ``state_dict`` in place."""
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before this module loads; it may
        rename keys of ``state_dict`` in place."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = (
            functools.partial(hook, self) if with_module else hook
        )
        return handle

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` runs after ``load_state_dict``;
        it may clear entries of the key lists in place."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # ----- hooks and __call__ ------------------------------------------------------------

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with
        ``with_kwargs``) runs before ``forward``; a non-None result replaces the
        arguments. ``prepend`` runs it before the hooks already registered."""
        handle = RemovableHandle(
            self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs
        )
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` (``hook(module, args, kwargs, output)``
        with ``with_kwargs``) runs after ``forward``; a non-None result replaces
        the output. ``always_call`` runs it even when ``forward`` raises."""
        handle = RemovableHandle(
            self._forward_hooks,
            extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called],
        )
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` runs when the gradients with respect to
        the module's outputs are known; a non-None result replaces them."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` runs when the gradients with
        respect to the module's inputs are computed; a non-None result replaces
        ``grad_input``. Tuples hold ``None`` for non-tensor arguments."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a "
                "single Module. Please use only one of them."
            )
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook):
        """PyTorch's deprecated non-full backward hook, not supported: use
        ``register_full_backward_hook``."""
        raise NotImplementedError(
            "register_backward_hook is deprecated in PyTorch and not supported; "
            "use register_full_backward_hook"
        )

    def _call_impl(self, *args, **kwargs):
        forward_call = self.forward
        if not (
            self._backward_hooks
            or self._backward_pre_hooks
            or self._forward_hooks
            or self._forward_pre_hooks
            or _global_forward_hooks
            or _global_forward_pre_hooks
        ):
            return forward_call(*args, **kwargs)

        result = None
        called_always_called_hooks = set()
        try:
            full_backward_hooks = list(self._backward_hooks.values())
            backward_pre_hooks = list(self._backward_pre_hooks.values())

            for hook_id, hook in (
                *_global_forward_pre_hooks.items(),
                *self._forward_pre_hooks.items(),
            ):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    args_kwargs_result = hook(self, args, kwargs)
                    if args_kwargs_result is not None:
                        if isinstance(args_kwargs_result, tuple) and len(args_kwargs_result) == 2:
                            args, kwargs = args_kwargs_result
                        else:
                            raise RuntimeError(
                                "forward pre-hook must return None or a tuple "
                                f"of (new_args, new_kwargs), but got {args_kwargs_result}."
                            )
                else:
                    args_result = hook(self, args)
                    if args_result is not None:
                        if not isinstance(args_result, tuple):
                            args_result = (args_result,)
                        args = args_result

            bw_hook = None
            if full_backward_hooks or backward_pre_hooks:
                bw_hook = BackwardHook(self, full_backward_hooks, backward_pre_hooks)
                args = bw_hook.setup_input_hook(args)

            result = forward_call(*args, **kwargs)
            for hook_id, hook in (
                *_global_forward_hooks.items(),
                *self._forward_hooks.items(),
            ):
                if (
                    hook_id in self._forward_hooks_always_called
                    or hook_id in _global_forward_hooks_always_called
                ):
                    called_always_called_hooks.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    hook_result = hook(self, args, kwargs, result)
                else:
                    hook_result = hook(self, args, result)
                if hook_result is not None:
                    result = hook_result

            if bw_hook:
                if not isinstance(result, (_C.Tensor, tuple)):
                    warnings.warn(
                        "For backward hooks to be called,"
                        " module output should be a Tensor or a tuple of Tensors"
                        f" but received {type(result)}",
                        stacklevel=2,
                    )
                result = bw_hook.setup_output_hook(result)
            return result
        except Exception:
            for hook_id, hook in _global_forward_hooks.items():
                if (
                    hook_id in _global_forward_hooks_always_called
                    and hook_id not in called_always_called_hooks
                ):
                    try:
                        hook_result = hook(self, args, result)
                        if hook_result is not None:
                            result = hook_result
                    except Exception as e:
                        warnings.warn(
                            "global module forward hook with ``always_call=True`` raised an "
                            f"exception that was silenced as another error was raised in "
                            f"forward: {e}",
                            stacklevel=2,
                        )
            for hook_id, hook in self._forward_hooks.items():
                if (
                    hook_id in self._forward_hooks_always_called
                    and hook_id not in called_always_called_hooks
                ):
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            hook_result = hook(self, args, kwargs, result)
                        else:
                            hook_result = hook(self, args, result)
                        if hook_result is not None:
                            result = hook_result
                    except Exception as e:
                        warnings.warn(
                            "module forward hook with ``always_call=True`` raised an exception "
                            f"that was silenced as another error was raised in forward: {e}",
                            stacklevel=2,
                        )
            raise

    __call__ = _call_impl


def _torch_size(shape):
    # PyTorch prints ``torch.Size([3, 4])`` in these messages; ours names ferrograd's Size.
    return repr(Size(shape))


class _LoadAction:
    """One tensor of a ``load_state_dict``: checked first, applied later."""

    def __init__(self, module, name, key, param, input_param, assign):
        self.module, self.name, self.key = module, name, key
        self.param, self.input_param, self.assign = param, input_param, assign

    def apply(self):
        param, input_param = self.param, self.input_param
        with no_grad():
            if self.assign:
                if isinstance(param, Parameter):
                    if not isinstance(input_param, Parameter):
                        input_param = Parameter(input_param, requires_grad=param.requires_grad)
                    else:
                        input_param.requires_grad_(param.requires_grad)
                setattr(self.module, self.name, input_param)
            else:
                param.copy_(input_param)

    def snapshot(self):
        if self.assign:
            module, name, old = self.module, self.name, self.param
            return lambda: setattr(module, name, old)
        saved = self.param.detach().clone()
        param = self.param

        def restore():
            with no_grad():
                param.copy_(saved)

        return restore


class _ExtraStateAction:
    key = None

    def __init__(self, module, value):
        self.module, self.value = module, value

    def apply(self):
        self.module.set_extra_state(self.value)

    def snapshot(self):
        old = self.module.get_extra_state()
        return lambda: self.module.set_extra_state(old)


def _copy_error(key, param, input_param, ex):
    return (
        f'While copying the parameter named "{key}", '
        f"whose dimensions in the model are {_torch_size(param.shape)} and "
        f"whose dimensions in the checkpoint are {_torch_size(input_param.shape)}, "
        f"an exception occurred : {ex.args}."
    )


def _check_castable(plan, error_msgs):
    # The copies themselves can only fail on a dtype that will not convert;
    # try each conversion on one element before any real copy happens.
    for action in plan.actions:
        if action.key is None:
            continue
        key, param, input_param = action.key, action.param, action.input_param
        try:
            with no_grad():
                _C.empty(0, dtype=param.dtype).copy_(_C.empty(0, dtype=input_param.dtype))
        except Exception as ex:
            error_msgs.append(_copy_error(key, param, input_param, ex))


_DTYPE_NAMES = {
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "LongTensor": "int64",
    "BoolTensor": "bool",
}


def _dtype_from_type(dst_type):
    if isinstance(dst_type, _C.dtype):
        return dst_type
    if isinstance(dst_type, str):
        short = dst_type.rsplit(".", 1)[-1]
        if short in _DTYPE_NAMES:
            return getattr(_C, _DTYPE_NAMES[short])
    raise ValueError(f"invalid type: '{dst_type}'")


def _parse_to(*args, **kwargs):
    """``(device, dtype)`` from the forms ``Tensor.to``/``Module.to`` accept."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    kwargs.pop("copy", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    rest = list(args)
    if rest and isinstance(rest[0], _C.Tensor):
        other = rest.pop(0)
        device, dtype = other.device, other.dtype
    elif rest and isinstance(rest[0], _C.dtype):
        dtype = rest.pop(0)
    elif rest and (rest[0] is None or isinstance(rest[0], (str, int)) or _is_device(rest[0])):
        device = rest.pop(0)
        if rest and isinstance(rest[0], _C.dtype):
            dtype = rest.pop(0)
    # A trailing non_blocking flag is accepted and meaningless on the CPU.
    if rest and isinstance(rest[0], bool):
        rest.pop(0)
    if rest:
        raise TypeError(
            "to() received an invalid combination of arguments - got "
            f"({', '.join(type(a).__name__ for a in args)})"
        )
    if device is not None and not isinstance(device, str):
        device = str(device) if _is_device(device) else device
    return device, dtype


def _is_device(obj):
    return type(obj).__name__ == "device"
