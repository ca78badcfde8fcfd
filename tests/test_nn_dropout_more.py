"""Channel-wise and alpha dropout, Hardtanh, RReLU and the in-place functional
activations: mask statistics and channel structure, eval identity, seeded
reproducibility (the noise is ``bernoulli_(1 - p)`` drawn in PyTorch's shape),
reprs, errors, and float64 gradcheck + gradgradcheck."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

FEW = settings(max_examples=max(4, settings.default.max_examples // 5), deadline=None)
ALPHA = 1.7580993408473766


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


# ----- channel-wise dropout ------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn,shape",
    [(F.dropout1d, (3, 5, 4)), (F.dropout2d, (3, 5, 2, 3)), (F.dropout3d, (2, 5, 2, 2, 2))],
)
def test_feature_dropout_zeroes_whole_channels(fn, shape):
    fg.manual_seed(0)
    x = fg.rand(*shape) + 0.5
    p = 0.4
    out = fn(x, p).numpy()
    xs = x.numpy()
    per = out.reshape(shape[0], shape[1], -1) / xs.reshape(shape[0], shape[1], -1)
    # Each (sample, channel) is all zero or all scaled by 1 / (1 - p).
    for row in per.reshape(-1, per.shape[-1]):
        assert np.allclose(row, 0) or np.allclose(row, 1 / (1 - p), rtol=1e-6)


def test_feature_dropout_matches_its_noise_stream():
    # The mask is exactly a (N, C, 1, 1) bernoulli_(1 - p) draw from the same seed.
    x = fg.randn(4, 6, 3, 2, dtype=fg.float64)
    for p in (0.2, 0.5, 0.9):
        fg.manual_seed(7)
        noise = fg.empty(4, 6, 1, 1, dtype=fg.float64)
        noise.bernoulli_(1 - p)
        want = x.numpy() * (noise.numpy() / (1 - p))
        fg.manual_seed(7)
        np.testing.assert_array_equal(F.dropout2d(x, p).numpy(), want)
        fg.manual_seed(7)
        np.testing.assert_array_equal(nn.Dropout2d(p)(x).numpy(), want)


def test_feature_dropout_seeded_and_unbatched():
    fg.manual_seed(3)
    a = F.dropout1d(fg.ones(6, 4))
    fg.manual_seed(3)
    b = F.dropout1d(fg.ones(1, 6, 4))
    np.testing.assert_array_equal(a.numpy(), b.numpy()[0])
    assert a.shape == (6, 4)
    fg.manual_seed(3)
    c = F.dropout3d(fg.ones(6, 2, 2, 2))
    assert c.shape == (6, 2, 2, 2)
    np.testing.assert_array_equal(c.numpy()[:, 0, 0, 0], a.numpy()[:, 0])


def test_feature_dropout_statistics():
    fg.manual_seed(1)
    p = 0.3
    out = F.dropout2d(fg.ones(400, 50, 1, 1), p).numpy()
    kept = (out != 0).mean()
    assert abs(kept - (1 - p)) < 0.01  # 20,000 draws: sd ~ 0.0032
    assert abs(out.mean() - 1.0) < 0.02


def test_feature_dropout_eval_and_edge_probabilities():
    x = fg.randn(2, 3, 4)
    m = nn.Dropout1d(0.5).eval()
    assert m(x) is x
    assert F.dropout2d(fg.randn(2, 3, 4, 4), 0.5, training=False).shape == (2, 3, 4, 4)
    assert F.dropout2d(x.unsqueeze(-1), 0.0) is not None
    np.testing.assert_array_equal(F.dropout1d(x, 1.0).numpy(), np.zeros((2, 3, 4)))
    y = fg.randn(2, 3, 4)
    assert F.dropout1d(y, 0.0) is y


def test_feature_dropout_inplace():
    fg.manual_seed(5)
    want = F.dropout2d(fg.ones(2, 4, 3, 3))
    fg.manual_seed(5)
    t = fg.ones(2, 4, 3, 3)
    assert nn.Dropout2d(inplace=True)(t) is t
    np.testing.assert_array_equal(t.numpy(), want.numpy())
    fg.manual_seed(5)
    u = fg.ones(4, 3)
    assert F.dropout1d(u, inplace=True) is u
    fg.manual_seed(5)
    np.testing.assert_array_equal(u.numpy(), F.dropout1d(fg.ones(4, 3)).numpy())


def test_feature_dropout_warnings_and_errors():
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input to dropout2d"):
        F.dropout2d(fg.randn(2, 3, 4))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d, which is deprecated"):
        F.dropout2d(fg.randn(2, 3))
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d, which is deprecated"):
        F.dropout3d(fg.randn(2, 3, 4))
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D"):
        F.dropout1d(fg.randn(1, 2, 3, 4))
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        _quiet(F.dropout2d, fg.randn(3), 0.5)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.feature_alpha_dropout(fg.randn(3), 0.5, True)
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            F.dropout2d(fg.randn(2, 3, 4, 4), bad)
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            nn.Dropout3d(bad)
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            F.alpha_dropout(fg.randn(3), bad)
    with pytest.raises(TypeError, match="argument 'input'"):
        F.dropout2d([1.0, 2.0])


@given(
    shape=hnp.array_shapes(min_dims=2, max_dims=4, max_side=3),
    p=st.sampled_from([0.25, 0.5]),
    seed=st.integers(0, 2**16),
    which=st.sampled_from(["feature", "alpha", "feature_alpha"]),
)
@FEW
def test_dropout_grads(shape, p, seed, which):
    fn = {
        "feature": lambda t: _quiet(F.dropout2d, t, p),
        "alpha": lambda t: F.alpha_dropout(t, p, True),
        "feature_alpha": lambda t: F.feature_alpha_dropout(t, p, True),
    }[which]
    x = fg.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)

    def seeded(t):
        fg.manual_seed(seed)  # the same mask on every evaluation
        return fn(t)

    assert gradcheck(seeded, (x,)) and gradgradcheck(seeded, (x,))


# ----- alpha dropout ---------------------------------------------------------------------------


def test_alpha_dropout_values_and_statistics():
    p = 0.2
    a = 1 / np.sqrt((ALPHA**2 * p + 1) * (1 - p))
    b = ALPHA * a * p
    x = fg.randn(3000, dtype=fg.float64)
    fg.manual_seed(11)
    out = F.alpha_dropout(x, p, True).numpy()
    fg.manual_seed(11)
    keep = fg.empty(3000, dtype=fg.float64)
    keep.bernoulli_(1 - p)
    k = keep.numpy()
    want = np.where(k == 1, x.numpy() * a + b, -ALPHA * a + b)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    # Standard-normal input keeps (about) zero mean and unit variance.
    fg.manual_seed(2)
    big = F.alpha_dropout(fg.randn(200_000, dtype=fg.float64), 0.5, True).numpy()
    assert abs(big.mean()) < 0.02 and abs(big.std() - 1) < 0.02
    x = fg.randn(4, 3)
    assert F.alpha_dropout(x, 0.5) is x  # training defaults to False
    assert nn.AlphaDropout(0.5).eval()(x) is x
    np.testing.assert_array_equal(F.alpha_dropout(x, 1.0, True).numpy(), np.zeros((4, 3)))


def test_feature_alpha_dropout_channels():
    fg.manual_seed(4)
    out = nn.FeatureAlphaDropout(0.5)(fg.ones(5, 6, 3)).numpy()
    for row in out.reshape(30, 3):
        assert np.allclose(row, row[0])
    assert len(np.unique(np.round(out, 6))) == 2
    x = fg.randn(2, 3, 4)
    assert nn.FeatureAlphaDropout().eval()(x) is x


def test_dropout_module_reprs():
    assert repr(nn.Dropout1d()) == "Dropout1d(p=0.5, inplace=False)"
    assert repr(nn.Dropout2d(0.2, True)) == "Dropout2d(p=0.2, inplace=True)"
    assert repr(nn.Dropout3d()) == "Dropout3d(p=0.5, inplace=False)"
    assert repr(nn.AlphaDropout(0.1)) == "AlphaDropout(p=0.1, inplace=False)"
    assert repr(nn.FeatureAlphaDropout()) == "FeatureAlphaDropout(p=0.5, inplace=False)"
    for m in (nn.Dropout1d(), nn.AlphaDropout(), nn.FeatureAlphaDropout()):
        assert m.state_dict() == {} or list(m.state_dict()) == []


# ----- Hardtanh, RReLU, in-place activations ----------------------------------------------------


def test_hardtanh_module():
    x = np.linspace(-3, 3, 13)
    m = nn.Hardtanh(-2.0, 1.5)
    np.testing.assert_array_equal(m(fg.tensor(x)).numpy(), np.clip(x, -2, 1.5))
    assert repr(m) == "Hardtanh(min_val=-2.0, max_val=1.5)"
    assert repr(nn.Hardtanh()) == "Hardtanh(min_val=-1.0, max_val=1.0)"
    assert repr(nn.Hardtanh(inplace=True)) == "Hardtanh(min_val=-1.0, max_val=1.0, inplace=True)"
    t = fg.tensor(x)
    assert nn.Hardtanh(inplace=True)(t) is t
    np.testing.assert_array_equal(t.numpy(), np.clip(x, -1, 1))
    with pytest.raises(AssertionError, match=r"max_val \(0.0\) must be greater than min_val"):
        nn.Hardtanh(1.0, 0.0)
    with pytest.warns(FutureWarning, match="min_value"):
        assert nn.Hardtanh(min_value=-0.5).min_val == -0.5
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(fg.randn(3), 1.0, 0.0)


def test_inplace_functional_activations():
    x = np.linspace(-3, 3, 11)
    selu_ref = F.selu(fg.tensor(x)).numpy()
    for fn, ref in [
        (F.relu_, np.maximum(x, 0)),
        (lambda t: F.hardtanh_(t, -0.5, 2.0), np.clip(x, -0.5, 2.0)),
        (F.selu_, selu_ref),
        (lambda t: F.celu_(t, 0.5), np.maximum(0, x) + np.minimum(0, 0.5 * np.expm1(x / 0.5))),
        (F.elu_, np.where(x > 0, x, np.expm1(x))),
        (lambda t: F.leaky_relu_(t, 0.2), np.where(x > 0, x, 0.2 * x)),
    ]:
        t = fg.tensor(x)
        assert fn(t) is t
        np.testing.assert_allclose(t.numpy(), ref, rtol=1e-12, atol=1e-15)
    # Through a non-leaf, gradients are those of the out-of-place forms.
    a = fg.tensor(x, requires_grad=True)
    F.celu_(a * 1.0, 0.5).sum().backward()
    b = fg.tensor(x, requires_grad=True)
    F.celu(b, 0.5).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy())
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.relu_(fg.randn(3, requires_grad=True))
    with pytest.raises(TypeError, match="argument 'input'"):
        F.selu_(1.0)


def test_rrelu_training_slopes():
    x = np.linspace(-3, 3, 600)
    fg.manual_seed(9)
    out = F.rrelu(fg.tensor(x), 0.1, 0.3, training=True).numpy()
    np.testing.assert_array_equal(out[x > 0], x[x > 0])
    slopes = out[x < 0] / x[x < 0]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert len(np.unique(slopes)) > 100
    # One float64 uniform per non-positive element, in memory order.
    fg.manual_seed(9)
    draws = fg.empty(int((x <= 0).sum()), dtype=fg.float64).uniform_(0.1, 0.3).numpy()
    np.testing.assert_allclose(slopes, draws[: len(slopes)].astype(np.float32), rtol=1e-6)


def test_rrelu_eval_and_module():
    x = np.linspace(-3, 3, 13)
    want = np.where(x >= 0, x, x * (0.125 + 1 / 3) / 2)
    np.testing.assert_allclose(F.rrelu(fg.tensor(x)).numpy(), want, rtol=1e-12)
    m = nn.RReLU().eval()
    np.testing.assert_allclose(m(fg.tensor(x)).numpy(), want, rtol=1e-12)
    assert repr(nn.RReLU()) == "RReLU(lower=0.125, upper=0.3333333333333333)"
    assert repr(nn.RReLU(0.1, 0.2, True)) == "RReLU(lower=0.1, upper=0.2, inplace=True)"
    t = fg.tensor(x)
    assert F.rrelu_(t) is t
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-12)
    fg.manual_seed(1)
    a = nn.RReLU()(fg.tensor(x)).numpy()
    fg.manual_seed(1)
    u = fg.tensor(x)
    nn.RReLU(inplace=True)(u)
    np.testing.assert_array_equal(a, u.numpy())
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal"):
        F.rrelu(fg.randn(3), 0.5, 0.1, True)


@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=3), seed=st.integers(0, 2**16))
@FEW
def test_rrelu_and_hardtanh_grads(shape, seed):
    rng = np.random.default_rng(seed)
    x = np.asarray(rng.uniform(0.1, 2, shape) * rng.choice([-1, 1], shape), dtype=np.float64)
    t = fg.tensor(x, requires_grad=True)

    def train(v):
        fg.manual_seed(seed)
        return F.rrelu(v, 0.1, 0.4, training=True)

    for fn in (train, lambda v: F.rrelu(v), lambda v: nn.Hardtanh(-1.5, 0.5)(v)):
        assert gradcheck(fn, (t,)) and gradgradcheck(fn, (t,))


def test_core_activation_reprs_and_relu6_is_a_hardtanh():
    # The strings PyTorch prints for these layers (model printouts compare equal).
    for module, want in [
        (nn.ReLU(), "ReLU()"),
        (nn.ReLU(True), "ReLU(inplace=True)"),
        (nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)"),
        (nn.LeakyReLU(0.2, True), "LeakyReLU(negative_slope=0.2, inplace=True)"),
        (nn.ELU(), "ELU(alpha=1.0)"),
        (nn.ELU(0.5, True), "ELU(alpha=0.5, inplace=True)"),
        (nn.GELU(), "GELU(approximate='none')"),
        (nn.GELU("tanh"), "GELU(approximate='tanh')"),
        (nn.SiLU(True), "SiLU(inplace=True)"),
        (nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"),
        (nn.Softmax(), "Softmax(dim=None)"),
        (nn.LogSoftmax(1), "LogSoftmax(dim=1)"),
        (nn.ReLU6(), "ReLU6()"),
        (nn.ReLU6(True), "ReLU6(inplace=True)"),
    ]:
        assert repr(module) == want
    m = nn.ReLU6()
    assert isinstance(m, nn.Hardtanh) and (m.min_val, m.max_val) == (0.0, 6.0)
    x = np.linspace(-3, 9, 13)
    np.testing.assert_array_equal(m(fg.tensor(x)).numpy(), np.clip(x, 0, 6))
