"""One-pass kernels behind ``cumprod``'s backward (a reversed linear scan, exact
where inputs are zero), ``nansum`` (NaN read as zero inside ``sum``'s loops),
``topk`` with a small ``k`` on long rows, and the fused loss rules of
``mse_loss``/``smooth_l1_loss``/``huber_loss``/``l1_loss`` (one pass forward and
backward, transposed pairs read in memory order): against closed forms written
out in NumPy, with float64 gradients checked by finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn.functional as F
from helpers import FEW, check_grads

NAN = float("nan")


def cumprod_grad_ref(x, g, axis):
    """d/dx[k] of sum(g * cumprod(x)): sum over j >= k of g[j] times the product
    of x[0..j] without x[k], written out (quadratic, no division)."""
    xm, gm = np.moveaxis(x, axis, -1), np.moveaxis(g, axis, -1)
    out = np.zeros_like(xm)
    n = xm.shape[-1]
    for pos in np.ndindex(*xm.shape[:-1]):
        row, grow = xm[pos], gm[pos]
        for k in range(n):
            total = 0.0
            for j in range(k, n):
                total += grow[j] * np.prod(np.delete(row[: j + 1], k))
            out[pos + (k,)] = total
    return np.moveaxis(out, -1, axis)


ZERO_ROWS = [
    [0.5, 0.0, 2.0, 1.5, -0.7],  # one zero
    [0.0, 1.2, 0.0, 3.0, 0.9],  # several, one first
    [1.1, -2.0, 0.8, 1.3, 0.0],  # last
    [0.0, 0.0, 0.0, 0.0, 0.0],  # all
    [1.5, -0.5, 2.0, 0.25, -1.0],  # none
]


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cumprod_backward_is_exact_at_zeros(dim, dtype):
    a = np.array(ZERO_ROWS, dtype=dtype)
    a = a if dim != 0 else np.ascontiguousarray(a.T)  # the scan dim carries the zeros
    g = np.random.default_rng(0).uniform(-1, 1, a.shape).astype(dtype)
    x = fg.tensor(a, requires_grad=True)
    (x.cumprod(dim) * fg.tensor(g)).sum().backward()
    want = cumprod_grad_ref(a.astype(np.float64), g.astype(np.float64), dim)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=tol, atol=tol)
    assert not np.isnan(x.grad.numpy()).any()


@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_zero_patterns_first_and_second_order(dim):
    a = np.array(ZERO_ROWS)
    a = a if dim == 1 else np.ascontiguousarray(a.T)
    check_grads(lambda x: x.cumprod(dim), a)


@pytest.mark.parametrize("shape,dim", [((3, 0), 1), ((0, 4), 0), ((4, 1), 1), ((1, 4), 0),
                                       ((1,), 0), ((2, 1, 3), 1)])
def test_cumprod_short_rows(shape, dim):
    a = np.arange(1, int(np.prod(shape)) + 1, dtype=np.float64).reshape(shape) / 3.0
    if a.size:
        a.flat[0] = 0.0
    x = fg.tensor(a, requires_grad=True)
    g = np.random.default_rng(1).uniform(-1, 1, shape)
    (x.cumprod(dim) * fg.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), cumprod_grad_ref(a, g, dim), rtol=1e-12, atol=1e-15)
    if a.size:
        check_grads(lambda t: t.cumprod(dim), a)


@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_float32_rounds_a_float64_product_once(dim):
    a = np.random.default_rng(2).uniform(0.5, 1.5, (37, 2100)).astype(np.float32)
    a[3, 7] = 0.0
    got = fg.cumprod(fg.tensor(a), dim).numpy()
    np.testing.assert_array_equal(got, np.cumprod(a.astype(np.float64), axis=dim).astype(np.float32))


def test_cumprod_large_backward_matches_the_division_rule_away_from_zeros():
    # Without zeros PyTorch's rule, reversed cumsum(g * out) / x, gives the same.
    rng = np.random.default_rng(3)
    a = rng.uniform(0.8, 1.25, (64, 3000))
    g = rng.uniform(-1, 1, a.shape)
    for dim in (0, 1):
        x = fg.tensor(a, requires_grad=True)
        (x.cumprod(dim) * fg.tensor(g)).sum().backward()
        out = np.cumprod(a, axis=dim)
        rev = np.flip(np.cumsum(np.flip(g * out, dim), axis=dim), dim)
        np.testing.assert_allclose(x.grad.numpy(), rev / a, rtol=1e-9)


class _threads:
    def __init__(self, n):
        self.n = n

    def __enter__(self):
        self.old = fg.get_num_threads()
        fg.set_num_threads(self.n)

    def __exit__(self, *exc):
        fg.set_num_threads(self.old)


@pytest.mark.parametrize("shape", [(3000, 700), (5, 100003), (1, 1)])
def test_nansum_is_sum_of_the_zeroed_copy_bit_for_bit(shape):
    rng = np.random.default_rng(4)
    a = rng.standard_normal(shape).astype(np.float32)
    a[rng.random(shape) < 0.1] = np.nan
    zeroed = np.nan_to_num(a, nan=0.0)
    for transposed in (False, True):
        def view(t, transposed=transposed):
            if not transposed:
                return t
            return t.T if isinstance(t, np.ndarray) else t.t()

        x, z = view(fg.tensor(a)), view(fg.tensor(zeroed))
        for dims in (None, 0, 1, (0, 1)):
            results = []
            for n in (1, 2):
                with _threads(n):
                    got = fg.nansum(x) if dims is None else fg.nansum(x, dims)
                    want = fg.sum(z) if dims is None else fg.sum(z, dims)
                    np.testing.assert_array_equal(got.numpy(), want.numpy())
                    results.append(got.numpy())
            np.testing.assert_array_equal(results[0], results[1])
            ref = np.nansum(view(a.astype(np.float64)), axis=dims)
            np.testing.assert_allclose(results[0], ref, rtol=2e-4, atol=2e-3)


def test_nansum_special_rows():
    # NaN counts as zero; inf - inf is still NaN; an all-NaN row sums to 0.
    a = np.array([[NAN, NAN, NAN], [np.inf, -np.inf, NAN], [np.inf, 1.0, NAN]], np.float32)
    np.testing.assert_array_equal(fg.nansum(fg.tensor(a), 1).numpy(),
                                  np.array([0.0, NAN, np.inf], np.float32))
    assert fg.nansum(fg.zeros(0, 3), 0).tolist() == [0.0, 0.0, 0.0]
    assert fg.nansum(fg.zeros(4, 0), 1).tolist() == [0.0] * 4


def topk_ref(a, k, largest):
    """A stable sort of each row, NaN counted as the largest, -0.0 equal to 0.0."""
    cols = a.shape[1]
    key = np.where(np.isnan(a), np.inf, a)
    rank = np.where(np.isnan(a), 1, 0)
    return np.array([
        np.lexsort((np.arange(cols), -rank[r], -key[r]) if largest
                   else (np.arange(cols), rank[r], key[r]))[:k] for r in range(a.shape[0])])


@FEW
@given(st.integers(33, 400), st.integers(1, 16), st.booleans(), st.data())
def test_topk_long_rows_with_ties_and_nans(cols, k, largest, data):
    pool = data.draw(st.lists(st.sampled_from([-1.0, -0.0, 0.0, 0.5, 2.0, NAN, 3.0, -3.0]),
                              min_size=1, max_size=4, unique_by=str))
    seed = data.draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    a = rng.choice(np.array(pool), size=(4, cols))
    a[1] = rng.standard_normal(cols)  # a row of distinct values
    a[2, -1] = np.inf  # the best element last
    idx = fg.topk(fg.tensor(a), k, 1, largest).indices.numpy()
    np.testing.assert_array_equal(idx, topk_ref(a, k, largest))
    a32 = a.astype(np.float32)
    vals, idx32 = fg.topk(fg.tensor(a32), k, 1, largest)
    np.testing.assert_array_equal(idx32.numpy(), topk_ref(a32, k, largest))
    np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(a32, idx32.numpy(), 1))


def test_topk_values_recorded_from_pytorch():
    # torch.topk(torch.tensor([1., nan, 3., 3., -0., 0., nan]).repeat(8), 4) (PyTorch 2.15)
    # gives values [nan, nan, nan, nan]; with largest=False, [-0., -0., 0., 0.]. Its
    # order among equal elements is unspecified (indices [29, 27, 22, 34] there);
    # ferrograd lists them as a stable sort does.
    row = np.tile(np.array([1.0, NAN, 3.0, 3.0, -0.0, 0.0, NAN], np.float32), 8)
    vals, idx = fg.topk(fg.tensor(row), 4)
    assert idx.tolist() == [1, 6, 8, 13] and np.isnan(vals.numpy()).all()
    vals, idx = fg.topk(fg.tensor(row), 4, largest=False)
    assert idx.tolist() == [4, 5, 11, 12] and vals.tolist() == [0.0] * 4


def loss_slope(name, d, beta):
    """d loss / d input per element, from the closed forms (PyTorch's kernels:
    NaN lands in the middle branch, so its gradient is NaN)."""
    with np.errstate(invalid="ignore"):
        if name == "mse_loss":
            return 2 * d
        if name == "l1_loss":
            return np.sign(d)
        mid = d / beta if name == "smooth_l1_loss" else d
        edge = 1.0 if name == "smooth_l1_loss" else beta
        return np.where(d < -beta, -edge, np.where(d > beta, edge, mid))


def loss_value(name, d, beta):
    ad = np.abs(d)
    if name == "mse_loss":
        return d * d
    if name == "l1_loss":
        return ad
    quad, lin = 0.5 * d * d, ad - 0.5 * beta
    if name == "smooth_l1_loss":
        return np.where(ad < beta, quad / beta, lin)
    return np.where(ad < beta, quad, beta * lin)


def call_loss(name, x, y, reduction, beta):
    if name == "smooth_l1_loss":
        return F.smooth_l1_loss(x, y, reduction=reduction, beta=beta)
    if name == "huber_loss":
        return F.huber_loss(x, y, reduction=reduction, delta=beta)
    return getattr(F, name)(x, y, reduction=reduction)


LOSSES = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"]


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_losses_values_and_grads(name, reduction, transposed, dtype):
    rng = np.random.default_rng(5)
    a = rng.uniform(-3, 3, (37, 53)).astype(dtype)
    b = rng.uniform(-3, 3, (37, 53)).astype(dtype)
    beta = 0.7

    def make(arr, grad):
        t = fg.tensor(np.ascontiguousarray(arr.T)).t() if transposed else fg.tensor(arr)
        return t.detach().requires_grad_(grad)

    x, y = make(a, True), make(b, True)
    out = call_loss(name, x, y, reduction, beta)
    d = a.astype(np.float64) - b.astype(np.float64)
    per = loss_value(name, d, beta)
    want = {"mean": per.mean(), "sum": per.sum(), "none": per}[reduction]
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=tol, atol=tol)
    g = np.ones(()) if reduction != "none" else rng.uniform(-1, 1, a.shape)
    out.backward(fg.tensor(g.astype(dtype)))
    scale = 1.0 / a.size if reduction == "mean" else 1.0
    want_g = loss_slope(name, d, beta) * g * scale
    np.testing.assert_allclose(x.grad.numpy(), want_g, rtol=tol, atol=tol)
    np.testing.assert_allclose(y.grad.numpy(), -want_g, rtol=tol, atol=tol)
    with fg.no_grad():
        again = call_loss(name, make(a, False), make(b, False), reduction, beta)
    np.testing.assert_allclose(again.numpy(), out.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("shape", [(1,), (3, 5), (4096,), (301, 777)])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reduced_losses_equal_the_reduced_per_element_losses_bit_for_bit(
        name, shape, transposed, dtype):
    # A sum or mean loss is summed as its values are made; it must give the
    # bits of reducing the reduction='none' values, on one and on two threads.
    rng = np.random.default_rng(11)
    a = rng.uniform(-3, 3, shape).astype(dtype)
    b = rng.uniform(-3, 3, shape).astype(dtype)

    def make(arr):
        return fg.tensor(np.ascontiguousarray(arr.T)).t() if transposed else fg.tensor(arr)

    x, y = make(a), make(b)
    # huber_loss scales the reduced sum by delta, and each value when not
    # reduced: the two agree bit for bit only where that scaling is exact.
    beta = 1.0 if name == "huber_loss" else 0.7
    before = fg.get_num_threads()
    try:
        for threads in (1, 2):
            fg.set_num_threads(threads)
            per = call_loss(name, x, y, "none", beta)
            # A transposed pair is reduced in memory order, as its values lie.
            per = per.t() if transposed else per
            for reduction, ref in (("sum", per.sum()), ("mean", per.mean())):
                got = call_loss(name, x, y, reduction, beta)
                assert got.numpy().tobytes() == ref.numpy().tobytes(), (reduction, threads)
    finally:
        fg.set_num_threads(before)


@pytest.mark.parametrize("name", ["smooth_l1_loss", "huber_loss"])
def test_nan_input_gives_a_nan_gradient_as_pytorch(name):
    # PyTorch 2.x: smooth_l1_loss(tensor([nan, .5, 3.], requires_grad=True), zeros(3))
    # .backward() leaves grad [nan, 0.1667, 0.3333]; huber_loss gives [nan, 0.1667, 0.3333].
    x = fg.tensor([NAN, 0.5, 3.0], requires_grad=True)
    call_loss(name, x, fg.zeros(3), "mean", 1.0).backward()
    got = x.grad.numpy()
    assert np.isnan(got[0])
    np.testing.assert_allclose(got[1:], [0.5 / 3, 1.0 / 3], rtol=1e-6)


@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_fused_losses_second_order(name, reduction):
    # Away from the kinks at +-beta, so finite differences stay on one branch.
    a = np.array([[0.3, -2.0, 1.9], [-0.2, 2.5, 0.05]])
    b = np.array([[0.1, 0.4, -0.3], [0.6, -0.1, 0.2]])
    check_grads(lambda x, y: call_loss(name, x, y, reduction, 1.0), a, b)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_transposed_pair_matches_the_contiguous_one(reduction, log_target):
    rng = np.random.default_rng(6)
    a = np.log(rng.uniform(0.05, 1, (23, 41)))
    b = rng.uniform(0, 1, (23, 41))
    b[2, 3] = 0.0
    if log_target:
        b = np.log(b + 0.01)
    seed = rng.uniform(-1, 1, a.shape)
    results = []
    for transposed in (False, True):
        def make(arr, transposed=transposed):
            t = fg.tensor(np.ascontiguousarray(arr.T)).t() if transposed else fg.tensor(arr)
            return t.detach().requires_grad_()

        x, y = make(a), make(b)
        out = F.kl_div(x, y, reduction=reduction, log_target=log_target)
        out.backward(fg.tensor(seed) if reduction == "none" else None)
        results.append((out.detach().numpy(), x.grad.numpy(), y.grad.numpy(), out.stride()))
    for u, v in zip(results[0][:3], results[1][:3]):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-15)
    if reduction == "none":
        assert results[1][3] == (1, 23)  # the inputs' (transposed) layout, as PyTorch's
