"""Hooks on a leaf's ``AccumulateGrad`` node (``grad_fn.next_functions``):
pre-hooks run after the tensor's own hooks and may replace the gradient,
post-hooks run after ``.grad`` was written and after the
post-accumulate-grad hooks, as in PyTorch."""

from __future__ import annotations

import gc
import weakref

import pytest

import ferrograd as fg


def _leaf_and_node():
    x = fg.ones(2, requires_grad=True)
    y = (x * 2).sum()
    acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad" and acc.variable is x
    return x, y, acc


def test_order_of_every_leaf_hook_and_replacement():
    x, y, acc = _leaf_and_node()
    log = []
    acc.register_prehook(lambda go: log.append(("node pre", go[0].tolist())))
    x.register_hook(lambda g: log.append(("tensor", g.tolist())) or g * 10)
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post accumulate", t.grad.tolist())))
    acc.register_hook(lambda gi, go: log.append(("node post", gi, go[0].tolist())))
    acc.register_prehook(lambda go: (go[0] + 1,))
    y.backward()
    assert log == [
        ("tensor", [2.0, 2.0]),
        ("node pre", [20.0, 20.0]),
        ("post accumulate", [21.0, 21.0]),
        ("node post", (), [21.0, 21.0]),
    ]
    assert x.grad.tolist() == [21.0, 21.0]


def test_post_hook_sees_the_incoming_gradient_not_the_sum():
    x, y, acc = _leaf_and_node()
    seen = []
    acc.register_hook(lambda gi, go: seen.append(go[0].tolist()))
    x.grad = fg.full((2,), 5.0)
    y.backward()
    assert seen == [[2.0, 2.0]] and x.grad.tolist() == [7.0, 7.0]


def test_handles_remove_the_hooks():
    x, y, acc = _leaf_and_node()
    calls = []
    h1 = acc.register_prehook(lambda go: calls.append("pre") or (go[0] * 3,))
    h2 = acc.register_hook(lambda gi, go: calls.append("post"))
    h1.remove()
    h2.remove()
    y.backward()
    assert calls == [] and x.grad.tolist() == [2.0, 2.0]


def test_autograd_grad_runs_only_the_tensor_hooks():
    x, y, acc = _leaf_and_node()
    log = []
    acc.register_prehook(lambda go: log.append("node pre") or (go[0] + 1,))
    acc.register_hook(lambda gi, go: log.append("node post"))
    x.register_hook(lambda g: log.append("tensor"))
    (g,) = fg.autograd.grad(y, x, retain_graph=True)
    assert g.tolist() == [2.0, 2.0] and log == ["tensor"]
    log.clear()
    y.backward(inputs=[x])
    assert x.grad.tolist() == [3.0, 3.0] and log == ["tensor", "node pre", "node post"]


def test_a_post_hook_returning_values_is_an_error():
    x, y, acc = _leaf_and_node()
    acc.register_hook(lambda gi, go: (go[0],))
    with pytest.raises(RuntimeError, match=r"has returned an incorrect number of values \(got 1, but expected 0\)"):
        y.backward()


def test_a_pre_hook_returning_a_wrong_count_is_an_error():
    x, y, acc = _leaf_and_node()
    acc.register_prehook(lambda go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match=r"incorrect number of values \(got 2, but expected 1\)"):
        y.backward()
    assert x.grad is None


def test_non_callable_hook_is_a_type_error():
    _, _, acc = _leaf_and_node()
    with pytest.raises(TypeError, match="hook must be callable"):
        acc.register_hook(3)
    with pytest.raises(TypeError, match="hook must be callable"):
        acc.register_prehook(None)


def test_a_hook_that_refers_to_its_leaf_is_collected():
    x, y, acc = _leaf_and_node()
    acc.register_hook(lambda gi, go, x=x: x)
    acc.register_prehook(lambda go, x=x: None)
    ref = weakref.ref(x)
    del x, y, acc
    gc.collect()
    assert ref() is None
