"""The ``torch.*`` aliases (``ferrograd.det``, ``ferrograd.svd``, ...; the package's
``__init__`` imports them under those names) and the Tensor methods backed by
``ferrograd.linalg``; ``_install`` names them and runs once, when ``ferrograd.linalg``
is first imported.
"""

from __future__ import annotations

from .. import _C
from .._autocast import autocast_op as _autocast_op
from .._methods import attach
from ._common import Tensor, _check_matrix, qr_result, slogdet_result, svd_result
from ._decompositions import cholesky, qr, svd, svdvals
from ._det import _logdet, det, slogdet
from ._inverse import inv, matrix_power, pinv
from ._matrix_fns import geqrf, householder_product, matrix_exp

# ----- torch.* aliases and Tensor methods ------------------------------------------------------------------


def _svd_legacy(
    input: Tensor, some: bool = True, compute_uv: bool = True
) -> tuple[Tensor, Tensor, Tensor]:
    """``torch.svd``: ``(U, S, V)`` with ``V`` (not ``Vh``); ``some=True``
    gives the reduced factorisation, ``compute_uv=False`` zero-filled
    ``U``/``V``."""
    _check_matrix("svd", input)
    if not compute_uv:
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        S = svdvals(input)
        return svd_result(
            _C.zeros(batch + (m, m), dtype=input.dtype),
            S,
            _C.zeros(batch + (n, n), dtype=input.dtype),
        )
    U, S, Vh = svd(input, full_matrices=not some)
    return svd_result(U, S, Vh.mT)


def _qr_legacy(input: Tensor, some: bool = True) -> tuple[Tensor, Tensor]:
    """``torch.qr``: reduced (``some=True``) or complete QR."""
    return qr_result(*qr(input, "reduced" if some else "complete"))


def _cholesky_legacy(input: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky`` (deprecated in PyTorch in favour of
    ``linalg.cholesky``)."""
    return cholesky(input, upper=upper)


@_autocast_op("pinverse")
def _pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: ``linalg.pinv`` with ``rtol=rcond``."""
    return pinv(input, rtol=rcond)


def _slogdet_legacy(input: Tensor) -> tuple[Tensor, Tensor]:
    """``torch.slogdet``: ``(sign, logabsdet)``."""
    return slogdet_result(*slogdet(input))


def _matrix_power(input: Tensor, n: int) -> Tensor:
    """``torch.matrix_power``."""
    return matrix_power(input, n)


def _det(input: Tensor) -> Tensor:
    """``torch.det``."""
    return det(input)


@_autocast_op("inverse")
def _inverse(input: Tensor) -> Tensor:
    """``torch.inverse``."""
    return inv(input)


# Tensor methods take ``self`` (the stub in _C.pyi declares them that way).
def _m_det(self):
    return det(self)


@_autocast_op("inverse")
def _m_inverse(self):
    return inv(self)


def _m_logdet(self):
    return _logdet(self)


def _m_slogdet(self):
    return _slogdet_legacy(self)


def _m_cholesky(self, upper=False):
    return cholesky(self, upper=upper)


@_autocast_op("pinverse")
def _m_pinverse(self, rcond=1e-15):
    return pinv(self, rtol=rcond)


def _m_svd(self, some=True, compute_uv=True):
    return _svd_legacy(self, some, compute_uv)


def _m_qr(self, some=True):
    return _qr_legacy(self, some)


def _m_matrix_power(self, n):
    return matrix_power(self, n)


def _matrix_exp(input: Tensor) -> Tensor:
    """``torch.matrix_exp``: ``linalg.matrix_exp``."""
    return matrix_exp(input)


def _geqrf(input: Tensor) -> tuple[Tensor, Tensor]:
    """``torch.geqrf``: ``(a, tau)``, LAPACK's compact QR (no gradient)."""
    return geqrf(input)


def _orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """``torch.orgqr``: ``linalg.householder_product``."""
    return householder_product(input, tau)


def _m_matrix_exp(self):
    return matrix_exp(self)


def _m_geqrf(self):
    return geqrf(self)


def _m_orgqr(self, tau):
    return householder_product(self, tau)


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
        ("matrix_exp", _matrix_exp),
        ("geqrf", _geqrf),
        ("orgqr", _orgqr),
    ):
        fn.__name__ = fn.__qualname__ = name
        # ferrograd/__init__.py imports them under these names.
        fn.__module__ = "ferrograd"
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
        ("matrix_exp", _m_matrix_exp),
        ("geqrf", _m_geqrf),
        ("orgqr", _m_orgqr),
    ):
        fn.__name__ = name
        fn.__qualname__ = f"Tensor.{name}"
        fn.__doc__ = f"See ``ferrograd.{name}``."
        attach({name: fn}, __name__, replace=True)
