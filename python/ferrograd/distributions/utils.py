"""Helpers the distributions share: broadcasting parameters, the logits and
probabilities conversions, cached properties and the standard normal draw."""

from __future__ import annotations

import functools
import numbers

import ferrograd as torch
import ferrograd.nn.functional as F

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def broadcast_all(*values):
    """Broadcasts tensors and Python numbers to one shape; numbers become tensors
    of the first tensor's dtype (the default dtype when there is none)."""
    if not all(isinstance(v, (torch.Tensor, numbers.Number)) for v in values):
        raise ValueError(
            "Input arguments must all be instances of numbers.Number, "
            "torch.Tensor or objects implementing __torch_function__."
        )
    if not all(isinstance(v, torch.Tensor) for v in values):
        dtype = torch.get_default_dtype()
        for v in values:
            if isinstance(v, torch.Tensor):
                dtype = v.dtype
                break
        values = tuple(
            v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=dtype) for v in values
        )
    return tuple(torch.broadcast_tensors(*values))


def _standard_normal(shape, dtype, device=None):
    # PyTorch fills an empty tensor with normal_(): the same stream as randn.
    return torch.empty(shape, dtype=dtype).normal_()


def _sum_rightmost(value, dim):
    """Sums out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(value.shape[: value.dim() - dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: a sigmoid for binary logits, a softmax over the
    last dimension otherwise."""
    if is_binary:
        return torch.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamps probabilities into [eps, 1 - eps] of their dtype."""
    eps = torch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities: log(p) - log1p(-p) for binary, log(p) otherwise
    (the probabilities clamped away from 0 and 1 first)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return torch.log(ps_clamped) - torch.log1p(-ps_clamped)
    return torch.log(ps_clamped)


class lazy_property:
    """A property computed on first use and then stored on the instance (the
    parameter a distribution was not given, e.g. ``probs`` from ``logits``)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with torch.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a ``lazy_property`` looks like on the class: also a ``property``, so
    documentation tools and ``isinstance(..., property)`` see one."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (below diagonal ``diag``) of ``mat`` as a vector, row by row."""
    n = mat.shape[-1]
    rows, cols = [], []
    for i in range(n):
        for j in range(n):
            if j - i <= diag:
                rows.append(i)
                cols.append(j)
    return mat[..., torch.tensor(rows), torch.tensor(cols)]
