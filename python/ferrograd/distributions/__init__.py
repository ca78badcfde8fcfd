"""Probability distributions with PyTorch's ``torch.distributions`` API.

Parameters are ferrograd tensors, so ``rsample`` (where a distribution has
it), ``log_prob``, ``entropy`` and ``kl_divergence`` are differentiable in
them: REINFORCE (``Categorical(logits=...).log_prob(action) * reward``) and
VAEs (``Normal(mu, std).rsample()``, ``kl_divergence``) work as written for
PyTorch. Samples are drawn through the same generator calls, in the same
order, as PyTorch's classes, so a seeded program gets PyTorch's numbers (the
exceptions are named in each class's docstring and in docs/distributions.md).

Layout as in PyTorch: ``distribution`` (the base class), ``constraints``,
``transforms``, ``kl`` (the registry), ``utils``, one module per family.
"""

from __future__ import annotations

from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .half_normal import HalfNormal
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .poisson import Poisson
from .relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from .relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F403
from .uniform import Uniform

__all__ = [
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "Dirichlet",
    "Distribution",
    "ExpRelaxedCategorical",
    "Exponential",
    "ExponentialFamily",
    "Gamma",
    "Geometric",
    "HalfNormal",
    "Independent",
    "Laplace",
    "LogNormal",
    "LogitRelaxedBernoulli",
    "MixtureSameFamily",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Poisson",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "StudentT",
    "TransformedDistribution",
    "Uniform",
    "constraints",
    "kl_divergence",
    "register_kl",
    "transforms",
]
__all__.extend(transforms.__all__)
