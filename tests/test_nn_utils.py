"""``nn.utils``: gradient clipping against closed forms, and the
parameters/vector conversions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as torch
from ferrograd import nn
from ferrograd.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    vector_to_parameters,
)


def _params_with_grads(*grads, dtype=torch.float32):
    ps = []
    for g in grads:
        p = nn.Parameter(torch.zeros(len(g), dtype=dtype))
        p.grad = torch.tensor(g, dtype=dtype)
        ps.append(p)
    return ps


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize(
    ("norm_type", "total"),
    [(2.0, 13.0), (1, 19.0), (float("inf"), 12.0), ("inf", 12.0), (3.0, (27 + 64 + 1728) ** (1 / 3))],
)
def test_clip_grad_norm_closed_form(norm_type, total):
    ps = _params_with_grads([3.0, 4.0], [12.0], dtype=torch.float64)
    got = clip_grad_norm_(ps, max_norm=1.5, norm_type=norm_type)
    assert isinstance(got, torch.Tensor) and got.shape == ()
    assert float(got) == pytest.approx(total, rel=1e-12)
    coef = 1.5 / (total + 1e-6)
    assert np.allclose(_np(ps[0].grad), [3.0 * coef, 4.0 * coef], rtol=1e-12)
    assert np.allclose(_np(ps[1].grad), [12.0 * coef], rtol=1e-12)


def test_clip_grad_norm_below_max_leaves_grads_and_keeps_objects():
    ps = _params_with_grads([0.3, 0.4])
    g = ps[0].grad
    total = clip_grad_norm_(ps, 10.0)
    assert float(total) == pytest.approx(0.5)
    assert ps[0].grad is g
    assert np.array_equal(_np(g), np.array([0.3, 0.4], dtype=np.float32))


def test_clip_grad_norm_accepts_module_parameters_generator_and_single_tensor():
    net = nn.Linear(3, 2)
    net(torch.randn(4, 3)).pow(2).sum().backward()
    norms = [float(p.grad.norm()) for p in net.parameters()]
    total = clip_grad_norm_(net.parameters(), 0.01, foreach=True)
    assert float(total) == pytest.approx(math.sqrt(sum(n * n for n in norms)), rel=1e-5)
    after = math.sqrt(sum(float(p.grad.norm()) ** 2 for p in net.parameters()))
    assert after == pytest.approx(0.01, rel=1e-4)
    p = _params_with_grads([6.0, 8.0])[0]
    assert float(clip_grad_norm_(p, 5.0)) == 10.0
    assert np.allclose(_np(p.grad), [3.0, 4.0], rtol=1e-6)


def test_clip_grad_norm_skips_params_without_grad_and_empty():
    ps = _params_with_grads([3.0, 4.0])
    ps.append(nn.Parameter(torch.ones(2)))
    assert float(clip_grad_norm_(ps, 1.0)) == 5.0
    assert ps[1].grad is None
    zero = clip_grad_norm_([nn.Parameter(torch.ones(2))], 1.0)
    assert float(zero) == 0.0 and zero.shape == ()
    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient "
                      "clipping will occur."):
        clip_grad_norm_((p for p in []), 1.0)


def test_clip_grad_norm_nonfinite():
    ps = _params_with_grads([float("nan"), 1.0])
    with pytest.raises(RuntimeError) as e:
        clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    assert str(e.value) == (
        "The total norm of order 2.0 for gradients from `parameters` is non-finite, so it "
        "cannot be clipped. To disable this error and scale the gradients by the non-finite "
        "norm anyway, set `error_if_nonfinite=False`"
    )
    assert float(ps[0].grad[1]) == 1.0  # untouched when it raises
    ps = _params_with_grads([float("inf"), 1.0])
    total = clip_grad_norm_(ps, 1.0)
    assert math.isinf(float(total))
    # PyTorch scales by max_norm / inf = 0 (and inf * 0 = nan).
    assert float(ps[0].grad[1]) == 0.0 and math.isnan(float(ps[0].grad[0]))


def test_clip_grad_norm_mixed_dtypes():
    a = _params_with_grads([3.0], dtype=torch.float32)
    b = _params_with_grads([4.0], dtype=torch.float64)
    total = clip_grad_norm_(a + b, 1.0)
    assert total.dtype == torch.float64 and float(total) == pytest.approx(5.0)
    assert a[0].grad.dtype == torch.float32
    assert float(a[0].grad[0]) == pytest.approx(0.6, rel=1e-6)


@given(
    vals=st.lists(st.floats(-10, 10, allow_nan=False, width=64), min_size=1, max_size=6),
    max_norm=st.floats(0.1, 20),
    norm_type=st.sampled_from([1.0, 2.0, 3.0, float("inf")]),
)
def test_clip_grad_norm_matches_numpy(vals, max_norm, norm_type):
    half = max(1, len(vals) // 2)
    ps = _params_with_grads(vals[:half], vals[half:] or [0.0], dtype=torch.float64)
    flat = np.array(vals[:half] + (vals[half:] or [0.0]))
    expected = np.linalg.norm(flat, ord=norm_type)
    total = clip_grad_norm_(ps, max_norm, norm_type)
    assert float(total) == pytest.approx(expected, rel=1e-10, abs=1e-12)
    coef = min(1.0, max_norm / (expected + 1e-6))
    got = np.concatenate([_np(p.grad) for p in ps])
    assert np.allclose(got, flat * coef, rtol=1e-10, atol=1e-12)


def test_clip_grad_value():
    ps = _params_with_grads([-3.0, 0.5, 2.0], [7.0])
    ps.append(nn.Parameter(torch.ones(1)))
    clip_grad_value_(ps, 1.0)
    assert np.array_equal(_np(ps[0].grad), np.array([-1.0, 0.5, 1.0], dtype=np.float32))
    assert np.array_equal(_np(ps[1].grad), np.array([1.0], dtype=np.float32))
    assert ps[2].grad is None
    p = _params_with_grads([5.0])[0]
    clip_grad_value_(p, 2)
    assert float(p.grad[0]) == 2.0


def test_parameters_to_vector_and_back():
    net = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    vec = parameters_to_vector(net.parameters())
    expected = np.concatenate([_np(p).reshape(-1) for p in net.parameters()])
    assert vec.shape == (11,) and np.array_equal(_np(vec), expected)
    # Differentiable: the gradient flows back to every parameter.
    vec.sum().backward()
    assert all(np.all(_np(p.grad) == 1.0) for p in net.parameters())

    held = list(net.parameters())
    new = torch.arange(11.0)
    vector_to_parameters(new, net.parameters())
    assert all(a is b for a, b in zip(net.parameters(), held))
    assert np.array_equal(_np(net[0].weight), np.arange(6.0).reshape(2, 3))
    assert np.array_equal(_np(net[1].bias), [10.0])
    assert isinstance(net[0].weight, nn.Parameter) and net[0].weight.requires_grad
    with pytest.raises(TypeError, match="expected ferrograd.Tensor, but got: list"):
        vector_to_parameters([1.0], net.parameters())


def test_import_paths():
    import ferrograd.nn.utils as utils

    assert utils.clip_grad_norm_ is clip_grad_norm_
    assert nn.utils.parameters_to_vector is parameters_to_vector
    from ferrograd.nn.utils.clip_grad import clip_grad_norm_ as direct

    assert direct is clip_grad_norm_
