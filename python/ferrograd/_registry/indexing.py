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
    Sample,
    T,
    fixed,
    ints,
)

OPS: list[Op] = []
IDX2 = T((2, 2), domain=ints(0, 3), dtype="int64")
ROWS = T((3,), domain=ints(0, 3), dtype="int64")


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
   nodes={"IndexSelectBackward0": ()}, rule="index_select")
_i("gather", "Entries of `input` picked along `dim` by `index` (same shape as `index`).",
   lambda x, d, i: np.take_along_axis(x, i, axis=d), fixed(T((3, 3)), 1, IDX2),
   nodes={"GatherBackward0": ()}, rule="gather")
_i("scatter", "`input` with `src` written at `index` along `dim` (the last write wins).",
   _scatter, fixed(T((3, 3)), 1, T((2, 1), domain=ints(0, 3), dtype="int64"), T((2, 1))),
   nodes={"ScatterBackward0": ()}, surfaces=(FUNCTION, METHOD, INPLACE), rule="scatter")
_i("scatter_add", "`input` with `src` added at `index` along `dim`.",
   _scatter_add, fixed(T((3, 3)), 1, IDX2, T((2, 2))),
   nodes={"ScatterAddBackward0": ()}, surfaces=(FUNCTION, METHOD, INPLACE), rule="scatter_add")
_i("index_add", "`input` with `alpha * source` added at the rows `index` along `dim`.",
   _index_add, fixed(T((3, 4)), 0, ROWS, T((3, 4))), surfaces=(FUNCTION, METHOD, INPLACE))
_i("masked_select", "The elements of `input` where `mask` is True, as a 1-D tensor.",
   lambda x, m: x[np.broadcast_to(m, x.shape)], fixed(T((2, 3)), T((2, 3), dtype="bool")),
   nodes={"MaskedSelectBackward0": ()},
   refuse={VMAP: "its result's size depends on the mask's values, which differ per sample"})
_i("take", "The elements of `input` seen as 1-D at `index` (same shape as `index`).",
   lambda x, i: np.take(x.reshape(-1), i), fixed(T((2, 3)), T((2, 2), domain=ints(0, 6), dtype="int64")))
_i("take_along_dim", "Entries of `input` picked along `dim` by `indices` (broadcast).",
   lambda x, i, dim: np.take_along_axis(x, i, axis=dim), fixed(T((3, 3)), IDX2, 1))
