"""The legacy ``nn.utils.weight_norm``: parameters ``weight_g`` and ``weight_v``
and a forward pre-hook that recomputes ``weight`` before every forward.
Deprecated in PyTorch (with this module's warning) in favour of
``nn.utils.parametrizations.weight_norm``."""

from __future__ import annotations

import warnings

from ..parameter import Parameter, UninitializedParameter
from ._norm_fns import _weight_norm, norm_except_dim

__all__ = ["WeightNorm", "remove_weight_norm", "weight_norm"]


class WeightNorm:
    """The forward pre-hook of ``weight_norm``."""

    def __init__(self, name, dim):
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn(
            "`ferrograd.nn.utils.weight_norm` is deprecated in favor of "
            "`ferrograd.nn.utils.parametrizations.weight_norm`.",
            FutureWarning,
            stacklevel=3,
        )
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two weight_norm hooks on the same parameter {name}"
                )
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError(
                "The module passed to `WeightNorm` can't have uninitialized parameters. "
                "Make sure to run the dummy forward before applying weight normalization"
            )
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Weight normalization with parameters ``<name>_g`` and ``<name>_v``;
    ``<name>`` is recomputed as ``g * v / ||v||`` before every forward.
    Returns ``module``."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Removes ``weight_norm``: ``<name>`` becomes a parameter again, with its
    current value. Returns ``module``."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
