"""``ferrograd.linalg`` norms: ``vector_norm``, ``matrix_norm`` and ``norm``."""

from __future__ import annotations

import math
import operator

from ._common import _check_float, _check_out, _check_tensor
from ._decompositions import svdvals


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
            # Of no singular values the largest is 0, as PyTorch gives (amax refuses).
            r = S.amax(-1) if S.shape[-1] else S.sum(-1)
        else:
            r = S.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
        return r
    # Induced 1 / inf norms: abs-sum over one dimension, then max/min over the other.
    first, second = (d0, d1) if ord in (1, -1) else (d1, d0)
    r = A.abs().sum(first, keepdim=True)
    if ord > 0:
        # The largest of no sums is 0 for PyTorch (amax refuses an empty dimension).
        r = r.amax(second, keepdim=True) if r.shape[second] else r.sum(second, keepdim=True)
    else:
        r = r.amin(second, keepdim=True)
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
