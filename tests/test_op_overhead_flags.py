"""The per-thread mode word: grad mode, inference mode, anomaly mode, capture,
forward AD suspension, saved-tensor hooks and deferred recording errors share
one bit set read once per op. Each switch must still change what an op does
the moment it flips, restore on exit (also when the block raises), nest, and
stay local to its thread; two switches on at once must not mask each other."""

from __future__ import annotations

import math
import threading
import warnings

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.autograd.forward_ad as fwAD
from ferrograd import autograd
from ferrograd.autograd.graph import saved_tensors_hooks


def leaf(vals=(0.5, -1.0, 2.0)):
    return torch.tensor(np.asarray(vals, np.float64), dtype=torch.float64, requires_grad=True)


def records(x):
    """Whether an elementwise op on `x` builds a graph node."""
    return (x * 2.0).grad_fn is not None


class Boom(Exception):
    pass


# ----- grad mode --------------------------------------------------------------------


def test_no_grad_nested_and_restored_after_an_exception():
    x = leaf()
    assert records(x)
    with torch.no_grad():
        assert not records(x)
        with torch.enable_grad():
            assert records(x)
            with pytest.raises(Boom):
                with torch.no_grad():
                    assert not records(x)
                    raise Boom
            assert records(x)
        assert not records(x)
    assert records(x) and torch.is_grad_enabled()


def test_set_grad_enabled_flips_each_op_immediately():
    x = leaf()
    ys = []
    for on in (True, False, True, False):
        torch.set_grad_enabled(on)
        ys.append((x.sin(), x + x, torch.exp(x), x * x))
    torch.set_grad_enabled(True)
    for (a, b, c, d), on in zip(ys, (True, False, True, False)):
        assert all((t.grad_fn is not None) == on for t in (a, b, c, d))


def test_inference_mode_restores_and_nests():
    x = leaf()
    assert not torch.is_inference_mode_enabled()
    with pytest.raises(Boom):
        with torch.inference_mode():
            assert torch.is_inference_mode_enabled() and not records(x)
            with torch.inference_mode(False):
                assert not torch.is_inference_mode_enabled()
            assert torch.is_inference_mode_enabled()
            raise Boom
    assert not torch.is_inference_mode_enabled()
    assert torch.is_grad_enabled() and records(x)


def test_grad_mode_is_per_thread():
    x = leaf()
    seen = {}

    def worker():
        seen["worker"] = records(x)

    with torch.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not records(x)
    assert seen["worker"] is True


# ----- anomaly mode -----------------------------------------------------------------


def nan_backward(x):
    """A graph whose backward produces NaN: sqrt at 0 gives inf, times 0."""
    return (torch.sqrt(x * 0.0) * 0.0).sum()


def test_anomaly_on_off_nested_and_restored():
    x = leaf()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nan_backward(x).backward()  # off: NaN gradients pass silently
        assert math.isnan(float(x.grad[0]))
        x.grad = None
        with pytest.raises(Boom):
            with autograd.detect_anomaly():
                assert torch.is_anomaly_enabled()
                with autograd.set_detect_anomaly(False):
                    assert not torch.is_anomaly_enabled()
                    nan_backward(x).backward()
                assert torch.is_anomaly_enabled()
                with pytest.raises(RuntimeError, match="returned nan values"):
                    nan_backward(x).backward()
                raise Boom
    assert not torch.is_anomaly_enabled()
    x.grad = None
    nan_backward(x).backward()


def test_anomaly_with_grad_mode_off_records_nothing_and_keeps_both_bits():
    x = leaf()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.detect_anomaly():
            with torch.no_grad():
                assert not records(x)
                assert torch.is_anomaly_enabled()
            assert records(x) and torch.is_anomaly_enabled()
    assert records(x) and not torch.is_anomaly_enabled()


def test_anomaly_mode_is_per_thread():
    seen = {}

    def worker():
        seen["worker"] = torch.is_anomaly_enabled()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.detect_anomaly():
            t = threading.Thread(target=worker)
            t.start()
            t.join()
    assert seen["worker"] is False


# ----- forward AD -------------------------------------------------------------------


def test_dual_level_tangents_only_inside_and_after_an_exception():
    x = torch.tensor([0.5, 1.5], dtype=torch.float64)
    v = torch.tensor([1.0, -2.0], dtype=torch.float64)
    with pytest.raises(Boom):
        with fwAD.dual_level():
            d = fwAD.make_dual(x, v)
            y = d * d + torch.sin(d)
            t = fwAD.unpack_dual(y).tangent
            np.testing.assert_allclose(t.numpy(), (2 * x.numpy() + np.cos(x.numpy())) * v.numpy())
            raise Boom
    # The level ended: a new one sees no tangent on the old dual's results.
    with fwAD.dual_level():
        assert fwAD.unpack_dual(d * 2.0).tangent is None
    assert fwAD.unpack_dual(x * 2.0).tangent is None


def test_forward_ad_with_grad_mode_off_still_propagates_tangents():
    x = torch.tensor([0.25, 2.0], dtype=torch.float64, requires_grad=True)
    v = torch.tensor([3.0, 1.0], dtype=torch.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        with torch.no_grad():
            y = torch.exp(d)
            assert y.grad_fn is None
        t = fwAD.unpack_dual(y).tangent
        np.testing.assert_allclose(t.numpy(), np.exp(x.detach().numpy()) * v.numpy())


def test_custom_function_forward_suspends_tangents_then_restores():
    seen = {}

    class Twice(autograd.Function):
        @staticmethod
        def forward(ctx, a):
            # Inside forward, tangent propagation is off: ops here see plain tensors.
            seen["inner"] = fwAD.unpack_dual(a * 1.0).tangent
            return a * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

        @staticmethod
        def jvp(ctx, t):
            return t * 2.0

    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    v = torch.tensor([1.0, 1.0], dtype=torch.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        y = Twice.apply(d)
        assert seen["inner"] is None
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), [2.0, 2.0])
        # After the Function returned, ops propagate tangents again.
        np.testing.assert_allclose(fwAD.unpack_dual(d * 3.0).tangent.numpy(), [3.0, 3.0])


# ----- saved-tensor hooks and deferred errors ---------------------------------------


def test_saved_tensor_hooks_nest_and_restore_after_an_exception():
    x = leaf()
    outer, inner = [], []
    with saved_tensors_hooks(lambda t: outer.append(1) or t, lambda p: p):
        x.exp()
        with pytest.raises(Boom):
            with saved_tensors_hooks(lambda t: inner.append(1) or t, lambda p: p):
                x.exp()
                raise Boom
        x.exp()
    n_outer, n_inner = len(outer), len(inner)
    assert n_outer == 2 and n_inner == 1
    y = x.exp()  # no hooks left: nothing packed
    y.sum().backward()
    assert (len(outer), len(inner)) == (n_outer, n_inner)
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()))


def test_deferred_error_raises_at_its_op_and_never_leaks():
    x = leaf()

    def bad(t):
        raise KeyError("pack failed")

    with saved_tensors_hooks(bad, lambda p: p):
        with pytest.raises(KeyError, match="pack failed"):
            x * x
        with pytest.raises(KeyError, match="pack failed"):
            torch.exp(x)
        # An op that saves nothing records no error.
        assert (x + 1.0).grad_fn is not None
    # The next ops, through every binding path, succeed.
    y = x * x + torch.sin(x) + x.exp()
    y.sum().backward()
    xv = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), 2 * xv + np.cos(xv) + np.exp(xv))


# ----- capture ----------------------------------------------------------------------


def test_capture_bit_records_then_clears_even_when_the_function_raises():
    def g(a, b):
        if g.fail:
            raise Boom
        return torch.sin(a * b) + a * 0.5

    g.fail = False
    f = torch.compile(g)
    a = torch.tensor([0.1, 0.2, 0.3])
    b = torch.tensor([1.0, 2.0, 3.0])
    for _ in range(3):
        out = f(a, b)
        np.testing.assert_array_equal(out.numpy(), g(a, b).numpy())
        assert not torch._C._capture_active()
    # New inputs through the replayed tape give the eager answer.
    b2 = torch.tensor([-1.0, 0.5, 4.0])
    np.testing.assert_array_equal(f(a, b2).numpy(), g(a, b2).numpy())
    g.fail = True
    f2 = torch.compile(g)
    with pytest.raises(Boom):
        f2(a, b)
    assert not torch._C._capture_active()
    # Eager ops after the failed capture run and record as usual.
    x = leaf()
    assert records(x)


def test_capture_still_refuses_a_binding_without_replay_rule():
    # from_numpy shares a NumPy array the replay could not re-read: it has no rule.
    f = torch.compile(lambda x: torch.sin(x * 2.0) + torch.from_numpy(np.ones(3, np.float32)),
                      fullgraph=True)
    f(torch.ones(3))
    with pytest.raises(RuntimeError, match="from_numpy"):
        f(torch.ones(3))
    assert not torch._C._capture_active()
