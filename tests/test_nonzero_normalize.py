"""``nonzero`` and ``F.normalize`` against NumPy and closed forms, with their
gradients and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

# ----- nonzero -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4), (0, 3), (1, 1, 5)])
@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
@pytest.mark.parametrize("seed", [0, 1])
def test_nonzero_matches_numpy(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    # About half the entries zero, so rows, columns and whole slices are empty.
    a = rng.integers(-2, 3, size=shape) * (rng.random(shape) < 0.5)
    a = a.astype(dtype)
    x = torch.tensor(a)
    got = torch.nonzero(x)
    assert got.dtype == torch.int64 and tuple(got.shape) == (np.count_nonzero(a), len(shape))
    np.testing.assert_array_equal(got.numpy(), np.argwhere(a))
    np.testing.assert_array_equal(x.nonzero().numpy(), np.argwhere(a))
    parts = torch.nonzero(x, as_tuple=True)
    assert isinstance(parts, tuple) and len(parts) == len(shape)
    for got_part, ref in zip(parts, np.nonzero(a)):
        assert got_part.dtype == torch.int64
        np.testing.assert_array_equal(got_part.numpy(), ref)
    # The tuple indexes the nonzero values, as in PyTorch and NumPy.
    np.testing.assert_array_equal(x[parts].numpy(), a[np.nonzero(a)])


def test_nonzero_of_nan_inf_and_negative_zero():
    x = torch.tensor([0.0, -0.0, float("nan"), float("inf"), -1e-300, 0.0], dtype=torch.float64)
    np.testing.assert_array_equal(torch.nonzero(x).numpy(), [[2], [3], [4]])


def test_nonzero_of_a_view_and_of_a_tensor_that_requires_grad():
    base = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]], requires_grad=True)
    out = base.t().nonzero()
    np.testing.assert_array_equal(out.numpy(), np.argwhere(np.array([[0, 2], [1, 0], [0, 3]])))
    assert not out.requires_grad and out.grad_fn is None


def test_nonzero_of_a_scalar():
    # A 0-d tensor has no index to list: one row of zero coordinates, or none.
    assert tuple(torch.nonzero(torch.tensor(5.0)).shape) == (1, 0)
    assert tuple(torch.nonzero(torch.tensor(0.0)).shape) == (0, 0)


def test_nonzero_as_tuple_of_a_scalar_is_one_index_tensor():
    (idx,) = torch.nonzero(torch.tensor(5.0), as_tuple=True)
    np.testing.assert_array_equal(idx.numpy(), [0])
    (idx,) = torch.nonzero(torch.tensor(0.0), as_tuple=True)
    assert idx.numel() == 0 and idx.dtype == torch.int64


def test_nonzero_errors():
    with pytest.raises(TypeError):
        torch.nonzero([1.0, 0.0])
    with pytest.raises(TypeError):
        torch.ones(2).nonzero(True)  # as_tuple is keyword-only, as in PyTorch


# ----- F.normalize -------------------------------------------------------------------------


def np_normalize(a, p, dim, eps=1e-12):
    if p == np.inf:
        n = np.abs(a).max(axis=dim, keepdims=True)
    else:
        n = (np.abs(a) ** p).sum(axis=dim, keepdims=True) ** (1.0 / p)
    return a / np.maximum(n, eps)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, np.inf])
@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -1)])
def test_normalize_matches_numpy(p, shape, dim):
    a = np.random.default_rng(3).standard_normal(shape)
    got = F.normalize(torch.tensor(a), p=p, dim=dim)
    np.testing.assert_allclose(got.numpy(), np_normalize(a, p, dim), rtol=1e-12)
    got32 = F.normalize(torch.tensor(a.astype(np.float32)), p=p, dim=dim)
    assert got32.dtype == torch.float32
    np.testing.assert_allclose(got32.numpy(), np_normalize(a, p, dim), rtol=2e-6)


def test_normalize_default_is_the_l2_norm_over_dim_1():
    a = np.array([[3.0, 4.0], [0.0, -2.0]])
    np.testing.assert_allclose(F.normalize(torch.tensor(a)).numpy(), [[0.6, 0.8], [0.0, -1.0]])


def test_normalize_eps_floor():
    # An all-zero row stays zero (no 0/0), and a row whose norm is below eps is
    # divided by eps instead.
    a = np.array([[0.0, 0.0], [3e-13, 4e-13], [3.0, 4.0]])
    got = F.normalize(torch.tensor(a), dim=1).numpy()
    np.testing.assert_allclose(got, [[0.0, 0.0], [0.3, 0.4], [0.6, 0.8]], rtol=1e-12)
    got = F.normalize(torch.tensor(a), dim=1, eps=10.0).numpy()
    np.testing.assert_allclose(got, [[0.0, 0.0], [3e-14, 4e-14], [0.3, 0.4]], rtol=1e-12)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
@pytest.mark.parametrize("dim", [0, 1])
def test_normalize_gradcheck_first_and_second_order(p, dim):
    a = np.random.default_rng(5).standard_normal((3, 4)) + 0.1
    x = torch.tensor(a, requires_grad=True)
    assert gradcheck(lambda v: F.normalize(v, p=p, dim=dim), (x,))
    assert gradgradcheck(lambda v: F.normalize(v, p=p, dim=dim), (x,))


def test_normalize_gradient_closed_form():
    # For p=2, d(v/|v|) = (I - y y^T) / |v| with y = v/|v|; for a row under the
    # eps floor the denominator is the constant eps.
    v = np.array([1.0, -2.0, 2.0])
    g = np.array([1.0, 2.0, 3.0])
    x = torch.tensor(np.stack([v, np.zeros(3)]), requires_grad=True)
    (F.normalize(x, dim=1) * torch.tensor(np.stack([g, g]))).sum().backward()
    y = v / 3.0
    np.testing.assert_allclose(x.grad.numpy()[0], (g - y * (g @ y)) / 3.0, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy()[1], g / 1e-12, rtol=1e-12)


def test_normalize_errors():
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.normalize(torch.ones(3))  # dim=1 on a 1-D tensor
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.normalize(torch.ones(2, 3), dim=2)
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        F.normalize(torch.tensor([1, 2]), dim=0)
