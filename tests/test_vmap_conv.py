"""vmap of conv1d/conv2d/conv3d: shared or per-sample weights and biases,
batched or unbatched samples, groups, strings as padding, nested vmap and
per-sample gradients of a CNN, each against the per-sample loop."""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd.func import functional_call, grad, vmap


def _rand(*shape, seed=0):
    return fg.tensor(np.random.default_rng(seed).standard_normal(shape))


def _loop(f, *xs):
    return fg.stack([f(*(x[i] for x in xs)) for i in range(xs[0].shape[0])])


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)


CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


@pytest.mark.parametrize("sd", [1, 2, 3])
@pytest.mark.parametrize("padding", [0, 1, "same", "valid"])
def test_shared_weight(sd, padding):
    x = _rand(3, 2, 4, *([6] * sd))
    w, b = _rand(5, 4, *([3] * sd), seed=1), _rand(5, seed=2)

    def f(xi):
        return CONV[sd](xi, w, b, padding=padding)

    _close(vmap(f)(x), _loop(f, x))


@pytest.mark.parametrize("sd", [1, 2])
@pytest.mark.parametrize("groups", [1, 2])
def test_per_sample_weight_and_bias(sd, groups):
    x = _rand(3, 2, 4, *([7] * sd))
    w = _rand(3, 6, 4 // groups, *([3] * sd), seed=1)
    b = _rand(3, 6, seed=2)

    def f(xi, wi, bi):
        return CONV[sd](xi, wi, bi, stride=2, dilation=1, groups=groups)

    _close(vmap(f)(x, w, b), _loop(f, x, w, b))


def test_unbatched_samples_and_a_weight_batched_alone():
    x = _rand(4, 3, 6, 6)
    w = _rand(4, 2, 3, 3, 3, seed=1)
    b = _rand(2, seed=2)
    _close(vmap(lambda xi: F.conv2d(xi, w[0], b))(x), _loop(lambda xi: F.conv2d(xi, w[0], b), x))
    _close(vmap(lambda wi: F.conv2d(x[0], wi, b, padding="same"))(w),
           _loop(lambda wi: F.conv2d(x[0], wi, b, padding="same"), w))


def test_nested_vmap():
    x = _rand(2, 3, 1, 2, 5, 5)
    w = _rand(2, 3, 4, 2, 3, 3, seed=1)
    out = vmap(vmap(lambda xi, wi: F.conv2d(xi, wi)))(x, w)
    ref = fg.stack([fg.stack([F.conv2d(x[i, j], w[i, j]) for j in range(3)]) for i in range(2)])
    shared = vmap(vmap(lambda xi: F.conv2d(xi, w[0, 0])))(x)
    _close(shared, F.conv2d(x.reshape(6, 2, 5, 5), w[0, 0]).reshape(2, 3, 1, 4, 3, 3))
    _close(out, ref)


def test_module_conv_under_vmap_and_wrong_rank_error():
    m = fg.nn.Conv2d(2, 3, 3).double()
    x = _rand(4, 1, 2, 5, 5)
    _close(vmap(m)(x), _loop(m, x))
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\) input to conv2d"):
        vmap(m)(_rand(4, 5, 5))


def test_per_sample_gradients_of_a_cnn():
    model = fg.nn.Sequential(
        fg.nn.Conv2d(1, 4, 3), fg.nn.ReLU(), fg.nn.Flatten(), fg.nn.Linear(64, 3)
    ).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    data, target = _rand(5, 1, 6, 6), fg.tensor([0, 1, 2, 0, 1])

    def loss(p, xi, ti):
        return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), ti.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, data, target)
    for i in range(5):
        model.zero_grad()
        F.cross_entropy(model(data[i : i + 1]), target[i : i + 1]).backward()
        for name, p in model.named_parameters():
            np.testing.assert_allclose(per_sample[name][i].numpy(), p.grad.numpy(), rtol=1e-10, atol=1e-12)
