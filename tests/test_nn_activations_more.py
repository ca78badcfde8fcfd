"""The activations beyond the core set: NumPy references in float32 and
float64, float64 gradcheck + gradgradcheck on hypothesis-drawn inputs kept
away from the kinks, module forms and error texts."""

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
from ferrograd.testing import check_op
from ferrograd.testing import strategies as fst

FEW = settings(max_examples=max(4, settings.default.max_examples // 5), deadline=None)

ALPHA = 1.6732632423543772848170429916717
SCALE = 1.0507009873554804934193349852946


def np_softplus(x):
    return np.logaddexp(0.0, x)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name -> (ferrograd fn, NumPy reference, kinks to keep finite differences away from)
CASES = {
    "mish": (F.mish, lambda x: x * np.tanh(np_softplus(x)), ()),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6, (-3.0, 3.0)),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6, (-3.0, 3.0)),
    "logsigmoid": (F.logsigmoid, lambda x: -np_softplus(-x), ()),
    "selu": (F.selu, lambda x: SCALE * np.where(x > 0, x, ALPHA * np.expm1(x)), (0.0,)),
    "celu": (
        lambda x: F.celu(x, 0.7),
        lambda x: np.maximum(0, x) + np.minimum(0, 0.7 * np.expm1(x / 0.7)),
        (0.0,),
    ),
    "softsign": (F.softsign, lambda x: x / (1 + np.abs(x)), (0.0,)),
    "tanhshrink": (F.tanhshrink, lambda x: x - np.tanh(x), ()),
    "hardshrink": (F.hardshrink, lambda x: np.where(np.abs(x) > 0.5, x, 0), (-0.5, 0.5)),
    "softshrink": (
        lambda x: F.softshrink(x, 0.3),
        lambda x: np.where(x > 0.3, x - 0.3, np.where(x < -0.3, x + 0.3, 0)),
        (-0.3, 0.3),
    ),
    "threshold": (
        lambda x: F.threshold(x, 0.2, -1.5),
        lambda x: np.where(x > 0.2, x, -1.5),
        (0.2,),
    ),
    "relu6": (F.relu6, lambda x: np.clip(x, 0, 6), (0.0, 6.0)),
}


def away(kinks, lo=-5.0, hi=8.0):
    el = st.floats(lo, hi, allow_nan=False).filter(lambda v: all(abs(v - k) > 0.05 for k in kinks))
    return hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=3), elements=el)


@pytest.mark.parametrize("name", sorted(CASES))
@given(data=st.data())
@FEW
def test_values(name, data):
    fn, ref, kinks = CASES[name]
    x = data.draw(away(kinks))
    np.testing.assert_allclose(fn(fg.tensor(x)).numpy(), ref(x), rtol=1e-12, atol=1e-12)
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(
        fn(fg.tensor(x32)).numpy(), ref(x32.astype(np.float64)), rtol=2e-5, atol=2e-6
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_grads(name):
    # gradcheck and gradgradcheck on drawn shapes, away from the kinks.
    fn, _, kinks = CASES[name]
    points = fst.tensors(
        shape=fst.shapes(min_dims=0, max_dims=3, max_side=3),
        elements=fst.floats(-5.0, 8.0, away_from=kinks),
        requires_grad=True,
    )
    assert check_op(fn, points, max_examples=FEW.max_examples)


def test_logsigmoid_is_stable():
    out = F.logsigmoid(fg.tensor([-200.0, 200.0], dtype=fg.float64)).numpy()
    np.testing.assert_allclose(out, [-200.0, 0.0], atol=1e-12)


@given(
    shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
    per_channel=st.booleans(),
    seed=st.integers(0, 2**16),
)
@FEW
def test_prelu(shape, per_channel, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.1, 2, shape) * rng.choice([-1, 1], shape)
    c = shape[1] if (per_channel and len(shape) >= 2) else 1
    w = rng.standard_normal(c)
    ws = w.reshape((c,) + (1,) * (len(shape) - 2)) if c > 1 else w[0]
    want = np.where(x > 0, x, ws * x)
    xt, wt = fg.tensor(x, requires_grad=True), fg.tensor(w, requires_grad=True)
    np.testing.assert_allclose(F.prelu(xt, wt).detach().numpy(), want, rtol=1e-12)
    assert gradcheck(F.prelu, (xt, wt)) and gradgradcheck(F.prelu, (xt, wt))


def test_prelu_module():
    m = nn.PReLU(3)
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.full(3, 0.25, np.float32))
    out = m(fg.tensor([[-4.0, 1.0, -2.0]]))
    np.testing.assert_allclose(out.detach().numpy(), [[-1.0, 1.0, -0.5]])
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        m(fg.randn(2, 4))


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), seed=st.integers(0, 2**16))
@FEW
def test_glu(shape, seed):
    shape = (*shape[:-1], 2 * shape[-1])
    x = np.random.default_rng(seed).standard_normal(shape)
    h = shape[-1] // 2
    want = x[..., :h] * np_sigmoid(x[..., h:])
    t = fg.tensor(x, requires_grad=True)
    np.testing.assert_allclose(F.glu(t).detach().numpy(), want, rtol=1e-12)
    assert gradcheck(F.glu, (t,)) and gradgradcheck(F.glu, (t,))
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(fg.randn(2, 3))


def test_softmax2d_and_softmin():
    x = np.random.default_rng(0).standard_normal((2, 3, 2, 2))
    e = np.exp(x)
    want = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(nn.Softmax2d()(fg.tensor(x)).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(nn.Softmax2d()(fg.tensor(x[0])).numpy(), want[0], rtol=1e-12)
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D"):
        nn.Softmax2d()(fg.randn(2, 3))
    em = np.exp(-x)
    np.testing.assert_allclose(
        nn.Softmin(dim=1)(fg.tensor(x)).numpy(), em / em.sum(1, keepdims=True), rtol=1e-12
    )


def test_modules_match_functional_and_inplace():
    x = np.linspace(-4, 4, 18)
    for mod, fn in [
        (nn.Mish(), F.mish),
        (nn.Hardswish(), F.hardswish),
        (nn.Hardsigmoid(), F.hardsigmoid),
        (nn.LogSigmoid(), F.logsigmoid),
        (nn.ReLU6(), F.relu6),
        (nn.SELU(), F.selu),
        (nn.CELU(0.5), lambda t: F.celu(t, 0.5)),
        (nn.Softsign(), F.softsign),
        (nn.Tanhshrink(), F.tanhshrink),
        (nn.Hardshrink(0.7), lambda t: F.hardshrink(t, 0.7)),
        (nn.Softshrink(0.7), lambda t: F.softshrink(t, 0.7)),
        (nn.Threshold(0.1, 20.0), lambda t: F.threshold(t, 0.1, 20.0)),
        (nn.GLU(), F.glu),
    ]:
        np.testing.assert_array_equal(mod(fg.tensor(x)).numpy(), fn(fg.tensor(x)).numpy())
    for mod in (nn.Hardswish(inplace=True), nn.SELU(inplace=True), nn.Mish(inplace=True)):
        t = fg.tensor(x)
        out = mod(t)
        assert out is t
        np.testing.assert_allclose(t.numpy(), type(mod)()(fg.tensor(x)).numpy())
    # an in-place activation on a non-leaf keeps gradients right
    a = fg.tensor(x, requires_grad=True)
    y = a * 1.0
    F.hardswish(y, inplace=True).sum().backward()
    b = fg.tensor(x, requires_grad=True)
    F.hardswish(b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy())


def test_errors():
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(fg.randn(3), -1.0)
