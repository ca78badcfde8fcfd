"""The index/scatter family (index_add/copy/fill, scatter_/scatter_add_,
scatter_reduce, masked_scatter, put_, take, take_along_dim) and the scans
(cumprod, cummax, cummin, logcumsumexp): values against NumPy, float64
gradcheck/gradgradcheck, in-place semantics and error texts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from helpers import FEW, check_grads, op_shapes, values

LEAF_MSG = "a leaf Variable that requires grad is being used in an in-place operation."


def T(a):
    return fg.tensor(np.asarray(a))


# ----- index_add / index_copy / index_fill ---------------------------------------------


@st.composite
def index_case(draw, min_dims=1):
    shape = draw(op_shapes(min_dims=min_dims, max_dims=3, min_side=1))
    dim = draw(st.integers(0, len(shape) - 1))
    k = draw(st.integers(0, 4))
    idx = draw(st.lists(st.integers(0, shape[dim] - 1), min_size=k, max_size=k))
    src_shape = list(shape)
    src_shape[dim] = k
    return shape, dim, np.array(idx, dtype=np.int64), tuple(src_shape)


@FEW
@given(index_case(), st.data())
def test_index_add_values_and_grads(case, data):
    shape, dim, idx, src_shape = case
    a = data.draw(values(shape))
    s = data.draw(values(src_shape))
    want = a.copy()
    np.add.at(np.moveaxis(want, dim, 0), idx, 2.0 * np.moveaxis(s, dim, 0))
    got = fg.index_add(T(a), dim, T(idx), T(s), alpha=2.0)
    np.testing.assert_allclose(got.numpy(), want)
    check_grads(lambda x, y: x.index_add(dim, T(idx), y, alpha=2.0), a, s)


@FEW
@given(index_case(), st.data())
def test_index_copy_values_and_grads(case, data):
    shape, dim, idx, src_shape = case
    idx = np.unique(idx)  # repeated targets are order-dependent, as in PyTorch
    src_shape = list(src_shape)
    src_shape[dim] = len(idx)
    a = data.draw(values(shape))
    s = data.draw(values(tuple(src_shape)))
    want = a.copy()
    np.moveaxis(want, dim, 0)[idx] = np.moveaxis(s, dim, 0)
    np.testing.assert_allclose(T(a).index_copy(dim, T(idx), T(s)).numpy(), want)
    check_grads(lambda x, y: x.index_copy(dim, T(idx), y), a, s)


@FEW
@given(index_case(), st.data())
def test_index_fill_values_and_grads(case, data):
    shape, dim, idx, _ = case
    a = data.draw(values(shape))
    want = a.copy()
    np.moveaxis(want, dim, 0)[idx] = -7.0
    np.testing.assert_allclose(T(a).index_fill(dim, T(idx), -7.0).numpy(), want)
    np.testing.assert_allclose(T(a).index_fill(dim, T(idx), fg.tensor(-7.0)).numpy(), want)
    check_grads(lambda x: x.index_fill(dim, T(idx), 0.5), a)


def test_index_inplace_forms_and_leaf():
    x = fg.zeros(3, 2)
    v = x._version
    assert x.index_add_(0, fg.tensor([0, 0, 2]), fg.ones(3, 2)) is x
    assert x.tolist() == [[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]] and x._version > v
    x.index_fill_(1, fg.tensor([1]), 9)
    assert x[:, 1].tolist() == [9.0, 9.0, 9.0]
    x.index_copy_(0, fg.tensor([1]), fg.full((1, 2), 4.0))
    assert x[1].tolist() == [4.0, 4.0]
    leaf = fg.zeros(2, requires_grad=True)
    for call in (
        lambda: leaf.index_add_(0, fg.tensor([0]), fg.ones(1)),
        lambda: leaf.index_fill_(0, fg.tensor([0]), 1.0),
        lambda: leaf.index_copy_(0, fg.tensor([0]), fg.ones(1)),
        lambda: leaf.scatter_(0, fg.tensor([0]), fg.ones(1)),
        lambda: leaf.masked_scatter_(fg.tensor([True, False]), fg.ones(2)),
        lambda: leaf.put_(fg.tensor([0]), fg.ones(1)),
    ):
        with pytest.raises(RuntimeError, match=LEAF_MSG):
            call()
    assert leaf.tolist() == [0.0, 0.0]


def test_index_errors():
    x = fg.zeros(3, 2)
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 3"):
        x.index_fill(0, fg.tensor([3]), 1.0)
    with pytest.raises(IndexError, match="Expected dtype int64 for index"):
        x.index_fill(0, fg.tensor([0.0]), 1.0)
    with pytest.raises(RuntimeError, match="Number of indices \\(2\\) should be equal"):
        x.index_add(0, fg.tensor([0, 1]), fg.ones(3, 2))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_add(0, fg.tensor([[0]]), fg.ones(1, 2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.index_add(2, fg.tensor([0]), fg.ones(1, 2))


# ----- scatter_ / scatter_add_ / scatter_reduce ----------------------------------------


def test_scatter_inplace_forms():
    x = fg.zeros(2, 3)
    idx = fg.tensor([[0, 1, 2], [2, 0, 0]])
    x.scatter_(1, idx, fg.ones(2, 3))
    assert x.tolist() == [[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]]
    y = fg.zeros(2, 3)
    y.scatter_(1, idx, 5.0)
    assert y.tolist() == [[5.0, 5.0, 5.0], [5.0, 0.0, 5.0]]
    z = fg.zeros(2, 3)
    z.scatter_add_(1, idx, fg.ones(2, 3))
    assert z.tolist() == [[1.0, 1.0, 1.0], [2.0, 0.0, 1.0]]
    w = fg.ones(2, 3)
    w.scatter_(1, idx, fg.full((2, 3), 3.0), reduce="multiply")
    assert w.tolist() == [[3.0, 3.0, 3.0], [9.0, 1.0, 3.0]]
    w.scatter_(1, idx, 1.0, reduce="add")
    assert w.tolist() == [[4.0, 4.0, 4.0], [11.0, 1.0, 4.0]]
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply"):
        w.scatter_(1, idx, 1.0, reduce="max")


def _np_scatter_reduce(a, dim, idx, src, reduce, include_self):
    out = a.copy()
    groups = {}
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        groups.setdefault(tuple(tgt), []).append(src[pos])
    for tgt, vals in groups.items():
        pool = ([a[tgt]] if include_self else []) + vals
        out[tgt] = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max,
                    "amin": np.min}[reduce](pool)  # fmt: skip
    return out


@st.composite
def scatter_case(draw):
    shape = draw(op_shapes(min_dims=1, max_dims=3, min_side=1))
    dim = draw(st.integers(0, len(shape) - 1))
    ishape = tuple(draw(st.integers(0, s)) for s in shape)
    ishape = tuple(ishape[i] if i != dim else draw(st.integers(0, 4)) for i in range(len(shape)))
    idx = draw(
        st.lists(
            st.integers(0, shape[dim] - 1),
            min_size=int(np.prod(ishape)),
            max_size=int(np.prod(ishape)),
        )  # fmt: skip
    )
    return shape, dim, np.array(idx, dtype=np.int64).reshape(ishape)


@FEW
@given(scatter_case(), st.sampled_from(["sum", "prod", "mean", "amax", "amin"]),
       st.booleans(), st.data())  # fmt: skip
def test_scatter_reduce_values_and_grads(case, reduce, include_self, data):
    shape, dim, idx = case
    a = data.draw(values(shape, unique=True))
    src = data.draw(values(idx.shape, unique=True)) + 0.01  # no ties with a
    want = _np_scatter_reduce(a, dim, idx, src, reduce, include_self)
    got = fg.scatter_reduce(T(a), dim, T(idx), T(src), reduce, include_self=include_self)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    check_grads(
        lambda x, s: x.scatter_reduce(dim, T(idx), s, reduce, include_self=include_self), a, src
    )


def test_scatter_reduce_ties_share_gradient_and_inplace():
    x = fg.tensor([1.0, 0.0], dtype=fg.float64, requires_grad=True)
    s = fg.tensor([1.0, 1.0, 0.5], dtype=fg.float64, requires_grad=True)
    out = x.scatter_reduce(0, fg.tensor([0, 0, 1]), s, "amax")
    assert out.tolist() == [1.0, 0.5]
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1 / 3, 0.0])
    np.testing.assert_allclose(s.grad.numpy(), [1 / 3, 1 / 3, 1.0])
    y = fg.tensor([2.0, 3.0])
    assert y.scatter_reduce_(0, fg.tensor([1, 1]), fg.tensor([4.0, 5.0]), "prod") is y
    assert y.tolist() == [2.0, 60.0]
    z = fg.tensor([2, 3])
    z.scatter_reduce_(0, fg.tensor([0, 0]), fg.tensor([4, 5]), "mean", include_self=False)
    assert z.tolist() == [4, 3]
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean"):
        y.scatter_reduce(0, fg.tensor([0]), fg.ones(1), "max")


def test_scatter_reduce_prod_with_zeros_gradient():
    x = fg.tensor([2.0], dtype=fg.float64, requires_grad=True)
    s = fg.tensor([0.0, 3.0, 0.0], dtype=fg.float64, requires_grad=True)
    out = x.scatter_reduce(0, fg.tensor([0, 0, 0]), s, "prod")
    out.sum().backward()
    assert out.item() == 0.0
    np.testing.assert_allclose(s.grad.numpy(), [0.0, 0.0, 0.0])
    s2 = fg.tensor([0.0, 3.0], dtype=fg.float64, requires_grad=True)
    x.scatter_reduce(0, fg.tensor([0, 0]), s2, "prod").sum().backward()
    np.testing.assert_allclose(s2.grad.numpy(), [6.0, 0.0])


# ----- masked_scatter / put_ / take / take_along_dim -----------------------------------


@FEW
@given(op_shapes(max_dims=3), st.data())
def test_masked_scatter_values_and_grads(shape, data):
    a = data.draw(values(shape))
    m = data.draw(st.lists(st.booleans(), min_size=a.size, max_size=a.size))
    m = np.array(m, dtype=bool).reshape(shape)
    src = data.draw(values((a.size + 1,)))
    want = a.copy()
    want[m] = src[: m.sum()]
    np.testing.assert_allclose(T(a).masked_scatter(T(m), T(src)).numpy(), want)
    check_grads(lambda x, s: x.masked_scatter(T(m), s), a, src)


def test_masked_scatter_broadcast_mask_and_errors():
    x = fg.zeros(2, 3)
    x.masked_scatter_(fg.tensor([True, False, True]), fg.arange(1.0, 7.0))
    assert x.tolist() == [[1.0, 0.0, 2.0], [3.0, 0.0, 4.0]]
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        x.masked_scatter(fg.tensor([1, 0, 1]), fg.ones(6))
    with pytest.raises(RuntimeError, match="at least as many elements"):
        x.masked_scatter(fg.tensor([True, True, True]), fg.ones(5))


def test_put_and_take():
    x = fg.zeros(2, 3)
    assert x.put_(fg.tensor([0, -1, 4]), fg.tensor([1.0, 2.0, 3.0])) is x
    assert x.tolist() == [[1.0, 0.0, 0.0], [0.0, 3.0, 2.0]]
    x.put_(fg.tensor([0, 0]), fg.tensor([1.0, 1.0]), accumulate=True)
    assert x[0, 0].item() == 3.0
    with pytest.raises(IndexError, match="out of range: tried to access index 6 on a tensor of 6"):
        x.put_(fg.tensor([6]), fg.ones(1))
    src = fg.tensor([[4.0, 3.0, 5.0], [6.0, 7.0, 8.0]])
    assert fg.take(src, fg.tensor([[0, 2], [-1, 5]])).tolist() == [[4.0, 5.0], [8.0, 8.0]]
    with pytest.raises(IndexError, match="tried to access index -7"):
        src.take(fg.tensor([-7]))
    with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
        src.take(fg.tensor([0.0]))


def test_take_layouts_dtypes_and_edges():
    rng = np.random.default_rng(11)
    a = rng.standard_normal((64, 300)).astype(np.float32)
    idx = rng.integers(-a.size, a.size, (70, 90))
    # A transposed input is read in its logical (row-major) order.
    np.testing.assert_array_equal(fg.take(T(a).t(), T(idx)).numpy(), a.T.reshape(-1)[idx])
    np.testing.assert_array_equal(fg.take(T(a), T(idx).t()).numpy(), a.reshape(-1)[idx.T])
    for dt in (fg.int64, fg.bool, fg.float64, fg.float16):
        got = fg.take(T(a).to(dt), T(idx))
        assert got.dtype == dt
        np.testing.assert_array_equal(got.numpy(), T(a).to(dt).numpy().reshape(-1)[idx])
    # A 0-d input, an empty index, and any index into an empty input.
    assert fg.take(fg.tensor(2.5), fg.tensor([0, -1, 0])).tolist() == [2.5, 2.5, 2.5]
    assert fg.take(T(a), fg.zeros(0, 3, dtype=fg.int64)).shape == (0, 3)
    assert fg.take(fg.zeros(0), fg.zeros(0, dtype=fg.int64)).shape == (0,)
    with pytest.raises(IndexError, match="tried to access index 0 on a tensor of 0 elements"):
        fg.take(fg.zeros(0), fg.tensor([0]))
    # The first bad index is named, and nothing is changed by the failure.
    bad = idx.copy()
    bad[3, 4], bad[50, 1] = a.size + 5, -a.size - 9
    with pytest.raises(IndexError, match=f"tried to access index {a.size + 5} on a tensor of"):
        fg.take(T(a), T(bad))
    # Repeated picks add their gradients.
    x = T(a).requires_grad_()
    picks = fg.tensor([[1, 1, -1], [1, 2, 19199]])
    fg.take(x, picks).backward(fg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    g = x.grad.reshape(-1)
    assert g[1].item() == 7.0 and g[2].item() == 5.0 and g[-1].item() == 9.0
    assert float(g.abs().sum()) == 21.0


@FEW
@given(op_shapes(min_dims=1, max_dims=3, min_side=1), st.data())
def test_take_and_take_along_dim_grads(shape, data):
    a = data.draw(values(shape))
    n = a.size
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=3, max_size=3)))
    np.testing.assert_allclose(fg.take(T(a), T(idx)).numpy(), a.reshape(-1)[idx])
    check_grads(lambda x: x.take(T(idx)), a)
    dim = data.draw(st.integers(0, len(shape) - 1))
    order = np.argsort(a, axis=dim)
    np.testing.assert_allclose(
        fg.take_along_dim(T(a), T(order), dim).numpy(), np.take_along_axis(a, order, dim)
    )
    check_grads(lambda x: fg.take_along_dim(x, T(order), dim), a)


def test_take_along_dim_broadcast_and_flat():
    a = np.arange(6.0).reshape(2, 3)
    idx = np.array([[2], [0]])
    got = fg.take_along_dim(T(a), T(idx), 1)
    assert got.tolist() == [[2.0], [3.0]]
    assert fg.take_along_dim(T(a), T(np.array([[1]])), 1).tolist() == [[1.0], [4.0]]
    assert T(a).take_along_dim(T(np.array([5, 0]))).tolist() == [5.0, 0.0]
    with pytest.raises(RuntimeError, match="should have the same number of dimensions"):
        fg.take_along_dim(T(a), T(np.array([0])), 1)


# ----- index_put ----------------------------------------------------------------------


@FEW
@given(op_shapes(min_dims=1, max_dims=3, min_side=1), st.booleans(), st.data())
def test_index_put_values_and_grads(shape, accumulate, data):
    a = data.draw(values(shape))
    k = data.draw(st.integers(1, len(shape)))
    n = data.draw(st.integers(0, 4))
    idx = tuple(
        np.array(
            data.draw(st.lists(st.integers(-s, s - 1), min_size=n, max_size=n)), dtype=np.int64
        )
        for s in shape[:k]
    )
    if not accumulate:
        # Repeated targets are order-dependent, as in PyTorch: keep one of each.
        lin = np.ravel_multi_index(tuple(i % s for i, s in zip(idx, shape)), shape[:k])
        _, keep = np.unique(lin, return_index=True)
        idx = tuple(i[np.sort(keep)] for i in idx)
        n = len(idx[0])
    v = data.draw(values((n,) + tuple(shape[k:])))
    want = a.copy()
    if accumulate:
        np.add.at(want, idx, v)
    else:
        want[idx] = v
    got = T(a).index_put(tuple(T(i) for i in idx), T(v), accumulate)
    np.testing.assert_allclose(got.numpy(), want)
    check_grads(lambda x, y: x.index_put(tuple(T(i) for i in idx), y, accumulate), a, v)


def test_index_put_inplace_bool_and_errors():
    x = fg.zeros(2, 3)
    v = x._version
    assert x.index_put_((fg.tensor([1]), fg.tensor([2])), fg.tensor(7.0)) is x
    assert x.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 7.0]] and x._version > v
    x.index_put_((fg.tensor([True, False]),), fg.tensor([1.0, 2.0, 3.0]), accumulate=True)
    assert x[0].tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 0 with size 2"):
        x.index_put_((fg.tensor([2]),), fg.tensor(1.0))
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x.index_put((fg.tensor([0]),) * 3, fg.tensor(1.0))
    with pytest.raises(TypeError, match="must be tuple of Tensors"):
        x.index_put(fg.tensor([0]), fg.tensor(1.0))
    with pytest.raises(RuntimeError, match=LEAF_MSG):
        fg.zeros(2, requires_grad=True).index_put_((fg.tensor([0]),), fg.tensor(1.0))


def test_cumprod_cumsum_inplace():
    z = fg.tensor([1.0, 2.0, 3.0])
    assert z.cumprod_(0) is z and z.tolist() == [1.0, 2.0, 6.0]
    assert z.cumsum_(0) is z and z.tolist() == [1.0, 3.0, 9.0]
    with pytest.raises(RuntimeError, match=LEAF_MSG):
        fg.ones(2, requires_grad=True).cumprod_(0)


# ----- scans ---------------------------------------------------------------------------


@FEW
@given(op_shapes(min_dims=1, max_dims=3), st.data())
def test_cumprod_values_and_grads(shape, data):
    a = data.draw(values(shape, -1.5, 1.5))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    np.testing.assert_allclose(fg.cumprod(T(a), dim).numpy(), np.cumprod(a, axis=dim))
    check_grads(lambda x: x.cumprod(dim), a)


def test_cumprod_zeros_gradient_and_dtype():
    x = fg.tensor([2.0, 0.0, 3.0, 4.0], dtype=fg.float64, requires_grad=True)
    fg.cumprod(x, 0).sum().backward()
    # d/dx1 of (2 + 2x1 + 2x1*3 + 2x1*3*4) = 2 + 6 + 24
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 32.0, 0.0, 0.0])
    assert fg.cumprod(fg.tensor([True, True, False]), 0).tolist() == [1, 1, 0]
    assert fg.cumprod(fg.tensor([1, 2, 3]), 0, dtype=fg.float64).dtype == fg.float64


@FEW
@given(op_shapes(min_dims=1, max_dims=3), st.data())
def test_cummax_cummin_values_and_grads(shape, data):
    a = data.draw(values(shape, unique=True))
    dim = data.draw(st.integers(0, len(shape) - 1))
    vals, idx = fg.cummax(T(a), dim)
    np.testing.assert_allclose(vals.numpy(), np.maximum.accumulate(a, axis=dim))
    np.testing.assert_allclose(np.take_along_axis(a, idx.numpy(), dim), vals.numpy())
    vals, idx = T(a).cummin(dim)
    np.testing.assert_allclose(vals.numpy(), np.minimum.accumulate(a, axis=dim))
    check_grads(lambda x: fg.cummax(x, dim)[0], a)
    check_grads(lambda x: fg.cummin(x, dim).values, a)


def test_cummax_ties_take_last_index():
    vals, idx = fg.cummax(fg.tensor([1.0, 3.0, 3.0, 2.0]), 0)
    assert idx.tolist() == [0, 1, 2, 2]
    vals, idx = fg.cummin(fg.tensor([2, 1, 1, 5]), 0)
    assert vals.tolist() == [2, 1, 1, 1] and idx.tolist() == [0, 1, 2, 2]
    nan = float("nan")
    vals, idx = fg.cummax(fg.tensor([1.0, nan, 5.0, nan, 2.0]), 0)
    assert idx.tolist() == [0, 1, 1, 3, 3]
    assert np.isnan(vals.numpy()[1:]).all()
    vals, idx = fg.cummax(fg.zeros(2, 0), 1)
    assert vals.shape == (2, 0) and idx.shape == (2, 0) and idx.dtype == fg.int64
    vals, idx = fg.cummax(fg.tensor([True, False, True]), 0)
    assert vals.tolist() == [True, True, True] and idx.tolist() == [0, 0, 2]


@FEW
@given(op_shapes(min_dims=1, max_dims=3), st.data())
def test_logcumsumexp_values_and_grads(shape, data):
    a = data.draw(values(shape, -3, 3))
    dim = data.draw(st.integers(0, len(shape) - 1))
    want = np.log(np.cumsum(np.exp(a), axis=dim))
    np.testing.assert_allclose(fg.logcumsumexp(T(a), dim).numpy(), want, rtol=1e-12, atol=1e-12)
    check_grads(lambda x: x.logcumsumexp(dim), a)


def test_logcumsumexp_large_values():
    got = fg.logcumsumexp(fg.tensor([1000.0, 1000.0], dtype=fg.float64), 0)
    np.testing.assert_allclose(got.numpy(), [1000.0, 1000.0 + np.log(2)])
