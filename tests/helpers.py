"""Strategies and assertions shared by the test modules (imported as ``helpers``),
including the per-op machinery of the ``test_ops_*.py`` modules: a few hypothesis
examples per op, float64 gradcheck + gradgradcheck, and float32 forward values
against NumPy.

Shapes, broadcast shapes and element values are drawn by the public
``ferrograd.testing.strategies`` and gradients checked by
``ferrograd.testing.gradcheck``/``gradgradcheck``, so the tools users get are
the ones every op of the suite goes through."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
from ferrograd.testing import gradcheck, gradgradcheck
from ferrograd.testing import strategies as fst

NP_DTYPES = {
    fg.float32: np.float32,
    fg.float64: np.float64,
    fg.int64: np.int64,
    fg.bool: np.bool_,
}


def live_nodes() -> int:
    return fg._C._live_nodes()


def run_isolated(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter, for checks whose failure mode is a crash
    (stack overflow, segfault) that would otherwise take the whole test run down."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# -- shapes ---------------------------------------------------------------------------


def shapes(min_dims=0, max_dims=3, min_side=1, max_side=4):
    return fst.shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4):
    """Tuples of shapes that broadcast together (size-1 dims and rank differences included)."""
    return fst.mutually_broadcastable_shapes(
        num_shapes, min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=max_side
    )


@st.composite
def non_broadcastable_shapes(draw, max_dims=3):
    """Two shapes that do not broadcast: some aligned dims differ and neither is 1."""
    a = list(draw(shapes(min_dims=1, max_dims=max_dims, min_side=1, max_side=5)))
    b = list(draw(shapes(min_dims=1, max_dims=max_dims, min_side=1, max_side=5)))
    k = draw(st.integers(1, min(len(a), len(b))))
    sa = draw(st.integers(2, 5))
    sb = draw(st.integers(2, 5).filter(lambda v: v != sa))
    a[-k], b[-k] = sa, sb
    return tuple(a), tuple(b)


# -- values ---------------------------------------------------------------------------


def floats(lo=-3.0, hi=3.0, width=64):
    return fst.floats(lo, hi, width=width)


def arrays(shape, lo=-3.0, hi=3.0, dtype=np.float64, avoid=None):
    """Float arrays in [lo, hi]; with ``avoid=(c, r)`` every element keeps |x - c| >= r."""
    width = 32 if dtype == np.float32 else 64
    if avoid is None:
        elements = fst.floats(lo, hi, width=width)
    else:
        c, r = avoid
        elements = fst.floats(lo, hi, width=width, away_from=[c], margin=r)
    return hnp.arrays(dtype, shape, elements=elements)


def leaf(arr, requires_grad=True, dtype=None):
    """A float64 (by default) leaf tensor built from a NumPy array."""
    return fg.tensor(np.asarray(arr), dtype=dtype or fg.float64, requires_grad=requires_grad)


# -- assertions -----------------------------------------------------------------------


def to_np(t) -> np.ndarray:
    return np.array(t.detach().numpy(), copy=True)


def assert_tensor(t, expected, *, dtype=None, rtol=1e-6, atol=1e-6):
    """``t`` is a ferrograd Tensor with ``expected``'s shape and values (and ``dtype``)."""
    assert isinstance(t, fg.Tensor), f"expected a Tensor, got {type(t).__name__}"
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape, f"shape {tuple(t.shape)} != {expected.shape}"
    if dtype is not None:
        assert t.dtype == dtype, f"dtype {t.dtype} != {dtype}"
    got = to_np(t)
    if expected.dtype == np.bool_ or got.dtype == np.bool_ or np.issubdtype(got.dtype, np.integer):
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)


# -- per-op tests (test_ops_*.py) ------------------------------------------------------

# A few examples per op: each runs a gradcheck and a gradgradcheck. Scales with
# the active profile (conftest.py), so CI still draws more.
FEW = settings(max_examples=max(4, settings.default.max_examples // 5), deadline=None)


def op_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3):
    """Shapes including size-0 and size-1 dimensions."""
    return fst.shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def pair_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3):
    return fst.mutually_broadcastable_shapes(
        2, min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    )


def values(shape, lo=-2.0, hi=2.0, away_from=None, unique=False):
    """float64 arrays; ``away_from`` keeps every element at least 0.05 from
    the listed kinks, and ``unique`` keeps elements 0.05 apart, so finite
    differences never straddle a kink or a tie."""
    if unique:
        ints = st.integers(int(np.ceil(lo * 20)), int(np.floor(hi * 20)))
        return hnp.arrays(np.int64, shape, elements=ints, unique=True).map(lambda a: a / 20.0)
    el = fst.floats(lo, hi, away_from=away_from or (), margin=0.05)
    return hnp.arrays(np.float64, shape, elements=el, unique=unique)


def check_grads(fn, *arrays):
    """gradcheck and gradgradcheck of ``fn`` at float64 leaves built from ``arrays``."""
    inputs = tuple(leaf(a) for a in arrays)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def close32(fg_fn, np_fn, *arrays, rtol=1e-5, atol=1e-6):
    """``fg_fn`` on float32 tensors agrees with ``np_fn`` on float32 arrays."""
    a32 = [np.asarray(a, dtype=np.float32) for a in arrays]
    got = fg_fn(*[fg.tensor(a) for a in a32])
    want = np_fn(*a32)
    got = np.asarray(got.detach().numpy()) if hasattr(got, "detach") else np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
