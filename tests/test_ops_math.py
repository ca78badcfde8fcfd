"""The binary math functions (atan2, hypot, logaddexp, xlogy, remainder, ...), the
integer rules of remainder/fmod/floor_divide, dtype promotion, special values of the
special functions, nan_to_num and polygamma, and the ops under vmap and compile.

Unary rows (acos, erfinv, lgamma, ...) live in test_ops_elementwise.py. References are
NumPy, the math module and closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ferrograd as fg
from ferrograd.testing import check_op
from ferrograd.testing import strategies as fst
from helpers import FEW, close32, pair_shapes, values

N = FEW.max_examples


@st.composite
def broadcast_pair(draw, lo_a=-2.0, hi_a=2.0, lo_b=-2.0, hi_b=2.0, away=None):
    """Two float64 leaves of mutually broadcastable shapes; ``away(a, b)`` (on the
    broadcast arrays) rejects draws near a kink."""
    sa, sb = draw(fst.mutually_broadcastable_shapes(2, max_dims=3, min_side=0, max_side=3))
    a = draw(fst.tensors(shape=sa, elements=fst.floats(lo_a, hi_a), requires_grad=True))
    b = draw(fst.tensors(shape=sb, elements=fst.floats(lo_b, hi_b), requires_grad=True))
    if away is not None:
        x, y = np.broadcast_arrays(a.detach().numpy(), b.detach().numpy())
        assume(away(x, y))
    return a, b


def _not_near_integer(q, gap=0.02):
    return np.all(np.abs(q - np.round(q)) > gap)


def _off_branch_cut(a, b):
    """atan2 jumps by 2 pi across a = 0 where b < 0, and is singular at the origin."""
    return np.all(np.hypot(a, b) > 0.1) and not np.any((np.abs(a) < 0.05) & (b < 0))


# (name, function, NumPy reference, argument strategy, value ranges of a and b)
BINARY = [
    ("atan2", fg.atan2, np.arctan2, broadcast_pair(away=_off_branch_cut), (-2, 2), (-2, 2)),
    ("arctan2", fg.arctan2, np.arctan2, broadcast_pair(away=_off_branch_cut), (-2, 2), (-2, 2)),
    ("hypot", fg.hypot, np.hypot,
     broadcast_pair(away=lambda a, b: np.all(np.hypot(a, b) > 0.1)), (-2, 2), (-2, 2)),
    ("logaddexp", fg.logaddexp, np.logaddexp, broadcast_pair(), (-3, 3), (-3, 3)),
    ("logaddexp2", fg.logaddexp2, np.logaddexp2, broadcast_pair(), (-3, 3), (-3, 3)),
    ("xlogy", fg.xlogy, lambda x, y: x * np.log(y),
     broadcast_pair(lo_b=0.2, hi_b=3.0), (-2, 2), (0.2, 3)),
    ("copysign", fg.copysign, np.copysign,
     broadcast_pair(away=lambda a, b: np.all(np.abs(a) > 0.05) and np.all(np.abs(b) > 0.05)),
     (-2, 2), (-2, 2)),
    ("fmax", fg.fmax, np.fmax,
     broadcast_pair(away=lambda a, b: np.all(np.abs(a - b) > 0.05)), (-2, 2), (-2, 2)),
    ("fmin", fg.fmin, np.fmin,
     broadcast_pair(away=lambda a, b: np.all(np.abs(a - b) > 0.05)), (-2, 2), (-2, 2)),
    ("remainder", fg.remainder, np.mod,
     broadcast_pair(lo_b=0.3, hi_b=2.0, away=lambda a, b: _not_near_integer(a / b)),
     (-3, 3), (0.3, 2)),
    ("fmod", fg.fmod, np.fmod,
     broadcast_pair(lo_b=-2.0, hi_b=-0.3, away=lambda a, b: _not_near_integer(a / b)),
     (-3, 3), (-2, -0.3)),
    ("float_power", fg.float_power, lambda a, b: np.power(a.astype(np.float64), b),
     broadcast_pair(lo_a=0.3, hi_a=2.0), (0.3, 2), (-2, 2)),
    ("divide", fg.divide, np.divide, broadcast_pair(lo_b=0.3, hi_b=2.0), (-2, 2), (0.3, 2)),
    ("true_divide", fg.true_divide, np.divide, broadcast_pair(lo_b=0.3, hi_b=2.0), (-2, 2),
     (0.3, 2)),
    ("multiply", fg.multiply, np.multiply, broadcast_pair(), (-2, 2), (-2, 2)),
    ("subtract", fg.subtract, np.subtract, broadcast_pair(), (-2, 2), (-2, 2)),
    ("clamp_min", fg.clamp_min, np.maximum,
     broadcast_pair(away=lambda a, b: np.all(np.abs(a - b) > 0.05)), (-2, 2), (-2, 2)),
    ("clamp_max", fg.clamp_max, np.minimum,
     broadcast_pair(away=lambda a, b: np.all(np.abs(a - b) > 0.05)), (-2, 2), (-2, 2)),
]  # fmt: skip


@pytest.mark.parametrize("name,f,npf,args,ra,rb", BINARY, ids=[b[0] for b in BINARY])
def test_binary_grads(name, f, npf, args, ra, rb):
    assert check_op(f, args=args, max_examples=N)


@pytest.mark.parametrize("name,f,npf,args,ra,rb", BINARY, ids=[b[0] for b in BINARY])
@FEW
@given(data=st.data())
def test_binary_values(name, f, npf, args, ra, rb, data):
    sa, sb = data.draw(pair_shapes())
    a, b = data.draw(values(sa, *ra)), data.draw(values(sb, *rb))
    if name == "float_power":
        got = f(fg.tensor(a), fg.tensor(b))
        assert got.dtype == fg.float64
        np.testing.assert_allclose(got.numpy(), npf(a, b.astype(np.float64)), rtol=1e-6)
    else:
        close32(f, npf, a, b, rtol=1e-5, atol=1e-6)
    # The method and a number operand spell the same op.
    ta, tb = fg.tensor(a), fg.tensor(b)
    np.testing.assert_array_equal(getattr(ta, name)(tb).numpy(), f(ta, tb).numpy())
    s = float(np.float32(rb[0] + 0.125))
    np.testing.assert_array_equal(f(ta, s).numpy(), f(ta, fg.tensor(s)).numpy())


def test_integer_remainder_fmod_floor_divide_follow_pytorch_signs():
    a = fg.tensor([5, -5, 5, -5, 7, 0])
    b = fg.tensor([3, 3, -3, -3, -2, 4])
    # remainder: the divisor's sign, as Python's %; fmod: the dividend's.
    assert fg.remainder(a, b).tolist() == [x % y for x, y in zip(a.tolist(), b.tolist())]
    assert fg.fmod(a, b).tolist() == [int(math.fmod(x, y)) for x, y in zip(a.tolist(), b.tolist())]
    assert fg.floor_divide(a, b).tolist() == [x // y for x, y in zip(a.tolist(), b.tolist())]
    for f in (fg.remainder, fg.fmod, fg.floor_divide):
        assert f(a, b).dtype == fg.int64
    assert fg.remainder(a, 2.5).dtype == fg.float32
    assert a.remainder(3).tolist() == [x % 3 for x in a.tolist()]


@pytest.mark.parametrize("f", [fg.remainder, fg.fmod, fg.floor_divide])
def test_integer_division_by_zero_raises(f):
    a = fg.tensor([5, 6])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        f(a, fg.tensor([1, 0]))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        f(a, 0)
    # Floats divide by zero as IEEE says.
    assert math.isnan(fg.remainder(fg.tensor([1.0]), 0.0).item())


@FEW
@given(data=st.data())
def test_float_floor_divide_and_remainder_match_python(data):
    sa, sb = data.draw(pair_shapes())
    a = data.draw(values(sa, -5, 5)).astype(np.float64)
    b = data.draw(values(sb, 0.3, 3)).astype(np.float64)
    b = b * np.where(data.draw(values(sb, -1, 1)) < 0, -1.0, 1.0)
    x, y = np.broadcast_arrays(a, b)
    want_q = np.vectorize(lambda p, q: p // q, otypes=[np.float64])(x, y)
    want_r = np.vectorize(lambda p, q: p % q, otypes=[np.float64])(x, y)
    ta, tb = fg.tensor(a, dtype=fg.float64), fg.tensor(b, dtype=fg.float64)
    np.testing.assert_array_equal(fg.floor_divide(ta, tb).numpy(), want_q)
    np.testing.assert_allclose(fg.remainder(ta, tb).numpy(), want_r,
                               rtol=0, atol=1e-12)


def test_divisor_gradients_of_remainder_and_fmod():
    a = fg.tensor([5.5, -5.5, 3.2], dtype=fg.float64, requires_grad=True)
    b = fg.tensor([2.0, 2.0, -1.5], dtype=fg.float64, requires_grad=True)
    fg.remainder(a, b).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0, 1.0]
    assert b.grad.tolist() == [-math.floor(5.5 / 2), -math.floor(-5.5 / 2), -math.floor(3.2 / -1.5)]
    a.grad = b.grad = None
    fg.fmod(a, b).sum().backward()
    assert b.grad.tolist() == [-math.trunc(5.5 / 2), -math.trunc(-5.5 / 2), -math.trunc(3.2 / -1.5)]


def test_integer_inputs_promote_to_float_for_float_functions():
    i = fg.tensor([1, 2, 3])
    for f in (fg.acos, fg.sinh, fg.log10, fg.exp2, fg.erfc, fg.erfinv, fg.lgamma, fg.digamma,
              fg.deg2rad, fg.sinc, fg.logit):
        assert f(i).dtype == fg.get_default_dtype(), f
    for f in (fg.atan2, fg.hypot, fg.logaddexp, fg.xlogy, fg.copysign):
        assert f(i, i).dtype == fg.get_default_dtype(), f
    assert fg.fmax(i, i).dtype == fg.int64
    assert fg.float_power(i, 2).dtype == fg.float64
    assert fg.sgn(i).tolist() == [1, 1, 1] and fg.sgn(i).dtype == fg.int64
    with pytest.raises(RuntimeError, match="frac_cpu"):
        fg.frac(i)


def test_non_differentiable_results_carry_no_grad():
    x = fg.tensor([-1.5, 0.0, 2.0], requires_grad=True)
    assert fg.signbit(x).dtype == fg.bool and not fg.signbit(x).requires_grad
    assert not fg.greater(x, 0).requires_grad
    assert fg.signbit(fg.tensor([-0.0, 0.0, -1.0, 1.0])).tolist() == [True, False, True, False]
    assert fg.signbit(fg.tensor([-2, 0, 3])).tolist() == [True, False, False]
    assert not fg.floor_divide(x, 2).requires_grad
    assert fg.heaviside(x, fg.tensor(0.5)).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(RuntimeError, match="different dtypes"):
        fg.heaviside(x, fg.tensor(1))


def test_comparison_and_arithmetic_aliases():
    a, b = fg.tensor([1.0, 2.0, 3.0]), fg.tensor([2.0, 2.0, 2.0])
    for alias, op in [("greater", "gt"), ("greater_equal", "ge"), ("less", "lt"),
                      ("less_equal", "le"), ("not_equal", "ne"), ("divide", "div"),
                      ("true_divide", "div"), ("multiply", "mul")]:
        assert getattr(fg, alias)(a, b).tolist() == getattr(fg, op)(a, b).tolist()
        assert getattr(a, alias)(b).tolist() == getattr(fg, op)(a, b).tolist()
        assert getattr(a, alias)(2).tolist() == getattr(fg, op)(a, b).tolist()
    assert fg.negative(a).tolist() == [-1.0, -2.0, -3.0]
    assert fg.positive(a) is a and a.positive() is a
    with pytest.raises(RuntimeError, match="bool tensor"):
        fg.positive(fg.tensor([True]))
    # clamp_min/clamp_max with a tensor bound: a tie splits the gradient between the
    # input and the bound, as maximum does (PyTorch 2.15).
    x = fg.tensor([0.5, 1.0, 2.0], requires_grad=True)
    m = fg.tensor([1.0, 1.0, 1.0], requires_grad=True)
    fg.clamp_min(x, m).sum().backward()
    assert x.grad.tolist() == [0.0, 0.5, 1.0] and m.grad.tolist() == [1.0, 0.5, 0.0]
    assert x.clamp_max(1.0).tolist() == [0.5, 1.0, 1.0]
    assert fg.absolute(-a).tolist() == [1.0, 2.0, 3.0]


def test_special_values():
    euler = 0.5772156649015329
    d = fg.digamma(fg.tensor([1.0, 0.5, 2.0, 0.0, -1.0, -0.5], dtype=fg.float64)).tolist()
    np.testing.assert_allclose(d[:3], [-euler, -euler - 2 * math.log(2), 1 - euler], rtol=1e-14)
    assert d[3] == -math.inf and math.isnan(d[4])
    # psi(1 - x) - psi(x) = pi / tan(pi x) (reflection): psi(-0.5) = psi(1.5) + pi/tan(-pi/2)... = 2 - euler - 2 ln 2
    np.testing.assert_allclose(d[5], 2 - euler - 2 * math.log(2), rtol=1e-13)
    # polygamma(1, 1) = pi^2/6, polygamma(2, 1) = -2 zeta(3), polygamma(3, 1/2) = pi^4.
    p = fg.tensor([1.0, 0.5], dtype=fg.float64)
    np.testing.assert_allclose(fg.polygamma(1, p).tolist(), [math.pi**2 / 6, math.pi**2 / 2],
                               rtol=1e-13)
    np.testing.assert_allclose(p.polygamma(2)[0].item(), -2 * 1.2020569031595942, rtol=1e-13)
    np.testing.assert_allclose(fg.polygamma(3, p)[1].item(), math.pi**4, rtol=1e-13)
    assert fg.polygamma(0, p).tolist() == fg.digamma(p).tolist()
    with pytest.raises(RuntimeError, match="negative n"):
        fg.polygamma(-1, p)
    # erfinv: the endpoints, and erf(erfinv(y)) = y to a few ulp.
    e = fg.erfinv(fg.tensor([1.0, -1.0, 0.0, 1.5], dtype=fg.float64)).tolist()
    assert e[0] == math.inf and e[1] == -math.inf and e[2] == 0.0 and math.isnan(e[3])
    ys = np.linspace(-0.999999, 0.999999, 101)
    xs = fg.erfinv(fg.tensor(ys)).numpy()
    np.testing.assert_allclose([math.erf(x) for x in xs], ys, rtol=0, atol=4e-16)
    # lgamma: log|Gamma| against math.lgamma, including negative non-integers.
    xs = [0.1, 0.5, 1.0, 2.5, 10.0, -0.5, -2.5]
    np.testing.assert_allclose(fg.lgamma(fg.tensor(xs, dtype=fg.float64)).tolist(),
                               [math.lgamma(x) for x in xs], rtol=1e-14)
    assert fg.sinc(fg.tensor([0.0])).item() == 1.0
    big = fg.tensor([1000.0, 1000.0, -math.inf])
    np.testing.assert_allclose(fg.logaddexp(big, fg.tensor([1000.0, 0.0, -math.inf])).tolist(),
                               [1000.0 + math.log(2), 1000.0, -math.inf])
    assert fg.xlogy(fg.tensor([0.0, 0.0]), fg.tensor([0.0, math.nan])).tolist()[0] == 0.0
    assert math.isnan(fg.xlogy(fg.tensor([0.0]), fg.tensor([math.nan])).item())
    assert fg.fmax(fg.tensor([math.nan, 1.0]), fg.tensor([2.0, math.nan])).tolist() == [2.0, 1.0]


def test_digamma_and_lgamma_second_order():
    # digamma's gradient is polygamma(1, x) (PolygammaBackward0), whose gradient is
    # polygamma(2, x): gradcheck and gradgradcheck exercise all three.
    for f in (fg.digamma, fg.lgamma, lambda x: fg.polygamma(2, x)):
        assert check_op(f, fst.differentiable_points("digamma", shape=(2, 3), high=4.0),
                        max_examples=N)


def test_xlogy_gradient_at_zero():
    x = fg.tensor([0.0, 0.0, 2.0], dtype=fg.float64, requires_grad=True)
    y = fg.tensor([0.0, 3.0, 3.0], dtype=fg.float64, requires_grad=True)
    fg.xlogy(x, y).sum().backward()
    # 0 where x == 0 and y <= 0 (PyTorch's rule), log(y) elsewhere.
    np.testing.assert_allclose(x.grad.tolist(), [0.0, math.log(3.0), math.log(3.0)])
    np.testing.assert_allclose(y.grad.tolist()[1:], [0.0, 2.0 / 3.0])


def test_nan_to_num():
    x = fg.tensor([math.nan, math.inf, -math.inf, 1.5])
    assert fg.nan_to_num(x).tolist()[0] == 0.0
    assert fg.nan_to_num(x).tolist()[1] == np.finfo(np.float32).max
    assert fg.nan_to_num(x).tolist()[2] == np.finfo(np.float32).min
    assert x.nan_to_num(nan=1.0, posinf=2.0, neginf=-2.0).tolist() == [1.0, 2.0, -2.0, 1.5]
    np.testing.assert_array_equal(fg.nan_to_num(x.double()).numpy(),
                                  np.nan_to_num(x.double().numpy()))
    y = x.clone()
    assert y.nan_to_num_(posinf=9.0) is y and y.tolist() == [0.0, 9.0, np.finfo(np.float32).min, 1.5]
    assert fg.nan_to_num(fg.tensor([1, 2])).tolist() == [1, 2]
    # The gradient passes where the input is finite.
    t = fg.tensor([1.0, math.inf, -math.inf, math.nan], dtype=fg.float64, requires_grad=True)
    fg.nan_to_num(t).sum().backward()
    assert t.grad.tolist() == [1.0, 0.0, 0.0, 0.0]
    assert check_op(fg.nan_to_num, fst.differentiable_points("nan_to_num", shape=(3,)),
                    max_examples=N)


def test_inplace_variants():
    x = fg.tensor([0.2, -0.4, 0.6], dtype=fg.float64)
    for name in ("acos", "asin", "atan", "sinh", "cosh", "asinh", "atanh", "log10", "exp2",
                 "erfc", "erfinv", "lgamma", "digamma", "deg2rad", "rad2deg", "sinc", "frac",
                 "fix", "sgn", "negative", "absolute", "arccos", "arctanh"):
        y = x.clone()
        assert getattr(y, name + "_")() is y
        np.testing.assert_array_equal(y.numpy(), getattr(fg, name)(x).numpy())
    leaf = fg.tensor([0.5], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.acos_()


def test_vmap_of_new_ops_is_per_sample():
    x = fg.rand(4, 3, dtype=fg.float64) * 0.8 + 0.1
    y = fg.rand(3, dtype=fg.float64) + 0.5
    for f in (fg.acos, fg.digamma, fg.erfinv, lambda t: fg.atan2(t, y),
              lambda t: fg.remainder(t, y), lambda t: t.hypot(y), lambda t: fg.xlogy(t, y),
              lambda t: fg.nan_to_num(t)):
        got = fg.func.vmap(f)(x)
        want = fg.stack([f(x[i]) for i in range(4)])
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_new_ops_replay_under_compile():
    @fg.compile(fullgraph=True)
    def step(a, b):
        return fg.atan2(a, b).acos() + fg.lgamma(b) - fg.remainder(a, b) * fg.logaddexp(a, b)

    def eager(a, b):
        return fg.atan2(a, b).acos() + fg.lgamma(b) - fg.remainder(a, b) * fg.logaddexp(a, b)

    for seed in range(4):
        fg.manual_seed(seed)
        a, b = fg.rand(5), fg.rand(5) + 0.5
        np.testing.assert_array_equal(step(a, b).numpy(), eager(a, b).numpy())
    # The later calls replayed one recorded tape holding the new ops.
    assert len(step.tapes) == 1
    ops = step.tapes[0].ops
    for name in ("atan2", "acos", "lgamma", "remainder", "logaddexp"):
        assert name in ops, ops
