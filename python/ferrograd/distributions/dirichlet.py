"""The Dirichlet distribution over the probability simplex."""

from __future__ import annotations

import ferrograd as torch
import ferrograd.nn.functional as F
from ferrograd.autograd import Function

from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class _Dirichlet(Function):
    """Dirichlet samples with a reparameterised gradient. The values are
    PyTorch's (``_sample_dirichlet``: Gamma draws in float64, normalised). The
    gradient differentiates x = g / sum(g) through the implicit gradients of
    the Gamma draws g, an exact pathwise gradient with the right expectation;
    PyTorch differentiates through the Beta marginals instead, so per-sample
    gradients differ from PyTorch's while their expectation is the same."""

    @staticmethod
    def forward(ctx, concentration):
        x, gammas = torch._C._sample_dirichlet_gammas(concentration)
        ctx.save_for_backward(x, concentration, gammas)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        x, concentration, gammas = ctx.saved_tensors
        # dx_i/dalpha_j = (delta_ij - x_i) / S * dg_j/dalpha_j.
        dg = torch._standard_gamma_grad(concentration.double(), gammas).to(x.dtype)
        total = gammas.sum(-1, keepdim=True).to(x.dtype)
        inner = (grad_output * x).sum(-1, keepdim=True)
        return dg / total * (grad_output - inner)


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration) over the simplex of the last dimension. Seeded
    samples are PyTorch's; see ``_Dirichlet`` for the gradient."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = torch.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        concentration = self.concentration.expand(shape)
        return _Dirichlet.apply(concentration)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (
            torch.xlogy(self.concentration - 1.0, value).sum(-1)
            + torch.lgamma(self.concentration.sum(-1))
            - torch.lgamma(self.concentration).sum(-1)
        )

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # All concentrations below 1: the mode is the vertex of the largest.
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)
        vertex = F.one_hot(concentrationm1.argmax(-1), concentrationm1.shape[-1]).to(mode)
        return torch.where(mask, vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (
            torch.lgamma(self.concentration).sum(-1)
            - torch.lgamma(a0)
            - (k - a0) * torch.digamma(a0)
            - ((self.concentration - 1.0) * torch.digamma(self.concentration)).sum(-1)
        )

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - torch.lgamma(x.sum(-1))
