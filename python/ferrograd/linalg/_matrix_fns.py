"""``matrix_exp``, ``householder_product`` and ``geqrf``.

``householder_product`` is a composition of recorded ops (matrix products,
sums, scalings), so its gradients of every order follow. ``matrix_exp`` is a
Function whose forward picks its scaling from the values and whose backward
is the exponential of a block matrix (so every order follows too); ``geqrf``
(LAPACK's compact QR, which PyTorch does not differentiate either) runs
through NumPy in a Function. Both enter through ``_call``, which batches them
under vmap and records them for compile.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .. import _C
from .._autocast import autocast_op as _autocast_op
from ..autograd.function import Function
from ._common import Tensor, _batched, _call, _check_tensor

__all__ = ["matrix_exp", "householder_product", "geqrf"]

geqrf_result = namedtuple("geqrf", ["a", "tau"])
geqrf_result.__module__ = "ferrograd.return_types"


def _check_square(fn, a):
    _check_tensor(fn, a, "input")
    if a.dim() < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError(
            f"{fn}: Expected a tensor of squared matrices, but got a tensor of size "
            f"{list(a.shape)}" if a.dim() >= 2 else
            f"{fn}: The input tensor A must have at least 2 dimensions."
        )  # fmt: skip
    if not a.is_floating_point():
        raise RuntimeError(f"{fn}: Expected a floating point tensor, but got {a.dtype}")


def _matrix_exp_values(A):
    """``exp(A)`` by scaling and squaring: ``A`` is divided by ``2^s`` until
    its 1-norm is at most 1/2, a Taylor polynomial (degree 18 in float64, 10 in
    float32: its truncation error is below the dtype's rounding) is evaluated
    by Horner's rule, and the result squared ``s`` times."""
    n = A.shape[-1]
    if n == 0 or A.numel() == 0:
        return A.clone()
    norm1 = float(A.abs().sum(-2).amax())
    s = 0
    if norm1 > 0.5 and math.isfinite(norm1):
        s = max(0, math.ceil(math.log2(norm1 / 0.5)))
    x = A / float(2**s) if s else A
    degree = 18 if A.dtype == _C.float64 else 10
    eye = _C.eye(n, dtype=A.dtype)
    # Horner: I + X (I + X/2 (I + X/3 (... (I + X/m)))).
    e = eye + x / float(degree)
    for k in range(degree - 1, 0, -1):
        e = eye + (x @ e) / float(k)
    for _ in range(s):
        e = e @ e
    return e


class LinalgMatrixExp(Function):
    @staticmethod
    def forward(ctx, A):
        ctx.save_for_backward(A)
        ctx.save_for_forward(A)
        return _matrix_exp_values(A)

    @staticmethod
    def backward(ctx, g):
        (A,) = ctx.saved_tensors
        # The adjoint of the Frechet derivative (PyTorch's
        # linalg_matrix_exp_differential): the upper right block of
        # exp([[A^T, G], [0, A^T]]). Written with matrix_exp, so it differentiates again.
        return _frechet(A.mT, g)

    @staticmethod
    def jvp(ctx, t):
        (A,) = ctx.saved_tensors
        # The Frechet derivative itself: the upper right block of exp([[A, T], [0, A]]).
        return _frechet(A, t)


def _frechet(A, E):  # noqa: N803
    n = A.shape[-1]
    if n == 0:
        return E
    if tuple(E.shape) != tuple(A.shape):
        A = A.expand(*E.shape)
    top = _C.cat([A, E], -1)
    bottom = _C.cat([_C.zeros(tuple(A.shape), dtype=A.dtype), A], -1)
    return matrix_exp(_C.cat([top, bottom], -2))[..., :n, n:]


LinalgMatrixExp._backward_name = "LinalgMatrixExpBackward0"


def matrix_exp(A):  # noqa: N803 - PyTorch's name
    """The matrix exponential ``sum_k A^k / k!`` of a square matrix (or a batch),
    by scaling and squaring a Taylor polynomial. The scaling is chosen from the
    values (no gradient flows through the choice); the gradient is the exact
    derivative of the exponential (a block-matrix exponential), of any order."""
    _check_square("linalg.matrix_exp", A)
    return _call(LinalgMatrixExp, A)


@_autocast_op("householder_product")
def householder_product(A, tau):  # noqa: N803 - PyTorch's name
    """The first ``n`` columns of the product of the reflectors ``H_1`` to ``H_k`` for ``A`` of shape
    ``(*, m, n)`` and ``tau`` of shape ``(*, k)``: ``H_i = I - tau_i v_i v_i^T``,
    ``v_i`` the ``i``-th column of ``A`` below the diagonal with a 1 on it (the
    compact form ``geqrf`` returns). Composed of recorded ops, so it
    differentiates with respect to both arguments."""
    if not all(isinstance(t, Tensor) or _batched(t) for t in (A, tau)):
        raise TypeError("householder_product(): arguments 'input' and 'tau' must be Tensors")
    if A.dim() < 2:
        raise RuntimeError(
            "torch.linalg.householder_product: input must have at least 2 dimensions."
        )
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(
            "torch.linalg.householder_product: input.shape[-2] must be greater than or equal "
            "to input.shape[-1]"
        )
    k = tau.shape[-1] if tau.dim() else 1
    if n < k:
        raise RuntimeError(
            "torch.linalg.householder_product: input.shape[-1] must be greater than or equal "
            "to tau.shape[-1]"
        )
    if tau.dim() != A.dim() - 1 or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(
            "torch.linalg.householder_product: Expected batch dimensions of tau to be equal "
            f"to input.shape[:-2], but got {list(tau.shape[:-1])}"
        )
    if A.dtype != tau.dtype:
        raise RuntimeError(
            "torch.linalg.householder_product: tau dtype "
            f"{tau.dtype} does not match input dtype {A.dtype}"
        )
    if (
        isinstance(A, Tensor)
        and isinstance(tau, Tensor)
        and A.dtype in (_C.float32, _C.float64)
        and not _batched(A, tau)
        and not (_C.is_grad_enabled() and (A.requires_grad or tau.requires_grad))
        and not (_C._current_dual_level() >= 0 and _tangent(A, tau))
    ):
        # Nothing records a gradient: the product in one native call
        # (`src/ops/householder.rs`), in the composite's order of operations.
        return _C._householder_product(A, tau)
    batch = tuple(A.shape[:-2])
    q = _C.eye(m, n, dtype=A.dtype).expand(*batch, m, n)
    if k == 0:
        return q
    # Every reflector's v at once: A's first k columns below the diagonal, 1 on it.
    rows = _C.arange(m).unsqueeze(1)
    cols = _C.arange(k)
    vs = A.narrow(-1, 0, k) * (rows > cols).to(A.dtype) + (rows == cols).to(A.dtype)
    ts = tau.unsqueeze(-2)  # (*, 1, k)
    for i in range(k - 1, -1, -1):
        v = vs.narrow(-1, i, 1)  # (*, m, 1)
        q = q - (v * ts.narrow(-1, i, 1)) @ (v.mT @ q)
    return q


def _tangent(*tensors):
    return any(_C._fw_tangent(t) is not None for t in tensors)


# NumPy's qr takes stacks of matrices from 1.22.
_STACKED_QR = tuple(int(v) for v in np.__version__.split(".")[:2]) >= (1, 22)


class LinalgGeqrf(Function):
    @staticmethod
    def forward(ctx, input):  # noqa: A002 - PyTorch's name
        arr = input.detach().numpy()
        m, n = arr.shape[-2], arr.shape[-1]
        shape = arr.shape[:-2]
        if arr.size and arr.dtype in (np.float32, np.float64):
            # The native loop the unbatched call runs, so a batch under `vmap`
            # factors each matrix with the same roundings: on a rank-deficient
            # input LAPACK's other order turned rounding noise into a reflector.
            a, t = _C._geqrf(_C.from_numpy(np.ascontiguousarray(arr)))
            ctx.mark_non_differentiable(a, t)
            return a, t
        if not arr.size:
            # Nothing to factor: no loop over a batch that may be huge.
            a = np.zeros(shape + (m, n))
            t = np.zeros(shape + (min(m, n),))
        elif _STACKED_QR:
            # The whole stack in one call (LAPACK per matrix, as the loop below).
            h, t = np.linalg.qr(arr.astype(np.float64), mode="raw")
            a = h.swapaxes(-1, -2)
        else:
            flat = arr.reshape((math.prod(shape), m, n))
            outs, taus = [], []
            for mat in flat:
                h, tau = np.linalg.qr(mat.astype(np.float64), mode="raw")
                outs.append(h.T)
                taus.append(tau)
            a = np.stack(outs).reshape(shape + (m, n)) if outs else np.zeros(shape + (m, n))
            t = (np.stack(taus).reshape(shape + (min(m, n),)) if taus
                 else np.zeros(shape + (min(m, n),)))
        a = _C.from_numpy(np.ascontiguousarray(a.astype(arr.dtype)))
        t = _C.from_numpy(np.ascontiguousarray(t.astype(arr.dtype)))
        ctx.mark_non_differentiable(a, t)
        return a, t

    @staticmethod
    def backward(ctx, ga, gt):
        raise RuntimeError("the derivative for 'geqrf' is not implemented.")


LinalgGeqrf._backward_name = "GeqrfBackward0"


@_autocast_op("geqrf")
def geqrf(input):  # noqa: A002 - PyTorch's name
    """LAPACK's ``geqrf``: ``(a, tau)``, the QR factorisation in compact form
    (``R`` on and above the diagonal of ``a``, the Householder vectors below
    it; ``householder_product(a, tau)`` gives ``Q``). No gradient, as in
    PyTorch."""
    _check_tensor("geqrf", input, "input")
    if input.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if (
        isinstance(input, Tensor)
        and input.dtype in (_C.float32, _C.float64)
        and not _batched(input)
    ):
        # dgeqr2's loop in one native call (`src/ops/householder.rs`); its outputs are
        # not differentiable, as LinalgGeqrf marks them.
        return geqrf_result(*_C._geqrf(input))
    return geqrf_result(*_call(LinalgGeqrf, input))
