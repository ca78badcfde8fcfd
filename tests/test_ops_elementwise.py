"""Elementwise ops: gradients to second order (float64), float32 values vs NumPy.

Gradients are property-tested with ``ferrograd.testing.check_op`` (gradcheck and
gradgradcheck on drawn shapes) at points from
``ferrograd.testing.strategies.differentiable_points``, which keeps each op
inside its domain and away from its kinks and poles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
from ferrograd.testing import check_op
from ferrograd.testing import strategies as fst
from helpers import FEW, close32, leaf, op_shapes, pair_shapes, values

# check_op draws as many examples per op as FEW does (the profile's, divided by 5).
N = FEW.max_examples


def points(op, lo=-2.0, hi=2.0):
    """float64 leaves of drawn shapes (size-0 and size-1 dims included) where ``op``
    is differentiable; ``lo``/``hi`` narrow the range further."""
    return fst.differentiable_points(op, shape=op_shapes(), low=lo, high=hi)


def arrays_at(op, lo=-2.0, hi=2.0):
    return points(op, lo, hi).map(lambda t: np.array(t.detach().numpy()))


# (name, ferrograd fn, numpy fn, range lo, hi); kinks and poles come from
# differentiable_points' table of domains.
UNARY = [
    ("exp", fg.exp, np.exp, -2, 2),
    ("expm1", fg.expm1, np.expm1, -2, 2),
    ("log", fg.log, np.log, -3, 3),
    ("log1p", fg.log1p, np.log1p, -3, 3),
    ("log2", fg.log2, np.log2, -3, 3),
    ("sqrt", fg.sqrt, np.sqrt, -3, 3),
    ("rsqrt", fg.rsqrt, lambda x: 1 / np.sqrt(x), -3, 3),
    ("sin", fg.sin, np.sin, -3, 3),
    ("cos", fg.cos, np.cos, -3, 3),
    ("tan", fg.tan, np.tan, -1.2, 1.2),
    ("tanh", fg.tanh, np.tanh, -3, 3),
    ("sigmoid", fg.sigmoid, lambda x: 1 / (1 + np.exp(-x)), -4, 4),
    ("relu", fg.relu, lambda x: np.maximum(x, 0), -2, 2),
    ("abs", fg.abs, np.abs, -2, 2),
    ("neg", fg.neg, np.negative, -2, 2),
    ("reciprocal", fg.reciprocal, np.reciprocal, -3, 3),
    ("square", fg.square, np.square, -2, 2),
    ("erf", fg.erf, np.vectorize(math.erf, otypes=[np.float32]), -2, 2),
    # elementwise math functions and aliases (mathops); erfinv and digamma have no NumPy
    # function: see _erfinv_ref and _digamma_ref below.
    ("acos", fg.acos, np.arccos, -1, 1),
    ("arccos", fg.arccos, np.arccos, -1, 1),
    ("asin", fg.asin, np.arcsin, -1, 1),
    ("arcsin", fg.arcsin, np.arcsin, -1, 1),
    ("atan", fg.atan, np.arctan, -3, 3),
    ("arctan", fg.arctan, np.arctan, -3, 3),
    ("sinh", fg.sinh, np.sinh, -3, 3),
    ("cosh", fg.cosh, np.cosh, -3, 3),
    ("asinh", fg.asinh, np.arcsinh, -3, 3),
    ("arcsinh", fg.arcsinh, np.arcsinh, -3, 3),
    ("acosh", fg.acosh, np.arccosh, 1, 4),
    ("arccosh", fg.arccosh, np.arccosh, 1, 4),
    ("atanh", fg.atanh, np.arctanh, -1, 1),
    ("arctanh", fg.arctanh, np.arctanh, -1, 1),
    ("log10", fg.log10, np.log10, -3, 3),
    ("exp2", fg.exp2, np.exp2, -3, 3),
    ("erfc", fg.erfc, np.vectorize(math.erfc, otypes=[np.float32]), -2, 2),
    ("erfinv", fg.erfinv, lambda y: _erfinv_ref(y), -1, 1),
    ("lgamma", fg.lgamma, np.vectorize(math.lgamma, otypes=[np.float32]), -3, 3),
    ("digamma", fg.digamma, lambda x: _digamma_ref(x), -3, 3),
    ("deg2rad", fg.deg2rad, np.deg2rad, -3, 3),
    ("rad2deg", fg.rad2deg, np.rad2deg, -3, 3),
    ("sinc", fg.sinc, np.sinc, -3, 3),
    ("frac", fg.frac, lambda x: x - np.trunc(x), -3, 3),
    ("fix", fg.fix, np.fix, -3, 3),
    ("sgn", fg.sgn, np.sign, -2, 2),
    ("logit", fg.logit, lambda x: np.log(x / (1 - x)), 0, 1),
    ("negative", fg.negative, np.negative, -2, 2),
    ("absolute", fg.absolute, np.absolute, -2, 2),
]


def _erfinv_ref(y):
    """erfinv by bisection on math.erf (independent of the kernel's Newton steps)."""

    def one(v):
        lo, hi = -6.0, 6.0
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
        return (lo + hi) / 2

    return np.vectorize(one, otypes=[np.float64])(np.asarray(y, np.float64)).astype(np.float32)


def _digamma_ref(x):
    """digamma as the central difference of math.lgamma (error ~1e-10 at step 1e-5)."""
    h = 1e-5

    def one(v):
        return (math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h)

    return np.vectorize(one, otypes=[np.float64])(np.asarray(x, np.float64)).astype(np.float32)


@pytest.mark.parametrize("name,f,npf,lo,hi", UNARY, ids=[u[0] for u in UNARY])
def test_unary_grads(name, f, npf, lo, hi):
    # check_batched_grad also proves the batched engine's rule for the op's node.
    assert check_op(f, points(f, lo, hi), max_examples=N, check_batched_grad=True)


@pytest.mark.parametrize("name,f,npf,lo,hi", UNARY, ids=[u[0] for u in UNARY])
@FEW
@given(data=st.data())
def test_unary_values(name, f, npf, lo, hi, data):
    x = data.draw(arrays_at(f, lo, hi))
    close32(f, npf, x)
    # The Tensor method spells the same op.
    t = leaf(x, requires_grad=False)
    np.testing.assert_allclose(getattr(t, name)().numpy(), f(t).numpy())


@pytest.mark.parametrize(
    "name,npf",
    [("floor", np.floor), ("ceil", np.ceil), ("round", np.round), ("trunc", np.trunc),
     ("sign", np.sign)],
)
@FEW
@given(data=st.data())
def test_piecewise_constant_ops_have_zero_gradient(name, npf, data):
    # Away from the jumps (integers, halves for round, 0 for sign) the finite
    # difference is 0 as well, so gradcheck agrees with the zero gradient.
    f = getattr(fg, name)
    x = data.draw(arrays_at(f, -3, 3))
    t = leaf(x)
    y = f(t)
    np.testing.assert_array_equal(y.detach().numpy(), npf(x))
    close32(f, npf, x, rtol=0, atol=0)
    np.testing.assert_array_equal(getattr(leaf(x, False), name)().numpy(), npf(x))
    (g,) = fg.autograd.grad(y.sum(), t, allow_unused=True) if t.numel() else (None,)
    if g is not None:
        assert not g.numpy().any()


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc", "sign"])
def test_piecewise_constant_ops_grads(name):
    f = getattr(fg, name)
    assert check_op(f, points(f, -3, 3), max_examples=N)


@pytest.mark.parametrize(
    "f",
    [fg.floor, fg.ceil, fg.round, fg.trunc, fg.sign, fg.sgn, lambda t: fg.round(t, decimals=1)],
)
@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
def test_piecewise_constant_grads_are_zero_whatever_flows_in(f, dtype):
    # PyTorch's gradient here is zeros_like(grad): 0 even where the incoming
    # gradient is inf or NaN (0 * grad would give NaN there).
    t = fg.tensor([-1.5, 0.0, 2.25, 3.0], dtype=dtype, requires_grad=True)
    gout = fg.tensor([math.inf, math.nan, -math.inf, 2.0], dtype=dtype)
    (g,) = fg.autograd.grad(f(t), t, grad_outputs=gout)
    assert g.dtype == dtype and g.shape == t.shape
    assert g.tolist() == [0.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("f", [fg.floor, fg.sign, fg.sgn])
@pytest.mark.parametrize("transposed", [False, True])
def test_large_zero_grads_are_ordinary_mutable_tensors(f, transposed):
    # A zero gradient of 8 MB is mapped from the kernel rather than written
    # (where it has huge zero pages): it must read as zeros, take in-place
    # writes (PyTorch's ZeroTensor for sgn refuses `add_`), accumulate, and
    # keep the leaf's layout.
    base = fg.randn(1024, 2048)
    x = (base.t() if transposed else base).detach().requires_grad_()
    f(x).backward(fg.ones(x.shape))
    g = x.grad
    assert g.shape == x.shape and g.stride() == x.stride()
    assert float(g.abs().sum()) == 0.0
    g.add_(1.5)
    assert float(g.sum()) == 1.5 * x.numel()
    g[3, 7] = -2.0
    assert g[3, 7].item() == -2.0 and g[3, 8].item() == 1.5
    # A second backward accumulates into the written gradient.
    (f(x) + x).backward(fg.ones(x.shape))
    assert g[0, 0].item() == 2.5 and g[3, 7].item() == -1.0
    # The zero gradient beside a real one in the same graph.
    y = fg.randn(x.shape).requires_grad_()
    (f(y) * 3 + y * 2).sum().backward()
    assert np.all(y.grad.numpy() == 2.0)


def test_round_half_to_even_and_decimals():
    t = fg.tensor([0.5, 1.5, 2.5, -0.5, 1.2345])
    assert t.round().tolist() == [0.0, 2.0, 2.0, -0.0, 1.0]
    np.testing.assert_allclose(fg.round(t, decimals=2).numpy(), [0.5, 1.5, 2.5, -0.5, 1.23])
    assert fg.floor(fg.tensor([1, 2])).dtype == fg.int64


BINARY = [
    ("add", fg.add, np.add, None),
    ("sub", fg.sub, np.subtract, None),
    ("mul", fg.mul, np.multiply, None),
    ("maximum", fg.maximum, np.maximum, None),
    ("minimum", fg.minimum, np.minimum, None),
]


@st.composite
def broadcast_pair(draw, lo=-2.0, hi=2.0, untied=False):
    """Two float64 leaves of mutually broadcastable shapes (size-0 dims included);
    ``untied`` keeps every broadcast pair of elements 0.05 apart, so no tie of
    maximum/minimum sits inside a finite difference."""
    sa, sb = draw(fst.mutually_broadcastable_shapes(2, max_dims=3, min_side=0, max_side=3))
    el = fst.floats(lo, hi)
    a = draw(fst.tensors(shape=sa, elements=el, requires_grad=True))
    b = draw(fst.tensors(shape=sb, elements=el, requires_grad=True))
    if untied:
        assume(np.all(np.abs(np.subtract(a.detach().numpy(), b.detach().numpy())) > 0.05))
    return a, b


@pytest.mark.parametrize("name,f,npf,_", BINARY, ids=[b[0] for b in BINARY])
def test_binary_broadcasting_grads(name, f, npf, _):
    assert check_op(f, args=broadcast_pair(untied=name in ("maximum", "minimum")),
                    max_examples=N, check_batched_grad=True)


@pytest.mark.parametrize("name,f,npf,_", BINARY, ids=[b[0] for b in BINARY])
@FEW
@given(data=st.data())
def test_binary_broadcasting_values(name, f, npf, _, data):
    sa, sb = data.draw(pair_shapes())
    close32(f, npf, data.draw(values(sa)), data.draw(values(sb)))


@pytest.mark.parametrize("f", [fg.div, fg.pow], ids=["div", "pow"])
def test_div_and_pow_grads(f):
    assert check_op(f, args=broadcast_pair(0.3, 2.0), max_examples=N, check_batched_grad=True)


@FEW
@given(data=st.data())
def test_div_and_pow_values(data):
    sa, sb = data.draw(pair_shapes())
    a = data.draw(values(sa, 0.3, 2))
    b = data.draw(values(sb, 0.3, 2))
    close32(fg.div, np.divide, a, b)
    close32(fg.pow, np.power, a, b, rtol=1e-4)


SCALAR_FORMS = [
    lambda t: 2 + t, lambda t: t + 2, lambda t: 3 - t, lambda t: t - 3,
    lambda t: 2 * t, lambda t: t * 2, lambda t: 1.5 / t, lambda t: t / 1.5,
    lambda t: t ** 2.5, lambda t: 2.0 ** t, lambda t: -t, lambda t: t ** -1.5,
    lambda t: t ** 2, lambda t: 2 ** t,
]


def test_python_scalars_on_either_side_grads():
    # One check_op over all the forms, so the draw count matches one op's.
    def all_forms(t):
        return tuple(fn(t) for fn in SCALAR_FORMS) + (fg.pow(t, 3), t.pow(0.5))

    assert check_op(all_forms, points(None, 0.3, 2), max_examples=N)


@FEW
@given(data=st.data())
def test_python_scalars_on_either_side(data):
    x = data.draw(values(data.draw(op_shapes()), 0.3, 2))
    for fn in SCALAR_FORMS:
        # NumPy evaluates the same expression on a float32 array (Python
        # numbers do not widen float32 there either).
        close32(fn, fn, x, rtol=1e-5, atol=1e-6)
    close32(lambda t: fg.pow(t, 3), lambda a: np.power(a, 3), x, rtol=1e-5)
    close32(lambda t: t.pow(0.5), np.sqrt, x, rtol=1e-5)


def test_maximum_splits_gradient_on_ties():
    a = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = fg.tensor([1.0, 1.0, 4.0], requires_grad=True)
    fg.maximum(a, b).sum().backward()
    assert a.grad.tolist() == [0.5, 1.0, 0.0]
    assert b.grad.tolist() == [0.5, 0.0, 1.0]


@FEW
@given(data=st.data())
def test_clamp_scalar_and_tensor_bounds(data):
    shape = data.draw(op_shapes())
    x = data.draw(values(shape, -2, 2, away_from=[-0.5, 0.7]))
    close32(lambda t: t.clamp(-0.5, 0.7), lambda a: np.clip(a, -0.5, 0.7), x)
    lo = data.draw(values(shape, -2, 2))
    if np.all(np.abs(x - lo) > 0.05):
        close32(lambda t, m: fg.clamp(t, min=m), np.maximum, x, lo)


def test_clamp_grads():
    away = fst.tensors(
        shape=op_shapes(), elements=fst.floats(-2, 2, away_from=[-0.5, 0.7]), requires_grad=True
    )

    def forms(t):
        return fg.clamp(t, min=-0.5, max=0.7), t.clamp(min=-0.5), t.clip(max=0.7)

    assert check_op(forms, away, max_examples=N)
    assert check_op(lambda t, m: fg.clamp(t, min=m), args=broadcast_pair(untied=True),
                    max_examples=N)


def test_clamp_boundaries_follow_pytorch():
    # PyTorch 2.15: with number bounds the gradient passes only strictly inside
    # them (the minimum-norm subgradient, as relu and hardtanh have).
    x = fg.tensor([-1.0, 0.0, 0.5, 1.0, 2.0], requires_grad=True)
    x.clamp(0.0, 1.0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        x.clamp()
    assert fg.clamp(fg.tensor([1, 5, 9]), 2, 6).tolist() == [2, 5, 6]


def test_relu_and_abs_at_zero_have_zero_gradient():
    x = fg.tensor([0.0, -1.0, 2.0], requires_grad=True)
    (g,) = fg.autograd.grad(fg.relu(x).sum(), x)
    assert g.tolist() == [0.0, 0.0, 1.0]
    (g,) = fg.autograd.grad(fg.abs(x).sum(), x)
    assert g.tolist() == [0.0, -1.0, 1.0]


@FEW
@given(data=st.data())
def test_where_values(data):
    sa, sb = data.draw(pair_shapes())
    a, b = data.draw(values(sa)), data.draw(values(sb))
    cond = data.draw(values(np.broadcast_shapes(sa, sb))) > 0
    c = fg.tensor(cond)
    close32(lambda x, y: fg.where(c, x, y), lambda x, y: np.where(cond, x, y), a, b)


def test_where_grads():
    @st.composite
    def where_args(draw):
        a, b = draw(broadcast_pair())
        shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
        return draw(fst.tensors(dtype=fg.bool, shape=shape)), a, b

    assert check_op(lambda c, x, y: (fg.where(c, x, y), fg.where(c, x, 0.5)),
                    args=where_args(), max_examples=N)


def test_comparisons_and_logical_ops():
    a = fg.tensor([1.0, 2.0, float("nan"), float("inf")])
    b = fg.tensor([1.0, 3.0, float("nan"), float("inf")])
    assert (a < b).tolist() == [False, True, False, False]
    assert (a == b).tolist() == [True, False, False, True]
    assert fg.isnan(a).tolist() == [False, False, True, False]
    assert fg.isinf(a).tolist() == [False, False, False, True]
    assert a.isfinite().tolist() == [True, True, False, False]
    assert fg.isclose(a, b).tolist() == [True, False, False, True]
    assert fg.isclose(a, b, equal_nan=True).tolist() == [True, False, True, True]
    assert not fg.allclose(a, b)
    assert fg.allclose(a, b, equal_nan=True) is False
    assert fg.allclose(fg.tensor([1.0, 2.0]), fg.tensor([1.0, 2.0 + 1e-7]))
    assert fg.equal(fg.tensor([1, 2]), fg.tensor([1, 2]))
    assert not fg.equal(fg.tensor([1, 2]), fg.tensor([1, 2, 3]))
    p, q = fg.tensor([True, True, False]), fg.tensor([True, False, False])
    assert fg.logical_xor(p, q).tolist() == [False, True, False]
    assert (p ^ q).tolist() == [False, True, False]
    assert fg.logical_and(p, q).tolist() == [True, False, False]
    assert p.logical_or(q).tolist() == [True, True, False]
    assert fg.logical_not(fg.tensor([0, 3])).tolist() == [True, False]


def test_elementwise_errors_are_python_exceptions():
    with pytest.raises(RuntimeError, match="must match the size"):
        fg.maximum(fg.ones(2), fg.ones(3))
    with pytest.raises(RuntimeError, match=r"did not match"):
        fg.isclose(fg.ones(2), fg.ones(2, dtype=fg.int64))


@st.composite
def comparable_pair(draw):
    """Two broadcastable float32 arrays of small integers (ties, NaN and inf
    included) with size-0 and size-1 dims."""
    sa, sb = draw(pair_shapes())
    el = st.sampled_from([-2.0, -1.0, 0.0, 1.0, 2.0, float("nan"), float("inf"), -float("inf")])
    a = draw(hnp.arrays(np.float32, sa, elements=el))
    b = draw(hnp.arrays(np.float32, sb, elements=el))
    return a, b


@FEW
@given(data=st.data())
def test_comparisons_and_logical_ops_match_numpy(data):
    a, b = data.draw(comparable_pair())
    ta, tb = fg.tensor(a), fg.tensor(b)
    cases = [
        (fg.lt(ta, tb), np.less(a, b)), (ta <= tb, np.less_equal(a, b)),
        (ta > tb, np.greater(a, b)), (fg.ge(ta, tb), np.greater_equal(a, b)),
        (ta == tb, np.equal(a, b)), (ta.ne(tb), np.not_equal(a, b)),
        (ta > 0.5, a > np.float32(0.5)), (1 >= ta, np.float32(1) >= a),
        (fg.logical_not(ta), np.logical_not(a)), (fg.logical_and(ta, tb), np.logical_and(a, b)),
        (ta.logical_or(tb), np.logical_or(a, b)), (fg.logical_xor(ta, tb), np.logical_xor(a, b)),
        (fg.isnan(ta), np.isnan(a)), (ta.isinf(), np.isinf(a)), (fg.isfinite(ta), np.isfinite(a)),
        (fg.isclose(ta, tb), np.isclose(a, b, rtol=1e-5, atol=1e-8)),
        (ta.isclose(tb, equal_nan=True), np.isclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True)),
        (fg.isclose(ta, tb, rtol=0.6, atol=0.5), np.isclose(a, b, rtol=0.6, atol=0.5)),
    ]
    for got, want in cases:
        assert got.dtype == fg.bool
        assert tuple(got.shape) == want.shape
        np.testing.assert_array_equal(got.numpy(), want)
    assert fg.allclose(ta, tb) == np.allclose(a, b, rtol=1e-5, atol=1e-8)
    assert ta.allclose(tb, equal_nan=True) == np.allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True)
    assert fg.equal(ta, tb) == (a.shape == b.shape and bool(np.all(a == b)))
    assert fg.equal(ta, ta) == (not np.isnan(a).any())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_predicates_on_long_contiguous_and_transposed_input(dtype):
    """The predicate family runs in the vectorised loop (a vector of lanes
    compared and packed to bytes): every special value at every lane and in
    the tail, on a contiguous and a transposed input (whose layout it keeps)."""
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.0,
                         np.finfo(dtype).max, np.finfo(dtype).tiny, -np.nan], dtype)
    a = np.resize(specials, 37 * 29).reshape(37, 29)
    for t, ref in [(fg.from_numpy(a.copy()), a), (fg.from_numpy(a.copy()).t(), a.T)]:
        for fn, want in [(fg.isnan, np.isnan), (fg.isinf, np.isinf), (fg.isfinite, np.isfinite),
                         (fg.signbit, np.signbit)]:
            got = fn(t)
            assert got.dtype == fg.bool and got.stride() == t.stride()
            np.testing.assert_array_equal(got.numpy(), want(ref))
