"""``ferrograd.nn.parallel``: data-parallel training (``DistributedDataParallel``;
``DataParallel``, which on a CPU-only library calls its module)."""

from __future__ import annotations

from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
