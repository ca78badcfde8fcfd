"""``ferrograd.linalg``: decompositions, solves, inverses, determinants and
norms (custom ``autograd.Function``s whose backward rules are written in
differentiable ops, so every order of gradient works)."""

from __future__ import annotations

import numpy as np

from .schema import (
    AWAY0,
    CUSTOM,
    FP32,
    LINALG,
    LOWER_PRECISION_FP,
    NUMERIC,
    Domain,
    Op,
    Sample,
    T,
    fixed,
)

OPS: list[Op] = []
WELL = Domain(1.0, 2.0)  # entries that keep small matrices well conditioned


def _const(a, arr):
    """``arr`` as ``a`` is: a NumPy array for the reference, a tensor of
    ``a``'s library and dtype inside the call (which is differentiated
    through; the benchmark makes the same call on PyTorch's tensors)."""
    if isinstance(a, np.ndarray):
        return arr
    import ferrograd

    if isinstance(a, ferrograd.Tensor):
        return ferrograd.tensor(arr, dtype=a.dtype)
    return a.new_tensor(arr)


def _spd(a):
    """A symmetric positive definite matrix made from `a` (inside the call, so the
    op is differentiated through the construction too)."""
    return a @ a.mT + _const(a, 3 * np.eye(a.shape[-1]))


def _nonsingular(a):
    """`a` (entries in [-1, 1]) plus diag(4, -4, 4, ...): strictly diagonally
    dominant, so far from singular, neither symmetric nor of one determinant
    sign (entries in a box alone can be singular)."""
    n = a.shape[-1]
    return a + _const(a, np.diag([4.0 if i % 2 == 0 else -4.0 for i in range(n)]))


def _positive_det(a):
    """`a` (entries in [-1, 1]) plus 4 I: every eigenvalue has a positive real
    part (Gershgorin), so the determinant is positive (logdet's domain)."""
    return a + _const(a, 4.0 * np.eye(a.shape[-1]))


def _distinct_sv(a):
    """`a` (entries in [-0.5, 0.5], m x n with n <= m <= 3) plus diag(6, 3):
    singular values within ||a||_F <= 1.23 of 6 and 3 (Weyl), so they are
    distinct and nonzero, where singular vectors and pinv are differentiable."""
    m, n = a.shape[-2:]
    d = np.zeros((m, n))
    for i, v in enumerate((6.0, 3.0)[: min(m, n)]):
        d[i, i] = v
    return a + _const(a, d)


def _sym_distinct(a):
    """A symmetric matrix from `a` (3 x 3, entries in [-0.5, 0.5]) with
    eigenvalues within 2||a||_F <= 3 of -8, 0 and 8 (Weyl): distinct, where
    eigenvectors are differentiable."""
    return a + a.mT + _const(a, np.diag([-8.0, 0.0, 8.0]))


def _projectors(v):
    """The rank-one projectors v_k v_k^T of the columns of `v` (k first): a
    function of the eigenvectors that does not depend on their signs."""
    return v.mT[..., :, :, None] * v.mT[..., :, None, :]


# The benchmark's large cases (256 x 256): the same constructions, scaled so
# they stay well conditioned at that size.


def _dominant(a):
    """`a` (n x n, entries in [-1, 1]) plus diag(n, -n, n, ...): strictly
    diagonally dominant at any n, as `_nonsingular` is for small n."""
    n = a.shape[-1]
    return a + _const(a, np.diag([float(n) if i % 2 == 0 else -float(n) for i in range(n)]))


def _spread_sv(a):
    """`a` (m x n, entries in [-0.5, 0.5]) plus diag(20 k, ..., 40, 20),
    k = min(m, n): ||a||_2 is about 0.29 (sqrt(m) + sqrt(n)) < 10, so the
    singular values stay distinct and at least 10 (Weyl), as `_distinct_sv`'s."""
    m, n = a.shape[-2:]
    k = min(m, n)
    d = np.zeros((m, n))
    d[np.arange(k), np.arange(k)] = 20.0 * np.arange(k, 0, -1)
    return a + _const(a, d)


def _sym_spread(a):
    """A symmetric matrix from `a` (n x n, entries in [-0.5, 0.5]) with
    eigenvalues within ||a + a^T||_2 (about 0.82 sqrt(n) <= 14 for n = 256)
    of 32, 64, ..., 32 n: distinct and away from zero, as `_sym_distinct`'s."""
    n = a.shape[-1]
    return a + a.mT + _const(a, np.diag(32.0 * np.arange(1, n + 1)))


SMALL = Domain(-0.5, 0.5)
BOX = Domain(-1.0, 1.0)
WEIGHTS = Domain(-0.1, 0.1)


def _l(name, doc, ref, sample, *, aliases=(), **kw):
    OPS.append(Op(name, "linalg", doc, surfaces=(LINALG,), aliases=aliases,
                  impl=f"python:ferrograd.linalg:{name}", dtypes=NUMERIC, batching=CUSTOM,
                  batching_rule="linalg", sample=sample, ref=ref, tol=(1e-4, 1e-5), **kw))


# Nonsingular matrices built inside the call: entries drawn in a box can be singular.
_l("inv", "Inverse of the square matrix (or batch) `A`.", lambda a: np.linalg.inv(_nonsingular(a)),
   Sample("fixed", (T((2, 2), domain=BOX),), call=lambda fn, a: fn(_nonsingular(a))),
   autocast=FP32,
   bench=Sample("fixed", (T((256, 256), domain=BOX),), call=lambda fn, a: fn(_dominant(a))))
_l("solve", "The solution X of `A X = B`.", lambda a, b: np.linalg.solve(_nonsingular(a), b),
   Sample("fixed", (T((2, 2), domain=BOX), T((2, 1))), call=lambda fn, a, b: fn(_nonsingular(a), b)),
   autocast=FP32,
   bench=Sample("fixed", (T((256, 256), domain=BOX), T((256, 256))),
                call=lambda fn, a, b: fn(_dominant(a), b)))
# Entries away from 0: the norm of the zero matrix is a kink.
_l("matrix_norm", "Frobenius (or nuclear, 1, inf, 2) norm of the matrices of `A`.",
   lambda a: np.asarray(np.linalg.norm(a, "fro", axis=(-2, -1))), fixed(T((2, 3), domain=AWAY0)),
   bench=fixed(T((1024, 1024), domain=AWAY0)))
_l("vector_norm", "The `ord`-norm of `x` (flattened, or over `dim`).",
   lambda a: np.asarray(np.linalg.norm(a.reshape(-1))), fixed(T((2, 3), domain=Domain(0.5, 2.0))),
   bench=fixed(T((1024, 1024), domain=Domain(0.5, 2.0))))
# Singular values are differentiable where they are distinct and nonzero.
_l("svdvals", "Singular values of `A`, in descending order.",
   lambda a: np.linalg.svd(_distinct_sv(a), compute_uv=False),
   Sample("fixed", (T((3, 2), domain=SMALL),), call=lambda fn, a: fn(_distinct_sv(a))),
   autocast=FP32,
   bench=Sample("fixed", (T((256, 256), domain=SMALL),), call=lambda fn, a: fn(_spread_sv(a))))
# A symmetric input (the op reads one triangle, its gradient is symmetric), as
# PyTorch's checks symmetrise it.
_l("eigvalsh", "Eigenvalues of the symmetric matrix `A` (from its lower triangle).",
   lambda a: np.linalg.eigvalsh(_sym_distinct(a), "L"),
   Sample("fixed", (T((3, 3), domain=SMALL),), call=lambda fn, a: fn(_sym_distinct(a))),
   autocast=FP32,
   bench=Sample("fixed", (T((256, 256), domain=SMALL),), call=lambda fn, a: fn(_sym_spread(a))))
# pinv is differentiable where the rank does not change: full rank here.
_l("pinv", "The Moore-Penrose pseudo-inverse of `A`.", lambda a: np.linalg.pinv(_distinct_sv(a)),
   Sample("fixed", (T((3, 2), domain=SMALL),), call=lambda fn, a: fn(_distinct_sv(a))),
   bench=Sample("fixed", (T((256, 256), domain=SMALL),), call=lambda fn, a: fn(_spread_sv(a))))
_l("multi_dot", "The product of a chain of matrices, in the cheapest order.",
   lambda *ts: np.linalg.multi_dot(ts), Sample("fixed", (T((2, 3)), T((3, 4)), T((4, 2))),
                                              call=lambda fn, *ts: fn(list(ts))),
   # Entries of a layer's weights' scale: the float32 error of a chain of 1024-long
   # sums of [-2, 2] entries exceeds the benchmark's tolerance near zero results.
   bench=Sample("fixed", (T((256, 1024), domain=WEIGHTS), T((1024, 1024), domain=WEIGHTS),
                          T((1024, 256), domain=WEIGHTS)),
                call=lambda fn, *ts: fn(list(ts))))
_l("vecdot", "The dot product of `x` and `y` along `dim`.", lambda x, y: (x * y).sum(-1),
   fixed(T((2, 3)), T((2, 3))), autocast=LOWER_PRECISION_FP,
   bench=fixed(T((1024, 1024)), T((1024, 1024))))
