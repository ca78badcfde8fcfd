"""`%` and `//` on tensors (remainder and floor_divide, as in PyTorch), their
reflected and in-place forms, and the in-place binary math methods."""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as fg


def test_mod_and_floordiv_follow_python_signs():
    a = np.array([-7.0, -3.5, 0.0, 5.0, 7.25])
    x = fg.tensor(a)
    np.testing.assert_array_equal((x % 2).numpy(), a % 2)
    np.testing.assert_array_equal((x % -2.5).numpy(), a % -2.5)
    np.testing.assert_array_equal((3.0 % fg.tensor([2.0, -2.0])).numpy(), np.array([1.0, -1.0]))
    np.testing.assert_array_equal((x // 2).numpy(), a // 2)
    np.testing.assert_array_equal((7 // fg.tensor([2.0, -2.0])).numpy(), np.array([3.0, -4.0]))
    i = fg.tensor([-7, -3, 0, 5, 7])
    assert (i % 3).tolist() == [2, 0, 0, 2, 1] and (i // 3).tolist() == [-3, -1, 0, 1, 2]
    assert (i % 3).dtype == fg.int64


def test_in_place_operators_keep_the_object():
    x = fg.tensor([5.0, -7.0])
    before = id(x)
    x %= 3
    assert id(x) == before and x.tolist() == [2.0, 2.0]
    y = fg.tensor([7, 9])
    y //= 2
    assert y.tolist() == [3, 4]
    leaf = fg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        leaf %= 2


def test_gradient_of_mod_and_in_place_binary_methods():
    x = fg.tensor([1.5, 2.5, -0.25], dtype=fg.float64, requires_grad=True)
    (x % 1.0).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    z = fg.tensor([3.0, 4.0], dtype=fg.float64)
    z.atan2_(fg.tensor([1.0, -1.0], dtype=fg.float64))
    np.testing.assert_allclose(z.numpy(), np.arctan2([3.0, 4.0], [1.0, -1.0]))
    w = fg.tensor([-1.0, 3.0])
    w.clamp_min_(0.5)
    assert w.tolist() == [0.5, 3.0]
