"""Shape rules of tensors made from meta tensors: ``*_like`` and the
``new_*`` factories."""

from __future__ import annotations

from .. import _C
from . import _RULES, MetaTensor
from .shapes import _size_args


def _like(input, kind, fill=0.0, dtype=None, requires_grad=False):
    return MetaTensor(tuple(input.shape), dtype or input.dtype, requires_grad)


_RULES["_like"] = _like


def _random_like(input, kind, low, high, dtype=None, requires_grad=False, generator=None):
    return MetaTensor(tuple(input.shape), dtype or input.dtype, requires_grad)


_RULES["_random_like"] = _random_like


def _new_factory(name):
    def rule(x, *args, dtype=None, device=None, requires_grad=False, **kwargs):
        from .._device import _check_cpu

        if name == "new_tensor":
            data = _C.tensor(args[0])
            shape, dt = tuple(data.shape), dtype or data.dtype
        elif name == "new_full":
            shape, dt = tuple(args[0]), dtype or x.dtype
        else:
            shape, dt = _size_args(args), dtype or x.dtype
        if device is not None and not _check_cpu(name, device):
            if name == "new_tensor":
                out = _C.tensor(args[0], dtype=dt)
            elif name == "new_full":
                out = _C.full(shape, args[1], dtype=dt)
            else:
                out = (_C.ones if name == "new_ones" else _C.zeros)(*shape, dtype=dt)
            return out.requires_grad_(requires_grad) if requires_grad else out
        return MetaTensor(shape, dt, requires_grad)

    return rule


for _n in ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"):
    _RULES[_n] = _new_factory(_n)
