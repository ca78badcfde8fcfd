"""``ferrograd.distributed``: PyTorch's process-group API over MPI (mpi4py).

Start N processes with ``python -m ferrograd.distributed.run -n N script.py`` (which calls
``mpiexec``), call ``init_process_group("mpi")`` in each, and use the collectives or
``ferrograd.nn.parallel.DistributedDataParallel``. mpi4py is only needed once a process
group is created; ``import ferrograd.distributed`` works without it.
"""

from __future__ import annotations

from .distributed_c10d import *  # noqa: F403
from .distributed_c10d import __all__ as _c10d_all
from .sampler import DistributedSampler

__all__ = [*_c10d_all, "DistributedSampler"]
