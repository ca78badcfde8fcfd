"""``Module``, the base class of every layer, and ``Parameter``."""

from __future__ import annotations

from collections import OrderedDict

from ... import _C

__all__ = ["Parameter", "Module"]


class Parameter(_C.Tensor):
    """A tensor that a ``Module`` registers as a trainable parameter."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.zeros(0)
        return super().__new__(cls, data, requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

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
    """Base class of layers and losses: ``module(x)`` calls ``forward``."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "training", True)

    def register_buffer(self, name, tensor, persistent=True):
        """Adds a tensor that is state but not a parameter (BatchNorm's running mean)."""
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)
        object.__setattr__(self, name, tensor)

    def register_parameter(self, name, param):
        """Adds a parameter (or ``None``, a declared but absent one)."""
        self._parameters[name] = param
        object.__setattr__(self, name, param)

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        modules = self.__dict__.get("_modules")
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Parameter) and params is not None:
            params[name] = value
        elif buffers is not None and name in buffers:
            buffers[name] = value
        elif isinstance(value, Module) and modules is not None:
            modules[name] = value
        object.__setattr__(self, name, value)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def named_parameters(self, prefix=""):
        for name, p in self._parameters.items():
            yield prefix + name, p
        for mname, m in self._modules.items():
            yield from m.named_parameters(prefix + mname + ".")

    def parameters(self):
        for _, p in self.named_parameters():
            yield p

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    def train(self, mode=True):
        object.__setattr__(self, "training", mode)
        for m in self._modules.values():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)
