"""nn.functional activations and losses, and the matching modules."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd import nn
from helpers import FEW, check_grads, close32, leaf, op_shapes, values


def np_log_softmax(a, axis):
    if a.size == 0:
        return a
    m = np.max(a, axis=axis, keepdims=True)
    return a - m - np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True))


def np_softplus(a, beta=1.0, threshold=20.0):
    z = beta * a
    return np.where(z > threshold, a, np.log1p(np.exp(-np.abs(z))) / beta + np.maximum(z, 0) / beta)


ERF = np.vectorize(math.erf, otypes=[np.float64])

ACTIVATIONS = [
    ("relu", F.relu, lambda a: np.maximum(a, 0), [0.0]),
    ("leaky_relu", lambda t: F.leaky_relu(t, 0.1), lambda a: np.where(a > 0, a, 0.1 * a), [0.0]),
    ("elu", F.elu, lambda a: np.where(a > 0, a, np.expm1(a)), [0.0]),
    ("gelu", F.gelu, lambda a: 0.5 * a * (1 + ERF(a / np.sqrt(2))), None),
    ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh"),
     lambda a: 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a**3))), None),
    ("silu", F.silu, lambda a: a / (1 + np.exp(-a)), None),
    ("softplus", F.softplus, np_softplus, None),
    ("softplus_beta", lambda t: F.softplus(t, beta=2.0, threshold=3.0),
     lambda a: np_softplus(a, 2.0, 3.0), [1.5]),
    ("sigmoid", F.sigmoid, lambda a: 1 / (1 + np.exp(-a)), None),
    ("tanh", F.tanh, np.tanh, None),
]


@pytest.mark.parametrize("name,f,npf,kinks", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
@FEW
@given(data=st.data())
def test_activations(name, f, npf, kinks, data):
    x = data.draw(values(data.draw(op_shapes()), -4, 4, away_from=kinks))
    check_grads(f, x)
    close32(f, lambda a: npf(a.astype(np.float64)).astype(np.float32), x, rtol=1e-5, atol=1e-6)


def test_activations_at_kinks_follow_pytorch():
    x = fg.tensor([0.0], requires_grad=True)
    (g,) = fg.autograd.grad(F.leaky_relu(x, 0.2).sum(), x)
    assert g.tolist() == [pytest.approx(0.2)]
    big = fg.tensor([100.0, -100.0])
    np.testing.assert_allclose(F.softplus(big).numpy(), [100.0, 0.0], atol=1e-30)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@FEW
@given(data=st.data())
def test_softmax_family(name, data):
    shape = data.draw(op_shapes(min_dims=1))
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = data.draw(values(shape, -5, 5))
    f = lambda t: getattr(F, name)(t, dim=d)  # noqa: E731
    check_grads(f, x)
    npf = (lambda a: np.exp(np_log_softmax(a, d))) if name == "softmax" else (lambda a: np_log_softmax(a, d))
    close32(f, npf, x, rtol=1e-5, atol=1e-6)
    close32(lambda t: getattr(t, name)(d), npf, x, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,d", [((600, 300), 1), ((600, 300), 0), ((3, 200, 257), 1), ((70000,), 0)])
def test_softmax_family_on_large_tensors(shape, d):
    # Large enough to split across the thread pool, with rows wider than one
    # tile of columns; float64 against NumPy, gradients against the formula.
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape) * 4
    g = rng.standard_normal(shape)
    want = np_log_softmax(x, d)
    for name, ref in [("softmax", np.exp(want)), ("log_softmax", want)]:
        t = fg.tensor(x, requires_grad=True)
        y = getattr(F, name)(t, d)
        np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-12, atol=1e-15)
        y.backward(fg.tensor(g))
        if name == "softmax":
            grad = ref * (g - (g * ref).sum(d, keepdims=True))
        else:
            grad = g - np.exp(ref) * g.sum(d, keepdims=True)
        np.testing.assert_allclose(t.grad.numpy(), grad, rtol=1e-10, atol=1e-12)
        # Against the float64 result for the float32-rounded input; a float32
        # sum over 600 terms is good to a few 1e-6 (PyTorch's is too).
        x32 = x.astype(np.float32)
        ref32 = np_log_softmax(x32.astype(np.float64), d)
        ref32 = np.exp(ref32) if name == "softmax" else ref32
        y32 = getattr(F, name)(fg.tensor(x32), d).numpy()
        np.testing.assert_allclose(y32, ref32, rtol=1e-5, atol=1e-5)


def test_softmax_family_propagates_nan_and_infinity_like_pytorch():
    # PyTorch 2.15 subtracts the row maximum whatever it is: a row whose maximum
    # is inf is all NaN (inf - inf), softmax([inf, 1, 2]) included.
    x = fg.tensor([[float("inf"), 1.0, 2.0], [float("-inf"), 0.0, 0.0], [float("nan"), 0.0, 1.0]])
    y = F.softmax(x, 1).numpy()
    assert np.isnan(y[0]).all()
    assert np.isnan(F.log_softmax(x, 1).numpy()[0]).all()
    np.testing.assert_array_equal(y[1], [0.0, 0.5, 0.5])
    assert np.isnan(y[2]).all()
    assert np.isnan(F.log_softmax(x, 1).numpy()[2]).all()
    assert np.isnan(F.softmax(fg.full((2, 3), float("-inf")), 1).numpy()).all()


def test_amax_of_large_rows_propagates_nan():
    x = np.random.default_rng(1).standard_normal((40, 5000)).astype(np.float32)
    x[7, 4321] = np.nan
    got = fg.tensor(x).amax(1).numpy()
    assert np.isnan(got[7])
    np.testing.assert_array_equal(np.delete(got, 7), np.delete(x.max(1), 7))
    np.testing.assert_array_equal(fg.tensor(x).amin(1).numpy()[8:], x.min(1)[8:])
    ints = np.random.default_rng(2).integers(-10**12, 10**12, (3, 1000))
    np.testing.assert_array_equal(fg.tensor(ints).amax(1).numpy(), ints.max(1))
    np.testing.assert_array_equal(fg.tensor(ints > 0).amin(1).numpy(), (ints > 0).min(1))


def test_softmax_is_stable():
    x = fg.tensor([[1000.0, 0.0, -1000.0]])
    np.testing.assert_allclose(F.softmax(x, 1).numpy(), [[1, 0, 0]], atol=1e-30)
    assert np.isfinite(F.log_softmax(x, 1).numpy()).all()


@FEW
@given(data=st.data())
def test_dropout_grads_and_values(data):
    shape = data.draw(op_shapes())
    p = data.draw(st.sampled_from([0.0, 0.25, 0.5, 0.9]))
    x = data.draw(values(shape, 0.5, 2))  # non-zero, so a kept element is never 0
    seed = data.draw(st.integers(0, 2**31 - 1))

    def f(t):
        fg.manual_seed(seed)  # the same mask on every evaluation
        return F.dropout(t, p, training=True)

    check_grads(f, x)
    y = f(fg.tensor(x.astype(np.float32))).numpy()
    kept = y != 0
    np.testing.assert_allclose(y, np.where(kept, x.astype(np.float32) / np.float32(1 - p), 0),
                               rtol=1e-6)
    # float64 keeps the same mask for the same seed
    np.testing.assert_array_equal(f(leaf(x, False)).numpy() != 0, kept)
    if p == 0.0:
        assert kept.all()


def test_dropout_honours_training():
    x = fg.ones(1000)
    y = F.dropout(x, 0.3, training=True)
    kept = (y.numpy() != 0).mean()
    assert 0.6 < kept < 0.8
    np.testing.assert_allclose(y.numpy()[y.numpy() != 0], 1 / 0.7, rtol=1e-6)
    assert F.dropout(x, 0.3, training=False) is x
    m = nn.Dropout(0.5)
    m.eval()
    assert m(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.dropout(x, 1.5)


@FEW
@given(data=st.data())
def test_linear(data):
    n, i, o = (data.draw(st.integers(0, 3)) for _ in range(3))
    lead = tuple(data.draw(st.lists(st.integers(0, 2), max_size=2)))
    x, w, b = data.draw(values((*lead, n, i))), data.draw(values((o, i))), data.draw(values((o,)))
    check_grads(F.linear, x, w, b)
    check_grads(lambda p, q: F.linear(p, q), x, w)
    close32(F.linear, lambda p, q, r: p @ q.T + r, x, w, b, atol=1e-5)
    # A bias that broadcasts, and a 1-D weight (a dot product over the last dim).
    b0 = data.draw(values(()))
    check_grads(F.linear, x, w, b0)
    v = data.draw(values((i,)))
    check_grads(lambda p, q: F.linear(p, q), x, v)
    close32(lambda p, q: F.linear(p, q), lambda p, q: p @ q, x, v, atol=1e-5)


@FEW
@given(data=st.data())
def test_linear_routes(data):
    # PyTorch's routes: a matrix input with a bias is one addmm; a contiguous
    # input of other rank with a bias that is one-dimensional once squeezed is
    # flattened for addmm; anything else is matmul and an in-place add.
    rank = data.draw(st.integers(1, 4))
    i, o = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    lead = tuple(data.draw(st.integers(0, 2)) for _ in range(rank - 1))
    x, w = data.draw(values((*lead, i))), data.draw(values((o, i)))
    bias_shape = data.draw(st.sampled_from([(o,), (), (1, o), (1, 1, o)]))
    if rank == 2 and data.draw(st.booleans()):
        bias_shape = (lead[0], o)  # a full matrix of biases (addmm broadcasts it)
    b = data.draw(values(bias_shape))
    transposed = rank >= 2 and data.draw(st.booleans())
    # Column-major strides only make a difference with some elements and
    # both of the last two sizes above 1.
    contiguous = not transposed or 0 in lead or lead[-1] == 1 or i == 1
    one_dim_bias = len(bias_shape) == 1 or sum(s != 1 for s in bias_shape) == 1
    fused = rank == 2 or (one_dim_bias and contiguous)
    want = np.matmul(x, w.T) + b
    if fused:
        expected_name = "AddmmBackward0" if rank == 2 else "UnsafeViewBackward0"
        # addmm broadcasts the bias to the matrix of results.
        error = "the number of sizes provided" if len(bias_shape) > 2 else None
        want = want.reshape(*lead, o)
    else:
        expected_name = "AddBackward0"
        error = "doesn't match the broadcast shape" if want.shape != (*lead, o) else None

    def f(p, q, r):
        if transposed:
            p = p.mT.contiguous().mT  # same values, column-major strides
        return F.linear(p, q, r)

    if error is not None:
        with pytest.raises(RuntimeError, match=error):
            f(leaf(x), leaf(w), leaf(b))
        return
    out = f(leaf(x), leaf(w), leaf(b))
    assert out.grad_fn.name() == expected_name
    np.testing.assert_allclose(out.detach().numpy(), want, atol=1e-12)
    check_grads(f, x, w, b)


def test_linear_errors():
    x, w = fg.ones(2, 3), fg.ones(5, 3)
    with pytest.raises(RuntimeError, match=re.escape("addmm: mat1 and mat2 shapes cannot be multiplied (2x4 and 3x5)")):
        F.linear(fg.ones(2, 4), w, fg.ones(5))
    with pytest.raises(RuntimeError, match=re.escape("addmm: mat1 and mat2 shapes cannot be multiplied (8x4 and 3x5)")):
        F.linear(fg.ones(4, 2, 4), w, fg.ones(5))
    with pytest.raises(RuntimeError, match=re.escape("addmm: mat2 must be a matrix, got 1-D tensor")):
        F.linear(x, fg.ones(3), fg.ones(1))
    with pytest.raises(RuntimeError, match=re.escape("both arguments to linear need to be at least 1D, but they are 0D and 2D")):
        F.linear(fg.ones(()), w, fg.ones(5))
    with pytest.raises(RuntimeError, match=re.escape("self and mat2 must have the same dtype, but got Double and Float")):
        F.linear(fg.ones(2, 3, dtype=fg.float64), w, fg.ones(5, dtype=fg.float64))
    with pytest.raises(RuntimeError, match=re.escape("output with shape [4, 2, 5] doesn't match the broadcast shape [1, 4, 2, 5]")):
        F.linear(fg.ones(4, 2, 3), w, fg.ones(1, 4, 2, 5))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@FEW
@given(data=st.data())
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_regression_losses(reduction, data):
    shape = data.draw(op_shapes())
    x, y = data.draw(values(shape)), data.draw(values(shape))
    d = x - y
    cases = [
        (F.mse_loss, d**2),
        (F.l1_loss, np.abs(d)),
        (lambda p, q, reduction: F.smooth_l1_loss(p, q, reduction=reduction, beta=0.5),
         np.where(np.abs(d) < 0.5, 0.5 * d**2 / 0.5, np.abs(d) - 0.25)),
        (lambda p, q, reduction: F.huber_loss(p, q, reduction=reduction, delta=0.5),
         np.where(np.abs(d) < 0.5, 0.5 * d**2, 0.5 * (np.abs(d) - 0.25))),
    ]
    red = {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction]
    for f, want in cases:
        if np.any(np.abs(np.abs(d) - 0.5) < 0.05) or np.any(np.abs(d) < 0.05):
            continue
        check_grads(lambda p, q, f=f: f(p, q, reduction=reduction), x, y)
        got = f(leaf(x, False), leaf(y, False), reduction=reduction)
        np.testing.assert_allclose(got.numpy(), red(want), rtol=1e-10)
        close32(lambda p, q, f=f: f(p, q, reduction=reduction),
                lambda p, q, w=want: np.asarray(red(w), np.float32), x, y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@FEW
@given(data=st.data())
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_binary_cross_entropy(reduction, data):
    shape = data.draw(op_shapes())
    p = data.draw(values(shape, 0.05, 0.95))
    y = data.draw(values(shape, 0, 1))
    w = data.draw(values(shape, 0.5, 2))
    red = {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction]
    check_grads(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction), p, y)
    want = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    got = F.binary_cross_entropy(leaf(p, False), leaf(y, False), reduction=reduction)
    np.testing.assert_allclose(got.numpy(), red(want), rtol=1e-10)
    close32(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction),
            lambda a, b: np.asarray(red(want), np.float32), p, y, rtol=1e-5, atol=1e-6)
    check_grads(lambda a, b, c: F.binary_cross_entropy(a, b, weight=c, reduction=reduction), p, y, w)
    z = data.draw(values(shape, -5, 5))
    check_grads(lambda a, b, c: F.binary_cross_entropy_with_logits(a, b, c, reduction=reduction), z, y, w)
    check_grads(lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=leaf(w, False), reduction=reduction), z, y)
    sig = 1 / (1 + np.exp(-z))
    want = -(y * np.log(sig) + (1 - y) * np.log(1 - sig))
    got = F.binary_cross_entropy_with_logits(leaf(z, False), leaf(y, False), reduction=reduction)
    np.testing.assert_allclose(got.numpy(), red(want), rtol=1e-8)
    close32(lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction),
            lambda a, b: np.asarray(red(want), np.float32), z, y, rtol=1e-5, atol=1e-6)


def test_bce_extremes_are_finite():
    p = fg.tensor([0.0, 1.0])
    y = fg.tensor([1.0, 0.0])
    assert F.binary_cross_entropy(p, y).item() == pytest.approx(100.0)
    z = fg.tensor([-1000.0, 1000.0])
    assert F.binary_cross_entropy_with_logits(z, y).item() == pytest.approx(1000.0)
    # The gradient at 0 and 1 is PyTorch's: (x - y) / x (1 - x), the
    # denominator floored at 1e-12 (a float constant there).
    p = fg.tensor([0.0, 1.0], dtype=fg.float64, requires_grad=True)
    F.binary_cross_entropy(p, fg.tensor([1.0, 0.0], dtype=fg.float64), reduction="sum").backward()
    floor = float(np.float32(1e-12))
    assert p.grad.tolist() == [pytest.approx(-1 / floor), pytest.approx(1 / floor)]


def np_cross_entropy(x, t, w, ignore, reduction, eps):
    """Reference cross entropy over [N, C, *] inputs with class-index targets."""
    c = x.shape[1]
    logp = np_log_softmax(x, 1)
    lp = np.moveaxis(logp, 1, -1).reshape(-1, c)
    tt = t.reshape(-1)
    wv = np.ones(c) if w is None else w
    keep = tt != ignore
    safe = np.where(keep, tt, 0)
    wt = wv[safe] * keep
    nll = -lp[np.arange(len(tt)), safe] * wt
    smooth = -(lp * wv).sum(1) * keep
    if reduction == "none":
        nll_r, sm_r = nll.reshape(t.shape), smooth.reshape(t.shape)
    elif reduction == "sum":
        nll_r, sm_r = nll.sum(), smooth.sum()
    else:
        nll_r, sm_r = nll.sum() / wt.sum(), smooth.sum() / wt.sum()
    return (1 - eps) * nll_r + eps / c * sm_r


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@FEW
@given(data=st.data())
def test_cross_entropy_and_nll(reduction, data):
    n = data.draw(st.integers(0, 3))
    c = data.draw(st.integers(1, 4))
    extra = data.draw(st.lists(st.integers(0, 2), max_size=1))
    x = data.draw(values((n, c, *extra), -3, 3))
    count = n * int(np.prod(extra))
    labels = data.draw(st.lists(st.integers(0, c - 1), min_size=count, max_size=count))
    t = np.array(labels, dtype=np.int64).reshape((n, *extra))
    ignore = data.draw(st.sampled_from([-100, 0]))
    assume_some = (t != ignore).any()
    eps = data.draw(st.sampled_from([0.0, 0.1]))
    w = data.draw(st.one_of(st.none(), values((c,), 0.5, 2)))
    tt = fg.tensor(t.astype(np.int64))
    wt = None if w is None else leaf(w, False)

    def f(a):
        return F.cross_entropy(a, tt, wt, ignore_index=ignore, reduction=reduction, label_smoothing=eps)

    if assume_some or reduction != "mean":
        check_grads(f, x)
        np.testing.assert_allclose(f(leaf(x, False)).numpy(), np_cross_entropy(x, t, w, ignore, reduction, eps), rtol=1e-8)
        w32 = None if w is None else fg.tensor(w.astype(np.float32))
        close32(lambda a: F.cross_entropy(a, tt, w32, ignore_index=ignore, reduction=reduction,
                                          label_smoothing=eps),
                lambda a: np.asarray(np_cross_entropy(x, t, w, ignore, reduction, eps), np.float32),
                x, rtol=1e-5, atol=1e-6)

        def g(a):
            return F.nll_loss(F.log_softmax(a, 1), tt, wt, ignore_index=ignore, reduction=reduction)

        check_grads(g, x)
        np.testing.assert_allclose(g(leaf(x, False)).numpy(), np_cross_entropy(x, t, w, ignore, reduction, 0.0), rtol=1e-8)
        close32(lambda a: F.nll_loss(F.log_softmax(a, 1), tt, w32, ignore_index=ignore,
                                     reduction=reduction),
                lambda a: np.asarray(np_cross_entropy(x, t, w, ignore, reduction, 0.0), np.float32),
                x, rtol=1e-5, atol=1e-6)


def test_cross_entropy_unbatched_and_probabilities():
    x = fg.tensor([1.0, 2.0, 0.5], dtype=fg.float64, requires_grad=True)
    t = fg.tensor(1)
    want = -np_log_softmax(np.array([1.0, 2.0, 0.5]), 0)[1]
    assert F.cross_entropy(x, t).item() == pytest.approx(want)
    probs = fg.tensor([[0.2, 0.8, 0.0]], dtype=fg.float64)
    xb = fg.tensor([[1.0, 2.0, 0.5]], dtype=fg.float64)
    want = -(np.array([0.2, 0.8, 0.0]) * np_log_softmax(np.array([1.0, 2.0, 0.5]), 0)).sum()
    assert F.cross_entropy(xb, probs).item() == pytest.approx(want)
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        F.cross_entropy(fg.ones(2, 3), fg.tensor([0, 5]))
    with pytest.raises(ValueError, match="Expected input batch_size"):
        F.cross_entropy(fg.ones(2, 3), fg.tensor([0, 1, 2]))


def np_nll(x, t, w, ignore, reduction):
    """Reference nll_loss of [C], [N, C] or [N, C, *] log-probabilities."""
    if x.ndim == 1:
        out = np_nll(x[None], np.asarray(t)[None], w, ignore, reduction)
        return out[0] if reduction == "none" else out
    c = x.shape[1]
    lp = np.moveaxis(x, 1, -1).reshape(-1, c)
    tt = t.reshape(-1)
    keep = tt != ignore
    safe = np.where(keep, tt, 0)
    wt = (np.ones(c) if w is None else w)[safe] * keep
    nll = np.where(keep, -lp[np.arange(len(tt)), safe] * wt, 0.0)
    if reduction == "none":
        return nll.reshape(t.shape)
    return nll.sum() if reduction == "sum" else nll.sum() / wt.sum()


NLL_SHAPES = [(4,), (3, 4), (2, 4, 3), (2, 4, 2, 3), (2, 4, 1, 2, 2)]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", NLL_SHAPES, ids=[f"{len(s)}d" for s in NLL_SHAPES])
def test_nll_loss_every_input_rank(shape, reduction):
    # [C] and [N, C] are PyTorch's NllLoss node, [N, C, H, W] its NllLoss2d, and
    # other ranks NllLoss2d on a view; ignored targets in each.
    rng = np.random.default_rng(len(shape))
    c = shape[0] if len(shape) == 1 else shape[1]
    x = rng.uniform(-3, 0, shape)
    w = rng.uniform(0.5, 2, c)
    for weight, ignore in [(None, -100), (w, -100), (w, 2), (None, 1)]:
        t = rng.integers(0, c, () if len(shape) == 1 else (shape[0], *shape[2:]))
        if t.ndim:
            t.flat[0], t.flat[-1] = ignore, 3
        elif t == ignore and reduction == "mean":
            continue  # nothing left to average (tested below)
        tt = fg.tensor(t)
        wt = None if weight is None else leaf(weight, False)

        def f(a, tt=tt, wt=wt, ignore=ignore):
            return F.nll_loss(a, tt, wt, ignore_index=ignore, reduction=reduction)

        check_grads(f, x)
        want = np_nll(x, t, weight, ignore, reduction)
        np.testing.assert_allclose(f(leaf(x, False)).numpy(), want, rtol=1e-12)
        w32 = None if weight is None else fg.tensor(weight.astype(np.float32))
        close32(lambda a, tt=tt, w32=w32, ignore=ignore: F.nll_loss(a, tt, w32, ignore_index=ignore,
                                                                    reduction=reduction),
                lambda a, want=want: np.asarray(want, np.float32), x)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_weights_that_require_grad(reduction):
    # PyTorch refuses to differentiate loss weights; ferrograd differentiates
    # the composite form of the loss, with the same values as the one node.
    rng = np.random.default_rng(5)
    x, w = rng.uniform(-2, 2, (3, 4)), rng.uniform(0.5, 2, 4)
    t = fg.tensor([0, 3, 1])
    y = rng.uniform(0, 1, (3, 4))
    cases = [
        lambda a, b: F.nll_loss(F.log_softmax(a, 1), t, b, ignore_index=1, reduction=reduction),
        lambda a, b: F.cross_entropy(a, t, b, reduction=reduction, label_smoothing=0.1),
        lambda a, b: F.binary_cross_entropy(fg.sigmoid(a), leaf(y, False), b.expand(3, 4), reduction=reduction),
        lambda a, b: F.binary_cross_entropy_with_logits(a, leaf(y, False), b, reduction=reduction),
        lambda a, b: F.binary_cross_entropy_with_logits(a, leaf(y, False), pos_weight=b, reduction=reduction),
    ]
    for f in cases:
        check_grads(f, x, w)
        fused_x, comp_x = leaf(x), leaf(x)
        fused, comp = f(fused_x, leaf(w, False)), f(comp_x, leaf(w))
        np.testing.assert_allclose(comp.detach().numpy(), fused.detach().numpy(), rtol=1e-12)
        fused.sum().backward()
        comp.sum().backward()
        np.testing.assert_allclose(comp_x.grad.numpy(), fused_x.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_loss_edge_cases_follow_pytorch():
    inf = float("inf")
    # Ignored targets contribute nothing, even where the log-probability is -inf.
    x = fg.tensor([[-inf, 0.0, 0.0], [0.0, -1.0, -2.0]], requires_grad=True)
    loss = F.nll_loss(x, fg.tensor([-100, 1]))
    assert loss.item() == 1.0
    loss.backward()
    assert x.grad.tolist() == [[0.0, 0.0, 0.0], [0.0, -1.0, 0.0]]
    # Everything ignored: 0 / 0 for the mean, and no gradient anywhere.
    x = fg.tensor([[0.5, 0.0, 1.0]], requires_grad=True)
    loss = F.nll_loss(x, fg.tensor([-100]))
    assert math.isnan(loss.item())
    loss.backward()
    assert x.grad.tolist() == [[0.0, 0.0, 0.0]]
    # A mean over an empty batch is nan for probability targets too.
    assert math.isnan(F.cross_entropy(fg.zeros(0, 3), fg.zeros(0, 3)).item())
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.nll_loss(fg.zeros(2, 3, dtype=fg.int64), fg.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.nll_loss(fg.zeros(2, 3), fg.tensor([0, 1]), fg.ones(3, dtype=fg.float64))


def test_nll_loss_gradient_is_a_node_of_its_own():
    # The gradient is linear in the output's gradient and constant in the
    # input: its own gradients are nll_loss of the incoming one, and zeros.
    x = fg.tensor([[0.5, 0.0, 1.0], [0.0, -1.0, -2.0]], dtype=fg.float64, requires_grad=True)
    t = fg.tensor([2, 1])
    gout = fg.tensor([0.5, 2.0], dtype=fg.float64, requires_grad=True)
    (g,) = fg.autograd.grad(F.nll_loss(x, t, reduction="none"), x, gout, create_graph=True)
    assert g.grad_fn.name() == "NllLossBackwardBackward0"
    assert g.tolist() == [[0.0, 0.0, -0.5], [0.0, -2.0, 0.0]]
    v = fg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=fg.float64)
    gg_out, gg_x = fg.autograd.grad((g * v).sum(), [gout, x])
    assert gg_out.tolist() == [-3.0, -5.0]
    assert gg_x.tolist() == [[0.0] * 3] * 2
    # The target is saved: writing it before backward is an error, as in PyTorch.
    t = fg.tensor([2, 1])
    loss = F.nll_loss(x, t)
    t[0] = 0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_modules_train_a_tiny_classifier():
    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
    assert len(list(model.parameters())) == 4
    assert isinstance(model[0], nn.Linear) and len(model) == 3
    x = fg.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = fg.tensor([0, 1, 1, 0])
    loss_fn = nn.CrossEntropyLoss()
    first = None
    for _ in range(300):
        loss = loss_fn(model(x), y)
        first = first if first is not None else loss.item()
        model.zero_grad()
        loss.backward()
        with fg.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
    assert loss.item() < first * 0.5


@pytest.mark.parametrize(
    "module,fn",
    [
        (nn.MSELoss(), F.mse_loss),
        (nn.L1Loss(reduction="sum"), lambda a, b: F.l1_loss(a, b, reduction="sum")),
        (nn.SmoothL1Loss(beta=0.5), lambda a, b: F.smooth_l1_loss(a, b, beta=0.5)),
        (nn.HuberLoss(delta=2.0), lambda a, b: F.huber_loss(a, b, delta=2.0)),
        (nn.BCEWithLogitsLoss(), F.binary_cross_entropy_with_logits),
    ],
)
def test_loss_modules_match_functional(module, fn):
    a = fg.tensor([[0.2, -1.0], [3.0, 0.5]])
    b = fg.tensor([[0.0, 1.0], [1.0, 0.5]])
    assert module(a, b).item() == pytest.approx(fn(a, b).item())
    assert nn.BCELoss()(fg.sigmoid(a), b).item() == pytest.approx(
        F.binary_cross_entropy(fg.sigmoid(a), b).item()
    )
    logits, target = fg.tensor([[1.0, 2.0, 0.0]]), fg.tensor([2])
    assert nn.NLLLoss()(F.log_softmax(logits, 1), target).item() == pytest.approx(
        nn.CrossEntropyLoss()(logits, target).item()
    )
