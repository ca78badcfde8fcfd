"""``ferrograd.special``: PyTorch's ``torch.special`` functions.

Each is differentiable (first and higher order) in its tensor arguments.
Most are the existing elementwise ops under SciPy's names; the Bessel
functions ``i0``/``i0e``/``i1``/``i1e``, ``erfcx``, ``ndtri``, ``log_ndtr``,
the incomplete gamma functions and the Hurwitz ``zeta`` are Rust kernels
(``src/kernels/bessel.rs``, ``normal_fns.rs``, ``special.rs``). ``zeta``,
``gammainc`` and ``gammaincc`` have a gradient in their second argument only,
as in PyTorch.
"""

from __future__ import annotations

import math

import ferrograd as _fg

from . import _C
from ._C import Tensor
from .autograd import Function

__all__ = [
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "sinc",
    "softmax",
    "xlog1py",
    "xlogy",
    "zeta",
]


def _t(x):
    # A tensor-like value (vmap's BatchedTensor) passes: these functions are
    # composed of ops with batching rules.
    if isinstance(x, Tensor) or hasattr(type(x), "__ferrograd_function__"):
        return x
    return _fg.tensor(x)


def _float(x):
    x = _t(x)
    return x if x.dtype.is_floating_point else x.to(_fg.get_default_dtype())


def expm1(input):
    """exp(x) - 1, accurate near 0."""
    return _fg.expm1(input)


def exp2(input):
    """2 ** x."""
    return _fg.exp2(input)


def log1p(input):
    """log(1 + x), accurate near 0."""
    return _fg.log1p(input)


def erf(input):
    """The error function."""
    return _fg.erf(input)


def erfc(input):
    """The complementary error function 1 - erf(x)."""
    return _fg.erfc(input)


def erfinv(input):
    """The inverse error function."""
    return _fg.erfinv(input)


def erfcx(input):
    """The scaled complementary error function exp(x^2) erfc(x)."""
    return _fg.special_erfcx(input)


def expit(input):
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    return _fg.sigmoid(input)


def logit(input, eps=None):
    """log(p / (1 - p)); with ``eps``, ``p`` is first clamped to [eps, 1 - eps]."""
    if eps is not None:
        input = input.clamp(eps, 1 - eps)
    return _fg.logit(input)


def xlogy(input, other):
    """x * log(y), 0 where x is 0 (unless y is NaN)."""
    return _fg.xlogy(input, other)


class _Xlog1py(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        zero = (x == 0) & ~_fg.isnan(y)
        return _fg.where(zero, _fg.zeros_like(x), x * _fg.log1p(y))

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        # PyTorch's rules: d/dx = log1p(y) (0 where x == 0 and y <= -1), d/dy = x / (1 + y).
        gx = xlog1py(grad, y)
        gx = _fg.where((x == 0) & (y <= -1), _fg.zeros_like(gx), gx)
        gy = grad * x / (y + 1)
        return gx, gy


def xlog1py(input, other):
    """x * log1p(y), 0 where x is 0 (unless y is NaN)."""
    x, y = _fg.broadcast_tensors(_float(input), _float(other))
    dt = _fg.float64 if _fg.float64 in (x.dtype, y.dtype) else _fg.float32
    return _Xlog1py.apply(x.to(dt), y.to(dt))


def gammaln(input):
    """log |Gamma(x)|."""
    return _fg.lgamma(input)


def gammainc(input, other):
    """The regularised lower incomplete gamma function P(a, x), ``a = input``."""
    return _fg.igamma(input, other)


def gammaincc(input, other):
    """The regularised upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return _fg.igammac(input, other)


def digamma(input):
    """The digamma function d/dx log Gamma(x)."""
    return _fg.digamma(input)


psi = digamma


def polygamma(n, input):
    """The n-th derivative of the digamma function."""
    return _fg.polygamma(n, input)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p``:
    p (p - 1) / 4 log(pi) + sum_{i < p} log Gamma(x - i / 2)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _float(input)
    # PyTorch's domain check, a read of the values: not while compile captures
    # (a replay cannot re-run it) nor under vmap (no host value to read).
    if isinstance(x, Tensor) and not _C._capture_active() and x.numel() \
            and not bool((x > 0.5 * (p - 1)).all()):
        raise RuntimeError("All elements must be greater than (p-1)/2")
    if p > 64 or x.numel() == 0:
        # A huge p as one (..., p) block, which an empty input never allocates
        # and a real one refuses as too large, instead of p passes.
        shifts = _fg.arange(p, dtype=x.dtype) / 2
        terms = _fg.lgamma(x.unsqueeze(-1) - shifts).sum(-1)
        return terms + p * (p - 1) / 4 * math.log(math.pi)
    # One lgamma pass per shift, added in PyTorch's order (the largest shift
    # first): no (..., p) intermediate and no reduction over a short last dim.
    total = None
    for i in range(p - 1, -1, -1):
        term = _fg.lgamma(x - i / 2 if i else x)
        total = term if total is None else total + term
    return total + p * (p - 1) / 4 * math.log(math.pi)


def multigammaln(input, p):
    """``mvlgamma`` under SciPy's name."""
    return mvlgamma(input, p)


def i0(input):
    """The modified Bessel function of the first kind of order 0."""
    return _fg.i0(input)


def i0e(input):
    """exp(-|x|) I0(x)."""
    return _fg.special_i0e(input)


def i1(input):
    """The modified Bessel function of the first kind of order 1."""
    return _fg.special_i1(input)


def i1e(input):
    """exp(-|x|) I1(x)."""
    return _fg.special_i1e(input)


def ndtr(input):
    """The standard normal distribution function, erfc(-x / sqrt 2) / 2."""
    return 0.5 * _fg.erfc(_float(input) * -math.sqrt(0.5))


def ndtri(input):
    """The inverse of ``ndtr``: the x with ndtr(x) = p."""
    return _fg.special_ndtri(input)


def log_ndtr(input):
    """log(ndtr(x)), finite far into the lower tail."""
    return _fg.special_log_ndtr(input)


def sinc(input):
    """The normalised sinc sin(pi x) / (pi x), 1 at 0."""
    return _fg.sinc(input)


class _Entr(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        pos = _fg.where(x > 0, x, _fg.ones_like(x))
        out = _fg.where(x > 0, -x * _fg.log(pos), _fg.zeros_like(x))
        out = _fg.where(x < 0, _fg.full_like(x, -math.inf), out)
        return _fg.where(_fg.isnan(x), x, out)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        # PyTorch's rule everywhere: -(1 + log x) (inf at 0, NaN below).
        return grad * -(1 + _fg.log(x))


def entr(input):
    """-x log(x) for x > 0, 0 at 0, -inf below 0."""
    return _Entr.apply(_float(input))


def round(input, decimals=0):
    """Rounds half to even, to ``decimals`` decimal places."""
    return _fg.round(input, decimals=decimals)


def softmax(input, dim, dtype=None):
    """softmax over ``dim`` (computed in ``dtype`` when given)."""
    if dtype is not None:
        input = input.to(dtype)
    return _fg.softmax(input, dim)


def log_softmax(input, dim, dtype=None):
    """log_softmax over ``dim`` (computed in ``dtype`` when given)."""
    if dtype is not None:
        input = input.to(dtype)
    return _fg.log_softmax(input, dim)


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(x))) over ``dim``, computed without overflow."""
    return _fg.logsumexp(input, dim, keepdim)


def zeta(input, other):
    """The Hurwitz zeta function sum_k (other + k) ** -input."""
    return _fg.special_zeta(input, other)
