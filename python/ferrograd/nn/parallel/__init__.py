"""``ferrograd.nn.parallel``: data-parallel training (``DistributedDataParallel``)."""

from __future__ import annotations

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
