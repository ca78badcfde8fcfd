"""vmap batching rules of the sorting and selection functions and of the
layer/group normalisations: each batched call equals the per-sample loop."""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd.func import grad, vmap


def _loop(f, *xs):
    return fg.stack([f(*(x[i] for x in xs)) for i in range(xs[0].shape[0])])


def _rand(*shape, seed=0):
    return fg.tensor(np.random.default_rng(seed).standard_normal(shape))


SELECT = {
    "sort": lambda r: fg.sort(r)[0],
    "sort descending stable indices": lambda r: fg.sort(r, 0, descending=True, stable=True)[1],
    "argsort": lambda r: fg.argsort(r, dim=-1),
    "msort": fg.msort,
    "topk": lambda r: fg.topk(r, 2, dim=0)[0],
    "topk indices": lambda r: fg.topk(r, 2, largest=False)[1],
    "kthvalue": lambda r: fg.kthvalue(r, 2, 1, True)[0],
    "median": fg.median,
    "median dim": lambda r: fg.median(r, 0)[1],
    "nanmedian": fg.nanmedian,
}


@pytest.mark.parametrize("name", sorted(SELECT))
def test_selection_functions_match_the_loop(name):
    x = _rand(4, 3, 5)
    x[1, 0, 2] = float("nan") if name == "nanmedian" else x[1, 0, 2]
    out = vmap(SELECT[name])(x)
    ref = _loop(SELECT[name], x)
    assert out.shape == ref.shape
    assert fg.equal(out, ref) or np.array_equal(out.numpy(), ref.numpy(), equal_nan=True)


def test_sort_in_dims_one_and_nested_vmap():
    x = _rand(3, 4, 5)
    out = vmap(lambda r: fg.sort(r)[0], in_dims=1)(x)
    assert fg.equal(out, _loop(lambda r: fg.sort(r)[0], x.transpose(0, 1)))
    nested = vmap(vmap(lambda r: fg.topk(r, 2)[0]))(x)
    assert fg.equal(nested, fg.topk(x, 2)[0])


@pytest.mark.parametrize("affine", ["none", "shared", "per-sample"])
def test_layer_norm_matches_the_loop(affine):
    x = _rand(4, 3, 6)
    w, b = _rand(4, 6, seed=1), _rand(4, 6, seed=2)
    if affine == "none":
        f, args = (lambda r: F.layer_norm(r, (6,))), (x,)
    elif affine == "shared":
        f, args = (lambda r: F.layer_norm(r, (3, 6), w[0].expand(3, 6), b[0].expand(3, 6))), (x,)
    else:
        f, args = (lambda r, w, b: F.layer_norm(r, (6,), w, b)), (x, w, b)
    np.testing.assert_allclose(vmap(f)(*args).numpy(), _loop(f, *args).numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("per_sample_weight", [False, True])
def test_group_norm_matches_the_loop(per_sample_weight):
    x = _rand(3, 2, 4, 5)
    w, b = _rand(3, 4, seed=1), _rand(4, seed=2)
    if per_sample_weight:
        f, args = (lambda r, w: F.group_norm(r, 2, w, b)), (x, w)
    else:
        f, args = (lambda r: F.group_norm(r, 2, w[0], b)), (x,)
    np.testing.assert_allclose(vmap(f)(*args).numpy(), _loop(f, *args).numpy(), rtol=1e-12, atol=1e-12)


def test_layer_norm_module_under_vmap():
    m = fg.nn.LayerNorm(5).double()
    x = _rand(4, 2, 5)
    assert fg.equal(vmap(m)(x), _loop(m, x))


def test_per_sample_gradients_through_layer_norm_and_sort():
    x = _rand(5, 6)
    w = fg.ones(6, dtype=fg.float64)

    def loss(w, r):
        y = F.layer_norm(r, (6,), w)
        return (fg.sort(y)[0] * fg.arange(6, dtype=fg.float64)).sum() ** 2

    per_sample = vmap(grad(loss), in_dims=(None, 0))(w, x)
    for i in range(5):
        wi = w.clone().requires_grad_()
        loss(wi, x[i]).backward()
        np.testing.assert_allclose(per_sample[i].numpy(), wi.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_group_norm_of_too_few_dimensions_is_refused_under_vmap():
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions"):
        vmap(lambda r: F.group_norm(r, 1))(_rand(3, 4))


BATCH_NORM = {
    "eval with running statistics": lambda r, s: F.batch_norm(r, s["rm"], s["rv"], s["w"], s["b"]),
    "training without running statistics": lambda r, s: F.batch_norm(r, None, None, s["w"], s["b"], True),
    "instance_norm": lambda r, s: F.instance_norm(r),
    "instance_norm affine": lambda r, s: F.instance_norm(r, weight=s["w"], bias=s["b"]),
    "BatchNorm2d eval": lambda r, s: s["bn"](r),
    "BatchNorm2d without running statistics": lambda r, s: s["bn_free"](r),
}


@pytest.mark.parametrize("name", sorted(BATCH_NORM))
def test_batch_norm_family_matches_the_loop(name):
    x = _rand(3, 4, 2, 5, 5)
    s = {
        "rm": _rand(2, seed=1),
        "rv": _rand(2, seed=2).abs() + 0.5,
        "w": _rand(2, seed=3),
        "b": _rand(2, seed=4),
        "bn": fg.nn.BatchNorm2d(2).double().eval(),
        "bn_free": fg.nn.BatchNorm2d(2, track_running_stats=False).double(),
    }
    f = BATCH_NORM[name]
    out = vmap(lambda r: f(r, s))(x)
    np.testing.assert_allclose(out.detach().numpy(), _loop(lambda r: f(r, s), x).detach().numpy(), rtol=1e-12, atol=1e-12)


def test_batch_norm_per_sample_affine_and_running_stats_refusal():
    x, w = _rand(3, 4, 2, 5), _rand(3, 2, seed=1)

    def f(r, wi):
        return F.batch_norm(r, None, None, wi, None, True)

    np.testing.assert_allclose(vmap(f)(x, w).numpy(), _loop(f, x, w).numpy(), rtol=1e-12, atol=1e-12)
    bn = fg.nn.BatchNorm1d(2).double()
    with pytest.raises(RuntimeError, match="running_mean or running_var, which will be updated in place"):
        vmap(bn)(x)
    assert fg.equal(bn.running_mean, fg.zeros(2, dtype=fg.float64))
