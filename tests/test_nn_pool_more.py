"""LP pooling, max unpooling, 3-d adaptive pooling, the deprecated upsample
names and their layers, and 3-d padding layers: NumPy references, float64
gradcheck + gradgradcheck on drawn shapes, reprs and PyTorch's error texts."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

FEW = settings(max_examples=max(4, settings.default.max_examples // 5), deadline=None)


def _grads(fn, *xs):
    ts = [fg.tensor(np.asarray(x, dtype=np.float64), requires_grad=True) for x in xs]
    assert gradcheck(fn, tuple(ts)) and gradgradcheck(fn, tuple(ts))


# ----- LP pooling ---------------------------------------------------------------------------------


def np_lp_pool(x, p, k, s):
    """``(sum over each window of x ** p) ** (1 / p)`` over the last ``len(k)`` dims."""
    n = len(k)
    spatial = x.shape[-n:]
    outs = [(spatial[d] - k[d]) // s[d] + 1 for d in range(n)]
    out = np.empty(x.shape[:-n] + tuple(outs))
    for pos in np.ndindex(*outs):
        sl = tuple(slice(pos[d] * s[d], pos[d] * s[d] + k[d]) for d in range(n))
        win = x[(Ellipsis, *sl)]
        axes = tuple(range(-n, 0))
        if p == math.inf:
            out[(Ellipsis, *pos)] = np.abs(win).max(axis=axes)
        else:
            out[(Ellipsis, *pos)] = (win**p).sum(axis=axes) ** (1 / p)
    return out


@given(
    n=st.sampled_from([1, 2, 3]),
    p=st.sampled_from([1.0, 2.0, 3.0, 1.5, math.inf]),
    k=st.integers(1, 2),
    s=st.sampled_from([None, 1, 2]),
    seed=st.integers(0, 2**16),
)
@FEW
def test_lp_pool(n, p, k, s, seed):
    rng = np.random.default_rng(seed)
    spatial = tuple(rng.integers(k, 4, n))
    x = rng.uniform(0.5, 2.0, (2, 2, *spatial))
    fn = {1: F.lp_pool1d, 2: F.lp_pool2d, 3: F.lp_pool3d}[n]
    mod = {1: nn.LPPool1d, 2: nn.LPPool2d, 3: nn.LPPool3d}[n](p, k, s)
    want = np_lp_pool(x, p, (k,) * n, ((s or k),) * n)
    np.testing.assert_allclose(fn(fg.tensor(x), p, k, s).numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(mod(fg.tensor(x)).numpy(), want, rtol=1e-10)
    if p != math.inf:
        _grads(lambda t: fn(t, p, k, s), x)


def test_lp_pool_reprs_and_errors():
    assert (
        repr(nn.LPPool1d(2, 3))
        == "LPPool1d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)"
    )
    assert (
        repr(nn.LPPool2d(2, 3, stride=2))
        == "LPPool2d(norm_type=2, kernel_size=3, stride=2, ceil_mode=False)"
    )
    with pytest.raises(ValueError, match="norm_type must be a non-zero value, but got 0"):
        F.lp_pool2d(fg.rand(1, 1, 4, 4), 0, 2)
    # -inf: minus the max pooling of -|x|, i.e. the smallest |x| per window.
    x = np.random.default_rng(0).standard_normal((1, 1, 4))
    got = F.lp_pool1d(fg.tensor(x), -math.inf, 2).numpy()
    np.testing.assert_array_equal(got, np.abs(x).reshape(1, 1, 2, 2).min(-1))


# ----- max unpooling -------------------------------------------------------------------------------


@given(n=st.sampled_from([1, 2, 3]), k=st.integers(1, 3), seed=st.integers(0, 2**16))
@FEW
def test_max_unpool_inverts_pooling(n, k, seed):
    rng = np.random.default_rng(seed)
    spatial = (k * 2,) * n
    x = rng.permutation(np.arange(float(2 * 3 * (2 * k) ** n))).reshape(2, 3, *spatial)
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[n]
    unpool = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[n]
    out, idx = pool(fg.tensor(x), k, return_indices=True)
    back = unpool(out, idx, k).numpy()
    # The window maxima stay where they were; everything else is zero.
    blocks = x.reshape(2, 3, *[v for _ in range(n) for v in (2, k)])
    axes = tuple(3 + 2 * i for i in range(n))
    is_max = blocks == blocks.max(axis=axes, keepdims=True)
    want = np.where(is_max, blocks, 0.0).reshape(x.shape)
    np.testing.assert_array_equal(back, want)
    mod = {1: nn.MaxUnpool1d, 2: nn.MaxUnpool2d, 3: nn.MaxUnpool3d}[n](k)
    np.testing.assert_array_equal(mod(out, idx).numpy(), want)
    # Unbatched input and gradients with respect to the values.
    np.testing.assert_array_equal(unpool(out[0], idx[0], k).numpy(), want[0])
    _grads(lambda t: unpool(t, idx, k), out.numpy())


def test_max_unpool_output_size_and_errors():
    x = fg.randn(1, 1, 5, 5)
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    full = F.max_unpool2d(out, idx, 2, output_size=x.shape)
    assert full.shape == (1, 1, 5, 5)
    assert nn.MaxUnpool2d(2)(out, idx, output_size=(5, 5)).shape == (1, 1, 5, 5)
    with pytest.raises(
        ValueError, match=r"invalid output_size \"\(9, 9\)\" \(dim 0 must be between 2 and 6\)"
    ):
        F.max_unpool2d(out, idx, 2, output_size=(9, 9))
    with pytest.raises(
        ValueError,
        match="should be a sequence containing 2 or 4 elements, but it has a length of '3'",
    ):
        F.max_unpool2d(out, idx, 2, output_size=(1, 4, 4))
    with pytest.raises(
        RuntimeError, match=r"Found an invalid max index: 99 \(output volumes are of size 4x4\)"
    ):
        F.max_unpool2d(out, fg.full((1, 1, 2, 2), 99, dtype=fg.int64), 2)
    with pytest.raises(
        RuntimeError, match="elements in indices should be type int64 but got: Float"
    ):
        F.max_unpool2d(out, idx.to(fg.float32), 2)
    with pytest.raises(
        RuntimeError, match="Expected shape of indices to be same as that of the input"
    ):
        F.max_unpool2d(out, idx[:, :, :1], 2)
    assert repr(nn.MaxUnpool1d(2)) == "MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))"
    assert (
        repr(nn.MaxUnpool2d(2, stride=1, padding=1))
        == "MaxUnpool2d(kernel_size=(2, 2), stride=(1, 1), padding=(1, 1))"
    )
    assert (
        repr(nn.MaxUnpool3d(2))
        == "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))"
    )


# ----- 3-d adaptive pooling -------------------------------------------------------------------------


def _bins(size, out):
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def np_adaptive3d(x, osz, op):
    *lead, d, h, w = x.shape
    out = np.empty((*lead, *osz))
    idx = np.empty((*lead, *osz), np.int64)
    for i, (d0, d1) in enumerate(_bins(d, osz[0])):
        for j, (h0, h1) in enumerate(_bins(h, osz[1])):
            for k, (w0, w1) in enumerate(_bins(w, osz[2])):
                win = x[..., d0:d1, h0:h1, w0:w1]
                if op == "avg":
                    out[..., i, j, k] = win.mean(axis=(-3, -2, -1))
                    continue
                flat = win.reshape(*lead, -1)
                arg = flat.argmax(-1)
                out[..., i, j, k] = flat.max(-1)
                dd, hh, ww = np.unravel_index(arg, (d1 - d0, h1 - h0, w1 - w0))
                idx[..., i, j, k] = (dd + d0) * h * w + (hh + h0) * w + (ww + w0)
    return out, idx


@given(
    shape=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)),
    osz=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    batched=st.booleans(),
    seed=st.integers(0, 2**16),
)
@FEW
def test_adaptive_pool3d(shape, osz, batched, seed):
    lead = (2, 2) if batched else (2,)
    x = np.random.default_rng(seed).standard_normal((*lead, *shape))
    avg, _ = np_adaptive3d(x, osz, "avg")
    mx, where = np_adaptive3d(x, osz, "max")
    np.testing.assert_allclose(F.adaptive_avg_pool3d(fg.tensor(x), osz).numpy(), avg, rtol=1e-12)
    np.testing.assert_allclose(nn.AdaptiveAvgPool3d(osz)(fg.tensor(x)).numpy(), avg, rtol=1e-12)
    got, idx = F.adaptive_max_pool3d(fg.tensor(x), osz, return_indices=True)
    np.testing.assert_array_equal(got.numpy(), mx)
    np.testing.assert_array_equal(idx.numpy(), where)
    got2, idx2 = nn.AdaptiveMaxPool3d(osz, return_indices=True)(fg.tensor(x))
    np.testing.assert_array_equal(idx2.numpy(), where)
    _grads(lambda t: F.adaptive_avg_pool3d(t, osz), x)
    _grads(lambda t: F.adaptive_max_pool3d(t, osz), x)


def test_adaptive_pool3d_first_maximum_and_errors():
    x = fg.zeros(1, 1, 2, 2, 2)  # all tied: PyTorch keeps the first in (d, h, w) order
    assert F.adaptive_max_pool3d(x, 1, True)[1].item() == 0
    x = fg.tensor(np.arange(8.0).reshape(1, 2, 2, 2))
    assert F.adaptive_avg_pool3d(x, (None, 1, 1)).shape == (1, 2, 1, 1)
    with pytest.raises(
        RuntimeError, match=r"adaptive_avg_pool3d\(\): Expected 4D or 5D tensor, but got \[2, 3\]"
    ):
        F.adaptive_avg_pool3d(fg.randn(2, 3), 2)
    with pytest.raises(RuntimeError, match=r"adaptive_max_pool3d\(\): Expected 4D or 5D tensor"):
        F.adaptive_max_pool3d(fg.randn(2, 3), 2)
    assert repr(nn.AdaptiveAvgPool3d(2)) == "AdaptiveAvgPool3d(output_size=2)"
    assert repr(nn.AdaptiveMaxPool3d((1, 2, 3))) == "AdaptiveMaxPool3d(output_size=(1, 2, 3))"


# ----- upsample names and layers -----------------------------------------------------------------


def test_upsample_functions_and_layers():
    x = fg.randn(1, 2, 3, 4, dtype=fg.float64)
    with pytest.warns(UserWarning, match="`nn.functional.upsample` is deprecated"):
        a = F.upsample(x, scale_factor=2, mode="bilinear")
    np.testing.assert_array_equal(
        a.numpy(), F.interpolate(x, scale_factor=2, mode="bilinear").numpy()
    )
    with pytest.warns(UserWarning, match="`nn.functional.upsample_nearest` is deprecated"):
        b = F.upsample_nearest(x, size=(5, 7))
    np.testing.assert_array_equal(b.numpy(), F.interpolate(x, size=(5, 7)).numpy())
    with pytest.warns(UserWarning, match="`nn.functional.upsample_bilinear` is deprecated"):
        c = F.upsample_bilinear(x, scale_factor=2)
    want = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True).numpy()
    np.testing.assert_array_equal(c.numpy(), want)
    # align_corners=True keeps the corners: the input's corners are the output's.
    np.testing.assert_allclose(c.numpy()[..., 0, -1], x.numpy()[..., 0, -1], rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(nn.UpsamplingBilinear2d(scale_factor=2)(x).numpy(), want)
        np.testing.assert_array_equal(nn.UpsamplingNearest2d(size=(5, 7))(x).numpy(), b.numpy())
    assert (
        repr(nn.UpsamplingNearest2d(scale_factor=2))
        == "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"
    )
    assert repr(nn.UpsamplingBilinear2d(size=3)) == "UpsamplingBilinear2d(size=3, mode='bilinear')"
    _grads(lambda t: nn.UpsamplingBilinear2d(scale_factor=2)(t), x.numpy())


# ----- 3-d padding ----------------------------------------------------------------------------------


@given(
    pads=st.tuples(*[st.integers(0, 2)] * 6),
    kind=st.sampled_from(["zero", "constant", "reflect", "replicate", "circular"]),
    batched=st.booleans(),
    seed=st.integers(0, 2**16),
)
@FEW
def test_pad3d_layers(pads, kind, batched, seed):
    shape = (1, 2, 3, 4, 3) if batched else (2, 3, 4, 3)
    x = np.random.default_rng(seed).standard_normal(shape)
    lead = [(0, 0)] * (len(shape) - 3)
    width = lead + [(pads[4], pads[5]), (pads[2], pads[3]), (pads[0], pads[1])]
    layer, want = {
        "zero": (nn.ZeroPad3d(pads), np.pad(x, width)),
        "constant": (nn.ConstantPad3d(pads, 1.5), np.pad(x, width, constant_values=1.5)),
        "reflect": (nn.ReflectionPad3d(pads), np.pad(x, width, mode="reflect")),
        "replicate": (nn.ReplicationPad3d(pads), np.pad(x, width, mode="edge")),
        "circular": (nn.CircularPad3d(pads), np.pad(x, width, mode="wrap")),
    }[kind]
    np.testing.assert_array_equal(layer(fg.tensor(x)).numpy(), want)
    _grads(layer, x)


def test_pad3d_reprs():
    assert repr(nn.ZeroPad3d(1)) == "ZeroPad3d((1, 1, 1, 1, 1, 1))"
    assert repr(nn.ConstantPad3d(1, 2.5)) == "ConstantPad3d(padding=(1, 1, 1, 1, 1, 1), value=2.5)"
    assert repr(nn.ReflectionPad3d(1)) == "ReflectionPad3d((1, 1, 1, 1, 1, 1))"
    assert repr(nn.ReplicationPad3d((1, 2, 3, 4, 5, 6))) == "ReplicationPad3d((1, 2, 3, 4, 5, 6))"
    assert repr(nn.CircularPad3d(2)) == "CircularPad3d((2, 2, 2, 2, 2, 2))"
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding"):
        nn.ReflectionPad3d(3)(fg.randn(1, 1, 3, 3, 3))
