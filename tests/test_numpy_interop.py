"""NumPy interop: ``from_numpy`` / ``.numpy()`` / ``np.asarray`` share memory; ``fg.tensor`` copies."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
from helpers import NP_DTYPES, shapes

NUMPY_MSG = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."

_supported = st.sampled_from([np.float32, np.float64, np.int64, np.bool_])


@st.composite
def supported_arrays(draw, max_dims=3):
    dtype = draw(_supported)
    elements = None
    if dtype in (np.float32, np.float64):
        elements = st.floats(-1e6, 1e6, width=32 if dtype == np.float32 else 64)
    return draw(hnp.arrays(dtype, shapes(max_dims=max_dims), elements=elements))


@given(supported_arrays())
def test_from_numpy_keeps_dtype_values_and_shares_memory(arr):
    t = fg.from_numpy(arr)
    assert NP_DTYPES[t.dtype] == arr.dtype.type
    assert t.shape == arr.shape
    np.testing.assert_array_equal(t.numpy(), arr)
    if arr.size:
        arr.reshape(-1)[0] = not arr.reshape(-1)[0] if arr.dtype == np.bool_ else 7
        assert t.reshape(-1)[0].item() == arr.reshape(-1)[0]
        assert np.shares_memory(t.numpy(), arr)


@given(supported_arrays())
def test_tensor_roundtrip_copies(arr):
    t = fg.tensor(arr)
    back = t.numpy()
    assert back.dtype == arr.dtype and back.shape == arr.shape
    np.testing.assert_array_equal(back, arr)
    assert not np.shares_memory(back, arr)


def test_numpy_shares_memory_both_ways():
    t = fg.zeros(3)
    n = t.numpy()
    assert n.dtype == np.float32
    n[0] = 7.0
    assert t.tolist() == [7.0, 0.0, 0.0]
    t.add_(1)
    assert n.tolist() == [8.0, 1.0, 1.0]
    assert np.shares_memory(n, t.numpy())


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(6.0).reshape(2, 3)
    t = fg.from_numpy(a)
    assert t.dtype == fg.float64
    a[0, 0] = 100.0
    assert t[0, 0].item() == 100.0
    t.mul_(2)
    assert a[1, 2] == 10.0
    # an op's result is a new tensor, not a view of the array
    r = t * 1
    a[0, 1] = -1.0
    assert r[0, 1].item() == 2.0


def test_asarray_shares_memory_and_array_copies():
    t = fg.zeros(3)
    n = np.asarray(t)
    assert n.dtype == np.float32 and n.shape == (3,)
    n[1] = 5.0
    assert t.tolist() == [0.0, 5.0, 0.0]
    c = np.array(t)
    c[0] = 9.0
    assert t.tolist() == [0.0, 5.0, 0.0]
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.asarray(fg.tensor([[1, 2]])).tolist() == [[1, 2]]


def test_numpy_on_tensor_requiring_grad_raises():
    x = fg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        x.numpy()
    assert str(info.value) == NUMPY_MSG
    y = x * 2
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        y.numpy()
    # detach() gives a tensor that shares memory with x
    d = x.detach().numpy()
    d[0] = 9.0
    assert x.tolist() == [9.0, 1.0, 1.0]
    with fg.no_grad():
        # PyTorch refuses only with grad mode on: under no_grad() it converts.
        assert x.requires_grad
        assert x.numpy().tolist() == [9.0, 1.0, 1.0]
        assert np.asarray(y).tolist() == [2.0, 2.0, 2.0]
        assert not (x * 2).requires_grad
        assert (x * 2).numpy().tolist() == [18.0, 2.0, 2.0]


def test_asarray_on_tensor_requiring_grad_raises():
    # PyTorch's Tensor.__array__ calls self.numpy().
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        np.asarray(fg.ones(3, requires_grad=True))


def test_noncontiguous_arrays_and_views():
    a = np.arange(12.0).reshape(3, 4)
    for view in (a.T, a[::2, 1::2], a[:, 1]):
        t = fg.from_numpy(view)
        assert t.tolist() == view.tolist()
        assert np.shares_memory(t.numpy(), a)
    tt = fg.from_numpy(a.T)
    a[0, 3] = -5.0
    assert tt[3, 0].item() == -5.0
    # .numpy() of a strided tensor view
    base = fg.arange(6.0).view(2, 3)
    n = base.t().numpy()
    assert n.shape == (3, 2) and n.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    n[2, 1] = 50.0
    assert base[1, 2].item() == 50.0
    col = base[:, 1].numpy()
    col[0] = -1.0
    assert base[0, 1].item() == -1.0


def test_negative_strides_are_refused():
    with pytest.raises(ValueError, match="negative"):
        fg.from_numpy(np.arange(3.0)[::-1])
    # fg.tensor copies, so it accepts them
    assert fg.tensor(np.arange(3.0)[::-1]).tolist() == [2.0, 1.0, 0.0]


def test_unsupported_numpy_dtype():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type"):
        fg.from_numpy(np.zeros(2, dtype=np.complex64))


def test_memory_outlives_either_side():
    t = fg.ones(3)
    n = t.numpy()
    del t
    gc.collect()
    assert n.tolist() == [1.0, 1.0, 1.0]
    a = np.full(3, 2.0)
    t2 = fg.from_numpy(a)
    del a
    gc.collect()
    assert t2.tolist() == [2.0, 2.0, 2.0]


def test_from_numpy_leaf_can_require_grad():
    a = np.ones(3, dtype=np.float32)
    t = fg.from_numpy(a)
    t.requires_grad_()
    (t * 2).sum().backward()
    assert t.grad.tolist() == [2.0, 2.0, 2.0]
    assert t.grad.numpy().dtype == np.float32
