"""``Tensor.backward`` / ``fg.autograd.backward`` and the autograd attributes of tensors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from helpers import arrays, assert_tensor, leaf, shapes

# -- requires_grad, is_leaf, grad ---------------------------------------------------------


def test_requires_grad_defaults_and_propagation():
    a = fg.ones(2)
    assert not a.requires_grad and a.is_leaf and a.grad_fn is None and a.grad is None
    x = fg.ones(2, requires_grad=True)
    y = x * a
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    z = a * 2
    assert not z.requires_grad and z.is_leaf and z.grad_fn is None


def test_requires_grad_setter_on_leaves():
    x = fg.ones(2)
    x.requires_grad = True
    assert x.requires_grad and x.is_leaf
    assert (x * 2).requires_grad
    x.requires_grad = False
    assert not x.requires_grad and not (x * 2).requires_grad


def test_requires_grad_false_on_non_leaf_raises():
    x = fg.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(
        RuntimeError, match="you can only change requires_grad flags of leaf variables."
    ):
        y.requires_grad = False
    assert y.requires_grad
    with pytest.raises(
        RuntimeError, match="you can only change requires_grad flags of leaf variables."
    ):
        y.requires_grad_(False)
    assert y.requires_grad
    # requires_grad_(True) on a non-leaf is allowed (a no-op), as in PyTorch.
    assert y.requires_grad_(True) is y
    assert y.requires_grad and not y.is_leaf


def test_requires_grad_setter_true_on_non_leaf_raises():
    x = fg.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError) as info:
        y.requires_grad = True
    assert str(info.value) == "you can only change requires_grad flags of leaf variables."


def test_requires_grad_on_integer_tensors_raises():
    t = fg.tensor([1, 2])
    with pytest.raises(RuntimeError, match="floating point"):
        t.requires_grad = True
    with pytest.raises(RuntimeError, match="floating point"):
        t.requires_grad_()
    assert not t.requires_grad
    t.requires_grad_(False)  # turning it off is fine


def test_requires_grad_():
    x = fg.ones(2)
    assert x.requires_grad_() is x
    assert x.requires_grad
    assert x.requires_grad_(False) is x and not x.requires_grad
    a = fg.randn(2, 2)
    a = (a * 3) / (a - 1)
    assert not a.requires_grad
    a.requires_grad_(True)
    assert a.requires_grad and a.is_leaf
    b = (a * a).sum()
    assert b.grad_fn.name() == "SumBackward0"


def test_grad_get_set_none():
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert x.grad is None
    x.grad = fg.ones(3)
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    (x * 2).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]  # accumulates into the assigned grad
    x.grad = None
    assert x.grad is None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_grad_setter_validates():
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        x.grad = fg.ones(2)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different type"):
        x.grad = fg.ones(3, dtype=fg.float64)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        x.grad = 3
    assert x.grad is None


def test_grad_zero_is_in_place():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    g = x.grad
    assert g.tolist() == [2.0, 4.0]
    assert g.zero_() is g
    assert x.grad.tolist() == [0.0, 0.0]  # zeroed the leaf's own .grad
    (x * x).sum().backward()
    assert g.tolist() == [2.0, 4.0]  # accumulated into the same memory
    assert not x.grad.requires_grad


def test_grad_is_the_same_python_object():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad is x.grad


# -- grad_fn -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda x, y: x * y, "MulBackward0"),
        (lambda x, y: x * 2, "MulBackward0"),
        (lambda x, y: x + y, "AddBackward0"),
        (lambda x, y: x + 2, "AddBackward0"),
        (lambda x, y: x - y, "SubBackward0"),
        (lambda x, y: x / y, "DivBackward0"),
        (lambda x, y: x.sum(), "SumBackward0"),
        (lambda x, y: x.sum(0), "SumBackward1"),
        (lambda x, y: x.mean(), "MeanBackward0"),
        (lambda x, y: x.mean(0), "MeanBackward1"),
        (lambda x, y: x**2, "PowBackward0"),
        (lambda x, y: x.pow(3), "PowBackward0"),
        (lambda x, y: x**y, "PowBackward1"),
        (lambda x, y: x @ y.t(), "MmBackward0"),
        (lambda x, y: fg.mm(x, y.t()), "MmBackward0"),
        (lambda x, y: x.view(6), "ViewBackward0"),
        (lambda x, y: x.reshape(3, 2), "ViewBackward0"),
        (lambda x, y: fg.nn.MSELoss()(x, y), "MseLossBackward0"),
        (lambda x, y: fg.nn.functional.mse_loss(x, y), "MseLossBackward0"),
        (lambda x, y: -x, "NegBackward0"),
        (lambda x, y: x.sin(), "SinBackward0"),
        (lambda x, y: x.cos(), "CosBackward0"),
        (lambda x, y: x.exp(), "ExpBackward0"),
        (lambda x, y: x.log(), "LogBackward0"),
        (lambda x, y: x.tanh(), "TanhBackward0"),
        (lambda x, y: x.sigmoid(), "SigmoidBackward0"),
        (lambda x, y: x.relu(), "ReluBackward0"),
        (lambda x, y: x.sqrt(), "SqrtBackward0"),
        (lambda x, y: x.abs(), "AbsBackward0"),
        (lambda x, y: x.t(), "TBackward0"),
        (lambda x, y: x.transpose(0, 1), "TransposeBackward0"),
        (lambda x, y: x.unsqueeze(0), "UnsqueezeBackward0"),
        (lambda x, y: x[None], "UnsqueezeBackward0"),
        (lambda x, y: x.unsqueeze(0).squeeze(0), "SqueezeBackward1"),
        (lambda x, y: x.unsqueeze(0).squeeze(), "SqueezeBackward0"),
        (lambda x, y: x.expand(4, 2, 3), "ExpandBackward0"),
        (lambda x, y: x.permute(1, 0), "PermuteBackward0"),
        (lambda x, y: x[0], "SelectBackward0"),
        (lambda x, y: x[0:1], "SliceBackward0"),
        (lambda x, y: x.clone(), "CloneBackward0"),
        (lambda x, y: x.double(), "ToCopyBackward0"),
        (lambda x, y: x[0] @ y[0], "DotBackward0"),
    ],
)
def test_grad_fn_names(make, name):
    x = fg.ones(2, 3, requires_grad=True)
    y = fg.full((2, 3), 2.0, requires_grad=True)
    out = make(x, y)
    assert out.grad_fn.name() == name
    assert repr(out.grad_fn).startswith(f"<{name} object at 0x")
    assert f"grad_fn=<{name}>" in repr(out)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda x: 2 - x, "RsubBackward1"),
        (lambda x: 2**x, "PowBackward2"),
        (lambda x: fg.pow(2, x), "PowBackward2"),
        (lambda x: fg.pow(x, 2), "PowBackward0"),
        # Tensor.__rtruediv__ is reciprocal() * other in PyTorch
        (lambda x: 2 / x, "MulBackward0"),
    ],
)
def test_grad_fn_names_with_scalar_on_the_left(make, name):
    x = fg.ones(2, requires_grad=True)
    assert make(x).grad_fn.name() == name


def test_t_of_a_vector_is_a_view():
    w = fg.tensor([1.0, 2.0], requires_grad=True)
    v = w.t()
    assert not v.is_leaf and v.grad_fn.name() == "TBackward0"


def test_next_functions():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    w = fg.tensor([3.0, 4.0], requires_grad=True)
    c = fg.tensor([5.0, 6.0])
    y = x * w
    acc_x, acc_w = (f for f, _ in y.grad_fn.next_functions)
    assert acc_x.name() == "AccumulateGrad" and acc_w.name() == "AccumulateGrad"
    assert acc_x.variable is x or acc_x.variable.tolist() == x.tolist()
    assert acc_x.next_functions == ()
    z = (y + c).sum()
    ((add_fn, idx),) = z.grad_fn.next_functions
    assert add_fn.name() == "AddBackward0" and idx == 0
    (mul_fn, _), (const, cidx) = add_fn.next_functions
    assert mul_fn.name() == "MulBackward0"
    assert const is None and cidx == 0  # constants have no edge
    # a Python scalar operand has no edge either
    assert (x * 2).grad_fn.next_functions[1] == (None, 0)
    assert x.grad_fn is None


def test_accumulate_grad_variable_is_the_leaf():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    acc = (x * 2).grad_fn.next_functions[0][0]
    assert acc.variable is x


# -- backward ----------------------------------------------------------------------------


def test_backward_accumulates():
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    (x * x).sum().backward()
    assert x.grad.tolist() == [4.0, 8.0, 12.0]
    (3 * x).sum().backward()
    assert x.grad.tolist() == [7.0, 11.0, 15.0]


def test_backward_gradient_argument():
    x = fg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    z = (2 * x).view(2, 2)
    v = fg.tensor([[1.0, 0.1], [0.01, 0.001]])
    z.backward(v)
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 0.2, 0.02, 0.002], rtol=1e-6)
    x.grad = None
    (2 * x).backward(gradient=fg.ones(4))
    assert x.grad.tolist() == [2.0] * 4
    # a scalar output accepts an explicit gradient too
    x.grad = None
    (x * x).sum().backward(fg.tensor(0.5))
    assert x.grad.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_backward_gradient_of_other_dtype_is_cast():
    x = fg.ones(2, 2, requires_grad=True)
    (x * 2).backward(fg.ones(2, 2, dtype=fg.float64))
    assert x.grad.dtype == fg.float32 and x.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_backward_through_shared_subexpressions():
    # y is used twice: its gradient is the sum of both paths.
    x = fg.tensor(3.0, requires_grad=True)
    y = x * x
    z = y * y + y  # x^4 + x^2 -> 4x^3 + 2x = 114
    z.backward()
    assert x.grad.item() == 114.0


@given(st.integers(1, 30))
def test_backward_through_a_diamond_lattice(n):
    # n layers of a = a + a: d/dx = 2**n
    x = fg.tensor(1.0, dtype=fg.float64, requires_grad=True)
    a = x
    for _ in range(n):
        b = a * 1.0
        a = a + b
    a.backward()
    assert x.grad.item() == 2.0**n


def test_retain_graph_allows_a_second_backward():
    n1 = fg.tensor(10.0, requires_grad=True)
    n2 = fg.pow(n1, 2)
    n2.backward(retain_graph=True)
    assert n1.grad.item() == 20.0
    n2.backward(retain_graph=True)
    assert n1.grad.item() == 40.0
    n1.grad.zero_()
    n2.backward()
    assert n1.grad.item() == 20.0


def test_backward_inputs_restricts_accumulation():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = fg.tensor([3.0, 4.0], requires_grad=True)
    (x * y).sum().backward(inputs=[y])
    assert x.grad is None and y.grad.tolist() == [1.0, 2.0]
    (x * y).sum().backward(inputs=x)
    assert x.grad.tolist() == [3.0, 4.0] and y.grad.tolist() == [1.0, 2.0]
    with pytest.raises(
        RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty."
    ):
        (x * y).sum().backward(inputs=[])


def test_backward_inputs_non_leaf():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    m = x * 2
    (m * m).sum().backward(inputs=[m])
    assert x.grad is None
    assert m.grad.tolist() == [4.0, 8.0]


def test_create_graph_in_backward():
    x = fg.tensor(2.0, requires_grad=True)
    (x**3).backward(create_graph=True)
    g = x.grad
    assert g.item() == 12.0 and g.requires_grad and g.grad_fn is not None
    x.grad = None
    g.backward()
    assert x.grad.item() == 12.0  # d(3x^2)/dx = 6x
    y = fg.tensor(2.0, requires_grad=True)
    (y**3).backward()
    assert not y.grad.requires_grad and y.grad.grad_fn is None


def test_autograd_backward_function():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = fg.tensor([3.0, 5.0], requires_grad=True)
    fg.autograd.backward([(x * y).sum(), x.sum()])
    assert x.grad.tolist() == [4.0, 6.0] and y.grad.tolist() == [1.0, 2.0]
    x.grad = y.grad = None
    fg.autograd.backward([x * 2, x * 3], grad_tensors=[fg.ones(2), fg.tensor([1.0, 10.0])])
    assert x.grad.tolist() == [5.0, 32.0]
    x.grad = None
    fg.autograd.backward((x * y).sum(), inputs=[x])
    assert x.grad.tolist() == [3.0, 5.0] and y.grad is None
    x.grad = None
    z = (x**2).sum()
    fg.autograd.backward(z, retain_graph=True)
    fg.autograd.backward(z)
    assert x.grad.tolist() == [4.0, 8.0]
    x.grad = None
    fg.autograd.backward(x**3, fg.ones(2), create_graph=True)
    assert x.grad.requires_grad and x.grad.tolist() == [3.0, 12.0]


def test_autograd_backward_shape_mismatch():
    x = fg.ones(2, 2, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=r"Mismatch in shape: grad_output\[1\] has a shape of \[3\] and output\[1\] has a shape of \[2, 2\].",
    ):
        fg.autograd.backward([x.sum(), x * 2], [fg.tensor(1.0), fg.ones(3)])
    assert x.grad is None


@given(shapes(min_dims=1), st.data())
def test_backward_of_elementwise_chain_matches_closed_form(shape, data):
    a = data.draw(arrays(shape, 0.5, 2.0))
    x = leaf(a)
    y = (x.sin() * x.exp() + x**2 / x.log().abs().add(1.0)).sum()
    y.backward()
    la = np.abs(np.log(a)) + 1.0
    dla = np.sign(np.log(a)) / a
    expected = np.cos(a) * np.exp(a) + np.sin(a) * np.exp(a) + (2 * a * la - a**2 * dla) / la**2
    assert_tensor(x.grad, expected, rtol=1e-9, atol=1e-9)


# -- retain_grad ----------------------------------------------------------------------------


def test_retain_grad():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert not y.retains_grad and not x.retains_grad
    y.retain_grad()
    assert y.retains_grad
    z = (y * y).sum()
    z.backward()
    assert y.grad.tolist() == [4.0, 8.0]
    assert x.grad.tolist() == [8.0, 16.0]
    x.retain_grad()  # a no-op on leaves
    assert not x.retains_grad


def test_non_leaf_grad_is_none_without_retain_grad():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    (y * y).sum().backward()
    assert y.grad is None


def test_retain_grad_accumulates():
    x = fg.tensor([1.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    (y * 3).sum().backward(retain_graph=True)
    (y * 3).sum().backward()
    assert y.grad.tolist() == [6.0]


# -- detach and .data ----------------------------------------------------------------------


def test_detach_shares_memory_and_cuts_the_graph():
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    d.add_(1)
    assert x.tolist() == [2.0, 3.0, 4.0]  # same storage
    y = x * x
    z = x.detach() ** 3
    loss = fg.nn.MSELoss()(x, y + z)
    loss.backward()
    a = x.detach().numpy()
    expected = 2 * ((y + z).detach().numpy() - a) * (2 * a - 1) / 3
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


def test_detach_in_place():
    x = fg.ones(2, requires_grad=True)
    y = x * 2
    assert y.detach_() is y
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    assert y.tolist() == [2.0, 2.0]


def test_data_is_untracked_and_shared():
    x = fg.ones(1, requires_grad=True)
    assert x.data.tolist() == [1.0]
    assert not x.data.requires_grad
    y = 2 * x
    x.data *= 100
    y.backward()
    assert x.tolist() == [100.0] and x.requires_grad
    assert x.grad.tolist() == [2.0]
    assert repr(x) == "tensor([100.], requires_grad=True)"


def test_data_change_is_seen_by_saved_tensors():
    # The graph does not notice .data changes: backward uses the new values
    # (and raises no version-counter error).
    x = fg.tensor([1.0], requires_grad=True)
    y = x * x
    x.data *= 100
    y.backward()
    assert x.grad.tolist() == [200.0]


def test_data_setter():
    x = fg.ones(2, requires_grad=True)
    x.data = fg.zeros(2)
    assert x.tolist() == [0.0, 0.0] and x.requires_grad and x.is_leaf


def test_no_grad_update_of_a_leaf():
    w = fg.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    ident = id(w)
    with fg.no_grad():
        w -= 0.1 * w.grad
    assert id(w) == ident and w.is_leaf and w.requires_grad and w.grad_fn is None
    np.testing.assert_allclose(w.detach().numpy(), [0.8, 1.6], rtol=1e-6)
    w.grad.zero_()
    (w * w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [1.6, 3.2], rtol=1e-6)


def test_reading_a_non_leaf_grad_warns_as_pytorch():
    import warnings

    x = fg.ones(2, requires_grad=True)
    y = x * 2
    with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed"):
        assert y.grad is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is None  # a leaf: no warning
        y.retain_grad()
        y.sum().backward()
        assert y.grad.tolist() == [1.0, 1.0]  # retained: no warning
