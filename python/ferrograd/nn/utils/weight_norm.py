"""The legacy ``nn.utils.weight_norm``: parameters ``weight_g`` and ``weight_v``
and a forward pre-hook that recomputes ``weight`` before every forward.
Deprecated in PyTorch (with this module's warning) in favour of
``nn.utils.parametrizations.weight_norm``."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ..parameter import Parameter, UninitializedParameter
from ._norm_fns import _weight_norm, norm_except_dim

if TYPE_CHECKING:
    from typing import TypeVar

    from ..modules.module import Module

    _M = TypeVar("_M", bound=Module)

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


def weight_norm(module: _M, name: str = "weight", dim: int | None = 0) -> _M:
    """Reparametrizes ``module``'s parameter ``name`` as a magnitude ``<name>_g`` and a
    direction ``<name>_v`` (weight normalization): a forward pre-hook recomputes
    ``<name> = g * v / ||v||`` before every forward, the norm taken over every dimension
    but ``dim``. Registering leaves the weight's value unchanged.

    Deprecated in PyTorch (it warns with ``FutureWarning``) in favour of
    :func:`ferrograd.nn.utils.parametrizations.weight_norm`.

    Args:
        module (Module): the module holding the parameter; changed in place.
        name (str): the parameter's name. Default: ``'weight'``.
        dim (int or None): the dimension kept out of the norm (one magnitude per slice
            along it); ``None`` takes the norm over the whole tensor (one magnitude).
            Default: ``0``.

    Returns:
        Module: ``module``, with the parameters ``<name>_g`` and ``<name>_v`` instead of
        ``<name>``.

    Example::

        >>> m = nn.utils.weight_norm(nn.Linear(2, 2))
        >>> m.weight_g.shape, m.weight_v.shape
        (ferrograd.Size([2, 1]), ferrograd.Size([2, 2]))
        >>> m.weight_v.data = torch.tensor([[3.0, 4.0], [0.0, 2.0]])
        >>> m.weight_g.data = torch.tensor([[1.0], [3.0]])
        >>> _ = m(torch.ones(1, 2))  # the pre-hook recomputes the weight
        >>> m.weight
        tensor([[0.6000, 0.8000],
                [0.0000, 3.0000]], grad_fn=<MulBackward0>)
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: _M, name: str = "weight") -> _M:
    """Undoes :func:`weight_norm`: ``<name>`` becomes a plain parameter again, holding
    its current value ``g * v / ||v||``, and ``<name>_g``, ``<name>_v`` and the pre-hook
    go. Raises ``ValueError`` if ``name`` is not weight-normalized.

    Args:
        module (Module): the module :func:`weight_norm` was applied to; changed in place.
        name (str): the parameter's name. Default: ``'weight'``.

    Returns:
        Module: ``module``.

    Example::

        >>> m = nn.utils.weight_norm(nn.Linear(2, 2))
        >>> m.weight_v.data = torch.tensor([[3.0, 4.0], [0.0, 2.0]])
        >>> m.weight_g.data = torch.tensor([[1.0], [3.0]])
        >>> m = nn.utils.remove_weight_norm(m)
        >>> sorted(name for name, _ in m.named_parameters())
        ['bias', 'weight']
        >>> m.weight
        Parameter containing:
        tensor([[0.6000, 0.8000],
                [0.0000, 3.0000]], requires_grad=True)
    """
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
