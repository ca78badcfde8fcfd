"""In-place writes into views of tensors in the graph (PyTorch's CopySlices)."""

import re

import numpy as np
import pytest

import ferrograd as fg


def arr(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


def test_write_through_slice():
    a = fg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = fg.tensor([10.0, 20.0], requires_grad=True)
    x = a.clone()
    v = x[1:3]
    v.mul_(3)
    v.add_(y)
    assert x.grad_fn.name() == "CopySlices"
    assert v.grad_fn.name() == "AsStridedBackward0"
    np.testing.assert_allclose(arr(x), [1, 16, 29, 4])
    (x * x).sum().backward()
    # d/dx sum(x^2) = 2x; a[1:3] went through *3.
    np.testing.assert_allclose(arr(a.grad), [2, 3 * 32, 3 * 58, 8])
    np.testing.assert_allclose(arr(y.grad), [32, 58])


def test_later_use_of_the_view_sees_the_write():
    a = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = fg.tensor([5.0], requires_grad=True)
    x = a * 2
    v = x[0:2]
    v[1:2].copy_(y)  # writes x[1]
    (v * fg.tensor([1.0, 7.0])).sum().backward()
    np.testing.assert_allclose(arr(a.grad), [2, 0, 0])
    np.testing.assert_allclose(arr(y.grad), [7])


def test_write_through_transpose():
    a = fg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    m = fg.tensor([[1.0, 10.0], [100.0, 1000.0]])
    w = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = a * 1
    bt = b.t()
    bt.mul_(m)
    # b[i][j] = a[i][j] * m[j][i]
    np.testing.assert_allclose(arr(b), arr(a) * arr(m).T)
    (b * w).sum().backward()
    np.testing.assert_allclose(arr(a.grad), arr(w) * arr(m).T)


def test_write_through_select():
    a = fg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = a.clone()
    x.select(1, 2).mul_(0.5)
    x[1].copy_(y * 2)
    w = fg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    (x * w).sum().backward()
    np.testing.assert_allclose(arr(a.grad), [[1, 2, 1.5], [0, 0, 0]])
    np.testing.assert_allclose(arr(y.grad), [8, 10, 12])


def test_setitem_backpropagates_into_both():
    a = fg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = fg.tensor([2.0, 3.0], requires_grad=True)
    x = a.clone()
    x[0] = y[0] * 3
    x[2:] = y
    assert x.grad_fn.name() == "CopySlices"
    np.testing.assert_allclose(arr(x), [6, 2, 2, 3])
    (x * fg.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_allclose(arr(a.grad), [0, 2, 0, 0])
    np.testing.assert_allclose(arr(y.grad), [3 + 3, 4])


def test_setitem_constant_cuts_the_region():
    a = fg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    x = a * 1
    x[:, 0] = 0.0
    x.sum().backward()
    np.testing.assert_allclose(arr(a.grad), [[0, 1], [0, 1]])


def test_setitem_on_a_view_updates_the_view():
    a = fg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = fg.tensor(9.0, requires_grad=True)
    x = a.clone()
    v = x[1:]
    v[0] = y
    (v * fg.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(arr(a.grad), [0, 0, 2, 3])
    np.testing.assert_allclose(arr(y.grad), 1)


def test_write_into_untracked_base_makes_it_require_grad():
    y = fg.tensor([1.0, 2.0], requires_grad=True)
    x = fg.zeros(4)
    x[1:3] = y * y
    assert x.requires_grad and x.grad_fn.name() == "CopySlices"
    x.sum().backward()
    np.testing.assert_allclose(arr(y.grad), [2, 4])


def test_gradcheck_clone_then_write_slice():
    def f(a, b):
        x = a.clone()
        x[1:3].mul_(2.0)
        x[1:3].add_(b)
        x[0:2, 1].add_(b[:, 0] * b[:, 1])
        return (x * x).sum()

    a = fg.tensor(np.random.default_rng(0).standard_normal((4, 3)), dtype=fg.float64, requires_grad=True)
    b = fg.tensor(np.random.default_rng(1).standard_normal((2, 3)), dtype=fg.float64, requires_grad=True)
    assert fg.autograd.gradcheck(f, (a, b))


def test_second_order_through_copyslices():
    a = fg.tensor([1.0, 2.0, 3.0], dtype=fg.float64, requires_grad=True)
    y = fg.tensor([2.0], dtype=fg.float64, requires_grad=True)
    x = a * a
    x[1:2].copy_(y * y * y)
    out = x.sum()
    (ga, gy) = fg.autograd.grad(out, (a, y), create_graph=True)
    np.testing.assert_allclose(arr(ga), [2, 0, 6])
    np.testing.assert_allclose(arr(gy), [12])
    (ggy,) = fg.autograd.grad(gy.sum(), (y,))
    np.testing.assert_allclose(arr(ggy), [12])


def test_leaf_errors():
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        a.mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        a[0:1].mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        a.t().add_(1)
    with pytest.raises(RuntimeError, match="a leaf Variable"):
        a[0] = 3.0
    with pytest.raises(RuntimeError, match="a leaf Variable"):
        a.normal_()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        a[0:1].uniform_()
    with fg.no_grad():
        a[0:1].mul_(2)
        a.uniform_(0, 1)
    assert a.is_leaf and a.grad_fn is None


def test_expanded_view_write_is_an_error():
    a = fg.tensor([1.0], requires_grad=True)
    x = a.clone()
    e = x.expand(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e.mul_(fg.tensor([1.0, 2.0, 3.0]))


def test_version_is_shared_and_saved_base_raises():
    a = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = a * 1
    v1, v2 = x[0:2], x[1:]
    y = x * x  # saves x at version 0 (as PyTorch, the message names x's current node)
    assert x._version == v1._version == v2._version == 0
    v1.add_(1)
    assert x._version == v1._version == v2._version == 1
    v2[0] = 5.0
    assert x._version == v1._version == v2._version == 2
    msg = (
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        "[ferrograd.FloatTensor [3]], which is output 0 of CopySlices, is at version 2; expected version 0 instead."
    )
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        y.sum().backward()


def test_normal_and_uniform():
    fg.manual_seed(0)
    t = fg.zeros(20000, dtype=fg.float64)
    assert t.normal_(2.0, 3.0) is t
    assert t._version == 1
    vals = arr(t)
    assert abs(vals.mean() - 2.0) < 0.1 and abs(vals.std() - 3.0) < 0.1
    t.uniform_(-1.0, 3.0)
    assert t._version == 2
    vals = arr(t)
    assert vals.min() >= -1.0 and vals.max() < 3.0
    assert abs(vals.mean() - 1.0) < 0.05
    f = fg.empty(5000).uniform_()
    assert f.dtype == fg.float32 and 0.0 <= arr(f).min() and arr(f).max() < 1.0
    g = fg.zeros(5000).normal_()
    assert abs(arr(g).mean()) < 0.1 and abs(arr(g).std() - 1.0) < 0.1
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        fg.zeros(3).normal_(0.0, -1.0)
    with pytest.raises(RuntimeError, match="uniform_ expects to return a"):
        fg.zeros(3).uniform_(2.0, 1.0)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        fg.zeros(3, dtype=fg.int64).normal_()


def test_random_fill_of_a_view_cuts_the_gradient():
    a = fg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    x = a * 2
    x[1:3].uniform_()
    assert x.grad_fn.name() == "CopySlices"
    x.sum().backward()
    np.testing.assert_allclose(arr(a.grad), [2, 0, 0, 2])


def test_view_taken_before_a_write_to_its_base_follows_the_new_history():
    a = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = a * 1
    v = x[0:2]
    x.mul_(2)
    assert v.grad_fn.name() == "AsStridedBackward0"
    v.sum().backward()
    np.testing.assert_allclose(arr(a.grad), [2, 2, 0])


def test_expanded_view_used_after_its_base_changed_follows_the_new_history():
    a = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = a * 1
    e = x.expand(2, 3)
    x.mul_(2)
    assert e.grad_fn.name() == "AsStridedBackward0"
    e.sum().backward()
    # Both rows read x, which is now 2 * a (PyTorch gives the same).
    assert a.grad.tolist() == [4.0, 4.0, 4.0]


def test_writing_a_view_of_itself_reads_a_snapshot_as_numpy_does():
    # PyTorch refuses a copy between overlapping memory; the value written is
    # the source as it was before the write (NumPy's result), where an
    # element-by-element copy used to smear the first element along.
    x = fg.arange(6.0)
    x[1:] = x[:-1]
    a = np.arange(6.0)
    a[1:] = a[:-1]
    np.testing.assert_array_equal(x.numpy(), a)
    y = fg.arange(12.0).reshape(3, 4)
    y[:, 1:] = y[:, :-1]
    b = np.arange(12.0).reshape(3, 4)
    b[:, 1:] = b[:, :-1]
    np.testing.assert_array_equal(y.numpy(), b)
    z = fg.arange(8.0)
    z[:4] = z[2:6]  # the other direction
    c = np.arange(8.0)
    c[:4] = c[2:6]
    np.testing.assert_array_equal(z.numpy(), c)


@pytest.mark.parametrize("make", [
    lambda b: b.t(),
    lambda b: b[::2, 1:],
    lambda b: b.reshape(4, 3, 5).permute(2, 0, 1),
    lambda b: b[:, 3],
    lambda b: b[:0],
])
@pytest.mark.parametrize("how", ["fill_", "zero_", "uniform_", "mul_"])
def test_writes_into_strided_views_touch_exactly_the_view(make, how):
    # Fills go in address order and computed values through tiled copies;
    # either way every element of the view changes and nothing else does.
    base = fg.arange(60.0).reshape(12, 5) + 1
    before = arr(base)
    view = make(base)
    idx = make(fg.arange(60).reshape(12, 5)).numpy().ravel()
    if how == "fill_":
        view.fill_(-2.5)
        want = np.full(idx.size, -2.5)
    elif how == "zero_":
        view.zero_()
        want = np.zeros(idx.size)
    elif how == "mul_":
        want = before.ravel()[idx] * 3
        view.mul_(3)
    else:
        view.uniform_(-9, -8)
    after = arr(base).ravel()
    if how == "uniform_":
        assert ((after[idx] >= -9) & (after[idx] < -8)).all()
    else:
        np.testing.assert_array_equal(after[idx], want)
    untouched = np.setdiff1d(np.arange(60), idx)
    np.testing.assert_array_equal(after[untouched], before.ravel()[untouched])
