"""ferrograd.autograd.functional against closed forms, and autograd.grad(is_grads_batched=True)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
from ferrograd.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp

F64 = fg.float64


def t(a, requires_grad=False):
    return fg.tensor(np.asarray(a, dtype=np.float64), dtype=F64, requires_grad=requires_grad)


def npy(x):
    return np.array(x.detach().numpy())


def rand(shape, seed):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape)


VEC = [False, True]


# --- closed forms ---------------------------------------------------------------------


@pytest.mark.parametrize("vectorize", VEC)
@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 5), m=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_jacobian_of_linear_map_is_the_matrix(vectorize, n, m, seed):
    a = rand((m, n), seed)
    x = rand(n, seed + 1)
    jac = jacobian(lambda v: t(a) @ v, t(x), vectorize=vectorize)
    assert tuple(jac.shape) == (m, n)
    np.testing.assert_allclose(npy(jac), a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("vectorize", VEC)
@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_hessian_of_quadratic_form_is_a_plus_a_transpose(vectorize, n, seed):
    a = rand((n, n), seed)
    x = rand(n, seed + 1)
    h = hessian(lambda v: v @ (t(a) @ v), t(x), vectorize=vectorize)
    np.testing.assert_allclose(npy(h), a + a.T, rtol=1e-12, atol=1e-12)
    # The gradient of the same form is (A + A^T) x.
    g = jacobian(lambda v: v @ (t(a) @ v), t(x), vectorize=vectorize)
    np.testing.assert_allclose(npy(g), (a + a.T) @ x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("vectorize", VEC)
def test_hessian_of_sum_sin_x_times_x_is_diagonal(vectorize):
    x = rand((2, 3), 7) * 3
    h = hessian(lambda v: (fg.sin(v) * v).sum(), t(x), vectorize=vectorize)
    assert tuple(h.shape) == (2, 3, 2, 3)
    want = np.diag((2 * np.cos(x) - x * np.sin(x)).reshape(-1)).reshape(2, 3, 2, 3)
    np.testing.assert_allclose(npy(h), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("vectorize", VEC)
def test_softmax_jacobian_is_diag_s_minus_s_s_transpose(vectorize):
    x = rand(5, 3) * 2
    jac = jacobian(lambda v: fg.softmax(v, dim=0), t(x), vectorize=vectorize)
    s = np.exp(x) / np.exp(x).sum()
    np.testing.assert_allclose(npy(jac), np.diag(s) - np.outer(s, s), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("vectorize", VEC)
def test_multiple_inputs_and_outputs_nest_output_then_input(vectorize):
    x, y = rand(3, 1), rand(2, 2)

    def f(a, b):
        return a * 2, (a.sum() * b) ** 2

    jac = jacobian(f, (t(x), t(y)), vectorize=vectorize)
    assert isinstance(jac, tuple) and len(jac) == 2
    assert all(isinstance(row, tuple) and len(row) == 2 for row in jac)
    np.testing.assert_allclose(npy(jac[0][0]), 2 * np.eye(3))
    np.testing.assert_allclose(npy(jac[0][1]), np.zeros((3, 2)))
    s = x.sum()
    # d (s b)^2 / d a_k = 2 s b^2, d / d b_j = 2 s^2 b_j on the diagonal.
    np.testing.assert_allclose(npy(jac[1][0]), np.tile((2 * s * y**2)[:, None], (1, 3)))
    np.testing.assert_allclose(npy(jac[1][1]), np.diag(2 * s**2 * y))
    assert tuple(jac[1][1].shape) == (2, 2)


@pytest.mark.parametrize("vectorize", VEC)
def test_return_structure_follows_the_arguments(vectorize):
    x = t(rand(3, 2))
    one_in_tuple = jacobian(lambda a: a * 3, (x,), vectorize=vectorize)
    assert isinstance(one_in_tuple, tuple) and len(one_in_tuple) == 1
    assert isinstance(one_in_tuple[0], fg.Tensor)
    out_tuple = jacobian(lambda a: (a, a * 2), x, vectorize=vectorize)
    assert isinstance(out_tuple, tuple) and isinstance(out_tuple[1], fg.Tensor)
    h = hessian(lambda a, b: (a * b).sum(), (x, x), vectorize=vectorize)
    assert isinstance(h, tuple) and isinstance(h[0], tuple)
    np.testing.assert_allclose(npy(h[0][1]), np.eye(3))
    np.testing.assert_allclose(npy(h[0][0]), np.zeros((3, 3)))


def test_scalar_input_and_output_shapes():
    x = t(0.7)
    assert tuple(jacobian(lambda a: a**3, x).shape) == ()
    np.testing.assert_allclose(npy(jacobian(lambda a: a**3, x)), 3 * 0.49)
    np.testing.assert_allclose(npy(hessian(lambda a: a**3, x)), 6 * 0.7)
    out, g = vjp(lambda a: a**3, x)
    np.testing.assert_allclose(npy(g), 3 * 0.49)
    out, d = jvp(lambda a: a**3, x)
    np.testing.assert_allclose(npy(d), 3 * 0.49)


def test_vjp_jvp_vhp_hvp_closed_forms():
    a = rand((3, 3), 11)
    x, v = rand(3, 12), rand(3, 13)
    f = lambda z: t(a) @ z  # noqa: E731
    out, g = vjp(f, t(x), t(v))
    np.testing.assert_allclose(npy(out), a @ x)
    np.testing.assert_allclose(npy(g), v @ a)
    out, d = jvp(f, t(x), t(v))
    np.testing.assert_allclose(npy(d), a @ v)

    def cubic(z):
        return (z**3).sum() + z @ (t(a) @ z)

    h = np.diag(6 * x) + a + a.T
    out, r = vhp(cubic, t(x), t(v))
    np.testing.assert_allclose(npy(r), v @ h)
    np.testing.assert_allclose(npy(out), (x**3).sum() + x @ a @ x)
    out, r = hvp(cubic, t(x), t(v))
    np.testing.assert_allclose(npy(r), h @ v)


def test_vjp_with_tuples_and_unused_input_gives_zeros():
    x, y = t(rand(2, 1)), t(rand(2, 2))
    out, (gx, gy) = vjp(lambda a, b: (a * 2).sum(), (x, y))
    np.testing.assert_allclose(npy(gx), [2.0, 2.0])
    np.testing.assert_allclose(npy(gy), [0.0, 0.0])
    (o1, o2), g = jvp(lambda a: (a, a * 3), x, t([1.0, 0.0]))
    np.testing.assert_allclose(npy(g[1]), [3.0, 0.0])


def test_results_have_no_graph_unless_create_graph():
    x = t(rand(3, 3), requires_grad=True)
    out, g = vjp(lambda a: (a**3).sum(), x)
    assert not out.requires_grad and not g.requires_grad
    assert not jacobian(lambda a: a**3, x).requires_grad
    assert x.grad is None


@pytest.mark.parametrize("vectorize", VEC)
def test_create_graph_results_are_differentiable(vectorize):
    x = t(rand(3, 4), requires_grad=True)
    jac = jacobian(lambda a: a**3, x, create_graph=True, vectorize=vectorize)
    assert jac.requires_grad
    # trace(J) = sum 3 x^2, so its gradient is 6 x.
    (g,) = fg.autograd.grad(fg.diagonal(jac).sum(), x)
    np.testing.assert_allclose(npy(g), 6 * npy(x))
    h = hessian(lambda a: (a**4).sum(), x, create_graph=True, vectorize=vectorize)
    (g,) = fg.autograd.grad(h.sum(), x)
    np.testing.assert_allclose(npy(g), 24 * npy(x))
    _, r = hvp(lambda a: (a**4).sum(), x, t(np.ones(3)), create_graph=True)
    (g,) = fg.autograd.grad(r.sum(), x)
    np.testing.assert_allclose(npy(g), 24 * npy(x))


def test_works_inside_no_grad():
    x = t(rand(2, 5))
    with fg.no_grad():
        np.testing.assert_allclose(npy(jacobian(lambda a: a * 2, x)), 2 * np.eye(2))
        _, r = hvp(lambda a: (a**3).sum(), x, t(np.ones(2)))
    np.testing.assert_allclose(npy(r), 6 * npy(x))


# --- strict mode and input checks ---------------------------------------------------------


def test_strict_independent_input_errors():
    x, y = t(rand(2, 1)), t(rand(2, 2))
    msg = "The output of the user-provided function is independent of input 1. This is not allowed in strict mode."
    with pytest.raises(RuntimeError, match=msg):
        vjp(lambda a, b: (a * 2).sum(), (x, y), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1"):
        jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients"):
        vjp(lambda a: t([1.0, 2.0]), x, t([1.0, 1.0]), strict=True)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0 is independent"):
        hessian(lambda a: (a * 2).sum(), x, strict=True)
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"):
        jacobian(lambda a: a * 2, x, strict=True, vectorize=True)
    # Not strict: the mathematically right zeros.
    np.testing.assert_allclose(npy(hessian(lambda a: (a * 2).sum(), x)), np.zeros((2, 2)))


def test_input_checks_use_pytorch_messages():
    x = t(rand(2, 1))
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor or a tuple of Tensors but the given inputs has type <class 'list'>"):
        jacobian(lambda a: a, [x])
    with pytest.raises(TypeError, match="but the value at index 1 has type <class 'float'>"):
        vjp(lambda a, b: a, (x, 1.0))
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to vjp"):
        vjp(lambda a: 1.0, x)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the user-provided function returns a single Tensor with a single element."):
        vjp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the input to the user-provided function"):
        jvp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be ferrograd.Size\(\[2\]\) but got ferrograd.Size\(\[3\]\)"):
        vjp(lambda a: a * 2, x, t(np.ones(3)))
    with pytest.raises(RuntimeError, match=r"Entry 1 in v has invalid size"):
        jvp(lambda a, b: a * b, (x, x), (t(np.ones(2)), t(np.ones(3))))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but got 1"):
        jvp(lambda a, b: a * b, (x, x), (t(np.ones(2)),))
    with pytest.raises(RuntimeError, match="The function given to hessian should return a single Tensor"):
        hessian(lambda a: (a.sum(), a.sum()), x)
    with pytest.raises(RuntimeError, match="should contain a single element"):
        hvp(lambda a: a * 2, x, t(np.ones(2)))
    with pytest.raises(ValueError, match='Expected strategy to be either "forward-mode" or "reverse-mode"'):
        jacobian(lambda a: a, x, strategy="sideways")
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        jacobian(lambda a: a, x, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="`create_graph=True` and `strategy=\"forward-mode\"`"):
        jacobian(lambda a: a, x, strategy="forward-mode", vectorize=True, create_graph=True)


def test_forward_mode_strategy_matches_closed_forms():
    a = rand((3, 3), 31)
    x = t(rand(3, 32))
    j = jacobian(lambda v: t(a) @ v, x, strategy="forward-mode", vectorize=True)
    np.testing.assert_allclose(j.numpy(), a, rtol=1e-12)
    jl, js = jacobian(lambda v: (t(a) @ v, v.sin()), x, strategy="forward-mode", vectorize=True)
    np.testing.assert_allclose(js.numpy(), np.diag(np.cos(x.numpy())), rtol=1e-12)
    j2 = jacobian(lambda v, w: (v * w).sum(), (x, x * 2), strategy="forward-mode", vectorize=True)
    np.testing.assert_allclose(j2[0].numpy(), 2 * x.numpy(), rtol=1e-12)
    np.testing.assert_allclose(j2[1].numpy(), x.numpy(), rtol=1e-12)
    # forward-over-reverse Hessian of sum(sin(x) * x): diag(2 cos x - x sin x)
    h = hessian(lambda v: (v.sin() * v).sum(), x, vectorize=True, outer_jacobian_strategy="forward-mode")
    xv = x.numpy()
    np.testing.assert_allclose(h.numpy(), np.diag(2 * np.cos(xv) - xv * np.sin(xv)), atol=1e-12)


# --- is_grads_batched ---------------------------------------------------------------------


def test_is_grads_batched_matches_one_call_per_row():
    w = t(rand((4, 3), 21))
    x = t(rand(3, 22), requires_grad=True)
    y = fg.tanh(w @ x)
    v = t(rand((5, 4), 23))
    (batched,) = fg.autograd.grad(y, x, v, retain_graph=True, is_grads_batched=True)
    assert tuple(batched.shape) == (5, 3)
    rows = [npy(fg.autograd.grad(y, x, v[i], retain_graph=True)[0]) for i in range(5)]
    np.testing.assert_allclose(npy(batched), np.stack(rows), rtol=1e-14)
    # The graph was kept for every row but freed after the last one.
    fg.autograd.grad(y, x, v, is_grads_batched=True)
    with pytest.raises(RuntimeError, match="a second time"):
        fg.autograd.grad(y, x, v[0])


def test_is_grads_batched_checks_shapes_and_unused():
    x = t(rand(3, 1), requires_grad=True)
    z = t(rand(2, 2), requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=r"we interpret the first dimension of each grad_output as the batch dimension.*grad_output\[0\] has a shape of \[4, 2\] and output\[0\] has a shape of \[3\]"):
        fg.autograd.grad(y, x, t(np.ones((4, 2))), is_grads_batched=True)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        fg.autograd.grad(y, (x, z), t(np.ones((2, 3))), retain_graph=True, is_grads_batched=True)
    gx, gz = fg.autograd.grad(y, (x, z), t(np.ones((2, 3))), retain_graph=True,
                              is_grads_batched=True, allow_unused=True)
    assert gz is None
    np.testing.assert_allclose(npy(gx), 2 * np.ones((2, 3)))
    _, gz = fg.autograd.grad(y, (x, z), t(np.ones((2, 3))), retain_graph=True,
                             is_grads_batched=True, materialize_grads=True)
    assert tuple(gz.shape) == (2, 2)
    (g0,) = fg.autograd.grad(y, x, t(np.ones((0, 3))), retain_graph=True, is_grads_batched=True)
    assert tuple(g0.shape) == (0, 3)
    with pytest.raises(RuntimeError, match="needs a batched tensor"):
        fg.autograd.grad(y, x, is_grads_batched=True)


def test_is_grads_batched_with_create_graph_is_differentiable():
    x = t(rand(3, 31), requires_grad=True)
    y = x**3
    (g,) = fg.autograd.grad(y, x, t(np.eye(3)), create_graph=True, is_grads_batched=True)
    np.testing.assert_allclose(npy(g), np.diag(3 * npy(x) ** 2))
    (gg,) = fg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(npy(gg), 6 * npy(x))


# --- the batched engine against one backward per row --------------------------------------


class _Cube(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * g * x * x


def _graphs(w, m):
    """(name, fn of (x, y) returning outputs): each exercises a kind of node."""
    return [
        ("tanh_mv", lambda x, y: fg.tanh(w @ x)),
        ("mv_both", lambda x, y: (m @ x) * 2),
        ("mm_both", lambda x, y: fg.sigmoid(y @ m.t() @ y.t()).sum(0)),
        ("broadcast_mul", lambda x, y: y * x),
        ("reshape_sum", lambda x, y: (y.reshape(-1) * 3).exp().sum() * x),
        ("custom_function", lambda x, y: _Cube.apply(x) + y.sum()),
        ("softmax_rows", lambda x, y: fg.softmax(y, dim=1)),
        ("two_outputs", lambda x, y: (x.sin(), (y * y).t())),
        ("transpose_view", lambda x, y: y.t().reshape(-1)[:3] * x),
        ("expand_scalar_broadcast", lambda x, y: x.expand(2, 3) * y + x.sum() * y - 1.5 / y),
        ("where_clamp", lambda x, y: fg.where(y > 0, y.clamp(-0.5, 0.5), x * x)),
    ]


@pytest.mark.parametrize("name", [g[0] for g in _graphs(None, None)])
@pytest.mark.parametrize("dtype", [fg.float64, fg.float32], ids=["f64", "f32"])
def test_batched_engine_matches_one_backward_per_row(name, dtype):
    rng = np.random.default_rng(5)
    w = fg.tensor(rng.standard_normal((4, 3)), dtype=dtype)
    m = fg.tensor(rng.standard_normal((3, 3)), dtype=dtype, requires_grad=True)
    x = fg.tensor(rng.standard_normal(3), dtype=dtype, requires_grad=True)
    y = fg.tensor(rng.standard_normal((2, 3)), dtype=dtype, requires_grad=True)
    fn = dict(_graphs(w, m))[name]
    outs = fn(x, y)
    outs = outs if isinstance(outs, tuple) else (outs,)
    batch = 4
    cots = tuple(
        fg.tensor(rng.standard_normal((batch,) + tuple(o.shape)), dtype=dtype) for o in outs
    )
    targets = (x, y, m)
    got = fg.autograd.grad(outs, targets, cots, retain_graph=True, allow_unused=True,
                           is_grads_batched=True)
    for b in range(batch):
        want = fg.autograd.grad(outs, targets, tuple(c[b] for c in cots), retain_graph=True,
                                allow_unused=True)
        for g, r in zip(got, want):
            assert (g is None) == (r is None)
            if g is not None:
                assert g.dtype == r.dtype
                tol = 1e-12 if dtype == fg.float64 else 1e-5
                np.testing.assert_allclose(npy(g[b]), npy(r), rtol=tol, atol=tol)


def test_batched_engine_non_leaf_inputs_hooks_and_errors():
    x = t(rand(3, 41), requires_grad=True)
    h = x * 2
    out = h.exp()
    (g,) = fg.autograd.grad(out, h, t(np.eye(3)), retain_graph=True, is_grads_batched=True)
    np.testing.assert_allclose(npy(g), np.diag(np.exp(npy(h))))
    # A hook runs once per row, as with one backward per row.
    seen = []
    h.register_hook(lambda grad: seen.append(1))
    (g,) = fg.autograd.grad(out, x, t(np.eye(3)), retain_graph=True, is_grads_batched=True)
    assert len(seen) == 3
    np.testing.assert_allclose(npy(g), np.diag(2 * np.exp(npy(h))))
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        fg.autograd.grad(t([1.0]), x, t([[1.0]]), is_grads_batched=True)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        fg.autograd.grad(out, t([1.0]), t(np.eye(3)), is_grads_batched=True)
