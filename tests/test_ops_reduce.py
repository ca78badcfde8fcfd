"""Reductions with dim (int, tuple, negative) and keepdim: gradients to second
order (float64) and float32 values against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from helpers import FEW, check_grads, close32, op_shapes, values


@st.composite
def dims_for(draw, ndim):
    """None, an int, or a tuple of distinct dims, negatives included."""
    if ndim == 0:
        return draw(st.sampled_from([None, 0, -1, ()]))
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    picked = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return tuple(d - ndim if draw(st.booleans()) else d for d in picked)


def nonempty_along(shape, dim, least=1):
    """``shape`` with every dimension that ``dim`` reduces grown to at least
    ``least``; the others keep their size, zero included."""
    nd = len(shape)
    if nd == 0:
        return shape
    dims = range(nd) if dim is None or dim == () else ((dim,) if isinstance(dim, int) else dim)
    reduced = {d % nd for d in dims}
    return tuple(max(s, least) if k in reduced else s for k, s in enumerate(shape))


def np_axis(dim, ndim):
    if dim is None or dim == ():
        return None
    if ndim == 0:
        return None
    return dim


@pytest.mark.parametrize("name", ["sum", "mean", "prod"])
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
@FEW
@given(data=st.data())
def test_sum_mean_prod(name, data):
    shape = data.draw(op_shapes())
    dim = data.draw(dims_for(len(shape)))
    keepdim = data.draw(st.booleans())
    x = data.draw(values(shape, 0.5, 1.5) if name == "prod" else values(shape))
    f = lambda t: getattr(t, name)(dim, keepdim=keepdim) if dim is not None else getattr(t, name)()  # noqa: E731
    check_grads(f, x)
    npf = getattr(np, name)
    close32(f, lambda a: np.asarray(npf(a, axis=np_axis(dim, a.ndim), keepdims=keepdim and dim is not None), dtype=np.float32), x, rtol=1e-4)


def test_prod_gradient_with_zeros():
    x = fg.tensor([[2.0, 0.0, 3.0], [0.0, 0.0, 1.0]], dtype=fg.float64, requires_grad=True)
    (g,) = fg.autograd.grad(x.prod(1).sum(), x)
    assert g.tolist() == [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0]]
    for arr in ([[2.0, 0.0, 3.0], [0.0, 0.5, 1.0]], [[0.0, 1.5], [0.7, 0.0]]):
        check_grads(lambda t: t.prod(-1), np.array(arr))
        check_grads(lambda t: t.prod(), np.array(arr))


@pytest.mark.parametrize("name", ["var", "std"])
@FEW
@given(data=st.data())
def test_var_std(name, data):
    shape = data.draw(op_shapes(min_dims=1))
    dim = data.draw(dims_for(len(shape)))
    keepdim = data.draw(st.booleans())
    correction = data.draw(st.sampled_from([0, 1]))
    # Reduced dims hold more elements than the correction (else the result is
    # inf/nan), and two for std: the std of one element is 0, where sqrt has a kink.
    shape = nonempty_along(shape, dim, least=2 if name == "std" else correction + 1)
    x = data.draw(values(shape, unique=True))
    f = lambda t: getattr(t, name)(dim, keepdim=keepdim, correction=correction)  # noqa: E731
    check_grads(f, x)
    close32(f, lambda a: np.asarray(getattr(np, name)(a, axis=np_axis(dim, a.ndim), ddof=correction, keepdims=keepdim), np.float32), x, rtol=1e-4, atol=1e-5)


def test_var_overloads():
    x = fg.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])
    np.testing.assert_allclose(x.var().item(), np.var(x.numpy(), ddof=1), rtol=1e-6)
    np.testing.assert_allclose(x.var(False).item(), np.var(x.numpy()), rtol=1e-6)
    np.testing.assert_allclose(x.std(1, unbiased=False).numpy(), np.std(x.numpy(), 1), rtol=1e-6)
    np.testing.assert_allclose(fg.var(x, 0).numpy(), np.var(x.numpy(), 0, ddof=1), rtol=1e-6)


@pytest.mark.parametrize("name", ["amax", "amin"])
@FEW
@given(data=st.data())
def test_amax_amin(name, data):
    shape = data.draw(op_shapes())
    dim = data.draw(dims_for(len(shape)))
    shape = nonempty_along(shape, dim)
    keepdim = data.draw(st.booleans())
    x = data.draw(values(shape, unique=True))
    d = () if dim is None else dim
    f = lambda t: getattr(t, name)(d, keepdim)  # noqa: E731
    check_grads(f, x)
    close32(f, lambda a: getattr(np, name)(a, axis=np_axis(d, a.ndim), keepdims=keepdim), x)


def test_amax_shares_gradient_between_ties_and_max_picks_index():
    x = fg.tensor([1.0, 3.0, 3.0], requires_grad=True)
    x.amax().backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.5]
    x.grad = None
    v, i = x.max(0)
    assert i.item() == 1
    v.backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]


# Gradients and forward-mode tangents at ties, recorded from PyTorch 2.15: amax/amin and
# max()/min() of every element share evenly among all tied elements (1/3 each for three),
# max(dim)/min(dim) give everything to the returned index.
_TIES = [[1.0, 3.0, 3.0, 3.0], [2.0, 2.0, 0.0, 1.0]]
_TANGENT = [[0.0, 1.0, 2.0, 4.0], [1.0, 3.0, 0.0, 0.0]]
_THIRD = 1.0 / 3.0


@pytest.mark.parametrize(
    ("f", "node", "grad", "jvp"),
    [
        (lambda x: x.amax(1), "AmaxBackward0",
         [[0.0, _THIRD, _THIRD, _THIRD], [0.5, 0.5, 0.0, 0.0]], [7.0 / 3.0, 2.0]),
        (lambda x: x.amax(), "AmaxBackward0",
         [[0.0, _THIRD, _THIRD, _THIRD], [0.0] * 4], 7.0 / 3.0),
        (lambda x: fg.amin(x, 0), "AminBackward0",
         [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0]], [0.0, 3.0, 0.0, 0.0]),
        (lambda x: x.max(), "MaxBackward1",
         [[0.0, _THIRD, _THIRD, _THIRD], [0.0] * 4], 7.0 / 3.0),
        (lambda x: x.max(1).values, "MaxBackward0",
         [[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]], [1.0, 1.0]),
        (lambda x: fg.min(x, 1).values, "MinBackward0",
         [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]], [0.0, 0.0]),
    ],
)
def test_extrema_at_ties_follow_pytorch(f, node, grad, jvp):
    x = fg.tensor(_TIES, dtype=fg.float64, requires_grad=True)
    y = f(x)
    assert y.grad_fn.name() == node
    (g,) = fg.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(g.numpy(), grad, rtol=1e-15)
    _, t = fg.func.jvp(f, (x.detach(),), (fg.tensor(_TANGENT, dtype=fg.float64),))
    np.testing.assert_allclose(t.numpy(), jvp, rtol=1e-15)


@pytest.mark.parametrize("name", ["max", "min"])
@FEW
@given(data=st.data())
def test_max_min_with_dim(name, data):
    shape = data.draw(op_shapes(min_dims=1))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    shape = nonempty_along(shape, dim)
    keepdim = data.draw(st.booleans())
    x = data.draw(values(shape, unique=True))
    check_grads(lambda t: getattr(t, name)(dim, keepdim=keepdim).values, x)
    if x.size:
        check_grads(lambda t: getattr(fg, name)(t), x)
    r = getattr(fg, name)(fg.tensor(x.astype(np.float32)), dim, keepdim)
    npf = np.max if name == "max" else np.min
    argf = np.argmax if name == "max" else np.argmin
    np.testing.assert_allclose(r.values.numpy(), npf(x.astype(np.float32), axis=dim, keepdims=keepdim))
    want_idx = argf(x, axis=dim)
    if keepdim:
        want_idx = np.expand_dims(want_idx, dim)
    np.testing.assert_array_equal(r.indices.numpy(), want_idx)
    values_, indices = r  # unpacks like a tuple
    assert indices.dtype == fg.int64


@FEW
@given(data=st.data())
def test_argmax_argmin(data):
    shape = data.draw(op_shapes())
    d = data.draw(st.integers(-len(shape), len(shape) - 1)) if shape else None
    shape = nonempty_along(shape, d)
    x = data.draw(values(shape, unique=True)).astype(np.float32)
    t = fg.tensor(x)
    if x.size:
        assert fg.argmax(t).item() == np.argmax(x)
        assert t.argmin().item() == np.argmin(x)
    if x.ndim:
        np.testing.assert_array_equal(t.argmax(d).numpy(), np.argmax(x, d))
        np.testing.assert_array_equal(fg.argmin(t, d, keepdim=True).numpy(), np.expand_dims(np.argmin(x, d), d))
        assert t.argmax(d).dtype == fg.int64


def test_argmax_nan_and_empty():
    assert fg.tensor([1.0, float("nan"), 3.0]).argmax().item() == 1
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        fg.zeros(0).argmax()
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        fg.zeros(0, 3).max(0)


@pytest.mark.parametrize("p", [2, 1, float("inf"), float("-inf"), 3, 0.5, -1.5])
@FEW
@given(data=st.data())
def test_norm(p, data):
    shape = data.draw(op_shapes())
    dim = data.draw(dims_for(len(shape)))
    if p in (float("inf"), float("-inf")):
        shape = nonempty_along(shape, dim)  # no identity to start the max/min from
    keepdim = data.draw(st.booleans())
    if p in (float("inf"), float("-inf")):
        x = data.draw(values(shape, 0.1, 2, unique=True))  # no ties in |x|
    else:
        x = data.draw(values(shape, away_from=[0.0]))
    f = lambda t: t.norm(p, dim, keepdim)  # noqa: E731
    check_grads(f, x)

    def np_norm(a):
        ax = np_axis(dim, a.ndim)
        ax = tuple(range(a.ndim)) if ax is None else ((ax,) if isinstance(ax, int) else ax)
        if p == float("inf"):
            r = np.max(np.abs(a), axis=ax, keepdims=keepdim)
        elif p == float("-inf"):
            r = np.min(np.abs(a), axis=ax, keepdims=keepdim)
        else:
            # A negative p over an empty reduction is 0 ** (1/p) = inf, as intended.
            with np.errstate(divide="ignore"):
                r = np.sum(np.abs(a) ** p, axis=ax, keepdims=keepdim) ** (1 / p)
        return np.asarray(r, np.float32)

    close32(f, np_norm, x, rtol=1e-4)


def test_norm2_gradient_at_zero_is_zero():
    x = fg.zeros(3, dtype=fg.float64, requires_grad=True)
    (g,) = fg.autograd.grad(x.norm(), x)
    assert g.tolist() == [0.0, 0.0, 0.0]
    y = fg.tensor([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
    (g,) = fg.autograd.grad(fg.norm(y, dim=1).sum(), y)
    np.testing.assert_allclose(g.numpy(), [[0, 0], [0.6, 0.8]], rtol=1e-6)


# Gradients at zeros and ties, as PyTorch 2.15 gives them (checked by hand).
NORM_AT_ZEROS = [
    (1, None, [[1.0, -1.0, 1.0], [1.0, 0.0, -1.0]]),
    (float("inf"), None, [[0.0, 0.0, 0.5], [0.0, 0.0, -0.5]]),
    (float("inf"), 1, [[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]]),
    (float("-inf"), 1, [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),
    (0.5, None, [[8.28124, -5.34552, 4.14062], [4.78118, 0.0, -4.14062]]),
    (-1, 1, [[0.36, -0.0625, 0.0225], [0.0, 0.0, 0.0]]),
    (3, 1, [[0.0544, -0.31332, 0.87032], [0.44485, 0.0, -0.79085]]),
]


@pytest.mark.parametrize("p,dim,grad", NORM_AT_ZEROS)
def test_norm_gradients_at_zeros_and_ties_follow_pytorch(p, dim, grad):
    x = fg.tensor([[0.5, -1.2, 2.0], [1.5, 0.0, -2.0]], dtype=fg.float64, requires_grad=True)
    y = x.norm(p, dim=dim)
    assert y.grad_fn.name() == "LinalgVectorNormBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), grad, atol=1e-5)


def test_norm_zero_counts_nonzeros_and_has_no_gradient():
    x = fg.tensor([[0.5, 0.0], [0.0, -2.0]], requires_grad=True)
    y = x.norm(0)
    assert y.item() == 2.0 and y.grad_fn.name() == "LinalgVectorNormBackward0"
    y.backward()
    assert x.grad is None
    z = fg.zeros(3, dtype=fg.float64, requires_grad=True)
    (g,) = fg.autograd.grad(z.norm(0.5), z)
    assert g.tolist() == [0.0, 0.0, 0.0]


@FEW
@given(data=st.data())
def test_logsumexp(data):
    shape = data.draw(op_shapes(min_dims=1))
    dim = data.draw(dims_for(len(shape)).filter(lambda d: d is not None))
    shape = nonempty_along(shape, dim)
    keepdim = data.draw(st.booleans())
    x = data.draw(values(shape, -5, 5))
    f = lambda t: fg.logsumexp(t, dim, keepdim)  # noqa: E731

    def np_lse(a):
        ax = np_axis(dim, a.ndim)
        m = np.max(a, axis=ax, keepdims=True)
        r = np.log(np.sum(np.exp(a - m), axis=ax, keepdims=True)) + m
        return r if keepdim else np.squeeze(r, axis=ax if ax is not None else None)

    check_grads(f, x)
    close32(f, lambda a: np.asarray(np_lse(a), np.float32), x, rtol=1e-5)


def test_logsumexp_is_stable():
    x = fg.tensor([1000.0, 1000.0, -float("inf")])
    np.testing.assert_allclose(x.logsumexp(0).item(), 1000 + np.log(2), rtol=1e-6)
    assert fg.tensor([-float("inf")] * 2).logsumexp(0).item() == -float("inf")


@FEW
@given(data=st.data())
def test_cumsum(data):
    shape = data.draw(op_shapes(min_dims=1))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = data.draw(values(shape))
    check_grads(lambda t: t.cumsum(dim), x)
    close32(lambda t: fg.cumsum(t, dim), lambda a: np.cumsum(a, axis=dim), x, rtol=1e-5)
    assert fg.tensor([True, True, False]).cumsum(0).tolist() == [1, 2, 2]


@FEW
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]), expanded=st.booleans())
def test_cumsum_grad_is_the_reversed_running_sum(data, dtype, expanded):
    # The gradient of cumsum is a running sum from the end of `dim`; its
    # one-pass form adds in the order flip-cumsum-flip does, bit for bit,
    # also for size-1 and empty dims and for an expanded incoming gradient.
    shape = data.draw(op_shapes(min_dims=1, min_side=0))
    dim = data.draw(st.integers(0, len(shape) - 1))
    g = np.asarray(data.draw(values(shape)), dtype=dtype)
    x = fg.zeros(shape, dtype=fg.float32 if dtype == np.float32 else fg.float64).requires_grad_()
    gt = fg.tensor(g.reshape(-1)[:1]).reshape(()).expand(shape) if expanded and g.size else fg.from_numpy(g)
    (got,) = fg.autograd.grad(x.cumsum(dim), x, grad_outputs=gt)
    gn = gt.numpy()
    want = np.flip(np.cumsum(np.flip(gn, dim), axis=dim, dtype=dtype), dim)
    np.testing.assert_array_equal(got.numpy().view(f"u{g.itemsize}"), want.view(f"u{g.itemsize}"))


@pytest.mark.parametrize("shape, dim", [((19, 1100), 1), ((19, 1100), 0), ((3, 40, 1500), 1), ((3, 40, 5), 2)])
def test_cumsum_grad_on_blocks_of_rows(shape, dim):
    # Row groups, tiles and column blocks of the scans, on one and two threads.
    g = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    want = np.flip(np.cumsum(np.flip(g, dim), axis=dim, dtype=np.float32), dim)
    before = fg.get_num_threads()
    try:
        for threads in (1, 2):
            fg.set_num_threads(threads)
            x = fg.zeros(shape).requires_grad_()
            (got,) = fg.autograd.grad(x.cumsum(dim), x, grad_outputs=fg.from_numpy(g))
            np.testing.assert_array_equal(got.numpy(), want)
    finally:
        fg.set_num_threads(before)


def test_all_any_with_dims():
    x = fg.tensor([[True, False], [True, True]])
    assert x.all(1).tolist() == [False, True]
    assert x.any(0, keepdim=True).tolist() == [[True, True]]
    assert x.all().item() is False


def test_reduction_errors():
    with pytest.raises(IndexError, match="Dimension out of range"):
        fg.ones(2, 3).sum(2)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        fg.ones(2, 3).amax((1, -1))
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        fg.tensor([1, 2]).var()
