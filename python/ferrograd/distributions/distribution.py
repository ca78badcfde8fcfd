"""``Distribution``: the base class of every distribution, with PyTorch's
shapes (``sample_shape + batch_shape + event_shape``), argument validation
and its error texts."""

from __future__ import annotations

import warnings

import ferrograd as torch

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


def _as_size(shape):
    if isinstance(shape, torch.Size):
        return shape
    if isinstance(shape, int):
        return torch.Size((shape,))
    return torch.Size(tuple(shape))


class Distribution:
    """The base class: a batch of ``batch_shape`` independent distributions, each
    over values of ``event_shape``. Subclasses define ``arg_constraints``,
    ``support``, ``log_prob`` and ``sample``/``rsample``; ``has_rsample`` says
    whether ``rsample`` (a sample differentiable in the parameters) exists."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Turns argument validation on or off for distributions made afterwards
        without an explicit ``validate_args`` (on by default, as ``assert``)."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = _as_size(batch_shape)
        self._event_shape = _as_size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(
                    f"{self.__class__} does not define `arg_constraints`. "
                    "Please set `arg_constraints = {}` or initialize the distribution "
                    "with `validate_args=False` to turn off validation.",
                    stacklevel=2,
                )
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # cannot be checked
                if param not in self.__dict__ and isinstance(
                    getattr(type(self), param), lazy_property
                ):
                    continue  # not given: computed from a checked parameter
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(
                        f"Expected parameter {param} "
                        f"({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {repr(self)} "
                        f"to satisfy the constraint {repr(constraint)}, "
                        f"but found invalid values:\n{value}"
                    )
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A new distribution with its parameters expanded (not copied) to
        ``batch_shape``; validation is not repeated."""
        raise NotImplementedError

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """A sample (of shape ``sample_shape + batch_shape + event_shape``)
        outside the graph."""
        with torch.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised sample: differentiable in the parameters."""
        raise NotImplementedError

    def sample_n(self, n):
        """``sample((n,))`` (deprecated in PyTorch, kept for old code)."""
        warnings.warn(
            "`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
            FutureWarning,
            stacklevel=2,
        )
        return self.sample(torch.Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return torch.exp(self.entropy())

    def _extended_shape(self, sample_shape=()):
        """``sample_shape + batch_shape + event_shape``."""
        return torch.Size(_as_size(sample_shape) + self._batch_shape + self._event_shape)

    def _validate_sample(self, value):
        """Checks that ``value`` is a tensor whose rightmost dimensions fit the
        event and batch shapes and whose elements lie in the support."""
        if not isinstance(value, torch.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if value.size()[event_dim_start:] != self._event_shape:
            raise ValueError(
                "The right-most size of value must match event_shape: "
                f"{value.size()} vs {self._event_shape}."
            )
        actual_shape = value.size()
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    "Value is not broadcastable with batch_shape+event_shape: "
                    f"{actual_shape} vs {expected_shape}."
                )
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `support` to enable "
                "sample validation. Please initialize the distribution with "
                "`validate_args=False` to turn off validation.",
                stacklevel=2,
            )
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({repr(support)}) "
                f"of the distribution {repr(self)}, "
                f"but found invalid values:\n{value}"
            )

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        param_names = [k for k in self.arg_constraints if k in self.__dict__]
        return self.__class__.__name__ + "(" + ", ".join(
            f"{p}: {_param_repr(self.__dict__[p])}" for p in param_names
        ) + ")"


def _param_repr(t):
    # As PyTorch formats a parameter: a 0-d tensor as its number, a one-element
    # tensor as the tensor, anything larger as its size.
    if t.numel() != 1:
        return str(t.size())
    return str(t.item()) if t.dim() == 0 else str(t)
