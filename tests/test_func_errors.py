"""What the function transforms refuse, with PyTorch's error texts."""

from __future__ import annotations

import re

import pytest

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd.func import grad, jacrev, jvp, vjp, vmap


def raises(exc, text):
    return pytest.raises(exc, match=re.escape(text))


def test_item_and_control_flow():
    x = fg.randn(3, 2)
    with raises(RuntimeError, "vmap: It looks like you're calling .item() on a Tensor"):
        vmap(lambda t: t.sum().item())(x)
    with raises(RuntimeError, "vmap: It looks like you're calling .item() on a Tensor"):
        vmap(lambda t: float(t.sum()))(x)
    with raises(RuntimeError, "data-dependent control flow"):
        vmap(lambda t: t if t.sum() > 0 else -t)(x)
    with raises(RuntimeError, "data-dependent control flow"):
        vmap(lambda t: bool(t.sum()))(x)


def test_a_numpy_round_trip_is_refused_by_name():
    # PyTorch says "Cannot access data pointer of Tensor that doesn't have storage".
    x = fg.randn(3, 2)
    with raises(RuntimeError, "vmap: Tensor.numpy() was called on a batched tensor"):
        vmap(lambda t: fg.from_numpy(t.numpy()))(x)
    with pytest.raises(RuntimeError, match="from_numpy"):
        vmap(lambda t: t.numpy(force=True))(x)


def test_inplace_write_of_batched_value_into_unbatched_tensor():
    x = fg.randn(3, 2)
    y = fg.zeros(2)

    def f(t):
        y.copy_(t)
        return t

    with raises(RuntimeError, "vmap: inplace arithmetic(self, *extra_args) is not possible"):
        vmap(f)(x)

    def g(t):
        z = fg.zeros(2)
        z += t
        return z

    with raises(RuntimeError, "is not possible because there exists a Tensor `other`"):
        vmap(g)(x)

    def h(t):
        z = fg.zeros(2)
        z[0] = t[0]
        return z

    with pytest.raises(RuntimeError, match="is not possible"):
        vmap(h)(x)
    assert float(y.abs().sum()) == 0.0
    # Writing into a batched tensor is fine.
    close = vmap(lambda t: t.clone().mul_(2).add_(fg.ones(2)))(x)
    assert fg.allclose(close, x * 2 + 1)


def test_in_dims_errors():
    x, y = fg.randn(2, 3), fg.randn(3, 3)
    with raises(ValueError, "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes [2, 3] for the mapped dimension"):  # fmt: skip
        vmap(fg.mul)(x, y)
    with raises(ValueError, "in_dims is not compatible with the structure of `inputs`"):
        vmap(fg.mul, in_dims=(0, 0, 0))(x, x)
    with raises(ValueError, "expected `in_dims` to be int or a (potentially nested) tuple"):
        vmap(fg.mul, in_dims=[0, 0])(x, x)
    with raises(ValueError, "Got in_dim=2 for some input, but that input is a Tensor of dimensionality 2 so expected in_dim to satisfy -2 <= in_dim < 2."):  # fmt: skip
        vmap(fg.exp, in_dims=2)(x)
    with raises(ValueError, "Got in_dim=0 for an input but the input is of type <class 'float'>. We cannot vmap over non-Tensor arguments"):  # fmt: skip
        vmap(lambda a, b: a * b)(x, 2.0)
    with raises(ValueError, "in_dim must be either an integer dimension or None"):
        vmap(fg.exp, in_dims=(0.5,))(x)
    with raises(ValueError, "got no inputs. Maybe you forgot to add inputs"):
        vmap(lambda: fg.ones(2))()
    with raises(ValueError, "vmap: Expected at least one Tensor to vmap over"):
        vmap(lambda a: a, in_dims=(None,))(x)


def test_out_dims_errors():
    x = fg.randn(2, 3)
    with raises(ValueError, "out_dims is not compatible with the structure of `outputs`"):
        vmap(lambda t: (t, t), out_dims=(0, 0, 0))(x)
    with raises(ValueError, "`out_dims` must be an int, None or a python collection of ints"):
        vmap(lambda t: t, out_dims="a")(x)
    with raises(ValueError, "can not return a BatchedTensor when out_dim is None"):
        vmap(lambda t: t, out_dims=None)(x)
    with raises(ValueError, "must only return Tensors, got type <class 'float'>"):
        vmap(lambda t: 3.0)(x)
    with pytest.raises(IndexError, match="Dimension out of range"):
        vmap(lambda t: t, out_dims=3)(x)


def test_randomness():
    x = fg.ones(3, 4)
    with raises(RuntimeError, "vmap: called random operation while in randomness error mode"):
        vmap(lambda t: F.dropout(t, 0.5))(x)
    with raises(RuntimeError, "vmap: called random operation while in randomness error mode"):
        vmap(lambda t: t.clone().uniform_())(x)
    with raises(RuntimeError, "vmap: called random operation while in randomness error mode"):
        vmap(lambda t: fg.randn_like(t))(x)
    with raises(RuntimeError, "Only allowed values for randomness are 'error', 'different', or 'same'"):  # fmt: skip
        vmap(lambda t: t, randomness="sometimes")
    out = vmap(lambda t: t.clone().uniform_(), randomness="same")(x).numpy()
    assert (out == out[0]).all()


def test_no_batching_rule_names_the_op():
    x = fg.randn(3, 4, 4)
    with raises(RuntimeError, "vmap: there is no batching rule for ferrograd.unique"):
        vmap(lambda t: fg.unique(t))(x)
    with raises(RuntimeError, "vmap: there is no batching rule for Tensor.nonzero"):
        vmap(lambda t: t.nonzero())(x)
    with raises(RuntimeError, "no batching rule for index_select with a batched index"):
        vmap(lambda t, i: t.index_select(0, i))(x, fg.zeros(3, 2, dtype=fg.int64))


def test_dimension_errors_use_logical_ranks():
    x = fg.randn(3, 4)
    with raises(IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"):  # fmt: skip
        vmap(lambda t: t.sum(1))(x)
    with raises(IndexError, "Dimension out of range"):
        vmap(lambda t: t.softmax(-2))(x)


def test_grad_errors():
    x = fg.randn(3)
    with raises(RuntimeError, "Expected f(*args) to return a scalar Tensor, got tensor with 1 dims. Maybe you wanted to use the vjp or jacrev APIs instead?"):  # fmt: skip
        grad(lambda t: t * 2)(x)
    with raises(RuntimeError, "Expected f(*args) to return a Tensor, got"):
        grad(lambda t: 3.0)(x)
    with raises(RuntimeError, "Got argnums=2, but only 1 positional inputs"):
        grad(lambda t: t.sum(), argnums=2)(x)
    with raises(RuntimeError, "argnums must be unique"):
        grad(lambda t, u: t.sum(), argnums=(0, 0))(x, x)
    with raises(RuntimeError, "output of function f should be a tuple: (output, aux) if has_aux is True"):  # fmt: skip
        grad(lambda t: t.sum(), has_aux=True)(x)
    with raises(RuntimeError, "Expected all differentiated inputs to be Tensors"):
        grad(lambda t: fg.tensor(t), argnums=0)(1.0)
    with raises(ValueError, "jacrev: `chunk_size` should be greater than 0."):
        jacrev(lambda t: t, chunk_size=0)
    _, fn = vjp(lambda t: (t, t.sum()), x)
    with raises(RuntimeError, "Expected pytree structure of cotangents to be the same"):
        fn(fg.ones(3))


BACKWARD = "backward() called inside a functorch transform. This is not supported, please use functorch.grad or functorch.vjp instead or call backward() outside of functorch transforms."  # noqa: E501
REQUIRES_GRAD = "You are attempting to call Tensor.requires_grad_() (or perhaps using torch.autograd.functional.* APIs) inside of a function being transformed by a functorch transform."  # noqa: E501


def test_backward_inside_a_transform_is_refused():
    x = fg.randn(3, 2)
    w = fg.randn(2, requires_grad=True)

    def unrelated(t):
        (w * 2).sum().backward()
        return t.sum()

    for transform in (vmap, grad, jacrev):
        with raises(RuntimeError, BACKWARD):
            transform(unrelated)(x[0] if transform is grad else x)
    with raises(RuntimeError, BACKWARD):
        vmap(lambda t: t.sum().backward())(x)
    with raises(RuntimeError, BACKWARD):
        jvp(unrelated, (x,), (x,))
    with raises(RuntimeError, BACKWARD):
        vmap(lambda t: fg.autograd.backward([t.sum()]))(x)
    assert w.grad is None
    # Outside the transform again, backward works.
    (w * 2).sum().backward()
    assert fg.equal(w.grad, fg.full((2,), 2.0))


def test_requires_grad_and_retain_grad_of_batched_values_are_refused():
    x = fg.randn(3, 2)
    with raises(RuntimeError, REQUIRES_GRAD):
        vmap(lambda t: t.requires_grad_())(x)
    with raises(RuntimeError, "You are attempting to call Tensor.retain_grad() inside of a function being transformed by a functorch transform."):  # fmt: skip
        vmap(lambda t: t.retain_grad())(x)


def test_autograd_grad_of_a_batched_output_is_refused():
    x = fg.randn(3, 2)
    w = fg.randn(2, requires_grad=True)
    with raises(RuntimeError, "vmap: It looks like you're calling autograd.grad() on a Tensor computed inside of vmap"):  # fmt: skip
        vmap(lambda t: fg.autograd.grad((w * t).sum(), w)[0])(x)
    with raises(RuntimeError, "vmap: It looks like you're calling autograd.grad() on a Tensor computed inside of vmap"):  # fmt: skip
        vmap(lambda t: fg.autograd.grad(t.sum(), t))(x)
    with raises(RuntimeError, "needs a grad_output for every output"):
        vmap(lambda v: fg.autograd.grad([w * 2, w.sum()], w, [v, None]))(x)


def test_autograd_grad_with_batched_grad_outputs_batches_the_cotangents():
    # PyTorch allows this one: the cotangents are the batch, the graph is shared.
    n = 4
    x = fg.randn(n, dtype=fg.float64, requires_grad=True)
    y = fg.randn(n, dtype=fg.float64)
    jac = vmap(lambda v: fg.autograd.grad([x * y], [x], grad_outputs=[v])[0])(fg.eye(n, dtype=fg.float64))
    assert fg.allclose(jac, fg.diag(y))
    # Nested levels, and an unbatched grad_output among batched ones.
    a = fg.randn(3, n, dtype=fg.float64)
    m = fg.randn(2, 3, dtype=fg.float64)

    def vjp_of(u, s):
        out = fg.autograd.grad([x.sin() * 3, (x * x).sum()], x, [u, s], retain_graph=True)[0]
        return out

    got = vmap(vmap(vjp_of, in_dims=(0, None)), in_dims=(None, 0))(a, m[:, 0])
    want = fg.stack([
        fg.stack([a[i] * 3 * x.cos() + m[j, 0] * 2 * x for i in range(3)]) for j in range(2)
    ]).detach()
    assert got.shape == (2, 3, n) and fg.allclose(got, want)


def test_type_error_for_non_tensors_is_pytorchs():
    with raises(TypeError, "exp(): argument 'input' (position 1) must be Tensor, not int"):
        fg.exp(3)
    with raises(TypeError, "linear(): argument 'weight' (position 2) must be Tensor, not str"):
        F.linear(fg.ones(2), "w")
