"""Hypothesis strategies for ferrograd tensors, shapes and differentiable points.

Needs the optional ``hypothesis`` package (``pip install hypothesis``, or the
``testing`` extra). Typical use::

    from hypothesis import given
    from ferrograd.testing import strategies as fst

    @given(fst.differentiable_points("log"))
    def test_log_grad(x):
        assert ferrograd.autograd.gradcheck(ferrograd.log, (x,))
"""

from __future__ import annotations

import math

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "ferrograd.testing.strategies needs the 'hypothesis' package; install it with "
        "`pip install hypothesis` (or `pip install ferrograd[testing]`)."
    ) from e

import numpy as np

__all__ = [
    "DOMAINS",
    "broadcastable_shapes",
    "differentiable_points",
    "floats",
    "mutually_broadcastable_shapes",
    "shapes",
    "tensors",
]


def _fg():
    import ferrograd

    return ferrograd


def _np_dtype(dtype):
    fg = _fg()
    table = {fg.float32: np.float32, fg.float64: np.float64, fg.int64: np.int64, fg.bool: np.bool_}
    if dtype not in table:
        raise TypeError(f"tensors: unsupported dtype {dtype}")
    return table[dtype]


def shapes(min_dims=0, max_dims=3, min_side=1, max_side=4):
    """Tensor shapes (tuples of ints) with ``min_dims..max_dims`` dimensions, each of
    size ``min_side..max_side``; ``min_side=0`` includes empty tensors."""
    return hnp.array_shapes(
        min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    )


def broadcastable_shapes(shape, min_dims=0, max_dims=None, min_side=1, max_side=None):
    """Shapes that broadcast with ``shape`` (size-1 dimensions and rank differences
    included), as ``hypothesis.extra.numpy.broadcastable_shapes``."""
    return hnp.broadcastable_shapes(
        tuple(shape), min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    )


def mutually_broadcastable_shapes(num_shapes, base_shape=(), min_dims=0, max_dims=None,
                                  min_side=1, max_side=None):
    """``num_shapes`` shapes that broadcast together. Draws a tuple of shapes (use
    ``numpy.broadcast_shapes`` for the result's)."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, base_shape=tuple(base_shape), min_dims=min_dims,
        max_dims=max_dims, min_side=min_side, max_side=max_side,
    ).map(lambda r: tuple(r.input_shapes))


def floats(low=-3.0, high=3.0, width=64, away_from=(), margin=0.05):
    """Finite floats in ``[low, high]`` that keep at least ``margin`` from every point
    in ``away_from``; ``width=32`` gives values exactly representable in float32."""
    if width == 32:
        lo32, hi32 = np.float32(low), np.float32(high)
        if lo32 < low:
            lo32 = np.nextafter(lo32, np.float32(np.inf))
        if hi32 > high:
            hi32 = np.nextafter(hi32, np.float32(-np.inf))
        low, high = float(lo32), float(hi32)
    el = st.floats(low, high, allow_nan=False, allow_infinity=False, width=width)
    away = tuple(away_from)
    if away:
        el = el.filter(lambda v: all(abs(v - k) > margin for k in away))
    return el


def tensors(dtype=None, shape=None, elements=None, requires_grad=False):
    """ferrograd tensors of ``dtype`` (default float64) and ``shape`` (a tuple or a
    strategy of tuples; default :func:`shapes`). ``elements`` is a strategy for the
    values (default: floats in [-3, 3], integers in [-9, 9], or booleans)."""
    fg = _fg()
    dtype = fg.float64 if dtype is None else dtype
    np_dtype = _np_dtype(dtype)
    if requires_grad and dtype not in (fg.float32, fg.float64):
        raise ValueError("tensors: requires_grad=True needs a floating dtype")
    if elements is None:
        if np_dtype is np.bool_:
            elements = st.booleans()
        elif np_dtype is np.int64:
            elements = st.integers(-9, 9)
        else:
            elements = floats(width=32 if np_dtype is np.float32 else 64)
    shape = shapes() if shape is None else shape
    return hnp.arrays(np_dtype, shape, elements=elements).map(
        lambda a: fg.tensor(a, dtype=dtype, requires_grad=requires_grad)
    )


def _periodic(step, offset):
    """Points offset + k * step inside [lo, hi]."""

    def points(lo, hi):
        k0, k1 = math.ceil((lo - offset) / step), math.floor((hi - offset) / step)
        return [offset + k * step for k in range(k0, k1 + 1)]

    return points


# name -> (domain low, domain high, kinks or poles: a list or a function of (lo, hi)).
# The domain is open at a pole or a singular derivative (log at 0, acos at +-1), and
# finite differences need a margin there, so each bound already includes it.
DOMAINS = {
    "relu": (-math.inf, math.inf, [0.0]),
    "abs": (-math.inf, math.inf, [0.0]),
    "hardtanh": (-math.inf, math.inf, [-1.0, 1.0]),
    "relu6": (-math.inf, math.inf, [0.0, 6.0]),
    "leaky_relu": (-math.inf, math.inf, [0.0]),
    "hardsigmoid": (-math.inf, math.inf, [-3.0, 3.0]),
    "hardswish": (-math.inf, math.inf, [-3.0, 3.0]),
    "hardshrink": (-math.inf, math.inf, [-0.5, 0.5]),
    "softshrink": (-math.inf, math.inf, [-0.5, 0.5]),
    "sign": (-math.inf, math.inf, [0.0]),
    "floor": (-math.inf, math.inf, _periodic(1.0, 0.0)),
    "ceil": (-math.inf, math.inf, _periodic(1.0, 0.0)),
    "trunc": (-math.inf, math.inf, _periodic(1.0, 0.0)),
    "round": (-math.inf, math.inf, _periodic(1.0, 0.5)),
    "frac": (-math.inf, math.inf, _periodic(1.0, 0.0)),
    "log": (0.2, math.inf, []),
    "log2": (0.2, math.inf, []),
    "log10": (0.2, math.inf, []),
    "log1p": (-0.8, math.inf, []),
    "sqrt": (0.2, math.inf, []),
    "rsqrt": (0.2, math.inf, []),
    "reciprocal": (0.2, math.inf, []),
    "tan": (-math.inf, math.inf, _periodic(math.pi, math.pi / 2)),
    "asin": (-0.9, 0.9, []),
    "acos": (-0.9, 0.9, []),
    "atanh": (-0.9, 0.9, []),
    "erfinv": (-0.9, 0.9, []),
    "acosh": (1.2, math.inf, []),
    "lgamma": (0.2, math.inf, []),
    "digamma": (0.2, math.inf, []),
    # mathops: aliases and the remaining math functions
    "arcsin": (-0.9, 0.9, []),
    "arccos": (-0.9, 0.9, []),
    "arctanh": (-0.9, 0.9, []),
    "arccosh": (1.2, math.inf, []),
    "logit": (0.1, 0.9, []),
    "absolute": (-math.inf, math.inf, [0.0]),
    "sgn": (-math.inf, math.inf, [0.0]),
    "fix": (-math.inf, math.inf, _periodic(1.0, 0.0)),
    # sinc's second derivative at 0 is PyTorch's masked rule, not the limit.
    "sinc": (-math.inf, math.inf, [0.0]),
}

# Poles need more room than kinks: near them even the first derivative explodes.
_POLE_OPS = {"tan"}


def _op_name(op):
    if isinstance(op, str):
        return op
    name = getattr(op, "__name__", None) or getattr(op, "name", None)
    return name.rstrip("_") if isinstance(name, str) else None


def differentiable_points(op, shape=None, dtype=None, low=-3.0, high=3.0, margin=0.05,
                          requires_grad=True):
    """Tensors at which ``op`` (a function such as ``ferrograd.log`` or its name) is
    smooth, so finite differences are meaningful: inside its domain with a margin
    (``log``/``sqrt``/``reciprocal`` stay >= 0.2, ``log1p`` > -0.8, ``asin`` in
    [-0.9, 0.9], ...) and at least ``margin`` away from its kinks and poles (``relu``
    and ``abs`` at 0, ``floor`` at the integers, ``tan`` at pi/2 + k pi, ...). Ops not
    in :data:`DOMAINS` are taken as smooth on ``[low, high]``. Draws float64 leaves
    requiring grad by default."""
    fg = _fg()
    dtype = fg.float64 if dtype is None else dtype
    name = _op_name(op)
    d_lo, d_hi, kinks = DOMAINS.get(name, (-math.inf, math.inf, []))
    lo, hi = max(low, d_lo), min(high, d_hi)
    if lo >= hi:
        raise ValueError(
            f"differentiable_points: [{low}, {high}] does not meet {name}'s domain [{d_lo}, {d_hi}]"
        )
    points = kinks(lo - 1, hi + 1) if callable(kinks) else list(kinks)
    gap = 0.3 if name in _POLE_OPS else margin
    width = 32 if dtype == fg.float32 else 64
    elements = floats(lo, hi, width=width, away_from=points, margin=gap)
    return tensors(dtype=dtype, shape=shape, elements=elements, requires_grad=requires_grad)
