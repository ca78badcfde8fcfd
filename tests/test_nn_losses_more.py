"""The added losses and distances against NumPy references (every reduction),
float64 gradcheck + gradgradcheck on hypothesis-drawn inputs, modules and
error texts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

FEW = settings(max_examples=max(4, settings.default.max_examples // 5), deadline=None)
REDUCTIONS = ["none", "mean", "sum"]


def red(x, reduction):
    return {"none": x, "mean": np.mean(x), "sum": np.sum(x)}[reduction]


def t(a, rg=False):
    return fg.tensor(np.asarray(a, dtype=np.float64), requires_grad=rg)


def check(fn, *arrays):
    ts = tuple(t(a, True) for a in arrays)
    assert gradcheck(fn, ts)
    assert gradgradcheck(fn, ts)


dims = st.tuples(st.integers(1, 4), st.integers(1, 4))


@pytest.mark.parametrize("reduction", [*REDUCTIONS, "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
@given(shape=dims, seed=st.integers(0, 2**16))
@FEW
def test_kl_div(reduction, log_target, shape, seed):
    rng = np.random.default_rng(seed)
    logp = np.log(rng.dirichlet(np.ones(shape[1]), shape[0]))
    q = rng.dirichlet(np.ones(shape[1]), shape[0])
    q[0, 0] = 0.0  # xlogy(0, 0) = 0
    tgt = np.log(q + 1e-3) if log_target else q
    pw = (
        np.exp(tgt) * (tgt - logp)
        if log_target
        else np.where(q > 0, q * np.log(np.where(q > 0, q, 1)), 0) - q * logp
    )
    want = pw.sum() / shape[0] if reduction == "batchmean" else red(pw, reduction)
    got = F.kl_div(t(logp), t(tgt), reduction=reduction, log_target=log_target)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-14)
    f = lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target)  # noqa: E731
    if log_target:
        check(f, logp, tgt)
    else:
        check(lambda a: f(a, t(tgt)), logp)
    m = nn.KLDivLoss(reduction=reduction, log_target=log_target)
    np.testing.assert_allclose(m(t(logp), t(tgt)).numpy(), want, rtol=1e-12, atol=1e-14)


def np_cos(a, b, dim, eps=1e-8):
    n1 = np.maximum(np.linalg.norm(a, axis=dim), eps)
    n2 = np.maximum(np.linalg.norm(b, axis=dim), eps)
    return (a * b).sum(dim) / (n1 * n2)


@given(
    shape=st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 3)),
    dim=st.integers(-3, 2),
    seed=st.integers(0, 2**16),
)
@FEW
def test_cosine_similarity(shape, dim, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    np.testing.assert_allclose(
        F.cosine_similarity(t(a), t(b), dim).numpy(), np_cos(a, b, dim), rtol=1e-10
    )
    check(lambda x, y: F.cosine_similarity(x, y, dim), a, b)
    # broadcasting and a zero vector (clamped norm, no NaN)
    z = np.zeros(shape[-1])
    got = F.cosine_similarity(t(z), t(b), dim=-1).numpy()
    assert np.all(got == 0)
    np.testing.assert_allclose(
        nn.CosineSimilarity(dim=dim)(t(a), t(b)).numpy(), np_cos(a, b, dim), rtol=1e-10
    )


@given(
    shape=st.tuples(st.integers(1, 3), st.integers(1, 4)),
    p=st.sampled_from([1.0, 2.0, 3.0]),
    keepdim=st.booleans(),
    seed=st.integers(0, 2**16),
)
@FEW
def test_pairwise_distance(shape, p, keepdim, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    want = (np.abs(a - b + 1e-6) ** p).sum(-1, keepdims=keepdim) ** (1 / p)
    got = F.pairwise_distance(t(a), t(b), p, keepdim=keepdim)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    check(lambda x, y: F.pairwise_distance(x, y, p), a, b)
    np.testing.assert_allclose(
        nn.PairwiseDistance(p, keepdim=keepdim)(t(a), t(b)).numpy(), want, rtol=1e-10
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(
    n=st.integers(1, 4),
    d=st.integers(1, 4),
    margin=st.floats(-0.5, 0.5),
    seed=st.integers(0, 2**16),
)
@FEW
def test_cosine_embedding_loss(reduction, n, d, margin, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    y = rng.choice([-1.0, 1.0], n)
    cos = (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))
    want = red(np.where(y == 1, 1 - cos, np.maximum(cos - margin, 0)), reduction)
    f = lambda x1, x2: F.cosine_embedding_loss(x1, x2, t(y), margin, reduction=reduction)  # noqa: E731
    np.testing.assert_allclose(f(t(a), t(b)).numpy(), want, rtol=1e-10, atol=1e-14)
    if np.all(np.abs(cos - margin) > 1e-3):
        check(f, a, b)
    m = nn.CosineEmbeddingLoss(margin, reduction=reduction)
    np.testing.assert_allclose(m(t(a), t(b), t(y)).numpy(), want, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(n=st.integers(1, 6), margin=st.floats(0, 1), seed=st.integers(0, 2**16))
@FEW
def test_margin_ranking_loss(reduction, n, margin, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    y = rng.choice([-1.0, 1.0], n)
    z = -y * (a - b) + margin
    want = red(np.maximum(z, 0), reduction)
    f = lambda x1, x2: F.margin_ranking_loss(x1, x2, t(y), margin, reduction=reduction)  # noqa: E731
    np.testing.assert_allclose(f(t(a), t(b)).numpy(), want, rtol=1e-12, atol=1e-14)
    if np.all(np.abs(z) > 1e-3):
        check(f, a, b)
    np.testing.assert_allclose(
        nn.MarginRankingLoss(margin, reduction=reduction)(t(a), t(b), t(y)).numpy(),
        want,
        rtol=1e-12,
        atol=1e-14,
    )


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(
    n=st.integers(1, 4),
    d=st.integers(1, 4),
    p=st.sampled_from([1.0, 2.0]),
    seed=st.integers(0, 2**16),
)
@FEW
def test_triplet_margin_loss(swap, reduction, n, d, p, seed):
    rng = np.random.default_rng(seed)
    a, po, ne = (rng.standard_normal((n, d)) for _ in range(3))

    def dist(x, y):
        return (np.abs(x - y + 1e-6) ** p).sum(-1) ** (1 / p)

    dn = dist(a, ne)
    if swap:
        dn = np.minimum(dn, dist(po, ne))
    z = 1.0 + dist(a, po) - dn
    want = red(np.maximum(z, 0), reduction)
    f = lambda x, y, w: F.triplet_margin_loss(x, y, w, p=p, swap=swap, reduction=reduction)  # noqa: E731
    np.testing.assert_allclose(f(t(a), t(po), t(ne)).numpy(), want, rtol=1e-10, atol=1e-14)
    if np.all(np.abs(z) > 1e-3) and (not swap or np.all(np.abs(dist(a, ne) - dist(po, ne)) > 1e-3)):
        check(f, a, po, ne)
    m = nn.TripletMarginLoss(p=p, swap=swap, reduction=reduction)
    np.testing.assert_allclose(m(t(a), t(po), t(ne)).numpy(), want, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(n=st.integers(1, 6), margin=st.floats(0.5, 2), seed=st.integers(0, 2**16))
@FEW
def test_hinge_and_soft_margin(reduction, n, margin, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    y = rng.choice([-1.0, 1.0], n)
    want = red(np.where(y == 1, x, np.maximum(margin - x, 0)), reduction)
    f = lambda a: F.hinge_embedding_loss(a, t(y), margin, reduction=reduction)  # noqa: E731
    np.testing.assert_allclose(f(t(x)).numpy(), want, rtol=1e-12)
    if np.all(np.abs(margin - x) > 1e-3):
        check(f, x)
    np.testing.assert_allclose(
        nn.HingeEmbeddingLoss(margin, reduction=reduction)(t(x), t(y)).numpy(), want, rtol=1e-12
    )
    want = red(np.log1p(np.exp(-y * x)), reduction)
    g = lambda a: F.soft_margin_loss(a, t(y), reduction=reduction)  # noqa: E731
    np.testing.assert_allclose(g(t(x)).numpy(), want, rtol=1e-12)
    check(g, x)
    np.testing.assert_allclose(
        nn.SoftMarginLoss(reduction=reduction)(t(x), t(y)).numpy(), want, rtol=1e-12
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=dims, weighted=st.booleans(), seed=st.integers(0, 2**16))
@FEW
def test_multilabel_soft_margin(reduction, shape, weighted, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    y = rng.integers(0, 2, shape).astype(np.float64)
    w = rng.uniform(0.5, 2, shape[1]) if weighted else None
    ls = -np.logaddexp(0, -x)
    lns = -np.logaddexp(0, x)
    loss = -(y * ls + (1 - y) * lns) * (1 if w is None else w)
    want = red(loss.sum(1) / shape[1], reduction)
    wt = None if w is None else t(w)
    f = lambda a: F.multilabel_soft_margin_loss(a, t(y), wt, reduction=reduction)  # noqa: E731
    np.testing.assert_allclose(f(t(x)).numpy(), want, rtol=1e-12)
    check(f, x)
    m = nn.MultiLabelSoftMarginLoss(wt, reduction=reduction)
    np.testing.assert_allclose(m(t(x), t(y)).numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("full", [False, True])
@given(n=st.integers(1, 6), seed=st.integers(0, 2**16))
@FEW
def test_poisson_nll(reduction, log_input, full, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.2, 2.0, n)
    y = rng.integers(0, 5, n).astype(np.float64)
    loss = np.exp(x) - y * x if log_input else x - y * np.log(x + 1e-8)
    if full:
        ys = np.where(y > 1, y, 1)
        loss = loss + np.where(y > 1, ys * np.log(ys) - ys + 0.5 * np.log(2 * np.pi * ys), 0)
    want = red(loss, reduction)
    f = lambda a: F.poisson_nll_loss(a, t(y), log_input, full, reduction=reduction)  # noqa: E731
    np.testing.assert_allclose(f(t(x)).numpy(), want, rtol=1e-12)
    check(f, x)
    m = nn.PoissonNLLLoss(log_input, full, reduction=reduction)
    np.testing.assert_allclose(m(t(x), t(y)).numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("full", [False, True])
@given(shape=dims, var_shape=st.sampled_from(["same", "drop", "one"]), seed=st.integers(0, 2**16))
@FEW
def test_gaussian_nll(reduction, full, shape, var_shape, seed):
    rng = np.random.default_rng(seed)
    mu, y = rng.standard_normal(shape), rng.standard_normal(shape)
    vshape = {"same": shape, "drop": shape[:-1], "one": (shape[0], 1)}[var_shape]
    var = rng.uniform(0.5, 2, vshape)
    vb = var[..., None] if var_shape == "drop" else var
    loss = 0.5 * (np.log(vb) + (mu - y) ** 2 / vb) + (0.5 * math.log(2 * math.pi) if full else 0)
    want = red(loss, reduction)
    f = lambda a, v: F.gaussian_nll_loss(a, t(y), v, full, reduction=reduction)  # noqa: E731
    np.testing.assert_allclose(f(t(mu), t(var)).numpy(), want, rtol=1e-12)
    check(f, mu, var)
    m = nn.GaussianNLLLoss(full=full, reduction=reduction)
    np.testing.assert_allclose(m(t(mu), t(y), t(var)).numpy(), want, rtol=1e-12)


def test_gaussian_nll_clamps_var_but_keeps_its_gradient():
    v = t([1e-9], rg=True)
    loss = F.gaussian_nll_loss(t([0.0]), t([0.0]), v, eps=1e-6)
    np.testing.assert_allclose(loss.detach().numpy(), 0.5 * math.log(1e-6))
    loss.backward()
    np.testing.assert_allclose(v.grad.numpy(), [0.5 / 1e-6])


def test_errors():
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(fg.randn(2, 3), fg.randn(2, 3), fg.ones(3, 2))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(fg.randn(2), fg.randn(2), -fg.ones(2))
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.kl_div(fg.randn(2), fg.rand(2), reduction="avg")
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        F.triplet_margin_loss(fg.randn(2, 3), fg.randn(2, 3), fg.randn(3))
    with pytest.raises(RuntimeError, match="All input tensors should have same dimension"):
        F.margin_ranking_loss(fg.randn(2), fg.randn(2), fg.randn(2, 1))
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0.0)
