"""Ops composed in Python from differentiable ops (``ferrograd._tensor_api``,
``ferrograd._composite``): their gradients, forward mode and batching come
from the ops they are made of."""

from __future__ import annotations

import numpy as np

from .schema import (
    ALL,
    CUSTOM,
    FP32,
    FUNCTION,
    INPLACE,
    LINALG,
    LOWER_PRECISION_FP,
    METHOD,
    NUMERIC,
    POSITIVE,
    Domain,
    Op,
    Sample,
    T,
    fixed,
    ints,
)

OPS: list[Op] = []
FM = (FUNCTION, METHOD)


def _c(name, doc, ref, sample, *, surfaces=FM, dtypes=NUMERIC, differentiable=True, **kw):
    OPS.append(Op(name, "composed", doc, surfaces=surfaces, impl=f"python:ferrograd:{name}",
                  dtypes=dtypes, differentiable=differentiable, batching=CUSTOM,
                  batching_rule="composed", sample=sample, ref=ref, **kw))


def _pick(k):
    return lambda fn, *a, **kw: fn(*a, **kw)[k]


def _seq(fn, *ts, **kw):
    return fn(list(ts), **kw)


def _cross(a, b, dim=-1):
    return np.cross(a, b, axis=dim)


def _quantile(x, q, dim=None, keepdim=False):
    return np.asarray(np.quantile(x, q, axis=dim, keepdims=keepdim))


# The benchmark's large cases (``bench=``): about a million elements of work, as a
# 1024 x 1024 matrix, a vector of 2**20, or products of 1024 x 1024-class matrices
# (the batched ones as 16 batches of 256 x 256).
M = T((1024, 1024))
HALF_COLS = T((1024, 512))
VEC = T((1024,))
LONG = T((1 << 20,))
BATCH = T((16, 256, 256))
# The right factor of a product at a layer's weights' scale: the float32 rounding of
# 1024-long sums of [-2, 2] entries (about 3e-4) exceeds the benchmark's tolerance
# where a result is near zero.
WEIGHTS = Domain(-0.1, 0.1)
W = T((1024, 1024), domain=WEIGHTS)
W_BATCH = T((16, 256, 256), domain=WEIGHTS)


# products and fused multiply-adds
_c("addmm", "`beta * input + alpha * (mat1 @ mat2)`.",
   lambda c, a, b, beta=1, alpha=1: beta * c + alpha * (a @ b),
   Sample("fixed", (T((2, 2)), T((2, 3)), T((3, 2))), {"beta": 0.5, "alpha": 2.0}),
   surfaces=(FUNCTION, METHOD, INPLACE), autocast=LOWER_PRECISION_FP,
   bench=Sample("fixed", (M, M, W), {"beta": 0.5, "alpha": 2.0}))
_c("addbmm", "`beta * input + alpha * sum_i(batch1[i] @ batch2[i])`.",
   lambda c, a, b: c + np.einsum("bij,bjk->ik", a, b), fixed(T((2, 2)), T((2, 2, 3)), T((2, 3, 2))),
   surfaces=(FUNCTION, METHOD, INPLACE), autocast=LOWER_PRECISION_FP,
   bench=fixed(T((256, 256)), BATCH, W_BATCH))
_c("baddbmm", "`beta * input + alpha * (batch1 @ batch2)`, batched.",
   lambda c, a, b, alpha=1: c + alpha * (a @ b),
   Sample("fixed", (T((2, 2, 2)), T((2, 2, 3)), T((2, 3, 2))), {"alpha": 0.5}),
   surfaces=(FUNCTION, METHOD, INPLACE), autocast=LOWER_PRECISION_FP,
   bench=Sample("fixed", (BATCH, BATCH, W_BATCH), {"alpha": 0.5}))
_c("addmv", "`beta * input + alpha * (mat @ vec)`.", lambda c, a, v: c + a @ v,
   fixed(T((2,)), T((2, 3)), T((3,))), surfaces=(FUNCTION, METHOD, INPLACE),
   bench=fixed(VEC, M, T((1024,), domain=WEIGHTS)))
_c("addr", "`beta * input + alpha * outer(vec1, vec2)`.", lambda c, a, b: c + np.outer(a, b),
   fixed(T((2, 3)), T((2,)), T((3,))), surfaces=(FUNCTION, METHOD, INPLACE),
   bench=fixed(M, VEC, VEC))
_c("tensordot", "Contracts `dims` dimensions of `a` with those of `b`.",
   lambda a, b, dims=2: np.tensordot(a, b, dims), Sample("fixed", (T((2, 3)), T((3, 2))), {"dims": 1}),
   surfaces=(FUNCTION,), bench=Sample("fixed", (M, W), {"dims": 1}))
_c("inner", "Inner product over the last dimension of both.", np.inner, fixed(T((2, 3)), T((2, 3))),
   bench=fixed(M, W))
_c("vdot", "Dot product of two 1-D tensors.", lambda a, b: np.asarray(np.vdot(a, b)),
   fixed(T((3,)), T((3,))), bench=fixed(LONG, LONG))
_c("kron", "Kronecker product.", np.kron, fixed(T((2, 2)), T((2, 3))),
   bench=fixed(T((32, 32)), T((32, 32))))
_c("cross", "Cross product of 3-vectors along `dim`.", _cross,
   Sample("fixed", (T((2, 3)), T((2, 3))), {"dim": 1}), surfaces=(FUNCTION, METHOD, LINALG),
   bench=Sample("fixed", (T((349_525, 3)), T((349_525, 3))), {"dim": 1}))
_c("cdist", "Pairwise p-norm distances between the rows of `x1` and `x2`.",
   # Rows of x1 and x2 in disjoint boxes: a zero distance is a kink of the norm.
   lambda a, b: np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1)),
   fixed(T((2, 3), domain=Domain(-2.0, -0.5)), T((4, 3), domain=Domain(0.5, 2.0))),
   surfaces=(FUNCTION,), autocast=FP32,
   bench=fixed(T((1024, 64), domain=Domain(-2.0, -0.5)), T((1024, 64), domain=Domain(0.5, 2.0))))
_c("diag", "The diagonal of a matrix as a vector, or a vector as a diagonal matrix.",
   lambda x, diagonal=0: np.diag(x, diagonal), fixed(T((3,))), bench=fixed(VEC))
_c("diag_embed", "Matrices whose diagonals are the last dimension of `input`.",
   lambda x: np.stack([np.diag(r) for r in x]), fixed(T((2, 3))), bench=fixed(T((1024, 32))))
_c("block_diag", "A block-diagonal matrix from the given matrices.",
   lambda a, b: np.block([[a, np.zeros((a.shape[0], b.shape[1]))], [np.zeros((b.shape[0], a.shape[1])), b]]),
   fixed(T((2, 3)), T((1, 2))), surfaces=(FUNCTION,), bench=fixed(T((512, 512)), T((512, 512))))


# scans
_c("cummax", "Running maximum of `input` along `dim` (values and indices).",
   lambda x, dim: np.maximum.accumulate(x, axis=dim), Sample("fixed", (T((2, 3)), 1), call=_pick(0),
                                                            unique=0.01),
   bench=Sample("fixed", (T((1024, 1024)), 1), call=_pick(0), unique=0.01))
_c("cummin", "Running minimum of `input` along `dim` (values and indices).",
   lambda x, dim: np.minimum.accumulate(x, axis=dim), Sample("fixed", (T((2, 3)), 0), call=_pick(0),
                                                            unique=0.01),
   bench=Sample("fixed", (T((1024, 1024)), 0), call=_pick(0), unique=0.01))
_c("diff", "The `n`-th forward difference along `dim`.", lambda x, n=1, dim=-1: np.diff(x, n, axis=dim),
   Sample("fixed", (T((2, 4)),), {"n": 2, "dim": 1}),
   bench=Sample("fixed", (M,), {"n": 2, "dim": 1}))
_c("trapezoid", "Integral of `y` by the trapezoid rule along `dim`.",
   lambda y, dx=1.0, dim=-1: np.trapezoid(y, dx=dx, axis=dim),
   Sample("fixed", (T((2, 3)),), {"dx": 0.5, "dim": 1}), surfaces=(FUNCTION,), aliases=("trapz",),
   bench=Sample("fixed", (M,), {"dx": 0.5, "dim": 1}))
_c("cumulative_trapezoid", "Running integral of `y` by the trapezoid rule along `dim`.",
   lambda y, dim=-1: np.cumsum((y[:, 1:] + y[:, :-1]) / 2, axis=1),
   Sample("fixed", (T((2, 3)),), {"dim": 1}), surfaces=(FUNCTION,),
   bench=Sample("fixed", (M,), {"dim": 1}))

# shapes
_c("tile", "`input` repeated `dims` times along each dimension.", np.tile, fixed(T((2, 3)), (2, 1)),
   dtypes=ALL, bench=fixed(T((512, 1024)), (2, 1)))
_c("repeat_interleave", "Each element (or slice along `dim`) of `input` repeated `repeats` times.",
   lambda x, r, dim=None: np.repeat(x, r, axis=dim), Sample("fixed", (T((2, 3)), 2), {"dim": 1}),
   dtypes=ALL, bench=Sample("fixed", (HALF_COLS, 2), {"dim": 1}))
_c("rot90", "`input` rotated by 90 degrees `k` times in the plane of `dims`.",
   lambda x, k=1, dims=(0, 1): np.rot90(x, k, dims), fixed(T((2, 3)), 1, (0, 1)), dtypes=ALL,
   bench=fixed(M, 1, (0, 1)))
_c("fliplr", "`input` reversed along dimension 1.", np.fliplr, fixed(T((2, 3))), dtypes=ALL,
   bench=fixed(M))
_c("flipud", "`input` reversed along dimension 0.", np.flipud, fixed(T((2, 3))), dtypes=ALL,
   bench=fixed(M))
_c("ravel", "`input` flattened to 1-D (a view when possible).", lambda x: x.reshape(-1),
   fixed(T((2, 3))), dtypes=ALL, bench=fixed(M))
for _k in (1, 2, 3):
    _c(f"atleast_{_k}d", f"`input` with at least {_k} dimensions.",
       getattr(np, f"atleast_{_k}d"), fixed(T((3,))), surfaces=(FUNCTION,), dtypes=ALL,
       bench=fixed(LONG))
for _name, _np_fn, _shapes, _big in (
    ("hstack", np.hstack, ((2, 3), (2, 1)), ((1024, 512), (1024, 512))),
    ("vstack", np.vstack, ((2, 3), (3,)), ((512, 1024), (511, 1024), (1024,))),
    ("dstack", np.dstack, ((2, 3), (2, 3)), ((1024, 512), (1024, 512))),
    ("column_stack", np.column_stack, ((2,), (2, 3)), ((1024,), (1024, 1023))),
):
    _c(_name, f"Joins tensors as NumPy's `{_name}`.", (lambda f: lambda *ts: f(ts))(_np_fn),
       Sample("fixed", tuple(T(s) for s in _shapes), call=_seq), surfaces=(FUNCTION,), dtypes=ALL,
       aliases=("row_stack",) if _name == "vstack" else (),
       bench=Sample("fixed", tuple(T(s) for s in _big), call=_seq))
_c("tensor_split", "`input` split into `indices_or_sections` views along `dim`.",
   lambda x, n, dim=0: np.array_split(x, n, axis=dim), Sample("fixed", (T((2, 3)), 2), {"dim": 1}),
   dtypes=ALL, bench=Sample("fixed", (M, 3), {"dim": 1}))
for _name, _axis in (("hsplit", 1), ("vsplit", 0)):
    _c(_name, f"`input` split along dimension {_axis}.",
       (lambda a: lambda x, s: np.split(x, s, axis=a))(_axis), fixed(T((2, 4)), 2), dtypes=ALL,
       bench=fixed(M, 4))
_c("dsplit", "`input` split along dimension 2.", lambda x, s: np.split(x, s, axis=2),
   fixed(T((2, 1, 4)), 2), dtypes=ALL, bench=fixed(T((1024, 256, 4)), 2))
_c("meshgrid", "Coordinate grids of the given 1-D tensors.",
   lambda a, b: np.meshgrid(a, b, indexing="ij"), Sample("fixed", (T((2,)), T((3,))),
                                                        call=lambda fn, *ts: fn(*ts, indexing="ij")),
   surfaces=(FUNCTION,), dtypes=ALL, bench=fixed(VEC, VEC))
_c("cartesian_prod", "The Cartesian product of the given 1-D tensors, one row per combination.",
   lambda a, b: np.stack([g.reshape(-1) for g in np.meshgrid(a, b, indexing="ij")], 1),
   fixed(T((2,)), T((3,))), surfaces=(FUNCTION,), dtypes=ALL,
   bench=fixed(T((100,)), T((100,)), T((100,))))

# reductions
_c("quantile", "The `q`-quantiles of `input` (linear interpolation by default).", _quantile,
   Sample("fixed", (T((2, 3)), 0.3), {"dim": 1}, unique=0.01), autocast=FP32,
   bench=Sample("fixed", (LONG, 0.3), unique=0.01))
_c("nanquantile", "`quantile` ignoring NaN.", _quantile,
   Sample("fixed", (T((2, 3)), 0.6), {"dim": 0, "keepdim": True}, unique=0.01), autocast=FP32,
   bench=Sample("fixed", (M, 0.6), {"dim": 0, "keepdim": True}, unique=0.01))
_c("nanmean", "Mean of `input` ignoring NaN.", lambda x, dim=None: np.nanmean(x, axis=dim),
   Sample("fixed", (T((2, 3)),), {"dim": 0}), bench=Sample("fixed", (M,), {"dim": 0}))
_c("std_mean", "Standard deviation and mean of `input` over `dim`.",
   # Distinct values: at zero variance the square root has a kink.
   lambda x, dim: (np.std(x, axis=dim, ddof=1), np.mean(x, axis=dim)),
   Sample("fixed", (T((2, 3)), 1), unique=0.01),
   surfaces=(FUNCTION,), bench=Sample("fixed", (M, 1), unique=0.01))
_c("var_mean", "Variance and mean of `input` over `dim`.",
   lambda x, dim: (np.var(x, axis=dim, ddof=1), np.mean(x, axis=dim)), fixed(T((2, 3)), 0),
   surfaces=(FUNCTION,), bench=fixed(M, 0))
_c("aminmax", "Minimum and maximum of `input` (over `dim` when given).",
   lambda x, dim: (np.min(x, axis=dim), np.max(x, axis=dim)),
   Sample("fixed", (T((2, 3)),), {"dim": 1}, unique=0.01),
   bench=Sample("fixed", (M,), {"dim": 1}, unique=0.01))

# counts, sets and searches (not differentiable)
_c("count_nonzero", "The number of nonzero elements (over `dim` when given).",
   lambda x, dim=None: np.asarray(np.count_nonzero(x, axis=dim)),
   fixed(T((2, 3), domain=ints(-1, 2), dtype="int64")), differentiable=False, dtypes=ALL,
   bench=fixed(T((1024, 1024), domain=ints(-1, 2), dtype="int64")))
_c("bincount", "Counts of each value of a 1-D non-negative integer tensor.",
   lambda x: np.bincount(x), fixed(T((6,), domain=ints(0, 4), dtype="int64")),
   differentiable=False, bench=fixed(T((1 << 20,), domain=ints(0, 1000), dtype="int64")))
_c("argwhere", "The indices of the nonzero elements, one row each.", np.argwhere,
   fixed(T((2, 3), domain=ints(-1, 2), dtype="int64")), differentiable=False, dtypes=ALL,
   bench=fixed(T((1024, 1024), domain=ints(-1, 2), dtype="int64")))
_c("isin", "True where an element of `elements` is in `test_elements`.",
   lambda a, b: np.isin(a, b), fixed(T((2, 3), domain=ints(0, 4), dtype="int64"),
                                      T((3,), domain=ints(0, 4), dtype="int64")),
   surfaces=(FUNCTION,), differentiable=False, dtypes=ALL,
   bench=fixed(T((1024, 1024), domain=ints(0, 4096), dtype="int64"),
               T((1024,), domain=ints(0, 4096), dtype="int64")))
_c("histc", "A histogram of `input` with `bins` equal bins between `min` and `max`.",
   lambda x, bins, min, max: np.histogram(x, bins, (min, max))[0].astype(np.float64),
   fixed(T((2, 3), domain=POSITIVE), 4, 0.0, 2.0), differentiable=False,
   bench=fixed(T((1024, 1024), domain=POSITIVE), 100, 0.0, 2.0))
