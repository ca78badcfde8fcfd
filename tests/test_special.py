"""``ferrograd.special``: values against SciPy (float64 and float32), NaN and
infinity behaviour as PyTorch's, gradients to second order against finite
differences on hypothesis-drawn shapes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.special as S
from ferrograd.testing import check_op
from ferrograd.testing import strategies as fst
from helpers import FEW, op_shapes

sp = pytest.importorskip("scipy.special")

N = FEW.max_examples


def points(lo, hi, away_from=None):
    if away_from:
        elements = fst.floats(lo, hi, away_from=away_from, margin=0.05)
        return fst.tensors(dtype=fg.float64, shape=op_shapes(), elements=elements,
                           requires_grad=True)
    return fst.differentiable_points("special", shape=op_shapes(), low=lo, high=hi)


def _log_ndtr_ref(x):
    return sp.log_ndtr(x)


# (name, ferrograd fn, scipy fn, value grid, gradient range, float64 rtol)
UNARY = [
    ("expm1", S.expm1, np.expm1, np.linspace(-5, 5, 41), (-2, 2), 1e-15),
    ("exp2", S.exp2, np.exp2, np.linspace(-5, 5, 41), (-2, 2), 1e-15),
    ("log1p", S.log1p, np.log1p, np.linspace(-0.9, 5, 41), (-0.5, 2), 1e-15),
    ("erf", S.erf, sp.erf, np.linspace(-4, 4, 41), (-2, 2), 1e-15),
    ("erfc", S.erfc, sp.erfc, np.linspace(-4, 20, 49), (-2, 2), 1e-14),
    ("erfinv", S.erfinv, sp.erfinv, np.linspace(-0.999, 0.999, 41), (-0.9, 0.9), 1e-14),
    ("erfcx", S.erfcx, sp.erfcx, np.concatenate([np.linspace(-20, 30, 101), [1e3, 1e6]]),
     (-2, 3), 1e-13),
    ("expit", S.expit, sp.expit, np.linspace(-30, 30, 61), (-4, 4), 1e-15),
    ("logit", S.logit, sp.logit, np.linspace(0.001, 0.999, 41), (0.1, 0.9), 1e-14),
    ("gammaln", S.gammaln, sp.gammaln, np.linspace(0.05, 50, 61), (0.2, 5), 1e-13),
    ("digamma", S.digamma, sp.digamma, np.linspace(0.05, 50, 61), (0.2, 5), 1e-13),
    ("psi", S.psi, sp.psi, np.linspace(0.05, 50, 61), (0.2, 5), 1e-13),
    ("i0", S.i0, sp.i0, np.linspace(-700, 700, 141), (-5, 5), 1e-13),
    ("i0e", S.i0e, sp.i0e, np.linspace(-800, 800, 161), (-5, 5), 1e-13),
    ("i1", S.i1, sp.i1, np.linspace(-700, 700, 141), (-5, 5), 1e-13),
    ("i1e", S.i1e, sp.i1e, np.linspace(-800, 800, 161), (-5, 5), 1e-13),
    ("ndtr", S.ndtr, sp.ndtr, np.linspace(-30, 10, 81), (-3, 3), 1e-12),
    ("ndtri", S.ndtri, sp.ndtri,
     np.concatenate([np.linspace(0.001, 0.999, 41), [1e-300, 1e-100, 1e-20, 1 - 1e-10]]),
     (0.05, 0.95), 1e-13),
    ("log_ndtr", S.log_ndtr, _log_ndtr_ref, np.linspace(-1e3, 40, 211), (-10, 5), 1e-12),
    ("sinc", S.sinc, np.sinc, np.linspace(-5, 5, 41), (-2, 2), 1e-14),
    ("entr", S.entr, sp.entr, np.linspace(0.001, 10, 41), (0.1, 5), 1e-14),
]
IDS = [u[0] for u in UNARY]


@pytest.mark.parametrize("name,f,ref,grid,grange,rtol", UNARY, ids=IDS)
def test_values_float64(name, f, ref, grid, grange, rtol):
    x = np.asarray(grid, np.float64)
    got = f(fg.tensor(x)).numpy()
    np.testing.assert_allclose(got, ref(x), rtol=rtol, atol=0)


@pytest.mark.parametrize("name,f,ref,grid,grange,rtol", UNARY, ids=IDS)
def test_values_float32(name, f, ref, grid, grange, rtol):
    x = np.asarray(grid, np.float32)
    # Only points whose value float32 can hold.
    x = x[np.abs(ref(x.astype(np.float64))) < np.finfo(np.float32).max]
    got = f(fg.tensor(x))
    assert got.dtype == fg.float32
    want = ref(x.astype(np.float64))
    # A few float32 ulps of the float64 reference at the float32 input (sinc, whose
    # zeros come from sin(pi x), within a few ulps of its scale).
    atol = 4e-7 if name == "sinc" else 1e-30
    np.testing.assert_allclose(got.numpy(), want, rtol=4e-6, atol=atol)


@pytest.mark.parametrize("name,f,ref,grid,grange,rtol", UNARY, ids=IDS)
def test_gradients(name, f, ref, grid, grange, rtol):
    lo, hi = grange
    away = [0.0] if name in ("i1", "i1e", "i0e", "sinc") else None
    assert check_op(f, points(lo, hi, away), max_examples=N)


def test_i1_and_i1e_gradient_at_zero_is_one_half():
    for f in (S.i1, S.i1e):
        x = fg.zeros(3, dtype=fg.float64, requires_grad=True)
        f(x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [0.5, 0.5, 0.5])


def test_nan_and_infinities_as_pytorch():
    inf, nan = math.inf, math.nan
    t = fg.tensor([-inf, inf, nan], dtype=fg.float64)
    np.testing.assert_array_equal(S.i0(t).numpy(), [inf, inf, nan])
    np.testing.assert_array_equal(S.i0e(t).numpy(), [0.0, 0.0, nan])
    np.testing.assert_array_equal(S.i1(t).numpy(), [-inf, inf, nan])
    np.testing.assert_array_equal(S.i1e(t).numpy(), [0.0, 0.0, nan])
    np.testing.assert_array_equal(S.erfcx(t).numpy(), [inf, 0.0, nan])
    np.testing.assert_array_equal(S.log_ndtr(t).numpy(), [-inf, 0.0, nan])
    np.testing.assert_array_equal(S.ndtr(t).numpy(), [0.0, 1.0, nan])
    # ndtri: +-inf at 0 and 1, NaN outside [0, 1] (PyTorch's values).
    p = fg.tensor([0.0, 1.0, 1.5, -0.5, nan], dtype=fg.float64)
    np.testing.assert_array_equal(S.ndtri(p).numpy(), [-inf, inf, nan, nan, nan])
    # entr: 0 at 0, -inf below 0, NaN at NaN.
    e = fg.tensor([0.0, -1.0, nan], dtype=fg.float64)
    np.testing.assert_array_equal(S.entr(e).numpy(), [0.0, -inf, nan])


def test_entr_gradient_edges_as_pytorch():
    # PyTorch's rule -(1 + log x): +inf at 0, NaN below 0.
    x = fg.tensor([0.0, -1.0, 0.5], dtype=fg.float64, requires_grad=True)
    S.entr(x).sum().backward()
    g = x.grad.numpy()
    assert g[0] == math.inf and math.isnan(g[1])
    assert g[2] == pytest.approx(-(1 + math.log(0.5)))


@st.composite
def _xlog1py_args(draw):
    shapes = draw(fst.mutually_broadcastable_shapes(2, max_dims=3, max_side=3))
    x = draw(fst.tensors(dtype=fg.float64, shape=shapes[0], elements=fst.floats(-2, 2),
                         requires_grad=True))
    y = draw(fst.tensors(dtype=fg.float64, shape=shapes[1], elements=fst.floats(-0.5, 3),
                         requires_grad=True))
    return x, y


@FEW
@given(args=_xlog1py_args())
def test_xlog1py_values(args):
    x, y = args
    np.testing.assert_allclose(S.xlog1py(x, y).detach().numpy(),
                               sp.xlog1py(x.detach().numpy(), y.detach().numpy()), rtol=1e-14)


def test_xlog1py_gradients():
    assert check_op(S.xlog1py, args=_xlog1py_args(), max_examples=N)


def test_xlog1py_zero_cases_as_pytorch():
    x = fg.tensor([0.0, 0.0, 1.0], dtype=fg.float64, requires_grad=True)
    y = fg.tensor([-1.0, 2.0, -1.0], dtype=fg.float64, requires_grad=True)
    out = S.xlog1py(x, y)
    np.testing.assert_array_equal(out.detach().numpy()[:2], [0.0, 0.0])
    assert out.detach().numpy()[2] == -math.inf
    out.sum().backward()
    # PyTorch 2.15: x.grad = [0, log 3, -inf], y.grad = [nan, 0, inf].
    np.testing.assert_allclose(x.grad.numpy(), [0.0, math.log(3), -math.inf])
    g = y.grad.numpy()
    assert math.isnan(g[0]) and g[1] == 0 and g[2] == math.inf
    assert S.xlog1py(fg.tensor([0.0]), fg.tensor([math.nan])).isnan().all()


def test_xlogy_matches_scipy():
    x = np.array([0.0, 0.5, 2.0, 0.0])
    y = np.array([0.0, 3.0, 0.25, 5.0])
    np.testing.assert_allclose(S.xlogy(fg.tensor(x), fg.tensor(y)).numpy(), sp.xlogy(x, y))


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_polygamma_values_and_gradients(n):
    x = np.linspace(0.1, 30, 50)
    np.testing.assert_allclose(S.polygamma(n, fg.tensor(x)).numpy(), sp.polygamma(n, x),
                               rtol=1e-12)
    assert check_op(lambda t: S.polygamma(n, t), points(0.3, 4), max_examples=N)


@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_multigammaln(p):
    x = np.linspace((p - 1) / 2 + 0.1, 20, 30)
    want = np.array([sp.multigammaln(v, p) for v in x])
    np.testing.assert_allclose(S.multigammaln(fg.tensor(x), p).numpy(), want, rtol=1e-13)
    assert check_op(lambda t: S.multigammaln(t, p), points((p - 1) / 2 + 0.3, 5),
                    max_examples=N)
    # The top-level name and the Tensor method are the same function.
    t = fg.tensor(x)
    np.testing.assert_array_equal(fg.mvlgamma(t, p).numpy(), t.mvlgamma(p).numpy())
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        S.multigammaln(t, 0)
    # PyTorch's domain check: every element above (p - 1) / 2 (NaN fails it).
    if p > 1:
        for bad in [(p - 1) / 2, float("nan")]:
            low = fg.tensor(np.append(x, bad))
            with pytest.raises(RuntimeError, match=r"All elements must be greater than \(p-1\)/2"):
                fg.mvlgamma(low, p)


def test_zeta_values_domain_and_gradient():
    s = np.array([2.0, 3.5, 1.5, 10.0, 2.0, 4.0, 1.0, 0.5, 2.5])
    q = np.array([1.0, 0.3, 7.0, 2.0, -2.5, -3.0, 1.0, 1.0, -0.5])
    got = S.zeta(fg.tensor(s), fg.tensor(q)).numpy()
    want = sp.zeta(s, q)
    # SciPy and PyTorch (Cephes) agree: inf at s = 1 and at non-positive integer q,
    # NaN for s < 1 and for negative q with non-integer s.
    np.testing.assert_allclose(got, want, rtol=1e-13, equal_nan=True)
    assert np.isinf(got[5]) and np.isinf(got[6]) and np.isnan(got[7]) and np.isnan(got[8])
    # Numbers on either side.
    assert float(S.zeta(2.0, fg.tensor([1.0], dtype=fg.float64))) == pytest.approx(math.pi**2 / 6)
    # d/dq zeta(s, q) = -s zeta(s + 1, q), to second order.
    qq = fst.floats(0.5, 3)
    assert check_op(lambda qv: S.zeta(fg.tensor(2.5, dtype=fg.float64), qv),
                    fst.tensors(dtype=fg.float64, shape=op_shapes(), elements=qq,
                                requires_grad=True), max_examples=N)
    x = fg.tensor([2.0], dtype=fg.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        S.zeta(x, fg.tensor([1.0], dtype=fg.float64)).backward()


def test_logit_eps_clamps():
    x = fg.tensor([0.0, 0.3, 1.0], dtype=fg.float64)
    got = S.logit(x, eps=1e-6).numpy()
    np.testing.assert_allclose(got, sp.logit(np.clip([0.0, 0.3, 1.0], 1e-6, 1 - 1e-6)))


def test_softmax_family_and_round():
    x = fg.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]], dtype=fg.float64)
    a = x.numpy()
    np.testing.assert_allclose(S.softmax(x, 1).numpy(), sp.softmax(a, axis=1), rtol=1e-14)
    np.testing.assert_allclose(S.log_softmax(x, 0).numpy(), sp.log_softmax(a, axis=0),
                               rtol=1e-14)
    np.testing.assert_allclose(S.logsumexp(x, 1).numpy(), sp.logsumexp(a, axis=1), rtol=1e-14)
    assert S.softmax(x.float(), 1, dtype=fg.float64).dtype == fg.float64
    np.testing.assert_allclose(S.round(fg.tensor([1.2345, 2.5]), decimals=2).numpy(),
                               [1.23, 2.5], rtol=1e-6)


def test_top_level_and_tensor_names():
    x = fg.tensor([0.5, 1.5], dtype=fg.float64)
    np.testing.assert_array_equal(fg.i0(x).numpy(), S.i0(x).numpy())
    np.testing.assert_array_equal(x.i0().numpy(), S.i0(x).numpy())
    y = x.clone()
    y.i0_()
    np.testing.assert_array_equal(y.numpy(), S.i0(x).numpy())
    np.testing.assert_array_equal(x.polygamma(1).numpy(), fg.polygamma(1, x).numpy())
    assert fg.special is S


def test_incomplete_gamma_values_edges_and_gradients():
    a = np.array([0.1, 0.5, 1.0, 2.5, 7.0, 30.0, 150.0])
    x = np.array([0.01, 0.7, 1.0, 3.0, 9.0, 25.0, 160.0])
    A, X = np.meshgrid(a, x)
    np.testing.assert_allclose(S.gammainc(fg.tensor(A), fg.tensor(X)).numpy(),
                               sp.gammainc(A, X), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(S.gammaincc(fg.tensor(A), fg.tensor(X)).numpy(),
                               sp.gammaincc(A, X), rtol=1e-11, atol=1e-300)
    # float32 within a few ulps of the float64 reference.
    np.testing.assert_allclose(S.gammainc(fg.tensor(A).float(), fg.tensor(X).float()).numpy(),
                               sp.gammainc(A.astype(np.float32), X.astype(np.float32)),
                               rtol=4e-6, atol=1e-37)
    # PyTorch 2.15's values at the edges.
    inf, nan = math.inf, math.nan
    ea = fg.tensor([0.0, 0.0, -1.0, 1.0, inf, inf, 2.0, 2.0, 2.0], dtype=fg.float64)
    ex = fg.tensor([0.0, 1.0, 1.0, -1.0, 1.0, inf, 0.0, inf, nan], dtype=fg.float64)
    np.testing.assert_array_equal(S.gammainc(ea, ex).numpy(),
                                  [nan, 1.0, nan, nan, 0.0, nan, 0.0, 1.0, nan])
    np.testing.assert_array_equal(S.gammaincc(ea, ex).numpy(),
                                  [nan, 0.0, nan, nan, 1.0, nan, 1.0, 0.0, nan])
    assert fg.igamma is not None and fg.tensor([2.0]).igammac(fg.tensor([1.0])).item() == (
        pytest.approx(sp.gammaincc(2.0, 1.0)))
    for f in (S.gammainc, S.gammaincc):
        assert check_op(lambda xv, f=f: f(fg.tensor(2.5, dtype=fg.float64), xv),
                        points(0.2, 6), max_examples=N)
    av = fg.tensor([2.0], dtype=fg.float64, requires_grad=True)
    with pytest.raises(NotImplementedError,
                       match="the derivative for 'igamma: input' is not implemented"):
        S.gammainc(av, fg.tensor([1.0], dtype=fg.float64)).backward()
