"""``ferrograd.linalg`` inverses and solvers: ``inv``/``inv_ex``,
``solve``/``solve_ex``, ``pinv``, ``matrix_rank``, ``lstsq`` and
``matrix_power``.
"""

from __future__ import annotations

import operator

import numpy as np

import ferrograd as _fg

from .. import _C
from .._autocast import autocast_op as _autocast_op
from ..autograd.function import Function
from ._common import (
    _SCALAR_NAME,
    LinAlgError,
    Tensor,
    _batch_prefix,
    _call,
    _check_float,
    _check_matrix,
    _check_out,
    _check_tensor,
    _dtype_key,
    _flat_batches,
    _int_tensor,
    _inv_np,
    _lu_zero_pivot,
    _np,
    _refuse_non_finite,
    _svd,
    _tensor,
    linalg_inv_ex,
    linalg_lstsq,
    linalg_solve_ex,
)


class LinalgInvEx(Function):
    @staticmethod
    def forward(ctx, A, api):
        inv_a, info = _inv_np(_np(A))
        if api is not None:
            # Checked here, inside the op, so a compiled replay and vmap check too.
            _raise_inv(A, info, api)
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
            return None, None
        # d(A^{-1}) = -A^{-1} dA A^{-1}, so gA = -A^{-H} G A^{-H}.
        return -(inv_a.mT @ g @ inv_a.mT), None


LinalgInvEx._backward_name = "LinalgInvExBackward0"


@_autocast_op("inv_ex")
def inv_ex(A, *, check_errors=False):
    """The inverse of each square matrix in ``A`` and LAPACK's ``info`` (0, or
    the 1-based index of a zero pivot of the LU factorisation); singular
    matrices give non-finite values instead of an error unless
    ``check_errors``."""
    _check_matrix("linalg.inv_ex", A, square=True)
    out, info = _call(LinalgInvEx, A, "linalg.inv_ex" if check_errors else None)
    return linalg_inv_ex(out, info)


def _raise_inv(A, info, api="linalg.inv"):
    flat = np.asarray(info).reshape(-1)
    for i, code in enumerate(flat):
        if code > 0:
            raise LinAlgError(
                f"{api}: {_batch_prefix(A, i)}The diagonal element {int(code)} is zero, the "
                "inversion could not be completed because the input matrix is singular."
            )


@_autocast_op("inv")
def inv(A, *, out=None):
    """The inverse of each square matrix in ``A`` (batches in the leading
    dimensions). Raises ``LinAlgError`` naming the zero pivot when a matrix is
    singular, as ``torch.linalg.inv``."""
    _check_out(out)
    _check_matrix("linalg.inv", A, square=True)
    return _call(LinalgInvEx, A, "linalg.inv")[0]


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


@_autocast_op("solve")
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


def _tolerances(A, atol, rtol, smax):
    """``max(atol, rtol * smax)`` with PyTorch's defaults: ``rtol`` is
    ``eps * max(m, n)`` when neither is given and 0 when only ``atol`` is."""
    eps = np.finfo(np.float32 if A.dtype == _fg.float32 else np.float64).eps
    atol_v = 0.0 if atol is None else (_np(atol) if isinstance(atol, Tensor) else atol)
    if rtol is None:
        rtol_v = (
            eps * max(A.shape[-2], A.shape[-1])
            if (atol is None or np.all(np.asarray(atol_v) <= 0))
            else 0.0
        )
    else:
        rtol_v = _np(rtol) if isinstance(rtol, Tensor) else rtol
    return np.maximum(
        np.asarray(atol_v, dtype=np.float64), np.asarray(rtol_v, dtype=np.float64) * smax
    )


class LinalgPinv(Function):
    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian):
        a = _np(A).astype(np.float64)
        _refuse_non_finite("linalg.pinv", a)
        if hermitian:
            w, v = np.linalg.eigh(a)
            absw = np.abs(w)
            smax = absw.max(-1, keepdims=True) if w.shape[-1] else np.zeros(w.shape[:-1] + (1,))
            tol = _tolerances(A, atol, rtol, smax)
            winv = np.where(absw > tol, 1.0 / np.where(w == 0, 1.0, w), 0.0)
            p = (v * winv[..., None, :]) @ np.swapaxes(v, -1, -2)
        else:
            u, s, vh = _svd(a, full_matrices=False)
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
        return (
            -(pinvA @ K).mT + KpinvAh - (A @ pinvA) @ KpinvAh + (pinvAh @ pinvA) @ (gradh - K @ A)
        )
    K = pinvA @ gradh
    pinvAhK = pinvAh @ K
    return -(K @ pinvA).mT + (gradh - A @ K) @ pinvA @ pinvAh + pinvAhK - pinvAhK @ pinvA @ A


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudo-inverse of each matrix in ``A``, dropping
    singular values at or below ``max(atol, rtol * s_max)`` (PyTorch's
    defaults). ``hermitian=True`` uses an eigendecomposition of the lower
    triangle. Its gradient is PyTorch's pinv formula, exact where the rank
    does not change."""
    _check_out(out)
    _check_matrix("linalg.pinv", A)
    return _call(LinalgPinv, A, atol, rtol, bool(hermitian))


class LinalgMatrixRank(Function):
    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian):
        a = _np(A)
        _refuse_non_finite("linalg.matrix_rank", a)
        if hermitian:
            s = np.abs(np.linalg.eigvalsh(a))
        else:
            s = _svd(a, compute_uv=False)
        smax = s.max(-1, keepdims=True) if s.shape[-1] else np.zeros(s.shape[:-1] + (1,))
        tol = _tolerances(A, atol, rtol, smax)
        rank = _int_tensor((s > tol).sum(-1))
        ctx.mark_non_differentiable(rank)
        return rank

    @staticmethod
    def backward(ctx, g):
        return None, None, None, None


LinalgMatrixRank._backward_name = "LinalgMatrixRankBackward0"


@_autocast_op("matrix_rank")
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The number of singular values (absolute eigenvalues with
    ``hermitian=True``) above ``max(atol, rtol * s_max)``, as int64."""
    _check_out(out)
    _check_matrix("linalg.matrix_rank", A)
    return _call(LinalgMatrixRank, A, atol, rtol, bool(hermitian))


class LinalgLstsq(Function):
    @staticmethod
    def forward(ctx, A, B, rcond, driver):
        m, n = A.shape[-2], A.shape[-1]
        if A.dtype in (_fg.float32, _fg.float64):
            # The solutions, ranks and singular values in one native call
            # (`src/ops/lstsq.rs`, float64 one-sided Jacobi SVD).
            try:
                X, ranks, sv = _C._lstsq(A, B, float(rcond))
            except RuntimeError as e:
                if "non-finite" in str(e):
                    raise LinAlgError(str(e)) from None
                raise
            full_rank = driver == "gels" or bool((ranks == n).all())
        else:
            X, ranks, sv = _lstsq_numpy(A, B, rcond)
            full_rank = driver == "gels" or bool(np.all(ranks == n))
            ranks, sv = _int_tensor(ranks), _tensor(sv, A)
        # As PyTorch's linalg_lstsq_out_info: residuals only when m > n and the
        # driver is not gelsy (gelss/gelsd: only if every matrix has rank n).
        if m > n and driver != "gelsy" and full_rank:
            a64, x64, b64 = (_np(t).astype(np.float64) for t in (A, X, B))
            r = a64 @ x64 - b64
            residuals = _tensor((r * r).sum(-2), A)
        else:
            residuals = _C.empty(0, dtype=A.dtype)
        rank = ranks if driver != "gels" else _C.empty(0, dtype=_fg.int64)
        singular_values = sv if driver in ("gelsd", "gelss") else _C.empty(0, dtype=A.dtype)
        # Only the solution is differentiable, as in PyTorch.
        ctx.mark_non_differentiable(residuals, rank, singular_values)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(A, B)
        return X, residuals, rank, singular_values

    @staticmethod
    def backward(ctx, gX, _gres, _grank, _gsv):
        if gX is None:
            return None, None, None, None
        A, B = ctx.saved_tensors
        # PyTorch's linalg_lstsq_backward: X = pinv(A) B.
        pinvA = pinv(A)
        gA = _pinv_backward(gX @ B.mT, pinvA, A) if ctx.needs_input_grad[0] else None
        gB = pinvA.mT @ gX if ctx.needs_input_grad[1] else None
        return gA, gB, None, None


LinalgLstsq._backward_name = "LinalgLstsqBackward0"


def _lstsq_numpy(A, B, rcond):
    """NumPy's ``lstsq`` per matrix (dtypes the native kernel does not take):
    the solution tensor, and the ranks and float64 singular values as arrays."""
    a, b = _np(A), _np(B)
    _refuse_non_finite("linalg.lstsq", a, b)
    fa, fb = _flat_batches(a), _flat_batches(b)
    x = np.empty(fa.shape[:1] + (a.shape[-1], b.shape[-1]), dtype=a.dtype)
    for i in range(fa.shape[0]):
        x[i] = np.linalg.lstsq(fa[i], fb[i], rcond=rcond)[0]
    X = _tensor(x.reshape(a.shape[:-2] + x.shape[-2:]), A)
    sv = _svd(a.astype(np.float64), compute_uv=False)
    smax = sv[..., :1] if sv.shape[-1] else np.zeros(sv.shape[:-1] + (1,))
    return X, (sv > rcond * smax).sum(-1), sv


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@_autocast_op("lstsq")
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
    driver = "gelsy" if driver is None else driver
    X, residuals, rank, singular_values = _call(LinalgLstsq, A, Bm, rc, driver)
    if vector:
        X = X.squeeze(-1)
    return linalg_lstsq(X, residuals, rank, singular_values)


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
