"""Errors users search for: PyTorch's exact wording, ordinary exception classes, and
tensors that keep their values after the error."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from helpers import non_broadcastable_shapes, shapes

BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)
NOT_SCALAR = "grad can be implicitly created only for scalar outputs"
NO_GRAD_FN = "element 0 of tensors does not require grad and does not have a grad_fn"
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
UNUSED = (
    "One of the differentiated Tensors appears to not have been used in the graph. "
    "Set allow_unused=True if this is the desired behavior."
)


def _raises_exactly(exc_type, message, fn):
    with pytest.raises(exc_type) as info:
        fn()
    assert type(info.value) is exc_type, f"{type(info.value).__mro__}"
    assert str(info.value) == message
    return info.value


def _snapshot(*tensors):
    return [t.detach().numpy().copy() for t in tensors]


def _unchanged(before, *tensors):
    for b, t in zip(before, tensors):
        np.testing.assert_array_equal(t.detach().numpy(), b)


# -- backward twice ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda x: (x * x).sum(),
        lambda x: (x**3).sum(),
        lambda x: x.exp().sum(),
        lambda x: x.sin().mean(),
        lambda x: x @ x,
        lambda x: (x / (x + 1)).sum(),
        lambda x: x.sigmoid().sum(),
    ],
)
def test_backward_twice(make):
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = make(x)
    y.backward()
    first = x.grad.tolist()
    _raises_exactly(RuntimeError, BACKWARD_TWICE, y.backward)
    assert x.grad.tolist() == first  # untouched by the failed backward
    assert x.tolist() == [1.0, 2.0]
    _raises_exactly(RuntimeError, BACKWARD_TWICE, lambda: fg.autograd.grad(y, x))


def test_backward_twice_through_a_shared_subgraph():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    h = x * x
    a = h.sum()
    b = (h * 2).sum()
    a.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        b.backward()  # h's node already released its saved tensors


def test_backward_twice_is_fine_when_nothing_was_saved():
    # PyTorch only complains when a freed saved tensor is needed.
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_retain_graph_then_accumulate():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [6.0, 12.0]
    _raises_exactly(RuntimeError, BACKWARD_TWICE, y.backward)


# -- implicit gradients --------------------------------------------------------------------


@given(shapes(min_dims=1).filter(lambda s: int(np.prod(s)) > 1))
def test_non_scalar_backward_without_gradient(shape):
    x = fg.ones(shape, requires_grad=True)
    y = x * 2
    _raises_exactly(RuntimeError, NOT_SCALAR, y.backward)
    assert x.grad is None
    _raises_exactly(RuntimeError, NOT_SCALAR, lambda: fg.autograd.backward(y))
    _raises_exactly(RuntimeError, NOT_SCALAR, lambda: fg.autograd.grad(y, x))
    assert x.grad is None and (x.detach().numpy() == 1).all()


def test_one_element_non_scalar_backward_is_allowed():
    x = fg.ones(1, 1, requires_grad=True)
    (x * 3).backward()
    assert x.grad.tolist() == [[3.0]]


def test_backward_outside_the_graph():
    y = fg.ones(3).sum()
    _raises_exactly(RuntimeError, NO_GRAD_FN, y.backward)
    x = fg.tensor(1.0, requires_grad=True)
    with fg.no_grad():
        y2 = x**3
    _raises_exactly(RuntimeError, NO_GRAD_FN, y2.backward)
    _raises_exactly(RuntimeError, NO_GRAD_FN, x.detach().backward)
    assert x.grad is None and x.item() == 1.0


def test_backward_outside_the_graph_names_the_element():
    x = fg.tensor(1.0, requires_grad=True)
    with pytest.raises(
        RuntimeError, match="element 1 of tensors does not require grad and does not have a grad_fn"
    ):
        fg.autograd.backward([x * 2, fg.tensor(3.0)])
    assert x.grad is None


# -- in-place on leaves --------------------------------------------------------------------


@pytest.mark.parametrize(
    "op",
    [
        lambda w: w.add_(1),
        lambda w: w.sub_(1),
        lambda w: w.mul_(2),
        lambda w: w.div_(2),
        lambda w: w.zero_(),
        lambda w: w.fill_(3.0),
        lambda w: w.copy_(fg.zeros(3)),
        lambda w: w.exp_(),
        lambda w: w.neg_(),
        lambda w: w.pow_(2),
    ],
)
def test_in_place_on_leaf_requiring_grad(op):
    w = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    _raises_exactly(RuntimeError, LEAF_INPLACE, lambda: op(w))
    assert w.tolist() == [1.0, 2.0, 3.0] and w.is_leaf and w.requires_grad and w._version == 0


@pytest.mark.parametrize(
    "op",
    [
        lambda w: w[0].add_(1),
        lambda w: w.view(6).mul_(2),
        lambda w: w.t().zero_(),
        lambda w: w[:, 1:].sub_(1),
        lambda w: w.unsqueeze(0).fill_(0.0),
    ],
)
def test_in_place_on_view_of_leaf_requiring_grad(op):
    w = fg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    _raises_exactly(
        RuntimeError,
        "a view of a leaf Variable that requires grad is being used in an in-place operation.",
        lambda: op(w),
    )
    assert w.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]] and w._version == 0


@pytest.mark.parametrize(
    "op",
    [operator.iadd, operator.isub, operator.imul, operator.itruediv],
)
def test_augmented_assignment_on_leaf(op):
    w = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    original = w
    with pytest.raises(RuntimeError) as info:
        w = op(w, 2.0)
    assert str(info.value) == LEAF_INPLACE
    assert w is original and w.tolist() == [1.0, 2.0, 3.0]


def test_in_place_on_leaf_allowed_under_no_grad():
    w = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (w * w).sum().backward()
    with fg.no_grad():
        w -= 0.1 * w.grad
        w.mul_(2)
        w[0].add_(1)
    np.testing.assert_allclose(w.detach().numpy(), [2.6, 3.2, 4.8], rtol=1e-6)
    assert w.is_leaf and w.requires_grad and w.grad_fn is None


def test_in_place_on_leaf_without_grad_is_fine():
    t = fg.tensor([1.0, 2.0])
    t += 1
    t.mul_(2)
    assert t.tolist() == [4.0, 6.0]


def test_saved_tensor_modified_in_place():
    a = fg.ones(5, 5, requires_grad=True)
    b = a * 2
    c = b * b
    b.mul_(2)
    with pytest.raises(RuntimeError) as info:
        c.sum().backward()
    msg = str(info.value)
    assert msg.startswith(
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
    )
    assert "[5, 5]" in msg and "MulBackward0" in msg
    assert "is at version 1; expected version 0 instead." in msg
    assert a.grad is None


# -- autograd.grad unused input ------------------------------------------------------------


def test_unused_input():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    u = fg.tensor([3.0], requires_grad=True)
    y = (x * x).sum()
    _raises_exactly(RuntimeError, UNUSED, lambda: fg.autograd.grad(y, [x, u], retain_graph=True))
    gx, gu = fg.autograd.grad(y, [x, u], allow_unused=True, retain_graph=True)
    assert gx.tolist() == [2.0, 4.0] and gu is None
    gx, gu = fg.autograd.grad(y, [x, u], materialize_grads=True)
    assert gu.tolist() == [0.0]
    assert x.tolist() == [1.0, 2.0] and u.tolist() == [3.0]
    assert x.grad is None and u.grad is None


# -- gradient shape ------------------------------------------------------------------------


def test_wrong_gradient_shape():
    x = fg.ones(2, 2, requires_grad=True)
    y = x * 2
    _raises_exactly(
        RuntimeError,
        "Mismatch in shape: grad_output[0] has a shape of [2] and output[0] has a shape of [2, 2].",
        lambda: y.backward(fg.ones(2)),
    )
    _raises_exactly(
        RuntimeError,
        "Mismatch in shape: grad_output[0] has a shape of [1, 4] and output[0] has a shape of [2, 2].",
        lambda: y.backward(gradient=fg.ones(1, 4)),
    )
    _raises_exactly(
        RuntimeError,
        "Mismatch in shape: grad_output[0] has a shape of [] and output[0] has a shape of [2, 2].",
        lambda: fg.autograd.grad(y, x, fg.tensor(1.0)),
    )
    assert x.grad is None
    # the graph is still intact: nothing ran
    y.backward(fg.ones(2, 2))
    assert x.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]


@given(shapes(min_dims=1), shapes(min_dims=1))
def test_wrong_gradient_shape_names_both_shapes(out_shape, grad_shape):
    if tuple(out_shape) == tuple(grad_shape):
        return
    x = fg.ones(out_shape, requires_grad=True)
    y = x * 1
    fmt = lambda s: "[" + ", ".join(map(str, s)) + "]"  # noqa: E731
    _raises_exactly(
        RuntimeError,
        f"Mismatch in shape: grad_output[0] has a shape of {fmt(grad_shape)} and "
        f"output[0] has a shape of {fmt(out_shape)}.",
        lambda: y.backward(fg.ones(grad_shape)),
    )


# -- shapes that do not broadcast ----------------------------------------------------------

BINARY = [
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.pow,
    operator.lt,
    operator.eq,
]


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
@given(pair=non_broadcastable_shapes())
def test_non_broadcastable_shapes_name_both(op, pair):
    sa, sb = pair
    a = fg.full(sa, 2.0, requires_grad=True)
    b = fg.full(sb, 3.0)
    with pytest.raises(RuntimeError) as info:
        op(a, b)
    msg = str(info.value)
    fmt = lambda s: "[" + ", ".join(map(str, s)) + "]"  # noqa: E731
    assert fmt(sa) in msg and fmt(sb) in msg, msg
    assert "The size of tensor a" in msg
    assert (a.detach().numpy() == 2.0).all() and (b.numpy() == 3.0).all()
    assert a.grad is None


def test_broadcast_error_example():
    with pytest.raises(RuntimeError) as info:
        fg.ones(2, 3) + fg.ones(4, 3)
    assert str(info.value).startswith(
        "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 0"
    )
    assert "[2, 3]" in str(info.value) and "[4, 3]" in str(info.value)


def test_in_place_broadcast_error_leaves_the_tensor_alone():
    t = fg.ones(2, 3)
    with pytest.raises(RuntimeError):
        t.add_(fg.ones(4, 3))
    with pytest.raises(RuntimeError):
        t.add_(fg.ones(2, 1, 3))  # the result would need a bigger shape
    assert t.tolist() == [[1.0] * 3] * 2


# -- ordinary exception classes everywhere --------------------------------------------------


@given(
    shapes(min_dims=0, max_dims=3),
    shapes(min_dims=0, max_dims=3),
    st.sampled_from(
        ["matmul", "add", "view", "expand", "sum", "permute", "transpose", "squeeze", "unsqueeze"]
    ),
)
def test_bad_arguments_raise_ordinary_exceptions(sa, sb, op):
    """Whatever the shapes, an op either works or raises an Exception subclass
    (a Rust panic would surface as PanicException, which is not one)."""
    a = fg.ones(sa, requires_grad=True)
    b = fg.ones(sb)
    calls = {
        "matmul": lambda: a @ b,
        "add": lambda: a + b,
        "view": lambda: a.view(*sb) if sb else a.view(()),
        "expand": lambda: a.expand(*sb) if sb else a.expand(()),
        "sum": lambda: a.sum(tuple(d - 2 for d in sb)),
        "permute": lambda: a.permute(*[d - 1 for d in sb]),
        "transpose": lambda: a.transpose(len(sb) - 2, len(sa) - 1),
        "squeeze": lambda: a.squeeze(len(sb) - 2),
        "unsqueeze": lambda: a.unsqueeze(len(sb) - 2),
    }
    try:
        out = calls[op]()
    except (RuntimeError, IndexError, ValueError, TypeError):
        pass
    else:
        if out.requires_grad and out.numel() > 0:
            out.sum().backward()
            assert a.grad is not None
    assert (a.detach().numpy() == 1).all()


def test_errors_are_not_base_exceptions_only():
    for fn in (
        lambda: fg.ones(2, 3) @ fg.ones(2, 3),
        lambda: fg.ones(2).view(3),
        lambda: fg.ones(2)[3],
        lambda: fg.ones(2).sum(3),
    ):
        with pytest.raises(Exception) as info:
            fn()
        assert isinstance(info.value, Exception)
