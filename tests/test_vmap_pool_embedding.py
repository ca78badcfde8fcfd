"""vmap of pooling, unfold/fold, interpolate, pad and embedding: one call on
the samples' rows, equal to the per-sample loop."""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd.func import grad, vmap


def _rand(*shape, seed=0):
    return fg.tensor(np.random.default_rng(seed).standard_normal(shape))


def _loop(f, *xs):
    return fg.stack([f(*(x[i] for x in xs)) for i in range(xs[0].shape[0])])


CASES = {
    "max_pool2d": lambda r: F.max_pool2d(r, 2),
    "max_pool2d indices": lambda r: F.max_pool2d(r, 3, 1, 1, return_indices=True)[1],
    "avg_pool2d": lambda r: F.avg_pool2d(r, 2, ceil_mode=True),
    "adaptive_avg_pool2d": lambda r: F.adaptive_avg_pool2d(r, (1, 3)),
    "adaptive_max_pool2d": lambda r: F.adaptive_max_pool2d(r, 2),
    "max_pool1d": lambda r: F.max_pool1d(r.flatten(2), 3),
    "avg_pool1d": lambda r: F.avg_pool1d(r.flatten(2), 2),
    "adaptive_avg_pool1d": lambda r: F.adaptive_avg_pool1d(r.flatten(2), 5),
    "max_pool3d": lambda r: F.max_pool3d(r, 2),
    "avg_pool3d": lambda r: F.avg_pool3d(r.unsqueeze(0), 2),
    "interpolate nearest": lambda r: F.interpolate(r, scale_factor=2),
    "interpolate bilinear": lambda r: F.interpolate(r, size=(5, 7), mode="bilinear"),
    "pad constant": lambda r: F.pad(r, (1, 2)),
    "pad reflect": lambda r: F.pad(r, (1, 1, 2, 0), mode="reflect"),
    "pad every dimension": lambda r: F.pad(r, (1, 1, 0, 1, 1, 0, 1, 1)),
    "unfold": lambda r: F.unfold(r, 2, stride=2),
    "unfold then fold": lambda r: F.fold(F.unfold(r, 2), (6, 6), 2),
    "unbatched sample": lambda r: F.max_pool2d(r[0], 2),
    "MaxPool2d module": fg.nn.MaxPool2d(3, stride=1, padding=1),
    "AdaptiveAvgPool2d module": fg.nn.AdaptiveAvgPool2d(1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rowwise_functions_match_the_loop(name):
    x = _rand(3, 2, 4, 6, 6)
    assert fg.equal(vmap(CASES[name])(x), _loop(CASES[name], x))


def test_nested_vmap_of_a_pool():
    x = _rand(2, 3, 4, 6, 6)
    assert fg.equal(vmap(vmap(lambda r: F.max_pool2d(r, 2)))(x), F.max_pool2d(x.reshape(6, 4, 6, 6), 2).reshape(2, 3, 4, 3, 3))


def test_a_sample_of_the_wrong_rank_gets_the_functions_error():
    with pytest.raises(RuntimeError):
        vmap(lambda r: F.max_pool2d(r, 2))(_rand(3, 6))


def test_embedding_with_per_sample_indices_and_tables():
    table = _rand(5, 2)
    idx = fg.tensor([[0, 4, 1], [2, 2, 3], [4, 0, 0]])
    assert fg.equal(vmap(lambda i: F.embedding(i, table))(idx), _loop(lambda i: F.embedding(i, table), idx))
    tables = _rand(3, 5, 2, seed=1)
    f = lambda i, w: F.embedding(i, w)  # noqa: E731
    assert fg.equal(vmap(f)(idx, tables), _loop(f, idx, tables))
    assert fg.equal(vmap(lambda w: F.embedding(idx[0], w))(tables), _loop(lambda w: F.embedding(idx[0], w), tables))
    with pytest.raises(RuntimeError, match="padding_idx"):
        vmap(lambda i, w: F.embedding(i, w, padding_idx=0))(idx, tables)


def test_per_sample_gradients_through_embedding_and_pooling():
    emb = fg.nn.Embedding(6, 4).double()
    weight = emb.weight.detach()
    idx = fg.tensor([[0, 5, 1, 1], [2, 3, 3, 4], [5, 0, 0, 2]])

    def loss(w, i):
        e = F.embedding(i, w).t().unsqueeze(0)
        return F.max_pool1d(e, 2).pow(2).sum()

    per_sample = vmap(grad(loss), in_dims=(None, 0))(weight, idx)
    for k in range(3):
        w = weight.clone().requires_grad_()
        loss(w, idx[k]).backward()
        np.testing.assert_allclose(per_sample[k].numpy(), w.grad.numpy(), rtol=1e-12, atol=1e-12)


def _pool_indices(x, k):
    return F.max_pool2d(x, k, return_indices=True)[1]


def test_max_unpool_with_per_sample_values_and_indices():
    x = _rand(3, 2, 2, 4, 4, seed=1)
    vals = vmap(lambda r: F.max_pool2d(r, 2))(x)
    idx = vmap(lambda r: _pool_indices(r, 2))(x)
    got = vmap(lambda v, i: F.max_unpool2d(v, i, 2))(vals, idx)
    assert fg.equal(got, _loop(lambda v, i: F.max_unpool2d(v, i, 2), vals, idx))
    # Shared indices, and an unbatched (C, L) sample of the 1-d form.
    shared = vmap(lambda v: F.max_unpool2d(v, idx[0], 2))(vals)
    assert fg.equal(shared, _loop(lambda v: F.max_unpool2d(v, idx[0], 2), vals))
    v1, i1 = F.max_pool1d(_rand(2, 6, seed=2), 2, return_indices=True)
    vs = fg.stack([v1, v1 * 2, v1 - 1])
    assert fg.equal(vmap(lambda v: F.max_unpool1d(v, i1, 2))(vs),
                    _loop(lambda v: F.max_unpool1d(v, i1, 2), vs))


def test_max_unpool_under_vmap_still_checks_the_indices():
    vals = _rand(2, 1, 1, 2, 2)
    bad = fg.full((2, 1, 1, 2, 2), 99, dtype=fg.int64)
    with pytest.raises(RuntimeError, match="Found an invalid max index: 99"):
        vmap(lambda v, i: F.max_unpool2d(v, i, 2))(vals, bad)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_with_per_sample_tables_and_bags(mode):
    rng = np.random.default_rng(3)
    w = _rand(3, 5, 4, seed=4)
    idx = fg.tensor(rng.integers(0, 5, (3, 2, 3)))
    per_table = vmap(lambda t: F.embedding_bag(idx[0], t, mode=mode))(w)
    assert fg.equal(per_table, _loop(lambda t: F.embedding_bag(idx[0], t, mode=mode), w))
    per_bags = vmap(lambda i: F.embedding_bag(i, w[0], mode=mode))(idx)
    assert fg.equal(per_bags, _loop(lambda i: F.embedding_bag(i, w[0], mode=mode), idx))
    both = vmap(lambda i, t: F.embedding_bag(i, t, mode=mode))(idx, w)
    assert fg.equal(both, _loop(lambda i, t: F.embedding_bag(i, t, mode=mode), idx, w))


def test_embedding_bag_per_sample_weights_and_gradients():
    rng = np.random.default_rng(5)
    w = _rand(5, 4, seed=6).requires_grad_()
    idx = fg.tensor(rng.integers(0, 5, (2, 3)))
    psw = _rand(3, 2, 3, seed=7)

    def loss(t, p):
        return F.embedding_bag(idx, t, mode="sum", per_sample_weights=p).sum()

    got = vmap(grad(loss), in_dims=(None, 0))(w, psw)
    want = fg.stack([grad(loss)(w, psw[i]) for i in range(3)])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_embedding_bag_under_vmap_refuses_offsets_by_name():
    w = _rand(2, 5, 4)
    with pytest.raises(RuntimeError, match="vmap: embedding_bag supports 2-D"):
        vmap(lambda t: F.embedding_bag(fg.tensor([0, 1, 2]), t, fg.tensor([0, 2])))(w)
