"""sort, argsort, msort, topk, kthvalue, median, nanmedian: values against NumPy,
gradients against finite differences (first and second order)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
from ferrograd.autograd import gradcheck, gradgradcheck


def distinct(shape, seed):
    """Distinct values (no ties), so the order and the gradient are unambiguous."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    return (rng.permutation(n).astype(np.float64) * 0.37 - n * 0.1).reshape(shape)


shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)


@given(shapes, st.integers(0, 2**16), st.booleans(), st.data())
def test_sort_matches_numpy_and_gradchecks(shape, seed, descending, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    a = distinct(shape, seed)
    x = fg.tensor(a, requires_grad=True)
    values, indices = fg.sort(x, dim, descending)
    order = np.argsort(-a if descending else a, axis=dim, kind="stable")
    np.testing.assert_array_equal(indices.numpy(), order)
    np.testing.assert_array_equal(values.detach().numpy(), np.take_along_axis(a, order, dim))
    assert values.grad_fn.name() == "SortBackward0"
    assert gradcheck(lambda t: fg.sort(t, dim, descending)[0], (x,))
    assert gradgradcheck(lambda t: fg.sort(t, dim, descending)[0] ** 2, (x,))
    np.testing.assert_array_equal(x.argsort(dim, descending).numpy(), order)


def test_sort_is_stable_and_puts_nan_last():
    x = fg.tensor([2.0, float("nan"), 1.0, 2.0, -float("inf"), 1.0])
    v, i = x.sort()
    assert i.tolist() == [4, 2, 5, 0, 3, 1]
    assert np.isnan(v[-1].item())
    v, i = x.sort(descending=True)
    assert i.tolist() == [1, 0, 3, 2, 5, 4]
    v, i = x.sort(stable=True)
    assert i.tolist() == [4, 2, 5, 0, 3, 1]


def test_sort_of_ints_bools_and_scalars():
    v, i = fg.tensor([3, 1, 2]).sort()
    assert v.tolist() == [1, 2, 3] and v.dtype == fg.int64 and i.tolist() == [1, 2, 0]
    v, i = fg.tensor([True, False, True]).sort()
    assert v.tolist() == [False, True, True] and v.dtype == fg.bool
    v, i = fg.tensor(5.0).sort()
    assert v.item() == 5.0 and i.item() == 0 and v.shape == () and i.shape == ()
    assert fg.msort(fg.tensor([[3.0, 1.0], [1.0, 2.0]])).tolist() == [[1.0, 1.0], [3.0, 2.0]]


def test_sort_result_is_a_named_pair():
    r = fg.tensor([2.0, 1.0]).sort()
    assert type(r).__name__ == "sort"
    assert r.values.tolist() == [1.0, 2.0] and r.indices.tolist() == [1, 0]


@given(shapes, st.integers(0, 2**16), st.booleans(), st.data())
def test_topk(shape, seed, largest, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(0, shape[dim]))
    a = distinct(shape, seed)
    x = fg.tensor(a, requires_grad=True)
    values, indices = x.topk(k, dim, largest)
    order = np.argsort(-a if largest else a, axis=dim, kind="stable")
    expected = np.take(order, np.arange(k), axis=dim)
    np.testing.assert_array_equal(indices.numpy(), expected)
    np.testing.assert_array_equal(values.detach().numpy(), np.take_along_axis(a, expected, dim))
    assert gradcheck(lambda t: t.topk(k, dim, largest)[0], (x,))
    assert gradgradcheck(lambda t: t.topk(k, dim, largest)[0].exp(), (x,))


def test_topk_gradient_goes_to_the_chosen_elements():
    x = fg.tensor([1.0, 5.0, 3.0, 4.0], requires_grad=True)
    v, _ = fg.topk(x, 2)
    (v * fg.tensor([10.0, 100.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 10.0, 0.0, 100.0]


def test_topk_k_out_of_range():
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        fg.ones(3).topk(4)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        fg.ones(3).topk(-1)


@given(shapes, st.integers(0, 2**16), st.booleans(), st.data())
def test_kthvalue(shape, seed, keepdim, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(1, shape[dim]))
    a = distinct(shape, seed)
    x = fg.tensor(a, requires_grad=True)
    values, indices = fg.kthvalue(x, k, dim, keepdim)
    order = np.argsort(a, axis=dim, kind="stable")
    idx = np.take(order, [k - 1], axis=dim)
    val = np.take_along_axis(a, idx, dim)
    if not keepdim:
        idx, val = np.squeeze(idx, dim), np.squeeze(val, dim)
    np.testing.assert_array_equal(indices.numpy(), idx)
    np.testing.assert_array_equal(values.detach().numpy(), val)
    assert values.grad_fn.name() == "KthvalueBackward0"
    assert gradcheck(lambda t: fg.kthvalue(t, k, dim, keepdim)[0], (x,))
    assert gradgradcheck(lambda t: fg.kthvalue(t, k, dim, keepdim)[0] ** 2, (x,))


def test_kthvalue_out_of_range():
    with pytest.raises(IndexError, match="kthvalue\\(\\): selected number k out of range"):
        fg.ones(3).kthvalue(4)


@given(shapes, st.integers(0, 2**16), st.booleans(), st.data())
def test_median_dim_is_the_lower_median(shape, seed, keepdim, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    a = distinct(shape, seed)
    x = fg.tensor(a, requires_grad=True)
    values, indices = x.median(dim, keepdim)
    n = shape[dim]
    order = np.argsort(a, axis=dim, kind="stable")
    idx = np.take(order, [(n - 1) // 2], axis=dim)
    val = np.take_along_axis(a, idx, dim)
    if not keepdim:
        idx, val = np.squeeze(idx, dim), np.squeeze(val, dim)
    np.testing.assert_array_equal(indices.numpy(), idx)
    np.testing.assert_array_equal(values.detach().numpy(), val)
    assert gradcheck(lambda t: t.median(dim, keepdim)[0], (x,))
    assert gradgradcheck(lambda t: t.median(dim, keepdim)[0] ** 2, (x,))


def test_median_of_everything():
    x = fg.tensor([[4.0, 1.0], [3.0, 2.0]], requires_grad=True)
    m = x.median()
    assert m.item() == 2.0 and m.shape == ()
    assert m.grad_fn.name() == "MedianBackward0"
    m.backward()
    assert x.grad.tolist() == [[0.0, 0.0], [0.0, 1.0]]
    # PyTorch: the median of no elements is NaN.
    assert np.isnan(fg.ones(0).median().item())


def test_median_propagates_nan_and_nanmedian_skips_it():
    x = fg.tensor([[1.0, float("nan"), 3.0, 2.0], [4.0, 1.0, 2.0, 8.0]])
    v, i = x.median(1)
    assert np.isnan(v[0].item()) and i[0].item() == 1
    assert v[1].item() == 2.0 and i[1].item() == 2
    v, i = x.nanmedian(1)
    assert v.tolist() == [2.0, 2.0] and i.tolist() == [3, 2]
    assert fg.nanmedian(fg.tensor([float("nan"), 1.0, 5.0])).item() == 1.0
    assert np.isnan(fg.median(fg.tensor([float("nan"), 1.0, 5.0])).item())


def test_dim_out_of_range():
    with pytest.raises(IndexError, match="Dimension out of range"):
        fg.ones(2, 3).sort(2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        fg.ones(2, 3).median(-3)
