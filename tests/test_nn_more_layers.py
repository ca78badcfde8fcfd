"""Pixel/channel shuffles, RMSNorm, local response norm and CrossMapLRN2d:
NumPy references, float64 gradcheck + gradgradcheck on drawn shapes, reprs,
state-dict keys and PyTorch's error texts."""

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

FEW = settings(max_examples=max(4, settings.default.max_examples // 5), deadline=None)


def _grads(fn, *xs):
    ts = [fg.tensor(np.asarray(x, dtype=np.float64), requires_grad=True) for x in xs]
    assert gradcheck(fn, tuple(ts)) and gradgradcheck(fn, tuple(ts))


# ----- pixel and channel shuffles --------------------------------------------------------------


def np_pixel_shuffle(x, r):
    *b, c, h, w = x.shape
    out = np.empty((*b, c // (r * r), h * r, w * r), x.dtype)
    for oc in range(c // (r * r)):
        for i in range(r):
            for j in range(r):
                out[..., oc, i::r, j::r] = x[..., oc * r * r + i * r + j, :, :]
    return out


@given(
    batch=hnp.array_shapes(min_dims=0, max_dims=2, max_side=2),
    c=st.integers(1, 2),
    r=st.integers(1, 3),
    h=st.integers(1, 3),
    w=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
@FEW
def test_pixel_shuffle_and_unshuffle(batch, c, r, h, w, seed):
    x = np.random.default_rng(seed).standard_normal((*batch, c * r * r, h, w))
    want = np_pixel_shuffle(x, r)
    np.testing.assert_array_equal(F.pixel_shuffle(fg.tensor(x), r).numpy(), want)
    np.testing.assert_array_equal(nn.PixelShuffle(r)(fg.tensor(x)).numpy(), want)
    np.testing.assert_array_equal(F.pixel_unshuffle(fg.tensor(want), r).numpy(), x)
    np.testing.assert_array_equal(nn.PixelUnshuffle(r)(fg.tensor(want)).numpy(), x)
    _grads(lambda t: F.pixel_shuffle(t, r), x)
    _grads(lambda t: F.pixel_unshuffle(t, r), want)


@given(
    n=st.integers(1, 2),
    groups=st.integers(1, 3),
    per=st.integers(1, 3),
    rest=hnp.array_shapes(min_dims=1, max_dims=2, max_side=3),
    seed=st.integers(0, 2**16),
)
@FEW
def test_channel_shuffle(n, groups, per, rest, seed):
    c = groups * per
    x = np.random.default_rng(seed).standard_normal((n, c, *rest))
    want = np.empty_like(x)
    for g in range(groups):
        for i in range(per):
            want[:, i * groups + g] = x[:, g * per + i]
    np.testing.assert_array_equal(F.channel_shuffle(fg.tensor(x), groups).numpy(), want)
    np.testing.assert_array_equal(nn.ChannelShuffle(groups)(fg.tensor(x)).numpy(), want)
    _grads(lambda t: F.channel_shuffle(t, groups), x)


def test_shuffle_errors_and_reprs():
    with pytest.raises(RuntimeError, match=r"input.size\(-3\)=3 is not divisible by 4"):
        F.pixel_shuffle(fg.randn(2, 3, 2, 2), 2)
    with pytest.raises(RuntimeError, match="at least 3 dimensions, but got input with 2"):
        F.pixel_shuffle(fg.randn(3, 2), 2)
    with pytest.raises(RuntimeError, match="pixel_shuffle expects a positive upscale_factor"):
        F.pixel_shuffle(fg.randn(1, 4, 2, 2), 0)
    with pytest.raises(RuntimeError, match=r"expects height to be divisible .* input.size\(-2\)=3"):
        F.pixel_unshuffle(fg.randn(1, 1, 3, 4), 2)
    with pytest.raises(RuntimeError, match=r"expects width to be divisible .* input.size\(-1\)=5"):
        F.pixel_unshuffle(fg.randn(1, 1, 4, 5), 2)
    with pytest.raises(RuntimeError, match="Got 4 channels and 3 groups"):
        F.channel_shuffle(fg.randn(1, 4, 2), 3)
    with pytest.raises(RuntimeError, match="must be positive. Value of groups:0"):
        F.channel_shuffle(fg.randn(1, 4, 2), 0)
    with pytest.raises(RuntimeError, match=r"> 2 dims, but got input with sizes \[4\]"):
        F.channel_shuffle(fg.randn(4), 2)
    with pytest.raises(TypeError, match="argument 'input'"):
        F.pixel_shuffle(np.zeros((1, 4, 2, 2)), 2)
    with pytest.raises(TypeError, match="argument 'upscale_factor' .* must be int, not float"):
        F.pixel_shuffle(fg.randn(1, 4, 2, 2), 2.0)
    x = fg.randn(1, 4, 2, 2)
    np.testing.assert_array_equal(
        F.pixel_shuffle(x, np.int64(2)).numpy(), F.pixel_shuffle(x, 2).numpy()
    )
    assert repr(nn.PixelShuffle(2)) == "PixelShuffle(upscale_factor=2)"
    assert repr(nn.PixelUnshuffle(3)) == "PixelUnshuffle(downscale_factor=3)"
    assert repr(nn.ChannelShuffle(2)) == "ChannelShuffle(groups=2)"


# ----- RMSNorm -----------------------------------------------------------------------------------


def np_rms_norm(x, k, w=None, eps=None):
    eps = np.finfo(x.dtype).eps if eps is None else eps
    axes = tuple(range(x.ndim - k, x.ndim))
    out = x / np.sqrt((x**2).mean(axis=axes, keepdims=True) + eps)
    return out * w if w is not None else out


@given(
    lead=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
    tail=hnp.array_shapes(min_dims=1, max_dims=2, max_side=3),
    affine=st.booleans(),
    eps=st.sampled_from([None, 1e-3]),
    seed=st.integers(0, 2**16),
)
@FEW
def test_rms_norm(lead, tail, affine, eps, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((*lead, *tail))
    w = rng.standard_normal(tail) if affine else None
    got = F.rms_norm(fg.tensor(x), tail, None if w is None else fg.tensor(w), eps)
    np.testing.assert_allclose(got.numpy(), np_rms_norm(x, len(tail), w, eps), rtol=1e-12)
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(
        F.rms_norm(fg.tensor(x32), tail, eps=eps).numpy(),
        np_rms_norm(x32, len(tail), None, eps),
        rtol=2e-5,
        atol=1e-6,
    )
    if w is None:
        _grads(lambda t: F.rms_norm(t, tail, eps=eps), x)
    else:
        _grads(lambda t, v: F.rms_norm(t, tail, v, eps), x, w)


def test_rms_norm_module():
    m = nn.RMSNorm([3, 4])
    assert list(m.state_dict()) == ["weight"] and m.weight.shape == (3, 4)
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.ones((3, 4), np.float32))
    assert repr(m) == "RMSNorm((3, 4), eps=None, elementwise_affine=True)"
    m2 = nn.RMSNorm(4, eps=1e-3, elementwise_affine=False)
    assert repr(m2) == "RMSNorm((4,), eps=0.001, elementwise_affine=False)"
    assert m2.weight is None and list(m2.state_dict()) == []
    x = np.random.default_rng(0).standard_normal((2, 4))
    np.testing.assert_allclose(m2(fg.tensor(x)).numpy(), np_rms_norm(x, 1, eps=1e-3), rtol=1e-12)
    assert nn.RMSNorm(4, dtype=fg.float64).weight.dtype == fg.float64
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with"):
        F.rms_norm(fg.randn(2, 3), (4,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized"):
        F.rms_norm(fg.randn(2, 3), (3,), fg.ones(4))
    with pytest.raises(RuntimeError, match="at least 1-dimensional"):
        F.rms_norm(fg.randn(2, 3), ())


# ----- local response norm and CrossMapLRN2d -----------------------------------------------------


def np_lrn(x, size, alpha, beta, k):
    c = x.shape[1]
    sq = x**2
    div = np.zeros_like(x)
    for ch in range(c):
        lo, hi = max(0, ch - size // 2), min(c - 1, ch + (size - 1) // 2)
        div[:, ch] = sq[:, lo : hi + 1].sum(axis=1) / size
    return x / (div * alpha + k) ** beta


@given(
    n=st.integers(1, 2),
    c=st.integers(1, 5),
    spatial=hnp.array_shapes(min_dims=1, max_dims=3, max_side=3),
    size=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
@FEW
def test_local_response_norm(n, c, spatial, size, seed):
    x = np.random.default_rng(seed).standard_normal((n, c, *spatial))
    alpha, beta, k = 0.5, 0.75, 1.5
    want = np_lrn(x, size, alpha, beta, k)
    got = F.local_response_norm(fg.tensor(x), size, alpha, beta, k)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    m = nn.LocalResponseNorm(size, alpha, beta, k)
    np.testing.assert_allclose(m(fg.tensor(x)).numpy(), want, rtol=1e-12)
    _grads(lambda t: F.local_response_norm(t, size, alpha, beta, k), x)


def test_local_response_norm_errors_and_repr():
    with pytest.raises(ValueError, match="Expected 3D or higher dimensionality"):
        F.local_response_norm(fg.randn(2, 3), 2)
    assert repr(nn.LocalResponseNorm(2)) == "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"
    assert F.local_response_norm(fg.randn(0, 3, 2), 2).shape == (0, 3, 2)


def test_cross_map_lrn2d():
    # Hand-computed from the legacy running sum (size 3: pre_pad 2): channel c's
    # scale is k + alpha / 3 * (sum of its window of squares), channel 0 staying
    # in every window.
    m = nn.CrossMapLRN2d(3, alpha=1.0, beta=1.0, k=1)
    x = fg.ones(1, 7, 1, 1)
    x[0, 0] = 2.0
    sums = np.array([4 + 1, 4 + 2, 4 + 3, 4 + 3, 4 + 3, 4 + 3, 4 + 2])
    want = np.array([2.0, 1, 1, 1, 1, 1, 1]) / (1 + sums / 3)
    np.testing.assert_allclose(m(x).flatten().numpy(), want, rtol=1e-6)
    assert repr(nn.CrossMapLRN2d(3)) == "CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)"
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead."):
        m(fg.randn(1, 3, 4))
    x = np.random.default_rng(1).standard_normal((2, 5, 2, 2))
    lrn = nn.CrossMapLRN2d(3, alpha=0.5, beta=0.75, k=1.0)
    _grads(lrn, x)
