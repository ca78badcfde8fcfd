"""Gather, scatter and indexing ops, and the searches and counts that return
indices."""

from __future__ import annotations

import numpy as np

from .schema import (
    ALL,
    CUSTOM,
    FUNCTION,
    INPLACE,
    METHOD,
    NONE,
    VMAP,
    Op,
    T,
    fixed,
    ints,
)

OPS: list[Op] = []
IDX2 = T((2, 2), domain=ints(0, 3), dtype="int64")


def _gather(x, d, i):
    """gather reads only the first ``index.shape[k]`` entries of the other dimensions."""
    box = tuple(slice(None) if k == d else slice(0, n) for k, n in enumerate(i.shape))
    return np.take_along_axis(x[box], i, axis=d)


ROWS = T((3,), domain=ints(0, 3), dtype="int64")
# The benchmark's large cases: a 1024 x 1024 matrix, 1024 rows of it, a pick per element.
M = T((1024, 1024))
BIG_ROWS = T((1024,), domain=ints(0, 1024), dtype="int64")
BIG_PICKS = T((1024, 1024), domain=ints(0, 1024), dtype="int64")
FLAT_PICKS = T((1024, 1024), domain=ints(0, 1024 * 1024), dtype="int64")


def _i(name, doc, ref, sample, *, nodes=None, surfaces=(FUNCTION, METHOD), rule=None, **kw):
    OPS.append(Op(name, "indexing", doc, surfaces=surfaces, dtypes=ALL, nodes=nodes or {},
                  batching=CUSTOM if rule else NONE, batching_rule=rule, sample=sample, ref=ref,
                  **kw))


def _scatter_add(x, dim, idx, src):
    out = x.copy()
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        out[tuple(tgt)] += src[pos]
    return out


def _scatter(x, dim, idx, src):
    out = x.copy()
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        out[tuple(tgt)] = src[pos]
    return out


def _index_add(x, dim, idx, src, alpha=1):
    out = np.moveaxis(x.copy(), dim, 0)
    s = np.moveaxis(src, dim, 0)
    for k, i in enumerate(idx):
        out[i] += alpha * s[k]
    return np.moveaxis(out, 0, dim)


_i("index_select", "The entries of `input` at `index` along `dim` (a copy).",
   lambda x, d, i: np.take(x, i, axis=d), fixed(T((3, 4)), 0, ROWS),
   nodes={"IndexSelectBackward0": ()}, rule="index_select", bench=fixed(M, 0, BIG_ROWS))
_i("gather", "Entries of `input` picked along `dim` by `index` (same shape as `index`).",
   _gather, fixed(T((3, 3)), 1, IDX2),
   nodes={"GatherBackward0": ()}, rule="gather", bench=fixed(M, 1, BIG_PICKS))
_i("scatter", "`input` with `src` written at `index` along `dim` (the last write wins).",
   _scatter, fixed(T((3, 3)), 1, T((2, 1), domain=ints(0, 3), dtype="int64"), T((2, 1))),
   nodes={"ScatterBackward0": ()}, surfaces=(FUNCTION, METHOD, INPLACE), rule="scatter",
   bench=fixed(M, 1, BIG_PICKS, M))
_i("scatter_add", "`input` with `src` added at `index` along `dim`.",
   _scatter_add, fixed(T((3, 3)), 1, IDX2, T((2, 2))),
   nodes={"ScatterAddBackward0": ()}, surfaces=(FUNCTION, METHOD, INPLACE), rule="scatter_add",
   bench=fixed(M, 1, BIG_PICKS, M))
_i("index_add", "`input` with `alpha * source` added at the rows `index` along `dim`.",
   _index_add, fixed(T((3, 4)), 0, ROWS, T((3, 4))), surfaces=(FUNCTION, METHOD, INPLACE),
   bench=fixed(M, 0, BIG_ROWS, M))
_i("masked_select", "The elements of `input` where `mask` is True, as a 1-D tensor.",
   lambda x, m: x[np.broadcast_to(m, x.shape)], fixed(T((2, 3)), T((2, 3), dtype="bool")),
   nodes={"MaskedSelectBackward0": ()}, bench=fixed(M, T((1024, 1024), dtype="bool")),
   refuse={VMAP: "its result's size depends on the mask's values, which differ per sample"})
_i("take", "The elements of `input` seen as 1-D at `index` (same shape as `index`).",
   lambda x, i: np.take(x.reshape(-1), i), fixed(T((2, 3)), T((2, 2), domain=ints(0, 6), dtype="int64")),
   nodes={"TakeBackward0": ()}, bench=fixed(M, FLAT_PICKS))
_i("take_along_dim", "Entries of `input` picked along `dim` by `indices` (broadcast).",
   lambda x, i, dim: np.take_along_axis(x, i, axis=dim),
   fixed(T((3, 3)), T((3, 2), domain=ints(0, 3), dtype="int64"), 1),
   bench=fixed(M, BIG_PICKS, 1))
