"""``index_put``, ``index_put_`` and ``t[key] = value`` with index tensors in the key:
values against NumPy's fancy assignment (``np.add.at`` when accumulating) for keys mixing
slices, ints, ``None``, ``...``, integer and boolean index tensors, on contiguous and
transposed destinations and views; the ``IndexPutBackward0`` node checked by
gradcheck/gradgradcheck in float64; PyTorch's errors, with the destination unchanged.
Also ``addmm``'s ``beta``/``alpha`` on its one ``AddmmBackward0`` node."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from ferrograd.autograd import gradcheck, gradgradcheck
from helpers import FEW


def T(a):
    return fg.tensor(np.asarray(a))


@st.composite
def keyed(draw):
    """(shape, key as NumPy objects): a key with at least one index array, whose picks
    are distinct (a repeated target keeps an order-dependent value)."""
    nd = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=nd, max_size=nd)))
    key, dim, arrays = [], 0, 0
    used_ellipsis = False
    while dim < nd:
        kind = draw(st.sampled_from(["slice", "int", "array", "mask", "none", "ellipsis"]))
        n = shape[dim]
        if kind == "slice":
            start = draw(st.integers(-n, n))
            step = draw(st.sampled_from([1, 2, 3]))
            key.append(slice(start, None, step))
            dim += 1
        elif kind == "int":
            key.append(draw(st.integers(-n, n - 1)))
            dim += 1
        elif kind == "array" and arrays == 0:
            k = draw(st.integers(0, n))
            picks = draw(st.permutations(range(-n, 0) if draw(st.booleans()) else range(n)))
            arr = np.array(picks[:k], dtype=np.int64)
            if draw(st.booleans()) and k % 2 == 0 and k:
                arr = arr.reshape(2, k // 2)
            key.append(arr)
            arrays += 1
            dim += 1
        elif kind == "mask" and arrays == 0:
            span = draw(st.integers(1, min(2, nd - dim)))
            mshape = shape[dim:dim + span]
            flags = draw(st.lists(st.booleans(), min_size=int(np.prod(mshape)),
                                  max_size=int(np.prod(mshape))))
            key.append(np.array(flags, dtype=bool).reshape(mshape))
            arrays += 1
            dim += span
        elif kind == "none":
            key.append(None)
        elif kind == "ellipsis" and not used_ellipsis:
            key.append(Ellipsis)
            used_ellipsis = True
            dim = nd  # the rest of the dimensions
        if len(key) > 6:
            break
    if arrays == 0:
        n = shape[0]
        trailing = draw(st.integers(0, nd - 1))  # `x[i]` is `x[i, :, :]`
        key = [np.array(draw(st.permutations(range(n)))[:draw(st.integers(0, n))],
                        dtype=np.int64)] + [slice(None)] * trailing
    return shape, tuple(key)


def fg_key(key):
    return tuple(T(k) if isinstance(k, np.ndarray) else k for k in key)


def value_for(data, target_shape):
    """A value broadcasting to ``target_shape``: some leading dimensions dropped, some
    sizes 1."""
    drop = data.draw(st.integers(0, len(target_shape)))
    shape = [1 if data.draw(st.booleans()) else s for s in target_shape[drop:]]
    return np.random.default_rng(len(shape)).normal(size=shape)


@FEW
@given(keyed(), st.booleans(), st.booleans(), st.data())
def test_setitem_with_index_tensors_matches_numpy(case, transposed, accumulate, data):
    shape, key = case
    base = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    want = base.copy()
    v = value_for(data, want[key].shape)
    if accumulate:
        np.add.at(want, key, np.broadcast_to(v, want[key].shape))
    else:
        want[key] = v
    if transposed and len(shape) > 1:
        # The same logical values in transposed memory.
        x = T(np.ascontiguousarray(np.swapaxes(base, 0, -1))).transpose(0, -1)
    else:
        x = T(base)
    k = fg_key(key)
    if all(isinstance(item, fg.Tensor) for item in k):
        out = fg.index_put(x, k, T(v), accumulate=accumulate)
        np.testing.assert_array_equal(out.numpy(), want)
        np.testing.assert_array_equal(x.numpy(), base)  # out of place
        assert x.index_put_(k, T(v), accumulate=accumulate) is x
    elif accumulate:
        return  # index_put takes index tensors only; __setitem__ has no accumulate
    else:
        x[k] = T(v)
    np.testing.assert_array_equal(x.numpy(), want)


@FEW
@given(keyed(), st.data())
def test_setitem_into_a_view_writes_the_base(case, data):
    shape, key = case
    big = np.arange(2 * np.prod(shape), dtype=np.float64).reshape((2,) + shape)
    want = big.copy()
    target = want[1]
    v = value_for(data, target[key].shape)
    target[key] = v
    x = T(big)
    view = x[1]
    view[fg_key(key)] = T(v)
    np.testing.assert_array_equal(x.numpy(), want)


def test_repeated_picks_accumulate_in_order_and_keep_the_last_write():
    x = fg.zeros(4)
    i = T([1, 1, 3, 1])
    v = fg.tensor([1.0, 2.0, 3.0, 4.0])
    assert fg.index_put(x, (i,), v, accumulate=True).tolist() == [0.0, 7.0, 0.0, 3.0]
    x[i] = v
    assert x.tolist() == [0.0, 4.0, 0.0, 3.0]


def test_value_sharing_memory_with_the_destination_is_read_before_writing():
    x = T(np.arange(12.0).reshape(3, 4))
    x[T([1, 2])] = x[0]
    np.testing.assert_array_equal(x.numpy(), [[0, 1, 2, 3]] * 3)
    y = T(np.arange(6.0))
    y[T([0, 1, 2, 3, 4, 5])] = y.flip(0)
    np.testing.assert_array_equal(y.numpy(), np.arange(6.0)[::-1])


def test_mask_takes_a_zero_dim_value_of_another_dtype_index_tensors_do_not():
    x = fg.zeros(3)
    x[x == 0] = fg.tensor(2.0, dtype=fg.float64)
    assert x.dtype == fg.float32 and x.tolist() == [2.0, 2.0, 2.0]
    msg = ("Index put requires the source and destination dtypes match, got Float for the "
           "destination and Double for the source.")
    with pytest.raises(RuntimeError, match=msg):
        x[T([0])] = fg.tensor([1.0], dtype=fg.float64)
    with pytest.raises(RuntimeError, match=msg):
        fg.index_put(x, (T([0]),), fg.tensor(1.0, dtype=fg.float64))
    with pytest.raises(RuntimeError, match="got Long for the destination and Float"):
        fg.zeros(3, dtype=fg.int64).index_put_((T([0]),), fg.tensor([1.5]))
    assert x.tolist() == [2.0, 2.0, 2.0]


def test_errors_leave_the_destination_unchanged():
    x = T(np.arange(6.0).reshape(2, 3))
    before = x.numpy().copy()
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        x[T([0, 5])] = 1.0
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[2\] cannot "
                       r"be broadcast to indexing result of shape \[1, 3\]"):
        x[T([1])] = T([1.0, 2.0])
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        x[T([0.0])] = 1.0
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 1, but got "
                       "NoneType"):
        fg.index_put(x, (T([0]), None), T(1.0))
    with pytest.raises(TypeError, match=r"index_put\(\): argument 'values' \(position 3\) must "
                       "be Tensor, not float"):
        fg.index_put(x, (T([0]),), 1.0)
    np.testing.assert_array_equal(x.numpy(), before)


def test_int32_indices_are_accepted():
    x = fg.zeros(4)
    x[fg.tensor([0, 2], dtype=fg.int32)] = 1.0
    assert x.tolist() == [1.0, 0.0, 1.0, 0.0]


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_is_one_node_with_gradients_of_any_order(accumulate):
    rng = np.random.default_rng(0)
    x = fg.tensor(rng.normal(size=(4, 3)), requires_grad=True)
    v = fg.tensor(rng.normal(size=(3,)), requires_grad=True)  # broadcast over the picks
    key = (T([2, 0]),)
    out = fg.index_put(x, key, v, accumulate=accumulate)
    assert out.grad_fn.name() == "IndexPutBackward0"
    f = lambda a, b: fg.index_put(a, key, b, accumulate=accumulate)  # noqa: E731
    assert gradcheck(f, (x, v))
    assert gradgradcheck(f, (x, v))
    out.sum().backward()
    want = np.ones((4, 3))
    if not accumulate:
        want[[2, 0]] = 0.0
    np.testing.assert_array_equal(x.grad.numpy(), want)
    np.testing.assert_array_equal(v.grad.numpy(), [2.0, 2.0, 2.0])


def test_setitem_records_through_index_put():
    w = fg.ones(3, requires_grad=True)
    y = w * 2
    y[T([0, 2])] = w[1] * 5
    assert y.grad_fn.name() == "IndexPutBackward0"
    y.sum().backward()
    # y = [5 w1, 2 w1, 5 w1]: only w1 has a gradient.
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 12.0, 0.0])


def test_index_put_under_vmap():
    rng = np.random.default_rng(3)
    x = fg.tensor(rng.normal(size=(5, 4, 3)))
    v = fg.tensor(rng.normal(size=(5, 2, 3)))
    key = (T([3, 1]),)
    for acc in (False, True):
        got = fg.vmap(lambda a, b, acc=acc: fg.index_put(a, key, b, accumulate=acc))(x, v)
        want = np.stack([fg.index_put(x[k], key, v[k], accumulate=acc).numpy()
                         for k in range(5)])
        np.testing.assert_array_equal(got.numpy(), want)
    got = fg.vmap(lambda a: fg.index_put(a, (T([0]),), T([9.0, 8.0, 7.0])))(x)
    np.testing.assert_array_equal(got.numpy()[:, 0], [[9.0, 8.0, 7.0]] * 5)


# ----- addmm -----------------------------------------------------------------------


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 3), (2, 1), (-1.5, 0.25)])
def test_addmm_scales_are_one_node(beta, alpha):
    rng = np.random.default_rng(1)
    c, a, b = rng.normal(size=(3,)), rng.normal(size=(2, 4)), rng.normal(size=(4, 3))
    ct, at, bt = (fg.tensor(t, requires_grad=True) for t in (c, a, b))
    out = fg.addmm(ct, at, bt, beta=beta, alpha=alpha)
    np.testing.assert_allclose(out.detach().numpy(), beta * c + alpha * (a @ b), rtol=1e-12, atol=1e-12)
    assert out.grad_fn.name() == "AddmmBackward0"
    f = lambda x, y, z: fg.addmm(x, y, z, beta=beta, alpha=alpha)  # noqa: E731
    assert gradcheck(f, (ct, at, bt))
    assert gradgradcheck(f, (ct, at, bt))


def test_addmm_with_beta_zero_ignores_nan_in_input():
    c = fg.tensor([[float("nan"), float("inf")]])
    a, b = fg.ones(1, 2), fg.ones(2, 2)
    assert fg.addmm(c, a, b, beta=0).tolist() == [[2.0, 2.0]]
    assert fg.addmm(c, a, b, beta=0, alpha=0.5).tolist() == [[1.0, 1.0]]


def test_addmm_errors():
    with pytest.raises(TypeError, match=r"addmm\(\): argument 'mat1' \(position 2\) must be "
                       "Tensor, not list"):
        fg.addmm(fg.ones(2, 2), [[1.0]], fg.ones(2, 2))
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        fg.addmm(fg.ones(2, 2), fg.ones(2, 3), fg.ones(2, 2), beta=2)


def test_mask_with_a_number_is_a_masked_fill():
    w = fg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = w * 1.0
    y[y < 0] = fg.tensor(0.5, requires_grad=True) * 2
    assert y.grad_fn.name() == "MaskedFillBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 0.0, 1.0])
    x = T(np.arange(6.0).reshape(2, 3))
    x[T([True, False])] = -1.0  # a mask over the leading dimension only
    np.testing.assert_array_equal(x.numpy(), [[-1.0, -1.0, -1.0], [3.0, 4.0, 5.0]])


def test_nonzero_positions():
    rng = np.random.default_rng(4)
    for shape in [(0,), (7,), (3, 5), (2, 1, 4), ()]:
        a = rng.random(shape) > 0.5
        got = T(a).nonzero().numpy()
        want = np.argwhere(a)
        assert got.shape == want.shape and (got == want).all()
