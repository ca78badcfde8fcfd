"""The tensor functions weight normalization is written with (``torch.norm_except_dim``
and ``torch._weight_norm``), as compositions of recorded ops."""

from __future__ import annotations

__all__ = ["_weight_norm", "householder_product", "matrix_exp", "norm_except_dim"]


def norm_except_dim(v, pow=2, dim=0):  # noqa: A002 - PyTorch's name
    """The ``pow``-norm of ``v`` over every dimension but ``dim``, shaped to
    broadcast against ``v`` (size 1 everywhere except ``dim``); over all of
    ``v`` (a 0-d result) for ``dim=-1``."""
    if dim == -1:
        return v.norm(pow)
    nd = v.dim()
    if dim < 0:
        dim += nd
    if nd == 0:
        return v.abs()
    others = [d for d in range(nd) if d != dim]
    if not others:
        return v.abs() if pow != 0 else (v != 0).to(v.dtype)
    return v.abs().pow(pow).sum(others, keepdim=True).pow(1.0 / pow) if pow != 2 else (
        (v * v).sum(others, keepdim=True).sqrt()
    )


def _weight_norm(v, g, dim=0):
    """``g * v / norm_except_dim(v, 2, dim)``: weight normalization's weight."""
    return v * (g / norm_except_dim(v, 2, dim))


def matrix_exp(a):
    """``linalg.matrix_exp`` (imported on first use: ``linalg`` loads after ``nn``)."""
    from ...linalg import matrix_exp as f

    return f(a)


def householder_product(a, tau):
    """``linalg.householder_product`` (imported on first use)."""
    from ...linalg import householder_product as f

    return f(a, tau)
