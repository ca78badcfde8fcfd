"""``Tensor.register_hook`` on leaves and non-leaves, replacement gradients, removal."""

from __future__ import annotations

import gc
import weakref

import pytest

import ferrograd as fg
from helpers import live_nodes


def test_hook_on_leaf_sees_the_gradient():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()))
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]]
    assert x.grad.tolist() == [3.0, 3.0]


def test_hook_on_leaf_replaces_the_gradient():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (x * 3).sum().backward()
    assert x.grad.tolist() == [30.0, 30.0]


def test_hook_on_non_leaf_changes_what_flows_back():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 10)
    (y * 3).sum().backward()
    assert x.grad.tolist() == [60.0, 60.0]
    assert y.grad is None


def test_hook_and_retain_grad_on_non_leaf():
    # PyTorch runs tensor hooks before the retained grad is stored.
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 10)
    (y * 3).sum().backward()
    assert x.grad.tolist() == [60.0, 60.0]
    assert y.grad.tolist() == [30.0, 30.0]


def test_hooks_run_in_registration_order_and_chain():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    x.register_hook(lambda g: calls.append(("first", g.tolist())))
    x.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: calls.append(("third", g.tolist())) or g * 2)
    (x * 1).sum().backward()
    assert calls == [("first", [1.0, 1.0]), ("third", [2.0, 2.0])]
    assert x.grad.tolist() == [4.0, 4.0]


def test_handle_remove():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    h = x.register_hook(lambda g: g * 100)
    (x * 1).sum().backward()
    assert x.grad.tolist() == [100.0, 100.0]
    h.remove()
    h.remove()  # removing twice is harmless
    x.grad = None
    (x * 1).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_handle_remove_on_non_leaf():
    x = fg.tensor([1.0], requires_grad=True)
    y = x * 2
    h = y.register_hook(lambda g: g * 100)
    h.remove()
    (y * 1).sum().backward()
    assert x.grad.tolist() == [2.0]


def test_handle_as_context_manager():
    x = fg.tensor([1.0], requires_grad=True)
    with x.register_hook(lambda g: g * 5):
        (x * 1).sum().backward()
    assert x.grad.tolist() == [5.0]
    (x * 1).sum().backward()
    assert x.grad.tolist() == [6.0]


def test_removing_one_hook_keeps_the_others():
    x = fg.tensor([1.0], requires_grad=True)
    h1 = x.register_hook(lambda g: g * 2)
    x.register_hook(lambda g: g * 3)
    h1.remove()
    (x * 1).sum().backward()
    assert x.grad.tolist() == [3.0]


def test_hook_runs_once_per_backward_with_the_summed_gradient():
    x = fg.tensor([1.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.item()))
    (x * 2 + x * 3).sum().backward()
    assert seen == [5.0]


def test_hook_applies_to_autograd_grad_results():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 2)
    (g,) = fg.autograd.grad((x * 1).sum(), x)
    assert g.tolist() == [2.0, 2.0]
    y = x * 1
    y.register_hook(lambda g: g * 3)
    (gy, gx) = fg.autograd.grad((y * 1).sum(), [y, x])
    assert gy.tolist() == [3.0, 3.0] and gx.tolist() == [6.0, 6.0]


def test_hook_on_tensor_without_grad_raises():
    with pytest.raises(
        RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"
    ):
        fg.ones(2).register_hook(lambda g: g)


def test_hook_exception_propagates_and_leaves_grad_untouched():
    x = fg.tensor([1.0, 2.0], requires_grad=True)

    def bad(g):
        raise ZeroDivisionError("inside hook")

    x.register_hook(bad)
    with pytest.raises(ZeroDivisionError, match="inside hook"):
        (x * 1).sum().backward()
    assert x.grad is None
    assert x.tolist() == [1.0, 2.0]


def test_hook_must_not_change_the_shape():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g[0])
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the size of value"):
        (x * 1).sum().backward()
    assert x.grad is None
    y = fg.tensor([1.0, 2.0], requires_grad=True)
    z = y * 1
    z.register_hook(lambda g: fg.ones(3))
    with pytest.raises(RuntimeError, match="has changed the size of value"):
        z.sum().backward()
    assert y.grad is None


def test_hook_must_not_change_the_dtype():
    x = fg.tensor([1.0, 2.0], requires_grad=True)

    def widen(g):
        return g.double()

    x.register_hook(widen)
    with pytest.raises(
        RuntimeError,
        match=r"hook 'widen' has changed the type of value \(was CPUFloatType got CPUDoubleType\)",
    ):
        (x * 1).sum().backward()


def test_hook_must_return_a_tensor_or_none():
    x = fg.tensor([1.0], requires_grad=True)
    x.register_hook(lambda g: 5)
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
        (x * 1).sum().backward()


def test_hook_sees_create_graph_gradients():
    x = fg.tensor([2.0], dtype=fg.float64, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.requires_grad))
    (x**3).sum().backward(create_graph=True)
    assert seen == [True]


class _Holder:
    pass


def test_leaf_hook_cycle_is_collected():
    holder = _Holder()
    x = fg.ones(2, requires_grad=True)
    holder.x = x
    x.register_hook(lambda g, h=holder: g)  # x -> hook -> holder -> x
    alive = weakref.ref(holder)
    del x, holder
    gc.collect()
    assert alive() is None


def test_non_leaf_hook_cycle_is_collected():
    base = live_nodes()
    holder = _Holder()
    x = fg.ones(2, requires_grad=True)
    y = x * 2
    holder.y = y
    y.register_hook(lambda g, h=holder: g)  # y -> node -> hook -> holder -> y
    alive = weakref.ref(holder)
    del y, holder
    gc.collect()
    assert alive() is None
    assert live_nodes() == base
