"""``mode`` (values, last index of the smallest most frequent value, gradient);
``generator=`` on the in-place samplers and ``nn.init`` (the generator's
stream, not the default one's); ``cauchy_``, ``log_normal_``, ``geometric_``
against ATen's per-element transforms of the Mersenne Twister stream."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
from ferrograd import nn
from ferrograd.autograd import gradcheck, gradgradcheck


def np_mode(a, dim):
    """Reference: per row along ``dim``, the smallest value among the most
    frequent ones and the last index where it occurs."""
    moved = np.moveaxis(a, dim, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    vals, idxs = [], []
    for row in flat:
        uniq, counts = np.unique(row, return_counts=True)
        v = uniq[np.argmax(counts)]  # argmax takes the first (smallest) of the ties
        vals.append(v)
        idxs.append(np.nonzero(row == v)[0][-1])
    shape = moved.shape[:-1]
    return np.array(vals, dtype=a.dtype).reshape(shape), np.array(idxs).reshape(shape)


shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6)


@given(shapes, st.integers(0, 2**16), st.booleans(), st.data())
def test_mode_matches_reference_with_ties(shape, seed, keepdim, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    # Few distinct values so rows have ties in frequency and repeated values.
    a = np.random.default_rng(seed).integers(-2, 3, size=shape).astype(np.float64)
    values, indices = fg.mode(fg.tensor(a), dim, keepdim)
    want_v, want_i = np_mode(a, dim)
    if keepdim:
        want_v, want_i = np.expand_dims(want_v, dim), np.expand_dims(want_i, dim)
    np.testing.assert_array_equal(values.numpy(), want_v)
    np.testing.assert_array_equal(indices.numpy(), want_i)
    assert indices.dtype == fg.int64
    # The method and the integer dtype agree with the function.
    v2, i2 = fg.tensor(a.astype(np.int64)).mode(dim, keepdim)
    np.testing.assert_array_equal(v2.numpy(), want_v.astype(np.int64))
    np.testing.assert_array_equal(i2.numpy(), want_i)


def test_mode_documented_example_and_named_tuple():
    # PyTorch's issue #89820 example: smallest of the most frequent, last index.
    b = fg.tensor(
        [
            [0, 0, 0, 2, 0, 0, 2],
            [0, 3, 0, 0, 2, 0, 1],
            [2, 2, 2, 0, 0, 0, 3],
            [2, 2, 3, 0, 1, 1, 0],
            [1, 1, 0, 0, 2, 0, 2],
        ]
    )
    r = fg.mode(b, 0)
    assert type(r).__name__ == "mode"
    assert r.values.tolist() == [0, 2, 0, 0, 0, 0, 2]
    assert r.indices.tolist() == [1, 3, 4, 4, 2, 4, 4]
    v, i = fg.tensor([0, 2, 1, 1, 1, 3, 3]).mode()
    assert (v.item(), i.item()) == (1, 4)
    # Bool input, 0-d input.
    v, i = fg.tensor([True, False, True]).mode()
    assert (v.item(), i.item()) == (True, 2)
    v, i = fg.tensor(2.5).mode()
    assert (v.item(), i.item(), v.shape, i.shape) == (2.5, 0, (), ())


def test_mode_errors():
    with pytest.raises(
        IndexError, match=r"mode\(\): Expected reduction dim 1 to have non-zero size"
    ):
        fg.mode(fg.zeros(2, 0), 1)
    with pytest.raises(IndexError):
        fg.zeros(2, 3).mode(2)


@settings(max_examples=15)
@given(
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
    st.integers(0, 2**16),
    st.data(),
)
def test_mode_gradcheck_distinct_values(shape, seed, data):
    # With distinct values the mode is each row's minimum, and a small
    # perturbation keeps it so: the function is smooth there.
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = int(np.prod(shape))
    a = (np.random.default_rng(seed).permutation(n) * 0.31 - 1.0).reshape(shape)
    x = fg.tensor(a, requires_grad=True)
    v, _ = fg.mode(x, dim)
    assert v.grad_fn.name() == "ModeBackward0"
    assert gradcheck(lambda t: fg.mode(t, dim)[0], (x,))
    assert gradgradcheck(lambda t: fg.mode(t, dim)[0] ** 2, (x,))


def test_mode_gradient_goes_to_the_reported_index():
    x = fg.tensor([[3.0, 1.0, 3.0, 1.0, 2.0], [5.0, 5.0, 4.0, 4.0, 4.0]], requires_grad=True)
    v, i = x.mode(1)
    assert v.tolist() == [1.0, 4.0] and i.tolist() == [3, 4]
    (v * fg.tensor([2.0, 7.0])).sum().backward()
    assert x.grad.tolist() == [[0, 0, 0, 2.0, 0], [0, 0, 0, 0, 7.0]]


# ----- generator= -----------------------------------------------------------------

SAMPLERS = {
    "normal_": lambda t, **kw: t.normal_(0.5, 2.0, **kw),
    "uniform_": lambda t, **kw: t.uniform_(-1.0, 3.0, **kw),
    "random_": lambda t, **kw: t.random_(0, 100, **kw),
    "random_to": lambda t, **kw: t.random_(7, **kw),
    "exponential_": lambda t, **kw: t.exponential_(1.5, **kw),
    "bernoulli_": lambda t, **kw: t.bernoulli_(0.3, **kw),
    "bernoulli_tensor_p": lambda t, **kw: t.bernoulli_(fg.full(t.shape, 0.25, dtype=t.dtype), **kw),
    "cauchy_": lambda t, **kw: t.cauchy_(0.5, 2.0, **kw),
    "log_normal_": lambda t, **kw: t.log_normal_(0.1, 0.5, **kw),
    "geometric_": lambda t, **kw: t.geometric_(0.3, **kw),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("n", [5, 40])
@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
def test_generator_draws_its_own_stream(name, n, dtype):
    draw = SAMPLERS[name]
    # The default generator, seeded, gives PyTorch's numbers (test_random_compat);
    # a Generator seeded the same must give the same numbers...
    fg.manual_seed(11)
    want = draw(fg.empty(n, dtype=dtype)).clone()
    after_default = fg.get_rng_state()
    g = fg.Generator().manual_seed(11)
    fg.manual_seed(99)
    before = fg.get_rng_state()
    got = draw(fg.empty(n, dtype=dtype), generator=g)
    assert fg.equal(got, want)
    # ...and leave the default generator where it was, while advancing its own
    # state exactly as the default one advanced.
    assert fg.equal(fg.get_rng_state(), before)
    assert fg.equal(g.get_state(), after_default)


def test_generator_on_a_non_contiguous_tensor_and_bad_argument():
    g = fg.Generator().manual_seed(3)
    base = fg.empty(4, 6)
    got = base.t().normal_(generator=g)
    fg.manual_seed(3)
    want = fg.empty(4, 6).t().normal_()
    assert fg.equal(got, want)
    for name in (
        "normal_",
        "uniform_",
        "exponential_",
        "bernoulli_",
        "random_",
        "cauchy_",
        "log_normal_",
    ):
        with pytest.raises(
            TypeError, match=rf"{name}\(\): argument 'generator' must be torch.Generator"
        ):
            getattr(fg.empty(3), name)(generator=5)


# ----- cauchy_, log_normal_, geometric_: ATen's per-element double transforms -------


def uniform_f64(seed, n):
    """``uniform_real_distribution<double>(0, 1)`` on PyTorch's generator:
    53 bits of two Mersenne Twister words (``RandomState(int)`` seeds as
    ``at::mt19937`` does, checked in test_random_compat.py)."""
    raw = np.random.RandomState(seed).randint(0, 2**32, size=2 * n, dtype=np.uint64)
    words = (raw[0::2] << np.uint64(32)) | raw[1::2]
    return (words & np.uint64(2**53 - 1)).astype(np.float64) * 2.0**-53


def fma(a, b, c):
    return float(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))


@pytest.mark.parametrize("seed", [0, 7, 12345])
@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
def test_cauchy_log_normal_geometric_follow_atens_transforms(seed, dtype):
    n = 9
    npdt = np.float32 if dtype == fg.float32 else np.float64
    u = uniform_f64(seed, 2 * n)

    fg.manual_seed(seed)
    got = fg.empty(n, dtype=dtype).cauchy_(0.5, 2.0).numpy()
    want = np.array([fma(2.0, math.tan(math.pi * (x - 0.5)), 0.5) for x in u[:n]]).astype(npdt)
    np.testing.assert_allclose(got, want, rtol=1e-13)

    fg.manual_seed(seed)
    got = fg.empty(n, dtype=dtype).geometric_(0.3).numpy()
    want = np.ceil(np.log(u[:n]) / np.log1p(-0.3)).astype(npdt)
    np.testing.assert_array_equal(got, want)
    fg.manual_seed(seed)
    assert fg.empty(n, dtype=fg.int64).geometric_(0.3).tolist() == want.astype(np.int64).tolist()

    # Box-Muller pairs: the cosine sample first, the cached sine sample next.
    fg.manual_seed(seed)
    got = fg.empty(n, dtype=dtype).log_normal_(0.1, 0.5).numpy()
    normals = []
    for k in range(0, 2 * n, 2):
        u1, u2 = u[k], u[k + 1]
        r = math.sqrt(-2.0 * math.log1p(-u2))
        th = 2.0 * math.pi * u1
        normals += [fma(r * math.cos(th), 0.5, 0.1), fma(r * math.sin(th), 0.5, 0.1)]
    want = np.exp(np.array(normals[:n])).astype(npdt)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    assert (got > 0).all()


def test_cauchy_log_normal_geometric_errors_leave_the_tensor():
    t = fg.zeros(3)
    with pytest.raises(RuntimeError, match=r"cauchy_ expects sigma > 0.0, but found sigma=0"):
        t.cauchy_(0.0, 0.0)
    with pytest.raises(RuntimeError, match=r"log_normal_ expects std > 0.0, but found std=-1"):
        t.log_normal_(0.0, -1.0)
    with pytest.raises(RuntimeError, match=r"geometric_ expects p to be in \(0, 1\), but got p=1"):
        t.geometric_(1.0)
    with pytest.raises(RuntimeError, match="\"cauchy_cpu\" not implemented for 'Long'"):
        fg.zeros(3, dtype=fg.int64).cauchy_()
    with pytest.raises(RuntimeError, match="\"log_normal_cpu\" not implemented for 'Long'"):
        fg.zeros(3, dtype=fg.int64).log_normal_()
    with pytest.raises(RuntimeError, match="\"geometric_cpu\" not implemented for 'Bool'"):
        fg.zeros(3, dtype=fg.bool).geometric_(0.5)
    assert t.tolist() == [0.0, 0.0, 0.0]
    leaf = fg.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.cauchy_()


INITS = {
    "uniform_": lambda w, **kw: nn.init.uniform_(w, -0.5, 0.5, **kw),
    "normal_": lambda w, **kw: nn.init.normal_(w, 0.0, 0.2, **kw),
    "trunc_normal_": lambda w, **kw: nn.init.trunc_normal_(w, std=0.5, **kw),
    "xavier_uniform_": lambda w, **kw: nn.init.xavier_uniform_(w, **kw),
    "xavier_normal_": lambda w, **kw: nn.init.xavier_normal_(w, **kw),
    "kaiming_uniform_": lambda w, **kw: nn.init.kaiming_uniform_(w, a=math.sqrt(5), **kw),
    "kaiming_normal_": lambda w, **kw: nn.init.kaiming_normal_(w, **kw),
    "orthogonal_": lambda w, **kw: nn.init.orthogonal_(w, **kw),
}


@pytest.mark.parametrize("name", sorted(INITS))
def test_nn_init_generator(name):
    fg.manual_seed(21)
    want = INITS[name](fg.empty(4, 5)).clone()
    g = fg.Generator().manual_seed(21)
    fg.manual_seed(0)
    before = fg.get_rng_state()
    got = INITS[name](fg.empty(4, 5), generator=g)
    assert fg.equal(got, want)
    assert fg.equal(fg.get_rng_state(), before)
