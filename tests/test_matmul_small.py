"""Small matrix products (at most 2^18 multiply-adds) run on register tiles
instead of the general GEMM: every operand layout, the transposed-weight
forms of `linear`, accumulation into a bias, float32 and float64, and the
non-finite values the tiles' zero padding must not disturb."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn.functional as F


def _operand(rng, rows, cols, transposed, dtype):
    a = rng.standard_normal((cols, rows) if transposed else (rows, cols)).astype(dtype)
    t = fg.tensor(a)
    return (t.t(), a.T) if transposed else (t, a)


@given(
    m=st.integers(1, 40),
    k=st.integers(1, 70),
    n=st.integers(1, 300),
    ta=st.booleans(),
    tb=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(0, 2**16),
)
def test_products_of_every_layout_match_numpy(m, k, n, ta, tb, dtype, seed):
    rng = np.random.default_rng(seed)
    a, an = _operand(rng, m, k, ta, dtype)
    b, bn = _operand(rng, k, n, tb, dtype)
    want = an.astype(np.float64) @ bn.astype(np.float64)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    got = (a @ b).numpy()
    assert got.dtype == dtype and got.shape == (m, n)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch", [1, 3, 8, 9, 16])
def test_linear_with_bias_matches_numpy(dtype, batch):
    # `linear` is x @ w.t() accumulated into the broadcast bias: the
    # transposed (and, for float32, paired) form of the tiles.
    rng = np.random.default_rng(batch)
    x = rng.standard_normal((batch, 63)).astype(dtype)
    w = rng.standard_normal((257, 63)).astype(dtype)
    b = rng.standard_normal(257).astype(dtype)
    got = F.linear(fg.tensor(x), fg.tensor(w), fg.tensor(b)).numpy()
    want = x.astype(np.float64) @ w.T.astype(np.float64) + b
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_non_finite_values_propagate_as_in_numpy(dtype):
    # Padding lanes hold zeros; a zero times an infinity there must not leak
    # a NaN into a real element.
    x = np.ones((3, 5), dtype)
    w = np.ones((7, 5), dtype)
    w[2, 4] = np.inf
    w[5, 1] = np.nan
    x[1, 3] = -np.inf
    got = (fg.tensor(x) @ fg.tensor(w).t()).numpy()
    with np.errstate(invalid="ignore"):
        want = x @ w.T
    np.testing.assert_array_equal(got, want)


def test_gradients_of_a_small_linear_layer_match_numpy():
    rng = np.random.default_rng(0)
    x = fg.tensor(rng.standard_normal((8, 64)), requires_grad=True)
    w = fg.tensor(rng.standard_normal((256, 64)), requires_grad=True)
    g = rng.standard_normal((8, 256))
    (F.linear(x, w) * fg.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), g @ w.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), g.T @ x.detach().numpy(), rtol=1e-12)
