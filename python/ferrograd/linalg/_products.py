"""``ferrograd.linalg`` products and views: ``cross``, ``matmul``, ``vecdot``,
``multi_dot`` and ``diagonal``.
"""

from __future__ import annotations

from .. import _C
from .._autocast import autocast_op as _autocast_op
from ._common import _check_out, _check_tensor


def cross(input, other, *, dim=-1, out=None):
    """The cross product of 3-vectors along ``dim``, broadcasting the other
    dimensions."""
    _check_out(out)
    _check_tensor("linalg.cross", input, "input")
    _check_tensor("linalg.cross", other, "other", 2)
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
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
    return a.index_select(dim, i120) * b.index_select(dim, i201) - a.index_select(
        dim, i201
    ) * b.index_select(dim, i120)


def matmul(input, other, *, out=None):
    """``torch.linalg.matmul``: the same as ``ferrograd.matmul``."""
    _check_out(out)
    return _C.matmul(input, other)


@_autocast_op("vecdot")
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
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
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
