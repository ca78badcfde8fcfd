"""``ferrograd.autograd.profiler``: time the ops a block of code runs.

::

    with ferrograd.autograd.profiler.profile(record_shapes=True) as prof:
        loss = model(x).sum()
        loss.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))

Every op called from Python is one event (its name is the op's: ``mm``,
``conv2d``); every backward node the engine runs is one event named by the
node (``MmBackward0``); :class:`record_function` adds named ranges. Only the
thread that opened the profile is recorded, as in PyTorch. With no profile
open the cost per op is one load of a process-wide flag.

Differences from PyTorch: no device, memory or FLOP columns (they read 0);
``with_stack`` and ``with_modules`` are accepted and record nothing more.
"""

from __future__ import annotations

import functools
import time
from typing import Any, Callable

from .. import _C
from .profiler_util import EventList, FunctionEvent, FunctionEventAvg, _events_from_core

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]

#: The profile open in this process, if any: the core keeps one event log.
_OPEN: list = []


class profile:
    """Records the ops, backward nodes and ``record_function`` ranges of a block."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Any = None) -> None:
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.function_events: EventList | None = None
        self._origin = 0
        self._entered = False

    def _start(self) -> None:
        if _OPEN:
            raise RuntimeError("Profiler is already enabled on this thread")
        _OPEN.append(self)
        self._origin = _C._profiler_now()
        _C._profiler_start(self.record_shapes, False)

    def _stop(self) -> None:
        raw = _C._profiler_stop()
        _OPEN.remove(self)
        self.function_events = _events_from_core(raw, self._origin)

    def __enter__(self) -> profile:
        if self.enabled:
            if self._entered:
                raise RuntimeError("Profiler context manager is not reentrant")
            self._entered = True
            self._start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.enabled and self._entered:
            self._stop()
            self._entered = False

    def _check_finish(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def events(self) -> EventList:
        return self._check_finish()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self._check_finish().key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self) -> FunctionEventAvg:
        return self._check_finish().total_average()

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs: Any) -> str:
        return self._check_finish().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path: str) -> None:
        self._check_finish().export_chrome_trace(path)

    @property
    def self_cpu_time_total(self) -> float:
        return self._check_finish().self_cpu_time_total

    def __str__(self) -> str:
        return self.table() if self.function_events is not None else "<unfinished profile>"

    __repr__ = __str__


class record_function:
    """A named range in the profile (a context manager or a decorator); free when
    no profile is open."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._start: int | None = None

    def __enter__(self) -> record_function:
        self._start = time.monotonic_ns() if _C._profiler_active() else None
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._start is not None:
            _C._profiler_record(self.name, self._start, time.monotonic_ns())
            self._start = None

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapper
