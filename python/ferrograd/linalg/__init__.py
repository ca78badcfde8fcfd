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

from ._aliases import _install
from ._common import (
    LinAlgError,
    Tensor,  # noqa: F401
    linalg_cholesky_ex,  # noqa: F401
    linalg_eigh,  # noqa: F401
    linalg_inv_ex,  # noqa: F401
    linalg_lstsq,  # noqa: F401
    linalg_qr,  # noqa: F401
    linalg_slogdet,  # noqa: F401
    linalg_solve_ex,  # noqa: F401
    linalg_svd,  # noqa: F401
    qr_result,  # noqa: F401
    slogdet_result,  # noqa: F401
    svd_result,  # noqa: F401
)
from ._decompositions import (
    LinalgCholeskyEx,
    LinalgEigh,
    LinalgQr,
    LinalgSvd,
    cholesky,
    cholesky_ex,
    eigh,
    eigvalsh,
    qr,
    svd,
    svdvals,
)
from ._det import (
    LinalgDet,
    LinalgSlogdet,
    det,
    slogdet,
)
from ._inverse import (
    LinalgInvEx,
    LinalgLstsq,
    LinalgPinv,
    LinalgSolveEx,
    inv,
    inv_ex,
    lstsq,
    matrix_power,
    matrix_rank,
    pinv,
    solve,
    solve_ex,
)
from ._matrix_fns import geqrf, householder_product, matrix_exp
from ._norms import (
    matrix_norm,
    norm,
    vector_norm,
)
from ._products import (
    cross,
    diagonal,
    matmul,
    multi_dot,
    vecdot,
)

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
    "householder_product",
    "matrix_exp",
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


# Functions and Function classes report this package as their module, as they
# did when linalg was one file.
for _obj in (
    LinAlgError,
    LinalgCholeskyEx,
    LinalgDet,
    LinalgEigh,
    LinalgInvEx,
    LinalgLstsq,
    LinalgPinv,
    LinalgQr,
    LinalgSlogdet,
    LinalgSolveEx,
    LinalgSvd,
    cholesky,
    cholesky_ex,
    cross,
    det,
    diagonal,
    eigh,
    eigvalsh,
    inv,
    inv_ex,
    lstsq,
    matmul,
    matrix_norm,
    matrix_power,
    matrix_rank,
    multi_dot,
    norm,
    pinv,
    qr,
    slogdet,
    solve,
    solve_ex,
    svd,
    svdvals,
    vecdot,
    vector_norm,
):
    _obj.__module__ = __name__
del _obj

for _obj in (geqrf, householder_product, matrix_exp):
    _obj.__module__ = __name__
del _obj

# The torch.* aliases and Tensor methods; runs once, on the first import.
_install()
