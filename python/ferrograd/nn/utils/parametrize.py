"""``nn.utils.parametrize``: a parameter computed from other tensors on every access.

``register_parametrization(module, "weight", P())`` moves ``module.weight``
to ``module.parametrizations.weight.original`` (or ``original0``,
``original1``, ... when ``P.right_inverse`` returns several tensors) and
makes ``module.weight`` a property returning ``P(original)``, so gradients
flow through ``P`` to the originals. The state dict holds the originals
under ``parametrizations.weight.original*`` (and ``P``'s own buffers under
``parametrizations.weight.0.*``), the layout PyTorch's state dicts have.
The module's class becomes a subclass named ``Parametrized<Class>``, as in
PyTorch; ``remove_parametrizations`` undoes all of it.
"""

from __future__ import annotations

import collections.abc
import copyreg
from contextlib import contextmanager
from copy import deepcopy

from ... import _C
from ...autograd.grad_mode import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

_cache_enabled = 0
_cache = {}


@contextmanager
def cached():
    """Inside the block, each parametrized tensor is computed once, on its first
    access, and reused (a weight shared by the steps of a recurrent loop)."""
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _is_tensor(x):
    return isinstance(x, _C.Tensor) or getattr(x, "is_meta", False) is True


def _register_parameter_or_buffer(module, name, x):
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _maybe_set(dest, src):
    # PyTorch's ``dest.set_(src)``: the object (which an optimizer may hold)
    # keeps its identity and takes ``src``'s values.
    if dest is not src:
        dest.data = src.detach() if isinstance(src, _C.Tensor) else src


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in order, and the original tensor(s)
    they are applied to (``original``, or ``original0``, ``original1``, ...).
    It is ``module.parametrizations[name]``; users do not build it."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe

        original_shape = original.shape
        original_dtype = original.dtype

        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass

        if not _is_tensor(new) and not isinstance(new, collections.abc.Sequence):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )

        self.is_tensor = _is_tensor(new)
        self.ntensors = 1 if self.is_tensor else len(new)

        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\n"
                    f"right_inverse(original).dtype: {new.dtype}"
                )
            if str(original.device) != str(new.device):
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the device.\n"
                    f"original.device: {original.device}\n"
                    f"right_inverse(original).device: {new.device}"
                )
            with no_grad():
                _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not _is_tensor(originali):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        "(list, tuple...). "
                        f"Got element {i} of the sequence with type {type(originali).__name__}."
                    )
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)

        if not self.unsafe:
            z = self()
            if not _is_tensor(z):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized dtype: {original_dtype}\n"
                    f"parametrized dtype: {z.dtype}"
                )
            if z.shape != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized shape: {original_shape}\n"
                    f"parametrized shape: {z.shape}"
                )

    def right_inverse(self, value):
        """Assigns ``value`` to the parametrized tensor: the parametrizations'
        ``right_inverse`` in reverse order, the result stored in the original(s)."""
        with no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement "
                        "right_inverse."
                    )
            if self.is_tensor:
                if not _is_tensor(value):
                    raise ValueError(
                        f"`right_inverse` should return a tensor. Got {type(value).__name__}"
                    )
                if value.dtype != self.original.dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                        f"while `original` has dtype {self.original.dtype}"
                    )
                _maybe_set(self.original, value)
            else:
                if not isinstance(value, collections.abc.Sequence):
                    raise ValueError(
                        "'right_inverse' must return a sequence of tensors. "
                        f"Got {type(value).__name__}."
                    )
                if len(value) != self.ntensors:
                    raise ValueError(
                        "'right_inverse' must return a sequence of tensors of length "
                        f"{self.ntensors}. Got a sequence of length {len(value)}."
                    )
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not _is_tensor(tensor):
                        raise ValueError(
                            f"`right_inverse` must return a sequence of tensors. "
                            f"Got element {i} of type {type(tensor).__name__}"
                        )
                    if original_i.dtype != tensor.dtype:
                        raise ValueError(
                            f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                            f"while `original{i}` has dtype {original_i.dtype}"
                        )
                    _maybe_set(original_i, tensor)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            originals = (getattr(self, f"original{i}") for i in range(self.ntensors))
            x = self[0](*originals)
        i = 1
        while str(i) in self._modules:
            x = self[i](x)
            i += 1
        return x


def _inject_new_class(module):
    cls = module.__class__

    def default_deepcopy(self, memo):
        obj = memo.get(id(self), None)
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        replica.__dict__ = deepcopy(self.__dict__, memo)
        for slot in copyreg._slotnames(self.__class__):
            if hasattr(self, slot):
                setattr(replica, slot, deepcopy(getattr(self, slot), memo))
        return replica

    def getstate(self):
        raise RuntimeError(
            "Serialization of parametrized modules is only "
            "supported through state_dict(). See:\n"
            "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
            "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training"
        )

    dct = {"__getstate__": getstate}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module, tensor_name):
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_cached_parametrization(parametrization):
        key = (id(module), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = parametrization()
            _cache[key] = tensor
        return tensor

    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            from ... import jit

            if jit.is_tracing():
                raise RuntimeError("Cannot trace a model while caching parametrizations.")
            return get_cached_parametrization(parametrization)
        return parametrization()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Makes ``module.<tensor_name>`` be ``parametrization(original)``.

    The parameter or buffer moves to
    ``module.parametrizations[tensor_name].original`` (``original0``, ... when
    ``parametrization.right_inverse`` returns a sequence); reading
    ``module.<tensor_name>`` evaluates the parametrization, assigning to it
    calls ``right_inverse``. Registering again on the same name chains the
    parametrizations. ``unsafe=True`` skips the checks that the result keeps
    the tensor's shape and dtype. Returns ``module``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not _is_tensor(x):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype != y.dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless the `unsafe` flag is enabled.\n"
                    f"module.{tensor_name}.dtype: {y.dtype}\n"
                    f"parametrization(module.{tensor_name}).dtype: {x.dtype}"
                )
            if x.shape != y.shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless the `unsafe` flag is enabled.\n"
                    f"module.{tensor_name}.shape: {y.shape}\n"
                    f"parametrization(module.{tensor_name}).shape: {x.shape}"
                )
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not _is_tensor(z):
                        raise ValueError(
                            "parametrization.right_inverse must return a tensor. Got: "
                            f"{type(z).__name__}"
                        )
                    if z.dtype != y.dtype:
                        raise ValueError(
                            "The tensor returned by parametrization.right_inverse must have the "
                            f"same dtype as module.{tensor_name}, unless the `unsafe` flag is "
                            "enabled.\n"
                            f"module.{tensor_name}.dtype: {y.dtype}\n"
                            f"returned dtype: {z.dtype}"
                        )
                    if z.shape != y.shape:
                        raise ValueError(
                            "The tensor returned by parametrization.right_inverse must have the "
                            f"same shape as module.{tensor_name}, unless the `unsafe` flag is "
                            "enabled.\n"
                            f"module.{tensor_name}.shape: {y.shape}\n"
                            f"returned shape: {z.shape}"
                        )
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a "
            f"parametrized element with name '{tensor_name}'"
        )
    return module


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has a parametrization (on ``tensor_name``, if given)."""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Removes the parametrizations on ``tensor_name``: with
    ``leave_parametrized`` the tensor keeps its current (parametrized) value,
    otherwise it goes back to the unparametrized ``original``. The module's
    class is restored once nothing is parametrized. Returns ``module``."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _maybe_set(original, t)
    else:
        if leave_parametrized:
            t = getattr(module, tensor_name)
            original = Parameter(t.detach()) if t.requires_grad else t
        else:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                "that is parametrized in terms of a sequence of tensors."
            )
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class as it was before any parametrization."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Registers ``from_module``'s parametrizations (of ``tensor_name``, or all)
    on ``to_module`` and shares their original tensors. Returns ``to_module``."""
    if is_parametrized(from_module):
        names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
        for name in names:
            if not hasattr(to_module, name):
                setattr(to_module, name, Parameter(getattr(from_module, name)))
            for param_func in from_module.parametrizations[name]:
                register_parametrization(to_module, name, param_func)
            src = from_module.parametrizations[name]
            dst = to_module.parametrizations[name]
            if hasattr(src, "original"):
                dst.original = src.original
            else:
                num = 0
                while hasattr(src, f"original{num}"):
                    setattr(dst, f"original{num}", getattr(src, f"original{num}"))
                    num += 1
    return to_module
