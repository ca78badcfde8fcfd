"""The chi-squared distribution: Gamma(df / 2, 1 / 2)."""

from __future__ import annotations

import ferrograd as torch

from . import constraints
from .gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """Chi2(df), a ``Gamma(0.5 * df, 0.5)`` (its samples are Gamma's)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(torch.Size(batch_shape), new)

    @property
    def df(self):
        return self.concentration * 2
