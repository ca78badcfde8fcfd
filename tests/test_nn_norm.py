"""Batch, instance, layer and group norm: NumPy references in float32/float64,
float64 gradcheck + gradgradcheck (fused first-order backward and the
differentiable form under create_graph), running statistics over several steps,
eval mode, module state and PyTorch's error texts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

FEW = settings(max_examples=max(4, settings.default.max_examples // 4), deadline=None)


def arr(rng, *shape, scale=1.0, shift=0.0):
    return rng.standard_normal(shape) * scale + shift


def leaf(a, dtype=fg.float64, requires_grad=True):
    return fg.tensor(np.asarray(a), dtype=dtype, requires_grad=requires_grad)


def np_norm(x, axes, eps, w=None, b=None, wshape=None):
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    if w is not None:
        y = y * w.reshape(wshape)
    if b is not None:
        y = y + b.reshape(wshape)
    return y


def np_group_norm(x, g, eps, w=None, b=None):
    n, c = x.shape[:2]
    xs = x.reshape(n, g, -1)
    y = np_norm(xs, (2,), eps).reshape(x.shape)
    ws = (1, c) + (1,) * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(ws)
    if b is not None:
        y = y + b.reshape(ws)
    return y


# ----- forward values against NumPy ------------------------------------------------------


@pytest.mark.parametrize("dtype,tol", [(fg.float32, 2e-5), (fg.float64, 1e-12)])
@given(
    n=st.integers(2, 4),
    c=st.integers(1, 4),
    spatial=st.lists(st.integers(1, 4), max_size=2),
    affine=st.booleans(),
    seed=st.integers(0, 2**16),
)
@FEW
def test_batch_norm_training_matches_numpy(dtype, tol, n, c, spatial, affine, seed):
    rng = np.random.default_rng(seed)
    shape = (n, c, *spatial)
    x = arr(rng, *shape, scale=2.0, shift=3.0)
    w, b = (arr(rng, c), arr(rng, c)) if affine else (None, None)
    ws = (1, c) + (1,) * len(spatial)
    want = np_norm(x, tuple(i for i in range(x.ndim) if i != 1), 1e-5, w, b, ws)
    t = lambda a: None if a is None else fg.tensor(a, dtype=dtype)  # noqa: E731
    got = F.batch_norm(t(x), None, None, t(w), t(b), training=True)
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


def test_batch_norm_float32_large_mean_keeps_precision():
    # A one-pass sum-of-squares in float32 would lose every digit of the variance here.
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 3, 16)) * 1e-2 + 1e4).astype(np.float32)
    got = F.batch_norm(fg.tensor(x), None, None, training=True, eps=0.0).numpy()
    want = np_norm(x.astype(np.float64), (0, 2), 0.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=3e-3)


@pytest.mark.parametrize("dtype,tol", [(fg.float32, 2e-5), (fg.float64, 1e-12)])
@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    norm=st.lists(st.integers(1, 5), min_size=1, max_size=2),
    affine=st.booleans(),
    seed=st.integers(0, 2**16),
)
@FEW
def test_layer_norm_matches_numpy(dtype, tol, lead, norm, affine, seed):
    rng = np.random.default_rng(seed)
    x = arr(rng, *lead, *norm, scale=3.0, shift=-2.0)
    w, b = (arr(rng, *norm), arr(rng, *norm)) if affine else (None, None)
    axes = tuple(range(len(lead), x.ndim))
    want = np_norm(x, axes, 1e-5, w, b, tuple(norm))
    t = lambda a: None if a is None else fg.tensor(a, dtype=dtype)  # noqa: E731
    got = F.layer_norm(t(x), norm, t(w), t(b))
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


@given(
    n=st.integers(1, 3),
    g=st.integers(1, 3),
    cpg=st.integers(1, 3),
    spatial=st.lists(st.integers(1, 3), max_size=2),
    seed=st.integers(0, 2**16),
)
@FEW
def test_group_norm_matches_numpy(n, g, cpg, spatial, seed):
    rng = np.random.default_rng(seed)
    c = g * cpg
    x = arr(rng, n, c, *spatial)
    w, b = arr(rng, c), arr(rng, c)
    got = F.group_norm(fg.tensor(x), g, fg.tensor(w), fg.tensor(b), eps=1e-5)
    np.testing.assert_allclose(got.numpy(), np_group_norm(x, g, 1e-5, w, b), atol=1e-12)


def test_instance_norm_matches_numpy():
    rng = np.random.default_rng(1)
    x = arr(rng, 2, 3, 4, 5)
    want = np_norm(x, (2, 3), 1e-5)
    np.testing.assert_allclose(F.instance_norm(fg.tensor(x)).numpy(), want, atol=1e-12)
    m = nn.InstanceNorm2d(3)
    assert m.weight is None and m.running_mean is None
    np.testing.assert_allclose(m(fg.tensor(x, dtype=fg.float64)).numpy(), want, atol=1e-12)
    # unbatched (C, H, W)
    np.testing.assert_allclose(m(fg.tensor(x[0], dtype=fg.float64)).numpy(), want[0], atol=1e-12)


# ----- gradients -------------------------------------------------------------------------


@given(
    n=st.integers(2, 3),
    c=st.integers(1, 3),
    spatial=st.lists(st.integers(1, 3), max_size=2),
    affine=st.booleans(),
    training=st.booleans(),
    seed=st.integers(0, 2**16),
)
@FEW
def test_batch_norm_gradcheck(n, c, spatial, affine, training, seed):
    rng = np.random.default_rng(seed)
    x = leaf(arr(rng, n, c, *spatial))
    rm = fg.tensor(arr(rng, c), dtype=fg.float64)
    rv = fg.tensor(rng.uniform(0.5, 2.0, c), dtype=fg.float64)
    params = (leaf(arr(rng, c)), leaf(arr(rng, c))) if affine else ()

    def f(x, *p):
        w, b = p if p else (None, None)
        return F.batch_norm(x, rm.clone(), rv.clone(), w, b, training=training)

    assert gradcheck(f, (x, *params))
    assert gradgradcheck(f, (x, *params))


@given(
    lead=st.lists(st.integers(1, 3), min_size=1, max_size=2),
    norm=st.lists(st.integers(2, 4), min_size=1, max_size=2),
    affine=st.sampled_from(["none", "weight", "both"]),
    seed=st.integers(0, 2**16),
)
@FEW
def test_layer_norm_gradcheck(lead, norm, affine, seed):
    rng = np.random.default_rng(seed)
    x = leaf(arr(rng, *lead, *norm))
    w = leaf(arr(rng, *norm)) if affine != "none" else None
    b = leaf(arr(rng, *norm)) if affine == "both" else None
    inputs = tuple(t for t in (x, w, b) if t is not None)

    def f(*ts):
        it = iter(ts)
        xx = next(it)
        ww = next(it) if w is not None else None
        bb = next(it) if b is not None else None
        return F.layer_norm(xx, norm, ww, bb)

    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


@given(
    n=st.integers(1, 2),
    g=st.integers(1, 2),
    cpg=st.integers(1, 2),
    s=st.integers(2, 3),
    seed=st.integers(0, 2**16),
)
@FEW
def test_group_and_instance_norm_gradcheck(n, g, cpg, s, seed):
    rng = np.random.default_rng(seed)
    c = g * cpg
    x, w, b = leaf(arr(rng, n, c, s)), leaf(arr(rng, c)), leaf(arr(rng, c))
    gn = lambda x, w, b: F.group_norm(x, g, w, b)  # noqa: E731
    assert gradcheck(gn, (x, w, b))
    assert gradgradcheck(gn, (x, w, b))
    inn = lambda x, w, b: F.instance_norm(x, weight=w, bias=b)  # noqa: E731
    assert gradcheck(inn, (x, w, b))
    assert gradgradcheck(inn, (x, w, b))


def test_fused_backward_matches_graph_backward_float32():
    # The fused kernel (grad mode off in backward) and the differentiable form
    # (create_graph) are two implementations of one rule.
    rng = np.random.default_rng(3)
    for fn, wshape in (
        (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (6,)),
        (lambda x, w, b: F.layer_norm(x, (7,), w.reshape(7)[:7], b.reshape(7)[:7]), (7,)),
        (lambda x, w, b: F.group_norm(x, 3, w, b), (6,)),
    ):
        shape = (5, 6, 7)
        x = fg.tensor(arr(rng, *shape).astype(np.float32), requires_grad=True)
        w = fg.tensor(arr(rng, *wshape).astype(np.float32), requires_grad=True)
        b = fg.tensor(arr(rng, *wshape).astype(np.float32), requires_grad=True)
        gy = fg.tensor(arr(rng, *shape).astype(np.float32))
        first = fg.autograd.grad(fn(x, w, b), (x, w, b), gy)
        second = fg.autograd.grad(fn(x, w, b), (x, w, b), gy, create_graph=True)
        for a, c in zip(first, second):
            np.testing.assert_allclose(a.numpy(), c.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_node_names():
    x = fg.randn(2, 3, 4, requires_grad=True)
    bn = F.batch_norm(x, None, None, training=True)
    assert bn.grad_fn.name() == "NativeBatchNormBackward0"
    assert F.layer_norm(x, (4,)).grad_fn.name() == "NativeLayerNormBackward0"
    assert F.group_norm(x, 3).grad_fn.name() == "NativeGroupNormBackward0"


def test_grad_only_for_weight():
    rng = np.random.default_rng(5)
    x = fg.tensor(arr(rng, 4, 3))
    w = fg.tensor(arr(rng, 3), requires_grad=True)
    y = F.layer_norm(x, (3,), w)
    (y * y).sum().backward()
    xn = np_norm(x.numpy(), (1,), 1e-5)
    np.testing.assert_allclose(w.grad.numpy(), (2 * xn * xn * w.detach().numpy()).sum(0), rtol=1e-5)


# ----- running statistics and eval mode ------------------------------------------------------


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
def test_running_stats_over_steps(momentum):
    rng = np.random.default_rng(7)
    m = nn.BatchNorm1d(3, momentum=momentum, dtype=fg.float64)
    mean, var = np.zeros(3), np.ones(3)
    for step in range(1, 5):
        x = arr(rng, 6, 3, 2, scale=step, shift=step)
        m(fg.tensor(x, dtype=fg.float64))
        factor = 1.0 / step if momentum is None else momentum
        bm = x.mean(axis=(0, 2))
        bv = x.var(axis=(0, 2), ddof=1)
        mean = (1 - factor) * mean + factor * bm
        var = (1 - factor) * var + factor * bv
        np.testing.assert_allclose(m.running_mean.numpy(), mean, rtol=1e-12)
        np.testing.assert_allclose(m.running_var.numpy(), var, rtol=1e-12)
        assert int(m.num_batches_tracked) == step
    m.eval()
    x = arr(rng, 4, 3, 2)
    y = m(fg.tensor(x, dtype=fg.float64)).detach().numpy()
    want = (x - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-12)
    # eval leaves the statistics alone
    np.testing.assert_allclose(m.running_mean.numpy(), mean, rtol=1e-12)
    assert int(m.num_batches_tracked) == 4


def test_running_stats_version_and_identity():
    m = nn.BatchNorm2d(2)
    rm = m.running_mean
    v = rm._version
    m(fg.randn(3, 2, 2, 2))
    assert m.running_mean is rm and rm._version > v


def test_no_running_stats():
    m = nn.BatchNorm2d(2, track_running_stats=False)
    assert m.running_mean is None and m.num_batches_tracked is None
    x = fg.randn(3, 2, 2, 2)
    m.eval()  # without running statistics, eval still uses the batch's
    want = np_norm(x.numpy(), (0, 2, 3), 1e-5)
    np.testing.assert_allclose(m(x).detach().numpy(), want, atol=1e-6)


def test_instance_norm_running_stats_average_over_batch():
    rng = np.random.default_rng(2)
    m = nn.InstanceNorm1d(2, track_running_stats=True, dtype=fg.float64)
    x = arr(rng, 3, 2, 5)
    m(fg.tensor(x, dtype=fg.float64))
    per = x.mean(axis=2)  # (n, c)
    np.testing.assert_allclose(m.running_mean.numpy(), 0.1 * per.mean(0), rtol=1e-12)
    pv = x.var(axis=2, ddof=1)
    np.testing.assert_allclose(m.running_var.numpy(), 0.9 + 0.1 * pv.mean(0), rtol=1e-12)


def test_module_state():
    m = nn.BatchNorm2d(4)
    assert set(m._buffers) == {"running_mean", "running_var", "num_batches_tracked"}
    assert m.num_batches_tracked.dtype == fg.int64
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.ones(4, np.float32))
    m2 = nn.BatchNorm1d(4, affine=False)
    assert m2.weight is None and dict(m2._parameters) == {"weight": None, "bias": None}
    ln = nn.LayerNorm((2, 3))
    assert tuple(ln.weight.shape) == (2, 3) and ln.normalized_shape == (2, 3)
    assert nn.LayerNorm(3, bias=False).bias is None
    assert "eps=1e-05" in m.extra_repr()


def test_module_training_updates_only_in_train_mode():
    m = nn.BatchNorm1d(2)
    m.eval()
    m(fg.randn(4, 2))
    assert int(m.num_batches_tracked) == 0
    np.testing.assert_array_equal(m.running_mean.numpy(), np.zeros(2, np.float32))


# ----- errors ------------------------------------------------------------------------------


def test_errors():
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(4)(fg.randn(2, 4, 3, 3))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(4)(fg.randn(2, 4, 3))
    with pytest.raises(
        ValueError,
        match=r"Expected more than 1 value per channel when training, got input size \[1, 4\]",
    ):
        nn.BatchNorm1d(4)(fg.randn(1, 4))
    nn.BatchNorm1d(4).eval()(fg.randn(1, 4))  # fine in eval
    with pytest.raises(RuntimeError, match="running_mean should contain 4 elements not 3"):
        F.batch_norm(fg.randn(2, 4), fg.zeros(3), fg.ones(3), training=True)
    with pytest.raises(ValueError, match=r"num_channels \(4\) must be divisible by num_groups \(3\)"):
        nn.GroupNorm(3, 4)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(fg.randn(2, 4, 3), 3)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input"):
        F.layer_norm(fg.randn(2, 4), (5,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape"):
        F.layer_norm(fg.randn(2, 4), (4,), fg.ones(3))
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.layer_norm(fg.tensor([[1, 2]]), (2,))
    with pytest.raises(RuntimeError, match="expected scalar type"):
        F.layer_norm(fg.randn(2, 4), (4,), fg.ones(4, dtype=fg.float64))
    with pytest.raises(ValueError, match="match num_features"):
        nn.InstanceNorm2d(3, affine=True)(fg.randn(2, 4, 3, 3))


def test_bad_input_leaves_running_stats_unchanged():
    m = nn.BatchNorm1d(3)
    before = m.running_mean.numpy().copy()
    with pytest.raises(ValueError):
        m(fg.randn(2, 3, 3, 3))
    with pytest.raises(RuntimeError):
        F.batch_norm(fg.randn(4, 3), m.running_mean, m.running_var, fg.ones(2), training=True)
    np.testing.assert_array_equal(m.running_mean.numpy(), before)


@pytest.mark.parametrize("spatial", [(), (3,), (6, 7), (40,)])
def test_batch_norm_both_layouts(spatial):
    # Small spatial sizes walk rows of [N, C * S]; larger ones go block by
    # block: both layouts against NumPy, first and second order, and with
    # float32 data whose mean dwarfs its spread.
    rng = np.random.default_rng(11)
    shape = (3, 2, *spatial)
    x, w, b = leaf(arr(rng, *shape)), leaf(arr(rng, 2)), leaf(arr(rng, 2))
    ws = (1, 2) + (1,) * len(spatial)
    axes = tuple(i for i in range(len(shape)) if i != 1)
    want = np_norm(x.detach().numpy(), axes, 1e-5, w.detach().numpy(), b.detach().numpy(), ws)
    f = lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)  # noqa: E731
    np.testing.assert_allclose(f(x, w, b).detach().numpy(), want, atol=1e-12)
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))
    big = (arr(rng, 8, 3, *spatial) * 1e-2 + 1e4).astype(np.float32)
    got = F.batch_norm(fg.tensor(big), None, None, training=True, eps=0.0).numpy()
    ax = tuple(i for i in range(big.ndim) if i != 1)
    np.testing.assert_allclose(got, np_norm(big.astype(np.float64), ax, 0.0), atol=3e-3)


@pytest.mark.parametrize("which", ["weight", "bias"])
@pytest.mark.parametrize("kind", ["batch", "group", "layer"])
def test_one_affine_parameter(which, kind):
    # Only one of weight/bias given: the node's inputs and gradients line up.
    rng = np.random.default_rng(4)
    x = leaf(arr(rng, 3, 4, 5))
    p = leaf(arr(rng, 5 if kind == "layer" else 4))

    def f(x, p):
        kw = {which: p}
        if kind == "batch":
            return F.batch_norm(x, None, None, training=True, **kw)
        if kind == "group":
            return F.group_norm(x, 2, **kw)
        return F.layer_norm(x, (5,), **kw)

    assert gradcheck(f, (x, p))
    assert gradgradcheck(f, (x, p))


def test_layer_norm_float32_large_mean_keeps_precision():
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((6, 64)) * 1e-2 + 1e4).astype(np.float32)
    got = F.layer_norm(fg.tensor(x), (64,), eps=0.0).numpy()
    want = np_norm(x.astype(np.float64), (1,), 0.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=3e-3)
