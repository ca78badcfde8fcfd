"""Shapes that take the direct convolution kernels (small layers, depthwise, 3x3 layers of a
few dozen channels, and with AVX-512 the channel-vector blocks of small planes and strides) and ones next to them that stay on im2col +
GEMM, in both float dtypes, against NumPy references; first and second order gradients by
gradcheck in float64; and the 2x2 max-pooling path with ties and NaNs."""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck
from test_conv_paths import check

# (x shape, w shape, stride, padding, dilation, groups)
CASES = [
    ((3, 1, 28, 28), (6, 1, 5, 5), (1, 1), (2, 2), (1, 1), 1),  # LeNet conv1
    ((3, 6, 14, 14), (16, 6, 5, 5), (1, 1), (0, 0), (1, 1), 1),  # LeNet conv2
    ((2, 32, 12, 32), (64, 32, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # 3x3, 64 outputs
    ((2, 8, 9, 21), (8, 1, 3, 3), (1, 1), (1, 1), (1, 1), 8),  # depthwise
    ((2, 4, 11, 19), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),  # row stride, groups
    ((1, 6, 7, 20), (9, 2, 3, 3), (1, 1), (2, 1), (2, 1), 3),  # dilation
    ((2, 2, 5, 6), (3, 2, 2, 2), (1, 1), (2, 2), (1, 1), 1),  # padding past the reach
    ((2, 3, 8, 9), (5, 3, 3, 3), (1, 2), (1, 1), (1, 1), 1),  # column stride: GEMM
    ((2, 16, 7, 7), (20, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # short rows
    ((2, 24, 5, 5), (24, 24, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # pointwise
    # With AVX-512, vectors of output channels: an 8x8 plane, a strided
    # layer, 40 channels (a partial vector), a sample split across threads.
    ((2, 32, 8, 8), (64, 32, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 16, 12, 12), (32, 16, 3, 3), (2, 2), (1, 1), (1, 1), 1),
    ((2, 8, 10, 10), (40, 8, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    ((1, 6, 9, 13), (24, 6, 3, 3), (1, 3), (1, 1), (1, 1), 1),
]


def arrays(case, seed=0):
    xs, ws = case[0], case[1]
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal(xs),
        rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:])),
        rng.standard_normal(ws[0]),
    )


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_direct_shapes_match_the_reference(case, dtype):
    x, w, b = arrays(case)
    tol = 2e-4 if dtype == "float32" else 1e-10
    check(x, w, b, *case[2:], dtype=getattr(fg, dtype), tol=tol)
    check(x, w, None, *case[2:], dtype=getattr(fg, dtype), tol=tol)


@pytest.mark.parametrize("case", [c for c in CASES if np.prod(c[0]) <= 2000])
def test_direct_shapes_gradcheck_and_gradgradcheck(case):
    x, w, b = arrays(case, seed=1)
    inputs = [fg.tensor(a, dtype=fg.float64, requires_grad=True) for a in (x, w, b)]

    def f(x, w, b):
        return F.conv2d(x, w, b, *case[2:])

    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


def test_one_sample_splits_channel_blocks_across_threads():
    x, w, b = arrays(((1, 3, 6, 18), (14, 3, 3, 3)))
    check(x, w, b, (1, 1), (1, 1), (1, 1), 1, dtype=fg.float32, tol=2e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unit_stride_transposed_convolution_with_bias(dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 6, 9, 17))
    w = rng.standard_normal((6, 4, 3, 3))
    b = rng.standard_normal(4)
    t = getattr(fg, dtype)
    y = F.conv_transpose2d(
        fg.tensor(x, dtype=t), fg.tensor(w, dtype=t), fg.tensor(b, dtype=t), padding=1
    )
    # The transposed convolution is the input's gradient of the convolution it undoes.
    xt = fg.tensor(np.zeros((2, 4, 9, 17)), dtype=fg.float64, requires_grad=True)
    F.conv2d(xt, fg.tensor(w, dtype=fg.float64), None, padding=1).backward(
        fg.tensor(x, dtype=fg.float64)
    )
    want = xt.grad.numpy() + b[None, :, None, None]
    tol = 2e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(y.numpy(), want, rtol=tol, atol=tol)


def ref_max_pool_2x2(x):
    """PyTorch's rule over each window in order: a larger value or any NaN takes over."""
    n, c, h, w = x.shape
    out = np.zeros((n, c, h // 2, w // 2), x.dtype)
    idx = np.zeros(out.shape, np.int64)
    for p in np.ndindex(n, c):
        for y in range(h // 2):
            for xo in range(w // 2):
                best, at = None, 0
                for i in range(2):
                    for j in range(2):
                        v, pos = x[p][2 * y + i, 2 * xo + j], (2 * y + i) * w + 2 * xo + j
                        if best is None or v > best or np.isnan(v):
                            best, at = v, pos
                out[p][y, xo], idx[p][y, xo] = best, at
    return out, idx


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool_2x2_ties_and_nans(dtype):
    rng = np.random.default_rng(3)
    x = rng.integers(-2, 3, (2, 3, 6, 9)).astype(dtype)
    x[0, 0, 0, 1] = x[1, 2, 3, 4] = x[1, 2, 2, 5] = np.nan
    y, i = F.max_pool2d(fg.tensor(x), 2, return_indices=True)
    want, wi = ref_max_pool_2x2(x)
    np.testing.assert_array_equal(y.numpy(), want)
    np.testing.assert_array_equal(i.numpy(), wi)
