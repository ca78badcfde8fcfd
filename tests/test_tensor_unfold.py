"""Tensor.unfold(dimension, size, step): the windows along one dimension as a strided
view, checked against NumPy's sliding_window_view, its errors against PyTorch's words and
its gradients against finite differences."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
from ferrograd.autograd import gradcheck, gradgradcheck


def windows(a, dim, size, step):
    # NumPy's windows put the window last and the window count at `dim`, as PyTorch does.
    v = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
    return np.take(v, np.arange(0, v.shape[dim], step), axis=dim)


@st.composite
def unfold_args(draw):
    shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    size = draw(st.integers(0, shape[dim]))
    step = draw(st.integers(1, 4))
    return shape, dim, size, step


@settings(max_examples=40, deadline=None)
@given(args=unfold_args(), seed=st.integers(0, 1000))
def test_values_and_layout(args, seed):
    shape, dim, size, step = args
    a = np.random.default_rng(seed).standard_normal(shape)
    t = fg.tensor(a)
    u = t.unfold(dim, size, step)
    want = windows(a, dim % len(shape), size, step)
    assert tuple(u.shape) == want.shape
    np.testing.assert_array_equal(u.numpy(), want)
    # A view of t's memory: strides as PyTorch gives them.
    if u.numel():
        assert u.data_ptr() == t.data_ptr()
    d = dim % len(shape)
    strides = list(t.stride())
    assert list(u.stride()) == [*strides[:d], strides[d] * step, *strides[d + 1 :], strides[d]]
    # Also on a non-contiguous base.
    tt = fg.tensor(a).t() if a.ndim == 2 else fg.tensor(a)
    np.testing.assert_array_equal(
        tt.unfold(0, min(size, tt.shape[0]), step).numpy(),
        windows(tt.numpy(), 0, min(size, tt.shape[0]), step),
    )


@settings(max_examples=25, deadline=None)
@given(args=unfold_args(), seed=st.integers(0, 1000))
def test_gradients(args, seed):
    shape, dim, size, step = args
    x = fg.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda x: x.unfold(dim, size, step), (x,))
    assert gradgradcheck(lambda x: x.unfold(dim, size, step), (x,))


def test_backward_adds_overlapping_windows():
    # Each element's gradient counts the windows it is in (PyTorch's values).
    x = fg.ones(7, dtype=fg.float64, requires_grad=True)
    y = x.unfold(0, 3, 2)
    assert y.grad_fn.name() == "UnfoldBackward0"
    gy = fg.ones(tuple(y.shape), dtype=fg.float64, requires_grad=True)
    (g,) = fg.autograd.grad(y, x, gy, create_graph=True)
    assert g.tolist() == [1.0, 1.0, 2.0, 1.0, 2.0, 1.0, 1.0]
    assert g.grad_fn.name() == "UnfoldBackwardBackward0"


def test_is_a_view():
    x = fg.arange(8.0)
    u = x.unfold(0, 2, 2)  # windows that do not overlap
    assert u._is_view()
    u[1, 0] = 100.0
    assert x[2].item() == 100.0
    x.add_(1.0)
    assert u[1, 0].item() == 101.0
    # Overlapping windows share memory: writing through them is refused, as in PyTorch.
    w = fg.zeros(5, requires_grad=True).clone().unfold(0, 3, 1)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        w.mul_(2.0)


def test_zero_dimensional_and_empty():
    s = fg.tensor(3.0)
    assert s.unfold(0, 1, 1).tolist() == [3.0]
    assert tuple(s.unfold(-1, 0, 1).shape) == (0,)
    assert tuple(fg.zeros(0, 3).unfold(0, 0, 1).shape) == (1, 3, 0)
    assert tuple(fg.zeros(2, 5).unfold(1, 0, 1).shape) == (2, 6, 0)


def test_errors_use_pytorch_words():
    x = fg.zeros(2, 5)
    with pytest.raises(RuntimeError, match="dimension 1 is 5 but size is 6"):
        x.unfold(1, 6, 1)
    with pytest.raises(RuntimeError, match="step is 0 but must be > 0"):
        x.unfold(1, 2, 0)
    with pytest.raises(RuntimeError, match="size is -1 but must be >= 0"):
        x.unfold(1, -1, 1)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):  # fmt: skip
        x.unfold(2, 2, 1)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 1 but"):
        fg.tensor(1.0).unfold(0, 2, 1)
