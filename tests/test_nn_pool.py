"""Pooling, padding, unfold/fold and interpolation against NumPy loops; first and
second derivatives by finite differences; PyTorch's errors; the layers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

# ----- NumPy references --------------------------------------------------------------------


def pooled_len(n, k, p, s, d, ceil):
    """PyTorch's pooling_output_shape."""
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    out = num // s + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1
    return out


def ref_max_pool2d(x, k, s, p, d, ceil):
    """Max over each dilated window and the flat in-plane index of the first maximum."""
    *lead, h, w = x.shape
    oh, ow = (pooled_len(n, k[i], p[i], s[i], d[i], ceil) for i, n in enumerate((h, w)))
    planes = x.reshape(-1, h, w)
    out = np.empty((planes.shape[0], oh, ow))
    idx = np.empty((planes.shape[0], oh, ow), dtype=np.int64)
    for q, plane in enumerate(planes):
        for y in range(oh):
            for xo in range(ow):
                best, at = -np.inf, -1
                for i in range(k[0]):
                    for j in range(k[1]):
                        iy, ix = y * s[0] - p[0] + i * d[0], xo * s[1] - p[1] + j * d[1]
                        if 0 <= iy < h and 0 <= ix < w and (at < 0 or plane[iy, ix] > best):
                            best, at = plane[iy, ix], iy * w + ix
                out[q, y, xo], idx[q, y, xo] = best, at
    return out.reshape(*lead, oh, ow), idx.reshape(*lead, oh, ow)


def ref_avg_pool2d(x, k, s, p, ceil, count_include_pad, divisor_override):
    *lead, h, w = x.shape
    oh, ow = (pooled_len(n, k[i], p[i], s[i], 1, ceil) for i, n in enumerate((h, w)))
    planes = x.reshape(-1, h, w)
    out = np.empty((planes.shape[0], oh, ow))
    for y in range(oh):
        for xo in range(ow):
            h0, w0 = y * s[0] - p[0], xo * s[1] - p[1]
            h1, w1 = min(h0 + k[0], h + p[0]), min(w0 + k[1], w + p[1])
            full = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            total = planes[:, h0:h1, w0:w1].sum((1, 2))
            if divisor_override:
                div = divisor_override
            else:
                div = full if count_include_pad else (h1 - h0) * (w1 - w0)
            out[:, y, xo] = total / div
    return out.reshape(*lead, oh, ow)


def adaptive_ranges(n_in, n_out):
    return [(o * n_in // n_out, -(-(o + 1) * n_in // n_out)) for o in range(n_out)]


def ref_adaptive(x, out_size, reduce):
    *lead, h, w = x.shape
    rh, rw = adaptive_ranges(h, out_size[0]), adaptive_ranges(w, out_size[1])
    out = np.empty((*lead, *out_size))
    for y, (a, b) in enumerate(rh):
        for xo, (c, d) in enumerate(rw):
            out[..., y, xo] = reduce(x[..., a:b, c:d], axis=(-2, -1))
    return out


def ref_interp_axis(n_in, n_out, mode, align_corners, scale=None):
    """(n_out, n_in) matrix of PyTorch's resampling along one axis."""
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        if mode == "nearest":
            r = 1.0 / scale if scale else n_in / n_out
            src = (
                o
                if n_in == n_out
                else min(int(math.floor(np.float32(o) * np.float32(r))), n_in - 1)
            )
            m[o, src] = 1.0
            continue
        if align_corners:
            src = o * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
        else:
            r = 1.0 / scale if scale else n_in / n_out
            src = max(r * (o + 0.5) - 0.5, 0.0)
        i0 = min(int(math.floor(src)), n_in - 1)
        i1 = i0 + 1 if i0 < n_in - 1 else i0
        lam = src - i0 if i1 != i0 else 0.0
        m[o, i0] += 1 - lam
        m[o, i1] += lam
    return m


def ref_unfold(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.empty((n, c, k[0], k[1], oh, ow))
    for i in range(k[0]):
        for j in range(k[1]):
            out[:, :, i, j] = xp[
                :,
                :,
                i * d[0] : i * d[0] + s[0] * (oh - 1) + 1 : s[0],
                j * d[1] : j * d[1] + s[1] * (ow - 1) + 1 : s[1],
            ]
    return out.reshape(n, c * k[0] * k[1], oh * ow)


def distinct(shape, seed):
    """Values at least 0.1 apart, so a maximum has no tie a finite difference could flip."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.1 - n * 0.05).reshape(shape)


def _t(a, dtype=fg.float64, requires_grad=False):
    return fg.tensor(a, dtype=dtype, requires_grad=requires_grad)


# ----- strategies --------------------------------------------------------------------------


@st.composite
def pool_cases(draw, dilation=True):
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    p = (draw(st.integers(0, k[0] // 2)), draw(st.integers(0, k[1] // 2)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) if dilation else (1, 1)
    ceil = draw(st.booleans())
    h = draw(st.integers(max(1, d[0] * (k[0] - 1) + 1 - 2 * p[0]), 6))
    w = draw(st.integers(max(1, d[1] * (k[1] - 1) + 1 - 2 * p[1]), 6))
    lead = draw(st.sampled_from([(2, 2), (3,), (1, 2)]))
    return dict(
        shape=(*lead, h, w), k=k, s=s, p=p, d=d, ceil=ceil, seed=draw(st.integers(0, 2**31))
    )


# ----- max pooling -------------------------------------------------------------------------


@given(pool_cases(), st.sampled_from([fg.float32, fg.float64]))
def test_max_pool2d_values_and_indices(case, dtype):
    x = distinct(case["shape"], case["seed"])
    want, want_idx = ref_max_pool2d(x, case["k"], case["s"], case["p"], case["d"], case["ceil"])
    # A dilated window can miss the input entirely (PyTorch then gives -inf too).
    assume(np.isfinite(want).all())
    out, idx = F.max_pool2d(
        _t(x, dtype),
        case["k"],
        case["s"],
        case["p"],
        case["d"],
        ceil_mode=case["ceil"],
        return_indices=True,
    )
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(idx.numpy(), want_idx)
    assert idx.dtype == fg.int64 and out.dtype == dtype


@settings(max_examples=15)
@given(pool_cases())
def test_max_pool2d_gradcheck_and_gradgradcheck(case):
    want, _ = ref_max_pool2d(
        distinct(case["shape"], case["seed"]),
        case["k"],
        case["s"],
        case["p"],
        case["d"],
        case["ceil"],
    )
    assume(np.isfinite(want).all())
    x = _t(distinct(case["shape"], case["seed"]), requires_grad=True)

    def f(x):
        return F.max_pool2d(x, case["k"], case["s"], case["p"], case["d"], case["ceil"])

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_max_pool_ties_take_the_first_and_nan_wins():
    x = fg.tensor([[[[1.0, 1.0], [0.0, 1.0]]]], requires_grad=True)
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    assert idx.item() == 0
    out.sum().backward()
    assert x.grad.numpy().ravel().tolist() == [1.0, 0.0, 0.0, 0.0]
    y = fg.tensor([[[[1.0, float("nan")], [5.0, 1.0]]]])
    assert math.isnan(F.max_pool2d(y, 2).item())
    # As PyTorch's loop (`val > max || isnan(val)`): the last NaN of the window.
    z = fg.tensor([[[[float("nan"), 7.0], [float("nan"), 1.0]]]])
    out, idx = F.max_pool2d(z, 2, return_indices=True)
    assert math.isnan(out.item()) and idx.item() == 2


def test_max_pool1d_and_unbatched():
    x = distinct((2, 3, 9), 0)
    out, idx = F.max_pool1d(_t(x), 3, 2, 1, dilation=2, return_indices=True)
    want, want_idx = ref_max_pool2d(x[:, :, None], (1, 3), (1, 2), (0, 1), (1, 2), False)
    np.testing.assert_array_equal(out.numpy(), want[:, :, 0])
    np.testing.assert_array_equal(idx.numpy(), want_idx[:, :, 0])
    assert F.max_pool2d(_t(x), 2).shape == (2, 1, 4)  # (C, H, W) unbatched
    xg = _t(x, requires_grad=True)
    assert gradgradcheck(lambda t: F.max_pool1d(t, 2, ceil_mode=True), (xg,))


def test_max_pool_graph_names():
    x = fg.randn(1, 1, 4, 4, requires_grad=True)
    assert F.max_pool2d(x, 2).grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    assert F.adaptive_max_pool2d(x, 2).grad_fn.name() == "AdaptiveMaxPool2DBackward0"
    assert F.max_pool1d(x[0], 2).grad_fn.name() == "SqueezeBackward1"


# ----- average pooling ---------------------------------------------------------------------


@given(
    pool_cases(dilation=False),
    st.booleans(),
    st.sampled_from([None, 3]),
    st.sampled_from([fg.float32, fg.float64]),
)
def test_avg_pool2d_matches_the_definition(case, include_pad, divisor, dtype):
    rng = np.random.default_rng(case["seed"])
    x = rng.standard_normal(case["shape"])
    out = F.avg_pool2d(
        _t(x, dtype), case["k"], case["s"], case["p"], case["ceil"], include_pad, divisor
    )
    want = ref_avg_pool2d(x, case["k"], case["s"], case["p"], case["ceil"], include_pad, divisor)
    tol = 1e-5 if dtype == fg.float32 else 1e-12
    np.testing.assert_allclose(out.numpy(), want, rtol=tol, atol=tol)


@settings(max_examples=15)
@given(pool_cases(dilation=False), st.booleans(), st.sampled_from([None, 5]))
def test_avg_pool2d_gradcheck_and_gradgradcheck(case, include_pad, divisor):
    rng = np.random.default_rng(case["seed"])
    x = _t(rng.standard_normal(case["shape"]), requires_grad=True)

    def f(x):
        return F.avg_pool2d(x, case["k"], case["s"], case["p"], case["ceil"], include_pad, divisor)

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    assert f(x).grad_fn.name() == "AvgPool2DBackward0"


def test_avg_pool1d():
    x = np.random.default_rng(1).standard_normal((2, 3, 10))
    out = F.avg_pool1d(_t(x), 3, 2, 1, ceil_mode=True, count_include_pad=False)
    want = ref_avg_pool2d(x[:, :, None], (1, 3), (1, 2), (0, 1), True, False, None)[:, :, 0]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)


# ----- adaptive pooling --------------------------------------------------------------------


@given(
    st.integers(1, 7),
    st.integers(1, 7),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(0, 2**31),
)
def test_adaptive_pools_match_the_definition(h, w, oh, ow, seed):
    x = distinct((2, 2, h, w), seed)
    np.testing.assert_allclose(
        F.adaptive_avg_pool2d(_t(x), (oh, ow)).numpy(),
        ref_adaptive(x, (oh, ow), np.mean),
        rtol=1e-12,
        atol=1e-12,
    )
    out, idx = F.adaptive_max_pool2d(_t(x), (oh, ow), return_indices=True)
    np.testing.assert_array_equal(out.numpy(), ref_adaptive(x, (oh, ow), np.max))
    flat = x.reshape(2, 2, -1)
    np.testing.assert_array_equal(
        np.take_along_axis(flat, idx.numpy().reshape(2, 2, -1), 2), out.numpy().reshape(2, 2, -1)
    )


@settings(max_examples=10)
@given(
    st.integers(1, 6),
    st.integers(1, 6),
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(0, 2**31),
)
def test_adaptive_pools_gradcheck_and_gradgradcheck(h, w, oh, ow, seed):
    x = _t(distinct((1, 2, h, w), seed), requires_grad=True)
    for f in (
        lambda t: F.adaptive_avg_pool2d(t, (oh, ow)),
        lambda t: F.adaptive_max_pool2d(t, (oh, ow)),
    ):
        assert gradcheck(f, (x,))
        assert gradgradcheck(f, (x,))


def test_adaptive_output_size_forms():
    x = fg.randn(2, 3, 6, 5)
    assert F.adaptive_avg_pool2d(x, 1).shape == (2, 3, 1, 1)
    assert F.adaptive_avg_pool2d(x, (None, 2)).shape == (2, 3, 6, 2)
    assert F.adaptive_avg_pool1d(fg.randn(2, 7), 3).shape == (2, 3)
    assert F.adaptive_max_pool1d(fg.randn(1, 2, 7), 3, return_indices=True)[1].shape == (1, 2, 3)
    np.testing.assert_allclose(
        F.adaptive_avg_pool2d(x, 1).numpy()[..., 0, 0], x.numpy().mean((2, 3)), rtol=1e-5
    )


# ----- interpolation -----------------------------------------------------------------------


@given(
    st.integers(1, 6),
    st.integers(1, 6),
    st.integers(1, 9),
    st.integers(1, 9),
    st.sampled_from(["nearest", "bilinear"]),
    st.booleans(),
    st.sampled_from([fg.float32, fg.float64]),
)
def test_interpolate_to_a_size(h, w, oh, ow, mode, align, dtype):
    x = np.random.default_rng(h * 10 + w).standard_normal((2, 2, h, w))
    ac = align if mode == "bilinear" else None
    out = F.interpolate(_t(x, dtype), size=(oh, ow), mode=mode, align_corners=ac)
    mh = ref_interp_axis(h, oh, mode, bool(ac))
    mw = ref_interp_axis(w, ow, mode, bool(ac))
    tol = 1e-5 if dtype == fg.float32 else 1e-12
    np.testing.assert_allclose(
        out.numpy(), np.einsum("ah,nchw,bw->ncab", mh, x, mw), rtol=tol, atol=tol
    )


@pytest.mark.parametrize("scale", [2, 1.5, 0.5, (2.0, 0.7)])
@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_interpolate_by_a_scale_factor(scale, mode):
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 4))
    out = F.interpolate(_t(x), scale_factor=scale, mode=mode)
    sh, sw = scale if isinstance(scale, tuple) else (scale, scale)
    oh, ow = math.floor(5 * sh), math.floor(4 * sw)
    assert out.shape == (1, 2, oh, ow)
    mh = ref_interp_axis(5, oh, mode, False, sh)
    mw = ref_interp_axis(4, ow, mode, False, sw)
    np.testing.assert_allclose(
        out.numpy(), np.einsum("ah,nchw,bw->ncab", mh, x, mw), rtol=1e-12, atol=1e-12
    )


def test_interpolate_gradcheck_gradgradcheck_and_names():
    x = _t(np.random.default_rng(2).standard_normal((1, 2, 3, 4)), requires_grad=True)
    cases = {
        "UpsampleNearest2DBackward0": lambda t: F.interpolate(t, size=(5, 7)),
        "UpsampleBilinear2DBackward0": lambda t: F.interpolate(
            t, scale_factor=1.7, mode="bilinear"
        ),
        "UpsampleLinear1DBackward0": lambda t: F.interpolate(
            t[0], size=6, mode="linear", align_corners=True
        ),
        "UpsampleNearest1DBackward0": lambda t: F.interpolate(t[0], scale_factor=2),
    }
    for name, f in cases.items():
        assert f(x).grad_fn.name() == name
        assert gradcheck(f, (x,))
        assert gradgradcheck(f, (x,))


def test_interpolate_errors():
    x = fg.randn(1, 1, 4, 4)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=2, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, size=2, align_corners=True)
    with pytest.raises(NotImplementedError, match="bilinear mode needs 4D input"):
        F.interpolate(fg.randn(1, 1, 4), size=2, mode="bilinear")
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        F.interpolate(x, scale_factor=0.1)


# ----- padding -----------------------------------------------------------------------------


def ref_constant_pad(x, pad, value):
    out = x
    for i in range(len(pad) // 2):
        dim = x.ndim - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        width = [(0, 0)] * x.ndim
        width[dim] = (max(before, 0), max(after, 0))
        out = np.pad(out, width, constant_values=value)
        sl = [slice(None)] * x.ndim
        sl[dim] = slice(max(-before, 0), out.shape[dim] - max(-after, 0))
        out = out[tuple(sl)]
    return out


@given(
    st.lists(st.integers(-1, 2), min_size=2, max_size=6).filter(lambda v: len(v) % 2 == 0),
    st.floats(-2, 2),
)
def test_constant_pad_matches_numpy_and_crops_with_negative_pads(pad, value):
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    out = F.pad(_t(x), pad, value=value)
    np.testing.assert_allclose(out.numpy(), ref_constant_pad(x, pad, value))
    xg = _t(x, requires_grad=True)
    assert gradgradcheck(lambda t: F.pad(t, pad, value=value), (xg,))
    assert F.pad(xg, pad).grad_fn.name() == "ConstantPadNdBackward0"


@pytest.mark.parametrize(
    "mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")]
)
def test_pad_modes(mode, np_mode):
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 5))
    out = F.pad(_t(x), (2, 1, 3, 0), mode=mode)
    np.testing.assert_allclose(
        out.numpy(), np.pad(x, ((0, 0), (0, 0), (3, 0), (2, 1)), mode=np_mode)
    )
    xg = _t(x, requires_grad=True)
    assert gradgradcheck(lambda t: F.pad(t, (2, 1, 3, 0), mode=mode), (xg,))


def test_pad_errors():
    x = fg.randn(1, 2, 3)
    # PyTorch 2.x's words.
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(RuntimeError, match="Length of pad should be no more than twice"):
        F.pad(x, (1,) * 8)
    with pytest.raises(RuntimeError, match="resulted in a negative output size"):
        F.pad(x, (-2, -2))
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding"):
        F.pad(x, (3, 0), mode="reflect")


# ----- unfold / fold -----------------------------------------------------------------------


@st.composite
def block_cases(draw):
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    p = (draw(st.integers(0, 1)), draw(st.integers(0, 1)))
    s = (draw(st.integers(1, 2)), draw(st.integers(1, 3)))
    h = draw(st.integers(max(1, d[0] * (k[0] - 1) + 1 - 2 * p[0]), 5))
    w = draw(st.integers(max(1, d[1] * (k[1] - 1) + 1 - 2 * p[1]), 5))
    return dict(shape=(draw(st.integers(1, 2)), draw(st.integers(1, 2)), h, w), k=k, d=d, p=p, s=s)


@given(block_cases())
def test_unfold_matches_the_definition_and_fold_is_its_adjoint(case):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(case["shape"])
    args = (case["k"], case["d"], case["p"], case["s"])
    cols = F.unfold(_t(x), *args)
    want = ref_unfold(x, *args)
    np.testing.assert_allclose(cols.numpy(), want)
    y = rng.standard_normal(want.shape)
    folded = F.fold(_t(y), case["shape"][2:], *args)
    assert folded.shape == case["shape"]
    np.testing.assert_allclose((folded.numpy() * x).sum(), (y * want).sum(), rtol=1e-10)


@settings(max_examples=10)
@given(block_cases())
def test_unfold_fold_gradcheck_and_gradgradcheck(case):
    rng = np.random.default_rng(1)
    args = (case["k"], case["d"], case["p"], case["s"])
    x = _t(rng.standard_normal(case["shape"]), requires_grad=True)
    assert gradgradcheck(lambda t: F.unfold(t, *args), (x,))
    cols = _t(ref_unfold(x.detach().numpy(), *args), requires_grad=True)
    assert gradgradcheck(lambda t: F.fold(t, case["shape"][2:], *args), (cols,))
    assert F.unfold(x, *args).grad_fn.name() == "Im2ColBackward0"
    assert F.fold(cols, case["shape"][2:], *args).grad_fn.name() == "Col2ImBackward0"


def test_unfold_fold_errors_and_unbatched():
    assert F.unfold(fg.randn(2, 4, 4), 2).shape == (8, 9)
    assert F.fold(fg.randn(8, 9), (4, 4), 2).shape == (2, 4, 4)
    with pytest.raises(RuntimeError, match="divisible by the product of kernel_size"):
        F.fold(fg.randn(1, 7, 9), (4, 4), 2)
    with pytest.raises(
        RuntimeError, match="match the calculated number of sliding blocks 3 \\* 3 = 9"
    ):
        F.fold(fg.randn(1, 8, 10), (4, 4), 2)
    with pytest.raises(RuntimeError, match="calculated shape of the array of sliding blocks"):
        F.unfold(fg.randn(1, 1, 2, 2), 3)


# ----- errors and layers -------------------------------------------------------------------


def test_pooling_errors():
    x = fg.randn(1, 3, 2, 2)
    with pytest.raises(RuntimeError) as e:
        F.max_pool2d(x, 3)
    assert str(e.value) == (
        "Given input size: (3x2x2). Calculated output size: (3x0x0). Output size is too small"
    )
    # PyTorch's words (recorded from PyTorch 2.x).
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size, "
                                           "but got pad=2, kernel_size=2 and dilation=1"):  # fmt: skip
        F.max_pool2d(fg.randn(1, 1, 8, 8), 2, padding=2)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.avg_pool2d(fg.randn(1, 1, 8, 8), 2, padding=2)
    with pytest.raises(RuntimeError, match="stride should not be zero"):
        F.max_pool2d(fg.randn(1, 1, 8, 8), 2, stride=0)
    with pytest.raises(RuntimeError, match="stride should be greater than zero"):
        F.max_pool2d(fg.randn(1, 1, 8, 8), 2, stride=-1)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.max_pool2d(fg.randn(8, 8), 2)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(fg.randn(1, 1, 8, 8), 2, divisor_override=0)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.max_pool2d(fg.zeros(1, 1, 4, 4, dtype=fg.int64), 2)


def test_pooling_layers_and_reprs():
    x = fg.randn(2, 3, 8, 8)
    m = nn.MaxPool2d(2)
    assert m.extra_repr() == "kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False"
    assert m(x).shape == (2, 3, 4, 4)
    out, idx = nn.MaxPool2d(3, 2, 1, return_indices=True)(x)
    assert out.shape == idx.shape == (2, 3, 4, 4)
    assert nn.MaxPool1d(3, 2).extra_repr() == (
        "kernel_size=3, stride=2, padding=0, dilation=1, ceil_mode=False"
    )
    assert nn.AvgPool2d(3, 2, 1).extra_repr() == "kernel_size=3, stride=2, padding=1"
    assert nn.AvgPool1d(3).extra_repr() == "kernel_size=(3,), stride=(3,), padding=(0,)"
    assert nn.AvgPool2d(2)(x).shape == (2, 3, 4, 4)
    assert nn.AdaptiveAvgPool2d((1, 1)).extra_repr() == "output_size=(1, 1)"
    assert nn.AdaptiveAvgPool2d(3)(x).shape == (2, 3, 3, 3)
    assert nn.AdaptiveMaxPool2d(2, return_indices=True)(x)[1].dtype == fg.int64
    assert nn.ZeroPad2d(1).extra_repr() == "(1, 1, 1, 1)"
    assert nn.ZeroPad2d((1, 2, 0, 1))(x).shape == (2, 3, 9, 11)
    c = nn.ConstantPad2d(2, 3.5)
    assert c.extra_repr() == "padding=(2, 2, 2, 2), value=3.5"
    assert c(x)[0, 0, 0, 0].item() == 3.5
    assert nn.ReflectionPad2d(1)(x).shape == (2, 3, 10, 10)
    up = nn.Upsample(scale_factor=2, mode="bilinear")
    assert up.extra_repr() == "scale_factor=2.0, mode='bilinear'"
    assert up(x).shape == (2, 3, 16, 16)
    assert nn.Upsample(size=(3, 5)).extra_repr() == "size=(3, 5), mode='nearest'"
    u = nn.Unfold(kernel_size=(2, 3), padding=1)
    assert u.extra_repr() == "kernel_size=(2, 3), dilation=1, padding=1, stride=1"
    f = nn.Fold(output_size=(8, 8), kernel_size=(2, 3), padding=1)
    assert f.extra_repr() == (
        "output_size=(8, 8), kernel_size=(2, 3), dilation=1, padding=1, stride=1"
    )
    assert f(u(x)).shape == x.shape
    assert list(nn.MaxPool2d(2).parameters()) == []
