"""Shared machinery for the per-op test modules (``test_ops_*.py``): a few
hypothesis examples per op, float64 gradcheck + gradgradcheck, and float32
forward values against NumPy."""

from __future__ import annotations

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg

# A few examples per op: each runs a gradcheck and a gradgradcheck. Scales with
# the active profile (conftest.py), so CI still draws more.
FEW = settings(max_examples=max(4, settings.default.max_examples // 5), deadline=None)


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=3):
    """Shapes including size-0 and size-1 dimensions."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def pair_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3):
    return hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    ).map(lambda r: r.input_shapes)


def values(shape, lo=-2.0, hi=2.0, away_from=None, unique=False):
    """float64 arrays; ``away_from`` keeps every element at least 0.05 from
    the listed kinks, and ``unique`` keeps elements 0.05 apart, so finite
    differences never straddle a kink or a tie."""
    if unique:
        ints = st.integers(int(np.ceil(lo * 20)), int(np.floor(hi * 20)))
        return hnp.arrays(np.int64, shape, elements=ints, unique=True).map(lambda a: a / 20.0)
    el = st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    if away_from is not None:
        el = el.filter(lambda v: all(abs(v - k) > 0.05 for k in away_from))
    return hnp.arrays(np.float64, shape, elements=el, unique=unique)


def leaf(arr, requires_grad=True, dtype=None):
    arr = np.asarray(arr)
    t = fg.tensor(arr.astype(np.float64) if dtype is None else arr, dtype=dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def check_grads(fn, *arrays):
    """gradcheck and gradgradcheck of ``fn`` at float64 leaves built from ``arrays``."""
    inputs = tuple(leaf(a) for a in arrays)
    assert fg.autograd.gradcheck(fn, inputs)
    assert fg.autograd.gradgradcheck(fn, inputs)


def close32(fg_fn, np_fn, *arrays, rtol=1e-5, atol=1e-6):
    """``fg_fn`` on float32 tensors agrees with ``np_fn`` on float32 arrays."""
    a32 = [np.asarray(a, dtype=np.float32) for a in arrays]
    got = fg_fn(*[fg.tensor(a) for a in a32])
    want = np_fn(*a32)
    got = np.asarray(got.detach().numpy()) if hasattr(got, "detach") else np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
