"""PyTorch's generic join context manager (``torch.distributed.algorithms.join``): ranks
that run out of inputs keep shadowing the collectives of the ranks that have not, until
every rank has joined.

Each iteration of a rank that has not joined starts with
``Join.notify_join_context(joinable)`` (``DistributedDataParallel`` calls it at the start
of its forward); a joined rank, inside ``Join.__exit__``, meets that call with its own
and then runs its hooks' ``main_hook()`` to match the rest of the iteration's
collectives. ferrograd exchanges one small row per rank there (with ``allgather``):
whether the rank is still active, and what the first joinable needs its joined peers to
know about the iteration (``_join_row()``); PyTorch uses separate all-reduces for these.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import NamedTuple

import numpy as np

__all__ = ["Join", "JoinHook", "Joinable"]


class JoinHook:
    """Two entry points of the join context manager: ``main_hook()``, called once per
    iteration that some rank still runs, to shadow its collectives, and
    ``post_hook(is_last_joiner)``, called once every rank has joined."""

    def main_hook(self) -> None:
        """Shadows the collectives of one training iteration of the ranks that have
        not joined."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Runs after every rank joined; ``is_last_joiner`` is whether this rank was
        among the last to join."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(enable=False, throw_on_early_termination=False, is_first_joinable=False)


class Joinable(ABC):
    """A class that can take part in a ``Join``: it implements ``join_hook()``,
    ``join_device`` and ``join_process_group``, and calls
    ``Join.notify_join_context(self)`` before each iteration's collectives."""

    @abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        """The ``JoinHook`` of this joinable (``kwargs`` are the ``Join``'s)."""

    @property
    @abstractmethod
    def join_device(self):
        """The device of the join's communication (always the CPU here)."""

    @property
    @abstractmethod
    def join_process_group(self):
        """The process group of the join's communication."""


def _exchange(process_group, row):
    """Every rank's row, in rank order: one allgather of small int64 vectors."""
    from .. import distributed_c10d as c10d

    w = c10d._check_group(process_group)
    mine = np.asarray(row, dtype=np.int64)
    rows = np.empty((w.size, mine.size), dtype=np.int64)
    c10d._blocking(_JOIN_WHAT, w.comm.Allgather, mine, rows)
    return rows


_JOIN_WHAT = "Join: counting the ranks that have not joined"


class Join:
    """Context manager for training on uneven inputs across ranks: a rank whose inputs
    ran out waits at the end of the ``with`` block, shadowing the collectives of the
    ranks still training (through each joinable's hook) until all have joined; then
    each hook's ``post_hook`` runs (``DistributedDataParallel``'s copies the model of
    the last rank to join to every rank).

    ``enable=False`` turns it off (for inputs known to be even);
    ``throw_on_early_termination=True`` makes every rank raise as soon as one has run
    out of inputs instead."""

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = list(joinables)
        self._join_hooks = [j.join_hook(**kwargs) for j in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs()
        self._extract_dist_info()

    def _set_joinable_configs(self):
        for i, j in enumerate(self._joinables):
            j._join_config = _JoinConfig(
                enable=self._enable,
                throw_on_early_termination=self._throw_on_early_termination,
                is_first_joinable=i == 0,
            )

    def _extract_dist_info(self):
        from .. import distributed_c10d as c10d

        process_group = None
        for j in self._joinables:
            pg = j.join_process_group
            if process_group is None:
                process_group = pg
            elif pg is not process_group:
                raise ValueError("Using join context manager with multiple process groups")
        self._process_group = process_group
        self._rank = c10d.get_rank(process_group)
        self._device = self._joinables[0].join_device

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if not self._enable or exc_type is not None:
                return  # an exception propagates as it is
            first = self._joinables[0]
            width = len(_row_of(first, active=False))
            is_last_joiner = True
            i = 0
            while True:
                rows = _exchange(self._process_group, [0] * width)
                if int(rows[:, 0].sum()) == 0:
                    break
                if self._throw_on_early_termination:
                    raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")
                if i == 1000:
                    warnings.warn(
                        "Detected uneven input skew of greater than 1000. This means that "
                        f"rank {self._rank} has at least 1000 fewer inputs than other "
                        "currently-active ranks. This level of skew could lead to "
                        "performance degradation during training.",
                        stacklevel=2,
                    )
                first._join_rows = rows
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
                i += 1
            for hook in self._join_hooks:
                hook.post_hook(is_last_joiner)
        finally:
            # Unlike PyTorch, forwards after the block no longer notify a join.
            for j in self._joinables:
                j._join_config = _JoinConfig.construct_disabled_join_config()

    @staticmethod
    def notify_join_context(joinable):
        """Tells the join context that this rank has not joined, before the joinable's
        own collectives of this iteration; with ``throw_on_early_termination``, raises
        if a rank has already joined. Only the first joinable of a ``Join``
        communicates; for it this returns every rank's row (an int64 array, one row per
        rank: whether it is still active, then the joinable's ``_join_row()``), for the
        others (and outside a join) ``None``."""
        if not hasattr(joinable, "_join_config"):
            raise AssertionError(
                f"Check that the {type(joinable)} constructor calls the ``Joinable`` "
                "constructor"
            )
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        rows = _exchange(joinable.join_process_group, _row_of(joinable, active=True))
        if config.throw_on_early_termination and int(rows[:, 0].min()) == 0:
            raise RuntimeError(
                "Detected at least one rank that exhausted inputs. Throwing across all ranks."
            )
        return rows


def _row_of(joinable, active):
    extra = list(joinable._join_row()) if hasattr(joinable, "_join_row") else []
    return [1, *extra] if active else [0] * (1 + len(extra))
