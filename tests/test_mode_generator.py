"""``mode`` (values, last index of the smallest most frequent value, gradient)
and ``generator=`` on the in-place samplers (the generator's stream, not the
default one's)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
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
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 1 to have non-zero size"):
        fg.mode(fg.zeros(2, 0), 1)
    with pytest.raises(IndexError):
        fg.zeros(2, 3).mode(2)


@settings(max_examples=15)
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), st.integers(0, 2**16), st.data())
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
    for name in ("normal_", "uniform_", "exponential_", "bernoulli_", "random_"):
        with pytest.raises(TypeError, match=rf"{name}\(\): argument 'generator' must be torch.Generator"):
            getattr(fg.empty(3), name)(generator=5)
