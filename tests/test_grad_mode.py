"""Grad-mode switches: context managers, decorators, and their per-thread state."""

from __future__ import annotations

import threading

import pytest

import ferrograd as fg


@pytest.fixture
def x():
    return fg.ones(2, requires_grad=True)


def test_default_is_enabled():
    assert fg.is_grad_enabled() is True
    assert fg.is_inference_mode_enabled() is False


def test_no_grad_context(x):
    with fg.no_grad():
        assert fg.is_grad_enabled() is False
        y = x * 2
        assert not y.requires_grad and y.grad_fn is None and y.is_leaf
        assert x.requires_grad  # leaves keep their flag
    assert fg.is_grad_enabled() is True
    assert (x * 2).requires_grad


def test_enable_grad_inside_no_grad(x):
    with fg.no_grad():
        with fg.enable_grad():
            assert fg.is_grad_enabled()
            assert (x * 2).requires_grad
        assert not fg.is_grad_enabled()
    assert fg.is_grad_enabled()


def test_nesting_restores_each_level(x):
    with fg.no_grad():
        with fg.no_grad():
            pass
        assert not fg.is_grad_enabled()
        with fg.set_grad_enabled(True):
            assert fg.is_grad_enabled()
            with fg.set_grad_enabled(False):
                assert not fg.is_grad_enabled()
            assert fg.is_grad_enabled()
        assert not fg.is_grad_enabled()
    assert fg.is_grad_enabled()


def test_exceptions_restore_the_mode():
    with pytest.raises(ValueError):
        with fg.no_grad():
            raise ValueError("boom")
    assert fg.is_grad_enabled()
    with fg.no_grad():
        with pytest.raises(KeyError):
            with fg.enable_grad():
                raise KeyError("boom")
        assert not fg.is_grad_enabled()


def test_set_grad_enabled_as_a_function():
    try:
        fg.set_grad_enabled(False)
        assert not fg.is_grad_enabled()
        fg.set_grad_enabled(True)
        assert fg.is_grad_enabled()
    finally:
        fg._C._set_grad_enabled(True)


def test_set_grad_enabled_as_a_context_manager(x):
    with fg.set_grad_enabled(False):
        assert not fg.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert fg.is_grad_enabled()
    with fg.no_grad():
        with fg.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not fg.is_grad_enabled()
    is_train = False
    with fg.set_grad_enabled(is_train):
        assert not (x * 2).requires_grad


def test_decorators_with_parentheses(x):
    @fg.no_grad()
    def off():
        return fg.is_grad_enabled(), x * 2

    @fg.enable_grad()
    def on():
        return fg.is_grad_enabled(), x * 2

    @fg.set_grad_enabled(False)
    def set_off():
        return fg.is_grad_enabled()

    @fg.inference_mode()
    def infer():
        return fg.is_grad_enabled(), fg.is_inference_mode_enabled()

    assert fg.is_grad_enabled()  # decorating changes nothing by itself
    mode, y = off()
    assert mode is False and not y.requires_grad
    assert fg.is_grad_enabled()
    with fg.no_grad():
        mode, y = on()
        assert mode is True and y.requires_grad
        assert not fg.is_grad_enabled()
    assert set_off() is False and fg.is_grad_enabled()
    assert infer() == (False, True) and not fg.is_inference_mode_enabled()


def test_decorators_without_parentheses(x):
    @fg.no_grad
    def off(a):
        return a * 2

    @fg.enable_grad
    def on(a):
        return a * 2

    @fg.inference_mode
    def infer(a):
        return a * 2, fg.is_inference_mode_enabled()

    assert not off(x).requires_grad
    with fg.no_grad():
        assert on(x).requires_grad
    y, inf = infer(x)
    assert not y.requires_grad and inf
    assert off.__name__ == "off"  # functools.wraps


def test_decorator_keeps_metadata_and_arguments():
    @fg.no_grad()
    def f(a, b=2, *, c=3):
        """doc"""
        return a + b + c

    assert f.__name__ == "f" and f.__doc__ == "doc"
    assert f(1, c=10) == 13


def test_decorated_generator_only_disables_grad_while_running():
    @fg.no_grad()
    def gen():
        for _ in range(3):
            yield fg.is_grad_enabled()

    it = gen()
    assert next(it) is False
    assert fg.is_grad_enabled()
    assert next(it) is False
    assert list(it) == [False]
    assert fg.is_grad_enabled()


def test_decorator_restores_mode_on_exception():
    @fg.no_grad()
    def boom():
        raise RuntimeError("x")

    with pytest.raises(RuntimeError):
        boom()
    assert fg.is_grad_enabled()


def test_inference_mode(x):
    with fg.inference_mode():
        assert fg.is_inference_mode_enabled() and not fg.is_grad_enabled()
        y = x * 2
        assert not y.requires_grad
    assert fg.is_grad_enabled() and not fg.is_inference_mode_enabled()
    with fg.inference_mode(False):
        assert fg.is_grad_enabled() and not fg.is_inference_mode_enabled()
        assert (x * 2).requires_grad
    with fg.no_grad():
        with fg.inference_mode(False):
            assert not fg.is_grad_enabled()


def test_autograd_namespace_exports_the_same_objects():
    assert fg.autograd.no_grad is fg.no_grad
    assert fg.autograd.enable_grad is fg.enable_grad
    assert fg.autograd.set_grad_enabled is fg.set_grad_enabled
    assert fg.autograd.inference_mode is fg.inference_mode


def test_backward_works_inside_no_grad_for_graphs_built_outside(x):
    y = (x * x).sum()
    with fg.no_grad():
        y.backward()
    assert x.grad.tolist() == [2.0, 2.0]


# -- threads -------------------------------------------------------------------------------


def _in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - reported to the test thread
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join(timeout=30)
    assert not t.is_alive()
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_thread_started_inside_no_grad_has_grad_enabled(x):
    with fg.no_grad():
        mode, requires = _in_thread(lambda: (fg.is_grad_enabled(), (x * 2).requires_grad))
        assert not fg.is_grad_enabled()
    assert mode is True and requires is True


def test_no_grad_in_a_thread_does_not_leak_to_others(x):
    entered = threading.Event()
    release = threading.Event()
    seen = {}

    def worker():
        with fg.no_grad():
            seen["worker"] = fg.is_grad_enabled()
            entered.set()
            release.wait(timeout=30)
            seen["worker_after"] = fg.is_grad_enabled()

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert entered.wait(timeout=30)
        # While the worker sits inside no_grad, this thread still records graphs.
        assert fg.is_grad_enabled()
        assert (x * 2).requires_grad
    finally:
        release.set()
        t.join(timeout=30)
    assert seen == {"worker": False, "worker_after": False}


def test_inference_mode_is_per_thread():
    with fg.inference_mode():
        inner = _in_thread(lambda: (fg.is_inference_mode_enabled(), fg.is_grad_enabled()))
    assert inner == (False, True)


def test_backward_in_several_threads():
    results = []

    def work(k):
        w = fg.full((3,), float(k), requires_grad=True)
        for _ in range(50):
            (w * w).sum().backward()
        return w.grad.tolist()

    threads = [threading.Thread(target=lambda k=k: results.append((k, work(k)))) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(results) == [(k, [100.0 * k] * 3) for k in range(4)]
