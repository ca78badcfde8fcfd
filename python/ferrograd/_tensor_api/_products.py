"""Products (``inner``, ``vdot``, ``tensordot``, ``block_diag``, ...) and
integration (``trapezoid``, ``cumulative_trapezoid``)."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from .. import _C
from .._C import Tensor
from ._common import _check, _wrap_dim
from ._shapes import diff

if TYPE_CHECKING:
    from collections.abc import Sequence

# ----- products ------------------------------------------------------------------------


def tensordot(
    a: Tensor,
    b: Tensor,
    dims: int | Sequence[Sequence[int]] | Tensor = 2,
    out: Tensor | None = None,
) -> Tensor:
    """Sums the products of ``a``'s last ``dims`` dimensions with ``b``'s first ``dims``
    (or the listed pairs of dimensions ``dims = (dims_a, dims_b)``)."""
    _check("tensordot", a, "a")
    _check("tensordot", b, "b", 2)
    if isinstance(dims, Tensor):
        dims = dims.tolist() if dims.dim() else int(dims.item())
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > builtins.min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da = list(range(a.dim() - dims, a.dim()))
        db = list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
        da = [_wrap_dim(d, a.dim()) for d in da]
        db = [_wrap_dim(d, b.dim()) for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[x]} in dim "
                f"{x} and second has size {b.shape[y]} in dim {y}"
            )
    fa = [d for d in range(a.dim()) if d not in da]
    fb = [d for d in range(b.dim()) if d not in db]
    k = 1
    for d in da:
        k *= a.shape[d]
    ma = a.permute(*fa, *da).reshape(-1, k)
    mb = b.permute(*db, *fb).reshape(k, -1)
    out_shape = tuple(a.shape[d] for d in fa) + tuple(b.shape[d] for d in fb)
    return ma.matmul(mb).reshape(out_shape)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """The inner product over the last dimension (a product when either is 0-D)."""
    _check("inner", input)
    _check("inner", other, "other", 2)
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            "inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    if input.dim() == 2 and other.dim() == 2 and isinstance(input, Tensor) and isinstance(other, Tensor):
        # tensordot's product of matrices, without its permutes and reshapes
        # (views of the same memory: the same kernel call).
        return input.matmul(other.mT)
    return tensordot(input, other, ([-1], [-1]))


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two 1-D tensors (real: no conjugation needed)."""
    _check("vdot", input)
    _check("vdot", other, "other", 2)
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors"
        )
    return input.dot(other)


def block_diag(*tensors: Tensor) -> Tensor:
    """A block-diagonal matrix of the given tensors (0-D and 1-D become single rows)."""
    if not tensors:
        return _C.zeros(1, 0)
    mats = []
    for i, t in enumerate(tensors):
        _check("block_diag", t, "tensors", i + 1)
        if t.dim() > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                f"has {t.dim()} dimensions"
            )
        mats.append(t.reshape(1, -1) if t.dim() < 2 else t)
    dtype = mats[0].dtype
    for m in mats[1:]:
        dtype = _C.promote_types(dtype, m.dtype)
    total = builtins.sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        m = m.to(dtype)
        right = total - left - m.shape[1]
        if not (left or right):
            rows.append(m)
        elif isinstance(m, _C.Tensor):
            # The block's row band: the block between zero columns, in one pad.
            rows.append(_C.constant_pad_nd(m, [left, right]))
        else:
            # A tensor-like value (vmap's) goes to cat, which dispatches it.
            parts = [_C.zeros(m.shape[0], left, dtype=dtype)] if left else []
            parts.append(m)
            if right:
                parts.append(_C.zeros(m.shape[0], right, dtype=dtype))
            rows.append(_C.cat(parts, 1))
        left += m.shape[1]
    return _C.cat(rows, 0)


# ----- integration ---------------------------------------------------------------------


def _trap_parts(fn, y, x, dx, dim):
    _check(fn, y, "y")
    dim = _wrap_dim(dim, y.dim())
    n = y.shape[dim]
    if n == 0:
        return None, dim
    avg = (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)) / 2
    if x is None:
        return avg * (1.0 if dx is None else dx), dim
    if isinstance(x, Tensor):
        if x.dim() == 1:
            if x.shape[0] != n:
                raise RuntimeError(f"{fn}: There must be one `x` value for each sample point")
            shape = [1] * y.dim()
            shape[dim] = n - 1
            spacing = (x[1:] - x[:-1]).reshape(tuple(shape))
        else:
            spacing = diff(x, dim=dim)
        return avg * spacing, dim
    return avg * x, dim


def trapezoid(
    y: Tensor,
    x: Tensor | None = None,
    *,
    dx: float | None = None,
    dim: int = -1,
) -> Tensor:
    """The trapezoid rule integral of ``y`` along ``dim``, at sample points ``x`` (a
    tensor) or with spacing ``x``/``dx`` (a number, 1 by default)."""
    if not isinstance(x, Tensor):
        # Even spacing, as PyTorch computes it: the sum less half the two
        # ends, times the spacing (one pass over `y`, not three).
        _check("trapezoid", y, "y")
        dim = _wrap_dim(dim, y.dim())
        if y.shape[dim] == 0:
            return y.sum(dim)
        spacing = x if x is not None else (1.0 if dx is None else dx)
        ends = y.select(dim, 0) + y.select(dim, -1)
        return (y.sum(dim) - ends * 0.5) * spacing
    parts, dim = _trap_parts("trapezoid", y, x, dx, dim)
    if parts is None:
        return y.sum(dim)
    return parts.sum(dim)


def trapz(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """Alias of ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(
    y: Tensor,
    x: Tensor | None = None,
    *,
    dx: float | None = None,
    dim: int = -1,
) -> Tensor:
    """The running trapezoid rule integral of ``y`` along ``dim`` (one element shorter)."""
    parts, dim = _trap_parts("cumulative_trapezoid", y, x, dx, dim)
    if parts is None:
        return y.clone()
    return parts.cumsum(dim)
