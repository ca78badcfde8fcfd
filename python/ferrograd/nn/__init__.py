"""``ferrograd.nn``: modules, layers and losses."""

from __future__ import annotations

from . import functional, init, parallel, utils
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedParameter

__all__ = [
    *_modules_all,
    "DataParallel",
    "Buffer",
    "Parameter",
    "UninitializedParameter",
    "functional",
    "init",
    "parallel",
    "utils",
]
