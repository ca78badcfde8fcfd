"""``ferrograd.nn``: modules and losses."""

from __future__ import annotations

from . import functional
from .modules import Module, MSELoss, Parameter

__all__ = ["MSELoss", "Module", "Parameter", "functional"]
