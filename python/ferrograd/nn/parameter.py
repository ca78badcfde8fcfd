"""``Parameter``: the tensor type a ``Module`` registers as trainable state."""

from __future__ import annotations

from collections import OrderedDict

from .. import _C

__all__ = ["Parameter"]


def _rebuild_parameter(data, requires_grad, state):
    param = Parameter(data, requires_grad)
    for name, value in state.items():
        setattr(param, name, value)
    return param


class Parameter(_C.Tensor):
    """A tensor that a ``Module`` registers as a parameter when assigned as an
    attribute. It shares ``data``'s memory, is a leaf, and requires grad unless
    ``requires_grad=False``; copies (``copy.deepcopy``, pickling) stay Parameters."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        return super().__new__(cls, data, requires_grad=requires_grad)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        for name, value in self.__dict__.items():
            import copy

            setattr(result, name, copy.deepcopy(value, memo))
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (
            _rebuild_parameter,
            (self.data.detach(), self.requires_grad, OrderedDict(self.__dict__)),
        )

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()
