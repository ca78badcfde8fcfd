"""Profiling events and their reports: what ``profile.key_averages()``,
``profile.events()`` and ``export_chrome_trace`` return, with PyTorch's
names (``FunctionEvent``, ``FunctionEventAvg``, ``EventList``).

Times are in microseconds, as PyTorch's. An event's *self* time is its total
time minus the time of the events nested inside it on the same thread (a
``record_function`` range holds the ops it ran; a Python composite that calls
several ops is not itself an event, so its ops are top-level).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Iterable

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg"]

#: Event kinds, as the core reports them.
_KINDS = {0: "cpu_op", 1: "backward", 2: "user_annotation"}


class FunctionEvent:
    """One timed call: an op, a backward node or a ``record_function`` range."""

    def __init__(self, id: int, name: str, kind: str, start_us: float, end_us: float,
                 thread: int, input_shapes: list | None = None) -> None:
        self.id = id
        self.name = name
        self.kind = kind
        self.thread = thread
        self.input_shapes = input_shapes or []
        self.time_range = (start_us, end_us)
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.count = 1
        self.device_type = "cpu"
        self.is_async = False
        self.is_remote = False
        self.node_id = -1
        self.stack: list = []

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        start, end = self.time_range
        return end - start

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    # No device is profiled: the device columns PyTorch users sort by read 0.
    device_time_total = self_device_time_total = 0.0
    cuda_time_total = self_cuda_time_total = 0.0
    cpu_memory_usage = self_cpu_memory_usage = 0
    flops = 0

    def __repr__(self) -> str:
        start, end = self.time_range
        return (f"<FunctionEvent id={self.id} name={self.name} kind={self.kind} "
                f"cpu_time={_fmt_us(end - start)} thread={self.thread} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """The events of one key (a name, and the shapes when grouped by them), summed."""

    def __init__(self, key: str = "", input_shapes: list | None = None) -> None:
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.node_id = -1
        self.is_async = False
        self.is_remote = False
        self.device_type = "cpu"
        self.stack: list = []

    device_time_total = self_device_time_total = 0.0
    cuda_time_total = self_cuda_time_total = 0.0
    cpu_memory_usage = self_cpu_memory_usage = 0
    flops = 0

    @property
    def cpu_time(self) -> float:
        """The mean time of one call."""
        return self.cpu_time_total / self.count if self.count else 0.0

    def add(self, other: Any) -> FunctionEventAvg:
        if not self.key:
            self.key = other.key
            self.input_shapes = other.input_shapes if self.input_shapes is None else self.input_shapes
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        return self

    __iadd__ = add

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_fmt_us(self.self_cpu_time_total)} "
                f"cpu_time={_fmt_us(self.cpu_time)} count={self.count} "
                f"input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events with PyTorch's reporting methods."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("use_device", None)
        kwargs.pop("use_cuda", None)
        kwargs.pop("profile_memory", None)
        kwargs.pop("with_flops", None)
        super().__init__(*args, **kwargs)

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of every event's self time, microseconds."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """One :class:`FunctionEventAvg` per name (and shapes, when grouped by them),
        in the order the names first occur."""
        groups: dict = {}
        for e in self:
            key = (e.key, str(e.input_shapes)) if group_by_input_shapes else e.key
            if key not in groups:
                groups[key] = FunctionEventAvg(
                    e.key, e.input_shapes if group_by_input_shapes else None)
            groups[key].add(e)
        return EventList(groups.values())

    def total_average(self) -> FunctionEventAvg:
        """Every event summed into one, keyed ``"Total"``."""
        total = FunctionEventAvg("Total")
        for e in self:
            total.count += e.count
            total.cpu_time_total += e.cpu_time_total
            total.self_cpu_time_total += e.self_cpu_time_total
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """The events as a text table, PyTorch's columns (the CPU ones: no device is
        profiled), sorted by the attribute ``sort_by`` names, largest first."""
        return _build_table(self, sort_by, row_limit, max_name_column_width,
                            max_shapes_column_width, header, top_level_events_only, time_unit)

    def export_chrome_trace(self, path: str) -> None:
        """Writes the events in the Chrome trace format (``chrome://tracing``, Perfetto)."""
        with open(path, "w") as f:
            json.dump(_chrome_trace(self), f)

    def __str__(self) -> str:
        return self.table()


def _events_from_core(raw: Iterable, origin_ns: int) -> EventList:
    """FunctionEvents from ``_C._profiler_stop()``'s tuples, nested per thread by
    time (an event is a child of the innermost event whose interval holds it)."""
    events = []
    for i, (name, kind, start, end, thread, shapes) in enumerate(raw):
        events.append(FunctionEvent(i, name, _KINDS.get(kind, "cpu_op"),
                                    (start - origin_ns) / 1e3, (end - origin_ns) / 1e3,
                                    thread, [list(s) for s in shapes]))
    by_thread: dict = defaultdict(list)
    for e in events:
        by_thread[e.thread].append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.time_range[0], -e.time_range[1]))
        stack: list[FunctionEvent] = []
        for e in evs:
            while stack and stack[-1].time_range[1] < e.time_range[1]:
                stack.pop()
            if stack:
                e.cpu_parent = stack[-1]
                stack[-1].cpu_children.append(e)
            stack.append(e)
    events.sort(key=lambda e: (e.time_range[0], -e.time_range[1]))
    for i, e in enumerate(events):
        e.id = i
    return EventList(events)


def _fmt_us(us: float, unit: str | None = None) -> str:
    if unit == "s" or (unit is None and us >= 1e6):
        return f"{us / 1e6:.3f}s"
    if unit == "ms" or (unit is None and us >= 1e3):
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _build_table(events: EventList, sort_by, row_limit, name_width, shapes_width, header,
                 top_level_only, time_unit) -> str:
    rows = list(events)
    if top_level_only:
        rows = [e for e in rows if getattr(e, "cpu_parent", None) is None]
    if sort_by is not None:
        rows.sort(key=lambda e: getattr(e, sort_by.replace("cuda", "device")), reverse=True)
    if row_limit is not None and row_limit > 0:
        rows = rows[:row_limit]
    self_total = sum(e.self_cpu_time_total for e in events) or 1.0
    has_shapes = any(getattr(e, "input_shapes", None) for e in rows)
    name_w = min(max([len("Name")] + [len(e.key) for e in rows]) + 2, name_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
    widths = [name_w] + [12] * 6
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(min(max(len(str(e.input_shapes)) for e in rows) + 2, shapes_width))

    def line(cells):
        out = [f"{str(cells[0])[:widths[0] - 2]:>{widths[0]}}"]
        out += [f"{c:>{w}}" for c, w in zip(cells[1:7], widths[1:7])]
        if has_shapes:
            out.append(f"  {str(cells[7])[:widths[7] - 2]:<{widths[7] - 2}}")
        return "  ".join(out) + "  "

    sep = "  ".join("-" * w for w in widths) + "  "
    text = []
    if header:
        text.append("=" * len(sep))
        text.append(header)
    text += [sep, line(headers), sep]
    for e in rows:
        cells = [e.key, f"{100 * e.self_cpu_time_total / self_total:.2f}%",
                 _fmt_us(e.self_cpu_time_total, time_unit),
                 f"{100 * e.cpu_time_total / self_total:.2f}%",
                 _fmt_us(e.cpu_time_total, time_unit), _fmt_us(e.cpu_time, time_unit), str(e.count)]
        if has_shapes:
            cells.append(str(e.input_shapes))
        text.append(line(cells))
    text.append(sep)
    text.append(f"Self CPU time total: {_fmt_us(sum(e.self_cpu_time_total for e in events), time_unit)}")
    return "\n".join(text) + "\n"


def _chrome_trace(events: EventList) -> dict:
    import os

    pid = os.getpid()
    trace = []
    for e in events:
        start, end = e.time_range
        ev = {"ph": "X", "cat": e.kind, "name": e.name, "pid": pid, "tid": e.thread,
              "ts": start, "dur": end - start, "args": {}}
        if e.input_shapes:
            ev["args"]["Input Dims"] = e.input_shapes
        trace.append(ev)
    return {"traceEvents": trace, "displayTimeUnit": "ms"}
