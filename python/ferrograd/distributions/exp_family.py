"""``ExponentialFamily``: distributions p(x) = h(x) exp(<t(x), theta> - F(theta)),
whose entropy and same-family KL divergence follow from the log-normaliser F
by automatic differentiation (the Bregman divergence of F)."""

from __future__ import annotations

import ferrograd as torch

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    @property
    def _natural_params(self):
        """The natural parameters theta, as a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """F(theta)."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """E[log h(x)]."""
        raise NotImplementedError

    def entropy(self):
        """-E[log p(x)] = F(theta) - <theta, grad F(theta)> - E[log h(x)]."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = torch.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients):
            result = result - (np_ * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
