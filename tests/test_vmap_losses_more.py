"""vmap of ``binary_cross_entropy`` (with logits too) and ``ctc_loss``: each
sample's loss reduced as one call reduces it, equal to the per-sample loop."""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd.func import grad, vmap

B = 3


def _rand(*shape, lo=-1.0, hi=1.0, seed=0):
    return fg.tensor(np.random.default_rng(seed).uniform(lo, hi, shape))


def _loop(f, *xs):
    return fg.stack([f(*(x[i] for x in xs)) for i in range(B)])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_binary_cross_entropy_with_per_sample_inputs_targets_and_weights(reduction):
    p, y = _rand(B, 2, 3, lo=0.1, hi=0.9, seed=1), _rand(B, 2, 3, lo=0.0, hi=1.0, seed=2)
    w = _rand(B, 3, lo=0.5, hi=2.0, seed=3)

    def f(p, y, w):
        return F.binary_cross_entropy(p, y, weight=w, reduction=reduction)

    assert fg.equal(vmap(f)(p, y, w), _loop(f, p, y, w))
    # The target shared by every sample: it is expanded to the input's shape.
    assert fg.equal(vmap(f, in_dims=(0, None, None))(p, y[0], w[0]),
                    _loop(lambda p: f(p, y[0], w[0]), p))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_binary_cross_entropy_with_logits_and_per_sample_pos_weight(reduction):
    x, y = _rand(B, 2, 3, lo=-3, hi=3, seed=4), _rand(B, 2, 3, lo=0.0, hi=1.0, seed=5)
    pw = _rand(B, 3, lo=0.5, hi=2.0, seed=6)

    def f(x, y, pw):
        return F.binary_cross_entropy_with_logits(x, y, reduction=reduction, pos_weight=pw)

    assert fg.equal(vmap(f)(x, y, pw), _loop(f, x, y, pw))
    assert fg.equal(vmap(f, in_dims=(None, 0, None))(x[0], y, pw[0]),
                    _loop(lambda y: f(x[0], y, pw[0]), y))


def test_per_sample_gradients_of_binary_cross_entropy_with_logits():
    x, y = _rand(B, 4, seed=7), _rand(B, 4, lo=0.0, hi=1.0, seed=8)

    def loss(x, y):
        return F.binary_cross_entropy_with_logits(x, y)

    got = vmap(grad(loss))(x, y)
    # d/dx mean(BCE(sigmoid(x), y)) = (sigmoid(x) - y) / n.
    want = (x.sigmoid() - y) / 4
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


def _ctc_args(seed=9):
    logits = _rand(B, 5, 2, 4, lo=-2, hi=2, seed=seed)
    targets = fg.tensor([[[1, 2, 3], [2, 2, 0]], [[3, 1, 0], [1, 0, 0]], [[2, 3, 1], [3, 3, 0]]])
    target_lengths = fg.tensor([[3, 2], [2, 1], [3, 2]])
    return logits, targets, target_lengths


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_with_per_sample_log_probs_targets_and_lengths(reduction):
    logits, targets, tl = _ctc_args()
    il = fg.tensor([5, 4])

    def f(x, t, tl):
        return F.ctc_loss(x.log_softmax(2), t, il, tl, reduction=reduction)

    got = vmap(f)(logits, targets, tl)
    np.testing.assert_allclose(got.numpy(), _loop(f, logits, targets, tl).numpy(), rtol=1e-12)
    # Shared targets given as lists of lengths.
    shared = vmap(lambda x: F.ctc_loss(x.log_softmax(2), targets[0], [5, 4], [3, 2],
                                       reduction=reduction))(logits)
    want = _loop(lambda x: F.ctc_loss(x.log_softmax(2), targets[0], [5, 4], [3, 2],
                                      reduction=reduction), logits)
    np.testing.assert_allclose(shared.numpy(), want.numpy(), rtol=1e-12)


def test_ctc_loss_under_vmap_refuses_concatenated_targets_by_name():
    logits, _, _ = _ctc_args()
    with pytest.raises(RuntimeError, match="vmap: ctc_loss supports"):
        vmap(lambda x: F.ctc_loss(x.log_softmax(2), fg.tensor([1, 2, 3]), [5, 4], [2, 1]))(logits)


def test_multi_head_attention_forward_under_vmap_matches_a_loop():
    # Its body is projections, reshapes and attention, each with a batching rule.
    q = _rand(B, 2, 1, 4, seed=10)
    w_in, w_out = _rand(12, 4, seed=11), _rand(4, 4, seed=12)

    def f(q):
        return F.multi_head_attention_forward(q, q, q, 4, 2, w_in, None, None, None, False, 0.0,
                                              w_out, None, training=False)[0]

    got = vmap(f)(q)
    want = fg.stack([f(q[i]) for i in range(B)])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
