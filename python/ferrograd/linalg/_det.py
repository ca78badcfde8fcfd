"""``ferrograd.linalg`` determinants: ``det``, ``slogdet`` and the ``logdet``
behind ``ferrograd.logdet``.
"""

from __future__ import annotations

import numpy as np

import ferrograd as _fg

from .. import _C
from ..autograd.function import Function
from ._common import (
    Tensor,
    _call,
    _check_matrix,
    _check_out,
    _eye,
    _np,
    _tensor,
    linalg_slogdet,
)
from ._decompositions import svd
from ._inverse import LinalgInvEx, inv

# ----- det, slogdet -----------------------------------------------------------------------


class LinalgDet(Function):
    @staticmethod
    def forward(ctx, A):
        a = _np(A)
        det_a = np.linalg.det(a)
        d = _tensor(det_a, A)
        # Near a singular matrix the inverse does not exist, and PyTorch
        # (linalg_det_backward) takes the cofactors from the SVD where
        # |det| < 100 eps. The choice (and the SVD's orientation det(U) det(V^T))
        # is made here from the values, so the backward reads none (a compiled
        # replay runs this forward again and chooses again).
        eps = np.finfo(np.float32 if A.dtype == _fg.float32 else np.float64).eps
        ctx.singular = bool((np.abs(det_a) < 100 * eps).any())
        if ctx.singular:
            u, _, vh = np.linalg.svd(a)
            alpha = _tensor(np.sign(np.linalg.det(u) * np.linalg.det(vh)), A)
            ctx.save_for_backward(A, d, alpha)
        else:
            ctx.save_for_backward(A, d)
        return d

    @staticmethod
    def backward(ctx, g):
        if ctx.singular:
            A, _, alpha = ctx.saved_tensors
            return _det_backward_svd(g, A, alpha)
        A, d = ctx.saved_tensors
        # d det(A) / dA is the cofactor matrix det(A) A^{-T}.
        gd = (g * d).unsqueeze(-1).unsqueeze(-1)
        return gd * inv(A).mT


LinalgDet._backward_name = "LinalgDetBackward0"


def _det_backward_svd(g, A, alpha):
    # cof(A) = det(U) det(V^T) U diag(prod_{j != i} s_j) V^T: finite and exact at
    # det = 0 (PyTorch itself uses it there only for higher-order gradients; its
    # first-order path returns zeros for an exactly singular matrix, which is
    # not the derivative). `alpha` is det(U) det(V^T) of this SVD.
    n = A.shape[-1]
    U, S, Vh = svd(A)
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
        # As PyTorch: ``sign`` is an output of the node too (its gradient is zero
        # for real input), so it carries ``requires_grad`` and ``grad_fn``.
        ctx.set_materialize_grads(False)
        return s, la

    @staticmethod
    def backward(ctx, _gsign, glogabs):
        (A,) = ctx.saved_tensors
        if glogabs is None:
            return None
        # d log|det A| = A^{-T}; a singular matrix gives non-finite values
        # (PyTorch's LU solve through a zero pivot), not an error.
        inv_a = _call(LinalgInvEx, A, None)[0]
        return glogabs.unsqueeze(-1).unsqueeze(-1) * inv_a.mT


LinalgSlogdet._backward_name = "LinalgSlogdetBackward0"


def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of each square matrix in ``A``: ``det = sign *
    exp(logabsdet)``, accurate where ``det`` itself would overflow. Both
    carry the graph, as PyTorch's do; ``logabsdet``'s gradient is ``A^{-T}``,
    ``sign``'s is zero."""
    _check_out(out)
    _check_matrix("linalg.slogdet", A, square=True)
    return linalg_slogdet(*_call(LinalgSlogdet, A))


def _logdet(input: Tensor) -> Tensor:
    """``log(det(input))``: nan where the determinant is negative, ``-inf``
    where it is zero, as ``torch.logdet``."""
    _check_matrix("logdet", input, square=True, name="A")
    sign, logabs = _call(LinalgSlogdet, input)
    return _C.where(sign < 0, float("nan"), logabs)
