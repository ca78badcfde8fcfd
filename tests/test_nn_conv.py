"""Convolutions (F.conv1d/conv2d/conv_transpose1d/2d and their modules) against direct
NumPy loops, first and second derivatives by finite differences, PyTorch's errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

# ----- NumPy references --------------------------------------------------------------------


def ref_conv2d(x, w, b, stride, padding, dilation, groups):
    """The definition: out[n, o, y, x] = sum_{c, i, j} xpad[n, c, y*s + i*d, x*s + j*d] w[o, c, i, j]."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw), dtype=np.float64)
    xp[:, :, ph : ph + h, pw : pw + wd] = x
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for g in range(groups):
        xs = xp[:, g * cg : (g + 1) * cg]
        ws = w[g * og : (g + 1) * og].astype(np.float64)
        for i in range(kh):
            for j in range(kw):
                patch = xs[
                    :,
                    :,
                    i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                    j * dw : j * dw + sw * (ow - 1) + 1 : sw,
                ]
                out[:, g * og : (g + 1) * og] += np.einsum("ncyx,oc->noyx", patch, ws[:, :, i, j])
    if b is not None:
        out += b[None, :, None, None]
    return out


def ref_conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation):
    """Every input element scatters its kernel-weighted copy into the output."""
    n, cin, h, wd = x.shape
    _, og, kh, kw = w.shape
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = stride, padding, output_padding, dilation
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + oph
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + opw
    buf = np.zeros((n, og * groups, full_h, full_w))
    cg = cin // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum(
                    "ncyx,co->noyx", x[:, g * cg : (g + 1) * cg], w[g * cg : (g + 1) * cg, :, i, j]
                )
                buf[
                    :,
                    g * og : (g + 1) * og,
                    i * dh : i * dh + sh * (h - 1) + 1 : sh,
                    j * dw : j * dw + sw * (wd - 1) + 1 : sw,
                ] += contrib
    out = buf[:, :, ph : full_h - ph, pw : full_w - pw]
    if b is not None:
        out = out + b[None, :, None, None]
    return out


# ----- hypothesis strategies ---------------------------------------------------------------


@st.composite
def conv_cases(draw):
    groups = draw(st.integers(1, 2))
    cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    n = draw(st.integers(1, 2))
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    p = (draw(st.integers(0, 2)), draw(st.integers(0, 1)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    # The padded input must hold the dilated kernel.
    h = draw(st.integers(max(1, d[0] * (k[0] - 1) + 1 - 2 * p[0]), 6))
    w = draw(st.integers(max(1, d[1] * (k[1] - 1) + 1 - 2 * p[1]), 6))
    bias = draw(st.booleans())
    seed = draw(st.integers(0, 2**31))
    return dict(
        n=n,
        c=cg * groups,
        o=og * groups,
        h=h,
        w=w,
        k=k,
        s=s,
        p=p,
        d=d,
        groups=groups,
        bias=bias,
        seed=seed,
    )


def _arrays(case, transposed=False):
    rng = np.random.default_rng(case["seed"])
    c, o, g = case["c"], case["o"], case["groups"]
    x = rng.standard_normal((case["n"], c, case["h"], case["w"]))
    wshape = (c, o // g, *case["k"]) if transposed else (o, c // g, *case["k"])
    w = rng.standard_normal(wshape)
    b = rng.standard_normal(o) if case["bias"] else None
    return x, w, b


def _t(a, dtype=fg.float64, requires_grad=False):
    return None if a is None else fg.tensor(a, dtype=dtype, requires_grad=requires_grad)


# ----- forward -----------------------------------------------------------------------------


@given(conv_cases(), st.sampled_from([fg.float32, fg.float64]))
def test_conv2d_matches_the_definition(case, dtype):
    x, w, b = _arrays(case)
    got = F.conv2d(
        _t(x, dtype), _t(w, dtype), _t(b, dtype), case["s"], case["p"], case["d"], case["groups"]
    )
    want = ref_conv2d(x, w, b, case["s"], case["p"], case["d"], case["groups"])
    assert got.dtype == dtype
    tol = 1e-5 if dtype == fg.float32 else 1e-12
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


@given(conv_cases(), st.sampled_from([fg.float32, fg.float64]), st.data())
def test_conv_transpose2d_matches_the_definition(case, dtype, data):
    x, w, b = _arrays(case, transposed=True)
    s, d = case["s"], case["d"]
    # Output padding must be below the stride or the dilation of its dimension.
    op = tuple(data.draw(st.integers(0, max(si, di) - 1)) for si, di in zip(s, d))
    p = tuple(
        min(pi, ((hi - 1) * si + di * (ki - 1)) // 2)
        for pi, hi, si, di, ki in zip(case["p"], (case["h"], case["w"]), s, d, case["k"])
    )
    got = F.conv_transpose2d(_t(x, dtype), _t(w, dtype), _t(b, dtype), s, p, op, case["groups"], d)
    want = ref_conv_transpose2d(x, w, b, s, p, op, case["groups"], d)
    tol = 1e-5 if dtype == fg.float32 else 1e-12
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


def test_conv1d_is_conv2d_over_a_unit_height():
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((2, 4, 9)), rng.standard_normal((6, 2, 3)), rng.standard_normal(6)
    got = F.conv1d(_t(x), _t(w), _t(b), stride=2, padding=1, dilation=2, groups=2)
    want = ref_conv2d(x[:, :, None], w[:, :, None], b, (1, 2), (0, 1), (1, 2), 2)[:, :, 0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    wt = rng.standard_normal((4, 3, 3))
    got = F.conv_transpose1d(_t(x), _t(wt), None, stride=3, padding=1, output_padding=2)
    want = ref_conv_transpose2d(
        x[:, :, None], wt[:, :, None], None, (1, 3), (0, 1), (0, 2), 1, (1, 1)
    )[:, :, 0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k,d", [((3, 3), (1, 1)), ((2, 4), (1, 1)), ((3, 2), (2, 3))])
def test_same_padding_keeps_the_size_and_valid_means_none(k, d):
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((1, 2, 7, 6)), rng.standard_normal((3, 2, *k))
    got = F.conv2d(_t(x), _t(w), padding="same", dilation=d)
    assert got.shape == (1, 3, 7, 6)
    # Odd total padding puts the extra element after, as PyTorch does.
    total = [di * (ki - 1) for di, ki in zip(d, k)]
    xp = np.pad(
        x,
        (
            (0, 0),
            (0, 0),
            (total[0] // 2, total[0] - total[0] // 2),
            (total[1] // 2, total[1] - total[1] // 2),
        ),
    )
    np.testing.assert_allclose(
        got.numpy(), ref_conv2d(xp, w, None, (1, 1), (0, 0), d, 1), rtol=1e-12, atol=1e-12
    )
    valid = F.conv2d(_t(x), _t(w), padding="valid", dilation=d)
    np.testing.assert_allclose(
        valid.numpy(), ref_conv2d(x, w, None, (1, 1), (0, 0), d, 1), rtol=1e-12, atol=1e-12
    )


def test_unbatched_input_gives_an_unbatched_output():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 5, 5)), rng.standard_normal((4, 2, 3, 3))
    got = F.conv2d(_t(x), _t(w), padding=1)
    assert got.shape == (4, 5, 5)
    np.testing.assert_allclose(
        got.numpy(), ref_conv2d(x[None], w, None, (1, 1), (1, 1), (1, 1), 1)[0], rtol=1e-12
    )
    assert F.conv1d(_t(x[:, 0]), _t(w[:, :, 0])).shape == (4, 3)
    assert F.conv_transpose2d(_t(x), _t(w.transpose(1, 0, 2, 3))).shape == (4, 7, 7)


def test_a_large_batch_and_pointwise_kernels_take_the_tiled_paths():
    # Big enough to run in parallel over batch tiles; a 1x1 kernel skips im2col.
    rng = np.random.default_rng(4)
    x = rng.standard_normal((9, 8, 20, 20)).astype(np.float32)
    for k, s, p in [(1, 1, 0), (3, 1, 1), (1, 2, 0)]:
        w = rng.standard_normal((16, 8, k, k)).astype(np.float32)
        b = rng.standard_normal(16).astype(np.float32)
        xt = fg.tensor(x, requires_grad=True)
        wt = fg.tensor(w, requires_grad=True)
        bt = fg.tensor(b, requires_grad=True)
        y = F.conv2d(xt, wt, bt, stride=s, padding=p)
        np.testing.assert_allclose(
            y.detach().numpy(), ref_conv2d(x, w, b, (s, s), (p, p), (1, 1), 1), rtol=1e-4, atol=1e-4
        )
        g = rng.standard_normal(y.shape).astype(np.float32)
        y.backward(fg.tensor(g))
        # <g, conv(x, w)> is bilinear: its gradients are the adjoint maps.
        gx = ref_conv_transpose2d(
            g,
            w,
            None,
            (s, s),
            (p, p),
            tuple(np.array(x.shape[2:]) + 2 * p - ((np.array(g.shape[2:]) - 1) * s + k)),
            1,
            (1, 1),
        )
        np.testing.assert_allclose(xt.grad.numpy(), gx, rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(bt.grad.numpy(), g.sum((0, 2, 3)), rtol=1e-4, atol=1e-3)
        # dL/dw by the definition: sum over the batch of patches times g.
        eps_w = np.zeros_like(w, dtype=np.float64)
        for i in range(k):
            for j in range(k):
                xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p, p), (p, p)))
                patch = xp[
                    :, :, i : i + s * (g.shape[2] - 1) + 1 : s, j : j + s * (g.shape[3] - 1) + 1 : s
                ]
                eps_w[:, :, i, j] = np.einsum("ncyx,noyx->oc", patch, g)
        np.testing.assert_allclose(wt.grad.numpy(), eps_w, rtol=1e-3, atol=1e-3)


# ----- derivatives -------------------------------------------------------------------------


@settings(max_examples=15)
@given(conv_cases())
def test_conv2d_gradcheck_and_gradgradcheck(case):
    x, w, b = _arrays(case)
    inputs = [_t(x, requires_grad=True), _t(w, requires_grad=True)]
    if b is not None:
        inputs.append(_t(b, requires_grad=True))

    def f(*args):
        return F.conv2d(
            args[0],
            args[1],
            args[2] if len(args) > 2 else None,
            case["s"],
            case["p"],
            case["d"],
            case["groups"],
        )

    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


@settings(max_examples=15)
@given(conv_cases(), st.data())
def test_conv_transpose2d_gradcheck_and_gradgradcheck(case, data):
    x, w, b = _arrays(case, transposed=True)
    s, d = case["s"], case["d"]
    op = tuple(data.draw(st.integers(0, max(si, di) - 1)) for si, di in zip(s, d))
    inputs = [_t(x, requires_grad=True), _t(w, requires_grad=True)]
    if b is not None:
        inputs.append(_t(b, requires_grad=True))

    def f(*args):
        return F.conv_transpose2d(
            args[0], args[1], args[2] if len(args) > 2 else None, s, (0, 0), op, case["groups"], d
        )

    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


def test_conv1d_and_conv_transpose1d_gradgradcheck():
    rng = np.random.default_rng(5)
    x = _t(rng.standard_normal((2, 2, 7)), requires_grad=True)
    w = _t(rng.standard_normal((4, 1, 3)), requires_grad=True)
    b = _t(rng.standard_normal(4), requires_grad=True)
    for f in (
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, groups=2),
        lambda x, w, b: F.conv_transpose1d(
            x, w.reshape(2, 2, 3), b[:2], stride=2, output_padding=1
        ),
        lambda x, w, b: F.conv1d(x, w, b, padding="same", dilation=2, groups=2),
    ):
        assert gradcheck(f, (x, w, b))
        assert gradgradcheck(f, (x, w, b))


def test_graph_names_as_pytorch():
    x = fg.randn(1, 2, 5, 5, requires_grad=True)
    w = fg.randn(3, 2, 3, 3, requires_grad=True)
    y = F.conv2d(x, w)
    assert y.grad_fn.name() == "ConvolutionBackward0"
    assert [type(n).__name__ if n is not None else None for n, _ in y.grad_fn.next_functions][:2]
    assert F.conv_transpose2d(y, w).grad_fn.name() == "ConvolutionBackward0"
    assert F.conv2d(x[0], w).grad_fn.name() == "SqueezeBackward1"
    (gx, gw) = fg.autograd.grad(y.sum(), (x, w), create_graph=True)
    assert gx.grad_fn.name() == "ConvolutionBackward0"
    assert gw.grad_fn.name() == "ConvolutionBackwardBackward0"


def test_no_graph_without_grad():
    x, w = fg.randn(1, 2, 5, 5, requires_grad=True), fg.randn(3, 2, 3, 3)
    with fg.no_grad():
        assert F.conv2d(x, w).grad_fn is None
    assert F.conv2d(x.detach(), w).grad_fn is None


# ----- errors ------------------------------------------------------------------------------


def test_wrong_channels_message():
    with pytest.raises(RuntimeError) as e:
        F.conv2d(fg.zeros(1, 1, 32, 32), fg.zeros(64, 3, 3, 3))
    assert str(e.value) == (
        "Given groups=1, weight of size [64, 3, 3, 3], expected input[1, 1, 32, 32] to have 3 "
        "channels, but got 1 channels instead"
    )
    with pytest.raises(RuntimeError, match=r"expected input\[1, 1, 32, 32\] to have 3 channels"):
        F.conv2d(fg.zeros(1, 32, 32), fg.zeros(64, 3, 3, 3))
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size \[3, 4, 3, 3\]"):
        F.conv_transpose2d(fg.zeros(1, 2, 5, 5), fg.zeros(3, 4, 3, 3))


def test_kernel_larger_than_input_message():
    with pytest.raises(RuntimeError) as e:
        F.conv2d(fg.zeros(1, 3, 2, 2), fg.zeros(4, 3, 3, 3))
    assert str(e.value) == (
        "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size "
        "can't be greater than actual input size"
    )
    with pytest.raises(
        RuntimeError, match=r"padded input size per channel: \(4\). Kernel size: \(5\)"
    ):
        F.conv1d(fg.zeros(1, 3, 2), fg.zeros(4, 3, 3), padding=1, dilation=2)


def test_wrong_rank_message():
    with pytest.raises(RuntimeError) as e:
        F.conv2d(fg.zeros(32, 32), fg.zeros(4, 3, 3, 3))
    assert str(e.value) == (
        "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [32, 32]"
    )
    with pytest.raises(
        RuntimeError, match=r"Expected 2D \(unbatched\) or 3D \(batched\) input to conv1d"
    ):
        F.conv1d(fg.zeros(1, 1, 3, 3), fg.zeros(4, 1, 3))


def test_other_argument_errors():
    x = fg.zeros(1, 4, 5, 5)
    with pytest.raises(RuntimeError, match="expected weight to be divisible by 3 at dimension 0"):
        F.conv2d(x, fg.zeros(4, 2, 3, 3), groups=3)
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 4 elements"):
        F.conv2d(x, fg.zeros(4, 4, 3, 3), fg.zeros(3))
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        F.conv2d(x, fg.zeros(4, 4, 3, 3), stride=0)
    with pytest.raises(RuntimeError, match="negative padding is not supported"):
        F.conv2d(x, fg.zeros(4, 4, 3, 3), padding=-1)
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        F.conv2d(x, fg.zeros(4, 4, 3, 3), dilation=0)
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided"):
        F.conv2d(x, fg.zeros(4, 4, 3, 3), padding="same", stride=2)
    with pytest.raises(RuntimeError, match="Invalid padding string"):
        F.conv2d(x, fg.zeros(4, 4, 3, 3), padding="full")
    with pytest.raises(RuntimeError, match="should be the same"):
        F.conv2d(x, fg.zeros(4, 4, 3, 3, dtype=fg.float64))
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.conv2d(fg.zeros(1, 4, 5, 5, dtype=fg.int64), fg.zeros(4, 4, 3, 3, dtype=fg.int64))
    with pytest.raises(
        RuntimeError, match="output padding must be smaller than either stride or dilation"
    ):
        F.conv_transpose2d(x, fg.zeros(4, 4, 3, 3), stride=2, output_padding=2)


def test_a_failed_call_leaves_the_module_unchanged():
    m = nn.Conv2d(3, 4, 3)
    before = [p.detach().clone() for p in m.parameters()]
    with pytest.raises(RuntimeError, match="to have 3 channels, but got 2 channels instead"):
        m(fg.randn(1, 2, 8, 8))
    for p, q in zip(m.parameters(), before):
        assert fg.equal(p, q) and p.grad is None


# ----- modules -----------------------------------------------------------------------------


def test_conv2d_module_parameters_and_repr():
    m = nn.Conv2d(6, 8, (3, 5), stride=2, padding=1, dilation=(2, 1), groups=2)
    names = [n for n, _ in m.named_parameters()]
    assert names == ["weight", "bias"]
    assert m.weight.shape == (8, 3, 3, 5) and m.bias.shape == (8,)
    assert m.kernel_size == (3, 5) and m.stride == (2, 2) and m.padding == (1, 1)
    assert m.extra_repr() == (
        "6, 8, kernel_size=(3, 5), stride=(2, 2), padding=(1, 1), dilation=(2, 1), groups=2"
    )
    assert nn.Conv2d(1, 2, 3).extra_repr() == "1, 2, kernel_size=(3, 3), stride=(1, 1)"
    assert nn.Conv2d(1, 2, 3, bias=False, padding="same").extra_repr() == (
        "1, 2, kernel_size=(3, 3), stride=(1, 1), padding=same, bias=False"
    )
    assert nn.Conv1d(2, 4, 3, padding_mode="reflect").extra_repr() == (
        "2, 4, kernel_size=(3,), stride=(1,), padding_mode=reflect"
    )
    assert nn.Conv1d(2, 4, 3).weight.shape == (4, 2, 3)
    assert nn.Conv2d(2, 4, 3, bias=False).bias is None


def test_conv_transpose2d_module():
    m = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    assert m.weight.shape == (4, 3, 3, 3) and m.bias.shape == (6,)
    assert m.extra_repr() == (
        "4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), output_padding=(1, 1), groups=2"
    )
    x = fg.randn(2, 4, 5, 5)
    assert m(x).shape == (2, 6, 10, 10)
    # output_size picks the output padding, within the stride's range.
    m2 = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1)
    assert m2(x, output_size=[10, 9]).shape == (2, 6, 10, 9)
    with pytest.raises(ValueError, match="requested an output size of"):
        m2(x, output_size=[12, 12])
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
    assert nn.ConvTranspose1d(2, 4, 3).weight.shape == (2, 4, 3)


def test_module_constructor_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(4, 4, 3, groups=0)
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(4, 4, 3, padding="full")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(4, 4, 3, padding="same", stride=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(4, 4, 3, padding_mode="mirror")


def test_default_init_is_uniform_in_the_fan_in_bound_and_seeded():
    fg.manual_seed(7)
    m = nn.Conv2d(3, 16, 3)
    fg.manual_seed(7)
    again = nn.Conv2d(3, 16, 3)
    assert fg.equal(m.weight, again.weight) and fg.equal(m.bias, again.bias)
    bound = 1 / math.sqrt(3 * 9)
    w = m.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    # Weight first, then bias: the same draws as one uniform_ after the other.
    fg.manual_seed(7)
    w2 = fg.empty(16, 3, 3, 3).uniform_(-bound, bound)
    b2 = fg.empty(16).uniform_(-bound, bound)
    np.testing.assert_allclose(w, w2.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(m.bias.detach().numpy(), b2.numpy(), rtol=1e-6, atol=1e-7)
    # A transposed convolution's fan-in is weight.size(1) * kernel, as in PyTorch.
    t = nn.ConvTranspose2d(16, 2, 3)
    assert np.abs(t.weight.detach().numpy()).max() <= 1 / math.sqrt(2 * 9)
    assert nn.Conv2d(2, 4, 3, dtype=fg.float64).weight.dtype == fg.float64
    assert not m.weight.grad_fn and m.weight.requires_grad


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_padding_modes_of_conv2d(mode):
    fg.manual_seed(0)
    m = nn.Conv2d(2, 3, 3, padding=1, padding_mode=mode, dtype=fg.float64)
    x = fg.randn(1, 2, 5, 4, dtype=fg.float64)
    np_mode = {"zeros": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[
        mode
    ]
    xp = np.pad(x.numpy(), ((0, 0), (0, 0), (1, 1), (1, 1)), mode=np_mode)
    want = ref_conv2d(
        xp, m.weight.detach().numpy(), m.bias.detach().numpy(), (1, 1), (0, 0), (1, 1), 1
    )
    np.testing.assert_allclose(m(x).detach().numpy(), want, rtol=1e-12, atol=1e-12)


def test_training_a_conv_net_lowers_the_loss():
    fg.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 4 * 4, 2),
    )
    x = fg.randn(16, 1, 8, 8)
    y = (x.mean((1, 2, 3)) > 0).long()
    losses = []
    for _ in range(30):
        loss = F.cross_entropy(net(x), y)
        net.zero_grad()
        loss.backward()
        with fg.no_grad():
            for p in net.parameters():
                p -= 0.5 * p.grad
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_concurrent_convolutions_from_python_threads_agree():
    # The kernels run with the GIL released and share one pool; results must not mix.
    import threading

    fg.manual_seed(0)
    x, w = fg.randn(8, 8, 16, 16), fg.randn(16, 8, 3, 3)
    want = F.conv2d(x, w, padding=1).numpy()
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(F.conv2d(x, w, padding=1).numpy())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 15
    for r in results:
        np.testing.assert_array_equal(r, want)
