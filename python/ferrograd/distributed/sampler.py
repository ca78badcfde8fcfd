"""``DistributedSampler``: each rank's share of a data set's indices, as PyTorch's."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from ..utils.data.dataset import Dataset

__all__ = ["DistributedSampler"]


def _permutation(n, seed):
    """PyTorch's ``torch.randperm(n, generator=g)`` with ``g.manual_seed(seed)``, so ranks
    (and PyTorch scripts) agree on the shuffled order."""
    import ferrograd

    g = ferrograd.Generator()
    g.manual_seed(seed)
    return ferrograd.randperm(n, generator=g).tolist()


class DistributedSampler:
    """Yields rank ``rank``'s share of ``range(len(dataset))``: every ``num_replicas``-th
    index of one (optionally shuffled, seeded by ``seed + epoch``) order, padded by
    repeating indices so each rank gets as many, or trimmed with ``drop_last``. Call
    ``set_epoch`` at the start of every epoch so shuffling differs between epochs."""

    def __init__(
        self,
        dataset: Dataset[Any],
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None or rank is None:
            from . import distributed_c10d as c10d

            if not c10d.is_available():
                raise RuntimeError("Requires distributed package to be available")
            if num_replicas is None:
                num_replicas = c10d.get_world_size()
            if rank is None:
                rank = c10d.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if self.drop_last and n % self.num_replicas != 0:
            # Trim to the largest multiple of num_replicas so every rank gets the same count.
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            indices = _permutation(n, self.seed + self.epoch)
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[: self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank : self.total_size : self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch that, added to ``seed``, seeds this epoch's shuffle."""
        self.epoch = epoch
