"""``ferrograd.nn``: modules, layers and losses."""

from __future__ import annotations

from . import functional, init, parallel, utils
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all

__all__ = [*_modules_all, "Parameter", "functional", "init", "utils"]
__all__ = [*_modules_all, "functional", "parallel"]
__all__ = [*_modules_all, "functional", "init", "utils"]
