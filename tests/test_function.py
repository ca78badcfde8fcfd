"""Custom autograd.Function: Python forward/backward driven by the Rust engine."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import ferrograd as fg
from ferrograd.autograd import Function, gradcheck, gradgradcheck, once_differentiable


def leaf(values, dtype=fg.float64):
    return fg.tensor(values, dtype=dtype, requires_grad=True)


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class SinCos(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, gs, gc_):
        (x,) = ctx.saved_tensors
        return gs * x.cos() - gc_ * x.sin()


class DoubleInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        x.mul_(2)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


class Line(Function):
    """The example from the seed tutorial, unchanged."""

    @staticmethod
    def forward(ctx, w, x, b):
        ctx.save_for_backward(w, x, b)
        return w * x + b

    @staticmethod
    def backward(ctx, grad_out):
        w, x, b = ctx.saved_tensors
        return grad_out * x, grad_out * w, grad_out


def test_seed_line_example():
    w = fg.rand(2, 2, requires_grad=True)
    x = fg.rand(2, 2, requires_grad=True)
    b = fg.rand(2, 2, requires_grad=True)
    out = Line.apply(w, x, b)
    out.backward(fg.ones(2, 2))
    np.testing.assert_array_equal(w.grad.numpy(), x.detach().numpy())
    np.testing.assert_array_equal(x.grad.numpy(), w.detach().numpy())
    np.testing.assert_array_equal(b.grad.numpy(), np.ones((2, 2), np.float32))


def test_grad_fn_is_named_after_the_class():
    y = Exp.apply(leaf([1.0, 2.0]))
    assert y.grad_fn.name() == "ExpBackward"
    assert not y.is_leaf and y.requires_grad


def test_exp_gradcheck_and_gradgradcheck():
    x = leaf(np.linspace(-1, 1, 6).reshape(2, 3))
    assert gradcheck(Exp.apply, (x,))
    assert gradgradcheck(Exp.apply, (x,))


def test_two_output_sincos_gradcheck():
    x = leaf([0.3, -1.2, 2.0])
    assert gradcheck(lambda t: SinCos.apply(t), (x,))
    assert gradgradcheck(lambda t: SinCos.apply(t), (x,))


def test_mark_dirty_in_place_forward():
    a = leaf([1.0, -2.0, 3.0])
    x = a * 1.0
    y = DoubleInPlace.apply(x)
    assert y is x
    assert x.grad_fn.name() == "DoubleInPlaceBackward"
    (y * y).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 8 * np.array([1.0, -2.0, 3.0]))
    assert gradcheck(lambda t: DoubleInPlace.apply(t * 1.0), (leaf([0.5, 1.5]),))


def test_mark_dirty_on_a_leaf_is_refused():
    a = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        DoubleInPlace.apply(a)


def test_non_tensor_and_keyword_arguments():
    class Scale(Function):
        @staticmethod
        def forward(ctx, x, factor, *, offset=0.0):
            ctx.factor = factor
            return x * factor + offset

        @staticmethod
        def backward(ctx, g):
            return g * ctx.factor, None

    x = leaf([1.0, 2.0])
    y = Scale.apply(x, 3.0, offset=1.0)
    np.testing.assert_allclose(y.detach().numpy(), [4.0, 7.0])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_needs_input_grad_and_grad_mode_in_forward():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b):
            seen["needs"] = ctx.needs_input_grad
            seen["grad_enabled"] = fg.is_grad_enabled()
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g, None

    Probe.apply(leaf([1.0]), fg.tensor([2.0], dtype=fg.float64))
    assert seen == {"needs": (True, False), "grad_enabled": False}


def test_apply_under_no_grad_records_nothing():
    x = leaf([1.0, 2.0])
    with fg.no_grad():
        y = Exp.apply(x)
    assert y.grad_fn is None and not y.requires_grad


def test_mark_non_differentiable():
    class WithMask(Function):
        @staticmethod
        def forward(ctx, x):
            mask = x > 0
            out = x * 2
            ctx.mark_non_differentiable(mask)
            return out, mask

        @staticmethod
        def backward(ctx, g, g_mask):
            return g * 2

    out, mask = WithMask.apply(leaf([1.0, -1.0]))
    assert out.requires_grad and not mask.requires_grad


def test_set_materialize_grads_false_passes_none():
    received = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            received.append((g1 is None, g2 is None))
            return g1 * 1 if g1 is not None else None

    x = leaf([1.0])
    a, _ = Two.apply(x)
    a.sum().backward()
    assert received == [(False, True)]


def test_materialized_grads_are_zeros_by_default():
    received = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            received.append(g2.tolist())
            return g1 + 2 * g2

    x = leaf([1.0, 1.0])
    a, _ = Two.apply(x)
    a.sum().backward()
    assert received == [[0.0, 0.0]]


def test_setup_context_style():
    class Cube(Function):
        @staticmethod
        def forward(x):
            return x * x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * g * x * x

    x = leaf([2.0])
    Cube.apply(x).backward()
    assert x.grad.tolist() == [12.0]


def test_wrong_number_of_gradients():
    class Bad(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g

    y = Bad.apply(leaf([1.0]), leaf([2.0]))
    with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect number of gradients \(expected 2, got 1\)"):
        y.backward()


def test_gradient_of_wrong_shape():
    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return fg.ones(10, dtype=fg.float64)

    x = fg.ones(5, 5, dtype=fg.float64, requires_grad=True)
    with pytest.raises(RuntimeError) as e:
        BadShape.apply(x).backward()
    assert str(e.value) == (
        "Function BadShapeBackward returned an invalid gradient at index 0 - "
        "got [10] but expected shape compatible with [5, 5]"
    )
    assert x.grad is None


def test_broadcastable_gradient_is_summed_to_the_input_shape():
    class Bcast(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return g * fg.ones(4, 3, dtype=fg.float64)

    x = fg.ones(1, 3, dtype=fg.float64, requires_grad=True)
    Bcast.apply(x).backward()
    assert x.grad.tolist() == [[4.0, 4.0, 4.0]]


class Boom(Exception):
    pass


def test_exception_in_backward_propagates_unchanged_and_leaves_grads_untouched():
    class Exploding(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise Boom("from backward")

    a = leaf([1.0, 2.0])
    b = leaf([3.0])
    loss = (a * a).sum() + Exploding.apply(b).sum()
    with pytest.raises(Boom, match="from backward") as e:
        loss.backward()
    assert any(fr.name == "backward" for fr in e.traceback)
    assert a.grad is None and b.grad is None
    assert a.tolist() == [1.0, 2.0]


def test_double_backward_through_differentiable_backward():
    x = leaf([0.5, 1.0])
    y = Exp.apply(x).sum()
    (g,) = fg.autograd.grad(y, x, create_graph=True)
    (gg,) = fg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.exp([0.5, 1.0]))


def test_once_differentiable_refuses_second_differentiation():
    class OnceExp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = leaf([0.5])
    y = OnceExp.apply(x)
    # The incoming gradient (2y) requires grad, so the result must refuse a second pass.
    (g,) = fg.autograd.grad((y * y).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 2 * np.exp([1.0]))
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with @once_differentiable"):
        g.sum().backward()
    # First-order use is unaffected.
    x2 = leaf([0.5])
    OnceExp.apply(x2).sum().backward()
    np.testing.assert_allclose(x2.grad.numpy(), np.exp([0.5]))


def test_saved_tensors_after_the_graph_is_freed():
    keep = {}

    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            keep["ctx"] = ctx
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2

    y = Keep.apply(leaf([1.0]))
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        _ = keep["ctx"].saved_tensors
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_saved_tensor_modified_in_place_is_detected():
    class Save(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x

    a = leaf([1.0, 2.0])
    x = a * 1
    y = Save.apply(x)
    x.mul_(3)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_tensors_die_after_backward():
    class Save(Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w, g * x

    x = leaf([1.0, 2.0])
    # A tensor over NumPy memory keeps the array alive exactly as long as its
    # storage lives, so a weak reference to the array observes the storage.
    arr = np.array([3.0, 4.0])
    ref = weakref.ref(arr)
    w = fg.from_numpy(arr)
    y = Save.apply(x, w)
    del w, arr
    gc.collect()
    assert ref() is not None  # the graph keeps it
    y.sum().backward()
    gc.collect()
    assert ref() is None


def test_tensors_stored_on_ctx_are_collected():
    class Stash(Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2
            ctx.out = out  # a cycle through the graph: out -> node -> ctx -> out
            ctx.input = x
            return out

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf([1.0, 2.0])
    y = Stash.apply(x)
    ref = weakref.ref(y)
    before = fg._C._live_nodes()
    del y
    gc.collect()
    assert ref() is None
    assert fg._C._live_nodes() < before


def test_rss_is_flat_over_many_rounds():
    import resource

    def rss_kb():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    class Stash(Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            ctx.out = out
            return out

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = fg.ones(256, dtype=fg.float64, requires_grad=True)

    def rounds(n):
        for _ in range(n):
            Stash.apply(x).sum().backward()

    rounds(1000)
    gc.collect()
    start = rss_kb()
    rounds(10000)
    gc.collect()
    grown_mb = (rss_kb() - start) / 1024
    assert grown_mb < 8, f"RSS grew by {grown_mb:.1f} MB over 10,000 rounds"


def test_backward_from_another_thread():
    x = leaf([1.0, 2.0])
    y = Exp.apply(x).sum()
    errors = []

    def run():
        try:
            y.backward()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert not errors
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]))


def test_returning_an_input_unchanged_gives_a_new_tensor():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf([1.0])
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and y.grad_fn.name() == "IdentityBackward"
    y.backward()
    assert x.grad.tolist() == [1.0]


def test_forward_mode_through_a_backward_that_reads_a_saved_output():
    # Forward over reverse (jvp of grad, as hessian = jacfwd(jacrev(f))): the
    # backward runs in forward mode and needs the tangent of the output it saved
    # (d/dx of exp(x) * g is exp(x) * g).
    from ferrograd.func import grad, jvp

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            ctx.save_for_forward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

        @staticmethod
        def jvp(ctx, t):
            (y,) = ctx.saved_tensors
            return t * y

    x = fg.tensor([0.3, -0.2, 1.1], dtype=fg.float64)

    def f(v):
        return Exp.apply(v).sum()

    t = fg.tensor([1.0, 2.0, -1.0], dtype=fg.float64)
    _, hvp = jvp(grad(f), (x,), (t,))
    np.testing.assert_allclose(hvp.detach().numpy(), np.exp(x.numpy()) * t.numpy(), rtol=1e-12)
