"""Ops declared in bulk by the shape of their surface: top-level forms of
``linalg`` functions, sorting and selection, set and search ops, the
``new_*`` and ``*_like`` factories, in-place random fills, and the in-place
forms of activations in ``nn.functional``."""

from __future__ import annotations

import numpy as np

from . import _refs, nn_more
from .linalg import (
    BOX,
    SMALL,
    _const,
    _distinct_sv,
    _nonsingular,
    _positive_det,
    _projectors,
    _spd,
    _sym_distinct,
)
from .schema import (
    ALL,
    AWAY0,
    COMPILE,
    CUSTOM,
    F_FUNCTION,
    FORWARD,
    FP32,
    FUNCTION,
    INPLACE,
    LINALG,
    LOWER_PRECISION_FP,
    METHOD,
    NUMERIC,
    PROMOTE,
    REDUCTION,
    VIEW,
    VMAP,
    Domain,
    Op,
    Sample,
    T,
    away,
    fixed,
    ints,
)

OPS: list[Op] = []
FM = (FUNCTION, METHOD)
WELL = Domain(1.0, 2.0)
RANDOM = "random: the values are PyTorch's mt19937 stream, checked in tests/test_random_compat.py"


def _values(fn, *a, **k):
    out = fn(*a, **k)
    return out[0] if isinstance(out, tuple) else out


def _o(name, family, doc, ref, sample, *, surfaces=FM, batching=CUSTOM, rule=None, **kw):
    OPS.append(Op(name, family, doc, surfaces=surfaces, batching=batching,
                  batching_rule=rule or (name if batching == CUSTOM else None), sample=sample,
                  ref=ref, **kw))


# ----- torch-level linalg --------------------------------------------------------------------

def _sv_terms(u, vt):
    """The rank-one terms u_k v_k^T of an SVD (k first): a function of the
    singular vectors that does not depend on their signs."""
    return u.mT[..., :, :, None] * vt[..., :, None, :]


def _qr_positive(q, r):
    """Q and R with R's diagonal made positive (the unique QR of a full-rank
    matrix), so the check does not depend on LAPACK's sign choice."""
    if isinstance(q, np.ndarray):
        s = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    else:
        s = r.diagonal(dim1=-2, dim2=-1).sign()
    return q * s[..., None, :], r * s[..., :, None]


def _np_qr(a):
    return _qr_positive(*np.linalg.qr(a))


def _np_svd(a):
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    return s, _sv_terms(u, vt)


def _np_eigh(a):
    w, v = np.linalg.eigh(a)
    return w, _projectors(v)


# The benchmark's large linalg cases: 256 x 256 (O(n^3) work), built as the
# small samples build theirs, scaled so they stay as well conditioned.
LN = 256


def _big_dominant(a):
    """`_nonsingular` at any n: `a` (entries in [-1, 1]) / 2n plus diag(1, -1, 1, ...),
    strictly diagonally dominant (off-diagonal row sums at most half the diagonal, as
    the small sample's), with every eigenvalue within 1/2 of +-1 (Gershgorin), so the
    determinant stays in float32's range."""
    n = a.shape[-1]
    return a / (2 * n) + _const(a, np.diag([1.0 if i % 2 == 0 else -1.0 for i in range(n)]))


def _big_positive_det(a):
    """`_positive_det` at any n: `a` / 2n plus I, every eigenvalue within 1/2 of 1."""
    n = a.shape[-1]
    return a / (2 * n) + _const(a, np.eye(n))


def _big_spd(a):
    """`_spd` at any n: a a^T / n + 3 I (eigenvalues in [3, about 8])."""
    n = a.shape[-1]
    return a @ a.mT / n + _const(a, 3 * np.eye(n))


def _big_distinct_sv(a):
    """`_distinct_sv` at any size: `a` (m x n, entries in [-0.5, 0.5]) / max(m, n) plus
    diag(1 + 0.1 (k - 1), ..., 1.1, 1), k = min(m, n): ||a||_2 / max(m, n) < 0.05, so
    the singular values stay distinct and at least 0.95 (Weyl)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    d = np.zeros((m, n))
    d[np.arange(k), np.arange(k)] = 1.0 + 0.1 * np.arange(k - 1, -1, -1)
    return a / max(m, n) + _const(a, d)


def _big_sym_distinct(a):
    """`_sym_distinct` at any n: (a + a^T) / n plus diag(-n/2, ..., n/2 - 1), eigenvalues
    within ||a + a^T||_2 / n < 0.1 of integers one apart (distinct)."""
    n = a.shape[-1]
    return (a + a.mT) / n + _const(a, np.diag(np.arange(n) - n / 2.0))


_BIG_SQ = Sample("fixed", (T((LN, LN), domain=BOX),), call=lambda fn, a: fn(_big_dominant(a)))
_SQ = Sample("fixed", (T((3, 3), domain=BOX),), call=lambda fn, a: fn(_nonsingular(a)))
for _name, _doc, _ref, _sample, _bench in (
    ("det", "Determinant of `input` (as `linalg.det`).",
     lambda a: np.asarray(np.linalg.det(_nonsingular(a))), _SQ, _BIG_SQ),
    ("inverse", "Inverse of `input` (as `linalg.inv`).", lambda a: np.linalg.inv(_nonsingular(a)),
     _SQ, _BIG_SQ),
    ("logdet", "Log of the determinant of `input` (NaN for a negative determinant).",
     lambda a: np.asarray(np.log(np.linalg.det(_positive_det(a)))),
     Sample("fixed", (T((3, 3), domain=BOX),), call=lambda fn, a: fn(_positive_det(a))),
     Sample("fixed", (T((LN, LN), domain=BOX),), call=lambda fn, a: fn(_big_positive_det(a)))),
    ("pinverse", "Pseudo-inverse of `input` (as `linalg.pinv`).",
     lambda a: np.linalg.pinv(_distinct_sv(a)),
     Sample("fixed", (T((3, 2), domain=SMALL),), call=lambda fn, a: fn(_distinct_sv(a))),
     Sample("fixed", (T((LN, LN), domain=SMALL),), call=lambda fn, a: fn(_big_distinct_sv(a)))),
    # Entries in [-1/8, 1/8]: ||A||_2 about 2.3, as the small sample's 2 x 2 in [-2, 2].
    ("matrix_power", "`input` raised to the integer power `n`.", np.linalg.matrix_power,
     fixed(T((2, 2)), 3), fixed(T((LN, LN), domain=Domain(-0.125, 0.125)), 3)),
):
    _o(_name, "linalg", _doc, _ref, _sample, dtypes=NUMERIC, rule="linalg",
       surfaces=FM + ((LINALG,) if _name in ("det", "matrix_power") else ()),
       autocast=FP32 if _name in ("inverse", "pinverse") else None, bench=_bench)
# log|det| is smooth away from singular matrices, of either sign.
_o("slogdet", "linalg", "Sign and log absolute determinant of `input`.",
   lambda a: np.linalg.slogdet(_nonsingular(a)), _SQ, surfaces=(FUNCTION, METHOD, LINALG),
   rule="linalg", bench=_BIG_SQ)
_o("cholesky", "linalg", "The lower Cholesky factor of a symmetric positive definite `input`.",
   lambda a: np.linalg.cholesky(_spd(a)),
   Sample("fixed", (T((2, 2)),), call=lambda fn, a: fn(_spd(a))),
   surfaces=(FUNCTION, METHOD, LINALG), rule="linalg", autocast=FP32,
   bench=Sample("fixed", (T((LN, LN)),), call=lambda fn, a: fn(_big_spd(a))))
# Full-rank inputs (QR and SVD are differentiable there) and functions of the
# factors that do not depend on their signs, as PyTorch's checks of these ops.
_o("qr", "linalg", "The reduced QR decomposition of `input` (checked with R's diagonal positive).",
   lambda a: _np_qr(_distinct_sv(a)),
   Sample("fixed", (T((3, 2), domain=SMALL),), call=lambda fn, a: _qr_positive(*fn(_distinct_sv(a)))),
   surfaces=(FUNCTION, METHOD, LINALG), rule="linalg", autocast=FP32,
   bench=Sample("fixed", (T((LN, LN), domain=SMALL),),
                call=lambda fn, a: _qr_positive(*fn(_big_distinct_sv(a)))))
# The large case checks U V^T (sign-free, n x n) for the small case's n^3 terms u_k v_k^T.
_o("svd", "linalg", "The singular value decomposition of `input` (checked as S and the terms "
   "u_k v_k^T, which do not depend on the signs of the singular vectors).",
   lambda a: _np_svd(_distinct_sv(a)),
   Sample("fixed", (T((3, 2), domain=SMALL),),
          call=lambda fn, a: (lambda r: (r[1], _sv_terms(r[0], r[2].mT)))(fn(_distinct_sv(a)))),
   surfaces=(FUNCTION, METHOD, LINALG), rule="linalg", autocast=FP32,
   bench=Sample("fixed", (T((LN, LN), domain=SMALL),),
                call=lambda fn, a: (lambda r: (r[1], r[0] @ r[2].mT))(fn(_big_distinct_sv(a)))))
# The large case checks v * v (sign-free, n x n) for the small case's n^3 projectors.
_o("eigh", "linalg", "Eigenvalues and eigenvectors of a symmetric matrix (checked as the "
   "eigenvalues and the projectors v_k v_k^T, which do not depend on the eigenvectors' signs).",
   lambda a: _np_eigh(_sym_distinct(a)),
   Sample("fixed", (T((3, 3), domain=SMALL),),
          call=lambda fn, a: (lambda r: (r[0], _projectors(r[1])))(fn(_sym_distinct(a)))),
   surfaces=(LINALG,), rule="linalg", autocast=FP32,
   bench=Sample("fixed", (T((LN, LN), domain=SMALL),),
                call=lambda fn, a: (lambda r: (r[0], r[1] * r[1]))(fn(_big_sym_distinct(a)))))
_o("lstsq", "linalg", "The least-squares solution of `A X = B` (the solution returned by the check).",
   lambda a, b: np.linalg.lstsq(_distinct_sv(a), b, rcond=None)[0],
   Sample("fixed", (T((3, 2), domain=SMALL), T((3, 1))),
          call=lambda fn, a, b: fn(_distinct_sv(a), b).solution),
   surfaces=(LINALG,), rule="linalg", autocast=FP32,
   bench=Sample("fixed", (T((2 * LN, LN), domain=SMALL), T((2 * LN, 16))),
                call=lambda fn, a, b: fn(_big_distinct_sv(a), b).solution))
_o("matrix_rank", "linalg", "The numerical rank of `A`.", lambda a: np.asarray(np.linalg.matrix_rank(a)),
   fixed(T((3, 2))), surfaces=(LINALG,), differentiable=False, rule="linalg", autocast=FP32,
   bench=fixed(T((LN, LN))))
# The `_ex` forms return (result, info): the checks compare info too, and
# differentiate the result (info is an integer tensor without a gradient).
_o("cholesky_ex", "linalg", "`cholesky` with an `info` tensor instead of an error.",
   lambda a: (np.linalg.cholesky(_spd(a)), np.zeros((), np.int64)),
   Sample("fixed", (T((2, 2)),), call=lambda fn, a: fn(_spd(a))),
   surfaces=(LINALG,), rule="linalg", autocast=FP32,
   bench=Sample("fixed", (T((LN, LN)),), call=lambda fn, a: fn(_big_spd(a))))
_o("inv_ex", "linalg", "`inv` with an `info` tensor instead of an error.",
   lambda a: (np.linalg.inv(_nonsingular(a)), np.zeros((), np.int64)),
   Sample("fixed", (T((2, 2), domain=BOX),), call=lambda fn, a: fn(_nonsingular(a))),
   surfaces=(LINALG,), rule="linalg", autocast=FP32, bench=_BIG_SQ)
_o("solve_ex", "linalg", "`solve` with an `info` tensor instead of an error.",
   lambda a, b: (np.linalg.solve(_nonsingular(a), b), np.zeros((), np.int64)),
   Sample("fixed", (T((2, 2), domain=BOX), T((2, 1))), call=lambda fn, a, b: fn(_nonsingular(a), b)),
   surfaces=(LINALG,), rule="linalg",
   bench=Sample("fixed", (T((LN, LN), domain=BOX), T((LN, LN))),
                call=lambda fn, a, b: fn(_big_dominant(a), b)))
_o("norm", "reduction", "The norm of `input` (Frobenius or p-norm; over `dim` when given).",
   lambda x, dim=None, keepdim=False: np.asarray(np.linalg.norm(x, axis=dim, keepdims=keepdim)),
   Sample("reduce", (T(domain=Domain(0.5, 2.0)),), dim=True, keepdim=True, empty=False, min_rank=1,
          max_rank=2),
   surfaces=(FUNCTION, METHOD, LINALG), batching=REDUCTION, nodes={"LinalgVectorNormBackward0": ()})

# ----- sorting and selection -----------------------------------------------------------------

_SEL = {"unique": 0.01}
# The benchmark's large operand and index tensors.
M = T((1024, 1024))
BIG_ROWS = T((1024,), domain=ints(0, 1024), dtype="int64")


def _as_given(fn, *args, **kwargs):
    """A bench sample's call that passes its arguments as they are (the small
    sample's `call` picks a few distinct indices, which 1024-row operands do
    not match)."""
    return fn(*args, **kwargs)


BIG_PICKS = T((1024, 1024), domain=ints(0, 1024), dtype="int64")
FLAT_PICKS = T((1024 * 1024,), domain=ints(0, 1024 * 1024), dtype="int64")
#: A million values and a sorted sequence of 1024 boundaries among them (8 KB,
#: drawn once): the set ops' large case.
BIG_VALUES = T((1024, 1024), domain=ints(0, 1 << 20), dtype="int64")
SORTED_1024 = np.sort(np.random.default_rng(2).integers(0, 1 << 20, 1024))
#: The small case's sorted sequence (with a repeat): a drawn one is not sorted.
SORTED_5 = np.array([0, 2, 2, 5, 8])
_o("kthvalue", "sort", "The `k`-th smallest element of `input` along `dim` (values and indices).",
   lambda x, k, dim=-1: np.sort(x, axis=dim).take(k - 1, axis=dim),
   Sample("fixed", (T((2, 3)), 2, 1), call=_values, **_SEL), batching=REDUCTION,
   nodes={"KthvalueBackward0": ()}, bench=Sample("fixed", (M, 512, 1), call=_values, **_SEL))
_o("topk", "sort", "The `k` largest elements of `input` along `dim` (values and indices), largest first.",
   lambda x, k, dim=-1: -np.sort(-x, axis=dim).take(range(k), axis=dim),
   Sample("fixed", (T((2, 5)), 2), call=_values, **_SEL), batching=REDUCTION, nodes={"TopkBackward0": ()},
   bench=Sample("fixed", (M, 8), call=_values, **_SEL))
_o("median", "sort", "The median of `input` (the lower of the two middle values; over `dim` when given).",
   lambda x: np.asarray(np.sort(x, axis=None)[(x.size - 1) // 2]),
   Sample("fixed", (T((2, 3)),), call=_values, **_SEL), batching=REDUCTION,
   nodes={"MedianBackward0": (), "MedianBackward1": ()},
   bench=Sample("fixed", (M, 1), call=_values, **_SEL))
_o("nanmedian", "sort", "`median` ignoring NaN.",
   lambda x: np.asarray(np.sort(x, axis=None)[(x.size - 1) // 2]),
   Sample("fixed", (T((2, 3)),), call=_values, **_SEL), batching=REDUCTION,
   bench=Sample("fixed", (M, 1), call=_values, **_SEL))
_o("mode", "sort", "The most frequent value of `input` along `dim` (values and indices).",
   lambda x, dim=-1: np.sort(x, axis=dim).take(0, axis=dim),
   Sample("fixed", (T((2, 3)), 1), call=_values, **_SEL), batching=REDUCTION, nodes={"ModeBackward0": ()},
   bench=Sample("fixed", (M, 1), call=_values, **_SEL))
_o("msort", "sort", "`input` sorted along its first dimension.", lambda x: np.sort(x, axis=0),
   Sample("fixed", (T((3, 2)),), **_SEL), batching=REDUCTION, bench=Sample("fixed", (M,), **_SEL))
_o("nonzero", "indexing", "The indices of the nonzero elements of `input`, one row each.",
   lambda x: np.argwhere(x), fixed(T((2, 3), domain=ints(-1, 2), dtype="int64")), differentiable=False,
   dtypes=ALL, bench=fixed(T((1024, 1024), domain=ints(-1, 2), dtype="int64")), refuse={VMAP: "its result's size depends on the values, which differ per sample"})
_o("unique", "set", "The distinct elements of `input`, sorted.", np.unique,
   fixed(T((2, 3), domain=ints(0, 3), dtype="int64")), differentiable=False, dtypes=ALL,
   bench=fixed(T((1024, 1024), domain=ints(0, 1 << 16), dtype="int64")),
   refuse={VMAP: "its result's size depends on the values, which differ per sample"})
_o("unique_consecutive", "set", "`input` with runs of equal consecutive elements collapsed to one.",
   lambda x: x[np.concatenate([[True], x[1:] != x[:-1]])], fixed(T((6,), domain=ints(0, 2), dtype="int64")),
   differentiable=False, dtypes=ALL, bench=fixed(T((1024 * 1024,), domain=ints(0, 2), dtype="int64")),
   refuse={VMAP: "its result's size depends on the values, which differ per sample"})
_o("searchsorted", "set", "Insertion positions of `input` into the sorted `sorted_sequence`.",
   np.searchsorted, fixed(SORTED_5, T((3,), domain=ints(0, 9), dtype="int64")),
   surfaces=(FUNCTION,), differentiable=False, dtypes=ALL, bench=fixed(SORTED_1024, BIG_VALUES))
_o("bucketize", "set", "The bucket of each element of `input` among sorted `boundaries`.",
   lambda x, b: np.searchsorted(b, x), fixed(T((3,), domain=ints(0, 9), dtype="int64"), SORTED_5),
   surfaces=(FUNCTION,), differentiable=False, dtypes=ALL, bench=fixed(BIG_VALUES, SORTED_1024))
_o("isclose", "comparison", "True where `input` and `other` are within `atol + rtol * |other|`.",
   np.isclose, fixed(T((2, 3)), T((2, 3))), differentiable=False, batching=CUSTOM, rule="elementwise",
   bench=fixed(M, M))
_o("polygamma", "unary", "The `n`-th derivative of digamma at each element of `input`.",
   lambda n, x: _refs._special().polygamma(n, x), fixed(1, T((2, 3), domain=Domain(0.5, 2.0))),
   tol=(1e-4, 1e-5), rule="elementwise", bench=fixed(1, T((1024, 1024), domain=Domain(0.5, 2.0))))
_o("unflatten", "view", "`input` with dimension `dim` unflattened into `sizes`.",
   lambda x, dim, sizes: x.reshape(x.shape[:dim] + tuple(sizes) + x.shape[dim + 1:]),
   fixed(T((2, 6)), 1, (2, 3)), dtypes=ALL, batching=REDUCTION, bench=fixed(M, 1, (32, 32)))
_o("einsum", "product", "Sums products of operands' elements over the indices `equation` contracts.",
   np.einsum, Sample("fixed", ("ij,kj->ik", T((2, 3)), T((4, 3)))), surfaces=(FUNCTION,),
   bench=fixed("ij,kj->ik", T((1024, 256)), T((1024, 256))))
_o("broadcast_to", "view", "A view of `input` broadcast to `shape`.", np.broadcast_to,
   fixed(T((3,)), (2, 3)), dtypes=ALL, rule="view", bench=fixed(T((1024,)), (1024, 1024)))
_o("broadcast_tensors", "view", "Views of the tensors broadcast to their common shape.",
   lambda *ts: np.broadcast_arrays(*ts), fixed(T((2, 1)), T((3,))), surfaces=(FUNCTION,), dtypes=ALL,
   bench=fixed(T((1024, 1)), T((1024,))))
_o("scatter_reduce", "indexing", "`input` with `src` combined at `index` along `dim` by `reduce` "
   "(sum, prod, mean, amax, amin).", None,
   Sample("fixed", (T((2, 3)), 1, T((2, 2), domain=ints(0, 3), dtype="int64"), T((2, 2)), "sum")),
   bench=fixed(M, 1, BIG_PICKS, M, "sum"),
   surfaces=(FUNCTION, METHOD, INPLACE),
   refuse={FORWARD: "checked against a NumPy loop per reduction in tests/test_tensor_api_index.py"})
_o("index_copy", "indexing", "`input` with the rows `index` along `dim` replaced by `source`.", None,
   Sample("fixed", (T((3, 2)), 0, T((3,), domain=ints(0, 3), dtype="int64"), T((2, 2))),
          call=lambda fn, x, d, i, s: fn(x, d, _distinct(i, 2), s)),
   bench=Sample("fixed", (M, 0, BIG_ROWS, M), call=_as_given),
   surfaces=(FUNCTION, METHOD, INPLACE), refuse={FORWARD: "duplicate indices make the result "
                                                  "order-dependent; checked without them in tests/test_tensor_api_index.py"}, autocast=PROMOTE)
_o("index_fill", "indexing", "`input` with the rows `index` along `dim` filled with `value`.",
   lambda x, d, i, v: _fill_rows(x, d, i, v), fixed(T((3, 2)), 0, T((2,), domain=ints(0, 3), dtype="int64"), 0.5),
   surfaces=(FUNCTION, METHOD, INPLACE), bench=fixed(M, 0, BIG_ROWS, 0.5))
_o("index_put", "indexing", "`input` with `values` written (or added) at the positions `indices`.", None,
   Sample("fixed", (T((3, 2)), (T((3,), domain=ints(0, 3), dtype="int64"),), T((2, 2))),
          call=lambda fn, x, i, v: fn(x, (_distinct(i[0], 2),), v)),
   bench=Sample("fixed", (M, (BIG_ROWS,), M), call=_as_given), surfaces=(FUNCTION, METHOD, INPLACE),
   refuse={FORWARD: "checked with and without accumulate in tests/test_tensor_api_index.py"})
_o("masked_scatter", "indexing", "`input` with the elements where `mask` is True taken in order from `source`.",
   lambda x, m, s: _masked_scatter(x, m, s), fixed(T((2, 3)), T((2, 3), dtype="bool"), T((6,))),
   surfaces=(FUNCTION, METHOD, INPLACE),
   bench=fixed(M, T((1024, 1024), dtype="bool"), T((1024 * 1024,))))
_o("put", "indexing", "`input` seen as 1-D with `source` written at `index`.", None,
   Sample("fixed", (T((2, 3)), T((6,), domain=ints(0, 6), dtype="int64"), T((2,))),
          call=lambda fn, x, i, s: fn(x, _distinct(i, 2), s)), surfaces=(METHOD, INPLACE),
   bench=Sample("fixed", (M, FLAT_PICKS, T((1024 * 1024,))), call=_as_given),
   refuse={FORWARD: "duplicate indices make the result order-dependent; checked in tests/test_tensor_api_index.py"})
_o("unravel_index", "indexing", "The coordinates of flat `indices` in a tensor of `shape`.",
   lambda i, s: np.unravel_index(i, s), fixed(T((3,), domain=ints(0, 6), dtype="int64"), (2, 3)),
   surfaces=(FUNCTION,), differentiable=False,
   bench=fixed(T((1024 * 1024,), domain=ints(0, 1024 * 1024), dtype="int64"), (1024, 1024)))


def _distinct(index, k):
    """``k`` distinct indices drawn from ``index``'s range: with a repeated index the
    result depends on the order of the writes, and an overwritten source element gets
    no gradient (PyTorch's samples draw distinct indices too)."""
    return index.argsort(stable=True)[:k]


def _fill_rows(x, d, i, v):
    out = np.moveaxis(x.copy(), d, 0)
    out[i] = v
    return np.moveaxis(out, 0, d)


def _masked_scatter(x, m, s):
    out = x.copy()
    out[m] = s[: int(m.sum())]
    return out


# ----- methods: shape-of-another, copies, fills, factories, conversions ------------------------

for _name, _doc, _ref in (
    ("expand_as", "`input` broadcast to the shape of `other`.", lambda x, o: np.broadcast_to(x, o.shape)),
    ("reshape_as", "`input` reshaped to the shape of `other`.", lambda x, o: x.reshape(o.shape)),
    ("view_as", "A view of `input` with the shape of `other`.", lambda x, o: x.reshape(o.shape)),
):
    _o(_name, "view", _doc, _ref, fixed(T((3,) if _name == "expand_as" else (2, 3)),
                                         T((2, 3), grad=False)) if _name != "expand_as" else
       fixed(T((3,)), T((2, 3), grad=False)), surfaces=(METHOD,), dtypes=ALL, rule="view",
       # view_as's large case has a 3-D `other`: a view of the transposed layout the
       # benchmark adds for all-2-D cases fails in either library.
       bench=fixed(T((1024,)), T((1024, 1024), grad=False)) if _name == "expand_as" else
       fixed(M, T((256, 4096) if _name == "reshape_as" else (256, 64, 64), grad=False)))
_o("detach", "view", "A view of `input` outside the graph (shares its memory and version counter).",
   lambda x: x, fixed(T((2, 3))), surfaces=(METHOD,), dtypes=ALL, differentiable=False,
   batching=CUSTOM, rule="elementwise", bench=fixed(M))
_o("copy_", "inplace", "Copies `src` (broadcast, any dtype) into `input` in place.", lambda x, s: np.broadcast_to(s, x.shape).copy(),
   Sample("ew", (T(), T()), self_full=True), surfaces=(METHOD,), dtypes=ALL, batching=CUSTOM,
   rule="elementwise")
_o("fill_", "inplace", "Fills `input` with `value` in place.", lambda x, v: np.full_like(x, v),
   fixed(T((2, 3)), 1.5), surfaces=(METHOD,), dtypes=ALL, rule="elementwise", bench=fixed(M, 1.5))
_o("zero_", "inplace", "Fills `input` with zeros in place.", np.zeros_like, fixed(T((2, 3))),
   surfaces=(METHOD,), dtypes=ALL, rule="elementwise", aliases=("zeros_",), bench=fixed(M))
for _name, _ref in (("new_zeros", lambda x, s: np.zeros(s)), ("new_ones", lambda x, s: np.ones(s)),
                    ("new_full", lambda x, s, v: np.full(s, v)), ("new_empty", None),
                    ("new_tensor", lambda x, d: np.asarray(d))):
    _arg = {"new_full": ((2, 3), 2.0), "new_tensor": ([1.0, 2.0],)}.get(_name, ((2, 3),))
    # new_tensor's large case copies a 1024 x 1024 NumPy array (a tensor read as one).
    _big = (Sample("fixed", (T((1,), grad=False), T((1024, 1024), grad=False)),
                   call=lambda fn, x, d: fn(x, d.numpy())) if _name == "new_tensor" else
            fixed(T((1,), grad=False), *{"new_full": ((1024, 1024), 2.0)}.get(_name, ((1024, 1024),))))
    _o(_name, "creation", f"`{_name[4:]}` with `input`'s dtype (and device).", _ref,
       fixed(T((1,), grad=False), *_arg), surfaces=(METHOD,), dtypes=ALL, differentiable=False,
       rule="_like", refuse={FORWARD: "its values are uninitialised memory"} if _name == "new_empty" else {},
       bench=_big)
for _name, _np in (("byte", np.uint8), ("char", np.int8), ("short", np.int16), ("int", np.int32),
                   ("half", np.float16)):
    _o(_name, "conversion", f"`input` converted to {np.dtype(_np).name}.", (lambda t: lambda x: x.astype(t))(_np),
       fixed(T((2, 3), domain=ints(0, 5), dtype="int64")), surfaces=(METHOD,), dtypes=ALL,
       differentiable=_name == "half", batching=CUSTOM, rule="elementwise",
       bench=fixed(T((1024, 1024), domain=ints(0, 5), dtype="int64")))
for _name in ("uniform_", "normal_", "bernoulli_", "exponential_", "geometric_", "log_normal_",
              "cauchy_", "random_"):
    _o(_name, "random", f"Fills `input` in place with random values ({_name[:-1]}).", None,
       Sample("fixed", (T((2, 3)),) if _name != "geometric_" else (T((2, 3)), 0.5), seeded=True),
       surfaces=(METHOD,),
       dtypes=ALL, differentiable=False, rule="_random_like",
       refuse={FORWARD: RANDOM},
       bench=Sample("fixed", (M,) if _name != "geometric_" else (M, 0.5), seeded=True))
for _name in ("randint_like",):
    _o(_name, "random", "Random integers of `input`'s shape.", None,
       Sample("fixed", (T((2, 3)), 5), seeded=True),
       surfaces=(FUNCTION,), dtypes=ALL, differentiable=False, rule="_random_like",
       refuse={FORWARD: RANDOM}, bench=Sample("fixed", (M, 5), seeded=True))
for _name, _doc in (("as_tensor", "`data` as a tensor, sharing memory when it can."),
                    ("asarray", "`obj` as a tensor, sharing memory when it can."),
                    ("from_numpy", "A tensor sharing the memory of a NumPy array."),
                    ("scalar_tensor", "A 0-d tensor holding `s`.")):
    _o(_name, "creation", _doc, (lambda a: np.asarray(a)), {
        # The checks make tensors of arrays: from_numpy gets its array back.
        "from_numpy": Sample("fixed", (np.array([1.0, 2.0]),), call=lambda fn, a: fn(a.numpy())),
        "scalar_tensor": fixed(2.5)}.get(_name, fixed([1.0, 2.0])),
       surfaces=(FUNCTION,), dtypes=ALL, differentiable=False,
       # A 1024 x 1024 NumPy array (a tensor read as one); a 0-d tensor has no large case.
       bench=None if _name == "scalar_tensor" else
       Sample("fixed", (T((1024, 1024), grad=False),), call=lambda fn, a: fn(a.numpy())),
       refuse={VMAP: "it takes no tensor, so there is nothing to batch",
               **({COMPILE: "it reads a NumPy array, which a replay cannot read again: "
                            "ferrograd.compile raises that `from_numpy` has no replay rule"}
                  if _name == "from_numpy" else {})})
for _name, _np_fn in (("hann_window", np.hanning), ("hamming_window", np.hamming),
                      ("blackman_window", np.blackman), ("bartlett_window", np.bartlett)):
    _o(_name, "creation", f"The periodic {_name.split('_')[0].capitalize()} window of `window_length`.",
       (lambda f: lambda n: f(n + 1)[:-1])(_np_fn), fixed(5), surfaces=(FUNCTION,), dtypes=ALL,
       differentiable=False, refuse={VMAP: "it takes no tensor, so there is nothing to batch"},
       bench=fixed(1 << 20))
_o("kaiser_window", "creation", "The periodic Kaiser window of `window_length`.",
   lambda n: np.kaiser(n + 1, 12.0)[:-1], fixed(5), surfaces=(FUNCTION,), dtypes=ALL,
   differentiable=False, refuse={VMAP: "it takes no tensor, so there is nothing to batch"},
   bench=fixed(1 << 20))

# ----- nn.functional: in-place activations and the rest ----------------------------------------

# The samples keep off each activation's kinks, as the out-of-place forms' samples do.
_KINKS = {"hardtanh_": (-1.0, 1.0), "threshold_": (0.5,)}
for _name in ("relu_", "elu_", "leaky_relu_", "hardtanh_", "celu_", "selu_", "threshold_", "rrelu_"):
    _base = _name[:-1]
    _args = {"threshold_": (0.5, -1.0)}.get(_name, ())
    _o(_name, "activation", f"`{_base}` written into `input`.", None,
       Sample("fixed", (T((2, 3), domain=away(*_KINKS.get(_name, (0.0,)))), *_args),
              {"training": True} if _name == "rrelu_" else {}, seeded=_name == "rrelu_"),
       bench=Sample("fixed", (T((1024, 1024), domain=away(*_KINKS.get(_name, (0.0,)))), *_args),
                    {"training": True} if _name == "rrelu_" else {}, seeded=_name == "rrelu_"),
       surfaces=(F_FUNCTION,) + ((FUNCTION,) if _name in (
           "relu_", "celu_", "selu_", "threshold_", "rrelu_") else ()),
       batching=CUSTOM, rule="elementwise",
       refuse={FORWARD: f"the same values as `{_base}`, whose cells check them"})
_o("rrelu", "activation", "Leaky ReLU with a random slope per element while training (the mean slope "
   "otherwise).", None, Sample("fixed", (T((2, 3), domain=AWAY0),), {"training": True}, seeded=True),
   surfaces=(F_FUNCTION, FUNCTION), rule="elementwise",
   bench=Sample("fixed", (T((1024, 1024), domain=AWAY0),), {"training": True}, seeded=True),
   refuse={FORWARD: RANDOM})
_o("channel_shuffle", "resample", "Shuffles the channels of (N, C, *) in `groups`.", None,
   fixed(T((1, 4, 2)), 2), surfaces=(F_FUNCTION, FUNCTION), aliases=(("native_channel_shuffle", (F_FUNCTION,)),),
   bench=fixed(T((8, 64, 56, 56)), 2),
   rule="view", refuse={FORWARD: "checked against its definition in tests/test_nn_shuffle.py"})
def _unpool_indices(shape, k):
    """Valid max-pooling indices for a pooled (N, C, *S) input and kernel ``k``
    (stride ``k``): one position in each window, drawn once, so no two values
    of a plane land on the same place."""
    rng = np.random.default_rng(7)
    spatial = [s * k for s in shape[2:]]
    idx = np.empty(shape, dtype=np.int64)
    for pos in np.ndindex(*shape):
        coords = [p * k + int(rng.integers(0, k)) for p in pos[2:]]
        idx[pos] = np.ravel_multi_index(coords, spatial)
    return idx


def _plane_unpool_indices(shape, k):
    """`_unpool_indices` for a large pooled (N, C, *S) input: one drawn position in
    each window of one plane (a small array), the same in every plane (a broadcast
    view, copied only when the benchmark makes its tensor)."""
    plane = _unpool_indices((1, 1) + tuple(shape[2:]), k)
    return np.broadcast_to(plane, shape)


# Distinct values (``unique``) keep every maximum and every hinge off its tie.
_UNIQUE = 0.01
# The large cases: 8 x 64 planes of 64 x 64 (2-D), 2048 (1-D) or 16^3 (3-D) values.
for _name, _shape, _big in (("max_unpool1d", (1, 2, 3), (8, 64, 1024)),
                            ("max_unpool2d", (1, 2, 2, 2), (8, 64, 32, 32)),
                            ("max_unpool3d", (1, 1, 2, 2, 2), (8, 64, 8, 8, 8))):
    _o(_name, "pool", "Scatters pooled values back to the positions `indices` recorded by max pooling.",
       _refs.max_unpool, fixed(T(_shape), _unpool_indices(_shape, 2), 2), surfaces=(F_FUNCTION,),
       rule="pool", autocast=FP32 if _name != "max_unpool1d" else None,
       bench=fixed(T(_big), _plane_unpool_indices(_big, 2), 2))
for _name, _shape, _size, _adaptive, _big, _big_size in (
        ("max_pool1d_with_indices", (1, 2, 6), 2, False, (8, 64, 2048), 2),
        ("max_pool2d_with_indices", (1, 2, 4, 4), 2, False, (8, 64, 64, 64), 2),
        ("max_pool3d_with_indices", (1, 1, 4, 4, 4), 2, False, (8, 64, 16, 16, 16), 2),
        ("adaptive_max_pool1d_with_indices", (1, 2, 7), 3, True, (8, 64, 2048), 100),
        ("adaptive_max_pool2d_with_indices", (1, 2, 5, 5), 2, True, (8, 64, 64, 64), 7),
        ("adaptive_max_pool3d_with_indices", (1, 1, 4, 4, 4), 2, True, (8, 64, 16, 16, 16), 3)):
    _o(_name, "pool", f"`{_name[:-13]}` returning the indices of the maxima too.",
       (lambda x, s: _refs.max_pool_with_indices(x, out=s)) if _adaptive else
       (lambda x, k: _refs.max_pool_with_indices(x, kernel=k)),
       Sample("fixed", (T(_shape), _size), unique=_UNIQUE), surfaces=(F_FUNCTION,), rule="pool",
       autocast=FP32 if _name == "adaptive_max_pool3d_with_indices" else None,
       bench=Sample("fixed", (T(_big), _big_size), unique=_UNIQUE))
_o("lp_pool3d", "pool", "3-D power-average pooling.",
   lambda x, p, k: _refs.pool3d(x ** p, k, np.sum) ** (1 / p),
   fixed(T((1, 1, 4, 4, 4), domain=Domain(0.5, 2.0)), 2.0, 2), surfaces=(F_FUNCTION,), rule="pool",
   bench=fixed(T((8, 64, 16, 16, 16), domain=Domain(0.5, 2.0)), 2.0, 2))
for _name in ("upsample", "upsample_bilinear", "upsample_nearest"):
    _o(_name, "resample", "Deprecated spelling of `interpolate`.",
       (lambda x, scale_factor: _refs.upsample_bilinear(x, scale_factor)) if _name == "upsample_bilinear"
       else (lambda x, scale_factor: _refs.interpolate_nearest(x, scale_factor)),
       Sample("fixed", (T((1, 2, 2, 3)),), {"scale_factor": 2}), surfaces=(F_FUNCTION,), rule="interpolate",
       bench=Sample("fixed", (T((8, 64, 32, 32)),), {"scale_factor": 2}))
# The large case: 1024 bags of 16 rows of a 16384 x 64 table (a recommender's lookup).
_o("embedding_bag", "embedding", "Sums, means or maxima of bags of embedding rows.", None,
   Sample("fixed", (T((2, 3), domain=ints(0, 4), dtype="int64"), T((4, 3)))), surfaces=(F_FUNCTION,),
   bench=fixed(T((1024, 16), domain=ints(0, 16384), dtype="int64"), T((16384, 64))),
   rule="embedding", nodes={"EmbeddingBagBackward0": ()},
   refuse={FORWARD: "checked against a NumPy loop in tests/test_nn_embedding.py"})
_o("ctc_loss", "loss", "The connectionist temporal classification loss.", None,
   # Log-probabilities normalised over the classes, as the loss's gradient assumes.
   Sample("fixed", (T((4, 2, 3)), np.array([[1, 2], [2, 0]]), np.array([4, 3]), np.array([2, 1])),
          call=lambda fn, x, *a, **k: fn(x.log_softmax(2), *a, **k)),
   surfaces=(F_FUNCTION,), rule="loss", autocast=FP32,
   # A speech-sized batch: 200 frames, 16 samples, 32 classes, up to 30 labels.
   bench=Sample("fixed", (T((200, 16, 32)), np.random.default_rng(0).integers(1, 32, (16, 30)),
                          np.full(16, 200), np.random.default_rng(1).integers(10, 31, 16)),
                call=lambda fn, x, *a, **k: fn(x.log_softmax(2), *a, **k)),
   refuse={FORWARD: "checked against its definition in tests/test_nn_losses_more.py"})


def _multilabel_targets(rows, classes, labels=5):
    """Multi-label targets for `rows` x `classes` scores: row r reads a window
    of one cyclic buffer from offset r, up to `labels` distinct classes and then
    -1 (a row starting at a -1 has none). A strided view of a small buffer,
    copied only when the benchmark makes its tensor."""
    n = rows + classes
    buf = np.where(np.arange(n) % (labels + 1) == labels, -1, (np.arange(n) * 37) % classes)
    return np.lib.stride_tricks.as_strided(buf, (rows, classes), (buf.strides[0],) * 2, writeable=False)


# The losses' large cases: 1024 rows of 1000 class scores.
_o("multi_margin_loss", "loss", "The multi-class hinge loss.", _refs.multi_margin_loss,
   Sample("fixed", (T((2, 3)), np.array([0, 2])), unique=_UNIQUE), surfaces=(F_FUNCTION,),
   rule="loss", autocast=FP32,
   bench=Sample("fixed", (T((1024, 1000)), T((1024,), domain=ints(0, 1000), dtype="int64")),
                unique=_UNIQUE))
_o("multilabel_margin_loss", "loss", "The multi-label hinge loss (targets listed up to the first -1).",
   _refs.multilabel_margin_loss,
   Sample("fixed", (T((2, 3)), np.array([[0, 2, -1], [1, -1, 0]])), unique=_UNIQUE),
   surfaces=(F_FUNCTION,), rule="loss", autocast=FP32,
   bench=Sample("fixed", (T((1024, 1000)), _multilabel_targets(1024, 1000)), unique=_UNIQUE))


# The large case: 4096 triplets of 256-dimensional embeddings, drawn as the small ones.
_o("triplet_margin_with_distance_loss", "loss", "The triplet margin loss with a distance function "
   "(pairwise_distance by default).", nn_more.triplet_ref, nn_more.TRIPLET, surfaces=(F_FUNCTION,),
   rule="loss",
   bench=Sample("fixed", tuple(T((4096, 256), domain=a.domain) for a in nn_more.TRIPLET.args)))
# The large case: 128 tokens, a batch of 32, 256 features in 8 heads; weights in
# [-0.1, 0.1] (Xavier's scale for 256 features).
_W = Domain(-0.1, 0.1)
_o("multi_head_attention_forward", "attention", "The functional form of nn.MultiheadAttention.", None,
   Sample("fixed", (T((2, 1, 4)), T((3, 1, 4)), T((3, 1, 4)), 4, 2, T((12, 4)), T((12,)), None, None,
                    False, 0.0, T((4, 4)), T((4,))), {"training": False}),
   bench=Sample("fixed", (T((128, 32, 256)), T((128, 32, 256)), T((128, 32, 256)), 256, 8,
                          T((768, 256), domain=_W), T((768,), domain=_W), None, None, False, 0.0,
                          T((256, 256), domain=_W), T((256,), domain=_W)), {"training": False}),
   surfaces=(F_FUNCTION,), rule="sdpa",
   refuse={FORWARD: "checked through nn.MultiheadAttention in tests/test_nn_transformer.py"},
   autocast=LOWER_PRECISION_FP)

# ----- matrix exponential, Householder factors, mvlgamma, windows, bfloat16 -----------------


#: Ops that vmap refuses (it raises "there is no batching rule" naming the op).
NO_RULE = "no batching rule yet: vmap raises an error naming the op"


def _expm(a):
    """exp(a) by scaling and squaring a Taylor series (small matrices, float64)."""
    a = np.asarray(a, np.float64)
    s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(-1).max(), 1e-300) / 0.25))) + 1)
    b = a / 2.0**s
    out = term = np.broadcast_to(np.eye(a.shape[-1]), a.shape).copy()
    for k in range(1, 30):
        term = term @ b / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def _householder(a, tau):
    """Q = H_1 ... H_k with H_i = I - tau_i v_i v_i^T, v_i below the diagonal of a (LAPACK)."""
    m, n = a.shape[-2:]
    q = np.eye(m)[:, :n].copy()
    for i in reversed(range(tau.shape[-1])):
        v = np.zeros(m)
        v[i] = 1.0
        v[i + 1 :] = a[i + 1 :, i]
        q = q - tau[i] * np.outer(v, v @ q)
    return q


def _full_rank(a):
    """`a` (m x n, entries in [-1, 1]) plus 4 on its leading diagonal: full
    column rank, so every Householder vector is defined (on a rank-deficient
    input it is rounding noise, and two correct factorisations disagree)."""
    return a + _const(a, 4.0 * np.eye(a.shape[-2], a.shape[-1]))


def _geqrf(a):
    h, tau = np.linalg.qr(np.asarray(_full_rank(a), np.float64), mode="raw")
    return h.T, tau


def _mvlgamma(x, p):
    from math import lgamma, log, pi

    lg = np.vectorize(lgamma)
    return p * (p - 1) / 4 * log(pi) + sum(lg(x + (1 - j) / 2) for j in range(1, p + 1))


def _windows(x, dim, size, step):
    w = np.lib.stride_tricks.sliding_window_view(x, size, axis=dim)
    return np.take(w, np.arange(0, w.shape[dim], step), axis=dim)


# The large linalg cases scale the entries by 1/sqrt(n) or so, keeping the small
# samples' norms (about 1 for matrix_exp; Householder vectors of norm about 1 for orgqr).
_o("matrix_exp", "linalg", "The matrix exponential of the square matrices of `input`.", _expm,
   fixed(T((3, 3), domain=Domain(-0.5, 0.5))), surfaces=FM + (LINALG,), dtypes=NUMERIC, rule="linalg",
   tol=(1e-4, 1e-5), bench=fixed(T((LN, LN), domain=Domain(-0.05, 0.05))))
_o("geqrf", "linalg", "The QR factorisation of `input` in LAPACK's form: R and the Householder "
   "vectors in one matrix, and the reflectors' scales `tau`.", _geqrf,
   Sample("fixed", (T((3, 2), domain=BOX, grad=False),), call=lambda fn, a: fn(_full_rank(a))),
   surfaces=FM + (LINALG,), dtypes=NUMERIC, differentiable=False, rule="linalg", tol=(1e-4, 1e-5),
   autocast=FP32, bench=fixed(T((LN, LN), grad=False)))
_o("orgqr", "linalg", "The matrix Q of `geqrf`'s factors (`linalg.householder_product`).",
   _householder, fixed(T((3, 2), domain=Domain(-0.5, 0.5)), T((2,), domain=Domain(0.5, 1.5))),
   aliases=(("householder_product", (LINALG,)),), dtypes=NUMERIC, rule="linalg", tol=(1e-4, 1e-5),
   autocast=FP32,
   bench=fixed(T((LN, LN), domain=Domain(-0.03, 0.03)), T((LN,), domain=Domain(0.5, 1.5))))
_o("mvlgamma", "special", "The multivariate log-gamma function of dimension `p`, elementwise.",
   _mvlgamma, fixed(T((2, 3), domain=Domain(2.0, 4.0)), 3), rule="composed",
   bench=fixed(T((1024, 1024), domain=Domain(2.0, 4.0)), 3))
# `Tensor.unfold` (`F.unfold` is im2col, declared as `unfold`).
_o("unfold_windows", "view", "A view of every window of `size` elements, `step` apart, along "
   "`dimension` (a new last dimension walks a window).", _windows,
   Sample("fixed", (T((2, 7)), 1, 3, 2), call=lambda fn, x, *a: x.unfold(*a)),
   surfaces=(), aliases=(("unfold", (METHOD,)),), dtypes=ALL, batching=VIEW,
   bench=fixed(M, 1, 16, 8))
_o("bfloat16", "conversion", "`input` converted to bfloat16.", lambda x: x.astype(np.float32),
   # Read back as float32 (exact here): NumPy has no bfloat16.
   Sample("fixed", (T((2, 3), domain=ints(0, 5), dtype="int64"),), call=lambda fn, x: fn(x).float()),
   surfaces=(METHOD,), dtypes=ALL, batching=CUSTOM, rule="elementwise",
   bench=fixed(T((1024, 1024), domain=ints(0, 5), dtype="int64")))
