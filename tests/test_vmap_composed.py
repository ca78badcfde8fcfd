"""``vmap`` over every op composed in Python (``ferrograd._tensor_api`` and
``ferrograd._composite``), against a Python loop over the samples.

The cases are ``composed_ops.COMPOSED``, which must cover every public name
of the two modules (see ``test_forward_ad_ops.py``); each runs with every
input batched and with only the first one batched (the others shared), so
both the batched and the broadcast operands of each rule are exercised.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
from composed_ops import COMPOSED
from ferrograd.func import grad, jacfwd, jacrev, vmap

B = 3


def _draw(shape, lo, hi, away, rng):
    a = rng.uniform(lo, hi, size=shape)
    if away is not None:
        a = np.where(np.abs(a) < away, np.sign(a + 1e-12) * (away + np.abs(a)), a)
    return fg.tensor(a, dtype=fg.float64)


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _against_loop(fn, xs, in_dims):
    got = _flat(vmap(fn, in_dims=in_dims)(*xs))
    per = [
        _flat(fn(*[x if d is None else x[i] for x, d in zip(xs, in_dims)])) for i in range(B)
    ]
    assert len(got) == len(per[0])
    for k, g in enumerate(got):
        ref = np.stack([p[k].numpy() for p in per])
        assert tuple(g.shape) == ref.shape, (k, tuple(g.shape), ref.shape)
        np.testing.assert_allclose(g.numpy(), ref, rtol=1e-12, atol=1e-12)


RUNS = [(n, False) for n in sorted(COMPOSED)] + [
    (n, True) for n in sorted(COMPOSED) if len(COMPOSED[n][1]) > 1
]


@pytest.mark.parametrize(
    ("name", "shared"), RUNS, ids=[f"{n}-{'first' if s else 'all'}_batched" for n, s in RUNS]
)
@settings(max_examples=max(2, settings.default.max_examples // 12))
@given(seed=st.integers(0, 2**32 - 1))
def test_composed_op_matches_the_loop(name, shared, seed):
    fn, specs = COMPOSED[name]
    rng = np.random.default_rng(seed)
    xs, dims = [], []
    for i, (shape, lo, hi, away) in enumerate(specs):
        batched = i == 0 or not shared
        xs.append(_draw(((B,) if batched else ()) + shape, lo, hi, away, rng))
        dims.append(0 if batched else None)
    _against_loop(fn, xs, tuple(dims))


def test_numpy_backed_ops_batch_at_every_level():
    # cummax, quantile and scatter_reduce's amax/prod run in NumPy: nested vmap,
    # a batch dimension that is not the first and gradients through them.
    x = fg.randn(2, 4, 5, dtype=fg.float64)
    values, indices = vmap(vmap(lambda t: fg.cummax(t, 0)))(x)
    ref = fg.cummax(x, 2)
    assert fg.equal(values, ref.values) and fg.equal(indices, ref.indices)
    values = vmap(lambda t: fg.cummin(t, 0).values, in_dims=2, out_dims=2)(x)
    assert fg.equal(values, fg.cummin(x, 0).values)
    q = fg.tensor([0.25, 0.5], dtype=fg.float64)
    got = vmap(vmap(lambda t: fg.quantile(t, q, keepdim=True)))(x)
    want = fg.quantile(x, q, dim=2, keepdim=True).permute(1, 2, 0, 3)
    assert got.shape == (2, 4, 2, 1) and fg.allclose(got, want)
    idx = fg.tensor([[0, 0], [1, 0]])
    f = lambda t: fg.scatter_reduce(t[:, :3], 1, idx, t[:, 3:], "amax").sum()  # noqa: E731
    g = vmap(grad(f))(x[0, :, :].reshape(2, 2, 5))
    loop = fg.stack([grad(f)(s) for s in x[0].reshape(2, 2, 5)])
    assert fg.allclose(g, loop)
    # Jacobians batch the rows of the identity through the same rules.
    v = x[0, 0]
    j = jacrev(lambda t: fg.cummax(t, 0).values)(v)
    assert fg.allclose(j, jacfwd(lambda t: fg.cummax(t, 0).values)(v))
    np.testing.assert_array_equal(j.sum(1).numpy(), np.ones(5))


def test_batched_q_of_quantile_is_refused_by_name():
    x, q = fg.randn(3, 4), fg.rand(3)
    with pytest.raises(RuntimeError, match=re.escape("vmap: there is no batching rule for quantile with a batched q")):  # fmt: skip
        vmap(fg.quantile)(x, q)
