"""``conv3d`` / ``Conv3d``, ``max_pool3d`` / ``MaxPool3d``, ``avg_pool3d`` /
``AvgPool3d``: values against direct NumPy loops over PyTorch's definitions,
gradients against finite differences (first and second order)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd import nn
from ferrograd.autograd import gradcheck, gradgradcheck


def ref_conv3d(x, w, b, stride, padding, dilation, groups):
    N, C, D, H, W = x.shape
    out_ch, Cg, kd, kh, kw = w.shape
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    dims = xp.shape[2:]
    out_sz = [
        (dims[i] - dilation[i] * (k - 1) - 1) // stride[i] + 1 for i, k in enumerate((kd, kh, kw))
    ]
    out = np.zeros((N, out_ch, *out_sz))
    og = out_ch // groups
    for n, o, i, j, k in itertools.product(range(N), range(out_ch), *map(range, out_sz)):
        g = o // og
        patch = xp[
            n,
            g * Cg : (g + 1) * Cg,
            i * stride[0] : i * stride[0] + dilation[0] * (kd - 1) + 1 : dilation[0],
            j * stride[1] : j * stride[1] + dilation[1] * (kh - 1) + 1 : dilation[1],
            k * stride[2] : k * stride[2] + dilation[2] * (kw - 1) + 1 : dilation[2],
        ]
        out[n, o, i, j, k] = (patch * w[o]).sum() + (b[o] if b is not None else 0.0)
    return out


def pool_out(size, k, s, p, d, ceil_mode):
    num = size + 2 * p - d * (k - 1) - 1
    out = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def ref_max_pool3d(x, k, s, p, d, ceil_mode):
    N, C = x.shape[:2]
    sizes = x.shape[2:]
    outs = [pool_out(sizes[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3)]
    val = np.zeros((N, C, *outs))
    idx = np.zeros((N, C, *outs), dtype=np.int64)
    for n, c, a, b_, e in itertools.product(range(N), range(C), *map(range, outs)):
        best, where = -math.inf, -1
        for u, v, w in itertools.product(*map(range, k)):
            q = (
                a * s[0] - p[0] + u * d[0],
                b_ * s[1] - p[1] + v * d[1],
                e * s[2] - p[2] + w * d[2],
            )
            if all(0 <= q[i] < sizes[i] for i in range(3)):
                xv = x[n, c, q[0], q[1], q[2]]
                if xv > best:
                    best, where = xv, (q[0] * sizes[1] + q[1]) * sizes[2] + q[2]
        val[n, c, a, b_, e], idx[n, c, a, b_, e] = best, where
    return val, idx


def ref_avg_pool3d(x, k, s, p, ceil_mode, count_include_pad, divisor_override):
    N, C = x.shape[:2]
    sizes = x.shape[2:]
    outs = [pool_out(sizes[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(3)]
    out = np.zeros((N, C, *outs))
    for o in itertools.product(*map(range, outs)):
        starts = [o[i] * s[i] - p[i] for i in range(3)]
        ends = [min(starts[i] + k[i], sizes[i] + p[i]) for i in range(3)]
        pool_size = math.prod(ends[i] - starts[i] for i in range(3))
        lo = [max(v, 0) for v in starts]
        hi = [min(ends[i], sizes[i]) for i in range(3)]
        block = x[:, :, lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]].sum(axis=(2, 3, 4))
        if divisor_override:
            div = divisor_override
        elif count_include_pad:
            div = pool_size
        else:
            div = math.prod(hi[i] - lo[i] for i in range(3))
        out[(slice(None), slice(None), *o)] = block / div
    return out


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**16), st.data())
def test_conv3d_matches_loops(seed, data):
    groups = data.draw(st.sampled_from([1, 2]))
    k = [data.draw(st.integers(1, 3)) for _ in range(3)]
    stride = [data.draw(st.integers(1, 2)) for _ in range(3)]
    dilation = [data.draw(st.integers(1, 2)) for _ in range(3)]
    padding = [data.draw(st.integers(0, 1)) for _ in range(3)]
    sizes = [dilation[i] * (k[i] - 1) + 1 + data.draw(st.integers(0, 2)) for i in range(3)]
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, 2 * groups, *sizes))
    w = rng.normal(size=(2 * groups, 2, *k))
    b = rng.normal(size=2 * groups) if data.draw(st.booleans()) else None
    got = F.conv3d(
        fg.tensor(x),
        fg.tensor(w),
        None if b is None else fg.tensor(b),
        stride,
        padding,
        dilation,
        groups,
    )
    np.testing.assert_allclose(
        got.numpy(), ref_conv3d(x, w, b, stride, padding, dilation, groups), rtol=1e-10, atol=1e-10
    )


def test_conv3d_same_unbatched_module_and_errors():
    fg.manual_seed(0)
    m = nn.Conv3d(2, 3, (2, 3, 2), padding="same", bias=False)
    x = fg.randn(2, 3, 4, 5)
    y = m(x)
    assert y.shape == (3, 3, 4, 5)
    want = F.conv3d(x.unsqueeze(0), m.weight, None, 1, "same").squeeze(0)
    assert fg.equal(y, want)
    # 'same' with an even kernel pads the extra element after, as PyTorch.
    xp = np.pad(x.double().numpy()[None], [(0, 0), (0, 0), (0, 1), (1, 1), (0, 1)])
    ref = ref_conv3d(
        xp, m.weight.double().detach().numpy(), None, [1, 1, 1], [0, 0, 0], [1, 1, 1], 1
    )
    np.testing.assert_allclose(y.detach().numpy(), ref[0], rtol=1e-5, atol=1e-5)
    assert "Conv3d(2, 3, kernel_size=(2, 3, 2)" in repr(m)
    r = nn.Conv3d(1, 1, 3, padding=1, padding_mode="circular")
    assert r(fg.randn(1, 1, 3, 3, 3)).shape == (1, 1, 3, 3, 3)
    with pytest.raises(
        RuntimeError, match=r"expected input\[1, 3, 4, 4, 4\] to have 2 channels, but got 3"
    ):
        F.conv3d(fg.randn(1, 3, 4, 4, 4), fg.randn(1, 2, 2, 2, 2))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv3d(fg.randn(1, 1, 2, 4, 4), fg.randn(1, 1, 3, 2, 2))
    with pytest.raises(
        RuntimeError, match="Expected 4D \\(unbatched\\) or 5D \\(batched\\) input to conv3d"
    ):
        F.conv3d(fg.randn(1, 4, 4), fg.randn(1, 1, 2, 2, 2))


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**16), st.data())
def test_pools_match_loops(seed, data):
    k = [data.draw(st.integers(1, 3)) for _ in range(3)]
    s = [data.draw(st.integers(1, 2)) for _ in range(3)]
    p = [data.draw(st.integers(0, kk // 2)) for kk in k]
    d = [data.draw(st.integers(1, 2)) for _ in range(3)]
    ceil_mode = data.draw(st.booleans())
    sizes = [d[i] * (k[i] - 1) + 1 + data.draw(st.integers(0, 3)) for i in range(3)]
    x = np.random.default_rng(seed).normal(size=(2, 2, *sizes))
    v, i = F.max_pool3d(fg.tensor(x), k, s, p, d, ceil_mode, return_indices=True)
    rv, ri = ref_max_pool3d(x, k, s, p, d, ceil_mode)
    np.testing.assert_array_equal(v.numpy(), rv)
    np.testing.assert_array_equal(i.numpy(), ri)
    cip = data.draw(st.booleans())
    div = data.draw(st.sampled_from([None, 3]))
    sizes_a = [k[i] + data.draw(st.integers(0, 3)) for i in range(3)]
    xa = np.random.default_rng(seed + 1).normal(size=(2, 2, *sizes_a))
    got = F.avg_pool3d(fg.tensor(xa), k, s, p, ceil_mode, cip, div)
    np.testing.assert_allclose(
        got.numpy(), ref_avg_pool3d(xa, k, s, p, ceil_mode, cip, div), rtol=1e-12, atol=1e-12
    )


def test_pool_modules_unbatched_and_errors():
    x = fg.randn(2, 4, 4, 4)
    assert nn.MaxPool3d(2)(x).shape == (2, 2, 2, 2)
    v, i = nn.MaxPool3d(2, return_indices=True)(x)
    flat = x.reshape(2, -1)
    assert fg.equal(flat.gather(1, i.reshape(2, -1)).reshape(v.shape), v)
    assert nn.AvgPool3d(2, stride=1)(x).shape == (2, 3, 3, 3)
    assert fg.allclose(nn.AvgPool3d(4)(x).reshape(2), x.reshape(2, -1).mean(1))
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool3d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool3d(x, 2, divisor_override=0)


def test_max_pool3d_indices_on_windows_of_minus_inf_and_nan():
    # Values and indices recorded from PyTorch 2.x (torch.nn.functional.max_pool3d).
    x = fg.full((1, 1, 3, 2, 2), -math.inf)
    x[0, 0, 2, 1, 1] = 1.0
    v, i = F.max_pool3d(x, (2, 1, 1), (1, 1, 1), (1, 0, 0), return_indices=True)
    assert v.flatten().tolist() == [-math.inf] * 11 + [1.0] + [-math.inf] * 3 + [1.0]
    assert i.flatten().tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 11, 8, 9, 10, 11]
    nan = math.nan
    y = fg.tensor([0.0, nan, 2.0, nan, 1.0, 5.0, 3.0, nan]).reshape(1, 1, 2, 2, 2)
    v, i = F.max_pool3d(y, (2, 2, 1), (1, 1, 1), return_indices=True)
    assert v.flatten()[0].item() == 3.0 and math.isnan(v.flatten()[1].item())
    assert i.flatten().tolist() == [6, 7]


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**16))
def test_gradcheck_first_and_second_order(seed):
    rng = np.random.default_rng(seed)
    x = fg.tensor(rng.normal(size=(1, 2, 3, 3, 3)), requires_grad=True)
    w = fg.tensor(rng.normal(size=(2, 1, 2, 2, 2)), requires_grad=True)
    b = fg.tensor(rng.normal(size=2), requires_grad=True)

    def conv(x, w, b):
        return F.conv3d(x, w, b, stride=(2, 1, 1), padding=1, groups=2)

    assert gradcheck(conv, (x, w, b))
    assert gradgradcheck(conv, (x, w, b))
    assert gradcheck(lambda t: F.max_pool3d(t, 2, stride=1, padding=1), (x,))
    assert gradgradcheck(lambda t: F.max_pool3d(t, 2, stride=1) ** 2, (x,))
    assert gradcheck(
        lambda t: F.avg_pool3d(t, 2, stride=1, padding=1, count_include_pad=False), (x,)
    )
    assert gradgradcheck(lambda t: F.avg_pool3d(t, (2, 3, 2), ceil_mode=True, stride=2) ** 2, (x,))


def ref_adaptive_max_pool3d(x, out):
    """Each adaptive bin's maximum and the flat in-volume index of its first
    maximum in (depth, row, column) order, by loops over PyTorch's bins."""
    n, c, *size = x.shape

    def bins(o, length, count):
        return range(o * length // count, -(-(o + 1) * length // count))

    vals = np.empty((n, c, *out))
    idx = np.empty((n, c, *out), np.int64)
    for b, ch, a, h, w in itertools.product(range(n), range(c), *map(range, out)):
        best, at = -math.inf, -1
        for i in bins(a, size[0], out[0]):
            for j in bins(h, size[1], out[1]):
                for k in bins(w, size[2], out[2]):
                    if x[b, ch, i, j, k] > best:
                        best, at = x[b, ch, i, j, k], (i * size[1] + j) * size[2] + k
        vals[b, ch, a, h, w], idx[b, ch, a, h, w] = best, at
    return vals, idx


def test_native_3d_pools_record_one_node_and_take_empty_batches():
    rng = np.random.default_rng(3)
    x = fg.tensor(rng.normal(size=(1, 2, 5, 4, 3)), requires_grad=True)
    v, i = F.max_pool3d(x, 2, stride=1, return_indices=True)
    assert v.grad_fn.name() == "MaxPool3DWithIndicesBackward0"
    v, i = F.adaptive_max_pool3d(x, (3, 2, 2), return_indices=True)
    assert v.grad_fn.name() == "AdaptiveMaxPool3DBackward0"
    rv, ri = ref_adaptive_max_pool3d(x.detach().numpy(), (3, 2, 2))
    np.testing.assert_array_equal(v.detach().numpy(), rv)
    np.testing.assert_array_equal(i.numpy(), ri)
    # Unbatched, and the values at the indices.
    v1, i1 = F.adaptive_max_pool3d(x[0], (2, 3, 1), return_indices=True)
    flat = x[0].detach().reshape(2, -1)
    assert fg.equal(flat.gather(1, i1.reshape(2, -1)).reshape(v1.shape), v1.detach())
    assert gradcheck(lambda t: F.adaptive_max_pool3d(t, (3, 2, 2)), (x,))
    assert gradgradcheck(lambda t: F.adaptive_max_pool3d(t, (2, 3, 2)) ** 2, (x,))
    assert gradgradcheck(lambda t: F.adaptive_avg_pool3d(t, (3, 2, 2)) ** 2, (x,))
    # An empty batch: empty results of the right shapes, no loop over the depths.
    e = fg.zeros(0, 2, 2**20, 4, 4)
    v, i = F.max_pool3d(e, 2, return_indices=True)
    assert v.shape == (0, 2, 2**19, 2, 2) and i.dtype == fg.int64
    assert F.avg_pool3d(e, 2).shape == (0, 2, 2**19, 2, 2)
    assert F.adaptive_max_pool3d(e, 3).shape == (0, 2, 3, 3, 3)
    assert F.adaptive_avg_pool3d(e, 3).shape == (0, 2, 3, 3, 3)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.adaptive_max_pool3d(x, (2, 0, 2))
