"""Handles remove every kind of hook (also as context managers); a hook that raises
propagates its exception and leaves the graph usable and the tensors unchanged."""

import numpy as np
import pytest

import ferrograd as torch


def _leaf():
    return torch.tensor([1.0, 2.0, 3.0], requires_grad=True)


def test_node_prehook_and_hook_removed_by_handles():
    a = _leaf()
    b = a.clone()
    h1 = b.grad_fn.register_prehook(lambda go: (go[0] * 2,))
    b.sum().backward(retain_graph=True)
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0, 2.0])
    h1.remove()
    h1.remove()  # removing twice is harmless
    a.grad = None
    b.sum().backward(retain_graph=True)
    np.testing.assert_allclose(a.grad.numpy(), [1.0, 1.0, 1.0])
    with b.grad_fn.register_hook(lambda gi, go: (go[0] * 3,)):
        a.grad = None
        b.sum().backward(retain_graph=True)
        np.testing.assert_allclose(a.grad.numpy(), [3.0, 3.0, 3.0])
    a.grad = None
    b.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [1.0, 1.0, 1.0])


def test_post_accumulate_hook_removed_by_handle():
    calls = []
    a = _leaf()
    h = a.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    keep = a.register_post_accumulate_grad_hook(lambda t: calls.append(2))
    a.sum().backward()
    h.remove()
    a.sum().backward()
    assert calls == [1, 2, 2]
    with a.register_post_accumulate_grad_hook(lambda t: calls.append(3)):
        a.sum().backward()
    a.sum().backward()
    assert calls == [1, 2, 2, 2, 3, 2]
    keep.remove()


@pytest.mark.parametrize("kind", ["tensor", "prehook", "posthook", "leaf", "post_accumulate"])
def test_raising_hook_propagates_and_graph_stays_usable(kind):
    a = _leaf()
    other = _leaf()
    other.grad = torch.full((3,), 5.0)
    b = a.exp()
    c = (b * other).sum()

    def boom(*args):
        raise ValueError(f"{kind} hook failed")

    h = {
        "tensor": lambda: b.register_hook(boom),
        "prehook": lambda: b.grad_fn.register_prehook(boom),
        "posthook": lambda: b.grad_fn.register_hook(boom),
        "leaf": lambda: a.register_hook(boom),
        "post_accumulate": lambda: a.register_post_accumulate_grad_hook(boom),
    }[kind]()
    with pytest.raises(ValueError, match=f"{kind} hook failed"):
        c.backward(retain_graph=True)
    # A leaf without a post-accumulate hook keeps its .grad when backward fails.
    np.testing.assert_allclose(other.grad.numpy(), [5.0, 5.0, 5.0])
    if kind != "post_accumulate":
        assert a.grad is None
    np.testing.assert_allclose(a.detach().numpy(), [1.0, 2.0, 3.0])
    h.remove()
    a.grad = None
    c.backward()
    np.testing.assert_allclose(a.grad.numpy(), np.exp([1.0, 2.0, 3.0]) * [1.0, 2.0, 3.0], rtol=1e-6)
    np.testing.assert_allclose(other.grad.numpy(), 5.0 + np.exp([1.0, 2.0, 3.0]), rtol=1e-6)


def test_node_hook_return_checks():
    a = _leaf()
    b = a * 2
    h = b.grad_fn.register_prehook(lambda go: go[0])
    with pytest.raises(TypeError, match="expected tuple, but hook returned 'Tensor'"):
        b.sum().backward(retain_graph=True)
    h.remove()

    def two(go):
        return (go[0], go[0])

    h = b.grad_fn.register_prehook(two)
    with pytest.raises(RuntimeError, match="hook 'two' has returned an incorrect number of values"):
        b.sum().backward(retain_graph=True)
    h.remove()

    def shape(gi, go):
        return (torch.ones(2), None)

    h = b.grad_fn.register_hook(shape)
    with pytest.raises(RuntimeError, match="hook 'shape' has changed the size of value"):
        b.sum().backward(retain_graph=True)
    h.remove()
    with pytest.raises(TypeError):
        b.grad_fn.register_hook(3)
    b.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0, 2.0])


def test_posthook_gets_none_for_inputs_that_need_no_grad():
    seen = []
    a = _leaf()
    b = a * torch.ones(3)
    b.grad_fn.register_hook(lambda gi, go: seen.append([g is None for g in gi]))
    b.sum().backward()
    assert seen == [[False, True]]


def test_hook_that_registers_another_hook_during_backward():
    # The node's hook list is snapshotted, so a hook added while it runs fires next time.
    calls = []
    a = _leaf()
    b = a.exp()

    def first(go):
        calls.append("first")
        b.grad_fn.register_prehook(lambda go: calls.append("second"))

    b.grad_fn.register_prehook(first)
    b.sum().backward(retain_graph=True)
    assert calls == ["first"]
    b.sum().backward()
    assert calls == ["first", "first", "second"]


def _live_nodes():
    return torch._C._live_nodes()


@pytest.mark.parametrize("kind", ["prehook", "posthook", "metadata", "post_accumulate"])
def test_cycles_through_hooks_and_metadata_are_collected(kind):
    import gc

    gc.collect()
    before = _live_nodes()
    for _ in range(3):
        x = torch.ones(4, requires_grad=True)
        y = x.exp() * 2
        if kind == "prehook":
            y.grad_fn.register_prehook(lambda go, y=y: None)
        elif kind == "posthook":
            y.grad_fn.register_hook(lambda gi, go, y=y: None)
        elif kind == "metadata":
            y.grad_fn.metadata["output"] = y
        else:
            x.register_post_accumulate_grad_hook(lambda t, x=x: None)
        del x, y
    gc.collect()
    assert _live_nodes() == before


def test_pack_hook_raising_inside_a_custom_function_fails_that_call():
    from ferrograd.autograd.graph import saved_tensors_hooks

    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    def bad(t):
        raise KeyError("pack failed")

    x = _leaf()
    with saved_tensors_hooks(bad, lambda p: p):
        with pytest.raises(KeyError, match="pack failed"):
            Cube.apply(x)
    np.testing.assert_allclose((x * 2).detach().numpy(), [2.0, 4.0, 6.0])
