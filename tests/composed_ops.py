"""Cases for the ops composed in Python (``ferrograd._tensor_api`` and
``ferrograd._composite``), shared by the forward-mode tests
(``test_forward_ad_ops.py``) and the vmap tests (``test_vmap_composed.py``).

Both test files enumerate the two modules' ``__all__``: every public name
there has a case below or is named in ``NO_TANGENT`` with the reason, so a
newly composed op cannot miss its forward-mode and batching checks.

A case is ``(function, input specs)``; a spec is ``(shape, low, high,
away_from_zero)`` as in ``test_forward_ad_ops.py``. Index and mask operands
are fixed tensors inside the functions.
"""

from __future__ import annotations

import ferrograd as fg


def _spec(shape, lo=-2.0, hi=2.0, away=None):
    return (tuple(shape), lo, hi, away)


def S(*shape):
    return _spec(shape)


def A(*shape):
    """Away from zero (kinks, division)."""
    return _spec(shape, -2.0, 2.0, 0.2)


IDX = fg.tensor([[0, 2], [1, 0]])
IDX_REPEATED = fg.tensor([[0, 0], [2, 2]])
MASK = fg.tensor([[True, False, True], [False, True, True]])
ROWS = fg.tensor([0, 2, 0])

COMPOSED = {
    # _tensor_api: the index/scatter family
    "index_add": (lambda x, s: fg.index_add(x, 1, ROWS, s, alpha=2), [S(2, 3), S(2, 3)]),
    "index_copy": (lambda x, s: fg.index_copy(x, 1, fg.tensor([2, 0]), s), [S(2, 3), S(2, 2)]),
    "index_fill": (lambda x: fg.index_fill(x, 1, fg.tensor([1]), 0.5), [S(2, 3)]),
    "index_put": (lambda x, v: fg.index_put(x, (fg.tensor([1, 0]),), v), [S(2, 3), S(2, 3)]),
    "index_put_accumulate": (
        lambda x, v: fg.index_put(x, (fg.tensor([1, 1]),), v, accumulate=True), [S(2, 3), S(2, 3)]),
    "masked_scatter": (lambda x, s: fg.masked_scatter(x, MASK, s), [S(2, 3), S(6)]),
    "scatter_reduce_sum": (lambda x, s: fg.scatter_reduce(x, 1, IDX, s, "sum"), [S(2, 3), S(2, 2)]),
    "scatter_reduce_mean": (
        lambda x, s: fg.scatter_reduce(x, 1, IDX_REPEATED, s, "mean", include_self=False),
        [S(2, 3), S(2, 2)]),
    "scatter_reduce_prod": (lambda x, s: fg.scatter_reduce(x, 1, IDX_REPEATED, s, "prod"),
                            [A(2, 3), A(2, 2)]),
    "scatter_reduce_amax": (lambda x, s: fg.scatter_reduce(x, 1, IDX_REPEATED, s, "amax"),
                            [S(2, 3), S(2, 2)]),
    "scatter_reduce_amin": (
        lambda x, s: fg.scatter_reduce(x, 0, fg.tensor([[1, 0], [1, 1]]), s, "amin",
                                       include_self=False), [S(2, 3), S(2, 2)]),
    "take": (lambda x: fg.take(x, fg.tensor([5, 0, 3])), [S(2, 3)]),
    "take_along_dim": (lambda x: fg.take_along_dim(x, IDX, 1), [S(2, 3)]),
    # scans
    "cumprod": (lambda x: fg.cumprod(x, 1), [A(2, 3)]),
    "cummax": (lambda x: fg.cummax(x, 1), [S(2, 3)]),
    "cummin": (lambda x: fg.cummin(x, 0), [S(2, 3)]),
    "logcumsumexp": (lambda x: fg.logcumsumexp(x, 1), [S(2, 3)]),
    "diff": (lambda x, p: fg.diff(x, n=2, dim=1, prepend=p), [S(2, 3), S(2, 1)]),
    "trapezoid": (lambda y: fg.trapezoid(y, dx=0.5, dim=1), [S(2, 3)]),
    "trapz": (lambda y: fg.trapz(y, dim=0), [S(2, 3)]),
    "cumulative_trapezoid": (lambda y: fg.cumulative_trapezoid(y, dim=1), [S(2, 3)]),
    # shape helpers
    "tile": (lambda x: fg.tile(x, (2, 1)), [S(2, 3)]),
    "repeat_interleave": (lambda x: fg.repeat_interleave(x, 2, dim=1), [S(2, 3)]),
    "rot90": (lambda x: fg.rot90(x, 1, (0, 1)), [S(2, 3)]),
    "fliplr": (fg.fliplr, [S(2, 3)]),
    "flipud": (fg.flipud, [S(2, 3)]),
    "ravel": (lambda x: fg.ravel(x.t()), [S(2, 3)]),
    "moveaxis": (lambda x: fg.moveaxis(x, 0, 1), [S(2, 3)]),
    "swapdims": (lambda x: fg.swapdims(x, 0, 1), [S(2, 3)]),
    "atleast_1d": (fg.atleast_1d, [S()]),
    "atleast_2d": (fg.atleast_2d, [S(3)]),
    "atleast_3d": (fg.atleast_3d, [S(2, 3)]),
    "hstack": (lambda a, b: fg.hstack([a, b]), [S(2, 3), S(2, 1)]),
    "vstack": (lambda a, b: fg.vstack([a, b]), [S(2, 3), S(3)]),
    "row_stack": (lambda a, b: fg.row_stack([a, b]), [S(2, 3), S(3)]),
    "dstack": (lambda a, b: fg.dstack([a, b]), [S(2, 3), S(2, 3)]),
    "column_stack": (lambda a, b: fg.column_stack([a, b]), [S(2), S(2, 3)]),
    "block_diag": (fg.block_diag, [S(2, 3), S(1, 2)]),
    # reductions and products
    "quantile": (lambda x: fg.quantile(x, 0.3, dim=1), [S(2, 3)]),
    "quantile_all": (lambda x: fg.quantile(x, fg.tensor([0.2, 0.9], dtype=fg.float64)), [S(2, 3)]),
    "nanquantile": (lambda x: fg.nanquantile(x, 0.6, dim=0, keepdim=True), [S(2, 3)]),
    "nansum": (lambda x: fg.nansum(x, 1), [S(2, 3)]),
    "nanmean": (lambda x: fg.nanmean(x, 0), [S(2, 3)]),
    "std_mean": (lambda x: fg.std_mean(x, 1), [S(2, 3)]),
    "var_mean": (lambda x: fg.var_mean(x, 0, correction=0), [S(2, 3)]),
    "aminmax": (lambda x: tuple(fg.aminmax(x, dim=1)), [S(2, 3)]),
    "tensordot": (lambda a, b: fg.tensordot(a, b, dims=1), [S(2, 3), S(3, 2)]),
    "inner": (fg.inner, [S(2, 3), S(2, 3)]),
    "vdot": (fg.vdot, [S(3), S(3)]),
    # _composite
    "addmm": (lambda c, a, b: fg.addmm(c, a, b, beta=0.5, alpha=2), [S(2, 2), S(2, 3), S(3, 2)]),
    "addbmm": (fg.addbmm, [S(2, 2), S(2, 2, 3), S(2, 3, 2)]),
    "baddbmm": (lambda c, a, b: fg.baddbmm(c, a, b, alpha=0.5), [S(2, 2, 2), S(2, 2, 3), S(2, 3, 2)]),
    "addmv": (fg.addmv, [S(2), S(2, 3), S(3)]),
    "addr": (fg.addr, [S(2, 3), S(2), S(3)]),
    "addcmul": (lambda c, a, b: fg.addcmul(c, a, b, value=0.5), [S(2, 3), S(2, 3), S(3)]),
    "addcdiv": (lambda c, a, b: fg.addcdiv(c, a, b, value=0.5), [S(2, 3), S(2, 3), A(3)]),
    "cdist": (fg.cdist, [S(2, 3), S(4, 3)]),
    "cross": (lambda a, b: fg.cross(a, b, dim=1), [S(2, 3), S(1, 3)]),
    "diag": (fg.diag, [S(3)]),
    "diag_of_matrix": (lambda x: fg.diag(x, 1), [S(3, 3)]),
    "diag_embed": (fg.diag_embed, [S(2, 3)]),
    "kron": (fg.kron, [S(2, 2), S(2, 3)]),
    "lerp": (lambda a, b, w: fg.lerp(a, b, w), [S(2, 3), S(2, 3), S(3)]),
    "tril": (fg.tril, [S(3, 3)]),
    "triu": (lambda x: fg.triu(x, 1), [S(3, 3)]),
    "roll": (lambda x: fg.roll(x, (1, -1), (0, 1)), [S(2, 3)]),
    "tensor_split": (lambda x: fg.tensor_split(x, 2, dim=1), [S(2, 3)]),
    "hsplit": (lambda x: fg.hsplit(x, [1]), [S(2, 3)]),
    "vsplit": (lambda x: fg.vsplit(x, 2), [S(2, 3)]),
    "dsplit": (lambda x: fg.dsplit(x, [1]), [S(2, 1, 3)]),
    "meshgrid": (lambda a, b: fg.meshgrid(a, b, indexing="ij"), [S(2), S(3)]),
    "cartesian_prod": (fg.cartesian_prod, [S(2), S(3)]),
}

# Public names of the two modules with no tangent to check, and why.
NO_TANGENT = {
    "are_deterministic_algorithms_enabled": "a process-wide flag",
    "is_deterministic_algorithms_warn_only_enabled": "a process-wide flag",
    "use_deterministic_algorithms": "a process-wide flag",
    "set_printoptions": "printing options",
    "as_tensor": "a constructor (returns a tensor argument unchanged)",
    "asarray": "a constructor (returns a tensor argument unchanged)",
    "scalar_tensor": "a constructor from a number",
    "logspace": "a constructor from numbers",
    "bartlett_window": "a constructor from numbers",
    "blackman_window": "a constructor from numbers",
    "hamming_window": "a constructor from numbers",
    "hann_window": "a constructor from numbers",
    "kaiser_window": "a constructor from numbers",
    "tril_indices": "integer coordinates",
    "triu_indices": "integer coordinates",
    "unravel_index": "integer coordinates",
    "argwhere": "integer coordinates",
    "bincount": "integer counts (PyTorch does not differentiate it)",
    "count_nonzero": "an integer count",
    "histc": "counts (PyTorch does not differentiate it)",
    "isin": "a bool result",
    "is_nonzero": "a Python bool",
    "is_same_size": "a Python bool",
    "bucketize": "integer positions",
    "searchsorted": "integer positions",
    "unique": "PyTorch does not differentiate it",
    "unique_consecutive": "PyTorch does not differentiate it",
}


def covered(name):
    """Whether a case exercises the public function ``name``."""
    return name in COMPOSED or any(k.startswith(name + "_") for k in COMPOSED)
