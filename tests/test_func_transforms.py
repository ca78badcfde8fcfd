"""``ferrograd.func``'s reverse-mode transforms and their compositions against
closed forms and Python loops over samples; ``functional_call``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.func import functional_call, grad, grad_and_value, jacrev, vjp, vmap


def rand(*shape):
    return fg.randn(*shape, dtype=fg.float64)


def close(a, b, tol=1e-9):
    assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def softmax_jacobian(x):
    s = x.softmax(-1).numpy()
    return np.diag(s) - np.outer(s, s)


# ----- grad -------------------------------------------------------------------------------


@given(n=st.integers(1, 6))
@settings(max_examples=10)
def test_grad_closed_forms(n):
    x = rand(n)
    close(grad(lambda t: (t.sin() * t).sum())(x), x.cos() * x + x.sin())
    a = rand(n, n)
    # d/dx x^T A x = (A + A^T) x
    close(grad(lambda t: t @ a @ t)(x), (a + a.T) @ x)
    g, v = grad_and_value(lambda t: (t * t).sum())(x)
    close(g, 2 * x)
    close(v, (x * x).sum())


def test_grad_argnums_pytrees_and_aux():
    x, y = rand(3), rand(3)
    gx, gy = grad(lambda a, b: (a * b.exp()).sum(), argnums=(0, 1))(x, y)
    close(gx, y.exp())
    close(gy, x * y.exp())
    close(grad(lambda a, b: (a * b).sum(), argnums=-1)(x, y), x)
    params = {"w": rand(2, 3), "b": [rand(2)]}
    g = grad(lambda p, t: ((p["w"] @ t + p["b"][0]) ** 2).sum())(params, x)
    r = params["w"] @ x + params["b"][0]
    close(g["w"], 2 * r.unsqueeze(1) * x.unsqueeze(0))
    close(g["b"][0], 2 * r)
    g, aux = grad(lambda t: ((t * t).sum(), t.sum()), has_aux=True)(x)
    close(g, 2 * x)
    close(aux, x.sum())
    (g, (v, aux)) = grad_and_value(lambda t: ((t**3).sum(), "note"), has_aux=True)(x)
    close(g, 3 * x * x)
    assert aux == "note"


def test_grad_of_unused_input_is_zero_and_input_untouched():
    x = rand(3)
    close(grad(lambda t, u: u.sum(), argnums=0)(x, rand(2)), fg.zeros(3, dtype=fg.float64))
    assert not x.requires_grad and x.grad is None


@given(v=st.floats(-2, 2))
@settings(max_examples=10)
def test_grad_grad(v):
    x = fg.tensor(v, dtype=fg.float64)
    close(grad(grad(lambda t: t**3))(x), 6 * x)
    close(grad(grad(lambda t: t.sin()))(x), -x.sin())
    close(grad(grad(grad(lambda t: t**4)))(x), 24 * x)


def test_grad_grad_vector_and_closure():
    x = rand(4)
    a = rand(4, 4)
    # The Hessian-vector product of a quadratic form through grad(grad(.)).
    hvp = grad(lambda t: (grad(lambda u: u @ a @ u)(t) * x).sum())(x)
    close(hvp, (a + a.T) @ x)


def test_grad_keeps_outer_autograd_graph():
    x = rand(3).requires_grad_()
    g = grad(lambda t: (t**3).sum())(x)
    (g.sum()).backward()
    close(x.grad, 6 * x.detach())


# ----- vjp --------------------------------------------------------------------------------


def test_vjp():
    x = rand(3, 4)
    out, fn = vjp(lambda t: t.sin() * 2, x)
    close(out, x.sin() * 2)
    u = rand(3, 4)
    (g,) = fn(u)
    close(g, u * 2 * x.cos())
    a, b = rand(3), rand(3)
    (o1, o2), fn = vjp(lambda p, q: (p * q, p.sum()), a, b)
    ga, gb = fn((fg.ones(3, dtype=fg.float64), fg.tensor(2.0, dtype=fg.float64)))
    close(ga, b + 2)
    close(gb, a)
    _, fn, aux = vjp(lambda t: (t * 3, t.sum()), a, has_aux=True)
    close(aux, a.sum())
    close(fn(fg.ones(3, dtype=fg.float64))[0], fg.full((3,), 3.0, dtype=fg.float64))


# ----- jacrev -----------------------------------------------------------------------------


@given(n=st.integers(1, 6), chunk=st.sampled_from([None, 1, 2, 5]))
@settings(max_examples=15)
def test_jacrev_closed_forms(n, chunk):
    x = rand(n)
    np.testing.assert_allclose(
        jacrev(lambda t: t.softmax(0), chunk_size=chunk)(x).numpy(), softmax_jacobian(x), atol=1e-12
    )
    a = rand(3, n)
    close(jacrev(lambda t: a @ t, chunk_size=chunk)(x), a)
    close(jacrev(lambda t: (t.sin() * t).sum())(x), x.cos() * x + x.sin())


def test_jacrev_structures():
    x, y = rand(2, 3), rand(3)
    jx, jy = jacrev(lambda p, q: p @ q, argnums=(0, 1))(x, y)
    assert jx.shape == (2, 2, 3) and jy.shape == (2, 3)
    close(jy, x)
    ref = np.zeros((2, 2, 3))
    for i in range(2):
        ref[i, i] = y.numpy()
    np.testing.assert_allclose(jx.numpy(), ref)
    jd = jacrev(lambda p: {"s": p["a"] * p["b"], "t": p["a"].sum()})({"a": y, "b": y * 2})
    close(jd["s"]["a"], fg.diag(y * 2))
    close(jd["t"]["b"], fg.zeros(3, dtype=fg.float64))
    close(jd["t"]["a"], fg.ones(3, dtype=fg.float64))
    j, aux = jacrev(lambda t: (t * 2, t.sum()), has_aux=True)(y)
    close(j, 2 * fg.eye(3, dtype=fg.float64))
    close(aux, y.sum())


def test_jacrev_of_jacrev_is_hessian():
    a = rand(4, 4)
    x = rand(4)
    close(jacrev(jacrev(lambda t: t @ a @ t))(x), a + a.T)
    # sum(sin(x) * x): Hessian diag(2 cos x - x sin x)
    h = jacrev(jacrev(lambda t: (t.sin() * t).sum()))(x)
    close(h, fg.eye(4, dtype=fg.float64) * (2 * x.cos() - x * x.sin()))


# ----- compositions with vmap -------------------------------------------------------------


def test_vmap_grad_against_loop():
    xs = rand(5, 3)
    w = rand(3)
    f = lambda p, x: ((p * x).sin()).sum()  # noqa: E731
    per = vmap(grad(f), in_dims=(None, 0))(w, xs)
    ref = fg.stack([grad(f)(w, xs[i]) for i in range(5)])
    close(per, ref)
    close(
        vmap(grad(f, argnums=1), in_dims=(None, 0))(w, xs),
        fg.stack([w * (w * x).cos() for x in xs]),
    )


def test_vmap_jacrev_and_grad_of_vmap():
    xs = rand(4, 3)
    j = vmap(jacrev(lambda t: t.softmax(0)))(xs)
    for i in range(4):
        np.testing.assert_allclose(j[i].numpy(), softmax_jacobian(xs[i]), atol=1e-12)
    g = grad(lambda t: vmap(lambda r: (r * r).sum())(t).sum())(xs)
    close(g, 2 * xs)
    close(vmap(vmap(grad(lambda t: t**3)))(xs), 3 * xs * xs)


def test_jacrev_inside_vmap_with_unbatched_capture():
    a = rand(3, 3)
    xs = rand(4, 3)
    j = vmap(jacrev(lambda t: (a @ t).tanh()))(xs)
    for i in range(4):
        y = (a @ xs[i]).tanh()
        close(j[i], (1 - y * y).unsqueeze(1) * a)


def _mlp():
    fg.manual_seed(3)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).double()


@pytest.mark.parametrize("unsqueeze", [False, True])
def test_per_sample_gradients_mlp(unsqueeze):
    model = _mlp()
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = rand(7, 6), fg.randint(0, 3, (7,))

    def loss(p, xb, yb):
        if unsqueeze:
            xb, yb = xb.unsqueeze(0), yb.unsqueeze(0)
        return F.cross_entropy(functional_call(model, p, (xb,)), yb)

    per = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(7):
        model.zero_grad()
        F.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        for k, p in model.named_parameters():
            close(per[k][i], p.grad)
    # The parameters themselves are untouched.
    for k, p in model.named_parameters():
        close(params[k], p.detach())


def test_per_sample_gradients_mse_and_aux():
    w, b = rand(2, 3), rand(2)
    x, y = rand(5, 3), rand(5, 2)

    def loss(p, xb, yb):
        out = F.linear(xb, p[0], p[1])
        return F.mse_loss(out, yb), out

    (gw, gb), outs = vmap(grad(loss, has_aux=True), in_dims=(None, 0, 0))((w, b), x, y)
    close(outs, x @ w.T + b)
    r = (x @ w.T + b - y) / 2 * 2
    close(gb, r)
    close(gw, r.unsqueeze(2) * x.unsqueeze(1))


# ----- functional_call --------------------------------------------------------------------


def test_functional_call_swaps_and_restores():
    lin = nn.Linear(3, 2).double()
    w0 = lin.weight
    new = {"weight": fg.zeros(2, 3, dtype=fg.float64), "bias": fg.ones(2, dtype=fg.float64)}
    out = functional_call(lin, new, (rand(4, 3),))
    close(out, fg.ones(4, 2, dtype=fg.float64))
    assert lin.weight is w0 and isinstance(lin.weight, nn.Parameter)
    # Partial dicts keep the others; a tuple of dicts merges.
    out = functional_call(lin, ({"weight": new["weight"]}, {}), rand(4, 3))
    close(out, lin.bias.detach().expand(4, 2))
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'bias'"):
        functional_call(lin, {"weight": new["weight"]}, (rand(1, 3),), strict=True)
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'nope'"):
        functional_call(lin, {**new, "nope": new["bias"]}, (rand(1, 3),), strict=True)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(lin, (new, new), (rand(1, 3),))

    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    w = m.lin.weight
    with pytest.raises(ValueError, match="boom"):
        functional_call(m, {"lin.weight": fg.zeros(2, 3)}, (rand(1, 3),))
    assert m.lin.weight is w


def test_functional_call_buffers_and_kwargs():
    bn = nn.BatchNorm1d(3).double().eval()
    out = functional_call(
        bn,
        {"running_mean": fg.ones(3, dtype=fg.float64), "running_var": fg.ones(3, dtype=fg.float64)},
        args=(),
        kwargs={"input": fg.ones(2, 3, dtype=fg.float64)},
    )
    close(out, fg.zeros(2, 3, dtype=fg.float64), tol=1e-4)


def test_vjp_and_chunked_jacrev_under_vmap():
    xs, us = rand(4, 3), rand(4, 3)

    def vjp_of(x, u):
        _, fn = vjp(lambda t: t.sin() * t.sum(), x)
        return fn(u)[0]

    per = vmap(vjp_of)(xs, us)
    for i in range(4):
        close(per[i], vjp_of(xs[i], us[i]))
    f = lambda t: (t.unsqueeze(1) * t).tanh()  # noqa: E731
    j = vmap(jacrev(f, chunk_size=4))(xs)
    assert j.shape == (4, 3, 3, 3)
    for i in range(4):
        close(j[i], jacrev(f)(xs[i]))


def test_vjp_fn_under_a_new_vmap_is_refused():
    _, fn = vjp(lambda t: t * 2, rand(3))
    with pytest.raises(RuntimeError, match="different vmap/jacrev level"):
        vmap(fn)(rand(5, 3))


def test_inplace_ops_on_batched_values():
    x = rand(4, 3)

    def f(t):
        u = t.clone()
        u.mul_(2)
        u += fg.ones(3, dtype=fg.float64)
        u[0] = 5.0
        u[1:] = t[1:] * 0
        return u

    out = vmap(f)(x)
    ref = fg.stack([f(x[i]) for i in range(4)])
    close(out, ref)


def test_per_sample_gradients_stay_differentiable_for_parameters_that_require_grad():
    w = rand(3, 4).requires_grad_()
    b = rand(3).requires_grad_()
    x = rand(5, 4)

    def loss(p, xb):
        return (F.linear(xb, p[0], p[1]) ** 2).sum()

    gw, gb = vmap(grad(loss), in_dims=(None, 0))((w, b), x)
    ((gw**2).sum() + gb.sum()).backward()
    w2, b2 = w.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    total = 0
    for i in range(5):
        g = grad(loss)((w2, b2), x[i])
        total = total + (g[0] ** 2).sum() + g[1].sum()
    total.backward()
    close(w.grad, w2.grad)
    close(b.grad, b2.grad)
