"""`%` and `//` on tensors (remainder and floor_divide, as in PyTorch), their
reflected and in-place forms, and the in-place binary math methods."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


_SPECIAL32 = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.0, -7.5, 1e-38, 1e-45, 3.4e38],
    dtype=np.float32,
)


@given(
    st.lists(st.floats(width=32, allow_nan=True), min_size=1, max_size=40),
    st.lists(st.floats(width=32, allow_nan=True), min_size=1, max_size=40),
)
@settings(deadline=None)
def test_float32_fmod_family_vector_path_equals_the_c_library(xs, ys):
    # float32 fmod, remainder and floor_divide take a vector form of fmod when
    # every quotient is below 2^28, C's fmodf otherwise. One pair with a huge
    # quotient sends the whole tensor down the C path: both must agree bit for
    # bit, and fmod with NumPy's (C's) fmodf.
    n = min(len(xs), len(ys))
    a = np.concatenate([np.array(xs[:n], dtype=np.float32), _SPECIAL32])
    b = np.concatenate([np.array(ys[:n], dtype=np.float32), np.roll(_SPECIAL32, 5)])
    a2 = np.concatenate([a, np.float32([1e30])])
    b2 = np.concatenate([b, np.float32([1e-30])])
    for op in (fg.fmod, fg.remainder, fg.floor_divide):
        got = op(fg.tensor(a), fg.tensor(b)).numpy()
        ref = op(fg.tensor(a2), fg.tensor(b2)).numpy()[:-1]
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got.view(np.uint32)[~np.isnan(got)],
                                      ref.view(np.uint32)[~np.isnan(ref)])
        assert (np.isnan(got) == np.isnan(ref)).all()
    with np.errstate(all="ignore"):
        want = np.fmod(a, b)
    got = fg.fmod(fg.tensor(a), fg.tensor(b)).numpy()
    assert (np.isnan(got) == np.isnan(want)).all()
    np.testing.assert_array_equal(got.view(np.uint32)[~np.isnan(got)],
                                  want.view(np.uint32)[~np.isnan(want)])


def test_float32_fmod_family_near_integer_quotients():
    # x next to n * y: the float64 quotient rounds up onto n, the remainder
    # must be taken back by y. Transposed and broadcast operands take the same
    # vector path.
    rng = np.random.default_rng(0)
    y = (rng.uniform(0.1, 10, 4000) * rng.choice([-1, 1], 4000)).astype(np.float32)
    n = rng.integers(1, 2**27, 4000).astype(np.float32)
    x = (n * y).astype(np.float32)
    x = np.concatenate([np.nextafter(x, np.float32(np.inf)), np.nextafter(x, np.float32(-np.inf)),
                        x, -x]).astype(np.float32)
    y = np.tile(y, 4)
    np.testing.assert_array_equal(fg.fmod(fg.tensor(x), fg.tensor(y)).numpy(), np.fmod(x, y))
    xt = fg.tensor(x.reshape(100, 160)).t()
    yt = fg.tensor(y.reshape(100, 160)).t()
    np.testing.assert_array_equal(fg.fmod(xt, yt).numpy(), np.fmod(x.reshape(100, 160).T,
                                                                 y.reshape(100, 160).T))
    np.testing.assert_array_equal(fg.fmod(fg.tensor(x), 3.0).numpy(), np.fmod(x, np.float32(3)))
