"""vmap of the searching and membership ops (searchsorted, bucketize, isin,
unravel_index, one_hot): whichever arguments carry the batch, the result equals
the op applied sample by sample."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd.func import vmap


def _loop(fn, in_dims, *args):
    size = next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)
    outs = [fn(*[a if d is None else a.select(d, i) for a, d in zip(args, in_dims)])
            for i in range(size)]
    if isinstance(outs[0], tuple):
        return tuple(fg.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return fg.stack(outs)


def _same(fn, in_dims, *args):
    got = vmap(fn, in_dims=in_dims)(*args)
    want = _loop(fn, in_dims, *args)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def _sorted_rows(rng, *shape):
    return fg.tensor(np.sort(rng.integers(-5, 6, shape).astype(np.float64), axis=-1))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 4), nseq=st.integers(1, 5),
       nval=st.integers(0, 4), right=st.booleans(), nd=st.booleans(),
       dims=st.sampled_from([(0, None), (None, 0), (0, 0), (1, 0)]))
def test_searchsorted(seed, batch, nseq, nval, right, nd, dims):
    rng = np.random.default_rng(seed)
    lead = (2,) if nd else ()
    seq = _sorted_rows(rng, batch, *lead, nseq) if dims[0] is not None else _sorted_rows(rng, *lead, nseq)
    vals = fg.tensor(rng.integers(-6, 7, (batch, *lead, nval)).astype(np.float64))
    if dims[1] is None:
        vals = vals[0]
    if dims[0] == 1:
        seq = seq.movedim(0, 1) if nd else seq
        dims = (1 if nd else 0, dims[1])
    _same(lambda s, v: fg.searchsorted(s, v, right=right), dims, seq, vals)


def test_searchsorted_with_a_sorter_and_a_number():
    rng = np.random.default_rng(0)
    seq = fg.tensor(rng.normal(size=(3, 5)))
    sorter = seq.argsort(-1)
    _same(lambda s, o: fg.searchsorted(s, 0.25, sorter=o), (0, 0), seq, sorter)
    _same(lambda s, o: fg.searchsorted(s, fg.tensor([0.0, 1.0]), sorter=o, side="right"),
          (0, 0), seq, sorter)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 4), right=st.booleans(),
       dims=st.sampled_from([(0, None), (None, 0), (0, 0)]))
def test_bucketize(seed, batch, right, dims):
    rng = np.random.default_rng(seed)
    inp = fg.tensor(rng.integers(-6, 7, (batch, 2, 3)).astype(np.float64))
    bounds = _sorted_rows(rng, batch, 4)
    args = (inp if dims[0] is not None else inp[0], bounds if dims[1] is not None else bounds[0])
    _same(lambda x, b: fg.bucketize(x, b, right=right), dims, *args)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 4), invert=st.booleans(),
       dims=st.sampled_from([(0, None), (None, 0), (0, 0)]))
def test_isin(seed, batch, invert, dims):
    rng = np.random.default_rng(seed)
    elements = fg.tensor(rng.integers(0, 6, (batch, 2, 3)))
    test = fg.tensor(rng.integers(0, 6, (batch, 4)))
    args = (elements if dims[0] is not None else elements[0],
            test if dims[1] is not None else test[0])
    _same(lambda e, t: fg.isin(e, t, invert=invert), dims, *args)


def test_isin_of_a_number_against_batched_test_elements():
    test = fg.tensor([[1, 2], [3, 4], [2, 2]])
    assert vmap(lambda t: fg.isin(2, t))(test).tolist() == [True, False, True]


def test_unravel_index():
    idx = fg.tensor([[0, 5, 3], [4, 1, 2]])
    _same(lambda i: fg.unravel_index(i, (2, 3)), (0,), idx)


def test_one_hot_with_and_without_the_number_of_classes():
    idx = fg.tensor([[0, 2, 1], [1, 1, 0]])
    _same(lambda i: F.one_hot(i, 4), (0,), idx)
    with pytest.raises(RuntimeError, match="one_hot needs num_classes"):
        vmap(F.one_hot)(idx)


def test_value_sized_ops_refuse_naming_the_op():
    x = fg.tensor([[1, 1, 2], [3, 3, 3]])
    for fn, name in ((fg.unique, "unique"), (fg.unique_consecutive, "unique_consecutive")):
        with pytest.raises(RuntimeError, match=f"no batching rule for ferrograd.{name}"):
            vmap(fn)(x)
