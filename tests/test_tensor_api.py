"""The Tensor's Python protocol: sizes, scalars, lists, iteration, copies, indexing, repr."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
from helpers import assert_tensor, shapes, to_np

# -- shape and size --------------------------------------------------------------------


@given(shapes(max_dims=4))
def test_shape_size_dim_numel(shape):
    t = fg.zeros(shape)
    assert isinstance(t.shape, fg.Size) and isinstance(t.shape, tuple)
    assert t.shape == shape and tuple(t.shape) == shape
    assert t.size() == shape and isinstance(t.size(), fg.Size)
    assert t.dim() == t.ndim == len(shape)
    assert t.numel() == int(np.prod(shape)) == t.shape.numel()
    for d in range(len(shape)):
        assert t.size(d) == shape[d]
        assert t.size(d - len(shape)) == shape[d]
        assert t.shape[d] == shape[d]


def test_size_repr_and_equality():
    s = fg.ones(2, 3).shape
    assert repr(s) == "ferrograd.Size([2, 3])"
    assert repr(fg.tensor(1.0).shape) == "ferrograd.Size([])"
    assert s == (2, 3) and s == fg.Size([2, 3]) and s != (3, 2)
    assert s[-1] == 3 and s[:1] == (2,)
    a, b = s
    assert (a, b) == (2, 3)


def test_size_out_of_range():
    with pytest.raises(
        IndexError,
        match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)",
    ):
        fg.ones(2, 3, 4).size(3)
    with pytest.raises(IndexError):
        fg.ones(2).size(-2)


def test_len():
    assert len(fg.ones(4, 2)) == 4
    assert len(fg.ones(0, 2)) == 0
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(fg.tensor(1.0))


# -- Python scalars and lists --------------------------------------------------------------


def test_item():
    assert fg.tensor(2.5).item() == 2.5 and type(fg.tensor(2.5).item()) is float
    assert fg.tensor([[7]]).item() == 7 and type(fg.tensor([[7]]).item()) is int
    assert fg.tensor(True).item() is True
    assert fg.tensor([3.0], dtype=fg.float64).item() == 3.0
    x = fg.tensor([1.5], requires_grad=True)
    assert x.item() == 1.5  # allowed on tensors that require grad
    with pytest.raises(
        RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"
    ):
        fg.tensor([1.0, 2.0]).item()
    with pytest.raises(
        RuntimeError, match="a Tensor with 0 elements cannot be converted to Scalar"
    ):
        fg.tensor([]).item()


@given(
    st.one_of(
        hnp.arrays(np.float32, shapes(max_dims=3), elements=st.floats(-1e6, 1e6, width=32)),
        hnp.arrays(np.float64, shapes(max_dims=3), elements=st.floats(-1e6, 1e6)),
        hnp.arrays(np.int64, shapes(max_dims=3), elements=st.integers(-(2**53), 2**53)),
        hnp.arrays(np.bool_, shapes(max_dims=3)),
    )
)
def test_tolist_matches_numpy(arr):
    t = fg.tensor(arr)
    assert t.tolist() == arr.tolist()
    # and element types are plain Python numbers
    flat = t.reshape(-1).tolist()
    assert all(type(v) is type(w) for v, w in zip(flat, arr.reshape(-1).tolist()))


def test_large_int64_values_are_exact():
    big = 2**53 + 1
    t = fg.tensor(np.array([big, -big]))
    np.testing.assert_array_equal(t.numpy(), [big, -big])  # storage is exact
    assert t.tolist() == [big, -big]
    assert t[0].item() == big
    assert int(t[1]) == -big


def test_float_int_bool_conversions():
    assert float(fg.tensor([2.5])) == 2.5
    assert float(fg.tensor([[3]])) == 3.0
    assert int(fg.tensor(3.7)) == 3
    assert int(fg.tensor(-3.7)) == -3
    assert int(fg.tensor([2**40])) == 2**40
    assert bool(fg.tensor([1.0])) is True
    assert bool(fg.tensor(0.0)) is False
    assert bool(fg.tensor([[0]])) is False
    assert bool(fg.tensor(True)) is True
    assert float(fg.tensor(1.5, requires_grad=True)) == 1.5


def test_bool_of_many_elements_raises_runtime_error():
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with"):
        bool(fg.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(fg.tensor([]))
    with pytest.raises(RuntimeError):
        if fg.ones(2, 2) > 0:
            pass


def test_bool_error_wording_matches_pytorch():
    with pytest.raises(RuntimeError) as info:
        bool(fg.tensor([1.0, 2.0]))
    assert str(info.value) == "Boolean value of Tensor with more than one value is ambiguous"


def test_float_of_many_elements_raises_value_error():
    # PyTorch: ValueError (TORCH_CHECK_VALUE), the message users search for.
    with pytest.raises(
        ValueError, match="only one element tensors can be converted to Python scalars"
    ):
        float(fg.tensor([1.0, 2.0]))
    with pytest.raises(
        ValueError, match="only one element tensors can be converted to Python scalars"
    ):
        int(fg.tensor([1, 2]))


def test_iteration():
    t = fg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    rows = list(t)
    assert len(rows) == 3
    assert all(isinstance(r, fg.Tensor) and r.shape == (2,) for r in rows)
    assert [r.tolist() for r in rows] == t.tolist()
    assert [v.item() for v in fg.tensor([1, 2, 3])] == [1, 2, 3]
    assert [float(v) for v in fg.tensor([0.5, 1.5])] == [0.5, 1.5]
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(fg.tensor(1.0))
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    parts = list(x)
    assert all(p.requires_grad and p.grad_fn is not None for p in parts)
    (parts[0] * 3 + parts[1]).backward()
    assert x.grad.tolist() == [3.0, 1.0]


# -- copies ----------------------------------------------------------------------------


def test_clone_is_an_independent_copy_with_a_graph():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone()
    assert c.tolist() == [1.0, 2.0] and c.requires_grad and not c.is_leaf
    assert c.grad_fn.name() == "CloneBackward0"
    (c * c).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    plain = fg.tensor([1.0, 2.0])
    copy = plain.clone()
    copy.add_(10)
    assert plain.tolist() == [1.0, 2.0] and copy.tolist() == [11.0, 12.0]
    assert fg.clone(plain).tolist() == [1.0, 2.0]


def test_contiguous():
    t = fg.arange(6.0).view(2, 3).t()
    assert not t.is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous()
    assert c.tolist() == t.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert c.stride() == (2, 1)
    x = fg.tensor([[1.0, 2.0]], requires_grad=True)
    y = x.t().contiguous()
    (y * fg.tensor([[1.0], [10.0]])).sum().backward()
    assert x.grad.tolist() == [[1.0, 10.0]]


def test_empty_tensor_is_contiguous_whatever_its_strides():
    t = fg.ones(0, 2, 3).transpose(1, 2)
    assert t.stride() == (6, 1, 3)
    assert t.is_contiguous()
    assert t.contiguous() is t


def test_contiguous_of_contiguous_is_self():
    t = fg.ones(2, 3)
    assert t.contiguous() is t


# -- indexing ----------------------------------------------------------------------------


def _positive_steps(index):
    """basic_indices may use negative slice steps, which PyTorch (and we) refuse."""
    items = index if isinstance(index, tuple) else (index,)
    fixed = tuple(
        slice(i.start, i.stop, abs(i.step)) if isinstance(i, slice) and i.step is not None else i
        for i in items
    )
    return fixed if isinstance(index, tuple) else fixed[0]


@st.composite
def array_and_index(draw):
    shape = draw(shapes(min_dims=0, max_dims=3, min_side=1, max_side=5))
    arr = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    index = draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    return arr, _positive_steps(index)


@given(array_and_index())
def test_basic_indexing_matches_numpy(case):
    arr, index = case
    t = fg.tensor(arr)
    expected = np.asarray(arr[index])
    got = t[index]
    assert_tensor(got, expected, dtype=fg.float32, rtol=0, atol=0)


@given(array_and_index())
def test_indexing_is_a_view(case):
    arr, index = case
    expected = np.asarray(arr[index])
    assume(expected.size > 0)
    t = fg.tensor(arr)
    v = t[index]
    v.add_(1000.0)  # an in-place change through the view shows in the base
    arr2 = arr.copy()
    arr2[index] += 1000.0
    np.testing.assert_array_equal(t.numpy(), arr2)


def test_indexing_examples():
    t = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t[0].tolist() == [1.0, 2.0]
    assert t[-1, -1].item() == 4.0 and t[-1, -1].shape == ()
    assert t[0:1].tolist() == [[1.0, 2.0]]
    assert t[:, 1].tolist() == [2.0, 4.0]
    assert t[None].shape == (1, 2, 2)
    assert t[...].tolist() == t.tolist()
    assert t[..., 0].tolist() == [1.0, 3.0]
    assert t[5:].shape == (0, 2)
    assert fg.arange(10)[2:8:3].tolist() == [2, 5]


def test_bad_indices():
    t = fg.ones(2, 3)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        t[5]
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 3"):
        t[:, 5]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="an index can only have a single ellipsis"):
        t[..., ...]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        t[::-1]


# -- repr ------------------------------------------------------------------------------


def test_repr_like_pytorch():
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert repr(x) == "tensor([1., 2., 3.], requires_grad=True)"
    assert str(x) == repr(x)
    assert repr(x * 2) == "tensor([2., 4., 6.], grad_fn=<MulBackward0>)"
    assert repr(fg.ones(2, 2)) == "tensor([[1., 1.],\n        [1., 1.]])"
    assert repr(fg.tensor(2.0)) == "tensor(2.)"
    assert repr(fg.tensor([1, 2, 3])) == "tensor([1, 2, 3])"
    assert repr(fg.tensor([True, False])) == "tensor([ True, False])"
    assert repr(fg.tensor(3.0, dtype=fg.float64)) == "tensor(3., dtype=ferrograd.float64)"
    assert repr(fg.tensor([])) == "tensor([])"
    assert repr(fg.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(fg.tensor([8 / 3, 100, 704])) == "tensor([  2.6667, 100.0000, 704.0000])"
    assert repr(fg.tensor(-8.7423e-08)) == "tensor(-8.7423e-08)"
    with fg.no_grad():
        assert repr(x * 2) == "tensor([2., 4., 6.])"
    assert repr(x.detach()) == "tensor([1., 2., 3.])"


def test_repr_reads_values_not_copies():
    t = fg.zeros(2)
    t.numpy()[1] = 5.0
    assert repr(t) == "tensor([0., 5.])"
    v = fg.arange(6.0).view(2, 3).t()
    assert repr(v) == "tensor([[0., 3.],\n        [1., 4.],\n        [2., 5.]])"
    assert to_np(v).tolist() == v.tolist()


def test_assigning_a_tensor_its_own_data_returns():
    # `t.data = t` once held the view's read lock while taking its write lock.
    from helpers import run_isolated

    r = run_isolated(
        """
        import ferrograd as fg
        t = fg.ones(3)
        t.data = t
        g = fg.ones(2, requires_grad=True)
        (g * 2).sum().backward()
        grad = g.grad
        grad.data = grad.cpu()
        print(t.tolist(), grad.tolist())
        """,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[1.0, 1.0, 1.0] [2.0, 2.0]"
