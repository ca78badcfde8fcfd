"""``ferrograd.linalg``: decompositions, solves, inverses, determinants and
norms (custom ``autograd.Function``s whose backward rules are written in
differentiable ops, so every order of gradient works)."""

from __future__ import annotations

import numpy as np

from .schema import (
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


def _spd(a):
    """A symmetric positive definite matrix made from `a` (inside the call, so the
    op is differentiated through the construction too)."""
    return a @ a.mT + 3 * np.eye(a.shape[-1])


def _l(name, doc, ref, sample, *, aliases=(), **kw):
    OPS.append(Op(name, "linalg", doc, surfaces=(LINALG,), aliases=aliases,
                  impl=f"python:ferrograd.linalg:{name}", dtypes=NUMERIC, batching=CUSTOM,
                  batching_rule="linalg", sample=sample, ref=ref, tol=(1e-4, 1e-5), **kw))


def _diag_dominant(fn, a):
    return fn(a)


# Positive definite matrices built inside the call: entries drawn in a box can be singular.
_l("inv", "Inverse of the square matrix (or batch) `A`.", lambda a: np.linalg.inv(_spd(a)),
   Sample("fixed", (T((2, 2)),), call=lambda fn, a: fn(_spd(a))), autocast=FP32)
_l("solve", "The solution X of `A X = B`.", lambda a, b: np.linalg.solve(_spd(a), b),
   Sample("fixed", (T((2, 2)), T((2, 1))), call=lambda fn, a, b: fn(_spd(a), b)), autocast=FP32)
_l("matrix_norm", "Frobenius (or nuclear, 1, inf, 2) norm of the matrices of `A`.",
   lambda a: np.asarray(np.linalg.norm(a, "fro", axis=(-2, -1))), fixed(T((2, 3))))
_l("vector_norm", "The `ord`-norm of `x` (flattened, or over `dim`).",
   lambda a: np.asarray(np.linalg.norm(a.reshape(-1))), fixed(T((2, 3), domain=Domain(0.5, 2.0))))
_l("svdvals", "Singular values of `A`, in descending order.",
   lambda a: np.linalg.svd(a, compute_uv=False), fixed(T((3, 2))), autocast=FP32)
_l("eigvalsh", "Eigenvalues of the symmetric matrix `A` (from its lower triangle).",
   lambda a: np.linalg.eigvalsh(a, "L"), Sample("fixed", (T((3, 3)),)), autocast=FP32)
_l("pinv", "The Moore-Penrose pseudo-inverse of `A`.", np.linalg.pinv, fixed(T((3, 2))))
_l("multi_dot", "The product of a chain of matrices, in the cheapest order.",
   lambda *ts: np.linalg.multi_dot(ts), Sample("fixed", (T((2, 3)), T((3, 4)), T((4, 2))),
                                              call=lambda fn, *ts: fn(list(ts))))
_l("vecdot", "The dot product of `x` and `y` along `dim`.", lambda x, y: (x * y).sum(-1),
   fixed(T((2, 3)), T((2, 3))), autocast=LOWER_PRECISION_FP)
