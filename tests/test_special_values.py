"""NaN, infinities, signed zeros and subnormals through every op, against
references of PyTorch's behaviour.

One table row per op (or per variant of an op): how to call it, a NumPy or
closed-form reference of what PyTorch returns, and where the gradient
matters at a special value (NaN propagating or not, ties), the reference
gradient too. Each row runs on float32 and float64 inputs made of

    NaN, +inf, -inf, -0.0, 0.0, +-subnormal, +-1, 0.5, -2.5, 100, +-max

(all pairs of them for binary ops), and the result must match the
reference exactly in its NaN positions and infinities, closely elsewhere,
and in the sign of zero where the row says PyTorch defines it.

Where PyTorch's documented behaviour is not NumPy's the reference says so in
a comment (each such value was checked against PyTorch 2.15 on CPU):
``sign(nan)`` is 0, ``relu`` keeps NaN and ``-0.0``, ``heaviside(nan, v)`` is
0, softmax of a row whose maximum is infinite is NaN, every NaN is a value of
its own for ``unique``, ``searchsorted`` bisects with comparisons that are
false at NaN, ``max()``/``median()`` of all elements give their gradient to
the NaNs, ``clamp`` propagates a NaN bound. A few PyTorch results are
artefacts of its vectorised kernels rather than behaviour (``fmod`` by a
subnormal gives NaN there, float32 ``gelu(inf)`` is NaN, ``layer_norm``'s
float32 variance overflows); the rows follow the mathematical definition
PyTorch documents instead and say so.

A hypothesis test then runs the rows on shapes that are empty, size-one,
broadcast and strided, with the special values drawn at random, so that the
same results hold on every path a kernel takes.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg

NAN, INF = math.nan, math.inf


def specials(np_dtype):
    info = np.finfo(np_dtype)
    tiny = float(info.smallest_subnormal)
    return np.array(
        [NAN, INF, -INF, -0.0, 0.0, tiny, -tiny, float(info.tiny) / 2, 1.0, -1.0, 0.5, -2.5,
         100.0, float(info.max), -float(info.max)],
        dtype=np_dtype,
    )


def pairs(np_dtype):
    s = specials(np_dtype)
    a, b = np.meshgrid(s, s, indexing="ij")
    return a.ravel(), b.ravel()


DTYPES = [(np.float32, "float32"), (np.float64, "float64")]

# ----- the reference helpers -----------------------------------------------------------


def _f64(fn):
    """An elementwise reference computed in float64 and rounded to the input's dtype."""

    def ref(*xs):
        dt = xs[0].dtype
        with np.errstate(all="ignore"):
            out = fn(*(np.asarray(x, dtype=np.float64) for x in xs))
        return np.asarray(out).astype(dt) if np.asarray(out).dtype.kind == "f" else out

    return ref


def _native(fn):
    """An elementwise reference computed in the input's own dtype, for formulas
    whose intermediate overflow PyTorch's result shows (a loss's terms)."""

    def ref(*xs):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*xs))

    return ref


def torch_sign(x):
    # PyTorch's (x > 0) - (x < 0): 0 (positive) for NaN and both zeros.
    return ((x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)).astype(x.dtype)


def softmax_ref(x, axis):
    # PyTorch subtracts the row maximum whatever it is: an infinite maximum
    # (inf - inf) or a NaN makes the whole row NaN.
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isnan(x).any(axis=axis, keepdims=True), np.nan, m)
        e = np.exp(x - m)
        return e / e.sum(axis=axis, keepdims=True)


def log_softmax_ref(x, axis):
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isnan(x).any(axis=axis, keepdims=True), np.nan, m)
        z = x - m
        return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def logsumexp_ref(x, axis):
    # PyTorch's logsumexp shifts by the maximum unless it is infinite, so rows
    # with +inf give inf and rows of -inf give -inf.
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isinf(m), 0.0, m)
        out = np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis)


def searchsorted_ref(seq, vals, right=False):
    # PyTorch's bisection: move right while not (seq[mid] >= v) (> v with
    # right=True); comparisons with NaN are false.
    out = []
    for v in np.ravel(vals):
        lo, hi = 0, len(seq)
        while lo < hi:
            mid = lo + (hi - lo) // 2
            m = seq[mid]
            go_right = not (m > v) if right else not (m >= v)
            lo, hi = (mid + 1, hi) if go_right else (lo, mid)
        out.append(lo)
    return np.array(out, dtype=np.int64).reshape(np.shape(vals))


def nan_first_max(x, axis=None):
    with np.errstate(invalid="ignore"):
        return np.max(x, axis=axis)


def nan_aware_even_share(x, result):
    """PyTorch's gradient of max()/min()/median() of all elements for an output
    gradient of 1: shared evenly among the NaNs if the result is NaN, else among
    the elements equal to it."""
    hit = np.isnan(x) if np.isnan(result) else (x == result)
    return hit / hit.sum()


# ----- comparison ----------------------------------------------------------------------


def assert_same(got, want, np_dtype, *, signed_zero=False, rtol=None, what=""):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if want.dtype.kind in "biu" or got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    bad = nan_g != nan_w
    both = ~nan_g & ~nan_w
    if rtol is None:
        rtol = 2e-6 if np_dtype == np.float32 else 1e-13
    atol = float(np.finfo(np_dtype).smallest_subnormal) * 4
    with np.errstate(all="ignore"):
        close = (g == w) | (np.abs(g - w) <= rtol * np.maximum(np.abs(g), np.abs(w)) + atol)
    close &= np.isinf(g) == np.isinf(w)
    bad |= both & ~close
    if signed_zero:
        bad |= both & (g == 0) & (w == 0) & (np.signbit(g) != np.signbit(w))
    if bad.any():
        idx = np.flatnonzero(bad.ravel())[:8]
        detail = ", ".join(f"[{i}] got {g.ravel()[i]!r} want {w.ravel()[i]!r}" for i in idx)
        raise AssertionError(f"{what}: {bad.sum()} mismatches: {detail}")


# ----- the table -----------------------------------------------------------------------


class Row(NamedTuple):
    name: str
    call: Callable[..., Any]  # (lib, *tensors) -> tensor or tuple of tensors
    ref: Callable[..., Any]  # (*arrays) -> array or tuple of arrays
    inputs: Callable[[Any], list]  # np dtype -> list of arrays
    signed_zero: bool = False
    grad: Callable[..., Any] | None = None  # (*arrays, gout) -> tuple of input grads
    rtol: float | None = None
    grad_rtol: float | None = None


def unary_in(dt):
    return [specials(dt)]


def binary_in(dt):
    return list(pairs(dt))


def rows_in(dt):
    """A matrix whose rows exercise the reductions: special values, NaNs in
    several places, infinities of both signs, signed zeros, a plain row."""
    s = specials(dt)
    return [
        np.array(
            [
                s[:5],
                s[5:10],
                s[10:15],
                [1.0, 2.0, 3.0, 4.0, 5.0],
                [NAN, NAN, 1.0, -1.0, NAN],
                [INF, -INF, 0.0, 1.0, 2.0],
                [-0.0, 0.0, -0.0, 0.0, 1.0],
                [INF, INF, 1.0, 0.0, -1.0],
                [-INF, -INF, -INF, -INF, -INF],
            ],
            dtype=dt,
        )
    ]


def finite_rows_in(dt):
    return [np.delete(rows_in(dt)[0], 2, axis=0)]


def _var(x, axis, sqrt):
    with np.errstate(all="ignore"):
        v = np.var(x.astype(np.float64), axis=axis, ddof=1)
        return (np.sqrt(v) if sqrt else v).astype(x.dtype)


def unary(name, ref, *, signed_zero=True, grad=None, rtol=None, call=None):
    return Row(name, call or (lambda lib, x: getattr(lib, name)(x)), ref, unary_in,
               signed_zero, grad, rtol)


def binary(name, ref, *, signed_zero=True, grad=None, rtol=None, call=None):
    return Row(name, call or (lambda lib, a, b: getattr(lib, name)(a, b)), ref, binary_in,
               signed_zero, grad, rtol)


def fn_of(lib):
    return lib.nn.functional


def _where(c, a, b):
    return np.where(c, a, b)


def relu_ref(x):
    # PyTorch's relu is clamp_min(x, 0): `x < 0 ? 0 : x`, so NaN and -0.0 pass.
    return np.where(x < 0, np.zeros_like(x), x)


def relu_grad(x, g):
    # threshold_backward: 0 where the result is <= 0, so a NaN passes its gradient.
    return (np.where(relu_ref(x) <= 0, 0.0, g),)


def hardtanh_ref(x, lo=-1.0, hi=1.0):
    return np.where(x < lo, lo, np.where(x > hi, hi, x)).astype(x.dtype)


def hardtanh_grad(x, g, lo=-1.0, hi=1.0):
    # PyTorch's kernel: 0 where x <= lo or x >= hi, so a NaN passes its gradient. (Its
    # vectorised form, used from 8 or 16 elements on, tests the other way round and gives
    # 0 at a NaN; hardshrink's and softshrink's likewise. The rows follow the kernel's
    # definition, which does not depend on the length.)
    return (np.where((x <= lo) | (x >= hi), 0.0, g),)


def elu_ref(x, alpha=1.0, scale=1.0):
    with np.errstate(all="ignore"):
        return _f64(lambda v: np.where(v <= 0, scale * alpha * np.expm1(np.minimum(v, 0)),
                                       scale * v))(x)


def elu_grad(x, g, alpha=1.0, scale=1.0):
    with np.errstate(all="ignore"):
        return (np.where(x <= 0, g * scale * alpha * np.exp(np.minimum(x, 0)), g * scale),)


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def threshold_ref(x, th, value):
    return np.where(x <= th, value, x).astype(x.dtype)


def threshold_grad(x, g, th):
    return (np.where(x <= th, 0.0, g),)


def hardshrink_ref(x, lambd=0.5):
    return np.where(np.abs(x) <= lambd, 0.0, x).astype(x.dtype)


def hardshrink_grad(x, g, lambd=0.5):
    return (np.where((x >= -lambd) & (x <= lambd), 0.0, g),)


def softshrink_ref(x, lambd=0.5):
    # PyTorch: x - lambd above, x + lambd below, x * 0 between (keeps -0.0); NaN passes.
    with np.errstate(all="ignore"):
        return np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, x * 0)).astype(
            x.dtype)


def softshrink_grad(x, g, lambd=0.5):
    return (np.where((x >= -lambd) & (x <= lambd), 0.0, g),)


def hardswish_ref(x):
    # x * min(max(x + 3, 0), 6) / 6, the identity from 3 on (where PyTorch's kernel
    # overflows to inf near the largest float, x * 6 / 6).
    with np.errstate(all="ignore"):
        return _f64(lambda v: np.where(v >= 3, v, v * np.minimum(np.maximum(v + 3, 0), 6) / 6))(
            x)


def hardswish_grad(x, g):
    # PyTorch 2.15: 0 up to -3, (x / 3 + 0.5) strictly between, 1 from 3 on; NaN takes
    # the last branch.
    with np.errstate(all="ignore"):
        return (np.where(x <= -3, 0.0, np.where(x < 3, g * (x / 3 + 0.5), g)),)


def hardsigmoid_grad(x, g):
    return (np.where((x > -3) & (x < 3), g / 6, 0.0),)


def clamp_number_grad(x, g, lo, hi):
    inside = np.ones(x.shape, bool)
    if lo is not None:
        inside &= x > lo
    if hi is not None:
        inside &= x < hi
    return (np.where(inside, g, 0.0),)


def clamp_ref(x, lo, hi):
    out = x.copy()
    if lo is not None:
        out = np.where((out < lo) | np.isnan(lo), lo, out)
    if hi is not None:
        out = np.where((out > hi) | np.isnan(hi), hi, out)
    return out.astype(x.dtype)


def maximum_ref(a, b):
    # NaN propagates; a tie gives the second operand (so maximum(-0.0, 0.0) is 0.0).
    return np.where(np.isnan(a) | np.isnan(b), np.nan, np.where(a > b, a, b)).astype(a.dtype)


def minimum_ref(a, b):
    return np.where(np.isnan(a) | np.isnan(b), np.nan, np.where(a < b, a, b)).astype(a.dtype)


def extreme_grad(a, b, g, is_max):
    # PyTorch's maximum/minimum: a tie splits in halves, the loser gets nothing,
    # and at a NaN both operands get the gradient.
    lose_a = (a < b) if is_max else (a > b)
    lose_b = (b < a) if is_max else (b > a)
    tie = a == b
    ga = np.where(tie, g / 2, np.where(lose_a, 0.0, g))
    gb = np.where(tie, g / 2, np.where(lose_b, 0.0, g))
    return ga, gb


def fextreme_grad(a, b, g, is_max):
    # fmax/fmin: a tie splits; `a` wins where it is larger (smaller) or `b` is NaN.
    wins = ((a > b) if is_max else (a < b)) | np.isnan(b)
    wa = np.where(a == b, 0.5, np.where(wins, 1.0, 0.0))
    return g * wa, g * (1 - wa)


def heaviside_ref(x, v):
    # PyTorch: x == 0 ? v : (x > 0); so 0 for a NaN x.
    return np.where(x == 0, v, (x > 0).astype(x.dtype)).astype(x.dtype)


def pow_grad(a, b, g):
    # d/da: g * (b * a^(b-1)) in the input's dtype, taken as 0 where b == 0 (PyTorch
    # masks it, also at a = 0 or NaN).
    with np.errstate(all="ignore"):
        g = g.astype(a.dtype)
        ga = np.where(b == 0, a.dtype.type(0), g * (b * np.power(a, b - a.dtype.type(1))))
    return (ga,)


def atan2_grad(a, b, g):
    # PyTorch: g * b * recip and g * -a * recip in the input's dtype, with
    # recip = 1 / (a^2 + b^2) taken as 0 where infinite (the origin, or underflow).
    with np.errstate(all="ignore"):
        g = g.astype(a.dtype)
        recip = a.dtype.type(1) / (a * a + b * b)
        recip = np.where(np.isinf(recip), a.dtype.type(0), recip)
        return g * b * recip, g * -a * recip


def hypot_grad(a, b, g):
    # PyTorch: g * a / hypot(a, b), in that order and the input's dtype (NaN at the origin).
    with np.errstate(all="ignore"):
        g = g.astype(a.dtype)
        h = np.hypot(a, b)
        return g * a / h, g * b / h


def logit_grad(x, g):
    # PyTorch: NaN outside [0, 1], g / (x (1 - x)) inside.
    with np.errstate(all="ignore"):
        return (np.where((x < 0) | (x > 1), np.nan, g / (x.astype(np.float64) * (1 - x))),)


def abs_grad(x, g):
    return (g * torch_sign(x),)


def lerp_ref(a, b, w):
    # PyTorch's two forms, in the input's dtype: from `a` for |w| < 0.5, from `b` otherwise.
    w = a.dtype.type(w)
    with np.errstate(all="ignore"):
        out = a + w * (b - a) if abs(w) < 0.5 else b - (b - a) * (a.dtype.type(1) - w)
    return out.astype(a.dtype)


def full_extreme_call(name):
    return lambda lib, x: getattr(x, name)()


ROWS = [
    # ---- elementwise, one operand ----
    unary("neg", np.negative),
    unary("abs", np.abs, grad=abs_grad),
    # sign(nan) is 0 and sign(-0.0) is 0.0 in PyTorch.
    unary("sign", torch_sign),
    unary("sgn", torch_sign),
    unary("exp", _f64(np.exp), signed_zero=False),
    unary("expm1", _f64(np.expm1)),
    unary("exp2", _f64(np.exp2), signed_zero=False),
    unary("log", _f64(np.log), signed_zero=False),
    unary("log1p", _f64(np.log1p)),
    unary("log2", _f64(np.log2), signed_zero=False),
    unary("log10", _f64(np.log10), signed_zero=False),
    unary("sqrt", _f64(np.sqrt)),
    unary("rsqrt", _f64(lambda x: 1 / np.sqrt(x))),
    unary("reciprocal", _f64(lambda x: 1 / x)),
    unary("square", _f64(np.square), signed_zero=False),
    unary("sin", _f64(np.sin)),
    unary("cos", _f64(np.cos), signed_zero=False),
    unary("tan", _f64(np.tan)),
    unary("asin", _f64(np.arcsin)),
    unary("acos", _f64(np.arccos), signed_zero=False),
    unary("atan", _f64(np.arctan)),
    unary("sinh", _f64(np.sinh)),
    unary("cosh", _f64(np.cosh), signed_zero=False),
    unary("tanh", _f64(np.tanh)),
    unary("asinh", _f64(np.arcsinh)),
    unary("acosh", _f64(np.arccosh), signed_zero=False),
    unary("atanh", _f64(np.arctanh)),
    unary("sigmoid", _f64(lambda x: 1 / (1 + np.exp(-x))), signed_zero=False),
    unary("erf", _f64(np.vectorize(math.erf, otypes=[float]))),
    unary("erfc", _f64(np.vectorize(math.erfc, otypes=[float])), signed_zero=False),
    unary("floor", np.floor),
    unary("ceil", np.ceil),
    unary("trunc", np.trunc),
    unary("round", np.round),
    unary("frac", lambda x: (x - np.trunc(x)).astype(x.dtype), signed_zero=False),
    unary("deg2rad", _f64(np.deg2rad)),
    unary("rad2deg", _f64(np.rad2deg)),
    unary("signbit", np.signbit),
    unary("isnan", np.isnan),
    unary("isinf", np.isinf),
    unary("isfinite", np.isfinite),
    unary("logit", _f64(lambda x: np.log(x / (1 - x))), signed_zero=False, grad=logit_grad),
    unary("relu", relu_ref, grad=relu_grad),
    Row("relu_", lambda lib, x: x.clone().relu_(), relu_ref, unary_in, True, relu_grad),
    Row("F.relu(inplace)", lambda lib, x: fn_of(lib).relu(x.clone(), inplace=True), relu_ref,
        unary_in, True, relu_grad),
    Row("nn.ReLU", lambda lib, x: lib.nn.ReLU()(x), relu_ref, unary_in, True, relu_grad),
    Row("F.relu6", lambda lib, x: fn_of(lib).relu6(x), lambda x: hardtanh_ref(x, 0.0, 6.0),
        unary_in, True, lambda x, g: hardtanh_grad(x, g, 0.0, 6.0)),
    Row("F.hardtanh", lambda lib, x: fn_of(lib).hardtanh(x), hardtanh_ref, unary_in, True,
        hardtanh_grad),
    Row("F.elu", lambda lib, x: fn_of(lib).elu(x), elu_ref, unary_in, False, elu_grad),
    Row("F.selu", lambda lib, x: fn_of(lib).selu(x),
        lambda x: elu_ref(x, SELU_ALPHA, SELU_SCALE), unary_in, False,
        lambda x, g: elu_grad(x, g, SELU_ALPHA, SELU_SCALE), rtol=1e-5),
    Row("F.celu", lambda lib, x: fn_of(lib).celu(x), elu_ref, unary_in, False, elu_grad),
    Row("F.leaky_relu", lambda lib, x: fn_of(lib).leaky_relu(x, 0.1),
        lambda x: np.where(x > 0, x, x * x.dtype.type(0.1)).astype(x.dtype), unary_in, True,
        lambda x, g: (np.where(x > 0, g, g * 0.1),)),
    Row("F.threshold", lambda lib, x: fn_of(lib).threshold(x, 0.5, -3.0),
        lambda x: threshold_ref(x, 0.5, -3.0), unary_in, True,
        lambda x, g: threshold_grad(x, g, 0.5)),
    Row("F.threshold_", lambda lib, x: fn_of(lib).threshold_(x.clone(), 0.0, 5.0),
        lambda x: threshold_ref(x, 0.0, 5.0), unary_in, True,
        lambda x, g: threshold_grad(x, g, 0.0)),
    Row("nn.Threshold", lambda lib, x: lib.nn.Threshold(0.0, 5.0)(x),
        lambda x: threshold_ref(x, 0.0, 5.0), unary_in, True,
        lambda x, g: threshold_grad(x, g, 0.0)),
    Row("F.hardshrink", lambda lib, x: fn_of(lib).hardshrink(x), hardshrink_ref, unary_in,
        False, hardshrink_grad),
    Row("F.softshrink", lambda lib, x: fn_of(lib).softshrink(x), softshrink_ref, unary_in, True,
        softshrink_grad),
    Row("F.hardswish", lambda lib, x: fn_of(lib).hardswish(x), hardswish_ref, unary_in, True,
        hardswish_grad),
    Row("F.hardsigmoid", lambda lib, x: fn_of(lib).hardsigmoid(x),
        _f64(lambda v: np.minimum(np.maximum(v + 3, 0), 6) / 6), unary_in, False,
        hardsigmoid_grad, rtol=1e-6),
    # x / 2 * (1 + erf(x / sqrt 2)): inf at inf, NaN at -inf (-inf * 0), as PyTorch's
    # float64 kernel gives (its float32 one gives NaN at inf too, from its vectorised erf).
    Row("F.gelu", lambda lib, x: fn_of(lib).gelu(x),
        _f64(lambda v: np.where(np.isinf(v), np.where(v > 0, v, np.nan),
                                v * 0.5 * (1 + np.vectorize(math.erf, otypes=[float])(
                                    np.where(np.isfinite(v), v, 0) / math.sqrt(2))))),
        unary_in, False, rtol=1e-5),
    Row("F.silu", lambda lib, x: fn_of(lib).silu(x), _f64(lambda v: v / (1 + np.exp(-v))),
        unary_in, False, rtol=1e-5),
    Row("F.softsign", lambda lib, x: fn_of(lib).softsign(x), _f64(lambda v: v / (1 + np.abs(v))),
        unary_in, False),
    Row("F.softplus", lambda lib, x: fn_of(lib).softplus(x),
        _f64(lambda v: np.where(v > 20, v, np.log1p(np.exp(v)))), unary_in, False, rtol=1e-5),
    Row("F.mish", lambda lib, x: fn_of(lib).mish(x),
        _f64(lambda v: v * np.tanh(np.where(v > 20, v, np.log1p(np.exp(v))))), unary_in, False,
        rtol=1e-5),
    Row("F.tanhshrink", lambda lib, x: fn_of(lib).tanhshrink(x), _f64(lambda v: v - np.tanh(v)),
        unary_in, False, rtol=1e-5),
    Row("F.logsigmoid", lambda lib, x: fn_of(lib).logsigmoid(x),
        _f64(lambda v: np.minimum(v, 0) - np.log1p(np.exp(-np.abs(v)))), unary_in, False,
        rtol=1e-5),
    # ---- clamp ----
    Row("clamp(-1, 2)", lambda lib, x: lib.clamp(x, -1.0, 2.0),
        lambda x: clamp_ref(x, -1.0, 2.0), unary_in, True,
        lambda x, g: clamp_number_grad(x, g, -1.0, 2.0)),
    Row("clamp(min=0)", lambda lib, x: x.clamp(min=0.0), lambda x: clamp_ref(x, 0.0, None),
        unary_in, True, lambda x, g: clamp_number_grad(x, g, 0.0, None)),
    Row("clamp(max=0)", lambda lib, x: x.clamp(max=0.0), lambda x: clamp_ref(x, None, 0.0),
        unary_in, True, lambda x, g: clamp_number_grad(x, g, None, 0.0)),
    Row("clamp(2, -1)", lambda lib, x: lib.clamp(x, 2.0, -1.0),
        lambda x: clamp_ref(x, 2.0, -1.0), unary_in, True,
        lambda x, g: clamp_number_grad(x, g, 2.0, -1.0)),
    # A NaN bound makes every result NaN (PyTorch), and no gradient reaches x.
    Row("clamp(nan, 2)", lambda lib, x: lib.clamp(x, NAN, 2.0),
        lambda x: np.full_like(x, np.nan), unary_in, False,
        lambda x, g: (np.zeros_like(g),)),
    Row("clamp(max=nan)", lambda lib, x: lib.clamp(x, max=NAN),
        lambda x: np.full_like(x, np.nan), unary_in, False,
        lambda x, g: (np.zeros_like(g),)),
    Row("clamp_min(0.0)", lambda lib, x: lib.clamp_min(x, 0.0), lambda x: clamp_ref(x, 0.0, None),
        unary_in, True, lambda x, g: clamp_number_grad(x, g, 0.0, None)),
    Row("clamp_max(0.0)", lambda lib, x: x.clamp_max(0.0), lambda x: clamp_ref(x, None, 0.0),
        unary_in, True, lambda x, g: clamp_number_grad(x, g, None, 0.0)),
    Row("clip", lambda lib, x: lib.clip(x, -1.0, 2.0), lambda x: clamp_ref(x, -1.0, 2.0),
        unary_in, True, lambda x, g: clamp_number_grad(x, g, -1.0, 2.0)),
    Row("nan_to_num", lambda lib, x: lib.nan_to_num(x),
        lambda x: np.nan_to_num(x, nan=0.0, posinf=np.finfo(x.dtype).max,
                                neginf=np.finfo(x.dtype).min),
        unary_in, True),
    # ---- elementwise, two operands ----
    binary("add", np.add, signed_zero=True),
    binary("sub", np.subtract),
    binary("mul", np.multiply),
    binary("div", np.divide),
    binary("maximum", maximum_ref, grad=lambda a, b, g: extreme_grad(a, b, g, True)),
    binary("minimum", minimum_ref, grad=lambda a, b, g: extreme_grad(a, b, g, False)),
    Row("max(a, b)", lambda lib, a, b: lib.max(a, b), maximum_ref, binary_in, True),
    Row("min(a, b)", lambda lib, a, b: lib.min(a, b), minimum_ref, binary_in, True),
    binary("fmax", np.fmax, signed_zero=False, grad=lambda a, b, g: fextreme_grad(a, b, g, True)),
    binary("fmin", np.fmin, signed_zero=False, grad=lambda a, b, g: fextreme_grad(a, b, g, False)),
    binary("atan2", _f64(np.arctan2), grad=atan2_grad),
    binary("hypot", _f64(np.hypot), signed_zero=False, grad=hypot_grad),
    binary("copysign", np.copysign),
    # C's fmod and Python's modulus (the divisor's sign). PyTorch's vectorised
    # kernels give NaN for a subnormal divisor (they divide first); the definition
    # gives the exact remainder, as NumPy does.
    binary("fmod", _native(np.fmod), signed_zero=False),
    binary("remainder", _native(np.remainder), signed_zero=False),
    binary("logaddexp", _f64(np.logaddexp), signed_zero=False, rtol=1e-5),
    binary("logaddexp2", _f64(np.logaddexp2), signed_zero=False, rtol=1e-5),
    binary("heaviside", heaviside_ref),
    # pow of two tensors is C's pow (so (-inf) ** 0.5 is inf); its gradient is 0
    # where the exponent is 0, NaN and 0 bases included.
    binary("pow", _f64(np.power), signed_zero=False, grad=pow_grad, rtol=1e-5),
    binary("float_power", lambda a, b: _native(np.power)(a.astype(np.float64),
                                                        b.astype(np.float64)),
           signed_zero=False, rtol=1e-5),
    # A Python exponent 0.5 (or -0.5) is sqrt (1 / sqrt), as in PyTorch.
    Row("x ** 0.5", lambda lib, x: x ** 0.5, _f64(np.sqrt), unary_in, True),
    Row("x ** -0.5", lambda lib, x: x ** -0.5, _f64(lambda v: 1 / np.sqrt(v)), unary_in, True),
    Row("x ** 2", lambda lib, x: x ** 2, np.square, unary_in, False),
    Row("x ** 0", lambda lib, x: x ** 0, lambda x: np.ones_like(x), unary_in, False,
        lambda x, g: (np.zeros_like(g),)),
    Row("eq", lambda lib, a, b: lib.eq(a, b), np.equal, binary_in),
    Row("ne", lambda lib, a, b: lib.ne(a, b), np.not_equal, binary_in),
    Row("lt", lambda lib, a, b: lib.lt(a, b), np.less, binary_in),
    Row("le", lambda lib, a, b: lib.le(a, b), np.less_equal, binary_in),
    Row("gt", lambda lib, a, b: lib.gt(a, b), np.greater, binary_in),
    Row("ge", lambda lib, a, b: lib.ge(a, b), np.greater_equal, binary_in),
    Row("isclose", lambda lib, a, b: lib.isclose(a, b),
        lambda a, b: np.isclose(a, b, rtol=1e-5, atol=1e-8), binary_in),
    Row("isclose(equal_nan)", lambda lib, a, b: lib.isclose(a, b, equal_nan=True),
        lambda a, b: np.isclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True), binary_in),
    Row("lerp(0.25)", lambda lib, a, b: lib.lerp(a, b, 0.25), lambda a, b: lerp_ref(a, b, 0.25),
        binary_in, False),
    Row("lerp(0.75)", lambda lib, a, b: lib.lerp(a, b, 0.75), lambda a, b: lerp_ref(a, b, 0.75),
        binary_in, False),
    Row("where", lambda lib, a, b: lib.where(a > b, a, b),
        lambda a, b: np.where(a > b, a, b), binary_in, True),
]


def reduction(name, ref, axis_call=True, grad=None, signed_zero=False, rtol=None):
    out = [Row(f"{name}()", lambda lib, x: getattr(x, name)(), lambda x: ref(x, None),
               rows_in, signed_zero, grad, rtol)]
    if axis_call:
        out.append(Row(f"{name}(1)", lambda lib, x: getattr(x, name)(1), lambda x: ref(x, 1),
                       rows_in, signed_zero, None, rtol))
    return out


def amax_ref(x, axis):
    with np.errstate(invalid="ignore"):
        return np.max(x, axis=axis)


def amin_ref(x, axis):
    with np.errstate(invalid="ignore"):
        return np.min(x, axis=axis)


def argext_ref(x, axis, is_max):
    # The first NaN, else the first extreme (PyTorch: NaN counts as the extreme).
    def one(row):
        nans = np.flatnonzero(np.isnan(row))
        if nans.size:
            return nans[0]
        return int(np.argmax(row) if is_max else np.argmin(row))

    if axis is None:
        return np.int64(one(x.ravel()))
    return np.array([one(r) for r in x], dtype=np.int64)


def median_ref(x, axis, ignore_nan=False):
    # The lower median; NaN if the row has one (median), NaNs skipped (nanmedian).
    def one(row):
        row = row[~np.isnan(row)] if ignore_nan else row
        if row.size == 0:
            return np.nan
        if np.isnan(row).any():
            return np.nan
        return np.sort(row)[(row.size - 1) // 2]

    if axis is None:
        return np.array(one(x.ravel()), dtype=x.dtype)
    return np.array([one(r) for r in x], dtype=x.dtype)


def even_share_grad(ref):
    def grad(x, g):
        return (nan_aware_even_share(x, ref(x, None)) * g,)

    return grad


ROWS += [
    *reduction("sum", lambda x, a: np.sum(x.astype(np.float64), axis=a).astype(x.dtype),
               rtol=1e-5),
    *reduction("nansum", lambda x, a: np.nansum(x.astype(np.float64), axis=a).astype(x.dtype),
               rtol=1e-5),
    *reduction("mean", lambda x, a: np.mean(x.astype(np.float64), axis=a).astype(x.dtype),
               rtol=1e-5),
    *reduction("nanmean", lambda x, a: _nanmean(x, a), rtol=1e-5),
    *reduction("prod", lambda x, a: _native(lambda v: np.prod(v, axis=a))(x), rtol=1e-5),
    # (var and std on rows whose squared deviations stay finite: where they overflow,
    # PyTorch's one-pass Welford update gives NaN and a two-pass sum inf.)
    Row("var(1)", lambda lib, x: x.var(1), lambda x: _var(x, 1, False), finite_rows_in,
        False, None, 1e-4),
    Row("std()", lambda lib, x: x.std(), lambda x: _var(x, None, True), finite_rows_in,
        False, None, 1e-4),
    *reduction("amax", amax_ref),
    *reduction("amin", amin_ref),
    # max()/min() of all elements give the gradient to the NaNs when the result is NaN.
    Row("max()", lambda lib, x: x.max(), lambda x: amax_ref(x, None), rows_in, False,
        even_share_grad(amax_ref)),
    Row("min()", lambda lib, x: x.min(), lambda x: amin_ref(x, None), rows_in, False,
        even_share_grad(amin_ref)),
    Row("max(dim=1).values", lambda lib, x: x.max(1)[0], lambda x: amax_ref(x, 1), rows_in),
    Row("min(dim=1).values", lambda lib, x: x.min(1)[0], lambda x: amin_ref(x, 1), rows_in),
    Row("argmax()", lambda lib, x: x.argmax(), lambda x: argext_ref(x, None, True), rows_in),
    Row("argmax(1)", lambda lib, x: x.argmax(1), lambda x: argext_ref(x, 1, True), rows_in),
    Row("argmin(1)", lambda lib, x: x.argmin(1), lambda x: argext_ref(x, 1, False), rows_in),
    Row("median()", lambda lib, x: x.median(), lambda x: median_ref(x, None), rows_in, False,
        even_share_grad(lambda x, a: median_ref(x, a))),
    Row("median(1).values", lambda lib, x: x.median(1)[0], lambda x: median_ref(x, 1), rows_in),
    Row("nanmedian()", lambda lib, x: x.nanmedian(), lambda x: median_ref(x, None, True),
        rows_in, False, even_share_grad(lambda x, a: median_ref(x, a, True))),
    Row("nanmedian(1).values", lambda lib, x: x.nanmedian(1)[0],
        lambda x: median_ref(x, 1, True), rows_in),
    Row("logsumexp(1)", lambda lib, x: lib.logsumexp(x, 1), lambda x: logsumexp_ref(x, 1),
        rows_in, False, None, 1e-5),
    Row("cumsum(1)", lambda lib, x: x.cumsum(1),
        lambda x: np.cumsum(x.astype(np.float64), axis=1).astype(x.dtype), rows_in, False, None,
        1e-5),
    Row("cummax(1).values", lambda lib, x: x.cummax(1)[0],
        lambda x: _cum_nan(x, np.maximum), rows_in),
    Row("cummin(1).values", lambda lib, x: x.cummin(1)[0], lambda x: _cum_nan(x, np.minimum),
        rows_in),
    *[Row(f"vector_norm({p}, 1)", lambda lib, x, p=p: lib.linalg.vector_norm(x, p, dim=1),
          lambda x, p=p: norm_ref(x, p, 1), rows_in, False, None, 1e-5)
      for p in (0, 1, 2, 3, math.inf, -math.inf)],
    Row("all(1)", lambda lib, x: x.all(1), lambda x: np.all(x != 0, axis=1), rows_in),
    Row("any(1)", lambda lib, x: x.any(1), lambda x: np.any(x != 0, axis=1), rows_in),
    Row("count_nonzero(1)", lambda lib, x: lib.count_nonzero(x, 1),
        lambda x: np.count_nonzero(x, axis=1).astype(np.int64), rows_in),
    # ---- softmax family: an infinite maximum gives a NaN row (inf - inf) ----
    Row("softmax(1)", lambda lib, x: fn_of(lib).softmax(x, 1),
        lambda x: softmax_ref(x, 1).astype(x.dtype), rows_in, False, None, 1e-5),
    Row("softmax(0)", lambda lib, x: fn_of(lib).softmax(x, 0),
        lambda x: softmax_ref(x, 0).astype(x.dtype), rows_in, False, None, 1e-5),
    Row("log_softmax(1)", lambda lib, x: fn_of(lib).log_softmax(x, 1),
        lambda x: log_softmax_ref(x, 1).astype(x.dtype), rows_in, False, None, 1e-5),
    Row("log_softmax(0)", lambda lib, x: fn_of(lib).log_softmax(x, 0),
        lambda x: log_softmax_ref(x, 0).astype(x.dtype), rows_in, False, None, 1e-5),
    Row("softmin(1)", lambda lib, x: fn_of(lib).softmin(x, 1),
        lambda x: softmax_ref(-x, 1).astype(x.dtype), rows_in, False, None, 1e-5),
    Row("softmax 1-D", lambda lib, x: fn_of(lib).softmax(x, 0),
        lambda x: softmax_ref(x, 0).astype(x.dtype), unary_in, False, None, 1e-5),
]


def _nanmean(x, axis):
    with np.errstate(all="ignore"):
        v = x.astype(np.float64)
        keep = ~np.isnan(v)
        return (np.where(keep, v, 0).sum(axis=axis) / keep.sum(axis=axis)).astype(x.dtype)


def norm_ref(x, p, axis):
    # torch.linalg.vector_norm: NaN propagates (also for p = inf); p = 0 counts nonzeros.
    with np.errstate(all="ignore"):
        v = np.abs(x.astype(np.float64))
        nan = np.isnan(v).any(axis=axis)
        if p == 0:
            # The count of nonzeros: a NaN is not zero, so it counts (no NaN result).
            return (v != 0).sum(axis=axis).astype(x.dtype)
        elif p == math.inf:
            out = v.max(axis=axis)
        elif p == -math.inf:
            out = v.min(axis=axis)
        else:
            out = (v ** p).sum(axis=axis) ** (1 / p)
        return np.where(nan, np.nan, out).astype(x.dtype)


def _cum_nan(x, op):
    # A running maximum (minimum) in which a NaN, once seen, stays.
    out = np.empty_like(x)
    for i, row in enumerate(x):
        acc = row[0]
        for j, v in enumerate(row):
            if j:
                acc = acc if np.isnan(acc) else (v if np.isnan(v) else op(acc, v))
            out[i, j] = acc
    return out


def sort_ref(x, descending):
    # NaN sorts above every number; -0.0 and 0.0 are equal (their order is not compared).
    s = np.sort(x, axis=1)
    if descending:
        # Descending: NaNs first, then the numbers from the largest.
        nans = np.isnan(x).sum(1)
        out = np.empty_like(x)
        for i, row in enumerate(s):
            k = nans[i]
            out[i] = np.concatenate([row[row.size - k:], row[: row.size - k][::-1]])
        return out
    return s


def topk_ref(x, k, largest):
    return sort_ref(x, largest)[:, :k]


def kth_ref(x, k):
    return np.sort(x, axis=1)[:, k - 1]


ROWS += [
    Row("sort(1)", lambda lib, x: x.sort(1)[0], lambda x: sort_ref(x, False), rows_in),
    Row("sort(1, descending)", lambda lib, x: x.sort(1, descending=True)[0],
        lambda x: sort_ref(x, True), rows_in),
    Row("msort", lambda lib, x: lib.msort(x.t()).t(), lambda x: sort_ref(x, False), rows_in),
    Row("topk(2)", lambda lib, x: x.topk(2, 1)[0], lambda x: topk_ref(x, 2, True), rows_in),
    Row("topk(2, smallest)", lambda lib, x: x.topk(2, 1, largest=False)[0],
        lambda x: topk_ref(x, 2, False), rows_in),
    Row("kthvalue(2)", lambda lib, x: x.kthvalue(2, 1)[0], lambda x: kth_ref(x, 2), rows_in),
    Row("kthvalue(5)", lambda lib, x: x.kthvalue(5, 1)[0], lambda x: kth_ref(x, 5), rows_in),
]

# ---- pooling: a NaN in a window wins the maximum ----


def img_in(dt):
    s = specials(dt)
    return [np.concatenate([s, [2.0]]).astype(dt).reshape(1, 1, 4, 4)]


def maxpool_ref(x, k, stride):
    n, c, h, w = x.shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    out = np.empty((n, c, oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * stride:i * stride + k, j * stride:j * stride + k].reshape(n, c, -1)
            with np.errstate(invalid="ignore"):
                out[:, :, i, j] = np.where(np.isnan(win).any(-1), np.nan, win.max(-1))
    return out


def avgpool_ref(x, k):
    n, c, h, w = x.shape
    r = x.astype(np.float64).reshape(n, c, h // k, k, w // k, k)
    with np.errstate(all="ignore"):
        return r.mean(axis=(3, 5)).astype(x.dtype)


ROWS += [
    Row("max_pool2d(2)", lambda lib, x: fn_of(lib).max_pool2d(x, 2), lambda x: maxpool_ref(x, 2, 2),
        img_in, True),
    Row("max_pool2d(2, 1)", lambda lib, x: fn_of(lib).max_pool2d(x, 2, 1),
        lambda x: maxpool_ref(x, 2, 1), img_in, True),
    Row("max_pool2d(3, 1)", lambda lib, x: fn_of(lib).max_pool2d(x, 3, 1),
        lambda x: maxpool_ref(x, 3, 1), img_in, True),
    Row("adaptive_max_pool2d(2)", lambda lib, x: fn_of(lib).adaptive_max_pool2d(x, 2),
        lambda x: maxpool_ref(x, 2, 2), img_in, True),
    Row("max_pool1d(2)", lambda lib, x: fn_of(lib).max_pool1d(x.reshape(1, 2, 8), 2),
        lambda x: _maxpool1d_ref(x.reshape(1, 2, 8), 2), img_in, True),
    Row("avg_pool2d(2)", lambda lib, x: fn_of(lib).avg_pool2d(x, 2), lambda x: avgpool_ref(x, 2),
        img_in, False, None, 1e-5),
    Row("adaptive_avg_pool2d(2)", lambda lib, x: fn_of(lib).adaptive_avg_pool2d(x, 2),
        lambda x: avgpool_ref(x, 2), img_in, False, None, 1e-5),
    Row("interpolate(nearest)", lambda lib, x: fn_of(lib).interpolate(x, scale_factor=2),
        lambda x: x.repeat(2, axis=2).repeat(2, axis=3), img_in, True),
    Row("pad(reflect)", lambda lib, x: fn_of(lib).pad(x, (1, 1, 1, 1), mode="reflect"),
        lambda x: np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"), img_in, True),
    Row("pad(constant)", lambda lib, x: fn_of(lib).pad(x, (1, 1, 1, 1), value=-0.0),
        lambda x: np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-0.0), img_in,
        True),
]


def _maxpool1d_ref(x, k):
    n, c, length = x.shape
    win = x.reshape(n, c, length // k, k)
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(win).any(-1), np.nan, win.max(-1)).astype(x.dtype)


# ---- losses ----


def mse_ref(a, b):
    with np.errstate(all="ignore"):
        return _f64(lambda x, y: (x - y) ** 2)(a, b)


def l1_grad(a, b, g):
    # PyTorch: g * sign(a - b), and sign(NaN) is 0.
    with np.errstate(all="ignore"):
        d = torch_sign(a.astype(np.float64) - b)
    return g * d, -g * d


def bce_logits_ref(x, t):
    # PyTorch's (1 - t) x - logsigmoid(x), logsigmoid(x) = min(x, 0) - log1p(exp(-|x|)),
    # in the input's dtype.
    def f(x, t):
        one = x.dtype.type(1)
        logsig = np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))
        return (one - t) * x - logsig

    return _native(f)(x, t)


def kl_div_ref(x, t):
    # PyTorch: xlogy(t, t) - t * x in the input's dtype, xlogy(0, y) = 0 unless y is NaN.
    def f(x, t):
        xlogy = np.where(np.isnan(t), np.nan, np.where(t == 0, 0, t * np.log(t)))
        return (xlogy - t * x).astype(x.dtype)

    return _native(f)(x, t)


ROWS += [
    Row("mse_loss(none)", lambda lib, a, b: fn_of(lib).mse_loss(a, b, reduction="none"), mse_ref,
        binary_in, False, None, 1e-5),
    Row("l1_loss(none)", lambda lib, a, b: fn_of(lib).l1_loss(a, b, reduction="none"),
        _f64(lambda x, y: np.abs(x - y)), binary_in, False, l1_grad),
    Row("smooth_l1_loss(none)", lambda lib, a, b: fn_of(lib).smooth_l1_loss(a, b, reduction="none"),
        _f64(lambda x, y: np.where(np.abs(x - y) < 1, 0.5 * (x - y) ** 2, np.abs(x - y) - 0.5)),
        binary_in, False, None, 1e-5),
    Row("huber_loss(none)", lambda lib, a, b: fn_of(lib).huber_loss(a, b, reduction="none"),
        _f64(lambda x, y: np.where(np.abs(x - y) <= 1, 0.5 * (x - y) ** 2, np.abs(x - y) - 0.5)),
        binary_in, False, None, 1e-5),
    Row("binary_cross_entropy_with_logits(none)",
        lambda lib, a, b: fn_of(lib).binary_cross_entropy_with_logits(a, b, reduction="none"),
        bce_logits_ref, binary_in, False, None, 1e-5),
    Row("kl_div(none)", lambda lib, a, b: fn_of(lib).kl_div(a, b, reduction="none"), kl_div_ref,
        binary_in, False, None, 1e-5),
    # log(1 + exp(-y x)), exactly: PyTorch's float32 kernel overflows to inf once
    # -y x passes about 88 (float64: 709), where the value is -y x.
    Row("soft_margin_loss(none)",
        lambda lib, a, b: fn_of(lib).soft_margin_loss(a, b.detach(), reduction="none"),
        _f64(lambda x, y: np.logaddexp(0, -y * x)), binary_in, False, None, 1e-5),
]

ROW_BY_NAME = {r.name: r for r in ROWS}
assert len(ROW_BY_NAME) == len(ROWS), "duplicate row names"

# ----- running a row -------------------------------------------------------------------


def _as_tuple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


def run_row(lib, row, arrays, np_dtype, dtype_name, check_grad=True):
    """Runs `row` with `lib` (ferrograd, or another library with its API) on
    `arrays` and checks the values (and gradients) against the row's reference."""
    dtype = getattr(lib, dtype_name)
    diff = row.grad is not None and check_grad
    ts = [lib.tensor(a, dtype=dtype, requires_grad=diff) for a in arrays]
    got = _as_tuple(row.call(lib, *ts))
    want = _as_tuple(row.ref(*arrays))
    for k, (gv, wv) in enumerate(zip(got, want)):
        assert_same(gv.detach().numpy(), np.asarray(wv), np_dtype, signed_zero=row.signed_zero,
                    rtol=row.rtol, what=f"{row.name} {dtype_name} output {k}")
    if diff:
        out = got[0]
        gout = np.linspace(-1.0, 1.0, out.numel()).reshape(tuple(out.shape)).astype(np_dtype)
        grads = lib.autograd.grad(out, ts, lib.tensor(gout, dtype=dtype), allow_unused=True)
        want_g = row.grad(*arrays, gout.astype(np.float64))
        for k, (gg, wg) in enumerate(zip(grads, want_g)):
            gg = np.zeros(arrays[k].shape) if gg is None else gg.numpy()
            assert_same(gg, np.asarray(wg, dtype=np.float64).astype(np_dtype), np_dtype,
                        rtol=row.grad_rtol or 1e-5, what=f"{row.name} {dtype_name} grad {k}")


@pytest.mark.parametrize("np_dtype,dtype_name", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(ROW_BY_NAME))
def test_special_values_match_pytorch(name, np_dtype, dtype_name):
    row = ROW_BY_NAME[name]
    run_row(fg, row, row.inputs(np_dtype), np_dtype, dtype_name)


# ----- the rows that need more than one call -------------------------------------------


@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
def test_unique_keeps_every_nan(dtype):
    # PyTorch: NaN != NaN, so each NaN is a value of its own, sorted last.
    x = fg.tensor([NAN, 1.0, NAN, -0.0, 0.0, INF, -INF, 1.0], dtype=dtype)
    values, inverse, counts = fg.unique(x, return_inverse=True, return_counts=True)
    v = values.numpy()
    np.testing.assert_array_equal(v[:4], [-INF, 0.0, 1.0, INF])
    assert np.isnan(v[4:]).all() and v.size == 6
    np.testing.assert_array_equal(counts.numpy(), [1, 2, 2, 1, 1, 1])
    # Each element's inverse points at its own value (each NaN at a NaN).
    back = v[inverse.numpy()]
    xs = x.numpy()
    assert ((back == xs) | (np.isnan(back) & np.isnan(xs))).all()
    assert len(set(inverse.numpy()[[0, 2]].tolist())) == 2


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
def test_searchsorted_bisects_as_pytorch_does(dtype, right):
    vals = [NAN, INF, -INF, -0.0, 0.0, 1.0, 5e-324, 2.0, 3.0]
    for seq in ([-INF, -1.0, 0.0, 1.0, INF, NAN], [NAN, 1.0, 2.0], [1.0, NAN, 2.0, NAN],
                [0.0, 0.0, 1.0], []):
        got = fg.searchsorted(fg.tensor(seq, dtype=dtype), fg.tensor(vals, dtype=dtype),
                              right=right)
        s = np.array(seq, dtype=np.float64)
        want = searchsorted_ref(s.astype(dtype_np(dtype)), np.array(vals).astype(dtype_np(dtype)),
                                right)
        np.testing.assert_array_equal(got.numpy(), want, err_msg=str(seq))
        bucket = fg.bucketize(fg.tensor(vals, dtype=dtype), fg.tensor(seq, dtype=dtype),
                              right=right)
        np.testing.assert_array_equal(bucket.numpy(), want, err_msg=str(seq))
    # Recorded from PyTorch 2.15: inf and NaN both land past a trailing NaN.
    got = fg.searchsorted(fg.tensor([-INF, -1.0, 0.0, 1.0, INF, NAN], dtype=dtype),
                          fg.tensor([NAN, INF, -INF, 0.0], dtype=dtype))
    np.testing.assert_array_equal(got.numpy(), [6, 6, 0, 2])


def dtype_np(dtype):
    return np.float32 if dtype == fg.float32 else np.float64


@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
def test_sort_family_orders_nan_last_and_indices_point_at_values(dtype):
    x = fg.tensor(rows_in(dtype_np(dtype))[0], dtype=dtype)
    xs = x.numpy()
    for descending in (False, True):
        values, idx = x.sort(1, descending=descending)
        picked = np.take_along_axis(xs, idx.numpy(), 1)
        v = values.numpy()
        assert ((picked == v) | (np.isnan(picked) & np.isnan(v))).all()
        np.testing.assert_array_equal(np.sort(idx.numpy(), 1), np.tile(np.arange(5), (9, 1)))
    for largest in (True, False):
        values, idx = x.topk(3, 1, largest=largest)
        picked = np.take_along_axis(xs, idx.numpy(), 1)
        v = values.numpy()
        assert ((picked == v) | (np.isnan(picked) & np.isnan(v))).all()
    values, idx = x.kthvalue(3, 1)
    picked = np.take_along_axis(xs, idx.numpy()[:, None], 1)[:, 0]
    assert ((picked == values.numpy()) | np.isnan(picked) & np.isnan(values.numpy())).all()
    # argsort agrees with sort, stable sort keeps -0.0 and 0.0 in input order.
    z = fg.tensor([0.0, -0.0, NAN, -0.0, 0.0], dtype=dtype)
    s = z.sort(stable=True)
    np.testing.assert_array_equal(s.indices.numpy(), [0, 1, 3, 4, 2])
    np.testing.assert_array_equal(np.signbit(s.values.numpy()[:4]), [False, True, True, False])


def test_mode_counts_nans_as_one_value():
    x = fg.tensor([[NAN, NAN, 1.0, -1.0, NAN], [1.0, 2.0, 2.0, NAN, 1.0]])
    values, idx = x.mode(1)
    v = values.numpy()
    assert np.isnan(v[0]) and v[1] == 1.0
    assert np.isnan(x.numpy()[0, idx.numpy()[0]])


@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
def test_histc_counts_as_pytorch(dtype):
    # NaN and values outside [min, max] are not counted; the bin is
    # (x - min) / (max - min) * bins in the input's dtype (values from PyTorch 2.15).
    x = fg.tensor(specials(dtype_np(dtype)), dtype=dtype)
    want = [1.0, 0.0, 5.0, 2.0] if dtype == fg.float32 else [1.0, 0.0, 5.0, 2.0]
    np.testing.assert_array_equal(fg.histc(x, 4, -1, 1).numpy(), want)
    np.testing.assert_array_equal(
        fg.histc(fg.tensor([-0.5, 0.0, 0.49999997, 0.5, 1.0, -1.0]), 4, -1, 1).numpy(),
        [1.0, 1.0, 1.0, 3.0])
    with pytest.raises(RuntimeError, match="not finite"):
        fg.histc(fg.tensor([0.5, NAN]), 4)
    with pytest.raises(RuntimeError, match="not finite"):
        fg.histc(fg.tensor([0.5, INF]), 4)


def test_empty_reductions_follow_pytorch():
    # median()/nanmedian() of nothing: NaN, and int64's lowest value for int64.
    assert math.isnan(fg.empty(0).median().item())
    assert math.isnan(fg.empty(0, 3).nanmedian().item())
    assert fg.empty(0, dtype=fg.int64).median().item() == -(2**63)
    x = fg.empty(0, requires_grad=True)
    x.median().backward()
    assert x.grad.shape == (0,)
    # A full reduction's other empty rules stay.
    assert fg.empty(0).sum().item() == 0.0
    assert math.isnan(fg.empty(0).mean().item())
    with pytest.raises(RuntimeError, match="numel\\(\\) == 0"):
        fg.empty(0).max()


def test_max_and_median_share_the_gradient_among_nans():
    # Recorded from PyTorch 2.15.
    x = fg.tensor([[NAN, 1.0, NAN], [2.0, 2.0, 1.0]], requires_grad=True)
    x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.5, 0, 0.5], [0, 0, 0]])
    x.grad = None
    x.median().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.5, 0, 0.5], [0, 0, 0]])
    x.grad = None
    x.nanmedian().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0.5, 0], [0, 0, 0.5]])
    x.grad = None
    x.amax(1).sum().backward()  # amax: no element equals NaN, so NaN gradients
    assert np.isnan(x.grad.numpy()[0]).all()
    np.testing.assert_array_equal(x.grad.numpy()[1], [0.5, 0.5, 0])
    x.grad = None
    x.max(1).values.sum().backward()  # max(dim): the first NaN is the argmax
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 0, 0], [1, 0, 0]])


def test_clamp_with_tensor_bounds_follows_pytorchs_subgradients():
    # Recorded from PyTorch 2.15 (torch.clamp with tensor min and max).
    x = fg.tensor([NAN, -1.0, 2.0, 0.5, 3.0, -3.0, 1.0, 1.0, 5.0], requires_grad=True)
    lo = fg.tensor([0.0, -1.0, -1.0, -1.0, -1.0, -1.0, NAN, 3.0, 3.0], requires_grad=True)
    hi = fg.tensor([1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.0, 1.0], requires_grad=True)
    y = fg.clamp(x, lo, hi)
    y.backward(fg.ones(9))
    np.testing.assert_array_equal(y.detach().numpy(), [NAN, -1, 2, 0.5, 2, -1, NAN, 1, 1])
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0.5, 0.5, 1, 0, 0, 1, 0, 0])
    np.testing.assert_array_equal(lo.grad.numpy(), [0, 0.5, 0, 0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(hi.grad.numpy(), [0, 0, 0.5, 0, 1, 0, 0, 1, 1])
    assert y.grad_fn.name() == "ClampBackward0"
    # One tensor bound: maximum's rule (a NaN passes to both).
    x.grad = lo.grad = None
    y = fg.clamp(x, lo)
    y.backward(fg.ones(9))
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0.5, 1, 1, 1, 0, 1, 0, 1])
    np.testing.assert_array_equal(lo.grad.numpy(), [1, 0.5, 0, 0, 0, 1, 1, 1, 0])
    # clamp_min with a tensor and with a number.
    x.grad = lo.grad = None
    y = fg.clamp_min(x, lo)
    assert y.grad_fn.name() == "ClampMinBackward1"
    y.backward(fg.ones(9))
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0.5, 1, 1, 1, 0, 1, 0, 1])
    x.grad = None
    y = x.clamp_min(1.0)
    assert y.grad_fn.name() == "ClampMinBackward0"
    y.backward(fg.ones(9))
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 1, 0, 1, 0, 0, 0, 1])


def test_integer_pow_of_negative_tensor_exponents():
    # PyTorch: a negative exponent in a tensor truncates 1 / x ** -e; a number raises.
    got = fg.tensor([2, 1, -1, 0, -2]) ** fg.tensor([-1, -1, -1, -1, -2])
    np.testing.assert_array_equal(got.numpy(), [0, 1, -1, 0, 0])
    np.testing.assert_array_equal(fg.tensor([2, 1, -1]).pow(fg.tensor(-2)).numpy(), [0, 1, 1])
    np.testing.assert_array_equal((2 ** fg.tensor([-1, 2])).numpy(), [0, 4])
    with pytest.raises(RuntimeError, match="negative integer powers"):
        fg.tensor([2, 1]) ** -1


def test_rnn_on_an_empty_batch_stays_in_the_graph():
    # PyTorch: the outputs of an empty batch require grad and backward gives zeros.
    for cls, kw in ((fg.nn.LSTM, {}), (fg.nn.GRU, {"batch_first": True}), (fg.nn.RNN, {})):
        m = cls(3, 4, **kw)
        x = fg.zeros(0, 5, 3) if kw else fg.zeros(5, 0, 3)
        out, state = m(x)
        h = state[0] if isinstance(state, tuple) else state
        assert out.requires_grad and h.requires_grad
        assert out.shape == ((0, 5, 4) if kw else (5, 0, 4)) and h.shape == (1, 0, 4)
        (out.sum() + h.sum()).backward()
        assert m.weight_ih_l0.grad is not None and (m.weight_ih_l0.grad == 0).all()


def test_a_network_fed_nan_returns_nan():
    # The example: relu no longer turns a NaN input into finite outputs.
    fg.manual_seed(0)
    net = fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.ReLU(), fg.nn.Linear(8, 2))
    out = net(fg.tensor([[NAN, 1.0, 2.0, 3.0]]))
    assert np.isnan(out.detach().numpy()).all()
    out = net(fg.tensor([[1.0, 1.0, 2.0, 3.0]]))
    assert np.isfinite(out.detach().numpy()).all()


# ----- the same rows on hostile shapes -------------------------------------------------

SHAPES = [(0,), (1,), (5,), (2, 3), (3, 1), (1, 4), (0, 3), (2, 0, 2), (2, 1, 3), (70_000,)]
ELEMENTWISE = [r for r in ROWS if r.inputs in (unary_in, binary_in)]


def _draw_array(draw, shape, np_dtype):
    n = math.prod(shape)
    if n > 64:
        return np.resize(specials(np_dtype), shape).astype(np_dtype)
    s = specials(np_dtype)
    picks = draw(st.lists(st.integers(0, len(s) - 1), min_size=n, max_size=n))
    return s[picks].reshape(shape).astype(np_dtype)


@settings(max_examples=max(40, settings().max_examples * 2), deadline=None)
@given(data=st.data())
def test_elementwise_rows_hold_on_any_shape_and_layout(data):
    row = data.draw(st.sampled_from(ELEMENTWISE), label="row")
    np_dtype, dtype_name = data.draw(st.sampled_from(DTYPES), label="dtype")
    shape = data.draw(st.sampled_from(SHAPES), label="shape")
    n_in = 1 if row.inputs is unary_in else 2
    arrays = [_draw_array(data.draw, shape, np_dtype) for _ in range(n_in)]
    # PyTorch's binary_cross_entropy_with_logits refuses a target of another size.
    broadcasts = not row.name.startswith("binary_cross_entropy")
    if n_in == 2 and broadcasts and arrays[1].size and data.draw(st.booleans(), label="broadcast"):
        # A size-one operand, broadcast (the kernels' scalar paths).
        arrays[1] = arrays[1].reshape(-1)[:1].reshape((1,) * len(shape))
    layout = data.draw(st.sampled_from(["plain", "strided", "transposed"]), label="layout")
    dtype = getattr(fg, dtype_name)
    ts = [fg.tensor(a, dtype=dtype) for a in arrays]
    if layout == "strided":
        ts = [fg.stack([t, t], -1)[..., 0] for t in ts]
    elif layout == "transposed":
        ts = [t.t().contiguous().t() if t.dim() == 2 else t for t in ts]
    got = _as_tuple(row.call(fg, *ts))
    want = _as_tuple(row.ref(*arrays))
    for k, (gv, wv) in enumerate(zip(got, want)):
        assert_same(gv.detach().numpy(), np.asarray(wv), np_dtype, signed_zero=row.signed_zero,
                    rtol=row.rtol, what=f"{row.name} {dtype_name} {shape} {layout} output {k}")
