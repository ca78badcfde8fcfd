"""``LayerNorm`` and ``GroupNorm``."""

from __future__ import annotations

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .module import Module, Parameter

__all__ = ["LayerNorm", "GroupNorm"]


class LayerNorm(Module):
    """Normalises over the trailing ``normalized_shape`` dimensions, with an
    optional elementwise affine transform (weight 1, bias 0 initially)."""

    def __init__(
        self,
        normalized_shape,
        eps=1e-5,
        elementwise_affine=True,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        dtype = dtype or _C.get_default_dtype()
        if elementwise_affine:
            self.weight = Parameter(_C.ones(*self.normalized_shape, dtype=dtype))
            if bias:
                self.bias = Parameter(_C.zeros(*self.normalized_shape, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self):
        """Weight 1, bias 0."""
        with no_grad():
            if self.weight is not None:
                self.weight.fill_(1.0)
            if self.bias is not None:
                self.bias.zero_()

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class GroupNorm(Module):
    """Normalises each sample over groups of ``num_channels / num_groups``
    channels, with an optional per-channel affine transform."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        dtype = dtype or _C.get_default_dtype()
        if affine:
            self.weight = Parameter(_C.ones(num_channels, dtype=dtype))
            self.bias = Parameter(_C.zeros(num_channels, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self):
        """Weight 1, bias 0."""
        if self.affine:
            with no_grad():
                self.weight.fill_(1.0)
                self.bias.zero_()

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


# ----- RMSNorm, LocalResponseNorm, CrossMapLRN2d -----------------------------------------------

from .._functional import norm_extra as _norm_extra  # noqa: E402

__all__ += ["RMSNorm", "LocalResponseNorm", "CrossMapLRN2d"]


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape``
    dimensions with an optional elementwise ``weight`` (initially 1); ``eps=None``
    means ``finfo(input.dtype).eps``."""

    def __init__(
        self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None
    ):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(
                _C.ones(*self.normalized_shape, dtype=dtype or _C.get_default_dtype())
            )
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        """Weight 1."""
        if self.weight is not None:
            with no_grad():
                self.weight.fill_(1.0)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}"
        )


class LocalResponseNorm(Module):
    """Normalises each element by the mean square of ``size`` neighbouring
    channels: ``x / (k + alpha * mean) ** beta``."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """PyTorch's legacy (Lua Torch) cross-channel LRN on ``(N, C, H, W)``, with its
    channel window, including that channel 0 stays in every window's sum; the
    gradient is that of this forward."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return _norm_extra.cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
