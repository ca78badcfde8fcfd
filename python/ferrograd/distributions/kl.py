"""``kl_divergence(p, q)`` and its registry.

Implementations are registered per pair of distribution classes with
``register_kl``; a call dispatches to the most specific registered pair that
matches the arguments' classes (both orders of specificity are considered;
when they disagree a ``RuntimeWarning`` names the ambiguity and the first
match is used), as PyTorch does. Pairs without an implementation raise
``NotImplementedError``.
"""

from __future__ import annotations

import math
import warnings
from functools import total_ordering

import ferrograd as torch
import ferrograd.nn.functional as F

from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis, _solve_tril
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _sum_rightmost, euler_constant

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY = {}  # (type_p, type_q) -> function
_KL_MEMOIZE = {}  # (type(p), type(q)) -> the function dispatch chose


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as the KL divergence of ``type_p`` from
    ``type_q`` (both ``Distribution`` subclasses)."""
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # a new pair may change earlier dispatches
        return fun

    return decorator


@total_ordering
class _Match:
    """A registered pair ordered by specificity: one pair is below another when
    its classes are subclasses, compared left to right."""

    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [
        (super_p, super_q)
        for super_p, super_q in _KL_REGISTRY
        if issubclass(type_p, super_p) and issubclass(type_q, super_q)
    ]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
            f"Please register_kl({left_p.__name__}, {right_q.__name__})",
            RuntimeWarning,
            stacklevel=3,
        )
    return left_fun


def _infinite_like(tensor):
    return torch.full_like(tensor, math.inf)


def _x_log_x(tensor):
    return tensor * tensor.log()


def _batch_trace_XXT(bmat):
    """The trace of X X^T for each matrix of a batch."""
    n = bmat.size(-1)
    m = bmat.size(-2)
    flat_trace = bmat.reshape(bmat.shape[:-2] + (n * m,)).pow(2).sum(-1)
    return flat_trace.reshape(bmat.shape[:-2])


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the batch shape."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {p.__class__.__name__} and "
            f"q type {q.__class__.__name__}"
        )
    return fun(p, q)


def _where_inf(cond, value):
    return torch.where(cond, torch.full_like(value, math.inf), value)


def _where_zero(cond, value):
    return torch.where(cond, torch.zeros_like(value), value)


# ----- same family -------------------------------------------------------------------


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = _where_zero(p.probs == 0, _where_inf(q.probs == 0, t1))
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = _where_zero(p.probs == 1, _where_inf(q.probs == 1, t2))
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_params_p = p.concentration1 + p.concentration0
    sum_params_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_params_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_params_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * torch.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * torch.digamma(p.concentration0)
    t5 = (sum_params_q - sum_params_p) * torch.digamma(sum_params_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    kl = p.total_count * (
        p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p()
    )
    return _where_inf(p.total_count > q.total_count, kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _where_inf((q.probs == 0).expand_as(t), t)
    t = _where_zero((p.probs == 0).expand_as(t), t)
    return t.sum(-1)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p_concentration = p.concentration.sum(-1)
    sum_q_concentration = q.concentration.sum(-1)
    t1 = sum_p_concentration.lgamma() - sum_q_concentration.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p_concentration.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log-normaliser, by automatic differentiation."""
    if type(p) is not type(q):
        raise NotImplementedError(
            "The cross KL-divergence between different exponential families cannot "
            "be computed using Bregman divergences"
        )
    p_nparams = [np_.detach().requires_grad_() for np_ in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = torch.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        term = (qnp - pnp) * g
        result = result - _sum_rightmost(term, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * torch.log(p.rate / q.rate)
    t2 = torch.lgamma(q.concentration) - torch.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * torch.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - torch.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * torch.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two Multivariate Normals with different event "
            "shapes cannot be computed"
        )
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - Lp.diagonal(
        dim1=-2, dim2=-1
    ).log().sum(-1)
    combined_batch_shape = torch.broadcast_shapes(Lq.shape[:-2], Lp.shape[:-2])
    n = p.event_shape[0]
    q_scale_tril = Lq.expand(combined_batch_shape + (n, n))
    p_scale_tril = Lp.expand(combined_batch_shape + (n, n))
    term2 = _batch_trace_XXT(_solve_tril(q_scale_tril, p_scale_tril))
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (torch.log(p.rate) - torch.log(q.rate)) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _where_inf((q.low > p.low) | (q.high < p.high), result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


# ----- different families: -H(p) - E_p[log q(x)], or infinite where the support of p
# ----- is not inside that of q.


def _normal_cross(p_entropy, mean, second_moment, q):
    """-H(p) - E_p[log N(x; q.loc, q.scale)] from p's first two moments."""
    var_q = q.scale.pow(2)
    quad = second_moment - 2 * q.loc * mean + q.loc.pow(2)
    return -p_entropy + 0.5 * torch.log(2 * math.pi * var_q) + quad / (2 * var_q)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    c1, c0 = p.concentration1, p.concentration0
    e_log_x = c1.digamma() - (c1 + c0).digamma()
    return (
        -p.entropy()
        + q.concentration.lgamma()
        - q.concentration * q.rate.log()
        - (q.concentration - 1) * e_log_x
        + q.rate * p.mean
    )


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    mean = p.mean
    return _normal_cross(p.entropy(), mean, p.variance + mean.pow(2), q)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _where_inf((q.low > 0) | (q.high < 1), result)


@register_kl(Exponential, Beta)
@register_kl(Exponential, Uniform)
def _kl_exponential_infinity(p, q):
    return _infinite_like(p.rate)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    return (
        -q.concentration * torch.log(ratio)
        + ratio
        + q.concentration.lgamma()
        + q.concentration * euler_constant
        - (1 + euler_constant)
    )


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    mean = p.rate.reciprocal()
    return _normal_cross(p.entropy(), mean, 2 * mean.pow(2), q)


@register_kl(Gamma, Beta)
@register_kl(Gamma, Uniform)
def _kl_gamma_infinity(p, q):
    return _infinite_like(p.concentration)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    a, r = p.concentration, p.rate
    return _normal_cross(p.entropy(), a / r, (a.pow(2) + a) / r.pow(2), q)


@register_kl(Laplace, Beta)
@register_kl(Laplace, Exponential)
@register_kl(Laplace, Gamma)
@register_kl(Laplace, Uniform)
def _kl_laplace_infinity(p, q):
    return _infinite_like(p.loc)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    return _normal_cross(p.entropy(), p.loc, 2 * p.scale.pow(2) + p.loc.pow(2), q)


@register_kl(Normal, Beta)
@register_kl(Normal, Exponential)
@register_kl(Normal, Gamma)
@register_kl(Normal, Uniform)
def _kl_normal_infinity(p, q):
    return _infinite_like(p.loc)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    # E|x - m| for x ~ N(mu, s): s sqrt(2/pi) exp(-d^2 / 2s^2) + d erf(d / (s sqrt2)).
    d = p.loc - q.loc
    s = p.scale
    e_abs = s * math.sqrt(2 / math.pi) * torch.exp(-0.5 * (d / s).pow(2)) + d * torch.erf(
        d / (s * math.sqrt(2))
    )
    return -p.entropy() + torch.log(2 * q.scale) + e_abs / q.scale


@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _kl_poisson_infinity(p, q):
    return _infinite_like(p.rate)


def _uniform_e_log(low, high):
    """E[log x] for x ~ Uniform(low, high) with low >= 0."""
    return (torch.xlogy(high, high) - high - torch.xlogy(low, low) + low) / (high - low)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    c1, c0 = q.concentration1, q.concentration0
    low, high = p.low, p.high
    inside = (low >= 0) & (high <= 1)
    lo, hi = low.clamp(0, 1), high.clamp(0, 1)
    e_log_x = _uniform_e_log(lo, hi)
    e_log_1mx = _uniform_e_log(1 - hi, 1 - lo)
    lbeta = c1.lgamma() + c0.lgamma() - (c1 + c0).lgamma()
    result = -(high - low).log() + lbeta - (c1 - 1) * e_log_x - (c0 - 1) * e_log_1mx
    return _where_inf(~inside, result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = -(p.high - p.low).log() - q.rate.log() + q.rate * (p.high + p.low) / 2
    return _where_inf(p.low < 0, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    a, r = q.concentration, q.rate
    e_log_x = _uniform_e_log(p.low.clamp(min=0), p.high.clamp(min=0))
    result = (
        -(p.high - p.low).log()
        - a * r.log()
        + a.lgamma()
        - (a - 1) * e_log_x
        + r * (p.high + p.low) / 2
    )
    return _where_inf(p.low < 0, result)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    mean = (p.high + p.low) / 2
    second = (p.high - p.low).pow(2) / 12 + mean.pow(2)
    return _normal_cross(p.entropy(), mean, second, q)
