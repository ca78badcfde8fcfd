"""The convolution kernel's internal paths against NumPy references: bands of output rows
(large images), the whole-row im2col/col2im of unit-stride convolutions whose output is as wide
as the input, the bias carried through the product as an extra weight column, and several
samples per weight-gradient product."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck


def ref_conv2d(x, w, b, stride, padding, dilation, groups):
    """out[n, o, y, x] = sum_{c, i, j} xpad[n, c, y*s + i*d, x*s + j*d] w[o, c, i, j] (+ b[o])."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    xp[:, :, ph : ph + h, pw : pw + wd] = x
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for g in range(groups):
        xs = xp[:, g * cg : (g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[
                    :,
                    :,
                    i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                    j * dw : j * dw + sw * (ow - 1) + 1 : sw,
                ]
                out[:, g * og : (g + 1) * og] += np.einsum(
                    "ncyx,oc->noyx", patch, w[g * og : (g + 1) * og, :, i, j]
                )
    if b is not None:
        out += b[None, :, None, None]
    return out


def ref_grads(x, w, gy, stride, padding, dilation, groups):
    """The input's and weight's gradients of <gy, conv(x, w)>, from the same patches: each
    output element's gradient flows back to the input elements and weights it read."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    oh, ow = gy.shape[2:]
    og = o // groups
    gxp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    xp = np.zeros_like(gxp)
    xp[:, :, ph : ph + h, pw : pw + wd] = x
    gw = np.zeros_like(w)
    for g in range(groups):
        cs, os_ = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
        for i in range(kh):
            for j in range(kw):
                win = (
                    slice(None),
                    cs,
                    slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                    slice(j * dw, j * dw + sw * (ow - 1) + 1, sw),
                )
                gxp[win] += np.einsum("noyx,oc->ncyx", gy[:, os_], w[os_, :, i, j])
                gw[os_, :, i, j] = np.einsum("ncyx,noyx->oc", xp[win], gy[:, os_])
    return gxp[:, :, ph : ph + h, pw : pw + wd], gw


def check(x, w, b, stride, padding, dilation, groups, dtype=fg.float64, tol=1e-10):
    """Forward and all three gradients of F.conv2d against the references."""
    rng = np.random.default_rng(0)
    xt = fg.tensor(x, dtype=dtype, requires_grad=True)
    wt = fg.tensor(w, dtype=dtype, requires_grad=True)
    bt = None if b is None else fg.tensor(b, dtype=dtype, requires_grad=True)
    y = F.conv2d(xt, wt, bt, stride, padding, dilation, groups)
    want = ref_conv2d(x, w, b, stride, padding, dilation, groups)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=tol, atol=tol)
    gy = rng.standard_normal(want.shape)
    y.backward(fg.tensor(gy, dtype=dtype))
    gx, gw = ref_grads(x, w, gy, stride, padding, dilation, groups)
    np.testing.assert_allclose(xt.grad.numpy(), gx, rtol=tol, atol=tol)
    np.testing.assert_allclose(wt.grad.numpy(), gw, rtol=tol, atol=tol)
    if b is not None:
        np.testing.assert_allclose(bt.grad.numpy(), gy.sum((0, 2, 3)), rtol=tol, atol=tol)


@st.composite
def same_width_cases(draw):
    """Unit stride and an output as wide as the input: 2 * padding = dilation * (k - 1)
    along the width (the height is free), with kernels wider than small images."""
    groups = draw(st.integers(1, 2))
    kw = draw(st.sampled_from([1, 3, 5, 7]))
    dw = draw(st.integers(1, 2))
    pw = dw * (kw - 1) // 2
    kh = draw(st.integers(1, 4))
    dh = draw(st.integers(1, 2))
    ph = draw(st.integers(0, 3))
    h = draw(st.integers(max(1, dh * (kh - 1) + 1 - 2 * ph), 7))
    return dict(
        n=draw(st.integers(1, 3)),
        c=draw(st.integers(1, 3)) * groups,
        o=draw(st.integers(1, 3)) * groups,
        h=h,
        w=draw(st.integers(1, 8)),
        k=(kh, kw),
        p=(ph, pw),
        d=(dh, dw),
        groups=groups,
        bias=draw(st.booleans()),
        seed=draw(st.integers(0, 2**31)),
    )


def arrays(case):
    rng = np.random.default_rng(case["seed"])
    x = rng.standard_normal((case["n"], case["c"], case["h"], case["w"]))
    w = rng.standard_normal((case["o"], case["c"] // case["groups"], *case["k"]))
    b = rng.standard_normal(case["o"]) if case["bias"] else None
    return x, w, b


@given(same_width_cases())
def test_same_width_unit_stride_convolutions_match_the_reference(case):
    x, w, b = arrays(case)
    check(x, w, b, (1, 1), case["p"], case["d"], case["groups"])


@settings(max_examples=10)
@given(same_width_cases())
def test_same_width_unit_stride_gradcheck_and_gradgradcheck(case):
    x, w, b = arrays(case)
    inputs = [fg.tensor(a, dtype=fg.float64, requires_grad=True) for a in (x, w)]
    if b is not None:
        inputs.append(fg.tensor(b, dtype=fg.float64, requires_grad=True))

    def f(*args):
        bias = args[2] if len(args) > 2 else None
        return F.conv2d(args[0], args[1], bias, 1, case["p"], case["d"], case["groups"])

    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


def test_large_images_go_in_bands_of_output_rows():
    # A float64 column matrix of 8*9 (+1 bias) rows by 70x64 positions is 2.6 MB, past
    # the 2 MB band budget: two bands, the second one shorter, in every kernel.
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 8, 70, 64))
    w = rng.standard_normal((3, 8, 3, 3))
    b = rng.standard_normal(3)
    check(x, w, b, (1, 1), (1, 1), (1, 1), 1)
    check(x, w, None, (1, 1), (1, 1), (1, 1), 1)
    # Strided, dilated and grouped on the same image (no fused bias, rows copied one by one).
    w2 = rng.standard_normal((4, 4, 3, 2))
    check(x, w2, rng.standard_normal(4), (1, 2), (0, 2), (2, 1), 2)


def test_float32_bands_and_fused_bias():
    # float32 with a fused bias over several bands, against the float64 reference.
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 16, 72, 72)).astype(np.float32)
    w = (rng.standard_normal((5, 16, 3, 3)) / 12).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    check(x, w, b, (1, 1), (1, 1), (1, 1), 1, dtype=fg.float32, tol=2e-4)


def test_many_small_samples_share_one_weight_gradient_product():
    # 28x28 images with a 5x5 kernel (LeNet's first layer): several samples' columns
    # side by side in one product, split over the threads, the last chunk shorter.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((13, 1, 28, 28))
    w = rng.standard_normal((6, 1, 5, 5))
    b = rng.standard_normal(6)
    check(x, w, b, (1, 1), (2, 2), (1, 1), 1)
    check(x[:, :, :14, :14], rng.standard_normal((4, 1, 5, 5)), None, (1, 1), (0, 0), (1, 1), 1)


def test_weight_gradient_in_both_product_orientations():
    # Fewer output channels per group than a vector holds run the weight gradient's
    # product upright, more run it transposed; both with groups and several bands.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 12, 10))
    for o, groups in [(2, 1), (8, 1), (16, 2), (6, 2)]:
        w = rng.standard_normal((o, 4 // groups, 3, 3))
        check(x, w, rng.standard_normal(o), (1, 1), (1, 1), (1, 1), groups)
        check(x, w, None, (2, 1), (0, 1), (1, 2), groups)
    x32 = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    for o in (4, 16, 32):
        w = rng.standard_normal((o, 3, 3, 3)).astype(np.float32)
        check(x32, w, None, (1, 1), (1, 1), (1, 1), 1, dtype=fg.float32, tol=1e-4)


def test_pointwise_kernels_read_the_input_directly():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 6, 9, 7))
    check(x, rng.standard_normal((4, 6, 1, 1)), rng.standard_normal(4), (1, 1), (0, 0), (1, 1), 1)
    check(x, rng.standard_normal((4, 3, 1, 1)), rng.standard_normal(4), (1, 1), (0, 0), (1, 1), 2)


def test_kernel_taps_that_see_only_padding():
    # Every output column of the outer taps lies in the padding of a 1-wide image; these
    # used to slice the input row from index -1.
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 2, 3, 1))
    check(x, rng.standard_normal((3, 2, 1, 3)), None, (1, 1), (0, 2), (1, 2), 1)
    check(x, rng.standard_normal((3, 2, 2, 6)), rng.standard_normal(3), (1, 1), (1, 3), (1, 1), 1)
