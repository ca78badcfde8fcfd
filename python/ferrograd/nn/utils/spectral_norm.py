"""The legacy ``nn.utils.spectral_norm``: parameter ``weight_orig``, buffers
``weight_u``/``weight_v`` and a forward pre-hook that sets ``weight`` (a plain
attribute) to ``weight_orig / sigma`` before every forward, running one
power-iteration step per training forward. The state dict records the
format's version under ``_metadata``, as PyTorch's does."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..parameter import Parameter, UninitializedParameter

if TYPE_CHECKING:
    from typing import TypeVar

    from ..modules.module import Module

    _M = TypeVar("_M", bound=Module)

__all__ = ["SpectralNorm", "remove_spectral_norm", "spectral_norm"]


class SpectralNorm:
    """The forward pre-hook of ``spectral_norm``."""

    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but "
                f"got n_power_iterations={n_power_iterations}"
            )
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        weight_mat = weight
        if self.dim != 0:
            weight_mat = weight_mat.permute(
                self.dim, *[d for d in range(weight_mat.dim()) if d != self.dim]
            )
        height = weight_mat.size(0)
        return weight_mat.reshape(height, -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    # In place (PyTorch's ``out=``): the buffers keep their identity.
                    v.copy_(F.normalize(_C.mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(_C.mv(weight_mat, v), dim=0, eps=self.eps))
                u = u.clone()
                v = v.clone()
        sigma = _C.dot(u, _C.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat, u, target_sigma):
        from ... import linalg

        v = linalg.multi_dot(
            [linalg.pinv(weight_mat.t().mm(weight_mat)), weight_mat.t(), u.unsqueeze(1)]
        ).squeeze(1)
        return v.mul_(target_sigma / _C.dot(u, _C.mv(weight_mat, v)))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two spectral_norm hooks on the same parameter {name}"
                )
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError(
                "The module passed to `SpectralNorm` can't have uninitialized parameters. "
                "Make sure to run the dummy forward before applying spectral normalization"
            )
        with no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # ``weight`` stays readable before the first forward, as a plain attribute.
        object.__setattr__(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(SpectralNormStateDictHook(fn))
        module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn


class SpectralNormLoadStateDictPreHook:
    """Upgrades a state dict saved before the format's version 1 (it held
    ``weight`` and no ``weight_v``): ``v`` solves ``W_orig x = u``, rescaled so
    that ``sigma`` is ``W_orig / W``."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys,
                 unexpected_keys, error_msgs):  # fmt: skip
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is None or version < 1:
            weight_key = prefix + fn.name
            if (
                version is None
                and all(weight_key + s in state_dict for s in ("_orig", "_u", "_v"))
                and weight_key not in state_dict
            ):
                return
            has_missing_keys = False
            for suffix in ("_orig", "", "_u"):
                key = weight_key + suffix
                if key not in state_dict:
                    has_missing_keys = True
                    if strict:
                        missing_keys.append(key)
            if has_missing_keys:
                return
            with no_grad():
                weight_orig = state_dict[weight_key + "_orig"]
                weight = state_dict.pop(weight_key)
                sigma = (weight_orig / weight).mean()
                weight_mat = fn.reshape_weight_to_matrix(weight_orig)
                u = state_dict[weight_key + "_u"]
                v = fn._solve_v_and_rescale(weight_mat, u, sigma)
                state_dict[weight_key + "_v"] = v


class SpectralNormStateDictHook:
    """Records the format's version in the state dict's ``_metadata``."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        if "spectral_norm" not in local_metadata:
            local_metadata["spectral_norm"] = {}
        key = self.fn.name + ".version"
        if key in local_metadata["spectral_norm"]:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        local_metadata["spectral_norm"][key] = self.fn._version


def spectral_norm(
    module: _M,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> _M:
    """Divides ``module``'s parameter ``name`` by its largest singular value ``sigma``
    (spectral normalization), estimated by power iteration: the parameter is kept as
    ``<name>_orig`` with the buffers ``<name>_u`` and ``<name>_v`` (the singular vector
    estimates), and a forward pre-hook sets ``<name> = <name>_orig / sigma`` before
    every forward, running ``n_power_iterations`` steps in training mode only.

    PyTorch recommends :func:`ferrograd.nn.utils.parametrizations.spectral_norm` for new
    code; this form is kept for its checkpoints.

    Args:
        module (Module): the module holding the parameter; changed in place.
        name (str): the parameter's name. Default: ``'weight'``.
        n_power_iterations (int): power iteration steps per training forward; positive.
            Default: ``1``.
        eps (float): the smallest norm the vectors are divided by when normalised.
            Default: ``1e-12``.
        dim (int, optional): the dimension of the parameter that becomes the rows of
            the matrix whose singular value is taken. Default: ``None``, which means
            ``1`` for transposed convolutions and ``0`` otherwise.

    Returns:
        Module: ``module``, with the parameter ``<name>_orig`` instead of ``<name>``.

    Example::

        >>> m = nn.utils.spectral_norm(nn.Linear(3, 3))
        >>> sorted(name for name, _ in m.named_parameters())
        ['bias', 'weight_orig']
        >>> sorted(name for name, _ in m.named_buffers())
        ['weight_u', 'weight_v']
        >>> m.weight_orig.data = torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.5]])
        >>> for _ in range(20):  # each training forward refines the estimate of sigma
        ...     _ = m(torch.ones(1, 3))
        >>> m.weight
        tensor([[1.0000, 0.0000, 0.0000],
                [0.0000, 0.5000, 0.0000],
                [0.0000, 0.0000, 0.2500]], grad_fn=<DivBackward0>)
    """
    if dim is None:
        from .parametrizations import _default_sn_dim

        dim = _default_sn_dim(module)
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: _M, name: str = "weight") -> _M:
    """Undoes :func:`spectral_norm`: ``<name>`` becomes a plain parameter holding its
    current normalized value ``<name>_orig / sigma`` (with the current singular vector
    estimates, no further power iteration), and ``<name>_orig``, ``<name>_u``,
    ``<name>_v`` and the hooks go. Raises ``ValueError`` if ``name`` is not spectrally
    normalized.

    Args:
        module (Module): the module :func:`spectral_norm` was applied to; changed in
            place.
        name (str): the parameter's name. Default: ``'weight'``.

    Returns:
        Module: ``module``.

    Example::

        >>> m = nn.utils.spectral_norm(nn.Linear(2, 2))
        >>> m.weight_orig.data = torch.tensor([[4.0, 0.0], [0.0, 1.0]])
        >>> for _ in range(20):
        ...     _ = m(torch.ones(1, 2))
        >>> m = nn.utils.remove_spectral_norm(m)
        >>> sorted(name for name, _ in m.named_parameters()), sorted(dict(m.named_buffers()))
        (['bias', 'weight'], [])
        >>> m.weight
        Parameter containing:
        tensor([[1.0000, 0.0000],
                [0.0000, 0.2500]], requires_grad=True)
    """
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    for k, hook in module._state_dict_hooks.items():
        if isinstance(hook, SpectralNormStateDictHook) and hook.fn.name == name:
            del module._state_dict_hooks[k]
            break
    for k, hook in module._load_state_dict_pre_hooks.items():
        if isinstance(hook, SpectralNormLoadStateDictPreHook) and hook.fn.name == name:
            del module._load_state_dict_pre_hooks[k]
            break
    return module
