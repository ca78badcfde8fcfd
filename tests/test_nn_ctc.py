"""``F.ctc_loss`` / ``nn.CTCLoss``: values against a brute-force sum over every
frame-level path, gradients against finite differences (first and second
order), PyTorch's reductions, infinite losses and ``zero_infinity``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd import nn
from ferrograd.autograd import gradcheck, gradgradcheck


def collapse(path, blank):
    """CTC's many-to-one map: merge repeats, then drop blanks."""
    out, prev = [], None
    for c in path:
        if c != prev and c != blank:
            out.append(c)
        prev = c
    return out


def brute_nll(lp, target, length, blank):
    """-log of the summed probability of every path of ``length`` frames that
    collapses to ``target`` (``lp``: (T, C) log-probabilities)."""
    probs = np.exp(lp)
    total = 0.0
    for path in itertools.product(range(lp.shape[1]), repeat=length):
        if collapse(path, blank) == list(target):
            total += math.prod(probs[t, c] for t, c in enumerate(path))
    return math.inf if total == 0 else -math.log(total)


@settings(max_examples=15, deadline=None)
@given(
    st.integers(0, 2**16), st.integers(1, 3), st.integers(1, 4), st.sampled_from([0, 2]), st.data()
)
def test_matches_the_sum_over_paths(seed, n, t_max, blank, data):
    C = 3
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(t_max, n, C))
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    labels = [c for c in range(C) if c != blank]
    il = [data.draw(st.integers(1, t_max)) for _ in range(n)]
    tl = [data.draw(st.integers(0, 3)) for _ in range(n)]
    tg = [[data.draw(st.sampled_from(labels)) for _ in range(3)] for _ in range(n)]
    want = np.array([brute_nll(lp[:, i], tg[i][: tl[i]], il[i], blank) for i in range(n)])
    x = fg.tensor(lp)
    got = F.ctc_loss(x, fg.tensor(tg), fg.tensor(il), fg.tensor(tl), blank=blank, reduction="none")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-9)
    # The concatenated 1-D targets give the same losses.
    flat = fg.tensor([c for i in range(n) for c in tg[i][: tl[i]]], dtype=fg.int64)
    got1 = F.ctc_loss(x, flat, il, tl, blank=blank, reduction="none")
    np.testing.assert_allclose(got1.numpy(), want, rtol=1e-9)
    finite = np.where(np.isinf(want), 0.0, want)
    if np.isfinite(want).all():
        assert F.ctc_loss(
            x, fg.tensor(tg), il, tl, blank=blank, reduction="sum"
        ).item() == pytest.approx(want.sum())
        mean = np.mean(want / np.maximum(tl, 1))
        assert F.ctc_loss(x, fg.tensor(tg), il, tl, blank=blank).item() == pytest.approx(mean)
    z = F.ctc_loss(x, fg.tensor(tg), il, tl, blank=blank, reduction="none", zero_infinity=True)
    np.testing.assert_allclose(z.numpy(), finite, rtol=1e-9)


def test_float32_and_module():
    fg.manual_seed(0)
    lp = fg.randn(5, 2, 4).log_softmax(2)
    targets = fg.tensor([[1, 2, 2], [3, 1, 0]])
    loss = nn.CTCLoss(blank=0)(lp, targets, (5, 4), (3, 2))
    assert loss.dtype is fg.float32
    want = F.ctc_loss(lp.double(), targets, (5, 4), (3, 2))
    assert loss.item() == pytest.approx(want.item(), rel=1e-5)
    lp0 = lp.double().numpy()
    per = [brute_nll(lp0[:, 0], [1, 2, 2], 5, 0), brute_nll(lp0[:, 1], [3, 1], 4, 0)]
    assert want.item() == pytest.approx((per[0] / 3 + per[1] / 2) / 2, rel=1e-10)


def test_unbatched():
    fg.manual_seed(1)
    lp = fg.randn(4, 3, dtype=fg.float64).log_softmax(1)
    got = F.ctc_loss(lp, fg.tensor([1, 2]), 4, 2, reduction="none")
    assert got.shape == ()
    assert got.item() == pytest.approx(brute_nll(lp.numpy(), [1, 2], 4, 0), rel=1e-10)


def test_impossible_alignment_is_infinite_unless_zeroed():
    # [1, 1] needs a blank between the repeats: three frames at least.
    lp = fg.randn(2, 1, 3, dtype=fg.float64).log_softmax(2).requires_grad_()
    loss = F.ctc_loss(lp, fg.tensor([[1, 1]]), [2], [2], reduction="sum")
    assert math.isinf(loss.item()) and loss.item() > 0
    z = F.ctc_loss(lp, fg.tensor([[1, 1]]), [2], [2], reduction="sum", zero_infinity=True)
    assert z.item() == 0.0
    z.backward()
    assert lp.grad.abs().sum().item() == 0.0


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**16))
def test_gradcheck_first_and_second_order(seed):
    rng = np.random.default_rng(seed)
    lp = fg.tensor(rng.normal(size=(4, 2, 3)) - 1.0, requires_grad=True)
    targets = fg.tensor([[1, 2], [2, 2]])

    def f(x):
        return F.ctc_loss(x, targets, [4, 3], [2, 1], reduction="mean")

    assert gradcheck(f, (lp,))
    assert gradgradcheck(f, (lp,))
    logits = fg.tensor(rng.normal(size=(3, 1, 3)), requires_grad=True)
    assert gradcheck(lambda x: F.ctc_loss(x.log_softmax(2), fg.tensor([[1]]), [3], [1]), (logits,))


def test_errors():
    lp = fg.randn(3, 2, 4).log_softmax(2)
    t = fg.tensor([[1, 2], [1, 1]])
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, t, [3, 3], [2, 2], blank=4)
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(lp, t, [3], [2, 2])
    with pytest.raises(
        RuntimeError, match="Expected input_lengths to have value at most 3, but got value 5"
    ):
        F.ctc_loss(lp, t, [5, 3], [2, 2])
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.ctc_loss(lp, t, [3, 3], [2, 2], reduction="avg")


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**16))
def test_native_gradient_matches_the_composite_on_long_sequences(seed):
    # The native backward (the beta recursion) against the derivative of the loss written
    # in differentiable ops, which a graph of the backward uses: sequences far too long for
    # the sum over paths, repeated labels, and a sample with no alignment.
    from ferrograd.nn._functional.ctc import _composite

    rng = np.random.default_rng(seed)
    t, n, c = 40, 4, 5
    logits = rng.normal(size=(t, n, c)) * 2
    lp = fg.tensor(logits - np.log(np.exp(logits).sum(-1, keepdims=True)), requires_grad=True)
    seqs = [list(rng.integers(1, c, rng.integers(0, 13))) for _ in range(n - 1)] + [[2] * 25]
    seqs = [[int(v) for v in s] for s in seqs]
    il = [int(v) for v in rng.integers(1, t + 1, n - 1)] + [t]
    tl = [len(s) for s in seqs]
    width = max(tl)
    targets = fg.tensor([s + [1] * (width - len(s)) for s in seqs])
    loss = F.ctc_loss(lp, targets, il, tl, reduction="none", zero_infinity=True)
    weights = fg.tensor(rng.uniform(0.5, 2.0, n))
    (loss * weights).sum().backward()
    want_loss = _composite(lp, seqs, il, tl, 0, True)
    (want,) = fg.autograd.grad((want_loss * weights).sum(), lp)
    np.testing.assert_allclose(loss.detach().numpy(), want_loss.detach().numpy(), rtol=1e-9)
    np.testing.assert_allclose(lp.grad.numpy(), want.numpy(), rtol=1e-7, atol=1e-12)
    # The impossible sample (25 repeats need 49 frames) has a zero loss and gradient.
    assert loss[-1].item() == 0.0
    assert lp.grad[:, -1].abs().sum().item() == 0.0


def test_float32_loss_of_a_long_sequence_keeps_float64_accuracy():
    # The recursion runs in float64 whatever the input's dtype: a float32 input gives the
    # float64 loss rounded once.
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(300, 2, 20))
    lp64 = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    lp32 = fg.tensor(lp64.astype(np.float32))
    targets = fg.tensor(rng.integers(1, 20, (2, 60)))
    got = F.ctc_loss(lp32, targets, [300, 280], [60, 50], reduction="none")
    want = F.ctc_loss(lp32.double(), targets, [300, 280], [60, 50], reduction="none")
    assert got.dtype is fg.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy().astype(np.float32))


@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
@pytest.mark.parametrize("batch", [1, 5])
def test_one_and_two_threads_give_the_same_bits(dtype, batch):
    # Long enough for the samples to run side by side; PyTorch refuses an empty batch.
    rng = np.random.default_rng(batch)
    t, c = 150, 12
    logits = rng.normal(size=(t, batch, c))
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    targets = rng.integers(1, c, (batch, 25))
    il = [int(v) for v in rng.integers(100, t + 1, batch)]
    tl = [int(v) for v in rng.integers(5, 26, batch)]
    weights = rng.uniform(0.5, 2.0, batch)
    results = []
    before = fg.get_num_threads()
    try:
        for threads in (1, 2):
            fg.set_num_threads(threads)
            x = fg.tensor(lp, dtype=dtype, requires_grad=True)
            loss = F.ctc_loss(x, fg.tensor(targets), il, tl, reduction="none")
            (loss * fg.tensor(weights, dtype=dtype)).sum().backward()
            results.append([loss.detach().numpy(), x.grad.numpy()])
    finally:
        fg.set_num_threads(before)
    for one, two in zip(*results):
        assert one.dtype == two.dtype
        np.testing.assert_array_equal(one.view(np.uint8), two.view(np.uint8))
    assert np.isfinite(results[0][0]).all() and np.abs(results[0][1]).sum() > 0
