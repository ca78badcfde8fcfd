"""ferrograd.profiler / ferrograd.autograd.profiler: which calls become events,
how they nest, the reports, schedules and traces."""

from __future__ import annotations

import json
import threading

import pytest

import ferrograd as fg
from ferrograd.autograd import profiler as legacy
from ferrograd.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)


def _names(events):
    return [e.name for e in events]


def test_ops_and_backward_nodes_are_events():
    x = fg.randn(8, 8, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        y = fg.mm(x, x).tanh().sum()
        y.backward()
    names = _names(prof.events())
    for op in ("mm", "tanh", "sum"):
        assert op in names, names
    for node in ("MmBackward0", "TanhBackward0", "SumBackward0"):
        assert node in names, names
    kinds = {e.name: e.kind for e in prof.events()}
    assert kinds["mm"] == "cpu_op" and kinds["MmBackward0"] == "backward"


def test_counts_and_averages():
    a = fg.randn(16, 16)
    with legacy.profile() as prof:
        for _ in range(5):
            fg.mm(a, a)
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["mm"].count == 5
    assert avg["mm"].cpu_time == pytest.approx(avg["mm"].cpu_time_total / 5)
    total = prof.total_average()
    assert total.key == "Total" and total.count == len(prof.events())


def test_record_function_nests_and_self_time_excludes_children():
    a = fg.randn(64, 64)
    with profile() as prof:
        with record_function("block"):
            for _ in range(3):
                fg.mm(a, a)
    events = prof.events()
    block = next(e for e in events if e.name == "block")
    assert block.kind == "user_annotation"
    children = [c.name for c in block.cpu_children]
    assert children == ["mm", "mm", "mm"]
    assert all(c.cpu_parent is block for c in block.cpu_children)
    inner = sum(c.cpu_time_total for c in block.cpu_children)
    assert block.self_cpu_time_total == pytest.approx(block.cpu_time_total - inner)
    assert 0 <= block.self_cpu_time_total <= block.cpu_time_total
    # Self times partition the profiled time: their sum is the top-level total.
    top = sum(e.cpu_time_total for e in events if e.cpu_parent is None)
    assert prof.events().self_cpu_time_total == pytest.approx(top)


def test_record_function_as_decorator_and_free_when_closed():
    @record_function("f")
    def f(t):
        return t * 2

    assert not fg._C._profiler_active()
    f(fg.ones(2))  # no profile open: nothing to record, no error
    with profile() as prof:
        f(fg.ones(2))
    assert "f" in _names(prof.events())


def test_record_shapes_and_grouping_by_shape():
    with profile(record_shapes=True) as prof:
        fg.mm(fg.ones(2, 3), fg.ones(3, 4))
        fg.mm(fg.ones(5, 3), fg.ones(3, 4))
    mm = [e for e in prof.events() if e.name == "mm"]
    assert [e.input_shapes for e in mm] == [[[2, 3], [3, 4]], [[5, 3], [3, 4]]]
    grouped = [e for e in prof.key_averages(group_by_input_shape=True) if e.key == "mm"]
    assert sorted(str(e.input_shapes) for e in grouped) == ["[[2, 3], [3, 4]]", "[[5, 3], [3, 4]]"]
    assert [e.count for e in prof.key_averages() if e.key == "mm"] == [2]
    table = prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total")
    assert "Input Shapes" in table and "[[2, 3], [3, 4]]" in table


def test_shapes_not_recorded_by_default():
    with profile() as prof:
        fg.mm(fg.ones(2, 3), fg.ones(3, 4))
    assert all(e.input_shapes == [] for e in prof.events())


def test_table_columns_sorting_and_row_limit():
    a = fg.randn(128, 128)
    with profile() as prof:
        fg.mm(a, a)
        a.sum()
        a.exp()
    text = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=2)
    for col in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"):
        assert col in text
    assert "Self CPU time total:" in text
    body = [ln for ln in text.splitlines() if ln.strip() and not set(ln.strip()) <= {"-", " "}]
    assert len(body) == 1 + 2 + 1  # header, two rows, the total line
    rows = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    assert body[1].split()[0] == rows[0].key
    with pytest.raises(AttributeError):
        prof.key_averages().table(sort_by="no_such_column")


def test_only_the_profiling_thread_is_recorded():
    def work():
        fg.ones(4).exp()

    with profile() as prof:
        t = threading.Thread(target=work)
        t.start()
        t.join()
        fg.ones(4).sin()
    names = _names(prof.events())
    assert "sin" in names and "exp" not in names


def test_a_second_profile_inside_the_first_is_refused():
    with profile():
        with pytest.raises(RuntimeError, match="already enabled"):
            with legacy.profile():
                pass
    # and the first one closed cleanly: a new one opens
    with legacy.profile() as prof:
        fg.ones(1).exp()
    assert "exp" in _names(prof.events())


def test_reports_before_the_end_raise():
    prof = legacy.profile()
    with pytest.raises(RuntimeError, match="didn't finish"):
        prof.key_averages()


def test_disabled_profile_records_nothing():
    with legacy.profile(enabled=False) as prof:
        assert not fg._C._profiler_active()
        fg.ones(2).exp()
    with pytest.raises(RuntimeError):
        prof.events()


def test_schedule_actions_match_pytorchs_definition():
    s = schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=2)
    got = [s(i) for i in range(11)]
    N, W, R, S = (ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
                  ProfilerAction.RECORD_AND_SAVE)
    assert got == [N, N, W, R, S, N, W, R, S, N, N]
    with pytest.raises(ValueError):
        schedule(wait=0, warmup=0, active=0)


def test_schedule_windows_reach_on_trace_ready():
    windows = []

    def ready(p):
        windows.append(sum(e.count for e in p.key_averages() if e.key == "exp"))

    x = fg.ones(3)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=ready) as p:
        for _ in range(10):
            x.exp()
            p.step()
    assert windows == [2, 2]


def test_chrome_trace_and_tensorboard_handler(tmp_path):
    with profile(record_shapes=True, on_trace_ready=tensorboard_trace_handler(str(tmp_path / "tb"))) as p:
        with record_function("region"):
            fg.mm(fg.ones(2, 2), fg.ones(2, 2))
    path = tmp_path / "trace.json"
    p.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    evs = {e["name"]: e for e in trace["traceEvents"]}
    assert evs["mm"]["ph"] == "X" and evs["mm"]["args"]["Input Dims"] == [[2, 2], [2, 2]]
    assert evs["region"]["cat"] == "user_annotation"
    assert evs["region"]["ts"] <= evs["mm"]["ts"]
    assert evs["mm"]["ts"] + evs["mm"]["dur"] <= evs["region"]["ts"] + evs["region"]["dur"] + 1e-3
    written = list((tmp_path / "tb").iterdir())
    assert len(written) == 1 and written[0].name.endswith(".pt.trace.json")
    json.loads(written[0].read_text())


def test_module_layout_matches_pytorch():
    assert fg.autograd.profiler.profile is legacy.profile
    assert fg.profiler.record_function is legacy.record_function
    assert fg.autograd.profiler.record_function is legacy.record_function
