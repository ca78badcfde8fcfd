"""The graph belongs to the tensors: deep graphs backpropagate without recursion, and a
dropped output frees its graph (whether or not it was backpropagated)."""

from __future__ import annotations

import gc
import math
import sys
import time

import pytest

import ferrograd as fg
from helpers import live_nodes, run_isolated

DEPTH = 10**6


@pytest.fixture
def baseline():
    gc.collect()
    return live_nodes()


@pytest.mark.slow
def test_million_op_chain_backpropagates_and_is_freed(baseline):
    start = time.perf_counter()
    x = fg.ones(1, dtype=fg.float64, requires_grad=True)
    y = x
    for _ in range(DEPTH):
        y = y * 1.000001
    assert live_nodes() - baseline == DEPTH
    assert sys.getrecursionlimit() < DEPTH  # nothing below may rely on recursion
    y.backward()
    expected = math.exp(DEPTH * math.log1p(1e-6))
    assert x.grad.item() == pytest.approx(expected, rel=1e-8)
    assert y.item() == pytest.approx(expected, rel=1e-8)
    del y
    gc.collect()
    assert live_nodes() == baseline
    # never-backpropagated graphs are freed too
    z = x
    for _ in range(DEPTH):
        z = z * 1.0
    assert live_nodes() - baseline == DEPTH
    del z
    gc.collect()
    assert live_nodes() == baseline
    assert time.perf_counter() - start < 60, "deep graphs should cost seconds, not minutes"


@pytest.mark.slow
def test_deep_chain_of_mixed_ops(baseline):
    x = fg.tensor([0.5, 1.0], dtype=fg.float64, requires_grad=True)
    y = x
    for _ in range(50_000):
        y = (y + 1.0).tanh().sin() * 0.5 + y.sigmoid() * 0.0
    y.sum().backward()
    assert x.grad is not None and x.grad.shape == (2,)
    del y
    gc.collect()
    assert live_nodes() == baseline


def test_dropping_an_output_frees_its_graph(baseline):
    x = fg.ones(3, requires_grad=True)
    y = ((x * 2).exp() + x).sum()
    assert live_nodes() > baseline
    del y
    assert live_nodes() == baseline


def test_graph_kept_alive_only_by_its_outputs(baseline):
    x = fg.ones(3, requires_grad=True)
    h = x * 2
    y = h.sum()
    n_both = live_nodes() - baseline
    assert n_both == 2
    del y
    assert live_nodes() - baseline == 1  # h still holds its own node
    del h
    assert live_nodes() == baseline


def test_backward_keeps_nodes_while_outputs_live(baseline):
    x = fg.ones(3, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    assert live_nodes() - baseline == 2  # nodes stay (saved tensors are released)
    assert y.grad_fn.name() == "SumBackward0"
    del y
    assert live_nodes() == baseline


def test_grad_fn_handles_keep_the_graph_alive(baseline):
    x = fg.ones(3, requires_grad=True)
    y = (x * 2).sum()
    fn = y.grad_fn
    del y
    assert live_nodes() - baseline == 2
    ((mul, _),) = fn.next_functions
    assert mul.name() == "MulBackward0"
    del fn, mul
    gc.collect()
    assert live_nodes() == baseline


def test_create_graph_gradients_are_freed(baseline):
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = fg.autograd.grad((x**3).sum(), x, create_graph=True)
    (g2,) = fg.autograd.grad(g.sum(), x)
    assert g2.tolist() == [6.0, 12.0]
    del g, g2
    gc.collect()
    assert live_nodes() == baseline


def test_retained_graph_is_freed_after_drop(baseline):
    x = fg.ones(3, requires_grad=True)
    y = (x.sin() * x).sum()
    for _ in range(3):
        y.backward(retain_graph=True)
    del y
    gc.collect()
    assert live_nodes() == baseline


def test_failed_backward_does_not_leak(baseline):
    x = fg.ones(3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError):
        y.backward()
    with pytest.raises(RuntimeError):
        y.backward(fg.ones(4))
    del y
    gc.collect()
    assert live_nodes() == baseline


def test_detach_drops_the_link(baseline):
    x = fg.ones(3, requires_grad=True)
    y = (x * 2).detach()
    assert live_nodes() == baseline
    z = x * 2
    z.detach_()
    assert live_nodes() == baseline
    assert y.tolist() == z.tolist() == [2.0, 2.0, 2.0]


def test_training_loop_does_not_accumulate_nodes(baseline):
    w = fg.randn(4, 3, requires_grad=True)
    data = fg.randn(8, 4)
    for _ in range(200):
        loss = ((data @ w).tanh() ** 2).mean()
        loss.backward()
        with fg.no_grad():
            w -= 0.01 * w.grad
        w.grad.zero_()
    del loss
    gc.collect()
    assert live_nodes() == baseline


def test_repeated_data_updates_do_not_build_a_chain():
    # `p.data -= lr * p.grad` aliases p's memory on every step; the aliases must
    # not form a chain whose drop recurses (this crashed after ~300k steps).
    proc = run_isolated(
        """
        import gc
        import ferrograd as fg
        p = fg.ones(3, requires_grad=True)
        for _ in range(400_000):
            p.data *= 1.0
        assert p.tolist() == [1.0, 1.0, 1.0]
        del p
        gc.collect()
        print("ok")
        """
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
