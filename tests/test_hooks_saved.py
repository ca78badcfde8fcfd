"""Saved-tensor hooks (pack when saved, unpack when backward reads), save_on_cpu,
disable_saved_tensors_hooks, and introspection of nodes: _saved_<name>,
_raw_saved_<name>.register_hooks, saved_tensors, metadata."""

import threading

import numpy as np
import pytest

import ferrograd as torch
from ferrograd.autograd.graph import (
    disable_saved_tensors_hooks,
    save_on_cpu,
    saved_tensors_hooks,
)


class Counting:
    def __init__(self):
        self.packed, self.unpacked = [], 0

    def pack(self, t):
        self.packed.append(t)
        return ("box", t)

    def unpack(self, box):
        self.unpacked += 1
        assert box[0] == "box"
        return box[1]


def test_pack_runs_at_save_unpack_when_backward_reads():
    h = Counting()
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = torch.tensor([3.0, 4.0], requires_grad=True)
    with saved_tensors_hooks(h.pack, h.unpack):
        z = x * y  # saves both inputs
        w = z.exp()  # saves its result
    assert len(h.packed) == 3 and h.unpacked == 0
    assert h.packed[0] is x and h.packed[1] is y
    w.sum().backward(retain_graph=True)
    assert h.unpacked == 3
    e = np.exp(np.array([3.0, 8.0]))
    np.testing.assert_allclose(x.grad.numpy(), e * [3.0, 4.0], rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), e * [1.0, 2.0], rtol=1e-6)
    w.sum().backward()
    assert h.unpacked == 6 and len(h.packed) == 3


def test_no_hooks_outside_the_context_and_innermost_pair_wins():
    outer, inner = Counting(), Counting()
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(outer.pack, outer.unpack):
        with saved_tensors_hooks(inner.pack, inner.unpack):
            a = x * x
        b = x.sin()
    c = x.cos()
    assert len(inner.packed) == 2 and len(outer.packed) == 1
    (a.sum() + b.sum() + c.sum()).backward()
    assert inner.unpacked == 2 and outer.unpacked == 1


def test_unpacked_value_is_what_backward_uses():
    # The unpack hook's tensor is what the rule reads: returning 2x doubles the gradient.
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t * 2):
        y = (x * x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0, 12.0])


def test_hooks_are_thread_local():
    h = Counting()
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    out = {}

    def other():
        out["y"] = x.exp()

    with saved_tensors_hooks(h.pack, h.unpack):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert h.packed == []


def test_pack_hook_that_raises_fails_the_op_and_leaves_no_hooks_behind():
    x = torch.tensor([1.0, 2.0], requires_grad=True)

    def bad(t):
        raise KeyError("pack failed")

    with saved_tensors_hooks(bad, lambda p: p):
        with pytest.raises(KeyError, match="pack failed"):
            x.exp()
    y = x.exp()  # no hooks any more
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)


def test_unpack_hook_that_raises_or_returns_a_non_tensor():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    state = {"fail": True}

    def unpack(p):
        if state["fail"]:
            raise ValueError("unpack failed")
        return p

    with saved_tensors_hooks(lambda t: t, unpack):
        y = x.exp().sum()
    with pytest.raises(ValueError, match="unpack failed"):
        y.backward(retain_graph=True)
    assert x.grad is None
    state["fail"] = False
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    with saved_tensors_hooks(lambda t: t, lambda p: "nope"):
        z = x.exp().sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result of type str"):
        z.backward()


def test_inplace_write_after_pack_is_still_detected():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        y = a.exp()
    a.add_(1)  # y's saved result is a fresh output; a is saved by nothing
    y.sum().backward()
    b = x * 1
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        z = b * b
    b.mul_(2)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[ferrograd.FloatTensor \[2\]\]"):
        z.sum().backward()


def test_save_on_cpu_copies_and_goes_through_pack_and_unpack():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True, dtype=torch.float64)
    with save_on_cpu(pin_memory=True):
        y = (x * x.sin()).sum()
    fn = y.grad_fn.next_functions[0][0]
    # The node holds copies: nothing in the graph aliases x any more.
    assert fn._saved_self.data_ptr() != x.data_ptr()
    y.backward()
    xs = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), np.sin(xs) + xs * np.cos(xs))


def test_disable_saved_tensors_hooks():
    with disable_saved_tensors_hooks("no packing in here"):
        with pytest.raises(RuntimeError, match="no packing in here"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
        with disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="inner"):
                saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
        with pytest.raises(RuntimeError, match="no packing in here"):
            saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        pass

    @disable_saved_tensors_hooks("decorated")
    def f():
        with saved_tensors_hooks(lambda t: t, lambda t: t):
            pass

    with pytest.raises(RuntimeError, match="decorated"):
        f()


def test_saved_names_values_and_freed_error():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = torch.tensor([3.0, 4.0], requires_grad=True)
    z = x * y
    assert z.grad_fn._saved_names == ["self", "other"]
    assert z.grad_fn._saved_self is x and z.grad_fn._saved_other is y
    e = x.exp()
    assert e.grad_fn._saved_names == ["result"]
    np.testing.assert_allclose(e.grad_fn._saved_result.detach().numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    with pytest.raises(AttributeError):
        _ = z.grad_fn._saved_nothing
    with pytest.raises(AttributeError):
        _ = z.grad_fn.not_an_attribute
    z.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _ = z.grad_fn._saved_self


def test_saved_tensor_hooks_per_slot_with_raw_saved():
    h = Counting()
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.pow(2)
    raw = y.grad_fn._raw_saved_self
    raw.register_hooks(h.pack, h.unpack)
    assert h.packed == [x] and h.unpacked == 0
    assert y.grad_fn._saved_self is x
    assert h.unpacked == 1
    with pytest.raises(RuntimeError, match="already been set"):
        raw.register_hooks(h.pack, h.unpack)
    y.sum().backward()
    assert h.unpacked == 2
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="after it has been freed"):
        raw.register_hooks(h.pack, h.unpack)
    with pytest.raises(TypeError):
        x.exp().grad_fn._raw_saved_result.register_hooks(1, h.unpack)


def test_custom_function_node_exposes_saved_tensors():
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    h = Counting()
    with saved_tensors_hooks(h.pack, h.unpack):
        y = Cube.apply(x)
    assert len(h.packed) == 1
    (s,) = y.grad_fn.saved_tensors
    np.testing.assert_allclose(s.detach().numpy(), [1.0, 2.0])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])
    assert h.unpacked == 2
    with pytest.raises(AttributeError):
        _ = (x * 2).grad_fn.saved_tensors


def test_metadata_is_one_dict_per_node_for_its_lifetime():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    md = y.grad_fn.metadata
    assert isinstance(md, dict) and md == {}
    md["tag"] = "layer1"
    # A new grad_fn wrapper of the same node shows the same dict.
    assert y.grad_fn.metadata is md and y.grad_fn.metadata["tag"] == "layer1"
    assert (y * 2).grad_fn.metadata == {}
    seen = []
    y.grad_fn.register_prehook(lambda go: seen.append(y.grad_fn.metadata["tag"]))
    y.sum().backward()
    assert seen == ["layer1"]
