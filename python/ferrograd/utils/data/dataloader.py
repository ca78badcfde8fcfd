"""``DataLoader``: batches from a dataset, in the main process or in workers."""

from __future__ import annotations

import functools
import itertools
import math
import multiprocessing
import os
import queue
import signal
import sys
import time
from typing import TYPE_CHECKING, Any, Generic

import numpy as np

import ferrograd as _fg

from ._utils import collate as _collate
from ._utils import worker as _worker
from .dataset import IterableDataset, T_co, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from ..._C import Generator
    from .dataset import Dataset

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

# How often a waiting loader checks that its workers are alive (seconds).
_DEATH_CHECK_S = 0.2


def _signal_name(sig):
    try:
        return signal.strsignal(sig) or f"signal {sig}"
    except ValueError:
        return f"signal {sig}"


default_collate = _collate.default_collate
default_convert = _collate.default_convert
get_worker_info = _worker.get_worker_info


class _DatasetKind:
    Map = 0
    Iterable = 1


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the index stream of an ``IterableDataset``."""

    def __iter__(self):
        while True:
            yield None


class _MapDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        # default_collate of TensorDataset samples stacks each tensor's rows:
        # the same batch comes from indexing every tensor with the whole batch
        # index at once, one Rust call per tensor instead of one per sample.
        self.whole_batch = (
            auto_collation and type(dataset) is TensorDataset and collate_fn is default_collate
        )

    def fetch(self, index):
        if self.auto_collation:
            if self.whole_batch and len(index) > 0:
                return _take_rows(self.dataset.tensors, index)
            getitems = getattr(self.dataset, "__getitems__", None)
            if callable(getitems):
                data = getitems(index)
            else:
                data = [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def _take_rows(tensors, index):
    """``[stack([t[i] for i in index]) for t in tensors]`` in one copy per tensor."""
    np_index = None
    out = []
    for t in tensors:
        if t.requires_grad:
            # Recorded like the stack of rows it replaces.
            n = t.size(0)
            idx = _fg.tensor([i + n if i < 0 else i for i in index], dtype=_fg.int64)
            out.append(t.index_select(0, idx))
            continue
        if np_index is None:
            np_index = np.asarray(index, dtype=np.int64)
        # NumPy's take of whole rows is a memcpy per row; IndexError texts
        # for an index out of range are NumPy's.
        out.append(_fg.from_numpy(t.numpy()[np_index]))
    return out


def _create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
    cls = _MapDatasetFetcher if kind == _DatasetKind.Map else _IterableDatasetFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


class DataLoader(Generic[T_co]):
    """Iterates over ``dataset`` in batches, as PyTorch's ``DataLoader``.

    ``batch_size``/``shuffle``/``sampler``/``drop_last`` (or a ``batch_sampler``)
    choose the indices, ``collate_fn`` (``default_collate``) turns each batch's
    samples into tensors. ``num_workers > 0`` fetches batches in that many
    worker processes (forked on Linux), each seeded ``base_seed + id`` for
    ``ferrograd``, ``random`` and NumPy, with ``worker_init_fn(id)`` run first;
    batches come back in order, ``prefetch_factor`` per worker in flight.
    ``generator`` drives the shuffling and the base seed, so a seeded
    generator gives the same batches on every run. ``pin_memory`` is accepted
    and ignored (there is no GPU); batches from workers travel pickled.
    """

    def __init__(
        self,
        dataset: Dataset[T_co],
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable[Any] | None = None,
        batch_sampler: Sampler | Iterable[Sequence[Any]] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list[T_co]], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable "
                "multiprocessing."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set "
                "prefetch_factor to None."
            )
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if isinstance(shuffle, bool) and shuffle:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified shuffle option, "
                    f"but got shuffle={shuffle}"
                )
            elif sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified sampler option, "
                    f"but got sampler={sampler}"
                )
            elif batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified batch_sampler "
                    f"option, but got batch_sampler={batch_sampler}"
                )
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                raise ValueError(
                    "batch_size=None option disables auto-batching and is mutually exclusive "
                    "with drop_last"
                )

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.multiprocessing_context = multiprocessing_context
        self._IterableDataset_len_called = None
        self._iterator = None

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self) -> Iterator[Any]:
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    length = length // self.batch_size
                else:
                    length = math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._persistent_workers = loader.persistent_workers
        self._sampler_iter = iter(self._index_sampler)
        # Drawn before the sampler's first draw, as PyTorch's: the sampler's
        # generator body runs only at the first next().
        self._base_seed = int(
            _fg.empty((), dtype=_fg.int64).random_(generator=loader.generator).item()
        )
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        return data

    def __len__(self):
        return len(self._index_sampler)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = _create_fetcher(
            self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
            self._drop_last,
        )  # fmt: skip

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        ctx = loader.multiprocessing_context
        if ctx is None:
            # fork starts a worker in milliseconds and shares the dataset
            # without pickling it; the thread pool rebuilds itself in the
            # child (pthread_atfork), so a parent that ran kernels forks safely.
            ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else None)
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self._worker_init_fn = loader.worker_init_fn
        self._shutdown = False
        self._data_queue = ctx.Queue()
        self._workers_done_event = ctx.Event()
        self._index_queues = []
        self._workers = []
        factory = functools.partial(
            _create_fetcher, self._dataset_kind, self._dataset, self._auto_collation,
            self._collate_fn, self._drop_last,
        )  # fmt: skip
        for i in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            w = ctx.Process(
                target=_worker._worker_loop,
                args=(
                    factory, self._dataset, self._dataset_kind == _DatasetKind.Iterable,
                    index_queue, self._data_queue, self._workers_done_event, self._base_seed,
                    self._worker_init_fn, i, self._num_workers, os.getpid(),
                ),
            )  # fmt: skip
            w.daemon = True
            w.start()
            self._index_queues.append(index_queue)
            self._workers.append(w)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for q in self._index_queues:
                q.put(_worker._ResumeIteration())
            resumed = 0
            while resumed < self._num_workers:
                idx, _ = self._get_data()
                if isinstance(idx, _worker._ResumeIteration):
                    resumed += 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout):
        # Waits in short slices so a dead worker is reported within a fraction of a
        # second whatever the timeout (PyTorch learns it from SIGCHLD); a batch that
        # arrives ends the wait at once.
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                return True, self._data_queue.get(timeout=max(0.0, min(left, _DEATH_CHECK_S)))
            except queue.Empty:
                pass
            self._raise_if_a_worker_died()
            if left <= _DEATH_CHECK_S:
                return False, None

    def _raise_if_a_worker_died(self):
        for i, w in enumerate(self._workers):
            if not self._workers_status[i] or w.is_alive():
                continue
            code = w.exitcode
            self._shutdown_workers(wait=False)
            if code is not None and code < 0:
                # PyTorch's words (its SIGCHLD handler's), with the signal's name.
                name = _signal_name(-code)
                msg = f"DataLoader worker (pid {w.pid}) is killed by signal: {name}. "
                if -code == signal.SIGBUS:
                    msg += (
                        "It is possible that dataloader's workers are out of shared memory. "
                        "Please try to raise your shared memory limit."
                    )
            else:
                msg = (
                    f"DataLoader worker (pid {w.pid}) exited unexpectedly with exit code "
                    f"{code}. Details are lost due to multiprocessing. Rerunning with "
                    "num_workers=0 may give better error trace."
                )
            raise RuntimeError(msg) from None

    def _get_data(self):
        if self._timeout > 0:
            ok, data = self._try_get_data(self._timeout)
            if ok:
                return data
            # A worker stuck in the dataset would hold its batch for as long as
            # it likes; the loader is over, so it is stopped rather than awaited.
            self._shutdown_workers(wait=False)
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            ok, data = self._try_get_data(_worker.MP_STATUS_CHECK_INTERVAL)
            if ok:
                return data

    def _try_put_index(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker]:
                break
        else:
            return
        self._index_queues[worker].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                # The worker of this task ran out of data (an IterableDataset).
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process_data(data)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _worker._IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
            else:
                del self._task_info[idx]
                self._rcvd_idx += 1
                return self._process_data(data)

    def _process_data(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _shutdown_workers(self, wait=True):
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for q in self._index_queues:
                q.put(None)
            for w in self._workers:
                w.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL * 5 if wait else 0)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._data_queue.cancel_join_thread()
            self._data_queue.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
            for w in self._workers:
                w.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL)

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass
