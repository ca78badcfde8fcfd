"""``ferrograd.linalg`` factorisations: ``cholesky``/``cholesky_ex``, ``qr``,
``eigh``/``eigvalsh`` and ``svd``/``svdvals``.
"""

from __future__ import annotations

import numpy as np

from .. import _C
from .._autocast import autocast_op as _autocast_op
from ..autograd.function import Function
from ._common import (
    LinAlgError,
    Tensor,
    _batch_prefix,
    _call,
    _check_matrix,
    _check_out,
    _cholesky_failure,
    _diag_embed,
    _eye,
    _flat_batches,
    _int_tensor,
    _np,
    _refuse_non_finite,
    _svd,
    _tensor,
    _tri_mask,
    _tril,
    linalg_cholesky_ex,
    linalg_eigh,
    linalg_qr,
    linalg_svd,
)
from ._inverse import inv, solve


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


@_autocast_op("cholesky")
def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor ``L`` (``A = L L^T``) of each symmetric positive-
    definite matrix in ``A``, or ``L^T`` with ``upper=True``. Reads only the
    lower triangle, as LAPACK does."""
    _check_out(out)
    _check_matrix("linalg.cholesky", A, square=True)
    L = _call(LinalgCholeskyEx, A, "linalg.cholesky")[0]
    return L.mT if upper else L


@_autocast_op("cholesky_ex")
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


def _qr(a, mode):
    """``np.linalg.qr``, with matrices that have no rows or no columns answered
    without LAPACK (a batch of 2**40 of them took a call each): ``R`` is empty,
    ``Q`` empty or, complete, the identity."""
    m, n = a.shape[-2:]
    if m and n:
        return np.linalg.qr(a, mode=mode)
    batch = a.shape[:-2]
    r = np.zeros(batch + ((m if mode == "complete" else 0), n), dtype=a.dtype)
    if mode == "r":
        return r
    if mode == "complete":
        return np.broadcast_to(np.eye(m, dtype=a.dtype), batch + (m, m)).copy(), r
    return np.zeros(batch + (m, 0), dtype=a.dtype), r


class LinalgQr(Function):
    @staticmethod
    def forward(ctx, A, mode):
        a = _np(A)
        ctx.mode = mode
        ctx.set_materialize_grads(False)
        if mode == "r":
            R = _tensor(_qr(a, "r"), A)
            Q = _C.empty(0, dtype=A.dtype)
            ctx.mark_non_differentiable(Q)
            return Q, R
        q, r = _qr(a, mode)
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
                "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
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


@_autocast_op("qr")
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
        _refuse_non_finite("linalg.eigh", _np(A))
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


@_autocast_op("eigh")
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


@_autocast_op("eigvalsh")
def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues (ascending) of each symmetric matrix in ``A``; their
    gradient ``V diag(g) V^T`` is finite even for repeated eigenvalues."""
    _check_out(out)
    _check_matrix("linalg.eigvalsh", A, square=True)
    _check_uplo("linalg.eigvalsh", UPLO)
    if _plain(A):
        _refuse_non_finite("linalg.eigvalsh", _np(A))
        return _tensor(np.linalg.eigvalsh(_np(A), UPLO=UPLO), A)
    return _call(LinalgEigh, A, UPLO)[0]


def _plain(A):
    """Whether the values alone are wanted: no graph, no tangent, no vmap
    batch, no compile capture (each of which goes through the Function)."""
    return (
        isinstance(A, Tensor)
        and not _C._capture_active()
        and not (A.requires_grad and _C.is_grad_enabled())
        and _C._fw_tangent(A) is None
    )


# ----- svd ----------------------------------------------------------------------------------------------


class LinalgSvd(Function):
    @staticmethod
    def forward(ctx, A, full_matrices):
        _refuse_non_finite("linalg.svd", _np(A))
        try:
            u, s, vh = _svd(_np(A), full_matrices=full_matrices)
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


@_autocast_op("svd")
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


@_autocast_op("svdvals")
def svdvals(A, *, driver=None, out=None):
    """The singular values of each matrix in ``A``, descending; their
    gradient ``U diag(g) Vh`` is defined for repeated values too."""
    _check_out(out)
    _check_matrix("linalg.svdvals", A)
    if _plain(A):
        _refuse_non_finite("linalg.svdvals", _np(A))
        return _tensor(_svd(_np(A), compute_uv=False), A)
    return _call(LinalgSvd, A, False)[1]
