"""nn.Buffer, UninitializedParameter and the lazy layers, the multi-class
margin losses, TripletMarginWithDistanceLoss, pdist, gumbel_softmax,
DataParallel and SyncBatchNorm: NumPy references, float64 gradcheck +
gradgradcheck on drawn shapes, state-dict keys, reprs and error texts."""

from __future__ import annotations

import copy
import math
import pickle

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


# ----- nn.Buffer -------------------------------------------------------------------------------------


class _WithBuffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Buffer(fg.ones(2))
        self.b = nn.Buffer(fg.zeros(3), persistent=False)
        self.plain = fg.ones(1)


def test_buffer_assignment_registers():
    m = _WithBuffers()
    assert [n for n, _ in m.named_buffers()] == ["a", "b"]
    assert list(m.state_dict()) == ["a"] and "plain" not in m._buffers
    assert isinstance(m.a, fg.Tensor) and isinstance(m.a, nn.Buffer)
    assert not isinstance(fg.ones(1), nn.Buffer) and not isinstance(m.plain, nn.Buffer)
    # A plain tensor replacing a buffer keeps its persistence; a Buffer brings its own.
    m.b = fg.ones(3)
    assert list(m.state_dict()) == ["a"]
    m.b = nn.Buffer(fg.ones(3))
    assert list(m.state_dict()) == ["a", "b"]
    m.a = nn.Buffer(fg.ones(2), persistent=False)
    assert list(m.state_dict()) == ["b"]
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        m.plain = nn.Buffer(fg.ones(1))
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'a'"):
        m.a = 3
    assert list(m.to(fg.float64).state_dict().values())[0].dtype == fg.float64


def test_buffer_detaches_and_keeps_requires_grad():
    x = fg.randn(3, requires_grad=True)
    b = nn.Buffer(x * 2)
    # Detached from the graph, but requires_grad is carried over (PyTorch's rule).
    assert b.grad_fn is None and b.requires_grad and b.is_leaf
    assert not nn.Buffer(x.detach()).requires_grad
    assert nn.Buffer().shape == (0,) and nn.Buffer().persistent


# ----- lazy layers -------------------------------------------------------------------------------------


def test_lazy_linear_materialises_like_linear():
    x = fg.randn(2, 5)
    fg.manual_seed(0)
    m = nn.LazyLinear(3)
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert (
        isinstance(m.weight, nn.UninitializedParameter)
        and repr(m.weight) == "<UninitializedParameter>"
    )
    assert m.has_uninitialized_params()
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        _ = m.weight.shape
    weight = m.weight
    opt = fg.optim.SGD(m.parameters(), lr=0.5)
    y = m(x)
    # The same object, now a Parameter of the inferred shape, initialised as Linear(5, 3).
    assert type(m) is nn.Linear and m.weight is weight and type(weight) is nn.Parameter
    assert repr(m) == "Linear(in_features=5, out_features=3, bias=True)"
    fg.manual_seed(0)
    ref = nn.Linear(5, 3)
    np.testing.assert_array_equal(m.weight.detach().numpy(), ref.weight.detach().numpy())
    np.testing.assert_array_equal(m.bias.detach().numpy(), ref.bias.detach().numpy())
    np.testing.assert_allclose(y.detach().numpy(), ref(x).detach().numpy())
    # The optimizer built before the first call updates the materialised parameters.
    before = m.weight.detach().numpy().copy()
    y.sum().backward()
    opt.step()
    np.testing.assert_allclose(
        m.weight.detach().numpy(), before - 0.5 * np.tile(x.numpy().sum(0), (3, 1)), rtol=1e-6
    )
    nb = nn.LazyLinear(2, bias=False)
    assert nb.bias is None and nb.has_uninitialized_params()
    nb(fg.randn(1, 4))
    assert type(nb) is nn.Linear and nb.bias is None and nb.weight.shape == (2, 4)


def test_lazy_state_dicts():
    lazy = nn.LazyLinear(3)
    sd = lazy.state_dict()
    assert list(sd) == ["weight", "bias"] and all(
        isinstance(v, nn.UninitializedParameter) for v in sd.values()
    )
    other = nn.LazyLinear(3)
    assert not other.load_state_dict(sd).missing_keys
    assert other.has_uninitialized_params()
    # Loading real weights materialises with the checkpoint's shapes.
    src = nn.Linear(4, 3)
    target = nn.LazyLinear(3)
    target.load_state_dict(src.state_dict())
    np.testing.assert_array_equal(target.weight.detach().numpy(), src.weight.detach().numpy())
    x = fg.randn(2, 4)
    np.testing.assert_array_equal(target(x).detach().numpy(), src(x).detach().numpy())
    assert type(target) is nn.Linear
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        nn.Linear(4, 3).load_state_dict(nn.LazyLinear(3).state_dict())
    u = copy.deepcopy(nn.UninitializedParameter())
    assert isinstance(u, nn.UninitializedParameter)
    assert isinstance(
        pickle.loads(pickle.dumps(nn.UninitializedParameter())), nn.UninitializedParameter
    )


@pytest.mark.parametrize(
    "cls,base,shape",
    [
        (nn.LazyConv1d, nn.Conv1d, (2, 3, 6)),
        (nn.LazyConv2d, nn.Conv2d, (2, 3, 5, 5)),
        (nn.LazyConv3d, nn.Conv3d, (1, 3, 3, 4, 4)),
    ],
)
def test_lazy_conv(cls, base, shape):
    x = fg.randn(*shape)
    fg.manual_seed(1)
    m = cls(4, 3, padding=1, bias=True)
    out = m(x)
    assert type(m) is base and m.in_channels == 3 and m.weight.shape[:2] == (4, 3)
    fg.manual_seed(1)
    ref = base(3, 4, 3, padding=1)
    np.testing.assert_array_equal(m.weight.detach().numpy(), ref.weight.detach().numpy())
    np.testing.assert_allclose(out.detach().numpy(), ref(x).detach().numpy(), rtol=1e-6)
    # Unbatched input and groups.
    g = cls(6, 1, groups=3)
    assert g(x[0]).shape[0] == 6 and g.weight.shape[:2] == (6, 1) and g.in_channels == 3
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        cls(4, 1, groups=2)(fg.randn(*shape))
    with pytest.raises(RuntimeError, match="input to"):
        cls(4, 1)(fg.randn(3))


# ----- multi-class margin losses ---------------------------------------------------------------


def np_multi_margin(x, y, p, margin, w):
    n, c = x.shape
    out = np.zeros(n)
    for i in range(n):
        for j in range(c):
            if j != y[i]:
                z = max(0.0, margin - x[i, y[i]] + x[i, j]) ** p
                out[i] += z * (w[y[i]] if w is not None else 1.0)
    return out / c


def np_multilabel_margin(x, t):
    n, c = x.shape
    out = np.zeros(n)
    for i in range(n):
        targets = []
        for v in t[i]:
            if v < 0:
                break
            targets.append(v)
        for j in targets:
            for k in range(c):
                if k not in targets:
                    out[i] += max(0.0, 1 - (x[i, j] - x[i, k]))
    return out / c


@given(
    n=st.integers(1, 4),
    c=st.integers(1, 4),
    p=st.sampled_from([1, 2]),
    margin=st.sampled_from([1.0, 0.3]),
    weighted=st.booleans(),
    reduction=st.sampled_from(["mean", "sum", "none"]),
    seed=st.integers(0, 2**16),
)
@FEW
def test_multi_margin_loss(n, c, p, margin, weighted, reduction, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c))
    y = rng.integers(0, c, n)
    w = rng.uniform(0.5, 2, c) if weighted else None
    per = np_multi_margin(x, y, p, margin, w)
    want = {"mean": per.mean(), "sum": per.sum(), "none": per}[reduction]
    wt = None if w is None else fg.tensor(w)
    got = F.multi_margin_loss(fg.tensor(x), fg.tensor(y), p, margin, wt, reduction=reduction)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-14)
    mod = nn.MultiMarginLoss(p, margin, wt, reduction=reduction)
    np.testing.assert_allclose(
        mod(fg.tensor(x), fg.tensor(y)).numpy(), want, rtol=1e-12, atol=1e-14
    )
    _grads(lambda t: F.multi_margin_loss(t, fg.tensor(y), p, margin, wt, reduction=reduction), x)


def test_multi_margin_loss_unbatched_and_errors():
    x = np.array([0.1, 0.2, 0.4, 0.8])
    got = F.multi_margin_loss(fg.tensor(x), fg.tensor(3), reduction="none")
    assert got.shape == ()
    np.testing.assert_allclose(got.item(), np_multi_margin(x[None], [3], 1, 1.0, None)[0])
    assert F.multi_margin_loss(fg.tensor(x), fg.tensor([3]), reduction="none").shape == (1,)
    x2 = fg.randn(2, 3)
    with pytest.raises(RuntimeError, match=r"Expected target size \[2\], but got \[3\]"):
        F.multi_margin_loss(x2, fg.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x2, fg.tensor([0, 5]))
    with pytest.raises(RuntimeError, match=r"inconsistent weight size, expected 3 but got \[2\]"):
        F.multi_margin_loss(x2, fg.tensor([0, 1]), weight=fg.ones(2))
    with pytest.raises(ValueError, match="weight must be one-dimensional"):
        F.multi_margin_loss(x2, fg.tensor([0, 1]), weight=fg.ones(3, 1))
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x2, fg.tensor([0, 1]), p=3)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="expected weight to be None or 1D tensor, got 2D"):
        nn.MultiMarginLoss(weight=fg.ones(2, 2))
    with pytest.raises(RuntimeError, match="Expected non-empty vector or matrix"):
        F.multi_margin_loss(fg.randn(2, 0), fg.tensor([0, 1]))
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.multi_margin_loss(x2, fg.tensor([0, 1]), reduction="bad")
    assert repr(nn.MultiMarginLoss()) == "MultiMarginLoss()"
    assert list(nn.MultiMarginLoss(weight=fg.ones(3)).state_dict()) == ["weight"]


@given(
    n=st.integers(1, 3),
    c=st.integers(1, 4),
    reduction=st.sampled_from(["mean", "sum", "none"]),
    seed=st.integers(0, 2**16),
)
@FEW
def test_multilabel_margin_loss(n, c, reduction, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c))
    t = np.full((n, c), -1, np.int64)
    for i in range(n):
        k = rng.integers(0, c + 1)
        t[i, :k] = rng.choice(c, k, replace=False)
        if k + 1 < c:
            t[i, k + 1 :] = rng.integers(0, c, c - k - 1)  # after the -1: ignored
    per = np_multilabel_margin(x, t)
    want = {"mean": per.mean(), "sum": per.sum(), "none": per}[reduction]
    got = F.multilabel_margin_loss(fg.tensor(x), fg.tensor(t), reduction=reduction)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-14)
    mod = nn.MultiLabelMarginLoss(reduction=reduction)
    np.testing.assert_allclose(
        mod(fg.tensor(x), fg.tensor(t)).numpy(), want, rtol=1e-12, atol=1e-14
    )
    _grads(lambda v: F.multilabel_margin_loss(v, fg.tensor(t), reduction=reduction), x)


def test_multilabel_margin_loss_cases_and_errors():
    # PyTorch's documented example: 0.85.
    x = fg.tensor([[0.1, 0.2, 0.4, 0.8]])
    y = fg.tensor([[3, 0, -1, 1]])
    np.testing.assert_allclose(nn.MultiLabelMarginLoss()(x, y).item(), 0.85, rtol=1e-6)
    got = F.multilabel_margin_loss(x[0], y[0], reduction="none")
    assert got.shape == () and abs(got.item() - 0.85) < 1e-6
    with pytest.raises(
        RuntimeError, match=r"inconsistent target size: \[2\] for input of size: \[2, 3\]"
    ):
        F.multilabel_margin_loss(fg.randn(2, 3), fg.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="argument #2 'target' is out of range"):
        F.multilabel_margin_loss(fg.randn(2, 3), fg.tensor([[0, 5, -1], [1, -1, 0]]))
    with pytest.raises(RuntimeError, match=r"but got: \[2, 3, 4\]"):
        F.multilabel_margin_loss(fg.randn(2, 3, 4), fg.zeros(2, 3, 4, dtype=fg.int64))


def test_margin_losses_count_no_hinge_at_a_nan_score():
    # PyTorch's kernels add a hinge where its argument is > 0: NaN adds nothing
    # (and passes no gradient), whichever path computes the loss.
    x = np.array([[np.nan, 0.5, 2.0], [0.1, 0.2, 0.3]])
    y = np.array([0, 2])
    want = [0.0, np_multi_margin(x[1:], y[1:], 1, 1.0, None)[0]]
    xt = fg.tensor(x, requires_grad=True)
    per = F.multi_margin_loss(xt, fg.tensor(y), reduction="none")
    np.testing.assert_allclose(per.detach().numpy(), want)
    per.sum().backward()
    assert np.isfinite(xt.grad.numpy()).all() and not xt.grad.numpy()[0].any()
    # A differentiated weight takes the composite: the same values and NaN rule.
    w = fg.ones(3, dtype=fg.float64, requires_grad=True)
    comp = F.multi_margin_loss(fg.tensor(x), fg.tensor(y), weight=w, reduction="none")
    np.testing.assert_allclose(comp.detach().numpy(), want)
    # Row 0 lists class 1: its hinge against class 0 (NaN) adds nothing, against 2 adds 2.5.
    t = np.array([[1, -1, 0], [2, 0, -1]])
    per = F.multilabel_margin_loss(fg.tensor(x), fg.tensor(t), reduction="none")
    np.testing.assert_allclose(per.numpy(), [2.5 / 3, np_multilabel_margin(x[1:], t[1:])[0]])
    xt = fg.tensor(x, requires_grad=True)
    F.multilabel_margin_loss(xt, fg.tensor(t), reduction="sum").backward()
    np.testing.assert_allclose(xt.grad.numpy()[0], [0.0, -1 / 3, 1 / 3])
    comp = F.multilabel_margin_loss(fg.tensor(x.astype(np.float16)), fg.tensor(t), reduction="none")
    np.testing.assert_allclose(comp.float().numpy(), [2.5 / 3, np_multilabel_margin(x[1:], t[1:])[0]],
                               rtol=2e-3)


@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss_native_and_composite_agree_and_float32(p):
    rng = np.random.default_rng(p)
    x = rng.standard_normal((5, 4))
    y = rng.integers(0, 4, 5)
    w = rng.uniform(0.5, 2, 4)
    for reduction in ("none", "mean", "sum"):
        native = F.multi_margin_loss(fg.tensor(x), fg.tensor(y), p, 0.7, fg.tensor(w),
                                     reduction=reduction)  # fmt: skip
        wt = fg.tensor(w, requires_grad=True)
        comp = F.multi_margin_loss(fg.tensor(x), fg.tensor(y), p, 0.7, wt, reduction=reduction)
        assert comp.requires_grad and not native.requires_grad
        np.testing.assert_allclose(native.numpy(), comp.detach().numpy(), rtol=1e-14)
        got32 = F.multi_margin_loss(fg.tensor(x.astype(np.float32)), fg.tensor(y), p, 0.7,
                                    fg.tensor(w.astype(np.float32)), reduction=reduction)
        assert got32.dtype == fg.float32
        np.testing.assert_allclose(got32.numpy(), native.numpy(), rtol=1e-5)
    # The weight's gradient (the composite's) and the scores' second order (the native rule).
    _grads(lambda v: F.multi_margin_loss(fg.tensor(x), fg.tensor(y), p, 0.7, v), w)
    _grads(lambda t: F.multi_margin_loss(t, fg.tensor(y), p, 0.7, fg.tensor(w), reduction="sum"),
           x)


def test_margin_losses_of_an_empty_batch():
    x, y = fg.zeros(0, 3), fg.zeros(0, dtype=fg.int64)
    assert F.multi_margin_loss(x, y, reduction="none").shape == (0,)
    assert F.multi_margin_loss(x, y, reduction="sum").item() == 0.0
    assert math.isnan(F.multi_margin_loss(x, y).item())
    t = fg.zeros(0, 3, dtype=fg.int64)
    assert F.multilabel_margin_loss(x, t, reduction="none").shape == (0,)
    assert F.multilabel_margin_loss(x, t, reduction="sum").item() == 0.0


# ----- TripletMarginWithDistanceLoss -------------------------------------------------------------


def _cos_dist(a, b):
    return 1.0 - F.cosine_similarity(a, b)


@given(
    n=st.integers(1, 4),
    d=st.integers(1, 4),
    swap=st.booleans(),
    custom=st.booleans(),
    reduction=st.sampled_from(["mean", "sum", "none"]),
    seed=st.integers(0, 2**16),
)
@FEW
def test_triplet_margin_with_distance_loss(n, d, swap, custom, reduction, seed):
    rng = np.random.default_rng(seed)
    a, p, ng = (rng.standard_normal((n, d)) for _ in range(3))

    def dist_np(u, v):
        if custom:
            num = (u * v).sum(1)
            return 1 - num / (
                np.maximum(np.linalg.norm(u, axis=1), 1e-8)
                * np.maximum(np.linalg.norm(v, axis=1), 1e-8)
            )
        return np.linalg.norm(u - v + 1e-6, axis=1)

    dn = dist_np(a, ng)
    if swap:
        dn = np.minimum(dn, dist_np(p, ng))
    per = np.maximum(0.0, 0.7 + dist_np(a, p) - dn)
    want = {"mean": per.mean(), "sum": per.sum(), "none": per}[reduction]
    fn = _cos_dist if custom else None
    mod = nn.TripletMarginWithDistanceLoss(
        distance_function=fn, margin=0.7, swap=swap, reduction=reduction
    )
    ts = [fg.tensor(v) for v in (a, p, ng)]
    np.testing.assert_allclose(mod(*ts).numpy(), want, rtol=1e-10, atol=1e-12)
    got = F.triplet_margin_with_distance_loss(
        *ts, distance_function=fn, margin=0.7, swap=swap, reduction=reduction
    )
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    _grads(mod, a, p, ng)


def test_triplet_with_distance_defaults_and_errors():
    m = nn.TripletMarginWithDistanceLoss()
    assert repr(m) == "TripletMarginWithDistanceLoss(\n  (distance_function): PairwiseDistance()\n)"
    assert list(m.state_dict()) == []
    x = [fg.randn(3, 4) for _ in range(3)]
    np.testing.assert_allclose(m(*x).item(), F.triplet_margin_loss(*x).item(), rtol=1e-6)
    with pytest.raises(ValueError, match="expected margin to be greater than 0, got -1 instead"):
        nn.TripletMarginWithDistanceLoss(margin=-1)
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_with_distance_loss(*x, margin=0)
    with pytest.raises(RuntimeError, match="anchor 2D, positive 1D, and negative 2D inputs"):
        F.triplet_margin_with_distance_loss(x[0], fg.randn(4), x[2])


# ----- pdist and gumbel_softmax ------------------------------------------------------------------


@given(
    n=st.integers(0, 5),
    m=st.integers(1, 4),
    p=st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf]),
    seed=st.integers(0, 2**16),
)
@FEW
def test_pdist(n, m, p, seed):
    x = np.random.default_rng(seed).standard_normal((n, m))
    want = np.array([np.linalg.norm(x[i] - x[j], ord=p) for i in range(n) for j in range(i + 1, n)])
    got = F.pdist(fg.tensor(x), p)
    assert got.shape == (n * (n - 1) // 2,)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    if n >= 2 and p != math.inf:
        _grads(lambda t: F.pdist(t, p), x)


def test_pdist_errors():
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        F.pdist(fg.randn(2, 3, 4))
    with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
        F.pdist(fg.randn(3, 2), -1)
    with pytest.raises(RuntimeError, match="pdist only supports floating-point dtypes"):
        F.pdist(fg.ones(3, 2, dtype=fg.int64))


@given(
    shape=st.sampled_from([(5,), (2, 4), (3, 2, 3)]),
    tau=st.sampled_from([1.0, 0.5]),
    seed=st.integers(0, 2**16),
)
@FEW
def test_gumbel_softmax(shape, tau, seed):
    x = np.random.default_rng(seed).standard_normal(shape)
    fg.manual_seed(seed)
    e = fg.empty(*shape, dtype=fg.float64).exponential_().numpy()
    z = (x - np.log(e)) / tau
    soft = np.exp(z - z.max(-1, keepdims=True))
    soft /= soft.sum(-1, keepdims=True)
    fg.manual_seed(seed)
    np.testing.assert_allclose(F.gumbel_softmax(fg.tensor(x), tau).numpy(), soft, rtol=1e-12)
    fg.manual_seed(seed)
    hard = F.gumbel_softmax(fg.tensor(x), tau, hard=True).numpy()
    onehot = (np.arange(shape[-1]) == soft.argmax(-1)[..., None]).astype(float)
    np.testing.assert_allclose(hard, onehot, atol=1e-12)

    def seeded(t, h=False):
        fg.manual_seed(seed)
        return F.gumbel_softmax(t, tau, hard=h)

    _grads(seeded, x)
    # Straight-through: the hard sample's gradient is the soft sample's.
    w = fg.tensor(np.random.default_rng(seed + 1).standard_normal(shape))
    a = fg.tensor(x, requires_grad=True)
    (seeded(a, True) * w).sum().backward()
    b = fg.tensor(x, requires_grad=True)
    (seeded(b) * w).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_gumbel_softmax_statistics_and_eps_warning():
    logits = fg.tensor([0.0, math.log(3.0)])
    fg.manual_seed(0)
    draws = F.gumbel_softmax(logits.expand(4000, 2), hard=True).numpy()
    assert abs(draws[:, 1].mean() - 0.75) < 0.03  # P(argmax = 1) = 3 / 4
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(fg.randn(3), eps=1e-3)


# ----- DataParallel and SyncBatchNorm -------------------------------------------------------------


def test_data_parallel_calls_the_module():
    inner = nn.Linear(3, 2)
    dp = nn.DataParallel(inner, device_ids=[0, 1])
    assert dp.module is inner and dp.device_ids == []
    assert nn.parallel.DataParallel is nn.DataParallel
    x = fg.randn(4, 3)
    np.testing.assert_array_equal(dp(x).detach().numpy(), inner(x).detach().numpy())
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert repr(nn.DataParallel(nn.ReLU())) == "DataParallel(\n  (module): ReLU()\n)"


def test_sync_batch_norm_is_batch_norm_without_a_group():
    x = fg.randn(4, 3, 2, 2, 2, dtype=fg.float64)
    s = nn.SyncBatchNorm(3, dtype=fg.float64)
    b = nn.BatchNorm3d(3, dtype=fg.float64)
    np.testing.assert_allclose(s(x).detach().numpy(), b(x).detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(s.running_var.numpy(), b.running_var.numpy(), rtol=1e-12)
    assert s.num_batches_tracked.item() == 1 and s.process_group is None
    assert list(s.state_dict()) == [
        "weight", "bias", "running_mean", "running_var", "num_batches_tracked"
    ]  # fmt: skip
    assert (
        repr(s)
        == "SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    )
    assert s(fg.randn(5, 3, dtype=fg.float64)).shape == (5, 3)
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        s(fg.randn(3))
    with pytest.raises(ValueError, match="number of input channels should be non-zero"):
        nn.SyncBatchNorm(0)(fg.randn(2, 0))
    _grads(lambda t: nn.SyncBatchNorm(3, dtype=fg.float64)(t), x.numpy())


def test_convert_sync_batchnorm():
    bn = nn.BatchNorm2d(3)
    bn(fg.randn(4, 3, 2, 2))
    net = nn.Sequential(
        nn.Conv2d(2, 3, 1), bn, nn.Sequential(nn.BatchNorm1d(4)), nn.InstanceNorm2d(3)
    )
    out = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert out is net
    assert type(net[1]) is nn.SyncBatchNorm and type(net[2][0]) is nn.SyncBatchNorm
    assert type(net[3]) is nn.InstanceNorm2d and type(net[0]) is nn.Conv2d
    assert net[1].weight is bn.weight and net[1].running_mean is bn.running_mean
    assert net[1].num_batches_tracked.item() == 1
    assert type(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(2))) is nn.SyncBatchNorm


def test_sync_batch_norm_refuses_training_in_a_group(monkeypatch):
    import ferrograd.distributed as dist

    # Standing in for an initialised process group (ferrograd's is MPI-launched).
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    s = nn.SyncBatchNorm(3)
    with pytest.raises(ValueError, match="SyncBatchNorm expected input tensor to be on GPU"):
        s(fg.randn(4, 3))
    assert s.num_batches_tracked.item() == 0  # a refused call changes nothing
    s.eval()
    assert s(fg.randn(4, 3)).shape == (4, 3)


def _no_op_hook(module, args):
    return None


def test_lazy_module_saves_and_pickles_before_its_first_call(tmp_path):
    for restore in (
        lambda m: pickle.loads(pickle.dumps(m)),
        lambda m: (
            fg.save(m, tmp_path / "lazy.fg"),
            fg.load(tmp_path / "lazy.fg", weights_only=False),
        )[1],
    ):
        m = restore(nn.LazyLinear(3))
        assert type(m) is nn.LazyLinear and isinstance(m.weight, nn.UninitializedParameter)
        assert m(fg.randn(2, 5)).shape == (2, 3) and type(m) is nn.Linear
    fg.save(nn.LazyLinear(3).state_dict(), tmp_path / "sd.fg")
    sd = fg.load(tmp_path / "sd.fg", weights_only=False)
    assert all(isinstance(v, nn.UninitializedParameter) for v in sd.values())
    # A module that keeps hook handles pickles with them working.
    lin = nn.Linear(2, 2)
    handle = lin.register_forward_pre_hook(_no_op_hook)
    lin2, handle2 = pickle.loads(pickle.dumps((lin, handle)))
    handle2.remove()
    assert len(lin2._forward_pre_hooks) == 0 and len(lin._forward_pre_hooks) == 1


@pytest.mark.parametrize(
    "cls,base,shape",
    [(nn.LazyConvTranspose1d, nn.ConvTranspose1d, (2, 6, 5)),
     (nn.LazyConvTranspose2d, nn.ConvTranspose2d, (2, 6, 3, 4))],
)  # fmt: skip
def test_lazy_conv_transpose(cls, base, shape):
    x = fg.randn(*shape)
    fg.manual_seed(2)
    m = cls(4, 3, stride=2, groups=2)
    assert repr(m).startswith(f"{cls.__name__}(0, 4, kernel_size=")
    out = m(x)
    assert type(m) is base and m.in_channels == 6 and m.weight.shape[:2] == (6, 2)
    fg.manual_seed(2)
    ref = base(6, 4, 3, stride=2, groups=2)
    np.testing.assert_array_equal(m.weight.detach().numpy(), ref.weight.detach().numpy())
    np.testing.assert_array_equal(m.bias.detach().numpy(), ref.bias.detach().numpy())
    np.testing.assert_allclose(out.detach().numpy(), ref(x).detach().numpy(), rtol=1e-6)
