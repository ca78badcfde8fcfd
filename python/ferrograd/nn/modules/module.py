"""``Module``, the base class of every layer, as PyTorch's ``torch.nn.Module``:
attribute registration, traversal, state dicts, hooks and ``__call__``."""

from __future__ import annotations

import functools
import inspect
from collections import OrderedDict
from typing import TYPE_CHECKING

from ... import _C, _device
from ...autograd.grad_mode import no_grad
from ..parameter import Buffer, Parameter
from ._module_hooks import (  # noqa: F401
    _global_forward_hooks,
    _global_forward_hooks_always_called,
    _global_forward_pre_hooks,
    _ModuleHooksMixin,
    register_module_forward_hook,
    register_module_forward_pre_hook,
)
from ._repr_utils import _addindent
from ._state_dict import (  # noqa: F401
    _EXTRA_STATE_KEY_SUFFIX,
    _IncompatibleKeys,
    _LoadPlan,
    _rebuild_parameter,
    _StateDictMixin,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from typing_extensions import Self

    from ..._C import Tensor
    from ..._typing import DType

__all__ = ["Parameter", "Module"]

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


def _forward_unimplemented(self, *input):
    raise NotImplementedError(
        f'Module [{type(self).__name__}] is missing the required "forward" function'
    )


#: Bumped by every change to a module's attributes, parameters, buffers,
#: submodules or hooks: ``ferrograd.compile``'s guards fingerprint the
#: modules a tape read again only after it moved.
_STATE_EPOCH = [0]


class Module(_StateDictMixin, _ModuleHooksMixin):
    """Base class of every layer and model: subclass it, create the submodules and parameters
    in ``__init__`` and write the computation in ``forward``.

    Assigning a :class:`~ferrograd.nn.Parameter`, a ``Module`` or (after
    ``register_buffer``, or as a :class:`~ferrograd.nn.Buffer`) a tensor as an
    attribute registers it, so ``parameters()``, ``named_modules()``,
    ``state_dict()``/``load_state_dict()``, ``to()``, ``train()``/``eval()``,
    ``zero_grad()`` and ``repr`` see it. Call the module (``module(x)``), not
    ``forward``, so the forward pre-hooks and hooks run around it.

    Args:
        *args: passed on to the next class's ``__init__`` when the class sets
            ``call_super_init = True`` (cooperative multiple inheritance);
            otherwise none are accepted.
        **kwargs: likewise.

    Example::

        >>> class TwoLayer(nn.Module):
        ...     def __init__(self, n_in, n_hidden, n_out):
        ...         super().__init__()
        ...         self.hidden = nn.Linear(n_in, n_hidden)
        ...         self.out = nn.Linear(n_hidden, n_out)
        ...         self.register_buffer("calls", torch.zeros(()))
        ...     def forward(self, x):
        ...         self.calls += 1
        ...         return self.out(torch.relu(self.hidden(x)))
        >>> model = TwoLayer(4, 8, 2)
        >>> model(torch.ones(3, 4)).shape
        ferrograd.Size([3, 2])
        >>> [name for name, _ in model.named_parameters()]
        ['hidden.weight', 'hidden.bias', 'out.weight', 'out.bias']
        >>> list(model.state_dict())
        ['calls', 'hidden.weight', 'hidden.bias', 'out.weight', 'out.bias']
        >>> model
        TwoLayer(
          (hidden): Linear(in_features=4, out_features=8, bias=True)
          (out): Linear(in_features=8, out_features=2, bias=True)
        )
    """

    dump_patches = False
    _version = 1
    call_super_init = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
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

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # ferrograd's own layers take ``device=``: their tensors are made on
        # it (meta) or the call refuses it (an accelerator), however deep the
        # factory call that makes them.
        if cls.__module__.startswith("ferrograd.nn.") and "__init__" in cls.__dict__:
            _scope_device(cls)

    # ----- registration ------------------------------------------------------------------

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Adds a tensor that is state but not a parameter (BatchNorm's running
        mean): moved by ``to()``, saved in ``state_dict()`` unless
        ``persistent=False``, never returned by ``parameters()``."""
        _STATE_EPOCH[0] += 1
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
        elif tensor is not None and not isinstance(tensor, _C.Tensor) and not _is_meta(tensor):
            raise TypeError(
                f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                "(ferrograd Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Adds a parameter (or ``None``: declared but absent, as ``bias=False``)."""
        _STATE_EPOCH[0] += 1
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

    def add_module(self, name: str, module: Module | None) -> None:
        """Adds a child module, reachable as the attribute ``name``."""
        _STATE_EPOCH[0] += 1
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

    def register_module(self, name: str, module: Module | None) -> None:
        """Alias of ``add_module``."""
        self.add_module(name, module)

    def get_submodule(self, target: str) -> Module:
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

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
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

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path ``target`` (``"fc.weight"``)."""
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target``."""
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        buffer = getattr(mod, buffer_name)
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return buffer

    # ----- attribute protocol ------------------------------------------------------------

    def __getattr__(self, name: str) -> Tensor | Module:
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

    def __setattr__(self, name: str, value: object) -> None:
        _STATE_EPOCH[0] += 1

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
                if isinstance(value, Buffer) or buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, _C.Tensor) and not _is_meta(
                        value
                    ):
                        raise TypeError(
                            f"cannot assign '{typename(value)}' as buffer '{name}' "
                            "(ferrograd.nn.Buffer, ferrograd.Tensor or None expected)"
                        )
                    # An nn.Buffer brings its own persistence; a plain tensor
                    # replacing a buffer keeps the old one's.
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    self.register_buffer(name, value, persistent)
                else:
                    super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        _STATE_EPOCH[0] += 1
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self) -> list[str]:
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

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module and (``recurse``) its submodules, each once."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(
        self,
        prefix: str = "",
        recurse: bool = True,
        remove_duplicate: bool = True,
    ) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs; a shared parameter comes once,
        under its first name, unless ``remove_duplicate=False``."""
        yield from self._named_members(
            lambda module: module._parameters.items(),
            prefix=prefix,
            recurse=recurse,
            remove_duplicate=remove_duplicate,
        )

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers of this module and (``recurse``) its submodules."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(
        self,
        prefix: str = "",
        recurse: bool = True,
        remove_duplicate: bool = True,
    ) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, buffer)`` pairs."""
        yield from self._named_members(
            lambda module: module._buffers.items(),
            prefix=prefix,
            recurse=recurse,
            remove_duplicate=remove_duplicate,
        )

    def children(self) -> Iterator[Module]:
        """The immediate submodules, each once."""
        for _, module in self.named_children():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, submodule)`` for the immediate submodules, each once."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self) -> Iterator[Module]:
        """This module and every submodule, depth first, each once."""
        for _, module in self.named_modules():
            yield module

    def named_modules(
        self,
        memo: set[Module] | None = None,
        prefix: str = "",
        remove_duplicate: bool = True,
    ) -> Iterator[tuple[str, Module]]:
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

    def apply(self, fn: Callable[[Module], None]) -> Self:
        """Calls ``fn`` on every submodule (children first) and then on ``self``."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ----- modes and gradients -----------------------------------------------------------

    def train(self, mode: bool = True) -> Self:
        """Sets training mode here and in every submodule (Dropout, BatchNorm read it)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Self:
        """``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Self:
        """Sets ``requires_grad`` on every parameter (freezing with ``False``)."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
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
        for key, param in self._parameters.items():
            if param is None:
                continue
            # ``.data`` is swapped, so the Parameter object an optimizer holds
            # stays the model's parameter.
            with no_grad():
                param_applied = fn(param)
            param_grad = param.grad
            if _is_meta(param) or _is_meta(param_applied):
                # To or from the meta device: there is no data to swap in, so
                # the parameter is a new object (as PyTorch's own swap path).
                new = Parameter(param_applied, param.requires_grad)
                if param_grad is not None:
                    with no_grad():
                        new.grad = fn(param_grad)
                self._parameters[key] = new
                continue
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

    def to(self, *args: Any, **kwargs: Any) -> Self:
        """Converts the floating-point parameters and buffers to ``dtype``:
        ``to(dtype)``, ``to("cpu")``, ``to(device, dtype)``, ``to(tensor)``
        (its dtype), keyword forms too. Parameters keep their identity."""
        device, dtype = _parse_to(*args, **kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(
                "nn.Module.to only accepts floating point or complex "
                f"dtypes, but got desired dtype={dtype}"
            )
        meta = False
        if device is not None:
            # Refuses a device the engine cannot use before anything moves.
            meta = _device.device(device).type == "meta"

        def convert(t):
            dt = dtype if dtype is not None and t.is_floating_point() else None
            if meta:
                return t.to("meta") if dt is None else t.to("meta", dt)
            if device is not None and _is_meta(t):
                raise NotImplementedError(
                    "Cannot copy out of meta tensor; no data! Please use "
                    "ferrograd.nn.Module.to_empty() instead of ferrograd.nn.Module.to() when "
                    "moving module from meta to a different device."
                )
            return t.to(dt) if dt is not None else t

        return self._apply(convert)

    def to_empty(self, *, device: object, recurse: bool = True) -> Self:
        """Moves the parameters and buffers to ``device`` without copying their
        values: new tensors of the same shapes and dtypes (zeros here; PyTorch
        leaves them uninitialised). The way to give a model built on the meta
        device real memory, before ``load_state_dict`` or an initialiser."""
        from ... import empty_like

        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def cpu(self) -> Self:
        """Every tensor already lives on the CPU: returns ``self``."""
        return self._apply(lambda t: t.cpu())

    def cuda(self, device: object = None) -> Self:
        """Refused: ferrograd runs on the CPU only."""
        _C.empty(0).to("cuda")

    def float(self) -> Self:
        """Casts floating-point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> Self:
        """Casts floating-point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> Self:
        """Casts floating-point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> Self:
        """Casts floating-point parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def type(self, dst_type: DType | str) -> Self:
        """Casts every parameter and buffer to ``dst_type`` (a dtype or a
        ``'ferrograd.DoubleTensor'``-style name)."""
        dtype = _dtype_from_type(dst_type)
        return self._apply(lambda t: t.to(dtype))

    def share_memory(self) -> Self:
        """A no-op kept for API compatibility: tensors live in process memory."""
        return self

    # ----- repr --------------------------------------------------------------------------

    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr``; override it."""
        return ""

    def __repr__(self) -> str:
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


_DTYPE_NAMES = {
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
    "LongTensor": "int64",
    "IntTensor": "int32",
    "ShortTensor": "int16",
    "CharTensor": "int8",
    "ByteTensor": "uint8",
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


def _scope_device(cls):
    init = cls.__dict__["__init__"]
    try:
        names = list(inspect.signature(init).parameters)
    except (TypeError, ValueError):
        return
    if "device" not in names:
        return
    pos = names.index("device")

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):  # noqa: N807
        dev = kwargs.get("device", args[pos - 1] if len(args) >= pos else None)
        if dev is None:
            return init(self, *args, **kwargs)
        with _device.device(dev):
            return init(self, *args, **kwargs)

    cls.__init__ = __init__


def _is_meta(t):
    return getattr(t, "is_meta", False) is True
