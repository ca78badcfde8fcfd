"""``ferrograd.autograd.forward_ad``: the API, PyTorch's errors, levels,
grad modes, custom Functions, views and in-place ops on dual tensors, and
the compositions with reverse mode (closed forms in float64)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.autograd.forward_ad as fwAD
from helpers import shapes


def t64(a):
    return fg.tensor(np.asarray(a, dtype=np.float64), dtype=fg.float64)


def close(t, expected, tol=1e-10):
    np.testing.assert_allclose(t.detach().numpy(), np.asarray(expected), rtol=tol, atol=tol)


X = [0.5, -1.2, 2.0]
V = [1.0, 0.5, -2.0]


# -- API -------------------------------------------------------------------------------


def test_make_dual_and_unpack_dual():
    x, v = t64(X), t64(V)
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, v)
        out = fwAD.unpack_dual(d)
        assert isinstance(out, fwAD.UnpackedDualTensor)
        assert out.primal is out[0] and out.tangent is out[1]
        close(out.primal, X)
        close(out.tangent, V)
        # The dual shares the primal's memory.
        assert d.data_ptr() == x.data_ptr()
        # A tensor without a tangent unpacks to (itself, None).
        p, t = fwAD.unpack_dual(x)
        assert p is x and t is None
        # The unpacked primal carries no tangent.
        assert fwAD.unpack_dual(out.primal).tangent is None
    # Exiting the level drops every tangent.
    assert fwAD.unpack_dual(d).tangent is None
    assert fwAD.unpack_dual(d, level=0).tangent is None


def test_enter_and_exit_by_hand():
    level = fwAD.enter_dual_level()
    try:
        d = fwAD.make_dual(t64(X), t64(V))
        close(fwAD.unpack_dual(d.exp()).tangent, np.exp(X) * np.array(V))
    finally:
        fwAD.exit_dual_level(level=level)
    assert fwAD.unpack_dual(d).tangent is None
    # A level can be entered again afterwards.
    with fwAD.dual_level():
        d = fwAD.make_dual(t64(X), t64(V))
        assert fwAD.unpack_dual(d).tangent is not None


def test_make_dual_outside_a_level():
    with pytest.raises(RuntimeError, match="Trying to create a dual Tensor for forward AD but no level "
                       "exists, make sure to enter_dual_level\\(\\) first."):
        fwAD.make_dual(t64(X), t64(V))


def test_tangent_of_another_size():
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=r"Trying to set a forward gradient that has a different size "
                           r"than that of the original Tensor, this is not supported. Tensor is of size "
                           r"\[3\] while the given forward gradient is of size \[2\]."):
            fwAD.make_dual(t64(X), t64([1.0, 2.0]))


def test_tangent_of_another_dtype_or_not_float():
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Expected tangent to have the same dtype as primal"):
            fwAD.make_dual(t64(X), fg.tensor(V, dtype=fg.float32))
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex, but got: "):
            fwAD.make_dual(fg.tensor([1, 2, 3]), t64(V))
        with pytest.raises(ValueError, match="Expected tangent to be floating point or complex, but got: "):
            fwAD.make_dual(t64(X), fg.tensor([1, 2, 3]))


def test_make_dual_of_a_dual():
    with fwAD.dual_level():
        d = fwAD.make_dual(t64(X), t64(V))
        with pytest.raises(RuntimeError, match="Making a dual Tensor based on a Tensor that already has a "
                           "forward gradient at the same level 0 is not supported."):
            fwAD.make_dual(d, t64(V))


def test_nested_levels_are_refused():
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported at the moment"):
            fwAD.enter_dual_level()
        # The open level is intact.
        d = fwAD.make_dual(t64(X), t64(V))
        assert fwAD.unpack_dual(d * 2).tangent is not None


def test_exit_of_a_level_that_is_not_the_last():
    with pytest.raises(RuntimeError, match="Trying to exit a forward AD level that was not the last one "
                       "that was created. This is not supported."):
        fwAD.exit_dual_level()
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="was not the last one"):
            fwAD.exit_dual_level(level=1)


def test_integer_outputs_have_no_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(t64(X), t64(V))
        assert fwAD.unpack_dual(d.argmax()).tangent is None
        assert fwAD.unpack_dual(d > 0).tangent is None
        values, idx = d.max(0)
        assert fwAD.unpack_dual(values).tangent is not None
        assert fwAD.unpack_dual(idx).tangent is None


# -- grad modes ------------------------------------------------------------------------------


def test_no_grad_does_not_switch_forward_ad_off():
    with fwAD.dual_level():
        d = fwAD.make_dual(t64(X), t64(V))
        with fg.no_grad():
            y = d.sin() * 3
        close(fwAD.unpack_dual(y).tangent, 3 * np.cos(X) * np.array(V))
        with fg.inference_mode():
            y = d * d
        close(fwAD.unpack_dual(y).tangent, 2 * np.array(X) * np.array(V))


def test_tangents_do_not_require_grad_when_nothing_does():
    with fwAD.dual_level():
        d = fwAD.make_dual(t64(X), t64(V))
        for y in (d.tanh(), d.exp(), d.sigmoid(), d.cumsum(0), d @ d):
            t = fwAD.unpack_dual(y).tangent
            assert not t.requires_grad and t.grad_fn is None


# -- compositions with reverse mode -------------------------------------------------------


@settings(max_examples=max(5, settings.default.max_examples // 2))
@given(shape=shapes(min_dims=1, max_dims=2, max_side=4), seed=st.integers(0, 2**32 - 1))
def test_forward_over_reverse_hessian_vector_product(shape, seed):
    # f = sum(sin(x) * x): H = diag(2 cos x - x sin x).
    rng = np.random.default_rng(seed)
    x0, v0 = rng.uniform(-2, 2, shape), rng.standard_normal(shape)
    x = t64(x0).requires_grad_()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t64(v0))
        (g,) = fg.autograd.grad((d.sin() * d).sum(), d, create_graph=True)
        close(g, np.cos(x0) * x0 + np.sin(x0))
        hvp = fwAD.unpack_dual(g).tangent
    assert hvp is not None
    close(hvp, (2 * np.cos(x0) - x0 * np.sin(x0)) * v0)


def test_forward_over_reverse_through_saved_outputs():
    # tanh saves its output: the backward must see the output's tangent.
    # d/dx (1 - tanh(x)^2) = -2 tanh(x) (1 - tanh(x)^2).
    x0 = np.array(X)
    x = t64(x0).requires_grad_()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t64(V))
        (g,) = fg.autograd.grad(d.tanh().sum(), d, create_graph=True)
        hvp = fwAD.unpack_dual(g).tangent
    th = np.tanh(x0)
    close(hvp, -2 * th * (1 - th**2) * np.array(V))


def test_reverse_over_forward():
    # The tangent of y = x^3 is 3 x^2 v; its gradient w.r.t. x is 6 x v.
    x = t64(X).requires_grad_()
    v = t64(V)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        t = fwAD.unpack_dual((d * d * d).sum()).tangent
        close(t, (3 * np.array(X) ** 2 * np.array(V)).sum())
        (gx,) = fg.autograd.grad(t, x)
    close(gx, 6 * np.array(X) * np.array(V))


def test_tangent_that_requires_grad():
    # The JVP is linear in the tangent: its gradient w.r.t. v is J^T 1.
    x = t64(X)
    v = t64(V).requires_grad_()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        t = fwAD.unpack_dual(d.sin().sum() + (d @ d)).tangent
        (gv,) = fg.autograd.grad(t, v)
    close(gv, np.cos(X) + 2 * np.array(X))


def test_reverse_mode_still_works_on_duals():
    x = t64(X).requires_grad_()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t64(V))
        (d.exp() * 2).sum().backward()
    close(x.grad, 2 * np.exp(X))


# -- custom Functions --------------------------------------------------------------------


class Cube(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.scale = scale
        return x**3 * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x**2 * ctx.scale, None

    @staticmethod
    def jvp(ctx, t, _scale_t):
        (x,) = ctx.saved_tensors
        assert _scale_t is None
        return t * 3 * x**2 * ctx.scale


def test_custom_function_jvp():
    with fwAD.dual_level():
        d = fwAD.make_dual(t64(X), t64(V))
        y = Cube.apply(d, 2.0)
        close(fwAD.unpack_dual(y).primal, 2 * np.array(X) ** 3)
        close(fwAD.unpack_dual(y).tangent, 6 * np.array(X) ** 2 * np.array(V))
        # With reverse mode too.
        x = t64(X).requires_grad_()
        d = fwAD.make_dual(x, t64(V))
        y = Cube.apply(d, 1.0)
        close(fwAD.unpack_dual(y).tangent, 3 * np.array(X) ** 2 * np.array(V))
        y.sum().backward()
    close(x.grad, 3 * np.array(X) ** 2)


def test_custom_function_without_jvp():
    class NoJvp(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with fwAD.dual_level():
        d = fwAD.make_dual(t64(X), t64(V))
        with pytest.raises(NotImplementedError, match="You must implement the jvp function for custom "
                           "autograd.Function to use it with forward mode AD."):
            NoJvp.apply(d)
        # Without tangents it runs as before.
        close(NoJvp.apply(t64(X)), 2 * np.array(X))


def test_custom_function_forward_sees_no_tangents():
    seen = []

    class Peek(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(fwAD.unpack_dual(x * 1).tangent)
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def jvp(ctx, t):
            return t

    with fwAD.dual_level():
        d = fwAD.make_dual(t64(X), t64(V))
        close(fwAD.unpack_dual(Peek.apply(d)).tangent, V)
    assert seen == [None]


# -- views and in-place ops ----------------------------------------------------------------


def test_views_alias_the_tangent():
    x0 = np.arange(6.0).reshape(2, 3)
    v0 = np.arange(6.0).reshape(2, 3) * 10
    with fwAD.dual_level():
        d = fwAD.make_dual(t64(x0), t64(v0))
        close(fwAD.unpack_dual(d[1]).tangent, v0[1])
        close(fwAD.unpack_dual(d.t()).tangent, v0.T)
        close(fwAD.unpack_dual(d[:, ::2]).tangent, v0[:, ::2])
        close(fwAD.unpack_dual(d.view(3, 2)).tangent, v0.reshape(3, 2))
        close(fwAD.unpack_dual(d.unsqueeze(0).expand(2, 2, 3)).tangent, np.broadcast_to(v0, (2, 2, 3)))
        parts = d.split(1, 1)
        close(fwAD.unpack_dual(parts[2]).tangent, v0[:, 2:])


def test_inplace_on_a_dual():
    with fwAD.dual_level():
        d = fwAD.make_dual(t64(X), t64(V))
        y = d * 1
        y.mul_(y)
        close(fwAD.unpack_dual(y).tangent, 2 * np.array(X) * np.array(V))
        y.exp_()
        close(fwAD.unpack_dual(y).tangent, np.exp(np.array(X) ** 2) * 2 * np.array(X) * np.array(V))
        y.zero_()
        close(fwAD.unpack_dual(y).tangent, np.zeros(3))


def test_inplace_writes_a_dual_into_a_plain_tensor():
    with fwAD.dual_level():
        d = fwAD.make_dual(t64(X), t64(V))
        base = fg.zeros(2, 3, dtype=fg.float64)
        base[1] = d
        close(fwAD.unpack_dual(base).tangent, [[0, 0, 0], V])
        plain = fg.ones(3, dtype=fg.float64)
        plain.add_(d)
        close(fwAD.unpack_dual(plain).tangent, V)
        plain.copy_(t64([1.0, 2.0, 3.0]))
        close(fwAD.unpack_dual(plain).tangent, np.zeros(3))


def test_inplace_through_a_view_updates_the_base_and_other_views():
    x0 = np.arange(6.0).reshape(2, 3)
    v0 = np.ones((2, 3))
    with fwAD.dual_level():
        d = fwAD.make_dual(t64(x0), t64(v0))
        y = d * 1
        row = y[1]
        col = y[:, 2]
        row.mul_(t64([1.0, 2.0, 3.0]))
        expected = v0.copy()
        expected[1] *= [1.0, 2.0, 3.0]
        close(fwAD.unpack_dual(y).tangent, expected)
        close(fwAD.unpack_dual(row).tangent, expected[1])
        close(fwAD.unpack_dual(col).tangent, expected[:, 2])
        # A write through a view of a tensor that had no tangent gives it one.
        plain = fg.zeros(2, 3, dtype=fg.float64)
        plain[:, 1:].add_(fwAD.make_dual(t64(np.ones((2, 2))), t64(np.full((2, 2), 5.0))))
        close(fwAD.unpack_dual(plain).tangent, [[0, 5, 5], [0, 5, 5]])


def test_optimizer_style_update_keeps_tangents_right():
    with fwAD.dual_level():
        p = fg.zeros(3, dtype=fg.float64)
        g = fwAD.make_dual(t64(X), t64(V))
        with fg.no_grad():
            p -= 0.5 * g
        close(fwAD.unpack_dual(p).tangent, -0.5 * np.array(V))


# -- a small network ---------------------------------------------------------------------------


def test_jvp_of_a_small_network_against_the_jacobian():
    rng = np.random.default_rng(3)
    W, b, x0, v0 = (rng.standard_normal(s) for s in [(4, 3), (4,), (3,), (3,)])
    with fwAD.dual_level():
        d = fwAD.make_dual(t64(x0), t64(v0))
        y = fg.tanh(t64(W) @ d + t64(b))
        tangent = fwAD.unpack_dual(y).tangent
    J = (1 - np.tanh(W @ x0 + b) ** 2)[:, None] * W
    close(tangent, J @ v0)
