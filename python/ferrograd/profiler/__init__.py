"""``ferrograd.profiler``: PyTorch's ``torch.profiler`` API over ferrograd's op events.

::

    from ferrograd.profiler import profile, record_function, ProfilerActivity

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("model_inference"):
            model(inputs)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))

A ``schedule`` records some steps of a loop (``prof.step()`` after each) and
hands each finished window to ``on_trace_ready``. See
:mod:`ferrograd.autograd.profiler` for what is recorded and what differs from
PyTorch.
"""

from __future__ import annotations

import enum
import gzip
import json
import os
import socket
import time
from typing import Any, Callable, Iterable

from ..autograd import profiler as _legacy
from ..autograd.profiler import record_function
from ..autograd.profiler_util import EventList, FunctionEventAvg, _chrome_trace

__all__ = [
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "tensorboard_trace_handler",
]


class ProfilerActivity(enum.Enum):
    """What to profile. Only ``CPU`` has events here; the others are accepted and
    record nothing, as on a machine without those devices."""

    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a schedule asks of a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0,
             skip_first: int = 0, skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """PyTorch's step schedule: after ``skip_first`` steps, cycles of ``wait`` idle
    steps, ``warmup`` steps and ``active`` recorded ones (the last of them saves),
    ``repeat`` times (0: forever)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("Invalid profiler schedule arguments")
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait and step < wait:
            return ProfilerAction.NONE
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def _always(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class profile:
    """Records the ops of a block, or of the steps a ``schedule`` picks."""

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], Any] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, acc_events: bool = False,
                 use_cuda: bool | None = None, custom_trace_id_callback: Any = None) -> None:
        acts = set(activities) if activities is not None else {ProfilerActivity.CPU}
        self.activities = acts
        self.record_shapes = record_shapes
        self.schedule = schedule or _always
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self.profiler: _legacy.profile | None = None
        self._window: _legacy.profile | None = None

    # ----- the recording window ------------------------------------------------------------
    def _open(self) -> None:
        if self._window is None and ProfilerActivity.CPU in self.activities:
            self._window = _legacy.profile(record_shapes=self.record_shapes).__enter__()

    def _close(self, save: bool) -> None:
        if self._window is not None:
            self._window.__exit__(None, None, None)
            self.profiler, self._window = self._window, None
            if save and self.on_trace_ready is not None:
                self.on_trace_ready(self)

    def start(self) -> None:
        self.step_num = 0
        self.current_action = self.schedule(0)
        if self.current_action in _RECORDING:
            self._open()

    def stop(self) -> None:
        self._close(save=self.current_action in _RECORDING)

    def step(self) -> None:
        """Ends a step: the schedule decides whether the next one is recorded."""
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if prev == ProfilerAction.RECORD_AND_SAVE or (
            prev in _RECORDING and self.current_action not in _RECORDING
        ):
            self._close(save=prev == ProfilerAction.RECORD_AND_SAVE)
        if self.current_action in _RECORDING:
            self._open()

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ----- reports -------------------------------------------------------------------------
    def _done(self) -> _legacy.profile:
        if self.profiler is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.profiler

    def events(self) -> EventList:
        return self._done().events()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self._done().key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self) -> FunctionEventAvg:
        return self._done().total_average()

    def export_chrome_trace(self, path: str) -> None:
        trace = _chrome_trace(self.events())
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "wt") as f:
            json.dump(trace, f)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        raise RuntimeError("export_stacks needs with_stack=True stacks, which ferrograd does not record")


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[profile], None]:
    """An ``on_trace_ready`` that writes each window to
    ``dir_name/<worker>.<time>.pt.trace.json`` (a Chrome trace)."""

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler
