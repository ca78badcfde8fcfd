"""``fg.autograd.grad``: returned gradients, options, and higher-order derivatives."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from helpers import arrays, assert_tensor, floats, leaf, shapes

UNUSED = (
    "One of the differentiated Tensors appears to not have been used in the graph. "
    "Set allow_unused=True if this is the desired behavior."
)


def test_grad_returns_a_tuple_and_leaves_dot_grad_untouched():
    x = fg.tensor(2.0, requires_grad=True)
    y = fg.tensor(3.0, requires_grad=True)
    z = x * y
    gx = fg.autograd.grad(z, x, retain_graph=True)
    gy = fg.autograd.grad(z, y)
    assert isinstance(gx, tuple) and len(gx) == 1
    assert gx[0].item() == 3.0 and gy[0].item() == 2.0
    assert x.grad is None and y.grad is None
    x.grad = fg.tensor(10.0)
    fg.autograd.grad(x * y, [x, y])
    assert x.grad.item() == 10.0 and y.grad is None


def test_grad_of_several_outputs_and_inputs():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    w = fg.tensor([3.0, 4.0], requires_grad=True)
    gx, gw = fg.autograd.grad([(x * w).sum(), (3 * x).sum()], [x, w])
    assert gx.tolist() == [6.0, 7.0] and gw.tolist() == [1.0, 2.0]
    (g,) = fg.autograd.grad((x * x).sum(), (x,))
    assert g.tolist() == [2.0, 4.0]


def test_grad_outputs():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = fg.autograd.grad(x * x, x, grad_outputs=fg.tensor([1.0, 10.0]))
    assert g.tolist() == [2.0, 40.0]
    (g,) = fg.autograd.grad([x * x, x.sum()], x, grad_outputs=[fg.ones(2), None])
    assert g.tolist() == [3.0, 5.0]
    with pytest.raises(
        RuntimeError, match="grad can be implicitly created only for scalar outputs"
    ):
        fg.autograd.grad(x * x, x)


def test_grad_with_respect_to_intermediate_tensors():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    m = x * 3
    y = (m * m).sum()
    gm, gx = fg.autograd.grad(y, [m, x])
    assert gm.tolist() == [6.0, 12.0] and gx.tolist() == [18.0, 36.0]
    assert m.grad is None and x.grad is None


def test_grad_of_the_input_itself():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = fg.autograd.grad(x, x, fg.tensor([5.0, 6.0]))
    assert g.tolist() == [5.0, 6.0]
    (g,) = fg.autograd.grad(x.sum(), x)
    assert g.tolist() == [1.0, 1.0]


def test_unused_input():
    x = fg.tensor(2.0, requires_grad=True)
    y = fg.tensor([3.0, 4.0], requires_grad=True)
    z = x * x
    with pytest.raises(RuntimeError) as info:
        fg.autograd.grad(z, [x, y], retain_graph=True)
    assert str(info.value) == UNUSED
    gx, gy = fg.autograd.grad(z, [x, y], allow_unused=True, retain_graph=True)
    assert gx.item() == 4.0 and gy is None
    gx, gy = fg.autograd.grad(z, [x, y], materialize_grads=True)
    assert gx.item() == 4.0
    assert gy.tolist() == [0.0, 0.0] and gy.shape == y.shape and gy.dtype == y.dtype
    with pytest.raises(
        ValueError,
        match="Expected allow_unused to be True or not passed when materialize_grads=True",
    ):
        fg.autograd.grad(x * x, [x, y], materialize_grads=True, allow_unused=False)
    assert x.grad is None and y.grad is None


def test_input_that_does_not_require_grad():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="One of the differentiated Tensors does not require grad"
    ):
        fg.autograd.grad((x * x).sum(), fg.ones(2))


def test_output_that_does_not_require_grad():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"
    ):
        fg.autograd.grad(fg.ones(2).sum(), x)


def test_grad_frees_the_graph_unless_retained():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    fg.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        fg.autograd.grad(y, x)
    y = (x * x).sum()
    for _ in range(3):
        (g,) = fg.autograd.grad(y, x, retain_graph=True)
        assert g.tolist() == [2.0, 4.0]


def test_create_graph_retains_the_graph_by_default():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = (x**3).sum()
    (g,) = fg.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    (g_again,) = fg.autograd.grad(y, x)  # retain_graph defaulted to create_graph
    assert g_again.tolist() == [3.0, 12.0]
    assert not g_again.requires_grad


def test_gradients_without_create_graph_are_constants():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = fg.autograd.grad((x**3).sum(), x)
    assert not g.requires_grad and g.grad_fn is None and g.is_leaf


def test_is_grads_batched_runs_each_row():
    # Fuller coverage is in test_autograd_functional.py.
    x = fg.tensor([1.0], requires_grad=True)
    (g,) = fg.autograd.grad(x * 2, x, fg.tensor([[1.0], [3.0]]), is_grads_batched=True)
    assert g.tolist() == [[2.0], [6.0]]


# -- higher order --------------------------------------------------------------------------

# f, and its first three derivatives in closed form.
DERIVATIVES = {
    "cube": (lambda x: x**3, lambda a: 3 * a**2, lambda a: 6 * a, lambda a: 6 + 0 * a, (-3, 3)),
    "mul3": (
        lambda x: x * x * x,
        lambda a: 3 * a**2,
        lambda a: 6 * a,
        lambda a: 6 + 0 * a,
        (-3, 3),
    ),
    "sin": (fg.sin, np.cos, lambda a: -np.sin(a), lambda a: -np.cos(a), (-5, 5)),
    "cos": (fg.cos, lambda a: -np.sin(a), lambda a: -np.cos(a), np.sin, (-5, 5)),
    "exp": (fg.exp, np.exp, np.exp, np.exp, (-3, 3)),
    "log": (fg.log, lambda a: 1 / a, lambda a: -1 / a**2, lambda a: 2 / a**3, (0.2, 5)),
    "sqrt": (
        fg.sqrt,
        lambda a: 0.5 * a**-0.5,
        lambda a: -0.25 * a**-1.5,
        lambda a: 0.375 * a**-2.5,
        (0.2, 5),
    ),
    "recip": (
        lambda x: 1 / x,
        lambda a: -(a**-2),
        lambda a: 2 * a**-3,
        lambda a: -6 * a**-4,
        (0.3, 3),
    ),
    "tanh": (
        fg.tanh,
        lambda a: 1 - np.tanh(a) ** 2,
        lambda a: -2 * np.tanh(a) * (1 - np.tanh(a) ** 2),
        lambda a: (1 - np.tanh(a) ** 2) * (6 * np.tanh(a) ** 2 - 2),
        (-2, 2),
    ),
    "sigmoid": (
        fg.sigmoid,
        lambda a: (s := 1 / (1 + np.exp(-a))) * (1 - s),
        lambda a: (s := 1 / (1 + np.exp(-a))) * (1 - s) * (1 - 2 * s),
        lambda a: (s := 1 / (1 + np.exp(-a))) * (1 - s) * (1 - 6 * s + 6 * s**2),
        (-3, 3),
    ),
}


@pytest.mark.parametrize("name", list(DERIVATIVES))
@given(data=st.data())
def test_first_second_third_derivatives(name, data):
    f, d1, d2, d3, (lo, hi) = DERIVATIVES[name]
    a = data.draw(arrays(data.draw(shapes(min_dims=1, max_dims=2)), lo, hi))
    x = leaf(a)
    (g1,) = fg.autograd.grad(f(x).sum(), x, create_graph=True)
    assert_tensor(g1, d1(a), rtol=1e-9, atol=1e-9)
    assert g1.requires_grad
    (g2,) = fg.autograd.grad(g1.sum(), x, create_graph=True)
    assert_tensor(g2, d2(a), rtol=1e-9, atol=1e-9)
    (g3,) = fg.autograd.grad(g2.sum(), x, allow_unused=True, materialize_grads=True)
    assert_tensor(g3, d3(a), rtol=1e-9, atol=1e-9)
    assert x.grad is None


@given(floats(-3, 3), floats(-3, 3))
def test_mixed_partials(a, b):
    x = fg.tensor(a, dtype=fg.float64, requires_grad=True)
    y = fg.tensor(b, dtype=fg.float64, requires_grad=True)
    f = x * y**2 + (x * y).sin()
    gx, gy = fg.autograd.grad(f, [x, y], create_graph=True)
    assert gx.item() == pytest.approx(b**2 + b * math.cos(a * b), abs=1e-12)
    assert gy.item() == pytest.approx(2 * a * b + a * math.cos(a * b), abs=1e-12)
    (gxy,) = fg.autograd.grad(gx, y, retain_graph=True)
    (gyx,) = fg.autograd.grad(gy, x)
    expected = 2 * b + math.cos(a * b) - a * b * math.sin(a * b)
    assert gxy.item() == pytest.approx(expected, abs=1e-12)
    assert gyx.item() == pytest.approx(expected, abs=1e-12)


@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_hessian_vector_product_through_matmul(n, m, data):
    A = data.draw(arrays((n, m)))
    a = data.draw(arrays((m,)))
    v = data.draw(arrays((m,)))
    x = leaf(a)
    At = fg.tensor(A, dtype=fg.float64)
    r = At @ x
    f = (r * r).sum() / 2
    (g,) = fg.autograd.grad(f, x, create_graph=True)
    assert_tensor(g, A.T @ A @ a, rtol=1e-9, atol=1e-9)
    (hv,) = fg.autograd.grad(g, x, grad_outputs=fg.tensor(v, dtype=fg.float64))
    assert_tensor(hv, A.T @ A @ v, rtol=1e-9, atol=1e-9)


def test_second_derivative_through_backward_create_graph():
    x = fg.tensor([1.0, 2.0], dtype=fg.float64, requires_grad=True)
    (x**4).sum().backward(create_graph=True)
    first = x.grad
    assert first.tolist() == [4.0, 32.0]
    (g2,) = fg.autograd.grad(first.sum(), x)
    assert g2.tolist() == [12.0, 48.0]


@pytest.mark.parametrize("how", ["grad", "backward_inputs"])
def test_gradients_off_the_path_to_the_inputs_are_not_computed(how):
    # As in PyTorch's engine, a node computes only the input gradients that
    # lead to a requested input: `w * 2` never receives one, so a hook on it
    # does not fire, and the weight's side of `x * w2` is not formed at all.
    x = fg.randn(3, requires_grad=True)
    w = fg.randn(3, requires_grad=True)
    w2 = w * 2
    seen = []
    w2.register_hook(lambda g: seen.append(g))
    y = (x * w2).sum()
    if how == "grad":
        (gx,) = fg.autograd.grad(y, x)
    else:
        y.backward(inputs=[x])
        gx = x.grad
    assert_tensor(gx, w.detach().numpy() * 2)
    assert seen == [] and w.grad is None


def test_pruned_products_leave_higher_order_gradients_exact():
    # The Laplacian of sum(tanh(x @ a) @ b) through two nested `grad` calls
    # (each skips the weights' products), against its closed form.
    rng = np.random.default_rng(3)
    xn, an, bn = (rng.standard_normal(s) for s in [(5, 2), (2, 4), (4, 1)])
    x = fg.tensor(xn, requires_grad=True)
    a = fg.tensor(an, requires_grad=True)
    b = fg.tensor(bn, requires_grad=True)
    u = (x @ a).tanh() @ b
    (g,) = fg.autograd.grad(u.sum(), x, create_graph=True)
    lap = sum(fg.autograd.grad(g[:, d].sum(), x, create_graph=True)[0][:, d] for d in range(2))
    t = np.tanh(xn @ an)
    # d2/dx_d2 tanh(z) = -2 t (1 - t^2) a_d^2 for z = x @ a.
    want = ((-2 * t * (1 - t**2)) * (an**2).sum(0)) @ bn[:, 0]
    assert_tensor(lap, want, atol=1e-12)
    lap.sum().backward()
    assert a.grad is not None and b.grad is not None
