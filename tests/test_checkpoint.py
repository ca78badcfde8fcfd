"""Activation checkpointing: gradients equal the uncheckpointed ones (first
and second order, gradchecked in float64), dropout masks are replayed, only
the inputs are saved, and PyTorch's API details (use_reentrant warning,
decorator form, kwargs, tuple outputs, autograd.grad, errors)."""

from __future__ import annotations

import gc
import inspect
import warnings
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as torch
import ferrograd.nn as nn
from ferrograd import autograd
from ferrograd.autograd import gradcheck, gradgradcheck
from ferrograd.autograd.graph import saved_tensors_summary
from ferrograd.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

MODES = [False, True]


def _grads(ts):
    return [None if t.grad is None else t.grad.clone() for t in ts]


def _close(a, b, tol=1e-12):
    return float((a - b).abs().max()) <= tol


shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3)


@settings(max_examples=10)
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_gradcheck_and_gradgradcheck_through_checkpoint(shape, seed):
    torch.manual_seed(seed)
    w = torch.randn(*shape, dtype=torch.float64, requires_grad=True)

    def f(x, y):
        # w is closed over: its gradient must flow through the checkpoint too.
        return ((x * w).sin() * y.exp()).tanh() + x * y

    def run(x, y):
        return checkpoint(f, x, y, use_reentrant=False)

    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    y = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    assert gradcheck(run, (x, y, ))
    assert gradgradcheck(run, (x, y))
    assert gradcheck(lambda w_: checkpoint(lambda a: (a * w_).sin(), x, use_reentrant=False), (w,))
    assert gradgradcheck(
        lambda w_: checkpoint(lambda a: (a * w_).sin(), x, use_reentrant=False), (w,)
    )


def test_reentrant_gradient_matches_finite_differences():
    # gradcheck calls autograd.grad, which the reentrant variant refuses (as
    # in PyTorch), so its .backward() is compared with central differences.
    x = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)

    def f(t):
        return (t.sin() * t).sum()

    checkpoint(f, x, use_reentrant=True).backward()
    eps = 1e-6
    flat = x.detach().reshape(-1)
    for i in range(flat.numel()):
        plus, minus = flat.clone(), flat.clone()
        plus[i] += eps
        minus[i] -= eps
        fd = (f(plus).item() - f(minus).item()) / (2 * eps)
        assert abs(x.grad.reshape(-1)[i].item() - fd) < 1e-7


@pytest.mark.parametrize("reentrant", MODES)
def test_mlp_with_dropout_matches_the_plain_model(reentrant):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 16), nn.Tanh(),
        nn.Dropout(0.3), nn.Linear(16, 4),
    )
    params = list(model.parameters())
    x = torch.randn(8, 6, requires_grad=True)
    state = torch.get_rng_state()
    ref = model(x)
    ref.square().sum().backward()
    ref_grads = _grads(params + [x])
    after_plain = torch.get_rng_state()

    model.zero_grad()
    x.grad = None
    torch.set_rng_state(state)
    out = checkpoint(model, x, use_reentrant=reentrant)
    assert torch.equal(out, ref)
    # Backward replays the forward's random numbers and leaves the stream
    # where the forward left it.
    out.square().sum().backward()
    assert torch.equal(torch.get_rng_state(), after_plain)
    for g, r in zip(_grads(params + [x]), ref_grads):
        assert torch.equal(g, r)


def test_without_preserve_rng_state_the_masks_differ():
    torch.manual_seed(1)
    drop = nn.Dropout(0.5)
    x = torch.ones(64, requires_grad=True)
    out = checkpoint(drop, x, use_reentrant=False, preserve_rng_state=False)
    out.sum().backward()
    # The gradient is the mask of the recomputation, not of the forward.
    assert not torch.equal(x.grad, (out != 0).to(torch.float32) * 2.0)
    x.grad = None
    out = checkpoint(drop, x, use_reentrant=False)
    out.sum().backward()
    assert torch.equal(x.grad, (out != 0).to(torch.float32) * 2.0)


@pytest.mark.parametrize("reentrant", MODES)
@pytest.mark.parametrize("segments", [1, 2, 3, 5])
def test_checkpoint_sequential_matches_sequential(reentrant, segments):
    torch.manual_seed(2)
    layers = []
    for _ in range(5):
        layers += [nn.Linear(5, 5), nn.Tanh(), nn.Dropout(0.2)]
    model = nn.Sequential(*layers)
    params = list(model.parameters())
    x = torch.randn(4, 5, requires_grad=True)
    state = torch.get_rng_state()
    ref = model(x)
    ref.sum().backward()
    ref_grads = _grads(params + [x])
    model.zero_grad()
    x.grad = None
    torch.set_rng_state(state)
    out = checkpoint_sequential(model, segments, x, use_reentrant=reentrant)
    assert torch.equal(out, ref)
    out.sum().backward()
    for g, r in zip(_grads(params + [x]), ref_grads):
        assert torch.equal(g, r)


def test_checkpoint_sequential_takes_a_list_and_preserve_rng_state():
    fs = [lambda t: t * 2, lambda t: t.sin(), lambda t: t + 1, lambda t: t.exp()]
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(
        lambda a: checkpoint_sequential(fs, 2, a, use_reentrant=False, preserve_rng_state=False),
        (x,),
    )
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint_sequential(fs, 2, x, use_reentrant=False, foo=1)


def test_only_the_inputs_are_saved():
    torch.manual_seed(3)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(32, 32), nn.Tanh()) for _ in range(6)])
    x = torch.randn(16, 32, requires_grad=True)
    plain = saved_tensors_summary(model(x)).unique_bytes
    out = checkpoint(model, x, use_reentrant=False)
    summary = saved_tensors_summary(out)
    # One node saving x (16 x 32 float32), against six layers' activations.
    assert summary.unique_bytes == 16 * 32 * 4
    assert plain > 6 * summary.unique_bytes
    assert out.grad_fn.name() == "CheckpointBackward"


def test_the_forward_graph_is_freed():
    lin = nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    inner = []

    def f(t):
        h = lin(t).tanh()
        inner.append(weakref.ref(h))
        return h * 2

    out = checkpoint(f, x, use_reentrant=False)
    gc.collect()
    assert inner[0]() is None
    out.sum().backward()
    assert x.grad is not None


@pytest.mark.parametrize("reentrant", MODES)
def test_autograd_grad(reentrant):
    lin = nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    out = checkpoint(lin, x, use_reentrant=reentrant)
    if reentrant:
        with pytest.raises(RuntimeError, match="use_reentrant=True, ferrograd.utils.checkpoint is incompatible with .grad()"):
            autograd.grad(out.sum(), x)
        return
    gx, gw = autograd.grad(out.sum(), [x, lin.weight])
    assert _close(gx, lin.weight.sum(0).expand(2, 3))
    assert _close(gw, x.sum(0).expand(3, 3))
    assert lin.weight.grad is None


def test_backward_with_inputs_is_refused_by_the_reentrant_variant():
    lin = nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    out = checkpoint(lin, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="passing an `inputs` parameter"):
        out.sum().backward(inputs=[x])


def test_inputs_that_do_not_require_grad():
    lin = nn.Linear(3, 2)
    x = torch.randn(4, 3)
    out = checkpoint(lin, x, use_reentrant=False)
    assert out.requires_grad
    out.sum().backward()
    assert _close(lin.weight.grad, x.sum(0).expand(2, 3), 1e-6)
    assert _close(lin.bias.grad, torch.full((2,), 4.0), 1e-6)


def test_reentrant_warns_when_no_input_requires_grad():
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = checkpoint(lambda t: t * 2, torch.ones(2), use_reentrant=True)
    assert not out.requires_grad


def test_kwargs_non_tensor_args_and_tuple_outputs():
    a = torch.randn(3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, requires_grad=True)

    def f(x, k, y, *, scale, unused=None):
        return x * scale + k, (y * x).sin(), "tag", 7

    p, q, tag, n = checkpoint(f, a, 2, b, scale=3.0, use_reentrant=False)
    assert (tag, n) == ("tag", 7)
    (p.sum() + q.sum()).backward()
    ga, gb = a.grad.clone(), b.grad.clone()
    a.grad = b.grad = None
    p0, q0, _, _ = f(a, 2, b, scale=3.0)
    (p0.sum() + q0.sum()).backward()
    assert _close(ga, a.grad) and _close(gb, b.grad)
    # Only one of the outputs used: the other gets no gradient.
    a.grad = b.grad = None
    p, q, _, _ = checkpoint(f, a, 2, b, scale=3.0, use_reentrant=False)
    q.sum().backward()
    assert _close(b.grad, (b * a).cos() * a)


def test_reentrant_refuses_kwargs():
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda x, scale: x, torch.ones(1), scale=2, use_reentrant=True)


def test_use_reentrant_not_passed_warns_and_means_true():
    x = torch.ones(2, requires_grad=True)
    with pytest.warns(UserWarning) as rec:
        line = inspect.currentframe().f_lineno + 1
        out = checkpoint(lambda t: t * 3, x)
    msgs = [str(w.message) for w in rec]
    assert any(m.startswith("ferrograd.utils.checkpoint: the use_reentrant parameter should be passed explicitly.") for m in msgs)
    assert any(w.filename == __file__ and w.lineno == line for w in rec)
    assert out.grad_fn.name() == "CheckpointFunctionBackward"
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant parameter"):
        checkpoint_sequential([lambda t: t], 1, x)


def test_decorator_form():
    calls = []

    @checkpoint(use_reentrant=False)
    def f(x):
        calls.append(1)
        return x.exp()

    x = torch.tensor([0.0, 1.0], requires_grad=True)
    out = f(x)
    out.sum().backward()
    assert len(calls) == 2  # forward and the recomputation
    assert _close(x.grad, x.exp().detach(), 1e-6)
    with pytest.raises(ValueError, match="Unexpected keyword arguments"):
        checkpoint(use_reentrant=False, foo=1)


def test_create_graph_double_backward_matches():
    # Only the non-reentrant variant: the reentrant one refuses autograd.grad.
    x = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([1.5, 0.5, -0.7], dtype=torch.float64, requires_grad=True)

    def f(t):
        return (t * w).sin() * t

    (g0,) = autograd.grad(f(x).sum(), x, create_graph=True)
    h0 = autograd.grad(g0.square().sum(), [x, w])
    out = checkpoint(f, x, use_reentrant=False)
    (g1,) = autograd.grad(out.sum(), x, create_graph=True)
    h1 = autograd.grad(g1.square().sum(), [x, w])
    assert _close(g0, g1)
    for a, b in zip(h0, h1):
        assert _close(a, b)


def test_create_graph_with_dropout_replays_the_mask_in_double_backward():
    # The recomputation in the first backward and the graph it leaves for the
    # second must both use the forward's mask, or the second derivatives differ.
    drop = nn.Dropout(0.5)
    x = torch.linspace(-1.0, 1.0, 16, dtype=torch.float64).requires_grad_()

    def f(a):
        return (drop(a.sin()) * a).tanh().square()

    results = []
    for use_checkpoint in (False, True):
        torch.manual_seed(3)
        out = checkpoint(f, x, use_reentrant=False) if use_checkpoint else f(x)
        (g,) = autograd.grad(out.sum(), x, create_graph=True)
        (gg,) = autograd.grad(g.square().sum(), x)
        results.append((out.detach(), g.detach(), gg))
    (o0, g0, gg0), (o1, g1, gg1) = results
    kept = float((o0 != 0).sum())
    assert 0 < kept < 16  # the mask dropped some elements and kept others
    assert _close(o0, o1) and _close(g0, g1) and _close(gg0, gg1)


def test_a_boundary_tensor_computed_from_another():
    # v is computed from w outside the checkpoint and both are used inside:
    # the checkpoint must give each its partial derivative, not the total.
    w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    v = w * 2
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)

    def f(t):
        return (t * w * v).sin()

    f(x).sum().backward()
    ref = _grads([w, x])
    w.grad = x.grad = None
    checkpoint(f, x, use_reentrant=False).sum().backward()
    for g, r in zip(_grads([w, x]), ref):
        assert _close(g, r)


def test_nested_checkpoints():
    x = torch.randn(4, dtype=torch.float64, requires_grad=True)

    def inner(t):
        return t.sin() * t

    def outer(t):
        return checkpoint(inner, t.exp(), use_reentrant=False).tanh()

    assert gradcheck(lambda a: checkpoint(outer, a, use_reentrant=False), (x,))
    assert gradgradcheck(lambda a: checkpoint(outer, a, use_reentrant=False), (x,))


def test_retain_graph_and_backward_twice():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    out = checkpoint(lambda t: t.exp(), x, use_reentrant=False).sum()
    out.backward(retain_graph=True)
    out.backward()
    assert _close(x.grad, 2 * x.exp().detach(), 1e-5)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        out.backward()


def test_an_input_written_in_place_is_caught():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    out = checkpoint(lambda t: t.exp(), h, use_reentrant=False)
    h.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*It was modified by mul_"):
        out.sum().backward()


def test_determinism_check():
    state = {"n": 3}

    def f(t):
        state["n"] += 1
        return t[: state["n"]].exp().sum()

    x = torch.ones(10, requires_grad=True)
    out = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="Recomputed values for the following tensors have different metadata"):
        out.backward()
    state["n"] = 3
    out = checkpoint(f, x, use_reentrant=False, debug=True)
    with pytest.raises(CheckpointError, match="(?s)Operations executed during the original forward:\n.*ExpBackward0"):
        out.backward()
    assert issubclass(CheckpointError, RuntimeError)
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        checkpoint(f, x, use_reentrant=False, determinism_check="strict")


def test_determinism_check_none_skips_the_comparison():
    calls = {"n": 0}

    def f(t):
        calls["n"] += 1
        return t.exp() if calls["n"] == 1 else t.exp().exp().log()

    x = torch.ones(2, requires_grad=True)
    out = checkpoint(f, x, use_reentrant=False, determinism_check="none")
    out.sum().backward()
    assert _close(x.grad, x.exp().detach(), 1e-5)


def test_under_no_grad_the_function_just_runs():
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        out = checkpoint(lambda t: t * 2, x, use_reentrant=False)
    assert out.grad_fn is None and not out.requires_grad


def test_a_cycle_through_the_function_is_collected():
    class Keep(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.last = None

        def forward(self, t):
            return self.lin(t)

    m = Keep()
    out = checkpoint(m, torch.ones(1, 2), use_reentrant=False)
    m.last = out  # out -> node -> recompute -> m -> out
    ref = weakref.ref(m)
    del m, out
    gc.collect()
    assert ref() is None


def test_anomaly_inside_a_checkpoint_points_at_the_users_lines():
    x = torch.tensor([-1.0, 4.0], requires_grad=True)

    def f(t):
        return t.sqrt()

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with autograd.set_detect_anomaly(True):
            line = inspect.currentframe().f_lineno + 1
            out = checkpoint(f, x, use_reentrant=False)
            with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan"):
                out.sum().backward()
    msgs = [str(w.message) for w in rec]
    assert any(m.startswith("Error detected in SqrtBackward0") and "return t.sqrt()" in m for m in msgs)
    induced = [m for m in msgs if "Previous calculation was induced by CheckpointBackward" in m]
    assert induced and f'File "{__file__}", line {line}' in induced[0]
