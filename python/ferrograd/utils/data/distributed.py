"""``ferrograd.utils.data.distributed``: where PyTorch users import ``DistributedSampler``
from (it lives in ``ferrograd.distributed.sampler``; importing it needs no MPI)."""

from ...distributed.sampler import DistributedSampler

__all__ = ["DistributedSampler"]
