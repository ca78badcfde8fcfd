"""``ferrograd.func``'s forward-mode transforms (``jvp``, ``linearize``,
``jacfwd``, ``hessian``) and their compositions, against closed forms, the
reverse-mode transforms and loops over samples."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
from ferrograd.func import grad, hessian, jacfwd, jacrev, jvp, linearize, vmap


def test_forward_mode_is_used_when_available():
    # jacfwd/jvp run on forward_ad dual tensors when the build has forward mode
    # (they fall back to reverse mode otherwise, with the same results).
    try:
        from ferrograd.autograd import forward_ad
    except ImportError:
        pytest.skip("this build has no ferrograd.autograd.forward_ad")
    seen = []
    real = forward_ad.make_dual

    def spy(t, tangent, **kw):
        seen.append(tuple(tangent.shape))
        return real(t, tangent, **kw)

    forward_ad.make_dual = spy
    try:
        jacfwd(lambda t: t.sin())(fg.ones(3, dtype=fg.float64))
    finally:
        forward_ad.make_dual = real
    assert seen == [(3, 3)]


def rand(*shape):
    return fg.randn(*shape, dtype=fg.float64)


def close(a, b, tol=1e-9):
    assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


@given(n=st.integers(1, 6))
@settings(max_examples=10)
def test_jvp_closed_forms(n):
    x, v = rand(n), rand(n)
    out, t = jvp(lambda a: a.sin() * a, (x,), (v,))
    close(out, x.sin() * x)
    close(t, (x.cos() * x + x.sin()) * v)
    a = rand(n, n)
    close(jvp(lambda u: u @ a @ u, (x,), (v,))[1], ((a + a.T) @ x) @ v)
    s = x.softmax(0)
    close(jvp(lambda u: u.softmax(0), (x,), (v,))[1], s * v - s * (s @ v))


def test_jvp_structures_and_aux():
    x, y = rand(3), rand(3)
    (o1, o2), (t1, t2) = jvp(
        lambda a, b: (a * b, a.sum()), (x, y), (fg.ones(3, dtype=fg.float64), y)
    )
    close(t1, y + x * y)
    close(t2, fg.tensor(3.0, dtype=fg.float64))
    out, t, aux = jvp(lambda a: (a * 2, a.sum()), (x,), (y,), has_aux=True)
    close(t, 2 * y)
    close(aux, x.sum())


def test_linearize():
    x = rand(4)
    out, fn = linearize(lambda a: a.exp().sum() * a, x)
    close(out, x.exp().sum() * x)
    v = rand(4)
    close(fn(v), jvp(lambda a: a.exp().sum() * a, (x,), (v,))[1])


@given(n=st.integers(1, 5), m=st.integers(1, 4))
@settings(max_examples=10)
def test_jacfwd_matches_jacrev(n, m):
    w = rand(m, n)
    x = rand(n)

    def f(t):
        return (w @ t).tanh() * 2 + (w @ t.sin())

    close(jacfwd(f)(x), jacrev(f)(x))
    s = x.softmax(0)
    np.testing.assert_allclose(
        jacfwd(lambda t: t.softmax(0))(x).numpy(), np.diag(s.numpy()) - np.outer(s, s), atol=1e-12
    )


def test_jacfwd_argnums_and_aux():
    x, y = rand(2, 3), rand(3)
    jx, jy = jacfwd(lambda p, q: p @ q, argnums=(0, 1))(x, y)
    kx, ky = jacrev(lambda p, q: p @ q, argnums=(0, 1))(x, y)
    close(jx, kx)
    close(jy, ky)
    j, aux = jacfwd(lambda t: (t * 3, t.sum()), has_aux=True)(y)
    close(j, 3 * fg.eye(3, dtype=fg.float64))
    close(aux, y.sum())


@given(n=st.integers(1, 5))
@settings(max_examples=10)
def test_hessian_closed_forms(n):
    a = rand(n, n)
    x = rand(n)
    close(hessian(lambda t: t @ a @ t)(x), a + a.T)
    close(
        hessian(lambda t: (t.sin() * t).sum())(x),
        fg.eye(n, dtype=fg.float64) * (2 * x.cos() - x * x.sin()),
    )
    close(jacfwd(jacrev(lambda t: (t**3).sum()))(x), jacrev(jacrev(lambda t: (t**3).sum()))(x))


def test_vmap_of_forward_transforms_against_loops():
    xs, vs = rand(5, 3), rand(5, 3)
    f = lambda t: (t.exp() * t.sum()).tanh()  # noqa: E731
    t = vmap(lambda a, b: jvp(f, (a,), (b,))[1])(xs, vs)
    close(t, fg.stack([jvp(f, (xs[i],), (vs[i],))[1] for i in range(5)]))
    j = vmap(jacfwd(f))(xs)
    close(j, fg.stack([jacrev(f)(xs[i]) for i in range(5)]))
    h = vmap(hessian(lambda u: (u.sin() * u).sum()))(xs)
    close(h, fg.stack([fg.eye(3, dtype=fg.float64) * (2 * x.cos() - x * x.sin()) for x in xs]))
    g = jacfwd(lambda u: vmap(grad(lambda r: (r**3).sum()))(u))(xs[:2])
    assert g.shape == (2, 3, 2, 3)
