"""Embedding, EmbeddingBag and one_hot: lookups against NumPy, gradients
(scatter-add, padding_idx, scale_grad_by_freq) against hand-computed values,
float64 gradcheck + gradgradcheck, max_norm renormalisation and error texts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

FEW = settings(max_examples=max(4, settings.default.max_examples // 4), deadline=None)


@st.composite
def lookup_case(draw):
    v = draw(st.integers(1, 6))
    d = draw(st.integers(1, 4))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    idx = draw(hnp.arrays(np.int64, shape, elements=st.integers(0, v - 1)))
    pad = draw(st.one_of(st.none(), st.integers(-v, v - 1)))
    return v, d, idx, pad


def np_embedding_grad(idx, gy, v, pad=None, freq=False):
    flat = idx.reshape(-1)
    d = gy.shape[-1]
    g = gy.reshape(len(flat), d)
    out = np.zeros((v, d))
    counts = np.bincount(flat, minlength=v)
    for i, k in enumerate(flat):
        if pad is not None and k == pad:
            continue
        out[k] += g[i] / (counts[k] if freq else 1)
    return out


@given(case=lookup_case(), freq=st.booleans(), seed=st.integers(0, 2**16))
@FEW
def test_embedding_values_and_grad(case, freq, seed):
    v, d, idx, pad = case
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((v, d))
    wt = fg.tensor(w, requires_grad=True)
    out = F.embedding(fg.tensor(idx), wt, padding_idx=pad, scale_grad_by_freq=freq)
    np.testing.assert_array_equal(out.detach().numpy(), w[idx])
    assert out.grad_fn.name() == "EmbeddingBackward0"
    gy = rng.standard_normal(out.shape)
    out.backward(fg.tensor(gy))
    p = None if pad is None else pad % v
    np.testing.assert_allclose(
        wt.grad.numpy(), np_embedding_grad(idx, gy, v, p, freq), rtol=1e-12, atol=1e-12
    )


@given(case=lookup_case(), freq=st.booleans(), seed=st.integers(0, 2**16))
@FEW
def test_embedding_gradcheck(case, freq, seed):
    v, d, idx, pad = case
    w = fg.tensor(np.random.default_rng(seed).standard_normal((v, d)), requires_grad=True)
    it = fg.tensor(idx)
    # padding_idx and frequency scaling make the gradient deliberately not the
    # derivative; the plain lookup is checked first order, all variants second
    # order (the backward is linear in the incoming gradient, its adjoint exact).
    assert gradcheck(lambda w: F.embedding(it, w), (w,))
    assert gradgradcheck(
        lambda w: F.embedding(it, w, padding_idx=pad, scale_grad_by_freq=freq), (w,)
    )


def test_embedding_float32_and_repeated_indices():
    w = fg.tensor(np.arange(12, dtype=np.float32).reshape(4, 3), requires_grad=True)
    out = F.embedding(fg.tensor([[3, 3], [0, 3]]), w)
    assert out.dtype == fg.float32 and tuple(out.shape) == (2, 2, 3)
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], [1, 0, 0, 3])


def test_embedding_module():
    fg.manual_seed(0)
    m = nn.Embedding(10, 4, padding_idx=-1)
    assert m.padding_idx == 9
    np.testing.assert_array_equal(m.weight.detach().numpy()[9], np.zeros(4, np.float32))
    w = m.weight.detach().numpy()
    assert abs(w[:9].std() - 1) < 0.5  # N(0, 1) rows
    out = m(fg.tensor([1, 9, 9]))
    out.sum().backward()
    np.testing.assert_array_equal(m.weight.grad.numpy()[9], np.zeros(4, np.float32))
    np.testing.assert_array_equal(m.weight.grad.numpy()[1], np.ones(4, np.float32))
    assert "padding_idx=9" in m.extra_repr()


def test_from_pretrained_and_freeze():
    base = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
    m = nn.Embedding.from_pretrained(base)
    assert not m.weight.requires_grad
    np.testing.assert_array_equal(m(fg.tensor([1])).numpy(), [[3.0, 4.0]])
    m2 = nn.Embedding.from_pretrained(base, freeze=False)
    assert m2.weight.requires_grad
    with pytest.raises(AssertionError, match="2-dimensional"):
        nn.Embedding.from_pretrained(fg.ones(3))
    bag = nn.EmbeddingBag.from_pretrained(base, mode="sum")
    np.testing.assert_array_equal(bag(fg.tensor([[0, 1]])).numpy(), [[4.0, 6.0]])


def test_max_norm_renormalises_in_place():
    w = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0], [1.0, 0.0]])
    wt = fg.tensor(w, requires_grad=True)
    v0 = wt._version
    out = F.embedding(fg.tensor([0, 1, 0]), wt, max_norm=1.0)
    want = w.copy()
    want[0] = w[0] / (5.0 + 1e-7)
    np.testing.assert_allclose(wt.detach().numpy(), want, rtol=1e-12)  # only rows used
    np.testing.assert_allclose(out.detach().numpy(), want[[0, 1, 0]], rtol=1e-12)
    assert wt._version > v0
    # norm_type=1
    wt2 = fg.tensor(w)
    F.embedding(fg.tensor([2]), wt2, max_norm=7.0, norm_type=1.0)
    np.testing.assert_allclose(wt2.numpy()[2], w[2] * 7.0 / (14.0 + 1e-7), rtol=1e-12)


def test_embedding_errors():
    w = fg.randn(5, 2)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(fg.tensor([5]), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(fg.tensor([-1]), w)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices'"):
        F.embedding(fg.tensor([1.0]), w)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(5, 2, padding_idx=5)
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(fg.tensor([0]), fg.randn(5))
    # bad input leaves the weight unchanged
    wt = fg.tensor([[3.0, 4.0]])
    with pytest.raises(IndexError):
        F.embedding(fg.tensor([0, 1]), wt, max_norm=1.0)
    np.testing.assert_array_equal(wt.numpy(), [[3.0, 4.0]])


# ----- EmbeddingBag -------------------------------------------------------------------------


def np_bag(w, idx, offsets, mode, psw=None, pad=None):
    ends = list(offsets[1:]) + [len(idx)]
    out = []
    for s, e in zip(offsets, ends):
        rows = [w[idx[i]] * (1 if psw is None else psw[i]) for i in range(s, e) if idx[i] != pad]
        if not rows:
            out.append(np.zeros(w.shape[1]))
        elif mode == "sum":
            out.append(np.sum(rows, 0))
        elif mode == "mean":
            out.append(np.mean(rows, 0))
        else:
            out.append(np.max(rows, 0))
    return np.array(out)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("pad", [None, 2])
def test_embedding_bag_offsets(mode, pad):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 3))
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 0])
    offsets = np.array([0, 2, 2, 5])  # one empty bag
    wt = fg.tensor(w, requires_grad=True)
    out = F.embedding_bag(fg.tensor(idx), wt, fg.tensor(offsets), mode=mode, padding_idx=pad)
    np.testing.assert_allclose(out.detach().numpy(), np_bag(w, idx, offsets, mode, pad=pad))
    f = lambda w: F.embedding_bag(  # noqa: E731
        fg.tensor(idx), w, fg.tensor(offsets), mode=mode, padding_idx=pad
    )
    if pad is None:
        assert gradcheck(f, (wt,))
    assert gradgradcheck(f, (wt,))


def test_embedding_bag_2d_per_sample_weights_and_last_offset():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((5, 2))
    idx = np.array([[0, 1, 2], [4, 4, 3]])
    psw = rng.standard_normal((2, 3))
    wt, pt = fg.tensor(w, requires_grad=True), fg.tensor(psw, requires_grad=True)
    out = F.embedding_bag(fg.tensor(idx), wt, mode="sum", per_sample_weights=pt)
    want = np_bag(w, idx.reshape(-1), np.array([0, 3]), "sum", psw.reshape(-1))
    np.testing.assert_allclose(out.detach().numpy(), want)
    f = lambda w, p: F.embedding_bag(  # noqa: E731
        fg.tensor(idx), w, mode="sum", per_sample_weights=p
    )
    assert gradcheck(f, (wt, pt)) and gradgradcheck(f, (wt, pt))
    last = F.embedding_bag(
        fg.tensor(idx.reshape(-1)),
        wt,
        fg.tensor([0, 3, 6]),
        mode="mean",
        include_last_offset=True,
    )
    np.testing.assert_allclose(
        last.detach().numpy(), np_bag(w, idx.reshape(-1), np.array([0, 3]), "mean")
    )
    m = nn.EmbeddingBag(5, 2, mode="max")
    assert tuple(m(fg.tensor(idx)).shape) == (2, 2)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_of_full_bags_in_one_pass(mode):
    """A 2-d input's bags are gathered and summed in one pass: the values of
    the per-bag loop (float32 bits equal to gather-then-sum), and gradients of
    every order through its scatter-add."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((7, 3))
    idx = np.array([[0, 6, 2, 2], [5, 1, 1, 3], [4, 4, 4, 4]])
    wt = fg.tensor(w, requires_grad=True)
    out = F.embedding_bag(fg.tensor(idx), wt, mode=mode)
    want = np_bag(w, idx.reshape(-1), np.array([0, 4, 8]), mode)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-12)
    f = lambda w: F.embedding_bag(fg.tensor(idx), w, mode=mode)  # noqa: E731
    assert gradcheck(f, (wt,)) and gradgradcheck(f, (wt,))
    w32 = fg.tensor(w.astype(np.float32))
    rows = F.embedding(fg.tensor(idx), w32).sum(1)
    fused = F.embedding_bag(fg.tensor(idx), w32, mode="sum")
    np.testing.assert_array_equal(fused.numpy(), rows.numpy())
    half = F.embedding_bag(fg.tensor(idx), w32.to(fg.bfloat16), mode=mode)
    assert half.dtype == fg.bfloat16
    np.testing.assert_allclose(half.float().numpy(), want, rtol=2e-2, atol=2e-2)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding_bag(fg.tensor([[0, 7]]), wt, mode=mode)


def test_embedding_bag_errors():
    w = fg.randn(5, 2)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(fg.tensor([0, 1]), w)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(fg.tensor([[0, 1]]), w, fg.tensor([0]))
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(fg.tensor([[0, 1]]), w, mode="mean", per_sample_weights=fg.ones(1, 2))
    # As in PyTorch, the layer is built and its forward refuses the mode.
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        nn.EmbeddingBag(5, 2, mode="median")(fg.tensor([[0, 1]]))
    with pytest.raises(ValueError, match="input has to be 1D or 2D Tensor"):
        F.embedding_bag(fg.tensor([[[0]]]), w)


# ----- one_hot ------------------------------------------------------------------------------


@given(hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=3), elements=st.integers(0, 5)))
@settings(deadline=None)
def test_one_hot(a):
    got = F.one_hot(fg.tensor(a))
    n = int(a.max()) + 1
    want = (a[..., None] == np.arange(n)).astype(np.int64)
    assert got.dtype == fg.int64
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(F.one_hot(fg.tensor(a), 7).numpy()[..., :n], want)


def test_one_hot_errors():
    with pytest.raises(RuntimeError, match=r"^Class values must be smaller than num_classes\.$"):
        F.one_hot(fg.tensor([0, 3]), 3)
    with pytest.raises(RuntimeError, match=r"^Class values must be non-negative\.$"):
        F.one_hot(fg.tensor([0, -1]))
    with pytest.raises(RuntimeError, match="LongTensor"):
        F.one_hot(fg.tensor([0.0]))
    with pytest.raises(RuntimeError, match="Can not infer total number of classes"):
        F.one_hot(fg.zeros(0, dtype=fg.int64))
    assert tuple(F.one_hot(fg.zeros(0, dtype=fg.int64), 4).shape) == (0, 4)
