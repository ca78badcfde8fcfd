"""``nn.init``: gains, fans, bounds and statistics against closed forms, and the
draws (their order and arguments) against the tensor's own seeded
``uniform_``/``normal_``, which is what makes them PyTorch's numbers."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as torch
from ferrograd import nn
from ferrograd.nn import init


def _np(t):
    return t.detach().numpy().copy()


def test_calculate_gain_values():
    for name in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                 "conv_transpose2d", "conv_transpose3d", "sigmoid"):
        assert init.calculate_gain(name) == 1
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("selu") == 0.75
    assert init.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01**2))
    assert init.calculate_gain("leaky_relu", 0) == math.sqrt(2.0)
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == pytest.approx(math.sqrt(1 / 3))


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="^Unsupported nonlinearity gelu$"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="^negative_slope True not a valid number$"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="^negative_slope 0.1 not a valid number$"):
        init.calculate_gain("leaky_relu", "0.1")


def test_fans():
    assert init._calculate_fan_in_and_fan_out(torch.empty(5, 3)) == (3, 5)
    assert init._calculate_fan_in_and_fan_out(torch.empty(8, 4, 3, 2)) == (24, 48)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor "
                       "with fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(torch.empty(3))
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of "
                       r"\['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(torch.empty(2, 2), mode="fan_avg")


def _seeded(seed, fill, shape, dtype=torch.float32):
    torch.manual_seed(seed)
    t = torch.empty(*shape, dtype=dtype)
    out = fill(t)
    assert out is t
    return _np(t)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_uniform_and_kaiming_xavier_uniform_draw_like_uniform_(dtype):
    shape = (6, 4, 3)  # fan_in 12, fan_out 18
    ref = _seeded(1, lambda t: t.uniform_(-0.5, 2.0), shape, dtype)
    assert np.array_equal(_seeded(1, lambda t: init.uniform_(t, -0.5, 2.0), shape, dtype), ref)

    # PyTorch's expressions, in its order (the last bit depends on it).
    bound = math.sqrt(3.0) * (math.sqrt(2.0) / math.sqrt(12))
    ref = _seeded(2, lambda t: t.uniform_(-bound, bound), shape, dtype)
    assert np.array_equal(_seeded(2, init.kaiming_uniform_, shape, dtype), ref)

    bound = math.sqrt(3.0) * ((5.0 / 3) / math.sqrt(18))
    ref = _seeded(3, lambda t: t.uniform_(-bound, bound), shape, dtype)
    got = _seeded(3, lambda t: init.kaiming_uniform_(t, mode="fan_out", nonlinearity="tanh"),
                  shape, dtype)
    assert np.array_equal(got, ref)

    a = math.sqrt(3.0) * (0.7 * math.sqrt(2.0 / float(12 + 18)))
    ref = _seeded(4, lambda t: t.uniform_(-a, a), shape, dtype)
    assert np.array_equal(_seeded(4, lambda t: init.xavier_uniform_(t, gain=0.7), shape, dtype),
                          ref)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_normal_kaiming_xavier_normal_draw_like_normal_(dtype):
    shape = (5, 7)
    ref = _seeded(5, lambda t: t.normal_(1.5, 0.25), shape, dtype)
    assert np.array_equal(_seeded(5, lambda t: init.normal_(t, 1.5, 0.25), shape, dtype), ref)

    std = math.sqrt(2.0 / (1 + 0.3**2)) / math.sqrt(7)
    ref = _seeded(6, lambda t: t.normal_(0, std), shape, dtype)
    assert np.array_equal(_seeded(6, lambda t: init.kaiming_normal_(t, a=0.3), shape, dtype), ref)

    std = 2.0 * math.sqrt(2.0 / 12)
    ref = _seeded(7, lambda t: t.normal_(0.0, std), shape, dtype)
    assert np.array_equal(_seeded(7, lambda t: init.xavier_normal_(t, gain=2.0), shape, dtype), ref)


def test_uniform_bounds_and_moments():
    torch.manual_seed(0)
    n = 40_000
    t = init.uniform_(torch.empty(n), -1.0, 3.0)
    a = _np(t)
    assert a.min() >= -1.0 and a.max() <= 3.0
    # U(-1, 3): mean 1, variance 16/12; 5 standard errors.
    assert abs(a.mean() - 1.0) < 5 * math.sqrt(16 / 12 / n)
    assert abs(a.var() - 16 / 12) < 0.05


def test_kaiming_normal_std():
    torch.manual_seed(0)
    w = init.kaiming_normal_(torch.empty(256, 64), nonlinearity="relu")
    # std = sqrt(2 / 64); the sample std of 16,384 draws is within 3%.
    assert abs(_np(w).std() / math.sqrt(2 / 64) - 1) < 0.03


def test_kaiming_on_empty_warns_and_is_no_op():
    t = torch.empty(0, 3)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_uniform_(t) is t
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_normal_(t)


def test_constant_ones_zeros_eye():
    t = torch.empty(2, 3)
    assert init.constant_(t, 0.25) is t and np.all(_np(t) == 0.25)
    assert np.all(_np(init.ones_(t)) == 1) and np.all(_np(init.zeros_(t)) == 0)
    assert np.array_equal(_np(init.eye_(t)), np.eye(2, 3, dtype=np.float32))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(torch.empty(3))


def test_dirac():
    w = init.dirac_(torch.empty(4, 2, 3))
    expect = np.zeros((4, 2, 3), dtype=np.float32)
    expect[0, 0, 1] = expect[1, 1, 1] = 1
    assert np.array_equal(_np(w), expect)
    w = init.dirac_(torch.empty(4, 2, 3, 3), groups=2)
    expect = np.zeros((4, 2, 3, 3), dtype=np.float32)
    for g in range(2):
        for d in range(2):
            expect[g * 2 + d, d, 1, 1] = 1
    assert np.array_equal(_np(w), expect)
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(torch.empty(2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(torch.empty(3, 2, 3), groups=2)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (6, 2, 2)])
def test_orthogonal(shape):
    torch.manual_seed(11)
    t = init.orthogonal_(torch.empty(*shape, dtype=torch.float64), gain=1.5)
    rows = shape[0]
    m = _np(t).reshape(rows, -1)
    small = min(m.shape)
    gram = m @ m.T if rows <= m.shape[1] else m.T @ m
    assert np.allclose(gram, 1.5**2 * np.eye(small), atol=1e-10)
    # The same draw, by hand: normal_ of (rows, cols), QR of it (or of its
    # transpose when wide), columns signed by R's diagonal.
    torch.manual_seed(11)
    g = _np(torch.empty(rows, m.shape[1], dtype=torch.float64).normal_(0, 1))
    mat = g.T if rows < m.shape[1] else g
    q, r = np.linalg.qr(mat)
    q = q * np.sign(np.diag(r))
    q = q.T if rows < m.shape[1] else q
    assert np.allclose(m, 1.5 * q, atol=1e-12)


def test_orthogonal_errors_and_empty():
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(torch.empty(3))
    t = torch.empty(0, 3)
    assert init.orthogonal_(t) is t


def test_erfinv_accuracy():
    y = np.concatenate([np.linspace(-0.999999, 0.999999, 2001), [0.0, 1e-12, -0.5]])
    x = init._erfinv_array(y)
    back = np.array([math.erf(v) for v in x])
    assert np.max(np.abs(back - y)) < 1e-15
    edge = init._erfinv_array(np.array([1.0, -1.0, 1.5]))
    assert edge[0] == np.inf and edge[1] == -np.inf and np.isnan(edge[2])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_trunc_normal_follows_pytorch_inverse_cdf(dtype):
    mean, std, a, b = 0.5, 2.0, -1.0, 3.0
    torch.manual_seed(9)
    t = init.trunc_normal_(torch.empty(50, 40, dtype=dtype), mean, std, a, b)
    got = _np(t)
    assert got.min() >= a and got.max() <= b

    def cdf(x):
        return (1 + math.erf(x / math.sqrt(2))) / 2

    lo, up = cdf((a - mean) / std), cdf((b - mean) / std)
    torch.manual_seed(9)
    u = _np(torch.empty(50, 40, dtype=dtype).uniform_(2 * lo - 1, 2 * up - 1))
    np_dtype = u.dtype
    ref = init._erfinv_array(u).astype(np_dtype)
    ref = ref * np_dtype.type(std * math.sqrt(2.0)) + np_dtype.type(mean)
    ref = np.clip(ref, a, b)
    assert np.allclose(got, ref, rtol=0, atol=4 * np.finfo(np_dtype).eps * 4)


def test_trunc_normal_moments():
    torch.manual_seed(0)
    t = init.trunc_normal_(torch.empty(100_000, dtype=torch.float64), std=0.5, a=-1.0, b=1.0)
    x = _np(t)
    # Truncated at +-2 sigma: variance sigma^2 (1 - 2*2*phi(2)/(Phi(2) - Phi(-2))).
    phi2 = math.exp(-2.0) / math.sqrt(2 * math.pi)
    mass = math.erf(2 / math.sqrt(2))
    std = 0.5 * math.sqrt(1 - 4 * phi2 / mass)
    assert abs(x.mean()) < 5 * std / math.sqrt(x.size)
    assert abs(x.std() / std - 1) < 0.01


def test_trunc_normal_warns_far_mean():
    with pytest.warns(UserWarning, match="mean is more than 2 std from \\[a, b\\]"):
        init.trunc_normal_(torch.empty(10), mean=10.0)


def test_init_runs_under_no_grad_on_parameters():
    p = nn.Parameter(torch.empty(4, 3))
    for fn in (init.uniform_, init.normal_, init.kaiming_uniform_, init.xavier_normal_,
               init.zeros_, init.ones_, init.orthogonal_, init.trunc_normal_, init.eye_):
        out = fn(p)
        assert out is p and p.is_leaf and p.grad_fn is None and p.requires_grad


@given(rows=st.integers(1, 6), cols=st.integers(1, 6), k=st.integers(1, 3))
def test_xavier_uniform_bound(rows, cols, k):
    t = init.xavier_uniform_(torch.empty(rows, cols, k))
    bound = math.sqrt(6.0 / (cols * k + rows * k))
    assert np.abs(_np(t)).max() <= bound * (1 + 1e-6)


def test_no_warnings_for_normal_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.Linear(3, 2)
        nn.Bilinear(2, 2, 2)


def test_deprecated_aliases_warn_and_fill():
    t = torch.empty(3, 2)
    with pytest.warns(FutureWarning, match=r"`nn.init.constant` is now deprecated in favor of "
                      r"`nn.init.constant_`."):
        assert init.constant(t, 2.0) is t
    assert np.all(_np(t) == 2.0)
    torch.manual_seed(4)
    with pytest.warns(FutureWarning, match="xavier_uniform"):
        init.xavier_uniform(t)
    ref = _seeded(4, init.xavier_uniform_, (3, 2))
    assert np.array_equal(_np(t), ref)
