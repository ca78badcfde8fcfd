"""Indexing: basic and advanced __getitem__, differentiable __setitem__,
gather/scatter_add/scatter/index_select/masked_fill; repeated indices add up."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from helpers import FEW, check_grads, close32, leaf, op_shapes, values


@st.composite
def basic_keys(draw, shape):
    """A tuple of ints, slices with steps, None and at most one Ellipsis."""
    key = []
    dims = list(shape)
    used_ellipsis = False
    i = 0
    while i < len(dims):
        # After an ellipsis the rest of the key must reach the last dimension.
        kinds = ["int", "slice", "none"] + ([] if used_ellipsis else ["ellipsis", "stop"])
        kind = draw(st.sampled_from(kinds))
        if kind == "stop":
            break
        if kind == "none":
            key.append(None)
            continue
        if kind == "ellipsis":
            used_ellipsis = True
            key.append(Ellipsis)
            skip = draw(st.integers(0, len(dims) - i))
            i += skip
            continue
        n = dims[i]
        if kind == "int" and n > 0:
            key.append(draw(st.integers(-n, n - 1)))
        else:
            start = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            step = draw(st.one_of(st.none(), st.integers(1, 3)))
            key.append(slice(start, stop, step))
        i += 1
    return tuple(key)


@FEW
@given(data=st.data())
def test_basic_getitem(data):
    shape = data.draw(op_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    x = data.draw(values(shape))
    key = data.draw(basic_keys(shape))
    np.testing.assert_array_equal(leaf(x, False)[key].numpy(), x[key])
    close32(lambda t: t[key], lambda a: a[key], x, rtol=0, atol=0)
    check_grads(lambda t: t[key], x)


@FEW
@given(data=st.data())
def test_advanced_getitem_with_duplicates(data):
    shape = data.draw(op_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    # The indexed dims need an element to pick; the rest may be empty.
    shape = tuple(max(s, 1) if k < 2 else s for k, s in enumerate(shape))
    x = data.draw(values(shape))
    n0 = shape[0]
    idx = data.draw(st.lists(st.integers(-n0, n0 - 1), min_size=0, max_size=5))
    idx_arr = np.array(idx, dtype=np.int64)
    check_grads(lambda t: t[fg.tensor(idx_arr)], x)
    np.testing.assert_array_equal(leaf(x, False)[idx].numpy(), x[idx_arr])
    close32(lambda t: t[fg.tensor(idx_arr)], lambda a: a[idx_arr], x, rtol=0, atol=0)
    mask = data.draw(values(shape)) > 0
    check_grads(lambda t: t[fg.tensor(mask)], x)
    np.testing.assert_array_equal(leaf(x, False)[fg.tensor(mask)].numpy(), x[mask])
    if len(shape) >= 2:
        j = data.draw(st.lists(st.integers(0, shape[1] - 1), min_size=len(idx), max_size=len(idx)))
        jt = np.array(j, dtype=np.int64)
        key = (fg.tensor(idx_arr), fg.tensor(jt))
        check_grads(lambda t: t[key], x)
        np.testing.assert_array_equal(leaf(x, False)[key].numpy(), x[idx_arr, jt])
        # An advanced index after a slice keeps its place; separated ones go first.
        np.testing.assert_array_equal(leaf(x, False)[:, jt].numpy(), x[:, jt])
        if len(shape) == 3 and shape[2] > 0:
            k = np.zeros_like(idx_arr)
            np.testing.assert_array_equal(leaf(x, False)[idx, :, k].numpy(), x[idx_arr, :, k])
            np.testing.assert_array_equal(leaf(x, False)[..., k].numpy(), x[..., k])


def test_duplicate_indices_accumulate():
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 0, 2, 0]].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


@FEW
@given(data=st.data())
def test_setitem_is_differentiable(data):
    shape = data.draw(op_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    x = data.draw(values(shape))
    key = data.draw(basic_keys(shape))
    sel_shape = x[key].shape
    v = data.draw(values(sel_shape))

    def f(t, val):
        y = t * 1.0
        y[key] = val * 2.0
        return y

    want = x.copy()
    want[key] = v * 2.0
    np.testing.assert_allclose(f(leaf(x, False), leaf(v, False)).numpy(), want)
    check_grads(f, x, v)
    mask = data.draw(values(shape)) > 0

    def g(t):
        y = t.clone()
        y[fg.tensor(mask)] = 0.5
        return y

    check_grads(g, x)
    want = x.copy()
    want[mask] = 0.5
    np.testing.assert_allclose(g(leaf(x, False)).numpy(), want)


def test_setitem_into_an_empty_view_of_a_tracked_tensor():
    x = fg.zeros(0, 2, dtype=fg.float64, requires_grad=True)
    y = x * 1.0
    y[..., 1] = 3.0  # PyTorch: a no-op write recorded as CopySlices
    assert y.shape == (0, 2)
    (g,) = fg.autograd.grad(y.sum(), x)
    assert g.shape == (0, 2)


def test_setitem_plain_tensors_and_errors():
    t = fg.zeros(3, 4)
    t[1] = 5
    t[:, 0] = fg.tensor([1.0, 2.0, 3.0])
    t[t > 4] = -1
    t[[0, 2], [1, 3]] = 7
    want = np.zeros((3, 4), np.float32)
    want[1] = 5
    want[:, 0] = [1, 2, 3]
    want[want > 4] = -1
    want[[0, 2], [1, 3]] = 7
    np.testing.assert_array_equal(t.numpy(), want)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        t[0] = fg.ones(3)
    leaf_t = fg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf_t[0] = 2.0
    with fg.no_grad():
        leaf_t[0] = 2.0
    assert leaf_t.tolist() == [2.0, 1.0, 1.0]


def test_setitem_value_gets_gradient():
    x = fg.zeros(4)
    v = fg.tensor([1.0, 2.0], requires_grad=True)
    x[1:3] = v
    (x * fg.tensor([1.0, 10.0, 100.0, 1000.0])).sum().backward()
    assert v.grad.tolist() == [10.0, 100.0]


def test_index_errors():
    t = fg.ones(2, 3)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        t[5]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="out of bounds"):
        t[fg.tensor([0, 2])]
    with pytest.raises(IndexError, match="The shape of the mask"):
        t[fg.tensor([True, False, True])]
    with pytest.raises(IndexError, match="tensors used as indices must be long"):
        t[fg.tensor([0.0])]


@FEW
@given(data=st.data())
def test_gather_scatter_add_scatter(data):
    shape = data.draw(op_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    # Indices along d need a target; other dims (of the input and the index) may be empty.
    shape = tuple(max(s, 1) if k == d % len(shape) else s for k, s in enumerate(shape))
    x = data.draw(values(shape))
    ishape = tuple(data.draw(st.integers(0, s)) for s in shape)
    ishape = ishape[:d % len(shape)] + (data.draw(st.integers(0, 4)),) + ishape[d % len(shape) + 1:]
    n = shape[d]
    idx = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=int(np.prod(ishape)),
                                      max_size=int(np.prod(ishape))))).reshape(ishape).astype(np.int64)
    it = fg.tensor(idx)
    check_grads(lambda t: t.gather(d, it), x)
    want = np.empty(ishape)
    for pos in np.ndindex(*ishape):
        src_pos = list(pos)
        src_pos[d] = idx[pos]
        want[pos] = x[tuple(src_pos)]
    np.testing.assert_array_equal(fg.gather(leaf(x, False), d, it).numpy(), want)
    src = data.draw(values(ishape))
    check_grads(lambda t, s: t.scatter_add(d, it, s), x, src)
    want = x.copy()
    for pos in np.ndindex(*ishape):
        tgt = list(pos)
        tgt[d] = idx[pos]
        want[tuple(tgt)] += src[pos]
    np.testing.assert_allclose(fg.scatter_add(leaf(x, False), d, it, leaf(src, False)).numpy(), want)
    # scatter with unique targets along d is differentiable in both operands.
    uniq = np.argsort(data.draw(values(shape, unique=True)), axis=d)
    ut = fg.tensor(uniq.astype(np.int64))
    s2 = data.draw(values(shape))
    check_grads(lambda t, s: t.scatter(d, ut, s), x, s2)
    check_grads(lambda t: t.scatter(d, ut, 1.5), x)


@FEW
@given(data=st.data())
def test_index_select_masked_fill(data):
    shape = data.draw(op_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    shape = tuple(max(s, 1) if k == d % len(shape) else s for k, s in enumerate(shape))
    x = data.draw(values(shape))
    idx = np.array(data.draw(st.lists(st.integers(0, shape[d] - 1), max_size=4)), dtype=np.int64)
    it = fg.tensor(idx)
    check_grads(lambda t: t.index_select(d, it), x)
    np.testing.assert_array_equal(fg.index_select(leaf(x, False), d, it).numpy(), np.take(x, idx, d))
    mask = data.draw(values(shape)) > 0
    m = fg.tensor(mask)
    check_grads(lambda t: t.masked_fill(m, 0.25), x)
    check_grads(lambda t, v: fg.masked_fill(t, m, v), x, np.array(0.5))
    np.testing.assert_array_equal(leaf(x, False).masked_fill(m, 0.25).numpy(), np.where(mask, 0.25, x))
    close32(lambda t: t.masked_fill(m, 0.25), lambda a: np.where(mask, np.float32(0.25), a), x)
    close32(lambda t: t.index_select(d, it), lambda a: np.take(a, idx, d), x)


def test_gather_errors():
    x = fg.ones(2, 3)
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x.gather(1, fg.tensor([[3]]))
    with pytest.raises(RuntimeError, match="Expected dtype int64 for index"):
        x.gather(1, fg.tensor([[0.0]]))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions"):
        x.gather(1, fg.tensor([0]))
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
        x.masked_fill(fg.ones(2, 3), 0.0)
