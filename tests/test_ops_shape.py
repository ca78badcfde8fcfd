"""Shape and view ops, joining and splitting: gradients to second order and
values against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from helpers import FEW, check_grads, close32, leaf, op_shapes, values


@FEW
@given(data=st.data())
def test_views(data):
    shape = data.draw(op_shapes(min_dims=2, max_dims=4, min_side=0, max_side=3))
    x = data.draw(values(shape))
    n = len(shape)
    d0, d1 = data.draw(st.integers(-n, n - 1)), data.draw(st.integers(-n, n - 1))
    perm = data.draw(st.permutations(range(n)))
    # The same permutation with some entries counted from the end.
    neg_perm = [p - n if data.draw(st.booleans()) else p for p in perm]
    cases = [
        (lambda t: t.transpose(d0, d1), lambda a: np.swapaxes(a, d0, d1)),
        (lambda t: t.permute(*perm), lambda a: np.transpose(a, perm)),
        (lambda t: fg.permute(t, neg_perm), lambda a: np.transpose(a, perm)),
        (lambda t: t.reshape(-1), lambda a: a.reshape(-1)),
        (lambda t: t.flatten(1), lambda a: a.reshape(a.shape[0], int(np.prod(a.shape[1:])))),
        (lambda t: t.unsqueeze(d0), lambda a: np.expand_dims(a, d0 if d0 >= 0 else d0 + n + 1)),
        (lambda t: t.mT, lambda a: np.swapaxes(a, -1, -2)),
        (lambda t: t.contiguous(), lambda a: a),
        (lambda t: t.movedim(d0, d1), lambda a: np.moveaxis(a, d0, d1)),
        (lambda t: t.flip(d0), lambda a: np.flip(a, d0)),
        (lambda t: fg.flip(t, (0, -1)), lambda a: np.flip(a, (0, -1))),
        (lambda t: t.squeeze(), lambda a: np.squeeze(a)),
        (lambda t: t.view(-1), lambda a: a.reshape(-1)),
        (lambda t: t.T, lambda a: a.T),
        (lambda t: t.flatten(0, 1).t() if t.dim() == 3 else t.flatten(0, 1),
         lambda a: a.reshape(a.shape[0] * a.shape[1], *a.shape[2:]).T if a.ndim == 3
         else a.reshape(a.shape[0] * a.shape[1], *a.shape[2:])),
    ]
    for f, npf in cases:
        check_grads(f, x)
        close32(f, npf, x)


@FEW
@given(data=st.data())
def test_expand_repeat_broadcast_to(data):
    shape = data.draw(op_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    x = data.draw(values(shape))
    target = tuple(data.draw(st.sampled_from([1, 2])) if s == 1 else s for s in shape)
    lead = data.draw(st.integers(0, 2))
    full = (2,) * lead + target
    reps = tuple(data.draw(st.integers(0, 2)) for _ in range(len(shape) + lead))
    check_grads(lambda t: t.expand(*full), x)
    check_grads(lambda t: fg.broadcast_to(t, full), x)
    check_grads(lambda t: t.expand(*((-1,) * 0 + full[:lead] + (-1,) * len(shape))), x)
    check_grads(lambda t: t.expand_as(fg.zeros(full, dtype=fg.float64)), x)
    check_grads(lambda t: t.repeat(*reps), x)
    close32(lambda t: t.repeat(*reps), lambda a: np.tile(a, reps), x)
    close32(lambda t: t.broadcast_to(full), lambda a: np.broadcast_to(a, full), x)


@FEW
@given(data=st.data())
def test_cat_stack(data):
    shape = data.draw(op_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(1, 3))
    arrays = []
    for _ in range(k):
        s = list(shape)
        s[d] = data.draw(st.integers(0, 3))
        arrays.append(data.draw(values(tuple(s))))
    check_grads(lambda *ts: fg.cat(ts, d), *arrays)
    close32(lambda *ts: fg.cat(list(ts), dim=d), lambda *a: np.concatenate(a, d), *arrays)
    same = [data.draw(values(shape)) for _ in range(k)]
    sd = data.draw(st.integers(-len(shape) - 1, len(shape)))
    check_grads(lambda *ts: fg.stack(ts, sd), *same)
    close32(lambda *ts: fg.stack(ts, sd), lambda *a: np.stack(a, sd), *same)


def test_cat_promotes_and_checks():
    assert fg.cat([fg.tensor([1]), fg.tensor([2.5])]).tolist() == [1.0, 2.5]
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        fg.cat([fg.ones(2, 3), fg.ones(2, 4)])
    with pytest.raises(RuntimeError, match="expected a non-empty list of Tensors"):
        fg.cat([])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        fg.stack([fg.ones(2), fg.ones(3)])


@FEW
@given(data=st.data())
def test_split_chunk_unbind(data):
    shape = data.draw(op_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    # The split dimension is not empty (the sizes below need one element);
    # the others may be.
    shape = tuple(max(s, 1) if k == d % len(shape) else s for k, s in enumerate(shape))
    x = data.draw(values(shape))
    n = shape[d]
    size = data.draw(st.integers(1, n))
    chunks = data.draw(st.integers(1, n + 1))
    sections = data.draw(st.lists(st.integers(0, n), min_size=1, max_size=3))
    sections = sections[:-1] + [n - sum(sections[:-1])] if sum(sections[:-1]) <= n else [n]

    def joined(parts):
        return fg.cat([p * (i + 1) for i, p in enumerate(parts)], d)

    check_grads(lambda t: joined(t.split(size, d)), x)
    check_grads(lambda t: joined(fg.split(t, sections, d)), x)
    check_grads(lambda t: joined(t.chunk(chunks, d)), x)
    check_grads(lambda t: fg.stack([p * (i + 1) for i, p in enumerate(t.unbind(d))], d), x)
    got = [p.numpy() for p in leaf(x, False).split(size, d)]
    want = np.split(x, list(range(size, n, size)), axis=d)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    per = -(-n // chunks)
    assert len(fg.chunk(leaf(x, False), chunks, d)) == -(-n // per)


def test_split_errors():
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly to 4"):
        fg.ones(4).split([1, 2])
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0"):
        fg.ones(4).chunk(0)


@FEW
@given(data=st.data())
def test_unflatten_and_narrow(data):
    a, b = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    x = data.draw(values((2, a * b)))
    check_grads(lambda t: t.unflatten(1, (a, -1)), x)
    close32(lambda t: fg.unflatten(t, -1, (a, b)), lambda m: m.reshape(2, a, b), x)
    start = data.draw(st.integers(0, a * b - 1))
    length = data.draw(st.integers(0, a * b - start))
    check_grads(lambda t: t.narrow(1, start, length), x)
    close32(lambda t: t.narrow(1, start, length), lambda m: m[:, start:start + length], x)


def test_shape_errors():
    with pytest.raises(RuntimeError, match="must match the existing size"):
        fg.ones(2, 3).expand(4, 3)
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims"):
        fg.ones(2, 3).repeat(2)
    with pytest.raises(RuntimeError, match="is invalid for input of size"):
        fg.ones(6).reshape(4, -1)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        fg.ones(2, 3).flip(0, -2)


@FEW
@given(data=st.data())
def test_squeeze_unsqueeze_unflatten_with_dims(data):
    shape = data.draw(op_shapes(min_dims=1, max_dims=4, min_side=0, max_side=3))
    n = len(shape)
    x = data.draw(values(shape))
    d = data.draw(st.integers(-n, n - 1))
    u = data.draw(st.integers(-n - 1, n))
    # squeeze(d) drops d only when its size is 1, as in PyTorch.
    sq = (lambda a: np.squeeze(a, d)) if shape[d] == 1 else (lambda a: a)
    check_grads(lambda t: t.squeeze(d), x)
    close32(lambda t: fg.squeeze(t, d), sq, x)
    check_grads(lambda t: fg.unsqueeze(t, u), x)
    close32(lambda t: t.unsqueeze(u), lambda a: np.expand_dims(a, u if u >= 0 else u + n + 1), x)
    # unflatten splits dimension d into (k, -1) for a k that divides it.
    k = data.draw(st.sampled_from([v for v in range(1, 4) if shape[d] % v == 0] or [1]))
    if shape[d] == 0:
        k = data.draw(st.integers(1, 3))
        split = (k, 0)
    else:
        split = (k, -1)
    want_shape = shape[: d % n] + (k, shape[d] // k if k else 0) + shape[d % n + 1:]
    check_grads(lambda t: t.unflatten(d, split), x)
    close32(lambda t: fg.unflatten(t, d, split), lambda a: a.reshape(want_shape), x)
    check_grads(lambda t: t.flatten(d % n, -1), x)
    lead = (int(np.prod(shape[: d % n + 1])),)
    close32(lambda t: t.flatten(-n, d), lambda a: a.reshape(lead + shape[d % n + 1:]), x)


@pytest.mark.parametrize(
    "op,name",
    [
        (lambda t: t.squeeze(), "SqueezeBackward0"),
        (lambda t: t.squeeze(0), "SqueezeBackward1"),
        (lambda t: fg.squeeze(t), "SqueezeBackward0"),
        (lambda t: t.reshape(2, 3), "ViewBackward0"),
        (lambda t: t.reshape_as(t), "ViewBackward0"),
        (lambda t: t.expand(2, 3), "ExpandBackward0"),
        (lambda t: t.expand_as(t), "ExpandBackward0"),
        (lambda t: t.broadcast_to((2, 3)), "ExpandBackward0"),
        (lambda t: t[...], "AliasBackward0"),
        (lambda t: t[()], "AliasBackward0"),
        (lambda t: t.unflatten(1, (3,)), "ViewBackward0"),
        (lambda t: t.unsqueeze(0).squeeze(1).squeeze(1), "SqueezeBackward1"),
    ],
)
def test_a_view_that_changes_nothing_is_still_a_new_tensor(op, name):
    # As in PyTorch: `y` is a view of `x`, not `x` itself, so it is no leaf,
    # has its own grad_fn, and a gradient with respect to it is its own.
    x = fg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = op(x)
    assert y is not x and not y.is_leaf and y.grad_fn.name() == name
    assert y._base is x
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * x.detach().numpy())
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors appears to not have been used"):
        fg.autograd.grad((x * 2).sum(), op(x))


def test_a_zero_dim_tensor_is_its_own_transpose_and_movedim():
    x = fg.tensor(2.0, requires_grad=True)
    for y, name in [(x.transpose(0, -1), "TransposeBackward0"), (x.movedim(0, 0), "AliasBackward0")]:
        assert y is not x and y.grad_fn.name() == name
        y.backward()
    assert x.grad.item() == 2.0
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.transpose(0, 1)
