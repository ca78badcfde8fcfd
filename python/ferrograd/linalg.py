"""``ferrograd.linalg``: PyTorch's ``torch.linalg`` on CPU tensors.

The factorisations and solvers run through NumPy's LAPACK on the detached
data (float32 stays float32, float64 stays float64) inside
``autograd.Function`` subclasses. Their backward rules are PyTorch's published
derivative formulas (``FunctionsManual.cpp``) written in differentiable
ferrograd ops, and those ops include the functions of this module, so
gradients of any order work (``create_graph=True``). Norms, ``cross``,
``vecdot``, ``multi_dot`` and ``matrix_power`` are compositions of existing
ops and differentiate through them.

Real inputs only: ferrograd has no complex dtype, so the complex-only checks
of PyTorch (the gauge of complex singular vectors) never apply.
"""

from __future__ import annotations

import math
import operator
from collections import namedtuple

import numpy as np

import ferrograd as _fg

from . import _C, return_types
from .autograd.function import Function

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "inv_ex",
    "lstsq",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "svd",
    "svdvals",
    "vecdot",
    "vector_norm",
]

Tensor = _C.Tensor


class LinAlgError(RuntimeError):
    """A factorisation or solve failed on its input (singular, not positive-
    definite, no convergence), as ``torch.linalg.LinAlgError``."""


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


def _check_tensor(fn, value, name="A", position=1):
    if not isinstance(value, Tensor):
        raise TypeError(
            f"{fn}(): argument '{name}' (position {position}) must be Tensor, "
            f"not {type(value).__name__}"
        )


def _check_float(api, A):
    if not A.dtype.is_floating_point:
        raise RuntimeError(
            f"{api}: Expected a floating point or complex tensor as input. "
            f"Got {_SCALAR_NAME.get(_dtype_key(A.dtype), str(A.dtype))}"
        )


def _check_matrix(api, A, square=False, name="A"):
    _check_tensor(api, A, name)
    if A.dim() < 2:
        raise RuntimeError(
            f"{api}: The input tensor {name} must have at least 2 dimensions."
        )
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
    """A constant mask selecting a triangle (a differentiable tril/triu)."""
    m = np.tril(np.ones((rows, cols)), k) if lower else np.triu(np.ones((rows, cols)), k)
    if diag_scale is not None:
        idx = np.arange(min(rows, cols))
        m[idx, idx] = diag_scale
    return _tensor(m, like)


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

    def mark_non_differentiable(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        pass


def _call(fn, *args):
    if _C.is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in args):
        return fn.apply(*args)
    return fn.forward(_NoCtx(), *args)


# ----- inv --------------------------------------------------------------------------------


class LinalgInvEx(Function):
    @staticmethod
    def forward(ctx, A):
        inv_a, info = _inv_np(_np(A))
        out = _tensor(inv_a, A)
        info = _int_tensor(info)
        ctx.save_for_backward(out)
        ctx.mark_non_differentiable(info)
        ctx.set_materialize_grads(False)
        return out, info

    @staticmethod
    def backward(ctx, g, _ginfo):
        (inv_a,) = ctx.saved_tensors
        if g is None:
            return None
        # d(A^{-1}) = -A^{-1} dA A^{-1}, so gA = -A^{-H} G A^{-H}.
        return -(inv_a.mT @ g @ inv_a.mT)


LinalgInvEx._backward_name = "LinalgInvExBackward0"


def inv_ex(A, *, check_errors=False):
    """The inverse of each square matrix in ``A`` and LAPACK's ``info`` (0, or
    the 1-based index of a zero pivot of the LU factorisation); singular
    matrices give non-finite values instead of an error unless
    ``check_errors``."""
    _check_matrix("linalg.inv_ex", A, square=True)
    out, info = _call(LinalgInvEx, A)
    if check_errors:
        _raise_inv(A, _np(info), "linalg.inv_ex")
    return linalg_inv_ex(out, info)


def _raise_inv(A, info, api="linalg.inv"):
    flat = np.asarray(info).reshape(-1)
    for i, code in enumerate(flat):
        if code > 0:
            raise LinAlgError(
                f"{api}: {_batch_prefix(A, i)}The diagonal element {int(code)} is zero, the "
                "inversion could not be completed because the input matrix is singular."
            )


def inv(A, *, out=None):
    """The inverse of each square matrix in ``A`` (batches in the leading
    dimensions). Raises ``LinAlgError`` naming the zero pivot when a matrix is
    singular, as ``torch.linalg.inv``."""
    _check_out(out)
    _check_matrix("linalg.inv", A, square=True)
    result, info = _call(LinalgInvEx, A)
    _raise_inv(A, _np(info))
    return result


def _check_out(out):
    if out is not None:
        raise TypeError("ferrograd.linalg: out= is not supported; use the returned tensor")


# ----- det, slogdet -----------------------------------------------------------------------


class LinalgDet(Function):
    @staticmethod
    def forward(ctx, A):
        d = _tensor(np.linalg.det(_np(A)), A)
        ctx.save_for_backward(A, d)
        return d

    @staticmethod
    def backward(ctx, g):
        A, d = ctx.saved_tensors
        return _det_backward(g, A, d)


LinalgDet._backward_name = "LinalgDetBackward0"


def _det_backward(g, A, d):
    # d det(A) / dA is the cofactor matrix det(A) A^{-T}. Near a singular
    # matrix the inverse does not exist, and PyTorch (linalg_det_backward)
    # takes the cofactors from the SVD A = U S V^T where |det| < 100 eps:
    # cof(A) = det(U) det(V^T) U diag(prod_{j != i} s_j) V^T. That is finite
    # and exact at det = 0 (PyTorch itself uses it there only for higher-order
    # gradients; its first-order path returns zeros for an exactly singular
    # matrix, which is not the derivative).
    eps = np.finfo(np.float32 if A.dtype == _fg.float32 else np.float64).eps
    if (np.abs(_np(d)) < 100 * eps).any():
        return _det_backward_svd(g, A)
    gd = (g * d).unsqueeze(-1).unsqueeze(-1)
    return gd * inv(A).mT


def _det_backward_svd(g, A):
    n = A.shape[-1]
    U, S, Vh = svd(A)
    sign = np.linalg.det(_np(U)) * np.linalg.det(_np(Vh))
    alpha = _tensor(np.sign(sign), A)
    others = _C.where(_eye(n, A) > 0, 1.0, S.unsqueeze(-2).expand(*S.shape[:-1], n, n))
    D = (g * alpha).unsqueeze(-1) * others.prod(-1)
    return (U * D.unsqueeze(-2)) @ Vh


def det(A, *, out=None):
    """The determinant of each square matrix in ``A``; its gradient is the
    cofactor matrix, taken from the SVD where the matrix is (nearly) singular,
    so it is finite and correct there."""
    _check_out(out)
    _check_matrix("linalg.det", A, square=True)
    return _call(LinalgDet, A)


class LinalgSlogdet(Function):
    @staticmethod
    def forward(ctx, A):
        sign, logabs = np.linalg.slogdet(_np(A))
        s = _tensor(sign, A)
        la = _tensor(logabs, A)
        ctx.save_for_backward(A)
        ctx.mark_non_differentiable(s)
        ctx.set_materialize_grads(False)
        return s, la

    @staticmethod
    def backward(ctx, _gsign, glogabs):
        (A,) = ctx.saved_tensors
        if glogabs is None:
            return None
        # d log|det A| = A^{-T}; a singular matrix gives non-finite values
        # (PyTorch's LU solve through a zero pivot), not an error.
        inv_a = _call(LinalgInvEx, A)[0]
        return glogabs.unsqueeze(-1).unsqueeze(-1) * inv_a.mT


LinalgSlogdet._backward_name = "LinalgSlogdetBackward0"


def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of each square matrix in ``A``: ``det = sign *
    exp(logabsdet)``, accurate where ``det`` itself would overflow. Only
    ``logabsdet`` is differentiable (gradient ``A^{-T}``)."""
    _check_out(out)
    _check_matrix("linalg.slogdet", A, square=True)
    return linalg_slogdet(*_call(LinalgSlogdet, A))


def _logdet(input):
    """``log(det(input))``: nan where the determinant is negative, ``-inf``
    where it is zero, as ``torch.logdet``."""
    _check_matrix("logdet", input, square=True, name="A")
    sign, logabs = _call(LinalgSlogdet, input)
    return _C.where(sign < 0, float("nan"), logabs)


# ----- solve --------------------------------------------------------------------------------


class LinalgSolveEx(Function):
    @staticmethod
    def forward(ctx, A, B, api):
        a, b = _np(A), _np(B)
        info = np.zeros(a.shape[:-2], dtype=np.int64)
        try:
            x = np.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            # Per matrix: getrf's info, and non-finite values where singular
            # (a getrs through a zero pivot), so solve_ex can return them.
            fa, fb = _flat_batches(a), _flat_batches(b)
            x = np.empty(fb.shape, dtype=np.result_type(a, b))
            flat_info = info.reshape(-1)
            for i in range(fa.shape[0]):
                try:
                    x[i] = np.linalg.solve(fa[i], fb[i])
                except np.linalg.LinAlgError:
                    flat_info[i] = _lu_zero_pivot(fa[i])
                    x[i] = np.nan
            x = x.reshape(b.shape)
            if api is not None:
                bad = int(np.flatnonzero(flat_info)[0])
                raise LinAlgError(
                    f"{api}: {_batch_prefix(A, bad)}The solver failed because the input matrix "
                    "is singular."
                ) from None
        X = _tensor(x, A)
        info = _int_tensor(info)
        ctx.save_for_backward(A, X)
        ctx.mark_non_differentiable(info)
        ctx.set_materialize_grads(False)
        return X, info

    @staticmethod
    def backward(ctx, g, _ginfo):
        if g is None:
            return None, None, None
        A, X = ctx.saved_tensors
        # X = A^{-1} B: gB = A^{-H} G, gA = -gB X^H.
        gB = _call(LinalgSolveEx, A.mT, g, None)[0]
        gA = -(gB @ X.mT) if ctx.needs_input_grad[0] else None
        return gA, gB, None


LinalgSolveEx._backward_name = "LinalgSolveExBackward0"


def _is_vector_rhs(A, B):
    # PyTorch's linalg_solve_is_vector_rhs.
    return B.dim() == 1 or (A.dim() - 1 == B.dim() and tuple(B.shape) == tuple(A.shape[:-1]))


def solve(A, B, *, left=True, out=None):
    """The solution ``X`` of ``A X = B`` (``X A = B`` when ``left=False``)
    for square ``A``, with PyTorch's broadcasting of batch dimensions and its
    rule for a vector right-hand side (``B`` of shape ``(*, n)``). A singular
    ``A`` raises ``LinAlgError``."""
    return _solve(A, B, left, out, "torch.linalg.solve")[0]


def _solve(A, B, left, out, api):
    _check_out(out)
    _check_matrix("linalg.solve", A, square=True)
    _check_tensor("linalg.solve", B, "B", 2)
    _check_float("linalg.solve", B)
    if A.dtype != B.dtype:
        raise RuntimeError(
            f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
            f"{_SCALAR_NAME[_dtype_key(A.dtype)]} and B of type "
            f"{_SCALAR_NAME[_dtype_key(B.dtype)]} instead"
        )
    vector = _is_vector_rhs(A, B)
    if vector:
        B = B.unsqueeze(-1) if left else B.unsqueeze(-2)
    if not left:
        # X A = B  <=>  A^T X^T = B^T
        A, B = A.mT, B.mT
    n = A.shape[-1]
    if B.shape[-2] != n:
        shape_b = f"{B.shape[-2]}x{B.shape[-1]}" if left else f"{B.shape[-1]}x{B.shape[-2]}"
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {shape_b})"
        )
    if A.shape[:-2] != B.shape[:-2]:
        batch = tuple(_fg.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])))
        if tuple(A.shape[:-2]) != batch:
            A = A.broadcast_to(batch + tuple(A.shape[-2:]))
        if tuple(B.shape[:-2]) != batch:
            B = B.broadcast_to(batch + tuple(B.shape[-2:]))
    X, info = _call(LinalgSolveEx, A, B, api)
    if not left:
        X = X.mT
    if vector:
        X = X.squeeze(-1) if left else X.squeeze(-2)
    return X, info


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """``solve`` returning ``(result, info)``: ``info`` is LAPACK's getrf code
    per matrix (0, or the 1-based index of a zero pivot), and a singular
    matrix gives non-finite values instead of an error unless
    ``check_errors``."""
    api = "torch.linalg.solve_ex" if check_errors else None
    return linalg_solve_ex(*_solve(A, B, left, out, api))


# ----- cholesky --------------------------------------------------------------------------------


class LinalgCholeskyEx(Function):
    @staticmethod
    def forward(ctx, A, api):
        a = _np(A)
        info = np.zeros(a.shape[:-2], dtype=np.int64)
        try:
            L = np.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            L = None
        # potrf also stops at a nan pivot, where NumPy returns nan quietly.
        if L is None or not np.isfinite(L).all():
            fa = _flat_batches(a)
            L = np.empty_like(fa)
            flat_info = info.reshape(-1)
            for i, m in enumerate(fa):
                order = _cholesky_failure(m)
                flat_info[i] = order
                L[i] = np.nan if order else np.linalg.cholesky(m)
                if order and api is not None:
                    raise LinAlgError(
                        f"{api}: {_batch_prefix(A, i)}The factorization could not "
                        "be completed because the input is not positive-definite (the leading "
                        f"minor of order {order} is not positive-definite)."
                    ) from None
            L = L.reshape(a.shape)
        L = _tensor(L, A)
        info = _int_tensor(info)
        ctx.save_for_backward(L)
        ctx.mark_non_differentiable(info)
        ctx.set_materialize_grads(False)
        return L, info

    @staticmethod
    def backward(ctx, gL, _ginfo):
        if gL is None:
            return None, None
        (L,) = ctx.saved_tensors
        # PyTorch's cholesky_backward: gA = L^{-H} phi(L^H gL) L^{-1},
        # phi = lower triangle with the diagonal halved, then symmetrised.
        n = L.shape[-1]
        phi = (L.mT @ gL) * _tri_mask(n, n, 0, L, diag_scale=0.5)
        L_inv = inv(L)
        gA = L_inv.mT @ phi @ L_inv
        return (gA + gA.mT) * 0.5, None


LinalgCholeskyEx._backward_name = "LinalgCholeskyExBackward0"


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor ``L`` (``A = L L^T``) of each symmetric positive-
    definite matrix in ``A``, or ``L^T`` with ``upper=True``. Reads only the
    lower triangle, as LAPACK does."""
    _check_out(out)
    _check_matrix("linalg.cholesky", A, square=True)
    L = _call(LinalgCholeskyEx, A, "linalg.cholesky")[0]
    return L.mT if upper else L


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """``cholesky`` returning ``(L, info)``: ``info`` is the order of the
    first leading minor that is not positive-definite (0 on success), and
    such a matrix gets a nan factor (LAPACK leaves it partly computed)
    instead of an error unless ``check_errors``."""
    _check_out(out)
    _check_matrix("linalg.cholesky_ex", A, square=True)
    L, info = _call(LinalgCholeskyEx, A, "linalg.cholesky_ex" if check_errors else None)
    return linalg_cholesky_ex(L.mT if upper else L, info)


# ----- qr ------------------------------------------------------------------------------------------


def _copyltu(M):
    return _tril(M) + _tril(M, -1).mT


def _qr_back_square(Q, R, gQ, gR):
    # m >= n, R square and invertible: gA = (gQ + Q copyltu(M)) R^{-T} with
    # M = R gR^T - gQ^T Q (Walter & Lehmann; the same map as PyTorch's
    # linalg_qr_backward).
    if gR is not None and gQ is not None:
        M = R @ gR.mT - gQ.mT @ Q
    elif gR is not None:
        M = R @ gR.mT
    else:
        M = -(gQ.mT @ Q)
    b = Q @ _copyltu(M)
    if gQ is not None:
        b = b + gQ
    # b R^{-T} = (R^{-1} b^T)^T
    return solve(R, b.mT).mT


class LinalgQr(Function):
    @staticmethod
    def forward(ctx, A, mode):
        a = _np(A)
        ctx.mode = mode
        ctx.set_materialize_grads(False)
        if mode == "r":
            R = _tensor(np.linalg.qr(a, mode="r"), A)
            Q = _C.empty(0, dtype=A.dtype)
            ctx.mark_non_differentiable(Q)
            return Q, R
        q, r = np.linalg.qr(a, mode=mode)
        Q, R = _tensor(q, A), _tensor(r, A)
        ctx.save_for_backward(Q, R)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        if ctx.mode == "r":
            raise RuntimeError(
                "The derivative of linalg.qr depends on Q, which is not computed when "
                "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                "differentiate through linalg.qr."
            )
        Q, R = ctx.saved_tensors
        m, n = Q.shape[-2], R.shape[-1]
        if ctx.mode == "complete" and m > n:
            raise RuntimeError(
                "The QR decomposition is not differentiable when mode='complete' and "
                "nrows > ncols."
            )
        if gQ is None and gR is None:
            return None, None
        if m >= n:
            return _qr_back_square(Q, R, gQ, gR), None
        # Wide A = [X | Y] with X m x m: X = Q U and Y = Q D.
        U, D = R[..., :, :m], R[..., :, m:]
        gU = gR[..., :, :m] if gR is not None else None
        gD = gR[..., :, m:] if gR is not None else None
        Y = Q @ D
        gQx = gQ
        if gD is not None:
            gQx = Y @ gD.mT if gQx is None else gQx + Y @ gD.mT
        gX = _qr_back_square(Q, U, gQx, gU)
        gY = Q @ gD if gD is not None else _C.zeros(tuple(D.shape), dtype=Q.dtype)
        return _C.cat([gX, gY], -1), None


LinalgQr._backward_name = "LinalgQrBackward0"


def qr(A, mode="reduced", *, out=None):
    """The QR factorisation ``A = Q R`` of each matrix in ``A``: ``mode`` is
    ``'reduced'`` (``Q`` is m x k, k = min(m, n)), ``'complete'`` (``Q`` is
    m x m) or ``'r'`` (``Q`` is an empty tensor). Signs follow LAPACK's
    Householder convention, as PyTorch's CPU path."""
    _check_out(out)
    _check_matrix("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
            "(default), 'r', or 'complete'"
        )
    return linalg_qr(*_call(LinalgQr, A, mode))


# ----- eigh -------------------------------------------------------------------------------------------


class LinalgEigh(Function):
    @staticmethod
    def forward(ctx, A, UPLO):
        try:
            w, v = np.linalg.eigh(_np(A), UPLO=UPLO)
        except np.linalg.LinAlgError:
            raise LinAlgError(
                "linalg.eigh: The algorithm failed to converge because the input matrix is "
                "ill-conditioned or has too many repeated eigenvalues."
            ) from None
        L, V = _tensor(w, A), _tensor(v, A)
        ctx.save_for_backward(L, V)
        ctx.set_materialize_grads(False)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        if gV is None:
            if gL is None:
                return None, None
            return (V * gL.unsqueeze(-2)) @ V.mT, None
        # PyTorch's linalg_eig_backward (hermitian case): project V^T gV onto
        # the skew-symmetric matrices, divide by E_ij = L_j - L_i (1 on the
        # diagonal), put gL on the diagonal. Repeated eigenvalues divide by
        # zero and give inf/nan, exactly as PyTorch does.
        n = L.shape[-1]
        eye = _eye(n, L)
        VhgV = V.mT @ gV
        VhgV = (VhgV - VhgV.mT) * 0.5
        E = L.unsqueeze(-2) - L.unsqueeze(-1)
        E = _C.where(eye > 0, 1.0, E)
        inner = VhgV / E
        if gL is not None:
            inner = inner + _diag_embed(gL)
        return V @ inner @ V.mT, None


LinalgEigh._backward_name = "LinalgEighBackward0"


def _check_uplo(api, UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"{api}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and orthonormal eigenvectors of each symmetric
    matrix in ``A``, reading the lower (``UPLO='L'``) or upper triangle.
    Eigenvectors are defined up to sign (and, for repeated eigenvalues, up to
    a rotation of their eigenspace): a loss that depends on that choice has no
    gradient, and with repeated eigenvalues the gradient is inf/nan as in
    PyTorch."""
    _check_out(out)
    _check_matrix("linalg.eigh", A, square=True)
    _check_uplo("linalg.eigh", UPLO)
    return linalg_eigh(*_call(LinalgEigh, A, UPLO))


def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues (ascending) of each symmetric matrix in ``A``; their
    gradient ``V diag(g) V^T`` is finite even for repeated eigenvalues."""
    _check_out(out)
    _check_matrix("linalg.eigvalsh", A, square=True)
    _check_uplo("linalg.eigvalsh", UPLO)
    if not (A.requires_grad and _C.is_grad_enabled()):
        return _tensor(np.linalg.eigvalsh(_np(A), UPLO=UPLO), A)
    return _call(LinalgEigh, A, UPLO)[0]


# ----- svd ----------------------------------------------------------------------------------------------


class LinalgSvd(Function):
    @staticmethod
    def forward(ctx, A, full_matrices):
        try:
            u, s, vh = np.linalg.svd(_np(A), full_matrices=full_matrices)
        except np.linalg.LinAlgError:
            raise LinAlgError(
                "linalg.svd: The algorithm failed to converge because the input matrix is "
                "ill-conditioned or has too many repeated singular values."
            ) from None
        U, S, Vh = _tensor(u, A), _tensor(s, A), _tensor(vh, A)
        ctx.save_for_backward(U, S, Vh)
        ctx.set_materialize_grads(False)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        k = S.shape[-1]
        # With full_matrices only the first k columns of U / rows of Vh are
        # determined by A; PyTorch differentiates through those.
        if U.shape[-1] != k:
            U = U[..., :, :k]
            gU = gU[..., :, :k] if gU is not None else None
        if Vh.shape[-2] != k:
            Vh = Vh[..., :k, :]
            gVh = gVh[..., :k, :] if gVh is not None else None
        return _svd_backward(gU, gS, gVh, U, S, Vh), None


LinalgSvd._backward_name = "LinalgSvdBackward0"


def _svd_backward(gU, gS, gVh, U, S, Vh):
    # PyTorch's svd_backward for real inputs.
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        if gS is None:
            return None
        return U @ (gS.unsqueeze(-1) * Vh) if m >= n else (U * gS.unsqueeze(-2)) @ Vh
    k = S.shape[-1]
    eye = _eye(k, S)
    S2 = S * S
    E = _C.where(eye > 0, 1.0, S2.unsqueeze(-2) - S2.unsqueeze(-1))
    UhgU = None
    VhgV = None
    if gU is not None:
        UhgU = U.mT @ gU
        UhgU = UhgU - UhgU.mT
    if gVh is not None:
        VhgV = Vh @ gVh.mT
        VhgV = VhgV - VhgV.mT
    if UhgU is not None and VhgV is not None:
        gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E
    elif UhgU is not None:
        gA = (UhgU * S.unsqueeze(-2)) / E
    else:
        gA = (S.unsqueeze(-1) * VhgV) / E
    if gS is not None:
        gA = gA + _diag_embed(gS)
    if m > n and gU is not None:
        gA = U @ gA
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U @ (U.mT @ gUSinv)
        return gA @ Vh
    if m < n and gVh is not None:
        gA = gA @ Vh
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = gA + SinvgVh - (SinvgVh @ Vh.mT) @ Vh
        return U @ gA
    return U @ (gA @ Vh) if m >= n else (U @ gA) @ Vh


def svd(A, full_matrices=True, *, driver=None, out=None):
    """``A = U diag(S) Vh`` for each matrix in ``A``, singular values
    descending. Singular vectors are defined up to sign; a loss that depends
    on the signs (or, for repeated singular values, on the basis of a
    singular subspace) has no meaningful gradient and gives inf/nan where
    singular values repeat, as in PyTorch."""
    _check_out(out)
    _check_matrix("linalg.svd", A)
    if driver is not None:
        raise RuntimeError(
            "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs "
            "with cuSOLVER backend."
        )
    return linalg_svd(*_call(LinalgSvd, A, bool(full_matrices)))


def svdvals(A, *, driver=None, out=None):
    """The singular values of each matrix in ``A``, descending; their
    gradient ``U diag(g) Vh`` is defined for repeated values too."""
    _check_out(out)
    _check_matrix("linalg.svdvals", A)
    if not (A.requires_grad and _C.is_grad_enabled()):
        return _tensor(np.linalg.svd(_np(A), compute_uv=False), A)
    return _call(LinalgSvd, A, False)[1]


# ----- pinv, lstsq, matrix_rank ------------------------------------------------------------------------


def _tolerances(A, atol, rtol, smax):
    """``max(atol, rtol * smax)`` with PyTorch's defaults: ``rtol`` is
    ``eps * max(m, n)`` when neither is given and 0 when only ``atol`` is."""
    eps = np.finfo(np.float32 if A.dtype == _fg.float32 else np.float64).eps
    atol_v = 0.0 if atol is None else (_np(atol) if isinstance(atol, Tensor) else atol)
    if rtol is None:
        rtol_v = eps * max(A.shape[-2], A.shape[-1]) if (atol is None or np.all(
            np.asarray(atol_v) <= 0)) else 0.0
    else:
        rtol_v = _np(rtol) if isinstance(rtol, Tensor) else rtol
    return np.maximum(np.asarray(atol_v, dtype=np.float64),
                      np.asarray(rtol_v, dtype=np.float64) * smax)


class LinalgPinv(Function):
    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian):
        a = _np(A).astype(np.float64)
        if hermitian:
            w, v = np.linalg.eigh(a)
            absw = np.abs(w)
            smax = absw.max(-1, keepdims=True) if w.shape[-1] else np.zeros(w.shape[:-1] + (1,))
            tol = _tolerances(A, atol, rtol, smax)
            winv = np.where(absw > tol, 1.0 / np.where(w == 0, 1.0, w), 0.0)
            p = (v * winv[..., None, :]) @ np.swapaxes(v, -1, -2)
        else:
            u, s, vh = np.linalg.svd(a, full_matrices=False)
            smax = s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,))
            tol = _tolerances(A, atol, rtol, smax)
            sinv = np.where(s > tol, 1.0 / np.where(s == 0, 1.0, s), 0.0)
            p = (np.swapaxes(vh, -1, -2) * sinv[..., None, :]) @ np.swapaxes(u, -1, -2)
        P = _tensor(p, A)
        ctx.save_for_backward(A, P)
        return P

    @staticmethod
    def backward(ctx, g):
        A, P = ctx.saved_tensors
        return _pinv_backward(g, P, A), None, None, None


LinalgPinv._backward_name = "LinalgPinvBackward0"


def _pinv_backward(grad, pinvA, A):
    # PyTorch's pinv_backward (Golub & Pereyra), ordered to keep the
    # intermediate matrices smallest.
    m, n = A.shape[-2], A.shape[-1]
    pinvAh = pinvA.mT
    gradh = grad.mT
    if m <= n:
        K = gradh @ pinvA
        KpinvAh = K @ pinvAh
        return (-(pinvA @ K).mT + KpinvAh - (A @ pinvA) @ KpinvAh
                + (pinvAh @ pinvA) @ (gradh - K @ A))
    K = pinvA @ gradh
    pinvAhK = pinvAh @ K
    return (-(K @ pinvA).mT + (gradh - A @ K) @ pinvA @ pinvAh + pinvAhK
            - pinvAhK @ pinvA @ A)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudo-inverse of each matrix in ``A``, dropping
    singular values at or below ``max(atol, rtol * s_max)`` (PyTorch's
    defaults). ``hermitian=True`` uses an eigendecomposition of the lower
    triangle. Its gradient is PyTorch's pinv formula, exact where the rank
    does not change."""
    _check_out(out)
    _check_matrix("linalg.pinv", A)
    return _call(LinalgPinv, A, atol, rtol, bool(hermitian))


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The number of singular values (absolute eigenvalues with
    ``hermitian=True``) above ``max(atol, rtol * s_max)``, as int64."""
    _check_out(out)
    _check_matrix("linalg.matrix_rank", A)
    a = _np(A)
    if hermitian:
        s = np.abs(np.linalg.eigvalsh(a))
    else:
        s = np.linalg.svd(a, compute_uv=False)
    smax = s.max(-1, keepdims=True) if s.shape[-1] else np.zeros(s.shape[:-1] + (1,))
    tol = _tolerances(A, atol, rtol, smax)
    return _int_tensor((s > tol).sum(-1))


class LinalgLstsq(Function):
    @staticmethod
    def forward(ctx, A, B, rcond):
        a, b = _np(A), _np(B)
        fa, fb = _flat_batches(a), _flat_batches(b)
        x = np.empty(fa.shape[:1] + (a.shape[-1], b.shape[-1]), dtype=a.dtype)
        for i in range(fa.shape[0]):
            x[i] = np.linalg.lstsq(fa[i], fb[i], rcond=rcond)[0]
        X = _tensor(x.reshape(a.shape[:-2] + x.shape[-2:]), A)
        ctx.save_for_backward(A, B)
        return X

    @staticmethod
    def backward(ctx, gX):
        A, B = ctx.saved_tensors
        # PyTorch's linalg_lstsq_backward: X = pinv(A) B.
        pinvA = pinv(A)
        gA = _pinv_backward(gX @ B.mT, pinvA, A) if ctx.needs_input_grad[0] else None
        gB = pinvA.mT @ gX if ctx.needs_input_grad[1] else None
        return gA, gB, None


LinalgLstsq._backward_name = "LinalgLstsqBackward0"

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solutions ``X`` minimising ``||A X - B||_F`` for each
    matrix pair: ``(solution, residuals, rank, singular_values)`` with what
    PyTorch's CPU drivers fill in. The default ``'gelsy'`` gives the rank and
    leaves ``residuals`` and ``singular_values`` empty; ``'gelsd'``/``'gelss'``
    add the singular values and, when m > n and every matrix has rank n, the
    squared residual of each column; ``'gels'`` gives residuals (m > n) and
    no rank. Only ``solution`` is differentiable (PyTorch's rule through
    ``pinv(A) B``)."""
    _check_matrix("linalg.lstsq", A, name="A")
    _check_tensor("linalg.lstsq", B, "B", 2)
    _check_float("linalg.lstsq", B)
    if driver is not None and driver not in _DRIVERS:
        raise RuntimeError(
            "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"
        )
    if A.dtype != B.dtype:
        raise RuntimeError(
            f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
            f"input's dtype {A.dtype} and other's dtype {B.dtype}"
        )
    vector = _is_vector_rhs(A, B)
    if not 0 <= A.dim() - B.dim() <= 1:
        raise RuntimeError(
            "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
            "(input.dim() - other.dim()) <= 1"
        )
    Bm = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    if Bm.shape[-2] != m:
        raise RuntimeError(
            f"torch.linalg.lstsq: input.size(-2) should match other.size(-{1 + (not vector)})"
        )
    batch = tuple(_fg.broadcast_shapes(tuple(A.shape[:-2]), tuple(Bm.shape[:-2])))
    if tuple(A.shape[:-2]) != batch:
        A = A.broadcast_to(batch + (m, n))
    if tuple(Bm.shape[:-2]) != batch:
        Bm = Bm.broadcast_to(batch + tuple(Bm.shape[-2:]))
    eps = np.finfo(np.float32 if A.dtype == _fg.float32 else np.float64).eps
    rc = eps * max(m, n) if rcond is None else rcond
    X = _call(LinalgLstsq, A, Bm, rc)
    driver = "gelsy" if driver is None else driver
    a = _np(A).astype(np.float64)
    sv = np.linalg.svd(a, compute_uv=False)
    smax = sv[..., :1] if sv.shape[-1] else np.zeros(sv.shape[:-1] + (1,))
    ranks = (sv > rc * smax).sum(-1)
    # As PyTorch's linalg_lstsq_out_info: residuals only when m > n and the
    # driver is not gelsy (gelss/gelsd: only if every matrix has rank n).
    if m > n and driver != "gelsy" and (driver == "gels" or np.all(ranks == n)):
        r = a @ _np(X).astype(np.float64) - _np(Bm).astype(np.float64)
        residuals = _tensor((r * r).sum(-2), A)
    else:
        residuals = _C.empty(0, dtype=A.dtype)
    rank = _int_tensor(ranks) if driver != "gels" else _C.empty(0, dtype=_fg.int64)
    if driver in ("gelsd", "gelss"):
        singular_values = _tensor(sv, A)
    else:
        singular_values = _C.empty(0, dtype=A.dtype)
    if vector:
        X = X.squeeze(-1)
    return linalg_lstsq(X, residuals, rank, singular_values)


# ----- norms -----------------------------------------------------------------------------------------------


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """``(sum |x|^ord)^(1/ord)`` over ``dim`` (all elements when None), with
    ``inf``/``-inf`` the max/min of ``|x|`` and ``0`` the count of nonzeros."""
    _check_out(out)
    _check_tensor("linalg.vector_norm", x, "x")
    if isinstance(ord, str):
        raise TypeError(
            f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}"
        )
    return x.norm(ord, dim, keepdim, dtype)


def _norm_dims(api, A, dim):
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"{api}: dim must be a 2-tuple. Got {_fmt_dims(dim)}")
    nd = A.dim()
    out = []
    for d in dim:
        d = operator.index(d)
        if not -nd <= d < nd:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
                f"but got {d})"
            )
        out.append(d % nd)
    if out[0] == out[1]:
        raise RuntimeError(f"{api}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return out


def _fmt_dims(dim):
    if isinstance(dim, (tuple, list)):
        return " ".join(str(d) for d in dim)
    return str(dim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """The matrix norm over the two dimensions ``dim``: ``'fro'``, ``'nuc'``
    (sum of singular values), ``2``/``-2`` (largest/smallest singular value),
    ``1``/``-1`` (max/min column abs-sum), ``inf``/``-inf`` (max/min row
    abs-sum)."""
    _check_out(out)
    api = "linalg.matrix_norm"
    _check_tensor(api, A)
    if A.dim() < 2:
        raise RuntimeError(f"{api}: The input tensor A must have at least 2 dimensions.")
    _check_float(api, A)
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = _norm_dims(api, A, dim)
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"{api}: Order {ord} not supported.")
    elif ord not in (1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"{api}: Order {ord} not supported.")
    if ord == "fro":
        return A.norm(2, [d0, d1], keepdim)
    if ord in ("nuc", 2, -2):
        rest = [i for i in range(A.dim()) if i not in (d0, d1)]
        S = svdvals(A.permute(*rest, d0, d1))
        if ord == "nuc":
            r = S.sum(-1)
        elif ord == 2:
            r = S.amax(-1)
        else:
            r = S.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
        return r
    # Induced 1 / inf norms: abs-sum over one dimension, then max/min over the other.
    first, second = (d0, d1) if ord in (1, -1) else (d1, d0)
    r = A.abs().sum(first, keepdim=True)
    r = r.amax(second, keepdim=True) if ord > 0 else r.amin(second, keepdim=True)
    if not keepdim:
        for d in sorted((d0, d1), reverse=True):
            r = r.squeeze(d)
    return r


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """``vector_norm`` or ``matrix_norm`` as ``torch.linalg.norm`` chooses:
    a matrix norm when ``ord`` is a string or ``dim`` has two entries or
    (``dim`` None and ``ord`` given) ``A`` is 2-D; the flattened 2-norm when
    both are None."""
    _check_out(out)
    _check_tensor("linalg.norm", A)
    if dim is not None:
        dim = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        if len(dim) not in (1, 2):
            raise RuntimeError(
                f"linalg.norm: If dim is specified, it mut be of length 1 or 2. Got {list(dim)}"
            )
    elif ord is not None and A.dim() not in (1, 2):
        raise RuntimeError(
            f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
            f"Got {A.dim()}D."
        )
    # A string order is always a matrix norm (matrix_norm then checks dim).
    if isinstance(ord, str):
        return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    if ord is not None and ((dim is not None and len(dim) == 2) or (dim is None and A.dim() == 2)):
        return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    # ord None: the 2-norm over dim, which is also the Frobenius norm.
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


# ----- products and small helpers -------------------------------------------------------------------------


def cross(input, other, *, dim=-1, out=None):
    """The cross product of 3-vectors along ``dim``, broadcasting the other
    dimensions."""
    _check_out(out)
    _check_tensor("linalg.cross", input, "input")
    _check_tensor("linalg.cross", other, "other", 2)
    if input.dim() != other.dim():
        raise RuntimeError(
            "linalg.cross: inputs must have the same number of dimensions."
        )
    a, b = _C.broadcast_tensors(input, other)
    nd = a.dim()
    if not -nd <= dim < nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})"
        )
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got "
            f"{input.shape[dim]} and {other.shape[dim]}"
        )
    i120 = _C.tensor([1, 2, 0])
    i201 = _C.tensor([2, 0, 1])
    return (a.index_select(dim, i120) * b.index_select(dim, i201)
            - a.index_select(dim, i201) * b.index_select(dim, i120))


def matmul(input, other, *, out=None):
    """``torch.linalg.matmul``: the same as ``ferrograd.matmul``."""
    _check_out(out)
    return _C.matmul(input, other)


def vecdot(x, y, *, dim=-1, out=None):
    """The dot product of ``x`` and ``y`` along ``dim`` (broadcasting)."""
    _check_out(out)
    _check_tensor("linalg.vecdot", x, "x")
    _check_tensor("linalg.vecdot", y, "y", 2)
    return (x * y).sum(dim)


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices; the first may be a 1-D row vector
    and the last a 1-D column vector (their dimensions are removed from the
    result)."""
    _check_out(out)
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(
            f"multi_dot(): expected at least 2 tensors but got {len(tensors)}"
        )
    for i, t in enumerate(tensors):
        want = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t.dim() not in want:
            if i == 0:
                msg = f"multi_dot(): the first tensor must be 1D or 2D but got {t.dim()}D"
            elif i == len(tensors) - 1:
                msg = f"multi_dot(): the last tensor must be 1D or 2D but got {t.dim()}D"
            else:
                msg = f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D"
            raise RuntimeError(msg)
    first_vec = tensors[0].dim() == 1
    last_vec = tensors[-1].dim() == 1
    mats = list(tensors)
    if first_vec:
        mats[0] = mats[0].unsqueeze(0)
    if last_vec:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i in range(len(mats) - 1):
        if mats[i].shape[-1] != mats[i + 1].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes "
                f"{list(tensors[i].shape)} and {list(tensors[i + 1].shape)} cannot be multiplied"
            )
    r = mats[0]
    for mtx in mats[1:]:
        r = r @ mtx
    if first_vec:
        r = r.squeeze(0)
    if last_vec:
        r = r.squeeze(-1)
    return r


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonal of each matrix in ``A`` (a view), as ``torch.linalg.diagonal``."""
    _check_tensor("linalg.diagonal", A)
    return A.diagonal(offset, dim1, dim2)


def matrix_power(A, n, *, out=None):
    """``A`` to the integer power ``n`` by repeated squaring; ``n < 0`` uses
    the inverse, ``n = 0`` gives the identity (with zero gradient)."""
    _check_out(out)
    _check_tensor("linalg.matrix_power", A)
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"linalg.matrix_power: A must be batches of square matrices, but they are "
            f"{A.shape[-2] if A.dim() >= 2 else 1} by {A.shape[-1] if A.dim() >= 1 else 1} "
            "matrices"
        )
    n = operator.index(n)
    if n == 0:
        # The identity, still connected to A (zero gradient) as PyTorch's
        # clone-and-copy is; `where` rather than A * 0 keeps inf/nan out.
        eye = _C.eye(A.shape[-1], dtype=A.dtype).expand(*A.shape)
        return _C.where(_C.ones(tuple(A.shape), dtype=_fg.bool), eye, A)
    if n < 0:
        A = inv(A)
        n = -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


# ----- torch.* aliases and Tensor methods ------------------------------------------------------------------


def _svd_legacy(input, some=True, compute_uv=True):
    """``torch.svd``: ``(U, S, V)`` with ``V`` (not ``Vh``); ``some=True``
    gives the reduced factorisation, ``compute_uv=False`` zero-filled
    ``U``/``V``."""
    _check_matrix("svd", input)
    if not compute_uv:
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        S = svdvals(input)
        return svd_result(_C.zeros(batch + (m, m), dtype=input.dtype), S,
                          _C.zeros(batch + (n, n), dtype=input.dtype))
    U, S, Vh = svd(input, full_matrices=not some)
    return svd_result(U, S, Vh.mT)


def _qr_legacy(input, some=True):
    """``torch.qr``: reduced (``some=True``) or complete QR."""
    return qr_result(*qr(input, "reduced" if some else "complete"))


def _cholesky_legacy(input, upper=False):
    """``torch.cholesky`` (deprecated in PyTorch in favour of
    ``linalg.cholesky``)."""
    return cholesky(input, upper=upper)


def _pinverse(input, rcond=1e-15):
    """``torch.pinverse``: ``linalg.pinv`` with ``rtol=rcond``."""
    return pinv(input, rtol=rcond)


def _slogdet_legacy(input):
    """``torch.slogdet``: ``(sign, logabsdet)``."""
    return slogdet_result(*slogdet(input))


def _matrix_power(input, n):
    """``torch.matrix_power``."""
    return matrix_power(input, n)


def _det(input):
    """``torch.det``."""
    return det(input)


def _inverse(input):
    """``torch.inverse``."""
    return inv(input)


# Tensor methods take ``self`` (the stub in _C.pyi declares them that way).
def _m_det(self):
    return det(self)


def _m_inverse(self):
    return inv(self)


def _m_logdet(self):
    return _logdet(self)


def _m_slogdet(self):
    return _slogdet_legacy(self)


def _m_cholesky(self, upper=False):
    return cholesky(self, upper=upper)


def _m_pinverse(self, rcond=1e-15):
    return pinv(self, rtol=rcond)


def _m_svd(self, some=True, compute_uv=True):
    return _svd_legacy(self, some, compute_uv)


def _m_qr(self, some=True):
    return _qr_legacy(self, some)


def _m_matrix_power(self, n):
    return matrix_power(self, n)


def _install():
    for name, fn in (
        ("det", _det),
        ("inverse", _inverse),
        ("logdet", _logdet),
        ("slogdet", _slogdet_legacy),
        ("cholesky", _cholesky_legacy),
        ("pinverse", _pinverse),
        ("svd", _svd_legacy),
        ("qr", _qr_legacy),
        ("matrix_power", _matrix_power),
    ):
        fn.__name__ = fn.__qualname__ = name
        fn.__module__ = "ferrograd"
        # Set from here so the package's __init__ needs one line for linalg.
        setattr(_fg, name, fn)
        if name not in _fg.__all__:
            _fg.__all__.append(name)
    if "linalg" not in _fg.__all__:
        _fg.__all__.append("linalg")
    for name, fn in (
        ("det", _m_det),
        ("inverse", _m_inverse),
        ("logdet", _m_logdet),
        ("slogdet", _m_slogdet),
        ("cholesky", _m_cholesky),
        ("pinverse", _m_pinverse),
        ("svd", _m_svd),
        ("qr", _m_qr),
        ("matrix_power", _m_matrix_power),
    ):
        fn.__name__ = name
        fn.__qualname__ = f"Tensor.{name}"
        fn.__doc__ = f"See ``ferrograd.{name}``."
        setattr(Tensor, name, fn)


_install()
