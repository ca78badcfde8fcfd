"""Shared pieces of ``ferrograd.linalg``: ``LinAlgError``, the named results
(registered on ``ferrograd.return_types``), dtype/shape checks, NumPy
bridging, error helpers and the untracked-call shortcut.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

import ferrograd as _fg

from .. import _C, _dispatch, return_types

Tensor = _C.Tensor


class LinAlgError(RuntimeError):
    """A factorisation or solve failed on its input (singular, not positive-
    definite, no convergence), as ``torch.linalg.LinAlgError``."""


def _refuse_non_finite(name, *arrays):
    """LAPACK's iterative factorisations (SVD, the symmetric eigensolvers, the
    SVD-based least squares) can loop without end on inf or NaN input, as
    SciPy documents for its own wrappers; such input gets PyTorch's error
    before LAPACK sees it."""
    for a in arrays:
        if a.size and not np.isfinite(a).all():
            raise LinAlgError(
                f"{name}: The algorithm failed to converge because the input matrix "
                "contained non-finite values."
            )


def _svd(a, full_matrices=True, compute_uv=True):
    """``np.linalg.svd``, with matrices that have no rows or no columns answered
    without LAPACK: its workspace query for a ``0 x 2**40`` matrix runs for ever
    (a tensor may declare such a size). There are no singular values then, and
    the singular vectors are empty (or identities, for ``full_matrices``)."""
    a = np.asarray(a)
    m, n = a.shape[-2:]
    if m and n:
        return np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    batch = a.shape[:-2]
    s = np.zeros(batch + (0,), dtype=a.dtype)
    if not compute_uv:
        return s
    if full_matrices:
        u = np.broadcast_to(np.eye(m, dtype=a.dtype), batch + (m, m)).copy()
        vh = np.broadcast_to(np.eye(n, dtype=a.dtype), batch + (n, n)).copy()
    else:
        u = np.zeros(batch + (m, 0), dtype=a.dtype)
        vh = np.zeros(batch + (0, n), dtype=a.dtype)
    return u, s, vh


# ----- named results, as torch.return_types ------------------------------------------


def _result(name, fields):
    cls = namedtuple(name, fields)
    cls.__module__ = "ferrograd.return_types"
    # Registered on return_types here so that module needs no edit for linalg.
    setattr(return_types, name, cls)
    return cls


linalg_slogdet = _result("linalg_slogdet", ["sign", "logabsdet"])
slogdet_result = _result("slogdet", ["sign", "logabsdet"])
linalg_inv_ex = _result("linalg_inv_ex", ["inverse", "info"])
linalg_cholesky_ex = _result("linalg_cholesky_ex", ["L", "info"])
linalg_solve_ex = _result("linalg_solve_ex", ["result", "info"])
linalg_qr = _result("linalg_qr", ["Q", "R"])
qr_result = _result("qr", ["Q", "R"])
linalg_eigh = _result("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_svd = _result("linalg_svd", ["U", "S", "Vh"])
svd_result = _result("svd", ["U", "S", "V"])
linalg_lstsq = _result("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


# ----- helpers ---------------------------------------------------------------------------

_SCALAR_NAME = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}


def _dtype_key(dt):
    return str(dt).rsplit(".", 1)[-1]


def _np(t):
    return t.detach().numpy()


def _tensor(arr, like):
    """A new tensor holding ``arr`` in ``like``'s dtype (NumPy may upcast)."""
    want = np.float32 if like.dtype == _fg.float32 else np.float64
    arr = np.asarray(arr, dtype=want)
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return _C.from_numpy(arr)


def _int_tensor(arr):
    # np.array, not ascontiguousarray: that would turn a 0-d result into 1-d.
    return _C.from_numpy(np.array(arr, dtype=np.int64, order="C"))


def _batched(*values):
    """Whether any of ``values`` is a vmap ``BatchedTensor``."""
    return _dispatch.is_batched(*values)


def _check_tensor(fn, value, name="A", position=1):
    # A BatchedTensor answers the same questions (logical shape, dtype): the
    # checks see what one sample sees, and `_call` batches the computation.
    _dispatch.check_tensor(fn, value, name, position, passes=_batched)


def _check_float(api, A):
    if not A.dtype.is_floating_point:
        raise RuntimeError(
            f"{api}: Expected a floating point or complex tensor as input. "
            f"Got {_SCALAR_NAME.get(_dtype_key(A.dtype), str(A.dtype))}"
        )


def _check_matrix(api, A, square=False, name="A"):
    _check_tensor(api, A, name)
    if A.dim() < 2:
        raise RuntimeError(f"{api}: The input tensor {name} must have at least 2 dimensions.")
    _check_float(api, A)
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{api}: {name} must be batches of square matrices, but they are "
            f"{A.shape[-2]} by {A.shape[-1]} matrices"
        )


def _batch_prefix(A, index):
    # PyTorch names the failing matrix only for batched inputs.
    if A.dim() <= 2:
        return ""
    return f"(Batch element {index}): "


def _eye(n, like):
    return _C.eye(n, dtype=like.dtype)


def _tri_mask(rows, cols, k, like, lower=True, diag_scale=None):
    """A constant mask selecting a triangle (a differentiable tril/triu), made
    of ops so a compiled replay of a backward that uses it makes it again."""
    ones = _C.ones((rows, cols), dtype=like.dtype)
    m = ones.tril(k) if lower else ones.triu(k)
    if diag_scale is not None:
        m = m - _C.eye(rows, cols, dtype=like.dtype) * (1.0 - diag_scale)
    return m


def _tril(X, k=0):
    return X * _tri_mask(X.shape[-2], X.shape[-1], k, X)


def _diag_embed(v):
    return v.unsqueeze(-1) * _eye(v.shape[-1], v)


def _lu_zero_pivot(a):
    """1-based index of the first zero pivot that LAPACK's getrf reports for
    ``a`` (partial pivoting), or 0. Run only when a solve has already failed."""
    a = np.array(a, dtype=np.float64)
    n = a.shape[0]
    first = 0
    for k in range(n):
        p = k + int(np.argmax(np.abs(a[k:, k])))
        if a[p, k] == 0.0:
            if first == 0:
                first = k + 1
            continue
        if p != k:
            a[[k, p]] = a[[p, k]]
        a[k + 1 :, k] /= a[k, k]
        a[k + 1 :, k + 1 :] -= np.outer(a[k + 1 :, k], a[k, k + 1 :])
    return first


def _cholesky_failure(a):
    """1-based order of the first leading minor that potrf finds not
    positive-definite, or 0."""
    a = np.array(a, dtype=np.float64)
    n = a.shape[0]
    L = np.zeros_like(a)
    for j in range(n):
        d = a[j, j] - L[j, :j] @ L[j, :j]
        if not d > 0.0:
            return j + 1
        L[j, j] = math.sqrt(d)
        L[j + 1 :, j] = (a[j + 1 :, j] - L[j + 1 :, :j] @ L[j, :j]) / L[j, j]
    return 0


def _flat_batches(arr):
    return arr.reshape((-1,) + arr.shape[-2:])


def _is_singular(m):
    try:
        np.linalg.inv(m)
    except np.linalg.LinAlgError:
        return True
    return False


def _inv_np(a):
    """``np.linalg.inv`` per batch element, with inf/nan where singular (what
    a getrs through a zero pivot gives) instead of an exception, plus info."""
    try:
        return np.linalg.inv(a), np.zeros(a.shape[:-2], dtype=np.int64)
    except np.linalg.LinAlgError:
        pass
    flat = _flat_batches(a)
    out = np.empty_like(flat)
    info = np.zeros(flat.shape[0], dtype=np.int64)
    for i, m in enumerate(flat):
        try:
            out[i] = np.linalg.inv(m)
        except np.linalg.LinAlgError:
            info[i] = _lu_zero_pivot(m)
            out[i] = np.nan
    return out.reshape(a.shape), info.reshape(a.shape[:-2])


class _NoCtx:
    """Stands in for the ctx when nothing will be recorded, so an untracked
    call skips ``Function.apply``'s bookkeeping (a few microseconds a call)."""

    needs_input_grad = ()

    def save_for_backward(self, *tensors):
        pass

    def save_for_forward(self, *tensors):
        pass

    def mark_non_differentiable(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        pass


def _call(fn, *args):
    if _batched(*args):
        return _vmapped(fn, args)
    if _C._capture_active():
        # Recorded by ferrograd.compile as one call that each replay makes again.
        return fn.apply(*args)
    if _C.is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in args):
        return fn.apply(*args)
    if _C._current_dual_level() >= 0 and any(
        isinstance(a, Tensor) and _C._fw_tangent(a) is not None for a in args
    ):
        # Forward AD: `apply` gives the outputs their tangents.
        return fn.apply(*args)
    return fn.forward(_NoCtx(), *args)


def _check_out(out):
    if out is not None:
        raise TypeError("ferrograd.linalg: out= is not supported; use the returned tensor")


def _vmapped(fn, args):
    """``_call`` under vmap: the Functions take batches of matrices themselves,
    so the batch dimension of the innermost level becomes one more leading
    batch dimension of every tensor argument (an unbatched one is expanded to
    the batch), the call runs once, and its results are batched again."""
    from ..func._batched import batch_size_of, materialize, max_level, wrap

    lid = max_level(args)
    size = batch_size_of(args, lid)
    phys = [
        materialize(a, lid, size) if isinstance(a, Tensor) or _batched(a) else a for a in args
    ]
    out = _call(fn, *phys)

    def back(o):
        # An empty placeholder result (Q of mode='r', lstsq's unused fields)
        # has no batch dimension: it is the same for every sample.
        if o.dim() == 1 and o.shape[0] == 0 and size != 0:
            return o
        return wrap(o, lid)

    if isinstance(out, tuple):
        vals = [back(o) for o in out]
        return type(out)(*vals) if hasattr(type(out), "_fields") else tuple(vals)
    return back(out)
